// One of two files compiled with `cdpc -dc` (samples/harness/dc-gpu.sh): host code of its own, a
// `static` kernel and variable, a kernel that launches another.
#include <cstdio>
__device__ int scale(int x);
static __device__ int bias = 1;
static __global__ void step(int *p) { p[threadIdx.x] = scale(p[threadIdx.x]) + bias; }
__global__ void child(int *p) { p[threadIdx.x] += 1; }
__global__ void parent(int *p) { child<<<1, 32>>>(p); }
void run_a(int *d) { int b = 2; cudaMemcpyToSymbol(bias, &b, sizeof b); parent<<<1, 1>>>(d); step<<<1, 32>>>(d); }
int host_helper(int x) { return x * 2; }
