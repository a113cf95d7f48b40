//! Thresholding (`-flaunch-threshold=N`): a launch whose grid has at most `N` threads in all
//! runs its child's threads one after another in the launching thread, instead of launching.
//!
//! A device launch costs the runtime about a microsecond and a grid of a few dozen threads
//! leaves the GPU all but idle; running such a child in the parent thread costs a loop of as
//! many calls (the idea of "Free Launch", Chen and Shen, MICRO 2015, and of the thresholding
//! the KLAP authors measured later). The site
//!
//! ```c
//! C<<<g, b>>>(args);
//! ```
//!
//! becomes, with its operands evaluated once as before,
//!
//! ```c
//! if (valid(g, b) && blocks(g) <= N && blocks(g) * threads(b) <= N)
//!     for (unsigned bl = 0; bl < blocks(g); bl++)
//!         for (unsigned t = 0; t < threads(b); t++)
//!             C__serial(args, t % b.x, t / b.x % b.y, t / (b.x * b.y),
//!                       bl % g.x, bl / g.x % g.y, bl / (g.x * g.y), b, g);
//! else
//!     C<<<g, b>>>(args);
//! ```
//!
//! `C__serial` is `C`'s body as an internal device function that takes the built-ins as
//! parameters (`callees::clone_function`; its helpers that read them are cloned the same way),
//! so each of the child's threads sees the `threadIdx`, `blockIdx`, `blockDim` and `gridDim`
//! it would have had. A configuration the runtime would refuse is launched as before, so it
//! fails as before.
//!
//! Only a child whose threads do not need each other can run this way, itself and everything it
//! calls: no barrier, no shared memory, no warp-level primitive, no lane or grid id, no launch,
//! no stream work, no inline assembly; and only one whose threads each do a bounded amount of
//! work: no loops but counted ones of at most `MAX_TRIPS` iterations. Only NULL-stream and fire-and-forget launches are taken,
//! with no dynamic shared memory: a tail launch must see the whole parent grid's writes, and a
//! named stream orders the child after work the thread cannot wait for. Every other site gets
//! the remark `R0502` saying why (`-Rpass=aggregate`).
//!
//! What changes: the child sees what the launching thread wrote before the launch, as before,
//! and nothing it writes later, which the model allows. A child run in place runs *before* the
//! NULL-stream launches its block made earlier and that have not finished, where the stream
//! would have run it after them: a program whose small children depend on its earlier,
//! larger ones through the stream's order must not use the option. A launch run in place never
//! fails (nor counts against the pending-launch limit). The pass runs before aggregation,
//! which then takes the launches that remain (`mod.rs`).

use super::*;

