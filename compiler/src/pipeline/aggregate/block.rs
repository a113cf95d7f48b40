//! Block granularity on LLVM IR (`-faggregate-launches=block`): the launches of a kernel's
//! threads become records in a per-block `__shared__` table, launched as one grid of `C__agg`
//! once every thread of the block has reached the end of the kernel. The semantics are
//! docs/AGGREGATION.md's; at grid granularity the
//! same tables are handed on to the grid's last block ([`super::grid`]).
//!
//! A taken launch `C<<<g, b, S>>>(args)` (site `n` of kernel `K`) becomes a call of the
//! always-inline helper `K__agg<n>_record(args block, g, b)`:
//!
//! ```c
//! if (the runtime would launch it, with at most 2^22 blocks) {
//!     old = atomicAdd(&counter, (1 << 32) + blocks);   // 64-bit, shared: slot and first block
//!     if ((old >> 32) < cap) {
//!         table[old >> 32] = {(unsigned) old, 0, g, b, args};
//!         atomicMin(&min_threads, threads); atomicMax(&max_threads, threads);
//!         return cudaSuccess;
//!     }
//! }
//! return C<<<g, b, S>>>(args);   // the documented sequence, as before
//! ```
//!
//! `K` calls `K__agg_begin()` first (thread 0 clears the counters; a barrier) and every
//! `ret` becomes a branch to one end block calling `K__agg_end()`, so every thread, however it
//! returns, reaches the end, where (`BlockEnd::Barriers`): a barrier; thread 0 takes a
//! global copy of each site's table (from the child's pool, `super::child::pool`, or the heap for
//! more than 32 records) when it has more than one record (and, for a
//! child that calls `__syncthreads`, equal block sizes); a barrier; the block copies the
//! tables; a barrier; thread 0 launches `C__agg<<<total blocks, largest block, S>>>(copy,
//! count)`, or each record as it was (`K__agg<n>_direct`) when there is no copy or that launch
//! fails. A kernel that may leave a barrier behind (one not on every path to its end, in a
//! loop, or in a function it calls) ends its blocks with its last thread instead
//! (`BlockEnd::LastThread`): every thread fences in the block's scope and counts itself; the
//! last fences for the device and does the same
//! work alone, as a block of one thread, with no barrier.
//!
//! Left alone with `R0500`, besides what warp granularity leaves: launches in device
//! functions, in loops, and every launch of a kernel that also makes a NULL-stream launch it
//! does not aggregate, calls a function that launches, puts other work into streams or
//! records events, or whose records would not fit 24 KiB of shared memory 32 times. A kernel
//! that reads launch errors is aggregated per warp, at its sites, with `R0501`.
//!
//! Invariant: afterwards every launch left (the helpers' among them) is in the documented
//! shape, and a kernel with taken sites has exactly one `ret`, after `K__agg_end()`.

use super::super::callgraph::callees;
use super::super::callgraph::is_kernel;
use super::super::clone::{as_function, called_function, value_name};
use super::super::emit::ok;
use super::super::launch::{self, Launch};
use super::super::sites::{keep_out_of_line, launch_as_documented, new_helper, parameter_layout, source_name, successors, Config, ARGS_ALIGN};
use super::child::{launch_agg_kernel, may_sync, Child, Entries};
use super::records::{byte_gep, Emit, SiteState, HEADER, MAX_BLOCKS_PER_RECORD, OFF_BLOCK, OFF_DONE, OFF_GRID, RECORD_ALIGN, RECORD_CAP, SHARED_BUDGET};
use crate::llvm::operand;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetData;
use inkwell::values::{AsValueRef, FunctionValue, InstructionOpcode, InstructionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, AtomicOrdering, AtomicRMWBinOp, IntPredicate};
use runtime_shim::entry_points::RuntimeFn;
use std::collections::{HashMap, HashSet};

/// The fewest records per site worth aggregating for.
const MIN_CAP: u64 = 32;

/// Added to the remarks for what only block and grid granularity refuse.
pub(super) const WARP_HINT: &str = " (-faggregate-launches=warp would aggregate it)";

/// How a block's threads meet at the end of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BlockEnd {
    /// Every thread reaches the end; the block works together between barriers.
    Barriers,
    /// Each thread counts itself after a fence of the block's scope and leaves; the last fences
    /// for the device and does the end's work alone.
    LastThread,
}

/// The kernels whose sites are aggregated at the end of the block, and how.
pub(super) struct KernelPlan<'ctx> {
    pub kernel: FunctionValue<'ctx>,
    pub sites: Vec<Launch<'ctx>>,
    pub cap: u64,
    pub end: BlockEnd,
}

/// What [`plan`] decides.
pub(super) struct Plan<'ctx> {
    /// Sites aggregated per warp instead (kernels that read launch errors).
    pub at_site: Vec<Launch<'ctx>>,
    pub kernels: Vec<KernelPlan<'ctx>>,
    /// The remarks: `(launch, code, message, why)`.
    pub remarks: Vec<(Launch<'ctx>, crate::diag::Code, String, String)>,
}

