//! Walking the HIR's expressions, for passes and code generation that look for one kind of
//! node (code generation's `ptx_features`).

use super::{Block, Expr, ExprKind, Init, LaunchTarget, Stmt};

/// The direct sub-expressions of `e`, in evaluation order (a launch's kernel pointer first).
fn children(e: &Expr) -> Vec<&Expr> {
    use ExprKind::*;
    match &e.kind {
        IntConst(_) | FloatConst(_) | PointerConst(_) | Local(_) | Global(_) | FuncAddr(_) => vec![],
        Deref(a) | Member { base: a, .. } | AddrOf(a) | Decay(a) | Cast(a) | Unary { operand: a, .. } => vec![a],
        IncDec { place, .. } => vec![place],
        Binary { lhs, rhs, .. } | LogicalAnd { lhs, rhs } | LogicalOr { lhs, rhs } | Comma { lhs, rhs } => vec![lhs, rhs],
        Assign { place, value } | CompoundAssign { place, value, .. } => vec![place, value],
        Conditional { cond, then, otherwise } => vec![cond, then, otherwise],
        Call { args, .. } | Builtin { args, .. } => args.iter().collect(),
        CallIndirect { callee, args } => std::iter::once(&**callee).chain(args).collect(),
        Dim3 { x, y, z } => vec![x, y, z],
        Launch(l) => {
            let super::Launch { target, grid, block, shared_mem, stream, args, .. } = &**l;
            let pointer = match target {
                LaunchTarget::Pointer(p) => Some(&**p),
                LaunchTarget::Kernel(_) => None,
            };
            pointer.into_iter().chain([grid, block, shared_mem, stream]).chain(args).collect()
        }
    }
}

fn init_roots(init: &Init, f: &mut dyn FnMut(&Expr)) {
    match init {
        Init::Expr(e) => f(e),
        Init::List(items) => items.iter().for_each(|i| init_roots(i, f)),
    }
}

/// The root expression of every statement of `b` and of its nested blocks, in order.
fn root_exprs(b: &Block, f: &mut dyn FnMut(&Expr)) {
    for s in &b.stmts {
        match s {
            Stmt::Decl { init: Some(init), .. } => init_roots(init, f),
            Stmt::Decl { init: None, .. } | Stmt::Break | Stmt::Continue | Stmt::Return(None) | Stmt::Label(_) | Stmt::Goto(_) => {}
            Stmt::Expr(e) | Stmt::Return(Some(e)) => f(e),
            Stmt::Switch { cond, body, .. } => {
                f(cond);
                root_exprs(body, f);
            }
            Stmt::If { cond, then, otherwise } => {
                f(cond);
                root_exprs(then, f);
                if let Some(o) = otherwise {
                    root_exprs(o, f);
                }
            }
            Stmt::Loop { init, cond, step, body, .. } => {
                root_exprs(init, f);
                if let Some(c) = cond {
                    f(c);
                }
                if let Some(s) = step {
                    f(s);
                }
                root_exprs(body, f);
            }
            Stmt::Block(b) => root_exprs(b, f),
            Stmt::Asm(a) => {
                a.outputs.iter().for_each(|o| f(&o.place));
                a.inputs.iter().for_each(|i| f(&i.value));
            }
        }
    }
}

/// Calls `f` on every expression of `e`, pre-order.
pub fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    for c in children(e) {
        visit_expr(c, f);
    }
}

/// Calls `f` on every expression of a block: the statements' roots in order, pre-order within
/// each, the nested blocks' in place.
pub fn visit_exprs(b: &Block, f: &mut dyn FnMut(&Expr)) {
    root_exprs(b, &mut |e| visit_expr(e, f));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::cdp::hir::{BinaryOp, Stmt};
    use crate::types::Type;

    fn int(v: i64) -> Expr {
        Expr { kind: ExprKind::IntConst(v), ty: Type::INT, span: crate::diag::Span::new(0, 0) }
    }

    /// Statement roots in order, nested blocks in place, each tree pre-order.
    #[test]
    fn every_expression_is_visited_once_in_pre_order() {
        let sum = Expr { kind: ExprKind::Binary { op: BinaryOp::Add, lhs: Box::new(int(1)), rhs: Box::new(int(2)) }, ty: Type::INT, span: crate::diag::Span::new(0, 0) };
        let inner = Block { stmts: vec![Stmt::Expr(int(4))] };
        let body = Block { stmts: vec![Stmt::Expr(sum), Stmt::If { cond: int(3), then: inner, otherwise: None }, Stmt::Return(Some(int(5)))] };
        let mut seen = Vec::new();
        visit_exprs(&body, &mut |e| seen.push(if let ExprKind::IntConst(v) = e.kind { v } else { 0 }));
        assert_eq!(seen, [0, 1, 2, 3, 4, 5]);
    }
}
