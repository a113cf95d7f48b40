// Host code as CUDA programs write it around their kernels: random inputs scaled by
// `RAND_MAX` (Clang's default warning about the int-to-float conversion, which neither nvcc
// nor GCC gives), a check macro, a device-side launch. A clean file: nothing printed.
#include <cstdio>
#include <cstdlib>
#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(e)); exit(1); } } while (0)
__global__ void child(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
__global__ void parent(float *x, int n) { child<<<(n + 255) / 256, 256>>>(x, n); }
void run(float *host, int n) {
    for (int i = 0; i < n; i++) host[i] = static_cast<float>(rand()) / RAND_MAX;
    float *d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice));
    parent<<<1, 1>>>(d, n);
    CHECK(cudaDeviceSynchronize());
}
