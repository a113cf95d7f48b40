#!/usr/bin/env python3
"""Which CUDA C++ files nvcc compiles, and which of those cdpc compiles.

    python3 bench/acceptance/acceptance.py fetch DIR          # sources.txt's repositories into DIR
    python3 bench/acceptance/acceptance.py run DIR --cdpc BIN --nvcc NVCC --out results.jsonl [-j N]
        [--sources FILE] [--sample N --seed S] [--skip-cdpc] [--cdpc-where-nvcc-compiles]
    python3 bench/acceptance/acceptance.py table results.jsonl  # the Markdown table and failure groups
    python3 bench/acceptance/acceptance.py recheck DIR results.jsonl --cdpc BIN [--extra-include DIR]

`fetch` needs git and network access; it checks out each repository of sources.txt at the commit
listed there. `run` compiles every `.cu` file under DIR twice, with the same command line:

    COMPILER -dc -rdc=true -arch=sm_90 -std=c++17 -I<repository> -I<shared folders> FILE -o OBJ

once with nvcc (the oracle) and once with cdpc, and writes one JSON line per file: the exit
status of each, the first error line of each, and the seconds each took. "Shared folders" are the
repository's folders named common, Common, inc, include or utils (where samples keep their
helper headers), the same for both compilers. A file nvcc refuses (it needs a library the
machine lacks, an option such as --extended-lambda, a newer architecture) is counted as such and
not held against cdpc.

A sources file (sources.txt, or another named by --sources) lists `owner/name commit`, then
optionally `only=REGEX` (compile only the files whose path in the repository matches), `max=N` (at
most N of those, drawn with --seed), `also=REGEX` (files compiled besides the sample) and extra flags for both compilers, where `{repo}` stands for the
repository's folder and `{dir}` for DIR (e.g. `-I{repo}/src -DGGML_USE_CUDA`). With --sources, only
its repositories are compiled, in its order. --sample N caps every repository at N files.
--skip-cdpc records nvcc's results alone; a later run without it compiles, with cdpc, the files
recorded so (--cdpc-where-nvcc-compiles: only those nvcc compiles). `table` takes each file's
last record.

`table` groups cdpc's failures on files nvcc compiles by their first
error, with its message's varying parts (names, numbers, paths) blanked. `recheck` compiles again,
with cdpc alone (another build of it, on a machine without nvcc or a GPU), the files of a
recorded run that nvcc compiled and those nvcc refused and cdpc compiled: it prints each file
whose result is not nvcc's, and a count of each kind.

Nothing here is part of cdpc; it is the measurement behind docs/NVCC-DIALECT.md's acceptance
table.
"""

import argparse
import concurrent.futures as futures
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_NAMES = {"common", "inc", "include", "utils"}
FLAGS = ["-dc", "-rdc=true", "-arch=sm_90", "-std=c++17"]


def sources(path=None):
    """(owner/name, commit, options): options has only (a regex or None), max (int or None), flags."""
    with open(path or os.path.join(HERE, "sources.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, commit, *rest = line.split()
                opts = {"only": None, "max": None, "also": None, "flags": []}
                for tok in rest:
                    if tok.startswith("also="):
                        opts["also"] = tok[5:]
                    elif tok.startswith("only="):
                        opts["only"] = tok[5:]
                    elif tok.startswith("max="):
                        opts["max"] = int(tok[4:])
                    else:
                        opts["flags"].append(tok)
                yield name, commit, opts


def fetch(args):
    os.makedirs(args.dir, exist_ok=True)
    for name, commit, _ in sources(getattr(args, "sources", None)):
        dest = os.path.join(args.dir, name.replace("/", "+"))
        if not os.path.isdir(dest):
            subprocess.run(["git", "clone", "-q", f"https://github.com/{name}", dest], check=True)
        subprocess.run(["git", "-C", dest, "checkout", "-q", commit], check=True)


def shared_folders(repo):
    found = []
    for root, dirs, _ in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for d in dirs:
            if d.lower() in SHARED_NAMES:
                found.append(os.path.join(root, d))
    return found


def first_error(text):
    for line in text.splitlines():
        if re.search(r"\berror\b", line, re.I):
            return line.strip()[:400]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0][:400] if lines else ""


def compile_one(compiler, file, includes, timeout, extra=()):
    with tempfile.TemporaryDirectory(prefix="acceptance-") as work:
        cmd = [compiler, *FLAGS, *extra, *[f"-I{i}" for i in includes], file, "-o", os.path.join(work, "a.o")]
        start = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                               cwd=os.path.dirname(file))
            status, err = r.returncode, (first_error(r.stderr + r.stdout) if r.returncode else "")
        except subprocess.TimeoutExpired:
            status, err = "timeout", ""
        return status, err, round(time.monotonic() - start, 2)


