__global__ void child(int *out, int v) { out[threadIdx.x] = v; }
__global__ void parent(int *out, int mode) {
    switch (mode) {
    case 0: child<<<1, 32>>>(out, 10); break;
    case 1:
    case 2: child<<<2, 32>>>(out, 20); // falls through
    default: out[0] += 1;
    }
}
