//! The thresholding helper (`C__threshold`, [`super::threshold`]'s module docs): how a small
//! grid runs in place, alone or by the warp's converged lanes together ([`Team`]), is kept for
//! the kernel's end ([`super::defer`]), or is launched as documented. Below `defer` and
//! `threshold`, which both fill helpers with it; it imports only the lower pieces (`sites`,
//! `stream_order`, `emit`, `clone`, `launch`, `copies`).

use super::clone::{self, as_function};
use super::emit::{intrinsic, ok};
use super::launch::Launch;
use super::sites::{byval_at_call, launch_as_documented, load_arguments, parameter_layout, unflatten, Config, ARGS_ALIGN};
use super::stream_order;
use crate::llvm::operand;
use crate::target::Target;
use inkwell::basic_block::BasicBlock;
use inkwell::module::Module;
use inkwell::targets::TargetData;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue};
use inkwell::IntPredicate;

/// Where a thresholding helper runs a small grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// At the site: alone, or with the lanes that reach it together ([`Team`]); a large grid
    /// is launched.
    Site(Team),
    /// At the site a small grid is kept for the kernel's end: the helper's three extra
    /// parameters point at the lane's flag and the grid's and block's dims, which it sets; a
    /// large grid is launched ([`super::defer`]).
    Keep,
    /// At the kernel's end, by every lane of the warp ([`Team::Warp`]): the dims are pointers
    /// to the kept ones and the extra parameter says whether this lane kept a grid; nothing is
    /// launched ([`super::defer`]).
    End,
}

