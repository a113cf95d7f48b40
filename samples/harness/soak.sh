#!/bin/sh
# The GPU soak: every sample's cubin of every build, run RUNS times (default 100), each run a
# process of its own (`cdpc-run sample CUBIN MANIFEST --repeat 0`) under a time limit of LIMIT
# seconds (default 20). A run that passes its manifest's checks counts as ok, one that fails
# them as failed, one still running at the limit as hung (killed). On the device machine, from
# the repository root, with build/gpu carried from the development machine (`cargo xtask
# gpu-bundle`):
#
#     sh samples/harness/soak.sh
#
# nvcc's cubins are built first (samples/check.sh) and soaked under the label `nvcc`, so that
# what hangs or fails with cdpc's builds can be told from what the runtime does to nvcc's.
# ONLY="err_pending_limit ..." soaks only those samples; LABELS="cdpc-v2 ..." only those builds
# of build/gpu (all of them by default, nvcc's always); DEADLINE (seconds, default 540) starts no
# new cell past it, and the results say which cells were not reached. JOBS (default 1) cells run
# at once, each its runs one after another (JOBS=16 on the device machine's 16 cores: the GPU is
# shared by that many processes, which is a harder test of the runtime, not an easier one).
# Writes $OUT/soak.md (or results/soak.md): per sample and build, runs made, ok, failed, hung,
# and the slowest run. Exit status 0 when no run failed or hung.
set -u
# One cell (called by the script itself through xargs): NAME LABEL CUBIN; prints its table row.
if [ "${1:-}" = --cell ]; then
    name=$2 label=$3 cubin=$4
    if [ $(($(date +%s) - ${START:-0})) -gt "${DEADLINE:-540}" ]; then
        echo "| $name | $label | not reached (deadline ${DEADLINE:-540} s) | | | | |"
        exit 0
    fi
    ok=0 failed=0 hung=0 slowest=0 k=0
    log=$(mktemp "${TMPDIR:-/tmp}/cdpc-soak-cell-XXXXXX")
    while [ "$k" -lt "${RUNS:-100}" ]; do
        t0=$(date +%s%N)
        timeout -s KILL "${LIMIT:-20}" build/gpu/bin/cdpc-run sample "$cubin" "samples/$name.toml" --repeat 0 >"$log" 2>&1
        rc=$?
        ms=$((($(date +%s%N) - t0) / 1000000))
        [ "$ms" -gt "$slowest" ] && slowest=$ms
        if [ "$rc" = 137 ] || [ "$rc" = 124 ]; then
            hung=$((hung + 1))
        elif [ "$rc" = 0 ]; then
            ok=$((ok + 1))
        else
            failed=$((failed + 1))
            [ "$failed" = 1 ] && { echo "== $name $label: first failure" >&2; tail -n 5 "$log" >&2; }
        fi
        k=$((k + 1))
    done
    rm -f "$log"
    echo "$name $label: $k runs, $ok ok, $failed failed, $hung hung, slowest ${slowest} ms" >&2
    echo "| $name | $label | $k | $ok | $failed | $hung | $(awk "BEGIN { printf \"%.2f\", $slowest / 1000 }") |"
    exit 0
fi
CU=${CUDA_HOME:-/usr/local/cuda}
RUNS=${RUNS:-100}
LIMIT=${LIMIT:-20}
DEADLINE=${DEADLINE:-540}
RUN=build/gpu/bin/cdpc-run
RESULTS_DIR=${OUT:-results}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cdpc-soak-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
if [ ! -x "$RUN" ]; then
    echo "no $RUN: run \`cargo xtask gpu-bundle\` on the development machine and carry build/gpu"
    exit 2
fi
start=$(date +%s)
OUT_DIR=$WORK/nvcc sh samples/check.sh "$CU" >"$WORK/check.log" 2>&1 || echo "(nvcc could not build some samples; they show as missing)"
mkdir -p "$RESULTS_DIR"
report=$RESULTS_DIR/soak.md
{
    echo "# GPU soak: every run a process of its own"
    echo
    echo "- date: $(date -u +%Y-%m-%d)"
    echo "- device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo '?')"
    echo "- nvcc: $("$CU/bin/nvcc" --version | tail -n 1)"
    echo "- cdpc cubins: $(cat build/gpu/BUILD-INFO 2>/dev/null || echo '?')"
    echo "- command: \`JOBS=${JOBS:-1} RUNS=$RUNS LIMIT=$LIMIT ONLY=\"${ONLY:-}\" LABELS=\"${LABELS:-}\" sh samples/harness/soak.sh\`"
    echo
    echo "| sample | build | runs | ok | failed | hung (> ${LIMIT} s) | slowest run (s) |"
    echo "|---|---|---:|---:|---:|---:|---:|"
} >"$report"
labels=${LABELS:-$(cd build/gpu && for d in */; do [ "$d" = bin/ ] || printf '%s ' "${d%/}"; done)}
samples=${ONLY:-$(cd samples && for m in *.toml; do printf '%s ' "${m%.toml}"; done)}
# The cells, in order; each line NAME LABEL CUBIN.
for name in $samples; do
    for label in nvcc $labels; do
        if [ "$label" = nvcc ]; then cubin=$WORK/nvcc/$name.cubin; else cubin=build/gpu/$label/$name.cubin; fi
        [ -f "$cubin" ] && echo "$name $label $cubin"
    done
done >"$WORK/cells"
# A cell past the deadline is not started: its row says so.
export RUNS LIMIT DEADLINE START=$start
xargs -P "${JOBS:-1}" -L 1 sh "$0" --cell <"$WORK/cells" >"$WORK/rows"
# Rows in the cells' order (parallel cells finish in any order).
while read -r name label cubin; do
    grep -F "| $name | $label |" "$WORK/rows" | head -n 1
done <"$WORK/cells" >>"$report"
status=0
if awk -F'|' 'NF > 7 && ($6 + 0 > 0 || $7 + 0 > 0) { bad = 1 } END { exit !bad }' "$report"; then status=1; fi
echo "results written to $report"
exit $status
