"""`-dc` with an empty cache: cdpc before and after the device side leaves out Clang's texture
intrinsics, against nvcc, interleaved (the order rotated each round).

    python3 bench/dc/empty_state.py OLD_CDPC NEW_CDPC NVCC ROUNDS FILE...

Reads bench/dc/dc_states.py's table (tests/corpus-programs.txt, the Makefiles' options) and its
timing; each cdpc run gets a new cache folder, and its filler (the process that makes the
headers after the output) is ended (KILL_FILLERS=1) or waited for, outside the time. CORPUS
names the corpus folder (default ../shared/corpus beside the checkout).
Prints every run and, per file, the medians and nvcc/cdpc with a 95% bootstrap interval over
the rounds (ratio of medians, 4,000 resamples).
"""
import os, random, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dc_states as d

old, new, nvcc, rounds, names = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
work = tempfile.mkdtemp()
shim = os.path.join(work, "shim")
os.makedirs(os.path.join(shim, "cub/cub"))
open(os.path.join(shim, "cub/cub/cub.cuh"), "w").write("#include <cub/cub.cuh>\n")
files = d.table(root, os.environ.get("CORPUS", os.path.join(root, "../shared/corpus")), shim, names)
times = {}
for r in range(rounds):
    for name, path, common, own in files:
        runs = [("nvcc", [nvcc, "-dc", "-arch=sm_90", *common, path, "-o", f"{work}/n.o"]),
                ("old", [old, "-dc", "-arch=sm_90", *common, *own, path, "-o", f"{work}/o.o"]),
                ("new", [new, "-dc", "-arch=sm_90", *common, *own, path, "-o", f"{work}/c.o"])]
        k = r % 3
        for label, cmd in runs[k:] + runs[:k]:
            env = dict(os.environ)
            cache = tempfile.mkdtemp(dir=work)
            env["CDPC_CACHE_DIR"] = cache
            wall, cpu = d.timed(cmd, env=env)
            if label != "nvcc" and os.environ.get("KILL_FILLERS") == "1":
                subprocess.run(["pkill", "-x", os.path.basename(cmd[0])[:15]])
            d.wait_for_fillers(cache)
            times.setdefault((name, label), []).append(wall)
            print(f"round {r} {name} {label} {wall:.3f} s", flush=True)
rng = random.Random(1)
for name, *_ in files:
    nv, o, n = (times[(name, l)] for l in ("nvcc", "old", "new"))
    def ratio(a, b, n_boot=4000):
        point = statistics.median(a) / statistics.median(b)
        idx = range(len(a)); boots = []
        for _ in range(n_boot):
            s = [rng.choice(idx) for _ in idx]
            boots.append(statistics.median([a[i] for i in s]) / statistics.median([b[i] for i in s]))
        boots.sort()
        return f"{point:.2f}x [{boots[int(0.025 * n_boot)]:.2f}, {boots[int(0.975 * n_boot)]:.2f}]"
    print(f"| {name} | {statistics.median(nv):.3f} | {statistics.median(o):.3f} | {statistics.median(n):.3f} | {ratio(nv, o)} | {ratio(nv, n)} | {ratio(o, n)} |")
