//! C++ references (`T &`, `const T &`) as parameters, locals and return types.
//!
//! A reference is lowered to the pointer that carries it: its HIR type is `T *` (`const T *`
//! for `const T &`), binding takes the address of what it is bound to, and every use of the
//! reference's name reads through it (`Deref`), so it behaves as the object it names. This is
//! also the ABI: nvcc passes and returns a reference as a pointer (`.param .b64`), and only
//! the mangled name tells them apart (`hir::CxxSignature::ref_params`, `R` in `mangle.rs`).
//!
//! Binding follows C++: a reference binds to an lvalue of its type or of a class derived from
//! it; a `const` reference also binds to any value that converts to its type, through a
//! temporary that lives as long as the function; a non-`const` reference to a `const` object
//! or to a temporary is an error (`E0922`).

use super::expr::make;
use super::Context;
use crate::diag::{Code, Span};
use crate::hir::{self, ExprKind};
use crate::front::ast;
use crate::types::{Quals, Type};

/// The pointer type that carries a reference to `ty`.
/// `quals` are the referenced object's (`const int &`, `volatile int &`, `int *const &`).
pub(super) fn carrier(ty: Type, quals: Quals) -> Type {
    Type::qualified_pointer_to(ty, quals)
}

/// The qualifiers of what a reference declarator refers to: its last `*`'s, or the specifiers'.
pub(super) fn referred_quals(spec: &ast::TypeSpec, pointers: &[ast::PointerLevel]) -> Quals {
    pointers.last().map_or(spec.quals(), |level| level.quals())
}

impl Context {
    /// Binds a reference whose carrier type is `carrier` to `value`; returns the address to
    /// store in the carrier. `what` names the reference in messages.
    pub(super) fn bind_reference(&mut self, value: hir::Expr, carrier: &Type, what: &str, span: Span) -> Option<hir::Expr> {
        let Type::Pointer { pointee, pointee_const, pointee_volatile } = carrier else { unreachable!("a reference's carrier is a pointer") };
        let same_class = match (&value.ty, &**pointee) {
            (Type::Struct(from), Type::Struct(to)) => self.derives_from(*from, *to),
            (from, to) => from == to,
        };
        // A bit-field binds only a `const` reference, through a temporary as a value does.
        if !pointee_const && super::bit_fields::refuse_address(self, &value, &format!("{what} (a non-const reference)")) {
            return None;
        }
        if self.is_place(&value) && same_class && super::bit_fields::of(self, &value).is_none() {
            if self.is_const_place(&value) && !pointee_const {
                self.error(Code::ReferenceBinding, value.span, format!("{what} is a non-const reference and cannot bind to a read-only object"))
                    .primary("this is const")
                    .note("make the reference `const`, or bind it to a modifiable object")
                    .emit();
                return None;
            }
            if self.is_volatile_place(&value) && !pointee_volatile {
                self.error(Code::ReferenceBinding, value.span, format!("{what} is a non-volatile reference and cannot bind to a volatile object"))
                    .primary("this is volatile")
                    .note("make the reference `volatile`, so that accesses through it stay volatile")
                    .emit();
                return None;
            }
            let ty = carrier.clone();
            let address = make(ExprKind::AddrOf(Box::new(value)), Type::pointer_to((**pointee).clone()), span);
            return Some(if address.ty == ty { address } else { make(ExprKind::Cast(Box::new(address)), ty, span) });
        }
        if !pointee_const {
            let found = if self.is_place(&value) { format!("of type {}", self.show(&value.ty)) } else { "a temporary value".to_string() };
            let wanted = self.show(pointee);
            self.error(Code::ReferenceBinding, value.span, format!("{what} is a non-const reference and needs a variable, element or field of type {wanted}"))
                .primary(format!("this is {found}"))
                .note("make the reference `const` to bind it to a value")
                .emit();
            return None;
        }
        // `const T &r = value;`: a temporary holds the converted value.
        let value = self.coerce(value, pointee, Code::TypeMismatch, "the value has the wrong type for the reference")?;
        let temp = self.new_local("ref.tmp", (**pointee).clone(), span);
        let place = make(ExprKind::Local(temp), (**pointee).clone(), span);
        let store = make(ExprKind::Assign { place: Box::new(place.clone()), value: Box::new(value) }, (**pointee).clone(), span);
        let address = make(ExprKind::AddrOf(Box::new(place)), carrier.clone(), span);
        Some(make(ExprKind::Comma { lhs: Box::new(store), rhs: Box::new(address) }, carrier.clone(), span))
    }

    /// The object a reference's carrier points to.
    pub(super) fn through_reference(&self, carrier: hir::Expr) -> hir::Expr {
        let pointee = carrier.ty.pointee().cloned().expect("a reference's carrier is a pointer");
        let span = carrier.span;
        make(ExprKind::Deref(Box::new(carrier)), pointee, span)
    }
}
