//! Launch aggregation (KLAP-style), a HIR-to-HIR phase between sema and code generation,
//! enabled by `-faggregate-launches=block`, `=grid` or `=warp`; code generation is unaware of
//! it (but for reading `%gridid`, an ordinary special register).
//!
//! Both granularities turn launches of one child `C` into one launch of `C__agg`, a clone of
//! `C` that maps each of its blocks back to a *record* (grid, block, arguments) and so sees the
//! `threadIdx`, `blockIdx`, `blockDim`, `gridDim` and arguments of the launch it stands for
//! (`clone.rs`). They differ in who meets to launch: the threads of a block at the end of the
//! kernel (`block.rs`), or the threads of a warp at the launch site itself (`warp.rs`, whose
//! header says how).
//!
//! # Block granularity
//!
//! A launch statement `C<<<g, b>>>(args)` in a kernel `K` (NULL stream, no dynamic shared
//! memory, not in a loop) becomes a *record*: the thread evaluates `g`, `b` and the arguments
//! as before, takes a slot in a per-block `__shared__` table with one 64-bit shared atomic that
//! also hands out the record's first block in the aggregated grid (slot in the high half, block
//! count in the low half, so slot order is block order), and stores `(start, g, b, args)`.
//! Launches that do not fit (table full, a configuration the runtime would refuse, grids over
//! 2^22 blocks) are made directly at the site, exactly as before.
//!
//! `K`'s body runs inside a `do { } while (0)` whose `return`s became `break`s (a flag carries
//! a `return` out of nested loops), so every thread of the block reaches the end, where:
//! `__syncthreads()`; thread 0 `cudaMalloc`s a global copy of the table; the block copies it;
//! `__syncthreads()`; thread 0 launches `C__agg<<<total blocks, max threads>>>(table, count)`.
//! A kernel that returns early and calls `__syncthreads` ends its blocks without barriers
//! instead: each thread counts itself after a fence and leaves, and the last does the same work
//! alone (`block::BlockEnd::LastThread`; grid granularity leaves such kernels alone).
//! When there is one record, when `C` calls `__syncthreads` and the records' block sizes
//! differ, or when the allocation fails, thread 0 instead launches every record as the
//! original `C<<<g, b>>>(args)`.
//!
//! `C__agg` is a clone of `C`'s body: block `B` finds its record by binary search over the
//! starts, reads its grid, block and arguments into locals (the original parameters become
//! locals), and sees `blockIdx` = `B - start` unflattened against `g`, `threadIdx` = its linear
//! thread index unflattened against `b` (so warps hold the same threads), `blockDim` = `b`,
//! `gridDim` = `g`. Threads beyond the record's block size return at once. After every thread
//! has read its record (a barrier), the last block to get there gives the table back (to the
//! warp tables' pool, `pool.rs`, or the heap).
//!
//! Memory visibility: a child sees what its launching thread wrote before the launch. The
//! recording thread's writes precede the end-of-block `__syncthreads()`, after which thread 0
//! launches: by the guide's rule (4.18.3.1, the `__syncthreads()` example) the child sees them.
//! Later writes of the recording thread may be seen as well, which the model allows.
//!
//! What changes observably, and only on failure or for order the model leaves open: a recorded
//! launch never fails at its site (`cudaGetLastError()` there would say `cudaSuccess`; a
//! failure of the aggregated launch is thread 0's), and the child grids of one block, which
//! the NULL stream would have run one after another in an unspecified order, run as one grid.
//! So that the first never shows, a kernel that reads launch errors (`cudaGetLastError`,
//! `cudaPeekAtLastError`, itself or in a function it calls) is aggregated per warp, at its
//! sites, where a failed aggregated launch becomes each thread's own launch again; remark
//! `R0501` says so.
//!
//! # Grid granularity
//!
//! The same rewrite as block granularity up to the copy of the block's table; then the copy is
//! a node of the parent grid's list, and the grid's last block launches all of them as one
//! grid (`grid.rs`, whose header says how per-grid state is kept for concurrent grids). It
//! takes exactly the launches block granularity takes, with the same remarks.
//!
//! Everything else is left as it is, with a remark (`R0500`, printed with `-Rpass=aggregate`)
//! saying why. At warp granularity the same holds for the clone, the visibility and what
//! changes, with `__syncwarp` (a memory barrier among its lanes) for `__syncthreads()`, and
//! only the launches the child cannot take are left alone: loops, device functions, kernels
//! that return early and kernels that launch themselves are all aggregated.

