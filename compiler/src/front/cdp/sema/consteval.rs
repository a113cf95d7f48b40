//! Constant folding of checked expressions: array sizes, global initializers, the stream of a
//! launch and the flags of stream and event creation.

use crate::front::cdp::hir::{self};
use crate::front::cdp::hir::{BinaryOp, ExprKind, UnaryOp};
use crate::target::Target;
use crate::types::Type;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Const {
    Int(i128),
    Float(f64),
    Pointer(u64),
}

/// The bits of `value` as an integer of type `ty`, sign- or zero-extended back to 64 bits the
/// way the HIR stores integer constants.
pub(super) fn truncate_int(value: i128, ty: &Type, target: &Target) -> i64 {
    match ty {
        Type::Int(kind) => {
            let bits = kind.bits(target);
            if bits == 1 {
                return (value != 0) as i64;
            }
            let mask: i128 = if bits >= 64 { u64::MAX as i128 } else { (1i128 << bits) - 1 };
            let raw = value & mask;
            if kind.is_signed(target) && bits < 128 && raw >> (bits - 1) & 1 == 1 {
                (raw - (1i128 << bits)) as i64
            } else {
                raw as u64 as i64
            }
        }
        _ => value as i64,
    }
}

fn int_value(v: i64, ty: &Type, target: &Target) -> i128 {
    match ty {
        Type::Int(kind) if !kind.is_signed(target) => v as u64 as i128 & mask(kind.bits(target)),
        _ => v as i128,
    }
}

fn mask(bits: u32) -> i128 {
    if bits >= 64 {
        u64::MAX as i128
    } else {
        (1i128 << bits) - 1
    }
}

