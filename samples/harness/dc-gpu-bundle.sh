#!/usr/bin/env bash
# Builds what samples/harness/dc-gpu.sh runs on the GPU machine, which has no Rust, LLVM or
# Clang: the objects `cdpc -dc` writes of samples/harness/dc/a.cu, b.cu, of
# docs/build-example/launch.cu, scale.cu and of the corpus's CUDA samples, the sources, and
# the host programs linked here by this checkout's nvcc, both with cdpc's objects and by nvcc
# alone (the references).
#
# Usage, from the repository root, after `cargo build -p cdpc` (and `cargo xtask setup`):
#   bash samples/harness/dc-gpu-bundle.sh target/debug/cdpc BUNDLE
# CUDA_HOME: the toolkit or wheel folder of nvcc, libcudadevrt.a and libcudart_static.a
# (default: the checkout's .cuda/nvidia/cu13).
set -eu
CDPC=$(realpath "${1:?usage: dc-gpu-bundle.sh CDPC BUNDLE}")
BUNDLE=${2:?usage: dc-gpu-bundle.sh CDPC BUNDLE}
ROOT=$(pwd)
CUDA_HOME=${CUDA_HOME:-$ROOT/.cuda/nvidia/cu13}
NVCC=$CUDA_HOME/bin/nvcc
LIB=$CUDA_HOME/lib
[ -d "$CUDA_HOME/lib64" ] && LIB=$CUDA_HOME/lib64
export PATH=$CUDA_HOME/bin:$PATH
HOSTLIBS="$LIB/libcudadevrt.a $LIB/libcudart_static.a -ldl -lpthread -lrt"
mkdir -p "$BUNDLE/dc" "$BUNDLE/example" "$BUNDLE/prebuilt"
BUNDLE=$(realpath "$BUNDLE")

cp samples/harness/dc/a.cu samples/harness/dc/b.cu samples/harness/dc/main.cu samples/harness/dc/main-host.cpp "$BUNDLE/dc/"
cp docs/build-example/launch.cu docs/build-example/scale.cu docs/build-example/main.cu docs/build-example/main-host.cpp "$BUNDLE/example/"
"$CDPC" --version > "$BUNDLE/cdpc-version.txt"
"$NVCC" --version | tail -1 > "$BUNDLE/nvcc-version.txt"

# build DIR PREFIX OBJ1 OBJ2 MAIN_CU MAIN_CPP: cdpc's objects, the programs linked with them
# (nvcc's host link, an archive, nvcc -dlink + g++), and nvcc's own builds of the sources.
build() {
    local dir=$1 prefix=$2 a=$3 b=$4
    cd "$BUNDLE/$dir"
    for f in "$a" "$b"; do
        "$CDPC" -dc -arch=sm_90 "$f.cu" -o "$f.o"
    done
    ar rcs "lib$prefix.a" "$a.o" "$b.o"
    local out=$BUNDLE/prebuilt
    "$NVCC" -arch=sm_90 -rdc=true main.cu "$a.o" "$b.o" -o "$out/$prefix-nvcc"
    "$NVCC" -arch=sm_90 -rdc=true main.cu -L. "-l$prefix" -o "$out/$prefix-ar"
    g++ -c "-I$CUDA_HOME/include" main-host.cpp -o main-host.o
    "$NVCC" -dlink -arch=sm_90 "$a.o" "$b.o" -o dlink.o
    # shellcheck disable=SC2086
    g++ main-host.o "$a.o" "$b.o" dlink.o $HOSTLIBS -o "$out/$prefix-gxx"
    rm -f main-host.o dlink.o
    "$NVCC" -arch=sm_90 -rdc=true main.cu "$a.cu" "$b.cu" -o "$out/$prefix-ref"
    "$NVCC" -arch=sm_90 -rdc=true main-host.cpp "$a.cu" "$b.cu" -o "$out/$prefix-gxx-ref"
    cd "$ROOT"
}
build dc dc a b
build example example launch scale

# The CUDA samples of the corpus (../shared/corpus beside the checkout, or CORPUS; read, never
# copied into the repository): each program's files -dc'd by cdpc and linked by nvcc, and
# nvcc's build of the same files. Skipped, saying so, when the corpus is absent.
CORPUS=${CORPUS:-$ROOT/../shared/corpus}
SAMPLES=$CORPUS/cuda-samples
if [ -d "$SAMPLES" ]; then
    mkdir -p "$BUNDLE/corpus"
    for dir in "$SAMPLES"/cdp*; do
        name=$(basename "$dir")
        work=$BUNDLE/corpus/$name
        mkdir -p "$work"
        objects=()
        for source in "$dir"/*.cu; do
            object=$work/$(basename "$source" .cu).o
            "$CDPC" -dc -arch=sm_90 "-I$dir" "-I$SAMPLES/Common" "$source" -o "$object"
            objects+=("$object")
        done
        "$NVCC" -arch=sm_90 -rdc=true "${objects[@]}" -o "$BUNDLE/prebuilt/corpus-$name-cdpc"
        "$NVCC" -arch=sm_90 -rdc=true "-I$dir" "-I$SAMPLES/Common" "$dir"/*.cu -o "$BUNDLE/prebuilt/corpus-$name-ref"
    done
else
    echo "skipped: the corpus's CUDA samples (no $SAMPLES)"
fi
cp samples/harness/dc-gpu.sh "$BUNDLE/"
echo "bundle: $BUNDLE"
