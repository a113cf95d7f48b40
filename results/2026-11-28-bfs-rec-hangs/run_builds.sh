#!/bin/bash
# bfs-rec -s 1 under four builds: nvcc's objects and link (nn), cdpc's objects and link (cc),
# cdpc's objects with nvcc's link (cn), nvcc's objects with cdpc's link (nc); alternated.
set -u
C=$1; OUT=$2; H=${ROOT:?the folder holding src/npslab and src/gen_inputs.py}
python3 $H/src/gen_inputs.py $H
S=$H/src/npslab/apps/bfs-rec/src; cd $S
F="-arch=sm_90 -rdc=true -O2 -I. -I../../../common"
{ $C $F -dc bfs_rec_wrapper.cu -o c_w.o & $C $F -c bfs_rec.cpp -o c_b.o & $C $F -c ../../../common/global.cpp -o c_g.o &
  nvcc $F -dc bfs_rec_wrapper.cu -o n_w.o & nvcc $F -c bfs_rec.cpp -o n_b.o & nvcc $F -c ../../../common/global.cpp -o n_g.o & wait
  nvcc -arch=sm_90 -rdc=true c_w.o c_b.o c_g.o -lcudadevrt -o cn & $C -arch=sm_90 -rdc=true n_w.o n_b.o n_g.o -lcudadevrt -o nc &
  $C -arch=sm_90 -rdc=true c_w.o c_b.o c_g.o -lcudadevrt -o cc & nvcc -arch=sm_90 -rdc=true n_w.o n_b.o n_g.o -lcudadevrt -o nn & wait; } > $OUT/1-build.log 2>&1
ls -la nn cc cn nc >> $OUT/1-build.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv >> $OUT/1-build.log 2>&1; nvcc --version | tail -2 >> $OUT/1-build.log
for rep in $(seq 1 ${REPS:-12}); do for b in ${BUILDS:-nn cc cn nc}; do
  t0=$(date +%s.%N)
  r=$(timeout ${LIMIT:-3} ./$b -f 1 -i $H/graph.metis -v -s 1 2>&1 | grep -E "kernel calls|ERROR|PASS" | tr '\n' ' '; echo "exit ${PIPESTATUS[0]}")
  echo "$b $rep $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N)-$t0}") s: $r"
done; done > $OUT/0-runs.txt 2>&1
for b in ${BUILDS:-nn cc cn nc}; do echo "$b finished $(grep "^$b " $OUT/0-runs.txt | grep -c 'exit 0') of $(grep -c "^$b " $OUT/0-runs.txt)"; done > $OUT/0-summary.txt