/// Why `child`'s threads cannot run one after another in a launching thread, if they cannot:
/// looked for in its body and in every function it calls.
fn why_not_serial(module: &Module, child: FuncId) -> Option<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![child];
    while let Some(fid) = stack.pop() {
        if !seen.insert(fid) {
            continue;
        }
        let f = module.function(fid);
        let Some(body) = &f.body else {
            return Some(format!("`{}` has no definition here", f.name));
        };
        let mut why: Option<String> = None;
        // What makes the threads need each other, or the work of each unknown.
        let mut note = |w: String| {
            why.get_or_insert(w);
        };
        let together = |w: &str| format!("{w}: its threads cannot run one after another in the launching thread");
        visit_block(body, &mut |e| match &e.kind {
            ExprKind::Builtin { builtin: Builtin::SyncThreads | Builtin::BarrierSync, .. } => note(together("calls `__syncthreads`")),
            ExprKind::Builtin { builtin: Builtin::Warp(_), .. }
            | ExprKind::Builtin { builtin: Builtin::Intrinsic(crate::hir::Intrinsic::Vote(_) | crate::hir::Intrinsic::Shuffle(_)), .. } => {
                note(together("uses warp-level primitives"))
            }
            ExprKind::Builtin { builtin: Builtin::SpecialReg(SpecialReg::LaneId | SpecialReg::GridId), .. } => {
                note(together("reads its lane or grid id"))
            }
            ExprKind::Builtin { builtin: Builtin::Runtime(r), .. } if r.orders_stream_work() => note(together("puts work into streams or records events")),
            ExprKind::Global(g) if matches!(module.globals[g.0 as usize].space, crate::hir::GlobalSpace::Shared | crate::hir::GlobalSpace::ExternShared) => {
                note(together("uses shared memory"))
            }
            ExprKind::Launch(_) => note(together("launches kernels")),
            ExprKind::Call { func, .. } => stack.push(*func),
            ExprKind::CallIndirect { .. } => note("calls a function through a pointer: what it calls, and whether its threads need each other, is not known here".into()),
            _ => {}
        });
        if has_backward_goto(body) {
            note(format!(
                "jumps back with `goto`: a loop that is not a counted loop of at most {MAX_TRIPS} iterations, so a thread's work is not known to be small"
            ));
        }
        visit_stmts(body, &mut |s| match s {
            Stmt::Asm(_) => note(together("contains inline assembly")),
            Stmt::Loop { .. } if constant_trip_count(s).is_none_or(|n| n > MAX_TRIPS) => note(format!(
                "runs a loop that is not a counted loop of at most {MAX_TRIPS} iterations: a thread's work is not known to be small, and a grid's worth of it one after another could take longer than the launch"
            )),
            _ => {}
        });
        if let Some(why) = why {
            let whose = if fid == child {
                format!("`{}`", f.name)
            } else {
                format!("`{}`: `{}`, which it calls,", module.function(child).name, f.name)
            };
            return Some(format!("{whose} {why}"));
        }
    }
    None
}

/// The most iterations a loop of a child run in place may have. A child thread whose loops
/// run longer, or as long as the data says, may do more work than a launch costs, and the
/// launching thread would do a whole grid's worth of it: KLAP's SSSP, whose child threads each
/// walk a node's edges, took 0.21 of nvcc's time with its 128-thread children run in place and
/// 0.13 launched and aggregated per warp (results/corpus-timing.md, Run G).
const MAX_TRIPS: i64 = 64;

/// The iterations of `for (i = A; i < B; i++)` (or `<=`, `!=`, `>`, `>=` with `i--`, `+= C`,
/// `-= C`) with integer constants and a counter the body does not write; `None` for any other
/// loop.
fn constant_trip_count(s: &Stmt) -> Option<i64> {
    let Stmt::Loop { init, cond: Some(cond), step: Some(step), body, check_cond_first: true } = s else { return None };
    let local_of = |e: &Expr| match strip_casts(e).kind {
        ExprKind::Local(l) => Some(l),
        _ => None,
    };
    let constant = |e: &Expr| match strip_casts(e).kind {
        ExprKind::IntConst(v) => Some(v),
        _ => None,
    };
    let (counter, start) = match init.stmts.as_slice() {
        [Stmt::Decl { local, init: Some(Init::Expr(e)) }] => (*local, constant(e)?),
        [Stmt::Expr(Expr { kind: ExprKind::Assign { place, value }, .. })] => (local_of(place)?, constant(value)?),
        _ => return None,
    };
    let ExprKind::Binary { op, lhs, rhs } = &strip_casts(cond).kind else { return None };
    if local_of(lhs)? != counter {
        return None;
    }
    let end = constant(rhs)?;
    let stride = match &strip_casts(step).kind {
        ExprKind::IncDec { place, increment, .. } if local_of(place)? == counter => if *increment { 1 } else { -1 },
        ExprKind::CompoundAssign { op: BinaryOp::Add, place, value, .. } if local_of(place)? == counter => constant(value)?,
        ExprKind::CompoundAssign { op: BinaryOp::Sub, place, value, .. } if local_of(place)? == counter => constant(value)?.checked_neg()?,
        _ => return None,
    };
    let mut written = false;
    visit_block(body, &mut |e| match &e.kind {
        ExprKind::Assign { place, .. } | ExprKind::CompoundAssign { place, .. } | ExprKind::IncDec { place, .. } | ExprKind::AddrOf(place)
            if local_of(place) == Some(counter) =>
        {
            written = true
        }
        _ => {}
    });
    if written {
        return None;
    }
    let span = match (op, stride > 0) {
        (BinaryOp::Lt | BinaryOp::Ne, true) => end.checked_sub(start)?,
        (BinaryOp::Le, true) => end.checked_sub(start)?.checked_add(1)?,
        (BinaryOp::Gt | BinaryOp::Ne, false) => start.checked_sub(end)?,
        (BinaryOp::Ge, false) => start.checked_sub(end)?.checked_add(1)?,
        _ => return None,
    };
    if span <= 0 {
        return Some(0);
    }
    let stride = stride.checked_abs()?;
    // `!=` must land on the end exactly, or the loop does not stop where it seems to.
    if *op == BinaryOp::Ne && span % stride != 0 {
        return None;
    }
    Some((span + stride - 1) / stride)
}

