"""err_pending_limit: how many children ran and how many launches were refused, per build.

One process per build (the sample poisons nothing, but the limits are per context): the
manifest's limits (32 pending launches, a 1 MiB heap), parent<<<128, 256>>>, RUNS runs, each
with zeroed buffers; prints the median time (events around launch and sync), failures[0] and
ran[0] per run. Usage: python3 pending.py CUBIN RUNS
"""
import sys, statistics
import cupy as cp
rt = cp.cuda.runtime
rt.deviceSetLimit(0x04, 32)          # cudaLimitDevRuntimePendingLaunchCount
rt.deviceSetLimit(0x02, 1 << 20)     # cudaLimitMallocHeapSize
mod = cp.RawModule(path=sys.argv[1])
parent = mod.get_function("parent")
runs = int(sys.argv[2])
rows = []
for _ in range(runs):
    codes = cp.zeros(32768, cp.int32); fail = cp.zeros(1, cp.uint32); ran = cp.zeros(1, cp.uint32)
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record(); parent((128,), (256,), (codes, fail, ran, cp.int64(200000))); e.record(); e.synchronize()
    rows.append((cp.cuda.get_elapsed_time(s, e), int(fail.get()[0]), int(ran.get()[0])))
ms = [r[0] for r in rows]; f = [r[1] for r in rows]; r = [r[2] for r in rows]
print(f"ms median {statistics.median(ms):.3f} min {min(ms):.3f} | refused median {statistics.median(f)} "
      f"[{min(f)}, {max(f)}] | children ran median {statistics.median(r)} [{min(r)}, {max(r)}]")
