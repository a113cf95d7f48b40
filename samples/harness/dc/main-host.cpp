// A g++ host program: it calls the host code of a.cu and b.cu, which their -dc objects hold.
#include <cstdio>
#include <cuda_runtime.h>
void run_a(int *d); void run_b(int *d); int host_helper(int);
int main() {
    int *d; cudaMalloc(reinterpret_cast<void **>(&d), 32 * sizeof(int)); cudaMemset(d, 0, 32 * sizeof(int));
    run_b(d); run_a(d);
    cudaError_t status = cudaDeviceSynchronize();
    int h[32] = {0}; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 32; i++)
        printf("%d%c", h[i], i + 1 < 32 ? ' ' : '\n');
    printf("%d %s\n", host_helper(21), cudaGetErrorName(status));
    return status == cudaSuccess ? 0 : 1;
}
