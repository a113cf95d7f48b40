//! Block granularity: launches become records in a per-block `__shared__` table that thread 0
//! launches as one grid once every thread of the block has reached the end of the kernel (or,
//! in a kernel that returns early and calls `__syncthreads`, that the block's last thread to
//! finish launches: `BlockEnd`). At grid granularity the same table is handed on to the grid's
//! last block instead (`grid.rs`).

use super::*;

/// The shared state of one aggregated launch site in a kernel.
pub(super) struct SiteState {
    pub(super) child: FuncId,
    pub(super) agg: FuncId,
    pub(super) record: StructId,
    pub(super) child_syncs: bool,
    /// The aggregated launch's dynamic shared memory (`AggChild::shared_mem`).
    pub(super) shared_mem: u64,
    pub(super) cap: u64,
    pub(super) counter: GlobalId,
    pub(super) min_threads: GlobalId,
    pub(super) max_threads: GlobalId,
    pub(super) table: GlobalId,
    pub(super) buffer: GlobalId,
    /// At grid granularity, the child's record arena (`arena.rs`).
    pub(super) arena: Option<arena::Arena>,
    pub(super) span: Span,
}

/// How a block's threads meet at the end of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BlockEnd {
    /// Every thread reaches the end and the block's threads work together, between barriers.
    Barriers,
    /// For a kernel that returns early and calls `__syncthreads` (KLAP's QT): a thread that
    /// returns must leave, as it did, or the barriers it skipped would count it (and the end's
    /// barriers would stand in for the body's). Each thread counts itself in a shared counter
    /// after a fence and leaves; the last to count, which every other thread's records
    /// precede, does the end's work alone, as a block of one thread (no barriers).
    LastThread,
}

