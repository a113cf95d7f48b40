/* cdpc's cooperative_groups.h for the kernel language: empty. Cooperative groups' C++ API
 * (`cooperative_groups::thread_block`, `tiled_partition<N>`, the groups' member functions) is
 * CUDA C++: a `.cdp` file that uses it gets E0923 ("rename the file `.cu`"), and Clang compiles
 * it with CUDA's own header (docs/KERNEL-LANGUAGE.md). The header exists so that a file that
 * only includes it still compiles. */
#ifndef __CDPC_COOPERATIVE_GROUPS_H__
#define __CDPC_COOPERATIVE_GROUPS_H__
#endif
