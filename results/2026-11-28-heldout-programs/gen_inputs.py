#!/usr/bin/env python3
"""Inputs for the held-out programs: an undirected graph in DIMACS10 (METIS) form with a
few high-degree vertices (so that the graph programs launch children), and a text with a
pattern in it for the string matchers. Fixed seeds: the same bytes on every machine."""
import random, sys
out = sys.argv[1]
r = random.Random(7)
n = 30000
adj = [set() for _ in range(n)]
def edge(a, b):
    if a != b:
        adj[a].add(b); adj[b].add(a)
for v in range(n):
    for _ in range(r.randint(1, 6)):
        edge(v, r.randrange(n))
for hub in r.sample(range(n), 60):
    for _ in range(r.randint(300, 3000)):
        edge(hub, r.randrange(n))
m = sum(len(a) for a in adj) // 2
with open(f"{out}/graph.metis", "w") as f:
    f.write(f"{n} {m}\n")
    for a in adj:
        f.write(" ".join(str(x + 1) for x in sorted(a)) + "\n")
words = ["dynamic", "parallel", "kernel", "launch", "device", "thread", "block", "grid"]
with open(f"{out}/text.txt", "w") as f:
    f.write(" ".join(r.choice(words) for _ in range(400000)))
