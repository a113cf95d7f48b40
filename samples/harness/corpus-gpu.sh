#!/usr/bin/env bash
# The corpus programs (../shared/corpus) with their own host code, built twice: by nvcc alone,
# and with cdpc compiling every device-code file (samples/harness/nvcc-cdpc.py puts cdpc's
# relocatable object where nvcc's ptxas output would go; the host code, its stubs and the link
# stay nvcc's). Both builds run with the program's own inputs and options; their outputs are
# compared. Writes $OUT/corpus-gpu.md (or ./corpus-gpu.md) for results/.
#
# Usage, from the repository root, on a machine with nvcc (and a GPU to run; RUN=0 builds only):
#   bash samples/harness/corpus-gpu.sh CDPC [CORPUS]
# CDPC: a cdpc binary; CORPUS: default ../shared/corpus. NVCC: default $CUDA_HOME/bin/nvcc
# (CUDA_HOME default /usr/local/cuda, else the checkout's .cuda/nvidia/cu13). ARCH: default sm_90.
# RUN_LIMIT: seconds one run may take (default 60; a run stopped by it shows as exit 124).
# ONLY: the names of the programs to build and run (default all).
# DRIVER=1: the cdpc build is cdpc's alone: every .cu file compiled by `cdpc -c` with the
# program's nvcc options, the program linked by `cdpc -o` (cdpc's device link and host link),
# with an `nvcc` that fails first on PATH, so that nothing of it is nvcc's.
# CDPC_ARGS: more arguments for every cdpc run, e.g. `-faggregate-launches=warp`. (`-x cdp`
# reads the files with the kernel language's front end instead of Clang's; since that language
# is C, docs/KERNEL-LANGUAGE.md, only KLAP's BFS among the corpus compiles that way, the others
# stop at E0923.) LABEL names the build in the report (default: "cdpc (Clang)", or
# "cdpc (-x cdp)" with that argument).
#
# Building here and running on another machine (the GPU machine has no Clang): STAGE=build
# WORK_DIR=DIR builds both programs of every row into DIR (kept; it needs nvcc, cdpc and Clang,
# no GPU), and STAGE=run WORK_DIR=DIR runs what DIR holds (it needs the GPU, nvcc's cuobjdump
# and nothing of cdpc: CDPC is then only named in the report). The default, STAGE=all, does both
# in a temporary folder.
#
# Output comparison: stdout and stderr together, lines sorted (device printf order is not
# fixed), numbers with a decimal point masked as `#` (the programs print their timings); for
# MST its final line only (`compared`).
set -u
STAGE=${STAGE:-all}
case $STAGE in all|build|run) ;; *) echo "corpus-gpu.sh: STAGE is all, build or run" >&2; exit 2 ;; esac
CDPC=${1:?usage: corpus-gpu.sh CDPC [CORPUS]}
[ "$STAGE" = run ] || CDPC=$(realpath "$CDPC")
CORPUS=$(realpath "${2:-../shared/corpus}")
ROOT=$(pwd)
if [ -z "${CUDA_HOME:-}" ]; then
    if [ -x /usr/local/cuda/bin/nvcc ]; then CUDA_HOME=/usr/local/cuda; else CUDA_HOME=$ROOT/.cuda/nvidia/cu13; fi
fi
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
ARCH=${ARCH:-sm_90}
RUN=${RUN:-1}
[ "$STAGE" = build ] && RUN=0
CDPC_ARGS=${CDPC_ARGS:-}
case " $CDPC_ARGS " in *" -x cdp "*) LABEL=${LABEL:-cdpc (-x cdp)} ;; *) LABEL=${LABEL:-cdpc (Clang)} ;; esac
WRAP="python3 $ROOT/samples/harness/nvcc-cdpc.py --cdpc $CDPC --nvcc $NVCC --cuda-home $CUDA_HOME"
for arg in $CDPC_ARGS; do WRAP="$WRAP --cdpc-arg=$arg"; done
if [ "$STAGE" = all ]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
else
    WORK=${WORK_DIR:?STAGE=build and STAGE=run need WORK_DIR}
    mkdir -p "$WORK" && WORK=$(realpath "$WORK")