mod arena;
mod block;
mod build;
mod callees;
mod clone;
mod fold;
pub(crate) mod grid;
mod pool;
mod threshold;
pub use threshold::threshold;
mod uniform;
mod walk;
/// Every expression of a HIR block, for passes outside aggregation.
pub(crate) use walk::visit_block as visit_exprs;
mod warp;
#[cfg(test)]
mod grid_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod threshold_tests;

use crate::diag::{Code, Diagnostic, Span};
use crate::hir::{
    AtomicOp, Axis, BinaryOp, Block, Builtin, Expr, ExprKind, Field, FuncId, Function, FunctionKind,
    GlobalId, Init, Launch, LaunchTarget, LocalId, Module, RuntimeFn, SpecialReg, Stmt, StructDef, WarpOp,
};
use crate::layout::param_layout;
use crate::target::{AddressSize, LaunchAbi};
use crate::types::{round_up, StructId, Type};
use block::{rewrite_kernel, BlockEnd};
use build::{builder, new_global, new_local, B};
use clone::*;
use walk::*;
use std::collections::{BTreeMap, BTreeSet};

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
    /// handed to the grid's last block, which launches them as one grid (`grid.rs`).
    Grid,
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Granularity, String> {
        match s {
            "off" | "none" => Ok(Granularity::Off),
            "warp" => Ok(Granularity::Warp),
            "block" => Ok(Granularity::Block),
            "grid" => Ok(Granularity::Grid),
            other => Err(format!("unknown aggregation granularity `{other}`: use warp, block, grid or off")),
        }
    }
}

/// The most records a block keeps for one launch site.
pub const RECORD_CAP: u64 = 256;
/// Shared memory the record tables of one kernel may take, in bytes.
pub const SHARED_BUDGET: u64 = 24 * 1024;
/// The fewest records per site worth aggregating for; below it the site is left alone.
const MIN_CAP: u64 = 32;
/// A recorded grid has at most this many blocks (bigger ones are launched directly), so that
/// `RECORD_CAP` records never overflow the 32-bit block counter or `gridDim.x`.
pub const MAX_BLOCKS_PER_RECORD: u64 = 1 << 22;

/// Added to the remarks for what only block granularity refuses.
const WARP_HINT: &str = " (-faggregate-launches=warp would aggregate it)";

// Record fields.
const F_START: u32 = 0;
const F_DONE: u32 = 1;
const F_GRID: u32 = 2;
const F_BLOCK: u32 = 3;
const F_ARG0: u32 = 4;

/// Rewrites `module` for `granularity` and returns the remarks: one for each launch left as it
/// is (and why), and at block and grid granularity one for each launch aggregated per warp
/// instead.
/// With [`Granularity::Off`] nothing changes and nothing is said.
pub fn aggregate(module: &mut Module, granularity: Granularity) -> Vec<Diagnostic> {
    if granularity == Granularity::Off {
        return Vec::new();
    }
    fold::fold_kernel_pointers(module);
    let facts = Facts::compute(module);
    let mut plan = Plan { grid: granularity == Granularity::Grid, ..Plan::default() };
    for (i, f) in module.functions.iter().enumerate() {
        let Some(body) = &f.body else { continue };
        let mut sites = Vec::new();
        collect_sites(body, false, &mut sites);
        let fid = FuncId(i as u32);
        // A kernel that reads launch errors keeps them per thread: its launches are made at
        // their sites, warp-wide, at either granularity.
        let errors_read = f.kind == FunctionKind::Kernel && facts.of[i].reads_errors;
        if granularity == Granularity::Warp || errors_read {
            plan_at_sites(module, &facts, fid, &sites, granularity != Granularity::Warp, &mut plan);
        } else {
            plan_at_block_end(module, &facts, fid, &sites, &mut plan);
        }
    }
    apply(module, &facts, plan)
}

