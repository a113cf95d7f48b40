# ptxas -c of each sample's PTX (sm_90) without and with -split-compile 2, interleaved and
# alternating which goes first; prints each file's medians (ms) and their ratio.
# Usage: PTXAS=<ptxas> python3 CHECKOUT/bench/ptxas/split_bench.py ROUNDS, in a folder of the
# samples' PTX.
import subprocess, time, os, sys, glob, statistics
ptxas = os.environ.get("PTXAS", "ptxas")
env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864")
files = sorted(glob.glob("*.ptx"))
rounds = int(sys.argv[1])
res = {f: {1: [], 2: []} for f in files}
def run(f, s):
    args = [ptxas, "-arch=sm_90", "-c", "-O3", "-o", "/tmp/sb.o", f]
    if s > 1: args[1:1] = ["-split-compile", str(s)]
    t = time.perf_counter(); subprocess.run(args, env=env, check=True); return time.perf_counter() - t
for f in files: run(f, 1); run(f, 2)
for r in range(rounds):
    for f in files:
        for s in ((1, 2) if r % 2 == 0 else (2, 1)):
            res[f][s].append(run(f, s))
tot1 = tot2 = 0; ratios = []
for f in files:
    a, b = statistics.median(res[f][1]), statistics.median(res[f][2])
    tot1 += a; tot2 += b; ratios.append(a / b)
    print(f"{f:32s} {a*1000:7.1f} {b*1000:7.1f} {a/b:5.2f}")
import math
print("sum (s) without, with", round(tot1, 3), round(tot2, 3), "geometric mean of the ratios", round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3), os.getloadavg())
