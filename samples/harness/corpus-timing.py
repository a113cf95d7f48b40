#!/usr/bin/env python3
"""Kernel times of KLAP's programs with their own host code: nvcc's build against builds with
cdpc's device code, through the kernel language's front end (`-x cdp`) and through Clang's,
plain, with thresholding and with each launch-aggregation granularity.

KLAP's programs (the corpus's `klap/test/*`) time their own kernels and print
`... kernel time = X` (BFS: `run kernel time = X`; the others `Average kernel time = X ms`); the
last such number of a run is its time. Each program is built once per variant, in a copy of the
corpus: `nvcc` alone, and the cdpc variants with every device-code file compiled by cdpc
through samples/harness/nvcc-cdpc.py (the variant's cdpc arguments below), host code and link
nvcc's. The variants then take turns, round by round, in an order drawn from a seeded random
generator, so that drift of the machine falls on all of them alike. Each variant's ratio to
nvcc is median(variant) / median(nvcc) with a 95% percentile-bootstrap interval (resampling
both with replacement, 2,000 times, seeded), the method of runtime-shim/src/loader/stats.rs; a
verdict ("faster", "slower") is stated only when the interval excludes 1. Below the table,
each variant's geometric mean over the programs of its ratio to nvcc, and each pair of cdpc
variants head to head (overall and program by program: builds of two cdpc binaries merged by
bundle-merge.py, or two sets of options), each with its interval, every program's runs
resampled. Writes
$OUT/corpus-timing.md (or ./corpus-timing.md); a variant whose output is not nvcc's gets its
first differing run's diff against nvcc's first run there ("Differences").

Variants (--variants picks; nvcc's is always built and timed):
  nvcc             nvcc alone
  cdp-rule         `-x cdp` (cdpc's own front end), the documented rule: -flaunch-threshold=128
                   then =warp, =grid for GC (BENCHMARKS.md, "Which options")
  clang            Clang's front end (the default for `.cu`), plain: -fno-launch-optimizations
  clang-default    Clang's front end with no option: what a build gets by default (thresholding
                   at 128, aggregation chosen per kernel)
  clang-rule       Clang's front end and the IR pipeline, the documented rule (as cdp-rule)
  clang-rule-pool  the rule and -fdevice-malloc-pool (device-side cudaMalloc from cdpc's pool)
  with --clang-block-grid also (block and grid granularity of the IR pipeline):
  clang-block, clang-grid, clang-t128-grid
  and, named in --variants only, clang-pool (plain with the pool), clang-default-pool, clang-t128-warp and the `-x cdp` builds of earlier runs: cdp, cdp-block,
  cdp-warp, cdp-grid, cdp-t128, cdp-t128-warp, cdp-t128-grid
The default set is nvcc, clang, clang-default, clang-rule, clang-rule-pool. The `cdp*` variants read the programs with the
kernel language's front end (`-x cdp`); since that language is C (docs/KERNEL-LANGUAGE.md)
only BFS compiles that way, the other programs' builds fail with E0923.
Each program's inputs/ and outputs/ folders travel in the bundle (GC, SP, SSSP and MST read
their graphs and formulas from inputs/ at run time).

--make builds every variant with the program's own Makefile instead (`make base`, as KLAP's
README builds it): `NVCC=nvcc` for nvcc's, `NVCC="cdpc ARGS"` for a cdpc variant, so that cdpc
compiles every file and runs the device and host links itself, as a user's build would; the
Makefile's ARCH is `-arch=sm_90` (its sm_35 and sm_52 are gone from CUDA 13) and its INCLUDE
carries what every build needs with CUDA 13 (COMPAT, HOST_COMPAT, the cub shim), QT's cdpc
builds `-flegacy-warp-intrinsics` and nvcc's QT the rewritten warp votes, as below.

Stages. The GPU machine has no Clang (and no Rust or LLVM), and its nvlink (CUDA 13.0)
refuses objects of the newer nvcc of the build machine, so the executables are built and
linked where cdpc is, carried, and run there:

  # here (cdpc, Clang, nvcc; no GPU): every variant's executables into one xz archive
  python3 samples/harness/corpus-timing.py --stage build --cdpc target/release/cdpc \\
      --programs BFS,BT,GC,SP,SSSP,QT,MST-syncwarp [--clang-block-grid] --bundle build/klap-bundle.tar.xz
  # there (a GPU, Python 3; nothing of CUDA but the driver): what the archive holds, then a run
  python3 samples/harness/corpus-timing.py --stage run --bundle build/klap-bundle.tar.xz --list
  python3 samples/harness/corpus-timing.py --stage run --bundle build/klap-bundle.tar.xz --rounds 10 --deadline 500
  # there, the soak: every program and variant run 100 times, each run checked (corpus-soak.md)
  python3 samples/harness/corpus-timing.py --stage soak --bundle build/klap-bundle.tar.xz --runs 100 --run-limit 30 --deadline 400

The archive (about 3 MiB for all seven programs and seven variants) holds the executables and
manifest.json: each executable's program and variant, the variants' cdpc arguments, the
build's failures, cdpc's and nvcc's versions. The build stage exits 1 when a build failed (the
archive is written all the same, the failure listed in it and in the report); the run stage
needs only the archive, unpacks it in a temporary folder and refuses to run without a GPU.
A run of a program takes about 0.6 s on the H100 (Runs H and I): 10 rounds of the seven
programs take about 3 minutes with the four default variants, 5 with --clang-block-grid.
--deadline S starts no new round once the seconds of runs so far and the longest round so far
add up to more than S (the report says how many rounds were made); --programs in the run stage
times a subset, to split a run over calls. --stage all (the default) builds and runs on one
machine, in a temporary folder, as before.

CUDA_HOME: default /usr/local/cuda, else the checkout's .cuda/nvidia/cu13. A run is stopped
after --run-limit seconds (default 60).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
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
# forever in the device runtime; samples/harness/mst-probe.sh); with one `__syncwarp()` after the find
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
# cdpc's own option for a program (corpus-gpu.sh's `cdpc_only`): QT's pre-CUDA-9 warp functions,
# an error by default as nvcc's (E0903), compiled as their `_sync` forms (W0902).
CDPC_ONLY = {"QT": ["-flegacy-warp-intrinsics"]}
NVCC_REWRITE = {"QT": [("__any(", "__any_sync(__activemask(), "), ("__ballot(", "__ballot_sync(__activemask(), "), ("__shfl_up(", "__shfl_up_sync(__activemask(), ")]}
FLAGS = ["-Xcompiler", "-fPIC", "-m64", "--default-stream", "per-thread", "-I.", "-I../../include"]
# KLAP's host code calls cudaThreadSynchronize, gone from CUDA 13 (docs/CORPUS.md).
COMPAT = "-DcudaThreadSynchronize=cudaDeviceSynchronize"
CDP = ["-x", "cdp"]
T128 = ["-flaunch-threshold=128"]
WARP, BLOCK, GRID = "-faggregate-launches=warp", "-faggregate-launches=block", "-faggregate-launches=grid"
POOL = "-fdevice-malloc-pool"
PLAIN = "-fno-launch-optimizations"
# variant: (cdpc's arguments, other arguments for some programs); None: nvcc alone. Thresholding:
# grids of at most 128 threads run in the launching thread, the rest as the
# granularity says.
VARIANTS: dict[str, tuple[list[str], dict[str, list[str]]] | None] = {
    "nvcc": None,
    # The documented rule (BENCHMARKS.md): thresholding at 128, then warp; grid for GC.
    "cdp-rule": ([*CDP, *T128, WARP], {"GC": [*CDP, *T128, GRID]}),
    "clang": ([PLAIN], {}),
    # What a build with no option gets: thresholding at 128 and aggregation chosen per kernel
    # (driver::LaunchOptimizations, docs/AGGREGATION.md "By default").
    "clang-default": ([], {}),
    "clang-default-pool": ([POOL], {}),
    # The default without the link's device allocation pool (driver/pool.rs): the heap.
    "clang-default-heap": (["-fno-device-malloc-pool"], {}),
    # The documented rule through Clang and the IR pipeline.
    "clang-rule": ([*T128, WARP], {"GC": [*T128, GRID]}),
    # The rule with device-side allocations from cdpc's pool (pipeline/malloc_pool.rs).
    "clang-rule-pool": ([*T128, WARP, POOL], {"GC": [*T128, GRID, POOL]}),
    "clang-pool": ([PLAIN, POOL], {}),
    # Plain without the link's device allocation pool: the heap, as nvcc's build.
    "clang-heap": ([PLAIN, "-fno-device-malloc-pool"], {}),
    "clang-t128-warp": ([*T128, WARP], {}),
    # --clang-block-grid: the IR pipeline's block and grid granularity.
    "clang-block": ([BLOCK], {}),
    "clang-grid": ([GRID], {}),
    "clang-t128-grid": ([*T128, GRID], {}),
    # The `-x cdp` builds of Runs A to I (named `cdpc`, `cdpc-warp`, ... there).
    "cdp": ([*CDP, PLAIN], {}),
    "cdp-block": ([*CDP, BLOCK], {}),
    "cdp-warp": ([*CDP, WARP], {}),
    "cdp-grid": ([*CDP, GRID], {}),
    "cdp-t128": ([*CDP, *T128], {}),
    "cdp-t128-warp": ([*CDP, *T128, WARP], {}),
    "cdp-t128-grid": ([*CDP, *T128, GRID], {}),
}
DEFAULT_VARIANTS = ["nvcc", "clang", "clang-default", "clang-rule", "clang-rule-pool"]
BLOCK_GRID_VARIANTS = ["clang-block", "clang-grid", "clang-t128-grid"]
SEED = 0x4B4C4150  # "KLAP"
RESAMPLES = 2000
TIME = re.compile(r"kernel time = ([0-9.]+)")
MANIFEST = "manifest.json"
# Folders of a program's own that it reads or writes at run time, packed into the bundle.
DATA_FOLDERS = ["inputs", "outputs"]
# The most lines of a differing output's diff the report shows.
DIFF_LINES = 40


def cdpc_arguments(variant: str, name: str) -> list[str] | None:
    """cdpc's arguments for `name` in `variant`, None for nvcc's build."""
    spec = VARIANTS[variant]
    return None if spec is None else [*spec[1].get(name, spec[0]), *CDPC_ONLY.get(name, [])]


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
    cdpc = cdpc_arguments(variant, name)
    for f in device:
        o = f"{f[:-3]}.{variant}.o"
        if cdpc is None:
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
                   "--cuda-home", args.cuda_home, *[f"--cdpc-arg={a}" for a in cdpc], "--", *flags, "-c", f, "-o", o]
        r = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        log.append(r.stdout + r.stderr)
        if r.returncode != 0:
            step = "nvcc" if cdpc is None else f"nvcc-cdpc.py (cdpc {' '.join(cdpc) or 'with no more arguments'})"
            return None, "\n".join([*log, f"{f}: {step} exited with {r.returncode}"])
        objects.append(o)
    exe = f"prog.{variant}"
    r = subprocess.run([args.nvcc, "-arch=sm_90", "-rdc=true", "-o", exe, *objects, "-lcudadevrt"], cwd=folder, capture_output=True, text=True)
    log.append(r.stdout + r.stderr)
    return (os.path.join(folder, exe) if r.returncode == 0 else None), "\n".join(log)


def build_make(name: str, variant: str, work: str, args: argparse.Namespace, shim: str) -> tuple[str | None, str]:
    """The program's executable for `variant` built by its own Makefile (`make base`) with
    `NVCC` nvcc or cdpc and the variant's arguments, in a copy of the corpus of its own."""
    original, edits = REWRITE_ALL.get(name, (name, []))
    tree = os.path.join(work, "make", variant)
    folder = os.path.join(tree, "test", name)
    if not os.path.exists(os.path.join(tree, "include")):
        shutil.copytree(os.path.join(work, "klap", "include"), os.path.join(tree, "include"))
    shutil.copytree(os.path.join(work, "klap", "test", original), folder)
    cdpc = cdpc_arguments(variant, name)
    rewrites = edits + (NVCC_REWRITE.get(name, []) if cdpc is None else [])
    source = os.path.join(folder, "kernel.base.cu")
    os.chmod(source, 0o644)
    with open(source) as f:
        text = f.read()
    for old, new in rewrites:
        text = text.replace(old, new)
    with open(source, "w") as f:
        f.write(text)
    nvcc = args.nvcc if cdpc is None else " ".join([args.cdpc, *cdpc])
    include = " ".join(["-I.", "-I../../include", f"-I{shim}", COMPAT, *HOST_COMPAT.get(name, [])])
    env = dict(os.environ, CUDA_HOME=args.cuda_home)
    r = subprocess.run(["make", "base", f"NVCC={nvcc}", "ARCH=-arch=sm_90", f"INCLUDE={include}"], cwd=folder, capture_output=True, text=True, env=env)
    log = r.stdout + r.stderr
    names = [f for f in os.listdir(folder) if f.endswith(".base") and os.access(os.path.join(folder, f), os.X_OK)]
    return (os.path.join(folder, names[0]) if r.returncode == 0 and names else None), log


