//! Host code as device code sees it.
//!
//! The front end leaves host declarations to the host compiler (`front::split`); when device
//! code names one, [`Context::skipped_use`] says why it cannot use it (`E0900`, `E0901`)
//! instead of a bare "cannot find".
//!
//! A file-scope variable without `__device__`, `__constant__` or `__shared__` is a host
//! variable. As in nvcc, device code may still read one that is `const`, of arithmetic type
//! and initialized by a constant expression: its uses are that constant
//! ([`Context::declare_host_variables`]); taking its address is `E0910`, as nvcc says that
//! the identifier "is undefined in device code". Any other host variable is `E0900` when used.
//!
//! `__host__ __device__` functions follow clang's rule: they are compiled for the device only
//! when device code calls them. Their bodies are checked with their diagnostics held back;
//! [`finish_host_device`] keeps the diagnostics and the body of those that kernels and
//! `__device__` functions reach, and drops both for the others, which then stay host code
//! (a host-only helper may do what device code cannot, such as launching from a `__host__`
//! path of a `__host__ __device__` function).

use super::{Context, FunctionState};
use crate::diag::{Code, Diagnostic, Diagnostics, Span};
use crate::front::cdp::hir;
use crate::front::cdp::hir::{FuncId, FunctionKind};
use crate::front::cdp::syntax::ast::{self, Skipped, SkippedKind};
use std::collections::{HashMap, HashSet};

/// The skipped declarations by the names they declare (the first wins).
pub(super) fn index_skipped(skipped: &[Skipped]) -> HashMap<String, Skipped> {
    let mut map = HashMap::new();
    for s in skipped {
        for name in &s.names {
            map.entry(name.name.clone()).or_insert_with(|| s.clone());
        }
    }
    map
}

impl Context {
    /// A file-scope declaration without a memory space: host variables. Each `const` one of
    /// arithmetic type with a constant initializer becomes a constant that device code may
    /// read; the others are recorded as skipped host variables. Nothing is reported here
    /// (the host compiler owns the declaration).
    pub(super) fn declare_host_variables(&mut self, decl: &ast::DeclStmt) {
        for init in &decl.declarators {
            let d = &init.declarator;
            let value = match &init.init {
                Some(ast::Initializer::Expr(e)) if d.pointers.is_empty() && d.array_dims.is_empty() && decl.spec.is_const => self.quiet_constant(&decl.spec, e),
                _ => None,
            };
            match value {
                Some(value) => {
                    self.host_consts.insert(d.name.name.clone(), value);
                }
                None => {
                    let skipped = Skipped { kind: SkippedKind::Variable, names: vec![d.name.clone()], span: decl.span, error: None };
                    self.skipped.entry(d.name.name.clone()).or_insert(skipped);
                }
            }
        }
    }

    /// The value of `init` converted to the arithmetic type `spec`, if it is a constant;
    /// diagnostics are dropped (the declaration is host code).
    fn quiet_constant(&mut self, spec: &ast::TypeSpec, init: &ast::Expr) -> Option<hir::Expr> {
        use super::consteval::{eval, Const};
        let outer = std::mem::take(&mut self.diags);
        let value = (|| {
            let ty = self.resolve_spec(spec)?;
            if !ty.is_arithmetic() {
                return None;
            }
            let e = self.expr(init)?;
            let e = self.coerce(e, &ty, Code::TypeMismatch, "")?;
            let kind = match eval(&e, &self.target)? {
                Const::Int(v) => hir::ExprKind::IntConst(v as i64),
                Const::Float(f) => hir::ExprKind::FloatConst(f),
                Const::Pointer(_) => return None,
            };
            Some(hir::Expr { kind, ty, span: init.span })
        })();
        self.diags = outer;
        value
    }

    /// A use of a host constant: its value, at the use's span.
    pub(super) fn host_constant(&self, name: &str, span: Span) -> Option<hir::Expr> {
        self.host_constant_named(name).map(|value| hir::Expr { span, ..value.clone() })
    }

    /// The host constant `name`.
    fn host_constant_named(&self, name: &str) -> Option<&hir::Expr> {
        self.host_consts.get(name)
    }

