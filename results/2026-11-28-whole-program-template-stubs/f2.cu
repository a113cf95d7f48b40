#include <cstdio>
template <class T> __global__ void tk(T *p) { *p = 2; }
int run2() { int *d, h = 0; cudaMalloc(&d, sizeof(int)); tk<<<1, 1>>>(d); cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost); cudaFree(d); return h; }
