#!/bin/bash
cd "$(dirname "$0")"
date -u
N=/usr/local/cuda/bin
$N/nvcc -x cu -rdc=true -cubin -arch=sm_90 err_launch_status.cdp -o n.o && $N/nvlink -arch=sm_90 n.o -L/usr/local/cuda/lib64 -lcudadevrt -o err_launch_status-nvcc.cubin || exit 1
for blocks in 16 128; do
  for c in nvcc v2-default.new v1-default.old v2-default.old v1-default.new v2.new; do
    timeout 25 python3 status.py err_launch_status err_launch_status-$c.cubin 100 $blocks || echo "RESULT err_launch_status $c blocks=$blocks HUNG-OR-FAILED rc=$?"
  done
done
for round in 1 2 3 4; do
  for c in err_pending_limit-v1-default.old err_pending_limit-v1-default.new err_pending_limit-v2-default.old err_pending_limit-v2-default.new err_pending_limit-v1.new; do
    timeout 25 python3 pending.py $c.cubin 32 200000 20 || echo "RESULT $c HUNG-OR-FAILED rc=$?"
  done
done
date -u