/// Rewrites kernel `kid` so that its `sites` become records launched at the end of the block,
/// or, with `grid`, at the end of the parent grid.
pub(super) fn rewrite_kernel(module: &mut Module, kid: FuncId, sites: &[(Site, u64)], aggs: &BTreeMap<FuncId, AggChild>, grid: bool, end: BlockEnd) {
    let kname = module.function(kid).name.clone();
    let arrived = (end == BlockEnd::LastThread)
        .then(|| new_global(module, format!("{kname}$agg$arrived"), Type::UINT, crate::hir::GlobalSpace::Shared, module.function(kid).span));
    let mut states = Vec::new();
    for (n, (s, cap)) in sites.iter().enumerate() {
        let a = &aggs[&child(&s.launch)];
        let rec = Type::Struct(a.record);
        let sp = s.launch.span;
        let mut shared = |name: String, ty: Type| new_global(module, name, ty, crate::hir::GlobalSpace::Shared, sp);
        states.push(SiteState {
            child: child(&s.launch),
            agg: a.agg,
            record: a.record,
            child_syncs: a.child_syncs,
            shared_mem: a.shared_mem,
            cap: *cap,
            counter: shared(format!("{kname}$agg{n}$counter"), Type::ULONGLONG),
            min_threads: shared(format!("{kname}$agg{n}$min_threads"), Type::UINT),
            max_threads: shared(format!("{kname}$agg{n}$max_threads"), Type::UINT),
            table: shared(format!("{kname}$agg{n}$table"), Type::Array { elem: Box::new(rec.clone()), len: *cap }),
            buffer: shared(format!("{kname}$agg{n}$buffer"), Type::pointer_to(rec)),
            arena: if grid { a.arena } else { None },
            span: sp,
        });
    }
    let grid_state = grid.then(|| grid::GridState::declare(module, &kname, &states, module.function(kid).span));
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
    if let Some(a) = arrived {
        init.push(b.assign(g(a), b.uint(0)));
    }
    let thread0 = || b.cmp(BinaryOp::Eq, b.local(tid, &Type::UINT), b.uint(0));
    stmts.push(b.if_(thread0(), init));
    stmts.push(b.sync());
    stmts.push(b.decl(returned, b.int(0)));
    stmts.push(Stmt::Loop { init: Block::default(), cond: Some(b.int(0)), step: None, body: original, check_cond_first: false });
    // What the block does once every thread has recorded its launches: built for a block of
    // `nthreads` threads that meet at barriers, the first of them `tid` 0.
    let mut tail = Vec::new();

    // The number of records of a site: min(counter >> 32, cap).
    let count_of = |s: &SiteState| count_of(m, &b, s);
    let null_rec = |s: &SiteState| b.null(&m.global(s.buffer).ty);
    let mut extra_locals: Vec<(String, Type)> = Vec::new();
    let mut fresh = |name: &str, ty: Type| {
        extra_locals.push((name.to_string(), ty));
        LocalId((f.locals.len() + extra_locals.len() - 1) as u32)
    };

    // Thread 0 allocates the global tables (at grid granularity: finds the grid's entry, then
    // room in the child's arena or a node of the grid's list, `grid.rs`).
    let mut alloc = Vec::new();
    if let Some(gs) = &grid_state {
        alloc.extend(gs.begin(m, &b, &mut fresh));
    }
    for (n, s) in states.iter().enumerate() {
        let sb = builder(m, s.span);
        let count = fresh("agg$count", u.clone());
        if let Some(gs) = &grid_state {
            // every block with records hands them on: they may meet others
            alloc.push(sb.decl(count, count_of(s)));
            alloc.extend(gs.alloc_site(m, &sb, n, s, count, &mut fresh));
            continue;
        }
        let p = fresh("agg$allocation", Type::pointer_to(Type::Void));
        let (malloc, records) = (pool::heap_table(m, &sb, p, sb.local(count, &u), s.record), sb.local(p, &Type::pointer_to(Type::Void)));
        // A lone record is launched as it was: an allocation would cost more than it saves.
        let mut wanted = sb.cmp(BinaryOp::Gt, sb.local(count, &u), sb.uint(1));
        if s.child_syncs {
            // the clone's barriers need every thread: equal block sizes only
            wanted = sb.and(wanted, sb.cmp(BinaryOp::Eq, g(s.min_threads), g(s.max_threads)));
        }
        alloc.push(sb.decl(count, count_of(s)));
        alloc.push(sb.assign(g(s.buffer), null_rec(s)));
        alloc.push(sb.if_(
            wanted,
            vec![
                sb.decl(p, sb.null(&Type::pointer_to(Type::Void))),
                sb.if_(
                    sb.cmp(BinaryOp::Eq, sb.cast(malloc, &Type::INT), sb.int(0)),
                    vec![sb.assign(g(s.buffer), sb.cast(records, &m.global(s.buffer).ty))],
                ),
            ],
        ));
    }
    tail.push(b.if_(thread0(), alloc));
    tail.push(b.sync());

    // The block copies the tables.
    for (n, s) in states.iter().enumerate() {
        let sb = builder(m, s.span);
        let count = fresh("agg$count", u.clone());
        let i = fresh("agg$i", u.clone());
        let li = || sb.local(i, &u);
        let mut copy = vec![sb.assign(sb.index(g(s.buffer), li()), sb.index(sb.decay(g(s.table)), li()))];
        if let Some(gs) = &grid_state {
            copy.push(gs.rebase(m, &sb, n, sb.index(g(s.buffer), li())));
        }
        tail.push(Stmt::Block(Block {
            stmts: vec![
                sb.decl(count, count_of(s)),
                sb.if_(
                    sb.cmp(BinaryOp::Ne, g(s.buffer), null_rec(s)),
                    vec![sb.for_(
                        vec![sb.decl(i, sb.local(tid, &u))],
                        sb.cmp(BinaryOp::Lt, li(), sb.local(count, &u)),
                        sb.e(ExprKind::CompoundAssign { op: BinaryOp::Add, place: Box::new(li()), value: Box::new(sb.local(nthreads, &u)), op_type: u.clone() }, u.clone()),
                        copy,
                    )],
                ),
            ],
        }));
    }
    tail.push(b.sync());

    if let Some(gs) = &grid_state {
        // Thread 0 hands the records on; the grid's last block launches them.
        let block_launch = |s: &SiteState, fresh: &mut dyn FnMut(&str, Type) -> LocalId| launch_block(m, s, fresh);
        tail.extend(gs.finish(m, &b, &states, tid, nthreads, &mut fresh, &block_launch));
    } else {
        // Thread 0 launches.
        let mut launch = Vec::new();
        for s in &states {
            launch.extend(launch_block(m, s, &mut fresh));
        }
        tail.push(b.if_(thread0(), launch));
    }

    match arrived {
        None => {
            stmts.push(b.sync());
            stmts.extend(tail);
        }
        Some(a) => {
            let fence = || Stmt::Expr(b.builtin(Builtin::ThreadFence, vec![], &Type::Void));
            let counted = b.atomic(AtomicOp::Add, b.addr_of(g(a)), b.uint(1));
            let last = b.cmp(BinaryOp::Eq, counted, b.arith(BinaryOp::Sub, b.local(nthreads, &u), b.uint(1)));
            let mut alone = vec![fence(), b.assign(b.local(tid, &u), b.uint(0)), b.assign(b.local(nthreads, &u), b.uint(1))];
            alone.extend(tail.into_iter().map(|s| without_barriers(s, &b)));
            stmts.push(fence());
            stmts.push(b.if_(last, alone));
        }
    }

    for (name, ty) in extra_locals {
        new_local(&mut f, &name, ty, span);
    }
    f.body = Some(Block { stmts });
    module.functions[kid.0 as usize] = f;
}

