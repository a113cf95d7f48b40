#!/bin/bash
cd "$(dirname "$0")"
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
N=/usr/local/cuda/bin
for s in err_launch_status err_pending_limit; do
  $N/nvcc -x cu -rdc=true -cubin -arch=sm_90 $s.cdp -o $s-nvcc.o && $N/nvlink -arch=sm_90 $s-nvcc.o -L/usr/local/cuda/lib64 -lcudadevrt -o $s-nvcc.cubin || exit 1
done
for round in 1 2; do
  for c in $(ls *.cubin | sort); do
    s=${c%%-*}
    timeout 120 python3 status.py $s $c 100 || echo "RESULT $s $c FAILED rc=$?"
  done
done
# the sample as it is (pool 32, spin 200000): the default builds before and after, interleaved
for round in 1 2 3 4; do
  for c in err_pending_limit-v1-default.old err_pending_limit-v1-default.new err_pending_limit-v2-default.old err_pending_limit-v2-default.new err_pending_limit-v1.new; do
    timeout 120 python3 pending.py $c.cubin 32 200000 20 || echo "RESULT $c FAILED rc=$?"
  done
done
