#!/bin/bash
# equivalence of CDPC_CLANG_SKIP_BODIES=0/1 over outside corpora
cd /work/main
export CUDA_HOME=/work/main/.cuda/nvidia/cu13
B=/tmp/eq/cdpc   # frozen binary copy
out=/tmp/eq/out; rm -rf $out; mkdir -p $out
i=0
{ find /tmp/aksh/final -name '*.cu' | sort | sed 's/$/ -/'; sed 's#^#/tmp/cs/#; s/$/ cs/' /tmp/cs/all.txt; ls /work/main/compiler/tests/cuda_cxx/*.cu | sed 's/$/ -/'; } > /tmp/eq/list
while read f kind; do
  i=$((i+1))
  inc=""; [ "$kind" = cs ] && inc="-I /tmp/cs/Common -I $(dirname $f)"
  for m in 0 1; do
    env CDPC_DEBUG_SKIP=1 CDPC_CLANG_SKIP_BODIES=$m CDPC_CACHE_DIR=/tmp/eq/cache$m CDPC_PREAMBLE=0 timeout 120 $B -dc --emit ptx $inc $f -o $out/$i-$m.ptx > $out/$i-$m.err 2>&1; echo $? > $out/$i-$m.rc
  done
  grep -q DEBUG $out/$i-1.err && echo "$i $f" >> /tmp/eq/reruns
  grep -v DEBUG $out/$i-1.err > $out/$i-1.err2; mv $out/$i-1.err2 $out/$i-1.err
  if ! cmp -s $out/$i-0.rc $out/$i-1.rc || ! cmp -s $out/$i-0.err $out/$i-1.err || { [ -f $out/$i-0.ptx ] && ! cmp -s $out/$i-0.ptx $out/$i-1.ptx; }; then echo "$i $f" >> /tmp/eq/diffs; fi
  [ -f $out/$i-0.ptx ] && echo ok >> /tmp/eq/compiled
  rm -f $out/$i-*.ptx
done < /tmp/eq/list
echo done > /tmp/eq/finished
