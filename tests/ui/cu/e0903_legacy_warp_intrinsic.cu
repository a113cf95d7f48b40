// CUDA 8's warp functions without `_sync`: nvcc's headers leave them undeclared for sm_70 and
// newer ("identifier \"__shfl_down\" is undefined"), and cdpc refuses them too, at each call;
// `-flegacy-warp-intrinsics` compiles them as their `_sync` forms with W0902.
__global__ void reduce(int *v)
{
    int x = v[threadIdx.x];
    for (int d = 16; d > 0; d /= 2)
        x += __shfl_down(x, d);
    if (__any(x < 0))
        v[0] = x;
}
