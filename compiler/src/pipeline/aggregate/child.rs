//! What the aggregation of one child needs, at every granularity ([`Child`]): its aggregated
//! kernel `C__agg` and its launch ([`launch_agg_kernel`]), the record layout of its arguments,
//! whether it may wait at a barrier ([`may_sync`]), the static pool of its warps' and blocks'
//! record tables ([`pool`]) and, at grid granularity, the arena of its grid's records
//! ([`Arena`], whose use [`super::grid`] describes). Above [`super::records`], below
//! [`super::block`], [`super::warp`], [`super::grid`] and the pass ([`super`]), which fills
//! `C__agg`'s body.
//!
//! Invariant: nothing is declared here but what a [`Child`] is made of, each named after its
//! child (`C__agg_table`, `C__agg_pool`, `C__agg_arena`, ...); the launches written here are
//! in the documented shape.

use super::super::callgraph::pointer_targets;
use super::super::clone::{as_function, called_function, value_name};
use super::super::emit::{intrinsic, ok};
use super::super::launch::Launch;
use super::super::sites::copy_byval;
use super::records::{byte_gep, device, dims_value, read32, read64, Emit, SiteState, MAX_GRID_X, OFF_BLOCK, OFF_GRID, RECORD_CAP};
use crate::llvm::operand;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::{Linkage, Module};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, IntValue, PointerValue};
use inkwell::{AtomicOrdering, AtomicRMWBinOp, IntPredicate};
use std::collections::HashSet;

/// What the aggregation of one child needs.
pub(super) struct Child<'ctx> {
    pub(super) child: FunctionValue<'ctx>,
    pub(super) agg: FunctionValue<'ctx>,
    pub(super) layout: Vec<(u64, Option<BasicTypeEnum<'ctx>>)>,
    /// Where the arguments start in a record, how many bytes they take, a record's size.
    pub(super) args_at: u64,
    pub(super) args_size: u64,
    pub(super) stride: u64,
    /// Whether the child (or what it calls) may use a barrier.
    pub(super) syncs: bool,
    /// `ptr C__agg_table(i64 bytes)` and `void C__agg_give_back(ptr)`: a warp's table from
    /// the child's static pool, else the heap, and back ([`pool`]).
    pub(super) table: FunctionValue<'ctx>,
    pub(super) give_back: FunctionValue<'ctx>,
    /// At grid granularity, the arena of the grid's records ([`Arena`]).
    pub(super) arena: Option<Arena<'ctx>>,
}

/// Records per chunk of a pool: a warp's table.
const CHUNK_RECORDS: u64 = 32;
/// Chunks per child at most, and a pool's size in bytes at most (measured with the `.cdp` front end's first, HIR-level aggregation).
const MAX_CHUNKS: u64 = 2048;
const MAX_POOL_BYTES: u64 = 8 << 20;

