//! Warp granularity on LLVM IR (`-faggregate-launches=warp`, and at block and grid granularity
//! the launches of kernels that read launch errors): the threads of a warp that reach a launch
//! together make one launch of `C__agg` ([`super`]). The semantics are
//! docs/AGGREGATION.md's.
//!
//! A recognised launch `C<<<g, b, S>>>(args)` into the NULL stream, `S` a constant, becomes a
//! call of the helper `C__warp(args block, g, b)` (always-inline where one site calls it; sites
//! whose helpers come out the same share one, kept a function: [`share_helpers`]):
//!
//! ```c
//! valid = the runtime would launch it, with at most 2^22 blocks;
//! group = __ballot_sync(__activemask(), valid);
//! if (valid && popc(group) > 1) {
//!     rank = popc(group & lanemask_lt); leader = lowest lane of group;
//!     table = rank == 0 ? a chunk of C's pool, else malloc(n * sizeof(record)) : 0;
//!                                                     // shared by two shuffles
//!     if (table) {
//!         table[rank] = {0, 0, g, b, args}; __threadfence(); __syncwarp(group);
//!         if (rank == 0) {   // number the blocks, launch, or give the table back
//!             for each record: start = total; total += blocks(grid);
//!             fallback = cudaPeekAtLastError() != 0 || (C syncs && block sizes differ);
//!             if (!fallback && C__agg<<<total, max threads, S>>>(table, n) != 0) {
//!                 cudaGetLastError();   // the failed launch's error: not the leader's own
//!                 fallback = true;
//!             }
//!             if (fallback) free(table);
//!         }
//!         if (shfl(fallback, leader) == 0) return cudaSuccess;
//!     }
//! }
//! return C<<<g, b, S>>>(args);   // the documented sequence, as before
//! ```
//!
//! A launch into a named stream, `C<<<g, b, S, s>>>(args)` with `s` a value, calls
//! `C__warp(args block, g, b, s)`, whose group is the valid lanes whose `s` is the first valid
//! lane's (`valid &= s == __shfl_sync(__activemask(), s, first valid lane)`, a word at a time),
//! and whose launches, `C__agg`'s and each lane's own, go into `s`: the stream orders them with
//! the thread's other work in it as it did the lane's own launch (docs/AGGREGATION.md, "Named
//! streams"). Every granularity aggregates such launches here, at their site, but those into a
//! stream each thread made into a local of its own ([`per_thread_stream`]), left alone with
//! `R0500`: its lanes' streams are all different.
//!
//! A thread's last error: each lane's `cudaGetLastError()` after the launch says what its own
//! launch did, as without aggregation. A launch of `C__agg` that succeeds leaves every lane's
//! last error as it was, as each lane's own successful launch would. One that fails sets the
//! leader's, which its own launch after the fallback would then not replace where that launch
//! succeeds (a successful call leaves the last error as it is): the leader reads it back,
//! which restores its state only where it had no error before, so a leader with an error
//! pending (`cudaPeekAtLastError`) does not launch `C__agg` and the group falls back.
//! Without the leader's read-back and that check, on the H200 with a pool of 32 pending
//! launches, 32,768 one-launch threads and children that return at once: 16 to 24 threads a
//! run (the mean of 100) read "refused" for a child that ran.
//!
//! A launch made only where a thread index equals a constant ([`one_lane`]: one lane of a
//! warp) is left alone, with `R0500`, at warp granularity and at the sites of block and grid
//! granularity's kernels that read launch errors.
//!
//! The table comes from the child's static pool, else from `malloc` (`super::child::pool`);
//! `C__agg` and what is left alone are [`super`]'s.
//!
//! Both of the helper's launches are marked to stay in the documented V1 sequence whatever ABI
//! is asked for ([`launch::mark_v1`]): the leader's launch of `C__agg`, since the lanes that
//! wait at the shuffle for it could hang the V2 entry point, as the `.cdp` front end's first,
//! HIR-level V2 builds did; and the lanes' own launches where the group falls back, since V2
//! launches after the leader's refused V1 one hung the grid (err_launch_status, its
//! pending-launch pool overflowed on purpose; the runs: docs/AGGREGATION.md, "Why the warp's
//! launches are V1"). Launches into the special streams, which V1 refuses, are never
//! aggregated. Every other launch is lowered to the ABI asked for.

