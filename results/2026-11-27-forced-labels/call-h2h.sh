#!/bin/sh
# Device call 14: every label against its family's plain build head to head (timing only, as
# call 7 of results/2026-11-27-gpu-lane-order/), on the 14 samples whose cubins the change made
# differ; a label whose cubin is the plain one's bytes is the sample's A/A control.
set -u
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
tar -xJf .gpu-carry/gpu.tar.xz
S14="atomics c_statements coop_groups devrt_calls devrt_errors devrt_pdl err_child_fault err_depth err_invalid_config hello null_stream_order param_layout small_children sqrt_rounding"
mkdir -p $OUT/h2h
fam() { ref=$1; shift; mkdir -p m-$ref
  for l in "$@"; do for s in $S14; do c=build/gpu/$l/$s.cubin; [ -f $c ] || continue; cmp -s $c build/gpu/$ref/$s.cubin || cp samples/$s.toml m-$ref/; done; done
  cubins="$ref=build/gpu/$ref"; for l in "$@"; do cubins="$cubins $l=build/gpu/$l"; done
  echo "$ref: $(ls m-$ref | tr '\n' ' ')"
  timeout $TL build/gpu/bin/cdpc-run diff --no-check --manifests m-$ref --cubins $cubins --reference $ref --repeat 30 --warmup 3 --seed 17 --results $OUT/h2h/$ref.md > $OUT/h2h/$ref.log 2>&1
  echo "$ref rc=$? $(el) s"; grep -E "\| slower" $OUT/h2h/$ref.md | awk -F'|' '{print $2,$3,$7,$8,$9,$10,$11}'
}
TL=90 fam cdpc-v1 cdpc-v1-agg-block cdpc-v1-agg-warp cdpc-v1-agg-grid
TL=60 fam cdpc-clang-v1 cdpc-clang-v1-agg-warp cdpc-clang-v1-threshold
TL=150 fam cdpc-v2 cdpc-v2-agg-block cdpc-v2-agg-warp cdpc-v2-agg-grid cdpc-v2-threshold cdpc-v2-threshold-warp cdpc-v2-pool cdpc-v2-default
TL=$(( 580 - $(el) )) fam cdpc-clang-v2 cdpc-clang-v2-agg-block cdpc-clang-v2-agg-warp cdpc-clang-v2-agg-grid cdpc-clang-v2-threshold cdpc-clang-v2-threshold-block cdpc-clang-v2-threshold-grid cdpc-clang-v2-threshold-grid-pool cdpc-clang-v2-threshold-warp cdpc-clang-v2-default
echo "end $(el) s"
