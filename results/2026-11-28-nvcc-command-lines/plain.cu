#include <cstdio>
// A whole program (no -rdc, no device-side launch): its PTX is what a later GPU JIT-compiles.
__global__ void scale(float *v, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * s + (float)i / 7.0f;
}
int main() {
  const int n = 4096;
  static float h[n];
  for (int i = 0; i < n; ++i) h[i] = (float)(i % 97) * 0.25f;
  float *d;
  cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  scale<<<(n + 255) / 256, 256>>>(d, 1.5f, n);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += h[i] * (i % 13);
  printf("sum=%.6f h[4095]=%.6f status=%s\n", sum, h[n - 1], cudaGetErrorString(e));
  return 0;
}
