//! Grid granularity on LLVM IR (`-faggregate-launches=grid`): the launches of all threads of
//! a parent grid become one child grid: the per-grid state and the arena (docs/AGGREGATION.md,
//! which says why and what was measured), for every front end (the kernel language's, Clang,
//! LLVM IR input).
//!
//! Each block records its launches as at block granularity ([`super::block`]), and at the end
//! of the block (after a barrier, or by its last thread alone for a kernel that may leave a
//! barrier behind, `BlockEnd::LastThread`, as at block granularity) thread 0 finds its grid's entry in
//! `K__agg_grid_ids[512]`, keyed by `%gridid + 1` (open addressing from a hash of the id,
//! looked up without a lock and claimed under the spin lock `K__agg_grid_lock`; tombstones for
//! entries given back, cleared once no chain runs through them), and places each site's records:
//! in the child's static arena `C__agg_arena` (or its second bank `C__agg_arena1`, for a
//! child that launches itself or whose sites in the kernel make two groups: [`super::child::Arena`]; one bank per grid and group, chosen by its first
//! block that places records, `K__agg<n>_grid_bank[entry]`) when it can claim it for its grid
//! and group of sites (key `(gridid + 1) * 256 + g + 1`, `g` the group's first site: the kernel's sites
//! that launch the child the same way, [`launch_groups`]) and take room with one add on its
//! cursor (records from bit 40, child blocks below; after a read that saw room, and the first
//! add that finds none after all keeps where it was in `C__agg_arena_overflow`), else in a heap *node* (a 32-byte header: `next`, count,
//! blocks, smallest and largest block size; then the records). The block copies its tables
//! there, rebasing first blocks into the arena's; thread 0 pushes its nodes onto the grid's
//! list (`atomicExch` on `K__agg<n>_grid_heads[entry]`), launches at once the records that
//! found no room anywhere, fences and counts the block done. The grid's last block launches
//! the arena's records as they lie, once for the whole group, and copies the nodes' records into one flat table (the
//! whole block, first blocks rebased) that it launches once, or launches every record as it
//! was (one record, unequal block sizes for a child that synchronises, no table, a failed
//! launch, more than 2^31 - 1 blocks); frees the nodes; gives the entry back. `C__agg`'s last
//! block releases the arena (cursor and sizes cleared, a fence, then the owner).
//!
//! A grid of one block ends as at block granularity instead ([`super::block::block_tail`], on a
//! test of `%nctaid` the whole block takes alike): it is its own last block.
//!
//! Memory: a recording thread's writes precede the end-of-block barrier, after which thread 0
//! fences and counts; the last block's thread 0 counts after it, fences and launches.
//!
//! The arena itself (its banks, the claim, the room taken, its launch and release) is
//! [`super::child`]'s, since each [`Child`] holds its own and its pool gives a table back into
//! it; this module holds the per-grid state and the end of the grid.

use super::super::emit::ok;
use super::super::launch::Launch;
use super::block::{block_tail, copy_tables, end_of_block, launch_records, reaches, shared, BlockEnd, EndOfBlock};
use super::child::{direct, launch_agg_kernel, Child, Entries};
use super::records::{byte_gep, device, read64, Emit, SiteState, MAX_GRID_X, OFF_GRID};
use crate::llvm::operand;
use inkwell::basic_block::BasicBlock;
use inkwell::module::Module;
use inkwell::values::{IntValue, PointerValue};
use inkwell::{AddressSpace, AtomicOrdering, AtomicRMWBinOp, IntPredicate};

/// Entries of a kernel's table of running parent grids.
pub const SLOTS: u64 = 512;
/// An entry given back, which a lookup steps over (0: an entry never used).
const TOMBSTONE: u64 = u64::MAX;
/// Bytes of a node's header before its records.
const NODE_HEADER: u64 = 32;
const N_COUNT: u64 = 8;
const N_BLOCKS: u64 = 12;
const N_MIN: u64 = 16;
const N_MAX: u64 = 20;
/// Sites per kernel that may own an arena.
const MAX_SITES: usize = 255;

/// A kernel's grid-wide state.
struct GridState<'ctx> {
    ids: PointerValue<'ctx>,
    done: PointerValue<'ctx>,
    lock: PointerValue<'ctx>,
    /// `__shared__`: this block's entry, its grid's key, whether it is the grid's last block.
    slot: PointerValue<'ctx>,
    key: PointerValue<'ctx>,
    last: PointerValue<'ctx>,
    sites: Vec<SiteGrid<'ctx>>,
}

