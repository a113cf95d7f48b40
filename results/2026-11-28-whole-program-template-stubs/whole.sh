#!/bin/bash
# Two files, each instantiating and launching the template kernel tk<int> (whose body writes
# the file's number), linked as whole programs (no -rdc): nvcc, cdpc, cdpc before the change.
set -u
B=$1; cd $(dirname $0)
nvcc -arch=sm_90 f1.cu f2.cu main.cu -o app-nvcc
$B/cdpc -arch=sm_90 f1.cu f2.cu main.cu -o app-cdpc
$B/cdpc-before -arch=sm_90 f1.cu f2.cu main.cu -o app-cdpc-before
for a in nvcc cdpc cdpc-before; do echo "$a: $(timeout 20 ./app-$a 2>&1 | tr '\n' ' ') exit ${PIPESTATUS[0]}"; done
