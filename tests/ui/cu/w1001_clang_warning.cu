// Clang's warnings come back as W1001, its flag in the message; the file still compiles.
__global__ void child(int *p) {
    int *scratch = new int[4];
    scratch[0] = *p;
    delete scratch;
}
__global__ void parent(int *p) { child<<<1, 1>>>(p); }
