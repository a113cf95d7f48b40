#!/bin/bash
# cms-patatrack's library test with cdpc's registration-first objects, and NPSLab's bfs-rec -s 1
# (naive per-thread launches) alternately under nvcc's and cdpc's builds.
set -u
C=$1; OUT=$2; : "${CUDA_HOME:?the toolkit folder}"; H=$(cd "$(dirname "$0")/.." && pwd)
python3 $H/src/gen_inputs.py $H
for label in nvcc cdpc; do
  cc=nvcc; [ $label = cdpc ] && cc=$C
  root=$H/b/$label; mkdir -p $root; cp -r $H/src/npslab $H/src/cms $root/
  ( (cd $root/cms && make test NVCC="$cc" CUDA_BASE=$CUDA_HOME 'NVCC_FLAGS=--generate-line-info --source-in-ptx --expt-relaxed-constexpr --expt-extended-lambda -std=c++14 -O2 --cudart=shared -gencode arch=compute_90,code=sm_90 --compiler-options "-O2 -pthread -fPIC"') &
    (cd $root/npslab/apps/bfs-rec/src && make CC="$cc" CC_FLAGS="-arch=sm_90 -rdc=true -lcudadevrt -O2") & wait ) > $OUT/build-$label.log 2>&1 &
done
wait
for label in nvcc cdpc; do echo "== $label cms"; (cd $H/b/$label/cms && LD_LIBRARY_PATH=.:$CUDA_HOME/lib64 timeout 20 ./test; echo "exit $?"); done 2>&1 | tee $OUT/cms.txt
for rep in 1 2 3 4; do for label in nvcc cdpc; do
  t0=$(date +%s.%N)
  r=$(cd $H/b/$label/npslab/apps/bfs-rec/src && timeout 8 ./gpu-bfs-rec -f 1 -i $H/graph.metis -v -s 1 2>&1 | grep -E "kernel calls|ERROR|PASS" | tr '\n' ' '; echo "exit ${PIPESTATUS[0]}")
  echo "$label $rep $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N)-$t0}") s: $r"
done; done | tee $OUT/bfs-s1.txt
