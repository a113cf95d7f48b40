#!/usr/bin/env bash
# The pool of a program built from one CUDA C++ file (`cdpc app.cu -o app`, no -rdc:
# docs/DEVICE-MALLOC.md): KLAP's BT as one file (main.cu, verify.cu and kernel.base.cu
# #included in one), built by nvcc (-rdc=true, which CDP needs under nvcc) and by cdpc by
# default (the pool, decided by the compile), with -fno-device-malloc-pool (the heap), from
# its three files without -rdc (three whole-program modules: the heap) and with -rdc=true (the
# device link's pool). Interleaved runs; each run's kernel time (BT's `-o 0`) and whether it
# printed anything else (verify.cu prints each wrong vertex).
#   bash bench/malloc-pool/one-source.sh build   (here: cdpc and nvcc on PATH; writes gpu-stage/one-source.tar.xz)
#   bash bench/malloc-pool/one-source.sh run     (the GPU machine, carrying gpu-stage/one-source.tar.xz)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STAGE=$ROOT/gpu-stage/one-source
case "${1:?usage: one-source.sh build | run [ROUNDS]}" in
build)
    CDPC=${CDPC:-$ROOT/target/release/cdpc}
    B=$ROOT/../shared/corpus/klap/test/BT
    rm -rf "$STAGE" && mkdir -p "$STAGE" && cd "$STAGE"
    printf '#include "main.cu"\n#include "verify.cu"\n#include "kernel.base.cu"\n' > bt.cu
    I=(-I"$B" -I"$ROOT"/../shared/corpus/klap/include --default-stream per-thread -arch=sm_90)
    nvcc -rdc=true "${I[@]}" bt.cu -o bt-nvcc -lcudadevrt
    "$CDPC" "${I[@]}" bt.cu -o bt-cdpc
    "$CDPC" "${I[@]}" bt.cu -fno-device-malloc-pool -o bt-heap
    "$CDPC" "${I[@]}" "$B"/main.cu "$B"/verify.cu "$B"/kernel.base.cu -o bt-three
    "$CDPC" "${I[@]}" -rdc=true "$B"/main.cu "$B"/verify.cu "$B"/kernel.base.cu -o bt-rdc
    git -C "$ROOT" rev-parse --short HEAD > commit.txt
    cd "$ROOT/gpu-stage" && tar cf - one-source | xz > one-source.tar.xz
    ;;
run)
    ROUNDS=${2:-15}
    mkdir -p "$ROOT/gpu-stage" && cd "$ROOT/gpu-stage" && tar xJf one-source.tar.xz && cd one-source
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    : > runs.txt
    for r in $(seq 1 "$ROUNDS"); do
        for v in nvcc cdpc heap three rdc; do
            set +e
            out=$(timeout 60 ./bt-$v -o 0 2>&1)
            status=$?
            set -e
            # BT prints the mean kernel time alone; anything else is a wrong vertex or an error.
            extra=$(printf '%s' "$out" | grep -cv '^[0-9.e+-]*$' || true)
            echo "$v $r $status $(printf '%s' "$out" | tail -c 40 | tr '\n' ' ') extra=$extra" >> runs.txt
        done
    done
    python3 - runs.txt <<'PY'
import sys, statistics, random
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for v, r, status, *rest in rows:
    by.setdefault(v, []).append((int(status), rest))
def median(xs): return statistics.median(xs)
times = {v: [float(rest[0]) for s, rest in runs if s == 0 and rest and rest[-1] == "extra=0"] for v, runs in by.items()}
random.seed(1)
print("| build | runs | clean runs | median kernel ms | ratio to nvcc [95% bootstrap] |")
print("|---|---:|---:|---:|---|")
for v, runs in by.items():
    t = times[v]
    if not t or not times["nvcc"]:
        print(f"| {v} | {len(runs)} | 0 | - | - |"); continue
    boot = sorted(median(random.choices(t, k=len(t))) / median(random.choices(times["nvcc"], k=len(times["nvcc"]))) for _ in range(2000))
    print(f"| {v} | {len(runs)} | {len(t)} | {median(t):.4f} | {median(t)/median(times['nvcc']):.4f} [{boot[50]:.4f}, {boot[1949]:.4f}] |")
PY
    ;;
esac
