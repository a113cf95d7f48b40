// Managed variables (`__managed__`, which Clang 22 ignores in CUDA): at file scope with and
// without `__device__`, an initialised array, `static` in a namespace, read and written by a
// parent, its child and host code.
__managed__ int launched;
__device__ __managed__ float weights[4] = {0.5f, 1.0f, 1.5f, 2.0f};
namespace stats { static __managed__ unsigned long long total; }
__global__ void child(const int *in) {
    atomicAdd(&stats::total, (unsigned long long)(in[threadIdx.x] * weights[threadIdx.x % 4]));
}
__global__ void parent(const int *in) {
    launched += 1;
    child<<<1, 32>>>(in);
}
unsigned long long run(const int *in) {
    launched = 0;
    stats::total = 0;
    parent<<<1, 1>>>(in);
    cudaDeviceSynchronize();
    return stats::total + launched;
}