/// What the pass does: which launch sites become warp-wide aggregation at the site, which
/// become records launched at the end of the block, the children they launch, the remarks.
#[derive(Default)]
struct Plan {
    at_site: BTreeMap<FuncId, BTreeSet<(u32, u32)>>,
    at_block_end: BTreeMap<FuncId, Vec<(Site, u64)>>,
    /// The `at_block_end` kernels hand their records on to the grid's last block.
    grid: bool,
    children: BTreeSet<FuncId>,
    /// Per child, the largest constant dynamic shared memory of its aggregated sites.
    shared_mem: BTreeMap<FuncId, u64>,
    /// The children launched from warp-wide sites.
    at_site_children: BTreeSet<FuncId>,
    remarks: Vec<Diagnostic>,
}

impl Plan {
    /// Notes an aggregated site: its child, and the dynamic shared memory it asks for.
    fn add_child(&mut self, s: &Site, bytes: u64) {
        self.children.insert(child(&s.launch));
        let largest = self.shared_mem.entry(child(&s.launch)).or_insert(0);
        *largest = (*largest).max(bytes);
    }
}

/// Warp-wide aggregation at the sites of `fid`; `instead_of_block` adds a remark to each that
/// says why it is not aggregated per block.
fn plan_at_sites(module: &Module, facts: &Facts, fid: FuncId, sites: &[Site], instead_of_block: bool, plan: &mut Plan) {
    for s in sites {
        match site_check(module, facts, fid, s, Granularity::Warp) {
            Err(why) => plan.remarks.push(remark(module, s, &why)),
            Ok(bytes) => {
                plan.at_site.entry(fid).or_default().insert((s.launch.span.start, s.launch.span.end));
                plan.add_child(s, bytes);
                plan.at_site_children.insert(child(&s.launch));
                if instead_of_block {
                    let child = &module.function(child(&s.launch)).name;
                    plan.remarks.push(
                        Diagnostic::new(Code::AggregatedPerWarp, s.launch.span, format!("launch of `{child}` aggregated per warp, at its site"))
                            .with_primary_message(format!(
                                "`{}` reads launch errors (cudaGetLastError or cudaPeekAtLastError): made here, each thread's error stays its own launch's",
                                module.function(fid).name
                            )),
                    );
                }
            }
        }
    }
}

/// Block-wide aggregation of the launches of kernel `fid`, decided site by site, then for the
/// kernel as a whole.
fn plan_at_block_end(module: &Module, facts: &Facts, fid: FuncId, sites: &[Site], plan: &mut Plan) {
    let f = module.function(fid);
    let mut eligible = Vec::new();
    let mut direct_null: Vec<&Site> = Vec::new();
    for s in sites {
        let checked = if f.kind != FunctionKind::Kernel {
            Err(format!("the launch is in the device function `{}`; only launches in kernels are aggregated{WARP_HINT}", f.name))
        } else {
            site_check(module, facts, fid, s, Granularity::Block)
        };
        match checked {
            Err(why) => {
                if is_null_stream(&s.launch.stream) {
                    direct_null.push(s);
                }
                plan.remarks.push(remark(module, s, &why));
            }
            Ok(bytes) => eligible.push((s, bytes)),
        }
    }
    if eligible.is_empty() {
        return;
    }
    let k = &facts.of[fid.0 as usize];
    let kernel_reason = if k.early_return && k.syncs && plan.grid {
        // Block granularity takes such a kernel, ending its blocks without barriers
        // (`block::BlockEnd`); on the H100 the same end at grid granularity gave KLAP's QT wrong
        // output, hundreds of times slower (results/corpus-timing.md, Run F), not yet understood.
        Some(format!(
            "`{}` returns early and calls `__syncthreads`: grid granularity leaves it alone (-faggregate-launches=block or =warp would aggregate it)",
            f.name
        ))
    } else if let Some(other) = direct_null.first() {
        Some(format!(
            "`{}` also launches {} into the NULL stream without aggregation; delaying this launch would reorder them",
            f.name,
            launched(module, &other.launch)
        ))
    } else if k.launches_in_callees {
        Some(format!("`{}` calls a device function that launches kernels; delaying this launch could reorder them", f.name))
    } else if k.events {
        Some(format!("`{}` records or waits on events or puts other work into streams; delaying this launch would move it past them", f.name))
    } else {
        None
    };
    if let Some(why) = kernel_reason {
        plan.remarks.extend(eligible.iter().map(|(s, _)| remark(module, s, &why)));
        return;
    }
    let bytes: u64 = eligible.iter().map(|(s, _)| record_size(module, child(&s.launch))).sum();
    let cap = RECORD_CAP.min(SHARED_BUDGET / bytes.max(1));
    if cap < MIN_CAP {
        let why = format!("the launch records of `{}` need {bytes} bytes each and do not fit in shared memory", f.name);
        plan.remarks.extend(eligible.iter().map(|(s, _)| remark(module, s, &why)));
        return;
    }
    for &(s, shared_mem) in &eligible {
        plan.add_child(s, shared_mem);
    }
    plan.at_block_end.insert(fid, eligible.into_iter().map(|(s, _)| (s.clone(), cap)).collect());
}