/// The function a launch's code ends up in and the instruction there that stands for it: a
/// launch in an always-inline helper called once (thresholding's `C__threshold`) is in that
/// helper's caller, at the call.
pub(super) fn host<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>) -> (FunctionValue<'ctx>, InstructionValue<'ctx>) {
    *chain(module, l).last().expect("the launch itself")
}

/// The launch, then each call of the helper it is in (as [`host`] climbs), innermost first.
pub(super) fn chain<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>) -> Vec<(FunctionValue<'ctx>, InstructionValue<'ctx>)> {
    let (mut f, mut at) = (l.function, l.call);
    let mut out = vec![(f, at)];
    let inline = Attribute::get_named_enum_kind_id("alwaysinline");
    for _ in 0..8 {
        if is_kernel(f) || f.get_linkage() != Linkage::Internal || f.get_enum_attribute(AttributeLoc::Function, inline).is_none() {
            break;
        }
        let calls: Vec<(FunctionValue, InstructionValue)> = calls_of(module, f);
        let uses = count_uses(f.as_value_ref());
        match calls.as_slice() {
            [(caller, call)] if uses == 1 && *caller != f && !out.iter().any(|(g, _)| g == caller) => {
                f = *caller;
                at = *call;
                out.push((f, at));
            }
            _ => break,
        }
    }
    out
}

fn count_uses(v: inkwell::llvm_sys::prelude::LLVMValueRef) -> usize {
    // SAFETY: a walk of the use list of a live value.
    unsafe {
        let mut n = 0;
        let mut u = inkwell::llvm_sys::core::LLVMGetFirstUse(v);
        while !u.is_null() {
            n += 1;
            u = inkwell::llvm_sys::core::LLVMGetNextUse(u);
        }
        n
    }
}

/// The calls of `callee` in the module: `(caller, call)`.
fn calls_of<'ctx>(module: &Module<'ctx>, callee: FunctionValue<'ctx>) -> Vec<(FunctionValue<'ctx>, InstructionValue<'ctx>)> {
    let mut out = Vec::new();
    for f in module.get_functions() {
        for inst in f.get_basic_blocks().iter().flat_map(|b| b.get_instructions()) {
            if inst.get_opcode() == InstructionOpcode::Call && called_function(inst.as_value_ref()).and_then(as_function) == Some(callee) {
                out.push((f, inst));
            }
        }
    }
    out
}

/// Whether `block` lies on a cycle of its function's control flow.
pub(super) fn in_loop(block: BasicBlock<'_>) -> bool {
    reaches(block, block)
}

/// Whether a path of the control flow leads from `from` to `to` (through at least one edge).
pub(super) fn reaches(from: BasicBlock<'_>, to: BasicBlock<'_>) -> bool {
    let mut seen = HashSet::new();
    let mut stack = successors(from);
    while let Some(b) = stack.pop() {
        if b == to {
            return true;
        }
        if seen.insert(b) {
            stack.extend(successors(b));
        }
    }
    false
}

/// Whether every path from `f`'s entry to a `ret` passes through `block`.
fn on_every_path(f: FunctionValue<'_>, block: BasicBlock<'_>) -> bool {
    let Some(entry) = f.get_first_basic_block() else { return true };
    let mut seen = HashSet::new();
    let mut stack = vec![entry];
    while let Some(b) = stack.pop() {
        if b == block || !seen.insert(b) {
            continue;
        }
        if b.get_terminator().is_some_and(|t| t.get_opcode() == InstructionOpcode::Return) {
            return false;
        }
        stack.extend(successors(b));
    }
    true
}

/// Whether `f` may end its thread with PTX `exit` (`llvm.nvvm.exit`, or inline assembly that
/// says `exit`): such a thread never reaches the end of the block that the others wait at.
fn exits(f: FunctionValue<'_>) -> bool {
    f.get_basic_blocks().iter().flat_map(|b| b.get_instructions()).filter(|i| i.get_opcode() == InstructionOpcode::Call).any(|call| {
        if called_function(call.as_value_ref()).and_then(as_function).is_some_and(|t| value_name(t.as_value_ref()) == "llvm.nvvm.exit") {
            return true;
        }
        // SAFETY: the callee operand of a live call, and the template of inline assembly.
        unsafe {
            let callee = inkwell::llvm_sys::core::LLVMGetCalledValue(call.as_value_ref());
            if callee.is_null() || inkwell::llvm_sys::core::LLVMIsAInlineAsm(callee).is_null() {
                return false;
            }
            let mut len = 0;
            let text = inkwell::llvm_sys::core::LLVMGetInlineAsmAsmString(callee, &mut len);
            let bytes = if text.is_null() { &[][..] } else { std::slice::from_raw_parts(text.cast::<u8>(), len) };
            String::from_utf8_lossy(bytes).split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|w| w == "exit")
        }
    })
}

