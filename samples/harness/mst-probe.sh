#!/usr/bin/env bash
# Why KLAP's MST never finishes on the H100: a set of probes, each
# on a fresh copy of the program, each bounded in time. Output lines are line-buffered
# (stdbuf), so a killed run still shows how far it got.
#   1. nvcc's build, `-o 2`: the program prints each iteration; how far does it get?
#   2. the same under cuda-gdb, interrupted: every warp of every kernel and where it is.
#   3. compute-sanitizer memcheck on nvcc's build.
#   4. nvcc's builds of modified copies (never the corpus itself): a launch pool 16 times
#      larger (`pool16`), a quarter of it (`pool1k`), the default (`nopool`); parent blocks of
#      256 threads (`blocks256`); children of 256 threads (`child256`); children launched
#      fire-and-forget (`faf`); the grid-barrier kernel run as one block (`barrier1`). Each
#      prints the lines it changed. VARIANTS="..." picks some.
#   5. cdpc's device code (nvcc-cdpc.py), plain and at each aggregation granularity, and plain
#      with the documented launch ABI (`v1`: cudaGetParameterBuffer, cudaLaunchDevice).
#   6. nvcc's build of a copy whose find kernel records, in mapped host memory, each launching
#      thread's state (1: in the launch, 2 + cudaGetLastError(): past it) and each child
#      block's start; a host thread prints the counts after 12 s and ends the program.
#      WATCH="watch watch-pool16 ..." runs it on copies changed as in section 4 too
#      (`-pool16`, `-faf`, ...: `modify`), with the find kernel's warps reconverged after their
#      `cs.find` (`-syncwarp`), or with that `cs.find` not compressing paths (`-nocompress`).
#
# Usage, from the repository root, on the GPU machine (nvcc, cuda-gdb, compute-sanitizer on
# PATH): bash samples/harness/mst-probe.sh CDPC CORPUS OUTPUT_FILE
set -u
ROOT=$(pwd)
CDPC=$(realpath "${1:?usage: mst-probe.sh CDPC CORPUS OUTPUT_FILE}")
CORPUS=$(realpath "${2:?usage}"); OUTF=$(realpath "${3:?usage}")
LIMIT=${LIMIT:-20}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/shim/cub/cub" && echo '#include <cub/cub.cuh>' > "$W/shim/cub/cub/cub.cuh"
F="-Xcompiler -fPIC -m64 --default-stream per-thread -I. -I../../include -I$W/shim -DcudaThreadSynchronize=cudaDeviceSynchronize"
CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
say() { echo "$@" >> "$OUTF"; }

# copy NAME: a fresh copy of the MST folder in $W/NAME; prints its path
copy() { mkdir -p "$W/$1" && cp -r "$CORPUS/klap" "$W/$1/" && chmod -R u+w "$W/$1" && echo "$W/$1/klap/test/MST"; }
# runit LABEL CMD...: run with the time limit, line-buffered, last 25 lines
runit() {
  local label=$1; shift
  say "== $label"
  { /usr/bin/time -f "%e s, exit %x" timeout "$LIMIT" stdbuf -oL -eL "$@" 2>&1 | tail -25; } >> "$OUTF" 2>&1
}

# modify NAME: changes the MST copy in the current folder as the name's last part says (section 4's
# variants, and section 6's `watch-VARIANT` copies); `watch` alone changes nothing.
modify() {
  case $1 in
    *pool16) sed -i 's/cudaLimitDevRuntimePendingLaunchCount, graph.nnodes)/cudaLimitDevRuntimePendingLaunchCount, 16 * graph.nnodes)/' main.cu ;;
    *pool1k) sed -i 's/cudaLimitDevRuntimePendingLaunchCount, graph.nnodes)/cudaLimitDevRuntimePendingLaunchCount, graph.nnodes \/ 4)/' main.cu ;;
    *nopool) sed -i 's/^\(\s*\)cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount.*$/\1;/' main.cu ;;
    *blocks256) sed -i 's/kconf.setMaxThreadsPerBlock();/kconf.setNumberOfBlockThreads(256); kconf.calculate();/' main.cu ;;
    *child256) sed -i 's/^#define BLOCK_DIM 1024/#define BLOCK_DIM 256/' common.h ;;
    *faf) sed -i 's/BLOCK_DIM>>>/BLOCK_DIM, 0, cudaStreamFireAndForget>>>/' kernel.base.cu ;;
    *barrier1) sed -i 's/dfindcompmintwo<<<nSM \* compmintwo_res, 384>>>/dfindcompmintwo<<<1, 384>>>/' main.cu ;;
    *syncwarp) sed -i 's/^\(\s*\)unsigned srcboss = cs.find(src);$/&\1 __syncwarp();/' kernel.base.cu ;;
    *nocompress) sed -i 's/^\(\s*\)unsigned srcboss = cs.find(src);$/\1unsigned srcboss = cs.find(src, false);/' kernel.base.cu ;;
  esac
}

