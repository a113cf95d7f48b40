#!/usr/bin/env bash
# The programs of README.md on the GPU: CUDA 12.8's __nv_atomic_* built-ins (nv_atomic_gpu.cu), in
# kernels a parent launches from the device; thread-block clusters of a compile-time shape
# (cluster_gpu.cu) and blocks as clusters (block_size_gpu.cu), launched by the host and from the
# device; nvcc's built-ins Clang's headers left undefined, the aligned device allocation and
# device nan() (builtins_gpu.cu); device objects of abstract classes (virtual_gpu.cu). Two stages:
#   bash results/2026-11-26-nv-atomic-clusters/gpu.sh build CDPC   (development machine: the checkout's .cuda/ nvcc)
#   bash results/2026-11-26-nv-atomic-clusters/gpu.sh run          (GPU machine: runs what build staged)
# build writes the executables into gpu-stage/nv-atomic-clusters/ (git-ignored; carry it to the GPU);
# run executes each, compares its output with nvcc's build byte for byte, and writes
# gpu.md to $OUT (or .).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$ROOT/results/2026-11-26-nv-atomic-clusters
STAGE=$ROOT/gpu-stage/nv-atomic-clusters
case "${1:?usage: gpu.sh build CDPC | run}" in
build)
    CDPC=$(realpath "${2:?the cdpc binary}")
    NVCC=$ROOT/.cuda/nvidia/cu13/bin/nvcc
    rm -rf "$STAGE" && mkdir -p "$STAGE" && cd "$STAGE"
    cp "$SRC"/nv_atomic_gpu.cu "$SRC"/cluster_gpu.cu "$SRC"/block_size_gpu.cu "$SRC"/builtins_gpu.cu "$SRC"/virtual_gpu.cu .
    nv() { "$NVCC" -arch=sm_90 "$@"; }
    for prog in atomics cluster block_size builtins virtual; do
        src=nv_atomic_gpu.cu
        [ "$prog" != atomics ] && src=${prog}_gpu.cu
        nv -rdc=true "$src" -o "$prog-nvcc"
        python3 "$ROOT/samples/harness/nvcc-cdpc.py" --cdpc "$CDPC" --nvcc "$NVCC" -- -dc -arch=sm_90 "$src" -o "$prog-nc.o"
        nv -rdc=true "$prog-nc.o" -o "$prog-nvcc-host-cdpc-device" -lcudadevrt
        for variant in plain O0 G threshold-warp threshold-grid; do
            args=()
            case $variant in
            O0) args=(-O0) ;;
            G) args=(-G) ;;
            threshold-*) args=(-flaunch-threshold=128 "-faggregate-launches=${variant#threshold-}") ;;
            esac
            "$CDPC" -dc "${args[@]}" "$src" -o "$prog-cdpc-$variant.o"
            nv -rdc=true "$prog-cdpc-$variant.o" -o "$prog-cdpc-dc-$variant" -lcudadevrt
        done
    done
    rm -f ./*.o
    ;;
run)
    cd "$STAGE"
    report=${OUT:-.}/gpu.md
    {
        echo "# __nv_atomic_*, clusters and blocks as clusters on the GPU"
        echo
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/Machine: /'
        echo
        echo '| build | exit | output equals nvcc'"'"'s |'
        echo '|---|---|---|'
    } >"$report"
    status=0
    for prog in atomics cluster block_size builtins virtual; do
        for round in 1 2 3; do
            timeout 60 "./$prog-nvcc" >"$prog-nvcc-oracle-$round.txt" 2>&1 || true
        done
        for exe in "$prog-nvcc" "$prog-nvcc-host-cdpc-device" "$prog"-cdpc-dc-*; do
            same=yes
            code=0
            for round in 1 2 3; do
                rc=0
                timeout 60 "./$exe" >"$exe-$round.txt" 2>&1 || rc=$?
                [ "$rc" = 0 ] || code=$rc
                cmp -s "$exe-$round.txt" "$prog-nvcc-oracle-$round.txt" || same=no
            done
            [ "$same" = yes ] && [ "$code" = 0 ] || status=1
            echo "| $exe | $code | $same (3 runs) |" >>"$report"
        done
    done
    for prog in atomics cluster block_size builtins virtual; do
        { echo; echo "nvcc's output ($prog):"; echo; echo '```'; cat "$prog-nvcc-oracle-1.txt"; echo '```'; } >>"$report"
    done
    cat "$report"
    exit $status
    ;;
esac