/// The static pool of a child's record tables, so that a table of up to [`CHUNK_RECORDS`]
/// records (a warp's, or a block's global copy at its end) costs two atomics instead of a
/// device `malloc` and `free` (measured on the H100 with the first, HIR-level aggregation of
/// the `.cdp` front end: the allocation dominated a warp-aggregated launch; and a block's copy
/// from the heap made `samples/c_statements.cdp` through Clang at block granularity 1.08-1.14x
/// nvcc's time, four copies a launch). `C__agg_pool` holds chunks of [`CHUNK_RECORDS`]
/// records, one bit each in `C__agg_pool_used`; a leader takes a clear bit with `atomicOr`,
/// starting at a word its SM and warp pick, and takes the heap when every chunk is taken or
/// the table is larger than a chunk; a table is given back with `atomicAnd` if it lies in the
/// pool, `free` otherwise. Returns the two always-inline functions.
/// A table in `arena` is given back by releasing the arena.
pub(super) fn pool<'ctx>(module: &Module<'ctx>, name: &str, stride: u64, entries: &Entries<'ctx>, arena: Option<&Arena<'ctx>>) -> (FunctionValue<'ctx>, FunctionValue<'ctx>) {
    let ctx = module.get_context();
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let c32 = |v: u64| i32t.const_int(v, false);
    let c64 = |v: u64| i64t.const_int(v, false);
    let chunk_bytes = stride * CHUNK_RECORDS;
    let chunks = MAX_CHUNKS.min(MAX_POOL_BYTES / chunk_bytes.max(1)) / 32 * 32;
    let words = chunks / 32;
    let inline = |f: FunctionValue<'ctx>| f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0));
    let table = module.add_function(&format!("{name}__agg_table"), ptr.fn_type(&[i64t.into()], false), Some(Linkage::Internal));
    let give_back = module.add_function(&format!("{name}__agg_give_back"), ctx.void_type().fn_type(&[ptr.into()], false), Some(Linkage::Internal));
    inline(table);
    inline(give_back);
    let b = ctx.create_builder();
    let bytes = table.get_nth_param(0).expect("bytes").into_int_value();
    let given = give_back.get_nth_param(0).expect("a table").into_pointer_value();
    bytes.set_name("bytes");
    given.set_name("table");
    let heap = |b: &inkwell::builder::Builder<'ctx>| ok(b.build_call(entries.malloc, &[bytes.into()], "heap")).try_as_basic_value().basic().expect("a pointer");
    // A table not in the pool: the arena's is released, any other freed.
    let to_heap = |b: &inkwell::builder::Builder<'ctx>| {
        if let Some(arena) = arena {
            arena.release_containing(&Emit { module, f: give_back, b }, given);
        }
        ok(b.build_call(entries.free, &[given.into()], ""));
        ok(b.build_return(None));
    };
    if words == 0 {
        // Records too large for even one word of chunks: the heap.
        b.position_at_end(ctx.append_basic_block(table, "entry"));
        ok(b.build_return(Some(&heap(&b))));
        b.position_at_end(ctx.append_basic_block(give_back, "entry"));
        to_heap(&b);
        return (table, give_back);
    }
    let global = |name: String, ty: inkwell::types::ArrayType<'ctx>, align: u32| {
        let g = module.add_global(ty, Some(inkwell::AddressSpace::from(1u16)), &name);
        g.set_linkage(Linkage::Internal);
        g.set_initializer(&ty.const_zero());
        g.set_alignment(align);
        g.as_pointer_value().const_address_space_cast(ptr)
    };
    let records = global(format!("{name}__agg_pool"), ctx.i8_type().array_type((chunks * chunk_bytes) as u32), 16);
    let used = global(format!("{name}__agg_pool_used"), i32t.array_type(words as u32), 4);
    let word_at = |b: &inkwell::builder::Builder<'ctx>, w: IntValue<'ctx>| {
        // SAFETY: `w` is below `words`.
        unsafe { ok(b.build_gep(i32t, used, &[ok(b.build_int_z_extend(w, i64t, "w64"))], "word")) }
    };
    let call = |b: &inkwell::builder::Builder<'ctx>, name: &str, types: &[BasicTypeEnum<'ctx>], args: &[BasicMetadataValueEnum<'ctx>], label: &str| {
        ok(b.build_call(intrinsic(module, name, types), args, label)).try_as_basic_value().basic().expect("a value").into_int_value()
    };

    // take: for each word from the start, while it has a clear bit, claim its lowest.
    let bb = |name: &str| ctx.append_basic_block(table, name);
    let (entry, look, words_head, word, bits_head, claim, claimed, retry, next_word, from_heap) =
        (bb("entry"), bb("look"), bb("words"), bb("word"), bb("bits"), bb("claim"), bb("claimed"), bb("retry"), bb("next.word"), bb("heap"));
    b.position_at_end(entry);
    // A block's table of more records than a chunk holds: the heap.
    let fits = ok(b.build_int_compare(IntPredicate::ULE, bytes, c64(chunk_bytes), "fits"));
    ok(b.build_conditional_branch(fits, look, from_heap));
    b.position_at_end(look);
    let smid = call(&b, "llvm.nvvm.read.ptx.sreg.smid", &[], &[], "smid");
    let warpid = call(&b, "llvm.nvvm.read.ptx.sreg.warpid", &[], &[], "warpid");
    let start = ok(b.build_int_add(ok(b.build_int_mul(smid, c32(64), "sm.base")), warpid, "start"));
    ok(b.build_unconditional_branch(words_head));
    b.position_at_end(words_head);
    let k = ok(b.build_phi(i32t, "k"));
    let kv = k.as_basic_value().into_int_value();
    let more = ok(b.build_int_compare(IntPredicate::ULT, kv, c32(words), "more.words"));
    ok(b.build_conditional_branch(more, word, from_heap));
    b.position_at_end(word);
    let w = ok(b.build_int_unsigned_rem(ok(b.build_int_add(start, kv, "w.sum")), c32(words), "w"));
    let wp = word_at(&b, w);
    let v0 = ok(b.build_load(i32t, wp, "v0")).into_int_value();
    ok(b.build_unconditional_branch(bits_head));
    b.position_at_end(bits_head);
    let v = ok(b.build_phi(i32t, "v"));
    let vv = v.as_basic_value().into_int_value();
    let full = ok(b.build_int_compare(IntPredicate::EQ, vv, c32(u32::MAX as u64), "full"));
    ok(b.build_conditional_branch(full, next_word, claim));
    b.position_at_end(claim);
    // The lowest clear bit of v: popc((~v & (v + 1)) - 1).
    let lowest = ok(b.build_and(ok(b.build_not(vv, "not.v")), ok(b.build_int_add(vv, c32(1), "v.1")), "lowest"));
    let bit = call(&b, "llvm.ctpop", &[i32t.into()], &[ok(b.build_int_sub(lowest, c32(1), "below")).into()], "bit");
    let mask = ok(b.build_left_shift(c32(1), bit, "mask"));
    let old = ok(b.build_atomicrmw(AtomicRMWBinOp::Or, wp, mask, AtomicOrdering::SequentiallyConsistent));
    let was_clear = ok(b.build_int_compare(IntPredicate::EQ, ok(b.build_and(old, mask, "was")), c32(0), "was.clear"));
    ok(b.build_conditional_branch(was_clear, claimed, retry));
    b.position_at_end(claimed);
    let chunk = ok(b.build_int_add(ok(b.build_int_mul(ok(b.build_int_z_extend(w, i64t, "w64")), c64(32), "word.chunks")), ok(b.build_int_z_extend(bit, i64t, "bit64")), "chunk"));
    let at = byte_gep(&b, records, ok(b.build_int_mul(chunk, c64(chunk_bytes), "chunk.at")), "chunk.table");
    ok(b.build_return(Some(&at)));
    b.position_at_end(retry);
    let v_next = ok(b.build_or(old, mask, "v.next"));
    super::records::no_unrolling(ok(b.build_unconditional_branch(bits_head)));
    v.add_incoming(&[(&v0, word), (&v_next, retry)]);
    b.position_at_end(next_word);
    let k_next = ok(b.build_int_add(kv, c32(1), "k.next"));
    super::records::no_unrolling(ok(b.build_unconditional_branch(words_head)));
    k.add_incoming(&[(&c32(0), look), (&k_next, next_word)]);
    b.position_at_end(from_heap);
    ok(b.build_return(Some(&heap(&b))));

    // give back: into the pool when the table lies in it, else to the heap.
    let bb = |name: &str| ctx.append_basic_block(give_back, name);
    let (entry, to_pool, heap_bb) = (bb("entry"), bb("pool"), bb("heap"));
    b.position_at_end(entry);
    let first = ok(b.build_ptr_to_int(records, i64t, "first"));
    let at = ok(b.build_ptr_to_int(given, i64t, "at"));
    let offset = ok(b.build_int_sub(at, first, "offset"));
    // Unsigned: a table below the pool wraps to a large offset.
    let inside = ok(b.build_int_compare(IntPredicate::ULT, offset, c64(chunks * chunk_bytes), "in.pool"));
    ok(b.build_conditional_branch(inside, to_pool, heap_bb));
    b.position_at_end(to_pool);
    let chunk = ok(b.build_int_truncate(ok(b.build_int_unsigned_div(offset, c64(chunk_bytes), "chunk64")), i32t, "chunk"));
    let bit = ok(b.build_left_shift(c32(1), ok(b.build_int_unsigned_rem(chunk, c32(32), "bit")), "mask"));
    let wp = word_at(&b, ok(b.build_int_unsigned_div(chunk, c32(32), "w")));
    ok(b.build_atomicrmw(AtomicRMWBinOp::And, wp, ok(b.build_not(bit, "keep")), AtomicOrdering::SequentiallyConsistent));
    ok(b.build_return(None));
    b.position_at_end(heap_bb);
    to_heap(&b);
    (table, give_back)
}

