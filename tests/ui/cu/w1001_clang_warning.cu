// Clang's warnings come back as W1001, its flag in the message; the file still compiles. nvcc
// gives this one too (#940-D), so -Werror makes it an error as nvcc's does (W1035 is for those
// it does not give).
__device__ int pick(int a) {
    if (a > 0)
        return 1;
}
__global__ void child(int *p) { p[0] = pick(*p); }
__global__ void parent(int *p) { child<<<1, 1>>>(p); }
