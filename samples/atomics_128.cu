// atomics_128.cu -- CUDA's 128-bit atomicCAS and atomicExch (sm_90) in a child grid.
//
// Demonstrates: a parent kernel launches a child grid whose 4 blocks of 256 threads each add
// their index into 16-byte records { count, sum } with 128-bit atomicCAS loops: the device
// form and the system form on one record each for the grid, the block form on one record per
// block. Then each thread swaps two values through its own 16-byte slot with atomicExch and
// keeps what it took out. nvcc's crt/sm_90_rt.h defines these templates over its own
// built-ins; through Clang they come from cdpc's additions header (section 16).
//
// Seed: CUDA programming guide, atomicCAS and atomicExch ("128-bit atomicCAS() is only
// supported by devices of compute capability 9.x and higher").
//
// Host launch: atomics128_parent<<<1, 1>>>(records, blocks, slots, taken) with records: u64[4],
// blocks: u64[8], slots: u64[2048], taken: u64[4096], all zeroed.
// Expected result: records = { 1024, 523776 } twice (the count and sum of 0..1023); blocks[b] =
// { 256, 65536 b + 32640 }; slots[t] = { t, 3 t + 7 }; taken[t] = { 0, 0, t, 2 t } (what each
// exchange returned). Deterministic: the differential run also compares nvcc's bytes.

struct __align__(16) Record {
    unsigned long long count;
    unsigned long long sum;
};

__device__ void add(Record *r, unsigned long long t, int scope)
{
    Record seen = *r;
    for (;;) {
        Record next = {seen.count + 1, seen.sum + t};
        Record old = scope == 0 ? atomicCAS(r, seen, next) : scope == 1 ? atomicCAS_block(r, seen, next) : atomicCAS_system(r, seen, next);
        if (old.count == seen.count && old.sum == seen.sum)
            return;
        seen = old;
    }
}

extern "C" __global__ void atomics128_child(Record *records, Record *blocks, Record *slots, Record *taken)
{
    unsigned long long t = blockIdx.x * blockDim.x + threadIdx.x;
    add(&records[0], t, 0);
    add(&blocks[blockIdx.x], t, 1);
    add(&records[1], t, 2);
    Record first = {t, 2 * t};
    Record second = {t, 3 * t + 7};
    taken[2 * t] = atomicExch(&slots[t], first);
    taken[2 * t + 1] = atomicExch_block(&slots[t], second);
}

extern "C" __global__ void atomics128_parent(Record *records, Record *blocks, Record *slots, Record *taken)
{
    atomics128_child<<<4, 256>>>(records, blocks, slots, taken);
}
