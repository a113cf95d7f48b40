// Conversions between __int128 and floating point in device code, compiled by nvcc and by cdpc
// (CUDA C++ through Clang): each thread converts one signed and one unsigned 128-bit integer
// to double and float, and one double and one float to both 128-bit integer types.
extern "C" __global__ void conv(const __int128 *a, const unsigned __int128 *u, const double *d, const float *f,
                                double *od, float *of, __int128 *oa, unsigned __int128 *ou, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        od[2 * i] = (double)a[i];
        od[2 * i + 1] = (double)u[i];
        of[2 * i] = (float)a[i];
        of[2 * i + 1] = (float)u[i];
        oa[2 * i] = (__int128)d[i];
        oa[2 * i + 1] = (__int128)f[i];
        ou[2 * i] = (unsigned __int128)fabs(d[i]);
        ou[2 * i + 1] = (unsigned __int128)fabsf(f[i]);
    }
}