/// Why the launch at `s` is not run in place, if it is not (the child aside).
fn why_not_site(s: &Site) -> Option<String> {
    if !s.statement {
        return Some("the launch is part of a larger expression".into());
    }
    match strip_casts(&s.launch.stream).kind {
        ExprKind::PointerConst(0 | 4) => {}
        ExprKind::PointerConst(3) => return Some("a tail launch sees the whole parent grid's writes; run in place it would not".into()),
        _ => return Some("a launch into a named stream runs after the stream's earlier work, which the thread cannot wait for".into()),
    }
    if !matches!(strip_casts(&s.launch.shared_mem).kind, ExprKind::IntConst(0)) {
        return Some("the launch asks for dynamic shared memory".into());
    }
    None
}

fn threshold_remark(module: &Module, s: &Site, why: &str) -> Diagnostic {
    let launched = launched(module, &s.launch);
    Diagnostic::new(Code::ThresholdRemark, s.launch.span, format!("launch of {launched} not run in the launching thread when small"))
        .with_primary_message(why.to_string())
}

/// Rewrites every launch in `module` that can run in place when its grid has at most
/// `max_threads` threads, and returns a remark for each launch it leaves alone. `0` changes
/// nothing and says nothing.
pub fn threshold(module: &mut Module, max_threads: u32) -> Vec<Diagnostic> {
    if max_threads == 0 {
        return Vec::new();
    }
    super::fold::fold_kernel_pointers(module);
    let mut remarks = Vec::new();
    let mut sites: BTreeMap<FuncId, BTreeSet<(u32, u32)>> = BTreeMap::new();
    // Why each child launched somewhere cannot run in place (`None`: it can), and the
    // children of the sites taken.
    let mut children: BTreeMap<FuncId, Option<String>> = BTreeMap::new();
    let mut wanted: BTreeSet<FuncId> = BTreeSet::new();
    for (i, f) in module.functions.iter().enumerate() {
        let Some(body) = &f.body else { continue };
        let mut found = Vec::new();
        collect_sites(body, false, &mut found);
        for s in found {
            let Some(kernel) = s.launch.kernel() else {
                remarks.push(threshold_remark(module, &s, THROUGH_POINTER));
                continue;
            };
            let child = children.entry(kernel).or_insert_with(|| why_not_serial(module, kernel)).clone();
            match why_not_site(&s).or(child) {
                Some(why) => remarks.push(threshold_remark(module, &s, &why)),
                None => {
                    sites.entry(FuncId(i as u32)).or_default().insert((s.launch.span.start, s.launch.span.end));
                    wanted.insert(kernel);
                }
            }
        }
    }
    if sites.is_empty() {
        return remarks;
    }
    let facts = Facts::compute(module);
    // One serial clone per child, then the clones of its helpers that read the built-ins.
    let mut serial: BTreeMap<FuncId, FuncId> = BTreeMap::new();
    for c in wanted {
        let clone = callees::clone_function(module, c, "serial");
        serial.insert(c, FuncId(module.functions.len() as u32));
        module.functions.push(clone);
    }
    let clones: Vec<FuncId> = serial.values().copied().collect();
    callees::clone_for(module, &facts, &clones);
    for (fid, spans) in &sites {
        let mut f = module.functions[fid.0 as usize].clone();
        let mut body = f.body.take().unwrap_or_default();
        replace_launch_statements(&mut body, spans, &mut |launch| site(module, &mut f, launch, serial[&child(launch)], max_threads));
        f.body = Some(body);
        module.functions[fid.0 as usize] = f;
    }
    // A parent that ran with 1024-thread blocks must still be able to.
    cap_registers(module, &sites.keys().copied().collect());
    remarks
}

