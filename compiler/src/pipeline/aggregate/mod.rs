//! Launch aggregation on LLVM IR (`-faggregate-launches=`, docs/AGGREGATION.md), for every
//! front end: cdpc's `.cdp` code generation, Clang for CUDA C++, and LLVM IR given as input.
//! This file decides which launches are taken ([`aggregate_with`]) and builds the aggregated kernel
//! `C__agg` of each child; [`warp`] meets the warp at the launch; [`block`] records a kernel's
//! launches and launches them at the end of the block; [`grid`] hands each block's records on
//! to the grid's last block. Below them, [`child`] holds what one child's aggregation needs (its
//! `C__agg`'s launch, its pool of tables, its arena) and [`records`] the record's layout and
//! the helpers every granularity writes IR with; each module imports only those below it
//! (`compiler/tests/layers.rs`).
//!
//! What every granularity shares: which launches are taken (tail and fire-and-forget
//! launches, a dynamic shared memory size that is not a constant, made one first
//! where every run agrees on it ([`super::uniform`]: `warpSize`, `const` locals), children
//! without a definition here, calls not in the documented types get `R0500`), and
//! `C__agg(records, count)`, which finds its record by binary search on the records' first
//! blocks, reads grid, block and arguments (a `byval` argument copied out) and meets its block
//! at a barrier. Threads past the record's block size skip the body; the rest call
//! `C__aggregated`, a copy of `C` whose built-in reads are parameters ([`super::clone`]), with
//! the values of their launch. Then thread 0 counts the block done (a release fence of the
//! device's scope, a relaxed add); the last block gives the table back. A
//! child that calls `__syncthreads` needs every thread of a block: records of different block
//! sizes are launched each as it was. A kernel that reaches a rewritten site, and `C__agg`,
//! are capped at 64 registers unless they have launch bounds.
//!
//! At block and grid granularity the same `C__agg` runs the records, and the launches block
//! granularity cannot delay get `R0500` ([`block`]); a kernel that reads launch errors is
//! aggregated per warp, at its sites, with `R0501`, and so is every launch into a named stream
//! at every granularity ([`warp`]: into its stream, which orders it with the thread's other
//! work there).
//!
//! Invariant: with aggregation off, or no launch to take, the module is untouched; afterwards
//! every launch left (the helpers' among them) is in the documented shape. A child gets
//! `C__agg`, its copy `C__aggregated`, its pool and its arena only where a launch of it is
//! rewritten to launch `C__agg` (a child no taken launch names gets none: they would only cost
//! LLVM's and ptxas's time), and all of them are internal to the module: under separate
//! compilation (`-dc`, `-rdc`) another file launches the child itself, never its `C__agg`.

use super::callgraph::is_kernel;
use super::clone::{self, as_function};
use super::emit::{intrinsic, ok};
use super::launch::{self, Launch};
use super::sites::{builtin_readers, byval_at_call, cap_kernel, cap_registers, documented_shape, load_arguments, parameter_layout, replace_by_helper, replace_by_helper_with, source_name, unflatten};
use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use crate::llvm::operand;
use child::{may_sync, pool, Arena, Child, Entries};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::llvm_sys::core::LLVMGetTypeAttributeValue;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetData;
use inkwell::types::AnyTypeEnum;
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, FunctionValue, IntValue};
use inkwell::{AtomicOrdering, AtomicRMWBinOp, IntPredicate};
use records::{byte_gep, Emit, SiteState, HEADER, OFF_BLOCK, OFF_DONE, OFF_GRID, RECORD_ALIGN};
use std::collections::HashSet;

/// Which launches are aggregated: `-faggregate-launches=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Granularity {
    /// No aggregation (the default).
    #[default]
    Off,
    /// The launches that the threads of a warp make together, at the launch site.
    Warp,
    /// The launches of a thread block, at the end of the kernel (per warp, at the site, in
    /// kernels that read launch errors).
    Block,
    /// The launches of a whole parent grid: each block's records as at block granularity,
    /// handed to the grid's last block, which launches them as one grid ([`grid`]).
    Grid,
    /// Chosen per kernel ([`choose`]): a kernel's launches at grid granularity where each is
    /// made by most threads of the grid and launches a child that launches nothing, per warp
    /// otherwise. What an optimising build gets when no granularity is asked for.
    Auto,
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Granularity, String> {
        match s {
            "off" | "none" => Ok(Granularity::Off),
            "warp" => Ok(Granularity::Warp),
            "block" => Ok(Granularity::Block),
            "grid" => Ok(Granularity::Grid),
            "auto" => Ok(Granularity::Auto),
            other => Err(format!("unknown aggregation granularity `{other}`: use auto, warp, block, grid or off")),
        }
    }
}

