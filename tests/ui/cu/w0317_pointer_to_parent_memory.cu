// The kernel language's E0307 through CUDA C++, a warning there (W0317): a child grid cannot
// see its parent's local or shared memory, and nvcc 13.5 compiles this with a warning for the
// local pointers and says nothing of the shared one. At -O3 the pointer kept in `alias` is
// traced too.
__global__ void child(int *data) { data[threadIdx.x] += 1; }
__device__ int value;
__global__ void parent(int *data) {
    int x_array[10];
    int local = 5;
    __shared__ int tile[32];
    int *alias = &local;
    child<<<1, 1>>>(x_array);
    child<<<1, 1>>>(&local);
    child<<<1, 1>>>(tile + 4);
    child<<<1, 1>>>(alias);
    child<<<1, 1>>>(&value);
    child<<<1, 1>>>(data + 1);
    data[0] = x_array[1] + local + tile[0];
}
