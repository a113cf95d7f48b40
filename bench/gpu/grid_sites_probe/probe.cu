// probe.cu -- how many grids reach the device runtime for one child launched at three sites
// of one divergent branch (bench/gpu/branch_sites.cdp's parent).
//
// Every launch of `child` stands for one grid of one block; its thread 0 reads %gridid, the
// number of the grid it really runs in (an aggregated launch's records all run in one grid of
// `child__agg`), and counts itself in `seen[gridid % SLOTS]`. probe.py counts the distinct
// slots: without aggregation one grid per launch, at grid granularity one per parent grid and
// arena launch.
#define SLOTS 8192

extern "C" __global__ void child(unsigned int *counter, unsigned int *seen)
{
    atomicAdd(counter, 1u);
    if (threadIdx.x == 0) {
        unsigned long long grid;
        asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid));
        atomicAdd(&seen[grid % SLOTS], 1u);
    }
}

extern "C" __global__ void parent(unsigned int *counter, unsigned int *seen)
{
    unsigned int lane = threadIdx.x % 4;
    if (lane < 2) {
        child<<<1, 32>>>(counter, seen);
    } else if (lane == 2) {
        child<<<1, 32>>>(counter, seen);
    } else {
        child<<<1, 32>>>(counter, seen);
    }
}
