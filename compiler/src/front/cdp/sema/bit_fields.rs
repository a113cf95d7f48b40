//! Bit-fields: their widths checked and their places computed as nvcc lays them out (the
//! Itanium C++ ABI, as GCC on x86-64: a bit-field goes at the next free bit unless it would
//! cross a unit of its declared type's alignment, then at the next such unit; a named one
//! aligns the struct like its type, an unnamed one does not; `: 0` moves to the next unit).
//! Their values are read and written by code generation (`front/cdp/codegen/bit_fields.rs`); `&` of one and `sizeof`
//! of one are `E0236`.
//!
//! Widths are checked here (`E0235`), and each bit-field's place goes into `hir::Field::bits`.

use super::Context;
use crate::diag::Code;
use crate::front::cdp::hir::{self, BitField, ExprKind};
use crate::front::cdp::syntax::ast;
use crate::types::{round_up, Type};

/// What a struct's members have taken so far, in bits (`end`), and its alignment.
pub(super) struct Cursor {
    pub end: u64,
    pub align: u64,
}

/// Checks the bit-field `d` of declared type `ty` (`E0235`) and places it after `at`: the field
/// to record (none for an unnamed one) and the bits it takes, or nothing when it is refused.
pub(super) fn place(cx: &mut Context, ty: &Type, d: &ast::Declarator, width: &ast::Expr, at: &mut Cursor, union: bool) -> Option<Option<hir::Field>> {
    let Type::Int(kind) = ty else {
        cx.error(Code::InvalidBitField, d.span, format!("a bit-field must have an integer type, not {}", cx.show(ty)))
            .primary("declared here")
            .note("cdpc accepts bit-fields of `bool`, `char`, `short`, `int`, `long` and `long long`, signed or not")
            .emit();
        return None;
    };
    let value = cx.expr(width)?;
    let bits = u64::from(kind.bits(&cx.target)).max(if *kind == crate::types::IntKind::Bool { 8 } else { 0 });
    let w = match super::consteval::eval(&value, &cx.target) {
        Some(super::consteval::Const::Int(n)) if value.ty.is_integer() => n,
        _ => {
            cx.error(Code::InvalidBitField, width.span, "a bit-field's width must be an integer constant expression").emit();
            return None;
        }
    };
    let named = !d.name.name.is_empty();
    if w < 0 || (w == 0 && named) || w as u64 > bits {
        let why = if w < 0 {
            "a width is not negative".to_string()
        } else if w == 0 {
            "only an unnamed bit-field (`int : 0;`) may have width 0".to_string()
        } else {
            format!("{} holds {} bits; nvcc truncates a wider declaration with a warning, cdpc refuses it", cx.show(ty), bits)
        };
        cx.error(Code::InvalidBitField, width.span, format!("invalid width {w} for bit-field `{}`", if named { d.name.name.as_str() } else { "(unnamed)" })).primary("this width").note(why).emit();
        return None;
    }
    let (w, unit) = (w as u64, cx.size_align(ty).1 * 8);
    let start = if union {
        0
    } else if w == 0 || at.end / unit != (at.end + w - 1) / unit {
        round_up(at.end, unit)
    } else {
        at.end
    };
    at.end = if union { at.end.max(w) } else { start + w };
    if !named {
        return Some(None);
    }
    at.align = at.align.max(unit / 8);
    let bits = BitField { shift: (start % 8) as u32, width: w as u32, signed: kind.is_signed(&cx.target) };
    Some(Some(hir::Field { name: d.name.name.clone(), ty: ty.clone(), offset: start / 8, volatile: false, bits: Some(bits) }))
}

/// The bit-field a place names, if it is one: `s.b` where `b` is declared `int b : 3`.
pub(super) fn of(cx: &Context, place: &hir::Expr) -> Option<BitField> {
    let ExprKind::Member { base, index } = &place.kind else { return None };
    let Type::Struct(id) = &base.ty else { return None };
    cx.structs[id.0 as usize].fields.get(*index as usize)?.bits
}

/// `E0236`: `what` (`&`, `sizeof`) needs an object's address or size, and `place`
/// is a bit-field, which has neither. Whether it reported.
pub(super) fn refuse_address(cx: &mut Context, place: &hir::Expr, what: &str) -> bool {
    if of(cx, place).is_none() {
        return false;
    }
    cx.error(Code::BitFieldAddress, place.span, format!("{what} cannot apply to a bit-field")).primary("a bit-field has no address of its own").note("copy it into a variable first").emit();
    true
}
