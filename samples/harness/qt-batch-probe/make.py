#!/usr/bin/env python3
"""Copies of KLAP's QT for a probe: is the time nvcc's build of QT spends in its launches,
so that aggregating them could beat it?

    make.py --corpus ../shared/corpus --out DIR [--batches 8,32,128]

writes, each a copy of the corpus's `klap/` with QT's files rewritten (the corpus itself is only
read), for `corpus-timing.py --stage build --corpus DIR/NAME --programs QT --variants nvcc`:

  DIR/hand<K>        QT aggregated by hand: the launches of all blocks go into one global list
                     of records, and the block whose record completes a batch of K records
                     launches the batch as one grid (4 blocks a record); when no block is left
                     that could add a record, the block that sees it launches the partial batch.
  DIR/fixed          QT with the child indexing of NVIDIA's cdpQuadtree (each child block reads
                     its own node, `&children[child_offset]`, ids 4 * id + i) instead of KLAP's
                     (every child grid of a level reads the level's first four nodes), and room
                     for the deepest level's nodes in main.cu.
  DIR/fixed-hand<K>  both.

Then `bundle-merge.py OUT.tar.xz base.tar.xz DIR-hand8.tar.xz:-hand8+nvcc ...` and the run stage
time them beside nvcc's build of the original.
"""
import argparse
import os
import shutil
import sys

QT = os.path.join("klap", "test", "QT")
LAUNCH = "build_quadtree_kernel<<<4, NUM_THREADS_PER_BLOCK, 4 *NUM_WARPS_PER_BLOCK *sizeof(int)>>>("
HEADER = "__global__\nvoid build_quadtree_kernel(Quadtree_node *nodes, Points *points, Parameters params)\n{"

# NVIDIA's indexing (cuda-samples/cdpQuadtree), applied to KLAP's kernel and main.cu.
FIX_KERNEL = [
    ("    node.set_id(node.id() + blockIdx.x);\n", ""),
    ("Quadtree_node *children = &nodes[params.num_nodes_at_this_level];",
     "Quadtree_node *children = &nodes[params.num_nodes_at_this_level - (node.id() & ~3)];"),
    ("set_id(4*node.id()+ 4)", "set_id(4*node.id()+ 1)"),
    ("set_id(4*node.id()+ 8)", "set_id(4*node.id()+ 2)"),
    ("set_id(4*node.id()+12)", "set_id(4*node.id()+ 3)"),
    (LAUNCH + "children, points,", LAUNCH + "&children[child_offset], points,"),
]
FIX_MAIN = [("i < max_depth ; ++i, num_nodes_at_level", "i <= max_depth ; ++i, num_nodes_at_level")]

BATCHING = r'''
// Aggregated by hand (samples/harness/qt-batch-probe/make.py): records in one global list, a
// batch of QT_BATCH records launched as one grid by the block whose record completes it; the
// partial batch by the block that finds no other block left that could add a record.
#define QT_BATCH @BATCH@
#define QT_MAXREC (1 << 20)
struct QtRec { Quadtree_node *nodes; Points *points; Parameters params; };
__device__ QtRec g_recs[QT_MAXREC];
__device__ unsigned int g_filled[QT_MAXREC / QT_BATCH];
__device__ unsigned int g_cursor;
__device__ unsigned int g_live;  // blocks launched and not yet ended
__device__ unsigned int g_overflow;
__global__ void qt_agg(QtRec *recs, int n);

__device__ void qt_launch_batch(unsigned first, unsigned n)
{
    atomicAdd(&g_live, 4 * n);
    qt_agg<<<4 * n, NUM_THREADS_PER_BLOCK, 4 * (NUM_THREADS_PER_BLOCK / 32) * sizeof(int)>>>(&g_recs[first], n);
}

__device__ void qt_push(Quadtree_node *children, Points *points, Parameters params)
{
    unsigned slot = atomicAdd(&g_cursor, 1u);
    if (slot >= QT_MAXREC) { atomicAdd(&g_overflow, 1u); return; }
    QtRec r; r.nodes = children; r.points = points; r.params = params;
    g_recs[slot] = r;
    __threadfence();
    unsigned batch = slot / QT_BATCH;
    if (atomicAdd(&g_filled[batch], 1u) == QT_BATCH - 1)
        qt_launch_batch(batch * QT_BATCH, QT_BATCH);
}

__device__ void qt_block_end()
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicSub(&g_live, 1u) == 1u) {
            __threadfence();
            unsigned cursor = atomicAdd(&g_cursor, 0u);
            if (cursor > QT_MAXREC) cursor = QT_MAXREC;
            unsigned first = cursor / QT_BATCH * QT_BATCH;
            if (cursor > first) {
                atomicExch(&g_cursor, first + QT_BATCH);
                __threadfence();
                qt_launch_batch(first, cursor - first);
            }
        }
    }
}
'''

