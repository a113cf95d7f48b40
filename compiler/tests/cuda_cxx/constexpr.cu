constexpr int square(int x) { return x * x; }
constexpr int kThreads = square(4) * 2;
__global__ void child(int *out) { out[threadIdx.x] = kThreads; }
__global__ void parent(int *out) { static_assert(kThreads == 32, "32 threads"); child<<<1, kThreads>>>(out); }
