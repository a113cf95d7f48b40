#!/usr/bin/env bash
# The programs of README.md on the GPU. fast_math_gpu.cu: every operation nvcc's single-precision
# options change, in a child kernel a parent launches from the device, built by nvcc and by
# cdpc with the same option (none, -ftz=true, -prec-div=false, -prec-sqrt=false,
# --use_fast_math; the last also thresholded and warp-aggregated, the first also as one object
# for sm_80 and sm_90 linked for sm_90). names_kernels.cu: kernel
# template instances whose names Clang 22 spells otherwise by default, compiled by cdpc with
# nvcc's command line (-std=c++20 -Xcompiler -fPIC ...) and launched by host code nvcc compiled
# (names_main.cu) and from the device. arch_gpu.cu: an sm_90a kernel (setmaxnreg) launched from
# the device. Two stages:
#   bash results/2026-11-26-nvcc-command-line/gpu.sh build CDPC   (development machine: the checkout's .cuda/ nvcc)
#   bash results/2026-11-26-nvcc-command-line/gpu.sh run          (GPU machine: runs what build staged)
# build writes the executables into gpu-stage/nvcc-command-line/ (git-ignored; carry it to the GPU);
# run executes each three times, compares its output with nvcc's build byte for byte, and
# writes gpu.md to $OUT (or .).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$ROOT/results/2026-11-26-nvcc-command-line
STAGE=$ROOT/gpu-stage/nvcc-command-line
MODES="default ftz precdiv precsqrt fast"
flags() {
    case $1 in
    default) ;;
    ftz) echo -ftz=true ;;
    precdiv) echo -prec-div=false ;;
    precsqrt) echo -prec-sqrt=false ;;
    fast) echo --use_fast_math ;;
    esac
}
case "${1:?usage: gpu.sh build CDPC | run}" in
build)
    CDPC=$(realpath "${2:?the cdpc binary}")
    NVCC=$ROOT/.cuda/nvidia/cu13/bin/nvcc
    rm -rf "$STAGE" && mkdir -p "$STAGE" && cd "$STAGE"
    cp "$SRC"/fast_math_gpu.cu "$SRC"/names_kernels.cu "$SRC"/names_main.cu "$SRC"/arch_gpu.cu .
    for mode in $MODES; do
        # shellcheck disable=SC2046
        "$NVCC" -arch=sm_90 -rdc=true $(flags "$mode") fast_math_gpu.cu -o "math-$mode-nvcc"
        # shellcheck disable=SC2046
        "$CDPC" -dc -arch=sm_90 $(flags "$mode") fast_math_gpu.cu -o "math-$mode.o"
        "$NVCC" -arch=sm_90 -rdc=true "math-$mode.o" -o "math-$mode-cdpc" -lcudadevrt
    done
    # One object for two architectures (CMake's CMAKE_CUDA_ARCHITECTURES="80;90"), linked for sm_90.
    "$CDPC" -dc --generate-code=arch=compute_80,code=[sm_80] --generate-code=arch=compute_90,code=[compute_90,sm_90] fast_math_gpu.cu -o math-multi.o
    "$NVCC" -arch=sm_90 -rdc=true math-multi.o -o math-default-cdpc-multiarch -lcudadevrt
    "$CDPC" -dc -arch=sm_90 --use_fast_math -flaunch-threshold=128 -faggregate-launches=warp fast_math_gpu.cu -o math-fast-agg.o
    "$NVCC" -arch=sm_90 -rdc=true math-fast-agg.o -o math-fast-cdpc-aggregated -lcudadevrt
    "$NVCC" -std=c++20 -arch=sm_90 -rdc=true names_kernels.cu names_main.cu -o names-nvcc
    "$CDPC" -std=c++20 -O3 -arch=sm_90 -rdc=true --expt-relaxed-constexpr --extended-lambda -Xcompiler -fPIC -ccbin g++ -m64 -dc names_kernels.cu -o names_kernels.o
    "$NVCC" -std=c++20 -arch=sm_90 -rdc=true names_kernels.o names_main.cu -o names-cdpc -lcudadevrt
    "$NVCC" -arch=sm_90a -rdc=true arch_gpu.cu -o arch-nvcc
    "$CDPC" -dc -arch=sm_90a arch_gpu.cu -o arch.o
    "$NVCC" -arch=sm_90a -rdc=true arch.o -o arch-cdpc -lcudadevrt
    rm -f ./*.o
    ;;
run)
    cd "$STAGE"
    report=${OUT:-.}/gpu.md
    {
        echo "# nvcc's single-precision options and kernel template names on the GPU"
        echo
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/Machine: /'
        echo
        echo '| build | exit | output equals nvcc'"'"'s (same option) |'
        echo '|---|---|---|'
    } >"$report"
    status=0
    check() { # oracle-prefix executable...
        local oracle=$1
        shift
        for round in 1 2 3; do
            timeout 60 "./$oracle" >"$oracle-oracle-$round.txt" 2>&1 || true
        done
        for exe in "$@"; do
            local same=yes code=0
            for round in 1 2 3; do
                rc=0
                timeout 60 "./$exe" >"$exe-$round.txt" 2>&1 || rc=$?
                [ "$rc" = 0 ] || code=$rc
                cmp -s "$exe-$round.txt" "$oracle-oracle-$round.txt" || same=no
            done
            [ "$same" = yes ] && [ "$code" = 0 ] || status=1
            echo "| $exe | $code | $same (3 runs) |" >>"$report"
        done
    }
    for mode in $MODES; do
        extra=()
        [ "$mode" = fast ] && extra=(math-fast-cdpc-aggregated)
        [ "$mode" = default ] && extra=(math-default-cdpc-multiarch)
        check "math-$mode-nvcc" "math-$mode-nvcc" "math-$mode-cdpc" "${extra[@]}"
    done
    check names-nvcc names-nvcc names-cdpc
    check arch-nvcc arch-nvcc arch-cdpc
    {
        echo
        echo "Which operations each option changes (nvcc's own builds, hashes that differ from the default build's):"
        echo
        for mode in ftz precdiv precsqrt fast; do
            echo "- $mode: $(diff <(grep '^op' math-default-nvcc-oracle-1.txt) <(grep '^op' "math-$mode-nvcc-oracle-1.txt") | grep -c '^>') of 28"
        done
        for f in math-fast-nvcc names-nvcc arch-nvcc; do
            echo; echo "nvcc's output ($f):"; echo; echo '```'; cat "$f-oracle-1.txt"; echo '```'
        done
    } >>"$report"
    cat "$report"
    exit $status
    ;;
esac
