union Bits { float f; unsigned u; };
__global__ void child(unsigned *out, Bits b) { out[threadIdx.x] = b.u; }
__global__ void parent(unsigned *out) { Bits b; b.f = 1.0f; child<<<1, 32>>>(out, b); }