/// The device C library's `malloc`, `free` and the parameter buffer's entry point, as the
/// module has them (declared when absent); `None` when it declares one with other types.
pub(super) struct Entries<'ctx> {
    pub(super) malloc: FunctionValue<'ctx>,
    pub(super) free: FunctionValue<'ctx>,
    pub(super) buffer: FunctionValue<'ctx>,
}

impl<'ctx> Entries<'ctx> {
    pub(super) fn find(module: &Module<'ctx>) -> Option<Self> {
        let ctx = module.get_context();
        let (ptr, i64t) = (ctx.ptr_type(inkwell::AddressSpace::default()), ctx.i64_type());
        let get = |name: &str, ty: inkwell::types::FunctionType<'ctx>| match module.get_function(name) {
            Some(f) => (f.get_type() == ty).then_some(f),
            None => Some(module.add_function(name, ty, Some(Linkage::External))),
        };
        let buffer_ty = ptr.fn_type(&[i64t.into(), i64t.into()], false);
        // The buffer entry point the module already uses, else the documented one.
        let buffer = ["__cudaCDP2GetParameterBuffer", "cudaGetParameterBuffer"].iter().find_map(|n| module.get_function(n).filter(|f| f.get_type() == buffer_ty));
        Some(Entries {
            malloc: get("malloc", ptr.fn_type(&[i64t.into()], false))?,
            free: get("free", ctx.void_type().fn_type(&[ptr.into()], false))?,
            buffer: match buffer {
                Some(b) => b,
                None => get("cudaGetParameterBuffer", buffer_ty)?,
            },
        })
    }
}

