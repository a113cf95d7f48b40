#!/usr/bin/env python3
"""Kernel times of KLAP's programs with their own host code: nvcc's build against cdpc's device
code, plain and with each launch-aggregation granularity (issue 16).

KLAP's programs (the corpus's `klap/test/*`) time their own kernels and print
`... kernel time = X` (BFS: `run kernel time = X`; the others `Average kernel time = X ms`); the
last such number of a run is its time. Each program is built once per variant, in a copy of the
corpus: `nvcc` alone, and `cdpc`, `cdpc-block`, `cdpc-warp`, `cdpc-grid` with every device-code
file compiled by cdpc through samples/harness/nvcc-cdpc.py (`-faggregate-launches=...`), host
code and link nvcc's. The variants then take turns, round by round, in an order drawn from a
seeded random generator, so that drift of the machine falls on all of them alike. Each
variant's ratio to nvcc is median(variant) / median(nvcc) with a 95% percentile-bootstrap
interval (resampling both with replacement, 2,000 times, seeded), the method of
runtime-shim/src/loader/stats.rs; a verdict ("faster", "slower") is stated only when the
interval excludes 1. Writes $OUT/corpus-timing.md (or ./corpus-timing.md).

Usage, from the repository root, on the GPU machine:
  python3 samples/harness/corpus-timing.py --cdpc CDPC [--corpus DIR] [--rounds N] [--programs BFS,BT,GC,SP]
CUDA_HOME: default /usr/local/cuda. A run is stopped after --run-limit seconds (default 60).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# program: (device-code files, other .cu files, run arguments); options as in corpus-gpu.sh.
PROGRAMS = {
    "BFS": (["kernel.base.cu"], ["main.cu", "graph.cu"], ["-o", "1"]),
    "BT": (["kernel.base.cu"], ["main.cu", "verify.cu"], ["-o", "1"]),
    "GC": (["kernel.base.cu"], ["main.cu", "graphColoring.cu"], ["-o", "1"]),
    "SP": (["kernel.base.cu"], ["main.cu"], ["-o", "1"]),
    "SSSP": (["kernel.base.cu"], ["main.cu"], ["-o", "1"]),
    "QT": (["kernel.base.cu"], ["main.cu"], ["-o", "1"]),
    "MST-syncwarp": (["kernel.base.cu"], ["main.cu"], ["-o", "1"]),
}
# A program changed the same way for every variant, nvcc's included, in a folder of its own:
# KLAP's MST never finishes on the H100 under either compiler (a diverged warp's launches wait
# forever in the device runtime; results/corpus-gpu.md); with one `__syncwarp()` after the find
# kernel's `cs.find` it does, in every build (as corpus-gpu.sh's `both_rewrite`).
REWRITE_ALL = {"MST-syncwarp": ("MST", [("unsigned srcboss = cs.find(src);", "unsigned srcboss = cs.find(src); __syncwarp();")])}
# The part of the output compared with nvcc's (default: all of it): MST's per-iteration counts
# vary run to run under nvcc too, its final line does not.
COMPARED = {"MST-syncwarp": "Overall: mstwt"}
# The time of a run from the times it printed (default: the last): MST prints its find kernel's
# and its verify kernel's averages, KLAP's test.sh records both; their sum is timed here.
TIME_OF = {"MST-syncwarp": lambda times: sum(times[-2:])}
# What QT needs beyond its Makefile to build with CUDA 13 at all, as in corpus-gpu.sh
# (`host_compat`, `nvcc_rewrite`; docs/CORPUS.md): host-code compatibility for every variant,
# and for nvcc's build a copy of the device code with the pre-CUDA-9 warp votes rewritten to
# their `_sync` forms over `__activemask()` (what cdpc compiles the original to).
HOST_COMPAT = {"QT": ["-DcomputeMode=major", "-DclockRate=major", "--pre-include", "thrust/host_vector.h"]}
NVCC_REWRITE = {"QT": [("__any(", "__any_sync(__activemask(), "), ("__ballot(", "__ballot_sync(__activemask(), "), ("__shfl_up(", "__shfl_up_sync(__activemask(), ")]}
FLAGS = ["-Xcompiler", "-fPIC", "-m64", "--default-stream", "per-thread", "-I.", "-I../../include"]
# KLAP's host code calls cudaThreadSynchronize, gone from CUDA 13 (docs/CORPUS.md).
COMPAT = "-DcudaThreadSynchronize=cudaDeviceSynchronize"
VARIANTS = {
    "nvcc": None,
    "cdpc": [],
    "cdpc-block": ["-faggregate-launches=block"],
    "cdpc-warp": ["-faggregate-launches=warp"],
    "cdpc-grid": ["-faggregate-launches=grid"],
    # Thresholding (issue 16): grids of at most 128 threads run in the launching thread, the
    # rest as the granularity says.
    "cdpc-t128": ["-flaunch-threshold=128"],
    "cdpc-t128-warp": ["-flaunch-threshold=128", "-faggregate-launches=warp"],
    "cdpc-t128-grid": ["-flaunch-threshold=128", "-faggregate-launches=grid"],
}
SEED = 0x4B4C4150  # "KLAP"
RESAMPLES = 2000
TIME = re.compile(r"kernel time = ([0-9.]+)")


def build(root: str, name: str, variant: str, work: str, args: argparse.Namespace, shim: str) -> tuple[str | None, str]:
    """The program's executable for `variant`, or None and the build log."""
    device, other, _ = PROGRAMS[name]
    folder = os.path.join(work, "klap", "test", name)
    if name in REWRITE_ALL and not os.path.exists(folder):
        original, edits = REWRITE_ALL[name]
        shutil.copytree(os.path.join(work, "klap", "test", original), folder)
        for f in device:
            path = os.path.join(folder, f)
            os.chmod(path, 0o644)
            with open(path) as source:
                text = source.read()
            for old, new in edits:
                if text.count(old) != 1:
                    return None, f"{f}: the rewrite of {name} expects `{old}` once"
                text = text.replace(old, new)
            with open(path, "w") as rewritten:
                rewritten.write(text)
    flags = FLAGS + [f"-I{shim}", COMPAT, *HOST_COMPAT.get(name, []), "-arch=sm_90", "-dc"]
    log = []
    objects = []
    for f in other:  # host code, the same for every variant: compiled once
        o = f"{f[:-3]}.host.o"
        if not os.path.exists(os.path.join(folder, o)):
            r = subprocess.run([args.nvcc, *flags, "-c", f, "-o", o], cwd=folder, capture_output=True, text=True)
            log.append(r.stdout + r.stderr)
            if r.returncode != 0:
                return None, "\n".join(log)
        objects.append(o)
    for f in device:
        o = f"{f[:-3]}.{variant}.o"
        if VARIANTS[variant] is None:
            source = f
            if name in NVCC_REWRITE:
                source = f"{f[:-3]}.nvcc.cu"
                with open(os.path.join(folder, f)) as original:
                    text = original.read()
                for old, new in NVCC_REWRITE[name]:
                    text = text.replace(old, new)
                with open(os.path.join(folder, source), "w") as rewritten:
                    rewritten.write(text)
            cmd = [args.nvcc, *flags, "-c", source, "-o", o]
        else:
            cmd = [sys.executable, os.path.join(root, "samples/harness/nvcc-cdpc.py"), "--cdpc", args.cdpc, "--nvcc", args.nvcc,
                   "--cuda-home", args.cuda_home, *[f"--cdpc-arg={a}" for a in VARIANTS[variant]], "--", *flags, "-c", f, "-o", o]
        r = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        log.append(r.stdout + r.stderr)
        if r.returncode != 0:
            return None, "\n".join(log)
        objects.append(o)
    exe = f"prog.{variant}"
    r = subprocess.run([args.nvcc, "-arch=sm_90", "-rdc=true", "-o", exe, *objects, "-lcudadevrt"], cwd=folder, capture_output=True, text=True)
    log.append(r.stdout + r.stderr)
    return (os.path.join(folder, exe) if r.returncode == 0 else None), "\n".join(log)


