// flags: --arch sm_80
// A compare-and-swap of 16 bytes through the compiler's `__atomic` built-in: PTX has 128-bit
// atomics from sm_90 on. nvcc refuses it too ("calling a __host__ function
// ("__atomic_compare_exchange_16") from a __global__ function"); LLVM stopped on it before
// ("unsupported cmpxchg", E1023, with a note that called it cdpc's bug).
__global__ void swap(unsigned __int128 *p, unsigned __int128 expected, unsigned __int128 desired)
{
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    p[1] = expected;
}
