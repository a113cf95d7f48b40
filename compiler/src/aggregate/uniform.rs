//! Values every thread of every launch agrees on, for what an aggregated launch must ask for
//! as one: a launch's dynamic shared memory is taken when it is such a value (KLAP's QT asks
//! for `4 * NUM_WARPS_PER_BLOCK * sizeof(int)` with `const int NUM_WARPS_PER_BLOCK =
//! NUM_THREADS_PER_BLOCK / warpSize`).
//!
//! A uniform value is an integer constant; `warpSize`, which is 32 on every NVIDIA GPU (PTX has
//! it as the constant `WARP_SZ`); a local whose only store is its declaration's initializer,
//! when that initializer is uniform; and integer arithmetic and conversions of those.

use super::walk::{root_exprs, visit_expr, visit_stmts};
use crate::hir::{BinaryOp, Block, Builtin, Expr, ExprKind, FuncId, Init, LocalId, SpecialReg, Stmt, UnaryOp};
use crate::target::Target;
use crate::types::Type;
use std::collections::HashMap;

/// The width of a warp on every NVIDIA GPU.
const WARP_SIZE: i64 = 32;

/// How many locals deep an initializer is followed.
const MAX_DEPTH: u32 = 16;

/// The locals of a function body that are stored to only by their declaration's initializer,
/// with that initializer.
pub(super) struct SingleStores<'a> {
    inits: HashMap<LocalId, &'a Expr>,
}

impl<'a> SingleStores<'a> {
    pub(super) fn of(body: &'a Block) -> SingleStores<'a> {
        // Every `Decl` with an expression initializer: `Some(init)`; a second declaration of
        // the same local, or one without an initializer, makes it `None`.
        let mut inits: HashMap<LocalId, Option<&'a Expr>> = HashMap::new();
        let mut stored = Vec::new();
        visit_stmts(body, &mut |s| match s {
            Stmt::Decl { local, init } => {
                let value = match init {
                    Some(Init::Expr(e)) if !inits.contains_key(local) => Some(e),
                    _ => None,
                };
                inits.insert(*local, value);
            }
            Stmt::Asm(a) => stored.extend(a.outputs.iter().filter_map(|o| root_local(&o.place))),
            _ => {}
        });
        root_exprs(body, &mut |e| {
            visit_expr(e, &mut |e| match &e.kind {
                ExprKind::Assign { place, .. } | ExprKind::CompoundAssign { place, .. } | ExprKind::IncDec { place, .. } | ExprKind::AddrOf(place) => {
                    stored.extend(root_local(place))
                }
                _ => {}
            })
        });
        for id in stored {
            inits.insert(id, None);
        }
        SingleStores { inits: inits.into_iter().filter_map(|(id, init)| Some((id, init?))).collect() }
    }

    /// The value of `e` when it is uniform and fits in 64 bits.
    pub(super) fn value(&self, e: &Expr, target: &Target) -> Option<i64> {
        self.eval(e, target, 0)
    }

    /// The kernel whose address `e` is on every path: a kernel's address, through pointer
    /// casts and locals only their declaration stores (`kernel_fn k = child;`).
    pub(super) fn kernel_address(&self, e: &Expr, depth: u32) -> Option<FuncId> {
        match &e.kind {
            ExprKind::FuncAddr(f) => Some(*f),
            ExprKind::Cast(inner) if e.ty.is_pointer_like() && inner.ty.is_pointer_like() => self.kernel_address(inner, depth),
            ExprKind::Local(id) if depth < MAX_DEPTH => self.kernel_address(self.inits.get(id)?, depth + 1),
            _ => None,
        }
    }

    fn eval(&self, e: &Expr, target: &Target, depth: u32) -> Option<i64> {
        match &e.kind {
            ExprKind::IntConst(n) => Some(*n),
            ExprKind::Builtin { builtin: Builtin::SpecialReg(SpecialReg::WarpSize), .. } => Some(WARP_SIZE),
            ExprKind::Local(id) if depth < MAX_DEPTH => self.eval(self.inits.get(id)?, target, depth + 1),
            ExprKind::Cast(inner) => {
                let Type::Int(kind) = &e.ty else { return None };
                let value = self.eval(inner, target, depth)?;
                let bits = kind.bits(target);
                if bits >= 64 {
                    return Some(value);
                }
                let truncated = value & ((1i64 << bits) - 1);
                let sign = 1i64 << (bits - 1);
                Some(if kind.is_signed(target) && truncated & sign != 0 { truncated - (1i64 << bits) } else { truncated })
            }
            ExprKind::Unary { op: UnaryOp::Neg, operand } => self.eval(operand, target, depth)?.checked_neg(),
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.eval(lhs, target, depth)?, self.eval(rhs, target, depth)?);
                match op {
                    BinaryOp::Add => a.checked_add(b),
                    BinaryOp::Sub => a.checked_sub(b),
                    BinaryOp::Mul => a.checked_mul(b),
                    BinaryOp::Div => a.checked_div(b),
                    BinaryOp::Rem => a.checked_rem(b),
                    BinaryOp::Shl => u32::try_from(b).ok().filter(|&s| s < 63).and_then(|s| a.checked_shl(s)),
                    BinaryOp::Shr => u32::try_from(b).ok().filter(|&s| s < 64).map(|s| a >> s),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The local a place is part of (`x`, `x.f`, `x[i]` of an array local), if any.
fn root_local(place: &Expr) -> Option<LocalId> {
    match &place.kind {
        ExprKind::Local(id) => Some(*id),
        ExprKind::Member { base, .. } | ExprKind::Decay(base) | ExprKind::Cast(base) => root_local(base),
        _ => None,
    }
}
