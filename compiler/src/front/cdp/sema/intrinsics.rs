//! CUDA's integer and warp intrinsics: `__popc`, `__clz`, `__ffs`, `__brev` (and their `ll`
//! forms), `__fns`, `__activemask`, `__ballot_sync`, `__any_sync`, `__all_sync`, `__syncwarp`
//! and the `__shfl*_sync` family, with the signatures of CUDA's `sm_30_intrinsics.h` and
//! `device_functions.h`.
//!
//! The warp intrinsics of before CUDA 9 (`__any`, `__all`, `__ballot`, `__shfl`, `__shfl_up`,
//! `__shfl_down`, `__shfl_xor`), which older programs such as KLAP's still use, are accepted
//! with a warning (`W0902`) that names the `_sync` replacement, and compiled as that
//! replacement over `__activemask()`: the lanes that execute the call together, which is what
//! the old forms meant. (For sm_70 and newer, nvcc 13 no longer declares the `__shfl` forms,
//! and its `__any`, `__all` and `__ballot`, deprecated, become PTX that ptxas refuses; cdpc
//! compiles all of them, so that such programs build unchanged.)
//!
//! Code generation lowers them in `front/cdp/codegen/intrinsics.rs`.

use super::Context;
use crate::diag::{Code, Diagnostic, Span};
use crate::front::cdp::hir::{self, BitOp, Builtin, ExprKind, Intrinsic, ShuffleKind, Vote, WarpOp};
use crate::front::cdp::syntax::ast;
use crate::types::{FloatKind, IntKind, Type};

use super::expr::make;

/// The names this module answers for (for "did you mean" hints).
pub(super) const INTRINSIC_NAMES: &[&str] = &[
    "__popc",
    "__popcll",
    "__clz",
    "__clzll",
    "__ffs",
    "__ffsll",
    "__brev",
    "__brevll",
    "__fns",
    "__activemask",
    "__ballot_sync",
    "__any_sync",
    "__all_sync",
    "__syncwarp",
    "__shfl_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__shfl_xor_sync",
];

/// The pre-CUDA-9 forms and their replacements.
const LEGACY: &[(&str, &str)] = &[
    ("__any", "__any_sync"),
    ("__all", "__all_sync"),
    ("__ballot", "__ballot_sync"),
    ("__shfl", "__shfl_sync"),
    ("__shfl_up", "__shfl_up_sync"),
    ("__shfl_down", "__shfl_down_sync"),
    ("__shfl_xor", "__shfl_xor_sync"),
];

/// Whether `name` is one of CUDA's intrinsics this module compiles, old forms included.
pub(super) fn is_intrinsic(name: &str) -> bool {
    INTRINSIC_NAMES.contains(&name) || LEGACY.iter().any(|(old, _)| *old == name)
}

