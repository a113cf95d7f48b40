//! **Where templates are instantiated.** A function template (`ast::Item::Template`) is kept
//! as written; each use with new arguments makes one concrete HIR function, its *instance*,
//! checked with the template's parameters bound to the arguments. So the HIR after sema holds
//! only concrete functions, and code generation never sees a template.
//!
//! - **Arguments** are explicit (`f<int, 4>(p)`, `k<128><<<g, b>>>(p)`, resolved in the scope
//!   of the use) or deduced from the call's or launch's arguments, clang's way for the common
//!   parameter forms: `T`, `T *`, `const T *` (and further `*`s), `T &`, `const T &`. Explicit
//!   ones come first; the rest are deduced. A reference parameter binds to its argument as a
//!   function's does (`refs.rs`), and its pattern is mangled under `R`. Non-type parameters take integer constants.
//! - **Instantiation is on use and memoised**: the first use of `f<int>` declares the instance
//!   and checks its body at once (with the user's function state set aside); later uses, and
//!   a recursive use inside the body, find the same instance.
//! - **Depth**: instantiations nest (an instance's body may request others); at most
//!   [`MAX_INSTANTIATION_DEPTH`] deep (`E0940`).
//! - **Errors inside an instance** carry, for every level, a label at the use that requested
//!   it, "in instantiation of `f<int>` requested here", as clang's notes do.
//! - **Names**: an instance keeps its template's arguments and signature as written
//!   (`hir::TemplateInstance`), from which `crate::hir::mangle` makes nvcc's symbol
//!   (`_Z1fIiEvPT_`).
//! - **Requests from outside device code** ([`instantiate_requested`], before any body is
//!   checked): the kernel instances that host code names, `k<128><<<...>>>` in `main` or
//!   `&k<int>` (collected by `front::host_mentions`; nvcc compiles no device code for other
//!   templates that only host code names), and explicit instantiations, `template __global__
//!   void k<128>(P);` (read by `front::explicit_instances`). nvcc makes both, so cdpc does,
//!   under the same memo as device-side uses. A host mention's arguments are evaluated as device
//!   code's, with the host function's `const` locals declared before it in scope (`host.rs`,
//!   `HostLocals`); what cannot be evaluated there (a host call, an enumerator, a host
//!   template's parameter) is `W0945`, since host code is the host compiler's to judge. Such
//!   instances are compiled whether device code uses them or not.
//!
//! Codes: `E0940` depth, `E0941` deduction failed, `E0942` wrong number or kind of template
//! arguments, `E0943` a non-type argument that is not an integer constant, `E0944` what cdpc's
//! templates do not do yet (a template name used as a value, a non-type parameter that is not
//! an integer, deducing a `const` type), `W0945` an instance host code names with arguments
//! cdpc cannot evaluate. Specialisations, default arguments of function templates and
//! packs are not supported (their syntax does not parse as a device template); class templates
//! are `class_templates.rs`'s, and a parameter written as an instance of one (`Buf<T, N> b`)
//! deduces `T` and `N` from an argument's instance and keeps that pattern for the symbol
//! (`3BufIT_XT0_EE`).

use super::consteval::{eval, Const};
use super::expr::{int_const, make, plural};
use super::Context;
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::hir::{self, ExprKind, FuncId, TemplateArgValue, TemplateInstance, TypePattern};
use crate::types::{DisplayType, Quals, Type};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// How deeply instantiations may nest (clang's default is 1024; nvcc's front end stops far
/// earlier on recursive templates; 64 is plenty for device code and keeps sema's stack small).
pub const MAX_INSTANTIATION_DEPTH: usize = 64;

/// At most this many "in instantiation of" labels are added to one diagnostic.
const MAX_CONTEXT_LABELS: usize = 8;

/// The function templates of a file and their instances.
#[derive(Default)]
pub(super) struct Templates {
    defs: HashMap<String, Rc<ast::TemplateDef>>,
    instances: HashMap<(String, Vec<TemplateArgValue>), FuncId>,
    /// Instantiations that failed to declare (reported once).
    failed: HashSet<(String, Vec<TemplateArgValue>)>,
    /// The arguments of the instance being checked, by parameter name.
    pub(super) env: Option<Rc<HashMap<String, TemplateArgValue>>>,
    /// How many instantiations are under way, one inside the other (of function and class
    /// templates together).
    pub(super) depth: usize,
    /// The function whose body first requested each instance (for `host.rs`: an instance that
    /// only an unused `__host__ __device__` function requests is not compiled either).
    pub(super) requested_by: HashMap<FuncId, FuncId>,
    /// The instances host code or an explicit instantiation asks for: compiled like kernels,
    /// whether device code uses them or not.
    pub(super) requested_outside: HashSet<FuncId>,
}

impl Templates {
    pub(super) fn contains_key(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }
}