/// The statement that replaces `C<<<g, b>>>(args);` in `f` (the module header's C).
fn site(module: &Module, f: &mut Function, launch: &Launch, serial: FuncId, max: u32) -> Stmt {
    let b = builder(module, launch.span);
    let span = launch.span;
    let (u, ull) = (Type::UINT, Type::ULONGLONG);
    let (ops, mut stmts) = Operands::evaluate(module, f, launch, "thr");
    let threads = new_local(f, "thr$threads", ull.clone(), span);
    let [bl, t, bix, biy, biz, tix, tiy, tiz] = ["bl", "t", "bix", "biy", "biz", "tix", "tiy", "tiz"].map(|n| new_local(f, &format!("thr${n}"), u.clone(), span));
    let lu = |id: LocalId| b.local(id, &u);
    let blocks = || b.local(ops.blocks, &ull);
    stmts.push(b.decl(threads, b.volume(&ops.block(&b), &ull)));
    let small = b.and(
        ops.valid(&b),
        b.and(
            b.cmp(BinaryOp::Le, blocks(), b.ull(max.into())),
            b.cmp(BinaryOp::Le, b.arith(BinaryOp::Mul, blocks(), b.local(threads, &ull)), b.ull(max.into())),
        ),
    );
    let (g, blk) = (|| ops.grid(&b), || ops.block(&b));
    // Unflattened as the hardware numbers a grid's blocks and a block's threads: x fastest.
    let unflatten = |i: Expr, d: &dyn Fn() -> Expr| {
        [
            b.arith(BinaryOp::Rem, i.clone(), b.axis(d(), Axis::X)),
            b.arith(BinaryOp::Rem, b.arith(BinaryOp::Div, i.clone(), b.axis(d(), Axis::X)), b.axis(d(), Axis::Y)),
            b.arith(BinaryOp::Div, i, b.arith(BinaryOp::Mul, b.axis(d(), Axis::X), b.axis(d(), Axis::Y))),
        ]
    };
    let mut call_args: Vec<Expr> = ops.args.iter().map(|(id, ty)| b.local(*id, ty)).collect();
    call_args.extend([tix, tiy, tiz, bix, biy, biz].map(lu));
    call_args.extend([blk(), g()]);
    let call = Stmt::Expr(b.e(ExprKind::Call { func: serial, args: call_args }, Type::Void));
    let mut thread_body: Vec<Stmt> = [tix, tiy, tiz].into_iter().zip(unflatten(lu(t), &blk)).map(|(l, v)| b.decl(l, v)).collect();
    thread_body.push(call);
    let mut block_body: Vec<Stmt> = [bix, biy, biz].into_iter().zip(unflatten(lu(bl), &g)).map(|(l, v)| b.decl(l, v)).collect();
    let inc = |id: LocalId| b.e(ExprKind::IncDec { place: Box::new(lu(id)), increment: true, prefix: true }, u.clone());
    block_body.push(b.for_(vec![b.decl(t, b.uint(0))], b.cmp(BinaryOp::Lt, lu(t), b.cast(b.local(threads, &ull), &u)), inc(t), thread_body));
    let in_place = b.for_(vec![b.decl(bl, b.uint(0))], b.cmp(BinaryOp::Lt, lu(bl), b.cast(blocks(), &u)), inc(bl), block_body);
    stmts.push(b.if_else(small, vec![in_place], vec![ops.direct(&b, launch)]));
    Stmt::Block(Block { stmts })
}