/// One site's grid-wide state.
struct SiteGrid<'ctx> {
    /// `__device__ i64 heads[SLOTS]`: each running grid's list of nodes.
    heads: PointerValue<'ctx>,
    /// `__device__ i32 bank[SLOTS]`: the arena bank each running grid's records of the site's
    /// group go to, for a child of two banks ([`super::child::Arena::reserve`]; the group's first site's).
    bank: PointerValue<'ctx>,
    /// `__shared__`: whether the block's records lie in the arena, and their first block there.
    in_arena: PointerValue<'ctx>,
    base: PointerValue<'ctx>,
    /// `__shared__` values of the last block: the list, record and block totals, block sizes,
    /// the flat table.
    list: PointerValue<'ctx>,
    total: PointerValue<'ctx>,
    blocks: PointerValue<'ctx>,
    min_threads: PointerValue<'ctx>,
    max_threads: PointerValue<'ctx>,
    flat: PointerValue<'ctx>,
}

/// `table[index]` of a table of `i64` (`wide`) or `i32`.
fn entry<'ctx>(e: &Emit<'_, 'ctx>, table: PointerValue<'ctx>, index: IntValue<'ctx>, wide: bool) -> PointerValue<'ctx> {
    let i64t = e.module.get_context().i64_type();
    let at = ok(e.b.build_int_mul(ok(e.b.build_int_z_extend(index, i64t, "index")), e.c64(if wide { 8 } else { 4 }), "entry.at"));
    byte_gep(e.b, table, at, "entry")
}

