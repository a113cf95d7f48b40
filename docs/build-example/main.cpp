// A g++ host program: the header cdpc wrote declares the launcher.
#include <cstdio>
#include "launch.h"

int main() {
    const int n = 32;
    int host[n];
    for (int i = 0; i < n; i++)
        host[i] = i;
    int *data = nullptr;
    cudaMalloc(reinterpret_cast<void **>(&data), n * sizeof(int));
    cudaMemcpy(data, host, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaError_t status = cdpc_launch_parent(dim3(1), dim3(1), 0, nullptr, data, n);
    if (status == cudaSuccess)
        status = cudaDeviceSynchronize();
    printf("parent: %s\n", cudaGetErrorName(status));
    cudaMemcpy(host, data, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; i++)
        printf("%d%c", host[i], i + 1 < n ? ' ' : '\n');
    return status == cudaSuccess ? 0 : 1;
}
