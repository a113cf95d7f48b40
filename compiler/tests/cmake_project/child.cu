// Launched from parent.cu's kernel on the device.
__global__ void child(int *out, int base) {
    out[threadIdx.x] = 3 * (base + (int)threadIdx.x) + 1;
}
