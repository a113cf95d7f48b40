#!/usr/bin/env bash
# Where KLAP's MST, built by nvcc alone, spends its time on the GPU (it runs past every time
# limit under nvcc's build as under cdpc's; results/corpus-gpu.md): run it for 60 s, then run
# it under cuda-gdb, interrupt it after 25 s and print the kernels, the device backtrace and
# the blocks.
#
# Usage, from the repository root, on the GPU machine (nvcc and cuda-gdb on PATH):
#   bash samples/harness/mst-hang.sh CORPUS OUTPUT_FILE
set -u
CORPUS=$(realpath "${1:?usage: mst-hang.sh CORPUS OUTPUT_FILE}"); OUTF=$(realpath "${2:?usage: mst-hang.sh CORPUS OUTPUT_FILE}")
trap 'rm -rf "$W"' EXIT
W=$(mktemp -d); cp -r "$CORPUS/klap" "$W/"; chmod -R u+w "$W"
mkdir -p "$W/shim/cub/cub" && echo '#include <cub/cub.cuh>' > "$W/shim/cub/cub/cub.cuh"
cd "$W/klap/test/MST"
F="-Xcompiler -fPIC -m64 --default-stream per-thread -I. -I../../include -I$W/shim -DcudaThreadSynchronize=cudaDeviceSynchronize"
nvcc -arch=sm_90 -rdc=true -lineinfo $F main.cu kernel.base.cu -o mst -lcudadevrt > "$OUTF" 2>&1 || { echo build failed >> "$OUTF"; exit 1; }
{ echo "== plain run, 60 s limit"; /usr/bin/time -f "%e s, exit %x" timeout 60 ./mst -o 2 -w 0 -r 1 2>&1 | tail -15; } >> "$OUTF" 2>&1
{ echo "== cuda-gdb, interrupted after 25 s"; timeout -s INT 25 cuda-gdb -batch -ex run -ex 'info cuda kernels' -ex 'bt' -ex 'info cuda blocks' -ex 'kill' --args ./mst -o 2 -w 0 -r 1 2>&1 | tail -60; } >> "$OUTF" 2>&1