def run(args):
    args.dir = os.path.abspath(args.dir)
    if args.sources:
        repos = [(n.replace("/", "+"), o) for n, _, o in sources(args.sources)]
    else:
        repos = [(r, {"only": None, "max": None, "also": None, "flags": []}) for r in sorted(os.listdir(args.dir))]
    jobs = []
    for repo, opts in repos:
        root = os.path.join(args.dir, repo)
        if not os.path.isdir(root):
            continue
        shared = shared_folders(root)
        flags = [f.replace("{repo}", root).replace("{dir}", args.dir) for f in opts["flags"]]
        flags += [f"-I{os.path.abspath(d)}" for d in args.extra_include]
        found = []
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                if f.endswith(".cu") and (not opts["only"] or re.search(opts["only"], os.path.relpath(path, root))):
                    found.append(path)
        every = found
        cap = min(x for x in (opts["max"], args.sample, len(found)) if x is not None)
        if cap < len(found):
            found = sorted(random.Random(f"{args.seed}:{repo}").sample(found, cap))
        if opts.get("also"):
            found += [p for p in every if p not in found and re.search(opts["also"], os.path.relpath(p, root))]
        jobs += [(repo, path, [root, *shared], flags) for path in found]
    recorded = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            for l in f:
                if l.strip():
                    r = json.loads(l)
                    recorded[r["file"]] = r

    def one(job):
        repo, path, includes, flags = job
        rel = os.path.relpath(path, args.dir)
        old = recorded.get(rel)
        nv = (old["nvcc"], old["nvcc_error"], old["nvcc_s"]) if old else compile_one(args.nvcc, path, includes, args.timeout, flags)
        if args.skip_cdpc or (args.cdpc_where_nvcc_compiles and nv[0] != 0):
            cd = (None, "", 0)
        else:
            cd = compile_one(args.cdpc, path, includes, args.timeout, flags)
        return {"repo": repo, "file": rel, "flags": opts_text(flags, args.dir),
                "nvcc": nv[0], "nvcc_error": nv[1], "nvcc_s": nv[2],
                "cdpc": cd[0], "cdpc_error": cd[1], "cdpc_s": cd[2]}

    def pending(rel):
        r = recorded.get(rel)
        if r is None:
            return True
        if args.skip_cdpc or r["cdpc"] is not None:
            return False
        return not (args.cdpc_where_nvcc_compiles and r["nvcc"] != 0)

    todo = [j for j in jobs if pending(os.path.relpath(j[1], args.dir))
            and (not args.only_recorded or os.path.relpath(j[1], args.dir) in recorded)]
    print(f"{len(jobs)} files, {len(todo)} to compile", file=sys.stderr)
    with open(args.out, "a") as out, futures.ThreadPoolExecutor(args.jobs) as pool:
        for n, rec in enumerate(pool.map(one, todo), 1):
            out.write(json.dumps(rec) + "\n")
            out.flush()
            if n % 25 == 0:
                print(f"{n}/{len(todo)}", file=sys.stderr)


def opts_text(flags, base):
    return " ".join(f.replace(base + "/", "") for f in flags)


def last_records(path):
    recs = {}
    for l in open(path):
        if l.strip():
            r = json.loads(l)
            recs[r["file"]] = r
    return list(recs.values())