use super::super::clone::{called_function, value_name};
use super::super::emit::intrinsic;
use super::super::emit::ok;
use super::super::launch::{self, Launch};
use super::super::sites::{guard_edges, keep_out_of_line, launch_as_documented, new_helper_with, Config, ARGS_ALIGN};
use super::super::uniform;
use super::block;
use super::child::{launch_agg_kernel, Child, Entries};
use super::records::{byte_gep, MAX_BLOCKS_PER_RECORD, OFF_BLOCK, OFF_DONE, OFF_GRID, RECORD_ALIGN};
use crate::llvm::{block_operand, operand};
use inkwell::basic_block::BasicBlock;
use inkwell::module::Linkage;
use inkwell::module::Module;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{AsValueRef, BasicValue, InstructionOpcode, InstructionValue};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;
use runtime_shim::entry_points::RuntimeFn;

/// Whether the launch `l` goes into a named stream: one its thread holds as a value, which
/// is not a constant (the NULL stream, the tail and fire-and-forget streams are).
pub(super) fn named_stream(l: &Launch<'_>) -> bool {
    named_stream_of(l).is_some()
}

/// The stream of the launch `l` where it is a named one ([`named_stream`]).
fn named_stream_of<'ctx>(l: &Launch<'ctx>) -> Option<BasicValueEnum<'ctx>> {
    // SAFETY: a query of a live value.
    operand(l.call, 5).filter(|s| s.is_pointer_value() && unsafe { inkwell::llvm_sys::core::LLVMIsConstant(s.as_value_ref()) } == 0)
}

/// Whether the launch `l` goes into a stream its thread made into a local of its own
/// ([`super::super::own_stream::made_by_its_thread`]), the stream followed from a helper's
/// parameter to the argument of its call ([`block::chain`]: thresholding's helper holds the
/// launch of a grid too large to run in place): the lanes of a warp then launch into as many
/// streams, and a group is one lane.
pub(super) fn per_thread_stream<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>) -> bool {
    use inkwell::llvm_sys::core::{LLVMCountParams, LLVMGetOperand, LLVMGetParam, LLVMIsAArgument};
    let Some(mut stream) = operand(l.call, 5).map(|s| s.as_value_ref()) else { return false };
    let chain = block::chain(module, l);
    for pair in chain.windows(2) {
        let ((helper, _), (_, call)) = (pair[0], pair[1]);
        // SAFETY: queries of live values: the helper's parameters, the call's operands.
        unsafe {
            if LLVMIsAArgument(stream).is_null() {
                break;
            }
            let Some(index) = (0..LLVMCountParams(helper.as_value_ref())).find(|&i| LLVMGetParam(helper.as_value_ref(), i) == stream) else { break };
            stream = LLVMGetOperand(call.as_value_ref(), index);
        }
    }
    super::super::own_stream::made_by_its_thread(stream)
}

/// The largest argument block (bytes) whose launch's helper [`share_helpers`] shares. A shared
/// helper takes the arguments through memory: its callers fill a block in the stack frame, and
/// it copies them from there; inlined, SROA takes the block apart into registers. With KLAP's
/// 136-byte graph structs (`tests/struct_args_stack.rs`) a shared helper had a 240-byte frame
/// and its parents 304 and 368 bytes, where nvcc's have none. With the samples' blocks of
/// pointers and integers the shared helpers' frames are 80 to 104 bytes (`ptxas -v`,
/// 2026-12-03), local memory that one launch's path touches.
const SHARED_ARGS_MAX: u64 = 64;

