template <typename T, int N> struct Buf { T data[N]; __device__ T sum() const { T s = 0; for (int i = 0; i < N; ++i) s += data[i]; return s; } };
template <typename T> __global__ void child(T *out, Buf<T, 4> b) { out[threadIdx.x] = b.sum(); }
__global__ void parent(float *out) { Buf<float, 4> b{{1, 2, 3, 4}}; child<<<1, 32>>>(out, b); }