/// `stmt` with each `__syncthreads()` in it a `__threadfence_block()`: the end of a block for
/// its last thread alone (`BlockEnd::LastThread`), where the other threads have left.
fn without_barriers(stmt: Stmt, b: &B) -> Stmt {
    let block = |blk: Block| Block { stmts: blk.stmts.into_iter().map(|s| without_barriers(s, b)).collect() };
    match stmt {
        Stmt::Expr(Expr { kind: ExprKind::Builtin { builtin: Builtin::SyncThreads, .. }, .. }) => {
            Stmt::Expr(b.builtin(Builtin::ThreadFenceBlock, vec![], &Type::Void))
        }
        Stmt::If { cond, then, otherwise } => Stmt::If { cond, then: block(then), otherwise: otherwise.map(block) },
        Stmt::Loop { init, cond, step, body, check_cond_first } => Stmt::Loop { init: block(init), cond, step, body: block(body), check_cond_first },
        Stmt::Block(blk) => Stmt::Block(block(blk)),
        Stmt::Switch { cond, body, cases, default } => Stmt::Switch { cond, body: block(body), cases, default },
        other => other,
    }
}

/// The number of records of a site: `min(counter >> 32, cap)`.
pub(super) fn count_of(m: &Module, b: &B, s: &SiteState) -> Expr {
    let hi = b.cast(b.arith(BinaryOp::Shr, b.global(s.counter, &m.global(s.counter).ty), b.ull(32)), &Type::UINT);
    b.builtin(Builtin::Min, vec![hi, b.uint(s.cap)], &Type::UINT)
}

/// Thread 0's launch of a block's records of site `s`: one launch of the clone over the
/// global copy (`buffer`), or each record as it was when there is none.
fn launch_block(m: &Module, s: &SiteState, fresh: &mut dyn FnMut(&str, Type) -> LocalId) -> Vec<Stmt> {
    let u = Type::UINT;
    let g = |id: GlobalId| s_global(m, s, id);
    let null_rec = |s: &SiteState| builder(m, s.span).null(&m.global(s.buffer).ty);
    let count_of = |s: &SiteState| count_of(m, &builder(m, s.span), s);
    let mut launch = Vec::new();
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
    let agg = agg_launch(m, &sb, s.agg, s.record, s.shared_mem, g(s.buffer), lc(), sb.local(total, &u), g(s.max_threads));
    // Fallback: each record launched as it was.
    let direct = record_launch(m, &sb, s.child, s.shared_mem, &|| sb.ptr_add(table(), sb.local(i, &u)));
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
                agg,
            ],
            vec![sb.for_(
                vec![sb.decl(i, sb.uint(0))],
                sb.cmp(BinaryOp::Lt, li(), lc()),
                sb.e(ExprKind::IncDec { place: Box::new(li()), increment: true, prefix: true }, u.clone()),
                vec![direct],
            )],
        )],
    ));
    launch
}

