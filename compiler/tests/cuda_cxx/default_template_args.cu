template <typename T = float, int N = 4> __global__ void child(T *out) { out[threadIdx.x % N] = T(N); }
__global__ void parent(float *f, int *i) { child<<<1, 32>>>(f); child<int, 8><<<1, 32>>>(i); }