def build_all(root: str, programs: list[str], variants: list[str], args: argparse.Namespace, work: str) -> tuple[dict[tuple[str, str], str], list[str]]:
    """Every (program, variant)'s executable in `work` (a copy of the corpus), and the failures."""
    shutil.copytree(os.path.abspath(args.corpus), work, dirs_exist_ok=True)
    shim = os.path.join(work, "shim")
    os.makedirs(os.path.join(shim, "cub", "cub"), exist_ok=True)
    with open(os.path.join(shim, "cub", "cub", "cub.cuh"), "w") as f:
        f.write("#include <cub/cub.cuh>\n")
    exes: dict[tuple[str, str], str] = {}
    failed: list[str] = []
    for name in programs:
        for variant in variants:
            print(f"corpus-timing: building {name} {variant}", file=sys.stderr, flush=True)
            exe, log = build_make(name, variant, work, args, shim) if args.make else build(root, name, variant, work, args, shim)
            if exe:
                exes[(name, variant)] = exe
            else:
                failed.append(f"{name} {variant}: build failed: {log.strip().splitlines()[-1] if log.strip() else '?'}")
    return exes, failed


def run(exe: str, name: str, limit: float) -> tuple[float | None, str, str]:
    """The last kernel time the program printed (None if it failed or printed none), its
    output with the numbers that have a decimal point masked and the lines sorted, as
    corpus-gpu.sh compares outputs, and why it failed (its exit status and last line)."""
    try:
        r = subprocess.run([exe, *PROGRAMS[name][2]], cwd=os.path.dirname(exe), capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, "(stopped by the time limit)", f"stopped after {limit:g} s"
    text = r.stdout + r.stderr
    times = [float(t) for t in TIME.findall(text)]
    lines = [line for line in text.splitlines() if COMPARED.get(name, "") in line]
    # A time is masked whole: iostream prints 16.0000 as `16`, which the decimal mask alone
    # would leave, making one run's output differ from the others'.
    masked = "\n".join(sorted(re.sub(r"[0-9]+\.[0-9]+(e[-+]?[0-9]+)?", "#", re.sub(r"(time = )[-+0-9.e]+", r"\1#", line)) for line in lines))
    last = (text.strip().splitlines() or ["no output"])[-1][:200]
    why = f"exit {r.returncode}: {last}" if r.returncode != 0 else f"printed no time: {last}"
    return (TIME_OF.get(name, lambda ts: ts[-1])(times) if r.returncode == 0 and times else None), masked, why


def ratio_interval(a: list[float], b: list[float], rng: random.Random) -> tuple[float, float, float]:
    """median(a) / median(b) and its 95% percentile-bootstrap interval."""
    ratios = sorted(
        statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b))) for _ in range(RESAMPLES)
    )
    lo, hi = ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]
    return statistics.median(a) / statistics.median(b), lo, hi


