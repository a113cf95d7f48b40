// CUDA 12.9's blocks as clusters (`__block_size__`): a kernel of a compile-time block and
// cluster shape, each block recording where it stands (its cluster, its rank in it, the
// cluster's size, its own size), launched by the host and from the device. Without the
// qualifier the shapes are the launch's. Written for cdpc's tests of 2026-11-26 (not copied).
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void __block_size__((64, 1, 1), (2, 1, 1)) where(int *out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    int *o = out + 4 * blockIdx.x;
    o[0] = (int)cluster.block_index().x + 100 * (int)blockIdx.x;
    o[1] = (int)cluster.block_rank();
    o[2] = (int)cluster.num_blocks();
    o[3] = (int)blockDim.x;
  }
  cluster.sync();
}

__global__ void parent(int *out, int *status) {
  where<<<4, 64>>>(out);
  *status = (int)cudaGetLastError();
}

static void show(const char *what, cudaError_t e, const int *d) {
  int h[32];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%s: %s\n", what, cudaGetErrorString(e));
  for (int i = 0; i < 32; i++)
    printf("%d%c", h[i], i % 8 == 7 ? '\n' : ' ');
}

int main() {
  int *out, *status, s = -1;
  cudaMalloc(&out, 32 * sizeof(int));
  cudaMalloc(&status, sizeof(int));
  cudaMemset(out, 0xff, 32 * sizeof(int));
  where<<<4, 64>>>(out);
  cudaError_t e = cudaDeviceSynchronize();
  show("host launch", e, out);
  cudaMemset(out, 0xff, 32 * sizeof(int));
  parent<<<1, 1>>>(out, status);
  e = cudaDeviceSynchronize();
  cudaMemcpy(&s, status, sizeof s, cudaMemcpyDeviceToHost);
  printf("status from the device: %d\n", s);
  show("device launch", e, out);
  return 0;
}