impl<'ctx> GridState<'ctx> {
    fn declare(module: &Module<'ctx>, kname: &str, states: &[SiteState<'ctx>]) -> Self {
        let ctx = module.get_context();
        let (i32t, i64t, ptr) = (ctx.i32_type(), ctx.i64_type(), ctx.ptr_type(AddressSpace::default()));
        let name = |what: &str| format!("{kname}__agg_grid_{what}");
        let sites = (0..states.len())
            .map(|n| {
                let name = |what: &str| format!("{kname}__agg{n}_grid_{what}");
                SiteGrid {
                    heads: device(module, &name("heads"), i64t.array_type(SLOTS as u32).into(), 8),
                    bank: device(module, &name("bank"), i32t.array_type(SLOTS as u32).into(), 4),
                    in_arena: shared(module, &name("in_arena"), i32t.into(), 4),
                    base: shared(module, &name("base"), i32t.into(), 4),
                    list: shared(module, &name("list"), i64t.into(), 8),
                    total: shared(module, &name("total"), i32t.into(), 4),
                    blocks: shared(module, &name("blocks"), i64t.into(), 8),
                    min_threads: shared(module, &name("min_threads"), i32t.into(), 4),
                    max_threads: shared(module, &name("max_threads"), i32t.into(), 4),
                    flat: shared(module, &name("flat"), ptr.into(), 8),
                }
            })
            .collect();
        GridState {
            ids: device(module, &name("ids"), i64t.array_type(SLOTS as u32).into(), 8),
            done: device(module, &name("done"), i32t.array_type(SLOTS as u32).into(), 4),
            lock: device(module, &name("lock"), i32t.into(), 4),
            slot: shared(module, &name("slot"), i32t.into(), 4),
            key: shared(module, &name("key"), i64t.into(), 8),
            last: shared(module, &name("last"), i32t.into(), 4),
            sites,
        }
    }

    /// `body` under the kernel's spin lock, if it is free now; the builder after it.
    fn locked(&self, e: &Emit<'_, 'ctx>, body: impl FnOnce()) {
        let b = e.b;
        let swapped = ok(b.build_cmpxchg(self.lock, e.c32(0), e.c32(1), AtomicOrdering::Monotonic, AtomicOrdering::Monotonic));
        let got = ok(b.build_extract_value(swapped, 1, "locked")).into_int_value();
        e.if_then(got, || {
            e.fence();
            body();
            e.fence();
            ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, self.lock, e.c32(0), AtomicOrdering::Monotonic));
        });
    }

    /// `while (*flag == 0) body();` with `flag` an `i32` slot; the builder after it.
    fn until(e: &Emit<'_, 'ctx>, flag: PointerValue<'ctx>, body: impl FnOnce()) {
        let ctx = e.module.get_context();
        let b = e.b;
        let (head, inner, exit) = (ctx.append_basic_block(e.f, "wait"), ctx.append_basic_block(e.f, "wait.body"), ctx.append_basic_block(e.f, "wait.end"));
        ok(b.build_unconditional_branch(head));
        b.position_at_end(head);
        let open = ok(b.build_int_compare(IntPredicate::EQ, e.load32(flag, "flag"), e.c32(0), "waiting"));
        ok(b.build_conditional_branch(open, inner, exit));
        b.position_at_end(inner);
        body();
        ok(b.build_unconditional_branch(head));
        b.position_at_end(exit);
    }

    /// Thread 0: this grid's key (`gridid + 1`) and entry, stored in `key` and `slot`: at
    /// `gridid % SLOTS` when the key is there, else found or claimed under the lock, waiting
    /// while the table is full.
    fn find_slot(&self, e: &Emit<'_, 'ctx>) {
        let b = e.b;
        let ctx = e.module.get_context();
        let i64t = ctx.i64_type();
        let gridid = e.sreg("gridid");
        let key = ok(b.build_int_add(ok(b.build_int_z_extend(gridid, i64t, "gridid64")), e.c64(1), "key"));
        // Fibonacci hashing: the top bits of `gridid * 2^32 / phi`, so that grid ids that share
        // their low bits (a level of a self-launching kernel and the next) get different homes
        let hashed = ok(b.build_int_mul(gridid, e.c32(0x9E37_79B1), "gridid.hashed"));
        let home = ok(b.build_right_shift(hashed, e.c32(32 - SLOTS.trailing_zeros() as u64), false, "home"));
        ok(b.build_store(self.key, key));
        ok(b.build_store(self.slot, e.c32(SLOTS)));
        let found = e.slot(ctx.i32_type().into(), "found");
        ok(b.build_store(found, e.c32(0)));
        Self::until(e, found, || {
            // Without the lock first: every block but the one that claims the entry finds it
            // so (a level of QT ends tens of thousands of blocks at once, which took the lock
            // one after another). A claim this misses is found again under the lock.
            let missing = || ok(b.build_int_compare(IntPredicate::EQ, e.load32(self.slot, "slot"), e.c32(SLOTS), "missing"));
            self.scan(e, home, key);
            e.if_then(missing(), || {
                self.locked(e, || {
                    let fe = self.scan(e, home, key);
                    let claim = ok(b.build_and(missing(), ok(b.build_int_compare(IntPredicate::ULT, fe, e.c32(SLOTS), "has.free")), "claim"));
                    e.if_then(claim, || {
                        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, entry(e, self.ids, fe, true), key, AtomicOrdering::Monotonic));
                        ok(b.build_store(self.slot, fe));
                    });
                });
            });
            let have = ok(b.build_int_compare(IntPredicate::NE, e.load32(self.slot, "slot"), e.c32(SLOTS), "have"));
            ok(b.build_store(found, ok(b.build_int_z_extend(have, ctx.i32_type(), "have32"))));
        });
    }

    /// Probes the table from `home` for `key`: its entry into `slot` when found. Returns the
    /// first free entry seen (given back or never used; `SLOTS` when none), which is where
    /// `key` may be claimed under the lock. An entry never used ends every chain.
    fn scan(&self, e: &Emit<'_, 'ctx>, home: IntValue<'ctx>, key: IntValue<'ctx>) -> IntValue<'ctx> {
        let b = e.b;
        let ctx = e.module.get_context();
        let bb = |name: &str| ctx.append_basic_block(e.f, name);
        let before = b.get_insert_block().expect("positioned");
        let (head, body, is_free, next, end) = (bb("scan"), bb("scan.entry"), bb("scan.free"), bb("scan.next"), bb("scan.end"));
        ok(b.build_unconditional_branch(head));
        b.position_at_end(head);
        let k = ok(b.build_phi(ctx.i32_type(), "k"));
        let free = ok(b.build_phi(ctx.i32_type(), "free"));
        let (kv, fv) = (k.as_basic_value().into_int_value(), free.as_basic_value().into_int_value());
        ok(b.build_conditional_branch(ok(b.build_int_compare(IntPredicate::ULT, kv, e.c32(SLOTS), "more")), body, end));
        b.position_at_end(body);
        let idx = ok(b.build_int_unsigned_rem(ok(b.build_int_add(home, kv, "probe")), e.c32(SLOTS), "idx"));
        let value = read64(e, entry(e, self.ids, idx, true));
        let hit = ok(b.build_int_compare(IntPredicate::EQ, value, key, "hit"));
        let (found_bb, miss) = (bb("scan.found"), bb("scan.miss"));
        ok(b.build_conditional_branch(hit, found_bb, miss));
        b.position_at_end(found_bb);
        ok(b.build_store(self.slot, idx));
        ok(b.build_unconditional_branch(end));
        b.position_at_end(miss);
        let unused = ok(b.build_int_compare(IntPredicate::EQ, value, e.c64(0), "unused"));
        let given = ok(b.build_int_compare(IntPredicate::EQ, value, e.c64(TOMBSTONE), "given.back"));
        let none_yet = ok(b.build_int_compare(IntPredicate::EQ, fv, e.c32(SLOTS), "none.yet"));
        let take = ok(b.build_and(none_yet, ok(b.build_or(unused, given, "free.entry")), "take"));
        let free_next = ok(b.build_select(take, idx, fv, "free.next")).into_int_value();
        ok(b.build_conditional_branch(unused, is_free, next));
        b.position_at_end(is_free);
        ok(b.build_unconditional_branch(end));
        b.position_at_end(next);
        let k_next = ok(b.build_int_add(kv, e.c32(1), "k.next"));
        ok(b.build_unconditional_branch(head));
        k.add_incoming(&[(&e.c32(0), before), (&k_next, next)]);
        free.add_incoming(&[(&e.c32(SLOTS), before), (&free_next, next)]);
        b.position_at_end(end);
        let free_at_end = ok(b.build_phi(ctx.i32_type(), "free.at.end"));
        free_at_end.add_incoming(&[(&fv, head), (&fv, found_bb), (&free_next, is_free)]);
        free_at_end.as_basic_value().into_int_value()
    }

    /// The last block gives its entry back, under the lock: the done count to 0, the key to 0
    /// when the next entry was never used (no chain runs through it), else to a tombstone; an
    /// entry set to 0 also clears the tombstones right before it, whose chains now end there.
    /// Without that, the tombstones of grids that ended while a later grid held the entry after
    /// theirs (each level of a self-launching kernel: QT) filled the table, and every grid's
    /// first block scanned all of it under the lock while the others waited (a millisecond a
    /// grid on the H100).
    fn release(&self, e: &Emit<'_, 'ctx>) {
        let b = e.b;
        let released = e.slot(e.module.get_context().i32_type().into(), "released");
        ok(b.build_store(released, e.c32(0)));
        Self::until(e, released, || {
            self.locked(e, || {
                let slot = e.load32(self.slot, "slot");
                ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, entry(e, self.done, slot, false), e.c32(0), AtomicOrdering::Monotonic));
                let next = ok(b.build_int_unsigned_rem(ok(b.build_int_add(slot, e.c32(1), "after")), e.c32(SLOTS), "next"));
                let after = read64(e, entry(e, self.ids, next, true));
                let ends = ok(b.build_int_compare(IntPredicate::EQ, after, e.c64(0), "chain.ends"));
                let value = ok(b.build_select(ends, e.c64(0), e.c64(TOMBSTONE), "given")).into_int_value();
                ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, entry(e, self.ids, slot, true), value, AtomicOrdering::Monotonic));
                e.if_then(ends, || self.clear_tombstones_before(e, slot));
                ok(b.build_store(released, e.c32(1)));
            });
        });
    }

    /// Under the lock, after entry `slot` was set to 0: the tombstones right before it set to
    /// 0 too, going back until an entry that is no tombstone (at most `SLOTS - 1` of them).
    /// Safe: a live key's entries from its home to it are never 0, so no chain runs through
    /// a tombstone whose next entry is 0.
    fn clear_tombstones_before(&self, e: &Emit<'_, 'ctx>, slot: IntValue<'ctx>) {
        let ctx = e.module.get_context();
        let b = e.b;
        let i32t = ctx.i32_type();
        let before = b.get_insert_block().expect("positioned");
        let (head, clear, exit) = (ctx.append_basic_block(e.f, "untomb"), ctx.append_basic_block(e.f, "untomb.clear"), ctx.append_basic_block(e.f, "untomb.end"));
        ok(b.build_unconditional_branch(head));
        b.position_at_end(head);
        let at = ok(b.build_phi(i32t, "untomb.at"));
        let steps = ok(b.build_phi(i32t, "untomb.steps"));
        let (at_v, steps_v) = (at.as_basic_value().into_int_value(), steps.as_basic_value().into_int_value());
        let prev = ok(b.build_int_unsigned_rem(ok(b.build_int_add(at_v, e.c32(SLOTS - 1), "back")), e.c32(SLOTS), "prev"));
        let tomb = ok(b.build_int_compare(IntPredicate::EQ, read64(e, entry(e, self.ids, prev, true)), e.c64(TOMBSTONE), "tombstone"));
        let more = ok(b.build_int_compare(IntPredicate::ULT, steps_v, e.c32(SLOTS - 1), "more.steps"));
        ok(b.build_conditional_branch(ok(b.build_and(tomb, more, "clear.it")), clear, exit));
        b.position_at_end(clear);
        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, entry(e, self.ids, prev, true), e.c64(0), AtomicOrdering::Monotonic));
        let steps_next = ok(b.build_int_add(steps_v, e.c32(1), "steps.next"));
        ok(b.build_unconditional_branch(head));
        at.add_incoming(&[(&slot, before), (&prev, clear)]);
        steps.add_incoming(&[(&e.c32(0), before), (&steps_next, clear)]);
        b.position_at_end(exit);
    }
}

