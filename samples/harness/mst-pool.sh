#!/usr/bin/env bash
# An experiment on a modified copy of KLAP's MST, built by nvcc alone: does it finish with a
# launch pool 16 times larger (x16), with the default pool (none: the program's
# cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, nnodes) taken out), or with the
# legacy default stream (legacy)? Measured 2026-11-23 on the H100: none of the three finishes in
# 30 s (results/corpus-gpu.md), so the pool is not why MST never finishes.
#
# Usage, on the GPU machine (nvcc on PATH): bash samples/harness/mst-pool.sh CORPUS OUTPUT_FILE
set -u
CORPUS=$1; OUTF=$2
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; cp -r "$CORPUS/klap" "$W/"; chmod -R u+w "$W"
mkdir -p "$W/shim/cub/cub" && echo '#include <cub/cub.cuh>' > "$W/shim/cub/cub/cub.cuh"
cd "$W/klap/test/MST"
F="-Xcompiler -fPIC -m64 --default-stream per-thread -I. -I../../include -I$W/shim -DcudaThreadSynchronize=cudaDeviceSynchronize"
for v in x16 none legacy; do
  cp main.cu main.$v.cu
  case $v in
    x16) sed -i 's/cudaLimitDevRuntimePendingLaunchCount, graph.nnodes)/cudaLimitDevRuntimePendingLaunchCount, 16 * graph.nnodes)/' main.$v.cu ;;
    none) sed -i 's/^\(\s*\)cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount.*$/\1;/' main.$v.cu ;;
  esac
  FF=$F; [ $v = legacy ] && FF=${F/--default-stream per-thread/}
  nvcc -arch=sm_90 -rdc=true $FF main.$v.cu kernel.base.cu -o mst.$v -lcudadevrt > /dev/null 2>&1 || { echo "$v build failed" >> "$OUTF"; continue; }
  { echo "== $v"; grep -n "PendingLaunchCount" main.$v.cu; /usr/bin/time -f "%e s, exit %x" timeout 30 ./mst.$v -o 1 -w 0 -r 1 2>&1 | tail -6; } >> "$OUTF" 2>&1
done
