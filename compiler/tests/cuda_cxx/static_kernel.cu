static __device__ int hits[4];
static __global__ void child(int *out) { out[threadIdx.x] = hits[threadIdx.x % 4]; }
__global__ void parent(int *out) { hits[1] = 2; child<<<1, 32>>>(out); }
