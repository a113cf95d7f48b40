#!/bin/sh
# Compile and link every sample with nvcc + nvlink (sm_90, relocatable device
# code, libcudadevrt). Fails on any error, and on any warning (-Werror
# all-warnings for nvcc; nvlink's stderr must be empty).
# Usage: sh samples/check.sh [CUDA_DIR]
# CUDA_DIR is found as cdpc finds its tools (SETUP.md): the argument, else
# $CUDA_HOME, else the checkout's .cuda/ (the wheels of `cargo xtask setup`),
# else the folder above the nvcc on PATH. It may be a CUDA toolkit or a
# `pip install --target` folder (tools under nvidia/cu13/).
# OUT_DIR: where the cubins go (default: a new temporary folder, printed);
# SRC_DIR: the folder of .cdp and .cu files (default samples/, e.g. SRC_DIR=bench/gpu
# for the launch-throughput benchmark). JOBS: files compiled at once (default 1).
set -eu
# One file (the script calls itself through xargs): compile, link, report.
if [ "${CHECK_ONE:-}" = 1 ]; then
    f=$1 n=${1%.*}     # OUT, LIB and PATH from the calling script, in SRC_DIR
    if nvcc -x cu -rdc=true -arch=sm_90 -cubin -Werror all-warnings \
            -o "$OUT/$n.o" "$f" 2>"$OUT/$n.err" \
       && nvlink -arch=sm_90 "$OUT/$n.o" -L"$LIB" -lcudadevrt \
            -o "$OUT/$n.cubin" 2>>"$OUT/$n.err" \
       && [ ! -s "$OUT/$n.err" ]; then
        echo "ok   $f"
    else
        echo "FAIL $f"; cat "$OUT/$n.err"; exit 1
    fi
    exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
CU=${1:-${CUDA_HOME:-}}
if [ -z "$CU" ] && [ -x "$here/../.cuda/nvidia/cu13/bin/nvcc" ]; then
    CU=$here/../.cuda
fi
if [ -z "$CU" ] && command -v nvcc >/dev/null 2>&1; then
    CU=$(dirname "$(dirname "$(command -v nvcc)")")
fi
if [ -z "$CU" ]; then
    echo "no CUDA found: pass a folder, set CUDA_HOME, or run \`cargo xtask setup\`" >&2
    exit 2
fi
[ -x "$CU/bin/nvcc" ] || CU=$CU/nvidia/cu13      # a pip --target folder
if [ ! -x "$CU/bin/nvcc" ]; then
    echo "no bin/nvcc in $CU (nor in nvidia/cu13 below it)" >&2
    exit 2
fi
PATH=$CU/bin:$PATH
OUT=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cdpc-check-XXXXXX")}
echo "tools: $CU; cubins: $OUT"
LIB=$CU/lib
[ -f "$LIB/libcudadevrt.a" ] || LIB=$CU/lib64   # toolkit installs use lib64
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)     # the files are compiled from SRC_DIR
cd "${SRC_DIR:-$here}"
# JOBS (default 1) files at once; xargs's status is not 0 when one of them failed.
export OUT LIB PATH
for f in *.cdp *.cu; do
    [ -e "$f" ] && echo "$f"    # a folder without .cu (or .cdp) files: the pattern itself
done | CHECK_ONE=1 xargs -P "${JOBS:-1}" -n 1 sh "$here/check.sh" || exit 1
exit 0