/// The device runtime's function a call names, by its C name or its symbol.
fn runtime_fn(name: &str) -> Option<RuntimeFn> {
    RuntimeFn::ALL.iter().copied().find(|f| f.entry_point().c_name == name || f.entry_point().ptx_symbol == name)
}

/// The names of the declarations `f` calls directly, with the calls.
fn declared_calls<'ctx>(f: FunctionValue<'ctx>) -> Vec<(String, InstructionValue<'ctx>)> {
    f.get_basic_blocks()
        .iter()
        .flat_map(|b| b.get_instructions())
        .filter(|i| i.get_opcode() == InstructionOpcode::Call)
        .filter_map(|i| called_function(i.as_value_ref()).and_then(as_function).filter(|t| t.count_basic_blocks() == 0).map(|t| (value_name(t.as_value_ref()), i)))
        .collect()
}

/// How kernel `k` must end its blocks: with barriers when no barrier can be left behind (every
/// barrier of `k` on every path to its end, outside loops, none in what it calls).
fn block_end(k: FunctionValue<'_>, may_sync: impl Fn(FunctionValue<'_>) -> bool) -> BlockEnd {
    if !may_sync(k) {
        return BlockEnd::Barriers;
    }
    // A call through a pointer is a call of each function whose address is taken (`callees`).
    let (called, _) = callees(k);
    if called.iter().any(|&g| g != k && may_sync(g)) {
        return BlockEnd::LastThread;
    }
    for (name, call) in declared_calls(k) {
        let nvvm = name.strip_prefix("llvm.nvvm.").unwrap_or("");
        let barrier = nvvm.starts_with("barrier") || (nvvm.starts_with("bar.") && !nvvm.starts_with("bar.warp"));
        let block = call.get_parent().expect("an instruction in a block");
        if barrier && (in_loop(block) || !on_every_path(k, block)) {
            return BlockEnd::LastThread;
        }
    }
    // `may_sync` also answers yes for calls it cannot see into: such a kernel stays safe.
    if declared_calls(k).iter().any(|(name, _)| !name.starts_with("llvm.nvvm.barrier") && !name.starts_with("llvm.nvvm.bar.") && may_sync_alone(name)) {
        return BlockEnd::LastThread;
    }
    BlockEnd::Barriers
}

/// Whether a call of the declaration `name` may wait at a barrier, as [`may_sync`] sees it.
fn may_sync_alone(name: &str) -> bool {
    let known = name.starts_with("llvm.") || name.starts_with("__nv_") || name.starts_with("cuda") || name.starts_with("__cuda") || ["vprintf", "malloc", "free", "__assertfail"].contains(&name);
    !known || name.contains("CG")
}

