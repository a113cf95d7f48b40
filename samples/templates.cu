// templates.cu -- function templates in device code.
//
// Demonstrates: a device function template instantiated for two types, once with its
// argument deduced (`scale(i, 2)`: T = int) and once explicit (`scale<float>`); a template
// with a type and a non-type parameter (`store_n<float, 2>`); and a kernel template launched
// from the device with an explicit argument (`child<1><<<1, 64>>>`). Each instance is an
// ordinary function with nvcc's mangled name (`_Z5scaleIiET_S0_S0_`,
// `_Z5childILi1EEvPi`).
//
// Host launch: parent_templates<<<1, 64>>>(data, halves, threes);
//   data: int[64] (zero), halves: float[64], threes: float[2].
// Result: data[i] = 3 * i (the parent writes i, the child adds 2 * i),
// halves[i] = i * 0.5, threes = {3, 3}.

template <typename T>
__device__ T scale(T x, T by) {
    return x * by;
}

template <typename T, int N>
__device__ void store_n(T *out, T value) {
    for (int i = 0; i < N; i++)
        out[i] = value;
}

template <int STRIDE> __global__ void child(int *data) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i * STRIDE] += scale(i, 2);
}

extern "C" __global__ void parent_templates(int *data, float *halves, float *threes) {
    int i = threadIdx.x;
    data[i] = i;
    halves[i] = scale<float>(i, 0.5f);
    __syncthreads();
    if (i == 0) {
        child<1><<<1, 64>>>(data);
        store_n<float, 2>(threes, 3.0f);
    }
}
