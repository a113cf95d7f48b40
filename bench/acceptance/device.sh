#!/bin/bash
# The acceptance measurement on the device machine's cores: nvcc (the oracle) and cdpc over
# sources.txt (the corpus) and sources-outside.txt, same command line, results to $OUT.
#
#   bash bench/acceptance/device.sh SECONDS [JOBS]     # stops starting files after SECONDS
#
# It reads .gpu/ in the repository root (git-ignored), made beforehand on the build machine:
#   acceptance-src.tar.xz   src/ with every repository of both lists at its commit (code files)
#                           and src/.extra/ (headers the machine lacks: glm)
#   cdpc.xz, clang-resource.tar.xz   as bench/ggml/ggml.sh says
#   corpus.jsonl, outside.jsonl      (optional) results so far: files recorded there are not
#                                    compiled again, so a second call goes on where one stopped
# nvcc's results for the corpus may be seeded into corpus.jsonl (cdpc null): cdpc alone runs then.
set -u
R=$PWD; W=/tmp/acc; mkdir -p $W; cd $W
[ -d src ] || tar -xJf $R/.gpu/acceptance-src.tar.xz
[ -x cdpc ] || { xz -dc $R/.gpu/cdpc.xz > cdpc; chmod +x cdpc; }
[ -d 22 ] || tar -xJf $R/.gpu/clang-resource.tar.xz
export CDPC_CLANG_RESOURCE_DIR=$W/22 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
for f in corpus outside; do [ -f $f.jsonl ] || cp $R/.gpu/$f.jsonl . 2>/dev/null || true; done
A="python3 $R/bench/acceptance/acceptance.py"
end=$(( $(date +%s) + ${1:-500} ))
run() { # name sources
  local left=$(( end - $(date +%s) )); [ $left -gt 20 ] || return 0
  timeout $left $A run src --sources $R/bench/acceptance/$2 --nvcc $CUDA_HOME/bin/nvcc --cdpc $W/cdpc \
    --extra-include src/.extra --cdpc-where-nvcc-compiles -j ${JOBS:-20} --timeout 180 --out $1.jsonl 2>&1 | tail -3
}
run corpus sources.txt
run outside sources-outside.txt
for f in corpus outside; do cp $f.jsonl $OUT/ 2>/dev/null; $A table $f.jsonl > $OUT/$f-table.md 2>/dev/null; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
./cdpc --version >> $OUT/device.txt 2>&1; $CUDA_HOME/bin/nvcc --version | tail -2 >> $OUT/device.txt; nproc >> $OUT/device.txt
