__global__ void child(int *data) { data[0] = 1; }
__global__ void parent(int *data) {
    child<<<1, 1>>>(data);
    cudaDeviceSynchronize();
}
