//! Walking the HIR: visitors, launch sites, and what each function does.

use super::*;

/// One definition for the shared and the mutable walkers, which differ only in `&`/`&mut`.
macro_rules! walkers {
    ($children:ident, $roots:ident, $init_roots:ident, $iter:ident $(, $mut:tt)?) => {
        /// The direct sub-expressions of `e`.
        pub(super) fn $children(e: &$($mut)? Expr) -> Vec<&$($mut)? Expr> {
            use ExprKind::*;
            match &$($mut)? e.kind {
                IntConst(_) | FloatConst(_) | PointerConst(_) | Local(_) | Global(_) | FuncAddr(_) => vec![],
                Deref(a) | Member { base: a, .. } | AddrOf(a) | Decay(a) | Cast(a) | Unary { operand: a, .. } => vec![a],
                IncDec { place, .. } => vec![place],
                Binary { lhs, rhs, .. } | LogicalAnd { lhs, rhs } | LogicalOr { lhs, rhs } | Comma { lhs, rhs } => vec![lhs, rhs],
                Assign { place, value } | CompoundAssign { place, value, .. } => vec![place, value],
                Conditional { cond, then, otherwise } => vec![cond, then, otherwise],
                Call { args, .. } | Builtin { args, .. } => args.$iter().collect(),
                CallIndirect { callee, args } => {
                    let mut v: Vec<&$($mut)? Expr> = vec![&$($mut)? **callee];
                    v.extend(args.$iter());
                    v
                }
                Dim3 { x, y, z } => vec![x, y, z],
                Launch(l) => {
                    let crate::hir::Launch { target, grid, block, shared_mem, stream, args, .. } = &$($mut)? **l;
                    // The kernel pointer is evaluated first.
                    let mut v: Vec<&$($mut)? Expr> = match target {
                        crate::hir::LaunchTarget::Pointer(p) => vec![&$($mut)? **p],
                        crate::hir::LaunchTarget::Kernel(_) => vec![],
                    };
                    v.extend([grid, block, shared_mem, stream]);
                    v.extend(args.$iter());
                    v
                }
            }
        }

        fn $init_roots(init: &$($mut)? Init, f: &mut dyn FnMut(&$($mut)? Expr)) {
            match init {
                Init::Expr(e) => f(e),
                Init::List(items) => items.$iter().for_each(|i| $init_roots(i, f)),
            }
        }

        /// The root expression of every statement of `b` and of its nested blocks, in order.
        pub(super) fn $roots(b: &$($mut)? Block, f: &mut dyn FnMut(&$($mut)? Expr)) {
            for s in b.stmts.$iter() {
                match s {
                    Stmt::Decl { init: Some(init), .. } => $init_roots(init, f),
                    Stmt::Decl { init: None, .. } | Stmt::Break | Stmt::Continue | Stmt::Return(None) | Stmt::Label(_) | Stmt::Goto(_) => {}
                    Stmt::Expr(e) | Stmt::Return(Some(e)) => f(e),
                    Stmt::Switch { cond, body, .. } => {
                        f(cond);
                        $roots(body, f);
                    }
                    Stmt::If { cond, then, otherwise } => {
                        f(cond);
                        $roots(then, f);
                        if let Some(o) = otherwise {
                            $roots(o, f);
                        }
                    }
                    Stmt::Loop { init, cond, step, body, .. } => {
                        $roots(init, f);
                        if let Some(c) = cond {
                            f(c);
                        }
                        if let Some(s) = step {
                            f(s);
                        }
                        $roots(body, f);
                    }
                    Stmt::Block(b) => $roots(b, f),
                    Stmt::Asm(a) => {
                        let crate::hir::InlineAsm { outputs, inputs, .. } = &$($mut)? **a;
                        outputs.$iter().for_each(|o| f(&$($mut)? o.place));
                        inputs.$iter().for_each(|i| f(&$($mut)? i.value));
                    }
                }
            }
        }
    };
}

walkers!(children, root_exprs, init_roots, iter);
walkers!(children_mut, root_exprs_mut, init_roots_mut, iter_mut, mut);

/// Calls `f` on every statement of `b` and of the blocks nested in it, each before those nested
/// in it.
pub(super) fn visit_stmts<'a>(b: &'a Block, f: &mut dyn FnMut(&'a Stmt)) {
    for s in &b.stmts {
        f(s);
        match s {
            Stmt::If { then, otherwise, .. } => {
                visit_stmts(then, f);
                if let Some(o) = otherwise {
                    visit_stmts(o, f);
                }
            }
            Stmt::Loop { init, body, .. } => {
                visit_stmts(init, f);
                visit_stmts(body, f);
            }
            Stmt::Block(b) | Stmt::Switch { body: b, .. } => visit_stmts(b, f),
            _ => {}
        }
    }
}

