"""Summarises bench/programs/run.sh's times.txt: per kernel and build, the median time, its
ratio to nvcc's whole-program build, a bootstrap 95% interval of that ratio, and whether the
checksums equal nvcc's."""
import random
import statistics
import sys
from collections import defaultdict

times = defaultdict(list)
sums = defaultdict(set)
for line in open(sys.argv[1]):
    build, _round, kernel, ms, checksum = line.split()
    times[(build, kernel)].append(float(ms))
    sums[(build, kernel)].add(checksum)

random.seed(1)
builds = ["nvcc-whole", "cdpc-whole", "nvcc-rdc", "cdpc-rdc"]
kernels = sorted({k for _, k in times})
print("| kernel | build | median ms | / nvcc whole | 95% interval | checksum as nvcc's |")
print("|---|---|---|---|---|---|")
for kernel in kernels:
    base = times[("nvcc-whole", kernel)]
    for build in builds:
        t = times[(build, kernel)]
        ratio = statistics.median(t) / statistics.median(base)
        boot = sorted(
            statistics.median(random.choices(t, k=len(t))) / statistics.median(random.choices(base, k=len(base)))
            for _ in range(2000)
        )
        same = "yes" if sums[(build, kernel)] == sums[("nvcc-whole", kernel)] else "NO"
        print(f"| {kernel} | {build} | {statistics.median(t):.4f} | {ratio:.3f} | [{boot[50]:.3f}, {boot[1949]:.3f}] | {same} |")
