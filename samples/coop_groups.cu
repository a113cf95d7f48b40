// coop_groups.cu -- cooperative groups in a child grid: coalesced groups and tiles.
//
// Demonstrates: `cg::coalesced_threads()` in divergent branches (each branch's threads form
// their own group; in the third warp every thread takes the first branch, so the group is
// the whole warp) and its thread_rank, size, ballot (packed to the group's ranks), any, all,
// shfl by rank (rank 0 and rank 1), shfl_up, shfl_down and meta_group_rank/size;
// `cg::tiled_partition<N>(block)` for N = 1, 2, 4, 8, 16, 32, kept as a
// `thread_block_tile<N>` (the stored meta group) and as the `thread_block_tile<N,
// thread_block>` that tiled_partition returns, with thread_rank, meta_group_rank/size,
// ballot, any, all, shfl, shfl_up, shfl_down, shfl_xor and sync; `cg::this_thread()`; groups
// passed to a device function by value and by const reference. The child's block is
// two-dimensional (48 x 2), so ranks come from the block's linear thread rank.
//
// Seed: NVIDIA's cooperative_groups.h (CUDA 13), whose inline definitions are the semantics;
// cuda-samples' cdpAdvancedQuicksort (coalesced ballot and shfl) and cdpQuadtree (a tile of
// 32 with any, ballot, shfl, shfl_up).
//
// Host launch: coop_groups_parent<<<1, 1>>>(in, coalesced, tiles, ranks, metas);
//   in: int[96] = (7 i + 3) % 11; coalesced: unsigned[96 * 10]; tiles: unsigned[96 * 24];
//   ranks, metas: unsigned[96].
// The parent launches coop_groups_child<<<1, dim3(48, 2)>>> with the same buffers.
//
// Result, for thread t (the block's linear rank y * 48 + x; its lane is t % 32):
//   ranks[t] = t % 32 + (t % 16) << 5 + (t % 8) << 10 + (t % 4) << 15 (the tiles' thread_rank);
//   metas[t] = t / 32 + (t / 16) << 5 + (t / 8) << 10 + (t / 4) << 15 (their meta_group_rank);
//   coalesced[10 t + k] and tiles[24 t + k]: the values the child writes below, which the
//   differential run compares with nvcc's build byte for byte (the manifest states only the
//   two closed forms above).

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ unsigned group_by_value(cg::coalesced_group g, int v) {
    return g.ballot(v & 1) ^ (g.thread_rank() << 24);
}

__device__ unsigned tile_by_ref(const cg::thread_block_tile<8> &t, int v) {
    return (unsigned)t.shfl_down(v, 3) + (t.meta_group_rank() << 8) + (t.meta_group_size() << 16);
}

// The coalesced group of the threads that take one branch: 10 values per thread.
__device__ void coalesced_values(unsigned *out, int v) {
    cg::coalesced_group g = cg::coalesced_threads();
    out[0] = g.thread_rank();
    out[1] = g.size() + (g.num_threads() << 8);
    out[2] = g.ballot(v > 5);
    out[3] = (unsigned)g.shfl(v, 1);
    out[4] = (unsigned)g.shfl(v * 3, 0);
    out[5] = g.any(v > 9) + 2 * g.all(v > 0) + 4 * g.any(v > 100) + 8 * g.all(v > 4);
    out[6] = (unsigned)g.shfl_up(v, 1);
    out[7] = (unsigned)g.shfl_down(v, 2u);
    out[8] = g.meta_group_rank() + (g.meta_group_size() << 8);
    g.sync();
    cg::sync(g);
    out[9] = group_by_value(g, v);
}

__device__ void tile_values(unsigned *out, cg::thread_block_tile<32> t, int v) {
    out[0] = t.thread_rank() + (t.meta_group_rank() << 8) + (t.meta_group_size() << 16);
    out[1] = t.ballot(v & 1);
    out[2] = t.any(v == 10) + 2 * t.all(v < 11) + 4 * t.all(v > 0);
    out[3] = (unsigned)t.shfl(v, 5) + ((unsigned)t.shfl_xor(v, 9) << 8);
    out[4] = (unsigned)t.shfl_up(v, 3) + ((unsigned)t.shfl_down(v, 3) << 8);
}

