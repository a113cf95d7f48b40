//! The HIR expressions of the groups' lowering ([`Ir`]), and when an expression may be read
//! again or dropped.

use crate::diag::Span;
use crate::hir::{self, BinaryOp, Builtin, ExprKind, SpecialReg, WarpOp};
use crate::sema::expr::make;
use crate::types::Type;

/// A place that reading again reads the same object with no effect.
pub(super) fn pure_place(e: &hir::Expr) -> bool {
    match &e.kind {
        ExprKind::Local(_) | ExprKind::Global(_) => true,
        ExprKind::Member { base, .. } => pure_place(base),
        ExprKind::Deref(pointer) => pure_value(pointer),
        _ => false,
    }
}

fn pure_value(e: &hir::Expr) -> bool {
    match &e.kind {
        ExprKind::Cast(inner) | ExprKind::Decay(inner) => pure_value(inner),
        ExprKind::AddrOf(place) => pure_place(place),
        _ => pure_place(e),
    }
}

/// `value` after `first` is evaluated for its effects (`first` dropped when it has none).
pub(super) fn then(first: hir::Expr, value: hir::Expr) -> hir::Expr {
    if pure_place(&first) {
        return value;
    }
    let (ty, span) = (value.ty.clone(), value.span);
    let discarded = make(ExprKind::Cast(Box::new(first)), Type::Void, span);
    make(ExprKind::Comma { lhs: Box::new(discarded), rhs: Box::new(value) }, ty, span)
}

/// The expressions of the lowering, all at one span; integers are `unsigned int` unless said.
#[derive(Clone, Copy)]
pub(super) struct Ir {
    pub(super) span: Span,
}

impl Ir {
    pub(super) fn new(span: Span) -> Ir {
        Ir { span }
    }

    pub(super) fn uint(self, v: u32) -> hir::Expr {
        make(ExprKind::IntConst(v as i64), Type::UINT, self.span)
    }

    pub(super) fn int(self, v: i32) -> hir::Expr {
        make(ExprKind::IntConst(v as i64), Type::INT, self.span)
    }

    pub(super) fn builtin(self, builtin: Builtin, args: Vec<hir::Expr>, ty: Type) -> hir::Expr {
        make(ExprKind::Builtin { builtin, args }, ty, self.span)
    }

    pub(super) fn reg(self, reg: SpecialReg) -> hir::Expr {
        self.builtin(Builtin::SpecialReg(reg), vec![], Type::UINT)
    }

    pub(super) fn warp(self, op: WarpOp, args: Vec<hir::Expr>) -> hir::Expr {
        let ty = if op == WarpOp::SyncWarp { Type::Void } else { Type::UINT };
        self.builtin(Builtin::Warp(op), args, ty)
    }

    /// An operator on two operands of one type: arithmetic keeps it, comparisons give `int`.
    pub(super) fn op(self, op: BinaryOp, lhs: hir::Expr, rhs: hir::Expr) -> hir::Expr {
        let ty = match op {
            BinaryOp::Lt | BinaryOp::Gt | BinaryOp::Le | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => Type::INT,
            _ => lhs.ty.clone(),
        };
        make(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, ty, self.span)
    }

    pub(super) fn cond(self, cond: hir::Expr, then: hir::Expr, otherwise: hir::Expr) -> hir::Expr {
        let ty = then.ty.clone();
        make(ExprKind::Conditional { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) }, ty, self.span)
    }

    pub(super) fn cast(self, e: hir::Expr, ty: &Type) -> hir::Expr {
        if &e.ty == ty {
            return e;
        }
        make(ExprKind::Cast(Box::new(e)), ty.clone(), self.span)
    }

    /// A word of a 16-byte group's data.
    pub(super) fn field(self, object: &hir::Expr, index: u32) -> hir::Expr {
        make(ExprKind::Member { base: Box::new(object.clone()), index }, Type::UINT, self.span)
    }

    pub(super) fn make_struct(self, ty: Type, fields: Vec<hir::Expr>) -> hir::Expr {
        self.builtin(Builtin::MakeStruct, fields, ty)
    }

    /// `details::cta::thread_rank()`: `vec3_to_linear(threadIdx, blockDim)`, z * (ny * nx) +
    /// y * nx + x in `unsigned int`.
    pub(super) fn cta_rank(self) -> hir::Expr {
        use crate::hir::Axis::{X, Y, Z};
        let (nx, ny) = (self.reg(SpecialReg::BlockDim(X)), self.reg(SpecialReg::BlockDim(Y)));
        let z = self.op(BinaryOp::Mul, self.op(BinaryOp::Mul, self.reg(SpecialReg::ThreadIdx(Z)), ny), nx.clone());
        let y = self.op(BinaryOp::Mul, self.reg(SpecialReg::ThreadIdx(Y)), nx);
        self.op(BinaryOp::Add, self.op(BinaryOp::Add, z, y), self.reg(SpecialReg::ThreadIdx(X)))
    }

    /// `details::cta::size()`: blockDim.x * blockDim.y * blockDim.z.
    pub(super) fn cta_size(self) -> hir::Expr {
        use crate::hir::Axis::{X, Y, Z};
        let xy = self.op(BinaryOp::Mul, self.reg(SpecialReg::BlockDim(X)), self.reg(SpecialReg::BlockDim(Y)));
        self.op(BinaryOp::Mul, xy, self.reg(SpecialReg::BlockDim(Z)))
    }

    pub(super) fn lane_id(self) -> hir::Expr {
        self.reg(SpecialReg::LaneId)
    }

    pub(super) fn popc(self, x: hir::Expr) -> hir::Expr {
        self.warp(WarpOp::PopCount, vec![x])
    }

    /// `__ballot_sync(mask, pred)` (`pred` an `int`).
    pub(super) fn ballot(self, mask: hir::Expr, pred: hir::Expr) -> hir::Expr {
        self.warp(WarpOp::Ballot, vec![mask, pred])
    }

    /// Evaluates `setup` in order, then `value`.
    pub(super) fn sequence(self, setup: Vec<hir::Expr>, value: hir::Expr) -> hir::Expr {
        setup.into_iter().rev().fold(value, |rest, first| {
            let ty = rest.ty.clone();
            make(ExprKind::Comma { lhs: Box::new(first), rhs: Box::new(rest) }, ty, self.span)
        })
    }
}