fi
# The report: $OUT/corpus-gpu.md or ./corpus-gpu.md; the build stage's stays in its WORK_DIR.
if [ "$STAGE" = build ]; then REPORT=$WORK/corpus-gpu.md; else REPORT=${OUT:-.}/corpus-gpu.md; fi
# KLAP's host code calls cudaThreadSynchronize, gone from CUDA 13: both builds get
# the define nvcc itself needs.
COMPAT=-DcudaThreadSynchronize=cudaDeviceSynchronize

# What a program needs beyond its Makefile's options to be built with CUDA 13 at all, the same
# for both builds (host code; cdpc sees only the -D's, which its device code does not use).
# QT's own copy of helper_cuda.h reads cudaDeviceProp::computeMode and ::clockRate, removed in
# CUDA 13, in its device selection (one GPU here: the values do not matter), and its main.cu
# names thrust::host_vector without including it (older Thrust included it transitively).
host_compat() {
    case $1 in
        QT) echo "-DcomputeMode=major -DclockRate=major --pre-include thrust/host_vector.h" ;;
    esac
}

# cdpc's own options for a program: QT's pre-CUDA-9 warp functions, an error by default as
# nvcc's (E0903), compiled as their `_sync` forms over `__activemask()` (W0902).
cdpc_only() {
    case $1 in
        QT) echo "-flegacy-warp-intrinsics" ;;
    esac
}

# The nvcc build of a device-code file nvcc's own tools refuse: KLAP's QT calls the warp votes
# and shuffle without `_sync` (`__any`, `__ballot`, `__shfl_up`), which ptxas refuses for sm_70
# and newer. nvcc compiles a copy with each call rewritten to the `_sync` form over
# `__activemask()`, what cdpc compiles the original to (W0902); cdpc compiles the original.
nvcc_rewrite() { # NAME FILE: rewrites FILE in place for nvcc, or leaves it
    case $1 in
        QT) sed -i -E 's/__any\(/__any_sync(__activemask(), /g; s/__ballot\(/__ballot_sync(__activemask(), /g; s/__shfl_up\(/__shfl_up_sync(__activemask(), /g' "$2" ;;
    esac
}

# A program changed the same way for both builds, as its own row beside the unchanged one.
# KLAP's MST never finishes on the H100 with either compiler: in its second iteration, threads
# of the find kernel whose warp diverged in `cs.find` (a loop of data-dependent length) wait
# forever in the device runtime's `__cudaCDP2GetParameterBufferV2`, and one `__syncwarp()`
# after that call lets it finish (samples/harness/mst-probe.sh).
# MST-syncwarp is MST with that line added.
both_rewrite() { # NAME FILE: rewrites FILE in place for both builds, or leaves it
    case $1 in
        MST-syncwarp) sed -i 's/^\(\s*\)unsigned srcboss = cs.find(src);$/&\1 __syncwarp();/' "$2"
                      grep -q "cs.find(src); *__syncwarp();" "$2" ;;
    esac
}

# Programs whose host code instantiates library kernels (cdpQuadtree's thrust::generate and
# device_vector): those kernels come from host-only headers, so cdpc's object has none. The
# cdpc build merges nvcc's relocatable device code of the same file into cdpc's object for
# them (nvcc-cdpc.py --library-device-code); the program's own kernels are template
# instances, weak in both, and the link must keep cdpc's: `own_kernels` checks that in the
# executable.
library_device_code() {
    case $1 in
        cdpQuadtree) return 0 ;;
    esac
    return 1
}

