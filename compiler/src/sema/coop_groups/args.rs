//! The arguments and temporaries of the groups' lowering: argument counts and conversions as
//! the header's parameters take them (`E0951`), values read once into temporaries when the
//! lowering uses them more than once, and the shuffles of a group's `shfl*` methods.

use super::ir::{pure_place, Ir};
use crate::diag::Code;
use crate::front::ast;
use crate::hir::{self, BinaryOp, Builtin, ExprKind};
use crate::sema::expr::make;
use crate::sema::Context;
use crate::types::Type;

impl Context {
    /// Checks a group method's argument count (`E0951`).
    pub(super) fn expect_args(&mut self, name: &ast::Ident, args: &[ast::Expr], n: usize) -> Option<()> {
        if args.len() == n {
            return Some(());
        }
        let short = name.name.rsplit("::").next().unwrap_or(&name.name).to_string();
        self.error(Code::CoopGroupsMisuse, name.span, format!("`{short}` takes {n} argument{}, but {} were given", crate::sema::expr::plural(n), args.len()))
            .emit();
        None
    }

    /// An argument converted to `ty` as the header's parameter takes it (`E0951` if it cannot).
    pub(super) fn group_arg(&mut self, method: &ast::Ident, arg: &ast::Expr, ty: &Type) -> Option<hir::Expr> {
        let value = self.expr(arg)?;
        let what = format!("an argument of `{}` has the wrong type", method.name);
        self.coerce(value, ty, Code::CoopGroupsMisuse, &what)
    }

    /// An argument as the header's parameter takes it, where it can be read more than once
    /// (arguments are evaluated before the call, in order, through `setup`).
    pub(super) fn group_arg_once(&mut self, method: &ast::Ident, arg: &ast::Expr, ty: &Type, setup: &mut Vec<hir::Expr>) -> Option<hir::Expr> {
        let value = self.group_arg(method, arg, ty)?;
        Some(self.reusable(value, setup))
    }

    /// The value a group's `shfl` moves, read once into `setup`, and the type of the result
    /// (the header's `TyRet`, the value's type without qualifiers). The header's native
    /// shuffle takes integers and floating-point values; cdpc's those of up to 64 bits but
    /// `double`.
    pub(super) fn shuffled_value(&mut self, method: &ast::Ident, arg: &ast::Expr, setup: &mut Vec<hir::Expr>) -> Option<hir::Expr> {
        let value = self.expr(arg)?;
        let value = self.rvalue(value);
        let ok = match &value.ty {
            Type::Int(k) => k.bytes(&self.target) <= 8,
            Type::Float(crate::types::FloatKind::Float) => true,
            _ => false,
        };
        if !ok {
            let found = self.show(&value.ty);
            // nvcc's header shuffles any trivially copyable value of up to 32 bytes.
            self.error(Code::CoopGroupsUnsupported, value.span, format!("`{}` of {found} is not supported yet", method.name))
                .primary(format!("this has type {found}"))
                .note("cdpc's groups shuffle integers of up to 64 bits and `float`; move other values as integers")
                .emit();
            return None;
        }
        Some(self.reusable(value, setup))
    }

    /// A shuffle of `value` (from [`Context::shuffled_value`]) among `mask`'s lanes, as
    /// `__shfl*_sync(mask, value, lane, width)`: one 32-bit shuffle, or two of a 64-bit
    /// integer's halves as CUDA's `long long` overloads do; the result has the value's type.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn group_shuffle(&mut self, ir: Ir, kind: hir::ShuffleKind, mask: hir::Expr, value: &hir::Expr, lane: hir::Expr, width: i32, setup: &mut Vec<hir::Expr>) -> hir::Expr {
        let ty = value.ty.clone();
        let lane = ir.cast(lane, &Type::INT);
        let one = |ir: Ir, v: hir::Expr, lane: hir::Expr, operand: &Type| {
            let args = vec![mask.clone(), ir.cast(v, operand), lane, ir.int(width)];
            ir.builtin(Builtin::Intrinsic(hir::Intrinsic::Shuffle(kind)), args, operand.clone())
        };
        let wide = matches!(&ty, Type::Int(k) if k.bytes(&self.target) == 8);
        if !wide {
            let operand = if ty == Type::FLOAT { Type::FLOAT } else { self.promote(&ty) };
            return ir.cast(one(ir, value.clone(), lane, &operand), &ty);
        }
        let lane = self.reusable(lane, setup);
        let bits = ir.cast(value.clone(), &Type::ULONGLONG);
        let high = ir.cast(ir.op(BinaryOp::Shr, bits.clone(), make(ExprKind::IntConst(32), Type::ULONGLONG, ir.span)), &Type::UINT);
        let low = ir.cast(bits, &Type::UINT);
        let high = ir.cast(one(ir, high, lane.clone(), &Type::UINT), &Type::ULONGLONG);
        let low = ir.cast(one(ir, low, lane, &Type::UINT), &Type::ULONGLONG);
        let joined = ir.op(BinaryOp::BitOr, ir.op(BinaryOp::Shl, high, make(ExprKind::IntConst(32), Type::ULONGLONG, ir.span)), low);
        ir.cast(joined, &ty)
    }

    /// `value` where it can be read more than once: itself when it is a constant or a place
    /// whose reading has no effect, else a temporary.
    pub(super) fn reusable(&mut self, value: hir::Expr, setup: &mut Vec<hir::Expr>) -> hir::Expr {
        if pure_place(&value) || matches!(value.kind, ExprKind::IntConst(_) | ExprKind::FloatConst(_)) {
            value
        } else {
            self.group_temp(value, setup)
        }
    }

    /// `value` in a new local, its assignment added to `setup`: for a value used twice.
    pub(super) fn group_temp(&mut self, value: hir::Expr, setup: &mut Vec<hir::Expr>) -> hir::Expr {
        let (ty, span) = (value.ty.clone(), value.span);
        let local = self.new_local("cg.tmp", ty.clone(), span);
        let place = make(ExprKind::Local(local), ty.clone(), span);
        setup.push(make(ExprKind::Assign { place: Box::new(place.clone()), value: Box::new(value) }, ty, span));
        place
    }
}