ENTRIES = r'''
__global__ void build_quadtree_kernel(Quadtree_node *nodes, Points *points, Parameters params)
{
    if (threadIdx.x == 0)
        atomicAdd(&g_live, 1u);  // the root, launched alone by the host, counts itself
    qt_body(nodes, points, params, blockIdx.x);
    qt_block_end();
}

__global__ void qt_agg(QtRec *recs, int n)
{
    QtRec r = recs[blockIdx.x / 4];
    qt_body(r.nodes, r.points, r.params, blockIdx.x % 4);
    qt_block_end();
}

void launch_kernel(int warp_size, Quadtree_node *nodes, Points *points, Parameters params) {
    const int NUM_WARPS_PER_BLOCK = NUM_THREADS_PER_BLOCK / warp_size;
    const size_t smem_size = 4*NUM_WARPS_PER_BLOCK*sizeof(int);
    static void *filled, *cursor, *live, *overflow;
    if (!filled) {
        cudaGetSymbolAddress(&filled, g_filled);
        cudaGetSymbolAddress(&cursor, g_cursor);
        cudaGetSymbolAddress(&live, g_live);
        cudaGetSymbolAddress(&overflow, g_overflow);
    }
    cudaMemsetAsync(filled, 0, sizeof(unsigned) * (QT_MAXREC / QT_BATCH));
    cudaMemsetAsync(cursor, 0, sizeof(unsigned));
    cudaMemsetAsync(live, 0, sizeof(unsigned));
    cudaMemsetAsync(overflow, 0, sizeof(unsigned));
    build_quadtree_kernel<<<1, NUM_THREADS_PER_BLOCK, smem_size>>>(nodes, points, params);
}
'''


def replace_all(text: str, edits: list[tuple[str, str]], what: str) -> str:
    for old, new in edits:
        if text.count(old) != 1:
            sys.exit(f"make.py: {what} holds `{old}` {text.count(old)} times, not once")
        text = text.replace(old, new)
    return text


def batched(kernel: str, batch: int) -> str:
    """The kernel with its body a device function of the block number and its launch a record."""
    head, rest = kernel.split(HEADER, 1)
    body, _ = rest.split("void launch_kernel(", 1)
    body = body.replace("blockIdx.x", "bid")
    body = replace_all(body, [(LAUNCH, "qt_push(")], "QT's kernel")
    device = "\n__device__ void qt_body(Quadtree_node *nodes, Points *points, Parameters params, int bid)\n{" + body
    return head + BATCHING.replace("@BATCH@", str(batch)) + device + ENTRIES


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="../shared/corpus")
    p.add_argument("--out", required=True)
    p.add_argument("--batches", default="8,32,128")
    a = p.parse_args()
    with open(os.path.join(a.corpus, QT, "kernel.base.cu")) as f:
        kernel = f.read()
    with open(os.path.join(a.corpus, QT, "main.cu")) as f:
        main_cu = f.read()
    fixed = replace_all(kernel, FIX_KERNEL, "QT's kernel")
    fixed_main = replace_all(main_cu, FIX_MAIN, "QT's main.cu")
    copies = {"fixed": (fixed, fixed_main)}
    for k in (int(b) for b in a.batches.split(",")):
        copies[f"hand{k}"] = (batched(kernel, k), main_cu)
        copies[f"fixed-hand{k}"] = (batched(fixed, k), fixed_main)
    for name, (k_text, m_text) in copies.items():
        into = os.path.join(a.out, name)
        shutil.rmtree(into, ignore_errors=True)
        shutil.copytree(os.path.join(a.corpus, "klap"), os.path.join(into, "klap"))
        for path, text in ((os.path.join(into, QT, "kernel.base.cu"), k_text), (os.path.join(into, QT, "main.cu"), m_text)):
            os.chmod(path, 0o644)
            with open(path, "w") as f:
                f.write(text)
        print(os.path.join(a.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
