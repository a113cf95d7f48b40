// Managed variables on the GPU (2026-11-25): nvcc's build against cdpc's device code with
// nvcc's host code, and against cdpc's -dc object linked by nvcc. Device code reads and writes
// them from a parent and its device-launched child, host code before and after the launch,
// through their names, an array element, a pointer taken at run time and an extern declaration.
#include <cstdio>
extern __managed__ int shared_count;
__managed__ int launches;
__device__ __managed__ float weights[4] = {0.5f, 1.0f, 1.5f, 2.0f};
namespace stats {
static __managed__ unsigned long long total;
__managed__ int hist[8];
}
__managed__ int shared_count = 3;

__global__ void child(const int *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&stats::total, (unsigned long long)(in[i] * weights[i % 4] * 2.0f));
        atomicAdd(&stats::hist[in[i] % 8], 1);
    }
}

__global__ void parent(const int *in, int n) {
    atomicAdd(&launches, 1);
    if (threadIdx.x == 0) {
        child<<<(n + 31) / 32, 32>>>(in, n);
        atomicAdd(&shared_count, blockIdx.x + 1);
    }
}

int main() {
    const int n = 1000;
    int *in;
    cudaMallocManaged(&in, n * sizeof(int));
    for (int i = 0; i < n; i++) in[i] = (i * 7) % 13;
    launches = 0;
    stats::total = 0;
    weights[3] = 3.0f;
    for (int k = 0; k < 8; k++) stats::hist[k] = k;
    parent<<<2, 4>>>(in, n);
    cudaError_t status = cudaDeviceSynchronize();
    printf("status %s\n", cudaGetErrorName(status));
    printf("launches %d total %llu shared %d\n", launches, stats::total, shared_count);
    for (int k = 0; k < 8; k++) printf("%d%c", stats::hist[k], k + 1 < 8 ? ' ' : '\n');
    float *w = weights;
    int *p = &launches;
    *p += 10;
    printf("weights %g %g %g %g launches %d\n", w[0], w[1], w[2], w[3], launches);
    cudaFree(in);
    return status == cudaSuccess ? 0 : 1;
}
