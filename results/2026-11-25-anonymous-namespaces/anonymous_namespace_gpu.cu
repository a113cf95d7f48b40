// Kernels and variables of an anonymous namespace, `static` ones, and a kernel that takes a
// type of the anonymous namespace, launched from the host and from the device.
#include <cstdio>
namespace {
struct Pair { int a, b; };
__device__ int hits[8];
__constant__ int scale[2];
__global__ void fill(int *out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = i * scale[0] + scale[1]; }
template <typename T> __global__ void add_pair(int *out, T p) { out[threadIdx.x] += p.a * p.b; atomicAdd(&hits[0], 1); }
namespace inner { __device__ int count; __global__ void bump() { atomicAdd(&count, 1); } }
}
namespace named { static __device__ int total; static __global__ void sum(const int *in, int n) { for (int i = 0; i < n; ++i) atomicAdd(&total, in[i]); } }
static __global__ void twice(int *out) { out[threadIdx.x] *= 2; atomicAdd(&hits[1], 1); }
__global__ void takes_pair(int *out, Pair p) { out[threadIdx.x] -= p.a; atomicAdd(&hits[2], 1); }
__global__ void parent(int *out, int n) {
  if (threadIdx.x == 0) {
    Pair p{2, 3};
    add_pair<<<1, n>>>(out, p);
    twice<<<1, n>>>(out);
    inner::bump<<<2, 4>>>();
    takes_pair<<<1, n>>>(out, Pair{1, 0});
  }
}
int main() {
  const int n = 32;
  int *out, h[n], s[2] = {3, 1};
  cudaMalloc(&out, n * sizeof(int));
  cudaMemcpyToSymbol(scale, s, sizeof s);
  fill<<<1, n>>>(out, n);
  parent<<<1, 4>>>(out, n);
  takes_pair<<<1, n>>>(out, Pair{5, 0});
  named::sum<<<1, 1>>>(out, n);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  int hh[8], c, t;
  cudaMemcpyFromSymbol(hh, hits, sizeof hh);
  cudaMemcpyFromSymbol(&c, inner::count, sizeof c);
  cudaMemcpyFromSymbol(&t, named::total, sizeof t);
  printf("status %s\n", cudaGetErrorString(e));
  for (int i = 0; i < n; ++i) printf("%d ", h[i]);
  printf("\nhits %d %d %d count %d total %d\n", hh[0], hh[1], hh[2], c, t);
  return 0;
}
