template <typename... T> __device__ int count(T... xs) { return sizeof...(xs); }
template <typename... Args> __global__ void child(int *out, Args... args) { out[threadIdx.x] = count(args...); }
__global__ void parent(int *out) { child<<<1, 1>>>(out, 1, 2.0f, 'c'); child<<<1, 1>>>(out); }
