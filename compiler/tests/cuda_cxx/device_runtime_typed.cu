// The device runtime's calls with typed arguments, as device code writes them under nvcc:
// `cudaMalloc(&p, n)` with an `int *p` (in a kernel and in a __device__ function), a kernel's
// attributes and occupancy by the kernel itself, not a `void *`.
__global__ void child(int *p) { p[threadIdx.x] = threadIdx.x; }
__device__ int *scratch(int n) {
    int *p = nullptr;
    cudaMalloc(&p, n * sizeof(int));
    return p;
}
__global__ void parent(int *out) {
    float *f = nullptr;
    cudaMalloc(&f, 4 * sizeof(float));
    int *p = scratch(32);
    cudaFuncAttributes attributes;
    cudaFuncGetAttributes(&attributes, child);
    int blocks = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, child, 32, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, child, 32, 0, cudaOccupancyDefault);
    child<<<1, 32>>>(p);
    out[0] = blocks + attributes.numRegs;
    cudaFree(f);
}
