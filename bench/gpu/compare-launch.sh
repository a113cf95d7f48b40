#!/bin/sh
# The instruction sequence of one device-side launch: nvcc's against cdpc's (both launch ABIs).
# No GPU needed. From the repository root, after `cargo xtask setup` and a release build of cdpc:
#
#     sh bench/gpu/compare-launch.sh [CDPC]      # default CDPC: $CARGO_TARGET_DIR/release/cdpc
#
# For every bench/gpu/VARIANT.cdp it builds the linked cubin and the PTX with nvcc (from the
# wheels in .cuda/, or CUDA_TOOLS=DIR) and with cdpc (--launch-abi v2 and v1), disassembles the
# kernel `parent` (cuobjdump -sass, which runs nvdisasm), names the CALL targets from the
# cubin's relocations (cuobjdump -elf: the device-runtime entry points are resolved at load, so
# the SASS shows CALL.ABS.NOINC 0x0), counts instructions, and writes docs/launch-sequence.md
# (or $1's second argument). The analysis at the end of that file is kept from the old file
# (everything from the line "## Analysis" on).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CU=${CUDA_TOOLS:-$ROOT/.cuda/nvidia/cu13}
CDPC=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/cdpc}
DOC=${2:-$ROOT/docs/launch-sequence.md}
LIB=$CU/lib
[ -f "$LIB/libcudadevrt.a" ] || LIB=$CU/lib64
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PATH="$CU/bin:$PATH"
VARIANTS="null_stream named_stream fire_and_forget"

build() { # variant compiler -> $T/compiler-variant.{ptx,cubin}, or nothing when refused
    v=$1 c=$2 src=$ROOT/bench/gpu/$1.cdp o=$T/$2-$1
    case $c in
    nvcc)
        nvcc -x cu -rdc=true -arch=sm_90 -ptx -o "$o.ptx" "$src"
        nvcc -x cu -rdc=true -arch=sm_90 -cubin -o "$o.o" "$src"
        nvlink -arch=sm_90 "$o.o" -L"$LIB" -lcudadevrt -o "$o.cubin" ;;
    cdpc-v1|cdpc-v2)
        abi=${c#cdpc-}
        "$CDPC" "$src" --launch-abi "$abi" --emit ptx -o "$o.ptx" 2>/dev/null || { rm -f "$o.ptx"; return 0; }
        "$CDPC" "$src" --launch-abi "$abi" -o "$o.cubin" ;;
    esac
}

# SASS of `parent`, one instruction a line ("/*0040*/ INSTR ;"), CALLs annotated with their
# relocation's symbol, the trailing BRA-to-self and NOP padding dropped.
sass() { # cubin
    cuobjdump -elf "$1" | awk '/^\.section \.rela\.text\.parent/ {on=1; next} /^\.section/ {on=0}
        on && $3 ~ /R_CUDA_ABS55_16_34|R_CUDA_ABS47_34|R_CUDA_FUNC|ABS/ && $2 !~ /^parent$|^child$/ {print $1, $2}' >"$T/rel"
    cuobjdump -sass -fun parent "$1" | awk -v rel="$T/rel" '
        function norm(h) { sub(/^0x/, "", h); sub(/^0+/, "", h); return h }
        BEGIN { while ((getline l < rel) > 0) { split(l, f, " "); sym[norm(f[1])] = f[2] } }
        /^[ \t]*\/\*[0-9a-f]+\*\// {
            addr = $1; gsub(/[\/*]/, "", addr)
            line = $0; sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]*/, "", line); sub(/[ \t]*\/\* 0x[0-9a-f]+ \*\/[ \t]*$/, "", line)
            sub(/[ \t]+;$/, " ;", line); gsub(/[ \t][ \t]+/, " ", line)
            a = norm(addr)
            if (line ~ /^NOP/) next
            if (line ~ /^BRA 0x[0-9a-f]+ ?;$/) { t = line; sub(/^BRA /, "", t); sub(/ ?;$/, "", t); if (norm(t) == a) next }
            if (line ~ /CALL/ && (a in sym)) line = line "   // " sym[a]
            printf "/*%s*/ %s\n", addr, line
        }'
}

# PTX body of the entry `parent` (from ".visible .entry parent" to its closing brace).
ptx() { # ptx file
    awk '/\.entry[ \t]+parent/ {on=1} on {print} on && /^}/ {exit}' "$1"
}

