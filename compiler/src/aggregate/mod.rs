//! Launch aggregation (KLAP-style), a HIR-to-HIR phase between sema and code generation,
//! enabled by `-faggregate-launches=block`; code generation is unaware of it.
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
//! When `C` calls `__syncthreads` and the records' block sizes differ, or the allocation
//! fails, thread 0 instead launches every record as the original `C<<<g, b>>>(args)`.
//!
//! `C__agg` is a clone of `C`'s body: block `B` finds its record by binary search over the
//! starts, reads its grid, block and arguments into locals (the original parameters become
//! locals), and sees `blockIdx` = `B - start` unflattened against `g`, `threadIdx` = its linear
//! thread index unflattened against `b` (so warps hold the same threads), `blockDim` = `b`,
//! `gridDim` = `g`. Threads beyond the record's block size return at once. After every thread
//! has read its record (a barrier), the last block to get there frees the table.
//!
//! Memory visibility: a child sees what its launching thread wrote before the launch. The
//! recording thread's writes precede the end-of-block `__syncthreads()`, after which thread 0
//! launches: by the guide's rule (4.18.3.1, the `__syncthreads()` example) the child sees them.
//! Later writes of the recording thread may be seen as well, which the model allows.
//!
//! What changes observably, and only on failure or for order the model leaves open: a recorded
//! launch never fails at its site (`cudaGetLastError()` there says `cudaSuccess`; a failure of
//! the aggregated launch is thread 0's), and the child grids of one block, which the NULL
//! stream would have run one after another in an unspecified order, run as one grid.
//!
//! Everything else is left as it is, with a remark (`R0500`, printed with `-Rpass=aggregate`)
//! saying why. Warp granularity is accepted and reported as not implemented.

mod build;
#[cfg(test)]
mod tests;

use crate::diag::{Code, Diagnostic, Span};
use crate::hir::{
    AtomicOp, Axis, BinaryOp, Block, Builtin, Expr, ExprKind, Field, FuncId, Function, FunctionKind, Global,
    GlobalId, GlobalSpace, Init, Launch, Local, LocalId, Module, RuntimeFn, SpecialReg, Stmt, StructDef,
};
use crate::layout::param_layout;
use crate::target::AddressSize;
use crate::types::{round_up, IntKind, StructId, Type};
use build::B;
use std::collections::{BTreeMap, BTreeSet};

