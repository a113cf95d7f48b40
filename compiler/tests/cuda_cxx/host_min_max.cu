// Host code calling CUDA's global min and max (nvcc's crt/math_functions.hpp makes them host and
// device functions; Clang's wrapper makes them device-only), with mixed signed and unsigned,
// float and double arguments, around a kernel that uses them too.
#include <cstdio>
__global__ void child(int *p, int n) { p[threadIdx.x] = max(p[threadIdx.x], n) + min(n, 3); }
__global__ void parent(int *p, int n) { child<<<1, 32>>>(p, max(n, 1)); }
unsigned int clamp_blocks(int n, unsigned int limit) { return min(max(n, 1), limit); }
double scale(float f, double d) { return max(f, d) - min(d, 0.5f); }