def recheck(args):
    args.dir = os.path.abspath(args.dir)
    recs = [json.loads(l) for l in open(args.results) if l.strip()]
    todo = [r for r in recs if r["nvcc"] == 0 or r["cdpc"] == 0]
    shared = {}
    extra = [f"-I{d}" for d in args.extra_include]

    def one(r):
        path = os.path.join(args.dir, r["file"])
        root = os.path.join(args.dir, r["repo"])
        if r["repo"] not in shared:
            shared[r["repo"]] = shared_folders(root)
        return r, compile_one(args.cdpc, path, [root, *shared[r["repo"]]], args.timeout, extra)

    counts = {"nvcc compiles, cdpc too": 0, "nvcc compiles, cdpc refuses": 0, "nvcc refuses, cdpc too": 0, "nvcc refuses, cdpc compiles": 0}
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        for r, (status, err, _) in pool.map(one, todo):
            nv, cd = r["nvcc"] == 0, status == 0
            counts[f"nvcc {'compiles' if nv else 'refuses'}, cdpc {('too' if cd else 'refuses') if nv else ('compiles' if cd else 'too')}"] += 1
            if nv != cd:
                print(f"- {r['file']}: " + (f"cdpc: {err}" if nv else f"nvcc: {r['nvcc_error']}"), flush=True)
    for what, n in counts.items():
        print(f"{what}: {n}")


def blank(msg):
    msg = re.sub(r"^.*?(error|fatal error)(\[\w+\])?:\s*", r"\1\2: ", msg)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r'"[^"]*"', '"…"', msg)
    msg = re.sub(r"\d+", "N", msg)
    return msg[:160]


def table(args):
    recs = last_records(args.results)
    by_repo = {}
    for r in recs:
        t = by_repo.setdefault(r["repo"], [0, 0, 0, 0])
        t[0] += 1
        t[1] += r["nvcc"] == 0
        t[2] += r["nvcc"] == 0 and r["cdpc"] == 0
        t[3] += r["nvcc"] != 0 and r["cdpc"] == 0
    print("| repository | .cu files | nvcc compiles | cdpc compiles of those | cdpc compiles, nvcc refuses |")
    print("|---|---|---|---|---|")
    tot = [0, 0, 0, 0]
    for repo, t in sorted(by_repo.items()):
        print(f"| {repo.replace('+', '/')} | {t[0]} | {t[1]} | {t[2]} | {t[3]} |")
        tot = [a + b for a, b in zip(tot, t)]
    print(f"| **all** | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} |")
    groups = {}
    for r in recs:
        if r["nvcc"] == 0 and r["cdpc"] not in (0, None):
            groups.setdefault(blank(r["cdpc_error"]) if r["cdpc"] != "timeout" else "timeout", []).append(r["file"])
    print()
    print("| cdpc's first error (varying parts blanked) | files | example |")
    print("|---|---|---|")
    for msg, files in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"| `{msg}` | {len(files)} | {files[0]} |")
    if args.reverse:
        print()
        for r in recs:
            if r["nvcc"] != 0 and r["cdpc"] == 0:
                print(f"- {r['file']}: nvcc: {r['nvcc_error']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("dir")
    f.add_argument("--sources")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--cdpc")
    r.add_argument("--nvcc", default="nvcc")
    r.add_argument("--out", required=True)
    r.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    r.add_argument("--timeout", type=int, default=120, help="seconds per compilation (default 120)")
    r.add_argument("--sources", help="a sources file whose repositories (and options) alone are compiled")
    r.add_argument("--sample", type=int, help="at most N files per repository, drawn with --seed")
    r.add_argument("--seed", default="0")
    r.add_argument("--extra-include", action="append", default=[], help="a folder of headers the machine's CUDA lacks (cuBLAS'), for both compilers")
    r.add_argument("--only-recorded", action="store_true", help="compile only files the results already hold (fill in cdpc's results while an nvcc pass runs)")
    r.add_argument("--skip-cdpc", action="store_true", help="record nvcc's results alone")
    r.add_argument("--cdpc-where-nvcc-compiles", action="store_true", help="run cdpc only on files nvcc compiles")
    t = sub.add_parser("table")
    t.add_argument("results")
    t.add_argument("--reverse", action="store_true", help="list the files cdpc compiles and nvcc refuses")
    c = sub.add_parser("recheck")
    c.add_argument("dir")
    c.add_argument("results")
    c.add_argument("--cdpc", required=True)
    c.add_argument("--extra-include", action="append", default=[], help="a folder of headers the machine's CUDA lacks (cuBLAS', cuFFT's)")
    c.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    c.add_argument("--timeout", type=int, default=300)
    a = p.parse_args()
    {"fetch": fetch, "run": run, "table": table, "recheck": recheck}[a.cmd](a)


if __name__ == "__main__":
    main()
