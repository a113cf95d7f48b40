//! Grid granularity (`-faggregate-launches=grid`): the launches of all threads of a parent grid
//! become one child grid, as KLAP's `ag` versions do.
//!
//! Each block gathers its records as at block granularity (`block.rs`: a `__shared__` table,
//! copied at the end of the block into global memory). Where it can, a block copies them
//! straight into the child's static *arena* (`arena.rs`), beside the records of the grid's
//! other blocks, with their first blocks made the grid's; the last block then launches the
//! arena's records as they lie, and the device heap is never touched (on the H100 it was what
//! made grid granularity slow: `arena.rs` says what was measured). A block that finds the
//! arena full or owned by another grid uses the heap as follows. That allocation is a *node*:
//! a header (`next`, record count, block count, smallest and largest block size) followed by
//! the records. Thread 0 pushes the node onto the parent grid's list with `atomicExch`, makes
//! the block's writes visible (`__threadfence()`), and counts the block done with an
//! `atomicAdd`; the block that counts last is the grid's last block. It takes the whole list,
//! copies every node's records into one table (rebasing their first blocks), and launches
//! `C__agg` once over it, or, when the child calls `__syncthreads` and the block sizes differ
//! or the table cannot be allocated, every record as it was. Then it frees the nodes.
//!
//! # Per parent-grid state
//!
//! The list heads and the done counter belong to one *instance* of the parent grid, and the
//! same kernel may run as several grids at once (device-launched recursion, host launches into
//! other streams). So they live in `__device__` arrays of `SLOTS` entries, one entry per live
//! instance, keyed by `%gridid`, the grid's launch number in its context (unique among the
//! context's grids; LLVM reads its low 32 bits, so two live grids share a key only if 2^32
//! grids were launched while one of them ran). A block finds its entry at `gridid % SLOTS`
//! without a lock when the key is there; otherwise, under a per-kernel spin lock held only for
//! a scan of the table, it finds the key or claims the first free entry (open addressing with
//! tombstones, so a lookup never stops short of an entry claimed earlier). The last block
//! releases the entry, under the lock. An entry is held from the end of its grid's first block
//! to the end of its last, so only running grids hold one: at most 128 on the GPUs cdpc targets
//! (the guide's "maximum number of resident grids per device"), fewer than `SLOTS`. Were the
//! table ever full, a block would wait for a free entry (it never launches its records alone,
//! which would leave the grid's last block waiting for a count that never comes).
//!
//! Neither a hidden parameter (a host launch passes the kernel's own arguments) nor an
//! allocation by the launching thread (a host launch has none) would serve host-launched and
//! device-launched parents alike; a key read from the grid itself does.
//!
//! # Memory visibility
//!
//! A child sees what its launching thread wrote before the launch, as without aggregation: the
//! recording thread's writes precede its block's end-of-kernel `__syncthreads()`, after which
//! thread 0 fences and counts; the last block's thread 0 counts after it, fences, and launches.
//! The fences and the counter make those writes visible to the launching thread (the fence
//! pattern of the guide's "Memory Fence Functions" example), and the launch makes them visible
//! to the child.

use super::block::{count_of, SiteState};
use super::*;
use crate::hir::GlobalSpace;

/// Entries of a kernel's table of live parent grids.
pub const SLOTS: u64 = 512;
/// An entry given back, which a lookup must step over (0 is an entry never used).
const TOMBSTONE: u64 = u64::MAX;
/// The largest aggregated grid (`gridDim.x`); beyond it the records are launched as they were.
pub(super) const MAX_GRID_X: u64 = (1 << 31) - 1;

// Node header fields.
const N_NEXT: u32 = 0;
const N_COUNT: u32 = 1;
const N_BLOCKS: u32 = 2;
const N_MIN: u32 = 3;
const N_MAX: u32 = 4;

