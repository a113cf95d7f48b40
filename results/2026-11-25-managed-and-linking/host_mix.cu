// Host code of everyday CUDA C++ programs around device-side launches: symbols copied both
// ways, a symbol's address, textures, Thrust with a device lambda, cudaLaunchKernel, a default
// argument, printf from a device-launched grid.
#include <cstdio>
#include <vector>
#include <thrust/device_vector.h>
#include <thrust/transform.h>
#include <thrust/reduce.h>

struct Params { float scale; int offset; };
__constant__ Params params = {2.0f, 3};
__constant__ int table[8];
__device__ int counter;
__device__ float results[64];

__global__ void child(const int *in, int n, int extra = 10) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        results[i] = in[i] * params.scale + params.offset + table[i % 8] + extra;
        atomicAdd(&counter, 1);
    }
    if (i == 0) printf("child: n=%d scale=%f first=%lld name=%s\n", n, params.scale, (long long)in[0], "ok");
}

__global__ void parent(const int *in, int n) {
    child<<<(n + 31) / 32, 32>>>(in, n);
}

__global__ void sample(cudaTextureObject_t tex, float *out, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(tex, i) * 2.0f;
}

int main() {
    const int n = 64;
    std::vector<int> host(n);
    for (int i = 0; i < n; i++) host[i] = i * 3 - 7;
    int *in;
    cudaMalloc(&in, n * sizeof(int));
    cudaMemcpy(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice);
    int t[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    cudaMemcpyToSymbol(table, t, sizeof t);
    Params p = {0.5f, -1};
    cudaMemcpyToSymbol(params, &p, sizeof p);
    int zero = 0;
    cudaMemcpyToSymbol(counter, &zero, sizeof zero);
    parent<<<1, 1>>>(in, n);
    void *args[] = {&in, (void *)&n};
    cudaLaunchKernel((const void *)parent, dim3(1), dim3(1), args, 0, 0);
    cudaDeviceSynchronize();
    float r[n];
    cudaMemcpyFromSymbol(r, results, sizeof r);
    int count = 0;
    cudaMemcpyFromSymbol(&count, counter, sizeof count);
    float *results_address = nullptr;
    cudaGetSymbolAddress((void **)&results_address, results);
    float r5 = 0;
    cudaMemcpy(&r5, results_address + 5, sizeof r5, cudaMemcpyDeviceToHost);
    printf("count %d r0 %g r5 %g r63 %g via address %g\n", count, r[0], r[5], r[63], r5);

    // Texture object over linear memory.
    float *lin;
    cudaMalloc(&lin, n * sizeof(float));
    cudaMemcpy(lin, r, sizeof r, cudaMemcpyHostToDevice);
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = lin;
    res.res.linear.desc = cudaCreateChannelDesc<float>();
    res.res.linear.sizeInBytes = n * sizeof(float);
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex = 0;
    cudaCreateTextureObject(&tex, &res, &td, nullptr);
    float *out;
    cudaMalloc(&out, n * sizeof(float));
    sample<<<1, n>>>(tex, out, n);
    float o[n];
    cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost);
    printf("texture %g %g\n", o[1], o[62]);

    // Thrust with a device lambda.
    thrust::device_vector<int> v(host.begin(), host.end());
    thrust::transform(v.begin(), v.end(), v.begin(), [] __device__ (int x) { return x * x + 1; });
    long long total = thrust::reduce(v.begin(), v.end(), 0LL);
    printf("thrust %lld\n", total);
    cudaError_t e = cudaGetLastError();
    printf("status %s\n", cudaGetErrorName(e));
    return e == cudaSuccess ? 0 : 1;
}
