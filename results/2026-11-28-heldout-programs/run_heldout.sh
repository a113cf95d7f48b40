#!/bin/bash
# Held-out dynamic-parallelism programs from public repositories (never in the project), each
# built from its own sources and Makefile with nvcc and with cdpc (default build, and plain:
# -fno-launch-optimizations), run, and their outputs compared with nvcc's, floats (timings)
# masked. Usage: run_heldout.sh CDPC OUT
set -u
C=$1; OUT=$2; : "${CUDA_HOME:?the toolkit folder}"; H=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p $OUT
python3 $H/src/gen_inputs.py $H
G=$H/graph.metis; T=$H/text.txt
D="-DcudaThreadSynchronize=cudaDeviceSynchronize -DcudaThreadExit=cudaDeviceReset"
build() { # label compiler
  local label=$1 cc=$2 root=$H/b/$1
  mkdir -p $root && cp -r $H/src/npslab $H/src/cms $H/src/qtvo93 $H/src/quicksort $H/src/sourabh $H/src/common $root/
  {
  for a in bfs-rec graph-color sssp; do (cd $root/npslab/apps/$a/src && make CC="$cc" CC_FLAGS="-arch=sm_90 -rdc=true -lcudadevrt -O2") & done
  (cd $root/cms && make test NVCC="$cc" CUDA_BASE=$CUDA_HOME 'NVCC_FLAGS=--generate-line-info --source-in-ptx --expt-relaxed-constexpr --expt-extended-lambda -std=c++14 -O2 --cudart=shared -gencode arch=compute_90,code=sm_90 --compiler-options "-O2 -pthread -fPIC"') &
  (cd $root/qtvo93 && $cc -O3 -arch=sm_90 -rdc=true counting_sort.cu counting_sort_gold.cpp -o app -lcudadevrt) &
  (cd $root/quicksort && $cc -O3 -arch=sm_90 -rdc=true --expt-relaxed-constexpr main.cpp quicksort_gpu.cu -o app -lcudadevrt) &
  for f in DynQS DynSimpleBF DynChunkBF DynHP SharedDynBF-Global Horspool; do (cd $root/sourabh && $cc -O3 -arch=sm_90 -rdc=true -I../common $D $f.cu -o $f -lcudadevrt) & done
  wait
  } > $H/build-$label.log 2>&1
}
start=$(date +%s)
build nvcc nvcc & build cdpc "$C" & build plain "$C -fno-launch-optimizations" & wait
echo "builds: $(( $(date +%s) - start )) s" | tee -a $OUT/0-times.txt
for l in nvcc cdpc plain; do echo "=== $l"; cat $H/build-$l.log; done > $OUT/1-builds.log
R=$H/res; mkdir -p $R
one() { # label rep name dir command...: runs it with a 30 s limit; its output, exit status and time into one file
  local label=$1 rep=$2 name=$3 dir=$4; shift 4
  local t0=$(date +%s.%N)
  local text; text=$(cd $dir && LD_LIBRARY_PATH=.:$CUDA_HOME/lib64 timeout 20 "$@" 2>&1); local rc=$?
  local t1=$(date +%s.%N)
  printf '%s\n' "$text" > $R/$label.$rep.$name.out
  echo "$label $rep $name exit=$rc seconds=$(awk "BEGIN{printf \"%.2f\", $t1-$t0}")" >> $OUT/0-times.txt
  echo "exit $rc" >> $R/$label.$rep.$name.out
}
runs() { # label rep
  local root=$H/b/$1
  for s in 0 1 2 3 4 5; do one $1 $2 bfs-s$s $root/npslab/apps/bfs-rec/src ./gpu-bfs-rec -f 1 -i $G -v -s $s; done
  for s in 0 1 2 3 4; do one $1 $2 gc-s$s $root/npslab/apps/graph-color/src ./gpu-graph-color -f 1 -i $G -v -s $s; done
  for s in 0 1 2 3 4; do one $1 $2 sssp-s$s $root/npslab/apps/sssp/src ./gpu-sssp -f 1 -i $G -v -s $s; done
  one $1 $2 cms $root/cms ./test
  one $1 $2 counting $root/qtvo93 ./app 2000000
  one $1 $2 quicksort $root/quicksort ./app 100000 3 0
  for f in DynQS DynSimpleBF DynChunkBF DynHP SharedDynBF-Global; do one $1 $2 $f $root/sourabh ./$f 0 parallel $T; done
}
# A second round only while the call has time for it (a hung program costs its 30 s).
# The default build a second time only while the call has time for it.
for label in nvcc cdpc plain; do runs $label 1; done
[ $(( $(date +%s) - start )) -lt 230 ] && runs cdpc 2
[ $(( $(date +%s) - start )) -lt 230 ] && runs nvcc 2
echo "runs done: $(( $(date +%s) - start )) s"
mask() { sed -E 's/[0-9]+\.[0-9]+(e[-+]?[0-9]+)?/F/g' "$1"; }
for f in $R/nvcc.1.*.out; do
  name=${f#$R/nvcc.1.}; name=${name%.out}
  line="$name:"
  for label in nvcc cdpc plain; do for rep in 1 2; do
    [ "$label.$rep" = nvcc.1 ] && continue
    g=$R/$label.$rep.$name.out
    if [ ! -f $g ]; then continue
    elif diff -q <(mask $f) <(mask $g) > /dev/null; then line="$line $label.$rep=same"
    else line="$line $label.$rep=DIFF"; fi
  done; done
  echo "$line"
done > $OUT/0-summary.txt
cat $OUT/0-summary.txt
# One file of every output, for the record.
for f in $R/*.out; do echo "=== ${f#$R/}"; cat $f; done > $OUT/2-outputs.txt
