// The program of launch.ll, as CUDA C++: what nvcc and cdpc's Clang path make of it is the
// oracle of what cdpc makes of the IR.
extern "C" __global__ void child(int *p, int n) { p[threadIdx.x] = n; }

extern "C" __global__ void parent(int *p) {
    if (threadIdx.x == 0) {
        child<<<2, 32>>>(p, 7);
    }
}
