#!/usr/bin/env bash
# Soak of the one-source pool (bench/malloc-pool/one-source.sh's builds) and of -dlto (bench/lto/check.sh's):
# each binary run N times, 8 at once, on the GPU machine carrying gpu-stage/one-source.tar.xz,
# gpu-stage/lto.tar.xz and this script as gpu-stage/scripts/soak.sh; a run fails on a nonzero exit or
# the 60 s limit; outputs compared with their decimal numbers (times) masked.
set -u
cd gpu-stage && tar xJf lto.tar.xz
# The one-source builds where their archive was carried too.
[ -f one-source.tar.xz ] && tar xJf one-source.tar.xz
soak() { # name binary args runs
  local name=$1 bin=$2 runs=$4; shift
  seq 1 $runs | xargs -P 8 -I{} sh -c "timeout 60 $bin $3 > /tmp/soak-$name-{}.out 2>&1; echo \$? > /tmp/soak-$name-{}.rc"
  local bad=0; for i in $(seq 1 $runs); do [ "$(cat /tmp/soak-$name-$i.rc)" = 0 ] || bad=$((bad+1)); done
  local outs=$(for i in $(seq 1 $runs); do sed -E 's/[0-9]+\.[0-9]+/N/g' /tmp/soak-$name-$i.out | md5sum; done | sort | uniq -c | wc -l)
  echo "$name: $runs runs, $bad failed or hung, $outs distinct outputs (times masked)"
}
if [ -d one-source ]; then
  soak bt-cdpc one-source/bt-cdpc "-o 2" 100
  soak bt-nvcc one-source/bt-nvcc "-o 2" 50
  head -5 /tmp/soak-bt-cdpc-1.out
fi
soak two-files-lto lto/two-files-cdpc-lto "" 100
soak two-files-lib-lto lto/two-files-lib-cdpc-lto "" 100
soak two-files-arch2-lto lto/two-files-arch2-cdpc-lto "" 100
soak quicksort-lto lto/quicksort-cdpc-lto "" 50