/// Whether a template's parameters have distinct names (`E0101` for the first repeated one).
pub(super) fn distinct_params(cx: &mut Context, params: &[ast::TemplateParam]) -> bool {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for p in params {
        if let Some(first) = seen.insert(p.name.name.as_str(), p.name.span) {
            cx.error(Code::Redefinition, p.name.span, format!("template parameter `{}` is declared twice", p.name.name))
                .label(first, "first declared here")
                .emit();
            return false;
        }
    }
    true
}

/// Registers a function template (the one with a body, when a prototype comes too).
pub(super) fn declare(cx: &mut Context, def: &ast::TemplateDef) {
    let name = &def.function.name;
    if !distinct_params(cx, &def.params) {
        return;
    }
    match cx.templates.defs.get(&name.name) {
        Some(existing) if existing.function.body.is_some() && def.function.body.is_some() => {
            let first = existing.function.name.span;
            cx.error(Code::Redefinition, name.span, format!("function template `{}` is defined twice", name.name))
                .label(first, "first defined here")
                .note("cdpc does not overload function templates yet (plain functions may be overloaded)")
                .emit();
        }
        Some(existing) if existing.function.body.is_some() => {}
        _ => {
            cx.templates.defs.insert(name.name.clone(), Rc::new(def.clone()));
        }
    }
}

/// Makes the instances that host code names and that explicit instantiations ask for
/// (`front::host_mentions`, `front::explicit_instances`), before any body is checked, as nvcc
/// makes them. A host mention whose arguments cdpc cannot evaluate is `W0945` (host code is the
/// host compiler's to judge); an explicit instantiation is device code, and its mistakes are
/// errors. Errors inside an instance's body are errors either way, labelled with the request.
pub(super) fn instantiate_requested(cx: &mut Context, unit: &ast::TranslationUnit) {
    for instance in &unit.explicit_instances {
        cx.explicit_instance(instance);
    }
    for uses in &unit.host_template_uses {
        cx.host_template_uses(uses);
    }
}

/// A plain function that takes the name of a function template: overloading a template with
/// plain functions is not done yet (plain functions overload each other, `overload.rs`).
pub(super) fn redefined_as_function(cx: &mut Context, def: &ast::FunctionDef) {
    let first = cx.templates.defs[&def.name.name].function.name.span;
    cx.error(Code::Redefinition, def.name.span, format!("`{}` is already declared as a function template", def.name.name))
        .label(first, "the template")
        .note("cdpc does not yet overload a function template with plain functions; give the function another name")
        .emit();
}

impl Context {
    /// The type a template type parameter stands for in the instance being checked.
    pub(super) fn template_type(&self, name: &str) -> Option<Type> {
        match self.templates.env.as_ref()?.get(name)? {
            TemplateArgValue::Type(ty) => Some(ty.clone()),
            TemplateArgValue::Int { .. } => None,
        }
    }

    /// The constant a non-type template parameter stands for in the instance being checked.
    pub(super) fn template_value(&self, ident: &ast::Ident) -> Option<hir::Expr> {
        match self.templates.env.as_ref()?.get(&ident.name)? {
            TemplateArgValue::Int { value, ty } => Some(int_const(*value, ty.clone(), ident.span)),
            TemplateArgValue::Type(_) => None,
        }
    }

    /// `f<...>` anywhere but before a call's `(` or a launch's `<<<`.
    /// `f<int>` or `k<128>` as a value: the address of that instance, a pointer to a device
    /// function or a kernel, when every template argument is written (cdpc does not deduce
    /// them from the type the pointer converts to, as C++ does).
    pub(super) fn template_as_value(&mut self, name: &ast::Ident, explicit: Option<&[ast::TemplateArg]>, span: Span) -> Option<hir::Expr> {
        let def = self.template_def(name)?;
        let known = self.explicit_template_args(&def, name, explicit)?;
        let Some(args) = known.into_iter().collect::<Option<Vec<_>>>() else {
            self.error(Code::TemplateUnsupported, span, format!("`{}` is a function template, not a value, until all its template arguments are given", name.name))
                .note("write them all, `f<int, 4>`: cdpc does not deduce them from the pointer's type")
                .emit();
            return None;
        };
        let id = self.instantiate(&def, args, name.span)?;
        let f = &self.functions[id.0 as usize];
        let sig = crate::types::FnSig { ret: f.return_type.clone(), params: f.param_types().cloned().collect() };
        Some(hir::Expr { kind: hir::ExprKind::FuncAddr(id), ty: Type::FnPtr(Box::new(sig)), span })
    }