/// Carries out `plan`: the warp-wide rewrites first, then the clones of the children (from
/// that module, so that a clone's own launches are aggregated at their sites too, but before
/// the block-wide rewrites, which only the kernels themselves need), then the block-wide
/// rewrites.
fn apply(module: &mut Module, facts: &Facts, plan: Plan) -> Vec<Diagnostic> {
    let mut aggs: BTreeMap<FuncId, AggChild> = BTreeMap::new();
    let first_clone = module.functions.len();
    for (k, &c) in plan.children.iter().enumerate() {
        let record = make_record(module, c);
        let pool = if plan.at_site_children.contains(&c) { pool::Pool::declare(module, c, record) } else { None };
        let at_grid_end = plan.grid && plan.at_block_end.values().flatten().any(|(s, _)| child(&s.launch) == c);
        let arena = if at_grid_end { arena::Arena::declare(module, c, record) } else { None };
        let shared_mem = plan.shared_mem.get(&c).copied().unwrap_or(0);
        aggs.insert(c, AggChild { agg: FuncId((first_clone + k) as u32), record, child_syncs: facts.of[c.0 as usize].syncs, pool, arena, shared_mem });
    }
    for (fid, sites) in &plan.at_site {
        warp::rewrite_function(module, *fid, sites, &aggs);
    }
    for c in &plan.children {
        let a = &aggs[c];
        let clone = build_agg_kernel(module, &module.functions[c.0 as usize].clone(), a.record, a.pool.as_ref(), a.arena.as_ref());
        debug_assert_eq!(module.functions.len(), a.agg.0 as usize);
        module.functions.push(clone);
    }
    // The device functions the clones call that read the built-ins, cloned to take the
    // launch's remapped values.
    let clones: Vec<FuncId> = plan.children.iter().map(|c| aggs[c].agg).collect();
    callees::clone_for(module, facts, &clones);
    // A kernel that launches itself at the end of its blocks (KLAP's QT at block or grid
    // granularity) is also its own aggregated child: its clone's launches, the same sites, are
    // rewritten the same way, so that every level of the recursion is one aggregated launch.
    // The clone's real blocks are the original's blocks, so delaying its launches to the end of
    // them keeps what the kernel's own rewrite keeps.
    let recursive: Vec<(FuncId, Vec<(Site, u64)>)> = plan
        .at_block_end
        .iter()
        .filter(|(k, sites)| sites.iter().any(|(s, _)| child(&s.launch) == **k))
        .filter_map(|(k, sites)| {
            let agg = aggs.get(k)?.agg;
            let caps: BTreeMap<(u32, u32), u64> = sites.iter().map(|(s, cap)| ((s.launch.span.start, s.launch.span.end), *cap)).collect();
            let mut found = Vec::new();
            collect_sites(module.function(agg).body.as_ref()?, false, &mut found);
            let clone_sites: Vec<(Site, u64)> = found.into_iter().filter_map(|s| caps.get(&(s.launch.span.start, s.launch.span.end)).copied().map(|c| (s, c))).collect();
            (clone_sites.len() == sites.len()).then_some((agg, clone_sites))
        })
        .collect();
    // A kernel that returns early and calls `__syncthreads` ends its blocks without barriers
    // (`block::BlockEnd`); so does its clone.
    let end_of = |k: FuncId| {
        let facts = &facts.of[k.0 as usize];
        if facts.early_return && facts.syncs { BlockEnd::LastThread } else { BlockEnd::Barriers }
    };
    let ends: BTreeMap<FuncId, BlockEnd> =
        plan.at_block_end.keys().map(|&k| (k, end_of(k))).chain(recursive.iter().filter_map(|(agg, _)| Some((*agg, end_of(*clone_of(&aggs, *agg)?))))).collect();
    for (k, sites) in plan.at_block_end.iter().chain(recursive.iter().map(|(k, s)| (k, s))) {
        rewrite_kernel(module, *k, sites, &aggs, plan.grid, ends[k]);
    }
    let clones = (first_clone as u32..module.functions.len() as u32).map(FuncId);
    let changed: BTreeSet<FuncId> = plan.at_site.keys().chain(plan.at_block_end.keys()).copied().chain(clones).collect();
    cap_registers(module, &changed);
    plan.remarks
}

