#!/usr/bin/env bash
# The device link's pool on the GPU, for the objects it leaves alone: KLAP's BT compiled by its
# own Makefile with NVCC=cdpc (-dc, the default build), the same objects linked three ways:
#   nvcc   nvcc's own build of the sources
#   weak   cdpc's objects linked by nvcc: their weak pool functions, the heap
#   cdpc   cdpc's objects linked by cdpc: the pool (docs/DEVICE-MALLOC.md, "Decided at the link")
#   bash bench/link-pool/bt-weak.sh stage   (here: cdpc and nvcc; writes gpu-stage/bt-weak)
#   bash bench/link-pool/bt-weak.sh run     (the GPU machine, carrying gpu-stage/bt-weak)
# `run` prints, for 10 interleaved runs of each, its exit status and kernel time, and the digest
# of its output with the numbers masked and the lines sorted.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STAGE=$ROOT/gpu-stage/bt-weak
case "${1:?usage: bt-weak.sh stage | run}" in
stage)
    CDPC=${CDPC:-$ROOT/target/release/cdpc}
    rm -rf "$STAGE" && mkdir -p "$STAGE/test"
    cp -r "$ROOT"/../shared/corpus/klap/include "$STAGE"/
    cp -r "$ROOT"/../shared/corpus/klap/test/BT "$STAGE"/test/
    chmod -R u+w "$STAGE"
    cd "$STAGE/test/BT"
    INC="-I. -I../../include -DcudaThreadSynchronize=cudaDeviceSynchronize"
    make -s kernel.base.o main.o verify.o NVCC="$CDPC" ARCH=-arch=sm_90 "INCLUDE=$INC"
    nvcc -arch=sm_90 -o bt.weak kernel.base.o main.o verify.o -lcudadevrt
    "$CDPC" -arch=sm_90 -o bt.cdpc kernel.base.o main.o verify.o -lcudadevrt
    rm -f ./*.o
    for f in main verify kernel.base; do
        # shellcheck disable=SC2086
        nvcc -arch=sm_90 -dc -m64 --default-stream per-thread $INC "$f.cu" -o "$f.o"
    done
    nvcc -arch=sm_90 -o bt.nvcc kernel.base.o main.o verify.o -lcudadevrt
    rm -f ./*.o
    ;;
run)
    cd "$STAGE/test/BT"
    for _ in $(seq 1 10); do
        for v in nvcc weak cdpc; do
            rc=0
            out=$(timeout 30 "./bt.$v" -o 1 2>&1) || rc=$?
            echo "$v rc=$rc $(echo "$out" | grep -o 'Average kernel time = [0-9.]*')"
            echo "$out" | sed -E 's/[0-9]+\.[0-9]+(e[-+]?[0-9]+)?/#/g; s/(time = )[-+0-9.e]+/\1#/g' | sort | md5sum | sed "s/^/$v output /"
        done
    done
    ;;
esac
