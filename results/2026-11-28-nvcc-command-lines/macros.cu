#include <cstdio>
// Built with -DN=1024 -DX=3 -DY=5 -DA=7 -Dk=2 -Dseed=11: names that cuda.h, cuRAND's headers,
// Clang's and cdpc's own headers use (docs/NVCC-DIALECT.md).
__global__ void child(int *out, int base) { out[base + threadIdx.x] = (base + threadIdx.x) * X + Y * A - k + seed; }
__global__ void parent(int *out) { child<<<1, N / 4>>>(out, threadIdx.x * (N / 4)); }
int main() {
  int *d;
  cudaMalloc(&d, N * sizeof(int));
  cudaMemset(d, 0, N * sizeof(int));
  parent<<<1, 4>>>(d);
  cudaError_t e = cudaDeviceSynchronize();
  static int h[N];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  long long sum = 0;
  for (int i = 0; i < N; ++i) sum = sum * 31 + h[i];
  printf("N=%d sum=%lld first=%d last=%d status=%s\n", N, sum, h[0], h[N - 1], cudaGetErrorString(e));
  return 0;
}
