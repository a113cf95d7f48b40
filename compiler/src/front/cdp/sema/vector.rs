//! The functions of CUDA's vector types (`vector_functions.h`, `sm_32_intrinsics.h`): the
//! constructors `make_float2(x, y)` and friends, and `__ldg` on the scalar and vector types
//! nvcc declares it for. The types themselves are built-in structs (`cuda_types.rs`,
//! `types::VectorType`).

use super::expr::make;
use super::Context;
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, Builtin, ExprKind};
use crate::front::cdp::syntax::ast;
use crate::types::{FloatKind, IntKind, StructId, Type, VectorType};

/// The vector types `__ldg` takes (`sm_32_intrinsics.h`).
const LDG_VECTORS: &[&str] =
    &["char2", "char4", "uchar2", "uchar4", "short2", "short4", "ushort2", "ushort4", "int2", "int4", "uint2", "uint4", "longlong2", "ulonglong2", "float2", "float4", "double2"];

impl Context {
    /// `make_<vector>(...)` or `__ldg(p)`, if `name` is one of them.
    pub(super) fn vector_call(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<Option<hir::Expr>> {
        if name.name == "__ldg" {
            return Some(self.ldg(name, args, span));
        }
        let v = VectorType::from_name(name.name.strip_prefix("make_")?)?;
        Some(self.make_vector(v, name, args, span))
    }

    fn make_vector(&mut self, v: VectorType, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        self.expect_arity(name, args, usize::from(v.len), span)?;
        let ty = self.vector_struct(v);
        let params = vec![v.elem_type(); usize::from(v.len)];
        let args = self.convert_args(args, &params, Code::TypeMismatch, "argument has the wrong type")?;
        Some(make(ExprKind::Builtin { builtin: Builtin::MakeStruct, args }, ty, span))
    }

    /// `__ldg(const T *)` for T a scalar other than `bool`, or one of the 2- and 4-vectors
    /// `sm_32_intrinsics.h` declares it for (`float4`, `int2`, `uchar4`, ...).
    fn ldg(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        self.expect_arity(name, args, 1, span)?;
        let p = self.expr(&args[0])?;
        let p = self.rvalue(p);
        let pointee = match &p.ty {
            Type::Pointer { pointee, .. } => (**pointee).clone(),
            other => {
                let message = format!("`__ldg` takes a pointer, found {}", self.show(other));
                self.error(Code::TypeMismatch, p.span, message).emit();
                return None;
            }
        };
        let ok = match &pointee {
            Type::Int(k) => !matches!(k, IntKind::Bool),
            Type::Float(FloatKind::Float | FloatKind::Double) => true,
            Type::Struct(id) => {
                let name = self.structs[id.0 as usize].name.clone();
                LDG_VECTORS.contains(&name.as_str()) && self.builtin_vector(*id)
            }
            _ => false,
        };
        if !ok {
            let message = format!("`__ldg` has no overload for {}", self.show(&p.ty));
            self.error(Code::TypeMismatch, p.span, message).note("it loads the scalar types and their 2- and 4-vectors (`float4`, `int2`, ...) through the read-only data cache").emit();
            return None;
        }
        let p = self.cast(p, &Type::const_pointer_to(pointee.clone()));
        Some(make(ExprKind::Builtin { builtin: Builtin::Ldg, args: vec![p] }, pointee, span))
    }

    /// `long4`, `ulong4`, `longlong4`, `ulonglong4` and `double4` are deprecated in CUDA 13, which
    /// nvcc says at each use (`W0910`).
    pub(super) fn warn_deprecated_vector(&mut self, name: &ast::Ident) {
        let Some(instead) = VectorType::from_name(&name.name).and_then(VectorType::deprecated) else { return };
        self.error(Code::DeprecatedVectorType, name.span, format!("`{}` is deprecated: use {instead}", name.name))
            .primary("deprecated in CUDA 13")
            .note("the `_16a` form keeps the 16-byte alignment, the `_32a` form aligns to 32 bytes")
            .emit();
    }

    /// The struct is the built-in vector type of its name, not a program's own struct.
    fn builtin_vector(&self, id: StructId) -> bool {
        let def = &self.structs[id.0 as usize];
        def.span == Span::default() && VectorType::from_name(&def.name).is_some()
    }
}
