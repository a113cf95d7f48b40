#!/bin/bash
# CDPC_CLANG_SKIP_BODIES=0 against the default, file by file (skip-equivalence.md). Run from the
# repository root with a release build; the outside corpora are read from /tmp (not kept here):
# /tmp/aksh/final (AkshDesai04/CUDA) and /tmp/cs (NVIDIA cuda-samples, with all.txt listing its
# .cu files). B may name another cdpc binary.
export CUDA_HOME=${CUDA_HOME:-$PWD/.cuda/nvidia/cu13}
B=${B:-$PWD/target/release/cdpc}
eq=/tmp/eq; out=$eq/out; rm -rf $out; mkdir -p $out
rm -f $eq/diffs $eq/compiled
i=0
{ find /tmp/aksh/final -name '*.cu' | sort | sed 's/$/ -/'; sed 's#^#/tmp/cs/#; s/$/ cs/' /tmp/cs/all.txt; ls compiler/tests/cuda_cxx/*.cu | sed 's/$/ -/'; } > $eq/list
while read f kind; do
  i=$((i+1))
  inc=""; [ "$kind" = cs ] && inc="-I /tmp/cs/Common -I $(dirname $f)"
  for m in 0 1; do
    env CDPC_CLANG_SKIP_BODIES=$m CDPC_CACHE_DIR=$eq/cache$m CDPC_PREAMBLE=0 timeout 120 $B -dc --emit ptx $inc $f -o $out/$i-$m.ptx > $out/$i-$m.err 2>&1; echo $? > $out/$i-$m.rc
  done
  if ! cmp -s $out/$i-0.rc $out/$i-1.rc || ! cmp -s $out/$i-0.err $out/$i-1.err || { [ -f $out/$i-0.ptx ] && ! cmp -s $out/$i-0.ptx $out/$i-1.ptx; }; then echo "$i $f" >> $eq/diffs; fi
  [ -f $out/$i-0.ptx ] && echo "$f" >> $eq/compiled
  rm -f $out/$i-*.ptx
done < $eq/list