# SECTIONS="1 2 3 4 5" (the default) picks the probes to run
want() { case " ${SECTIONS:-1 2 3 4 5} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

D=$(copy nvcc); cd "$D"
nvcc -arch=sm_90 -rdc=true -lineinfo $F main.cu kernel.base.cu -o mst -lcudadevrt > build.log 2>&1 || { say "nvcc build failed"; cat build.log >> "$OUTF"; exit 1; }
want 1 && runit "1. nvcc build, -o 2 -w 0 -r 1, ${LIMIT} s" ./mst -o 2 -w 0 -r 1

if want 2; then
say "== 2. cuda-gdb, interrupted after 15 s"
timeout -s INT 15 cuda-gdb -batch -ex run -ex 'info cuda kernels' -ex 'info cuda blocks' \
  -ex 'info cuda warps' -ex 'info cuda lanes' -ex 'bt' -ex 'kill' \
  --args ./mst -o 2 -w 0 -r 1 2>&1 | grep -v "^\[New Thread\|^\[Thread .* exited\|^\[Detaching" | tail -120 >> "$OUTF"
fi

want 3 && LIMIT=60 runit "3. compute-sanitizer memcheck, 60 s" compute-sanitizer --tool memcheck --print-limit 20 ./mst -o 2 -w 0 -r 1

if want 4; then
for v in ${VARIANTS:-pool16 pool1k nopool blocks256 child256 faf barrier1}; do
  D=$(copy $v); cd "$D"
  modify "$v"
  say "-- $v: $(cat main.cu common.h kernel.base.cu | diff - <(cd "$CORPUS/klap/test/MST" && cat main.cu common.h kernel.base.cu) | grep '^<' | tr -s ' ' | head -3 | tr '\n' ' ')"
  nvcc -arch=sm_90 -rdc=true $F main.cu kernel.base.cu -o mst -lcudadevrt > build.log 2>&1 || { say "$v: build failed"; tail -5 build.log >> "$OUTF"; continue; }
  runit "4. nvcc build of the $v copy, ${LIMIT} s" ./mst -o 2 -w 0 -r 1
done
fi

if want 6; then
for v in ${WATCH:-watch}; do
D=$(copy $v); cd "$D"
modify "$v"
cat > probe.h <<'PROBE'
// mst-probe.sh section 6: what the launching threads of the find kernel are doing
#include <thread>
#include <chrono>
#include <cstdio>
#include <unistd.h>
struct ProbeSlot { unsigned iter, state, degree; };
__device__ ProbeSlot *probe_slots;
__device__ unsigned *probe_children;
__device__ unsigned probe_iter_d;
static ProbeSlot *probe_slots_h;
static unsigned *probe_children_h;
static volatile unsigned probe_iter_h;
__device__ void probe_mark(unsigned id, unsigned state, unsigned degree) {
    volatile ProbeSlot *s = probe_slots + id;
    s->iter = probe_iter_d; s->degree = degree; s->state = state;
    __threadfence_system();
}
__device__ void probe_child() { atomicAdd_system(probe_children + (probe_iter_d & 63), 1u); }
static void probe_watch() {
    std::this_thread::sleep_for(std::chrono::seconds(12));
    volatile ProbeSlot *s = probe_slots_h;
    for (unsigned it = 1; it <= probe_iter_h; ++it) {
        unsigned in_launch = 0, ok = 0, failed = 0, maxdeg = 0, stuck_blocks[64] = {0};
        for (unsigned i = 0; i < (1u << 16); ++i) {
            if (s[i].iter != it) continue;
            if (s[i].state == 1) { ++in_launch; if (s[i].degree > maxdeg) maxdeg = s[i].degree; ++stuck_blocks[(i / 1024) & 63]; }
            else if (s[i].state == 2) ++ok; else if (s[i].state > 2) { ++failed; printf("  thread %u: launch error %u\n", i, s[i].state - 2); }
        }
        printf("find kernel of iteration %u: %u threads past their launch, %u with an error, %u still in it (largest degree %u; per block of 1024 ids: %u %u %u %u); child blocks started: %u\n",
               it, ok, failed, in_launch, maxdeg, stuck_blocks[0], stuck_blocks[1], stuck_blocks[2], stuck_blocks[3], probe_children_h[it & 63]);
    }
    fflush(stdout);
    _exit(3);
}
static void probe_setup() {
    static bool once = false;
    if (!once) {
        once = true;
        void *d;
        cudaHostAlloc((void **)&probe_slots_h, sizeof(ProbeSlot) << 16, cudaHostAllocMapped);
        memset(probe_slots_h, 0, sizeof(ProbeSlot) << 16);
        cudaHostGetDevicePointer(&d, probe_slots_h, 0);
        cudaMemcpyToSymbol(probe_slots, &d, sizeof d);
        cudaHostAlloc((void **)&probe_children_h, 64 * sizeof(unsigned), cudaHostAllocMapped);
        memset(probe_children_h, 0, 64 * sizeof(unsigned));
        cudaHostGetDevicePointer(&d, probe_children_h, 0);
        cudaMemcpyToSymbol(probe_children, &d, sizeof d);
        std::thread(probe_watch).detach();
    }
    unsigned it = probe_iter_h + 1;
    probe_iter_h = it;
    cudaMemcpyToSymbol(probe_iter_d, &it, sizeof it);
}
PROBE
sed -i 's/^#include "common.h"$/#include "common.h"\n#include "probe.h"/' kernel.base.cu
sed -i 's/^\(\s*\)\(dfindelemin2_child_cdp<<<.*;\)$/\1probe_mark(id, 1u, degree); \2 probe_mark(id, 2u + (unsigned)cudaGetLastError(), degree);/' kernel.base.cu
sed -i 's/^\(__global__ void dfindelemin2_child_cdp(.*{\)$/\1 if (threadIdx.x == 0) probe_child();/' kernel.base.cu
sed -i 's/^\(void launch_find_kernel(.*{\)$/\1 probe_setup();/' kernel.base.cu
say "-- $v: $(grep -c probe_ kernel.base.cu) lines of kernel.base.cu changed"
nvcc -arch=sm_90 -rdc=true $F main.cu kernel.base.cu -o mst -lcudadevrt > build.log 2>&1 || { say "$v: build failed"; tail -8 build.log >> "$OUTF"; }
[ -x mst ] && LIMIT=30 runit "6. nvcc build of the $v copy" ./mst -o 2 -w 0 -r 1
done
fi

want 5 || exit 0
D=$(copy cdpc); cd "$D"
nvcc -arch=sm_90 -rdc=true $F -c main.cu -o main.o > build.log 2>&1 || { say "main.cu build failed"; exit 1; }
for agg in ${AGG:-none warp block grid v1}; do
  case $agg in
    none) A=() ;;
    v1) A=(--cdpc-arg=--launch-abi=v1) ;;
    *) A=(--cdpc-arg=-faggregate-launches=$agg) ;;
  esac
  python3 "$ROOT/samples/harness/nvcc-cdpc.py" --cdpc "$CDPC" --cuda-home "$CUDA_HOME" "${A[@]}" -- \
    -arch=sm_90 -rdc=true $F -c kernel.base.cu -o k.$agg.o > build.$agg.log 2>&1 \
    && nvcc -arch=sm_90 -rdc=true main.o k.$agg.o -o mst.$agg -lcudadevrt >> build.$agg.log 2>&1 \
    || { say "cdpc $agg: build failed"; tail -5 build.$agg.log >> "$OUTF"; continue; }
  runit "5. cdpc's device code, $agg, ${LIMIT} s" ./mst.$agg -o 2 -w 0 -r 1
done
