#!/usr/bin/env python3
"""Two cdpc binaries' compile times, file by file, interleaved (BENCHMARKS.md, "Two fixed
costs of a compilation taken out").

    python3 bench/compile-ab/ab.py OLD NEW FILE,FILE,... ROUNDS

Each binary gets a cache folder of its own (/tmp/ab-cache-old, /tmp/ab-cache-new; remove them
for a cold start), warmed by three compilations of each file with the cache's fillers waited
for (CDPC_CACHE_BACKGROUND=0); then ROUNDS rounds, each file compiled to a cubin by both, the
one that runs first alternating from round to round. Prints each file's median wall-clock
time per binary, their ratio and the geometric mean of the ratios. Run OLD against a copy of
itself to see the method's noise.
"""
import os, subprocess, sys, time, statistics, random
old, new = sys.argv[1], sys.argv[2]
files = sys.argv[3].split(',')
rounds = int(sys.argv[4])
env = dict(os.environ)
def run(binary, cache, f, bg):
    e = dict(env, CDPC_CACHE_DIR=cache, CDPC_CACHE_BACKGROUND=bg)
    t = time.perf_counter()
    r = subprocess.run([binary, f, '-o', '/tmp/ab.cubin'], env=e, capture_output=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        print('FAIL', binary, f, r.stderr[:300]); sys.exit(1)
    return dt
caches = {old: '/tmp/ab-cache-old', new: '/tmp/ab-cache-new'}
for b in (old, new):
    for f in files:
        for _ in range(3):
            run(b, caches[b], f, '0')
times = {(b, f): [] for b in (old, new) for f in files}
for i in range(rounds):
    for f in files:
        order = [old, new] if i % 2 == 0 else [new, old]
        for b in order:
            times[(b, f)].append(run(b, caches[b], f, '0'))
print(f"{'file':40} {'old ms':>8} {'new ms':>8} {'new/old':>8}")
logs = []
for f in files:
    o = statistics.median(times[(old, f)]); n = statistics.median(times[(new, f)])
    logs.append(n / o)
    print(f"{f:40} {o*1000:8.1f} {n*1000:8.1f} {n/o:8.3f}")
import math
print('geometric mean new/old', math.exp(sum(map(math.log, logs)) / len(logs)))