/// Decides, kernel by kernel, which of the `taken` launches (those warp granularity would
/// take) are aggregated at the end of the block, which per warp, and the remarks of the rest.
/// `all` is every recognised launch; `stride` gives a child's record size.
pub(super) fn plan<'ctx>(module: &Module<'ctx>, all: &[Launch<'ctx>], taken: &[Launch<'ctx>], data: &TargetData) -> Plan<'ctx> {
    use crate::diag::Code;
    let mut out = Plan { at_site: Vec::new(), kernels: Vec::new(), remarks: Vec::new() };
    let child_of = |l: &Launch<'ctx>| operand(l.call, 0).and_then(|k| as_function(k.as_value_ref()));
    let name_of = |l: &Launch<'ctx>| child_of(l).map_or_else(|| "a kernel through a pointer".to_string(), |c| format!("`{}`", source_name(&c.get_name().to_string_lossy())));
    let fname = |f: FunctionValue<'_>| source_name(&f.get_name().to_string_lossy());
    let not_aggregated = |l: &Launch<'ctx>| format!("launch of {} not aggregated", name_of(l));
    let null_stream = |l: &Launch<'ctx>| operand(l.call, 5).and_then(launch::constant_u64) == Some(0);
    // The kernels in the order their first taken launch comes.
    let mut kernels: Vec<FunctionValue<'ctx>> = Vec::new();
    let mut eligible: HashMap<FunctionValue<'ctx>, Vec<Launch<'ctx>>> = HashMap::new();
    let mut direct_null: HashMap<FunctionValue<'ctx>, Vec<Launch<'ctx>>> = HashMap::new();
    let mut hosted: HashMap<FunctionValue<'ctx>, HashSet<InstructionValue<'ctx>>> = HashMap::new();
    for l in all {
        let (f, _) = host(module, l);
        hosted.entry(f).or_default().extend([Some(l.call), l.buffer].into_iter().flatten());
        if !taken.iter().any(|t| t.call == l.call) && null_stream(l) {
            direct_null.entry(f).or_default().push(*l);
        }
    }
    for l in taken {
        let (f, _) = host(module, l);
        if !kernels.contains(&f) {
            kernels.push(f);
        }
        eligible.entry(f).or_default();
        if !is_kernel(f) {
            let why = format!("the launch is in the device function `{}`; only launches in kernels are aggregated{WARP_HINT}", fname(f));
            out.remarks.push((*l, Code::AggregationRemark, not_aggregated(l), why));
        } else if chain(module, l).iter().any(|(_, i)| in_loop(i.get_parent().expect("an instruction in a block"))) {
            out.remarks.push((*l, Code::AggregationRemark, not_aggregated(l), format!("the launch is inside a loop: a thread may launch more than once{WARP_HINT}")));
            direct_null.entry(f).or_default().push(*l);
        } else {
            eligible.get_mut(&f).expect("added").push(*l);
        }
    }
    for k in kernels {
        let sites = eligible.remove(&k).unwrap_or_default();
        if sites.is_empty() {
            continue;
        }
        let (called, indirect) = callees(k);
        let mut reach = vec![k];
        reach.extend(called.iter().copied().filter(|&g| g != k));
        let calls: Vec<(String, InstructionValue)> = reach.iter().flat_map(|&g| declared_calls(g)).collect();
        let reads_errors = calls.iter().any(|(n, _)| runtime_fn(n).is_some_and(RuntimeFn::reads_launch_errors));
        if reads_errors {
            for l in &sites {
                let why = format!("`{}` reads launch errors (cudaGetLastError or cudaPeekAtLastError): made here, each thread's error stays its own launch's", fname(k));
                out.remarks.push((*l, Code::AggregatedPerWarp, format!("launch of {} aggregated per warp, at its site", name_of(l)), why));
                out.at_site.push(*l);
            }
            continue;
        }
        let mut sites = sites;
        sort_in_flow_order(module, k, &mut sites);
        let mine = &hosted[&k];
        let launches_in_callees = calls.iter().any(|(n, call)| launch::is_launch_entry(n) && !mine.contains(call));
        let events = calls
            .iter()
            .any(|(n, _)| !launch::is_launch_entry(n) && runtime_fn(n).is_some_and(|f| f.orders_stream_work() && !matches!(f, RuntimeFn::GetParameterBuffer | RuntimeFn::GetParameterBufferV2)));
        let end = block_end(k, may_sync);
        let kernel_reason = if reach.iter().any(|&g| exits(g)) {
            Some(format!("`{}` may end a thread with `exit`, which would never reach the end of the block the others wait at", fname(k)))
        } else if let Some(other) = direct_null.get(&k).and_then(|v| v.first()) {
            Some(format!("`{}` also launches {} into the NULL stream without aggregation; delaying this launch would reorder them", fname(k), name_of(other)))
        } else if launches_in_callees || (indirect && address_taken_launcher(module)) {
            Some(format!("`{}` calls a device function that launches kernels; delaying this launch could reorder them", fname(k)))
        } else if events {
            Some(format!("`{}` records or waits on events or puts other work into streams; delaying this launch would move it past them", fname(k)))
        } else {
            None
        };
        if let Some(why) = kernel_reason {
            out.remarks.extend(sites.iter().map(|l| (*l, Code::AggregationRemark, not_aggregated(l), why.clone())));
            continue;
        }
        let bytes: u64 = sites.iter().map(|l| record_stride(child_of(l).expect("a taken launch's child"), data)).sum();
        let cap = RECORD_CAP.min(SHARED_BUDGET / bytes.max(1));
        if cap < MIN_CAP {
            let why = format!("the launch records of `{}` need {bytes} bytes each and do not fit in shared memory", fname(k));
            out.remarks.extend(sites.iter().map(|l| (*l, Code::AggregationRemark, not_aggregated(l), why.clone())));
            continue;
        }
        out.kernels.push(KernelPlan { kernel: k, sites, cap, end });
    }
    out
}

/// Sorts the sites of kernel `k` as its control flow reaches them (reverse post-order of the
/// blocks their code is in, then instruction order): a thread that makes two of them makes
/// them in that order, and the end of the block launches the sites' records in it.
fn sort_in_flow_order<'ctx>(module: &Module<'ctx>, k: FunctionValue<'ctx>, sites: &mut [Launch<'ctx>]) {
    let Some(entry) = k.get_first_basic_block() else { return };
    let mut post = Vec::new();
    let mut seen = HashSet::from([entry]);
    let mut stack = vec![(entry, successors(entry), 0usize)];
    while let Some((b, next, i)) = stack.last_mut() {
        if let Some(&s) = next.get(*i) {
            *i += 1;
            if seen.insert(s) {
                stack.push((s, successors(s), 0));
            }
        } else {
            post.push(*b);
            stack.pop();
        }
    }
    let rank: HashMap<BasicBlock, usize> = post.iter().rev().enumerate().map(|(i, b)| (*b, i)).collect();
    let key = |l: &Launch<'ctx>| {
        let (_, at) = host(module, l);
        let block = at.get_parent().expect("an instruction in a block");
        let position = block.get_instructions().position(|i| i == at).unwrap_or(0);
        (rank.get(&block).copied().unwrap_or(usize::MAX), position)
    };
    sites.sort_by_key(key);
}