# Counts over a SASS listing: total; before the parameter-buffer call; between it and the
# launch call (filling the buffer: the launch's own work); after.
count_sass() { # file -> "total setup fill after"
    awk '{n++} /GetParameterBuffer/ {g=n} /LaunchDevice/ {l=n} END {
        if (g && l) print n, g - 1, l - g - 1, n - l; else print n, "-", "-", "-" }' "$1"
}
count_ptx() { # file -> PTX statements between the two calls (declarations, braces not counted)
    awk '{ sub(/\/\/.*/, "") }
        incall { call = call " " $0; if ($0 ~ /;/) { incall = 0; stmt(call) } ; next }
        /^[ \t]*call/ { call = $0; if ($0 ~ /;/) stmt(call); else incall = 1; next }
        /;[ \t]*$/ && !/^[ \t]*\.(param|reg)/ { if (g) c++ }
        function stmt(s) {
            if (s ~ /GetParameterBuffer/) { g = 1; c = 0 }
            else if (s ~ /LaunchDevice/ && g) { print c; exit }
            else if (g) c++
        }' "$1"
}

for v in $VARIANTS; do
    for c in nvcc cdpc-v2 cdpc-v1; do
        build "$v" "$c"
        if [ -f "$T/$c-$v.cubin" ]; then
            sass "$T/$c-$v.cubin" >"$T/$c-$v.sass"
            ptx "$T/$c-$v.ptx" >"$T/$c-$v.parent.ptx"
        fi
    done
done

analysis=""
[ -f "$DOC" ] && analysis=$(awk '/^## Analysis/ {on=1} on {print}' "$DOC")
{
    echo "# One device-side launch: nvcc's instructions against cdpc's"
    echo
    echo "Written by \`sh bench/gpu/compare-launch.sh\` (no GPU needed); the analysis at the end is"
    echo "written by hand and kept when the script runs again."
    echo
    echo "- sources: \`bench/gpu/{null_stream,named_stream,fire_and_forget}.cdp\`: every thread of the"
    echo "  parent grid launches \`child<<<1, 32>>>(counter)\` (NULL stream, its block's stream,"
    echo "  \`cudaStreamFireAndForget\`)"
    echo "- nvcc: \`$(nvcc --version | tail -n 1)\`, \`nvcc -x cu -rdc=true -arch=sm_90\` (-O3 is its default), \`-ptx\` and"
    echo "  \`-cubin\` + \`nvlink -lcudadevrt\`"
    echo "- cdpc: commit \`$(git -C "$ROOT" rev-parse --short HEAD)\`, \`cdpc VARIANT.cdp --launch-abi v2|v1\` (sm_90, -O3), \`--emit ptx\`"
    echo "  and the linked cubin (ptxas + nvlink of the same toolkit)"
    echo "- SASS: \`cuobjdump -sass -fun parent\` of the linked cubin; the device-runtime calls show as"
    echo "  \`CALL.ABS.NOINC 0x0\` (resolved when the module loads) and are named here from the"
    echo "  cubin's \`.rela.text.parent\` relocations; NOP padding dropped"
    echo
    echo "## Counts"
    echo
    echo "SASS instructions of \`parent\`: *setup* = before the parameter-buffer call (the first"
    echo "call's arguments, and for the named stream the stream's creation), *fill* = between the"
    echo "parameter-buffer call and the launch call (the null check, the argument stores, the"
    echo "launch's arguments), *after* = after the launch call (the calls themselves are not counted). PTX *fill* counts the PTX"
    echo "instructions between the two calls (\`.param\` declarations and braces not counted)."
    echo
    echo "| variant | compiler | SASS total | SASS setup | SASS fill | SASS after | PTX fill |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for v in $VARIANTS; do
        for c in nvcc cdpc-v2 cdpc-v1; do
            if [ -f "$T/$c-$v.sass" ]; then
                set -- $(count_sass "$T/$c-$v.sass")
                echo "| $v | $c | $1 | $2 | $3 | $4 | $(count_ptx "$T/$c-$v.parent.ptx") |"
            else
                echo "| $v | $c | refused (v1 has no fire-and-forget) | | | | |"
            fi
        done
    done
    for v in $VARIANTS; do
        echo
        echo "## $v"
        for kind in SASS PTX; do
            for c in nvcc cdpc-v2 cdpc-v1; do
                [ -f "$T/$c-$v.sass" ] || continue
                file="$T/$c-$v.sass"
                [ "$kind" = PTX ] && file="$T/$c-$v.parent.ptx"
                echo
                echo "### $v: $c, $kind"
                echo
                echo '```'
                cat "$file"
                echo '```'
            done
        done
    done
    echo
    if [ -n "$analysis" ]; then
        printf '%s\n' "$analysis"
    else
        echo "## Analysis"
        echo
        echo "(to be written)"
    fi
} >"$DOC.tmp"
mv "$DOC.tmp" "$DOC"
echo "wrote $DOC"
