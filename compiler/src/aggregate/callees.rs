//! The device functions an aggregated clone calls that read `threadIdx`, `blockIdx`,
//! `blockDim` or `gridDim`, itself or through their own callees: each gets a clone of its own
//! (`f__agg_ids`) that takes the values the launch it runs for would have, so that a child
//! whose helpers read the built-ins (KLAP's SSSP and MST) can be aggregated too.
//!
//! A clone takes the original parameters, then `threadIdx.x`, `.y`, `.z`, `blockIdx.x`, `.y`,
//! `.z` (`unsigned int`), `blockDim` and `gridDim` (`dim3`), reads those wherever the original
//! reads the built-ins, and calls the clones of its callees that need them, passing them on.
//! `C__agg` calls them with its remapped values (`clone.rs`: the locals `agg$tix` ... of the
//! record's launch). The clones are internal (`static`): each file's are its own. The
//! originals stay as they are for every other caller.

use super::*;
use std::collections::BTreeMap;

/// The remapped built-ins, in the order the clones take them: the names of the aggregated
/// kernel's locals that hold them (`clone::build_agg_kernel`), and their types (`unsigned
/// int`: `threadIdx` and `blockIdx` by axis; `dim3`: `blockDim`, `gridDim`).
const PASSED: [(&str, bool); 8] = [
    ("agg$tix", false),
    ("agg$tiy", false),
    ("agg$tiz", false),
    ("agg$bix", false),
    ("agg$biy", false),
    ("agg$biz", false),
    ("agg$block", true),
    ("agg$grid", true),
];

/// Clones, for the aggregated kernels `aggs`, every function they call that reads the
/// built-ins, and makes the aggregated kernels and the clones call the clones.
pub(super) fn clone_for(module: &mut Module, facts: &Facts, aggs: &[FuncId]) {
    // The functions to clone: reachable from the aggregated kernels, reading the built-ins.
    // (`reads_ids` holds for a function whose callees read them, so these are closed under
    // the calls that matter.)
    let mut wanted: BTreeSet<FuncId> = BTreeSet::new();
    let mut stack: Vec<FuncId> = aggs.iter().flat_map(|a| calls_of(module, *a)).collect();
    while let Some(f) = stack.pop() {
        if (f.0 as usize) < facts.of.len() && facts.of[f.0 as usize].reads_ids && module.function(f).body.is_some() && wanted.insert(f) {
            stack.extend(calls_of(module, f));
        }
    }
    if wanted.is_empty() {
        return;
    }
    let first = module.functions.len();
    let map: BTreeMap<FuncId, FuncId> = wanted.iter().enumerate().map(|(k, f)| (*f, FuncId((first + k) as u32))).collect();
    for f in &wanted {
        let clone = clone_function(module, *f, "agg_ids");
        module.functions.push(clone);
    }
    // Calls redirected: in the clones (their own extra parameters passed on) and in the
    // aggregated kernels (their remapped locals).
    for id in map.values().chain(aggs) {
        let f = &module.functions[id.0 as usize];
        let Some(extra) = PASSED.iter().map(|(name, _)| f.locals.iter().position(|l| l.name == *name).map(|i| LocalId(i as u32))).collect::<Option<Vec<_>>>() else {
            continue;
        };
        let types: Vec<Type> = extra.iter().map(|l| f.locals[l.0 as usize].ty.clone()).collect();
        let mut body = module.functions[id.0 as usize].body.take().unwrap_or_default();
        redirect(&mut body, &map, &extra, &types);
        module.functions[id.0 as usize].body = Some(body);
    }
}

/// The functions `f` calls.
pub(super) fn calls_of(module: &Module, f: FuncId) -> Vec<FuncId> {
    let mut out = Vec::new();
    if let Some(body) = &module.function(f).body {
        visit_block(body, &mut |e| {
            if let ExprKind::Call { func, .. } = &e.kind {
                out.push(*func);
            }
        });
    }
    out
}

/// `f` with the built-ins as parameters, its reads of them replaced: an internal device
/// function named `f__SUFFIX` (a kernel's clone too, with no launch bounds).
pub(super) fn clone_function(module: &Module, f: FuncId, suffix: &str) -> Function {
    let original = module.function(f);
    let mut clone = original.clone();
    clone.name = clone::unique_function_name(module, &format!("{}__{suffix}", original.name));
    clone.linkage = crate::hir::Linkage::C;
    clone.internal = true;
    if clone.kind == FunctionKind::Kernel {
        clone.kind = FunctionKind::Device;
        clone.attrs = Default::default();
    }
    let span = original.span;
    let mut ids = Vec::new();
    for (name, is_dim) in PASSED {
        let ty = if is_dim { Type::Dim3 } else { Type::UINT };
        let id = new_local(&mut clone, name, ty, span);
        clone.params.push(id);
        ids.push(id);
    }
    let b = builder(module, span);
    let locals = clone.locals.clone();
    let subst = |e: &Expr| -> Option<Expr> {
        let ExprKind::Builtin { builtin: Builtin::SpecialReg(reg), .. } = &e.kind else { return None };
        let local = |k: usize| Some(Expr { span: e.span, ..b.local(ids[k], &locals[ids[k].0 as usize].ty) });
        let dim = |k: usize, a: Axis| Some(Expr { span: e.span, ..b.axis(b.local(ids[k], &Type::Dim3), a) });
        match *reg {
            SpecialReg::ThreadIdx(a) => local(axis_index(a)),
            SpecialReg::BlockIdx(a) => local(3 + axis_index(a)),
            SpecialReg::BlockDim(a) => dim(6, a),
            SpecialReg::GridDim(a) => dim(7, a),
            // a thread's lane is its own in the aggregated grid too: warps keep their threads
            SpecialReg::WarpSize | SpecialReg::GridId | SpecialReg::LaneId => None,
        }
    };
    if let Some(body) = &mut clone.body {
        map_block(body, &subst);
    }
    clone
}

fn axis_index(a: Axis) -> usize {
    match a {
        Axis::X => 0,
        Axis::Y => 1,
        Axis::Z => 2,
    }
}

/// Every call of a function in `map` becomes a call of its clone, with `extra` (locals of the
/// calling function, of `types`) passed after the arguments.
fn redirect(body: &mut Block, map: &BTreeMap<FuncId, FuncId>, extra: &[LocalId], types: &[Type]) {
    let f = |e: &Expr| -> Option<Expr> {
        let ExprKind::Call { func, args } = &e.kind else { return None };
        let clone = map.get(func)?;
        let mut args = args.clone();
        for a in args.iter_mut() {
            let mut inner = Block { stmts: vec![Stmt::Expr(a.clone())] };
            redirect(&mut inner, map, extra, types);
            if let Some(Stmt::Expr(x)) = inner.stmts.pop() {
                *a = x;
            }
        }
        args.extend(extra.iter().zip(types).map(|(l, ty)| Expr { kind: ExprKind::Local(*l), ty: ty.clone(), span: e.span }));
        Some(Expr { kind: ExprKind::Call { func: *clone, args }, ty: e.ty.clone(), span: e.span })
    };
    map_block(body, &f);
}
