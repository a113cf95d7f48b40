// Thrust's sort with the device policy in device code (CCCL 3 runs it in the calling thread,
// under nvcc as here), then a launch of the kernel that reads the sorted keys. A clean file:
// nothing printed (CUB's `#pragma unroll` loops that the optimiser leaves rolled are no user's
// concern, as under nvcc).
#include <thrust/execution_policy.h>
#include <thrust/sort.h>
__global__ void check(const int *keys, int n, int *unsorted) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n && keys[i] > keys[i + 1]) atomicAdd(unsorted, 1);
}
__global__ void parent(int *keys, int n, int *unsorted) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        thrust::sort(thrust::device, keys, keys + n);
        check<<<(n + 127) / 128, 128>>>(keys, n, unsorted);
    }
}
