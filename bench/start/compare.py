#!/usr/bin/env python3
"""Start-up cost of two cdpc binaries, interleaved run by run.

    python3 bench/start/compare.py OLD_CDPC NEW_CDPC [--rounds N] [--seed S]

From the repository root (the samples and the checkout's .cuda/ tools). Three commands per
binary: `--version` (start and exit), hello.cdp to PTX (no NVIDIA tool) and hello.cdp to a
cubin (ptxas and nvlink). Each round runs every command once with each binary, in an order
shuffled per round; the table gives each binary's median wall-clock time and the ratio of the
medians, NEW over OLD, with a 95% bootstrap interval (resampling the rounds).
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "--version": ["--version"],
    "hello.cdp to PTX": ["samples/hello.cdp", "--emit", "ptx", "-o", "{out}/h.ptx"],
    "hello.cdp to a cubin": ["samples/hello.cdp", "-o", "{out}/h.cubin"],
}


def timed(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr.decode(errors='replace')}")
    return elapsed


def interval(old, new, rng, draws=2000):
    ratios = []
    n = len(old)
    for _ in range(draws):
        pick = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(new[i] for i in pick) / statistics.median(old[i] for i in pick))
    ratios.sort()
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--seed", type=int, default=20261201)
    a = p.parse_args()
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as out:
        runs = [(name, which, [exe] + [w.format(out=out) for w in args]) for name, args in COMMANDS.items() for which, exe in (("old", a.old), ("new", a.new))]
        for _, _, argv in runs:
            timed(argv)
        times = {(name, which): [] for name, which, _ in runs}
        for _ in range(a.rounds):
            rng.shuffle(runs)
            for name, which, argv in runs:
                times[(name, which)].append(timed(argv))
    print(f"{a.rounds} rounds, {os.cpu_count()} logical CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    print("| command | old median (ms) | new median (ms) | new / old [95% interval] |")
    print("|---|---:|---:|---:|")
    for name in COMMANDS:
        old, new = times[(name, "old")], times[(name, "new")]
        low, high = interval(old, new, rng)
        ratio = statistics.median(new) / statistics.median(old)
        print(f"| {name} | {statistics.median(old) * 1e3:.1f} | {statistics.median(new) * 1e3:.1f} | {ratio:.3f} [{low:.3f}, {high:.3f}] |")


if __name__ == "__main__":
    main()
