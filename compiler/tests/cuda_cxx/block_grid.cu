// Block and grid aggregation through Clang (-faggregate-launches=block, =grid): a kernel that
// launches itself after some of its threads returned and the rest met at a barrier (as KLAP's
// QT does), and a launch in a loop, which only warp granularity takes.
__global__ void leaf(int *out, int v)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] += v;
}

__global__ void tree(int *out, int depth)
{
    if (blockIdx.x > 0 && threadIdx.x >= 32)
        return;
    __shared__ int level;
    if (threadIdx.x == 0)
        level = depth;
    __syncthreads();
    if (threadIdx.x % 32 == 0 && level > 0)
        tree<<<2, 64>>>(out, level - 1);
}

__global__ void looped(int *out, int n)
{
    for (int i = threadIdx.x; i < n; i++)
        leaf<<<1, 32>>>(out, i);
}
