#!/bin/bash
# ggml's CUDA backend built by its CMake with cdpc (and with nvcc, NVCC_TOO=1), then
# test-backend-ops of each (OPS_SECONDS each, default 240; OPS_JOBS worker threads, default 8), on a
# machine with a GPU, CUDA,
# CMake and Ninja; results to $OUT.
#
#   bash bench/ggml/ggml.sh start WAIT     # start the builds, wait up to WAIT s, then test
#   bash bench/ggml/ggml.sh wait WAIT      # a later call: wait for builds already started
#
# It reads .gpu/ in the repository root (git-ignored), made beforehand on the build machine:
#   tar -cJf .gpu/ggml.tar.xz ggml-org+ggml            # a checkout of ggml-org/ggml
#   (cd "$(clang++-22 -print-resource-dir)/.." && tar -cJf $OLDPWD/.gpu/clang-resource.tar.xz 22/include)
#   xz -3 -c target/release/cdpc > .gpu/cdpc.xz
set -u
R=$PWD; W=/tmp/w; mkdir -p $W; cd $W
if [ "${1:-start}" = start ]; then
  tar -xJf $R/.gpu/ggml.tar.xz; tar -xJf $R/.gpu/clang-resource.tar.xz
  xz -dc $R/.gpu/cdpc.xz > cdpc; chmod +x cdpc
fi
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CDPC_CLANG_RESOURCE_DIR=$W/22
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
./cdpc --version >> $OUT/device.txt 2>&1; $CUDA_HOME/bin/nvcc --version | tail -2 >> $OUT/device.txt; cmake --version | head -1 >> $OUT/device.txt
build() { # name compiler
  local b=$W/b-$1; shift
  local t0=$(date +%s)
  cmake -S ggml-org+ggml -B $b -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release "$@" > $b.configure.log 2>&1 || return 1
  ninja -C $b -k 0 test-backend-ops > $b.build.log 2>&1; local rc=$?
  echo "$(basename $b) build rc=$rc seconds=$(( $(date +%s) - t0 ))" >> $W/summary.txt
  return $rc
}
case "${1:-start}" in
start)
  # Both builds in the background (they outlive this command: setsid), 8 jobs each.
  export CMAKE_BUILD_PARALLEL_LEVEL=16
  setsid bash -c "$(declare -f build); W=$W; export CDPC_CLANG_RESOURCE_DIR CUDA_HOME; build cdpc -DCMAKE_CUDA_COMPILER=$W/cdpc; echo done > $W/cdpc.done" > /dev/null 2>&1 < /dev/null &
  if [ -n "${NVCC_TOO:-}" ]; then setsid bash -c "$(declare -f build); W=$W; build nvcc -DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc; echo done > $W/nvcc.done" > /dev/null 2>&1 < /dev/null & else echo skipped > $W/nvcc.done; fi
  ;;
esac
# Wait (at most $2 seconds) for both builds, then report.
limit=${2:-520}; t=0
while [ $t -lt $limit ] && ! { [ -f $W/cdpc.done ] && [ -f $W/nvcc.done ]; }; do sleep 10; t=$((t+10)); done
cat $W/summary.txt 2>/dev/null
for b in cdpc nvcc; do tail -c 200000 $W/b-$b.build.log > $OUT/build-$b.log 2>/dev/null; tail -c 50000 $W/b-$b.configure.log > $OUT/configure-$b.log 2>/dev/null; done
grep -h "FAILED\|error" $W/b-cdpc.build.log 2>/dev/null | head -40
if [ -f $W/cdpc.done ] && [ -f $W/nvcc.done ] && [ "${1:-start}" != "start-only" ]; then
  for b in cdpc nvcc; do
    [ -x $W/b-$b/bin/test-backend-ops ] || continue
    ( cd $W/b-$b && timeout ${OPS_SECONDS:-240} ./bin/test-backend-ops -b CUDA0 -j ${OPS_JOBS:-8} > $OUT/ops-$b.txt 2>&1; echo "ops-$b rc=$?" >> $W/summary.txt ) &
  done
  wait
  tail -5 $OUT/ops-*.txt; cp $W/summary.txt $OUT/; cat $W/summary.txt
fi
