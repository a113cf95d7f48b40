#!/bin/bash
# Device call: err_pending_limit's builds, one process per (build, pool, spin), interleaved.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
/usr/local/cuda/bin/nvcc --version | tail -2
/usr/local/cuda/bin/nvcc -x cu -rdc=true -cubin -arch=sm_90 err_pending_limit.cdp -o nvcc.o &&
/usr/local/cuda/bin/nvlink -arch=sm_90 nvcc.o -L/usr/local/cuda/lib64 -lcudadevrt -o nvcc.cubin || exit 1
BUILDS="nvcc v1 v1-default v2 v2-default"
ROUNDS=${ROUNDS:-6}
for r in $(seq 1 $ROUNDS); do
  set -- $BUILDS; shift $(( (r - 1) % 5 )); order="$* $(echo $BUILDS | cut -d' ' -f1-$(( (r - 1) % 5 )))"
  [ $(( (r - 1) % 5 )) -eq 0 ] && order="$BUILDS"
  for cfg in "32 200000" "32 0" "40000 200000"; do
    for b in $order; do
      echo "round $r $b $cfg"
      timeout 120 python3 pending.py $b.cubin $cfg 20 || echo "RESULT $b.cubin cfg=$cfg FAILED rc=$?"
    done
  done
done
