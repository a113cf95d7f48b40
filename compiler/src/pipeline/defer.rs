//! Thresholding's small grids kept for the warp (from sm_80, with [`super::threshold`]): a lane that
//! reaches a thresholded site alone runs a small grid alone, one thread after another, while
//! the other lanes of its warp have gone elsewhere, returned or wait. Where nothing launched
//! later by the kernel could be reordered with it, the lane keeps the grid instead, and at the
//! kernel's end, where every lane of the warp meets, the whole warp runs the kept grids
//! together ([`super::in_place::Mode::End`]: the team of [`super::in_place`]'s `team_path`, the rounds
//! counted the same way). `samples/bfs.cdp`'s one launching lane a warp ran its 128 visits
//! alone; kept, its warp runs them in 4 rounds.
//!
//! A site `C<<<g, b>>>(args)` taken by thresholding in a kernel `K` is kept when
//! - the target has `redux.sync` (sm_80: [`super::in_place::Team::Warp`]);
//! - `K` is a kernel and the site is in its own body (not in a function it calls);
//! - the site is not in a loop (reached once per thread at most, so one slot per site holds
//!   the grid);
//! - nothing after the site can launch: no launch, no call through a pointer and no call of a
//!   function that may launch, on any path from the site to the kernel's end (a later
//!   NULL-stream launch would otherwise start before the kept grid ran, where the stream orders
//!   it after);
//! - neither `K` nor a function it calls may leave a lane away from the end while the warp
//!   waits there for it: no inline assembly (an `exit`), no barrier of the block or wider
//!   (`__syncthreads` after some threads returned counts only threads that exited: a lane
//!   waiting at the end would keep it waiting; so for clusters, `mbarrier` and the grid's
//!   synchronisation), no call through a pointer and no function without a body but the
//!   built-ins and the device runtime's and C library's functions that wait for no thread.
//!
//! `K` becomes:
//!
//! ```c
//! entry:  mask = __activemask(); kept[n] = false; grid[n] = block[n] = {1, 1, 1};
//! site n: C__keep(args, g, b, &kept[n], &grid[n], &block[n]);
//!         // small: kept[n] = true and the dims kept, status cudaSuccess; else launched
//! every `ret`: goto end;
//! end:    __syncwarp(mask);
//!         for each site n: C__end(args block of site n, &grid[n], &block[n], kept[n]);
//!         return;
//! ```
//!
//! The child sees what its launching thread wrote before the launch, as when it runs at the
//! site, and may see what the thread wrote after it (a launched child may too: the programming
//! model promises nothing of those writes either way).
//!
//! Invariant: afterwards every kept site is a call of its `C__keep` helper, `K` has exactly
//! one `ret`, after the end's helpers, and no launch of the module is lost.

use super::clone::{callee, is_inline_asm};
use super::emit::{intrinsic, ok};
use super::in_place::{helper, Mode};
use super::launch::{self, Launch};
use super::sites::{child_name, new_helper_with, replace_by_helper_with, successors};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetData;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, FunctionValue, InstructionOpcode, InstructionValue};
use std::collections::{HashMap, HashSet};

/// Whether the site `l`, taken by thresholding, may be kept for its warp (module docs); `calls`
/// remembers which functions may launch and which may hold a lane from the kernel's end.
pub(super) fn keepable<'ctx>(l: &Launch<'ctx>, calls: &mut Verdicts<'ctx>) -> bool {
    let k = l.function;
    if k.get_call_conventions() != crate::back::device_launch::PTX_KERNEL_CALL_CONV || calls.may_hold_a_lane(k) {
        return false;
    }
    let site = l.call.get_parent().expect("a launch in a block");
    // The rest of the site's block, then every block reachable from it.
    let mut after: Vec<InstructionValue> = Vec::new();
    let mut next = l.call.get_next_instruction();
    while let Some(i) = next {
        after.push(i);
        next = i.get_next_instruction();
    }
    let mut seen: HashSet<BasicBlock> = HashSet::new();
    let mut stack = successors(site);
    while let Some(bb) = stack.pop() {
        if bb == site {
            return false; // in a loop
        }
        if seen.insert(bb) {
            after.extend(bb.get_instructions());
            stack.extend(successors(bb));
        }
    }
    // A kept grid was launched at the site as far as the program knows: a thread that
    // synchronises with this one after the site, through a fence or an atomic that orders, may
    // launch into the NULL stream after it, which the kept grid must not pass.
    !after.iter().any(|i| (i.get_opcode() == InstructionOpcode::Call && calls.call_may_launch(*i)) || calls.may_synchronise(*i))
}