/// Registers a kernel may use per thread so that a block of 1024 threads still fits an SM's
/// 65,536 (sm_50 to sm_120 alike).
pub const REGISTER_CAP: u32 = 64;

/// Caps at `REGISTER_CAP` the registers of every kernel that aggregation created or changed
/// (itself or a function it calls, at any depth), unless its `__launch_bounds__` already
/// bound them. A kernel that was launchable with 1024-thread blocks must stay so: ptxas gives a
/// kernel without bounds as many registers as it likes, and the record-building code of an
/// aggregated parent and the record-reading code of `C__agg` can take it past 64 (KLAP's MST,
/// whose kernels run with 1024 threads: 90 registers at block granularity, and every
/// aggregated launch failed with `cudaErrorLaunchOutOfResources`). A kernel that needed more
/// than 64 before could not run 1024-thread blocks then either; capped, it may spill.
pub(super) fn cap_registers(module: &mut Module, changed: &BTreeSet<FuncId>) {
    // The functions that reach a changed one, found by one walk back along the calls.
    let mut callers: BTreeMap<FuncId, Vec<FuncId>> = BTreeMap::new();
    for i in 0..module.functions.len() {
        let f = FuncId(i as u32);
        for callee in callees::calls_of(module, f) {
            callers.entry(callee).or_default().push(f);
        }
    }
    let mut reaching = changed.clone();
    let mut stack: Vec<FuncId> = changed.iter().copied().collect();
    while let Some(f) = stack.pop() {
        for &caller in callers.get(&f).into_iter().flatten() {
            if reaching.insert(caller) {
                stack.push(caller);
            }
        }
    }
    for id in reaching {
        let f = &mut module.functions[id.0 as usize];
        if f.kind == FunctionKind::Kernel && f.attrs.launch_bounds.is_none() {
            f.attrs.max_registers = Some(REGISTER_CAP);
        }
    }
}

/// The kernel whose clone `agg` is.
fn clone_of(aggs: &BTreeMap<FuncId, AggChild>, agg: FuncId) -> Option<&FuncId> {
    aggs.iter().find(|(_, a)| a.agg == agg).map(|(k, _)| k)
}

#[derive(Clone, Debug)]
struct Site {
    launch: Launch,
    in_loop: bool,
    statement: bool,
}