/// Sites whose helpers came out the same (one child, launched with the same shared memory
/// size into the same kind of stream: most sites of a child) call one of them, which stays a
/// function of its own (`noinline`): one copy of the warp's machinery for all of them, where
/// each inlined its own (about 260 lines of PTX a site after the first). A helper that one
/// site calls stays always-inline, as its launch's constants then fold into it. Two helpers
/// are the same when their IR is, but for their names, the source spans of the launches in
/// them (the first site's are kept; a later pass places a message about the launch at the
/// helper), their debug locations and their loops' ids: so `-lineinfo`, whose lines differ
/// from site to site, changes no code (`tests/debug_info.rs`). A shared helper has no debug
/// locations: its instructions are no one site's line (one site's would be wrong for the
/// others), and a function of its own has no `DISubprogram` for a kernel's lines to belong to.
/// Only helpers of launches whose arguments take at most [`SHARED_ARGS_MAX`] bytes are shared.
/// Measured on the samples: sharing saves lines from two sites on (`named_stream_order.cdp`
/// 2,147 -> 1,724), except where the inlined copies fold a constant grid
/// (`cxx_graph.cu`, two sites of `visit<<<1, d>>>`: 625 -> 720).
pub(super) fn share_helpers(helpers: &[(FunctionValue<'_>, u64)]) {
    let mut groups: Vec<(String, Vec<FunctionValue>)> = Vec::new();
    for &(f, arg_bytes) in helpers {
        if arg_bytes > SHARED_ARGS_MAX {
            continue;
        }
        let body = comparable_body(f);
        match groups.iter_mut().find(|(b, _)| *b == body) {
            Some((_, same)) => same.push(f),
            None => groups.push((body, vec![f])),
        }
    }
    for (_, same) in groups.iter().filter(|(_, same)| same.len() > 1) {
        let first = same[0];
        for f in &same[1..] {
            f.as_global_value().as_pointer_value().replace_all_uses_with(first.as_global_value().as_pointer_value());
            // SAFETY: `f` has no uses left; nothing else holds it.
            unsafe { f.delete() };
        }
        without_debug_locations(first);
        keep_out_of_line(first);
    }
}

/// Takes the debug location off every instruction of `f`.
fn without_debug_locations(f: FunctionValue<'_>) {
    use inkwell::llvm_sys::debuginfo::LLVMInstructionSetDebugLoc;
    for block in f.get_basic_blocks() {
        for inst in block.get_instructions() {
            // SAFETY: an update of a live instruction's debug location.
            unsafe { LLVMInstructionSetDebugLoc(inst.as_value_ref(), std::ptr::null_mut()) };
        }
    }
}

/// `f`'s IR as [`share_helpers`] compares it: its name out of its definition, and the
/// attachments that differ between otherwise equal helpers (`!cdpc.span`, `!dbg`,
/// `!llvm.loop`) out of its instructions.
fn comparable_body(f: FunctionValue<'_>) -> String {
    let text = inkwell::values::AnyValue::print_to_string(&f).to_string();
    let name = format!("@{}(", f.get_name().to_string_lossy());
    let text = text.replacen(&name, "@(", 1);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    let attachments = [format!(", !{} !", super::super::location::SPAN_METADATA), ", !dbg !".to_string(), ", !llvm.loop !".to_string()];
    while let Some((at, len)) = attachments.iter().filter_map(|a| rest.find(a.as_str()).map(|at| (at, a.len()))).min() {
        out.push_str(&rest[..at]);
        let after = &rest[at + len..];
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// The always-inline helper `C__warp(args, grid, block)` of the launch `l` (module docs), with
/// a fourth parameter, the stream, for a launch into a named stream; returns it and the
/// arguments its call takes after the dims.
pub(super) fn helper<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, c: &Child<'ctx>, entries: &Entries<'ctx>) -> (FunctionValue<'ctx>, Vec<BasicMetadataValueEnum<'ctx>>) {
    let ctx = module.get_context();
    let (i1t, i32t, i64t) = (ctx.bool_type(), ctx.i32_type(), ctx.i64_type());
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let named = named_stream_of(l);
    let extra: Vec<inkwell::types::BasicMetadataTypeEnum> = named.iter().map(|s| s.get_type().into()).collect();
    let f = new_helper_with(module, l, &format!("{}__warp", c.child.get_name().to_string_lossy()), &extra);
    let p = |i: u32| f.get_nth_param(i).expect("a parameter");
    let stream = named.map(|_| p(3));
    let b = ctx.create_builder();
    let bb = |name: &str| ctx.append_basic_block(f, name);
    let (entry, meet, several, alloc, share, write, lead, count_head, count_body, counted, launch_agg, launched, after_lead, aggregated, direct) = (
        bb("entry"),
        bb("meet"),
        bb("several"),
        bb("alloc"),
        bb("share"),
        bb("write"),
        bb("lead"),
        bb("count"),
        bb("count.record"),
        bb("counted"),
        bb("launch.agg"),
        bb("launched"),
        bb("after.lead"),
        bb("aggregated"),
        bb("direct"),
    );
    let c32 = |v: u64| i32t.const_int(v, false);
    let c64 = |v: u64| i64t.const_int(v, false);
    let call = |name: &str, types: &[BasicTypeEnum<'ctx>], args: &[BasicMetadataValueEnum<'ctx>], label: &str| -> Option<BasicValueEnum<'ctx>> {
        ok(b.build_call(intrinsic(module, name, types), args, label)).try_as_basic_value().basic()
    };

    b.position_at_end(entry);
    let config = Config::load(&ctx, &b, p(1), p(2));
    let fits = ok(b.build_int_compare(IntPredicate::ULE, config.blocks, c64(MAX_BLOCKS_PER_RECORD), "fits"));
    let valid = ok(b.build_and(config.valid, fits, "valid"));
    let mask = call("llvm.nvvm.activemask", &[], &[], "mask").expect("a mask").into_int_value();
    let ballot = |v: IntValue<'ctx>, name: &str| call("llvm.nvvm.vote.ballot.sync", &[], &[mask.into(), v.into()], name).expect("a ballot").into_int_value();
    // Into a named stream, the group is the valid lanes whose stream is the first valid lane's:
    // its launch goes into that stream; the other lanes launch their own.
    let valid = match stream {
        None => valid,
        Some(stream) => {
            let first = call("llvm.cttz", &[i32t.into()], &[ballot(valid, "valid.lanes").into(), i1t.const_zero().into()], "first").expect("a lane").into_int_value();
            let bits = ok(b.build_ptr_to_int(stream.into_pointer_value(), i64t, "stream.bits"));
            let same = |word: IntValue<'ctx>, name: &str| {
                let theirs = call("llvm.nvvm.shfl.sync.idx.i32", &[], &[mask.into(), word.into(), first.into(), c32(31).into()], name).expect("a lane's value").into_int_value();
                ok(b.build_int_compare(IntPredicate::EQ, word, theirs, "same"))
            };
            let lo = same(ok(b.build_int_truncate(bits, i32t, "stream.lo")), "first.lo");
            let hi = same(ok(b.build_int_truncate(ok(b.build_right_shift(bits, c64(32), false, "stream.up")), i32t, "stream.hi")), "first.hi");
            ok(b.build_and(valid, ok(b.build_and(lo, hi, "same.stream")), "valid.same"))
        }
    };
    let group = ballot(valid, "group");
    ok(b.build_conditional_branch(valid, meet, direct));

    b.position_at_end(meet);
    let popc = |v: IntValue<'ctx>, name: &str| call("llvm.ctpop", &[i32t.into()], &[v.into()], name).expect("a count").into_int_value();
    let n = popc(group, "n");
    let more = ok(b.build_int_compare(IntPredicate::UGT, n, c32(1), "more"));
    ok(b.build_conditional_branch(more, several, direct));

    b.position_at_end(several);
    let lt = call("llvm.nvvm.read.ptx.sreg.lanemask.lt", &[], &[], "lanemask.lt").expect("a mask").into_int_value();
    let rank = popc(ok(b.build_and(group, lt, "below")), "rank");
    let leader = call("llvm.cttz", &[i32t.into()], &[group.into(), i1t.const_zero().into()], "leader").expect("a lane").into_int_value();
    let is_leader = ok(b.build_int_compare(IntPredicate::EQ, rank, c32(0), "is.leader"));
    ok(b.build_conditional_branch(is_leader, alloc, share));

    b.position_at_end(alloc);
    let bytes = ok(b.build_int_mul(ok(b.build_int_z_extend(n, i64t, "n64")), c64(c.stride), "bytes"));
    let table = ok(b.build_call(c.table, &[bytes.into()], "table")).try_as_basic_value().basic().expect("a pointer");
    ok(b.build_unconditional_branch(share));

    b.position_at_end(share);
    let mine = ok(b.build_phi(ptr, "allocation"));
    mine.add_incoming(&[(&ptr.const_null(), several), (&table, alloc)]);
    let shfl = |v: IntValue<'ctx>, name: &str| call("llvm.nvvm.shfl.sync.idx.i32", &[], &[group.into(), v.into(), leader.into(), c32(31).into()], name).expect("a lane's value").into_int_value();
    let bits = ok(b.build_ptr_to_int(mine.as_basic_value().into_pointer_value(), i64t, "bits"));
    let lo = shfl(ok(b.build_int_truncate(bits, i32t, "lo")), "lo.shared");
    let hi = shfl(ok(b.build_int_truncate(ok(b.build_right_shift(bits, c64(32), false, "hi")), i32t, "hi")), "hi.shared");
    let joined = ok(b.build_or(ok(b.build_left_shift(ok(b.build_int_z_extend(hi, i64t, "hi64")), c64(32), "hi.up")), ok(b.build_int_z_extend(lo, i64t, "lo64")), "joined"));
    let table = ok(b.build_int_to_ptr(joined, ptr, "table.shared"));
    let have = ok(b.build_is_not_null(table, "have.table"));
    ok(b.build_conditional_branch(have, write, direct));

    // Every lane writes its record.
    b.position_at_end(write);
    let rec = byte_gep(&b, table, ok(b.build_int_mul(ok(b.build_int_z_extend(rank, i64t, "rank64")), c64(c.stride), "at")), "record");
    let store_at = |base: PointerValue<'ctx>, offset: u64, v: IntValue<'ctx>| {
        ok(b.build_store(byte_gep(&b, base, c64(offset), "field"), v));
    };
    store_at(rec, 0, c32(0));
    store_at(rec, OFF_DONE, c32(0));
    for (i, v) in config.grid.iter().chain(&config.block).enumerate() {
        store_at(rec, OFF_GRID + 4 * i as u64, *v);
    }
    if c.args_size > 0 {
        ok(b.build_memcpy(byte_gep(&b, rec, c64(c.args_at), "record.args"), RECORD_ALIGN, p(0).into_pointer_value(), ARGS_ALIGN, c64(c.args_size)));
    }
    call("llvm.nvvm.membar.gl", &[], &[], "");
    call("llvm.nvvm.bar.warp.sync", &[], &[group.into()], "");
    ok(b.build_conditional_branch(is_leader, lead, after_lead));

    // The leader numbers the records' blocks, then launches; but only with no error of its
    // own pending (`cudaPeekAtLastError`), which a failed launch of `C__agg` would replace
    // (module docs, "A thread's last error").
    b.position_at_end(lead);
    let prior = call_error_function(module, &b, RuntimeFn::PeekAtLastError, "prior.error");
    let clean = ok(b.build_int_compare(IntPredicate::EQ, prior, c32(0), "no.prior.error"));
    let one = i1t.const_int(1, false);
    ok(b.build_conditional_branch(clean, count_head, launched));
    b.position_at_end(count_head);
    let i = ok(b.build_phi(i32t, "i"));
    let total = ok(b.build_phi(i32t, "total"));
    let min_t = ok(b.build_phi(i32t, "min.threads"));
    let max_t = ok(b.build_phi(i32t, "max.threads"));
    let (iv, total_v, min_v, max_v) = (i.as_basic_value().into_int_value(), total.as_basic_value().into_int_value(), min_t.as_basic_value().into_int_value(), max_t.as_basic_value().into_int_value());
    let more = ok(b.build_int_compare(IntPredicate::ULT, iv, n, "more.records"));
    ok(b.build_conditional_branch(more, count_body, counted));
    b.position_at_end(count_body);
    let r = byte_gep(&b, table, ok(b.build_int_mul(ok(b.build_int_z_extend(iv, i64t, "i64")), c64(c.stride), "at")), "rec");
    ok(b.build_store(r, total_v));
    let field = |offset: u64| ok(b.build_load(i32t, byte_gep(&b, r, c64(offset), "field"), "dim")).into_int_value();
    let mul3 = |o: u64| ok(b.build_int_mul(ok(b.build_int_mul(field(o), field(o + 4), "m")), field(o + 8), "volume"));
    let next_total = ok(b.build_int_add(total_v, mul3(OFF_GRID), "total.next"));
    let threads = mul3(OFF_BLOCK);
    let umin = call("llvm.umin", &[i32t.into()], &[min_v.into(), threads.into()], "min").expect("a min").into_int_value();
    let umax = call("llvm.umax", &[i32t.into()], &[max_v.into(), threads.into()], "max").expect("a max").into_int_value();
    let next_i = ok(b.build_int_add(iv, c32(1), "i.next"));
    super::records::no_unrolling(ok(b.build_unconditional_branch(count_head)));
    i.add_incoming(&[(&c32(0), lead), (&next_i, count_body)]);
    total.add_incoming(&[(&c32(0), lead), (&next_total, count_body)]);
    min_t.add_incoming(&[(&c32(u32::MAX as u64), lead), (&umin, count_body)]);
    max_t.add_incoming(&[(&c32(0), lead), (&umax, count_body)]);

    b.position_at_end(counted);
    if c.syncs {
        // The copy's barriers need every thread of a block: only equal block sizes.
        let differ = ok(b.build_int_compare(IntPredicate::NE, min_v, max_v, "sizes.differ"));
        ok(b.build_conditional_branch(differ, launched, launch_agg));
    } else {
        ok(b.build_unconditional_branch(launch_agg));
    }
    b.position_at_end(launch_agg);
    let (status, agg_call) = launch_agg_kernel(module, &b, f, l, c, entries, table, n, total_v, max_v, stream);
    // V1 under any ABI: the group's lanes wait for it at the shuffle (module docs).
    launch::mark_v1(agg_call);
    let failed = ok(b.build_int_compare(IntPredicate::NE, status, c32(0), "failed"));
    let launch_end = b.get_insert_block().expect("positioned");
    // A failed launch of `C__agg` set the leader's last error; with none before it, reading
    // it leaves the leader as it was, so that its own launch below alone decides it.
    let clear = bb("clear.error");
    ok(b.build_conditional_branch(failed, clear, launched));
    b.position_at_end(clear);
    call_error_function(module, &b, RuntimeFn::GetLastError, "agg.error");
    ok(b.build_unconditional_branch(launched));
    b.position_at_end(launched);
    let fallback = ok(b.build_phi(i1t, "fallback"));
    fallback.add_incoming(&[(&i1t.const_zero(), launch_end), (&one, clear), (&one, lead)]);
    if c.syncs {
        fallback.add_incoming(&[(&one, counted)]);
    }
    let give_back = bb("give.back");
    let leader_done = bb("leader.done");
    ok(b.build_conditional_branch(fallback.as_basic_value().into_int_value(), give_back, leader_done));
    b.position_at_end(give_back);
    ok(b.build_call(c.give_back, &[table.into()], ""));
    ok(b.build_unconditional_branch(leader_done));
    b.position_at_end(leader_done);
    ok(b.build_unconditional_branch(after_lead));

    // The shuffle also holds the lanes until the leader has launched, so that a later launch
    // of theirs stays behind this one in the block's NULL stream.
    b.position_at_end(after_lead);
    let fb = ok(b.build_phi(i1t, "fb"));
    fb.add_incoming(&[(&i1t.const_zero(), write), (&fallback.as_basic_value(), leader_done)]);
    let fb32 = ok(b.build_int_z_extend(fb.as_basic_value().into_int_value(), i32t, "fb32"));
    let all = shfl(fb32, "fallback.shared");
    let done = ok(b.build_int_compare(IntPredicate::EQ, all, c32(0), "done"));
    ok(b.build_conditional_branch(done, aggregated, direct));
    b.position_at_end(aggregated);
    ok(b.build_return(Some(&c32(0))));

    // Launched as it was: each thread's launch, and its status; kept V1 as the leader's is
    // (module docs).
    b.position_at_end(direct);
    if let Some(own) = launch_as_documented(module, f, &b, l, l.buffer, p(0).into_pointer_value(), p(1), p(2), stream) {
        launch::mark_v1(own);
    }
    let args = named.into_iter().map(Into::into).collect();
    (f, args)
}

/// A call at `b` of the device runtime's `f` (`cudaGetLastError`, `cudaPeekAtLastError`: no
/// parameters, a `cudaError_t`): through the module's declaration of it by its C name or
/// libcudadevrt's `__cudaCDP2` symbol (both defined there), else a new declaration by its C name.
/// A declaration of another type (IR from elsewhere) is called as the function it names.
fn call_error_function<'ctx>(module: &Module<'ctx>, b: &inkwell::builder::Builder<'ctx>, f: RuntimeFn, label: &str) -> IntValue<'ctx> {
    let ty = module.get_context().i32_type().fn_type(&[], false);
    let e = f.entry_point();
    let typed = [e.ptx_symbol, e.c_name].iter().find_map(|n| module.get_function(n).filter(|g| g.get_type() == ty));
    let call = match (typed, module.get_function(e.c_name)) {
        (Some(g), _) => ok(b.build_call(g, &[], label)),
        (None, None) => ok(b.build_call(module.add_function(e.c_name, ty, Some(Linkage::External)), &[], label)),
        (None, Some(g)) => ok(b.build_indirect_call(ty, g.as_global_value().as_pointer_value(), &[], label)),
    };
    call.try_as_basic_value().basic().expect("a cudaError_t").into_int_value()
}

/// Why a warp's lanes never make the launch `l` together, when the IR shows it: every path to
/// the launch takes an edge taken only where the thread's index in its block (`threadIdx.x`,
/// `threadIdx.y * blockDim.x + threadIdx.x`), in its grid (`blockIdx.x * blockDim.x +
/// threadIdx.x`) or in its warp (`threadIdx.x % 32`, `threadIdx.x & (warpSize - 1)`, the lane
/// id) equals a constant, as in `if (threadIdx.x == 0) child<<<...>>>(...)`. Such
/// an index differs from lane to lane of a warp in blocks of one dimension (of one or two for
/// the two-dimensional index), so the group is the lane alone: the helper would only cost the
/// parent registers (`samples/mandelbrot.cdp`'s `mandelbrot_block`, whose thread 0 launches:
/// 40 registers plain, 62 with the helpers). In blocks of more dimensions a few lanes may
/// share the index; leaving their launches as they are is correct, only not gathered.
///
/// The edges: `P -> S` where `S` dominates the launch's block and has `P` as its one
/// predecessor, `P` branching on a condition. The index is read through locals that only
/// their declaration stores ([`uniform::single_store`]: the front ends' unoptimised IR), and
/// does not change while a thread runs.
///
/// A launch in an always-inline helper called once (thresholding's `C__threshold`, which
/// holds the launch a grid too large to run in place still makes) is judged at each call of
/// the chain too ([`block::chain`]): `if (threadIdx.x == 0) child<<<1, 256>>>(...)` at
/// `-flaunch-threshold=128` is thread 0's launch as without thresholding
/// (`samples/memory_visibility.cdp` read 1.21x nvcc's time per block and 1.23x per grid,
/// aggregated for want of it).
pub(super) fn one_lane<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>) -> Option<LoneIndex> {
    block::chain(module, l).into_iter().enumerate().find_map(|(level, (function, at))| {
        // The launch's own block is where its buffer is made; a helper's, where it is called.
        let site = if level == 0 { l.buffer.unwrap_or(l.call) } else { at };
        lone_at(function, site.get_parent()?)
    })
}

