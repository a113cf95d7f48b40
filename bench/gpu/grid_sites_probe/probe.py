"""How many grids reach the device runtime for probe.cu's three launch sites.

On the GPU machine (CuPy), from the repository root, with build/gpu/probe carried:

    python3 bench/gpu/grid_sites_probe/probe.py build/gpu/probe/*.cubin

For each cubin and size: whether every launch ran (counter == n * 32, every launch counted
once), the number of distinct grids its child blocks ran in (%gridid), and the median time of
the launch tree over 20 runs after 2 warm-up runs (CUDA events around the parent's launch).
"""
import sys

import cupy as cp
import numpy as np

SLOTS = 8192  # probe.cu's
PENDING_LAUNCH_COUNT = 4  # cudaLimitDevRuntimePendingLaunchCount


def run(function, n):
    counter = cp.zeros(1, dtype=cp.uint32)
    seen = cp.zeros(SLOTS, dtype=cp.uint32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    function((n // 256,), (256,), (counter, seen))
    end.record()
    end.synchronize()
    seen = seen.get()
    return int(counter.get()[0]), int(seen.sum()), int(np.count_nonzero(seen)), cp.cuda.get_elapsed_time(start, end)


def main(cubins):
    cp.cuda.runtime.deviceSetLimit(PENDING_LAUNCH_COUNT, 1 << 16)
    print("| cubin | launches | all ran | grids run (distinct %gridid) | median ms |")
    print("|---|---:|---|---:|---:|")
    for path in cubins:
        parent = cp.RawModule(path=path).get_function("parent")
        for n in (1024, 8192):
            for _ in range(2):
                run(parent, n)
            runs = [run(parent, n) for _ in range(20)]
            ok = all(c == n * 32 and counted == n for c, counted, _, _ in runs)
            grids = sorted({g for _, _, g, _ in runs})
            ms = float(np.median([t for _, _, _, t in runs]))
            print(f"| {path} | {n} | {'yes' if ok else 'NO'} | {', '.join(map(str, grids))} | {ms:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
