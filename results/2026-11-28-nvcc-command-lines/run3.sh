#!/bin/bash
# Whole programs' PTX, JIT-compiled on the GPU machine, beside nvcc's builds.
cd .gpu-carry
export PATH=/usr/local/cuda/bin:$PATH
nvcc plain.cu -gencode arch=compute_80,code=compute_80 -o plainptx-nvcc
nvcc plain.cu -gencode arch=compute_80,code=[sm_80,compute_80] -o plain80-nvcc
nvcc plain.cu -arch=all-major -o plainall-nvcc
for b in plainptx plain80 plainall; do ./$b-cdpc > $OUT/$b-cdpc.txt 2>&1; echo "$b-cdpc rc=$?"; ./$b-nvcc > $OUT/$b-nvcc.txt 2>&1; echo "$b-nvcc rc=$?"; cmp $OUT/$b-cdpc.txt $OUT/$b-nvcc.txt && echo "$b: nvcc's bytes"; done
cat $OUT/plainptx-nvcc.txt