/// [`one_lane`] for one function: whether every path to `target` takes such an edge.
fn lone_at(function: FunctionValue<'_>, target: BasicBlock<'_>) -> Option<LoneIndex> {
    guard_edges(function, target).into_iter().find_map(|(p, s)| p.get_terminator().and_then(|t| taken_where_index_is_constant(t, s)))
}

/// Whether the branch `t` goes to `to` only where a thread index equals a constant
/// ([`one_lane`]).
fn taken_where_index_is_constant(t: InstructionValue<'_>, to: BasicBlock<'_>) -> Option<LoneIndex> {
    if t.get_opcode() != InstructionOpcode::Br || t.get_num_operands() != 3 {
        return None;
    }
    // A conditional branch's operands: the condition, the false target, the true target.
    let target = |i: u32| block_operand(t, i);
    let (on_false, on_true) = (target(1)? == to, target(2)? == to);
    if on_false == on_true {
        return None;
    }
    holds(operand(t, 0)?, on_true, 0)
}

/// Whether `cond` being `value` means a thread index equals a constant: `index == c`,
/// `index != c` false, `a && b` true with either, and the front ends' `(int)b != 0`.
fn holds(cond: BasicValueEnum<'_>, value: bool, depth: u32) -> Option<LoneIndex> {
    let c = local(cond, depth)?.as_instruction_value()?;
    let operands = [operand(c, 0), operand(c, 1)];
    let constant = |v: Option<BasicValueEnum<'_>>| v.filter(|v| v.is_int_value() && v.into_int_value().is_const()).map(|v| v.into_int_value().get_zero_extended_constant());
    match c.get_opcode() {
        InstructionOpcode::And if value => operands.into_iter().flatten().find_map(|o| holds(o, true, depth + 1)),
        InstructionOpcode::ZExt | InstructionOpcode::SExt => holds(operands[0]?, value, depth + 1),
        InstructionOpcode::ICmp => {
            let eq = match c.get_icmp_predicate()? {
                IntPredicate::EQ => value,
                IntPredicate::NE => !value,
                _ => return None,
            };
            let (other, k) = match (constant(operands[0]), constant(operands[1])) {
                (_, Some(k)) => (operands[0]?, k),
                (Some(k), _) => (operands[1]?, k),
                _ => return None,
            };
            // `b != 0` of a widened `b`: `b` itself; else `index == k`.
            let widened_bool = local(other, depth).and_then(|v| v.as_instruction_value()).is_some_and(|i| {
                matches!(i.get_opcode(), InstructionOpcode::ZExt | InstructionOpcode::SExt) && operand(i, 0).is_some_and(|b| b.is_int_value() && b.into_int_value().get_type().get_bit_width() == 1)
            });
            if widened_bool && k == Some(0) {
                holds(other, !eq, depth + 1)
            } else if eq {
                thread_index(other)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `v`, or what the one store of the local it loads stored, followed.
fn local<'ctx>(v: BasicValueEnum<'ctx>, depth: u32) -> Option<BasicValueEnum<'ctx>> {
    let mut v = v;
    for _ in depth..MAX_DEPTH {
        match v.as_instruction_value().filter(|i| i.get_opcode() == InstructionOpcode::Load) {
            Some(load) => v = uniform::single_store(load)?,
            None => return Some(v),
        }
    }
    None
}

/// How deep [`holds`] and [`local`] follow values.
const MAX_DEPTH: u32 = 8;

/// Which thread index `v` computes, if it is one [`one_lane`] takes.
fn thread_index<'ctx>(v: BasicValueEnum<'ctx>) -> Option<LoneIndex> {
    let reads = |v: BasicValueEnum<'ctx>, reg: &str| {
        local(v, 0).and_then(|v| v.as_instruction_value()).and_then(|i| called_function(i.as_value_ref())).is_some_and(|f| value_name(f) == format!("llvm.nvvm.read.ptx.sreg.{reg}"))
    };
    if reads(v, "tid.x") {
        return Some(LoneIndex::ThreadX);
    }
    if reads(v, "laneid") {
        return Some(LoneIndex::Lane);
    }
    let operands = |i: InstructionValue<'ctx>| -> Option<[BasicValueEnum<'ctx>; 2]> { Some([operand(i, 0)?, operand(i, 1)?]) };
    let constant = |v: BasicValueEnum<'ctx>| v.is_int_value() && v.into_int_value().is_const() && v.into_int_value().get_zero_extended_constant().is_some();
    let constant_is = |v: BasicValueEnum<'ctx>, k: u64| constant(v) && v.into_int_value().get_zero_extended_constant() == Some(k);
    // `threadIdx.x & 31` (`% 32`, `& (warpSize - 1)` as LLVM folds it): the lane.
    if let Some(inst) = local(v, 0).and_then(|v| v.as_instruction_value()) {
        let lane = match (inst.get_opcode(), operands(inst)) {
            (InstructionOpcode::And, Some([a, b])) => (reads(a, "tid.x") && constant_is(b, 31)) || (reads(b, "tid.x") && constant_is(a, 31)),
            (InstructionOpcode::URem | InstructionOpcode::SRem, Some([a, b])) => reads(a, "tid.x") && constant_is(b, 32),
            _ => false,
        };
        if lane {
            return Some(LoneIndex::Lane);
        }
    }
    // `a * b` with {a, b} = {x, y}, in either order.
    let product_of = |v: BasicValueEnum<'ctx>, x: &str, y: &str| {
        local(v, 0)
            .and_then(|v| v.as_instruction_value())
            .filter(|i| i.get_opcode() == InstructionOpcode::Mul)
            .and_then(operands)
            .is_some_and(|[a, b]| (reads(a, x) && reads(b, y)) || (reads(a, y) && reads(b, x)))
    };
    let inst = local(v, 0)?.as_instruction_value().filter(|i| matches!(i.get_opcode(), InstructionOpcode::Add | InstructionOpcode::Or))?;
    let [a, b] = operands(inst)?;
    let other = if reads(a, "tid.x") {
        b
    } else if reads(b, "tid.x") {
        a
    } else {
        return None;
    };
    if product_of(other, "tid.y", "ntid.x") {
        Some(LoneIndex::Linear2d)
    } else if product_of(other, "ctaid.x", "ntid.x") {
        Some(LoneIndex::Global)
    } else {
        None
    }
}

