#!/usr/bin/env python3
"""A project's build with `make -jN`: the corpus files as one project's objects, nvcc against cdpc.

What `dc_states.py` measures file by file, here as a build does it: every corpus file nvcc
builds is one object of a Makefile (`$(NVCC) -dc -arch=sm_90 ...`), built with `make -jN` from
nothing. Per round, interleaved, each in a new folder:

- nvcc:      `make -jN NVCC=nvcc`;
- no cache:  cdpc with `CDPC_CACHE_DIR=` (no precompiled header is made or used: no fillers);
- cold:      cdpc in an empty cache folder: the compilations start their fillers (detached
             processes that make the cache's headers after a compilation, one at a time per
             folder) while the build goes on; the build's time, then how long the fillers ran
             on after make ended;
- rebuild:   the same folder after every source is touched (the files' second sight: their
             preambles are made by fillers); then again (warm).

Fillers are waited for after each cdpc build (outside its time), so that each build finds the
cache as the one before left it. Every build must succeed; each cdpc build's objects are
compared with the cold build's byte for byte. Wall-clock seconds; CPU seconds are those of
make's process tree (fillers are detached, so their CPU is not in it).

    python3 bench/dc/make_j.py --cdpc target/release/cdpc --nvcc $(which nvcc) \\
        --corpus ../shared/corpus --jobs 2 --rounds 3
"""
import argparse, filecmp, os, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dc_states import buildable, timed, wait_for_fillers  # noqa: E402

BUILDS = ["nvcc", "no cache", "cold", "rebuild", "warm"]


def makefile(files, out):
    lines = [f"all: {' '.join(f'{out}/{n}.o' for n, *_ in files)}", ""]
    for name, path, common, own in files:
        flags = " ".join(common)
        lines += [f"{out}/{name}.o: {path}", f"\t$(NVCC) -dc -arch=sm_90 {flags} $(OWN_{name}) {path} -o $@", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cdpc", required=True)
    ap.add_argument("--nvcc", required=True)
    ap.add_argument("--corpus", default="../shared/corpus")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cdpc, nvcc = os.path.abspath(args.cdpc), os.path.abspath(args.nvcc)
    work = tempfile.mkdtemp(prefix="make-j-")
    try:
        files = []
        for name, path, common, own in buildable(root, os.path.abspath(args.corpus), work, nvcc, None):
            # a copy of the source, so that touching it leaves the corpus alone
            copy = os.path.join(work, "src", name, os.path.basename(path))
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copy(path, copy)
            files.append((name, copy, common, own))
        own_vars = [f"OWN_{n}={' '.join(o)}" for n, _, _, o in files if o]
        times = {b: [] for b in BUILDS}
        tails = {b: [] for b in ("cold", "rebuild", "warm")}
        for r in range(args.rounds):
            out = os.path.join(work, "out")

            def build(compiler, env, extra):
                shutil.rmtree(out, ignore_errors=True) if extra == "clean" else None
                os.makedirs(out, exist_ok=True)
                with open(os.path.join(work, "Makefile"), "w") as f:
                    f.write(makefile(files, out))
                cmd = ["make", "-s", f"-j{args.jobs}", "-f", os.path.join(work, "Makefile"), f"NVCC={compiler}"]
                if compiler == cdpc:
                    cmd += own_vars
                return timed(cmd, env, cwd=work)

            env = dict(os.environ)
            for var in ("CDPC_PREAMBLE", "CDPC_CACHE_BACKGROUND", "CDPC_CACHE_DIR"):
                env.pop(var, None)
            times["nvcc"].append(build(nvcc, env, "clean"))
            times["no cache"].append(build(cdpc, dict(env, CDPC_CACHE_DIR=""), "clean"))
            reference = os.path.join(work, "reference")
            shutil.rmtree(reference, ignore_errors=True)
            shutil.copytree(out, reference)
            cache = os.path.join(work, "cache")
            shutil.rmtree(cache, ignore_errors=True)
            cached = dict(env, CDPC_CACHE_DIR=cache)
            for b, extra in (("cold", "clean"), ("rebuild", "touch"), ("warm", "touch")):
                if extra == "touch":
                    for _, copy, _, _ in files:
                        os.utime(copy)
                times[b].append(build(cdpc, cached, extra))
                start = time.perf_counter()
                wait_for_fillers(cache)
                tails[b].append(time.perf_counter() - start)
                for n, *_ in files:
                    if not filecmp.cmp(f"{out}/{n}.o", f"{reference}/{n}.o", shallow=False):
                        raise SystemExit(f"{b} build, round {r}: {n}.o differs from the uncached build's")
            print(f"round {r}: load {os.getloadavg()[0]:.1f}: " + ", ".join(f"{b} {times[b][-1][0]:.1f} s" for b in BUILDS)
                  + "; fillers after make: " + ", ".join(f"{b} {tails[b][-1]:.1f} s" for b in tails), flush=True)
        print(f"\n{len(files)} files, make -j{args.jobs}, {args.rounds} rounds, medians\n")
        print("| build | wall (s) | nvcc / this | CPU s (make's tree) | fillers ran on after make (s) |")
        print("|---|---:|---:|---:|---:|")
        nv = statistics.median(t[0] for t in times["nvcc"])
        for b in BUILDS:
            wall = statistics.median(t[0] for t in times[b])
            cpu = statistics.median(t[1] for t in times[b])
            tail = f"{statistics.median(tails[b]):.1f}" if b in tails else "–"
            print(f"| {b} | {wall:.1f} | {nv / wall:.2f}x | {cpu:.1f} | {tail} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
