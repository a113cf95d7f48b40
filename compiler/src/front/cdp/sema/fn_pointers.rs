//! Pointers to device functions: a function's name (or `&name`) as a value, the types that
//! function-pointer declarators and `typedef`s give (`Type::FnPtr`), and calls through them.
//! A kernel's address is a value as a device function's is (CUDA allows it in device code);
//! launches through such a pointer are `launch.rs`'s. Calling a kernel's address like a function
//! is `E0312`, as calling the kernel is.
//!
//! A function's name or `&name` becomes `hir::ExprKind::FuncAddr`, and a call through any
//! pointer-valued expression `hir::ExprKind::CallIndirect`.

use super::{Context, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, ExprKind, FunctionKind};
use crate::front::cdp::syntax::ast;
use crate::types::{FnSig, Type};

impl Context {
    /// The type `ret (*)(params)`: the parameters' types as a prototype's, arrays decayed.
    pub(super) fn fn_ptr_type(&mut self, ret: Type, f: &ast::FunctionDeclarator) -> Option<Type> {
        let mut params = Vec::with_capacity(f.params.len());
        for p in &f.params {
            let base = self.resolve_spec(&p.ty)?;
            let mut d = p.declarator.clone();
            let decays = !d.array_dims.is_empty();
            if decays {
                d.array_dims.remove(0);
            }
            let mut ty = super::decls::declarator_type(self, base, p.ty.quals(), &d, false)?;
            if decays {
                ty = Type::pointer_to(ty);
            }
            if ty.is_void() || matches!(ty, Type::Array { .. }) {
                self.error(Code::InvalidDeclaration, p.span, format!("a pointer to a function cannot take a parameter of type {}", self.show(&ty)))
                    .note("cdpc's function pointers take scalars, pointers and structs")
                    .emit();
                return None;
            }
            params.push(ty);
        }
        let mut ty = Type::FnPtr(Box::new(FnSig { ret, params }));
        for _ in f.pointers.iter().skip(1) {
            ty = Type::pointer_to(ty);
        }
        Some(ty)
    }

    /// The type a `typedef` names; `typedef int (*binop)(int, int);` a pointer to a function.
    pub(super) fn typedef_type(&mut self, def: &ast::TypedefDef) -> Option<Type> {
        let ty = self.resolve_type_name(&def.ty)?;
        match &def.function {
            Some(f) => self.fn_ptr_type(ty, f),
            None => Some(ty),
        }
    }

    /// The function `name` as a value: a pointer to it, when it is one device function.
    pub(super) fn function_value(&mut self, name: &ast::Ident, span: Span) -> Option<hir::Expr> {
        let Some(GlobalSymbol::Function(id)) = self.resolve_symbol(&name.name) else { return None };
        let f = &self.functions[id.0 as usize];
        let sig = FnSig { ret: f.return_type.clone(), params: f.param_types().cloned().collect() };
        Some(hir::Expr { kind: ExprKind::FuncAddr(id), ty: Type::FnPtr(Box::new(sig)), span })
    }

    /// `callee(args)` where `callee` is a pointer to a function.
    pub(super) fn call_indirect(&mut self, callee: hir::Expr, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let callee = self.rvalue(callee);
        let Type::FnPtr(sig) = callee.ty.clone() else {
            let found = self.show(&callee.ty);
            self.error(Code::NotCallable, callee.span, format!("only functions and pointers to functions can be called; found {found}")).emit();
            return None;
        };
        // nvcc 13.5 accepts `(&child)(p)` and compiles the kernel's body into the caller as a
        // device function's: CUDA forbids calling a kernel, as a direct call of it does.
        if let ExprKind::FuncAddr(id) = callee.kind {
            let f = &self.functions[id.0 as usize];
            if f.kind == FunctionKind::Kernel {
                let (name, f_span) = (f.name.clone(), f.span);
                self.error(Code::KernelCalledDirectly, span, format!("`{name}` is a `__global__` kernel and cannot be called through a pointer like a function"))
                    .label(f_span, "declared `__global__` here")
                    .note(format!("launch it, by name or through the pointer: `{name}<<<grid, block>>>(...)`"))
                    .emit();
                return None;
            }
        }
        if args.len() != sig.params.len() {
            let shown = self.show(&callee.ty);
            self.error(Code::CallArity, span, format!("the function pointed to takes {} arguments, but {} were given", sig.params.len(), args.len()))
                .label(callee.span, format!("of type {shown}"))
                .emit();
            return None;
        }
        let mut checked = Vec::with_capacity(args.len());
        for (arg, ty) in args.iter().zip(&sig.params) {
            let value = self.expr(arg)?;
            checked.push(self.coerce(value, ty, Code::TypeMismatch, "argument has the wrong type")?);
        }
        Some(hir::Expr { kind: ExprKind::CallIndirect { callee: Box::new(callee), args: checked }, ty: sig.ret.clone(), span })
    }
}
