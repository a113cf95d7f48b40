// Thresholding through Clang (-flaunch-threshold): `fill`'s threads, and its helper's reads of
// the built-in variables, can run in the launching thread; `with_barrier`'s cannot.
__device__ __noinline__ int scale(int v) { return v * blockDim.x; }

__global__ void fill(int *out, int base)
{
    out[base + blockIdx.x * blockDim.x + threadIdx.x] = scale(threadIdx.x) + gridDim.x;
}

__global__ void with_barrier(int *out)
{
    __syncthreads();
    out[threadIdx.x] = 1;
}

// The parent reads its thread's index: aggregation leaves alone a kernel that reads none.
__global__ void parent(int *out, int n)
{
    fill<<<n, 4>>>(out, threadIdx.x * n * 4);
    with_barrier<<<1, 32>>>(out);
}