/// `for (node = first; node; node = node->next) body(node);`, the builder after it.
fn walk<'ctx>(e: &Emit<'_, 'ctx>, first: PointerValue<'ctx>, body: impl FnOnce(PointerValue<'ctx>)) {
    let ctx = e.module.get_context();
    let b = e.b;
    let ptr = ctx.ptr_type(AddressSpace::default());
    let before = b.get_insert_block().expect("positioned");
    let (head, inner, exit): (BasicBlock, BasicBlock, BasicBlock) = (ctx.append_basic_block(e.f, "walk"), ctx.append_basic_block(e.f, "walk.node"), ctx.append_basic_block(e.f, "walk.end"));
    ok(b.build_unconditional_branch(head));
    b.position_at_end(head);
    let node = ok(b.build_phi(ptr, "node"));
    let nv = node.as_basic_value().into_pointer_value();
    ok(b.build_conditional_branch(ok(b.build_is_not_null(nv, "more.nodes")), inner, exit));
    b.position_at_end(inner);
    // the next node, read before `body` (which may free this one)
    let next = ok(b.build_int_to_ptr(e.load64(nv, "next"), ptr, "next.node"));
    body(nv);
    let latch = b.get_insert_block().expect("positioned");
    ok(b.build_unconditional_branch(head));
    node.add_incoming(&[(&first, before), (&next, latch)]);
    b.position_at_end(exit);
}