/// `C__agg<<<total, threads, S, stream>>>(table, n)` in the documented sequence at `b`'s
/// position, into the site's stream (`l`'s constant, or `stream` for a named one); returns its status (non-zero when the buffer could not be had) and the call of the launch
/// entry point (warp granularity marks it to stay V1, `warp.rs`).
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_agg_kernel<'ctx>(
    module: &Module<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    f: FunctionValue<'ctx>,
    l: &Launch<'ctx>,
    c: &Child<'ctx>,
    entries: &Entries<'ctx>,
    table: PointerValue<'ctx>,
    n: IntValue<'ctx>,
    total: IntValue<'ctx>,
    threads: IntValue<'ctx>,
    stream: Option<BasicValueEnum<'ctx>>,
) -> (IntValue<'ctx>, inkwell::values::InstructionValue<'ctx>) {
    let ctx = module.get_context();
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let c32 = |v: u64| i32t.const_int(v, false);
    let buf = ok(b.build_call(entries.buffer, &[i64t.const_int(64, false).into(), i64t.const_int(12, false).into()], "agg.buf")).try_as_basic_value().basic().expect("a buffer").into_pointer_value();
    let fill = ctx.append_basic_block(f, "agg.fill");
    let skip = ctx.append_basic_block(f, "agg.skip");
    let join = ctx.append_basic_block(f, "agg.launched");
    let null = ok(b.build_is_null(buf, "agg.null"));
    ok(b.build_conditional_branch(null, skip, fill));
    b.position_at_end(fill);
    ok(b.build_store(buf, table));
    ok(b.build_store(byte_gep(b, buf, i64t.const_int(8, false), "agg.count"), n));
    // The dims as the site's launch takes them.
    let dims = |x: IntValue<'ctx>, by_pointer: bool, name: &str| dims_value(module, b, f, [x, c32(1), c32(1)], by_pointer, name);
    let operand = |i: u32| operand(l.call, i).expect("a launch's operand");
    let grid = dims(total, operand(2).is_pointer_value(), "agg.grid");
    let block = dims(threads, operand(3).is_pointer_value(), "agg.block");
    let launch_callee = crate::llvm::operand(l.call, l.call.get_num_operands() - 1).and_then(|v| as_function(v.as_value_ref())).expect("a launch entry point");
    let stream = stream.unwrap_or_else(|| operand(5));
    let args: Vec<BasicMetadataValueEnum> = vec![c.agg.as_global_value().as_pointer_value().into(), buf.into(), grid.into(), block.into(), operand(4).into(), stream.into()];
    let launch = ok(b.build_call(launch_callee, &args, "agg.status"));
    copy_byval(l.call.as_value_ref(), launch.as_value_ref(), &[(3, 3), (4, 4)]);
    let status = launch.try_as_basic_value().basic().expect("a status").into_int_value();
    ok(b.build_unconditional_branch(join));
    b.position_at_end(skip);
    ok(b.build_unconditional_branch(join));
    b.position_at_end(join);
    let phi = ok(b.build_phi(i32t, "agg.result"));
    phi.add_incoming(&[(&status, fill), (&c32(crate::back::device_launch::LAUNCH_SKIPPED_STATUS as u64), skip)]);
    (phi.as_basic_value().into_int_value(), launch.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()).expect("a call"))
}

/// The launch of the record at `rec` as it was (`K__agg<n>_direct`).
pub(super) fn direct<'ctx>(e: &Emit<'_, 'ctx>, s: &SiteState<'ctx>, c: &Child<'ctx>, rec: PointerValue<'ctx>) {
    let operand = |k: u32| operand(s.launch.call, k).expect("a launch's operand");
    let grid = e.dims(rec, OFF_GRID, operand(2), "rec.grid");
    let block = e.dims(rec, OFF_BLOCK, operand(3), "rec.block");
    let args = byte_gep(e.b, rec, e.c64(c.args_at), "rec.args");
    ok(e.b.build_call(s.direct, &[args.into(), grid.into(), block.into()], ""));
}

/// Whether `child` or anything it calls may wait at a block barrier: a barrier intrinsic,
/// a cooperative-groups entry point, inline assembly, or a call this pass cannot see into. A
/// call through a pointer calls each function whose address is taken
/// ([`pointer_targets`]).
pub(super) fn may_sync(child: FunctionValue<'_>) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![child];
    while let Some(f) = stack.pop() {
        if !seen.insert(f) {
            continue;
        }
        for inst in f.get_basic_blocks().iter().flat_map(|b| b.get_instructions()) {
            if inst.get_opcode() != InstructionOpcode::Call {
                continue;
            }
            let Some(target) = called_function(inst.as_value_ref()).and_then(as_function) else {
                // SAFETY: the callee operand of a live call.
                let asm = unsafe { !inkwell::llvm_sys::core::LLVMIsAInlineAsm(inkwell::llvm_sys::core::LLVMGetCalledValue(inst.as_value_ref())).is_null() };
                if asm {
                    return true;
                }
                stack.extend(pointer_targets(f));
                continue;
            };
            if target.count_basic_blocks() > 0 {
                stack.push(target);
                continue;
            }
            let name = value_name(target.as_value_ref());
            let nvvm = name.strip_prefix("llvm.nvvm.").unwrap_or("");
            let barrier = nvvm.starts_with("barrier") || (nvvm.starts_with("bar.") && !nvvm.starts_with("bar.warp")) || name.contains("CG");
            let known = name.starts_with("llvm.")
                || name.starts_with("__nv_")
                || name.starts_with("cuda")
                || name.starts_with("__cuda")
                || ["vprintf", "malloc", "free", "__assertfail"].contains(&name.as_str());
            if barrier || !known {
                return true;
            }
        }
    }
    false
}