/// The thread index that [`one_lane`] found equal to a constant where a launch is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LoneIndex {
    /// `threadIdx.x`: one thread of a block in blocks of one dimension.
    ThreadX,
    /// `threadIdx.y * blockDim.x + threadIdx.x`: one thread of a block in blocks of one or two.
    Linear2d,
    /// `blockIdx.x * blockDim.x + threadIdx.x`: one thread of the grid in blocks and grids of
    /// one dimension.
    Global,
    /// `threadIdx.x % 32` (or the lane id itself): one lane of each warp in blocks of one
    /// dimension, several in a block.
    Lane,
}

/// Who makes a launch together, at each granularity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Among {
    Warp,
    Block,
    Grid,
}

impl LoneIndex {
    /// Whether at most one thread of each group `among` makes the launch (in the block shapes
    /// [`Self::why`] names): every index at warp granularity, every one but the lane at block
    /// granularity (one lane of each warp of a block may launch with the others), the global
    /// one alone at grid granularity (one thread of each block may still launch with the
    /// others).
    pub fn alone_in(self, among: Among) -> bool {
        match self {
            LoneIndex::Global => true,
            LoneIndex::Lane => among == Among::Warp,
            LoneIndex::ThreadX | LoneIndex::Linear2d => among != Among::Grid,
        }
    }

    /// Why aggregation among `among` has nothing to gather, for the remark.
    pub fn why(self, among: Among) -> String {
        let (index, shapes) = match self {
            LoneIndex::ThreadX => ("`threadIdx.x`", "blocks of one dimension"),
            LoneIndex::Linear2d => ("`threadIdx.y * blockDim.x + threadIdx.x`", "blocks of one or two dimensions"),
            LoneIndex::Global => ("`blockIdx.x * blockDim.x + threadIdx.x`", "blocks of one dimension"),
            LoneIndex::Lane => ("the lane (`threadIdx.x % 32`)", "blocks of one dimension"),
        };
        let (who, per) = match among {
            Among::Warp => ("no two lanes of a warp make it together", "warp"),
            Among::Block => ("no two threads of a block make it", "block"),
            Among::Grid => ("no two threads of the grid make it", "grid"),
        };
        format!("the launch is made only where {index} equals a constant: {who} in {shapes}, so aggregation per {per} has nothing to gather")
    }
}