/// Whether `i` is a fence, or an atomic access ordered more strongly than relaxed.
fn orders(i: InstructionValue<'_>) -> bool {
    use inkwell::llvm_sys::core::{LLVMGetCmpXchgSuccessOrdering, LLVMGetOrdering};
    use inkwell::llvm_sys::LLVMAtomicOrdering::*;
    let ordering = match i.get_opcode() {
        // SAFETY: the ordering of a live fence, atomic read-modify-write, load or store.
        InstructionOpcode::Fence | InstructionOpcode::AtomicRMW | InstructionOpcode::Load | InstructionOpcode::Store => unsafe { LLVMGetOrdering(i.as_value_ref()) },
        // SAFETY: as above, of a compare-and-swap.
        InstructionOpcode::AtomicCmpXchg => unsafe { LLVMGetCmpXchgSuccessOrdering(i.as_value_ref()) },
        _ => return false,
    };
    matches!(ordering, LLVMAtomicOrderingAcquire | LLVMAtomicOrderingRelease | LLVMAtomicOrderingAcquireRelease | LLVMAtomicOrderingSequentiallyConsistent)
}

/// Memoised answers about functions: whether one may launch a kernel and whether it may keep
/// a lane from the kernel's end, itself or through what it calls.
#[derive(Default)]
pub(super) struct Verdicts<'ctx> {
    launch: HashMap<FunctionValue<'ctx>, bool>,
    hold: HashMap<FunctionValue<'ctx>, bool>,
    sync: HashMap<FunctionValue<'ctx>, bool>,
}

impl<'ctx> Verdicts<'ctx> {
    /// Whether the call `i` may launch: a launch entry point, a call through a pointer, or a
    /// defined function that may.
    fn call_may_launch(&mut self, i: InstructionValue<'ctx>) -> bool {
        match callee(i) {
            None => !is_inline_asm(i),
            Some(f) if f.count_basic_blocks() == 0 => launch::is_launch_entry(&f.get_name().to_string_lossy()),
            Some(f) => self.may_launch(f),
        }
    }

    /// Whether `f`, or a function it calls, may launch (a call through a pointer may).
    pub(super) fn may_launch(&mut self, f: FunctionValue<'ctx>) -> bool {
        if let Some(v) = self.launch.get(&f) {
            return *v;
        }
        self.launch.insert(f, true); // a recursive call is taken to launch until shown otherwise
        let calls = super::callgraph::calls(f);
        let v = calls.into_iter().any(|i| self.call_may_launch(i));
        self.launch.insert(f, v);
        v
    }

    /// Whether `i` may synchronise its thread with others: a fence, an ordered atomic, a call
    /// of a memory barrier's intrinsic, or a call of a function that may (calls through
    /// pointers and of unknown functions keep a site from being kept already).
    fn may_synchronise(&mut self, i: InstructionValue<'ctx>) -> bool {
        if orders(i) {
            return true;
        }
        if i.get_opcode() != InstructionOpcode::Call {
            return false;
        }
        let Some(f) = callee(i) else { return false };
        if f.count_basic_blocks() == 0 {
            let name = f.get_name().to_string_lossy();
            return name.starts_with("llvm.nvvm.membar") || name.starts_with("llvm.nvvm.fence");
        }
        if let Some(v) = self.sync.get(&f) {
            return *v;
        }
        self.sync.insert(f, false);
        let body: Vec<InstructionValue> = f.get_basic_blocks().iter().flat_map(|bb| bb.get_instructions()).collect();
        let v = body.into_iter().any(|i| self.may_synchronise(i));
        self.sync.insert(f, v);
        v
    }

    /// Whether `f` or a function it calls may keep a lane from reaching the kernel's end while
    /// its warp waits there (module docs).
    fn may_hold_a_lane(&mut self, f: FunctionValue<'ctx>) -> bool {
        if let Some(v) = self.hold.get(&f) {
            return *v;
        }
        self.hold.insert(f, false);
        let calls = super::callgraph::calls(f);
        let v = calls.into_iter().any(|i| match callee(i) {
            None => true, // inline assembly, or a call through a pointer
            Some(g) if g.count_basic_blocks() == 0 => waits_or_unknown(&g.get_name().to_string_lossy()),
            Some(g) => self.may_hold_a_lane(g),
        });
        self.hold.insert(f, v);
        v
    }
}

