#!/usr/bin/env bash
# Managed variables and linking on the GPU: managed variables (managed_*.cu), the CUDA C++ that
# linked or ran only after 503fc9f (cxx_gpu.cu), host code around device launches
# (host_mix.cu), kernel templates of `auto` parameters (names_gpu.cu). Two stages:
#   bash results/2026-11-25-managed-and-linking/gpu.sh build CDPC   (development machine: the checkout's .cuda/ nvcc)
#   bash results/2026-11-25-managed-and-linking/gpu.sh run          (GPU machine: runs what build staged)
# build writes the executables into gpu-stage/managed-and-linking/ (git-ignored; carry it to the GPU);
# run executes each, compares its output with nvcc's build of the same sources byte for byte,
# and writes gpu.md to $OUT (or .).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$ROOT/results/2026-11-25-managed-and-linking
STAGE=$ROOT/gpu-stage/managed-and-linking
case "${1:?usage: gpu.sh build CDPC | run}" in
build)
    CDPC=$(realpath "${2:?the cdpc binary}")
    NVCC=$ROOT/.cuda/nvidia/cu13/bin/nvcc
    rm -rf "$STAGE" && mkdir -p "$STAGE" && cd "$STAGE"
    cp "$SRC"/managed_gpu.cu "$SRC"/managed_lib.cu "$SRC"/managed_main.cu "$SRC"/cxx_gpu.cu "$SRC"/host_mix.cu "$SRC"/names_gpu.cu .
    nv() { "$NVCC" -arch=sm_90 "$@"; }
    # One file: nvcc's build, nvcc's host code with cdpc's device code, cdpc's -dc object.
    nv -rdc=true managed_gpu.cu -o one-nvcc
    python3 "$ROOT/samples/harness/nvcc-cdpc.py" --cdpc "$CDPC" --nvcc "$NVCC" -- -dc -arch=sm_90 managed_gpu.cu -o one-nc.o
    nv -rdc=true one-nc.o -o one-nvcc-host-cdpc-device -lcudadevrt
    for agg in "" grid warp; do
        args=() label=one-cdpc-dc
        [ -n "$agg" ] && args=(-flaunch-threshold=128 "-faggregate-launches=$agg") label=one-cdpc-dc-threshold-$agg
        "$CDPC" -dc "${args[@]}" managed_gpu.cu -o "$label.o"
        nv -rdc=true "$label.o" -o "$label" -lcudadevrt
    done
    # CUDA C++ through the device runtime, CUB, Thrust and virtual functions; host code around
    # device launches; kernel templates of `auto` parameters launched by nvcc's host code.
    for prog in cxx host names; do
        src=${prog}_gpu.cu
        [ "$prog" = host ] && src=host_mix.cu
        nv -rdc=true --extended-lambda "$src" -o "$prog-nvcc"
        python3 "$ROOT/samples/harness/nvcc-cdpc.py" --cdpc "$CDPC" --nvcc "$NVCC" -- -dc -arch=sm_90 --extended-lambda "$src" -o "$prog-nc.o"
        nv -rdc=true "$prog-nc.o" -o "$prog-nvcc-host-cdpc-device" -lcudadevrt
        for agg in "" grid warp; do
            args=() label=$prog-cdpc-dc
            [ -n "$agg" ] && args=(-flaunch-threshold=128 "-faggregate-launches=$agg") label=$prog-cdpc-dc-threshold-$agg
            "$CDPC" -dc "${args[@]}" "$src" -o "$label.o"
            nv -rdc=true "$label.o" -o "$label" -lcudadevrt
        done
    done
    # The same names program through the cdpc of before the change, if given (OLD_CDPC): its
    # device code under Clang's spelling, which nvcc's host code does not find.
    if [ -n "${OLD_CDPC:-}" ]; then
        python3 "$ROOT/samples/harness/nvcc-cdpc.py" --cdpc "$(realpath "$OLD_CDPC")" --nvcc "$NVCC" -- -dc -arch=sm_90 names_gpu.cu -o names-before.o
        nv -rdc=true names-before.o -o names-nvcc-host-cdpc-device-before -lcudadevrt
    fi
    # Two files: nvcc's main.cu declares the managed variables managed_lib.cu defines.
    nv -rdc=true managed_main.cu managed_lib.cu -o two-nvcc
    nv -dc managed_main.cu -o main-nvcc.o
    "$CDPC" -dc managed_lib.cu -o lib-cdpc.o
    "$CDPC" -dc managed_main.cu -o main-cdpc.o
    python3 "$ROOT/samples/harness/nvcc-cdpc.py" --cdpc "$CDPC" --nvcc "$NVCC" -- -dc -arch=sm_90 managed_lib.cu -o lib-nc.o
    nv -rdc=true main-nvcc.o lib-cdpc.o -o two-nvcc-main-cdpc-dc-lib -lcudadevrt
    nv -rdc=true main-cdpc.o lib-cdpc.o -o two-cdpc-dc-both -lcudadevrt
    nv -rdc=true main-nvcc.o lib-nc.o -o two-nvcc-main-nvcc-host-cdpc-device-lib -lcudadevrt
    "$CDPC" --version > cdpc-version.txt 2>&1 || true
    "$NVCC" --version | tail -1 > nvcc-version.txt
    rm -f ./*.o
    ls
    ;;
run)
    cd "$STAGE"
    REPORT=$(realpath "${OUT:-.}")/gpu.md
    {
        echo "# Managed variables and linking on the GPU"
        echo
        echo "$(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); built by $(cat cdpc-version.txt | head -1) and $(cat nvcc-version.txt)."
        echo
        echo "| program | exit | output = nvcc's |"
        echo "|---|---|---|"
    } > "$REPORT"
    failed=0
    for ref in one-nvcc two-nvcc cxx-nvcc host-nvcc names-nvcc; do
        prefix=${ref%-nvcc}
        timeout 60 "./$ref" > "$ref.out" 2>&1 || true
        for exe in "$prefix"-*; do
            case "$exe" in *.out|*.cu|*.txt) continue ;; esac
            rc=0
            timeout 60 "./$exe" > "$exe.out" 2>&1 || rc=$?
            same=no
            cmp -s "$exe.out" "$ref.out" && same=yes
            # A `-before` build is the cdpc of before a change, expected to differ.
            case "$exe" in *-before) ;; *) [ "$same" = yes ] && [ "$rc" = 0 ] || failed=1 ;; esac
            echo "| $exe | $rc | $same |" >> "$REPORT"
        done
        { echo; echo "nvcc's output ($ref):"; echo '```'; cat "$ref.out"; echo '```'; } >> "$REPORT.tail"
    done
    cat "$REPORT.tail" >> "$REPORT" && rm -f "$REPORT.tail"
    for f in *.out; do cmp -s "$f" one-nvcc.out || cmp -s "$f" two-nvcc.out || cmp -s "$f" cxx-nvcc.out || cmp -s "$f" host-nvcc.out || cmp -s "$f" names-nvcc.out || { echo; echo "$f:"; echo '```'; cat "$f"; echo '```'; } >> "$REPORT"; done
    cat "$REPORT"
    exit $failed
    ;;
esac
