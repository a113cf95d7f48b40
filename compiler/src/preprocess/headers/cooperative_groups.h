/* cdpc's cooperative_groups.h: the namespace is not declared here; cdpc's front end reads
 * `cooperative_groups::NAME` (and `cg::NAME` through `namespace cg = cooperative_groups;`) as
 * built-in names (compiler/src/front/coop_groups.rs, compiler/src/sema/coop_groups/):
 * thread_block, coalesced_group and thread_block_tile<N> (N up to 32), this_thread_block(),
 * coalesced_threads(), tiled_partition<N>(block), this_thread(), sync, thread_rank, group_size
 * and the groups' member functions. The header exists so that the #include of real programs
 * succeeds. */
#ifndef __CDPC_COOPERATIVE_GROUPS_H__
#define __CDPC_COOPERATIVE_GROUPS_H__
#endif
