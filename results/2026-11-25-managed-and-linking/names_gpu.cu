// Kernel templates of `auto` parameters launched by nvcc's host code and from the device
// (2026-11-25): with cdpc's device code under Clang's spelling (`_Z2akITnDaLi5EEvPi`), nvcc's
// host launch of `ak<5>` found no kernel; under nvcc's (`_Z2akILi5EEvPi`) it runs.
#include <cstdio>
enum class Color { Red, Green, Blue };
template <auto V> __global__ void ak(int *p) { p[threadIdx.x] += static_cast<int>(V) * (threadIdx.x + 1); }
template <decltype(auto) V> __global__ void dk(int *p) { p[threadIdx.x] *= V; }
template <auto V> __global__ void parent(int *p) {
    ak<V><<<1, 8>>>(p);
    dk<3><<<1, 8>>>(p);
}
int main() {
    int *p;
    cudaMallocManaged(&p, 8 * sizeof(int));
    for (int i = 0; i < 8; i++) p[i] = i;
    ak<5><<<1, 8>>>(p);
    cudaError_t first = cudaDeviceSynchronize();
    parent<Color::Blue><<<1, 1>>>(p);
    ak<'a'><<<1, 8>>>(p);
    cudaError_t e = cudaDeviceSynchronize();
    printf("launch %s, sync %s, last %s\n", cudaGetErrorName(first), cudaGetErrorName(e), cudaGetErrorName(cudaGetLastError()));
    for (int i = 0; i < 8; i++) printf("%d%c", p[i], i + 1 < 8 ? ' ' : '\n');
    return e == cudaSuccess ? 0 : 1;
}
