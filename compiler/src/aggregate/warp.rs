//! Warp granularity: the threads of a warp that reach a launch together make one launch.
//!
//! At the site, the launching threads evaluate the launch's operands as before, then find
//! each other with `__activemask()` and `__ballot_sync` (those whose configuration is valid).
//! A lone thread launches directly. Otherwise the lowest lane takes a table of one record per
//! thread from the child's pool (`pool.rs`; `cudaMalloc` when the pool is full) and shares the
//! pointer with `__shfl_sync`; every thread writes its
//! record, fences, and meets the others at `__syncwarp`; the lowest lane numbers the records'
//! blocks and launches `C__agg` over all of them, then tells the others with a shuffle (which
//! also holds them until it has launched, so that a later launch of theirs stays behind this
//! one in the block's NULL stream) whether it worked. If it did not, or the child has barriers
//! and the block sizes differ, the table is freed and every thread launches its own as it was:
//! each thread's `cudaGetLastError()` then says what its own launch did, as without
//! aggregation. Nothing moves past any other statement, so unlike block granularity this works
//! in loops, divergent code, device functions and kernels that return early.
//!
//! The leader's launch of `C__agg` goes through the documented V1 entry points
//! (`cudaGetParameterBuffer` + `cudaLaunchDevice`) whatever `--launch-abi` says
//! (`hir::Launch::abi`); every other launch, the lanes' own launches as they were included,
//! keeps the module's ABI. With V2, `__cudaCDP2GetParameterBufferV2` did not return while
//! other lanes of the warp waited at the leader's shuffle: `launch_sites` at 8192 launches hung
//! in 22 of 25 runs, with V1 in none (results/warp-hang.md, docs/AGGREGATION.md).

use super::*;

/// Rewrites the launch statements of `fid` whose spans are in `sites` into warp-aggregated
/// launches of their children's clones (`aggs`).
pub(super) fn rewrite_function(module: &mut Module, fid: FuncId, sites: &BTreeSet<(u32, u32)>, aggs: &BTreeMap<FuncId, AggChild>) {
    let mut f = module.functions[fid.0 as usize].clone();
    let mut body = f.body.take().unwrap_or_default();
    replace_launch_statements(&mut body, sites, &mut |launch| site(module, &mut f, launch, &aggs[&child(launch)]));
    f.body = Some(body);
    module.functions[fid.0 as usize] = f;
}

