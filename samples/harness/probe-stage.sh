#!/bin/sh
# Builds, on the development machine, what samples/harness/probe-run.sh runs on the GPU machine:
# one sample's cubins from nvcc and from several cdpc binaries (a branch's and main's, say) at
# one set of flags, each through the kernel language's front end and as CUDA C++ through Clang
# (`-x cu`), with the sample's manifest and the runner, into gpu-stage/probe-SAMPLE/ (git-ignored).
#
#     sh samples/harness/probe-stage.sh SAMPLE "FLAGS" NAME=CDPC [NAME=CDPC ...]
#
# e.g. whether samples/tessellate.cdp catches the `s35-b` branch, at KLAP's rule:
#
#     sh samples/harness/probe-stage.sh tessellate "-flaunch-threshold=128 -faggregate-launches=warp" \
#         s35b=/work/bin/cdpc-s35b main=/work/main/target/release/cdpc
#
# writes gpu-stage/probe-tessellate/{nvcc,s35b,s35b-cu,main,main-cu}/tessellate.cubin,
# manifests/tessellate.toml, bin/cdpc-run (when target/release/cdpc-run is built: `cargo build
# --release -p runtime-shim --features loader --bin cdpc-run`) and BUILD-INFO. Each cdpc build is
# linked by cdpc itself (ptxas, nvlink, libcudadevrt), nvcc's as samples/check.sh links it.
# LAUNCH_ABI=v1 builds the cdpc cubins with the documented launch ABI (default v2).
set -eu
SAMPLE=${1:?usage: probe-stage.sh SAMPLE "FLAGS" NAME=CDPC [NAME=CDPC ...]}
FLAGS=${2?usage: probe-stage.sh SAMPLE "FLAGS" NAME=CDPC [NAME=CDPC ...]}
shift 2
[ $# -gt 0 ] || { echo "probe-stage.sh: name at least one NAME=CDPC" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$here/samples/$SAMPLE.cdp
[ -f "$SRC" ] || SRC=$here/samples/$SAMPLE.cu
[ -f "$SRC" ] || { echo "probe-stage.sh: no samples/$SAMPLE.cdp or .cu" >&2; exit 2; }
# TAG=NAME stages into gpu-stage/probe-SAMPLE-NAME instead (several flag sets side by side)
STAGE=$here/gpu-stage/probe-$SAMPLE${TAG:+-$TAG}
rm -rf "$STAGE"
mkdir -p "$STAGE/manifests" "$STAGE/nvcc"
cp "$here/samples/$SAMPLE.toml" "$STAGE/manifests/"
# nvcc's cubin, exactly as samples/check.sh builds it (its temporary folder removed after)
work=$(mktemp -d "${TMPDIR:-/tmp}/cdpc-probe-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
cp "$SRC" "$work/src/"
SRC_DIR=$work/src OUT_DIR=$work/nvcc sh "$here/samples/check.sh" ${CUDA_DIR:-} >"$work/nvcc.log" || { cat "$work/nvcc.log"; exit 1; }
cp "$work/nvcc/$SAMPLE.cubin" "$STAGE/nvcc/"
info="sample $SAMPLE; flags: $FLAGS; launch ABI ${LAUNCH_ABI:-v2}"
for pair in "$@"; do
    name=${pair%%=*}
    cdpc=${pair#*=}
    [ -x "$cdpc" ] || { echo "probe-stage.sh: $cdpc is not an executable" >&2; exit 2; }
    for front in cdp cu; do
        label=$name
        xflag=""
        if [ $front = cu ]; then label=$name-cu; xflag="-x cu"; fi
        mkdir -p "$STAGE/$label"
        # $FLAGS and $xflag unquoted: one argument per flag
        (cd "$here" && "$cdpc" "$SRC" $xflag $FLAGS --launch-abi "${LAUNCH_ABI:-v2}" -o "$STAGE/$label/$SAMPLE.cubin")
        echo "ok   $label: $cdpc $xflag $FLAGS"
    done
    info="$info
$name: $cdpc ($("$cdpc" --version 2>/dev/null | head -n 1), sha256 $(sha256sum "$cdpc" | cut -c1-16))"
done
if [ -x "$here/target/release/cdpc-run" ]; then
    mkdir -p "$STAGE/bin"
    cp "$here/target/release/cdpc-run" "$STAGE/bin/"
fi
echo "$info" > "$STAGE/BUILD-INFO"
echo "staged in $STAGE; on the GPU machine: sh samples/harness/probe-run.sh gpu-stage/$(basename "$STAGE")"