extern "C" __global__ void coop_groups_child(const int *in, unsigned *coalesced, unsigned *tiles, unsigned *ranks, unsigned *metas) {
    cg::thread_block cta = cg::this_thread_block();
    unsigned t = cta.thread_rank();
    int v = in[t];
    unsigned lane = t % 32;

    // Two divergent branches; the third warp takes the first one whole.
    if (t >= 64 || v % 3 != 0) {
        coalesced_values(coalesced + 10 * t, v);
    } else {
        coalesced_values(coalesced + 10 * t, v + 20);
    }

    cg::thread_block_tile<32> t32 = cg::tiled_partition<32>(cta);
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(cta);
    cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(cta);
    cg::thread_block_tile<4> t4 = cg::tiled_partition<4>(cta);
    cg::thread_block_tile<2> t2 = cg::tiled_partition<2>(cta);
    cg::thread_block_tile<1> t1 = cg::tiled_partition<1>(cta);
    ranks[t] = t32.thread_rank() + (t16.thread_rank() << 5) + (t8.thread_rank() << 10) + (t4.thread_rank() << 15);
    metas[t] = t32.meta_group_rank() + (t16.meta_group_rank() << 5) + (t8.meta_group_rank() << 10) + (t4.meta_group_rank() << 15);

    unsigned *row = tiles + 24 * t;
    tile_values(row, t32, v);
    row[5] = t16.ballot(v > 4) + (t8.ballot(v > 4) << 16) + (t4.ballot(v > 4) << 24) + (t2.ballot(v > 4) << 28) + (t1.ballot(v > 4) << 30);
    row[6] = (unsigned)t16.shfl(v, 15) + ((unsigned)t8.shfl(v, 2) << 8) + ((unsigned)t4.shfl(v, 3) << 16) + ((unsigned)t2.shfl(v, 1) << 24);
    row[7] = (unsigned)t16.shfl_xor(v, 5) + ((unsigned)t8.shfl_xor(v, 7) << 8) + ((unsigned)t4.shfl_xor(v, 2) << 16) + ((unsigned)t2.shfl_xor(v, 1) << 24);
    row[8] = (unsigned)t16.shfl_up(v, 4) + ((unsigned)t8.shfl_up(v, 1) << 8) + ((unsigned)t4.shfl_up(v, 2) << 16) + ((unsigned)t1.shfl_up(v, 1) << 24);
    row[9] = (unsigned)t16.shfl_down(v, 4) + ((unsigned)t8.shfl_down(v, 1) << 8) + ((unsigned)t4.shfl_down(v, 2) << 16) + ((unsigned)t2.shfl_down(v, 1) << 24);
    row[10] = t16.any(v == 0) + 2 * t8.any(v == 0) + 4 * t4.any(v == 0) + 8 * t2.any(v == 0) + 16 * t1.any(v == 0);
    row[11] = t16.all(v > 0) + 2 * t8.all(v > 0) + 4 * t4.all(v > 0) + 8 * t2.all(v > 0) + 16 * t1.all(v > 0);
    row[12] = t16.meta_group_size() + (t8.meta_group_size() << 8) + (t4.meta_group_size() << 16) + (t2.meta_group_size() << 24);
    row[13] = t2.thread_rank() + 2 * t1.thread_rank() + 4 * t2.meta_group_rank() + (t1.meta_group_rank() << 8) + (t1.meta_group_size() << 16);
    row[14] = t32.size() + (t16.num_threads() << 6) + (t8.size() << 12) + (t4.size() << 18) + (t2.size() << 24) + (t1.size() << 30);

    // What tiled_partition returns, without the conversion: the meta group from the block.
    cg::thread_block_tile<8, cg::thread_block> e8 = cg::tiled_partition<8>(cta);
    row[15] = e8.thread_rank() + (e8.meta_group_rank() << 8) + (e8.meta_group_size() << 16);
    row[16] = e8.ballot(v & 2) + ((unsigned)e8.shfl(v, 7) << 8) + ((unsigned)cg::tiled_partition<4>(cta).shfl_xor(v, 3) << 16);
    row[17] = tile_by_ref(t8, v);

    cg::thread_block_tile<1> me = cg::this_thread();
    row[18] = me.thread_rank() + (me.meta_group_rank() << 8) + (me.meta_group_size() << 16) + (me.size() << 24);
    row[19] = cg::thread_rank(t16) + (cg::group_size(t8) << 8) + (cg::thread_rank(cta) << 16);

    t32.sync();
    t16.sync();
    cg::sync(t8);
    cg::sync(t4);
    cg::sync(cta);
    // After the barrier, every thread reads its neighbour's first slot of the tile rows.
    row[20] = tiles[24 * ((t + 1) % 96)] + lane;
}

extern "C" __global__ void coop_groups_parent(const int *in, unsigned *coalesced, unsigned *tiles, unsigned *ranks, unsigned *metas) {
    coop_groups_child<<<1, dim3(48, 2, 1)>>>(in, coalesced, tiles, ranks, metas);
}