def geomean_interval(runs: dict[str, tuple[list[float], list[float]]], rng: random.Random) -> tuple[float, float, float]:
    """The geometric mean over programs of median(a) / median(b), for `runs` = program: (a's
    times, b's times), and its 95% percentile-bootstrap interval: each resample draws every
    program's two samples with replacement, as ratio_interval does for one program."""
    def geomean(ratios: list[float]) -> float:
        return math.exp(sum(math.log(r) for r in ratios) / len(ratios))

    point = geomean([statistics.median(a) / statistics.median(b) for a, b in runs.values()])
    means = sorted(
        geomean([statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b))) for a, b in runs.values()])
        for _ in range(RESAMPLES)
    )
    return point, means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1]


def tool_versions(args: argparse.Namespace) -> tuple[str, str]:
    """nvcc's and cdpc's versions, as the report names them."""
    nvcc = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cdpc = (subprocess.run([args.cdpc, "--version"], capture_output=True, text=True).stdout.strip().splitlines() or ["cdpc (no version)"])[0]
    return nvcc, cdpc


def describe(specs: dict) -> str:
    """The cdpc arguments of each variant in `specs` (variant: None or {cdpc_args, per_program})."""
    return "; ".join(
        f"{v} `{' '.join(s['cdpc_args']) or '(none)'}`" + "".join(f" (`{' '.join(a)}` for {p})" for p, a in s["per_program"].items()) for v, s in specs.items() if s is not None
    )


