#!/usr/bin/env bash
# Programs from outside the corpus, built by nvcc and by cdpc the way each repository builds
# them and run on the GPU machine: each build's output (numbers with a decimal point masked)
# and exit status against nvcc's.
#   cwpearson/cmake-dynamic-parallelism 3fa340cb7d  a launcher kernel launching vector_add, two -dc files
#   cms-patatrack/test-dynamic-parallelism 3b0afad3b6  two shared libraries with device code, one dlopen()ed (its Makefile, NVCC=)
#   qtvo93/CUDA-Dynamic-Parallelism 44ee9bc589  counting sort (host launches), with its C++ reference
#   temporal-hpc/GPU-dynamic-parallelism a905ba72e2  Mandelbrot by dynamic parallelism (fire-and-forget
#       launches, recursion) and by its other approaches; built on the development machine (libpng
#       and libgomp linked statically, the GPU machine has neither) as its Makefile builds it, with
#       X = nvcc 13.5 and cdpc, and carried as gpu-stage/outside/gpuDP-nvcc and gpuDP-cdpc:
#         F="-O3 -arch=sm_90 -rdc=true -DRDC_TRUE -Xcompiler -fopenmp -DARCH=sm_90 -Dno -DBSX=32 -DBSY=32
#            -DREALIZATIONS=1 -DREPEATS=1 -DDP_PENDING_KERNEL_BUFFER=524288"   (its power meter, NVML, left out)
#         X $F -c src/main.cu -o main.o
#         X $F main.o -lcudadevrt .../libpng16.a .../libz.a .../gcc/x86_64-linux-gnu/12/libgomp.a -lpthread -ldl -o gpuDP-X
#       each approach's image compared byte for byte with nvcc's build's
#
# On the GPU machine, from the repository root, carrying gpu-stage/outside/ with:
#   src.tar.xz                the three repositories at those commits (git archive of each, folders owner+name)
#   cdpc.xz                   xz -3 -c target/release/cdpc
#   clang-resource.tar.xz     (cd "$(clang++-22 -print-resource-dir)/.." && tar -cJf ... 22/include)
#   bash bench/acceptance/outside-programs.sh [ROUNDS]
set -u
ROUNDS=${1:-5}
R=$PWD
W=/tmp/outside-programs
rm -rf $W && mkdir -p $W/bin && cd $W
tar -xJf $R/gpu-stage/outside/src.tar.xz
tar -xJf $R/gpu-stage/outside/clang-resource.tar.xz
xz -dc $R/gpu-stage/outside/cdpc.xz > bin/cdpc && chmod +x bin/cdpc
export CDPC_CLANG_RESOURCE_DIR=$W/22 CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$NVCC --version | tail -2
bin/cdpc --version | head -1

build() { # compiler folder
  local X=$1 out=$W/$2
  mkdir -p $out
  # cwpearson: its Makefile's commands with -arch=sm_90 (its sm_35 is gone from CUDA 13).
  cp -r $W/cwpearson+cmake-dynamic-parallelism $out/dp && (cd $out/dp &&
    $X -arch=sm_90 -dc -std=c++11 -Xcompiler=-Wall -g main.cu -o main.o &&
    $X -arch=sm_90 -dc -std=c++11 -Xcompiler=-Wall -g dp.cu -o dp.o &&
    $X -arch=sm_90 main.o dp.o -o dp) > $out/dp.build 2>&1 || echo "dp: build failed ($X)"
  # cms-patatrack: its Makefile, NVCC= and the flags with sm_90 for its sm_50.
  cp -r $W/cms-patatrack+test-dynamic-parallelism $out/cms && (cd $out/cms &&
    make test NVCC=$X CUDA_BASE=$CUDA \
      NVCC_FLAGS="--generate-line-info --source-in-ptx --expt-relaxed-constexpr --expt-extended-lambda -std=c++14 -O2 --cudart=shared -gencode arch=compute_90,code=sm_90 --compiler-options '-O2 -pthread -fPIC'") \
    > $out/cms.build 2>&1 || echo "cms: build failed ($X)"
  # qtvo93: the counting sort with its reference.
  cp -r $W/qtvo93+CUDA-Dynamic-Parallelism $out/cs && (cd $out/cs &&
    $X -O3 -arch=sm_90 counting_sort.cu counting_sort_gold.cpp -o cs) > $out/cs.build 2>&1 || echo "cs: build failed ($X)"
}
build $NVCC nvcc
build $W/bin/cdpc cdpc