/// Fills `f`, a helper made for the launch `l` (by [`super::sites::new_helper`], or for [`Mode::End`] by
/// [`super::defer`]), as `mode` says: in [`Mode::Site`] the always-inline helper
/// `C__threshold(args, grid, block)` of the module docs. A grid runs in place (or is kept) only
/// where its block has no NULL-stream launch in flight before it ([`super::stream_order`]; `owned`:
/// and its kernel is one of the module's, for a site that another module's code may reach).
/// With `own` (a launch into its thread's own stream, [`Mode::Site`] only), the helper's
/// fourth and fifth parameters are the stream and the stream's flag ([`super::own_stream`]):
/// the grid runs in place only where the flag is clear, and the helper sets it and launches
/// into the stream otherwise.
#[allow(clippy::too_many_arguments)]
pub(super) fn helper<'ctx>(
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    l: &Launch<'ctx>,
    serial: FunctionValue<'ctx>,
    max: u32,
    data: &TargetData,
    mode: Mode,
    owned: bool,
    own: bool,
) -> FunctionValue<'ctx> {
    let ctx = module.get_context();
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let operand = |i: u32| operand(l.call, i).expect("a launch's operand");
    let child = as_function(operand(0).as_value_ref());
    let p = |i: u32| f.get_nth_param(i).expect("a parameter");
    let b = ctx.create_builder();
    let entry = ctx.append_basic_block(f, "entry");
    let launch_bb = ctx.append_basic_block(f, "launch");
    b.position_at_end(entry);
    let config = Config::load(&ctx, &b, p(1), p(2));
    let c64 = |v: u64| i64t.const_int(v, false);
    let (blocks, threads) = (config.blocks, config.threads);
    let small = if mode == Mode::End {
        // Kept at the site only when small.
        p(3).into_int_value()
    } else {
        let mut conds = vec![config.valid];
        conds.push(ok(b.build_int_compare(IntPredicate::ULE, blocks, c64(max.into()), "blocks.small")));
        // Blocks and threads are bounded by now, so the product cannot wrap.
        conds.push(ok(b.build_int_compare(IntPredicate::ULE, ok(b.build_int_mul(blocks, threads, "m")), c64(max.into()), "grid.small")));
        conds.push(stream_order::may_run_in_place(module, &b, owned));
        if own {
            let launched = ok(b.build_load(ctx.bool_type(), p(4).into_pointer_value(), "own.stream.launched")).into_int_value();
            conds.push(ok(b.build_not(launched, "own.stream.idle")));
        }
        conds.into_iter().reduce(|a, c| ok(b.build_and(a, c, "small"))).expect("conditions")
    };
    let (g, bd) = (config.grid, config.block);
    let (layout, _) = parameter_layout(child.expect("a taken site launches a function"), data);
    let args_ptr = p(0).into_pointer_value();
    // Where a small grid runs in place, between the entry and the launch (a grid kept for the
    // kernel's end runs there, not here: no such block).
    let new_in_place = || ctx.insert_basic_block_after(entry, "in_place");
    let in_place = match mode {
        Mode::Site(Team::Off) => {
            let in_place = new_in_place();
            ok(b.build_conditional_branch(small, in_place, launch_bb));
            Some(in_place)
        }
        Mode::Site(Team::Warp) | Mode::End => {
            let in_place = new_in_place();
            let dispatch = ctx.append_basic_block(f, "alone");
            let together = team_path(module, f, &b, l, serial, &layout, args_ptr, &config, small, launch_bb);
            ok(b.build_conditional_branch(together.0, together.1, dispatch));
            b.position_at_end(dispatch);
            ok(b.build_conditional_branch(small, in_place, launch_bb));
            Some(in_place)
        }
        Mode::Keep => {
            // The flag and the dims into the kernel's slots; the arguments stay in the site's
            // argument block, which nothing writes after the site.
            let keep = ctx.append_basic_block(f, "keep");
            ok(b.build_conditional_branch(small, keep, launch_bb));
            b.position_at_end(keep);
            ok(b.build_store(p(3).into_pointer_value(), ctx.bool_type().const_all_ones()));
            let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
            for (dims, slot) in [(g, p(4)), (bd, p(5))] {
                for (k, v) in dims.into_iter().enumerate() {
                    let at = ok(b.build_struct_gep(dim3, slot.into_pointer_value(), k as u32, "kept.d"));
                    ok(b.build_store(at, v));
                }
            }
            ok(b.build_return(Some(&i32t.const_zero())));
            None
        }
    };

    // In place: the arguments, then a loop over blocks and one over threads.
    if let Some(in_place) = in_place {
        in_place_loops(module, f, &b, in_place, serial, &layout, args_ptr, &config);
    }

    // Launched: the documented sequence, from the argument block; at the kernel's end, where
    // only kept grids are run, nothing.
    b.position_at_end(launch_bb);
    if mode == Mode::End {
        ok(b.build_return(Some(&i32t.const_zero())));
    } else if own {
        ok(b.build_store(p(4).into_pointer_value(), ctx.bool_type().const_all_ones()));
        launch_as_documented(module, f, &b, l, l.buffer, args_ptr, p(1), p(2), Some(p(3)));
    } else {
        launch_as_documented(module, f, &b, l, l.buffer, args_ptr, p(1), p(2), None);
    }
    f
}

