// An architecture-specific target (sm_90a): a child that takes sm_90a's own instruction
// (setmaxnreg) where nvcc's mark of the target (__CUDA_ARCH_FEAT_SM90_ALL) allows it, launched
// from the device; the host prints what it wrote.
#include <cstdio>

__global__ void child(int *p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    p[threadIdx.x] = 900 + threadIdx.x;
#else
    p[threadIdx.x] = -1;
#endif
}

__global__ void parent(int *p) {
    if (threadIdx.x == 0) child<<<1, 128>>>(p);
}

int main() {
    int *p;
    cudaMallocManaged(&p, 128 * sizeof(int));
    parent<<<1, 32>>>(p);
    cudaError_t e = cudaDeviceSynchronize();
    long sum = 0;
    for (int i = 0; i < 128; i++) sum += p[i];
    printf("%s: p[0] %d p[127] %d sum %ld\n", cudaGetErrorString(e), p[0], p[127], sum);
    return e == cudaSuccess ? 0 : 1;
}
