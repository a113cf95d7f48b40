//! Warp granularity on LLVM IR (`-faggregate-launches=warp`, and at block and grid granularity
//! the launches of kernels that read launch errors): the threads of a warp that reach a launch
//! together make one launch of `C__agg` ([`super`]). The semantics are
//! docs/AGGREGATION.md's.
//!
//! A recognised launch `C<<<g, b, S>>>(args)` into the NULL stream, `S` a constant, becomes a
//! call of the always-inline helper `C__warp(args block, g, b)`:
//!
//! ```c
//! valid = the runtime would launch it, with at most 2^22 blocks;
//! group = __ballot_sync(__activemask(), valid);
//! if (valid && popc(group) > 1) {
//!     rank = popc(group & lanemask_lt); leader = lowest lane of group;
//!     table = rank == 0 ? a chunk of C's pool, else malloc(n * sizeof(record)) : 0;
//!                                                     // shared by two shuffles
//!     if (table) {
//!         for each lane l of group, in order:   // shuffles, no memory
//!             b = shfl(blocks(grid), l); t = shfl(threads(block), l);
//!             if (l < my lane) start += b; total += b; min, max of t;
//!         table[rank] = {start, 0, g, b, args}; __threadfence(); __syncwarp(group);
//!         if (rank == 0) {   // launch, or give the table back
//!             fallback = (C syncs && block sizes differ) || C__agg<<<total, max threads, S>>>(table, n) != 0;
//!             if (fallback) free(table);
//!         }
//!         if (shfl(fallback, leader) == 0) return cudaSuccess;
//!     }
//! }
//! return C<<<g, b, S>>>(args);   // the documented sequence, as before
//! ```
//!
//! The table comes from the child's static pool, else from `malloc` (`super::pool`);
//! `C__agg` and what is left alone are [`super`]'s.
//!
//! The leader's launch of `C__agg` is marked to stay in the documented V1 sequence whatever
//! ABI is asked for ([`launch::mark_v1`]): the lanes that wait at the shuffle for it could
//! hang the V2 entry point, as the `.cdp` front end's first, HIR-level V2 builds did (docs/AGGREGATION.md). Every other
//! launch, the lanes' own as before included, is lowered to the ABI asked for.

use super::super::launch::{self, Launch};
use super::super::threshold::{launch_as_documented, new_helper, ok, Config};
use super::{byte_gep, intrinsic, launch_agg_kernel, Child, Entries, OFF_DONE, OFF_GRID};
use inkwell::module::Module;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;

