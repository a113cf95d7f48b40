#!/bin/sh
# The differential GPU run. On the device machine (a GPU, CUDA toolkit in /usr/local/cuda, no
# Rust, no LLVM), from the repository root, with build/gpu carried from the development machine
# (made there by `cargo xtask gpu-bundle`: cdpc's cubins for both launch ABIs, plain and with
# -faggregate-launches=block, =warp and =grid, through the kernel language's front end and
# through Clang, and the runner):
#
#     sh samples/harness/gpu-run.sh
#
# builds every sample with nvcc (samples/check.sh), then runs `cdpc-run diff` over nvcc's and
# cdpc's cubins: every sample checked against samples/NAME.toml, outputs compared byte for byte
# with nvcc's, then every sample's cubins that passed timed together, interleaved run by run in
# a seeded random order: REPEAT (default 30) rounds after 3 warm-up runs of each; min / median /
# max per compiler and the ratio to nvcc with its 95% bootstrap interval (docs/gpu-benchmarks.md).
# A sample whose manifest says `time_alone` (err_pending_limit: its interleaved timing stopped
# making progress) is timed one compiler's cubin at a time, each in its own process.
# The results file goes to $OUT/gpu-diff.md (and results/gpu-diff.md in this copy of the
# repository), written again after each sample: a run cut short keeps the samples it finished,
# its `result:` line saying how many. Exit status 0 when all passed.
#
# Then the launch-throughput benchmark (bench/gpu, docs/gpu-benchmarks.md), when build/gpu/bench
# is there (gpu-bundle and gpu-bench-bundle make it): each bench/gpu/VARIANT.cdp built with nvcc
# and copied under every size's name VARIANT_N.cubin, then `cdpc-run diff --manifests bench/gpu`
# into $OUT/gpu-bench.md (and results/gpu-bench.md). BENCH_REPEAT (default 30) interleaved
# rounds after 2 warm-up runs. The 1,048,576-launch size fails or exceeds the 60 s limit for
# every plain build (results/gpu-bench.md) and is left out unless BENCH_1M=1. SAMPLES=0 skips
# the samples, BENCH=0 the benchmark. BENCH_VARIANTS="launch_sites padded_structs" times only
# those variants, BENCH_LABELS="cdpc-v2 cdpc-clang-v2-agg-grid" only those builds (all of
# build/gpu/bench by default, the Clang path's cdpc-clang-* among them), BENCH_SIZES="0001024
# 0008192" only those sizes, BENCH_AA=1 adds nvcc's cubins again as an A/A control; BENCH_EXTRA="LABEL=DIR ..." adds more compilers' cubins (VARIANT_N.cubin in
# DIR), for instance nvcc's from another toolkit. SEED (default 1592643008) seeds the round
# orders and the bootstrap.
#
# Duration on the H100 at the defaults (estimated from the earlier runs' cell times, not yet
# measured with this method): the checked runs, one process each, ~0.5 s a cell (24 samples x
# 9 builds); the interleaved timing well under a second a sample, and about 50 s for the
# benchmark (30 rounds of 65,536-launch trees of ~0.1 s for each plain build): about 4 minutes
# for the samples and 3 for the benchmark. Where a call is limited to 10 minutes, run
# `BENCH=0 sh samples/harness/gpu-run.sh` and `SAMPLES=0 sh samples/harness/gpu-run.sh` as two.
set -u
# The GPU machine has its toolkit in /usr/local/cuda; CUDA_HOME overrides it.
CU=${CUDA_HOME:-/usr/local/cuda}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cdpc-gpu-run-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RESULTS_DIR=${OUT:-results}
REPEAT=${REPEAT:-30}
SEED=${SEED:-1592643008}
RUN=build/gpu/bin/cdpc-run
if [ ! -x "$RUN" ]; then
    echo "no $RUN: run \`cargo xtask gpu-bundle\` on the development machine and carry build/gpu"
    exit 2
fi
echo "cdpc cubins: $(cat build/gpu/BUILD-INFO 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$CU/bin/nvcc" --version | tail -n 2
mkdir -p "$RESULTS_DIR"
status=0
if [ "${SAMPLES:-1}" != 0 ]; then
# NVCC_CUBINS=DIR: nvcc's cubins already built there (samples/check.sh's OUT_DIR), not again
NVCC=${NVCC_CUBINS:-$WORK/nvcc}
if [ -z "${NVCC_CUBINS:-}" ]; then
    OUT_DIR=$NVCC sh samples/check.sh "$CU" || echo "(nvcc could not build some samples; they show as missing)"
fi
# LABELS="cdpc-clang-v2-agg-block ..." runs only those builds beside nvcc's (the whole list
# below takes longer than one 10-minute call at REPEAT=30).
ALL_LABELS="cdpc-v2 cdpc-v2-default cdpc-v2-default-parts cdpc-clang-v2-default cdpc-clang-v2-default-parts cdpc-v1 cdpc-v2-agg-block cdpc-v2-agg-warp cdpc-v1-agg-block cdpc-v1-agg-warp
    cdpc-v2-agg-grid cdpc-v1-agg-grid cdpc-v2-threshold cdpc-v2-threshold-warp
    cdpc-clang-v2 cdpc-clang-v1 cdpc-clang-v2-threshold cdpc-clang-v1-threshold
    cdpc-clang-v2-agg-warp cdpc-clang-v1-agg-warp cdpc-clang-v2-threshold-warp
    cdpc-clang-v2-agg-block cdpc-clang-v2-agg-grid cdpc-clang-v2-threshold-block cdpc-clang-v2-threshold-grid
    cdpc-v2-pool cdpc-clang-v2-threshold-grid-pool"
CUBINS="nvcc=$NVCC"
for label in ${LABELS:-$ALL_LABELS}; do
    CUBINS="$CUBINS $label=build/gpu/$label"
