#!/bin/bash
# Two shared libraries, each with a kernel `k` of its own (writing 1 and 2), each launching
# it from a host function; a program linked with both prints what each launch wrote. Built by
# nvcc and by cdpc, with `--device-entity-has-hidden-visibility` true (nvcc 13's default) and false.
set -u
C=$1; W=$2
mkdir -p $W && cd $W
for n in 1 2; do cat > lib$n.cu <<EOT
#include <cstdio>
__global__ void k(int *p) { *p = $n; }
int run$n() {
  int *d, h = 0;
  cudaMalloc(&d, sizeof(int));
  k<<<1, 1>>>(d);
  cudaError_t e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) printf("lib$n: %s\n", cudaGetErrorString(e));
  cudaFree(d);
  return h;
}
EOT
done
cat > main.cpp <<'EOT'
#include <cstdio>
int run1(); int run2();
int main() { int a = run1(); int b = run2(); printf("lib1's launch wrote %d, lib2's %d\n", a, b); return 0; }
EOT
for cc in nvcc cdpc; do for vis in true false; do
  d=$cc-$vis; mkdir -p $d; comp=nvcc; [ $cc = cdpc ] && comp=$C
  for n in 1 2; do $comp -arch=sm_90 -rdc=true --cudart=shared -Xcompiler -fPIC --shared --device-entity-has-hidden-visibility=$vis lib$n.cu -o $d/lib$n.so || echo "build failed: $d lib$n"; done
  g++ main.cpp -L$d -l1 -l2 -Wl,-rpath,$PWD/$d -o $d/app || echo "link failed: $d"
  echo "$d: $(timeout 20 ./$d/app 2>&1 | tr '\n' ' ') exit ${PIPESTATUS[0]}; exported: $(nm -D --defined-only $d/lib1.so | grep -c ' _Z1kPi$')"
done; done