/// Builds `K__agg_begin()` and `K__agg_end()` at grid granularity (module docs).
pub(super) fn end_of_grid<'ctx>(module: &Module<'ctx>, kname: &str, states: &[SiteState<'ctx>], end: BlockEnd, children: &[Child<'ctx>], entries: &Entries<'ctx>) -> EndOfBlock<'ctx> {
    let gs = GridState::declare(module, kname, states);
    end_of_block(module, kname, states, end, &|e, tid, nthreads, barriers| {
        // A grid of one block is its own last block: it ends as at block granularity, without
        // the grid's entry, lock and arena (a one-block parent's one or two launches read 1.3x
        // nvcc's time through them). The condition is the same for the whole block, so each
        // branch's barriers are met by every thread.
        let one_block = ok(e.b.build_int_compare(IntPredicate::EQ, e.blocks_in_grid(), e.c32(1), "one.block"));
        e.if_then_else(one_block, || block_tail(e, tid, nthreads, barriers, states, children, entries), || grid_tail(e, tid, nthreads, barriers, &gs, states, children, entries));
    })
}

/// What a block does at its end at grid granularity, after a barrier or by its last thread
/// alone (`barriers` false; module docs).
#[allow(clippy::too_many_arguments)]
fn grid_tail<'ctx>(
    e: &Emit<'_, 'ctx>,
    tid: IntValue<'ctx>,
    nthreads: IntValue<'ctx>,
    barriers: bool,
    gs: &GridState<'ctx>,
    states: &[SiteState<'ctx>],
    children: &[Child<'ctx>],
    entries: &Entries<'ctx>,
) {
    let b = e.b;
    let ctx = e.module.get_context();
    let (i32t, i64t, ptr) = (ctx.i32_type(), ctx.i64_type(), ctx.ptr_type(AddressSpace::default()));
    let thread0 = || ok(b.build_int_compare(IntPredicate::EQ, tid, e.c32(0), "thread0"));
    // Sites that launch one child the same way claim its arena under one key: their records
    // lie in it together and the last block launches them once.
    let groups = launch_groups(&states.iter().map(|s| s.launch).collect::<Vec<_>>());
    let arena_key = |n: usize| {
        let key = e.load64(gs.key, "key");
        ok(b.build_int_add(ok(b.build_int_mul(key, e.c64(256), "key.sites")), e.c64(groups[n] as u64 + 1), "arena.key"))
    };
    let arena_of = |n: usize, s: &SiteState<'ctx>| children[s.child].arena.filter(|_| groups[n] < MAX_SITES);

    // Thread 0: the grid's entry, then where each site's records go.
    e.if_then(thread0(), || {
        gs.find_slot(e);
        for (n, s) in states.iter().enumerate() {
            let (c, sg) = (&children[s.child], &gs.sites[n]);
            let count = e.count(s);
            ok(b.build_store(s.buffer, ptr.const_null()));
            ok(b.build_store(sg.in_arena, e.c32(0)));
            ok(b.build_store(sg.base, e.c32(0)));
            e.if_then(ok(b.build_int_compare(IntPredicate::UGT, count, e.c32(0), "any")), || {
                let node = || {
                    let bytes = ok(b.build_int_add(e.c64(NODE_HEADER), ok(b.build_int_mul(ok(b.build_int_z_extend(count, i64t, "count64")), e.c64(c.stride), "records")), "node.bytes"));
                    let p = ok(b.build_call(entries.malloc, &[bytes.into()], "node")).try_as_basic_value().basic().expect("a pointer").into_pointer_value();
                    e.if_then(ok(b.build_is_not_null(p, "have.node")), || {
                        ok(b.build_store(s.buffer, byte_gep(b, p, e.c64(NODE_HEADER), "node.records")));
                    });
                };
                match arena_of(n, s) {
                    Some(arena) => {
                        let last = e.record(s.table, ok(b.build_int_sub(count, e.c32(1), "last")), c.stride);
                        let start = e.load32(last, "last.start");
                        let g = [0, 1, 2].map(|k| e.load32(byte_gep(b, last, e.c64(OFF_GRID + 4 * k), "dim.at"), "grid"));
                        let blocks = ok(b.build_int_add(start, ok(b.build_int_mul(ok(b.build_int_mul(g[0], g[1], "m")), g[2], "volume")), "blocks"));
                        let choice = entry(e, gs.sites[groups[n]].bank, e.load32(gs.slot, "slot"), false);
                        let (at, base, records) = arena.reserve(e, arena_key(n), choice, count, blocks, e.load32(s.min_threads, "min"), e.load32(s.max_threads, "max"));
                        let placed = ok(b.build_int_compare(IntPredicate::NE, at, e.c32(u32::MAX as u64), "placed"));
                        let (yes, no, join) = (ctx.append_basic_block(e.f, "in.arena"), ctx.append_basic_block(e.f, "in.node"), ctx.append_basic_block(e.f, "placed"));
                        ok(b.build_conditional_branch(placed, yes, no));
                        b.position_at_end(yes);
                        ok(b.build_store(s.buffer, e.record(records, at, c.stride)));
                        ok(b.build_store(sg.in_arena, e.c32(1)));
                        ok(b.build_store(sg.base, base));
                        ok(b.build_unconditional_branch(join));
                        b.position_at_end(no);
                        node();
                        ok(b.build_unconditional_branch(join));
                        b.position_at_end(join);
                    }
                    None => node(),
                }
            });
        }
    });
    e.meet(barriers);
    // The block copies its tables; records in the arena get the grid's first blocks.
    copy_tables(e, tid, nthreads, states, children);
    for (n, s) in states.iter().enumerate() {
        let (c, sg) = (&children[s.child], &gs.sites[n]);
        let in_arena = ok(b.build_int_compare(IntPredicate::NE, e.load32(sg.in_arena, "in.arena"), e.c32(0), "rebase"));
        e.if_then(in_arena, || {
            let (count, buffer, base) = (e.count(s), e.load_ptr(s.buffer, "buffer"), e.load32(sg.base, "base"));
            e.for_loop(tid, count, nthreads, |i| {
                let start = e.record(buffer, i, c.stride);
                let v = e.load32(start, "start");
                ok(b.build_store(start, ok(b.build_int_add(v, base, "rebased"))));
            });
        });
    }
    e.meet(barriers);

    // Thread 0 hands the nodes on (or launches what found no room) and counts the block.
    e.if_then(thread0(), || {
        let slot = e.load32(gs.slot, "slot");
        for (n, s) in states.iter().enumerate() {
            let (c, sg) = (&children[s.child], &gs.sites[n]);
            let count = e.count(s);
            let not_arena = ok(b.build_int_compare(IntPredicate::EQ, e.load32(sg.in_arena, "in.arena"), e.c32(0), "not.arena"));
            let hand = ok(b.build_and(ok(b.build_int_compare(IntPredicate::UGT, count, e.c32(0), "any")), not_arena, "hand.on"));
            e.if_then(hand, || {
                let buffer = e.load_ptr(s.buffer, "buffer");
                let (push, alone, join) = (ctx.append_basic_block(e.f, "push"), ctx.append_basic_block(e.f, "alone"), ctx.append_basic_block(e.f, "handed"));
                ok(b.build_conditional_branch(ok(b.build_is_not_null(buffer, "have.node")), push, alone));
                b.position_at_end(push);
                let node = byte_gep(b, buffer, e.c64(0u64.wrapping_sub(NODE_HEADER)), "node");
                let last = e.record(s.table, ok(b.build_int_sub(count, e.c32(1), "last")), c.stride);
                let g = [0, 1, 2].map(|k| e.load32(byte_gep(b, last, e.c64(OFF_GRID + 4 * k), "dim.at"), "grid"));
                let blocks = ok(b.build_int_add(e.load32(last, "last.start"), ok(b.build_int_mul(ok(b.build_int_mul(g[0], g[1], "m")), g[2], "volume")), "blocks"));
                let field = |offset: u64| byte_gep(b, node, e.c64(offset), "node.field");
                ok(b.build_store(field(N_COUNT), count));
                ok(b.build_store(field(N_BLOCKS), blocks));
                ok(b.build_store(field(N_MIN), e.load32(s.min_threads, "min")));
                ok(b.build_store(field(N_MAX), e.load32(s.max_threads, "max")));
                let bits = ok(b.build_ptr_to_int(node, i64t, "node.bits"));
                let next = ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, entry(e, sg.heads, slot, true), bits, AtomicOrdering::Monotonic));
                ok(b.build_store(node, next));
                ok(b.build_unconditional_branch(join));
                b.position_at_end(alone);
                launch_records(e, s, c, entries, ptr.const_null(), count, None);
                ok(b.build_unconditional_branch(join));
                b.position_at_end(join);
            });
        }
        // after a fence, so that the last block sees the nodes and what the threads wrote
        e.fence();
        let counted = ok(b.build_atomicrmw(AtomicRMWBinOp::Add, entry(e, gs.done, slot, false), e.c32(1), AtomicOrdering::Monotonic));
        let nblocks = e.blocks_in_grid();
        let last = ok(b.build_int_compare(IntPredicate::EQ, counted, ok(b.build_int_sub(nblocks, e.c32(1), "last.count")), "last.block"));
        ok(b.build_store(gs.last, ok(b.build_int_z_extend(last, i32t, "last32"))));
    });
    e.meet(barriers);

    // The grid's last block launches.
    let last = ok(b.build_int_compare(IntPredicate::NE, e.load32(gs.last, "last"), e.c32(0), "is.last"));
    e.if_then(last, || {
        e.fence();
        for (n, s) in states.iter().enumerate() {
            let c = &children[s.child];
            // once for each group of sites, by its first, whose launch is every member's
            if let Some(arena) = arena_of(n, s).filter(|_| groups[n] == n) {
                e.if_then(thread0(), || {
                    arena.launch(e, arena_key(n), s, c, entries);
                    if arena.second.is_some() {
                        // the group's bank choice cleared for the entry's next grid
                        let choice = entry(e, gs.sites[n].bank, e.load32(gs.slot, "slot"), false);
                        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, choice, e.c32(0), AtomicOrdering::Monotonic));
                    }
                });
            }
            launch_grid(e, tid, nthreads, barriers, gs, n, s, c, entries);
        }
        e.if_then(thread0(), || gs.release(e));
    });
}

