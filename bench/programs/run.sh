#!/usr/bin/env bash
# The standalone-kernel-benchmark shape (kernels.cu: one file, its own main, no device-side
# launch) built four ways and timed on the GPU, the builds interleaved round by round.
#   STAGE=build OUT_DIR=DIR bash bench/programs/run.sh CDPC   (here: needs nvcc as the oracle and cdpc)
#   STAGE=run   OUT_DIR=DIR ROUNDS=20 bash bench/programs/run.sh   (the GPU machine)
# Builds: nvcc without -rdc (nvcc's default: whole program), nvcc -rdc=true, cdpc without -rdc,
# cdpc -rdc=true. The run writes DIR/times.txt (build round kernel ms checksum) and prints
# bench/programs/summarize.py's table: each build's median per kernel against nvcc's whole
# program, with a bootstrap 95% interval of the ratio of medians.
set -eu
STAGE=${STAGE:?STAGE is build or run}
DIR=${OUT_DIR:?OUT_DIR names the folder of the builds}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
if [ "$STAGE" = build ]; then
    CDPC=$(realpath "${1:?usage: STAGE=build run.sh CDPC}")
    CUDA_HOME=${CUDA_HOME:-$HERE/../../.cuda/nvidia/cu13}
    NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
    "$NVCC" -O3 -arch=sm_90 "$HERE/kernels.cu" -o "$DIR/nvcc-whole"
    "$NVCC" -O3 -arch=sm_90 -rdc=true "$HERE/kernels.cu" -o "$DIR/nvcc-rdc"
    "$CDPC" -O3 -arch=sm_90 "$HERE/kernels.cu" -o "$DIR/cdpc-whole"
    "$CDPC" -O3 -arch=sm_90 -rdc=true "$HERE/kernels.cu" -o "$DIR/cdpc-rdc"
    { "$CDPC" --version | head -1; "$NVCC" --version | tail -1; } > "$DIR/built-with"
    exit 0
fi
ROUNDS=${ROUNDS:-20}
: > "$DIR/times.txt"
for round in $(seq 1 "$ROUNDS"); do
    for build in nvcc-whole cdpc-whole nvcc-rdc cdpc-rdc; do
        "$DIR/$build" | while read -r kernel ms sum; do echo "$build $round $kernel $ms $sum"; done >> "$DIR/times.txt"
    done
done
python3 "$HERE/summarize.py" "$DIR/times.txt"