    /// A call of a function template: `f<int>(p)` or `f(p)`.
    pub(super) fn template_call(&mut self, name: &ast::Ident, explicit: Option<&[ast::TemplateArg]>, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let def = self.template_def(name)?;
        if args.len() != def.function.params.len() {
            let n = def.function.params.len();
            self.error(Code::CallArity, span, format!("`{}` takes {n} argument{}, but {} were given", name.name, plural(n), args.len()))
                .label(def.function.name.span, "declared here")
                .emit();
            return None;
        }
        let mut known = self.explicit_template_args(&def, name, explicit)?;
        // Places, since a reference parameter binds to one; their values' types deduce.
        let checked: Vec<Option<hir::Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let checked: Vec<hir::Expr> = checked.into_iter().collect::<Option<_>>()?;
        let types: Vec<(Type, Span)> = checked.iter().map(|e| (self.rvalue(e.clone()).ty, e.span)).collect();
        self.deduce(&def, name, &mut known, &types)?;
        let id = self.instantiate(&def, known.into_iter().collect::<Option<Vec<_>>>()?, name.span)?;
        let f = &self.functions[id.0 as usize];
        if f.kind == hir::FunctionKind::Kernel {
            self.error(Code::KernelCalledDirectly, span, format!("`{}` is a `__global__` kernel template and cannot be called like a function", name.name))
                .note(format!("launch it: `{}<...><<<grid, block>>>(...)`", name.name))
                .emit();
            return None;
        }
        let params: Vec<Type> = f.param_types().cloned().collect();
        let refs: Vec<bool> = (0..params.len()).map(|i| f.cxx.ref_params.get(i).copied().unwrap_or(false)).collect();
        let return_type = f.return_type.clone();
        if params.len() != checked.len() {
            return None; // a parameter of the instance failed to check; reported
        }
        let converted: Vec<Option<hir::Expr>> = checked
            .into_iter()
            .zip(&params)
            .enumerate()
            .map(|(i, (e, p))| {
                if refs[i] {
                    let at = e.span;
                    self.bind_reference(e, p, &format!("parameter {} of `{}`", i + 1, name.name), at)
                } else {
                    let value = self.rvalue(e);
                    self.coerce(value, p, Code::TypeMismatch, "argument has the wrong type")
                }
            })
            .collect();
        let converted = converted.into_iter().collect::<Option<Vec<_>>>()?;
        self.record_call(id);
        Some(make(ExprKind::Call { func: id, args: converted }, return_type, span))
    }

    /// The instance a launch of a kernel template starts: `k<128><<<...>>>(p)` or `k<<<...>>>(p)`.
    pub(super) fn launched_template(&mut self, kernel: &ast::Ident, explicit: Option<&[ast::TemplateArg]>, args: &[ast::Expr]) -> Option<FuncId> {
        let def = self.template_def(kernel)?;
        let mut known = self.explicit_template_args(&def, kernel, explicit)?;
        if known.iter().any(Option::is_none) {
            // Deduction needs the arguments' types; the launch checks them again afterwards,
            // so only a clean first check may go on (no diagnostic is reported twice).
            let errors = self.diags.len();
            let types: Vec<Option<(Type, Span)>> = args.iter().map(|a| self.expr(a).map(|e| (self.rvalue(e).ty, a.span))).collect();
            if self.diags.len() != errors {
                return None;
            }
            let types: Vec<(Type, Span)> = types.into_iter().collect::<Option<_>>()?;
            if types.len() != def.function.params.len() {
                let n = def.function.params.len();
                self.error(Code::LaunchArity, kernel.span, format!("kernel template `{}` takes {n} argument{}, but {} were given", kernel.name, plural(n), types.len()))
                    .label(def.function.name.span, "declared here")
                    .emit();
                return None;
            }
            self.deduce(&def, kernel, &mut known, &types)?;
        }
        let id = self.instantiate(&def, known.into_iter().collect::<Option<Vec<_>>>()?, kernel.span)?;
        if self.functions[id.0 as usize].kind != hir::FunctionKind::Kernel {
            self.error(Code::LaunchOfNonKernel, kernel.span, format!("`{}` is not a kernel template", kernel.name))
                .label(def.function.name.span, "declared without `__global__`")
                .emit();
            return None;
        }
        Some(id)
    }

    /// The template `name` names from inside `namespace` (host code's or an explicit
    /// instantiation's, which have no function scope): innermost namespace first, then as any
    /// name at file scope.
    fn template_def_in(&self, name: &str, namespace: &[String]) -> Option<Rc<ast::TemplateDef>> {
        let mut candidates: Vec<String> = (1..=namespace.len()).rev().map(|i| format!("{}::{name}", namespace[..i].join("::"))).collect();
        candidates.extend(self.candidates(name));
        candidates.iter().find_map(|c| self.templates.defs.get(c).cloned())
    }