/// The defined device functions whose address is taken (used otherwise than called), which a
/// call through a pointer may reach.
pub(super) fn address_taken<'ctx>(module: &Module<'ctx>) -> Vec<FunctionValue<'ctx>> {
    module.get_functions().filter(|f| f.count_basic_blocks() > 0 && !is_kernel(*f) && count_uses(f.as_value_ref()) > calls_of(module, *f).len()).collect()
}

/// Whether `f`, or a function it calls, calls through a pointer (inline assembly aside).
pub(super) fn calls_through_pointer(f: FunctionValue<'_>) -> bool {
    callees(f).1
}

/// Whether a function whose address is taken (so that a call through a pointer may reach it)
/// makes a launch.
fn address_taken_launcher(module: &Module<'_>) -> bool {
    address_taken(module).into_iter().any(|f| {
        let (mut reach, _) = callees(f);
        reach.push(f);
        reach.iter().any(|&g| declared_calls(g).iter().any(|(n, _)| launch::is_launch_entry(n)))
    })
}

/// A record's size for `child`: the header, the arguments, rounded to 16 bytes.
pub(super) fn record_stride(child: FunctionValue<'_>, data: &TargetData) -> u64 {
    let (_, end) = parameter_layout(child, data);
    (HEADER + end).div_ceil(16) * 16
}

/// A `__shared__` variable of `ty`, as a generic pointer.
pub(super) fn shared<'ctx>(module: &Module<'ctx>, name: &str, ty: inkwell::types::BasicTypeEnum<'ctx>, align: u32) -> PointerValue<'ctx> {
    let g = module.add_global(ty, Some(AddressSpace::from(3u16)), name);
    g.set_linkage(Linkage::Internal);
    set_undef(g);
    g.set_alignment(align);
    g.as_pointer_value().const_address_space_cast(module.get_context().ptr_type(AddressSpace::default()))
}

/// NVPTX takes no initializer for `__shared__` variables: `undef`, as Clang writes them.
fn set_undef(g: inkwell::values::GlobalValue<'_>) {
    // SAFETY: the value type of a live global.
    unsafe {
        let ty = inkwell::llvm_sys::core::LLVMGlobalGetValueType(g.as_value_ref());
        inkwell::llvm_sys::core::LLVMSetInitializer(g.as_value_ref(), inkwell::llvm_sys::core::LLVMGetUndef(ty));
    }
}

/// When a site launches at once, as written, instead of recording: where its thread has
/// nobody to gather with. Every site of a kernel decides alike (on the block's or the grid's
/// size), so that its launches keep their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direct {
    /// Block granularity: in a block of one thread (`parent<<<1, 1>>>`, a recursion's driver
    /// thread: `samples/devrt_pdl.cdp` read 1.09-1.11x nvcc's time with its two launches
    /// recorded and made at the end of the block).
    OneThreadBlock,
    /// Grid granularity: in a grid of one thread; with `lone` (a kernel whose every site one
    /// thread of a block makes), in a grid of one block.
    OneBlockGrid { lone: bool },
}

/// Declares the shared state and the two helpers of site `n` of `kernel` (before its launch
/// is replaced: the helpers copy its buffer call); `direct` says when the site launches at once.
pub(super) fn site_state<'ctx>(module: &Module<'ctx>, kernel: FunctionValue<'ctx>, n: usize, l: &Launch<'ctx>, child: usize, c: &Child<'ctx>, cap: u64, direct: Direct) -> SiteState<'ctx> {
    let ctx = module.get_context();
    let kname = kernel.get_name().to_string_lossy().into_owned();
    let name = |what: &str| format!("{kname}__agg{n}_{what}");
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let counter = shared(module, &name("counter"), i64t.into(), 8);
    let min_threads = shared(module, &name("min_threads"), i32t.into(), 4);
    let max_threads = shared(module, &name("max_threads"), i32t.into(), 4);
    let table = shared(module, &name("table"), ctx.i8_type().array_type((cap * c.stride) as u32).into(), 16);
    let buffer = shared(module, &name("buffer"), ctx.ptr_type(AddressSpace::default()).into(), 8);
    let mut s = SiteState { launch: *l, child, cap, counter, min_threads, max_threads, table, buffer, record: kernel, direct: kernel };
    s.record = record_helper(module, &name("record"), &s, c, direct);
    s.direct = new_helper(module, l, &name("direct"));
    // Called from each of the site's fallbacks (the end of the block, the grid's, the arena's):
    // one copy of the launch for all of them, not one inlined (and unrolled) in each.
    keep_out_of_line(s.direct);
    let b = ctx.create_builder();
    b.position_at_end(ctx.append_basic_block(s.direct, "entry"));
    let p = |i: u32| s.direct.get_nth_param(i).expect("a parameter");
    launch_as_documented(module, s.direct, &b, l, l.buffer, p(0).into_pointer_value(), p(1), p(2), None);
    s
}

