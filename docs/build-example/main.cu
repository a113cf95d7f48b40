// An unchanged nvcc host program: it declares the kernel that cdpc compiled.
#include <cstdio>
extern "C" __global__ void parent(int *data, int n);

int main() {
    int *data;
    cudaMalloc(&data, 32 * sizeof(int));
    cudaMemset(data, 0, 32 * sizeof(int));
    parent<<<1, 1>>>(data, 32);
    cudaError_t status = cudaDeviceSynchronize();
    printf("parent: %s\n", cudaGetErrorName(status));
    return status == cudaSuccess ? 0 : 1;
}