/// The arena's size at most, in bytes and in records.
const MAX_ARENA_BYTES: u64 = 8 << 20;
const MAX_ARENA_RECORDS: u64 = 1 << 18;
/// An arena's cursor: records taken in the bits from here up, child blocks below.
const CURSOR_SHIFT: u64 = 40;
/// The most child blocks a block may place in an arena at once (more go to a heap node).
/// With it the cursor's fields never overflow: a block adds only after reading room, so the
/// adds that find none after all are at most one per resident block (under 2^13 on any GPU
/// so far: 32 per SM), beyond 2^18 records and 2^31 - 1 blocks: under 2^18 + 2^13 * 256 <
/// 2^24 records and 2^31 + 2^13 * 2^26 < 2^40 blocks.
const MAX_ARENA_ADD_BLOCKS: u64 = 1 << 26;

/// A child's record arena ([`super::grid`]'s module docs): one bank, or two for a child that launches itself
/// at grid granularity or whose sites in one kernel make more than one group
/// ([`super::grid::launch_groups`]: each of a grid's first two groups fills a bank). A recursive level's grid reads its records from one bank (until each
/// of its blocks has read its own: `C__agg` gives it back then) while its blocks place the
/// next level's records: with one bank every block of a level but the last ones found it
/// taken and went to the heap, a device `malloc` a block (KLAP's QT took 573 times its plain
/// time on the H100). With two, a level places its records in the bank its
/// grid does not read, which the level before gave back once its blocks had all started.
#[derive(Clone, Copy)]
pub(super) struct Arena<'ctx> {
    first: Bank<'ctx>,
    pub(super) second: Option<Bank<'ctx>>,
}

impl<'ctx> Arena<'ctx> {
    /// The arena of `child`'s records of `stride` bytes, of two banks when `recursive`;
    /// `None` when fewer than a block's worth fit the byte budget.
    pub(super) fn declare(module: &Module<'ctx>, child: &str, stride: u64, recursive: bool) -> Option<Self> {
        let first = Bank::declare(module, &format!("{child}__agg_arena"), stride)?;
        let second = if recursive { Bank::declare(module, &format!("{child}__agg_arena1"), stride) } else { None };
        Some(Arena { first, second })
    }

