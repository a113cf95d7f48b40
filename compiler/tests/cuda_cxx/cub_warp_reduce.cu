#include <cub/cub.cuh>
__global__ void child(int *out) {
    typedef cub::WarpReduce<int> WarpReduce;
    __shared__ typename WarpReduce::TempStorage temp;
    int sum = WarpReduce(temp).Sum(threadIdx.x);
    if (threadIdx.x == 0) out[0] = sum;
}
__global__ void parent(int *out) { child<<<1, 32>>>(out); }