: > $W/runs.txt
for r in $(seq 1 $ROUNDS); do
  for b in nvcc cdpc; do
    for p in dp cms cs; do
      case $p in
        dp) cmd="./dp" ;;
        cms) cmd="env LD_LIBRARY_PATH=. ./test" ;;
        cs) cmd="./cs 1000000" ;;
      esac
      out=$(cd $W/$b/$p && timeout 60 $cmd 2>&1); rc=$?
      h=$(printf '%s\n' "$out" | sed -E 's/[0-9]+\.[0-9]+/N/g' | md5sum | cut -c1-8)
      [ -f $W/ref-$p-$b-$h ] || printf '%s\n' "$out" > $W/ref-$p-$b-$h
      echo "$p $b $r $rc $h" >> $W/runs.txt
    done
  done
done
# The Mandelbrot program: each approach's PNG and output (times masked) against nvcc's build's.
if [ -x $R/gpu-stage/outside/gpuDP-nvcc ]; then
  mkdir -p $W/mandel && cd $W/mandel
  for r in $(seq 1 $ROUNDS); do
    for b in nvcc cdpc; do
      for a in 0 1 2 3 4; do
        out=$(timeout 120 $R/gpu-stage/outside/gpuDP-$b 0 $a 4096 4096 -1.5 0.5 -1.0 1.0 512 2 4 32 5 img-$b-$a 2>&1); rc=$?
        h=$(printf '%s\n' "$out" | sed -E 's/[0-9]+\.[0-9]+/N/g' | md5sum | cut -c1-8)
        img=$(md5sum < img-$b-$a.png 2>/dev/null | cut -c1-8)
        echo "mandel-$a $b $r $rc $h $img" >> $W/runs.txt
      done
    done
  done
  cd $W
  for a in 0 1 2 3 4; do
    ref=$(awk -v p=mandel-$a '$1 == p && $2 == "nvcc" {print $5 " " $6; exit}' $W/runs.txt)
    for b in nvcc cdpc; do
      awk -v p=mandel-$a -v b=$b -v ref="$ref" '$1 == p && $2 == b {n++; if ($4 == 0 && $5 " " $6 == ref) same++} END {printf "%s %s: %d runs, %d exit 0 with nvcc'"'"'s output and image\n", p, b, n, same}' $W/runs.txt
    done
  done
  printf '%s\n' "$out" | tail -4
fi
for p in dp cms cs; do
  ref=$(awk -v p=$p '$1 == p && $2 == "nvcc" {print $5; exit}' $W/runs.txt)
  for b in nvcc cdpc; do
    awk -v p=$p -v b=$b -v ref=$ref '$1 == p && $2 == b {n++; if ($4 == 0 && $5 == ref) same++} END {printf "%s %s: %d runs, %d exit 0 with nvcc'"'"'s output\n", p, b, n, same}' $W/runs.txt
  done
  echo "--- $p, nvcc's output:"; cat $W/ref-$p-nvcc-$ref
done
for f in $W/ref-*; do case $f in *-nvcc-*) ;; *) grep -q . $f && { n=$(basename $f); ref=$(awk -v p=$(echo $n | cut -d- -f2) '$1 == p && $2 == "nvcc" {print $5; exit}' $W/runs.txt); [ "${n##*-}" = "$ref" ] || { echo "--- $n differs:"; cat $f; }; } ;; esac; done
if [ -n "${OUT:-}" ]; then
  cp $W/runs.txt $W/ref-* "$OUT"/
  for b in nvcc cdpc; do for f in $W/$b/*.build; do cp $f "$OUT"/$b-$(basename $f); done; done
fi
true
