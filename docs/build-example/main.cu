// An unchanged nvcc host program: it declares the kernel that cdpc compiled.
#include <cstdio>
extern "C" __global__ void parent(int *data, int n);

int main() {
    const int n = 32;
    int host[n];
    for (int i = 0; i < n; i++)
        host[i] = i;
    int *data;
    cudaMalloc(&data, n * sizeof(int));
    cudaMemcpy(data, host, n * sizeof(int), cudaMemcpyHostToDevice);
    parent<<<1, 1>>>(data, n);
    cudaError_t status = cudaDeviceSynchronize();
    printf("parent: %s\n", cudaGetErrorName(status));
    cudaMemcpy(host, data, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; i++)
        printf("%d%c", host[i], i + 1 < n ? ' ' : '\n');
    return status == cudaSuccess ? 0 : 1;
}