struct AggChild {
    agg: FuncId,
    record: StructId,
    child_syncs: bool,
    /// Where warp-wide sites take their tables (children launched only block-wide have none).
    pool: Option<pool::Pool>,
    /// Where a grid's blocks place their records (children launched at grid granularity).
    arena: Option<arena::Arena>,
    /// The dynamic shared memory of the aggregated launch (and of a record's own launch when
    /// it falls back): the largest of the child's aggregated sites, all constants.
    shared_mem: u64,
}

fn remark(module: &Module, s: &Site, why: &str) -> Diagnostic {
    let launched = launched(module, &s.launch);
    Diagnostic::new(Code::AggregationRemark, s.launch.span, format!("launch of {launched} not aggregated"))
        .with_primary_message(why.to_string())
}

/// How a remark names what a launch launches: `` `child` ``, or a kernel known at run time only.
fn launched(module: &Module, launch: &Launch) -> String {
    match launch.kernel() {
        Some(k) => format!("`{}`", module.function(k).name),
        None => "a kernel through a pointer".into(),
    }
}

/// Why a launch through a pointer is left alone by a pass that needs the child's body.
const THROUGH_POINTER: &str = "the launch goes through a pointer: which kernel it launches is known at run time only, and this pass needs the child's body";

/// The child of a launch that a pass rewrites. Only launches of a kernel known at compile time
/// are rewritten: `site_check` and `threshold` leave launches through a pointer alone first.
fn child(launch: &Launch) -> FuncId {
    launch.kernel().expect("only launches of a known kernel are rewritten")
}

/// Whether a launch in function `kernel` is aggregated at `granularity`: the dynamic shared
/// memory it asks for if it is, why it is left alone if not.
fn site_check(module: &Module, facts: &Facts, kernel: FuncId, s: &Site, granularity: Granularity) -> Result<u64, String> {
    let block = granularity == Granularity::Block;
    let Some(child_id) = s.launch.kernel() else {
        return Err(THROUGH_POINTER.into());
    };
    let child = module.function(child_id);
    if !s.statement {
        return Err("the launch is part of a larger expression".into());
    }
    if block && s.in_loop {
        return Err(format!("the launch is inside a loop: a thread may launch more than once{WARP_HINT}"));
    }
    match strip_casts(&s.launch.stream).kind {
        ExprKind::PointerConst(0) => {}
        ExprKind::PointerConst(3) => return Err("tail launches (cudaStreamTailLaunch) are not aggregated".into()),
        ExprKind::PointerConst(4) => return Err("fire-and-forget launches (cudaStreamFireAndForget) are not aggregated".into()),
        _ => return Err("only launches into the NULL stream are aggregated".into()),
    }
    let Some(shared_mem) = site_shared_mem(module, kernel, s) else {
        return Err("the launch's dynamic shared memory is not the same for every thread (a constant, `warpSize`, or a local only its declaration stores): the aggregated grid's blocks would each need their own".into());
    };
    if child.body.is_none() {
        return Err(format!("`{}` has no definition to clone", child.name));
    }
    if let Some(why) = facts.indirect_reason(module, child_id) {
        return Err(why);
    }
    Ok(shared_mem)
}

/// The dynamic shared memory of a launch in function `fid` when every thread asks for the
/// same (`uniform.rs`; 0 when it asks for none): every block of the aggregated grid gets the
/// largest of its child's sites.
fn site_shared_mem(module: &Module, fid: FuncId, s: &Site) -> Option<u64> {
    if let ExprKind::IntConst(n) = strip_casts(&s.launch.shared_mem).kind {
        return u32::try_from(n).ok().map(u64::from);
    }
    let body = module.function(fid).body.as_ref()?;
    let value = uniform::SingleStores::of(body).value(&s.launch.shared_mem, &module.target)?;
    u32::try_from(value).ok().map(u64::from)
}

fn strip_casts(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Cast(inner) => strip_casts(inner),
        _ => e,
    }
}

fn is_null_stream(e: &Expr) -> bool {
    matches!(strip_casts(e).kind, ExprKind::PointerConst(0))
}
