#!/usr/bin/env bash
# Link-time optimisation of device code (`-dc -dlto`, then a `-dlto` link: driver/lto.rs) on the
# GPU: programs whose launches cross files, built by nvcc (-rdc=true), by cdpc without -dlto
# and by cdpc with it, each run ROUNDS times, interleaved; every run's output (timings masked)
# is compared with nvcc's first run's, and the kernels' times are reported.
#   two-files   bench/lto/parent.cu launches bench/lto/child.cu's kernel from every thread
#               (aggregated only when the link sees both files)
#   two-files-lib  the same with child.cu in a static library (nvcc -lib; ar of cdpc's objects)
#   two-files-arch2  the same built for sm_80 and sm_90 (the GPU runs the sm_90 image)
#   quicksort   corpus/cuda-samples/cdpAdvancedQuicksort: its quicksort launches
#               cdpBitonicSort.cu's kernels
#   bash bench/lto/check.sh build        (here: cdpc and nvcc on PATH; writes gpu-stage/lto.tar.xz)
#   bash bench/lto/check.sh run [ROUNDS] (the GPU machine, carrying gpu-stage/lto.tar.xz)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STAGE=$ROOT/gpu-stage/lto
case "${1:?usage: check.sh build | run [ROUNDS]}" in
build)
    CDPC=${CDPC:-$ROOT/target/release/cdpc}
    Q=$ROOT/../shared/corpus/cuda-samples/cdpAdvancedQuicksort
    rm -rf "$STAGE" && mkdir -p "$STAGE"/{plain,lto} && cd "$STAGE"
    nvcc -rdc=true -arch=sm_90 "$ROOT"/bench/lto/child.cu "$ROOT"/bench/lto/parent.cu -o two-files-nvcc
    mkdir -p nvcc-lib && (cd nvcc-lib && nvcc -rdc=true -arch=sm_90 -lib "$ROOT"/bench/lto/child.cu -o libchild.a &&
        nvcc -rdc=true -arch=sm_90 "$ROOT"/bench/lto/parent.cu -L. -lchild -o ../two-files-lib-nvcc) && rm -rf nvcc-lib
    TWO=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90)
    nvcc -rdc=true "${TWO[@]}" "$ROOT"/bench/lto/child.cu "$ROOT"/bench/lto/parent.cu -o two-files-arch2-nvcc
    nvcc -rdc=true -arch=sm_90 -I"$Q"/../Common "$Q"/cdpAdvancedQuicksort.cu "$Q"/cdpBitonicSort.cu -o quicksort-nvcc
    for v in plain lto; do
        flag=(); [ $v = lto ] && flag=(-dlto)
        (cd $v && "$CDPC" -dc "${flag[@]}" -arch=sm_90 "$ROOT"/bench/lto/child.cu "$ROOT"/bench/lto/parent.cu &&
            "$CDPC" "${flag[@]}" -arch=sm_90 child.o parent.o -o ../two-files-cdpc-$v &&
            ar rcs libchild.a child.o && "$CDPC" "${flag[@]}" -arch=sm_90 parent.o -L. -lchild -o ../two-files-lib-cdpc-$v &&
            "$CDPC" -dc "${flag[@]}" "${TWO[@]}" "$ROOT"/bench/lto/child.cu "$ROOT"/bench/lto/parent.cu &&
            "$CDPC" "${flag[@]}" "${TWO[@]}" child.o parent.o -o ../two-files-arch2-cdpc-$v &&
            "$CDPC" -dc "${flag[@]}" -arch=sm_90 -I"$Q"/../Common "$Q"/cdpAdvancedQuicksort.cu "$Q"/cdpBitonicSort.cu &&
            "$CDPC" "${flag[@]}" -arch=sm_90 cdpAdvancedQuicksort.o cdpBitonicSort.o -o ../quicksort-cdpc-$v)
    done
    rm -rf plain lto
    git -C "$ROOT" rev-parse --short HEAD > commit.txt
    cd "$ROOT/gpu-stage" && tar cf - lto | xz > lto.tar.xz
    ;;
run)
    ROUNDS=${2:-10}
    mkdir -p "$ROOT/gpu-stage" && cd "$ROOT/gpu-stage" && tar xJf lto.tar.xz && cd lto
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    : > runs.txt
    for r in $(seq 1 "$ROUNDS"); do
        for p in two-files two-files-lib two-files-arch2 quicksort; do
            for v in nvcc cdpc-plain cdpc-lto; do
                set +e
                out=$(timeout 60 ./$p-$v 2>&1)
                status=$?
                set -e
                masked=$(printf '%s\n' "$out" | sed -E 's/[0-9]+\.[0-9]+/N/g' | md5sum | cut -c1-12)
                [ -f "ref-$p" ] || printf '%s\n' "$out" > "ref-$p"
                ms=$(printf '%s\n' "$out" | grep -oE ' in [0-9.]+ ms' | grep -oE '[0-9.]+' || echo -)
                echo "$p $v $r $status $masked $ms" >> runs.txt
            done
        done
    done
    for p in two-files two-files-lib two-files-arch2 quicksort; do
        ref=$(awk -v p=$p '$1 == p && $2 == "nvcc" {print $5; exit}' runs.txt)
        for v in nvcc cdpc-plain cdpc-lto; do
            awk -v p=$p -v v=$v -v ref="$ref" '$1 == p && $2 == v {n++; if ($4 == 0 && $5 == ref) same++} END {printf "%s %s: %d runs, %d exit 0 with nvcc'"'"'s output", p, v, n, same}' runs.txt
            # The program's own time where it prints one (quicksort's "Sorted N elems in T ms"): the median.
            awk -v p=$p -v v=$v '$1 == p && $2 == v && $6 != "-" {print $6}' runs.txt | sort -g | awk '{t[NR] = $1} END {if (NR) printf ", median %s ms\n", (NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2); else print ""}' 
        done
        echo "--- $p, nvcc's first output:"; cat "ref-$p"
    done
    # Each cdpc build's median time over nvcc's, with a 95% bootstrap interval.
    python3 - runs.txt <<'PY'
import sys, random, statistics
rows = [l.split() for l in open(sys.argv[1])]
times = {}
for p, v, r, status, masked, ms in rows:
    if status == "0" and ms != "-":
        times.setdefault((p, v), []).append(float(ms))
random.seed(1)
for (p, v), t in sorted(times.items()):
    n = times.get((p, "nvcc"))
    if v == "nvcc" or not n:
        continue
    boot = sorted(statistics.median(random.choices(t, k=len(t))) / statistics.median(random.choices(n, k=len(n))) for _ in range(2000))
    print(f"{p} {v}: {statistics.median(t) / statistics.median(n):.4f} of nvcc's time [{boot[50]:.4f}, {boot[1949]:.4f}]")
PY
    ;;
esac
