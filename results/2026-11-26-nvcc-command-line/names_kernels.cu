// Kernel template instances whose names Clang 22 spells otherwise by default (a constrained
// template, `template <class T, T V>`, an `auto *` parameter), defined here and launched by
// host code another file holds (names_main.cu, compiled by nvcc) and from the device. (An
// array's address as the argument is still named otherwise: README, "Not yet through Clang".)
template <class T> concept Small = sizeof(T) <= 4;

__device__ int bias = 10;

template <class T, T V> __global__ void fill(T *p) { p[threadIdx.x] = V + (T)threadIdx.x; }
template <class T> requires Small<T> __global__ void twice(T *p) { p[threadIdx.x] *= 2; }
template <auto *P> __global__ void add_bias(int *p) { p[threadIdx.x] += *P; }

template __global__ void fill<int, 5>(int *);
template __global__ void twice<int>(int *);
template __global__ void add_bias<&bias>(int *);

// A parent that launches the same instances from the device.
__global__ void parent(int *p) {
    if (threadIdx.x == 0) {
        fill<int, 7><<<1, 32>>>(p + 32);
        twice<int><<<1, 32>>>(p + 32);
        add_bias<&bias><<<1, 32>>>(p + 32);
    }
}
