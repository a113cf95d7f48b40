// The library half of a two-file program (managed_main.cu is the other): it defines the managed
// variable that the other file's host code reads and writes, and a kernel that launches another.
__managed__ int counter;
__managed__ int scores[4];
__global__ void add(int k) { atomicAdd(&counter, k); atomicAdd(&scores[threadIdx.x % 4], 1); }
__global__ void bump(int k) { add<<<1, 8>>>(k); }
