// Device code shared by the other file: a function and a variable.
__device__ int factor = 3;

__device__ int scale(int x) { return x * factor; }