    /// `template __global__ void k<128>(P);`
    fn explicit_instance(&mut self, instance: &ast::ExplicitInstance) {
        let name = &instance.name;
        let Some(def) = self.template_def_in(&name.name, &instance.namespace) else {
            self.error(Code::UnknownName, name.span, format!("cannot find function template `{}` to instantiate", name.name)).emit();
            return;
        };
        let Some(args) = &instance.args else {
            self.error(Code::TemplateUnsupported, name.span, format!("explicit instantiation of `{}` without template arguments cdpc can read", name.name))
                .primary("template arguments expected here")
                .note(format!("cdpc does not deduce them from the parameter list; write them: `{}<...>`", name.name))
                .emit();
            return;
        };
        let kernel = def.function.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::Global);
        if kernel != instance.global {
            let (message, note) = if kernel {
                (format!("kernel template `{}` is explicitly instantiated without `__global__`", name.name), "nvcc rejects it too (\"a __global__ function redeclared without __global__\"); write `template __global__ void ...`")
            } else {
                (format!("`{}` is not a kernel template, but its explicit instantiation is `__global__`", name.name), "write the instantiation with the template's own attributes: `template __device__ ...`")
            };
            let primary = if kernel { "instantiated without `__global__`" } else { "instantiated as a kernel" };
            self.error(Code::InvalidDeclaration, name.span, message).primary(primary).label(def.function.name.span, "the template").note(note).emit();
            return;
        }
        let Some(values) = self.explicit_template_args(&def, name, Some(args)) else { return };
        let Some(values) = values.into_iter().collect::<Option<Vec<_>>>() else {
            self.error(Code::TemplateUnsupported, instance.span, format!("explicit instantiation of `{}` gives {} of its {} template arguments", name.name, args.len(), def.params.len()))
                .label(def.function.name.span, "the template")
                .note("cdpc does not deduce the others from the parameter list; write them all")
                .emit();
            return;
        };
        if let Some(id) = self.instantiate(&def, values, name.span) {
            self.templates.requested_outside.insert(id);
        }
    }

    /// The mentions of device templates in one host declaration, with its `const` locals in
    /// scope as they are declared (`host.rs`); each instance is made after the walk, so that no
    /// host local is visible inside an instance's body.
    fn host_template_uses(&mut self, uses: &ast::HostTemplateUses) {
        let mut requested = Vec::new();
        for event in &uses.events {
            let at = match event {
                ast::HostEvent::Const(c) => c.name.span.start,
                ast::HostEvent::Use(u) => u.span.start,
            };
            self.host_locals.leave(at);
            match event {
                ast::HostEvent::Const(c) => {
                    let value = c.value.as_ref().and_then(|v| self.host_local_value(v));
                    self.host_locals.push(super::host::HostLocal { name: c.name.name.clone(), value, scope_end: c.scope_end });
                }
                ast::HostEvent::Use(u) => requested.extend(self.host_template_use(u, uses)),
            }
        }
        self.host_locals.clear();
        for (def, args, span) in requested {
            if let Some(id) = self.instantiate(&def, args, span) {
                self.templates.requested_outside.insert(id);
            }
        }
    }

    /// The template and arguments of one host mention; `None` (with `W0945`) when cdpc cannot
    /// evaluate them, and `None` quietly when the name is no kernel template of this file: nvcc
    /// compiles no device code for a `__device__` or `__host__ __device__` template that only
    /// host code names (measured: its PTX has no such function).
    fn host_template_use(&mut self, mention: &ast::HostTemplateUse, uses: &ast::HostTemplateUses) -> Option<(Rc<ast::TemplateDef>, Vec<TemplateArgValue>, Span)> {
        let def = self.template_def_in(&mention.name.name, &uses.namespace)?;
        if !def.function.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::Global) {
            return None;
        }
        let (label, why) = match &mention.args {
            ast::HostTemplateArgs::Deduced => (
                "launched without template arguments",
                "nvcc deduces them from the launch's arguments, host expressions that cdpc does not read".to_string(),
            ),
            ast::HostTemplateArgs::Unreadable => ("template arguments cdpc cannot read", "they do not read as device code's types and constants".to_string()),
            ast::HostTemplateArgs::Explicit(args) if args.len() < def.params.len() => (
                "not every template argument is written",
                "nvcc deduces the others from the call's arguments, host expressions that cdpc does not read".to_string(),
            ),
            ast::HostTemplateArgs::Explicit(args) => {
                let outer = std::mem::take(&mut self.diags);
                let values = self.explicit_template_args(&def, &mention.name, Some(args));
                let errors = std::mem::replace(&mut self.diags, outer);
                if let Some(values) = values.and_then(|v| v.into_iter().collect::<Option<Vec<_>>>()) {
                    return Some((def, values, mention.span));
                }
                let why = errors.iter().find(|d| d.is_error()).map_or_else(|| "they are not constants cdpc can evaluate".to_string(), |d| d.message.clone());
                ("template arguments cdpc cannot evaluate", why)
            }
        };
        let (what, head) = ("kernel template", "__global__ void");
        let name = &mention.name.name;
        let mut warning = self
            .error(Code::HostTemplateNotInstantiated, mention.span, format!("host code names an instance of {what} `{name}` that cdpc does not compile"))
            .primary(label)
            .label(def.function.name.span, format!("the {what}"))
            .note(format!("cdpc cannot tell which instance: {why}"));
        if uses.in_template {
            warning = warning.note("this host declaration is a template: its template parameters are known only where host code instantiates it, which cdpc does not see");
        }
        warning
            .note(format!(
                "cdpc instantiates what host code names when its template arguments are types and constants of device code (literals, macros, \
                 file-scope constants, `const` locals initialized with them); ask for the instance in device code with an explicit \
                 instantiation, `template {head} {name}<...>(...);`, with the template arguments and the {what}'s parameter types"
            ))
            .emit();
        None
    }

    fn template_def(&mut self, name: &ast::Ident) -> Option<Rc<ast::TemplateDef>> {
        // Looked up as any function name is (`scope.rs`): through enclosing namespaces, `using
        // namespace` and namespace aliases.
        match self.candidates(&name.name).into_iter().find_map(|c| self.templates.defs.get(&c).cloned()) {
            Some(def) => Some(def),
            None => {
                // The template's own declaration failed to parse or check; that was reported.
                if !self.skipped_use(&name.name, name.span) && !self.diags.has_errors() {
                    self.error(Code::UnknownName, name.span, format!("cannot find function template `{}`", name.name)).emit();
                }
                None
            }
        }
    }

    /// The explicit arguments, one entry per template parameter (`None`: to be deduced).
    fn explicit_template_args(&mut self, def: &ast::TemplateDef, name: &ast::Ident, explicit: Option<&[ast::TemplateArg]>) -> Option<Vec<Option<TemplateArgValue>>> {
        let explicit = explicit.unwrap_or(&[]);
        if explicit.len() > def.params.len() {
            let n = def.params.len();
            let span = arg_span(&explicit[n]);
            self.error(Code::TemplateArgumentMismatch, span, format!("too many template arguments for `{}`: it has {n} template parameter{}", name.name, plural(n)))
                .label(def.function.name.span, "the template")
                .emit();
            return None;
        }
        let mut values = Vec::with_capacity(def.params.len());
        let mut ok = true;
        for (i, param) in def.params.iter().enumerate() {
            let Some(arg) = explicit.get(i) else {
                values.push(None);
                continue;
            };
            let value = self.template_arg(param, arg, &name.name);
            ok &= value.is_some();
            values.push(value);
        }
        ok.then_some(values)
    }

    /// The value of one template argument as written for `param` of the template `name` (a
    /// function or class template): a type, or an integer constant (`E0942` for the other kind).
    pub(super) fn template_arg(&mut self, param: &ast::TemplateParam, arg: &ast::TemplateArg, name: &str) -> Option<TemplateArgValue> {
        match (&param.kind, arg) {
            (ast::TemplateParamKind::Type, ast::TemplateArg::Type(tn)) => self.resolve_type_name(tn).map(TemplateArgValue::Type),
            (ast::TemplateParamKind::Value(spec), ast::TemplateArg::Value(e)) => self.constant_arg(spec, param, e),
            (ast::TemplateParamKind::Type, ast::TemplateArg::Value(e)) => {
                self.error(Code::TemplateArgumentMismatch, e.span, format!("template parameter `{}` of `{name}` is a type, but this is an expression", param.name.name))
                    .label(param.span, "declared as a type here")
                    .emit();
                None
            }
            (ast::TemplateParamKind::Value(_), ast::TemplateArg::Type(tn)) => {
                self.error(Code::TemplateArgumentMismatch, tn.span, format!("template parameter `{}` of `{name}` is a constant, but this is a type", param.name.name))
                    .label(param.span, "declared as a constant here")
                    .emit();
                None
            }
        }
    }

    /// Records what one argument deduces for the template's parameter `index`; `E0941` when an
    /// earlier argument deduced something else.
    #[allow(clippy::too_many_arguments)]
    fn record_deduced(&mut self, def: &ast::TemplateDef, name: &ast::Ident, known: &mut [Option<TemplateArgValue>], from: &mut [Option<Span>], index: usize, deduced: TemplateArgValue, at: Span) -> Option<()> {
        match (&known[index], from[index]) {
            (Some(previous), Some(first)) if *previous != deduced => {
                let (a, b) = (self.arg_text(previous), self.arg_text(&deduced));
                let p = &def.params[index].name.name;
                let what = if matches!(deduced, TemplateArgValue::Type(_)) { "types" } else { "values" };
                self.error(Code::TemplateDeductionFailed, at, format!("conflicting {what} for `{p}` of `{}`: `{a}` and `{b}`", name.name))
                    .primary(format!("`{p}` would be `{b}` here"))
                    .label(first, format!("but `{a}` here"))
                    .note(format!("give the argument explicitly: `{}<...>(...)`", name.name))
                    .emit();
                None
            }
            (Some(_), Some(_)) => Some(()),
            _ => {
                known[index] = Some(deduced);
                from[index] = Some(at);
                Some(())
            }
        }
    }

    /// A non-type argument: an integer constant, converted to the parameter's type.
    pub(super) fn constant_arg(&mut self, spec: &ast::TypeSpec, param: &ast::TemplateParam, e: &ast::Expr) -> Option<TemplateArgValue> {
        let ty = self.resolve_spec(spec)?;
        if !ty.is_integer() {
            self.error(Code::TemplateUnsupported, param.span, format!("non-type template parameter `{}` has type {}", param.name.name, self.show(&ty)))
                .note("cdpc's non-type template parameters are integers")
                .emit();
            return None;
        }
        let value = self.expr(e)?;
        let value = self.coerce(value, &ty, Code::TemplateArgumentNotConstant, "template argument has the wrong type")?;
        match eval(&value, &self.target) {
            Some(Const::Int(v)) => Some(TemplateArgValue::Int { value: v as i64, ty }),
            _ => {
                self.error(Code::TemplateArgumentNotConstant, e.span, format!("the argument for `{}` is not an integer constant", param.name.name))
                    .primary("known only when the program runs")
                    .note("a template argument must be known at compile time: a literal, an enumerator-like constant or an expression of them")
                    .emit();
                None
            }
        }
    }

    /// Fills in the parameters not given explicitly from the argument types (`T`, `T *`,
    /// `const T *` patterns); reports what stays unknown or contradicts itself.
    fn deduce(&mut self, def: &ast::TemplateDef, name: &ast::Ident, known: &mut [Option<TemplateArgValue>], args: &[(Type, Span)]) -> Option<()> {
        let explicit: Vec<bool> = known.iter().map(Option::is_some).collect();
        let mut from: Vec<Option<Span>> = vec![None; known.len()];
        for (param, (arg_ty, arg_span)) in def.function.params.iter().zip(args) {
            if let ast::TypeSpecKind::Instance(template, written) = &param.ty.kind {
                // `Buf<T, N> b` from an argument `Buf<float, 2>` (through as many pointers).
                let levels = param.declarator.pointers.len() + usize::from(!param.declarator.array_dims.is_empty());
                let inner = strip_pointers(arg_ty, levels).clone();
                let values = match &inner {
                    Type::Struct(id) => crate::types::StructLayouts::struct_template(self, *id).map(|(t, v)| (t.to_string(), v.to_vec())),
                    _ => None,
                };
                let wanted = self.candidates(&template.name).into_iter().find(|c| self.class_templates_contains(c));
                let Some((_, values)) = values.filter(|(t, _)| Some(t) == wanted.as_ref()) else {
                    if written.iter().any(|a| mentions_param(def, a)) {
                        self.error(Code::TemplateDeductionFailed, *arg_span, format!("cannot deduce the template arguments of `{}` from an argument of type {}", name.name, self.show(arg_ty)))
                            .label(param.span, format!("this parameter needs an instance of `{}`", template.name))
                            .emit();
                        return None;
                    }
                    continue;
                };
                for (arg, value) in written.iter().zip(&values) {
                    let (index, deduced) = match (arg, value) {
                        (ast::TemplateArg::Type(tn), TemplateArgValue::Type(ty)) if tn.pointers.is_empty() => match &tn.spec.kind {
                            ast::TypeSpecKind::Struct(n) if !tn.spec.is_const && !tn.spec.is_volatile => match type_param_index(def, &n.name) {
                                Some(i) => (i, TemplateArgValue::Type(ty.clone())),
                                None => continue,
                            },
                            _ => continue,
                        },
                        (ast::TemplateArg::Value(ast::Expr { kind: ast::ExprKind::Ident(n), .. }), TemplateArgValue::Int { value, .. }) => {
                            let Some(i) = def.params.iter().position(|p| p.name.name == n.name) else { continue };
                            let ast::TemplateParamKind::Value(spec) = &def.params[i].kind else { continue };
                            let ty = self.resolve_spec(spec)?;
                            (i, TemplateArgValue::Int { value: *value, ty })
                        }
                        _ => continue,
                    };
                    if !explicit[index] {
                        self.record_deduced(def, name, known, &mut from, index, deduced, *arg_span)?;
                    }
                }
                continue;
            }
            let ast::TypeSpecKind::Struct(base) = &param.ty.kind else { continue };
            let Some(index) = type_param_index(def, &base.name) else { continue };
            if explicit[index] {
                continue;
            }
            let levels = param.declarator.pointers.len() + usize::from(!param.declarator.array_dims.is_empty());
            let mut ty = arg_ty.clone();
            for level in 0..levels {
                let extra = ty.pointee_quals().without(param.ty.quals());
                match ty {
                    Type::Pointer { pointee, .. } => {
                        if level + 1 == levels && extra != Quals::NONE {
                            let shown = self.show(arg_ty);
                            let quals = extra.prefix().trim_end();
                            self.error(Code::TemplateUnsupported, *arg_span, format!("deducing `{}` of `{}` would make it a `{quals}` type", base.name, name.name))
                                .primary(format!("this has type {shown}"))
                                .note(format!("cdpc cannot bind a template parameter to a qualified type yet; write the parameter `{quals} {} *`, or cast the argument", base.name))
                                .emit();
                            return None;
                        }
                        ty = *pointee;
                    }
                    _ => {
                        self.error(Code::TemplateDeductionFailed, *arg_span, format!("cannot deduce `{}` of `{}` from an argument of type {}", base.name, name.name, self.show(arg_ty)))
                            .label(param.span, format!("this parameter needs a pointer{}", if levels > 1 { " to a pointer" } else { "" }))
                            .emit();
                        return None;
                    }
                }
            }
            self.record_deduced(def, name, known, &mut from, index, TemplateArgValue::Type(ty), *arg_span)?;
        }
        if let Some(i) = known.iter().position(Option::is_none) {
            let param = &def.params[i];
            self.error(Code::TemplateDeductionFailed, name.span, format!("cannot deduce template parameter `{}` of `{}`", param.name.name, name.name))
                .label(param.span, "declared here")
                .note(format!("no argument's type gives it; write the template arguments: `{}<...>`", name.name))
                .emit();
            return None;
        }
        Some(())
    }

    /// The instance of `def` for `args`, declared and checked on first use.
    fn instantiate(&mut self, def: &ast::TemplateDef, args: Vec<TemplateArgValue>, request: Span) -> Option<FuncId> {
        let name = def.function.name.name.clone();
        let key = (name.clone(), args.clone());
        if let Some(id) = self.templates.instances.get(&key) {
            return Some(*id);
        }
        if self.templates.failed.contains(&key) {
            return None;
        }
        let display = format!("{name}<{}>", args.iter().map(|a| self.arg_text(a)).collect::<Vec<_>>().join(", "));
        if self.templates.depth >= MAX_INSTANTIATION_DEPTH {
            self.error(Code::TemplateDepthExceeded, request, format!("instantiating `{display}` exceeds the maximum depth of {MAX_INSTANTIATION_DEPTH} nested instantiations"))
                .primary("requested here")
                .note("the template instantiates itself with new arguments without end; recursion through templates needs a way to stop, which cdpc's templates (without specialisations) do not have")
                .emit();
            self.templates.failed.insert(key);
            return None;
        }
        let env: HashMap<String, TemplateArgValue> = def.params.iter().map(|p| p.name.name.clone()).zip(args.iter().cloned()).collect();
        let saved_env = self.templates.env.replace(Rc::new(env));
        let saved_func = self.func.take();
        self.templates.depth += 1;
        let first_diag = self.diags.len();

        let declared = super::decls::function_signature(self, &def.function);
        let id = declared.and_then(|(mut f, owner)| {
            if owner.class.is_some() {
                self.error(Code::TemplateUnsupported, def.function.name.span, "a member function template is not supported yet")
                    .primary("a template of a class's member function")
                    .note("write the member function for the types it is used with, or make the template a free function")
                    .emit();
                return None;
            }
            if f.params.len() != def.function.params.len() {
                return None; // a parameter failed to check; reported
            }
            f.template = Some(Box::new(TemplateInstance {
                return_pattern: pattern(self, def, &def.function.return_type.spec, &def.function.return_type.pointers, false, &f.return_type),
                param_patterns: def
                    .function
                    .params
                    .iter()
                    .zip(f.param_types())
                    .map(|(p, ty)| match p.declarator.reference {
                        // `T &x`, `const Buf<T> &b`: the referred type's pattern, under `R`.
                        Some(_) => {
                            let referred = ty.pointee().cloned().unwrap_or_else(|| ty.clone());
                            let quals = p.declarator.pointers.last().map(|l| l.quals()).unwrap_or(p.ty.quals());
                            let pointee = match pattern(self, def, &p.ty, &p.declarator.pointers, false, &referred) {
                                TypePattern::Concrete(_) => TypePattern::Concrete(referred.clone()),
                                generic => generic,
                            };
                            TypePattern::Reference { pointee: Box::new(pointee), pointee_quals: quals }
                        }
                        None => pattern(self, def, &p.ty, &p.declarator.pointers, !p.declarator.array_dims.is_empty(), ty),
                    })
                    .collect(),
                args: args.clone(),
            }));
            self.functions.push(f);
            let id = FuncId(self.functions.len() as u32 - 1);
            self.templates.instances.insert(key.clone(), id);
            if let Some(requester) = &saved_func {
                self.templates.requested_by.insert(id, requester.id);
            }
            Some(id)
        });
        match id {
            Some(id) => super::decls::define_out_of_order(self, id, &def.function),
            None => {
                self.templates.failed.insert(key);
            }
        }

        self.templates.depth -= 1;
        self.func = saved_func;
        self.templates.env = saved_env;
        let context = format!("in instantiation of `{display}` requested here");
        for d in self.diags.since_mut(first_diag) {
            let context_labels = || d.labels.iter().filter(|l| l.message.starts_with("in instantiation of"));
            // Recursive instances request each other from one place: label it once (the
            // innermost), then the first use elsewhere.
            let same_place = context_labels().any(|l| l.span == request);
            if !same_place && context_labels().count() < MAX_CONTEXT_LABELS {
                d.labels.push(crate::diag::Label { span: request, message: context.clone(), primary: false, file: None });
            }
        }
        id
    }

    /// A template argument as a message writes it.
    pub(super) fn arg_text(&self, arg: &TemplateArgValue) -> String {
        match arg {
            TemplateArgValue::Type(ty) => DisplayType { ty, structs: self }.to_string(),
            TemplateArgValue::Int { value, ty: Type::Int(kind) } if !kind.is_signed(&self.target) => format!("{}", *value as u64),
            TemplateArgValue::Int { value, .. } => value.to_string(),
        }
    }
}