impl std::fmt::Display for Granularity {
    /// As `-faggregate-launches=` and [`FromStr`](std::str::FromStr) spell it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Granularity::Off => "off",
            Granularity::Warp => "warp",
            Granularity::Block => "block",
            Granularity::Grid => "grid",
            Granularity::Auto => "auto",
        })
    }
}

pub use super::sites::REGISTER_CAP;
pub use records::{MAX_BLOCKS_PER_RECORD, RECORD_CAP, SHARED_BUDGET};

mod block;
mod child;
mod choose;
mod grid;
mod records;
mod warp;

/// Why the launch `l` is not aggregated per warp, if it is not.
/// `taken_reads_ids`: a function whose address is taken reads a built-in, itself or through
/// what it calls (a child that calls through a pointer could reach it).
fn why_not(l: &Launch<'_>, data: &TargetData, taken_reads_ids: bool) -> Option<String> {
    if !documented_shape(l) {
        return Some("the launch's calls do not have the documented types".into());
    }
    let operand = |i: u32| operand(l.call, i);
    match operand(5).and_then(launch::constant_u64) {
        Some(0) => {}
        Some(3) => return Some("tail launches (cudaStreamTailLaunch) are not aggregated".into()),
        Some(4) => return Some("fire-and-forget launches (cudaStreamFireAndForget) are not aggregated".into()),
        None if warp::named_stream(l) => {}
        _ => return Some("only launches into the NULL stream or a named stream are aggregated".into()),
    }
    if operand(4).and_then(launch::constant_u64).is_none() {
        return Some("the launch's dynamic shared memory is not the same for every thread (a constant, `warpSize`, or a local only its declaration stores): the aggregated grid's blocks would each need their own".into());
    }
    let child = operand(0).and_then(|k| as_function(k.as_value_ref()));
    let Some(child) = child.filter(|c| c.count_basic_blocks() > 0 && !c.get_type().is_var_arg()) else {
        return Some(child.map_or_else(
            || "the launch goes through a pointer: which kernel it launches is known at run time only, and this pass needs the child's body".to_string(),
            |c| format!("`{}` has no definition to clone", source_name(&c.get_name().to_string_lossy())),
        ));
    };
    let (_, end) = parameter_layout(child, data);
    if (l.buffer.is_some() && end > l.size) || (l.buffer.is_none() && end > 0) {
        return Some("the launch's parameter buffer does not hold the child's parameters as laid out".into());
    }
    if taken_reads_ids && block::calls_through_pointer(child) {
        return Some(format!(
            "`{}` calls a function through a pointer, and a function whose address is taken reads threadIdx, blockIdx, blockDim or gridDim, which would see the aggregated launch's",
            source_name(&child.get_name().to_string_lossy())
        ));
    }
    None
}

/// The kernels of `module` that read a thread or block index, as the program wrote them: taken
/// before thresholding, whose helpers read both, for [`aggregate_with`]: the launches of the
/// other kernels are left alone at every granularity.
pub fn index_readers(module: &Module<'_>) -> std::collections::HashSet<String> {
    choose::index_readers(module)
}

