#!/bin/bash
# ggml's CUDA backend built by its CMake with cdpc (and with nvcc), then test-backend-ops of each
# on the GPU, on a machine with a GPU, CUDA, CMake and Ninja; results to $OUT.
#
#   bash bench/ggml/ggml.sh full WAIT      # the whole comparison: see below; waits up to WAIT s
#   bash bench/ggml/ggml.sh collect WAIT   # a later call on the same machine: wait for `full`
#   bash bench/ggml/ggml.sh compare A B    # anywhere (python3): verdicts of two outputs, op by op
#
# `full` starts one pipeline in the background (setsid: it outlives the call, and a later
# `collect` picks up its results): cdpc's build of test-backend-ops with all cores, then nvcc's
# build while cdpc's build is tested, then nvcc's build tested; each test is
#   test-backend-ops -b CUDA0 -j OPS_JOBS        (default 8; no timeout)
# and every test that either build FAILed is run again, in both builds, RERUNS times on its own
# (-o 'OP(params)', default 3) and once with all of its op's tests (-o OP). Every call (full or
# collect) copies what there is so far to $OUT: device.txt, summary.txt (times, exit codes, the
# comparison), ops-cdpc.txt.xz, ops-nvcc.txt.xz, reruns.txt.xz, logs.tar.xz.
#
# The older modes, as the first two recorded runs used them: both builds at
# once (nvcc's with NVCC_TOO=1), then both tested at once for at most OPS_SECONDS (default 240):
#   bash bench/ggml/ggml.sh start WAIT     # start the builds, wait up to WAIT s, then test
#   bash bench/ggml/ggml.sh wait WAIT      # a later call: wait for builds already started
#
# It reads .gpu/ in the repository root (git-ignored), made beforehand on the build machine:
#   tar -cJf .gpu/ggml.tar.xz ggml-org+ggml            # a checkout of ggml-org/ggml
#   (cd "$(clang++-22 -print-resource-dir)/.." && tar -cJf $OLDPWD/.gpu/clang-resource.tar.xz 22/include)
#   xz -3 -c target/release/cdpc > .gpu/cdpc.xz
set -u
S=$(readlink -f "$0")

compare() { # A B: each a test-backend-ops output, plain or .xz
  python3 - "$1" "$2" <<'EOF'
import collections, lzma, re, sys
ansi = re.compile(r'\x1b\[[0-9;]*m')
test = re.compile(r'([A-Z][A-Z0-9_]*\(.*\)): (OK|FAIL|not supported|skipping large tensors)')
def verdicts(path):
    f = lzma.open(path, 'rt', errors='replace') if path.endswith('.xz') else open(path, errors='replace')
    v = collections.defaultdict(list)
    for line in f:
        m = test.search(ansi.sub('', line))
        if m:
            v[m.group(1)].append(m.group(2))
    return v
runs = [verdicts(p) for p in sys.argv[1:3]]
for p, v in zip(sys.argv[1:3], runs):
    c = collections.Counter(x for l in v.values() for x in l)   # lines (some tests run twice)
    d = collections.Counter(x for l in v.values() for x in set(l))   # distinct test names
    ops = {k.split('(')[0] for k, l in v.items() if 'OK' in l or 'FAIL' in l}
    print(f'{p}: {sum(c.values())} verdict lines, {len(v)} distinct tests; ' + ', '.join(
          f'{x} {c[x]} ({d[x]} distinct)' for x in ('OK', 'FAIL', 'not supported', 'skipping large tensors'))
          + f'; {len(ops)} ops with a test run')
a, b = runs
both = a.keys() & b.keys()
print(f'in both: {len(both)} tests; only in the first: {len(a.keys() - b.keys())}; '
      f'only in the second: {len(b.keys() - a.keys())}')
diff = sorted(k for k in both if sorted(a[k]) != sorted(b[k]))
print(f'verdicts that differ: {len(diff)}')
for k in diff:
    print(f'  {"/".join(a[k])} vs {"/".join(b[k])}: {k}')
for k in sorted(k for k in a.keys() ^ b.keys() if 'FAIL' in a.get(k, []) + b.get(k, [])):
    print(f'  FAIL in one output only, not reached by the other: {k}')
EOF
}
if [ "${1:-}" = compare ]; then compare "$2" "$3"; exit; fi

