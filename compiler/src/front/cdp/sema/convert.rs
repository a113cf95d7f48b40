//! Types as written, and C's conversions: integer promotion, the usual arithmetic conversions
//! and the implicit conversions of assignment and argument passing (with C++'s pointer rules,
//! since every `.cdp` file must also compile under nvcc).

use super::Context;
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, ExprKind};
use crate::front::cdp::syntax::ast;
use crate::types::{FloatKind, IntKind, Quals, Type};

impl Context {
    /// The type named by declaration specifiers.
    pub(super) fn resolve_spec(&mut self, spec: &ast::TypeSpec) -> Option<Type> {
        use ast::BaseType as B;
        Some(match &spec.kind {
            ast::TypeSpecKind::Builtin(base) => match base {
                B::Void => Type::Void,
                B::Bool => Type::BOOL,
                B::Char => Type::Int(IntKind::Char),
                B::SignedChar => Type::Int(IntKind::SChar),
                B::UnsignedChar => Type::Int(IntKind::UChar),
                B::Short => Type::Int(IntKind::Short),
                B::UnsignedShort => Type::Int(IntKind::UShort),
                B::Int => Type::INT,
                B::UnsignedInt => Type::UINT,
                B::Long => Type::Int(IntKind::Long),
                B::UnsignedLong => Type::Int(IntKind::ULong),
                B::LongLong => Type::LONGLONG,
                B::UnsignedLongLong => Type::ULONGLONG,
                B::Float => Type::FLOAT,
                B::Double => Type::DOUBLE,
                B::SizeT => Type::size_t(),
                B::Dim3 => Type::Dim3,
                B::Stream => Type::Stream,
                B::Event => Type::Event,
                B::CudaError => Type::CudaError,
            },
            ast::TypeSpecKind::Struct(name) => match self.named_type(&name.name) {
                Some(ty) => ty,
                None if self.skipped_use(&name.name, name.span) => return None,
                None => match self.cuda_type(&name.name) {
                    Some(ty) => {
                        self.warn_deprecated_vector(name);
                        ty
                    }
                    None => {
                        self.error(Code::UnknownType, name.span, format!("unknown struct `{}`", name.name)).primary("not declared in this file").emit();
                        return None;
                    }
                },
            },
        })
    }

    /// `base` with the declarator's pointers around it: the specifiers' qualifiers qualify what
    /// the first `*` points to, each `*`'s own qualifiers what the next one points to.
    pub(super) fn wrap_pointers(&self, mut ty: Type, quals: Quals, pointers: &[ast::PointerLevel]) -> Type {
        let mut pointee_quals = quals;
        for level in pointers {
            ty = Type::qualified_pointer_to(ty, pointee_quals);
            pointee_quals = level.quals();
        }
        ty
    }

    pub(super) fn resolve_type_name(&mut self, name: &ast::TypeName) -> Option<Type> {
        let base = self.resolve_spec(&name.spec)?;
        Some(self.wrap_pointers(base, name.spec.quals(), &name.pointers))
    }

    /// A value of this type in an expression: arrays decay to pointers to their first element,
    /// qualified as the array is (`volatile __shared__ int s[32]` gives `volatile int *`).
    pub(super) fn rvalue(&mut self, e: hir::Expr) -> hir::Expr {
        match self.decayed_type(&e) {
            Some(ty) => {
                let span = e.span;
                hir::Expr { kind: ExprKind::Decay(Box::new(e)), ty, span }
            }
            None => e,
        }
    }

    /// The pointer type an array expression decays to, qualified as the array is; `None` for
    /// any other expression.
    pub(super) fn decayed_type(&self, e: &hir::Expr) -> Option<Type> {
        match &e.ty {
            Type::Array { elem, .. } => Some(Type::qualified_pointer_to((**elem).clone(), self.place_quals(e))),
            _ => None,
        }
    }

    /// Integer promotion: everything narrower than `int` (and bool, and cudaError_t) becomes int.
    pub(super) fn promote(&self, ty: &Type) -> Type {
        match ty {
            Type::Int(kind) if kind.rank() < IntKind::Int.rank() => Type::INT,
            Type::CudaError => Type::INT,
            Type::Enum { underlying, .. } => self.promote(&Type::Int(*underlying)),
            other => other.clone(),
        }
    }

    /// The common type of two arithmetic operands.
    pub(super) fn usual_arithmetic(&self, a: &Type, b: &Type) -> Type {
        if matches!(a, Type::Float(FloatKind::Double)) || matches!(b, Type::Float(FloatKind::Double)) {
            return Type::DOUBLE;
        }
        if matches!(a, Type::Float(_)) || matches!(b, Type::Float(_)) {
            return Type::FLOAT;
        }
        let (Type::Int(x), Type::Int(y)) = (self.promote(a), self.promote(b)) else {
            return Type::INT;
        };
        if x == y {
            return Type::Int(x);
        }
        let t = &self.target;
        let (sx, sy) = (x.is_signed(t), y.is_signed(t));
        if sx == sy {
            return Type::Int(if x.rank() >= y.rank() { x } else { y });
        }
        let (signed, unsigned) = if sx { (x, y) } else { (y, x) };
        if unsigned.rank() >= signed.rank() {
            Type::Int(unsigned)
        } else if signed.bytes(t) > unsigned.bytes(t) {
            Type::Int(signed)
        } else {
            Type::Int(signed.to_unsigned())
        }
    }

