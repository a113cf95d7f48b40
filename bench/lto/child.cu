// bench/lto/check.sh's child, in a file of its own: each thread adds its index + 1 to out[t].
__global__ void child(int *out, int t) {
    atomicAdd(&out[t], threadIdx.x + 1);
}
