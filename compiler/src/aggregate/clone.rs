//! The record of a launch and the aggregated clone of a child kernel, which maps each of its
//! blocks back to a record: shared by both granularities.

use super::*;

/// The fields of `child`'s record, C-laid-out: start, done, grid, block, then the child's
/// parameters; with the record's size and alignment.
fn record_layout(module: &Module, child: FuncId) -> (Vec<Field>, u64, u64) {
    let mut fields = vec![
        ("start".to_string(), Type::UINT),
        ("done".to_string(), Type::UINT),
        ("grid".to_string(), Type::Dim3),
        ("block".to_string(), Type::Dim3),
    ];
    fields.extend(module.function(child).param_types().enumerate().map(|(i, ty)| (format!("arg{i}"), ty.clone())));
    let (mut size, mut align) = (0, 1);
    let mut out = Vec::new();
    for (name, ty) in fields {
        let (s, a) = module.size_align(&ty);
        let offset = round_up(size, a);
        size = offset + s;
        align = align.max(a);
        out.push(Field { name, ty, offset, volatile: false, bits: None });
    }
    (out, round_up(size, align), align)
}

/// The size of `child`'s record in bytes, before the record struct exists.
pub(super) fn record_size(module: &Module, child: FuncId) -> u64 {
    record_layout(module, child).1
}

/// Adds the record struct of `child` to the module.
pub(super) fn make_record(module: &mut Module, child: FuncId) -> StructId {
    let (fields, size, align) = record_layout(module, child);
    let f = module.function(child);
    let def = StructDef { name: format!("{}$agg_record", f.name), fields, size, align, span: f.span, union: false };
    let id = StructId(module.structs.len() as u32);
    module.structs.push(def);
    id
}

