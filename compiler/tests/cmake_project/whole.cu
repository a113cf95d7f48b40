#include <cstdio>

// A whole program: one file, no device-side launch.
__global__ void square(int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = i * i;
}

int main() {
    const int n = 256;
    int *out = nullptr;
    cudaError_t e = cudaMalloc(&out, n * sizeof(int));
    if (e == cudaSuccess) {
        square<<<n / 64, 64>>>(out);
        e = cudaGetLastError();
    }
    int host[n] = {};
    if (e == cudaSuccess) e = cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost);
    cudaFree(out);
    if (e != cudaSuccess) {
        std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
        return 1;
    }
    long long sum = 0, expected = 0;
    for (int i = 0; i < n; ++i) {
        sum += host[i];
        expected += (long long)i * i;
    }
    std::printf("checksum %lld (expected %lld)\n", sum, expected);
    return sum == expected ? 0 : 1;
}
