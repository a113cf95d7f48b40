#!/bin/sh
# qt-ab.sh -- KLAP's QT, several builds of it interleaved run by run.
#
# Usage: DIR=folder VARIANTS="nvcc old new" DEPTHS="12 10" ROUNDS=10 sh qt-ab.sh
# DIR holds one QT executable per variant, named qt.<variant> (each a `prog.<label>` that
# `corpus-timing.py --stage build --programs QT` put in its bundle). Each round runs every
# variant once per depth, in a shuffled order, with `-o 1 -r 3 -w 1` (the mean of three
# timed builds of the tree after one warm-up), and prints one line per run:
#   d=<depth> v=<variant> t=<ms, empty when the run printed none> passed=<n> failed=<n>
# `passed`/`failed` count QT's own check of each tree it built (4 per run).
set -u
cd "${DIR:?DIR: the folder of the qt.<variant> executables}"
for d in ${DEPTHS:-12}; do
  r=0
  while [ "$r" -lt "${ROUNDS:-10}" ]; do
    for v in $(echo ${VARIANTS:?VARIANTS: the variants} | tr ' ' '\n' | shuf); do
      out=$(timeout 60 "./qt.$v" -o 1 -d "$d" -r 3 -w 1 2>&1)
      t=$(echo "$out" | sed -n 's/.*Average kernel time = \([0-9.e+-]*\) ms.*/\1/p')
      echo "d=$d v=$v t=$t passed=$(echo "$out" | grep -c passed) failed=$(echo "$out" | grep -c failed)"
    done
    r=$((r + 1))
  done
done