done
# CLANG_RAW=1 adds `clang-raw-v1`: every sample built by clang++-22 itself (V1 launches that cdpc
# did not write; xtask/src/clang_raw.rs), to time cdpc-v1 against. For timing only: where Clang
# contracts floating point differently its output may differ from nvcc's ("identical: NO").
if [ "${CLANG_RAW:-0}" = 1 ]; then
    CUBINS="$CUBINS clang-raw-v1=build/gpu/clang-raw-v1"
fi
# EXTRA="LABEL=DIR ..." adds other cubins of the samples (NAME.cubin in DIR), for instance nvcc's
# from another toolkit (`JOBS=2 OUT_DIR=build/nvcc135-samples sh samples/check.sh` on the
# development machine, carried): whether a difference from nvcc's cubins is cdpc's or the
# toolkit's.
CUBINS="$CUBINS ${EXTRA:-}"
# ONLY="atomics sqrt_rounding ..." checks and times only those samples (their manifests copied
# into a folder of their own), so that a short device call covers every label of a few samples.
MANIFESTS=samples
if [ -n "${ONLY:-}" ]; then
    MANIFESTS=$WORK/manifests
    mkdir -p "$MANIFESTS"
    for name in $ONLY; do
        cp "samples/$name.toml" "$MANIFESTS/" || { echo "ONLY: no samples/$name.toml"; exit 2; }
    done
fi
# $CUBINS unquoted: one argument per label (no label or path has a space)
timeout 540 "$RUN" diff --manifests "$MANIFESTS" --cubins $CUBINS \
    --repeat "$REPEAT" --warmup 3 --seed "$SEED" --results "$RESULTS_DIR/gpu-diff.md" || status=1
# The second front end's cubin (compiler/examples/inkwell_frontend.rs), checked by its manifest.
echo "=== inkwell front end"
"$RUN" sample build/gpu/inkwell_frontend.cubin compiler/examples/inkwell_frontend.toml --repeat "$REPEAT" || status=1
# The front end that writes textual LLVM IR (compiler/examples/ir_frontend.rs, compile_ir).
echo "=== textual IR front end"
"$RUN" sample build/gpu/ir_frontend.cubin compiler/examples/ir_frontend.toml --repeat "$REPEAT" || status=1
[ "$RESULTS_DIR" = results ] || cp "$RESULTS_DIR/gpu-diff.md" results/gpu-diff.md 2>/dev/null
fi

if [ "${BENCH:-1}" != 0 ]; then
    echo "=== launch-throughput benchmark (bench/gpu)"
    if [ ! -d build/gpu/bench/cdpc-v2 ]; then
        echo "no build/gpu/bench: run \`cargo xtask gpu-bundle\` (or gpu-bench-bundle) and carry build/gpu"
        exit 2
    fi
    mkdir -p "$WORK/nvcc-bench"
    SRC_DIR=bench/gpu OUT_DIR=$WORK/nvcc-bench-src sh samples/check.sh "$CU" \
        || echo "(nvcc could not build some benchmark variants; they show as missing)"
    mkdir -p "$WORK/bench-manifests"
    for m in bench/gpu/*.toml; do
        label=$(basename "$m" .toml)        # VARIANT_N: one .cdp serves every size
        variant=${label%_*}
        case $label in *_1048576) [ "${BENCH_1M:-0}" = 1 ] || continue ;; esac
        case " ${BENCH_VARIANTS:-$variant} " in *" $variant "*) ;; *) continue ;; esac
        size=${label##*_}
        case " ${BENCH_SIZES:-$size} " in *" $size "*) ;; *) continue ;; esac
        cp "$m" "$WORK/bench-manifests/"
        [ -f "$WORK/nvcc-bench-src/$variant.cubin" ] && cp "$WORK/nvcc-bench-src/$variant.cubin" "$WORK/nvcc-bench/$label.cubin"
    done
    # BENCH_LABELS="cdpc-v2 cdpc-clang-v2-agg-grid ..." times only those builds beside nvcc's
    # (every label of build/gpu/bench by default; the cdpc-clang-* ones are the same files as
    # CUDA C++ through Clang and the IR passes). BENCH_AA=1 adds nvcc's cubins a second time as
    # `nvcc-again`: an A/A control whose interval shows the method's own spread.
    BENCH_ALL="cdpc-v2 cdpc-v2-default cdpc-v1 cdpc-v2-agg-block cdpc-v2-agg-warp cdpc-v2-agg-grid
        cdpc-clang-v2 cdpc-clang-v2-default cdpc-clang-v2-agg-block cdpc-clang-v2-agg-warp cdpc-clang-v2-agg-grid"
    BENCH_CUBINS="nvcc=$WORK/nvcc-bench"
    [ "${BENCH_AA:-0}" = 1 ] && BENCH_CUBINS="$BENCH_CUBINS nvcc-again=$WORK/nvcc-bench"
    for label in ${BENCH_LABELS:-$BENCH_ALL}; do
        BENCH_CUBINS="$BENCH_CUBINS $label=build/gpu/bench/$label"
    done
    # $BENCH_CUBINS unquoted: one argument per label (no label or path has a space)
    timeout "${BENCH_TIMEOUT:-420}" "$RUN" diff --manifests "$WORK/bench-manifests" \
        --cubins $BENCH_CUBINS ${BENCH_EXTRA:-} \
        --repeat "${BENCH_REPEAT:-30}" --warmup 2 --seed "$SEED" --results "$RESULTS_DIR/gpu-bench.md" || status=1
    [ "$RESULTS_DIR" = results ] || cp "$RESULTS_DIR/gpu-bench.md" results/gpu-bench.md 2>/dev/null
fi
exit $status
