// A g++ host program: the header cdpc wrote declares the launcher.
#include <cstdio>
#include "launch.h"

int main() {
    int *data = nullptr;
    cudaMalloc(reinterpret_cast<void **>(&data), 32 * sizeof(int));
    cudaError_t status = cdpc_launch_parent(dim3(1), dim3(1), 0, nullptr, data, 32);
    if (status == cudaSuccess)
        status = cudaDeviceSynchronize();
    printf("parent: %s\n", cudaGetErrorName(status));
    return status == cudaSuccess ? 0 : 1;
}