/// Which launches are aggregated: `-faggregate-launches=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Granularity {
    /// No aggregation (the default).
    #[default]
    Off,
    /// The launches of a warp (not implemented: every launch gets a remark).
    Warp,
    /// The launches of a thread block.
    Block,
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Granularity, String> {
        match s {
            "off" | "none" => Ok(Granularity::Off),
            "warp" => Ok(Granularity::Warp),
            "block" => Ok(Granularity::Block),
            other => Err(format!("unknown aggregation granularity `{other}`: use warp, block or off")),
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

// Record fields.
const F_START: u32 = 0;
const F_DONE: u32 = 1;
const F_GRID: u32 = 2;
const F_BLOCK: u32 = 3;
const F_ARG0: u32 = 4;

/// Rewrites `module` for `granularity` and returns the remarks: one for each launch left as it
/// is (and why). With [`Granularity::Off`] nothing changes and nothing is said.
pub fn aggregate(module: &mut Module, granularity: Granularity) -> Vec<Diagnostic> {
    if granularity == Granularity::Off {
        return Vec::new();
    }
    let facts = Facts::compute(module);
    let mut remarks = Vec::new();
    // Every launch site, per function, in source order.
    let mut plans: BTreeMap<FuncId, Vec<Site>> = BTreeMap::new();
    for (i, f) in module.functions.iter().enumerate() {
        let Some(body) = &f.body else { continue };
        let mut sites = Vec::new();
        collect_sites(body, false, &mut sites);
        if !sites.is_empty() {
            plans.insert(FuncId(i as u32), sites);
        }
    }
    if granularity == Granularity::Warp {
        for sites in plans.values() {
            for s in sites {
                remarks.push(remark(module, s, "warp-granularity aggregation is not implemented; use -faggregate-launches=block"));
            }
        }
        return remarks;
    }

    // Decide site by site, then kernel by kernel.
    let mut rewrites: BTreeMap<FuncId, Vec<(Site, u64)>> = BTreeMap::new();
    for (&fid, sites) in &plans {
        let f = module.function(fid);
        let mut eligible = Vec::new();
        let mut direct_null: Vec<&Site> = Vec::new();
        for s in sites {
            let why = if f.kind != FunctionKind::Kernel {
                Some(format!("the launch is in the device function `{}`; only launches in kernels are aggregated", f.name))
            } else {
                site_reason(module, &facts, fid, s)
            };
            match why {
                Some(why) => {
                    if is_null_stream(&s.launch.stream) {
                        direct_null.push(s);
                    }
                    remarks.push(remark(module, s, &why));
                }
                None => eligible.push(s),
            }
        }
        if eligible.is_empty() {
            continue;
        }
        let k = &facts.of[fid.0 as usize];
        let kernel_reason = if k.early_return && k.syncs {
            Some(format!("`{}` returns early and calls `__syncthreads`: its threads cannot all reach the block-wide launch point", f.name))
        } else if let Some(other) = direct_null.first() {
            Some(format!(
                "`{}` also launches `{}` into the NULL stream without aggregation; delaying this launch would reorder them",
                f.name,
                module.function(other.launch.kernel).name
            ))
        } else if k.launches_in_callees {
            Some(format!("`{}` calls a device function that launches kernels; delaying this launch could reorder them", f.name))
        } else if k.events {
            Some(format!("`{}` records or waits on events; delaying this launch would move it past them", f.name))
        } else {
            None
        };
        if let Some(why) = kernel_reason {
            remarks.extend(eligible.iter().map(|s| remark(module, s, &why)));
            continue;
        }
        let bytes: u64 = eligible.iter().map(|s| record_size(module, s.launch.kernel)).sum();
        let cap = RECORD_CAP.min(SHARED_BUDGET / bytes.max(1));
        if cap < MIN_CAP {
            let why = format!("the launch records of `{}` need {bytes} bytes each and do not fit in shared memory", f.name);
            remarks.extend(eligible.iter().map(|s| remark(module, s, &why)));
            continue;
        }
        rewrites.insert(fid, eligible.into_iter().map(|s| (s.clone(), cap)).collect());
    }

    // Clone the children first, from the unmodified module.
    let children: BTreeSet<FuncId> = rewrites.values().flatten().map(|(s, _)| s.launch.kernel).collect();
    let mut aggs: BTreeMap<FuncId, AggChild> = BTreeMap::new();
    let originals = module.functions.clone();
    for c in children {
        let record = make_record(module, c);
        let child_syncs = facts.of[c.0 as usize].syncs;
        let agg = build_agg_kernel(module, &originals[c.0 as usize], record);
        let id = FuncId(module.functions.len() as u32);
        module.functions.push(agg);
        aggs.insert(c, AggChild { agg: id, record, child_syncs });
    }
    for (k, sites) in rewrites {
        rewrite_kernel(module, k, &sites, &aggs);
    }
    remarks
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
}

fn remark(module: &Module, s: &Site, why: &str) -> Diagnostic {
    let child = &module.function(s.launch.kernel).name;
    Diagnostic::new(Code::AggregationRemark, s.launch.span, format!("launch of `{child}` not aggregated"))
        .with_primary_message(why.to_string())
}

/// Why a launch in a kernel is left alone, if it is.
fn site_reason(module: &Module, facts: &Facts, kernel: FuncId, s: &Site) -> Option<String> {
    let child = module.function(s.launch.kernel);
    if !s.statement {
        return Some("the launch is part of a larger expression".into());
    }
    if s.in_loop {
        return Some("the launch is inside a loop: a thread may launch more than once".into());
    }
    match strip_casts(&s.launch.stream).kind {
        ExprKind::PointerConst(0) => {}
        ExprKind::PointerConst(3) => return Some("tail launches (cudaStreamTailLaunch) are not aggregated".into()),
        ExprKind::PointerConst(4) => return Some("fire-and-forget launches (cudaStreamFireAndForget) are not aggregated".into()),
        _ => return Some("only launches into the NULL stream are aggregated".into()),
    }
    if !matches!(strip_casts(&s.launch.shared_mem).kind, ExprKind::IntConst(0)) {
        return Some("the launch asks for dynamic shared memory".into());
    }
    if s.launch.kernel == kernel {
        return Some(format!("`{}` launches itself: its aggregated clone would have to be aggregated too", child.name));
    }
    if child.body.is_none() {
        return Some(format!("`{}` has no definition to clone", child.name));
    }
    if facts.callees_read_ids(s.launch.kernel) {
        return Some(format!(
            "`{}` calls a device function that reads threadIdx, blockIdx, blockDim or gridDim, which the aggregated clone cannot remap",
            child.name
        ));
    }
    None
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

// ---------------------------------------------------------------- walking the HIR

fn children(e: &Expr) -> Vec<&Expr> {
    use ExprKind::*;
    match &e.kind {
        IntConst(_) | FloatConst(_) | PointerConst(_) | Local(_) | Global(_) => vec![],
        Deref(a) | Member { base: a, .. } | AddrOf(a) | Decay(a) | Cast(a) | Unary { operand: a, .. } => vec![a],
        IncDec { place, .. } => vec![place],
        Binary { lhs, rhs, .. } | LogicalAnd { lhs, rhs } | LogicalOr { lhs, rhs } | Comma { lhs, rhs } => vec![lhs, rhs],
        Assign { place, value } | CompoundAssign { place, value, .. } => vec![place, value],
        Conditional { cond, then, otherwise } => vec![cond, then, otherwise],
        Call { args, .. } | Builtin { args, .. } => args.iter().collect(),
        Dim3 { x, y, z } => vec![x, y, z],
        Launch(l) => {
            let mut v = vec![&l.grid, &l.block, &l.shared_mem, &l.stream];
            v.extend(l.args.iter());
            v
        }
    }
}

fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    use ExprKind::*;
    match &mut e.kind {
        IntConst(_) | FloatConst(_) | PointerConst(_) | Local(_) | Global(_) => vec![],
        Deref(a) | Member { base: a, .. } | AddrOf(a) | Decay(a) | Cast(a) | Unary { operand: a, .. } => vec![a],
        IncDec { place, .. } => vec![place],
        Binary { lhs, rhs, .. } | LogicalAnd { lhs, rhs } | LogicalOr { lhs, rhs } | Comma { lhs, rhs } => vec![lhs, rhs],
        Assign { place, value } | CompoundAssign { place, value, .. } => vec![place, value],
        Conditional { cond, then, otherwise } => vec![cond, then, otherwise],
        Call { args, .. } | Builtin { args, .. } => args.iter_mut().collect(),
        Dim3 { x, y, z } => vec![x, y, z],
        Launch(l) => {
            let crate::hir::Launch { grid, block, shared_mem, stream, args, .. } = &mut **l;
            let mut v = vec![grid, block, shared_mem, stream];
            v.extend(args.iter_mut());
            v
        }
    }
}

fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    for c in children(e) {
        visit_expr(c, f);
    }
}

fn init_exprs(init: &Init, out: &mut Vec<Expr>) {
    match init {
        Init::Expr(e) => out.push(e.clone()),
        Init::List(items) => items.iter().for_each(|i| init_exprs(i, out)),
    }
}

/// Every expression of a block (statement roots, pre-order within each).
fn visit_block(b: &Block, f: &mut dyn FnMut(&Expr)) {
    for s in &b.stmts {
        match s {
            Stmt::Decl { init: Some(init), .. } => {
                let mut v = Vec::new();
                init_exprs(init, &mut v);
                v.iter().for_each(|e| visit_expr(e, f));
            }
            Stmt::Decl { init: None, .. } | Stmt::Break | Stmt::Continue | Stmt::Return(None) => {}
            Stmt::Expr(e) | Stmt::Return(Some(e)) => visit_expr(e, f),
            Stmt::If { cond, then, otherwise } => {
                visit_expr(cond, f);
                visit_block(then, f);
                if let Some(o) = otherwise {
                    visit_block(o, f);
                }
            }
            Stmt::Loop { init, cond, step, body, .. } => {
                visit_block(init, f);
                if let Some(c) = cond {
                    visit_expr(c, f);
                }
                if let Some(s) = step {
                    visit_expr(s, f);
                }
                visit_block(body, f);
            }
            Stmt::Block(b) => visit_block(b, f),
        }
    }
}

fn map_expr(e: &mut Expr, f: &dyn Fn(&Expr) -> Option<Expr>) {
    if let Some(new) = f(e) {
        *e = new;
        return;
    }
    for c in children_mut(e) {
        map_expr(c, f);
    }
}

fn map_init(init: &mut Init, f: &dyn Fn(&Expr) -> Option<Expr>) {
    match init {
        Init::Expr(e) => map_expr(e, f),
        Init::List(items) => items.iter_mut().for_each(|i| map_init(i, f)),
    }
}

fn map_block(b: &mut Block, f: &dyn Fn(&Expr) -> Option<Expr>) {
    for s in &mut b.stmts {
        match s {
            Stmt::Decl { init: Some(init), .. } => map_init(init, f),
            Stmt::Decl { init: None, .. } | Stmt::Break | Stmt::Continue | Stmt::Return(None) => {}
            Stmt::Expr(e) | Stmt::Return(Some(e)) => map_expr(e, f),
            Stmt::If { cond, then, otherwise } => {
                map_expr(cond, f);
                map_block(then, f);
                if let Some(o) = otherwise {
                    map_block(o, f);
                }
            }
            Stmt::Loop { init, cond, step, body, .. } => {
                map_block(init, f);
                if let Some(c) = cond {
                    map_expr(c, f);
                }
                if let Some(s) = step {
                    map_expr(s, f);
                }
                map_block(body, f);
            }
            Stmt::Block(b) => map_block(b, f),
        }
    }
}

fn collect_sites(b: &Block, in_loop: bool, out: &mut Vec<Site>) {
    let nested = |e: &Expr, out: &mut Vec<Site>| {
        visit_expr(e, &mut |x| {
            if let ExprKind::Launch(l) = &x.kind {
                out.push(Site { launch: (**l).clone(), in_loop, statement: false });
            }
        })
    };
    for s in &b.stmts {
        match s {
            Stmt::Expr(Expr { kind: ExprKind::Launch(l), .. }) => {
                out.push(Site { launch: (**l).clone(), in_loop, statement: true });
            }
            Stmt::Expr(e) | Stmt::Return(Some(e)) => nested(e, out),
            Stmt::Decl { init: Some(init), .. } => {
                let mut v = Vec::new();
                init_exprs(init, &mut v);
                v.iter().for_each(|e| nested(e, out));
            }
            Stmt::Decl { init: None, .. } | Stmt::Break | Stmt::Continue | Stmt::Return(None) => {}
            Stmt::If { cond, then, otherwise } => {
                nested(cond, out);
                collect_sites(then, in_loop, out);
                if let Some(o) = otherwise {
                    collect_sites(o, in_loop, out);
                }
            }
            Stmt::Loop { init, cond, step, body, .. } => {
                collect_sites(init, true, out);
                if let Some(c) = cond {
                    visit_expr(c, &mut |x| {
                        if let ExprKind::Launch(l) = &x.kind {
                            out.push(Site { launch: (**l).clone(), in_loop: true, statement: false });
                        }
                    });
                }
                if let Some(st) = step {
                    visit_expr(st, &mut |x| {
                        if let ExprKind::Launch(l) = &x.kind {
                            out.push(Site { launch: (**l).clone(), in_loop: true, statement: false });
                        }
                    });
                }
                collect_sites(body, true, out);
            }
            Stmt::Block(inner) => collect_sites(inner, in_loop, out),
        }
    }
}

/// Whether a block holds a `return` other than as its very last statement.
fn has_early_return(body: &Block) -> bool {
    fn any_return(b: &Block) -> bool {
        b.stmts.iter().any(|s| match s {
            Stmt::Return(_) => true,
            Stmt::If { then, otherwise, .. } => any_return(then) || otherwise.as_ref().is_some_and(any_return),
            Stmt::Loop { init, body, .. } => any_return(init) || any_return(body),
            Stmt::Block(b) => any_return(b),
            _ => false,
        })
    }
    match body.stmts.split_last() {
        Some((Stmt::Return(_), rest)) => any_return(&Block { stmts: rest.to_vec() }),
        _ => any_return(body),
    }
}

/// What each function does, itself or through the functions it calls.
#[derive(Clone, Debug, Default)]
struct FnFacts {
    /// Calls `__syncthreads`.
    syncs: bool,
    /// Reads threadIdx, blockIdx, blockDim or gridDim (warpSize is the same everywhere).
    reads_ids: bool,
    /// Launches kernels (the function itself).
    launches: bool,
    /// A function it calls launches kernels.
    launches_in_callees: bool,
    /// Records or waits on events.
    events: bool,
    /// Returns before its last statement.
    early_return: bool,
    calls: BTreeSet<FuncId>,
}

struct Facts {
    of: Vec<FnFacts>,
}

impl Facts {
    fn compute(module: &Module) -> Facts {
        let mut of: Vec<FnFacts> = module
            .functions
            .iter()
            .map(|f| {
                let mut facts = FnFacts::default();
                if let Some(body) = &f.body {
                    facts.early_return = has_early_return(body);
                    visit_block(body, &mut |e| match &e.kind {
                        ExprKind::Builtin { builtin: Builtin::SyncThreads, .. } => facts.syncs = true,
                        ExprKind::Builtin { builtin: Builtin::SpecialReg(r), .. } if *r != SpecialReg::WarpSize => {
                            facts.reads_ids = true
                        }
                        ExprKind::Builtin { builtin: Builtin::Runtime(RuntimeFn::EventRecord | RuntimeFn::StreamWaitEvent), .. } => {
                            facts.events = true
                        }
                        ExprKind::Launch(_) => facts.launches = true,
                        ExprKind::Call { func, .. } => {
                            facts.calls.insert(*func);
                        }
                        _ => {}
                    });
                }
                facts
            })
            .collect();
        // Propagate through calls to a fixed point (recursion allowed).
        loop {
            let mut changed = false;
            for i in 0..of.len() {
                let calls: Vec<FuncId> = of[i].calls.iter().copied().collect();
                for c in calls {
                    let callee = of[c.0 as usize].clone();
                    let me = &mut of[i];
                    let before = (me.syncs, me.reads_ids, me.launches_in_callees, me.events);
                    me.syncs |= callee.syncs;
                    me.reads_ids |= callee.reads_ids;
                    me.launches_in_callees |= callee.launches || callee.launches_in_callees;
                    me.events |= callee.events;
                    changed |= before != (me.syncs, me.reads_ids, me.launches_in_callees, me.events);
                }
            }
            if !changed {
                break;
            }
        }
        Facts { of }
    }

    fn callees_read_ids(&self, f: FuncId) -> bool {
        self.of[f.0 as usize].calls.iter().any(|c| self.of[c.0 as usize].reads_ids)
    }
}

// ---------------------------------------------------------------- building

fn builder(module: &Module, span: Span) -> B {
    let ptr_int = if module.target.address_size == AddressSize::Bits64 { IntKind::Long } else { IntKind::Int };
    B { span, ptr_int }
}

fn record_size(module: &Module, child: FuncId) -> u64 {
    let mut fields = vec![Type::UINT, Type::UINT, Type::Dim3, Type::Dim3];
    fields.extend(module.function(child).param_types().cloned());
    let (mut size, mut align) = (0, 1);
    for ty in &fields {
        let (s, a) = module.size_align(ty);
        size = round_up(size, a) + s;
        align = align.max(a);
    }
    round_up(size, align)
}

/// The record struct of a child: start, done, grid, block, then the child's parameters.
fn make_record(module: &mut Module, child: FuncId) -> StructId {
    let f = module.function(child);
    let mut fields = vec![
        ("start".to_string(), Type::UINT),
        ("done".to_string(), Type::UINT),
        ("grid".to_string(), Type::Dim3),
        ("block".to_string(), Type::Dim3),
    ];
    for (i, ty) in f.param_types().enumerate() {
        fields.push((format!("arg{i}"), ty.clone()));
    }
    let name = format!("{}$agg_record", f.name);
    let span = f.span;
    let (mut size, mut align) = (0, 1);
    let mut out = Vec::new();
    for (name, ty) in fields {
        let (s, a) = module.size_align(&ty);
        let offset = round_up(size, a);
        size = offset + s;
        align = align.max(a);
        out.push(Field { name, ty, offset });
    }
    let id = StructId(module.structs.len() as u32);
    module.structs.push(StructDef { name, fields: out, size: round_up(size, align), align, span });
    id
}

fn new_local(f: &mut Function, name: &str, ty: Type, span: Span) -> LocalId {
    let id = LocalId(f.locals.len() as u32);
    f.locals.push(Local { name: name.to_string(), ty, span });
    id
}

fn new_shared(module: &mut Module, name: String, ty: Type, span: Span) -> GlobalId {
    let id = GlobalId(module.globals.len() as u32);
    module.globals.push(Global { name, ty, space: GlobalSpace::Shared, init: None, span });
    id
}

fn unique_function_name(module: &Module, base: &str) -> String {
    let taken = |n: &str| module.functions.iter().any(|f| f.name == n) || module.globals.iter().any(|g| g.name == n);
    let mut name = base.to_string();
    let mut i = 1;
    while taken(&name) {
        name = format!("{base}{i}");
        i += 1;
    }
    name
}

/// `C__agg(record *records, unsigned count)`: the clone of `C` run by every block of the
/// aggregated grid.
fn build_agg_kernel(module: &Module, child: &Function, record: StructId) -> Function {
    let b = builder(module, child.span);
    let rec_ty = Type::Struct(record);
    let rec_ptr = Type::pointer_to(rec_ty.clone());
    let mut f = Function {
        name: unique_function_name(module, &format!("{}__agg", child.name)),
        kind: FunctionKind::Kernel,
        return_type: Type::Void,
        params: Vec::new(),
        locals: child.locals.clone(),
        body: None,
        span: child.span,
    };
    let span = child.span;
    let recs = new_local(&mut f, "agg$records", rec_ptr.clone(), span);
    let count = new_local(&mut f, "agg$count", Type::UINT, span);
    f.params = vec![recs, count];
    let u = Type::UINT;
    let [lo, hi, mid, rel, bix, biy, biz, nt, t, tix, tiy, tiz] =
        ["lo", "hi", "mid", "rel", "bix", "biy", "biz", "nt", "t", "tix", "tiy", "tiz"].map(|n| new_local(&mut f, &format!("agg${n}"), u.clone(), span));
    let rp = new_local(&mut f, "agg$record", rec_ptr.clone(), span);
    let grid = new_local(&mut f, "agg$grid", Type::Dim3, span);
    let block = new_local(&mut f, "agg$block", Type::Dim3, span);

    let l = |id: LocalId| b.local(id, &f.locals[id.0 as usize].ty.clone());
    let rec_field = |p: Expr, field: u32| {
        let ty = module.struct_def(record).fields.get(field as usize).map(|f| f.ty.clone());
        // The record struct is not in `module` yet when this runs for its own fields; compute
        // the type from the child instead.
        let ty = ty.unwrap_or(Type::UINT);
        b.member(b.deref(p), field, &ty)
    };
    let bidx = b.special(SpecialReg::BlockIdx(Axis::X));
    let mut body = vec![
        b.decl(lo, b.uint(0)),
        b.decl(hi, l(count)),
        Stmt::Loop {
            init: Block::default(),
            cond: Some(b.cmp(BinaryOp::Gt, b.arith(BinaryOp::Sub, l(hi), l(lo)), b.uint(1))),
            step: None,
            body: Block {
                stmts: vec![
                    b.decl(mid, b.arith(BinaryOp::Div, b.arith(BinaryOp::Add, l(lo), l(hi)), b.uint(2))),
                    b.if_else(
                        b.cmp(BinaryOp::Le, rec_field(b.ptr_add(l(recs), l(mid)), F_START), bidx.clone()),
                        vec![b.assign(l(lo), l(mid))],
                        vec![b.assign(l(hi), l(mid))],
                    ),
                ],
            },
            check_cond_first: true,
        },
        b.decl(rp, b.ptr_add(l(recs), l(lo))),
        b.decl(grid, b.member(b.deref(l(rp)), F_GRID, &Type::Dim3)),
        b.decl(block, b.member(b.deref(l(rp)), F_BLOCK, &Type::Dim3)),
        b.decl(rel, b.arith(BinaryOp::Sub, bidx, rec_field(l(rp), F_START))),
        b.decl(bix, b.arith(BinaryOp::Rem, l(rel), b.axis(l(grid), Axis::X))),
        b.decl(biy, b.arith(BinaryOp::Rem, b.arith(BinaryOp::Div, l(rel), b.axis(l(grid), Axis::X)), b.axis(l(grid), Axis::Y))),
        b.decl(biz, b.arith(BinaryOp::Div, l(rel), b.arith(BinaryOp::Mul, b.axis(l(grid), Axis::X), b.axis(l(grid), Axis::Y)))),
        b.decl(nt, b.volume(&l(block), &Type::UINT)),
        b.decl(t, b.special(SpecialReg::ThreadIdx(Axis::X))),
        b.decl(tix, b.arith(BinaryOp::Rem, l(t), b.axis(l(block), Axis::X))),
        b.decl(tiy, b.arith(BinaryOp::Rem, b.arith(BinaryOp::Div, l(t), b.axis(l(block), Axis::X)), b.axis(l(block), Axis::Y))),
        b.decl(tiz, b.arith(BinaryOp::Div, l(t), b.arith(BinaryOp::Mul, b.axis(l(block), Axis::X), b.axis(l(block), Axis::Y)))),
    ];
    for (i, p) in child.params.iter().enumerate() {
        let ty = child.local(*p).ty.clone();
        body.push(b.decl(*p, b.member(b.deref(l(rp)), F_ARG0 + i as u32, &ty)));
    }
    // Every thread has read its record: the last block to get here frees the table.
    body.push(b.sync());
    let done = b.addr_of(b.member(b.deref(l(recs)), F_DONE, &Type::UINT));
    let last = b.arith(BinaryOp::Sub, b.special(SpecialReg::GridDim(Axis::X)), b.uint(1));
    let free = Stmt::Expr(b.builtin(
        Builtin::Runtime(RuntimeFn::Free),
        vec![b.cast(l(recs), &Type::pointer_to(Type::Void))],
        &Type::CudaError,
    ));
    body.push(b.if_(
        b.cmp(BinaryOp::Eq, b.special(SpecialReg::ThreadIdx(Axis::X)), b.uint(0)),
        vec![b.if_(b.cmp(BinaryOp::Eq, b.atomic(AtomicOp::Add, done, b.uint(1)), last), vec![free])],
    ));
    body.push(b.if_(b.cmp(BinaryOp::Ge, l(t), l(nt)), vec![Stmt::Return(None)]));

    let mut original = child.body.clone().unwrap_or_default();
    let (fl, bl) = (&f.locals, b);
    let subst = |e: &Expr| -> Option<Expr> {
        let ExprKind::Builtin { builtin: Builtin::SpecialReg(reg), .. } = &e.kind else { return None };
        let local = |id: LocalId| Some(Expr { span: e.span, ..bl.local(id, &fl[id.0 as usize].ty) });
        let dim = |id: LocalId, a: Axis| Some(Expr { span: e.span, ..bl.axis(bl.local(id, &Type::Dim3), a) });
        match *reg {
            SpecialReg::ThreadIdx(Axis::X) => local(tix),
            SpecialReg::ThreadIdx(Axis::Y) => local(tiy),
            SpecialReg::ThreadIdx(Axis::Z) => local(tiz),
            SpecialReg::BlockIdx(Axis::X) => local(bix),
            SpecialReg::BlockIdx(Axis::Y) => local(biy),
            SpecialReg::BlockIdx(Axis::Z) => local(biz),
            SpecialReg::BlockDim(a) => dim(block, a),
            SpecialReg::GridDim(a) => dim(grid, a),
            SpecialReg::WarpSize => None,
        }
    };
    map_block(&mut original, &subst);
    body.push(Stmt::Block(original));
    f.body = Some(Block { stmts: body });
    f
}

/// The shared state of one aggregated launch site in a kernel.
struct SiteState {
    child: FuncId,
    agg: FuncId,
    record: StructId,
    child_syncs: bool,
    cap: u64,
    counter: GlobalId,
    min_threads: GlobalId,
    max_threads: GlobalId,
    table: GlobalId,
    buffer: GlobalId,
    span: Span,
}

fn rewrite_kernel(module: &mut Module, kid: FuncId, sites: &[(Site, u64)], aggs: &BTreeMap<FuncId, AggChild>) {
    let kname = module.function(kid).name.clone();
    let mut states = Vec::new();
    for (n, (s, cap)) in sites.iter().enumerate() {
        let a = &aggs[&s.launch.kernel];
        let rec = Type::Struct(a.record);
        let sp = s.launch.span;
        states.push(SiteState {
            child: s.launch.kernel,
            agg: a.agg,
            record: a.record,
            child_syncs: a.child_syncs,
            cap: *cap,
            counter: new_shared(module, format!("{kname}$agg{n}$counter"), Type::ULONGLONG, sp),
            min_threads: new_shared(module, format!("{kname}$agg{n}$min_threads"), Type::UINT, sp),
            max_threads: new_shared(module, format!("{kname}$agg{n}$max_threads"), Type::UINT, sp),
            table: new_shared(module, format!("{kname}$agg{n}$table"), Type::Array { elem: Box::new(rec.clone()), len: *cap }, sp),
            buffer: new_shared(module, format!("{kname}$agg{n}$buffer"), Type::pointer_to(rec), sp),
            span: sp,
        });
    }
    let mut f = module.functions[kid.0 as usize].clone();
    let span = f.span;
    let b = builder(module, span);
    let u = Type::UINT;
    let tid = new_local(&mut f, "agg$tid", u.clone(), span);
    let nthreads = new_local(&mut f, "agg$nthreads", u.clone(), span);
    let returned = new_local(&mut f, "agg$returned", Type::INT, span);

    let mut rw = Rewriter { module, f: &mut f, states: &states, returned, by_span: BTreeMap::new() };
    for (i, (s, _)) in sites.iter().enumerate() {
        rw.by_span.insert((s.launch.span.start, s.launch.span.end), i);
    }
    let mut original = rw.f.body.take().unwrap_or_default();
    rw.rewrite_block(&mut original, 0);

    let m: &Module = rw.module;
    let g = |id: GlobalId| b.global(id, &m.global(id).ty);
    let sr = |r| b.special(r);
    use Axis::{X, Y, Z};
    use SpecialReg::{BlockDim, ThreadIdx};
    let mut stmts = vec![
        b.decl(
            tid,
            b.arith(
                BinaryOp::Add,
                sr(ThreadIdx(X)),
                b.arith(
                    BinaryOp::Mul,
                    sr(BlockDim(X)),
                    b.arith(BinaryOp::Add, sr(ThreadIdx(Y)), b.arith(BinaryOp::Mul, sr(BlockDim(Y)), sr(ThreadIdx(Z)))),
                ),
            ),
        ),
        b.decl(nthreads, b.arith(BinaryOp::Mul, b.arith(BinaryOp::Mul, sr(BlockDim(X)), sr(BlockDim(Y))), sr(BlockDim(Z)))),
    ];
    let mut init = Vec::new();
    for s in &states {
        init.push(b.assign(g(s.counter), b.ull(0)));
        init.push(b.assign(g(s.min_threads), b.uint(u32::MAX as u64)));
        init.push(b.assign(g(s.max_threads), b.uint(0)));
    }
    let thread0 = || b.cmp(BinaryOp::Eq, b.local(tid, &Type::UINT), b.uint(0));
    stmts.push(b.if_(thread0(), init));
    stmts.push(b.sync());
    stmts.push(b.decl(returned, b.int(0)));
    stmts.push(Stmt::Loop { init: Block::default(), cond: Some(b.int(0)), step: None, body: original, check_cond_first: false });
    stmts.push(b.sync());

    // The number of records of a site: min(counter >> 32, cap).
    let count_of = |s: &SiteState| {
        let hi = b.cast(b.arith(BinaryOp::Shr, g(s.counter), b.ull(32)), &Type::UINT);
        b.builtin(Builtin::Min, vec![hi, b.uint(s.cap)], &Type::UINT)
    };
    let null_rec = |s: &SiteState| b.cast(b.e(ExprKind::PointerConst(0), Type::pointer_to(Type::Void)), &m.global(s.buffer).ty);
    let mut extra_locals: Vec<(String, Type)> = Vec::new();
    let mut fresh = |name: &str, ty: Type| {
        extra_locals.push((name.to_string(), ty));
        LocalId((f.locals.len() + extra_locals.len() - 1) as u32)
    };

    // Thread 0 allocates the global tables.
    let mut alloc = Vec::new();
    for s in &states {
        let sb = builder(m, s.span);
        let count = fresh("agg$count", u.clone());
        let p = fresh("agg$allocation", Type::pointer_to(Type::Void));
        let rec_size = m.size_align(&Type::Struct(s.record)).0;
        let bytes = sb.arith(BinaryOp::Mul, sb.cast(sb.local(count, &u), &Type::size_t()), sb.e(ExprKind::IntConst(rec_size as i64), Type::size_t()));
        let malloc = sb.builtin(
            Builtin::Runtime(RuntimeFn::Malloc),
            vec![sb.addr_of(sb.local(p, &Type::pointer_to(Type::Void))), bytes],
            &Type::CudaError,
        );
        let mut wanted = sb.cmp(BinaryOp::Gt, sb.local(count, &u), sb.uint(0));
        if s.child_syncs {
            // the clone's barriers need every thread: equal block sizes only
            wanted = sb.and(wanted, sb.cmp(BinaryOp::Eq, g(s.min_threads), g(s.max_threads)));
        }
        alloc.push(sb.decl(count, count_of(s)));
        alloc.push(sb.assign(g(s.buffer), null_rec(s)));
        alloc.push(sb.if_(
            wanted,
            vec![
                sb.decl(p, sb.e(ExprKind::PointerConst(0), Type::pointer_to(Type::Void))),
                sb.if_(
                    sb.cmp(BinaryOp::Eq, sb.cast(malloc, &Type::INT), sb.int(0)),
                    vec![sb.assign(g(s.buffer), sb.cast(sb.local(p, &Type::pointer_to(Type::Void)), &m.global(s.buffer).ty))],
                ),
            ],
        ));
    }
    stmts.push(b.if_(thread0(), alloc));
    stmts.push(b.sync());

    // The block copies the tables.
    for s in &states {
        let sb = builder(m, s.span);
        let count = fresh("agg$count", u.clone());
        let i = fresh("agg$i", u.clone());
        let li = || sb.local(i, &u);
        let copy = sb.assign(sb.index(g(s.buffer), li()), sb.index(sb.decay(g(s.table)), li()));
        stmts.push(Stmt::Block(Block {
            stmts: vec![
                sb.decl(count, count_of(s)),
                sb.if_(
                    sb.cmp(BinaryOp::Ne, g(s.buffer), null_rec(s)),
                    vec![sb.for_(
                        vec![sb.decl(i, sb.local(tid, &u))],
                        sb.cmp(BinaryOp::Lt, li(), sb.local(count, &u)),
                        sb.e(ExprKind::CompoundAssign { op: BinaryOp::Add, place: Box::new(li()), value: Box::new(sb.local(nthreads, &u)), op_type: u.clone() }, u.clone()),
                        vec![copy],
                    )],
                ),
            ],
        }));
    }
    stmts.push(b.sync());

    // Thread 0 launches.
    let mut launch = Vec::new();
    for s in &states {
        let sb = builder(m, s.span);
        let rec = Type::Struct(s.record);
        let rec_ptr = Type::pointer_to(rec.clone());
        let count = fresh("agg$count", u.clone());
        let last = fresh("agg$last", rec_ptr.clone());
        let total = fresh("agg$total", u.clone());
        let i = fresh("agg$i", u.clone());
        let lc = || sb.local(count, &u);
        let field = |p: Expr, idx: u32, ty: &Type| sb.member(sb.deref(p), idx, ty);
        let table = || sb.decay(g(s.table));
        let agg_args = vec![g(s.buffer), lc()];
        let agg_layout = param_layout([rec_ptr.clone(), u.clone()].iter(), m, &m.target);
        let agg_launch = Launch {
            kernel: s.agg,
            grid: sb.dim3(sb.local(total, &u), sb.uint(1), sb.uint(1)),
            block: sb.dim3(g(s.max_threads), sb.uint(1), sb.uint(1)),
            shared_mem: sb.uint(0),
            stream: sb.e(ExprKind::PointerConst(0), Type::Stream),
            args: agg_args,
            layout: agg_layout,
            span: s.span,
        };
        // Fallback: each record launched as it was.
        let child = m.function(s.child);
        let rec_i = || sb.ptr_add(table(), sb.local(i, &u));
        let child_args: Vec<Expr> =
            child.param_types().enumerate().map(|(k, ty)| field(rec_i(), F_ARG0 + k as u32, ty)).collect();
        let child_layout = param_layout(child.param_types(), m, &m.target);
        let direct = Launch {
            kernel: s.child,
            grid: field(rec_i(), F_GRID, &Type::Dim3),
            block: field(rec_i(), F_BLOCK, &Type::Dim3),
            shared_mem: sb.uint(0),
            stream: sb.e(ExprKind::PointerConst(0), Type::Stream),
            args: child_args,
            layout: child_layout,
            span: s.span,
        };
        let li = || sb.local(i, &u);
        launch.push(sb.decl(count, count_of(s)));
        launch.push(sb.if_(
            sb.cmp(BinaryOp::Gt, lc(), sb.uint(0)),
            vec![sb.if_else(
                sb.cmp(BinaryOp::Ne, g(s.buffer), null_rec(s)),
                vec![
                    sb.decl(last, sb.ptr_add(table(), sb.arith(BinaryOp::Sub, lc(), sb.uint(1)))),
                    sb.decl(
                        total,
                        sb.arith(
                            BinaryOp::Add,
                            field(sb.local(last, &rec_ptr), F_START, &u),
                            sb.volume(&field(sb.local(last, &rec_ptr), F_GRID, &Type::Dim3), &u),
                        ),
                    ),
                    Stmt::Expr(sb.e(ExprKind::Launch(Box::new(agg_launch)), Type::Void)),
                ],
                vec![sb.for_(
                    vec![sb.decl(i, sb.uint(0))],
                    sb.cmp(BinaryOp::Lt, li(), lc()),
                    sb.e(ExprKind::IncDec { place: Box::new(li()), increment: true, prefix: true }, u.clone()),
                    vec![Stmt::Expr(sb.e(ExprKind::Launch(Box::new(direct)), Type::Void))],
                )],
            )],
        ));
    }
    stmts.push(b.if_(thread0(), launch));

    for (name, ty) in extra_locals {
        new_local(&mut f, &name, ty, span);
    }
    f.body = Some(Block { stmts });
    module.functions[kid.0 as usize] = f;
}

struct Rewriter<'a, 'b> {
    module: &'a Module,
    f: &'b mut Function,
    states: &'a [SiteState],
    returned: LocalId,
    by_span: BTreeMap<(u32, u32), usize>,
}

impl Rewriter<'_, '_> {
    /// Rewrites the aggregated launch statements into records and the `return`s into jumps to
    /// the end of the kernel; `depth` counts the loops around `block` (the kernel's own
    /// `do { } while (0)` not included). Returns whether a `return` inside a loop was rewritten
    /// (its loop must then be left with the flag).
    fn rewrite_block(&mut self, block: &mut Block, depth: usize) -> bool {
        let mut out = Vec::with_capacity(block.stmts.len());
        let mut any = false;
        for stmt in std::mem::take(&mut block.stmts) {
            match stmt {
                Stmt::Return(_) => {
                    // kernels return void
                    if depth > 0 {
                        let b = builder(self.module, Span::default());
                        out.push(b.assign(b.local(self.returned, &Type::INT), b.int(1)));
                        any = true;
                    }
                    out.push(Stmt::Break);
                }
                Stmt::Expr(Expr { kind: ExprKind::Launch(l), ty, span })
                    if self.by_span.contains_key(&(l.span.start, l.span.end)) =>
                {
                    let _ = (ty, span);
                    let n = self.by_span[&(l.span.start, l.span.end)];
                    out.push(self.record(*l, n));
                }
                Stmt::If { cond, mut then, otherwise } => {
                    any |= self.rewrite_block(&mut then, depth);
                    let otherwise = otherwise.map(|mut o| {
                        any |= self.rewrite_block(&mut o, depth);
                        o
                    });
                    out.push(Stmt::If { cond, then, otherwise });
                }
                Stmt::Block(mut inner) => {
                    any |= self.rewrite_block(&mut inner, depth);
                    out.push(Stmt::Block(inner));
                }
                Stmt::Loop { mut init, cond, step, mut body, check_cond_first } => {
                    let inner = self.rewrite_block(&mut init, depth) | self.rewrite_block(&mut body, depth + 1);
                    out.push(Stmt::Loop { init, cond, step, body, check_cond_first });
                    if inner {
                        let b = builder(self.module, Span::default());
                        out.push(b.if_(b.local(self.returned, &Type::INT), vec![Stmt::Break]));
                        any |= depth > 0;
                    }
                }
                other => out.push(other),
            }
        }
        block.stmts = out;
        any
    }

    /// The record that replaces `C<<<g, b>>>(args)` at site `n`.
    fn record(&mut self, launch: Launch, n: usize) -> Stmt {
        let s = &self.states[n];
        let m = self.module;
        let b = builder(m, launch.span);
        let u = Type::UINT;
        let ull = Type::ULONGLONG;
        let g = |id: GlobalId| b.global(id, &m.global(id).ty);
        let span = launch.span;
        let grid = new_local(self.f, "agg$grid", Type::Dim3, span);
        let block = new_local(self.f, "agg$block", Type::Dim3, span);
        let param_types: Vec<Type> = m.function(s.child).param_types().cloned().collect();
        let args: Vec<LocalId> =
            param_types.iter().enumerate().map(|(i, ty)| new_local(self.f, &format!("agg$arg{i}"), ty.clone(), span)).collect();
        let slot = new_local(self.f, "agg$slot", u.clone(), span);
        let blocks = new_local(self.f, "agg$blocks", ull.clone(), span);
        let old = new_local(self.f, "agg$old", ull.clone(), span);
        let (lg, lb) = (|| b.local(grid, &Type::Dim3), || b.local(block, &Type::Dim3));
        let mut stmts = vec![b.decl(grid, launch.grid), b.decl(block, launch.block)];
        for ((id, arg), ty) in args.iter().zip(launch.args).zip(&param_types) {
            stmts.push(b.decl(*id, b.cast(arg, ty)));
        }
        stmts.push(b.decl(slot, b.uint(s.cap)));
        stmts.push(b.decl(blocks, b.volume(&lg(), &ull)));
        // A configuration the runtime would refuse is launched directly, so it fails as before.
        let ge1 = |e: Expr| b.cmp(BinaryOp::Ge, e, b.uint(1));
        let le = |e: Expr, v: u64| b.cmp(BinaryOp::Le, e, b.uint(v));
        let conds = [
            ge1(b.axis(lg(), Axis::X)),
            ge1(b.axis(lg(), Axis::Y)),
            ge1(b.axis(lg(), Axis::Z)),
            le(b.axis(lg(), Axis::Y), 65535),
            le(b.axis(lg(), Axis::Z), 65535),
            b.cmp(BinaryOp::Le, b.local(blocks, &ull), b.ull(MAX_BLOCKS_PER_RECORD)),
            ge1(b.axis(lb(), Axis::X)),
            ge1(b.axis(lb(), Axis::Y)),
            ge1(b.axis(lb(), Axis::Z)),
            le(b.axis(lb(), Axis::X), 1024),
            le(b.axis(lb(), Axis::Y), 1024),
            le(b.axis(lb(), Axis::Z), 64),
            b.cmp(BinaryOp::Le, b.volume(&lb(), &ull), b.ull(1024)),
        ];
        let valid = conds.into_iter().reduce(|a, c| b.and(a, c)).expect("conditions");
        let rec_at = || b.index(b.decay(g(s.table)), b.local(slot, &u));
        let field = |idx: u32, ty: &Type| b.member(rec_at(), idx, ty);
        let mut store = vec![
            b.assign(field(F_START, &u), b.cast(b.local(old, &ull), &u)),
            b.assign(field(F_DONE, &u), b.uint(0)),
            b.assign(field(F_GRID, &Type::Dim3), lg()),
            b.assign(field(F_BLOCK, &Type::Dim3), lb()),
        ];
        for (i, (id, ty)) in args.iter().zip(&param_types).enumerate() {
            store.push(b.assign(field(F_ARG0 + i as u32, ty), b.local(*id, ty)));
        }
        let threads = b.volume(&lb(), &u);
        store.push(Stmt::Expr(b.atomic(AtomicOp::Min, b.addr_of(g(s.min_threads)), threads.clone())));
        store.push(Stmt::Expr(b.atomic(AtomicOp::Max, b.addr_of(g(s.max_threads)), threads)));
        let add = b.arith(BinaryOp::Add, b.ull(1 << 32), b.local(blocks, &ull));
        stmts.push(b.if_(
            valid,
            vec![
                b.decl(old, b.atomic(AtomicOp::Add, b.addr_of(g(s.counter)), add)),
                b.assign(b.local(slot, &u), b.cast(b.arith(BinaryOp::Shr, b.local(old, &ull), b.ull(32)), &u)),
                b.if_(b.cmp(BinaryOp::Lt, b.local(slot, &u), b.uint(s.cap)), store),
            ],
        ));
        let direct = Launch {
            grid: lg(),
            block: lb(),
            args: args.iter().zip(&param_types).map(|(id, ty)| b.local(*id, ty)).collect(),
            ..launch
        };
        stmts.push(b.if_(
            b.cmp(BinaryOp::Ge, b.local(slot, &u), b.uint(s.cap)),
            vec![Stmt::Expr(b.e(ExprKind::Launch(Box::new(direct)), Type::Void))],
        ));
        Stmt::Block(Block { stmts })
    }
}
