#!/usr/bin/env python3
"""Launches per kernel against compile time and peak memory, cdpc against nvcc.

    python3 bench/launch_scaling.py [N ...]        # default: 250 500 1000 2000 5000

For each N it writes one kernel with N device-side launches (valid .cdp and CUDA), then compiles
it, interleaved, with `cdpc -O3 --emit obj --time` (LLVM and `ptxas -c`) and
`nvcc -O3 -arch=sm_90 -rdc=true -cubin` (cicc and `ptxas -c`): both stop at the relocatable
object, so nvlink, which is quick and the same for both, is left out. Time is wall-clock; peak
memory is the largest resident set of the compiler or any tool it ran (wait4's ru_maxrss).
The table goes into BENCHMARKS.md between the `launch-scaling` markers.

Environment: CDPC (default target/release/cdpc, else target/debug/cdpc), CUDA_BIN (default
.cuda/nvidia/cu13/bin, from `cargo xtask setup`), REPEAT (runs per point, median; default 1).
Not run by CI: the large sizes take minutes.
"""

import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- launch-scaling:begin -->", "<!-- launch-scaling:end -->"


def program(n):
    lines = ['extern "C" __global__ void child(int *p, int i) { p[i] += 1; }',
             'extern "C" __global__ void parent(int *p) {']
    lines += [f"    child<<<1, 1>>>(p, {i});" for i in range(n)]
    return "\n".join(lines + ["}", ""])


def measure(cmd, env=None):
    """(seconds, peak MB, stderr) of one run; fails loudly if the compiler fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{stderr}")
    return seconds, usage.ru_maxrss / 1024, stderr


def ptxas_seconds(time_lines):
    match = re.search(r"^time: ptxas ([0-9.]+)$", time_lines, re.M)
    return float(match.group(1)) if match else float("nan")


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [250, 500, 1000, 2000, 5000]
    cdpc = Path(os.environ.get("CDPC", ""))
    if not cdpc.is_file():
        cdpc = next((p for p in (ROOT / "target/release/cdpc", ROOT / "target/debug/cdpc") if p.is_file()), None)
    cuda_bin = Path(os.environ.get("CUDA_BIN", ROOT / ".cuda/nvidia/cu13/bin"))
    if cdpc is None or not (cuda_bin / "nvcc").is_file():
        sys.exit("needs a built cdpc (cargo build --release) and nvcc (cargo xtask setup)")
    repeat = int(os.environ.get("REPEAT", "1"))
    env = dict(os.environ, PATH=f"{cuda_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="cdpc-bench-") as work:
        work = Path(work)
        for n in sizes:
            src = work / f"l{n}.cu"
            src.write_text(program(n))
            ours, theirs = [], []
            for _ in range(repeat):
                s, mb, err = measure([cdpc, src, "-O3", "--emit", "obj", "--time", "-o", work / "c.o"], env)
                ours.append((s, ptxas_seconds(err), mb))
                theirs.append(measure(["nvcc", "-O3", "-arch=sm_90", "-rdc=true", "-cubin", src, "-o", work / "n.cubin"], env)[:2])
            c_s, c_ptxas, c_mb = (statistics.median(x) for x in zip(*ours))
            n_s, n_mb = (statistics.median(x) for x in zip(*theirs))
            rows.append((n, c_s, c_ptxas, c_mb, n_s, n_mb))
            print(f"{n:>6} launches: cdpc {c_s:7.2f} s (ptxas {c_ptxas:.2f} s) {c_mb:7.0f} MB | "
                  f"nvcc {n_s:7.2f} s {n_mb:7.0f} MB", flush=True)
    write(rows, cdpc, repeat)


def write(rows, cdpc, repeat):
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    table = [
        BEGIN,
        f"Measured {time.strftime('%Y-%m-%d')} by `python3 bench/launch_scaling.py` on {platform.machine()}, "
        f"{os.cpu_count()} CPU(s), load average {load} at the end (a shared machine: absolute times are "
        f"inflated; the two compilers ran interleaved, so their ratio is what counts); cdpc: `{cdpc.relative_to(ROOT) if cdpc.is_relative_to(ROOT) else cdpc}`, "
        f"median of {repeat} run(s) per point.",
        "",
        "| launches in one kernel | cdpc s | of which ptxas s | cdpc peak MB | nvcc s | nvcc peak MB | time nvcc/cdpc |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, c_s, c_ptxas, c_mb, n_s, n_mb in rows:
        table.append(f"| {n:,} | {c_s:.2f} | {c_ptxas:.2f} | {c_mb:.0f} | {n_s:.2f} | {n_mb:.0f} | {n_s / c_s:.1f} |")
    table.append(END)
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    block = "\n".join(table)
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n## Launches per kernel\n\n" + block + "\n"
    path.write_text(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