    /// `&N` for a host constant `N`: device code has its value, not the host's variable.
    pub(super) fn host_constant_address(&mut self, name: &ast::Ident) -> bool {
        if self.lookup(&name.name).is_some() || self.host_constant_named(&name.name).is_none() {
            return false;
        }
        self.error(Code::HostConstantAddress, name.span, format!("identifier `{}` is undefined in device code", name.name))
            .primary("its address is taken here")
            .note(format!("`{}` is a host variable; device code may read its value, a constant, but the variable lives in host memory", name.name))
            .note("declare it `__device__ const` or `__constant__` to give device code an address")
            .emit();
        true
    }

    /// If `name` was declared by a skipped declaration, reports the use at `span` and returns
    /// true; otherwise reports nothing.
    pub(super) fn skipped_use(&mut self, name: &str, span: Span) -> bool {
        let Some(skipped) = self.skipped.get(name) else { return false };
        let declared = skipped.names.iter().find(|n| n.name == name).map_or(skipped.span, |n| n.span);
        let diagnostic = match (skipped.kind, &skipped.error) {
            (SkippedKind::Unparsed, Some(error)) => Diagnostic::new(Code::NotCompiledForDevice, span, format!("`{name}` cannot be compiled for the device"))
                .with_primary_message("used in device code here")
                .with_label(error.primary_span(), error.message.clone())
                .with_note(format!(
                    "cdpc compiles a declaration that device code may use only when it parses as device code; \
                 this one does not ({}), so it was left to the host compiler",
                    error.code
                )),
            (SkippedKind::Function, _) => Diagnostic::new(Code::HostCodeInDevice, span, format!("`{name}` is a host function; device code cannot call it"))
                .with_primary_message("called from device code here")
                .with_label(declared, "declared without `__device__`")
                .with_note("mark it `__host__ __device__` to compile it for both sides, or `__device__` for the device only"),
            (SkippedKind::Variable, _) => Diagnostic::new(Code::HostCodeInDevice, span, format!("`{name}` is a host variable; device code cannot use it"))
                .with_primary_message("used in device code here")
                .with_label(declared, "declared without `__device__` or `__constant__`")
                .with_note("declare it `__device__` or `__constant__`, or pass its value to the kernel as an argument"),
            _ => Diagnostic::new(Code::HostCodeInDevice, span, format!("`{name}` is declared by host code, which cdpc leaves to the host compiler"))
                .with_primary_message("used in device code here")
                .with_label(declared, "declared here"),
        };
        self.diags.push(diagnostic);
        true
    }

    /// Records that the function being checked calls (or launches) `callee`.
    pub(super) fn record_call(&mut self, callee: FuncId) {
        if let Some(FunctionState { id, .. }) = &self.func {
            self.calls.push((*id, callee));
        }
    }
}

/// Diagnostics of `__host__ __device__` bodies, held until it is known whether device code
/// calls them.
#[derive(Default)]
pub(super) struct Deferred {
    held: Vec<(FuncId, Diagnostics)>,
}

impl Deferred {
    /// Runs `check` with the diagnostics it reports held back for function `id`.
    pub(super) fn hold(&mut self, cx: &mut Context, id: FuncId, check: impl FnOnce(&mut Context)) {
        let outer = std::mem::take(&mut cx.diags);
        check(cx);
        let inner = std::mem::replace(&mut cx.diags, outer);
        self.held.push((id, inner));
    }
}

/// Keeps the `__host__ __device__` functions device code reaches (with their diagnostics) and
/// turns the others into bodiless declarations, which code generation does not emit. Returns
/// the functions called from device code.
pub(super) fn finish_host_device(cx: &mut Context, deferred: Deferred) -> HashSet<FuncId> {
    let mut reached: HashSet<FuncId> = HashSet::new();
    let mut work: Vec<FuncId> = cx.functions.iter().enumerate().filter(|(_, f)| f.kind != FunctionKind::HostDevice).map(|(i, _)| FuncId(i as u32)).collect();
    while let Some(f) = work.pop() {
        if !reached.insert(f) {
            continue;
        }
        work.extend(cx.calls.iter().filter(|(caller, _)| *caller == f).map(|(_, callee)| *callee));
    }
    for (id, diags) in deferred.held {
        if reached.contains(&id) {
            cx.diags.extend(diags.into_vec());
        } else {
            cx.functions[id.0 as usize].body = None;
        }
    }
    cx.calls.iter().filter(|(caller, _)| reached.contains(caller)).map(|(_, callee)| *callee).collect()
}
