#!/bin/sh
# Compile and link every sample with nvcc + nvlink (sm_90, relocatable device
# code, libcudadevrt). Fails on any error, and on any warning (-Werror
# all-warnings for nvcc; nvlink's stderr must be empty).
# Usage: sh samples/check.sh [NVTOOLS]   (default NVTOOLS=/tmp/nvtools/nvidia/cu13)
# OUT_DIR: where the cubins go (default /tmp/s); SRC_DIR: the folder of .cdp files (default
# samples/, e.g. SRC_DIR=bench/gpu for the launch-throughput benchmark).
set -eu
CU=${1:-/tmp/nvtools/nvidia/cu13}
PATH=$CU/bin:$PATH
OUT=${OUT_DIR:-/tmp/s}
LIB=$CU/lib
[ -f "$LIB/libcudadevrt.a" ] || LIB=$CU/lib64   # toolkit installs use lib64
mkdir -p "$OUT"
cd "${SRC_DIR:-$(dirname "$0")}"
status=0
for f in *.cdp; do
    n=${f%.cdp}
    if nvcc -x cu -rdc=true -arch=sm_90 -cubin -Werror all-warnings \
            -o "$OUT/$n.o" "$f" 2>"$OUT/$n.err" \
       && nvlink -arch=sm_90 "$OUT/$n.o" -L"$LIB" -lcudadevrt \
            -o "$OUT/$n.cubin" 2>>"$OUT/$n.err" \
       && [ ! -s "$OUT/$n.err" ]; then
        echo "ok   $f"
    else
        echo "FAIL $f"; cat "$OUT/$n.err"; status=1
    fi
done
exit $status
