// The kernels a host program launches, and a host function that launches one; `scale` and
// `factor` live in scale.cu.
extern __device__ int factor;
__device__ int scale(int x);

extern "C" __global__ void child(int *data) {
    data[threadIdx.x] = scale(data[threadIdx.x]) + factor;
}

extern "C" __global__ void parent(int *data, int n) {
    if (threadIdx.x == 0)
        child<<<1, n>>>(data);
}

// Host code of the file, in its -dc object: what a host program compiled by g++ calls.
cudaError_t run_parent(int *data, int n) {
    parent<<<1, 1>>>(data, n);
    return cudaGetLastError();
}
