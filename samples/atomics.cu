// atomics.cu -- CUDA's atomic functions as nvcc compiles them: atomicCAS relaxed and of device
// scope, and the unsigned _block and _system minimum and maximum comparing unsigned.
//
// Demonstrates: a parent grid of one thread sets up per-block slots and launches a child grid
// whose threads (1) take the unsigned atomicMax_block / atomicMin_block / atomicMax_system /
// atomicMin_system of values at and above 2^31 (2^63 for unsigned long long), where a signed
// comparison gives another answer (Clang 22 writes them as signed instructions; cdpc defines
// them as nvcc's unsigned ones), and (2) claim 64 slots with atomicCAS, 8 threads a slot, as
// a graph search claims vertices (Clang writes atomicCAS with a system-wide fence; cdpc gives
// it nvcc's order: same result, the fences only cost time).
//
// Seed: cuda-programming-guide's atomic functions (atomicMax, atomicMin, atomicCAS and their
// _block and _system forms, "atomic functions do not act as memory fences").
//
// Host launch: atomics_parent<<<1, 1>>>(u, ull, claims, 4)
//   u: unsigned int[16], ull: unsigned long long[8] (an i64 buffer), claims: int[65].
// Expected result, for child block b of 4 of 128 threads, thread t = 128 * b + threadIdx.x:
//   u[4b] = max(5, 2^31 + t) = 2^31 + 128b + 127;  u[4b + 1] = min(7, 2^31 + t) = 7;
//   u[4b + 2] = max(5, 2^31 - 1 + t) = 2^31 + 128b + 126;  u[4b + 3] = min(2^32 - 1, 2^31 - 1 + t)
//   = 2^31 - 1 + 128b; ull[2b] = 2^63 + 128b + 127; ull[2b + 1] = 2^63 - 1 + 128b (as i64:
//   the same bits); claims[0..64] == 1, claims[64] == 64; launch_errors == 0.

__device__ unsigned int launch_errors = 0;

extern "C" __global__ void atomics_child(unsigned int *u, unsigned long long *ull, int *claims)
{
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int b = blockIdx.x;
    // Each block's own slots for the _block forms: their atomicity is the block's.
    atomicMax_block(&u[4 * b], 0x80000000u + t);
    atomicMin_block(&u[4 * b + 1], 0x80000000u + t);
    atomicMax_system(&u[4 * b + 2], 0x7fffffffu + t);
    atomicMin_system(&u[4 * b + 3], 0x7fffffffu + t);
    atomicMax_block(&ull[2 * b], 0x8000000000000000ull + t);
    atomicMin_system(&ull[2 * b + 1], 0x7fffffffffffffffull + t);
    // One winner a slot: the slot becomes 1 and the count of winners 64, whoever wins.
    if (atomicCAS(&claims[t % 64], 0, 1) == 0)
        atomicAdd(&claims[64], 1);
}

extern "C" __global__ void atomics_parent(unsigned int *u, unsigned long long *ull, int *claims, int blocks)
{
    for (int b = 0; b < blocks; b++) {
        u[4 * b] = 5;
        u[4 * b + 1] = 7;
        u[4 * b + 2] = 5;
        u[4 * b + 3] = 0xffffffffu;
        ull[2 * b] = 5;
        ull[2 * b + 1] = 0xffffffffffffffffull;
    }
    for (int i = 0; i <= 64; i++)
        claims[i] = 0;
    atomics_child<<<blocks, 128>>>(u, ull, claims);
    if (cudaGetLastError() != cudaSuccess)
        atomicAdd(&launch_errors, 1u);
}