# name | folder under the corpus | device-code files | other .cu files | nvcc options | run arguments
PROGRAMS=$(cat <<'EOF'
cdpSimplePrint|cuda-samples/cdpSimplePrint|cdpSimplePrint.cu||-rdc=true -I../Common|
cdpSimpleQuicksort|cuda-samples/cdpSimpleQuicksort|cdpSimpleQuicksort.cu||-rdc=true -I../Common|
cdpAdvancedQuicksort|cuda-samples/cdpAdvancedQuicksort|cdpAdvancedQuicksort.cu cdpBitonicSort.cu||-rdc=true -I../Common|
cdpBezierTessellation|cuda-samples/cdpBezierTessellation|BezierLineCDP.cu||-rdc=true -I../Common|
cdpQuadtree|cuda-samples/cdpQuadtree|cdpQuadtree.cu||-rdc=true -I../Common|
BFS|klap/test/BFS|kernel.base.cu|main.cu graph.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
BT|klap/test/BT|kernel.base.cu|main.cu verify.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
GC|klap/test/GC|kernel.base.cu|main.cu graphColoring.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
MST|klap/test/MST|kernel.base.cu|main.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
MST-syncwarp|klap/test/MST|kernel.base.cu|main.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
QT|klap/test/QT|kernel.base.cu|main.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
SP|klap/test/SP|kernel.base.cu|main.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
SSSP|klap/test/SSSP|kernel.base.cu|main.cu|-Xcompiler -fPIC -dc -m64 --default-stream per-thread -I. -I../../include -I$SHIM|-o 1
EOF
)

SHIM=$WORK/shim

normalize() { sed -E 's/[0-9]+\.[0-9]+(e[-+]?[0-9]+)?/#/g' "$1" | sort; }

# What of a program's output is compared, where the rest varies from run to run under nvcc's
# build too: MST's per-iteration component counts depend on which of two edges of one weight a
# race picks (228 or 227 after the second iteration, in nvcc's build as in cdpc's); its final
# line, the spanning forest's weight and the iteration count, does not.
compared() { # NAME OUTPUT_FILE
    case $1 in
        MST*) grep "Overall: mstwt" "$2" ;;
        *) cat "$2" ;;
    esac
}