    /// Wraps `e` in a conversion to `ty` (nothing when it already has that type).
    pub(super) fn cast(&self, e: hir::Expr, ty: &Type) -> hir::Expr {
        if &e.ty == ty {
            return e;
        }
        if let (ExprKind::IntConst(v), Type::Int(_)) = (&e.kind, ty) {
            // Fold conversions of integer constants so that later checks see plain constants.
            let folded = super::consteval::truncate_int(*v as i128, ty, &self.target);
            return hir::Expr { kind: ExprKind::IntConst(folded), ty: ty.clone(), span: e.span };
        }
        let span = e.span;
        hir::Expr { kind: ExprKind::Cast(Box::new(e)), ty: ty.clone(), span }
    }

    /// A null pointer constant: the integer literal 0 (after folding), `NULL` or `nullptr`.
    pub(super) fn is_null_constant(&self, e: &hir::Expr) -> bool {
        match (&e.kind, &e.ty) {
            (ExprKind::IntConst(0), Type::Int(_)) => true,
            (ExprKind::PointerConst(0), Type::Pointer { pointee, .. }) => pointee.is_void(),
            _ => false,
        }
    }

    /// Whether `from` converts implicitly to `to` (assignment, initialisation, arguments).
    /// `Err` carries a note that says how to fix the code.
    pub(super) fn implicit_conversion_ok(&self, e: &hir::Expr, to: &Type) -> Result<(), Option<String>> {
        let from = &e.ty;
        if from == to {
            return Ok(());
        }
        match (from, to) {
            (_, Type::CudaError) => Err(Some("cudaError_t is an enum; only cudaError_t values convert to it".into())),
            (_, Type::Enum { .. }) => {
                let name = self.show(to).trim_matches('`').trim_start_matches("enum ").to_string();
                Err(Some(format!("`{name}` is an enum: only its own values convert to it implicitly; cast with `({name})`")))
            }
            (f, t) if f.is_arithmetic() && t.is_arithmetic() => Ok(()),
            (f, Type::Int(IntKind::Bool)) if f.is_pointer_like() => Ok(()),
            (_, t) if t.is_pointer_like() && self.is_null_constant(e) => Ok(()),
            (Type::Pointer { pointee: pf, .. }, Type::Pointer { pointee: pt, .. }) => {
                let (qf, qt) = (from.pointee_quals(), to.pointee_quals());
                if !qt.contains(qf) {
                    return Err(Some(format!("the conversion would drop `{}`", qf.without(qt).prefix().trim_end())));
                }
                if pf == pt || pt.is_void() {
                    Ok(())
                } else if pf.is_void() {
                    Err(Some("C++ (and so nvcc) needs an explicit cast from `void *` to another pointer type".into()))
                } else {
                    Err(None)
                }
            }
            // dim3's converting constructor, after a conversion to `unsigned int`.
            (Type::Int(_) | Type::Float(_), Type::Dim3) => Ok(()),
            _ => Err(None),
        }
    }

    /// Converts `e` for storing into a `to`, reporting `code` at `e` when C would not.
    pub(super) fn coerce(&mut self, e: hir::Expr, to: &Type, code: Code, what: &str) -> Option<hir::Expr> {
        let e = self.rvalue(e);
        match self.implicit_conversion_ok(&e, to) {
            Ok(()) => Some(self.convert_checked(e, to)),
            Err(note) => {
                let message = format!("{what}: expected {}, found {}", self.show(to), self.show(&e.ty));
                let from = self.show(&e.ty);
                let mut builder = self.error(code, e.span, message).primary(format!("this has type {from}"));
                if let Some(note) = note {
                    builder = builder.note(note);
                }
                builder.emit();
                None
            }
        }
    }

    /// Performs a conversion already known to be valid, including integer to dim3.
    pub(super) fn convert_checked(&self, e: hir::Expr, to: &Type) -> hir::Expr {
        if *to == Type::Dim3 && e.ty != Type::Dim3 {
            return self.dim3_from(e);
        }
        if to.is_pointer_like() && self.is_null_constant(&e) {
            return hir::Expr { kind: ExprKind::PointerConst(0), ty: to.clone(), span: e.span };
        }
        self.cast(e, to)
    }

    /// `dim3(n)`: the integer becomes x; y and z are 1.
    pub(super) fn dim3_from(&self, e: hir::Expr) -> hir::Expr {
        let span = e.span;
        let one = || hir::Expr { kind: ExprKind::IntConst(1), ty: Type::UINT, span };
        let x = self.cast(e, &Type::UINT);
        hir::Expr { kind: ExprKind::Dim3 { x: Box::new(x), y: Box::new(one()), z: Box::new(one()) }, ty: Type::Dim3, span }
    }

    /// Explicit casts `(T)e`: anything scalar to anything scalar, plus the implicit ones.
    pub(super) fn explicit_cast(&mut self, e: hir::Expr, to: &Type, span: Span) -> Option<hir::Expr> {
        let e = self.rvalue(e);
        if to.is_void() {
            return Some(hir::Expr { kind: ExprKind::Cast(Box::new(e)), ty: Type::Void, span });
        }
        let ok = self.implicit_conversion_ok(&e, to).is_ok()
            || (e.ty.is_scalar() && to.is_scalar() && !(e.ty.is_pointer_like() && matches!(to, Type::Float(_))) && !(matches!(e.ty, Type::Float(_)) && to.is_pointer_like()));
        if !ok {
            let message = format!("cannot cast {} to {}", self.show(&e.ty), self.show(to));
            self.error(Code::TypeMismatch, span, message).emit();
            return None;
        }
        let mut converted = self.convert_checked(e, to);
        converted.span = span;
        Some(converted)
    }
}
