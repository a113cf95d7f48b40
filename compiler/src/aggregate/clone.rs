//! The record of a launch and the aggregated clone of a child kernel, which maps each of its
//! blocks back to a record: shared by both granularities.

use super::*;


pub(super) fn record_size(module: &Module, child: FuncId) -> u64 {
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
pub(super) fn make_record(module: &mut Module, child: FuncId) -> StructId {
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
pub(super) fn build_agg_kernel(module: &Module, child: &Function, record: StructId) -> Function {
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
