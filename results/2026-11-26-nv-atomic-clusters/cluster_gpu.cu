// Thread-block clusters: a kernel with a compile-time cluster shape (`__cluster_dims__`), each
// block reading its neighbour's shared memory through the cluster (cooperative groups'
// `map_shared_rank`), launched by the host and from the device by a parent kernel. Without
// the cluster shape every block is a cluster of one and reads its own memory. Written for
// cdpc's tests of 2026-11-26 (not copied).
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void __cluster_dims__(4, 1, 1) ring(int *out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0)
    mine = 100 * (int)blockIdx.x + (int)cluster.block_rank();
  cluster.sync();
  int *theirs = cluster.map_shared_rank(&mine, (cluster.block_rank() + 1) % cluster.num_blocks());
  if (threadIdx.x == 0)
    out[blockIdx.x] = *theirs * 10 + (int)cluster.num_blocks();
  cluster.sync();
}

__global__ void parent(int *out, int *status) {
  ring<<<8, 64>>>(out);
  *status = (int)cudaGetLastError();
}

int main() {
  int *out, *status;
  cudaMalloc(&out, 2 * 8 * sizeof(int));
  cudaMalloc(&status, sizeof(int));
  cudaMemset(out, 0xff, 2 * 8 * sizeof(int));
  ring<<<8, 64>>>(out);
  printf("host launch: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  parent<<<1, 1>>>(out + 8, status);
  printf("device launch: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  int h[16], s;
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  cudaMemcpy(&s, status, sizeof s, cudaMemcpyDeviceToHost);
  printf("status from the device: %d\n", s);
  for (int i = 0; i < 16; i++)
    printf("%d%c", h[i], i % 8 == 7 ? '\n' : ' ');
  return 0;
}
