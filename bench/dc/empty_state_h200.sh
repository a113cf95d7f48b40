#!/bin/bash
# Device call: cdpc -dc with an empty cache, before and after the texture-intrinsics change,
# against the machine's nvcc, on its 16 cores. Copied to build/empty/run.sh beside cdpc-old.xz,
# cdpc-new.xz, clang-include.tar.xz and corpus/, and run there as `bash build/empty/run.sh` from
# the repository root with build/empty carried (the paths below are build/empty's).
set -u
cd "$(dirname "$0")"
for v in old new; do xz -dk cdpc-$v.xz && chmod +x cdpc-$v; done
mkdir -p res && tar -C res -xJf clang-include.tar.xz
export CDPC_CLANG_RESOURCE_DIR=$PWD/res CUDA_HOME=/usr/local/cuda CORPUS=$PWD/corpus
date -u; nproc; g++ --version | head -1; /usr/local/cuda/bin/nvcc --version | tail -1
B=corpus/klap/test/BT
mkdir -p /tmp/c1 && CDPC_CACHE_DIR=/tmp/c1 ./cdpc-new -dc -arch=sm_90 -I$B -Icorpus/klap/include --default-stream per-thread $B/kernel.base.cu -o /tmp/bt.o -v 2>&1 | tail -3 || exit 1
cd ../..
KILL_FILLERS=1 python3 bench/dc/empty_state.py build/empty/cdpc-old build/empty/cdpc-new /usr/local/cuda/bin/nvcc ${ROUNDS:-12} BT
date -u