/// `K__agg<n>_record(args, grid, block)` (module docs); a launch as written where `when`
/// says ([`site_state`]).
fn record_helper<'ctx>(module: &Module<'ctx>, name: &str, s: &SiteState<'ctx>, c: &Child<'ctx>, when: Direct) -> FunctionValue<'ctx> {
    let ctx = module.get_context();
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let c32 = |v: u64| i32t.const_int(v, false);
    let c64 = |v: u64| i64t.const_int(v, false);
    let l = &s.launch;
    let f = new_helper(module, l, name);
    let p = |i: u32| f.get_nth_param(i).expect("a parameter");
    let b = ctx.create_builder();
    let bb = |name: &str| ctx.append_basic_block(f, name);
    let (entry, take, store, direct) = (bb("entry"), bb("take"), bb("store"), bb("direct"));
    b.position_at_end(entry);
    let config = Config::load(&ctx, &b, p(1), p(2));
    let fits = ok(b.build_int_compare(IntPredicate::ULE, config.blocks, c64(MAX_BLOCKS_PER_RECORD), "fits"));
    let mut valid = ok(b.build_and(config.valid, fits, "valid"));
    let e = Emit { module, f, b: &b };
    let one_thread = || ok(b.build_int_compare(IntPredicate::EQ, e.threads_in_block(), c32(1), "one.thread"));
    let one_block = || ok(b.build_int_compare(IntPredicate::EQ, e.blocks_in_grid(), c32(1), "one.block"));
    let alone = match when {
        Direct::OneThreadBlock => one_thread(),
        Direct::OneBlockGrid { lone: true } => one_block(),
        Direct::OneBlockGrid { lone: false } => {
            let block = one_block();
            ok(b.build_and(block, one_thread(), "one.thread.grid"))
        }
    };
    valid = ok(b.build_and(valid, ok(b.build_not(alone, "others")), "valid.gathered"));
    ok(b.build_conditional_branch(valid, take, direct));
    b.position_at_end(take);
    let add = ok(b.build_int_add(c64(1 << 32), config.blocks, "add"));
    let old = ok(b.build_atomicrmw(AtomicRMWBinOp::Add, s.counter, add, AtomicOrdering::Monotonic));
    let slot = ok(b.build_int_truncate(ok(b.build_right_shift(old, c64(32), false, "slot64")), i32t, "slot"));
    let room = ok(b.build_int_compare(IntPredicate::ULT, slot, c32(s.cap), "room"));
    ok(b.build_conditional_branch(room, store, direct));
    b.position_at_end(store);
    let rec = byte_gep(&b, s.table, ok(b.build_int_mul(ok(b.build_int_z_extend(slot, i64t, "slot.wide")), c64(c.stride), "at")), "record");
    let store_at = |offset: u64, v: IntValue<'ctx>| {
        ok(b.build_store(byte_gep(&b, rec, c64(offset), "field"), v));
    };
    store_at(0, ok(b.build_int_truncate(old, i32t, "start")));
    store_at(OFF_DONE, c32(0));
    for (i, v) in config.grid.iter().chain(&config.block).enumerate() {
        store_at(OFF_GRID + 4 * i as u64, *v);
    }
    if c.args_size > 0 {
        ok(b.build_memcpy(byte_gep(&b, rec, c64(c.args_at), "record.args"), RECORD_ALIGN, p(0).into_pointer_value(), ARGS_ALIGN, c64(c.args_size)));
    }
    let threads = ok(b.build_int_truncate(config.threads, i32t, "threads"));
    ok(b.build_atomicrmw(AtomicRMWBinOp::UMin, s.min_threads, threads, AtomicOrdering::Monotonic));
    ok(b.build_atomicrmw(AtomicRMWBinOp::UMax, s.max_threads, threads, AtomicOrdering::Monotonic));
    ok(b.build_return(Some(&c32(0))));
    b.position_at_end(direct);
    launch_as_documented(module, f, &b, l, l.buffer, p(0).into_pointer_value(), p(1), p(2), None);
    f
}

/// The linear thread index and the block's size.
pub(super) fn thread_and_size<'ctx>(e: &Emit<'_, 'ctx>) -> (IntValue<'ctx>, IntValue<'ctx>) {
    let b = e.b;
    let [tx, ty, tz, nx, ny, nz] = ["tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z"].map(|r| e.sreg(r));
    let tid = ok(b.build_int_add(tx, ok(b.build_int_mul(nx, ok(b.build_int_add(ty, ok(b.build_int_mul(ny, tz, "yz")), "y.z")), "x.yz")), "tid"));
    let n = ok(b.build_int_mul(ok(b.build_int_mul(nx, ny, "nxy")), nz, "nthreads"));
    (tid, n)
}

