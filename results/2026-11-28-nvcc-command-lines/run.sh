#!/bin/bash
# Run on the GPU machine from the repository root: cdpc's builds beside nvcc's.
cd .gpu-carry
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nvcc --version | tail -1
M="-DN=1024 -DX=3 -DY=5 -DA=7 -Dk=2 -Dseed=11"
nvcc -rdc=true $M macros.cu -o macros-nvcc
nvcc -rdc=true $M -forward-unknown-to-host-compiler -Wall -Wextra -march=x86-64-v2 -fno-strict-aliasing -O2 macros.cu -o fwd-nvcc
nvcc -rdc=true $M -arch=all-major macros.cu -o allmajor-nvcc
nvcc -rdc=true $M -arch=compute_80 -code=compute_80 macros.cu -o ptx80-nvcc
nvcc -rdc=true $M -arch=native macros.cu -o native-nvcc
for b in macros fwd allmajor all ptx80 code90; do
  ./$b-cdpc > $OUT/$b-cdpc.txt 2>&1; echo "$b-cdpc rc=$?"
done
for b in macros fwd allmajor ptx80 native; do
  ./$b-nvcc > $OUT/$b-nvcc.txt 2>&1; echo "$b-nvcc rc=$?"
done
for b in macros fwd allmajor all ptx80 code90; do cmp $OUT/$b-cdpc.txt $OUT/macros-nvcc.txt && echo "$b-cdpc: nvcc's bytes"; done
for b in fwd allmajor ptx80 native; do cmp $OUT/$b-nvcc.txt $OUT/macros-nvcc.txt && echo "$b-nvcc: the same bytes as macros-nvcc"; done
cat $OUT/macros-nvcc.txt
# -arch=native with the carried cdpc (the kernel language needs no Clang), GPUs shown and hidden.
xz -dc cdpc.xz > cdpc && chmod +x cdpc
CUDA_HOME=/usr/local/cuda ./cdpc -arch=native native.cdp -o native.cubin; echo "native rc=$?"
cuobjdump --list-elf native.cubin 2>&1 | head -3; cuobjdump -elf native.cubin | grep -m2 -i "arch\|sm_"
CUDA_HOME=/usr/local/cuda CUDA_VISIBLE_DEVICES= ./cdpc -arch=native native.cdp -o hidden.cubin; echo "hidden rc=$?"
cuobjdump -elf hidden.cubin | grep -m2 -i "arch\|sm_"
CUDA_HOME=/usr/local/cuda ./cdpc -arch=native -rdc=true -c native.cdp -o native.o 2>&1 | tail -2; echo "native -c rc=$?"
cuobjdump --list-elf native.o 2>&1 | head
