#!/bin/sh
# Builds probe.cu's cubins into build/gpu/probe/ on the development machine:
# cdpc's plain build and its grid and block aggregation through Clang (-x cu), with CDPC
# (default target/release/cdpc), and, when CDPC_BEFORE names another cdpc (a build of the
# commit before the fix), its grid build as grid-before.cubin; and nvcc's, with the .cuda/
# toolkit. Carry build/gpu/probe and run probe.py there (README.md).
set -eu
CDPC=${CDPC:-target/release/cdpc}
CU=${CU:-.cuda/nvidia/cu13}
SRC=bench/gpu/grid_sites_probe/probe.cu
OUT=build/gpu/probe
rm -rf "$OUT"
mkdir -p "$OUT"
"$CDPC" -x cu "$SRC" -o "$OUT/plain.cubin"
"$CDPC" -x cu "$SRC" -faggregate-launches=grid -o "$OUT/grid.cubin"
"$CDPC" -x cu "$SRC" -faggregate-launches=block -o "$OUT/block.cubin"
if [ -n "${CDPC_BEFORE:-}" ]; then
    "$CDPC_BEFORE" -x cu "$SRC" -faggregate-launches=grid -o "$OUT/grid-before.cubin"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$CU/bin/nvcc" -x cu -rdc=true -arch=sm_90 -cubin "$SRC" -o "$TMP/probe.o"
"$CU/bin/nvlink" -arch=sm_90 "$TMP/probe.o" -L"$CU/lib" -lcudadevrt -o "$OUT/nvcc.cubin"
ls "$OUT"
