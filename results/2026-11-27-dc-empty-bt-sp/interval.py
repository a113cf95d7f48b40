#!/usr/bin/env python3
"""nvcc/cdpc for the empty cache state of times.json (bench/dc/dc_states.py --json), with a
95% percentile-bootstrap interval over the rounds (2000 resamples, seed 1): the ratio of the
medians, each resample drawing rounds with replacement.

    python3 results/2026-11-27-dc-empty-bt-sp/interval.py results/2026-11-27-dc-empty-bt-sp/times.json
"""
import json, random, statistics, sys

times = json.load(open(sys.argv[1]))
random.seed(1)
for name in sorted({k.split("|")[0] for k in times}):
    nvcc = [t[0] for t in times[f"{name}|nvcc"]]
    for state in ["empty", "project", "first", "second", "warm"]:
        cdpc = [t[0] for t in times[f"{name}|{state}"]]
        ratio = statistics.median(nvcc) / statistics.median(cdpc)
        draws = []
        for _ in range(2000):
            pick = [random.randrange(len(nvcc)) for _ in nvcc]
            draws.append(statistics.median([nvcc[i] for i in pick]) / statistics.median([cdpc[i] for i in pick]))
        draws.sort()
        print(f"{name} {state}: nvcc/cdpc {ratio:.2f}x [{draws[49]:.2f}, {draws[1949]:.2f}], {len(nvcc)} rounds")
