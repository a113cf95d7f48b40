// A g++ host program that calls the host code of launch.cu, which its -dc object holds.
#include <cstdio>
#include <cuda_runtime.h>

cudaError_t run_parent(int *data, int n);

int main() {
    const int n = 32;
    int host[n];
    for (int i = 0; i < n; i++)
        host[i] = i;
    int *data = nullptr;
    cudaMalloc(reinterpret_cast<void **>(&data), n * sizeof(int));
    cudaMemcpy(data, host, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaError_t status = run_parent(data, n);
    if (status == cudaSuccess)
        status = cudaDeviceSynchronize();
    printf("parent: %s\n", cudaGetErrorName(status));
    cudaMemcpy(host, data, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; i++)
        printf("%d%c", host[i], i + 1 < n ? ' ' : '\n');
    return status == cudaSuccess ? 0 : 1;
}
