#!/usr/bin/env bash
# `cdpc -dc` objects on the GPU: host programs linked with them must print what
# nvcc's own build of the same sources prints. Runs the bundle dc-gpu-bundle.sh made (cdpc's
# objects of samples/harness/dc/ and docs/build-example/, and programs linked by the checkout's
# nvcc):
#   1. the prebuilt programs: nvcc's host link of the objects (`-rdc=true main.cu a.o b.o`), of
#      an archive of them (`-lab`), and nvcc -dlink + g++ of a g++ program calling the files'
#      host code, each against nvcc's build of the sources (`*-ref`, `*-gxx-ref`);
#   2. the same links made here by this machine's nvcc from the carried objects, against this
#      nvcc's own builds;
#   3. the corpus's CUDA samples, -dc'd by cdpc and linked by nvcc, against nvcc's build.
# Writes $OUT/dc-gpu.md (or ./dc-gpu.md).
#
# Usage, on the GPU machine:  bash BUNDLE/dc-gpu.sh BUNDLE
# CUDA_HOME: default /usr/local/cuda (nvcc, lib64).
set -u
BUNDLE=$(realpath "${1:?usage: dc-gpu.sh BUNDLE}")
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA_HOME/bin/nvcc
LIB=$CUDA_HOME/lib64
[ -d "$LIB" ] || LIB=$CUDA_HOME/lib
export PATH=$CUDA_HOME/bin:$PATH
REPORT=$(realpath "${OUT:-.}")/dc-gpu.md
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILED=0

{
    echo "# cdpc -dc objects on the GPU"
    echo
    echo "$(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)."
    echo "Objects by $(head -1 "$BUNDLE/cdpc-version.txt"); prebuilt programs linked by $(cat "$BUNDLE/nvcc-version.txt");"
    echo "relinked here by $($NVCC --version | tail -1)."
    echo
} > "$REPORT"

# run NAME PROGRAM: runs it (60 s at most), keeps its output as $WORK/NAME.out, records both.
run() {
    timeout 60 "$2" > "$WORK/$1.out" 2>&1
    local rc=$?
    echo $rc > "$WORK/$1.rc"
    { echo "### $1 (exit $rc)"; echo; echo '```'; cat "$WORK/$1.out"; echo '```'; echo; } >> "$REPORT"
    return $rc
}

# same NAME REFERENCE: whether NAME printed what REFERENCE printed, REFERENCE having succeeded.
same() {
    if [ "$(cat "$WORK/$2.rc")" != 0 ]; then
        echo "- $1 = $2: **the reference failed**" >> "$REPORT"
        FAILED=1
    elif cmp -s "$WORK/$1.out" "$WORK/$2.out"; then
        echo "- $1 = $2: **identical**" >> "$REPORT"
    else
        echo "- $1 = $2: **DIFFERENT**" >> "$REPORT"
        FAILED=1
    fi
}

echo "## 1. Programs linked before (with the bundle's nvcc)" >> "$REPORT"
echo >> "$REPORT"
for p in dc example; do
    for v in ref gxx-ref nvcc ar gxx; do
        run "pre-$p-$v" "$BUNDLE/prebuilt/$p-$v"
    done
done
echo "### Verdicts" >> "$REPORT"
for p in dc example; do
    same "pre-$p-nvcc" "pre-$p-ref"
    same "pre-$p-ar" "pre-$p-ref"
    same "pre-$p-gxx" "pre-$p-gxx-ref"
done
echo >> "$REPORT"

echo "## 2. Linked here (this machine's nvcc, the carried objects)" >> "$REPORT"
echo >> "$REPORT"
# link DIR PREFIX A B: the three links and the two references, in a copy of the bundle's folder.
link() {
    local dir=$WORK/$1 prefix=$2 a=$3 b=$4
    cp -r "$BUNDLE/$1" "$dir"
    (
        cd "$dir" || exit 1
        "$NVCC" -arch=sm_90 -rdc=true main.cu "$a.o" "$b.o" -o "$prefix-nvcc" &&
            "$NVCC" -arch=sm_90 -rdc=true main.cu -L. "-l$prefix" -o "$prefix-ar" &&
            g++ -c "-I$CUDA_HOME/include" main-host.cpp -o main-host.o &&
            "$NVCC" -dlink -arch=sm_90 "$a.o" "$b.o" -o dlink.o &&
            g++ main-host.o "$a.o" "$b.o" dlink.o "$LIB/libcudadevrt.a" "$LIB/libcudart_static.a" -ldl -lpthread -lrt -o "$prefix-gxx" &&
            "$NVCC" -arch=sm_90 -rdc=true main.cu "$a.cu" "$b.cu" -o "$prefix-ref" &&
            "$NVCC" -arch=sm_90 -rdc=true main-host.cpp "$a.cu" "$b.cu" -o "$prefix-gxx-ref"
    ) > "$WORK/link-$1.log" 2>&1
    local rc=$?
    { echo "### link $1 (exit $rc)"; echo; echo '```'; tail -n 25 "$WORK/link-$1.log"; echo '```'; echo; } >> "$REPORT"
    return $rc
}
for p in dc example; do
    case $p in dc) a=a b=b ;; example) a=launch b=scale ;; esac
    if link "$p" "$p" "$a" "$b"; then
        for v in ref gxx-ref nvcc ar gxx; do
            run "here-$p-$v" "$WORK/$p/$p-$v"
        done
        same "here-$p-nvcc" "here-$p-ref"
        same "here-$p-ar" "here-$p-ref"
        same "here-$p-gxx" "here-$p-gxx-ref"
    else
        echo "- $p: the link failed (above)" >> "$REPORT"
        FAILED=1
    fi
done
echo >> "$REPORT"

echo "## 3. The corpus's CUDA samples: cdpc's -dc objects linked by nvcc, against nvcc's build" >> "$REPORT"
echo >> "$REPORT"
for ours in "$BUNDLE"/prebuilt/corpus-*-cdpc; do
    [ -e "$ours" ] || continue
    name=$(basename "$ours" -cdpc)
    # The samples look for their data beside the program.
    (cd "$BUNDLE/prebuilt" && run "$name-ref" "./$name-ref")
    (cd "$BUNDLE/prebuilt" && run "$name-cdpc" "./$name-cdpc")
    same "$name-cdpc" "$name-ref"
done
echo >> "$REPORT"
echo "Timings a sample prints differ from run to run: a DIFFERENT verdict of section 3 needs a look at the outputs above." >> "$REPORT"
echo "report: $REPORT"
exit $FAILED
