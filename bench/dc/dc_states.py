#!/usr/bin/env python3
"""`cdpc -dc` against `nvcc -dc` on the corpus files, in every state cdpc's cache can be in.

Per file and round (interleaved: nvcc, then cdpc's four compilations, in a new cache folder each
round):

- empty:  nothing in the cache (the first `.cu` file a machine ever compiles with cdpc);
- project: the file's first compilation in a project of its own, after a file of another
          project: the cache holds what a compilation of another file with other `-I` folders
          (one empty folder for all of the file's) and the same other options left;
- first:  the file's first compilation in a project whose other files were compiled before: the
          cache holds what a compilation of another file with the same options left (Clang's
          CUDA wrapper's precompiled headers, made by the filler after a first compilation), and
          nothing of this file;
- second: the file's second compilation (its preambles are made after it);
- warm:   the third, everything from the cache.

cdpc's fillers (the detached processes that make the cache's headers after a compilation) are
waited for after each cdpc run, outside its time (an exclusive `flock` on the folder's
`fill.lock`), as `cargo xtask bench-compile` does. Options: tests/corpus-programs.txt's (cdpc's
own words of the table only to cdpc); a file nvcc refuses is left out. Wall-clock and CPU seconds
(user + system of the process tree) per run; the report gives medians, nvcc/cdpc for each state,
the geometric mean over the files and each round's own, and checks that every object cdpc wrote
of a file is the same bytes.

    python3 bench/dc/dc_states.py --cdpc target/release/cdpc --nvcc $(which nvcc) \\
        --corpus ../shared/corpus --rounds 5 [--only NAME ...] [--json times.json]
"""
import argparse, filecmp, json, math, os, resource, shutil, statistics, subprocess, sys, tempfile, time

STATES = ["empty", "project", "first", "second", "warm"]
OTHER = "__global__ void __dc_states_other(int *p) { p[threadIdx.x] = 1; }\n"


def table(root, corpus, shim, only):
    out = []
    for line in open(os.path.join(root, "tests/corpus-programs.txt")):
        if not line.strip() or line.startswith("#"):
            continue
        w = line.split()
        if only and w[0] not in only:
            continue
        path = os.path.join(corpus, w[1])
        common = ["-I" + os.path.dirname(path)] + ["-I" + os.path.join(corpus, d) for d in w[3:] if not d.startswith("-")]
        common += ["-I" + shim, "-DcudaThreadSynchronize=cudaDeviceSynchronize"]
        if w[2] == "per-thread":
            common += ["--default-stream", "per-thread"]
        own = [d for d in w[3:] if d.startswith("-")]
        out.append((w[0], path, common, own))
    return out


