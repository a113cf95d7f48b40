// Clang's own errors come back as E1000 at their line and column, with its notes as labels.
__global__ void child(int *p) {}
__global__ void parent() {
    child<<<1, 1>>>(1.5);
}
