// A device-side launch whose parameters need more than the 32764 bytes a launch can pass on
// sm_90: the kernel language's E0304, at the kernel's definition as there, the launch beside it.
struct Big { double values[4096]; };
__global__ void child(struct Big big, int *out) { out[0] = (int)big.values[0]; }
__global__ void parent(int *out) {
    struct Big big;
    big.values[0] = 1.0;
    child<<<1, 1>>>(big, out);
}
