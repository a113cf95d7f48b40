# Usage: PTXAS=<ptxas> python3 CHECKOUT/bench/ptxas/gencode_bench.py ROUNDS, beside a folder
# gencode/ of NAME_80.ptx and NAME_90.ptx (`cdpc -dc -arch=sm_XX FILE --emit ptx`).
# Two architectures' ptxas -c of one module: one after the other, as a -gencode build ran
# them, against both at once, as the driver's threads now run them.
import subprocess, time, os, sys, glob, statistics, math
ptxas = os.environ.get("PTXAS", "ptxas")
env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864")
names = sorted({f[len("gencode/"):-len("_80.ptx")] for f in glob.glob("gencode/*_80.ptx")})
def cmd(n, a): return [ptxas, f"-arch=sm_{a}", "-c", "-O3", "-o", f"/tmp/{n}_{a}.o", f"gencode/{n}_{a}.ptx"]
def seq(n):
    t = time.perf_counter()
    for a in (80, 90): subprocess.run(cmd(n, a), env=env, check=True)
    return time.perf_counter() - t
def par(n):
    t = time.perf_counter()
    ps = [subprocess.Popen(cmd(n, a), env=env) for a in (80, 90)]
    for p in ps: assert p.wait() == 0
    return time.perf_counter() - t
rounds = int(sys.argv[1]); ratios = []
for n in names:
    seq(n); par(n)
    s, p = [], []
    for r in range(rounds):
        for f in ((seq, par) if r % 2 == 0 else (par, seq)):
            (s if f is seq else p).append(f(n))
    a, b = statistics.median(s), statistics.median(p); ratios.append(a / b)
    print(f"{n:24s} sequential {a*1000:7.1f} ms  together {b*1000:7.1f} ms  {a/b:4.2f}x")
print("geometric mean", round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3), os.getloadavg())