/// Whether a `goto` in `b` jumps to a label that comes before it: a loop the statements do not
/// show (its launches may run more than once in a thread).
pub(super) fn has_backward_goto(b: &Block) -> bool {
    let mut seen = BTreeSet::new();
    let mut backward = false;
    visit_stmts(b, &mut |s| match s {
        Stmt::Label(l) => {
            seen.insert(*l);
        }
        Stmt::Goto(l) => backward |= seen.contains(l),
        _ => {}
    });
    backward
}

/// Calls `f` on every expression of `e`, pre-order.
pub(super) fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    for c in children(e) {
        visit_expr(c, f);
    }
}

/// Every expression of a block (statement roots, pre-order within each).
pub(crate) fn visit_block(b: &Block, f: &mut dyn FnMut(&Expr)) {
    root_exprs(b, &mut |e| visit_expr(e, f));
}

/// Replaces each outermost expression for which `f` gives a replacement.
pub(super) fn map_expr(e: &mut Expr, f: &dyn Fn(&Expr) -> Option<Expr>) {
    if let Some(new) = f(e) {
        *e = new;
        return;
    }
    for c in children_mut(e) {
        map_expr(c, f);
    }
}

/// [`map_expr`] over every statement root of a block.
pub(super) fn map_block(b: &mut Block, f: &dyn Fn(&Expr) -> Option<Expr>) {
    root_exprs_mut(b, &mut |e| map_expr(e, f));
}

/// Replaces every launch statement of `block`, and of the blocks nested in it, whose span is in
/// `sites` with what `rewrite` makes of the launch.
pub(super) fn replace_launch_statements(block: &mut Block, sites: &BTreeSet<(u32, u32)>, rewrite: &mut dyn FnMut(&Launch) -> Stmt) {
    for stmt in &mut block.stmts {
        match stmt {
            Stmt::Expr(Expr { kind: ExprKind::Launch(l), .. }) if sites.contains(&(l.span.start, l.span.end)) => {
                let launch = (**l).clone();
                *stmt = rewrite(&launch);
            }
            Stmt::If { then, otherwise, .. } => {
                replace_launch_statements(then, sites, rewrite);
                if let Some(o) = otherwise {
                    replace_launch_statements(o, sites, rewrite);
                }
            }
            Stmt::Loop { init, body, .. } => {
                replace_launch_statements(init, sites, rewrite);
                replace_launch_statements(body, sites, rewrite);
            }
            Stmt::Block(inner) | Stmt::Switch { body: inner, .. } => replace_launch_statements(inner, sites, rewrite),
            _ => {}
        }
    }
}

/// The launch sites of a function's body; a site is in a loop also when a `goto` may jump back
/// over it.
pub(super) fn collect_sites(b: &Block, in_loop: bool, out: &mut Vec<Site>) {
    collect_sites_in(b, in_loop || has_backward_goto(b), out)
}

fn collect_sites_in(b: &Block, in_loop: bool, out: &mut Vec<Site>) {
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
            Stmt::Decl { init: Some(init), .. } => init_roots(init, &mut |e| nested(e, out)),
            Stmt::Decl { init: None, .. } | Stmt::Break | Stmt::Continue | Stmt::Return(None) | Stmt::Label(_) | Stmt::Goto(_) => {}
            Stmt::If { cond, then, otherwise } => {
                nested(cond, out);
                collect_sites_in(then, in_loop, out);
                if let Some(o) = otherwise {
                    collect_sites_in(o, in_loop, out);
                }
            }
            Stmt::Switch { cond, body, .. } => {
                nested(cond, out);
                collect_sites_in(body, in_loop, out);
            }
            Stmt::Loop { init, cond, step, body, .. } => {
                collect_sites_in(init, true, out);
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
                collect_sites_in(body, true, out);
            }
            Stmt::Block(inner) => collect_sites_in(inner, in_loop, out),
            Stmt::Asm(a) => a.outputs.iter().map(|o| &o.place).chain(a.inputs.iter().map(|i| &i.value)).for_each(|e| nested(e, out)),
        }
    }
}

