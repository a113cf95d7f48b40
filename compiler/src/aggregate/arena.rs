//! Grid granularity's record arena: one static table per child, in which the blocks of one
//! parent grid place their records side by side, so that the grid's last block launches them
//! as they lie, without the device heap.
//!
//! Why: measured on the H100 (`bench/gpu/device_malloc.cu`, `results/device-malloc.md`), after
//! the 25,600 small device allocations that KLAP's BT makes, a device `cudaMalloc` of 1.2 MB
//! fails even with a 256 MB heap, and one thread's `cudaFree` of 400 nodes of 3 KB takes 0.6 s.
//! Grid granularity had both on its path (a heap node per block, freed by the last block, and
//! one flat heap table), and ran BT 47 times slower than nvcc's build.
//!
//! Per child `C`: `__device__ record C$agg_arena[capacity]`; `C$agg_arena_owner`, the parent
//! grid instance and site using it (its key `(gridid + 1) * 256 + site + 1`, 0 when free);
//! `C$agg_arena_cursor`, the records taken (high 32 bits) and the child blocks they launch
//! (low 32 bits) in one 64-bit word, so that one compare-and-swap gives a block both its
//! records' place and their first block, and record order is block order (the clone's binary
//! search needs the starts ascending); the smallest and largest block size among them.
//!
//! - A block's thread 0 claims the arena for its grid and site with `atomicCAS(owner, 0, key)`
//!   (or finds it already its own), then takes room for its records with a compare-and-swap
//!   loop on the cursor; a block whose records do not fit (capacity, `gridDim.x`) and the
//!   blocks of any other grid while one owns it use the heap node list as before (`grid.rs`).
//!   The room taken by the blocks that fit is contiguous from 0, since the cursor only grows.
//! - The grid's last block (thread 0) launches `C__agg` once over the arena's records, or each
//!   record as it was (one record, unequal block sizes for a child that synchronises, a failed
//!   launch), and then releases the arena itself.
//! - `C__agg`'s last block releases it (`pool::give_back`): cursor and sizes reset, a fence,
//!   then the owner cleared, so the next claimer finds it empty.

use super::*;
use crate::hir::GlobalSpace;

/// The arena's size in bytes at most, and in records at most.
const MAX_ARENA_BYTES: u64 = 8 << 20;
const MAX_ARENA_RECORDS: u64 = 1 << 18;
/// Sites per kernel that may own an arena: the key keeps the site in its low 8 bits.
pub(super) const MAX_SITES: usize = 255;

/// The arena of one child's records.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arena {
    records: GlobalId,
    owner: GlobalId,
    cursor: GlobalId,
    min_threads: GlobalId,
    max_threads: GlobalId,
    capacity: u64,
}

impl Arena {
    /// Declares the arena of `child`'s records (`record`); `None` when not even one block's
    /// worth of records fits the byte budget.
    pub(super) fn declare(module: &mut Module, child: FuncId, record: StructId) -> Option<Arena> {
        let rec_size = module.size_align(&Type::Struct(record)).0.max(1);
        let capacity = MAX_ARENA_RECORDS.min(MAX_ARENA_BYTES / rec_size);
        if capacity < RECORD_CAP {
            return None;
        }
        let name = module.function(child).name.clone();
        let span = module.function(child).span;
        let mut device = |suffix: &str, ty: Type| new_global(module, format!("{name}$agg_arena{suffix}"), ty, GlobalSpace::Device, span);
        let records = device("", Type::Array { elem: Box::new(Type::Struct(record)), len: capacity });
        let owner = device("_owner", Type::ULONGLONG);
        let cursor = device("_cursor", Type::ULONGLONG);
        // Never written by a launch before a reset, so their zero start is a reset state too:
        // the smallest size is kept as `u32::MAX - min`.
        let min_threads = device("_min_threads", Type::UINT);
        let max_threads = device("_max_threads", Type::UINT);
        Some(Arena { records, owner, cursor, min_threads, max_threads, capacity })
    }

    fn g(&self, m: &Module, b: &B, id: GlobalId) -> Expr {
        b.global(id, &m.global(id).ty)
    }