/// A kernel's end of block: `K__agg_begin` and `K__agg_end` (module docs).
pub(super) struct EndOfBlock<'ctx> {
    pub begin: FunctionValue<'ctx>,
    pub end: FunctionValue<'ctx>,
}

/// Builds `K__agg_begin()` and `K__agg_end()` for the sites `states` of kernel `kname`; `tail`
/// builds what a block does once all its threads have recorded, for a block of `nthreads`
/// threads numbered by `tid` that meet at barriers when `barriers`.
pub(super) fn end_of_block<'ctx>(
    module: &Module<'ctx>,
    kname: &str,
    states: &[SiteState<'ctx>],
    end: BlockEnd,
    tail: &dyn Fn(&Emit<'_, 'ctx>, IntValue<'ctx>, IntValue<'ctx>, bool),
) -> EndOfBlock<'ctx> {
    let ctx = module.get_context();
    let void = ctx.void_type().fn_type(&[], false);
    let inline = ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
    let begin = module.add_function(&format!("{kname}__agg_begin"), void, Some(Linkage::Internal));
    let end_fn = module.add_function(&format!("{kname}__agg_end"), void, Some(Linkage::Internal));
    begin.add_attribute(AttributeLoc::Function, inline);
    end_fn.add_attribute(AttributeLoc::Function, inline);
    let arrived = (end == BlockEnd::LastThread).then(|| shared(module, &format!("{kname}__agg_arrived"), ctx.i32_type().into(), 4));
    let b = ctx.create_builder();

    b.position_at_end(ctx.append_basic_block(begin, "entry"));
    let e = Emit { module, f: begin, b: &b };
    let (tid, _) = thread_and_size(&e);
    e.if_then(ok(b.build_int_compare(IntPredicate::EQ, tid, e.c32(0), "thread0")), || {
        for s in states {
            ok(b.build_store(s.counter, e.c64(0)));
            ok(b.build_store(s.min_threads, e.c32(u32::MAX as u64)));
            ok(b.build_store(s.max_threads, e.c32(0)));
        }
        if let Some(a) = arrived {
            ok(b.build_store(a, e.c32(0)));
        }
    });
    e.barrier();
    ok(b.build_return(None));

    b.position_at_end(ctx.append_basic_block(end_fn, "entry"));
    let e = Emit { module, f: end_fn, b: &b };
    let (tid, nthreads) = thread_and_size(&e);
    match arrived {
        None => {
            e.barrier();
            tail(&e, tid, nthreads, true);
        }
        Some(a) => {
            // The block's scope suffices: the last thread's fence below is cumulative, so what
            // each thread wrote is seen by whoever the last thread then releases to (QT at grid
            // granularity: a fence of the whole device by every thread took 3% more time).
            e.fence_block_release();
            let old = ok(b.build_atomicrmw(AtomicRMWBinOp::Add, a, e.c32(1), AtomicOrdering::Monotonic));
            let last = ok(b.build_int_compare(IntPredicate::EQ, old, ok(b.build_int_sub(nthreads, e.c32(1), "last.count")), "last.thread"));
            e.if_then(last, || {
                e.fence();
                tail(&e, e.c32(0), e.c32(1), false);
            });
        }
    }
    ok(b.build_return(None));
    EndOfBlock { begin, end: end_fn }
}

/// Block granularity's tail (module docs): thread 0 takes the copies, the block copies, thread 0
/// launches.
pub(super) fn block_tail<'ctx>(e: &Emit<'_, 'ctx>, tid: IntValue<'ctx>, nthreads: IntValue<'ctx>, barriers: bool, states: &[SiteState<'ctx>], children: &[Child<'ctx>], entries: &Entries<'ctx>) {
    let b = e.b;
    let ctx = e.module.get_context();
    let ptr = ctx.ptr_type(AddressSpace::default());
    let thread0 = || ok(b.build_int_compare(IntPredicate::EQ, tid, e.c32(0), "thread0"));
    e.if_then(thread0(), || {
        for s in states {
            let c = &children[s.child];
            let count = e.count(s);
            ok(b.build_store(s.buffer, ptr.const_null()));
            let mut wanted = ok(b.build_int_compare(IntPredicate::UGT, count, e.c32(1), "several"));
            if c.syncs {
                // the clone's barriers need every thread: equal block sizes only
                let same = ok(b.build_int_compare(IntPredicate::EQ, e.load32(s.min_threads, "min"), e.load32(s.max_threads, "max"), "same.size"));
                wanted = ok(b.build_and(wanted, same, "wanted"));
            }
            e.if_then(wanted, || {
                let bytes = ok(b.build_int_mul(ok(b.build_int_z_extend(count, ctx.i64_type(), "count.wide")), e.c64(c.stride), "bytes"));
                let table = ok(b.build_call(c.table, &[bytes.into()], "table")).try_as_basic_value().basic().expect("a pointer");
                ok(b.build_store(s.buffer, table));
            });
        }
    });
    e.meet(barriers);
    copy_tables(e, tid, nthreads, states, children);
    e.meet(barriers);
    e.if_then(thread0(), || {
        for s in states {
            let count = e.count(s);
            e.if_then(ok(b.build_int_compare(IntPredicate::UGT, count, e.c32(0), "any")), || {
                let buffer = e.load_ptr(s.buffer, "buffer");
                launch_records(e, s, &children[s.child], entries, buffer, count, None);
            });
        }
    });
}

