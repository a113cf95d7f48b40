#include <cstdio>
template <class T> concept Small = sizeof(T) <= 4;
extern __device__ int bias;
template <class T, T V> __global__ void fill(T *p);
template <class T> requires Small<T> __global__ void twice(T *p);
template <auto *P> __global__ void add_bias(int *p);
__global__ void parent(int *p);

int main() {
    int *p;
    cudaMallocManaged(&p, 64 * sizeof(int));
    fill<int, 5><<<1, 32>>>(p);
    twice<int><<<1, 32>>>(p);
    add_bias<&bias><<<1, 32>>>(p);
    parent<<<1, 1>>>(p);
    cudaError_t e = cudaDeviceSynchronize();
    printf("%s:", cudaGetErrorString(e));
    for (int i = 0; i < 64; i++) printf(" %d", p[i]);
    printf("\n");
    return e == cudaSuccess ? 0 : 1;
}