def buildable(root, corpus, work, nvcc, only):
    """table()'s files that nvcc builds (`nvcc -dc` of each, once), with the shim for the
    samples' `<cub/cub.cuh>` spelling made in `work`; a file nvcc refuses is named and left out."""
    shim = os.path.join(work, "shim")
    os.makedirs(os.path.join(shim, "cub/cub"), exist_ok=True)
    with open(os.path.join(shim, "cub/cub/cub.cuh"), "w") as f:
        f.write("#include <cub/cub.cuh>\n")
    files = []
    for name, path, common, own in table(root, corpus, shim, only):
        probe = subprocess.run([nvcc, "-dc", "-arch=sm_90", *common, path, "-o", os.path.join(work, "probe.o")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode:
            print(f"# {name}: nvcc refuses it, left out", flush=True)
            continue
        files.append((name, path, common, own))
    return files


def timed(cmd, env=None, cwd=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{p.stderr.decode(errors='replace')[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def wait_for_fillers(cache):
    lock = os.path.join(cache, "fill.lock")
    if os.path.isdir(cache):
        subprocess.run(["flock", "-x", lock, "true"])


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cdpc", required=True)
    ap.add_argument("--nvcc", required=True)
    ap.add_argument("--corpus", default="../shared/corpus")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tempfile.mkdtemp(prefix="dc-states-")
    try:
        out = os.path.join(work, "out")
        os.makedirs(out)
        os.makedirs(os.path.join(work, "elsewhere"))
        files = buildable(root, os.path.abspath(args.corpus), work, args.nvcc, args.only)
        times = {}
        for name, path, common, own in files:
            # The other file of the project: beside this one's copy, with the same options.
            other = os.path.join(work, f"{name}-other.cu")
            with open(other, "w") as f:
                f.write(OTHER)
            for r in range(args.rounds):
                times.setdefault((name, "nvcc"), []).append(timed([args.nvcc, "-dc", "-arch=sm_90", *common, path, "-o", f"{out}/{name}-nvcc.o"]))
                cache = os.path.join(work, "cache")
                shutil.rmtree(cache, ignore_errors=True)
                env = dict(os.environ, CDPC_CACHE_DIR=cache)
                for var in ("CDPC_PREAMBLE", "CDPC_CACHE_BACKGROUND"):
                    env.pop(var, None)
                cdpc = [args.cdpc, "-dc", "-arch=sm_90", *common, *own]
                # empty, then the same in a cache the other file's compilation filled.
                times.setdefault((name, "empty"), []).append(timed([*cdpc, path, "-o", f"{out}/{name}-empty.o"], env))
                wait_for_fillers(cache)
                shutil.rmtree(cache, ignore_errors=True)
                elsewhere = [a for a in cdpc if not a.startswith("-I")] + ["-I" + os.path.join(work, "elsewhere")]
                timed([*elsewhere, other, "-o", f"{out}/{name}-elsewhere.o"], env)
                wait_for_fillers(cache)
                times.setdefault((name, "project"), []).append(timed([*cdpc, path, "-o", f"{out}/{name}-project.o"], env))
                wait_for_fillers(cache)
                shutil.rmtree(cache, ignore_errors=True)
                timed([*cdpc, other, "-o", f"{out}/{name}-other.o"], env)
                wait_for_fillers(cache)
                for state in ["first", "second", "warm"]:
                    times.setdefault((name, state), []).append(timed([*cdpc, path, "-o", f"{out}/{name}-{state}.o"], env))
                    wait_for_fillers(cache)
                print(f"{name} round {r}: load {os.getloadavg()[0]:.1f}: " + " ".join(f"{k[1]} {v[-1][0]:.2f}" for k, v in times.items() if k[0] == name), flush=True)
            objects = [f"{out}/{name}-{s}.o" for s in STATES]
            same = all(filecmp.cmp(objects[0], o, shallow=False) for o in objects[1:])
            print(f"# {name}: cdpc's {len(objects)} objects {'the same bytes' if same else 'DIFFER'}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"|".join(k): v for k, v in times.items()}, f)
        names = [f[0] for f in files if (f[0], "nvcc") in times]
        print("\n| file | nvcc -dc (s) | " + " | ".join(f"cdpc {s} (s) | nvcc/cdpc" for s in STATES) + " |")
        print("|---|---:|" + "---:|---:|" * len(STATES))
        ratios = {s: [] for s in STATES}
        for n in names:
            nv = statistics.median(t[0] for t in times[(n, "nvcc")])
            row = [n, f"{nv:.2f}"]
            for s in STATES:
                m = statistics.median(t[0] for t in times[(n, s)])
                ratios[s].append(nv / m)
                row += [f"{m:.2f}", f"{nv / m:.2f}x"]
            print("| " + " | ".join(row) + " |")
        for s in STATES:
            per_round = [gm([times[(n, "nvcc")][r][0] / times[(n, s)][r][0] for n in names]) for r in range(args.rounds)]
            print(f"{s}: geometric mean {gm(ratios[s]):.2f}x, rounds {', '.join(f'{x:.2f}' for x in per_round)}, slowest file {min(ratios[s]):.2f}x ({names[ratios[s].index(min(ratios[s]))]})")
        print("\nCPU seconds, medians: " + "; ".join(f"{n}: nvcc {statistics.median(t[1] for t in times[(n, 'nvcc')]):.2f}, " + ", ".join(f"{s} {statistics.median(t[1] for t in times[(n, s)]):.2f}" for s in STATES) for n in names))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