/// The index of the template's type parameter named `name`, among all its parameters.
fn type_param_index(def: &ast::TemplateDef, name: &str) -> Option<usize> {
    def.params.iter().position(|p| p.name.name == name && p.kind == ast::TemplateParamKind::Type)
}

/// A type as the template writes it: a template parameter under its pointers, or the concrete
/// type it resolved to.
fn pattern(cx: &Context, def: &ast::TemplateDef, spec: &ast::TypeSpec, pointers: &[ast::PointerLevel], decays: bool, resolved: &Type) -> TypePattern {
    let mut p = match &spec.kind {
        ast::TypeSpecKind::Struct(base) => match type_param_index(def, &base.name) {
            Some(index) => TypePattern::Param(index as u32),
            None => return TypePattern::Concrete(resolved.clone()),
        },
        // `Buf<T, 2>`: an instance written with the template's parameters.
        ast::TypeSpecKind::Instance(_, args) => match instance_pattern(cx, def, args, strip_pointers(resolved, pointers.len() + usize::from(decays))) {
            Some(p) => p,
            None => return TypePattern::Concrete(resolved.clone()),
        },
        ast::TypeSpecKind::Builtin(_) => return TypePattern::Concrete(resolved.clone()),
    };
    let mut quals = spec.quals();
    for level in pointers {
        p = TypePattern::Pointer { pointee: Box::new(p), pointee_quals: quals };
        quals = level.quals();
    }
    if decays {
        p = TypePattern::Pointer { pointee: Box::new(p), pointee_quals: quals };
    }
    p
}