pub(super) fn unique_function_name(module: &Module, base: &str) -> String {
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
pub(super) fn build_agg_kernel(module: &Module, child: &Function, record: StructId, pool: Option<&pool::Pool>, arena: Option<&arena::Arena>) -> Function {
    let b = builder(module, child.span);
    let rec_ty = Type::Struct(record);
    let rec_ptr = Type::pointer_to(rec_ty.clone());
    let mut f = Function {
        name: unique_function_name(module, &format!("{}__agg", child.name)),
        kind: FunctionKind::Kernel,
        // cdpc's own: no nvcc name to match, and the name as written is the easiest to find.
        linkage: crate::hir::Linkage::C,
        return_type: Type::Void,
        params: Vec::new(),
        locals: child.locals.clone(),
        body: None,
        span: child.span,
        // The clone's blocks are not the child's: its launch bounds do not carry over.
        attrs: Default::default(),
        internal: false,
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
    // Every thread has read its record: the last block to get here gives the table back (the
    // fence orders this block's reads before its count, for a table that is used again).
    body.push(b.sync());
    let done = b.addr_of(b.member(b.deref(l(recs)), F_DONE, &Type::UINT));
    let last = b.arith(BinaryOp::Sub, b.special(SpecialReg::GridDim(Axis::X)), b.uint(1));
    let free = pool::give_back(module, &b, pool, arena, l(recs));
    body.push(b.if_(
        b.cmp(BinaryOp::Eq, b.special(SpecialReg::ThreadIdx(Axis::X)), b.uint(0)),
        vec![
            Stmt::Expr(b.builtin(Builtin::ThreadFence, vec![], &Type::Void)),
            b.if_(b.cmp(BinaryOp::Eq, b.atomic(AtomicOp::Add, done, b.uint(1)), last), vec![free]),
        ],
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
            // The hardware's lane stays the hardware's: a clone runs its threads in warps too.
            SpecialReg::WarpSize | SpecialReg::GridId | SpecialReg::LaneId => None,
        }
    };
    map_block(&mut original, &subst);
    body.push(Stmt::Block(original));
    f.body = Some(Block { stmts: body });
    f
}

/// A launch's operands, evaluated once into locals of the launching function, in the order
/// of the original launch (grid, block, then the arguments converted to the parameter types).
pub(super) struct Operands {
    pub(super) grid: LocalId,
    pub(super) block: LocalId,
    pub(super) args: Vec<(LocalId, Type)>,
    /// The grid's block count, `unsigned long long`.
    pub(super) blocks: LocalId,
}

impl Operands {
    /// Declares the locals in `f` and returns the statements that set them.
    /// The locals are named `PREFIX$grid`, `PREFIX$arg0`, ...: a pass's own prefix keeps them
    /// apart from the locals `callees.rs` finds by name in a clone (`agg$grid`, ...).
    pub(super) fn evaluate(module: &Module, f: &mut Function, launch: &Launch, prefix: &str) -> (Operands, Vec<Stmt>) {
        let b = builder(module, launch.span);
        let span = launch.span;
        let grid = new_local(f, &format!("{prefix}$grid"), Type::Dim3, span);
        let block = new_local(f, &format!("{prefix}$block"), Type::Dim3, span);
        let param_types: Vec<Type> = module.function(child(launch)).param_types().cloned().collect();
        let args: Vec<(LocalId, Type)> = param_types
            .into_iter()
            .enumerate()
            .map(|(i, ty)| (new_local(f, &format!("{prefix}$arg{i}"), ty.clone(), span), ty))
            .collect();
        let blocks = new_local(f, &format!("{prefix}$blocks"), Type::ULONGLONG, span);
        let ops = Operands { grid, block, args, blocks };
        let mut stmts = vec![b.decl(grid, launch.grid.clone()), b.decl(block, launch.block.clone())];
        for ((id, ty), arg) in ops.args.iter().zip(&launch.args) {
            stmts.push(b.decl(*id, b.cast(arg.clone(), ty)));
        }
        stmts.push(b.decl(blocks, b.volume(&ops.grid(&b), &Type::ULONGLONG)));
        (ops, stmts)
    }

    pub(super) fn grid(&self, b: &B) -> Expr {
        b.local(self.grid, &Type::Dim3)
    }

    pub(super) fn block(&self, b: &B) -> Expr {
        b.local(self.block, &Type::Dim3)
    }

    /// Whether the runtime would accept the configuration and it fits a record (at most
    /// `MAX_BLOCKS_PER_RECORD` blocks): anything else is launched directly, so it fails (or
    /// runs) as before.
    pub(super) fn valid(&self, b: &B) -> Expr {
        let ull = Type::ULONGLONG;
        let (lg, lb) = (|| self.grid(b), || self.block(b));
        let ge1 = |e: Expr| b.cmp(BinaryOp::Ge, e, b.uint(1));
        let le = |e: Expr, v: u64| b.cmp(BinaryOp::Le, e, b.uint(v));
        let conds = [
            ge1(b.axis(lg(), Axis::X)),
            ge1(b.axis(lg(), Axis::Y)),
            ge1(b.axis(lg(), Axis::Z)),
            le(b.axis(lg(), Axis::Y), 65535),
            le(b.axis(lg(), Axis::Z), 65535),
            b.cmp(BinaryOp::Le, b.local(self.blocks, &ull), b.ull(MAX_BLOCKS_PER_RECORD)),
            ge1(b.axis(lb(), Axis::X)),
            ge1(b.axis(lb(), Axis::Y)),
            ge1(b.axis(lb(), Axis::Z)),
            le(b.axis(lb(), Axis::X), 1024),
            le(b.axis(lb(), Axis::Y), 1024),
            le(b.axis(lb(), Axis::Z), 64),
            b.cmp(BinaryOp::Le, b.volume(&lb(), &ull), b.ull(1024)),
        ];
        conds.into_iter().reduce(|a, c| b.and(a, c)).expect("conditions")
    }

    /// Stores of grid, block and arguments into the record place `rec` (start and done are
    /// the caller's).
    pub(super) fn store(&self, b: &B, rec: &dyn Fn() -> Expr) -> Vec<Stmt> {
        let field = |idx: u32, ty: &Type| b.member(rec(), idx, ty);
        let mut out = vec![
            b.assign(field(F_GRID, &Type::Dim3), self.grid(b)),
            b.assign(field(F_BLOCK, &Type::Dim3), self.block(b)),
        ];
        for (i, (id, ty)) in self.args.iter().enumerate() {
            out.push(b.assign(field(F_ARG0 + i as u32, ty), b.local(*id, ty)));
        }
        out
    }

    /// The original launch with the evaluated operands.
    pub(super) fn direct(&self, b: &B, launch: &Launch) -> Stmt {
        let direct = Launch {
            grid: self.grid(b),
            block: self.block(b),
            args: self.args.iter().map(|(id, ty)| b.local(*id, ty)).collect(),
            ..launch.clone()
        };
        Stmt::Expr(b.e(ExprKind::Launch(Box::new(direct)), Type::Void))
    }
}

/// `C__agg<<<blocks, threads>>>(records, count)`: one launch of the clone over a table, at
/// the module's launch ABI.
#[allow(clippy::too_many_arguments)]
pub(super) fn agg_launch(m: &Module, b: &B, agg: FuncId, record: StructId, shared_mem: u64, records: Expr, count: Expr, blocks: Expr, threads: Expr) -> Stmt {
    let launch = agg_launch_of(m, b, agg, record, shared_mem, records, count, blocks, threads);
    Stmt::Expr(b.e(ExprKind::Launch(Box::new(launch)), Type::Void))
}

/// The same launch as an expression of its `cudaError_t` status, for the callers that fall
/// back to the records' own launches when it fails; `abi` overrides the module's launch ABI
/// for this launch alone (`hir::Launch::abi`: warp granularity's launch is V1).
#[allow(clippy::too_many_arguments)]
pub(super) fn agg_launch_status(m: &Module, b: &B, agg: FuncId, record: StructId, shared_mem: u64, records: Expr, count: Expr, blocks: Expr, threads: Expr, abi: Option<LaunchAbi>) -> Expr {
    let launch = Launch { abi, ..agg_launch_of(m, b, agg, record, shared_mem, records, count, blocks, threads) };
    b.e(ExprKind::Launch(Box::new(launch)), Type::CudaError)
}

#[allow(clippy::too_many_arguments)]
fn agg_launch_of(m: &Module, b: &B, agg: FuncId, record: StructId, shared_mem: u64, records: Expr, count: Expr, blocks: Expr, threads: Expr) -> Launch {
    let layout = param_layout([Type::pointer_to(Type::Struct(record)), Type::UINT].iter(), m, &m.target);
    Launch {
        target: LaunchTarget::Kernel(agg),
        grid: b.dim3(blocks, b.uint(1), b.uint(1)),
        block: b.dim3(threads, b.uint(1), b.uint(1)),
        shared_mem: b.uint(shared_mem),
        stream: b.null_stream(),
        args: vec![records, count],
        layout,
        span: b.span,
        abi: None,
    }
}

/// The launch a record stands for, `C<<<rec->grid, rec->block, shared_mem>>>(rec->args...)`,
/// made as it was: `rec` gives the record's address.
pub(super) fn record_launch(m: &Module, b: &B, child: FuncId, shared_mem: u64, rec: &dyn Fn() -> Expr) -> Stmt {
    let field = |idx: u32, ty: &Type| b.member(b.deref(rec()), idx, ty);
    let c = m.function(child);
    let launch = Launch {
        target: LaunchTarget::Kernel(child),
        grid: field(F_GRID, &Type::Dim3),
        block: field(F_BLOCK, &Type::Dim3),
        shared_mem: b.uint(shared_mem),
        stream: b.null_stream(),
        args: c.param_types().enumerate().map(|(k, ty)| field(F_ARG0 + k as u32, ty)).collect(),
        layout: param_layout(c.param_types(), m, &m.target),
        span: b.span,
        abi: None,
    };
    Stmt::Expr(b.e(ExprKind::Launch(Box::new(launch)), Type::Void))
}
