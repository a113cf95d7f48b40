#!/bin/sh
# Runs, on the GPU machine, what samples/harness/probe-stage.sh staged: one sample's cubins from
# nvcc and from each staged cdpc build, each checked against the sample's manifest in its own
# process and its output compared byte for byte with nvcc's (`cdpc-run diff`), RUNS times
# (default 3); prints one line per build and run, "output = nvcc's: yes" or "NO", and the
# manifest check. Builds nothing: no Rust, LLVM or nvcc needed.
#
#     sh samples/harness/probe-run.sh gpu-stage/probe-tessellate [RUNS]
#
# The runner is build/gpu/bin/cdpc-run (`cargo xtask gpu-bundle`), else the stage's bin/cdpc-run.
# Exit status 0 when every build's output equalled nvcc's in every run, 1 when some did not (the
# point of a probe of a bad branch), 2 when it could not run.
set -u
STAGE=${1:?usage: probe-run.sh STAGE_DIR [RUNS]}
RUNS=${2:-3}
RUN=build/gpu/bin/cdpc-run
[ -x "$RUN" ] || RUN=$STAGE/bin/cdpc-run
[ -x "$RUN" ] || { echo "no cdpc-run (build/gpu/bin or $STAGE/bin)"; exit 2; }
[ -f "$STAGE/nvcc/$(ls "$STAGE/nvcc" | head -n 1)" ] || { echo "no nvcc cubin in $STAGE/nvcc"; exit 2; }
cat "$STAGE/BUILD-INFO" 2>/dev/null
CUBINS="nvcc=$STAGE/nvcc"
for d in "$STAGE"/*/; do
    label=$(basename "$d")
    case $label in nvcc|manifests|bin) continue ;; esac
    CUBINS="$CUBINS $label=$STAGE/$label"
done
W=$(mktemp -d "${TMPDIR:-/tmp}/cdpc-probe-run-XXXXXX")
trap 'rm -rf "$W"' EXIT
status=0
r=1
while [ "$r" -le "$RUNS" ]; do
    # $CUBINS unquoted: one argument per label. Few timed rounds: the output is the point.
    timeout 300 "$RUN" diff --manifests "$STAGE/manifests" --cubins $CUBINS \
        --repeat 3 --warmup 1 --seed "$r" --results "$W/run$r.md" > "$W/run$r.log" 2>&1
    rc=$?
    if [ ! -f "$W/run$r.md" ]; then
        echo "run $r: cdpc-run diff ended with status $rc and no table:"; tail -n 20 "$W/run$r.log"
        exit 2
    fi
    # table rows: | sample | compiler | compiler output ok | nvcc output ok | identical | ...
    awk -F' *\\| *' -v run="$r" '$2 != "" && $2 != "sample" && $2 !~ /^-/ && NF > 8 {
        printf "run %s  %-10s %-14s output = nvcc'"'"'s: %-4s (check: %s; nvcc: %s)\n", run, $2, $3, $6, $4, $5
    }' "$W/run$r.md"
    grep -q '| NO |\|FAIL' "$W/run$r.md" && status=1
    r=$((r + 1))
done
echo "details of the last run:"
sed -n '/^## Details/,$p' "$W/run$RUNS.md" | head -n 40
exit $status
