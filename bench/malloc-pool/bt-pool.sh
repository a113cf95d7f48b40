#!/usr/bin/env bash
# Where KLAP's BT spends its time, by hand and with nvcc alone (no cdpc code): BT's device code
# (corpus/klap/test/BT/kernel.base.cu) in four variants built by nvcc -rdc=true:
#   base        as written: a child grid per line, cudaMalloc per line on the device heap
#   pool        cudaMalloc/cudaFree replaced by bt-pool.h's pool (what -fdevice-malloc-pool does)
#   inline      the child's threads run in the launching thread (what -flaunch-threshold=128 does
#               to BT: every child is at most 32 threads)
#   inlinepool  both
#   bash bench/malloc-pool/bt-pool.sh stage   (here: copies the corpus files into gpu-stage/bt-pool)
#   bash bench/malloc-pool/bt-pool.sh run     (the GPU machine, carrying gpu-stage/bt-pool)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STAGE=$ROOT/gpu-stage/bt-pool
case "${1:?usage: bt-pool.sh stage | run}" in
stage)
    rm -rf "$STAGE" && mkdir -p "$STAGE"
    cp "$ROOT"/../shared/corpus/klap/test/BT/{common.h,kernel.base.cu,main.cu,verify.cu,verify.h} "$STAGE"/
    cp "$ROOT"/bench/malloc-pool/bt-pool.h "$STAGE"/pool.h
    python3 - "$STAGE" <<'PY'
import sys, os
d = sys.argv[1]
src = open(os.path.join(d, "kernel.base.cu")).read()
launch = "computeBezierLinePositions<<<ceil((float)bLines[lidx].nVertices/32.0f), 32>>>(lidx, bLines, bLines[lidx].nVertices);"
assert launch in src
body = ("{ int n = bLines[lidx].nVertices; int nb = ceil((float)n/32.0f); for (int b = 0; b < nb; b++) for (int t = 0; t < 32; t++) "
        "{ int idx = t + 32*b; if (idx < n) { float u = (float)idx/(float)(n-1); float omu = 1.0f - u; float B3u[3]; B3u[0] = omu*omu; "
        "B3u[1] = 2.0f*u*omu; B3u[2] = u*u; float2 position = {0,0}; for (int i = 0; i < 3; i++) position = position + B3u[i] * bLines[lidx].CP[i]; "
        "bLines[lidx].vertexPos[idx] = position; } } }")
pool = lambda s: s.replace('#include "common.h"', '#include "common.h"\n#include "pool.h"')
inline = src.replace(launch, body)
for name, text in [("pool", pool(src)), ("inline", inline), ("inlinepool", pool(inline))]:
    open(os.path.join(d, f"kernel.{name}.cu"), "w").write(text)
PY
    ;;
run)
    cd "$STAGE"
    N=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
    for v in base pool inline inlinepool; do timeout 120 $N -arch=sm_90 -rdc=true -O3 main.cu verify.cu kernel.$v.cu -lcudadevrt -o bt-$v & done
    wait
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for i in 1 2 3; do
        for v in base pool inline inlinepool; do echo "$v $(timeout 30 ./bt-$v -o 1 | grep -i 'average\|error' | head -3)"; done
    done
    ;;
esac
