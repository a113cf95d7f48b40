#!/bin/sh
# Device call 13 (2026-11-27, compiler with the driver rule at every granularity and two arena
# banks for a child of two groups): the cubins the change made differ from both their old bytes
# and their family's plain build (build/chg, 34 cubins of 8 samples) checked against nvcc's
# output byte for byte, then soaked 100 runs each (err_child_fault, whose every run faults by
# design and takes a process of its own, 20 runs).
set -u
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
tar -xJf .gpu-carry/gpu.tar.xz && tar -xJf .gpu-carry/chg.tar.xz
head -3 build/gpu/BUILD-INFO; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; /usr/local/cuda/bin/nvcc --version | tail -1
S="c_statements devrt_calls err_child_fault err_invalid_config hello null_stream_order param_layout small_children"
mkdir -p src2 m8 build/nvcc-samples
for s in $S; do cp samples/$s.cdp src2/; cp samples/$s.toml m8/; done
JOBS=16 SRC_DIR=src2 OUT_DIR=build/nvcc-samples sh samples/check.sh /usr/local/cuda > $OUT/check.log 2>&1; echo "check rc=$? $(el) s"
cub="nvcc=build/nvcc-samples"; for l in $(ls build/chg); do cub="$cub $l=build/chg/$l"; done
timeout 150 build/gpu/bin/cdpc-run diff --manifests m8 --cubins $cub --reference nvcc --repeat 3 --warmup 1 --seed 13 --results $OUT/diff-vs-nvcc.md > $OUT/diff.log 2>&1; echo "diff rc=$? $(el) s"
grep -E "^\| [a-z_]+ \|" $OUT/diff-vs-nvcc.md | awk -F'|' '{print $2,$3,$4,$5,$6}' | grep -v "missing" | head -60
L="$(ls build/chg | tr '\n' ' ')"
mkdir -p $OUT/soak $OUT/soak-fault
NVCC_CUBINS=build/nvcc-samples DISTINCT=1 JOBS=12 RUNS=100 LIMIT=20 OUT=$OUT/soak LABELS="$L" DEADLINE=200 \
  ONLY="c_statements devrt_calls err_invalid_config hello null_stream_order param_layout small_children" \
  timeout 280 sh samples/harness/soak.sh > $OUT/soak/log.txt 2>&1; echo "soak rc=$? $(el) s"
grep "^| " $OUT/soak/soak.md | head -60
NVCC_CUBINS=build/nvcc-samples DISTINCT=1 JOBS=12 RUNS=20 LIMIT=20 OUT=$OUT/soak-fault LABELS="$L" DEADLINE=60 ONLY="err_child_fault" \
  timeout $(( 585 - $(el) )) sh samples/harness/soak.sh > $OUT/soak-fault/log.txt 2>&1; echo "soak-fault rc=$? $(el) s"
grep "^| " $OUT/soak-fault/soak.md | head -20
echo "end $(el) s"