/// One site's grid-wide state.
struct SiteGrid {
    /// `__device__ unsigned long long K$aggN$grid_heads[SLOTS]`: each live grid's list.
    heads: GlobalId,
    /// The node header struct.
    node: StructId,
    /// `__shared__` values of the last block: the list, record and block totals, largest block
    /// size, the flat table.
    list: GlobalId,
    total: GlobalId,
    blocks: GlobalId,
    min_threads: GlobalId,
    max_threads: GlobalId,
    flat: GlobalId,
    /// `__shared__`: whether this block's records lie in the child's arena (`arena.rs`), and
    /// their first block there (0 for a node, whose starts the last block rebases).
    in_arena: GlobalId,
    base: GlobalId,
}

/// A kernel's grid-wide state.
pub(super) struct GridState {
    /// `__device__ unsigned long long K$agg_grid_ids[SLOTS]`: the key of each entry's grid.
    ids: GlobalId,
    /// `__device__ unsigned K$agg_grid_done[SLOTS]`: blocks done, per entry.
    done: GlobalId,
    /// `__device__ unsigned K$agg_grid_lock`.
    lock: GlobalId,
    /// `__shared__`: this block's entry, its grid's key (`gridid + 1`), and whether it is its
    /// grid's last block.
    slot: GlobalId,
    key: GlobalId,
    last: GlobalId,
    sites: Vec<SiteGrid>,
}

impl GridState {
    pub(super) fn declare(module: &mut Module, kname: &str, states: &[SiteState], span: Span) -> GridState {
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let table = |elem: Type| Type::Array { elem: Box::new(elem), len: SLOTS };
        let ids = new_global(module, format!("{kname}$agg_grid_ids"), table(ull.clone()), GlobalSpace::Device, span);
        let done = new_global(module, format!("{kname}$agg_grid_done"), table(u.clone()), GlobalSpace::Device, span);
        let lock = new_global(module, format!("{kname}$agg_grid_lock"), u.clone(), GlobalSpace::Device, span);
        let slot = new_global(module, format!("{kname}$agg_grid_slot"), u.clone(), GlobalSpace::Shared, span);
        let key = new_global(module, format!("{kname}$agg_grid_key"), ull.clone(), GlobalSpace::Shared, span);
        let last = new_global(module, format!("{kname}$agg_grid_last"), u.clone(), GlobalSpace::Shared, span);
        let mut sites = Vec::new();
        for (n, s) in states.iter().enumerate() {
            let rec_ptr = Type::pointer_to(Type::Struct(s.record));
            let mut shared = |name: &str, ty: Type| new_global(module, format!("{kname}$agg{n}$grid_{name}"), ty, GlobalSpace::Shared, s.span);
            let list = shared("list", ull.clone());
            let total = shared("total", u.clone());
            let blocks = shared("blocks", ull.clone());
            let min_threads = shared("min_threads", u.clone());
            let max_threads = shared("max_threads", u.clone());
            let flat = shared("flat", rec_ptr);
            let in_arena = shared("in_arena", u.clone());
            let base = shared("base", u.clone());
            let heads = new_global(module, format!("{kname}$agg{n}$grid_heads"), table(ull.clone()), GlobalSpace::Device, s.span);
            let node = make_node(module, &format!("{kname}$agg{n}$grid_node"), s.record, s.span);
            sites.push(SiteGrid { heads, node, list, total, blocks, min_threads, max_threads, flat, in_arena, base });
        }
        GridState { ids, done, lock, slot, key, last, sites }
    }