/// The block copies each site's table into its global copy, when it has one.
pub(super) fn copy_tables<'ctx>(e: &Emit<'_, 'ctx>, tid: IntValue<'ctx>, nthreads: IntValue<'ctx>, states: &[SiteState<'ctx>], children: &[Child<'ctx>]) {
    let b = e.b;
    for s in states {
        let stride = children[s.child].stride;
        let count = e.count(s);
        let buffer = e.load_ptr(s.buffer, "buffer");
        e.if_then(ok(b.build_is_not_null(buffer, "have.copy")), || {
            e.for_loop(tid, count, nthreads, |i| {
                // Word by word: a record is often over 128 bytes, which NVPTX copies a byte at a time.
                super::super::copies::word_copy(b, (e.record(buffer, i, stride), 16), (e.record(s.table, i, stride), 16), stride);
            });
        });
    }
}

/// Thread 0's launch of `count` (> 0) records of site `s` lying at `buffer`: one launch of
/// `C__agg` over them when `buffer` is not null (`blocks`: their child blocks, else the end of
/// the last record), else, or when that launch fails, each record of the shared table as it
/// was (the global copy given back).
pub(super) fn launch_records<'ctx>(
    e: &Emit<'_, 'ctx>,
    s: &SiteState<'ctx>,
    c: &Child<'ctx>,
    entries: &Entries<'ctx>,
    buffer: PointerValue<'ctx>,
    count: IntValue<'ctx>,
    largest: Option<IntValue<'ctx>>,
) {
    let b = e.b;
    let ctx = e.module.get_context();
    let failed_slot = e.slot(ctx.bool_type().into(), "one.by.one");
    ok(b.build_store(failed_slot, ctx.bool_type().const_int(1, false)));
    e.if_then(ok(b.build_is_not_null(buffer, "have.copy")), || {
        let last = e.record(buffer, ok(b.build_int_sub(count, e.c32(1), "last")), c.stride);
        let start = e.load32(last, "last.start");
        let volume = [0, 1, 2].map(|k| e.load32(byte_gep(b, last, e.c64(OFF_GRID + 4 * k), "dim.at"), "grid"));
        let blocks = ok(b.build_int_mul(ok(b.build_int_mul(volume[0], volume[1], "m")), volume[2], "last.blocks"));
        let total = ok(b.build_int_add(start, blocks, "total"));
        let threads = largest.unwrap_or_else(|| e.load32(s.max_threads, "max.threads"));
        let (status, _) = launch_agg_kernel(e.module, b, e.f, &s.launch, c, entries, buffer, count, total, threads, None);
        let failed = ok(b.build_int_compare(IntPredicate::NE, status, e.c32(0), "failed"));
        ok(b.build_store(failed_slot, failed));
        e.if_then(failed, || {
            ok(b.build_call(c.give_back, &[buffer.into()], ""));
        });
    });
    let one_by_one = ok(b.build_load(ctx.bool_type(), failed_slot, "one.by.one")).into_int_value();
    e.if_then(one_by_one, || {
        e.for_loop(e.c32(0), count, e.c32(1), |i| {
            let rec = e.record(s.table, i, c.stride);
            let operand = |k: u32| operand(s.launch.call, k).expect("a launch's operand");
            let grid = e.dims(rec, OFF_GRID, operand(2), "rec.grid");
            let block = e.dims(rec, OFF_BLOCK, operand(3), "rec.block");
            let args = byte_gep(b, rec, e.c64(c.args_at), "rec.args");
            ok(b.build_call(s.direct, &[args.into(), grid.into(), block.into()], ""));
        });
    });
}

/// Makes every thread of `f` reach `eob.end` before it returns: `eob.begin` called first,
/// every `ret` a branch to one block that calls `eob.end` and returns.
pub(super) fn wrap<'ctx>(module: &Module<'ctx>, f: FunctionValue<'ctx>, eob: &EndOfBlock<'ctx>) {
    let ctx = module.get_context();
    let b = ctx.create_builder();
    let entry = f.get_first_basic_block().expect("a kernel with a body");
    let first = entry.get_instructions().find(|i| i.get_opcode() != InstructionOpcode::Alloca).expect("a terminator");
    b.position_before(&first);
    ok(b.build_call(eob.begin, &[], ""));
    super::super::clone::returns_to_one_block(&b, f, "agg.end");
    ok(b.build_call(eob.end, &[], ""));
    ok(b.build_return(None));
}