    fn banks(&self) -> impl Iterator<Item = &Bank<'ctx>> {
        std::iter::once(&self.first).chain(self.second.as_ref())
    }

    /// In `give_back` (`f`): a table lying in a bank releases that bank and returns.
    pub(super) fn release_containing(&self, e: &Emit<'_, 'ctx>, table: PointerValue<'ctx>) {
        let b = e.b;
        for bank in self.banks() {
            e.if_then(bank.contains(b, table), || {
                bank.release(e);
                ok(b.build_return(None));
                // the `if`'s closing branch lands in a block of its own
                b.position_at_end(e.module.get_context().append_basic_block(e.f, "released"));
            });
        }
    }

    /// Thread 0 of a block: room for `count` records in the bank chosen for the grid's group
    /// ([`Bank::reserve`]). `choice` is the group's word of the grid's entry (0 before the
    /// choice, then 1 or 2 for the first or second bank), which the grid's last block clears.
    /// Returns `(at, base, records)`: the first record's index (`u32::MAX` when there is no
    /// room), their first block, and the bank's records.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reserve(
        &self,
        e: &Emit<'_, 'ctx>,
        key: IntValue<'ctx>,
        choice: PointerValue<'ctx>,
        count: IntValue<'ctx>,
        blocks: IntValue<'ctx>,
        min: IntValue<'ctx>,
        max: IntValue<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>, PointerValue<'ctx>) {
        let Some(second) = self.second else {
            let (at, base) = self.first.reserve(e, key, count, blocks, min, max);
            return (at, base, self.first.records);
        };
        let b = e.b;
        let i32t = e.module.get_context().i32_type();
        // One bank per grid and group, chosen by the first block that places records: the one
        // already the grid's, else the first free one (else the first, whose claim then fails
        // until the grid that holds it gives it back). Each block choosing for itself let a
        // grid take both banks when the other was given back while its blocks chose (a race:
        // about one run of QT in four); the next level was then two grids, each reading one
        // bank, so that no bank was free for the level after: its blocks went to the heap,
        // a device `malloc` each and a `free` each by the last block, seconds a level.
        // The fence: what the grid's entry's claimer saw (the entry's last grid's clearing of
        // its choice) comes before the choice is read.
        e.fence();
        let chosen = e.slot(i32t.into(), "bank.chosen");
        ok(b.build_store(chosen, read32(e, choice)));
        e.if_then(ok(b.build_int_compare(IntPredicate::EQ, e.load32(chosen, "bank.seen"), e.c32(0), "unchosen")), || {
            let (o1, o2) = (read64(e, self.first.owner), read64(e, second.owner));
            let is = |v: IntValue<'ctx>, w: IntValue<'ctx>, name: &str| ok(b.build_int_compare(IntPredicate::EQ, v, w, name));
            let mine2 = is(o2, key, "second.mine");
            let free2 = ok(b.build_and(is(o2, e.c64(0), "second.free"), ok(b.build_not(is(o1, e.c64(0), "first.free"), "first.taken")), "second.first.free"));
            let want2 = ok(b.build_and(ok(b.build_not(is(o1, key, "first.mine"), "first.other")), ok(b.build_or(mine2, free2, "second.ok")), "want.second"));
            let wanted = ok(b.build_select(want2, e.c32(2), e.c32(1), "bank.wanted")).into_int_value();
            let swapped = ok(b.build_cmpxchg(choice, e.c32(0), wanted, AtomicOrdering::Monotonic, AtomicOrdering::Monotonic));
            let (old, won) = (ok(b.build_extract_value(swapped, 0, "bank.old")).into_int_value(), ok(b.build_extract_value(swapped, 1, "bank.won")).into_int_value());
            ok(b.build_store(chosen, ok(b.build_select(won, wanted, old, "bank.final")).into_int_value()));
        });
        let take2 = ok(b.build_int_compare(IntPredicate::EQ, e.load32(chosen, "bank"), e.c32(2), "take.second"));
        let pick = |x: PointerValue<'ctx>, y: PointerValue<'ctx>| ok(b.build_select(take2, y, x, "bank.field")).into_pointer_value();
        let bank = Bank {
            records: pick(self.first.records, second.records),
            owner: pick(self.first.owner, second.owner),
            cursor: pick(self.first.cursor, second.cursor),
            overflow: pick(self.first.overflow, second.overflow),
            min_threads: pick(self.first.min_threads, second.min_threads),
            max_threads: pick(self.first.max_threads, second.max_threads),
            ..self.first
        };
        let (at, base) = bank.reserve(e, key, count, blocks, min, max);
        (at, base, bank.records)
    }

    /// Thread 0 of the grid's last block: each bank that is `key`'s launched ([`Bank::launch`]).
    pub(super) fn launch(&self, e: &Emit<'_, 'ctx>, key: IntValue<'ctx>, s: &SiteState<'ctx>, c: &Child<'ctx>, entries: &Entries<'ctx>) {
        for bank in self.banks() {
            bank.launch(e, key, s, c, entries);
        }
    }
}

/// One bank of a child's arena: records, owner, cursor.
#[derive(Clone, Copy)]
pub(super) struct Bank<'ctx> {
    records: PointerValue<'ctx>,
    owner: PointerValue<'ctx>,
    cursor: PointerValue<'ctx>,
    /// The cursor before the first add that found no room, kept as `u64::MAX - cursor` (0:
    /// none): the records before it are the arena's, all of them placed.
    overflow: PointerValue<'ctx>,
    /// Kept as `u32::MAX - smallest`, so that its zero start is a reset state.
    min_threads: PointerValue<'ctx>,
    max_threads: PointerValue<'ctx>,
    capacity: u64,
    stride: u64,
}

impl<'ctx> Bank<'ctx> {
    /// The bank `prefix` of records of `stride` bytes; `None` when fewer than a block's worth
    /// fit the byte budget.
    fn declare(module: &Module<'ctx>, prefix: &str, stride: u64) -> Option<Self> {
        let capacity = MAX_ARENA_RECORDS.min(MAX_ARENA_BYTES / stride.max(1));
        if capacity < RECORD_CAP {
            return None;
        }
        let ctx = module.get_context();
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let name = |what: &str| format!("{prefix}{what}");
        Some(Bank {
            records: device(module, &name(""), ctx.i8_type().array_type((capacity * stride) as u32).into(), 16),
            owner: device(module, &name("_owner"), i64t.into(), 8),
            cursor: device(module, &name("_cursor"), i64t.into(), 8),
            overflow: device(module, &name("_overflow"), i64t.into(), 8),
            min_threads: device(module, &name("_min_threads"), i32t.into(), 4),
            max_threads: device(module, &name("_max_threads"), i32t.into(), 4),
            capacity,
            stride,
        })
    }

