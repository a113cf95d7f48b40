#!/bin/sh
# The GPU soak: every sample's cubin of every build, run RUNS times (default 100), each run
# checked against its manifest as `cdpc-run sample` checks it. The runs of a cell share a
# process and its CUDA context (`cdpc-run soak CUBIN MANIFEST --runs N`): each run loads the
# module afresh (globals at their initial values) and fills its buffers anew, and a
# deterministic sample's every run must equal, byte for byte, its process's first. A run that
# ends in a CUDA error, expected or not, ends its process (a sticky error poisons the
# context), and the runs left go on in a new one; so a sample that expects an error makes a
# process per run. A run still going after LIMIT seconds (default 20) counts as hung and ends
# its process. Why not a process per run: creating the context costs about 0.4 s on the H100,
# which made 100 runs of every cell (about 14,000 runs) need an hour of device time.
# On the device machine, from the repository root, with build/gpu
# carried from the development machine (`cargo xtask gpu-bundle`):
#
#     sh samples/harness/soak.sh
#
# nvcc's cubins are built first (samples/check.sh) and soaked under the label `nvcc`, so that
# what hangs or fails with cdpc's builds can be told from what the runtime does to nvcc's.
# DISTINCT=1 soaks each sample's distinct cubins once (builds that made the same bytes share
# the runs). ONLY="err_pending_limit ..." soaks only those samples, SKIP="err_child_fault ..." all but those; LABELS="cdpc-v2 ..." only those builds
# of build/gpu (all of them by default, nvcc's always); DEADLINE (seconds, default 540) starts no
# new cell past it, and the results say which cells were not reached. JOBS (default 1) cells run
# at once (several processes share the GPU, which is a harder test of the runtime, not an
# easier one). Writes $OUT/soak.md (or results/soak.md): per sample and build, runs made, ok,
# failed, hung, the processes they took and the slowest run. Exit status 0 when no run failed
# or hung.
set -u
# One cell (called by the script itself through xargs): NAME LABEL CUBIN; prints its table row.
if [ "${1:-}" = --cell ]; then
    name=$2 label=$3 cubin=$4
    if [ $(($(date +%s) - ${START:-0})) -gt "${DEADLINE:-540}" ]; then
        echo "| $name | $label | not reached (deadline ${DEADLINE:-540} s) | | | | | |"
        exit 0
    fi
    runs=${RUNS:-100} limit=${LIMIT:-20}
    ok=0 failed=0 hung=0 slowest=0 made=0 processes=0
    log=$(mktemp "${TMPDIR:-/tmp}/cdpc-soak-cell-XXXXXX")
    while [ "$made" -lt "$runs" ]; do
        left=$((runs - made))
        # the runner's own watchdog ends a hung run; `timeout` is the backstop
        timeout -s KILL $((limit * left + 60)) build/gpu/bin/cdpc-run soak "$cubin" "samples/$name.toml" --runs "$left" --limit "$limit" >"$log" 2>&1
        rc=$?
        processes=$((processes + 1))
        o=$(grep -c '^ok ' "$log") f=$(grep -c '^FAIL ' "$log") h=$(grep -c '^HUNG ' "$log")
        # 3: the runner's watchdog ended a hung run (its HUNG line on standard error)
        if [ "$rc" = 137 ] || [ "$rc" = 124 ] || [ "$rc" = 3 ]; then h=1; fi
        stop=0
        if [ $((o + f + h)) = 0 ]; then
            f=1 stop=1 # the process made no run at all (it could not load the cubin, say): the
                       # next would not either; the row shows the runs made
        fi
        # Else a process that ends before its runs without saying why (no FAIL, HUNG or "stopped
        # after" line: a signal, a crash in the runner or the driver, status $rc) leaves the run
        # it was making unfinished: that run failed, and the log says how the process ended.
        if [ "$h" = 0 ] && [ "$f" = 0 ] && [ "$o" -lt "$left" ] && ! grep -q '^stopped after' "$log"; then
            f=1
            echo "FAIL $o: the process ended with status $rc after $o run(s), saying nothing" >>"$log"
        fi
        # every run that was not ok, at once (a soak cut short by its caller still says them)
        grep -v -e '^ok ' -e '^stopped after' "$log" | head -n 5 | sed "s/^/== $name $label (process $processes): /" >&2
        [ "$h" -gt 0 ] && slowest=$((limit * 1000))
        s=$(awk '/^(ok|FAIL) / { if ($3 + 0 > m) m = $3 + 0 } END { print m + 0 }' "$log")
        [ "$s" -gt "$slowest" ] && slowest=$s
        ok=$((ok + o)) failed=$((failed + f)) hung=$((hung + h)) made=$((made + o + f + h))
        [ "$stop" = 1 ] && break
    done
    rm -f "$log"
    echo "$name $label: $made runs, $ok ok, $failed failed, $hung hung, $processes processes, slowest ${slowest} ms" >&2
    echo "| $name | $label | $made | $ok | $failed | $hung | $processes | $(awk "BEGIN { printf \"%.3f\", $slowest / 1000 }") |"
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
# NVCC_CUBINS=DIR: nvcc's cubins already built there (samples/check.sh's OUT_DIR), not again
NVCC=${NVCC_CUBINS:-$WORK/nvcc}
if [ -z "${NVCC_CUBINS:-}" ]; then
    OUT_DIR=$NVCC sh samples/check.sh "$CU" >"$WORK/check.log" 2>&1 || echo "(nvcc could not build some samples; they show as missing)"