/// Aggregates the launches of `sites`, the module's as they are now, at `asked` granularity
/// (module docs, [`block`], [`grid`]), with the kernels that read an index as
/// [`index_readers`] found them before the passes that ran since; returns the `R0500` remarks
/// of the launches it leaves alone and the `R0501` remarks of those it aggregates per warp
/// instead of per block or grid.
pub fn aggregate_with<'ctx>(module: &Module<'ctx>, sites: &launch::Sites<'ctx>, asked: Granularity, source: &SourceText, index_readers: &std::collections::HashSet<String>) -> Vec<Diagnostic> {
    if asked == Granularity::Off || !sites.refused.is_empty() {
        return Vec::new();
    }
    let launches = &sites.launches;
    let data = TargetData::create(&module.get_data_layout().as_str().to_string_lossy());
    // A launch in a helper (thresholding's) is placed at the helper's call, where its line is.
    let place = |d: Diagnostic, l: &Launch<'ctx>| {
        let (f, at) = block::host(module, l);
        source.place(d, at, &f.get_name().to_string_lossy())
    };
    let child_of = |l: &Launch<'_>| operand(l.call, 0).and_then(|k| as_function(k.as_value_ref()));
    let name_of = |l: &Launch| child_of(l).map_or_else(|| "a kernel through a pointer".to_string(), |c| format!("`{}`", source_name(&c.get_name().to_string_lossy())));
    let taken_reads_ids = block::address_taken(module).iter().any(|&f| !builtin_readers(&[f]).is_empty());
    let mut remarks = Vec::new();
    let mut taken = Vec::new();
    // 32-bit PTX is for reading only: ptxas 13 assembles no 32-bit code for any GPU it
    // supports (ABI-NOTES.md), and the records, tables and arenas are laid out for 64-bit
    // pointers and `size_t`.
    let narrow = data.get_pointer_byte_size(None) != 8;
    for l in launches {
        let why = if narrow {
            Some("aggregation is done at the 64-bit address size only (32-bit PTX is for reading: ptxas assembles no 32-bit code for sm_90)".to_string())
        } else {
            why_not(l, &data, taken_reads_ids)
        };
        match why {
            Some(why) => remarks.push(place(Diagnostic::new(Code::AggregationRemark, Span::new(0, 0), format!("launch of {} not aggregated", name_of(l))).with_primary_message(why), l)),
            None => taken.push(*l),
        }
    }
    // At every granularity, a kernel that reads no thread or block index is a driver launched
    // with one thread (`parent<<<1, 1>>>`): its launches have nothing to gather, and the
    // helpers would only cost it (`samples/err_depth.cdp`'s chain of 100 launches, 1.04x its
    // plain build's time per warp; `devrt_pdl.cdp` 1.02-1.10x, most at the grid's end;
    // `param_layout.cdp` 1.06x per warp, on the H100). So their forced builds are the plain
    // ones' bytes.
    let (taken, drivers): (Vec<Launch>, Vec<Launch>) = taken.into_iter().partition(|l| {
        let (f, _) = block::host(module, l);
        !is_kernel(f) || index_readers.contains(&*f.get_name().to_string_lossy())
    });
    for l in &drivers {
        let kernel = source_name(&block::host(module, l).0.get_name().to_string_lossy());
        let why = format!("`{kernel}` reads no thread or block index: a kernel launched with one thread, whose launches have nothing to gather");
        remarks.push(place(Diagnostic::new(Code::AggregationRemark, Span::new(0, 0), format!("launch of {} not aggregated", name_of(l))).with_primary_message(why), l));
    }
    if taken.is_empty() {
        return remarks;
    }
    // A launch into a named stream is aggregated at its site, into its stream, where the stream
    // orders it with its thread's other work there ([`warp`]); those of a kernel aggregated
    // at the end of its blocks or grid too, since a named stream runs apart from the NULL stream
    // (the device runtime's streams are non-blocking).
    let (named, taken): (Vec<Launch>, Vec<Launch>) = taken.into_iter().partition(warp::named_stream);
    // A stream each thread made into a local of its own: no two lanes share one.
    let (own, named): (Vec<Launch>, Vec<Launch>) = named.into_iter().partition(|l| warp::per_thread_stream(module, l));
    for l in &own {
        let why =
            "each thread launches into a stream it made into a local of its own (`cudaStreamCreateWithFlags`): no two lanes of a warp launch into one stream, so aggregation has nothing to gather";
        remarks.push(place(Diagnostic::new(Code::AggregationRemark, Span::new(0, 0), format!("launch of {} not aggregated", name_of(l))).with_primary_message(why), l));
    }
    let named_remarks = match asked {
        Granularity::Block | Granularity::Grid => named
            .iter()
            .map(|l| {
                let why = "a launch into a named stream is aggregated at its site, into its stream, which orders it with the thread's other launches there".to_string();
                (*l, Code::AggregatedPerWarp, format!("launch of {} aggregated per warp, at its site", name_of(l)), why)
            })
            .collect(),
        _ => Vec::new(),
    };
    let (at_site, kernels, plan_remarks) = match asked {
        Granularity::Warp => (taken.clone(), Vec::new(), Vec::new()),
        // The kernels whose launches gain from waiting for the end of the grid; every other
        // launch per warp, where warp granularity would have taken it (so no plan remark).
        Granularity::Auto => {
            let plan = block::plan(module, launches, &taken, &data);
            let kernels: Vec<block::KernelPlan> = plan.kernels.into_iter().filter(|k| choose::prefers_grid(module, k, index_readers)).collect();
            let at_site = taken.iter().filter(|l| !kernels.iter().any(|k| k.sites.iter().any(|s| s.call == l.call))).copied().collect();
            let chosen = kernels.iter().flat_map(|k| k.sites.iter().map(move |l| (k.kernel, *l)));
            let remarks = chosen.map(|(k, l)| (l, Code::AggregatedPerGrid, format!("launch of {} aggregated for the whole grid", name_of(&l)), choose::why(k))).collect();
            (at_site, kernels, remarks)
        }
        _ => {
            let plan = block::plan(module, launches, &taken, &data);
            (plan.at_site, plan.kernels, plan.remarks)
        }
    };
    let at_site: Vec<Launch> = at_site.into_iter().chain(named).collect();
    let plan_remarks: Vec<_> = plan_remarks.into_iter().chain(named_remarks).collect();
    // What the kernels delayed to their end get: the grid's end where `auto` chose it.
    let asked = if asked == Granularity::Auto { Granularity::Grid } else { asked };
    // A launch that only one lane of a warp makes is left alone at its site: aggregation per
    // warp has nothing to gather there and would cost the parent registers.
    let (at_site, one_lane): (Vec<_>, Vec<_>) = at_site.into_iter().map(|l| (l, warp::one_lane(module, &l))).partition(|(_, index)| index.is_none());
    let at_site: Vec<Launch> = at_site.into_iter().map(|(l, _)| l).collect();
    // Likewise a kernel all of whose sites one thread of a block makes (of the grid, at grid
    // granularity): its records would be one a block (a grid), launched later through the
    // aggregated kernel. All or none of a kernel's sites: leaving some at their site while the
    // others wait for the end of the block would reorder its launches.
    let among = if asked == Granularity::Grid { warp::Among::Grid } else { warp::Among::Block };
    let (kernels, lone_kernels): (Vec<_>, Vec<_>) = kernels
        .into_iter()
        .map(|k| {
            let lone: Option<Vec<warp::LoneIndex>> = k.sites.iter().map(|l| warp::one_lane(module, l).filter(|i| i.alone_in(among))).collect();
            (k, lone)
        })
        .partition(|(_, lone)| lone.is_none());
    let kernels: Vec<block::KernelPlan> = kernels.into_iter().map(|(k, _)| k).collect();
    let entries = if at_site.is_empty() && kernels.is_empty() { None } else { Entries::find(module) };
    if entries.is_none() && !(at_site.is_empty() && kernels.is_empty()) {
        for l in &taken {
            let d = Diagnostic::new(Code::AggregationRemark, Span::new(0, 0), format!("launch of {} not aggregated", name_of(l)))
                .with_primary_message("the module declares `malloc`, `free` or `cudaGetParameterBuffer` with other types");
            remarks.push(place(d, l));
        }
        return remarks;
    }
    for (l, code, message, why) in plan_remarks {
        if code == Code::AggregatedPerWarp && one_lane.iter().any(|(o, _)| o.call == l.call) {
            continue; // left alone, with its R0500 below
        }
        remarks.push(place(Diagnostic::new(code, Span::new(0, 0), message).with_primary_message(why), &l));
    }
    let lone_sites = one_lane.into_iter().map(|(l, i)| (l, i.expect("partitioned"), warp::Among::Warp));
    let lone_sites = lone_sites.chain(lone_kernels.into_iter().flat_map(|(k, lone)| k.sites.into_iter().zip(lone.expect("partitioned")).map(move |(l, i)| (l, i, among))));
    for (l, index, among) in lone_sites {
        remarks.push(place(Diagnostic::new(Code::AggregationRemark, Span::new(0, 0), format!("launch of {} not aggregated", name_of(&l))).with_primary_message(index.why(among)), &l));
    }
    let Some(entries) = entries else { return remarks };
    // One aggregated kernel per child, declared before the sites call it.
    let ctx = module.get_context();
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let mut children: Vec<Child> = Vec::new();
    let block_sites = kernels.iter().flat_map(|k| k.sites.iter());
    for l in at_site.iter().chain(block_sites) {
        let child = child_of(l).expect("checked");
        if children.iter().any(|c| c.child == child) {
            continue;
        }
        let (layout, end) = parameter_layout(child, &data);
        // Arguments are read and copied a byte at a time (`load_arguments`): a record needs
        // only its header's alignment.
        let args_at = HEADER;
        let stride = block::record_stride(child, &data);
        let name = format!("{}__agg", child.get_name().to_string_lossy());
        let agg = module.add_function(&name, ctx.void_type().fn_type(&[ptr.into(), ctx.i32_type().into()], false), Some(Linkage::Internal));
        agg.set_call_conventions(crate::back::device_launch::PTX_KERNEL_CALL_CONV);
        for a in child.attributes(AttributeLoc::Function) {
            // Its blocks are not the child's: launch bounds and caps do not carry over.
            if !(a.is_string() && a.get_string_kind_id().to_string_lossy().starts_with("nvvm.")) {
                agg.add_attribute(AttributeLoc::Function, a);
            }
        }
        cap_kernel(module, agg);
        let grid_sites = asked == Granularity::Grid && kernels.iter().flat_map(|k| k.sites.iter()).any(|l| child_of(l) == Some(child));
        let cname = child.get_name().to_string_lossy().into_owned();
        // A child that launches itself at grid granularity reads one bank while it fills the
        // other; a kernel whose sites of the child make two groups (one after the other, or
        // launched differently: [`grid::launch_groups`]) fills one bank for each; with one bank
        // the second group's every block would go to the heap (a device `malloc` a block:
        // `samples/c_statements.cdp` through Clang, 1.16x its plain build's time).
        let recursive = kernels.iter().any(|k| k.kernel == child && k.sites.iter().any(|l| child_of(l) == Some(child)));
        let two_groups = kernels.iter().any(|k| {
            let sites: Vec<Launch> = k.sites.iter().filter(|l| child_of(l) == Some(child)).copied().collect();
            grid::launch_groups(&sites).iter().collect::<HashSet<_>>().len() > 1
        });
        let arena = if grid_sites { Arena::declare(module, &cname, stride, recursive || two_groups) } else { None };
        let (table, give_back) = pool(module, &cname, stride, &entries, arena.as_ref());
        children.push(Child { child, agg, layout, args_at, args_size: end, stride, syncs: may_sync(child), table, give_back, arena });
    }
    let index_of = |l: &Launch| children.iter().position(|c| Some(c.child) == child_of(l)).expect("declared above");
    let mut rewritten = HashSet::new();
    let mut helpers = Vec::new();
    for l in &at_site {
        let (helper, extra) = warp::helper(module, l, &children[index_of(l)], &entries);
        replace_by_helper_with(module, l, helper, "agg", &extra);
        rewritten.insert(l.function);
        helpers.push((helper, l.size));
    }
    warp::share_helpers(&helpers);
    // The end of each block of the kernels aggregated per block or grid, built while their
    // launches are still there to copy; then the launches become records.
    let mut ends = Vec::new();
    for k in &kernels {
        // A block of one thread has nothing to gather, nor at grid granularity a grid of one
        // thread, or of one block when one thread of a block makes each of the kernel's
        // launches: the sites then launch at once. All of them or none, so that the kernel's
        // launches keep their order.
        let direct = if asked == Granularity::Grid {
            block::Direct::OneBlockGrid { lone: k.sites.iter().all(|l| warp::one_lane(module, l).is_some_and(|i| i.alone_in(warp::Among::Block))) }
        } else {
            block::Direct::OneThreadBlock
        };
        let states: Vec<SiteState> = k.sites.iter().enumerate().map(|(n, l)| block::site_state(module, k.kernel, n, l, index_of(l), &children[index_of(l)], k.cap, direct)).collect();
        let kname = k.kernel.get_name().to_string_lossy().into_owned();
        let eob = if asked == Granularity::Grid {
            grid::end_of_grid(module, &kname, &states, k.end, &children, &entries)
        } else {
            block::end_of_block(module, &kname, &states, k.end, &|e, tid, n, barriers| block::block_tail(e, tid, n, barriers, &states, &children, &entries))
        };
        for s in &states {
            replace_by_helper(module, &s.launch, s.record, "agg");
        }
        rewritten.insert(k.kernel);
        ends.push((k.kernel, eob));
    }
    // The copies run by the aggregated kernels, made after the sites so that a child that
    // launches itself aggregates its own launches too.
    let wanted: Vec<FunctionValue> = children.iter().map(|c| c.child).collect();
    let mut originals = wanted.clone();
    originals.extend(builtin_readers(&wanted).into_iter().filter(|f| !wanted.contains(f)));
    let copies = clone::clone_with_builtins(module, &originals, "aggregated");
    for (c, copy) in children.iter().zip(copies) {
        fill_agg(module, c, copy, &data);
        rewritten.insert(c.agg);
    }
    // Every thread of a kernel with records reaches its end; so does every thread of the
    // aggregated clone of such a kernel, whose copy of the kernel records the same sites (a
    // clone's block stands for one block of the kernel).
    for (k, eob) in &ends {
        block::wrap(module, *k, eob);
        if let Some(c) = children.iter().find(|c| c.child == *k) {
            block::wrap(module, c.agg, eob);
        }
    }
    cap_registers(module, &rewritten);
    remarks
}

