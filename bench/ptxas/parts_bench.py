# cdpc FILE -o FILE.cubin by default (a large module's PTX assembled in parts at the same time,
# toolchain/ptx_parts.rs) against `--split-compile 1` (the module whole), interleaved and
# alternating which goes first; prints each file's parts, medians (ms) and their ratio, and the
# geometric mean. BUSY=1 keeps one core busy with a spinning process meanwhile (a parallel
# build's other job). FLAGS: more options for every run (FLAGS=-dc: relocatable objects, whose
# parts nvlink -r joins).
# Usage: CDPC=target/release/cdpc python3 bench/ptxas/parts_bench.py ROUNDS FILE...
import math, os, statistics, subprocess, sys, tempfile, time
cdpc = os.environ.get("CDPC", "target/release/cdpc")
rounds, files = int(sys.argv[1]), sys.argv[2:]
extra = os.environ.get("FLAGS", "").split()
out = os.path.join(tempfile.mkdtemp(), "x.o" if "-dc" in extra else "x.cubin")
busy = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if os.environ.get("BUSY") == "1" else None
def run(f, flags):
    t = time.perf_counter(); subprocess.run([cdpc, f, "-o", out] + extra + flags, check=True, stderr=subprocess.DEVNULL); return time.perf_counter() - t
def parts(f):
    log = subprocess.run([cdpc, f, "-o", out, "-v"] + extra, check=True, capture_output=True, text=True).stderr
    return sum(1 for l in log.splitlines() if "ptxas -arch" in l and not l.split()[0].endswith("nvcc"))
try:
    # A file the build refuses (a `-dc` host object of a kernel that takes a function pointer)
    # is left out, with its name.
    ok = []
    for f in files:
        if subprocess.run([cdpc, f, "-o", out] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            ok.append(f)
        else:
            print(f"{f:40s} refused by the build, left out")
    files = ok
    res = {f: ([], []) for f in files}
    for f in files: run(f, []); run(f, ["--split-compile", "1"])
    for r in range(rounds):
        for f in files:
            order = ((0, []), (1, ["--split-compile", "1"]))
            for i, flags in (order if r % 2 == 0 else order[::-1]):
                res[f][i].append(run(f, flags))
    ratios = []
    for f in files:
        a, b = statistics.median(res[f][0]), statistics.median(res[f][1])
        ratios.append(b / a)
        print(f"{f:40s} parts {parts(f)}  default {a*1000:7.1f}  whole {b*1000:7.1f}  whole/default {b/a:5.2f}")
    print("geometric mean of whole/default", round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3), "load", os.getloadavg(), "busy core" if busy else "idle")
finally:
    if busy: busy.kill()
