// Everyday CUDA C++ with device-side launches: lambdas, functor templates, CUB, thrust::complex,
// recursion, streams, tail launch, constexpr configuration, a union and a switch.
#include <cstdio>
#include <cub/block/block_reduce.cuh>
#include <thrust/complex.h>

constexpr int kBlock = 64;

template <typename F>
__global__ void apply(int *out, int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f(out[i], i);
}

__global__ void block_sum(const int *in, int n, int *result) {
  using Reduce = cub::BlockReduce<int, kBlock>;
  __shared__ typename Reduce::TempStorage tmp;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int s = Reduce(tmp).Sum(v);
  if (threadIdx.x == 0) atomicAdd(result, s);
}

__global__ void rotate(thrust::complex<float> *z, thrust::complex<float> w, int n) {
  int i = threadIdx.x;
  if (i < n) z[i] *= w;
}

union Bits { float f; unsigned u; };

__global__ void classify(const int *in, int n, int *counts) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  switch (in[i] % 4) {
    case 0: atomicAdd(&counts[0], 1); break;
    case 1: atomicAdd(&counts[1], 1); break;
    default: atomicAdd(&counts[2], 1); break;
  }
}

__global__ void tree(int *visits, int depth, int max_depth) {
  atomicAdd(&visits[depth], 1);
  if (depth + 1 < max_depth && threadIdx.x < 2) tree<<<1, 2>>>(visits, depth + 1, max_depth);
}

__global__ void finish(int *flag, const int *result) { *flag = *result + 1; }

__global__ void parent(int *data, int n, int *result, int *counts, int *visits,
                       thrust::complex<float> *z, int *flag, unsigned *bits) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int scale = 3;
  auto affine = [scale] __device__ (int v, int i) { return v * scale + (i & 7); };
  int grid = (n + kBlock - 1) / kBlock;
  apply<<<grid, kBlock>>>(data, n, affine);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  auto launch_sum = [&](int *r) { block_sum<<<grid, kBlock>>>(data, n, r); };
  launch_sum(result);
  classify<<<grid, kBlock>>>(data, n, counts);
  rotate<<<1, 8, 0, s>>>(z, thrust::complex<float>(0.0f, 1.0f), 8);
  tree<<<1, 2>>>(visits, 0, 5);
  Bits b; b.f = 1.5f; *bits = b.u;
  cudaStreamDestroy(s);
  finish<<<1, 1, 0, cudaStreamTailLaunch>>>(flag, result);
}

int main() {
  const int n = 1000;
  int *data, *result, *counts, *visits, *flag; unsigned *bits;
  thrust::complex<float> *z;
  cudaMalloc(&data, n * sizeof(int)); cudaMalloc(&result, 4); cudaMalloc(&counts, 12);
  cudaMalloc(&visits, 5 * 4); cudaMalloc(&flag, 4); cudaMalloc(&bits, 4); cudaMalloc(&z, 8 * sizeof(*z));
  int h[n]; for (int i = 0; i < n; ++i) h[i] = (i * 37) % 101;
  thrust::complex<float> hz[8]; for (int i = 0; i < 8; ++i) hz[i] = thrust::complex<float>(i, 1.0f);
  cudaMemcpy(data, h, sizeof h, cudaMemcpyHostToDevice); cudaMemcpy(z, hz, sizeof hz, cudaMemcpyHostToDevice);
  cudaMemset(result, 0, 4); cudaMemset(counts, 0, 12); cudaMemset(visits, 0, 20); cudaMemset(flag, 0, 4);
  parent<<<2, 32>>>(data, n, result, counts, visits, z, flag, bits);
  cudaError_t e = cudaDeviceSynchronize();
  int r, c[3], v[5], f; unsigned u;
  cudaMemcpy(h, data, sizeof h, cudaMemcpyDeviceToHost); cudaMemcpy(&r, result, 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(c, counts, 12, cudaMemcpyDeviceToHost); cudaMemcpy(v, visits, 20, cudaMemcpyDeviceToHost);
  cudaMemcpy(&f, flag, 4, cudaMemcpyDeviceToHost); cudaMemcpy(&u, bits, 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hz, z, sizeof hz, cudaMemcpyDeviceToHost);
  long long sum = 0; for (int i = 0; i < n; ++i) sum += (long long)h[i] * (i + 1);
  printf("status %s\nsum %lld result %d counts %d %d %d\nvisits %d %d %d %d %d flag %d bits %08x\n", cudaGetErrorString(e), sum, r, c[0], c[1], c[2], v[0], v[1], v[2], v[3], v[4], f, u);
  for (int i = 0; i < 8; ++i) printf("(%g,%g) ", hz[i].real(), hz[i].imag());
  printf("\n");
  return 0;
}