# build NAME KIND DIR DEVICE OTHER FLAGS: KIND nvcc or cdpc, in a copy of the corpus of its own
# (the programs include ../Common or ../../include relative to their folder, and write files)
build() {
    local name=$1 kind=$2 dir=$3 device=$4 other=$5 flags=${6//\$SHIM/$SHIM}
    local compat="$COMPAT $(host_compat "$name")"
    if [ "$kind" = cdpc ] && [ "${DRIVER:-0}" = 1 ]; then
        (
            cd "$WORK/$kind/$dir" || exit 1
            export PATH="$WORK/poison:$PATH"
            objs=""
            for f in $device $other; do
                o=${f%.cu}.o
                cp "$CORPUS/$dir/$f" "$f" && chmod u+w "$f" && both_rewrite "$name" "$f" || exit 1
                "$CDPC" -arch=$ARCH $flags $compat $CDPC_ARGS $(cdpc_only "$name") -c "$f" -o "$o" || exit 1
                objs="$objs $o"
            done
            "$CDPC" -arch=$ARCH -rdc=true -o "prog.$name" $objs -lcudadevrt || exit 1
        ) > "$WORK/$kind/$name.log" 2>&1
        return
    fi
    (
        cd "$WORK/$kind/$dir" || exit 1
        objs=""
        for f in $device; do
            o=${f%.cu}.o
            cp "$CORPUS/$dir/$f" "$f" && chmod u+w "$f" && both_rewrite "$name" "$f" || exit 1
            if [ "$kind" = cdpc ]; then
                local library=""
                library_device_code "$name" && library=--library-device-code
                local own=""
                for arg in $(cdpc_only "$name"); do own="$own --cdpc-arg=$arg"; done
                $WRAP $library $own -- -arch=$ARCH $flags $compat -c "$f" -o "$o" || exit 1
            else
                nvcc_rewrite "$name" "$f"
                "$NVCC" -arch=$ARCH $flags $compat -c "$f" -o "$o" || exit 1
            fi
            objs="$o $objs"
        done
        for f in $other; do
            o=${f%.cu}.o
            "$NVCC" -arch=$ARCH $flags $compat -c "$f" -o "$o" || exit 1
            objs="$objs $o"
        done
        "$NVCC" -arch=$ARCH -rdc=true -o "prog.$name" $objs -lcudadevrt || exit 1
    ) > "$WORK/$kind/$name.log" 2>&1
}

# own_kernels NAME DIR DEVICE: "yes (N)" when each of the N kernels of cdpc's objects that the
# cdpc build's executable holds is there with cdpc's code (a .text section of the same size),
# else "NO" and the first that is not. (The device link drops `static` kernels nothing
# launches, as for nvcc's build.)
kernel_sizes() { # FILE: "name size" per kernel (an ENTRY symbol) of the device ELFs in FILE
    local cuobjdump; cuobjdump=$(dirname "$NVCC")/cuobjdump
    "$cuobjdump" -elf "$1" 2>/dev/null | awk '/PROGBITS/ && $NF ~ /^\.text\./ { sub(/^\.text\./, "", $NF); print $NF, $3 }' \
        | grep -Fwf <("$cuobjdump" -symbols "$1" 2>/dev/null | awk '/ENTRY/ { print $NF }') | sort -u
}
own_kernels() {
    local name=$1 dir=$2 device=$3 f n=0
    local linked; linked=$(kernel_sizes "$WORK/cdpc/$dir/prog.$name")
    for f in $device; do
        local object="$WORK/cdpc/$dir/${f%.cu}.o"
        [ -f "$object.cdpc.cubin" ] && object=$object.cdpc.cubin # with library device code: cdpc's alone
        while read -r kernel size; do
            grep -q "^$kernel " <<< "$linked" || continue
            if ! grep -qx "$kernel $size" <<< "$linked"; then echo "NO ($kernel)"; return; fi
            n=$((n + 1))
        done < <(kernel_sizes "$object")
    done
    echo "yes ($n)"
}

run() { # NAME KIND DIR ARGS: exit status; output in $WORK/KIND/NAME.out
    local name=$1 kind=$2 dir=$3 args=$4
    (cd "$WORK/$kind/$dir" && timeout "${RUN_LIMIT:-60}" "./prog.$name" $args) > "$WORK/$kind/$name.out" 2>&1
}

if [ "$STAGE" != run ]; then
    for kind in nvcc cdpc; do
        mkdir -p "$WORK/$kind" && cp -r "$CORPUS/." "$WORK/$kind/" || exit 1
    done
    # KLAP's MST, SP and SSSP include "cub/cub/cub.cuh", its own copy of CUB, which the corpus does
    # not carry: a one-line header of ours sends them to the CUB of the CUDA toolkit (CCCL).
    mkdir -p "$WORK/shim/cub/cub" && echo '#include <cub/cub.cuh>' > "$WORK/shim/cub/cub/cub.cuh"
    mkdir -p "$WORK/poison" && printf '#!/bin/sh\necho "nvcc was run: $*" >&2\nexit 99\n' > "$WORK/poison/nvcc" && chmod +x "$WORK/poison/nvcc"
    # What the run stage reports of the build (cdpc's version; the nvcc that built).
    echo "cdpc: $("$CDPC" --version 2>&1 | head -1) $CDPC_ARGS; nvcc: $("$NVCC" --version | tail -1); arch $ARCH$([ "${DRIVER:-0}" = 1 ] && echo "; DRIVER=1")" > "$WORK/built-with"
elif [ ! -f "$WORK/built-with" ]; then
    echo "corpus-gpu.sh: $WORK holds no build (run STAGE=build first)" >&2; exit 2
fi

{
    echo "# The corpus programs with their own host code: nvcc alone, and with cdpc's device code"
    echo
    echo "Run by \`bash samples/harness/corpus-gpu.sh\` on $(date -u +%Y-%m-%d)."
    echo
    if [ "$RUN" = 1 ]; then
        echo "- device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
    fi
    echo "- built with $(cat "$WORK/built-with")"
    if [ "${DRIVER:-0}" = 1 ] || grep -q 'DRIVER=1' "$WORK/built-with"; then
        echo "- \"cdpc build\" ($LABEL, DRIVER=1): every file compiled and the program linked by cdpc alone (\`cdpc -c\`, \`cdpc -o\`), an \`nvcc\` that fails first on PATH"
    else
        echo "- \"cdpc build\" ($LABEL): every device-code file compiled by cdpc (\`samples/harness/nvcc-cdpc.py\`), host code and link by nvcc"
    fi
    echo "- outputs compared with timings masked and lines sorted (see the script)"
    echo
    echo "| program | nvcc build | cdpc build | cdpc's kernels in it | nvcc run | cdpc run | outputs equal |"
    echo "|---|---|---|---|---|---|---|"
} > "$REPORT"

DETAILS=$WORK/details.md
: > "$DETAILS"
echo "$PROGRAMS" | while IFS='|' read -r name dir device other flags args; do
    [ -n "$name" ] || continue
    if [ -n "${ONLY:-}" ] && ! grep -qw -- "$name" <<< "$ONLY"; then continue; fi
    if [ "$STAGE" != run ]; then
        build "$name" nvcc "$dir" "$device" "$other" "$flags" & p1=$!
        build "$name" cdpc "$dir" "$device" "$other" "$flags" & p2=$!
        wait $p1; nb=$?; wait $p2; cb=$?
        echo "$nb $cb" > "$WORK/$name.built"
    else
        read -r nb cb < "$WORK/$name.built" 2>/dev/null || { nb=1; cb=1; }
    fi
    nbs=$([ $nb = 0 ] && echo ok || echo FAIL); cbs=$([ $cb = 0 ] && echo ok || echo FAIL)
    nr=-; cr=-; eq=-; own=-
    [ $cb = 0 ] && [ "$STAGE" != run ] && own=$(own_kernels "$name" "$dir" "$device") && echo "$own" > "$WORK/$name.own"
    [ "$STAGE" = run ] && own=$(cat "$WORK/$name.own" 2>/dev/null || echo -)
    if [ "$RUN" = 1 ]; then
        if [ $nb = 0 ]; then run "$name" nvcc "$dir" "$args"; s=$?; nr=$([ $s = 0 ] && echo ok || echo "exit $s"); fi
        if [ $cb = 0 ]; then run "$name" cdpc "$dir" "$args"; s=$?; cr=$([ $s = 0 ] && echo ok || echo "exit $s"); fi
        if [ $nb = 0 ] && [ $cb = 0 ]; then
            if cmp -s <(normalize <(compared "$name" "$WORK/nvcc/$name.out")) <(normalize <(compared "$name" "$WORK/cdpc/$name.out")); then eq=yes; else eq=NO; fi
        fi
    fi
    echo "| $name | $nbs | $cbs | $own | $nr | $cr | $eq |" >> "$REPORT"
    {
        echo "### $name"
        echo
        for kind in nvcc cdpc; do
            echo "- $kind build log (last lines): \`$(grep -v '^ *$' "$WORK/$kind/$name.log" 2>/dev/null | grep -E 'error|warning: ' | head -3 | tr '\n|`' '   ' | cut -c1-400)\`"
            [ -f "$WORK/$kind/$name.out" ] && echo "- $kind output (first lines): \`$(head -6 "$WORK/$kind/$name.out" | tr '\n|`' '   ' | cut -c1-500)\`"
        done
        echo
    } >> "$DETAILS"
done
{ echo; echo "## Details"; echo; cat "$DETAILS"; } >> "$REPORT"
cat "$REPORT"