/// Whether a class template's argument as written names one of the template's parameters.
fn mentions_param(def: &ast::TemplateDef, arg: &ast::TemplateArg) -> bool {
    match arg {
        ast::TemplateArg::Type(tn) => match &tn.spec.kind {
            ast::TypeSpecKind::Struct(n) => type_param_index(def, &n.name).is_some(),
            ast::TypeSpecKind::Instance(_, args) => args.iter().any(|a| mentions_param(def, a)),
            ast::TypeSpecKind::Builtin(_) => false,
        },
        ast::TemplateArg::Value(ast::Expr { kind: ast::ExprKind::Ident(n), .. }) => def.params.iter().any(|p| p.name.name == n.name),
        ast::TemplateArg::Value(_) => false,
    }
}

/// `ty` under `levels` pointers.
fn strip_pointers(ty: &Type, levels: usize) -> &Type {
    let mut ty = ty;
    for _ in 0..levels {
        match ty {
            Type::Pointer { pointee, .. } => ty = pointee,
            _ => break,
        }
    }
    ty
}

/// The pattern of a class template's instance written with the function template's parameters
/// (`Buf<T, N>`), `resolved` the instance it gave; `None` when no argument names a parameter
/// (the instance is then a concrete type).
fn instance_pattern(cx: &Context, def: &ast::TemplateDef, args: &[ast::TemplateArg], resolved: &Type) -> Option<TypePattern> {
    let Type::Struct(id) = resolved else { return None };
    let (template, values) = crate::types::StructLayouts::struct_template(cx, *id)?;
    let mut generic = false;
    let mut out = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let arg = match (args.get(i), value) {
            (Some(ast::TemplateArg::Type(tn)), TemplateArgValue::Type(ty)) => {
                let p = pattern(cx, def, &tn.spec, &tn.pointers, false, ty);
                generic |= !matches!(p, TypePattern::Concrete(_));
                hir::PatternArg::Type(p)
            }
            (Some(ast::TemplateArg::Value(ast::Expr { kind: ast::ExprKind::Ident(name), .. })), _)
                if def.params.iter().any(|p| p.name.name == name.name && matches!(p.kind, ast::TemplateParamKind::Value(_))) =>
            {
                generic = true;
                hir::PatternArg::ValueParam(def.params.iter().position(|p| p.name.name == name.name).expect("just found") as u32)
            }
            (_, TemplateArgValue::Type(ty)) => hir::PatternArg::Type(TypePattern::Concrete(ty.clone())),
            (_, value) => hir::PatternArg::Value(value.clone()),
        };
        out.push(arg);
    }
    generic.then(|| TypePattern::Instance { template: template.to_string(), args: out })
}

/// Where a template argument was written.
fn arg_span(arg: &ast::TemplateArg) -> Span {
    match arg {
        ast::TemplateArg::Type(tn) => tn.span,
        ast::TemplateArg::Value(e) => e.span,
    }
}
