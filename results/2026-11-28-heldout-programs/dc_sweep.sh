#!/bin/bash
# `-dc` of every .cu file under ROOT with nvcc and with cdpc, the same options (-I the file's
# folder, its parent, and every include/inc/common folder of its repository, the first path
# component under ROOT): a file nvcc refuses is NVCCFAIL, else OK or FAIL for cdpc.
# Usage: dc_sweep.sh ROOT OUT CDPC   (nvcc on PATH)
ROOT=$1; OUT=$2; CDPC=$3; mkdir -p $OUT; : > $OUT/summary.txt
work=$(mktemp -d); trap 'rm -rf $work' EXIT
find $ROOT -name "*.cu" | sort | while IFS= read -r f; do
  d=$(dirname "$f"); rel=${f#$ROOT/}; repo=${rel%%/*}; n=$(echo "$rel" | tr '/ ' '__')
  inc=(-I"$d" -I"$(dirname "$d")")
  while IFS= read -r i; do inc+=(-I"$i"); done < <(find "$ROOT/$repo" -type d \( -name include -o -name inc -o -name common -o -name Common \))
  if ! timeout 120 nvcc -dc -arch=sm_90 "${inc[@]}" "$f" -o $work/n.o > "$OUT/$n.nvcc" 2>&1; then echo "NVCCFAIL $n" >> $OUT/summary.txt; continue; fi
  if timeout 120 $CDPC -dc -arch=sm_90 "${inc[@]}" "$f" -o $work/c.o > "$OUT/$n.cdpc" 2>&1; then echo "OK $n" >> $OUT/summary.txt; else echo "FAIL $n" >> $OUT/summary.txt; fi
done
