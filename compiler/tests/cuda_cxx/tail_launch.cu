__global__ void work(int *out) { out[threadIdx.x] += 1; }
__global__ void done(int *out) { out[0] = -out[0]; }
__global__ void parent(int *out) {
    work<<<1, 32, 0, cudaStreamFireAndForget>>>(out);
    done<<<1, 1, 0, cudaStreamTailLaunch>>>(out);
}
