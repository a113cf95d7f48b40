/* cdpc's cooperative_groups.h: the namespace is not declared here; cdpc's front end reads
 * `cooperative_groups::NAME` (and `cg::NAME` through `namespace cg = cooperative_groups;`) as
 * built-in names (compiler/src/front/coop_groups.rs, compiler/src/sema/coop_groups.rs):
 * thread_block, this_thread_block(), sync(block) and the block's member functions. The header
 * exists so that the #include of real programs succeeds. */
#ifndef __CDPC_COOPERATIVE_GROUPS_H__
#define __CDPC_COOPERATIVE_GROUPS_H__
#endif
