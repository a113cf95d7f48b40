// A kernel template launched from host code with an extended lambda, and from device code with
// a lambda of the parent kernel.
#include <cstdio>
template <typename F> __global__ void apply(int *out, F f) { out[threadIdx.x] += f(threadIdx.x); }
__global__ void parent(int *out) { apply<<<1, 32>>>(out, [] (int i) { return i + 1; }); }
int main() {
  int *out, h[32], k = 3;
  cudaMalloc(&out, sizeof h); cudaMemset(out, 0, sizeof h);
  apply<<<1, 32>>>(out, [=] __device__ (int i) { return i * k; });
  parent<<<1, 1>>>(out);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  printf("status %s\n", cudaGetErrorString(e));
  for (int i = 0; i < 32; ++i) printf("%d ", h[i]);
  printf("\n");
}