    /// The arena's first record, a `record *`.
    pub(super) fn first(&self, m: &Module, b: &B) -> Expr {
        b.decay(self.g(m, b, self.records))
    }

    /// Whether `table` (a `record *`) lies in the arena.
    pub(super) fn contains(&self, m: &Module, b: &B, table: Expr) -> Expr {
        let end = b.ptr_add(self.first(m, b), b.uint(self.capacity));
        b.and(b.cmp(BinaryOp::Ge, table.clone(), self.first(m, b)), b.cmp(BinaryOp::Lt, table, end))
    }

    /// An atomic read of a 64-bit word of the arena.
    fn read(&self, m: &Module, b: &B, word: GlobalId) -> Expr {
        b.atomic(AtomicOp::Add, b.addr_of(self.g(m, b, word)), b.ull(0))
    }

    /// Thread 0 of a block: claims the arena for `key` (an `unsigned long long`) or finds it
    /// its own, and takes room for `count` records launching `blocks` child blocks, of
    /// `min`..=`max` threads each. On success `at` (an `unsigned int` local, `u32::MAX` before)
    /// is the first record's index and `base` (`unsigned int`) their first block.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reserve(
        &self,
        m: &Module,
        b: &B,
        fresh: &mut dyn FnMut(&str, Type) -> LocalId,
        key: Expr,
        count: Expr,
        blocks: Expr,
        (min, max): (Expr, Expr),
        (at, base): (LocalId, LocalId),
    ) -> Vec<Stmt> {
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let [old_owner, cur, want, seen] = ["agg$arena_owner", "agg$arena_cur", "agg$arena_want", "agg$arena_seen"].map(|n| fresh(n, ull.clone()));
        let [done, taken, launched] = ["agg$arena_done", "agg$arena_taken", "agg$arena_blocks"].map(|n| fresh(n, u.clone()));
        let lu = |id: LocalId| b.local(id, &u);
        let lull = |id: LocalId| b.local(id, &ull);
        let cas = |word: GlobalId, compare: Expr, value: Expr| {
            b.builtin(Builtin::Atomic(AtomicOp::Cas), vec![b.addr_of(self.g(m, b, word)), compare, value], &ull)
        };
        let fits = b.and(
            b.cmp(BinaryOp::Le, count.clone(), b.arith(BinaryOp::Sub, b.uint(self.capacity), lu(taken))),
            b.cmp(BinaryOp::Le, blocks.clone(), b.arith(BinaryOp::Sub, b.uint(grid::MAX_GRID_X), lu(launched))),
        );
        let took = vec![
            b.assign(lu(at), lu(taken)),
            b.assign(lu(base), lu(launched)),
            Stmt::Expr(b.atomic(AtomicOp::Max, b.addr_of(self.g(m, b, self.min_threads)), b.arith(BinaryOp::Sub, b.uint(u32::MAX as u64), min))),
            Stmt::Expr(b.atomic(AtomicOp::Max, b.addr_of(self.g(m, b, self.max_threads)), max)),
            b.assign(lu(done), b.uint(1)),
        ];
        let attempt = vec![
            b.decl(taken, b.cast(b.arith(BinaryOp::Shr, lull(cur), b.ull(32)), &u)),
            b.decl(launched, b.cast(lull(cur), &u)),
            b.if_else(
                fits,
                vec![
                    b.decl(
                        want,
                        b.arith(
                            BinaryOp::Add,
                            lull(cur),
                            b.arith(BinaryOp::Add, b.arith(BinaryOp::Shl, b.cast(count, &ull), b.ull(32)), b.cast(blocks, &ull)),
                        ),
                    ),
                    b.decl(seen, cas(self.cursor, lull(cur), lull(want))),
                    b.if_else(b.cmp(BinaryOp::Eq, lull(seen), lull(cur)), took, vec![b.assign(lull(cur), lull(seen))]),
                ],
                vec![b.assign(lu(done), b.uint(1))],
            ),
        ];
        vec![
            b.decl(old_owner, cas(self.owner, b.ull(0), key.clone())),
            b.if_(
                b.or(b.cmp(BinaryOp::Eq, lull(old_owner), b.ull(0)), b.cmp(BinaryOp::Eq, lull(old_owner), key)),
                vec![
                    // the releaser's reset of the cursor comes before its clearing of the owner
                    Stmt::Expr(b.builtin(Builtin::ThreadFence, vec![], &Type::Void)),
                    b.decl(done, b.uint(0)),
                    b.decl(cur, self.read(m, b, self.cursor)),
                    Stmt::Loop {
                        init: Block::default(),
                        cond: Some(b.cmp(BinaryOp::Eq, lu(done), b.uint(0))),
                        step: None,
                        body: Block { stmts: attempt },
                        check_cond_first: true,
                    },
                ],
            ),
        ]
    }

    /// Thread 0 of the grid's last block: when the arena is `key`'s, one launch of `agg` over
    /// its records, or each record launched as it was (`direct` makes the launch of the
    /// record at the address it is given); the arena is then released unless `agg` took it.
    pub(super) fn launch(&self, m: &Module, b: &B, fresh: &mut dyn FnMut(&str, Type) -> LocalId, key: Expr, s: &block::SiteState) -> Vec<Stmt> {
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let [cur] = ["agg$arena_cur"].map(|n| fresh(n, ull.clone()));
        let [n, nb, largest, launched, j] = ["agg$arena_count", "agg$arena_blocks", "agg$arena_max", "agg$arena_launched", "agg$i"].map(|n| fresh(n, u.clone()));
        let lu = |id: LocalId| b.local(id, &u);
        let int = Type::INT;
        let atomic_read_u = |id: GlobalId| b.atomic(AtomicOp::Max, b.addr_of(self.g(m, b, id)), b.uint(0));
        let mut wanted = b.cmp(BinaryOp::Gt, lu(n), b.uint(1));
        if s.child_syncs {
            // the clone's barriers need every thread: equal block sizes only
            let smallest = b.arith(BinaryOp::Sub, b.uint(u32::MAX as u64), atomic_read_u(self.min_threads));
            wanted = b.and(wanted, b.cmp(BinaryOp::Eq, smallest, lu(largest)));
        }
        let agg = agg_launch_status(m, b, s.agg, s.record, s.shared_mem, self.first(m, b), lu(n), lu(nb), lu(largest), None);
        let direct = record_launch(m, b, s.child, s.shared_mem, &|| b.ptr_add(self.first(m, b), lu(j)));
        let step = b.e(ExprKind::IncDec { place: Box::new(lu(j)), increment: true, prefix: true }, u.clone());
        let mut one_by_one = vec![b.for_(vec![b.decl(j, b.uint(0))], b.cmp(BinaryOp::Lt, lu(j), lu(n)), step, vec![direct])];
        one_by_one.extend(self.release(m, b));
        vec![b.if_(
            b.cmp(BinaryOp::Eq, self.read(m, b, self.owner), key),
            vec![
                b.decl(cur, self.read(m, b, self.cursor)),
                b.decl(n, b.cast(b.arith(BinaryOp::Shr, b.local(cur, &ull), b.ull(32)), &u)),
                b.decl(nb, b.cast(b.local(cur, &ull), &u)),
                b.decl(largest, atomic_read_u(self.max_threads)),
                b.decl(launched, b.uint(0)),
                b.if_(wanted, vec![b.if_(b.cmp(BinaryOp::Eq, b.cast(agg, &int), b.int(0)), vec![b.assign(lu(launched), b.uint(1))])]),
                b.if_(b.cmp(BinaryOp::Eq, lu(launched), b.uint(0)), one_by_one),
            ],
        )]
    }

    /// Gives the arena back: cursor and sizes reset, a fence, the owner cleared.
    pub(super) fn release(&self, m: &Module, b: &B) -> Vec<Stmt> {
        let exch = |id: GlobalId, v: Expr| Stmt::Expr(b.atomic(AtomicOp::Exch, b.addr_of(self.g(m, b, id)), v));
        vec![
            exch(self.cursor, b.ull(0)),
            exch(self.min_threads, b.uint(0)),
            exch(self.max_threads, b.uint(0)),
            Stmt::Expr(b.builtin(Builtin::ThreadFence, vec![], &Type::Void)),
            exch(self.owner, b.ull(0)),
        ]
    }
}
