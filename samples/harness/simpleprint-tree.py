#!/usr/bin/env python3
"""Checks an output of the corpus's cdpSimplePrint (`prog.cdpSimplePrint depth=D`) for being a
valid launch tree, whatever order its blocks started in: the program numbers its blocks with
`atomicAdd` as they start, so two correct runs print different trees.

Valid: one line per block of every level (2 blocks of 2 threads from the host, then each thread
of every level but the last launching 2 blocks of 2 threads), uids 0..N-1 each once, each line's
depth its `|  ` prefix, and every thread of every level but the last the parent of exactly 2
blocks of the next level.

Usage: simpleprint-tree.py DEPTH FILE...; prints `valid` or `INVALID: why` per file, exits 1 when
any is invalid.
"""
import collections
import re
import sys

BLOCKS, THREADS = 2, 2


def check(path: str, depth: int) -> str:
    uids, level, children = [], {}, collections.Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        if "BLOCK" not in line:
            continue
        m = re.match(r"^((?:\|  )*)BLOCK (\d+) launched by (?:the host|thread (\d+) of block (\d+))$", line.rstrip("\n"))
        if not m:
            return f"INVALID: unexpected line {line.strip()!r}"
        uid = int(m.group(2))
        uids.append(uid)
        level[uid] = len(m.group(1)) // 3
        if m.group(3) is not None:
            children[(int(m.group(4)), int(m.group(3)))] += 1
    expected = sum(BLOCKS * (BLOCKS * THREADS) ** k for k in range(depth))
    if sorted(uids) != list(range(expected)):
        return f"INVALID: {len(uids)} blocks, uids not 0..{expected - 1} each once"
    for (parent, thread), n in children.items():
        if parent not in level or level[parent] >= depth - 1 or n != BLOCKS:
            return f"INVALID: thread {thread} of block {parent} launched {n} blocks"
    for uid, d in level.items():
        for t in range(THREADS):
            if d < depth - 1 and children[(uid, t)] != BLOCKS:
                return f"INVALID: thread {t} of block {uid} launched {children[(uid, t)]} blocks"
    return f"valid ({expected} blocks)"


def main() -> int:
    depth, files = int(sys.argv[1]), sys.argv[2:]
    bad = 0
    for path in files:
        verdict = check(path, depth)
        bad += verdict.startswith("INVALID")
        print(f"{path}: {verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