/// The statement that replaces `C<<<g, b>>>(args);` in `f`.
fn site(module: &Module, f: &mut Function, launch: &Launch, a: &AggChild) -> Stmt {
    let b = builder(module, launch.span);
    let span = launch.span;
    let (u, int) = (Type::UINT, Type::INT);
    let rec_ptr = Type::pointer_to(Type::Struct(a.record));
    let void_ptr = Type::pointer_to(Type::Void);
    let wide = module.target.address_size == AddressSize::Bits64;
    let warp = |op: WarpOp, args: Vec<Expr>| b.builtin(Builtin::Warp(op), args, &u);

    let (ops, mut stmts) = Operands::evaluate(module, f, launch, "agg");
    let mut local = |name: &str, ty: &Type| new_local(f, &format!("agg${name}"), ty.clone(), span);
    let [mask, group, n, rank, leader, lo, hi, total, min_t, max_t, i, threads, fallback] =
        ["mask", "group", "n", "rank", "leader", "lo", "hi", "total", "min_threads", "max_threads", "i", "threads", "fallback"]
            .map(|name| local(name, &u));
    let (valid, done) = (local("valid", &int), local("done", &int));
    let allocation = local("allocation", &void_ptr);
    let table = local("table", &rec_ptr);
    let l = |id: LocalId, ty: &Type| b.local(id, ty);
    let lu = |id: LocalId| b.local(id, &u);

    stmts.push(b.decl(valid, ops.valid(&b)));
    stmts.push(b.decl(mask, warp(WarpOp::ActiveMask, vec![])));
    stmts.push(b.decl(group, warp(WarpOp::Ballot, vec![lu(mask), l(valid, &int)])));
    stmts.push(b.decl(done, b.int(0)));

    // The lowest lane allocates the table; every lane of the group gets its address.
    let malloc = pool::heap_table(module, &b, allocation, lu(n), a.record);
    let null = || b.null(&void_ptr);
    let lowest_bit = b.arith(BinaryOp::BitAnd, lu(group), b.arith(BinaryOp::Sub, b.uint(0), lu(group)));
    let mut shared_address = vec![
        b.decl(rank, warp(WarpOp::PopCount, vec![b.arith(BinaryOp::BitAnd, lu(group), warp(WarpOp::LaneMaskLt, vec![]))])),
        b.decl(leader, warp(WarpOp::PopCount, vec![b.arith(BinaryOp::Sub, lowest_bit, b.uint(1))])),
        b.decl(allocation, null()),
    ];
    // The leader's table: a chunk of the child's pool, else the heap.
    let mut take = Vec::new();
    if let Some(pool) = &a.pool {
        let taken = local("taken", &rec_ptr);
        take.push(b.decl(taken, b.null(&rec_ptr)));
        // a start that spreads the warps of a grid over the pool's words
        let start = b.arith(
            BinaryOp::Add,
            b.arith(BinaryOp::Mul, b.special(SpecialReg::BlockIdx(Axis::X)), b.uint(33)),
            b.arith(BinaryOp::Div, b.special(SpecialReg::ThreadIdx(Axis::X)), b.uint(32)),
        );
        take.extend(pool.take(module, f, &b, taken, start));
        take.push(b.assign(l(allocation, &void_ptr), b.cast(b.local(taken, &rec_ptr), &void_ptr)));
    }
    take.push(b.if_(
        b.cmp(BinaryOp::Eq, l(allocation, &void_ptr), null()),
        vec![b.if_(b.cmp(BinaryOp::Ne, b.cast(malloc, &int), b.int(0)), vec![b.assign(l(allocation, &void_ptr), null())])],
    ));
    shared_address.push(b.if_(b.cmp(BinaryOp::Eq, lu(rank), b.uint(0)), take));
    let shuffle = |word: Expr| warp(WarpOp::Shuffle, vec![lu(group), word, lu(leader)]);
    if wide {
        let ull = Type::ULONGLONG;
        let bits = || b.cast(l(allocation, &void_ptr), &ull);
        shared_address.push(b.decl(lo, shuffle(b.cast(bits(), &u))));
        shared_address.push(b.decl(hi, shuffle(b.cast(b.arith(BinaryOp::Shr, bits(), b.ull(32)), &u))));
        let joined = b.arith(BinaryOp::BitOr, b.arith(BinaryOp::Shl, b.cast(lu(hi), &ull), b.ull(32)), b.cast(lu(lo), &ull));
        shared_address.push(b.decl(table, b.cast(joined, &rec_ptr)));
    } else {
        shared_address.push(b.decl(lo, shuffle(b.cast(l(allocation, &void_ptr), &u))));
        shared_address.push(b.decl(table, b.cast(lu(lo), &rec_ptr)));
    }

    // Every lane writes its record; the lowest lane numbers the blocks and launches.
    let rec = |index: Expr| b.index(l(table, &rec_ptr), index);
    let mine = || rec(lu(rank));
    let mut write = vec![b.assign(b.member(mine(), F_START, &u), b.uint(0)), b.assign(b.member(mine(), F_DONE, &u), b.uint(0))];
    write.extend(ops.store(&b, &mine));
    write.push(Stmt::Expr(b.builtin(Builtin::ThreadFence, vec![], &Type::Void)));
    write.push(Stmt::Expr(b.builtin(Builtin::Warp(WarpOp::SyncWarp), vec![lu(group)], &Type::Void)));

    let ith = || rec(lu(i));
    let count_loop = |body: Vec<Stmt>| {
        let step = b.e(ExprKind::IncDec { place: Box::new(lu(i)), increment: true, prefix: true }, u.clone());
        b.for_(vec![b.decl(i, b.uint(0))], b.cmp(BinaryOp::Lt, lu(i), lu(n)), step, body)
    };
    let mut leader_stmts = vec![
        b.decl(total, b.uint(0)),
        b.decl(min_t, b.uint(u32::MAX as u64)),
        b.decl(max_t, b.uint(0)),
        count_loop(vec![
            b.assign(b.member(ith(), F_START, &u), lu(total)),
            b.assign(lu(total), b.arith(BinaryOp::Add, lu(total), b.volume(&b.member(ith(), F_GRID, &Type::Dim3), &u))),
            b.decl(threads, b.volume(&b.member(ith(), F_BLOCK, &Type::Dim3), &u)),
            b.assign(lu(min_t), b.builtin(Builtin::Min, vec![lu(min_t), lu(threads)], &u)),
            b.assign(lu(max_t), b.builtin(Builtin::Max, vec![lu(max_t), lu(threads)], &u)),
        ]),
    ];
    // The aggregated launch's status: on failure every lane launches its own as it was, so
    // that each thread's cudaGetLastError() says what its own launch did.
    // Through the V1 entry points in every build: the group's lanes wait for it at the shuffle
    // below (module docs).
    let agg_launch = agg_launch_status(module, &b, a.agg, a.record, a.shared_mem, l(table, &rec_ptr), lu(n), lu(total), lu(max_t), Some(LaunchAbi::V1));
    let launch_and_check = b.if_(b.cmp(BinaryOp::Ne, b.cast(agg_launch, &int), b.int(0)), vec![b.assign(lu(fallback), b.uint(1))]);
    if a.child_syncs {
        // The clone's barriers need every thread of a block: only equal block sizes.
        leader_stmts.push(b.if_else(
            b.cmp(BinaryOp::Ne, lu(min_t), lu(max_t)),
            vec![b.assign(lu(fallback), b.uint(1))],
            vec![launch_and_check],
        ));
    } else {
        leader_stmts.push(launch_and_check);
    }
    let give_back = pool::give_back(module, &b, a.pool.as_ref(), None, l(table, &rec_ptr));
    leader_stmts.push(b.if_(b.cmp(BinaryOp::Ne, lu(fallback), b.uint(0)), vec![give_back]));
    write.push(b.decl(fallback, b.uint(0)));
    write.push(b.if_(b.cmp(BinaryOp::Eq, lu(rank), b.uint(0)), leader_stmts));
    // The shuffle also holds the lanes until the leader has launched, so that a later launch
    // of theirs stays behind this one in the block's NULL stream.
    write.push(b.assign(lu(fallback), shuffle(lu(fallback))));
    write.push(b.assign(l(done, &int), b.cast(b.cmp(BinaryOp::Eq, lu(fallback), b.uint(0)), &int)));

    let mut several = shared_address;
    several.push(b.if_(b.cmp(BinaryOp::Ne, l(table, &rec_ptr), b.null(&rec_ptr)), write));
    stmts.push(b.if_(
        l(valid, &int),
        vec![
            b.decl(n, warp(WarpOp::PopCount, vec![lu(group)])),
            b.if_(b.cmp(BinaryOp::Gt, lu(n), b.uint(1)), several),
        ],
    ));
    stmts.push(b.if_(b.cmp(BinaryOp::Eq, l(done, &int), b.int(0)), vec![ops.direct(&b, launch)]));
    Stmt::Block(Block { stmts })
}
