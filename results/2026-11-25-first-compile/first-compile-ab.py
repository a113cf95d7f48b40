#!/usr/bin/env python3
"""First compilation of each corpus file, three ways, interleaved round by round: cdpc as
built (the device side skips the C++ standard library's host bodies), the same binary with
CDPC_CLANG_SKIP_BODIES=0 (the whole parse), and nvcc -rdc=true -cubin. bench-compile's
commands and options; cdpc with the wrapper's header cached and CDPC_PREAMBLE=0, as
bench-compile's "first compile" column. Run from the repository root."""
import os, statistics, subprocess, sys, time, math
ROOT = os.getcwd()
CORPUS = os.path.join(ROOT, "../shared/corpus")
CU = os.path.join(ROOT, ".cuda/nvidia/cu13")
CDPC = os.path.join(ROOT, "target/release/cdpc")
NVCC = os.path.join(CU, "bin/nvcc")
OUT = "/tmp/ab"
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
shim = os.path.join(OUT, "shim")
os.makedirs(os.path.join(shim, "cub/cub"), exist_ok=True)
open(os.path.join(shim, "cub/cub/cub.cuh"), "w").write("#include <cub/cub.cuh>\n")
cache = os.path.join(OUT, "cache")
jobs = []
for line in open(os.path.join(ROOT, "tests/corpus-programs.txt")):
    w = line.split()
    if not w or line.startswith("#") or w[0] == "QT":
        continue
    path = os.path.join(CORPUS, w[1])
    args = ["-I" + os.path.dirname(path)] + ["-I" + os.path.join(CORPUS, d) for d in w[3:]] + ["-I" + shim, "-DcudaThreadSynchronize=cudaDeviceSynchronize"]
    if w[2] == "per-thread":
        args += ["--default-stream", "per-thread"]
    jobs.append((w[0], path, args))
env = dict(os.environ, CUDA_HOME=CU, CDPC_CACHE_DIR=cache)
def run(cmd, extra):
    t = time.perf_counter()
    subprocess.run(cmd, env=dict(env, **extra), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t
ways = {
    "skip": lambda n, p, a: run([CDPC, "-dc", "--emit", "obj", *a, p, "-o", f"{OUT}/{n}.o"], {"CDPC_PREAMBLE": "0"}),
    "whole": lambda n, p, a: run([CDPC, "-dc", "--emit", "obj", *a, p, "-o", f"{OUT}/{n}.o"], {"CDPC_PREAMBLE": "0", "CDPC_CLANG_SKIP_BODIES": "0"}),
    "nvcc": lambda n, p, a: run([NVCC, "-x", "cu", "-rdc=true", "-cubin", "-arch=sm_90", p, "-o", f"{OUT}/{n}.nv.o", *[x for x in a if x != "--default-stream" and x != "per-thread"]] + (["--default-stream", "per-thread"] if "per-thread" in a else []), {}),
}
print(f"{ROUNDS} rounds; medians in seconds")
ratios = {"skip": [], "whole": []}
print("| file | cdpc, skipped bodies | cdpc, whole parse | nvcc | nvcc/cdpc skipped | nvcc/cdpc whole |")
print("|---|---:|---:|---:|---:|---:|")
for n, p, a in jobs:
    for w in ways.values():  # warm-up: the wrapper's header, the file system
        w(n, p, a)
    times = {k: [] for k in ways}
    for _ in range(ROUNDS):
        for k, w in ways.items():
            times[k].append(w(n, p, a))
    m = {k: statistics.median(v) for k, v in times.items()}
    ratios["skip"].append(m["nvcc"] / m["skip"]); ratios["whole"].append(m["nvcc"] / m["whole"])
    print(f"| {n} | {m['skip']:.3f} | {m['whole']:.3f} | {m['nvcc']:.3f} | {m['nvcc']/m['skip']:.1f}x | {m['nvcc']/m['whole']:.1f}x |", flush=True)
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"geometric mean nvcc/cdpc: skipped bodies {g(ratios['skip']):.2f}x, whole parse {g(ratios['whole']):.2f}x")