impl Context {
    /// `Some` when `name` is one of the intrinsics (`Some(None)` after an error reported).
    pub(super) fn intrinsic_call(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<Option<hir::Expr>> {
        let n = name.name.as_str();
        if let Some((_, modern)) = LEGACY.iter().find(|(old, _)| *old == n) {
            self.diags.push(
                Diagnostic::new(Code::LegacyWarpIntrinsic, name.span, format!("`{n}` is the warp intrinsic of before CUDA 9"))
                    .with_primary_message(format!("compiled as `{modern}(__activemask(), ...)`"))
                    .with_note(format!(
                        "write `{modern}` with the mask of the lanes that take part; since Volta the lanes of a warp need not run together, and nvcc no longer compiles the old forms for sm_70 and newer"
                    )),
            );
            let mask = make(ExprKind::Builtin { builtin: Builtin::Warp(WarpOp::ActiveMask), args: vec![] }, Type::UINT, span);
            return Some(self.warp_call(modern, Some(mask), name, args, span));
        }
        let bits = |op: BitOp, wide: bool| Some((op, wide));
        let bit_op = match n {
            "__popc" => bits(BitOp::PopCount, false),
            "__popcll" => bits(BitOp::PopCount, true),
            "__clz" => bits(BitOp::CountLeadingZeros, false),
            "__clzll" => bits(BitOp::CountLeadingZeros, true),
            "__ffs" => bits(BitOp::FindFirstSet, false),
            "__ffsll" => bits(BitOp::FindFirstSet, true),
            "__brev" => bits(BitOp::Reverse, false),
            "__brevll" => bits(BitOp::Reverse, true),
            _ => None,
        };
        if let Some((op, wide)) = bit_op {
            return Some(self.bits_call(op, wide, name, args, span));
        }
        if n == "__fns" {
            return Some(self.fns_call(name, args, span));
        }
        if INTRINSIC_NAMES.contains(&n) {
            return Some(self.warp_call(n, None, name, args, span));
        }
        None
    }

    fn bits_call(&mut self, op: BitOp, wide: bool, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        self.expect_arity(name, args, 1, span)?;
        // CUDA declares `__popc(unsigned int)`, `__clz(int)`, `__ffs(int)`, `__brev(unsigned int)`
        // and the `long long` forms; the bits are the same either way.
        let operand = if wide { Type::Int(IntKind::ULongLong) } else { Type::UINT };
        let v = self.int_arg(&args[0], &operand, &name.name)?;
        let ty = if op == BitOp::Reverse { operand } else { Type::INT };
        Some(make(ExprKind::Builtin { builtin: Builtin::Intrinsic(Intrinsic::Bits { op, wide }), args: vec![v] }, ty, span))
    }

    /// `unsigned int __fns(unsigned int mask, unsigned int base, int offset)`.
    fn fns_call(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        self.expect_arity(name, args, 3, span)?;
        let mask = self.int_arg(&args[0], &Type::UINT, &name.name);
        let base = self.int_arg(&args[1], &Type::UINT, &name.name);
        let offset = self.int_arg(&args[2], &Type::INT, &name.name);
        let args = vec![mask?, base?, offset?];
        Some(make(ExprKind::Builtin { builtin: Builtin::Intrinsic(Intrinsic::Fns), args }, Type::UINT, span))
    }

    /// The `_sync` warp intrinsics; `mask` is given for the legacy forms, which have none.
    fn warp_call(&mut self, n: &str, mask: Option<hir::Expr>, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let builtin = |b: Builtin, args: Vec<hir::Expr>, ty: Type| Some(make(ExprKind::Builtin { builtin: b, args }, ty, span));
        let legacy = mask.is_some();
        let written = if legacy { LEGACY.iter().find(|(_, m)| *m == n).map_or(n, |(old, _)| *old) } else { n };
        let shown = ast::Ident { name: written.to_string(), span: name.span };
        // The legacy forms take the same arguments without the mask.
        let skip = if legacy { 0 } else { 1 };
        let mask_of = |cx: &mut Context| -> Option<hir::Expr> {
            match mask.clone() {
                Some(m) => Some(m),
                None => cx.int_arg(&args[0], &Type::UINT, written),
            }
        };
        match n {
            "__activemask" => {
                self.expect_arity(&shown, args, 0, span)?;
                builtin(Builtin::Warp(WarpOp::ActiveMask), vec![], Type::UINT)
            }
            "__syncwarp" => {
                if args.len() > 1 {
                    self.expect_arity(&shown, args, 1, span)?;
                }
                let mask = match args.first() {
                    Some(a) => self.int_arg(a, &Type::UINT, written)?,
                    None => make(ExprKind::IntConst(0xffff_ffff), Type::UINT, span),
                };
                builtin(Builtin::Warp(WarpOp::SyncWarp), vec![mask], Type::Void)
            }
            "__ballot_sync" | "__any_sync" | "__all_sync" => {
                self.expect_arity(&shown, args, 1 + skip, span)?;
                let mask = mask_of(self)?;
                let pred = self.int_arg(&args[skip], &Type::INT, written)?;
                match n {
                    "__ballot_sync" => builtin(Builtin::Warp(WarpOp::Ballot), vec![mask, pred], Type::UINT),
                    "__any_sync" => builtin(Builtin::Intrinsic(Intrinsic::Vote(Vote::Any)), vec![mask, pred], Type::INT),
                    _ => builtin(Builtin::Intrinsic(Intrinsic::Vote(Vote::All)), vec![mask, pred], Type::INT),
                }
            }
            _ => {
                let kind = match n {
                    "__shfl_up_sync" => ShuffleKind::Up,
                    "__shfl_down_sync" => ShuffleKind::Down,
                    "__shfl_xor_sync" => ShuffleKind::Xor,
                    _ => ShuffleKind::Idx,
                };
                if args.len() != 2 + skip && args.len() != 3 + skip {
                    self.expect_arity(&shown, args, 2 + skip, span)?;
                }
                let mask = mask_of(self)?;
                let value = self.expr(&args[skip])?;
                let value = self.rvalue(value);
                let ty = match &value.ty {
                    Type::Float(FloatKind::Float) => Type::FLOAT,
                    Type::Int(k) if k.bytes(&self.target) <= 4 => self.promote(&value.ty),
                    other => {
                        let shown_ty = self.show(other);
                        self.error(Code::TypeMismatch, value.span, format!("`{written}` shuffles 32-bit values; this is {shown_ty}"))
                            .note("shuffle an `int`, `unsigned int` or `float`; split 64-bit values into two halves")
                            .emit();
                        return None;
                    }
                };
                let value = self.cast(value, &ty);
                let lane = self.int_arg(&args[skip + 1], &Type::INT, written)?;
                let width = match args.get(skip + 2) {
                    Some(w) => self.int_arg(w, &Type::INT, written)?,
                    None => make(ExprKind::IntConst(32), Type::INT, span),
                };
                builtin(Builtin::Intrinsic(Intrinsic::Shuffle(kind)), vec![mask, value, lane, width], ty)
            }
        }
    }

    /// An integer argument converted to `ty`.
    fn int_arg(&mut self, arg: &ast::Expr, ty: &Type, function: &str) -> Option<hir::Expr> {
        let v = self.expr(arg)?;
        let v = self.rvalue(v);
        if !v.ty.is_integer() {
            let message = format!("`{function}` takes an integer here, found {}", self.show(&v.ty));
            self.error(Code::TypeMismatch, v.span, message).emit();
            return None;
        }
        Some(self.cast(v, ty))
    }
}