fi
mkdir -p "$RESULTS_DIR"
report=$RESULTS_DIR/soak.md
{
    echo "# GPU soak: every run checked, the runs of a cell in one process until a CUDA error"
    echo
    echo "- date: $(date -u +%Y-%m-%d)"
    echo "- device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo '?')"
    echo "- nvcc: $("$CU/bin/nvcc" --version | tail -n 1)"
    echo "- cdpc cubins: $(cat build/gpu/BUILD-INFO 2>/dev/null || echo '?')"
    echo "- command: \`DISTINCT=${DISTINCT:-0} JOBS=${JOBS:-1} RUNS=$RUNS LIMIT=$LIMIT ONLY=\"${ONLY:-}\" LABELS=\"${LABELS:-}\" sh samples/harness/soak.sh\`"
    echo
    echo "| sample | build | runs | ok | failed | hung (> ${LIMIT} s) | processes | slowest run (s) |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|"
} >"$report"
labels=${LABELS:-$(cd build/gpu && for d in */; do [ "$d" = bin/ ] || printf '%s ' "${d%/}"; done)}
samples=${ONLY:-$(cd samples && for m in *.toml; do case " ${SKIP:-} " in *" ${m%.toml} "*) ;; *) printf '%s ' "${m%.toml}" ;; esac; done)}
# Each row is appended to soak-rows.md as its cell ends, so that a soak stopped from outside
# keeps the cells it finished; soak.md lists them in the cells' order at the end.
rows=$RESULTS_DIR/soak-rows.md
: >"$rows"
# The cells, in order; each line NAME LABEL CUBIN. DISTINCT=1 runs a sample's cubin once when
# several builds made the same bytes (the launch optimisations leave many kernels alone): the
# other builds' rows say whose runs they share.
: >"$WORK/sums"; : >"$WORK/all"
for name in $samples; do
    for label in nvcc $labels; do
        if [ "$label" = nvcc ]; then cubin=$NVCC/$name.cubin; else cubin=build/gpu/$label/$name.cubin; fi
        [ -f "$cubin" ] || continue
        echo "$name $label $cubin" >>"$WORK/all" # every cell's row, run or shared
        if [ "${DISTINCT:-0}" = 1 ]; then
            sum=$(cksum <"$cubin" | tr ' ' -)
            first=$(awk -v n="$name" -v s="$sum" '$1 == n && $2 == s { print $3; exit }' "$WORK/sums")
            if [ -n "$first" ]; then
                echo "| $name | $label | the same bytes as $first: its runs | | | | | |" >>"$rows"
                continue
            fi
            echo "$name $sum $label" >>"$WORK/sums"
        fi
        echo "$name $label $cubin"
    done
done >"$WORK/cells"
# A cell past the deadline is not started: its row says so.
export RUNS LIMIT DEADLINE START=$start
xargs -P "${JOBS:-1}" -L 1 sh "$0" --cell <"$WORK/cells" >>"$rows"
while read -r name label cubin; do
    grep -F "| $name | $label |" "$rows" | head -n 1
done <"$WORK/all" >>"$report"
rm -f "$rows"
status=0
if awk -F'|' 'NF > 8 && ($6 + 0 > 0 || $7 + 0 > 0) { bad = 1 } END { exit !bad }' "$report"; then status=1; fi
echo "results written to $report"
exit $status