fn s_global(m: &Module, s: &SiteState, id: GlobalId) -> Expr {
    builder(m, s.span).global(id, &m.global(id).ty)
}

pub(super) struct Rewriter<'a, 'b> {
    pub(super) module: &'a Module,
    pub(super) f: &'b mut Function,
    pub(super) states: &'a [SiteState],
    pub(super) returned: LocalId,
    pub(super) by_span: BTreeMap<(u32, u32), usize>,
}

impl Rewriter<'_, '_> {
    /// Rewrites the aggregated launch statements into records and the `return`s into jumps to
    /// the end of the kernel; `depth` counts the loops and `switch`es around `block` (the
    /// kernel's own `do { } while (0)` not included). Returns whether a `return` inside a loop was rewritten
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
                // A `switch` takes `break` like a loop: a `return` in it leaves it with the flag.
                Stmt::Switch { cond, mut body, cases, default } => {
                    let inner = self.rewrite_block(&mut body, depth + 1);
                    out.push(Stmt::Switch { cond, body, cases, default });
                    if inner {
                        let b = builder(self.module, Span::default());
                        out.push(b.if_(b.local(self.returned, &Type::INT), vec![Stmt::Break]));
                        any |= depth > 0;
                    }
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
        let (u, ull) = (Type::UINT, Type::ULONGLONG);
        let g = |id: GlobalId| b.global(id, &m.global(id).ty);
        let (ops, mut stmts) = Operands::evaluate(m, self.f, &launch, "agg");
        let slot = new_local(self.f, "agg$slot", u.clone(), launch.span);
        let old = new_local(self.f, "agg$old", ull.clone(), launch.span);
        stmts.push(b.decl(slot, b.uint(s.cap)));
        let rec_at = || b.index(b.decay(g(s.table)), b.local(slot, &u));
        let mut store = vec![
            b.assign(b.member(rec_at(), F_START, &u), b.cast(b.local(old, &ull), &u)),
            b.assign(b.member(rec_at(), F_DONE, &u), b.uint(0)),
        ];
        store.extend(ops.store(&b, &rec_at));
        let threads = b.volume(&ops.block(&b), &u);
        store.push(Stmt::Expr(b.atomic(AtomicOp::Min, b.addr_of(g(s.min_threads)), threads.clone())));
        store.push(Stmt::Expr(b.atomic(AtomicOp::Max, b.addr_of(g(s.max_threads)), threads)));
        // One 64-bit shared atomic hands out the slot (high half) and the first block (low).
        let add = b.arith(BinaryOp::Add, b.ull(1 << 32), b.local(ops.blocks, &ull));
        stmts.push(b.if_(
            ops.valid(&b),
            vec![
                b.decl(old, b.atomic(AtomicOp::Add, b.addr_of(g(s.counter)), add)),
                b.assign(b.local(slot, &u), b.cast(b.arith(BinaryOp::Shr, b.local(old, &ull), b.ull(32)), &u)),
                b.if_(b.cmp(BinaryOp::Lt, b.local(slot, &u), b.uint(s.cap)), store),
            ],
        ));
        stmts.push(b.if_(b.cmp(BinaryOp::Ge, b.local(slot, &u), b.uint(s.cap)), vec![ops.direct(&b, &launch)]));
        Stmt::Block(Block { stmts })
    }
}