    /// Whether `table` lies in the bank.
    fn contains(&self, b: &inkwell::builder::Builder<'ctx>, table: PointerValue<'ctx>) -> IntValue<'ctx> {
        let i64t = table.get_type().get_context().i64_type();
        let offset = ok(b.build_int_sub(ok(b.build_ptr_to_int(table, i64t, "at")), ok(b.build_ptr_to_int(self.records, i64t, "arena")), "arena.offset"));
        ok(b.build_int_compare(IntPredicate::ULT, offset, i64t.const_int(self.capacity * self.stride, false), "in.arena"))
    }

    /// Gives the bank back: cursor, overflow and sizes cleared, a fence, the owner cleared.
    fn release(&self, e: &Emit<'_, 'ctx>) {
        let b = e.b;
        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, self.cursor, e.c64(0), AtomicOrdering::Monotonic));
        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, self.overflow, e.c64(0), AtomicOrdering::Monotonic));
        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, self.min_threads, e.c32(0), AtomicOrdering::Monotonic));
        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, self.max_threads, e.c32(0), AtomicOrdering::Monotonic));
        e.fence();
        ok(b.build_atomicrmw(AtomicRMWBinOp::Xchg, self.owner, e.c64(0), AtomicOrdering::Monotonic));
    }

    /// Thread 0 of a block: claims the arena for `key` (or finds it its own) and takes room
    /// for `count` records launching `blocks` child blocks of `min..=max` threads. Returns
    /// `(at, base)`: the first record's index (`u32::MAX` when there is no room) and their
    /// first block.
    ///
    /// Room is taken with one `atomicAdd` on the cursor, after a read that sees room: a
    /// compare-and-swap loop succeeds once per round trip to memory when many blocks end at
    /// once (a level of QT ends thousands), an add once per clock. The adds are ordered, and
    /// once one finds no room every later one finds none either (the cursor is past the limit
    /// it crossed), so the records before the first such add, which keeps its cursor in
    /// `overflow` (the largest `u64::MAX - cursor`: the smallest cursor), are all placed.
    fn reserve(&self, e: &Emit<'_, 'ctx>, key: IntValue<'ctx>, count: IntValue<'ctx>, blocks: IntValue<'ctx>, min: IntValue<'ctx>, max: IntValue<'ctx>) -> (IntValue<'ctx>, IntValue<'ctx>) {
        let b = e.b;
        let ctx = e.module.get_context();
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let start = b.get_insert_block().expect("positioned");
        let bb = |name: &str| ctx.append_basic_block(e.f, name);
        let (mine, add_bb, took, missed, done) = (bb("arena.mine"), bb("arena.add"), bb("arena.took"), bb("arena.missed"), bb("arena.done"));
        let claimed = ok(b.build_cmpxchg(self.owner, e.c64(0), key, AtomicOrdering::Monotonic, AtomicOrdering::Monotonic));
        let old = ok(b.build_extract_value(claimed, 0, "old.owner")).into_int_value();
        let free = ok(b.build_int_compare(IntPredicate::EQ, old, e.c64(0), "was.free"));
        let own = ok(b.build_int_compare(IntPredicate::EQ, old, key, "was.mine"));
        ok(b.build_conditional_branch(ok(b.build_or(free, own, "ours")), mine, done));
        b.position_at_end(mine);
        let (count64, blocks64) = (ok(b.build_int_z_extend(count, i64t, "count64")), ok(b.build_int_z_extend(blocks, i64t, "blocks64")));
        // Whether `count` records and `blocks` blocks fit after the cursor `cur`.
        let fits = |cur: IntValue<'ctx>, name: &str| {
            let taken = ok(b.build_right_shift(cur, e.c64(CURSOR_SHIFT), false, "taken"));
            let launched = ok(b.build_and(cur, e.c64((1 << CURSOR_SHIFT) - 1), "launched"));
            let room = ok(b.build_int_compare(IntPredicate::ULE, ok(b.build_int_add(taken, count64, "taken.after")), e.c64(self.capacity), "room"));
            let grid_room = ok(b.build_int_compare(IntPredicate::ULE, ok(b.build_int_add(launched, blocks64, "launched.after")), e.c64(MAX_GRID_X), "grid.room"));
            (ok(b.build_and(room, grid_room, name)), taken, launched)
        };
        // the releaser's clearing of the cursor comes before its clearing of the owner
        e.fence();
        let (seen_room, _, _) = fits(read64(e, self.cursor), "seen.room");
        let small = ok(b.build_int_compare(IntPredicate::ULE, blocks64, e.c64(MAX_ARENA_ADD_BLOCKS), "few.blocks"));
        let looked = b.get_insert_block().expect("positioned");
        ok(b.build_conditional_branch(ok(b.build_and(seen_room, small, "try")), add_bb, done));
        b.position_at_end(add_bb);
        let add = ok(b.build_int_add(ok(b.build_left_shift(count64, e.c64(CURSOR_SHIFT), "records")), blocks64, "add"));
        let cur = ok(b.build_atomicrmw(AtomicRMWBinOp::Add, self.cursor, add, AtomicOrdering::Monotonic));
        let (placed, taken, launched) = fits(cur, "placed");
        ok(b.build_conditional_branch(placed, took, missed));
        b.position_at_end(took);
        let (taken32, launched32) = (ok(b.build_int_truncate(taken, i32t, "taken32")), ok(b.build_int_truncate(launched, i32t, "launched32")));
        ok(b.build_atomicrmw(AtomicRMWBinOp::UMax, self.min_threads, ok(b.build_int_sub(e.c32(u32::MAX as u64), min, "min.kept")), AtomicOrdering::Monotonic));
        ok(b.build_atomicrmw(AtomicRMWBinOp::UMax, self.max_threads, max, AtomicOrdering::Monotonic));
        ok(b.build_unconditional_branch(done));
        b.position_at_end(missed);
        ok(b.build_atomicrmw(AtomicRMWBinOp::UMax, self.overflow, ok(b.build_int_sub(e.c64(u64::MAX), cur, "overflow.kept")), AtomicOrdering::Monotonic));
        ok(b.build_unconditional_branch(done));
        b.position_at_end(done);
        let at = ok(b.build_phi(i32t, "arena.at"));
        let base = ok(b.build_phi(i32t, "arena.base"));
        let none = e.c32(u32::MAX as u64);
        at.add_incoming(&[(&none, start), (&none, looked), (&none, missed), (&taken32, took)]);
        base.add_incoming(&[(&e.c32(0), start), (&e.c32(0), looked), (&e.c32(0), missed), (&launched32, took)]);
        (at.as_basic_value().into_int_value(), base.as_basic_value().into_int_value())
    }

    /// Thread 0 of the grid's last block: when the arena is `key`'s, one launch of `C__agg`
    /// over its records, or each record as it was (then the arena is released here; else
    /// `C__agg`'s last block releases it).
    fn launch(&self, e: &Emit<'_, 'ctx>, key: IntValue<'ctx>, s: &SiteState<'ctx>, c: &Child<'ctx>, entries: &Entries<'ctx>) {
        let b = e.b;
        let read = read64(e, self.owner);
        e.if_then(ok(b.build_int_compare(IntPredicate::EQ, read, key, "arena.ours")), || {
            let i32t = e.module.get_context().i32_type();
            // the cursor, or where the first add that found no room found it
            let cur = read64(e, self.cursor);
            let kept = read64(e, self.overflow);
            let overflowed = ok(b.build_int_compare(IntPredicate::NE, kept, e.c64(0), "overflowed"));
            let end = ok(b.build_select(overflowed, ok(b.build_int_sub(e.c64(u64::MAX), kept, "overflow.at")), cur, "arena.end")).into_int_value();
            let n = ok(b.build_int_truncate(ok(b.build_right_shift(end, e.c64(CURSOR_SHIFT), false, "n64")), i32t, "arena.count"));
            let blocks = ok(b.build_int_truncate(end, i32t, "arena.blocks"));
            let largest = ok(b.build_atomicrmw(AtomicRMWBinOp::UMax, self.max_threads, e.c32(0), AtomicOrdering::Monotonic));
            let mut wanted = ok(b.build_int_compare(IntPredicate::UGT, n, e.c32(1), "several"));
            if c.syncs {
                let kept = ok(b.build_atomicrmw(AtomicRMWBinOp::UMax, self.min_threads, e.c32(0), AtomicOrdering::Monotonic));
                let smallest = ok(b.build_int_sub(e.c32(u32::MAX as u64), kept, "smallest"));
                wanted = ok(b.build_and(wanted, ok(b.build_int_compare(IntPredicate::EQ, smallest, largest, "same.size")), "wanted"));
            }
            let slot = e.slot(e.module.get_context().bool_type().into(), "arena.one.by.one");
            ok(b.build_store(slot, e.module.get_context().bool_type().const_int(1, false)));
            e.if_then(wanted, || {
                let (status, _) = launch_agg_kernel(e.module, b, e.f, &s.launch, c, entries, self.records, n, blocks, largest, None);
                ok(b.build_store(slot, ok(b.build_int_compare(IntPredicate::NE, status, e.c32(0), "failed"))));
            });
            let one_by_one = ok(b.build_load(e.module.get_context().bool_type(), slot, "one.by.one")).into_int_value();
            e.if_then(one_by_one, || {
                e.for_loop(e.c32(0), n, e.c32(1), |j| direct(e, s, c, e.record(self.records, j, c.stride)));
                self.release(e);
            });
        });
    }
}
