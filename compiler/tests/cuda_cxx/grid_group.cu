#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void child(unsigned long long *out) { cg::grid_group g = cg::this_grid(); out[g.thread_rank()] = g.size(); }
__global__ void parent(unsigned long long *out) { child<<<2, 32>>>(out); }