/// At `in_place`, the end of the helper `f`: each of the grid's threads, one after another,
/// in calls of `serial`; then `return cudaSuccess`.
#[allow(clippy::too_many_arguments)]
fn in_place_loops<'ctx>(
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    in_place: BasicBlock<'ctx>,
    serial: FunctionValue<'ctx>,
    layout: &[(u64, Option<BasicTypeEnum<'ctx>>)],
    args_ptr: inkwell::values::PointerValue<'ctx>,
    config: &Config<'ctx>,
) {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let (blocks, threads, g, bd) = (config.blocks, config.threads, config.grid, config.block);
    b.position_at_end(in_place);
    let args = load_arguments(&ctx, b, layout, args_ptr, ARGS_ALIGN);
    let u32_of = |v: IntValue<'ctx>| ok(b.build_int_truncate(v, i32t, "n"));
    let (nblocks, nthreads) = (u32_of(blocks), u32_of(threads));
    let outer_head = ctx.append_basic_block(f, "blocks");
    let outer_body = ctx.append_basic_block(f, "block");
    let inner_head = ctx.append_basic_block(f, "threads");
    let inner_body = ctx.append_basic_block(f, "thread");
    let inner_done = ctx.append_basic_block(f, "block.done");
    let all_done = ctx.append_basic_block(f, "done");
    ok(b.build_unconditional_branch(outer_head));
    b.position_at_end(outer_head);
    let bl = ok(b.build_phi(i32t, "bl"));
    let bl_v = bl.as_basic_value().into_int_value();
    let more = ok(b.build_int_compare(IntPredicate::ULT, bl_v, nblocks, "more.blocks"));
    ok(b.build_conditional_branch(more, outer_body, all_done));
    b.position_at_end(outer_body);
    let block_idx = unflatten(b, bl_v, g);
    ok(b.build_unconditional_branch(inner_head));
    b.position_at_end(inner_head);
    let t = ok(b.build_phi(i32t, "t"));
    let t_v = t.as_basic_value().into_int_value();
    let more = ok(b.build_int_compare(IntPredicate::ULT, t_v, nthreads, "more.threads"));
    ok(b.build_conditional_branch(more, inner_body, inner_done));
    b.position_at_end(inner_body);
    let thread_idx = unflatten(b, t_v, bd);
    let mut call_args = args.clone();
    call_args.extend(thread_idx.iter().chain(&block_idx).chain(&bd).chain(&g).map(|v| BasicMetadataValueEnum::from(*v)));
    let call = ok(b.build_call(serial, &call_args, ""));
    byval_at_call(serial, call);
    let t_next = ok(b.build_int_add(t_v, i32t.const_int(1, false), "t.next"));
    ok(b.build_unconditional_branch(inner_head));
    t.add_incoming(&[(&i32t.const_zero(), outer_body), (&t_next, inner_body)]);
    b.position_at_end(inner_done);
    let bl_next = ok(b.build_int_add(bl_v, i32t.const_int(1, false), "bl.next"));
    ok(b.build_unconditional_branch(outer_head));
    bl.add_incoming(&[(&i32t.const_zero(), in_place), (&bl_next, inner_done)]);
    b.position_at_end(all_done);
    ok(b.build_return(Some(&i32t.const_zero())));
}

/// Who runs a small grid in place: the launching thread alone, or its warp's converged lanes
/// together where that takes at most half the rounds ([`team_path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Team {
    /// Each launching thread runs its own grid's threads one after another.
    Off,
    /// The lanes that reach the site together (`__activemask()`) run each small grid among
    /// them, one grid after another, where that takes at most half the rounds of each lane
    /// running its own: sm_80 and newer, whose `redux.sync` counts the rounds in one instruction.
    Warp,
}

impl Team {
    /// [`Team::Warp`] where the target has `redux.sync` (sm_80), else [`Team::Off`].
    pub(super) fn for_target(target: &Target) -> Team {
        if target.sm >= crate::target::SmVersion(80) {
            Team::Warp
        } else {
            Team::Off
        }
    }
}