    /// Thread 0, before the block's tables are copied: finds the grid's entry (`slot`, `key`).
    pub(super) fn begin(&self, m: &Module, b: &B, fresh: &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt> {
        let u = Type::UINT;
        let slot = fresh("agg$grid_slot", u.clone());
        let key = fresh("agg$grid_key", Type::ULONGLONG);
        let mut stmts = self.find_slot(m, b, slot, key, fresh);
        stmts.push(b.assign(b.global(self.slot, &u), b.local(slot, &u)));
        stmts.push(b.assign(b.global(self.key, &Type::ULONGLONG), b.local(key, &Type::ULONGLONG)));
        stmts
    }

    /// The key under which site `n` of this grid owns its child's arena.
    fn arena_key(&self, b: &B, n: usize) -> Expr {
        let key = b.global(self.key, &Type::ULONGLONG);
        b.arith(BinaryOp::Add, b.arith(BinaryOp::Mul, key, b.ull(256)), b.ull(n as u64 + 1))
    }

    /// Thread 0: where site `n`'s `count` records go (`buffer`): room in the child's arena,
    /// else a node of the heap list, else nowhere (null: the block launches them itself).
    pub(super) fn alloc_site(&self, m: &Module, b: &B, n: usize, s: &SiteState, count: LocalId, fresh: &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt> {
        let u = Type::UINT;
        let g = |id: GlobalId| b.global(id, &m.global(id).ty);
        let sg = &self.sites[n];
        let rec_ptr = m.global(s.buffer).ty.clone();
        let lc = || b.local(count, &u);
        let p = fresh("agg$allocation", Type::pointer_to(Type::Void));
        let node = vec![
            b.decl(p, b.null(&Type::pointer_to(Type::Void))),
            b.if_(
                b.cmp(BinaryOp::Eq, b.cast(self.node_alloc(m, b, n, p, lc(), s.record), &Type::INT), b.int(0)),
                vec![b.assign(g(s.buffer), b.cast(self.node_records(m, b, n, p, s.record), &rec_ptr))],
            ),
        ];
        let mut placed = vec![b.assign(g(sg.in_arena), b.uint(0)), b.assign(g(sg.base), b.uint(0))];
        match s.arena.filter(|_| n < arena::MAX_SITES) {
            Some(arena) => {
                let [at, base] = ["agg$arena_at", "agg$arena_base"].map(|name| fresh(name, u.clone()));
                let last = b.index(b.decay(g(s.table)), b.arith(BinaryOp::Sub, lc(), b.uint(1)));
                let blocks = b.arith(BinaryOp::Add, b.member(last.clone(), F_START, &u), b.volume(&b.member(last, F_GRID, &Type::Dim3), &u));
                placed.push(b.decl(at, b.uint(u32::MAX as u64)));
                placed.push(b.decl(base, b.uint(0)));
                placed.extend(arena.reserve(m, b, fresh, self.arena_key(b, n), lc(), blocks, (g(s.min_threads), g(s.max_threads)), (at, base)));
                placed.push(b.if_else(
                    b.cmp(BinaryOp::Ne, b.local(at, &u), b.uint(u32::MAX as u64)),
                    vec![
                        b.assign(g(s.buffer), b.ptr_add(arena.first(m, b), b.local(at, &u))),
                        b.assign(g(sg.in_arena), b.uint(1)),
                        b.assign(g(sg.base), b.local(base, &u)),
                    ],
                    node,
                ));
            }
            None => placed.extend(node),
        }
        vec![b.assign(g(s.buffer), b.null(&rec_ptr)), b.if_(b.cmp(BinaryOp::Gt, lc(), b.uint(0)), placed)]
    }

    /// After a thread copied record `i` of site `n` to `dst` (a record place): its first block
    /// made the grid's (a node's records are rebased by the last block instead).
    pub(super) fn rebase(&self, m: &Module, b: &B, n: usize, dst: Expr) -> Stmt {
        let u = Type::UINT;
        let start = b.member(dst, F_START, &u);
        let base = b.global(self.sites[n].base, &m.global(self.sites[n].base).ty);
        b.assign(start.clone(), b.arith(BinaryOp::Add, start, base))
    }

    /// `cudaMalloc(&p, sizeof(node) + count * sizeof(record))`, a `cudaError_t`.
    fn node_alloc(&self, m: &Module, b: &B, site: usize, p: LocalId, count: Expr, record: StructId) -> Expr {
        let size_t = Type::size_t();
        let node_bytes = m.size_align(&Type::Struct(self.sites[site].node)).0;
        let record_bytes = m.size_align(&Type::Struct(record)).0;
        let bytes = b.arith(
            BinaryOp::Add,
            b.e(ExprKind::IntConst(node_bytes as i64), size_t.clone()),
            b.arith(BinaryOp::Mul, b.cast(count, &size_t), b.e(ExprKind::IntConst(record_bytes as i64), size_t.clone())),
        );
        let place = b.addr_of(b.local(p, &Type::pointer_to(Type::Void)));
        b.builtin(Builtin::Runtime(RuntimeFn::Malloc), vec![place, bytes], &Type::CudaError)
    }

    fn node_ptr(&self, site: usize) -> Type {
        Type::pointer_to(Type::Struct(self.sites[site].node))
    }

    /// The records of the node at `p` (a `void *` local): `(record *)((node *)p + 1)`.
    fn node_records(&self, _m: &Module, b: &B, site: usize, p: LocalId, record: StructId) -> Expr {
        let node = b.cast(b.local(p, &Type::pointer_to(Type::Void)), &self.node_ptr(site));
        records_of(b, node, record)
    }

    /// What follows the blocks' copies of their tables (and a `__syncthreads()`): thread 0
    /// finds the grid's entry, hands each site's node on and counts the block; the last block
    /// launches. `block_launch` is block granularity's launch of one block's records (used
    /// where a node could not be allocated: the buffer is null, so it launches them as they
    /// were).
    pub(super) fn finish(
        &self,
        m: &Module,
        b: &B,
        states: &[SiteState],
        tid: LocalId,
        nthreads: LocalId,
        fresh: &mut dyn FnMut(&str, Type) -> LocalId,
        block_launch: &dyn Fn(&SiteState, &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt>,
    ) -> Vec<Stmt> {
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let g = |id: GlobalId| b.global(id, &m.global(id).ty);
        let thread0 = || b.cmp(BinaryOp::Eq, b.local(tid, &u), b.uint(0));
        let slot = fresh("agg$grid_slot", u.clone());
        let mut hand_on = vec![b.decl(slot, g(self.slot))];
        for (n, s) in states.iter().enumerate() {
            let sb = builder(m, s.span);
            let sg = &self.sites[n];
            let node_ptr = self.node_ptr(n);
            let node = fresh("agg$grid_node", node_ptr.clone());
            let count = fresh("agg$count", u.clone());
            let field = |idx: u32, ty: &Type| sb.member(sb.deref(sb.local(node, &node_ptr)), idx, ty);
            let buffer = g(s.buffer);
            let rec_ptr = m.global(s.buffer).ty.clone();
            let last_record = || sb.index(sb.decay(g(s.table)), sb.arith(BinaryOp::Sub, sb.local(count, &u), sb.uint(1)));
            let push = vec![
                // the node's header lies just before its records
                sb.decl(node, sb.ptr_add(sb.cast(buffer.clone(), &node_ptr), sb.int(-1))),
                sb.assign(field(N_COUNT, &u), sb.local(count, &u)),
                // the blocks of the recorded launches: up to the end of the last record (the
                // counter's low half also counts the launches made at their site when the
                // table was full, which come after every recorded one)
                sb.assign(
                    field(N_BLOCKS, &u),
                    sb.arith(
                        BinaryOp::Add,
                        sb.member(last_record(), F_START, &u),
                        sb.volume(&sb.member(last_record(), F_GRID, &Type::Dim3), &u),
                    ),
                ),
                sb.assign(field(N_MIN, &u), g(s.min_threads)),
                sb.assign(field(N_MAX, &u), g(s.max_threads)),
                sb.assign(
                    field(N_NEXT, &ull),
                    sb.atomic(AtomicOp::Exch, sb.addr_of(self.entry(m, &sb, sg.heads, sb.local(slot, &u))), sb.cast(sb.local(node, &node_ptr), &ull)),
                ),
            ];
            hand_on.push(sb.decl(count, count_of(m, &sb, s)));
            // records in the arena are in place already
            let hand = sb.if_else(sb.cmp(BinaryOp::Ne, buffer, sb.null(&rec_ptr)), push, block_launch(s, fresh));
            hand_on.push(sb.if_(
                sb.and(sb.cmp(BinaryOp::Gt, sb.local(count, &u), sb.uint(0)), sb.cmp(BinaryOp::Eq, g(sg.in_arena), sb.uint(0))),
                vec![hand],
            ));
        }
        // Count the block: after a fence, so that the last block sees its nodes and whatever
        // its threads wrote before they recorded.
        let nblocks = b.arith(
            BinaryOp::Mul,
            b.arith(BinaryOp::Mul, b.special(SpecialReg::GridDim(Axis::X)), b.special(SpecialReg::GridDim(Axis::Y))),
            b.special(SpecialReg::GridDim(Axis::Z)),
        );
        let counted = b.atomic(AtomicOp::Add, b.addr_of(self.entry(m, b, self.done, b.local(slot, &u))), b.uint(1));
        hand_on.push(fence(b));
        hand_on.push(b.assign(
            g(self.last),
            b.cast(b.cmp(BinaryOp::Eq, counted, b.arith(BinaryOp::Sub, nblocks, b.uint(1))), &u),
        ));
        let mut out = vec![b.if_(thread0(), hand_on), b.sync()];

        // The last block.
        let mut last = vec![fence(b)];
        for (n, s) in states.iter().enumerate() {
            if let Some(arena) = s.arena.filter(|_| n < arena::MAX_SITES) {
                let sb = builder(m, s.span);
                last.push(b.if_(thread0(), arena.launch(m, &sb, fresh, self.arena_key(&sb, n), s)));
            }
            last.extend(self.launch_grid(m, s, n, tid, nthreads, fresh));
        }
        last.push(b.if_(thread0(), self.release(m, b, fresh)));
        out.push(b.if_(b.cmp(BinaryOp::Ne, g(self.last), b.uint(0)), last));
        out
    }

    /// `table[index]` of a `__device__` table of this kernel, as a place.
    fn entry(&self, m: &Module, b: &B, table: GlobalId, index: Expr) -> Expr {
        b.index(b.decay(b.global(table, &m.global(table).ty)), index)
    }

    /// An atomic read of `ids[index]`.
    fn read_id(&self, m: &Module, b: &B, index: Expr) -> Expr {
        b.atomic(AtomicOp::Add, b.addr_of(self.entry(m, b, self.ids, index)), b.ull(0))
    }

    fn lock(&self, m: &Module, b: &B, body: Vec<Stmt>) -> Stmt {
        let lock = b.addr_of(b.global(self.lock, &m.global(self.lock).ty));
        let cas = b.builtin(Builtin::Atomic(AtomicOp::Cas), vec![lock.clone(), b.uint(0), b.uint(1)], &Type::UINT);
        let mut held = vec![fence(b)];
        held.extend(body);
        held.push(fence(b));
        held.push(Stmt::Expr(b.atomic(AtomicOp::Exch, lock, b.uint(0))));
        b.if_(b.cmp(BinaryOp::Eq, cas, b.uint(0)), held)
    }

    /// Sets `key` to this grid's key (`gridid + 1`) and `slot` to its entry: at
    /// `gridid % SLOTS` when the key is there, else found or claimed under the lock, waiting
    /// while the table is full.
    fn find_slot(&self, m: &Module, b: &B, slot: LocalId, key: LocalId, fresh: &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt> {
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let value = fresh("agg$grid_value", ull.clone());
        let [home, k, idx, free] = ["agg$grid_home", "agg$grid_k", "agg$grid_idx", "agg$grid_free"].map(|n| fresh(n, u.clone()));
        let lu = |id: LocalId| b.local(id, &u);
        let lull = |id: LocalId| b.local(id, &ull);
        let none = || b.uint(SLOTS);
        let scan = vec![
            b.decl(free, none()),
            b.for_(
                vec![b.decl(k, b.uint(0))],
                b.cmp(BinaryOp::Lt, lu(k), none()),
                b.e(ExprKind::IncDec { place: Box::new(lu(k)), increment: true, prefix: true }, u.clone()),
                vec![
                    b.decl(idx, b.arith(BinaryOp::Rem, b.arith(BinaryOp::Add, lu(home), lu(k)), none())),
                    b.decl(value, self.read_id(m, b, lu(idx))),
                    b.if_(b.cmp(BinaryOp::Eq, lull(value), lull(key)), vec![b.assign(lu(slot), lu(idx)), Stmt::Break]),
                    b.if_(
                        b.and(b.cmp(BinaryOp::Eq, lu(free), none()), b.or(
                            b.cmp(BinaryOp::Eq, lull(value), b.ull(0)),
                            b.cmp(BinaryOp::Eq, lull(value), b.ull(TOMBSTONE)),
                        )),
                        vec![b.assign(lu(free), lu(idx))],
                    ),
                    // an entry never used ends every chain
                    b.if_(b.cmp(BinaryOp::Eq, lull(value), b.ull(0)), vec![Stmt::Break]),
                ],
            ),
            b.if_(
                b.and(b.cmp(BinaryOp::Eq, lu(slot), none()), b.cmp(BinaryOp::Lt, lu(free), none())),
                vec![
                    Stmt::Expr(b.atomic(AtomicOp::Exch, b.addr_of(self.entry(m, b, self.ids, lu(free))), lull(key))),
                    b.assign(lu(slot), lu(free)),
                ],
            ),
        ];
        let gridid = fresh("agg$gridid", u.clone());
        vec![
            b.decl(gridid, b.special(SpecialReg::GridId)),
            b.decl(key, b.arith(BinaryOp::Add, b.cast(lu(gridid), &ull), b.ull(1))),
            b.decl(home, b.arith(BinaryOp::Rem, lu(gridid), none())),
            b.decl(slot, none()),
            b.if_(b.cmp(BinaryOp::Eq, self.read_id(m, b, lu(home)), lull(key)), vec![b.assign(lu(slot), lu(home))]),
            Stmt::Loop {
                init: Block::default(),
                cond: Some(b.cmp(BinaryOp::Eq, lu(slot), none())),
                step: None,
                body: Block { stmts: vec![self.lock(m, b, scan)] },
                check_cond_first: true,
            },
        ]
    }

    /// The last block's launch of site `n`: the list taken, its records copied into one
    /// table by the whole block, one launch of the clone (or each record as it was), the
    /// nodes freed.
    fn launch_grid(&self, m: &Module, s: &SiteState, n: usize, tid: LocalId, nthreads: LocalId, fresh: &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt> {
        let b = builder(m, s.span);
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let sg = &self.sites[n];
        let g = |id: GlobalId| b.global(id, &m.global(id).ty);
        let thread0 = || b.cmp(BinaryOp::Eq, b.local(tid, &u), b.uint(0));
        let node_ptr = self.node_ptr(n);
        let rec_ptr = Type::pointer_to(Type::Struct(s.record));
        let ln = |id: LocalId| b.local(id, &node_ptr);
        let lu = |id: LocalId| b.local(id, &u);
        let header = |node: LocalId, idx: u32, ty: &Type| b.member(b.deref(ln(node)), idx, ty);
        let next = |node: LocalId| b.cast(header(node, N_NEXT, &ull), &node_ptr);
        // for (node = list; node != 0; node = node->next) body
        let walk = |node: LocalId, body: Vec<Stmt>| {
            b.for_(
                vec![b.decl(node, b.cast(g(sg.list), &node_ptr))],
                b.cmp(BinaryOp::Ne, ln(node), b.null(&node_ptr)),
                b.e(ExprKind::Assign { place: Box::new(ln(node)), value: Box::new(next(node)) }, node_ptr.clone()),
                body,
            )
        };
        let step = |id: LocalId| b.e(ExprKind::IncDec { place: Box::new(lu(id)), increment: true, prefix: true }, u.clone());

        // Thread 0: the list, its totals, the flat table.
        let node = fresh("agg$grid_node", node_ptr.clone());
        let p = fresh("agg$allocation", Type::pointer_to(Type::Void));
        let mut wanted = b.and(
            b.cmp(BinaryOp::Gt, g(sg.total), b.uint(1)),
            b.cmp(BinaryOp::Le, g(sg.blocks), b.ull(MAX_GRID_X)),
        );
        if s.child_syncs {
            // the clone's barriers need every thread: equal block sizes only
            wanted = b.and(wanted, b.cmp(BinaryOp::Eq, g(sg.min_threads), g(sg.max_threads)));
        }
        let totals = vec![
            b.assign(g(sg.list), b.atomic(AtomicOp::Exch, b.addr_of(self.entry(m, &b, sg.heads, g(self.slot))), b.ull(0))),
            b.assign(g(sg.total), b.uint(0)),
            b.assign(g(sg.blocks), b.ull(0)),
            b.assign(g(sg.min_threads), b.uint(u32::MAX as u64)),
            b.assign(g(sg.max_threads), b.uint(0)),
            walk(
                node,
                vec![
                    b.assign(g(sg.total), b.arith(BinaryOp::Add, g(sg.total), header(node, N_COUNT, &u))),
                    b.assign(g(sg.blocks), b.arith(BinaryOp::Add, g(sg.blocks), b.cast(header(node, N_BLOCKS, &u), &ull))),
                    b.assign(g(sg.min_threads), b.builtin(Builtin::Min, vec![g(sg.min_threads), header(node, N_MIN, &u)], &u)),
                    b.assign(g(sg.max_threads), b.builtin(Builtin::Max, vec![g(sg.max_threads), header(node, N_MAX, &u)], &u)),
                ],
            ),
            b.assign(g(sg.flat), b.null(&rec_ptr)),
            b.if_(
                wanted,
                vec![
                    b.decl(p, b.null(&Type::pointer_to(Type::Void))),
                    b.if_(
                        b.cmp(BinaryOp::Eq, b.cast(pool::heap_table(m, &b, p, g(sg.total), s.record), &Type::INT), b.int(0)),
                        vec![b.assign(g(sg.flat), b.cast(b.local(p, &Type::pointer_to(Type::Void)), &rec_ptr))],
                    ),
                ],
            ),
        ];

        // The whole block: each node's records into the flat table, first blocks rebased.
        let [pos, base, i] = ["agg$grid_pos", "agg$grid_base", "agg$i"].map(|name| fresh(name, u.clone()));
        let cnode = fresh("agg$grid_node", node_ptr.clone());
        let src = || b.index(records_of(&b, ln(cnode), s.record), lu(i));
        let dst = || b.index(g(sg.flat), b.arith(BinaryOp::Add, lu(pos), lu(i)));
        let start = || b.member(dst(), F_START, &u);
        let copy = vec![
            b.decl(pos, b.uint(0)),
            b.decl(base, b.uint(0)),
            walk(
                cnode,
                vec![
                    b.for_(
                        vec![b.decl(i, b.local(tid, &u))],
                        b.cmp(BinaryOp::Lt, lu(i), header(cnode, N_COUNT, &u)),
                        b.e(ExprKind::CompoundAssign { op: BinaryOp::Add, place: Box::new(lu(i)), value: Box::new(lu(nthreads)), op_type: u.clone() }, u.clone()),
                        vec![b.assign(dst(), src()), b.assign(start(), b.arith(BinaryOp::Add, start(), lu(base)))],
                    ),
                    b.assign(lu(pos), b.arith(BinaryOp::Add, lu(pos), header(cnode, N_COUNT, &u))),
                    b.assign(lu(base), b.arith(BinaryOp::Add, lu(base), header(cnode, N_BLOCKS, &u))),
                ],
            ),
        ];

        // Thread 0: one launch of the clone, or every record as it was; then the nodes freed.
        let agg = agg_launch(m, &b, s.agg, s.record, s.shared_mem, g(sg.flat), g(sg.total), b.cast(g(sg.blocks), &u), g(sg.max_threads));
        let dnode = fresh("agg$grid_node", node_ptr.clone());
        let j = fresh("agg$i", u.clone());
        let direct = record_launch(m, &b, s.child, s.shared_mem, &|| b.ptr_add(records_of(&b, ln(dnode), s.record), lu(j)));
        let fnode = fresh("agg$grid_node", node_ptr.clone());
        let fnext = fresh("agg$grid_next", node_ptr.clone());
        let void_ptr = Type::pointer_to(Type::Void);
        let free_nodes = Stmt::Loop {
            init: Block { stmts: vec![b.decl(fnode, b.cast(g(sg.list), &node_ptr))] },
            cond: Some(b.cmp(BinaryOp::Ne, ln(fnode), b.null(&node_ptr))),
            step: None,
            body: Block {
                stmts: vec![
                    b.decl(fnext, next(fnode)),
                    Stmt::Expr(b.builtin(Builtin::Runtime(RuntimeFn::Free), vec![b.cast(ln(fnode), &void_ptr)], &Type::CudaError)),
                    b.assign(ln(fnode), ln(fnext)),
                ],
            },
            check_cond_first: true,
        };
        let launch = vec![
            b.if_else(
                b.cmp(BinaryOp::Ne, g(sg.flat), b.null(&rec_ptr)),
                vec![agg],
                vec![walk(
                    dnode,
                    vec![b.for_(
                        vec![b.decl(j, b.uint(0))],
                        b.cmp(BinaryOp::Lt, lu(j), header(dnode, N_COUNT, &u)),
                        step(j),
                        vec![direct],
                    )],
                )],
            ),
            free_nodes,
        ];

        vec![
            b.if_(thread0(), totals),
            b.sync(),
            b.if_(b.cmp(BinaryOp::Ne, g(sg.flat), b.null(&rec_ptr)), copy),
            b.sync(),
            b.if_(thread0(), launch),
        ]
    }

    /// The last block gives its entry back, under the lock: the done count to 0, the key to 0
    /// when the next entry was never used (no chain runs through it), else to a tombstone.
    fn release(&self, m: &Module, b: &B, fresh: &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt> {
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let slot = || b.global(self.slot, &m.global(self.slot).ty);
        let after = fresh("agg$grid_value", ull.clone());
        let next_index = b.arith(BinaryOp::Rem, b.arith(BinaryOp::Add, slot(), b.uint(1)), b.uint(SLOTS));
        let body = vec![
            Stmt::Expr(b.atomic(AtomicOp::Exch, b.addr_of(self.entry(m, b, self.done, slot())), b.uint(0))),
            b.decl(after, self.read_id(m, b, next_index)),
            Stmt::Expr(b.atomic(
                AtomicOp::Exch,
                b.addr_of(self.entry(m, b, self.ids, slot())),
                b.e(
                    ExprKind::Conditional {
                        cond: Box::new(b.cmp(BinaryOp::Eq, b.local(after, &ull), b.ull(0))),
                        then: Box::new(b.ull(0)),
                        otherwise: Box::new(b.ull(TOMBSTONE)),
                    },
                    ull.clone(),
                ),
            )),
        ];
        let released = fresh("agg$grid_released", u.clone());
        vec![
            b.decl(released, b.uint(0)),
            Stmt::Loop {
                init: Block::default(),
                cond: Some(b.cmp(BinaryOp::Eq, b.local(released, &u), b.uint(0))),
                step: None,
                body: Block { stmts: vec![self.lock(m, b, [body, vec![b.assign(b.local(released, &u), b.uint(1))]].concat())] },
                check_cond_first: true,
            },
        ]
    }
}

/// `__threadfence()`.
fn fence(b: &B) -> Stmt {
    Stmt::Expr(b.builtin(Builtin::ThreadFence, vec![], &Type::Void))
}

/// The records after the node header at `node` (a `node *`): `(record *)(node + 1)`.
fn records_of(b: &B, node: Expr, record: StructId) -> Expr {
    b.cast(b.ptr_add(node, b.int(1)), &Type::pointer_to(Type::Struct(record)))
}

/// Adds a node header struct: `next` (as `unsigned long long`), count, blocks, smallest and
/// largest block size; padded to the record's alignment, so that the records follow it.
fn make_node(module: &mut Module, name: &str, record: StructId, span: Span) -> StructId {
    let (u, ull) = (Type::UINT, Type::ULONGLONG);
    let rec_align = module.size_align(&Type::Struct(record)).1;
    let fields = [("next", ull), ("count", u.clone()), ("blocks", u.clone()), ("min_threads", u.clone()), ("max_threads", u)];
    let mut offset = 0;
    let mut out = Vec::new();
    for (fname, ty) in fields {
        let (s, a) = module.size_align(&ty);
        offset = round_up(offset, a);
        out.push(Field { name: fname.to_string(), ty, offset, volatile: false, bits: None });
        offset += s;
    }
    let align = rec_align.max(8);
    let id = StructId(module.structs.len() as u32);
    module.structs.push(StructDef { name: name.to_string(), fields: out, size: round_up(offset, align), align, span, union: false });
    id
}