def specs_of(variants: list[str]) -> dict:
    """The variants' cdpc arguments as the manifest records them."""
    return {v: {"cdpc_args": VARIANTS[v][0], "per_program": VARIANTS[v][1]} if VARIANTS[v] else None for v in variants}


def gpu() -> str | None:
    """The GPU and driver nvidia-smi names, or None without one."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None


def time_runs(programs: list[str], variants: list[str], exes: dict[tuple[str, str], str], args: argparse.Namespace, failed: list[str], built_with: str, specs: dict) -> str:
    """Runs the executables round by round and returns the report (also written to $OUT)."""
    times: dict[tuple[str, str], list[float]] = {key: [] for key in exes}
    # Each run's output, timings masked, in the order the runs were made.
    outputs: dict[tuple[str, str], list[str]] = {key: [] for key in exes}
    rng = random.Random(SEED)
    started = time.time()
    rounds = 0
    longest = 0.0
    for _ in range(args.rounds):
        elapsed = time.time() - started
        if args.deadline and rounds > 0 and elapsed + longest > args.deadline:
            break
        round_started = time.time()
        for name in programs:
            order = [v for v in variants if (name, v) in exes]
            rng.shuffle(order)
            for v in order:
                t, output, why = run(exes[(name, v)], name, args.run_limit)
                if t is None:
                    failed.append(f"{name} {v}: a run failed ({why})")
                else:
                    times[(name, v)].append(t)
                outputs[(name, v)].append(output)
        rounds += 1
        longest = max(longest, time.time() - round_started)
    elapsed = time.time() - started

    def same_as_nvcc(name: str, v: str) -> bool:
        """Whether every run's output equalled the first nvcc run's."""
        reference = outputs.get((name, "nvcc"), [])
        return bool(reference) and all(o == reference[0] for o in outputs.get((name, v), []))

    cut = f" (of {args.rounds} asked: --deadline {args.deadline:g} s)" if rounds < args.rounds else ""
    lines = [
        "# KLAP's programs: kernel times of nvcc's build and of cdpc's device code",
        "",
        f"Run by `samples/harness/corpus-timing.py` on {time.strftime('%Y-%m-%d', time.gmtime())}: {gpu()}; {built_with}.",
        f"{rounds} rounds{cut}, variants in seeded random order within each round (seed {SEED:#x}), {elapsed:.0f} s of runs.",
        "Times are the programs' own (`kernel time = X`, ms). Ratio: median(variant) / median(nvcc), below 1 is faster;",
        "95% percentile-bootstrap interval; a verdict only where the interval excludes 1.",
        "",
        "\"output = nvcc's\": every run's output equals nvcc's first run's, timings masked and lines sorted.",
        "",
        f"Variants' cdpc arguments: {describe({v: specs.get(v) for v in variants})}.",
        "",
        "| program | variant | runs | output = nvcc's | median ms | min | max | ratio to nvcc | 95% interval | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    boot = random.Random(SEED + 1)
    for name in programs:
        base = times.get((name, "nvcc"), [])
        for v in variants:
            t = times.get((name, v), [])
            if not t:
                lines.append(f"| {name} | {v} | 0 | - | - | - | - | - | - | - |")
                continue
            row = f"| {name} | {v} | {len(t)} | {'yes' if same_as_nvcc(name, v) else 'NO'} | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} |"
            if v != "nvcc" and len(base) >= 3 and len(t) >= 3 and min(base) > 0:
                r, lo, hi = ratio_interval(t, base, boot)
                verdict = "faster" if hi < 1 else "slower" if lo > 1 else "no difference shown"
                row += f" {r:.3f} | [{lo:.3f}, {hi:.3f}] | {verdict} |"
            else:
                row += " - | - | - |"
            lines.append(row)
    # Over the programs: each variant's geometric mean of ratios to nvcc, and each pair of cdpc
    # variants head to head, over the programs both were timed on, each with its interval.
    def timed(v: str) -> list[str]:
        return [n for n in programs if len(times.get((n, v), [])) >= 3 and min(times[(n, v)]) > 0]

    summary, pairs = [], []
    cdpc_variants = [v for v in variants if v != "nvcc"]
    for v in cdpc_variants:
        both = [n for n in timed(v) if n in timed("nvcc")]
        if len(both) >= 2:
            g, lo, hi = geomean_interval({n: (times[(n, v)], times[(n, "nvcc")]) for n in both}, boot)
            summary.append(f"| {v} / nvcc | {len(both)} | {g:.3f} [{lo:.3f}, {hi:.3f}] | {1 / g:.2f}x [{1 / hi:.2f}, {1 / lo:.2f}] |")
    for i, a in enumerate(cdpc_variants):
        for b in cdpc_variants[i + 1:]:
            both = [n for n in timed(a) if n in timed(b)]
            if len(both) >= 2:
                g, lo, hi = geomean_interval({n: (times[(n, b)], times[(n, a)]) for n in both}, boot)
                summary.append(f"| {b} / {a} | {len(both)} | {g:.3f} [{lo:.3f}, {hi:.3f}] | {1 / g:.2f}x [{1 / hi:.2f}, {1 / lo:.2f}] |")
            for n in both:
                r, lo, hi = ratio_interval(times[(n, b)], times[(n, a)], boot)
                verdict = f"{b} faster" if hi < 1 else f"{b} slower" if lo > 1 else "no difference shown"
                pairs.append(f"| {n} | {b} / {a} | {r:.3f} | [{lo:.3f}, {hi:.3f}] | {verdict} |")
    if summary:
        lines += [
            "",
            "Geometric means over the programs timed by both (each program's ratio of medians; 95% bootstrap interval, every",
            "program's runs resampled):",
            "",
            "| ratio | programs | geometric mean | speed-up |",
            "|---|---:|---:|---:|",
            *summary,
        ]
    if pairs:
        lines += ["", "Head to head, program by program:", "", "| program | ratio | of medians | 95% interval | verdict |", "|---|---|---:|---|---|", *pairs]
    # What "NO" means, for each variant whose output differed: its first differing run against
    # nvcc's first (the compared text: timings masked, lines sorted), so that a mismatch can be
    # told from a program's own run-to-run variation (GC, SSSP) without another GPU run.
    differences = []
    for name in programs:
        reference = outputs.get((name, "nvcc"), [])
        for v in variants:
            runs = outputs.get((name, v), [])
            if v == "nvcc" or not reference or not runs or same_as_nvcc(name, v):
                continue
            index, first = next((i, o) for i, o in enumerate(runs) if o != reference[0])
            diff = list(difflib.unified_diff(reference[0].splitlines(), first.splitlines(), "nvcc run 1", f"{v} run {index + 1}", lineterm="", n=1))
            shown = diff[:DIFF_LINES] + ([f"... {len(diff) - DIFF_LINES} more lines"] if len(diff) > DIFF_LINES else [])
            differing = sum(o != reference[0] for o in runs)
            differences += ["", f"{name} {v}: {differing} of {len(runs)} runs differ from nvcc's first; the first:", "", "```diff", *shown, "```"]
    if differences:
        lines += ["", "Differences:"] + differences
    if failed:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in sorted(set(failed))]
    report = os.path.join(os.environ.get("OUT", "."), "corpus-timing.md")
    with open(report, "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def soak_runs(programs: list[str], variants: list[str], exes: dict[tuple[str, str], str], args: argparse.Namespace, built_with: str) -> tuple[str, bool]:
    """The soak: every (program, variant) run --runs times, runs of different programs at once
    (--jobs), a program's own runs one at a time (GC writes into its outputs/ folder). A run is
    ok when it exits 0 within --run-limit and prints a time; its output (timings masked, lines
    sorted) is then compared with the outputs nvcc's runs gave. Returns the report (also
    written to $OUT/corpus-soak.md) and whether every run was ok with an output nvcc's runs
    also gave."""
    import concurrent.futures

    rng = random.Random(SEED)
    # Each program's runs, its variants interleaved in a seeded random order.
    queues = {name: [(name, v) for v in variants if (name, v) in exes for _ in range(args.runs)] for name in programs}
    for queue in queues.values():
        rng.shuffle(queue)
    tasks = [task for queue in queues.values() for task in queue]
    results: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
    begun = time.time()

    def program(name: str) -> None:
        for task in queues[name]:
            if args.deadline and time.time() - begun > args.deadline:
                return  # the rows say how many runs were made
            started = time.time()
            t, output, why = run(exes[task], name, args.run_limit)
            took = time.time() - started
            state = "ok" if t is not None else ("hung" if why.startswith("stopped after") else "failed")
            results.setdefault(task, []).append((state, output if t is not None else why, took))

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(program, programs))
    elapsed = time.time() - begun
    lines = [
        "# KLAP's programs: the soak",
        "",
        f"Run by `samples/harness/corpus-timing.py --stage soak --runs {args.runs} --jobs {args.jobs} --run-limit {args.run_limit:g}` on {time.strftime('%Y-%m-%d', time.gmtime())}: {gpu()}; {built_with}.",
        f"{sum(len(r) for r in results.values())} of {len(tasks)} runs made in {elapsed:.0f} s{f' (--deadline {args.deadline:g} s)' if args.deadline else ''}, in a seeded random order (seed {SEED:#x}); runs of different programs at once, a program's own one at a time.",
        "A run is ok when it exits 0 within the limit and prints its kernel time. \"outputs\": how many distinct outputs (timings",
        "masked, lines sorted) its ok runs gave; \"seen from nvcc\": how many of its ok runs gave an output that one of nvcc's runs gave.",
        "",
        "| program | variant | runs | ok | failed | hung | outputs | seen from nvcc | slowest run (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    clean = True
    notes = []
    for name in programs:
        reference = {o for s, o, _ in results.get((name, "nvcc"), []) if s == "ok"}
        for v in variants:
            rs = results.get((name, v), [])
            if not rs:
                continue
            ok = [o for s, o, _ in rs if s == "ok"]
            failed_runs = [o for s, o, _ in rs if s == "failed"]
            hung = sum(s == "hung" for s, _, _ in rs)
            seen = sum(o in reference for o in ok)
            clean = clean and not failed_runs and not hung and seen == len(ok)
            lines.append(f"| {name} | {v} | {len(rs)} | {len(ok)} | {len(failed_runs)} | {hung} | {len(set(ok))} | {seen} | {max(t for _, _, t in rs):.2f} |")
            if failed_runs:
                notes.append(f"- {name} {v}: first failure: {failed_runs[0]}")
    if notes:
        lines += ["", "Failures:", "", *notes]
    report = os.path.join(os.environ.get("OUT", "."), "corpus-soak.md")
    with open(report, "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines), clean


def write_bundle(path: str, work: str, exes: dict[tuple[str, str], str], failed: list[str], programs: list[str], variants: list[str], built_with: str) -> None:
    """The executables and manifest.json, as an xz-compressed tar archive at `path` (written
    beside it first, then renamed: no partial archive is left)."""
    manifest = {
        "built_with": built_with,
        "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "programs": programs,
        "variants": specs_of(variants),
        "executables": {f"{n} {v}": os.path.relpath(exe, work) for (n, v), exe in exes.items()},
        "failed": failed,
    }
    partial = path + ".partial"
    try:
        with tarfile.open(partial, "w:xz", preset=9) as tar:
            data = json.dumps(manifest, indent=1).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
            for exe in exes.values():
                tar.add(exe, arcname=os.path.relpath(exe, work))
            # What the programs read at run time, relative to their folder (GC's, SP's, SSSP's
            # and MST's graphs and formulas under inputs/; GC's outputs/): without them those
            # programs fail or time nothing on the GPU machine.
            # Each executable's folder's (a Makefile build's has its own copy).
            folders = {os.path.join(work, "klap", "test", name) for name in programs} | {os.path.dirname(exe) for exe in exes.values()}
            for program in sorted(folders):
                for data in DATA_FOLDERS:
                    folder = os.path.join(program, data)
                    if os.path.isdir(folder):
                        tar.add(folder, arcname=os.path.relpath(folder, work))
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def read_bundle(path: str, into: str) -> tuple[dict, dict[tuple[str, str], str]]:
    """The manifest and each (program, variant)'s executable, from the archive unpacked in `into`."""
    with tarfile.open(path, "r:xz") as tar:
        for member in tar.getmembers():
            if not ((member.isfile() or member.isdir()) and not os.path.isabs(member.name) and ".." not in member.name.split("/")):
                raise SystemExit(f"corpus-timing: {path} holds {member.name!r}, not one of the build stage's files")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    with open(os.path.join(into, MANIFEST)) as f:
        manifest = json.load(f)
    exes = {}
    for key, rel in manifest["executables"].items():
        name, variant = key.split(" ", 1)
        exe = os.path.join(into, rel)
        os.chmod(exe, 0o755)
        exes[(name, variant)] = exe
    return manifest, exes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--stage", choices=["all", "build", "run", "soak"], default="all")
    parser.add_argument("--runs", type=int, default=100, help="soak stage: runs of each program and variant")
    parser.add_argument("--jobs", type=int, default=7, help="soak stage: programs run at once (a program's own runs one at a time)")
    parser.add_argument("--cdpc", help="the cdpc binary (build and all)")
    parser.add_argument("--bundle", help="the archive the build stage writes and the run stage reads (.tar.xz)")
    parser.add_argument("--list", action="store_true", help="run stage: list what the archive holds and stop")
    parser.add_argument("--corpus", default="../shared/corpus")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=0, help="seconds of runs after which no new round starts when the longest round so far would overrun them (0: none)")
    parser.add_argument("--programs", default="BFS,BT,GC,SP,SSSP,QT,MST-syncwarp")
    parser.add_argument("--run-limit", type=float, default=60)
    parser.add_argument("--variants", help=f"which variants to build or time, comma-separated (default {','.join(DEFAULT_VARIANTS)}; the run stage: every one the archive holds); nvcc's always")
    parser.add_argument("--clang-block-grid", action="store_true", help=f"also {', '.join(BLOCK_GRID_VARIANTS)}")
    parser.add_argument("--make", action="store_true", help="build stage: every variant by the program's own Makefile, NVCC=nvcc or NVCC=\"cdpc ARGS\"")
    args = parser.parse_args()
    programs = [p for p in args.programs.split(",") if p]
    unknown = [p for p in programs if p not in PROGRAMS]
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    chosen = [v for v in args.variants.split(",") if v] if args.variants else None
    # The run stage takes the archive's variants, which bundle-merge.py may have renamed.
    if chosen is not None and args.stage not in ("run", "soak") and any(v not in VARIANTS for v in chosen):
        parser.error(f"unknown variants: {', '.join(v for v in chosen if v not in VARIANTS)} (known: {', '.join(VARIANTS)})")
    if args.stage not in ("run", "soak") and not args.cdpc:
        parser.error(f"--stage {args.stage} needs --cdpc")
    if args.stage != "all" and not args.bundle:
        parser.error(f"--stage {args.stage} needs --bundle")
    root = os.getcwd()
    # A program without a GPU may still exit 0 and print a time of 0 (GC does).
    if args.stage != "build" and not args.list and gpu() is None:
        print("corpus-timing: no GPU (nvidia-smi lists none): the run needs one (--stage build builds without; --list shows an archive)", file=sys.stderr)
        return 2

    if args.stage in ("run", "soak"):
        unpacked = tempfile.mkdtemp()
        try:
            manifest, exes = read_bundle(args.bundle, unpacked)
            held = list(manifest["variants"])
            variants = ["nvcc", *[v for v in (chosen or held) if v != "nvcc"]]
            missing = [v for v in variants if v not in held] + [p for p in programs if p not in manifest["programs"]]
            if missing:
                parser.error(f"the archive was built without {', '.join(missing)} (it holds {', '.join(manifest['programs'])}; {', '.join(held)})")
            exes = {k: e for k, e in exes.items() if k[0] in programs and k[1] in variants}
            failed = [f for f in manifest["failed"] if f.split(" ", 1)[0] in programs]
            if args.list:
                print(f"{args.bundle}: built {manifest['built']} with {manifest['built_with']}")
                for name in programs:
                    print(f"  {name}: " + ", ".join(f"{v}" + ("" if (name, v) in exes else " (FAILED to build)") for v in variants))
                for f in failed:
                    print(f"  failed: {f}")
                return 0
            if args.stage == "soak":
                report, clean = soak_runs(programs, variants, exes, args, manifest["built_with"])
                print(report)
                return 0 if clean else 1
            print(time_runs(programs, variants, exes, args, failed, manifest["built_with"], manifest["variants"]))
            return 0
        finally:
            shutil.rmtree(unpacked, ignore_errors=True)

    variants = ["nvcc", *[v for v in (chosen or DEFAULT_VARIANTS + (BLOCK_GRID_VARIANTS if args.clang_block_grid else [])) if v != "nvcc"]]
    if args.clang_block_grid and chosen:
        variants += [v for v in BLOCK_GRID_VARIANTS if v not in variants]
    args.cdpc = os.path.abspath(args.cdpc)
    if "CUDA_HOME" in os.environ:
        args.cuda_home = os.environ["CUDA_HOME"]
    else:
        args.cuda_home = "/usr/local/cuda" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else os.path.join(root, ".cuda/nvidia/cu13")
    args.nvcc = os.path.join(args.cuda_home, "bin", "nvcc")
    work = tempfile.mkdtemp()
    try:
        exes, failed = build_all(root, programs, variants, args, work)
        nvcc_version, cdpc_version = tool_versions(args)
        built_with = f"{nvcc_version}; {cdpc_version}"
        if args.stage == "build":
            os.makedirs(os.path.dirname(os.path.abspath(args.bundle)), exist_ok=True)
            write_bundle(args.bundle, work, exes, failed, programs, variants, built_with)
            print(f"corpus-timing: {len(exes)} executables in {args.bundle} ({os.path.getsize(args.bundle) / 2**20:.1f} MiB)")
            for f in failed:
                print(f"  failed: {f}")
            return 1 if failed else 0
        print(time_runs(programs, variants, exes, args, failed, built_with, specs_of(variants)))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