/// For each of a kernel's sites, the first site whose arena key it shares: the first that launches the same
/// child through the same entry point, with the same dynamic shared memory and stream (the
/// constants every taken launch has) and its dims passed the same way. One launch of `C__agg`
/// (or a record's launch as it was, `K__agg<n>_direct`) made for that first site is then the
/// launch every record of the group stands for. Sites of a child that differ get keys of their
/// own, and each bank of the arena is one group's per grid. Sites one thread may pass one after
/// the other (one reaches the other in the control flow, or they are in different functions)
/// are never grouped: the NULL stream runs a thread's second launch after its first, and one
/// launch of both groups' records would run them together (`samples/null_stream_order.cdp`,
/// whose loop Clang unrolls into two sites of one child: the consumer read the producer's
/// output before it was written). Such sites keep keys of their own, launched in site order.
pub(super) fn launch_groups<'ctx>(launches: &[Launch<'ctx>]) -> Vec<usize> {
    use inkwell::values::AsValueRef;
    let operand = |l: &Launch<'ctx>, k: u32| operand(l.call, k);
    let last = |l: &Launch<'ctx>| l.call.get_num_operands() - 1;
    let same = |a: &Launch<'ctx>, b: &Launch<'ctx>| {
        let value = |k: u32| operand(a, k).map(|v| v.as_value_ref()) == operand(b, k).map(|v| v.as_value_ref());
        let kind = |k: u32| operand(a, k).map(|v| v.get_type()) == operand(b, k).map(|v| v.get_type());
        value(0) && last(a) == last(b) && value(last(a)) && value(4) && value(5) && kind(2) && kind(3) && !one_after_other(a, b)
    };
    (0..launches.len()).map(|n| (0..n).find(|&m| same(&launches[m], &launches[n])).unwrap_or(n)).collect()
}