/// At `b`'s position in the helper `f` (its entry, after `small`): the warp's choice between
/// running the small grids of its converged lanes together and each lane running its own;
/// returns the choice (uniform across those lanes) and the block that runs them together.
///
/// ```c
/// mask = __activemask(); want = __ballot_sync(mask, small);
/// team = popc(mask); rank = popc(mask & lanemask_lt);
/// mine = small ? blocks * threads : 0;
/// rounds = __reduce_add_sync(mask, ceil(mine / team)); alone = __reduce_max_sync(mask, mine);
/// together = alone > 0 && 2 * (rounds + popc(want)) <= alone;
/// if (together) {
///     for each lane L of want, lowest first:      // the grids, one after another
///         config, args = L's, through __shfl_sync(mask, ..., L);
///         for (i = rank; i < blocks * threads; i += team)
///             C__serial(args, unflatten(i % threads, block), unflatten(i / threads, grid), ...);
///     __syncwarp(mask);
///     if (small) return cudaSuccess; else launch as documented;
/// }
/// ```
///
/// Each lane alone takes as many rounds as the largest grid; together, the sum over grids of
/// their rounds among `team` lanes: one lane's grid of 128 threads is 128 rounds alone and 4
/// together, and 32 grids of one thread are 1 round alone and 32 together. A round together
/// costs more (the flat index divided into coordinates; each grid's dims and arguments
/// shuffled first), so the warp goes together only where that takes at most half the rounds,
/// counting a grid as a round: measured on the H100, 29 lanes with grids
/// of 32 to 256 threads took 1.5x as long together where the plain comparison chose it.
///
/// The child's threads need not run together (what thresholding takes), so any lane may run
/// any of them; `__syncwarp` orders the lanes' writes before the launching
/// threads go on, as the thread's own writes were when it ran them alone.
#[allow(clippy::too_many_arguments)]
fn team_path<'ctx>(
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    l: &Launch<'ctx>,
    serial: FunctionValue<'ctx>,
    layout: &[(u64, Option<BasicTypeEnum<'ctx>>)],
    args: inkwell::values::PointerValue<'ctx>,
    config: &Config<'ctx>,
    small: IntValue<'ctx>,
    launch_bb: BasicBlock<'ctx>,
) -> (IntValue<'ctx>, BasicBlock<'ctx>) {
    let ctx = module.get_context();
    let (i1t, i8t, i32t, i64t) = (ctx.bool_type(), ctx.i8_type(), ctx.i32_type(), ctx.i64_type());
    let c32 = |v: u64| i32t.const_int(v, false);
    let call = |name: &str, types: &[BasicTypeEnum<'ctx>], args: &[BasicMetadataValueEnum<'ctx>], label: &str| -> Option<BasicValueEnum<'ctx>> {
        ok(b.build_call(intrinsic(module, name, types), args, label)).try_as_basic_value().basic()
    };
    let int = |v: Option<BasicValueEnum<'ctx>>| v.expect("a value").into_int_value();
    let popc = |v: IntValue<'ctx>, name: &str| int(call("llvm.ctpop", &[i32t.into()], &[v.into()], name));

    // The choice, in the entry.
    let mask = int(call("llvm.nvvm.activemask", &[], &[], "mask"));
    let want = int(call("llvm.nvvm.vote.ballot.sync", &[], &[mask.into(), small.into()], "want"));
    let team = popc(mask, "team");
    let lt = int(call("llvm.nvvm.read.ptx.sreg.lanemask.lt", &[], &[], "lanemask.lt"));
    let rank = popc(ok(b.build_and(mask, lt, "below")), "rank");
    let grid_threads = ok(b.build_int_truncate(ok(b.build_int_mul(config.blocks, config.threads, "all")), i32t, "all32"));
    let mine = ok(b.build_select(small, grid_threads, c32(0), "mine")).into_int_value();
    let rounds = ok(b.build_int_unsigned_div(ok(b.build_int_add(mine, ok(b.build_int_sub(team, c32(1), "team.less")), "up")), team, "rounds"));
    let together_rounds = int(call("llvm.nvvm.redux.sync.add", &[], &[rounds.into(), mask.into()], "rounds.together"));
    let alone_rounds = int(call("llvm.nvvm.redux.sync.umax", &[], &[mine.into(), mask.into()], "rounds.alone"));
    // A round together costs more than one alone (the grid's numbering is worked out from
    // the flat index, and each grid's configuration and arguments are shuffled first): the
    // team is taken where it takes at most half the rounds, a grid counted as one more.
    let grids = popc(want, "grids");
    let cost = ok(b.build_left_shift(ok(b.build_int_add(together_rounds, grids, "cost.rounds")), c32(1), "cost"));
    let cheaper = ok(b.build_int_compare(IntPredicate::ULE, cost, alone_rounds, "cheaper"));
    // (No lane's grid is small: nothing to run, alone or together.)
    let some = ok(b.build_int_compare(IntPredicate::NE, alone_rounds, c32(0), "some"));
    let together = ok(b.build_and(cheaper, some, "together"));
    // The argument block's bytes as 32-bit words, the last padded.
    let size = l.size;
    let words = size.div_ceil(4);
    let shared_args = if words > 0 {
        let entry = f.get_first_basic_block().expect("the helper's entry");
        let here = b.get_insert_block().expect("positioned");
        clone::position_at_start(b, entry);
        let block = ok(b.build_alloca(i8t.array_type((words * 4) as u32), "team.args"));
        block.as_instruction_value().expect("an alloca").set_alignment(ARGS_ALIGN).expect("a power of two");
        b.position_at_end(here);
        block
    } else {
        args
    };

    let start = ctx.append_basic_block(f, "together");
    let grids = ctx.append_basic_block(f, "together.grid");
    let head = ctx.append_basic_block(f, "together.threads");
    let body = ctx.append_basic_block(f, "together.thread");
    let next = ctx.append_basic_block(f, "together.next");
    let synced = ctx.append_basic_block(f, "together.done");
    let done = ctx.append_basic_block(f, "together.ran");

    b.position_at_end(start);
    ok(b.build_unconditional_branch(grids));

    // One grid: its launching lane's dims and arguments to every lane.
    b.position_at_end(grids);
    let w = ok(b.build_phi(i32t, "want.left"));
    let w_v = w.as_basic_value().into_int_value();
    let lane = int(call("llvm.cttz", &[i32t.into()], &[w_v.into(), i1t.const_zero().into()], "lane"));
    // A constant is every lane's already; a value that becomes one once the helper is
    // inlined (a launch's `blockDim` of 32) is marked so that the clean-up folds it
    // ([`super::threshold::fold_team_shuffles`]), and dividing by it costs no division.
    let team_kind = ctx.get_kind_id(TEAM_SHUFFLE);
    let shfl = |v: IntValue<'ctx>, name: &str| {
        if v.is_const() {
            return v;
        }
        let c = ok(b.build_call(intrinsic(module, "llvm.nvvm.shfl.sync.idx.i32", &[]), &[mask.into(), v.into(), lane.into(), c32(31).into()], name));
        let v = c.try_as_basic_value().basic().expect("a value").into_int_value();
        let _ = v.as_instruction_value().expect("a call").set_metadata(ctx.metadata_node(&[]), team_kind);
        v
    };
    let gd = [0, 1, 2].map(|i| shfl(config.grid[i], "grid.d"));
    let bd = [0, 1, 2].map(|i| shfl(config.block[i], "block.d"));
    for k in 0..words {
        let at = |base: inkwell::values::PointerValue<'ctx>| {
            // SAFETY: a word inside the argument bytes (the last one inside the padded block).
            unsafe { ok(b.build_gep(i8t, base, &[i64t.const_int(k * 4, false)], "word.at")) }
        };
        let whole = k * 4 + 4 <= size;
        let word = if whole {
            let v = ok(b.build_load(i32t, at(args), "word")).into_int_value();
            v.as_instruction_value().expect("a load").set_alignment(super::copies::aligned_at(ARGS_ALIGN.into(), k * 4) as u32).expect("a power of two");
            v
        } else {
            // The last bytes, one by one, into the low end of a word.
            let mut acc = c32(0);
            for byte in 0..size - k * 4 {
                // SAFETY: a byte inside the argument bytes.
                let p = unsafe { ok(b.build_gep(i8t, args, &[i64t.const_int(k * 4 + byte, false)], "byte.at")) };
                let v = ok(b.build_int_z_extend(ok(b.build_load(i8t, p, "byte")).into_int_value(), i32t, "byte32"));
                acc = ok(b.build_or(acc, ok(b.build_left_shift(v, c32(8 * byte), "byte.up")), "word"));
            }
            acc
        };
        let theirs = shfl(word, "word.shared");
        let store = ok(b.build_store(at(shared_args), theirs));
        store.set_alignment(super::copies::aligned_at(ARGS_ALIGN.into(), k * 4) as u32).expect("a power of two");
    }
    let their_args = load_arguments(&ctx, b, layout, shared_args, ARGS_ALIGN);
    let mul = |x: IntValue<'ctx>, y: IntValue<'ctx>, name: &str| ok(b.build_int_mul(x, y, name));
    let threads = mul(mul(bd[0], bd[1], "m"), bd[2], "threads");
    let total = mul(mul(mul(gd[0], gd[1], "m"), gd[2], "blocks"), threads, "total");
    ok(b.build_unconditional_branch(head));

    // Its threads, `team` at a time.
    b.position_at_end(head);
    let i = ok(b.build_phi(i32t, "i"));
    let i_v = i.as_basic_value().into_int_value();
    let cached = ok(b.build_phi(i32t, "cached.block"));
    let coords = ["cached.x", "cached.y", "cached.z"].map(|n| ok(b.build_phi(i32t, n)));
    let more = ok(b.build_int_compare(IntPredicate::ULT, i_v, total, "more"));
    ok(b.build_conditional_branch(more, body, next));
    // The block's coordinates are worked out again only when a lane moves to another block
    // (divisions by a grid's size, which is rarely a constant).
    b.position_at_end(body);
    let bl = ok(b.build_int_unsigned_div(i_v, threads, "bl"));
    let t = ok(b.build_int_sub(i_v, mul(bl, threads, "bl.first"), "t"));
    let same = ok(b.build_int_compare(IntPredicate::EQ, bl, cached.as_basic_value().into_int_value(), "same.block"));
    let new_block = ctx.append_basic_block(f, "together.block");
    let run_bb = ctx.append_basic_block(f, "together.run");
    ok(b.build_conditional_branch(same, run_bb, new_block));
    b.position_at_end(new_block);
    let fresh = unflatten(b, bl, gd);
    ok(b.build_unconditional_branch(run_bb));
    b.position_at_end(run_bb);
    let block_idx = [0, 1, 2].map(|k| {
        let phi = ok(b.build_phi(i32t, ["block.x", "block.y", "block.z"][k]));
        phi.add_incoming(&[(&coords[k].as_basic_value(), body), (&fresh[k], new_block)]);
        phi.as_basic_value().into_int_value()
    });
    let thread_idx = unflatten(b, t, bd);
    let mut call_args = their_args;
    call_args.extend(thread_idx.iter().chain(&block_idx).chain(&bd).chain(&gd).map(|v| BasicMetadataValueEnum::from(*v)));
    let run = ok(b.build_call(serial, &call_args, ""));
    byval_at_call(serial, run);
    let i_next = ok(b.build_int_add(i_v, team, "i.next"));
    ok(b.build_unconditional_branch(head));
    i.add_incoming(&[(&rank, grids), (&i_next, run_bb)]);
    // No block yet: a block number no grid has.
    cached.add_incoming(&[(&c32(u32::MAX.into()), grids), (&bl, run_bb)]);
    for k in 0..3 {
        coords[k].add_incoming(&[(&c32(0), grids), (&block_idx[k], run_bb)]);
    }

    b.position_at_end(next);
    let w_next = ok(b.build_and(w_v, ok(b.build_int_sub(w_v, c32(1), "w.less")), "want.next"));
    let left = ok(b.build_int_compare(IntPredicate::NE, w_next, c32(0), "left"));
    ok(b.build_conditional_branch(left, grids, synced));
    w.add_incoming(&[(&want, start), (&w_next, next)]);

    b.position_at_end(synced);
    ok(b.build_call(intrinsic(module, "llvm.nvvm.bar.warp.sync", &[]), &[mask.into()], ""));
    ok(b.build_conditional_branch(small, done, launch_bb));
    b.position_at_end(done);
    ok(b.build_return(Some(&c32(0))));

    // Back to the entry's end, for the caller's branch.
    b.position_at_end(f.get_first_basic_block().expect("the helper's entry"));
    (together, start)
}

/// The metadata kind that marks the shuffles of [`team_path`]: each shares a value of the lane
/// whose grid the team runs, always a lane of the shuffle's mask.
pub(super) const TEAM_SHUFFLE: &str = "cdpc.team.shuffle";