/// The body of `C__agg(records, count)` (module docs), calling `copy`, the child's copy that
/// takes the built-ins.
fn fill_agg<'ctx>(module: &Module<'ctx>, c: &Child<'ctx>, copy: FunctionValue<'ctx>, data: &TargetData) {
    let ctx = module.get_context();
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let c32 = |v: u64| i32t.const_int(v, false);
    let c64 = |v: u64| i64t.const_int(v, false);
    let f = c.agg;
    let (records, count) = (f.get_nth_param(0).expect("records").into_pointer_value(), f.get_nth_param(1).expect("count").into_int_value());
    records.set_name("records");
    count.set_name("count");
    let b = ctx.create_builder();
    let bb = |name: &str| ctx.append_basic_block(f, name);
    let (entry, search, step, found, run, after, counting, last, leave) = (bb("entry"), bb("search"), bb("step"), bb("found"), bb("run"), bb("after"), bb("counting"), bb("last"), bb("leave"));
    let call = |name: &str, args: &[BasicMetadataValueEnum<'ctx>], label: &str| ok(b.build_call(intrinsic(module, name, &[]), args, label)).try_as_basic_value().basic();
    let sreg = |name: &str| call(&format!("llvm.nvvm.read.ptx.sreg.{name}"), &[], name).expect("a register").into_int_value();

    b.position_at_end(entry);
    // Room for the `byval` arguments, copied out of the record before it is freed.
    let byval = Attribute::get_named_enum_kind_id("byval");
    let slots: Vec<Option<(inkwell::values::PointerValue<'ctx>, u64)>> = (0..c.layout.len())
        .map(|i| {
            let attr = c.child.get_enum_attribute(AttributeLoc::Param(i as u32), byval)?;
            // SAFETY: the type of a live `byval` attribute.
            let t = unsafe { AnyTypeEnum::new(LLVMGetTypeAttributeValue(attr.as_mut_ptr())) };
            let size = data.get_abi_size(&t);
            let slot = ok(b.build_alloca(ctx.i8_type().array_type(size.max(1) as u32), "byval.copy"));
            slot.as_instruction_value().expect("an alloca").set_alignment(16).expect("a power of two");
            Some((slot, size))
        })
        .collect();
    let bid = sreg("ctaid.x");
    ok(b.build_unconditional_branch(search));

    // The record whose first block is the last at or before this block.
    b.position_at_end(search);
    let lo = ok(b.build_phi(i32t, "lo"));
    let hi = ok(b.build_phi(i32t, "hi"));
    let (lo_v, hi_v) = (lo.as_basic_value().into_int_value(), hi.as_basic_value().into_int_value());
    let wide = ok(b.build_int_compare(IntPredicate::UGT, ok(b.build_int_sub(hi_v, lo_v, "span")), c32(1), "wide"));
    ok(b.build_conditional_branch(wide, step, found));
    b.position_at_end(step);
    let mid = ok(b.build_int_unsigned_div(ok(b.build_int_add(lo_v, hi_v, "sum")), c32(2), "mid"));
    let at = |index: IntValue<'ctx>, name: &str| byte_gep(&b, records, ok(b.build_int_mul(ok(b.build_int_z_extend(index, i64t, "idx")), c64(c.stride), "off")), name);
    let first = ok(b.build_load(i32t, at(mid, "mid.record"), "first")).into_int_value();
    let before = ok(b.build_int_compare(IntPredicate::ULE, first, bid, "before"));
    let lo_next = ok(b.build_select(before, mid, lo_v, "lo.next")).into_int_value();
    let hi_next = ok(b.build_select(before, hi_v, mid, "hi.next")).into_int_value();
    ok(b.build_unconditional_branch(search));
    lo.add_incoming(&[(&c32(0), entry), (&lo_next, step)]);
    hi.add_incoming(&[(&count, entry), (&hi_next, step)]);

    b.position_at_end(found);
    let rp = at(lo_v, "record");
    let field = |offset: u64, name: &str| ok(b.build_load(i32t, byte_gep(&b, rp, c64(offset), "field"), name)).into_int_value();
    let start = field(0, "start");
    let grid: [IntValue; 3] = [0, 1, 2].map(|k| field(OFF_GRID + 4 * k, ["grid.x", "grid.y", "grid.z"][k as usize]));
    let block: [IntValue; 3] = [0, 1, 2].map(|k| field(OFF_BLOCK + 4 * k, ["block.x", "block.y", "block.z"][k as usize]));
    let rel = ok(b.build_int_sub(bid, start, "rel"));
    let block_idx = unflatten(&b, rel, grid);
    let nt = ok(b.build_int_mul(ok(b.build_int_mul(block[0], block[1], "m")), block[2], "nt"));
    let mut args = load_arguments(&ctx, &b, &c.layout, byte_gep(&b, rp, c64(c.args_at), "record.args"), RECORD_ALIGN);
    for ((arg, slot), (offset, _)) in args.iter_mut().zip(&slots).zip(&c.layout) {
        if let Some((slot, size)) = slot {
            ok(b.build_memcpy(*slot, 16, arg.into_pointer_value(), super::copies::aligned_at(RECORD_ALIGN.into(), *offset) as u32, c64(*size)));
            *arg = (*slot).into();
        }
    }
    // Every thread has read its record (the barrier); thread 0 counts the block once its body
    // has run, so that the count's fence and atomic never hold up the block's start (KLAP's QT
    // at grid granularity: 3.7-4 us of each block's life, its barrier-bound body waiting on
    // thread 0). The last block to count gives the table back. The barrier and a release fence
    // of the device's scope order every thread's reads before the count; the last block's
    // acquire-release fence orders the give-back after everyone's.
    call("llvm.nvvm.barrier.cta.sync.aligned.all", &[c32(0).into()], "");
    let t = sreg("tid.x");
    let beyond = ok(b.build_int_compare(IntPredicate::UGE, t, nt, "beyond"));
    ok(b.build_conditional_branch(beyond, after, run));
    b.position_at_end(run);
    let thread_idx = unflatten(&b, t, block);
    let mut call_args = args;
    call_args.extend(thread_idx.iter().chain(&block_idx).chain(&block).chain(&grid).map(|v| BasicMetadataValueEnum::from(*v)));
    let body = ok(b.build_call(copy, &call_args, ""));
    byval_at_call(copy, body);
    ok(b.build_unconditional_branch(after));
    b.position_at_end(after);
    let first_thread = ok(b.build_int_compare(IntPredicate::EQ, t, c32(0), "thread0"));
    ok(b.build_conditional_branch(first_thread, counting, leave));
    b.position_at_end(counting);
    let e = Emit { module, f, b: &b };
    e.fence_in("device", inkwell::llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingRelease);
    let done = byte_gep(&b, records, c64(OFF_DONE), "done");
    let old = ok(b.build_atomicrmw(AtomicRMWBinOp::Add, done, c32(1), AtomicOrdering::Monotonic));
    super::atomics::set_scope(&ctx, old.as_instruction().expect("an atomicrmw"), "device");
    let blocks = sreg("nctaid.x");
    let is_last = ok(b.build_int_compare(IntPredicate::EQ, old, ok(b.build_int_sub(blocks, c32(1), "last.block")), "is.last"));
    ok(b.build_conditional_branch(is_last, last, leave));
    b.position_at_end(last);
    // Acquire for the counts before, release for the give-back's atomic after it.
    e.fence_in("device", inkwell::llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingAcquireRelease);
    ok(b.build_call(c.give_back, &[records.into()], ""));
    ok(b.build_unconditional_branch(leave));
    b.position_at_end(leave);
    ok(b.build_return(None));
}
