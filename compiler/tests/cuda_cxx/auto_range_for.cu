__global__ void child(float *out, float s) { out[threadIdx.x] *= s; }
__global__ void parent(float *out) {
    float scales[3] = {1.0f, 2.0f, 0.5f};
    for (auto s : scales) { auto *p = out; child<<<1, 32>>>(p, s); }
}