def run(exe: str, name: str, limit: float) -> tuple[float | None, str]:
    """The last kernel time the program printed (None if it failed or printed none), and its
    output with the numbers that have a decimal point masked and the lines sorted, as
    corpus-gpu.sh compares outputs."""
    try:
        r = subprocess.run([exe, *PROGRAMS[name][2]], cwd=os.path.dirname(exe), capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, "(stopped by the time limit)"
    text = r.stdout + r.stderr
    times = [float(t) for t in TIME.findall(text)]
    lines = [line for line in text.splitlines() if COMPARED.get(name, "") in line]
    masked = "\n".join(sorted(re.sub(r"[0-9]+\.[0-9]+(e[-+]?[0-9]+)?", "#", line) for line in lines))
    return (TIME_OF.get(name, lambda ts: ts[-1])(times) if r.returncode == 0 and times else None), masked


def ratio_interval(a: list[float], b: list[float], rng: random.Random) -> tuple[float, float, float]:
    """median(a) / median(b) and its 95% percentile-bootstrap interval."""
    ratios = sorted(
        statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b))) for _ in range(RESAMPLES)
    )
    lo, hi = ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]
    return statistics.median(a) / statistics.median(b), lo, hi


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cdpc", required=True)
    parser.add_argument("--corpus", default="../shared/corpus")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--programs", default="BFS,BT,GC,SP")
    parser.add_argument("--run-limit", type=float, default=60)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="which of the variants to build and time (nvcc's always)")
    args = parser.parse_args()
    chosen = {"nvcc", *[v for v in args.variants.split(",") if v]}
    unknown = chosen - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    for v in [v for v in VARIANTS if v not in chosen]:
        del VARIANTS[v]
    root = os.getcwd()
    args.cdpc = os.path.abspath(args.cdpc)
    args.cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    args.nvcc = os.path.join(args.cuda_home, "bin", "nvcc")
    programs = [p for p in args.programs.split(",") if p]
    report = os.path.join(os.environ.get("OUT", "."), "corpus-timing.md")

    work = tempfile.mkdtemp()
    try:
        shutil.copytree(os.path.abspath(args.corpus), work, dirs_exist_ok=True)
        shim = os.path.join(work, "shim")
        os.makedirs(os.path.join(shim, "cub", "cub"))
        with open(os.path.join(shim, "cub", "cub", "cub.cuh"), "w") as f:
            f.write("#include <cub/cub.cuh>\n")
        exes: dict[tuple[str, str], str] = {}
        failed: list[str] = []
        for name in programs:
            for variant in VARIANTS:
                exe, log = build(root, name, variant, work, args, shim)
                if exe:
                    exes[(name, variant)] = exe
                else:
                    failed.append(f"{name} {variant}: build failed: {log.strip().splitlines()[-1] if log.strip() else '?'}")
        times: dict[tuple[str, str], list[float]] = {key: [] for key in exes}
        # Each run's output, timings masked, in the order the runs were made.
        outputs: dict[tuple[str, str], list[str]] = {key: [] for key in exes}
        rng = random.Random(SEED)
        started = time.time()
        for _ in range(args.rounds):
            for name in programs:
                order = [v for v in VARIANTS if (name, v) in exes]
                rng.shuffle(order)
                for v in order:
                    t, output = run(exes[(name, v)], name, args.run_limit)
                    if t is None:
                        failed.append(f"{name} {v}: a run failed or printed no time")
                    else:
                        times[(name, v)].append(t)
                    outputs[(name, v)].append(output)
        elapsed = time.time() - started

        def same_as_nvcc(name: str, v: str) -> bool:
            """Whether every run's output equalled the first nvcc run's."""
            reference = outputs.get((name, "nvcc"), [])
            return bool(reference) and all(o == reference[0] for o in outputs.get((name, v), []))

        try:
            gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
        except FileNotFoundError:
            gpu = "no GPU (nvidia-smi not found)"
        nvcc_version = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        cdpc_version = subprocess.run([args.cdpc, "--version"], capture_output=True, text=True).stdout.strip()
        lines = [
            "# KLAP's programs: kernel times of nvcc's build and of cdpc's device code",
            "",
            f"Run by `samples/harness/corpus-timing.py` on {time.strftime('%Y-%m-%d', time.gmtime())}: {gpu}; {nvcc_version}; {cdpc_version}.",
            f"{args.rounds} rounds, variants in seeded random order within each round (seed {SEED:#x}), {elapsed:.0f} s of runs.",
            "Times are the programs' own (`kernel time = X`, ms). Ratio: median(variant) / median(nvcc), below 1 is faster;",
            "95% percentile-bootstrap interval; a verdict only where the interval excludes 1.",
            "",
            "\"output = nvcc's\": every run's output equals nvcc's first run's, timings masked and lines sorted.",
            "",
            "| program | variant | runs | output = nvcc's | median ms | min | max | ratio to nvcc | 95% interval | verdict |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        boot = random.Random(SEED + 1)
        for name in programs:
            base = times.get((name, "nvcc"), [])
            for v in VARIANTS:
                t = times.get((name, v), [])
                if not t:
                    lines.append(f"| {name} | {v} | 0 | - | - | - | - | - | - | - |")
                    continue
                row = f"| {name} | {v} | {len(t)} | {'yes' if same_as_nvcc(name, v) else 'NO'} | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} |"
                if v != "nvcc" and len(base) >= 3 and len(t) >= 3:
                    r, lo, hi = ratio_interval(t, base, boot)
                    verdict = "faster" if hi < 1 else "slower" if lo > 1 else "no difference shown"
                    row += f" {r:.3f} | [{lo:.3f}, {hi:.3f}] | {verdict} |"
                else:
                    row += " - | - | - |"
                lines.append(row)
        if failed:
            lines += ["", "Failures:", ""] + [f"- {f}" for f in sorted(set(failed))]
        with open(report, "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