/// Evaluates `e` if it is a constant expression. Division by zero is not constant.
pub(super) fn eval(e: &hir::Expr, target: &Target) -> Option<Const> {
    let result = match &e.kind {
        ExprKind::IntConst(v) => Const::Int(int_value(*v, &e.ty, target)),
        ExprKind::FloatConst(v) => Const::Float(*v),
        ExprKind::PointerConst(v) => Const::Pointer(*v),
        ExprKind::Cast(inner) => {
            let value = eval(inner, target)?;
            match (&e.ty, value) {
                (Type::Int(k), Const::Int(v)) if *k == crate::types::IntKind::Bool => Const::Int((v != 0) as i128),
                (Type::Int(k), Const::Float(f)) if *k == crate::types::IntKind::Bool => Const::Int((f != 0.0) as i128),
                (Type::Int(_), Const::Int(v)) => Const::Int(int_value(truncate_int(v, &e.ty, target), &e.ty, target)),
                (Type::Int(_), Const::Float(f)) => Const::Int(int_value(truncate_int(f as i128, &e.ty, target), &e.ty, target)),
                (Type::Float(crate::types::FloatKind::Float), Const::Int(v)) => Const::Float(v as f32 as f64),
                (Type::Float(crate::types::FloatKind::Float), Const::Float(f)) => Const::Float(f as f32 as f64),
                (Type::Float(_), Const::Int(v)) => Const::Float(v as f64),
                (Type::Float(_), Const::Float(f)) => Const::Float(f),
                (Type::CudaError, c) => c,
                (Type::Enum { underlying, .. }, Const::Int(v)) => {
                    let ty = Type::Int(*underlying);
                    Const::Int(int_value(truncate_int(v, &ty, target), &ty, target))
                }
                (t, Const::Int(v)) if t.is_pointer_like() => Const::Pointer(v as u64),
                (t, Const::Pointer(p)) if t.is_pointer_like() => Const::Pointer(p),
                _ => return None,
            }
        }
        ExprKind::Unary { op, operand } => {
            let value = eval(operand, target)?;
            match (op, value) {
                (UnaryOp::Neg, Const::Int(v)) => Const::Int(wrap(-v, &e.ty, target)),
                (UnaryOp::Neg, Const::Float(f)) => Const::Float(-f),
                (UnaryOp::BitNot, Const::Int(v)) => Const::Int(wrap(!v, &e.ty, target)),
                (UnaryOp::Not, Const::Int(v)) => Const::Int((v == 0) as i128),
                (UnaryOp::Not, Const::Float(f)) => Const::Int((f == 0.0) as i128),
                (UnaryOp::Not, Const::Pointer(p)) => Const::Int((p == 0) as i128),
                _ => return None,
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (eval(lhs, target)?, eval(rhs, target)?);
            binary(*op, a, b, &e.ty, target)?
        }
        ExprKind::LogicalAnd { lhs, rhs } => Const::Int((truthy(eval(lhs, target)?) && truthy(eval(rhs, target)?)) as i128),
        ExprKind::LogicalOr { lhs, rhs } => Const::Int((truthy(eval(lhs, target)?) || truthy(eval(rhs, target)?)) as i128),
        ExprKind::Conditional { cond, then, otherwise } => {
            if truthy(eval(cond, target)?) {
                eval(then, target)?
            } else {
                eval(otherwise, target)?
            }
        }
        _ => return None,
    };
    Some(result)
}

fn truthy(c: Const) -> bool {
    match c {
        Const::Int(v) => v != 0,
        Const::Float(f) => f != 0.0,
        Const::Pointer(p) => p != 0,
    }
}

fn wrap(v: i128, ty: &Type, target: &Target) -> i128 {
    int_value(truncate_int(v, ty, target), ty, target)
}

fn binary(op: BinaryOp, a: Const, b: Const, ty: &Type, target: &Target) -> Option<Const> {
    use BinaryOp::*;
    Some(match (a, b) {
        (Const::Int(x), Const::Int(y)) => match op {
            Add => Const::Int(wrap(x + y, ty, target)),
            Sub => Const::Int(wrap(x - y, ty, target)),
            Mul => Const::Int(wrap(x.checked_mul(y)?, ty, target)),
            Div if y != 0 => Const::Int(wrap(x / y, ty, target)),
            Rem if y != 0 => Const::Int(wrap(x % y, ty, target)),
            Shl if (0..64).contains(&y) => Const::Int(wrap(x << y, ty, target)),
            Shr if (0..64).contains(&y) => Const::Int(wrap(x >> y, ty, target)),
            BitAnd => Const::Int(wrap(x & y, ty, target)),
            BitOr => Const::Int(wrap(x | y, ty, target)),
            BitXor => Const::Int(wrap(x ^ y, ty, target)),
            Lt => Const::Int((x < y) as i128),
            Gt => Const::Int((x > y) as i128),
            Le => Const::Int((x <= y) as i128),
            Ge => Const::Int((x >= y) as i128),
            Eq => Const::Int((x == y) as i128),
            Ne => Const::Int((x != y) as i128),
            _ => return None,
        },
        (Const::Float(x), Const::Float(y)) => {
            let single = matches!(ty, Type::Float(crate::types::FloatKind::Float));
            let round = |v: f64| if single { v as f32 as f64 } else { v };
            match op {
                Add => Const::Float(round(x + y)),
                Sub => Const::Float(round(x - y)),
                Mul => Const::Float(round(x * y)),
                Div => Const::Float(round(x / y)),
                Lt => Const::Int((x < y) as i128),
                Gt => Const::Int((x > y) as i128),
                Le => Const::Int((x <= y) as i128),
                Ge => Const::Int((x >= y) as i128),
                Eq => Const::Int((x == y) as i128),
                Ne => Const::Int((x != y) as i128),
                _ => return None,
            }
        }
        (Const::Pointer(x), Const::Pointer(y)) => match op {
            Eq => Const::Int((x == y) as i128),
            Ne => Const::Int((x != y) as i128),
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_follows_the_type() {
        let t = Target::default();
        assert_eq!(truncate_int(300, &Type::Int(crate::types::IntKind::UChar), &t), 44);
        assert_eq!(truncate_int(200, &Type::Int(crate::types::IntKind::Char), &t), -56);
        assert_eq!(truncate_int(-1, &Type::UINT, &t), 0xffff_ffff);
        assert_eq!(truncate_int(-1, &Type::ULONGLONG, &t), -1);
        assert_eq!(truncate_int(5, &Type::BOOL, &t), 1);
    }
}