/// Whether a call of `name`, a function without a body here, may wait for other threads (a
/// barrier, the grid's synchronisation) or is unknown.
fn waits_or_unknown(name: &str) -> bool {
    if let Some(nvvm) = name.strip_prefix("llvm.nvvm.") {
        return nvvm.starts_with("barrier") || (nvvm.starts_with("bar.") && !nvvm.starts_with("bar.warp.sync")) || nvvm.contains("mbarrier") || nvvm.contains("cluster");
    }
    if super::callgraph::is_library(name) {
        return false;
    }
    if name.starts_with("cuda") || name.starts_with("__cuda") {
        return name.contains("Synchronize") || name.contains("CG");
    }
    true
}

/// Keeps the sites `sites` of the kernel `k` (each with its child's serial copy) for the warp
/// at the kernel's end (module docs).
pub(super) fn keep<'ctx>(module: &Module<'ctx>, k: FunctionValue<'ctx>, sites: &[(Launch<'ctx>, FunctionValue<'ctx>)], max: u32, data: &TargetData, owned: bool) {
    let ctx = module.get_context();
    let (i1t, i32t) = (ctx.bool_type(), ctx.i32_type());
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
    let b = ctx.create_builder();
    let entry = k.get_first_basic_block().expect("a kernel with a body");
    super::clone::position_at_start(&b, entry);
    let mask = ok(b.build_call(intrinsic(module, "llvm.nvvm.activemask", &[]), &[], "entry.mask")).try_as_basic_value().basic().expect("a mask");
    let ones = dim3.const_named_struct(&[i32t.const_int(1, false).into(); 3]);
    let slots: Vec<_> = sites
        .iter()
        .map(|_| {
            let kept = ok(b.build_alloca(i1t, "kept"));
            let grid = ok(b.build_alloca(dim3, "kept.grid"));
            let block = ok(b.build_alloca(dim3, "kept.block"));
            ok(b.build_store(kept, i1t.const_zero()));
            ok(b.build_store(grid, ones));
            ok(b.build_store(block, ones));
            (kept, grid, block)
        })
        .collect();

    // The sites.
    let mut ends = Vec::new();
    for ((l, serial), &(kept, grid, block)) in sites.iter().zip(&slots) {
        let child = child_name(l);
        let extra: [BasicMetadataTypeEnum; 3] = [ptr.into(), ptr.into(), ptr.into()];
        let keep = new_helper_with(module, l, &format!("{child}__keep"), &extra);
        for (i, name) in [(3, "kept"), (4, "kept.grid"), (5, "kept.block")] {
            keep.get_nth_param(i).expect("a parameter").set_name(name);
        }
        let keep = helper(module, keep, l, *serial, max, data, Mode::Keep, owned, false);
        let end = module.add_function(&format!("{child}__end"), i32t.fn_type(&[ptr.into(), ptr.into(), ptr.into(), i1t.into()], false), Some(Linkage::Internal));
        end.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0));
        for (i, name) in ["args", "grid.dim", "block.dim", "kept"].into_iter().enumerate() {
            end.get_nth_param(i as u32).expect("a parameter").set_name(name);
        }
        let end = helper(module, end, l, *serial, max, data, Mode::End, false, false);
        // Last: the launch goes.
        let args = replace_by_helper_with(module, l, keep, "thr", &[kept.into(), grid.into(), block.into()]);
        ends.push((end, args));
    }

    // Every `ret` to one end, where the warp meets and runs what its lanes kept.
    super::clone::returns_to_one_block(&b, k, "kept.end");
    ok(b.build_call(intrinsic(module, "llvm.nvvm.bar.warp.sync", &[]), &[mask.into()], ""));
    for ((end, args), &(kept, grid, block)) in ends.iter().zip(&slots) {
        let kept_now = ok(b.build_load(i1t, kept, "kept.now"));
        let call_args: [BasicMetadataValueEnum; 4] = [(*args).into(), grid.into(), block.into(), kept_now.into()];
        ok(b.build_call(*end, &call_args, ""));
    }
    ok(b.build_return(None));
}

/// The indices of the sites of `taken` (each with its child) that may be kept (module docs),
/// decided before any of them is rewritten.
pub(super) fn kept_sites<'ctx>(taken: &[(Launch<'ctx>, FunctionValue<'ctx>)]) -> HashSet<usize> {
    let mut verdicts = Verdicts::default();
    (0..taken.len()).filter(|&i| keepable(&taken[i].0, &mut verdicts)).collect()
}