/// The always-inline helper `C__warp(args, grid, block)` of the launch `l` (module docs).
pub(super) fn helper<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, c: &Child<'ctx>, entries: &Entries<'ctx>) -> FunctionValue<'ctx> {
    let ctx = module.get_context();
    let (i1t, i32t, i64t) = (ctx.bool_type(), ctx.i32_type(), ctx.i64_type());
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let f = new_helper(module, l, &format!("{}__warp", c.child.get_name().to_string_lossy()));
    let p = |i: u32| f.get_nth_param(i).expect("a parameter");
    let b = ctx.create_builder();
    let bb = |name: &str| ctx.append_basic_block(f, name);
    let (entry, meet, several, alloc, share, write, count_head, count_body, counted_all, counted, launch_agg, launched, after_lead, aggregated, direct) = (
        bb("entry"),
        bb("meet"),
        bb("several"),
        bb("alloc"),
        bb("share"),
        bb("write"),
        bb("count"),
        bb("count.lane"),
        bb("record"),
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
    let fits = ok(b.build_int_compare(IntPredicate::ULE, config.blocks, c64(super::MAX_BLOCKS_PER_RECORD), "fits"));
    let valid = ok(b.build_and(config.valid, fits, "valid"));
    let mask = call("llvm.nvvm.activemask", &[], &[], "mask").expect("a mask").into_int_value();
    let group = call("llvm.nvvm.vote.ballot.sync", &[], &[mask.into(), valid.into()], "group").expect("a ballot").into_int_value();
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
    // The pool's or the heap's: global memory ([`super::super::global_pointers`]).
    super::super::global_pointers::mark_instruction(module, table.as_instruction_value().expect("an inttoptr"));
    let have = ok(b.build_is_not_null(table, "have.table"));
    ok(b.build_conditional_branch(have, write, direct));

    // Every lane numbers its record's blocks and writes its record. The group's lanes are
    // read in lane order (the ranks' order) by shuffles: this lane's first block is the sum of
    // the blocks of the lanes below it, and every lane learns the total and the smallest and
    // largest block, where the leader once read them back from the records, one dependent
    // round trip to memory per record.
    b.position_at_end(write);
    let narrow = |v: IntValue<'ctx>, name: &str| ok(b.build_int_truncate(v, i32t, name));
    let (my_blocks, my_threads) = (narrow(config.blocks, "my.blocks"), narrow(config.threads, "my.threads"));
    let lane = call("llvm.nvvm.read.ptx.sreg.laneid", &[], &[], "lane").expect("a lane").into_int_value();
    ok(b.build_unconditional_branch(count_head));
    b.position_at_end(count_head);
    let rest = ok(b.build_phi(i32t, "rest"));
    let start = ok(b.build_phi(i32t, "start"));
    let total = ok(b.build_phi(i32t, "total"));
    let min_t = ok(b.build_phi(i32t, "min.threads"));
    let max_t = ok(b.build_phi(i32t, "max.threads"));
    let [rest_v, start_v, total_v, min_v, max_v] = [rest, start, total, min_t, max_t].map(|p| p.as_basic_value().into_int_value());
    let more = ok(b.build_int_compare(IntPredicate::NE, rest_v, c32(0), "more.lanes"));
    ok(b.build_conditional_branch(more, count_body, counted_all));
    b.position_at_end(count_body);
    let src = call("llvm.cttz", &[i32t.into()], &[rest_v.into(), i1t.const_zero().into()], "src").expect("a lane").into_int_value();
    let their_blocks = call("llvm.nvvm.shfl.sync.idx.i32", &[], &[group.into(), my_blocks.into(), src.into(), c32(31).into()], "their.blocks").expect("a value").into_int_value();
    let their_threads = call("llvm.nvvm.shfl.sync.idx.i32", &[], &[group.into(), my_threads.into(), src.into(), c32(31).into()], "their.threads").expect("a value").into_int_value();
    let below_me = ok(b.build_int_compare(IntPredicate::ULT, src, lane, "below.me"));
    let next_start = ok(b.build_select(below_me, ok(b.build_int_add(start_v, their_blocks, "start.more")), start_v, "start.next")).into_int_value();
    let next_total = ok(b.build_int_add(total_v, their_blocks, "total.next"));
    let umin = call("llvm.umin", &[i32t.into()], &[min_v.into(), their_threads.into()], "min").expect("a min").into_int_value();
    let umax = call("llvm.umax", &[i32t.into()], &[max_v.into(), their_threads.into()], "max").expect("a max").into_int_value();
    let next_rest = ok(b.build_and(rest_v, ok(b.build_int_sub(rest_v, c32(1), "rest.1")), "rest.next"));
    ok(b.build_unconditional_branch(count_head));
    rest.add_incoming(&[(&group, write), (&next_rest, count_body)]);
    start.add_incoming(&[(&c32(0), write), (&next_start, count_body)]);
    total.add_incoming(&[(&c32(0), write), (&next_total, count_body)]);
    min_t.add_incoming(&[(&c32(u32::MAX as u64), write), (&umin, count_body)]);
    max_t.add_incoming(&[(&c32(0), write), (&umax, count_body)]);

    b.position_at_end(counted_all);
    let rec = byte_gep(&b, table, ok(b.build_int_mul(ok(b.build_int_z_extend(rank, i64t, "rank64")), c64(c.stride), "at")), "record");
    let store_at = |base: PointerValue<'ctx>, offset: u64, v: IntValue<'ctx>| {
        ok(b.build_store(byte_gep(&b, base, c64(offset), "field"), v));
    };
    store_at(rec, 0, start_v);
    store_at(rec, OFF_DONE, c32(0));
    for (i, v) in config.grid.iter().chain(&config.block).enumerate() {
        store_at(rec, OFF_GRID + 4 * i as u64, *v);
    }
    if c.args_size > 0 {
        ok(b.build_memcpy(byte_gep(&b, rec, c64(c.args_at), "record.args"), super::RECORD_ALIGN, p(0).into_pointer_value(), super::super::threshold::ARGS_ALIGN, c64(c.args_size)));
    }
    call("llvm.nvvm.membar.gl", &[], &[], "");
    call("llvm.nvvm.bar.warp.sync", &[], &[group.into()], "");
    ok(b.build_conditional_branch(is_leader, counted, after_lead));

    b.position_at_end(counted);
    let one = i1t.const_int(1, false);
    if c.syncs {
        // The copy's barriers need every thread of a block: only equal block sizes.
        let differ = ok(b.build_int_compare(IntPredicate::NE, min_v, max_v, "sizes.differ"));
        ok(b.build_conditional_branch(differ, launched, launch_agg));
    } else {
        ok(b.build_unconditional_branch(launch_agg));
    }
    b.position_at_end(launch_agg);
    let (status, agg_call) = launch_agg_kernel(module, &b, f, l, c, entries, table, n, total_v, max_v);
    // V1 under any ABI: the group's lanes wait for it at the shuffle (module docs).
    launch::mark_v1(agg_call);
    let failed = ok(b.build_int_compare(IntPredicate::NE, status, c32(0), "failed"));
    let launch_end = b.get_insert_block().expect("positioned");
    ok(b.build_unconditional_branch(launched));
    b.position_at_end(launched);
    let fallback = ok(b.build_phi(i1t, "fallback"));
    fallback.add_incoming(&[(&failed, launch_end)]);
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
    fb.add_incoming(&[(&i1t.const_zero(), counted_all), (&fallback.as_basic_value(), leader_done)]);
    let fb32 = ok(b.build_int_z_extend(fb.as_basic_value().into_int_value(), i32t, "fb32"));
    let all = shfl(fb32, "fallback.shared");
    let done = ok(b.build_int_compare(IntPredicate::EQ, all, c32(0), "done"));
    ok(b.build_conditional_branch(done, aggregated, direct));
    b.position_at_end(aggregated);
    ok(b.build_return(Some(&c32(0))));

    // Launched as it was: each thread's launch, and its status.
    b.position_at_end(direct);
    launch_as_documented(module, f, &b, l, l.buffer, p(0).into_pointer_value(), p(1), p(2));
    f
}