R=$PWD; W=/tmp/w; mkdir -p $W; cd $W
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CDPC_CLANG_RESOURCE_DIR=$W/22
build() { # name compiler
  local b=$W/b-$1; shift
  local t0=$(date +%s)
  cmake -S ggml-org+ggml -B $b -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release "$@" > $b.configure.log 2>&1 || return 1
  ninja -C $b -k 0 test-backend-ops > $b.build.log 2>&1; local rc=$?
  echo "$(basename $b) build rc=$rc seconds=$(( $(date +%s) - t0 )) (ended at +$(( $(date +%s) - T0 )) s)" >> $W/summary.txt
  return $rc
}
ops() { # name: test-backend-ops of that build, all of it
  local t0=$(date +%s)
  ( cd $W/b-$1 && ./bin/test-backend-ops -b CUDA0 -j ${OPS_JOBS:-8} > $W/ops-$1.txt 2>&1
    echo "ops-$1 rc=$? seconds=$(( $(date +%s) - t0 )) jobs=${OPS_JOBS:-8} (ended at +$(( $(date +%s) - T0 )) s)" >> $W/summary.txt )
}
reruns() { # every test FAILed in either output, again in both builds
  local fails=$(cat $W/ops-cdpc.txt $W/ops-nvcc.txt 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' |
    grep -o '[A-Z][A-Z0-9_]*(.*): FAIL' | sed 's/: FAIL$//' | sort -u)
  echo "tests FAILed in either output: $(echo -n "$fails" | grep -c .)" >> $W/summary.txt
  [ -n "$fails" ] || return 0
  while IFS= read -r t; do
    for b in cdpc nvcc; do
      for i in $(seq ${RERUNS:-3}); do
        echo "== $b, again ($i): $t"; (cd $W/b-$b && ./bin/test-backend-ops -b CUDA0 -o "$t" 2>&1 | grep -a "): ")
      done
    done
  done <<< "$fails" >> $W/reruns.txt
  for op in $(echo "$fails" | sed 's/(.*//' | sort -u); do
    for b in cdpc nvcc; do
      echo "== $b, all of $op:"; (cd $W/b-$b && ./bin/test-backend-ops -b CUDA0 -o "$op" -j ${OPS_JOBS:-8} 2>&1 | grep -a -E "FAIL|tests passed")
    done
  done >> $W/reruns.txt
}
collect() { # copy what there is to $OUT
  cp $W/device.txt $W/summary.txt $OUT/ 2>/dev/null
  for f in ops-cdpc ops-nvcc; do [ -f $W/$f.txt ] && xz -6 -c $W/$f.txt > $OUT/$f.txt.xz; done
  [ -f $W/reruns.txt ] && xz -6 -c $W/reruns.txt > $OUT/reruns.txt.xz
  tar -cJf $OUT/logs.tar.xz -C $W $(cd $W && ls b-*.log pipeline.log 2>/dev/null)
  cat $W/summary.txt 2>/dev/null
}

case "${1:-start}" in
full)
  tar -xJf $R/.gpu/ggml.tar.xz; tar -xJf $R/.gpu/clang-resource.tar.xz
  xz -dc $R/.gpu/cdpc.xz > cdpc; chmod +x cdpc
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/device.txt
  ./cdpc --version >> $W/device.txt 2>&1; $CUDA_HOME/bin/nvcc --version | tail -2 >> $W/device.txt; cmake --version | head -1 >> $W/device.txt; nproc >> $W/device.txt
  rm -f $W/all.done $W/ops-*.txt $W/reruns.txt
  echo "started $(date -u +%FT%TZ)" > $W/summary.txt
  setsid bash "$S" pipeline > $W/pipeline.log 2>&1 < /dev/null &
  ;;
pipeline)
  export T0=$(date +%s)
  build cdpc -DCMAKE_CUDA_COMPILER=$W/cdpc
  [ -x $W/b-cdpc/bin/test-backend-ops ] && { ops cdpc & }
  build nvcc -DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc
  [ -x $W/b-nvcc/bin/test-backend-ops ] && ops nvcc
  wait
  reruns
  [ -f $W/ops-cdpc.txt ] && [ -f $W/ops-nvcc.txt ] && compare $W/ops-cdpc.txt $W/ops-nvcc.txt >> $W/summary.txt
  echo "all done at +$(( $(date +%s) - T0 )) s" >> $W/summary.txt; echo done > $W/all.done
  exit
  ;;
esac
if [ "${1:-start}" = full ] || [ "${1:-start}" = collect ]; then
  limit=${2:-500}; t=0
  while [ $t -lt $limit ] && [ ! -f $W/all.done ]; do sleep 10; t=$((t+10)); done
  collect
  exit
fi

# The older modes (start, wait).
if [ "${1:-start}" = start ]; then
  tar -xJf $R/.gpu/ggml.tar.xz; tar -xJf $R/.gpu/clang-resource.tar.xz
  xz -dc $R/.gpu/cdpc.xz > cdpc; chmod +x cdpc
fi
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
./cdpc --version >> $OUT/device.txt 2>&1; $CUDA_HOME/bin/nvcc --version | tail -2 >> $OUT/device.txt; cmake --version | head -1 >> $OUT/device.txt
case "${1:-start}" in
start)
  # Both builds in the background (they outlive this command: setsid), 18 jobs each (Ninja's default).
  export CMAKE_BUILD_PARALLEL_LEVEL=16
  setsid bash -c "$(declare -f build); W=$W; T0=$T0; export CDPC_CLANG_RESOURCE_DIR CUDA_HOME; build cdpc -DCMAKE_CUDA_COMPILER=$W/cdpc; echo done > $W/cdpc.done" > /dev/null 2>&1 < /dev/null &
  if [ -n "${NVCC_TOO:-}" ]; then setsid bash -c "$(declare -f build); W=$W; T0=$T0; build nvcc -DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc; echo done > $W/nvcc.done" > /dev/null 2>&1 < /dev/null & else echo skipped > $W/nvcc.done; fi
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