/// Whether one thread may reach the launches of `a` and `b` one after the other: they are in
/// different functions, in one block, or one's block reaches the other's.
fn one_after_other(a: &Launch<'_>, b: &Launch<'_>) -> bool {
    let (Some(x), Some(y)) = (a.call.get_parent(), b.call.get_parent()) else { return true };
    a.function != b.function || x == y || reaches(x, y) || reaches(y, x)
}

/// The last block's launch of site `n`'s nodes: the list taken, its records copied into one
/// table by the whole block, one launch of the clone (or each record as it was), the nodes
/// freed.
#[allow(clippy::too_many_arguments)]
fn launch_grid<'ctx>(e: &Emit<'_, 'ctx>, tid: IntValue<'ctx>, nthreads: IntValue<'ctx>, barriers: bool, gs: &GridState<'ctx>, n: usize, s: &SiteState<'ctx>, c: &Child<'ctx>, entries: &Entries<'ctx>) {
    let b = e.b;
    let ctx = e.module.get_context();
    let (i32t, i64t, ptr) = (ctx.i32_type(), ctx.i64_type(), ctx.ptr_type(AddressSpace::default()));
    let sg = &gs.sites[n];
    let thread0 = || ok(b.build_int_compare(IntPredicate::EQ, tid, e.c32(0), "thread0"));
    let list = || ok(b.build_int_to_ptr(e.load64(sg.list, "list"), ptr, "first.node"));
    let node_field = |node: PointerValue<'ctx>, offset: u64, name: &str| e.load32(byte_gep(b, node, e.c64(offset), "node.field"), name);
    e.if_then(thread0(), || {
        let slot = e.load32(gs.slot, "slot");
        let taken = ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, entry(e, sg.heads, slot, true), e.c64(0), AtomicOrdering::Monotonic));
        ok(b.build_store(sg.list, taken));
        ok(b.build_store(sg.total, e.c32(0)));
        ok(b.build_store(sg.blocks, e.c64(0)));
        ok(b.build_store(sg.min_threads, e.c32(u32::MAX as u64)));
        ok(b.build_store(sg.max_threads, e.c32(0)));
        walk(e, list(), |node| {
            let umin = super::super::emit::intrinsic(e.module, "llvm.umin", &[i32t.into()]);
            let umax = super::super::emit::intrinsic(e.module, "llvm.umax", &[i32t.into()]);
            let total = ok(b.build_int_add(e.load32(sg.total, "total"), node_field(node, N_COUNT, "count"), "total.next"));
            ok(b.build_store(sg.total, total));
            let blocks = ok(b.build_int_add(e.load64(sg.blocks, "blocks"), ok(b.build_int_z_extend(node_field(node, N_BLOCKS, "node.blocks"), i64t, "wide")), "blocks.next"));
            ok(b.build_store(sg.blocks, blocks));
            let min = ok(b.build_call(umin, &[e.load32(sg.min_threads, "min").into(), node_field(node, N_MIN, "node.min").into()], "min")).try_as_basic_value().basic().expect("a min");
            ok(b.build_store(sg.min_threads, min));
            let max = ok(b.build_call(umax, &[e.load32(sg.max_threads, "max").into(), node_field(node, N_MAX, "node.max").into()], "max")).try_as_basic_value().basic().expect("a max");
            ok(b.build_store(sg.max_threads, max));
        });
        ok(b.build_store(sg.flat, ptr.const_null()));
        let total = e.load32(sg.total, "total");
        let mut wanted = ok(b.build_and(
            ok(b.build_int_compare(IntPredicate::UGT, total, e.c32(1), "several")),
            ok(b.build_int_compare(IntPredicate::ULE, e.load64(sg.blocks, "blocks"), e.c64(MAX_GRID_X), "grid.fits")),
            "wanted",
        ));
        if c.syncs {
            let same = ok(b.build_int_compare(IntPredicate::EQ, e.load32(sg.min_threads, "min"), e.load32(sg.max_threads, "max"), "same.size"));
            wanted = ok(b.build_and(wanted, same, "wanted"));
        }
        e.if_then(wanted, || {
            let bytes = ok(b.build_int_mul(ok(b.build_int_z_extend(total, i64t, "total64")), e.c64(c.stride), "bytes"));
            let flat = ok(b.build_call(entries.malloc, &[bytes.into()], "flat")).try_as_basic_value().basic().expect("a pointer");
            ok(b.build_store(sg.flat, flat));
        });
    });
    e.meet(barriers);
    // The whole block: each node's records into the flat table, first blocks rebased.
    let flat = e.load_ptr(sg.flat, "flat");
    e.if_then(ok(b.build_is_not_null(flat, "have.flat")), || {
        let (pos, base) = (e.slot(e.module.get_context().i32_type().into(), "pos"), e.slot(e.module.get_context().i32_type().into(), "base"));
        ok(b.build_store(pos, e.c32(0)));
        ok(b.build_store(base, e.c32(0)));
        walk(e, list(), |node| {
            let count = node_field(node, N_COUNT, "count");
            let (p, bs) = (e.load32(pos, "pos"), e.load32(base, "base"));
            e.for_loop(tid, count, nthreads, |i| {
                let dst = e.record(flat, ok(b.build_int_add(p, i, "to")), c.stride);
                super::super::copies::word_copy(b, (dst, 16), (e.record(byte_gep(b, node, e.c64(NODE_HEADER), "records"), i, c.stride), 16), c.stride);
                let start = e.load32(dst, "start");
                ok(b.build_store(dst, ok(b.build_int_add(start, bs, "rebased"))));
            });
            ok(b.build_store(pos, ok(b.build_int_add(p, count, "pos.next"))));
            ok(b.build_store(base, ok(b.build_int_add(bs, node_field(node, N_BLOCKS, "node.blocks"), "base.next"))));
        });
    });
    e.meet(barriers);
    // Thread 0: one launch of the clone, or every record as it was; then the nodes freed.
    e.if_then(thread0(), || {
        let one_by_one = e.slot(ctx.bool_type().into(), "grid.one.by.one");
        ok(b.build_store(one_by_one, ctx.bool_type().const_int(1, false)));
        let flat = e.load_ptr(sg.flat, "flat");
        e.if_then(ok(b.build_is_not_null(flat, "have.flat")), || {
            let blocks = ok(b.build_int_truncate(e.load64(sg.blocks, "blocks"), i32t, "blocks32"));
            let (status, _) = launch_agg_kernel(e.module, b, e.f, &s.launch, c, entries, flat, e.load32(sg.total, "total"), blocks, e.load32(sg.max_threads, "max"), None);
            let failed = ok(b.build_int_compare(IntPredicate::NE, status, e.c32(0), "failed"));
            ok(b.build_store(one_by_one, failed));
            e.if_then(failed, || {
                ok(b.build_call(c.give_back, &[flat.into()], ""));
            });
        });
        let each = ok(b.build_load(ctx.bool_type(), one_by_one, "each")).into_int_value();
        e.if_then(each, || {
            walk(e, list(), |node| {
                let records = byte_gep(b, node, e.c64(NODE_HEADER), "records");
                e.for_loop(e.c32(0), node_field(node, N_COUNT, "count"), e.c32(1), |j| direct(e, s, c, e.record(records, j, c.stride)));
            });
        });
        walk(e, list(), |node| {
            ok(b.build_call(entries.free, &[node.into()], ""));
        });
    });
}