/// Whether a block holds a `return` other than as its very last statement.
pub(super) fn has_early_return(body: &Block) -> bool {
    fn any_return(b: &Block) -> bool {
        b.stmts.iter().any(|s| match s {
            Stmt::Return(_) => true,
            Stmt::If { then, otherwise, .. } => any_return(then) || otherwise.as_ref().is_some_and(any_return),
            Stmt::Loop { init, body, .. } => any_return(init) || any_return(body),
            Stmt::Block(b) | Stmt::Switch { body: b, .. } => any_return(b),
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
pub(super) struct FnFacts {
    /// Calls `__syncthreads`.
    pub(super) syncs: bool,
    /// Reads threadIdx, blockIdx, blockDim or gridDim (warpSize is the same everywhere).
    pub(super) reads_ids: bool,
    /// Launches kernels (the function itself).
    pub(super) launches: bool,
    /// A function it calls launches kernels.
    pub(super) launches_in_callees: bool,
    /// Records or waits on events, or puts other work into streams (copies, sets, graph and
    /// explicit launches): `RuntimeFn::orders_stream_work`.
    pub(super) events: bool,
    /// Reads launch errors: `cudaGetLastError` or `cudaPeekAtLastError`.
    pub(super) reads_errors: bool,
    /// Returns before its last statement.
    pub(super) early_return: bool,
    /// Calls through a pointer to a function (itself or a function it calls).
    pub(super) indirect: bool,
    /// Its calls; one through a pointer may call any function whose address is taken.
    pub(super) calls: BTreeSet<FuncId>,
}

pub(super) struct Facts {
    pub(super) of: Vec<FnFacts>,
    /// A function whose address is taken reads the built-in variables (`FnFacts::reads_ids`).
    pub(super) taken_read_ids: bool,
}

impl Facts {
    pub(super) fn compute(module: &Module) -> Facts {
        let mut taken = BTreeSet::new();
        let in_globals = |init: &crate::hir::ConstInit, taken: &mut BTreeSet<FuncId>| {
            let mut stack = vec![init];
            while let Some(init) = stack.pop() {
                match init {
                    crate::hir::ConstInit::FunctionAddress(f) => {
                        taken.insert(*f);
                    }
                    crate::hir::ConstInit::Array(items) | crate::hir::ConstInit::Struct(items) => stack.extend(items),
                    _ => {}
                }
            }
        };
        for g in &module.globals {
            if let Some(init) = &g.init {
                in_globals(init, &mut taken);
            }
        }
        for f in &module.functions {
            if let Some(body) = &f.body {
                visit_block(body, &mut |e| {
                    if let ExprKind::FuncAddr(g) = &e.kind {
                        taken.insert(*g);
                    }
                });
            }
        }
        // A kernel's address is taken to launch it; calling it like a function is refused
        // (E0312) where sema sees it and undefined where it does not, so no call reaches one.
        taken.retain(|f| module.function(*f).kind != FunctionKind::Kernel);
        let mut of: Vec<FnFacts> = module
            .functions
            .iter()
            .map(|f| {
                let mut facts = FnFacts::default();
                if let Some(body) = &f.body {
                    facts.early_return = has_early_return(body);
                    visit_block(body, &mut |e| match &e.kind {
                        ExprKind::Builtin { builtin: Builtin::SyncThreads | Builtin::BarrierSync, .. } => facts.syncs = true,
                        ExprKind::Builtin { builtin: Builtin::SpecialReg(r), .. } if !matches!(r, SpecialReg::WarpSize | SpecialReg::GridId) => {
                            facts.reads_ids = true
                        }
                        ExprKind::Builtin { builtin: Builtin::Runtime(f), .. } if f.orders_stream_work() => facts.events = true,
                        ExprKind::Builtin { builtin: Builtin::Runtime(f), .. } if f.reads_launch_errors() => facts.reads_errors = true,
                        ExprKind::Launch(_) => facts.launches = true,
                        ExprKind::Call { func, .. } => {
                            facts.calls.insert(*func);
                        }
                        ExprKind::CallIndirect { .. } => {
                            facts.indirect = true;
                            facts.calls.extend(taken.iter().copied());
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
                    let before = (me.syncs, me.reads_ids, me.launches_in_callees, me.events, me.reads_errors, me.indirect);
                    me.indirect |= callee.indirect;
                    me.syncs |= callee.syncs;
                    me.reads_ids |= callee.reads_ids;
                    me.launches_in_callees |= callee.launches || callee.launches_in_callees;
                    me.events |= callee.events;
                    me.reads_errors |= callee.reads_errors;
                    changed |= before != (me.syncs, me.reads_ids, me.launches_in_callees, me.events, me.reads_errors, me.indirect);
                }
            }
            if !changed {
                break;
            }
        }
        let taken_read_ids = taken.iter().any(|g| of[g.0 as usize].reads_ids);
        Facts { of, taken_read_ids }
    }

    /// Why a launch of `child` cannot be aggregated because of calls through pointers: the
    /// aggregated child maps its blocks back by cloning the functions it calls that read the
    /// built-in variables (`callees.rs`), which a call through a pointer never reaches.
    pub(super) fn indirect_reason(&self, module: &Module, child: FuncId) -> Option<String> {
        (self.of[child.0 as usize].indirect && self.taken_read_ids).then(|| {
            format!(
                "`{}` calls a function through a pointer, and a function whose address is taken reads threadIdx, blockIdx, blockDim or gridDim, which would see the aggregated launch's",
                module.function(child).name
            )
        })
    }
}

