//! **Where enums get their values.** An `ast::EnumDef` (`front::enums`) becomes a
//! `hir::EnumDef` and the type `Type::Enum`, named as a typedef is (`scope::named_type`), and
//! each enumerator a constant of that type, found as a file-scope constant is (`host_consts`).
//!
//! Values: as written (an integer constant expression, which may name earlier enumerators), or
//! one more than the previous, 0 for the first. The underlying type: the one written after `:`
//! (an integer type, not `bool`); without one, `unsigned int` when no value is negative and
//! `int` otherwise, as GCC and nvcc choose (a value beyond a fixed type: `E0103`; beyond 32 bits
//! without one: `E0007`).

use super::consteval::{eval, Const};
use super::expr::int_const;
use super::Context;
use crate::diag::Code;
use crate::front::cdp::hir;
use crate::front::cdp::syntax::ast;
use crate::types::{EnumId, IntKind, Type};

/// Declares the enum `def`. An enum is a tentative declaration (`front::split`): one that cdpc
/// cannot give values to (an enumerator computed by a host function, say) is left to the host
/// compiler, its names recorded as skipped with the first error, which device code naming one
/// of them reports (`E0901`), as for a struct that does not parse.
pub(super) fn declare(cx: &mut Context, def: &ast::EnumDef) {
    let outer = std::mem::take(&mut cx.diags);
    declare_values(cx, def);
    let own = std::mem::replace(&mut cx.diags, outer);
    let mut own = own.into_vec();
    let Some(first) = own.iter().position(|d| d.is_error()) else {
        for d in own {
            cx.diags.push(d);
        }
        return;
    };
    let error = own.swap_remove(first);
    // the constants of the enumerators valued before the error
    for e in &def.enumerators {
        cx.host_consts.remove(&e.name.name);
    }
    let mut names: Vec<ast::Ident> = def.name.iter().chain(def.alias.iter()).cloned().collect();
    names.extend(def.enumerators.iter().map(|e| e.name.clone()));
    let skipped = ast::Skipped { kind: ast::SkippedKind::Unparsed, names: names.clone(), span: def.span, error: Some(Box::new(error)) };
    for name in names {
        cx.skipped.entry(name.name).or_insert_with(|| skipped.clone());
    }
}

fn declare_values(cx: &mut Context, def: &ast::EnumDef) {
    let fixed = match &def.base {
        None => None,
        Some(spec) => match cx.resolve_spec(spec) {
            Some(Type::Int(kind)) if kind != IntKind::Bool => Some(kind),
            Some(other) => {
                cx.error(Code::InvalidDeclaration, def.span, format!("the underlying type of an enum must be an integer type, not {}", cx.show(&other))).emit();
                return;
            }
            None => return,
        },
    };
    if let Some(name) = &def.name {
        if cx.named_type(&name.name).is_some() || cx.struct_names.contains_key(&name.name) {
            cx.error(Code::Redefinition, name.span, format!("`{}` is already declared", name.name)).primary("declared again here").emit();
            return;
        }
    }
    // The values, each an `int`-typed constant while the underlying type is not known yet.
    let mut values: Vec<(String, i128, crate::diag::Span)> = Vec::new();
    let mut next: i128 = 0;
    for en in &def.enumerators {
        let value = match &en.value {
            None => next,
            Some(e) => {
                let Some(checked) = cx.expr(e) else { return };
                match eval(&checked, &cx.target) {
                    Some(Const::Int(v)) if checked.ty.is_integer() => v,
                    _ => {
                        cx.error(Code::NotConstant, e.span, format!("the value of `{}` is not an integer constant", en.name.name)).emit();
                        return;
                    }
                }
            }
        };
        // later values may name this one
        cx.host_consts.insert(en.name.name.clone(), int_const(value as i64, Type::LONGLONG, en.name.span));
        values.push((en.name.name.clone(), value, en.name.span));
        next = value + 1;
    }
    let negative = values.iter().any(|(_, v, _)| *v < 0);
    let underlying = fixed.unwrap_or(if negative { IntKind::Int } else { IntKind::UInt });
    let (lo, hi) = if fixed.is_none() && !negative { (0, u32::MAX as i128) } else { range(underlying, &cx.target) };
    if let Some((name, _, span)) = values.iter().find(|(_, v, _)| *v < lo || *v > hi) {
        // Past its fixed type, a value is an error (nvcc's too); without one, C++ would widen the
        // type, which cdpc does not do yet.
        let (code, note) = match fixed {
            Some(_) => (Code::InvalidDeclaration, "give the enum a wider underlying type"),
            None => (Code::UnsupportedSyntax, "an enum without a fixed type holds 32-bit values here; write the type, `enum E : long long { ... }`"),
        };
        cx.error(code, *span, format!("the value of `{name}` does not fit the enum's underlying type {}", underlying.name())).note(note).emit();
        return;
    }
    let id = EnumId(cx.enums.len() as u32);
    let name = def.name.as_ref().map(|n| n.name.clone()).unwrap_or_else(|| format!("(anonymous enum at {})", def.span.start));
    cx.enums.push(hir::EnumDef { name: name.clone(), underlying, span: def.span, tagless: def.tagless });
    // An anonymous enum's enumerators have its underlying type (it has no name to mangle).
    let ty = if def.name.is_some() { Type::Enum { id, underlying } } else { Type::Int(underlying) };
    if def.name.is_some() {
        cx.names.typedefs.insert(name.clone(), ty.clone());
    }
    if let Some(alias) = &def.alias {
        cx.names.typedefs.insert(alias.name.clone(), ty.clone());
    }
    for (en, value, span) in values {
        cx.host_consts.insert(en, int_const(value as i64, ty.clone(), span));
    }
}

/// The values of an integer type.
fn range(kind: IntKind, target: &crate::target::Target) -> (i128, i128) {
    let bits = 8 * kind.bytes(target) as u32;
    if kind.is_signed(target) {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}
