#!/bin/bash
# `cdpc -dc` on every `.cu` file of a list that nvcc compiles: per file, the first of sm_90,
# sm_90a and sm_100a that nvcc's `-dc` takes (with the file's folder on the include path),
# then cdpc with the same options. Prints one line per file: OK, FAIL (with cdpc's first
# errors) or NVCCFAIL (nvcc compiled it at none of them; with nvcc's first error).
# Usage: PATH=<toolkit>/bin:$PATH bash sweep.sh <cdpc> <file list> > results.txt
set -u
C=$1; LIST=$2; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
while read -r f; do
  d=$(dirname "$f"); done_=0
  for g in "arch=compute_90,code=sm_90" "arch=compute_90a,code=sm_90a" "arch=compute_100a,code=sm_100a"; do
    if timeout 60 nvcc -gencode $g -dc -I"$d" "$f" -o "$W/n.o" > "$W/n.log" 2>&1; then
      if timeout 120 "$C" -gencode $g -dc -I"$d" "$f" -o "$W/c.o" > "$W/c.log" 2>&1; then echo "OK $g $f"
      else echo "FAIL $g $f :: $(grep -m2 -E 'error' "$W/c.log" | tr '\n' ' ' | cut -c1-300)"; fi
      done_=1; break
    fi
  done
  [ $done_ = 0 ] && echo "NVCCFAIL $f :: $(grep -m1 -E 'error' "$W/n.log" | cut -c1-200)"
done < "$LIST"
