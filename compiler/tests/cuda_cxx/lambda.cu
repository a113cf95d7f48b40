template <typename F> __device__ int apply(F f, int x) { return f(x); }
__global__ void child(int *out, int k) { auto twice = [k](int v) { return 2 * v + k; }; out[threadIdx.x] = apply(twice, threadIdx.x); }
__global__ void parent(int *out) { auto launch = [out](int k) { child<<<1, 32>>>(out, k); }; launch(3); }
