#!/bin/sh
# QT's shape at every granularity, timed against nvcc's build (results/qt-grid-probe.md): the
# small self-launching kernels of this folder's tree.cdp and samples/self_launch_levels.cdp
# (each launches itself 4 blocks at a time after a barrier; blocks return early), built by cdpc
# plain and aggregated per block and per grid, through both front ends, checked by their
# manifests and timed interleaved by `cdpc-run diff` (ratios to nvcc with bootstrap intervals).
#
# Two stages, as corpus-timing.py: the GPU machine has no Rust, LLVM or Clang.
#   here (cdpc built, `cargo xtask setup` run; no GPU):
#     cargo build --release -p cdpc
#     STAGE=build sh samples/harness/qt-grid-probe/probe.sh
#   there (a GPU, CUDA in /usr/local/cuda or CUDA_HOME), with build/qt-probe carried:
#     STAGE=run sh samples/harness/qt-grid-probe/probe.sh
# OUT (default build/qt-probe) is where the build stage writes and the run stage reads;
# CDPC (default target/release/cdpc) the compiler; REPEAT (default 30) the timed rounds;
# RESULTS (default $OUT/qt-probe.md) the run's report. nvcc's cubins are built in the run
# stage by the GPU machine's nvcc, as samples/harness/gpu-run.sh builds them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
OUT=${OUT:-build/qt-probe}
SOURCES="$here/tree.cdp $root/samples/self_launch_levels.cdp"
# label and cdpc's flags, `,` for a space
LABELS="cdpc: cdpc-block:-faggregate-launches=block cdpc-grid:-faggregate-launches=grid
    cdpc-clang:-x,cu cdpc-clang-block:-x,cu,-faggregate-launches=block cdpc-clang-grid:-x,cu,-faggregate-launches=grid"

case ${STAGE:-} in
build)
    CDPC=${CDPC:-target/release/cdpc}
    [ -x "$CDPC" ] || { echo "no cdpc at $CDPC: cargo build --release -p cdpc, or set CDPC" >&2; exit 2; }
    rm -rf "$OUT"
    mkdir -p "$OUT/manifests" "$OUT/src" "$OUT/bin"
    for src in $SOURCES; do
        name=$(basename "$src" .cdp)
        cp "$src" "$OUT/src/"
        cp "$(dirname "$src")/$name.toml" "$OUT/manifests/"
    done
    for entry in $LABELS; do
        label=${entry%%:*}
        flags=$(echo "${entry#*:}" | tr ',' ' ')
        mkdir -p "$OUT/$label"
        for src in $SOURCES; do
            name=$(basename "$src" .cdp)
            # $flags unquoted: one argument per flag
            "$CDPC" "$src" $flags -o "$OUT/$label/$name.cubin"
        done
    done
    # The runner: no LLVM in it, libcuda opened at run time.
    cargo build --release -p runtime-shim --features loader --bin cdpc-run
    cp target/release/cdpc-run "$OUT/bin/"
    "$CDPC" --version > "$OUT/BUILD-INFO"
    echo "built $OUT: carry it to the GPU machine and run STAGE=run sh $0"
    ;;
run)
    CU=${CUDA_HOME:-/usr/local/cuda}
    [ -x "$OUT/bin/cdpc-run" ] || { echo "no $OUT/bin/cdpc-run: run STAGE=build here first" >&2; exit 2; }
    LIB=$CU/lib64
    [ -f "$LIB/libcudadevrt.a" ] || LIB=$CU/lib
    mkdir -p "$OUT/nvcc"
    for src in "$OUT"/src/*.cdp; do
        name=$(basename "$src" .cdp)
        "$CU/bin/nvcc" -x cu -rdc=true -arch=sm_90 -cubin -o "$OUT/nvcc/$name.o" "$src"
        "$CU/bin/nvlink" -arch=sm_90 "$OUT/nvcc/$name.o" -L"$LIB" -lcudadevrt -o "$OUT/nvcc/$name.cubin"
    done
    CUBINS="nvcc=$OUT/nvcc"
    for entry in $LABELS; do
        CUBINS="$CUBINS ${entry%%:*}=$OUT/${entry%%:*}"
    done
    echo "cdpc: $(cat "$OUT/BUILD-INFO")"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    # $CUBINS unquoted: one argument per label
    "$OUT/bin/cdpc-run" diff --manifests "$OUT/manifests" --cubins $CUBINS \
        --repeat "${REPEAT:-30}" --warmup 3 --results "${RESULTS:-$OUT/qt-probe.md}"
    ;;
*)
    echo "usage: STAGE=build|run sh $0 (the header says which machine runs which)" >&2
    exit 2
    ;;
esac
