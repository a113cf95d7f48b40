//! **Where class templates are instantiated.** A class template (`ast::Item::ClassTemplate`,
//! cut apart by `front::class_templates`) is kept as written; each use with new arguments,
//! `Buf<int, 4>` in any type, makes one concrete struct, its *instance*, and one concrete
//! member function per member function of the template. So the HIR holds only concrete
//! structs and functions, as for function templates (`templates.rs`).
//!
//! - **Arguments** are resolved in the scope of the use (a function template's parameters
//!   included: `Buf<T, 2>` in `kt<float>` is `Buf<float, 2>`); the missing ones come from the
//!   parameters' defaults (`template <typename T, int N = 4>`), evaluated with the earlier
//!   arguments bound. Type and integer non-type parameters; `E0942` for the wrong number or kind
//!   of arguments, `E0943` for a non-type argument that is no integer constant.
//! - **Instantiation is on use and memoised** by the template and its arguments: the struct is
//!   registered before its fields are laid out (a member `Buf *next` is the instance itself),
//!   then its data members are laid out as a struct's (`decls::define_struct_in_scope`, C's
//!   rules, nvcc's layout), then its member functions are declared. Their bodies are checked
//!   at once when the instance is first used in a body; an instance first named by a
//!   declaration (a kernel's parameter) has its member bodies checked when all declarations
//!   are known (`define_pending`, before the file's bodies), so they may call any function.
//! - **Depth**: instantiations of class and function templates nest together, at most
//!   `templates::MAX_INSTANTIATION_DEPTH` deep (`E0940`); an error inside an instance carries
//!   a label at the use that requested it.
//! - **Names**: the instance's struct is shown as `Buf<int, 4>` and keeps its template and
//!   arguments (`hir::ClassInstance`), from which `crate::hir::mangle` names it (`3BufIiLi4EE`); a
//!   member function's nested name includes them (`_ZNK3BufIiLi4EE3sumEv`,
//!   `hir::CxxSignature::instance`). Inside the template, its bare name is the instance
//!   (C++'s injected class name: `Buf` in `void add(const Buf &o)`).
//! - **Members defined outside the class** (`template <class T> __device__ T Buf<T>::f() {...}`)
//!   give the body of the prototype in the class with the same name and number of parameters;
//!   the arguments after the class's name must be the header's parameters in order.
//! - **Static members**: `static constexpr int size = N;` (integer constants, evaluated before
//!   the layout, seen by the data members and member functions like the parameters, and as
//!   `Buf<int, 4>::size`); `Buf<int, 4>::f(x)` calls a static member function.
//!
//! Not supported: specialisations, member templates, other static data members, nested types, a
//! class template as a base or with a base that depends on its parameters, packs.

use super::templates::MAX_INSTANTIATION_DEPTH;
use super::Context;
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::hir::{self, ClassInstance, FuncId, TemplateArgValue};
use crate::types::{StructId, Type};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// The class templates of a file and their instances.
#[derive(Default)]
pub(super) struct ClassTemplates {
    defs: HashMap<String, Rc<ast::ClassTemplateDef>>,
    /// The members defined outside their class, by the template's qualified name.
    members: HashMap<String, Vec<Rc<ast::ClassTemplateMember>>>,
    instances: HashMap<(String, Vec<TemplateArgValue>), StructId>,
    failed: HashSet<(String, Vec<TemplateArgValue>)>,
    /// Member functions of instances whose bodies are checked when first used (C++ instantiates
    /// a member function's definition only then: `Buf<P, 1>::sum` may add what `+` cannot).
    lazy: HashMap<FuncId, Pending>,
    /// Used member functions whose bodies wait until every declaration is known.
    pending: Vec<Pending>,
    /// Members whose definition outside the class was refused (`Buf::f`): their uses are not
    /// reported again as undefined.
    broken: HashSet<String>,
    /// The `static constexpr` integer members of each instance.
    statics: HashMap<(StructId, String), TemplateArgValue>,
    /// Bodies are checked at once (set when the file's bodies are checked).
    defining: bool,
    /// The instance whose member functions are being declared, and whether the one being
    /// declared is `static` (`scope::function_owner` asks).
    pub(super) declaring: Option<(StructId, bool)>,
}

/// A member function of an instance whose body is still to be checked.
struct Pending {
    id: FuncId,
    def: Rc<ast::FunctionDef>,
    env: Rc<HashMap<String, TemplateArgValue>>,
    request: Span,
    display: String,
}

/// Registers a class template.
pub(super) fn declare(cx: &mut Context, def: &ast::ClassTemplateDef) {
    let name = &def.class.name;
    if !super::templates::distinct_params(cx, &def.params) {
        return;
    }
    if let Some(existing) = cx.class_templates.defs.get(&name.name) {
        let first = existing.class.name.span;
        cx.error(Code::Redefinition, name.span, format!("class template `{}` is defined twice", name.name))
            .label(first, "first defined here")
            .note("cdpc does not specialise class templates")
            .emit();
        return;
    }
    if cx.struct_names.contains_key(&name.name) {
        cx.error(Code::Redefinition, name.span, format!("`{}` is already declared as a struct", name.name)).emit();
        return;
    }
    cx.class_templates.defs.insert(name.name.clone(), Rc::new(def.clone()));
}

/// Registers a member function defined outside its class template, after checking that the
/// class declares it and that it names the class with the header's parameters.
pub(super) fn declare_member(cx: &mut Context, member: &ast::ClassTemplateMember) {
    let f = &member.function;
    let Some((template, simple)) = f.name.name.rsplit_once("::") else { return };
    let Some(def) = cx.class_templates.defs.get(template).cloned() else {
        cx.error(Code::UnknownName, f.name.span, format!("cannot find class template `{template}` for this member")).emit();
        return;
    };
    if member.class_args.len() != def.params.len() {
        let n = def.params.len();
        cx.error(Code::TemplateArgumentMismatch, f.name.span, format!("`{template}` has {n} template parameter{}, but this member names it with {} argument{}", super::expr::plural(n), member.class_args.len(), super::expr::plural(member.class_args.len())))
            .label(def.class.name.span, "the class template")
            .emit();
        return;
    }
    for (i, (arg, own)) in member.class_args.iter().zip(&def.params).enumerate() {
        let param = member.params.get(i);
        let names_param = param.is_some_and(|param| match arg {
            ast::TemplateArg::Type(t) => t.pointers.is_empty() && matches!(&t.spec.kind, ast::TypeSpecKind::Struct(n) if n.name == param.name.name),
            ast::TemplateArg::Value(e) => matches!(&e.kind, ast::ExprKind::Ident(n) if n.name == param.name.name),
        });
        let same_kind = param.is_some_and(|param| {
            matches!((&param.kind, &own.kind), (ast::TemplateParamKind::Type, ast::TemplateParamKind::Type) | (ast::TemplateParamKind::Value(_), ast::TemplateParamKind::Value(_)))
        });
        if !names_param || !same_kind {
            let at = match arg {
                ast::TemplateArg::Type(t) => t.span,
                ast::TemplateArg::Value(e) => e.span,
            };
            cx.error(Code::TemplateUnsupported, at, format!("a member of `{template}` must be defined for the template's own parameters, in order"))
                .primary(match param {
                    Some(param) => format!("`{}` expected here", param.name.name),
                    None => "an argument that is no parameter of the header".to_string(),
                })
                .note("partial specialisations are not supported; write `template <...> R Name<T, N>::f(...)` with the header's parameters")
                .emit();
            cx.class_templates.broken.insert(f.name.name.clone());
            return;
        }
    }
    if member.params.len() != def.params.len() {
        cx.error(Code::TemplateUnsupported, f.name.span, format!("a member of `{template}` must be defined for the template's own parameters, in order"))
            .primary(format!("this header has {} parameter{}, the class template {}", member.params.len(), super::expr::plural(member.params.len()), def.params.len()))
            .emit();
        cx.class_templates.broken.insert(f.name.name.clone());
        return;
    }
    let declared = def.methods.iter().any(|m| m.name.name.rsplit("::").next() == Some(simple) && m.body.is_none() && m.params.len() == f.params.len());
    if !declared {
        cx.error(Code::NoSuchMember, f.name.span, format!("`{}` is not declared in its class template", f.name.name))
            .primary("defined outside the class here")
            .label(def.class.name.span, "the class template")
            .note("declare the member function inside the class body first, without a body")
            .emit();
        return;
    }
    cx.class_templates.members.entry(template.to_string()).or_default().push(Rc::new(member.clone()));
}

/// Checks the bodies of the member functions used while declarations were read (from host
/// code's instances, or from function template instances made then).
pub(super) fn define_pending(cx: &mut Context) {
    cx.class_templates.defining = true;
    let pending = std::mem::take(&mut cx.class_templates.pending);
    for p in pending {
        cx.define_member(p);
    }
}

impl Context {
    /// A call of `callee`: the first one of an instance's member function checks its body
    /// (`host.rs`, `record_call`).
    pub(super) fn use_member(&mut self, callee: FuncId) {
        let Some(p) = self.class_templates.lazy.remove(&callee) else { return };
        if self.class_templates.defining {
            self.define_member(p);
        } else {
            self.class_templates.pending.push(p);
        }
    }

    fn define_member(&mut self, p: Pending) {
        if self.templates.depth >= MAX_INSTANTIATION_DEPTH {
            self.error(Code::TemplateDepthExceeded, p.request, format!("instantiating a member of `{}` exceeds the maximum depth of {MAX_INSTANTIATION_DEPTH} nested instantiations", p.display))
                .primary("requested here")
                .emit();
            return;
        }
        let first_diag = self.diags.len();
        let saved_env = self.templates.env.replace(p.env);
        let saved_scope = std::mem::take(&mut self.decl_scope);
        self.templates.depth += 1;
        super::decls::define_out_of_order(self, p.id, &p.def);
        self.templates.depth -= 1;
        self.decl_scope = saved_scope;
        self.templates.env = saved_env;
        self.label_instance_diagnostics(first_diag, p.request, &p.display);
    }
}

impl Context {
    /// Whether `name` (qualified) is a class template.
    pub(super) fn class_templates_contains(&self, name: &str) -> bool {
        self.class_templates.defs.contains_key(name)
    }

    /// `Buf<int, 4>` in a type: the instance, made on first use.
    pub(super) fn class_instance(&mut self, name: &ast::Ident, args: &[ast::TemplateArg], span: Span) -> Option<Type> {
        let Some(def) = self.candidates(&name.name).into_iter().find_map(|c| self.class_templates.defs.get(&c).cloned()) else {
            // A class template that does not parse as device code was left to the host compiler.
            let skipped = self.skipped_candidate(&name.name);
            if skipped.is_some_and(|s| self.skipped_use(&s, name.span)) {
                return None;
            }
            if !self.diags.has_errors() {
                self.error(Code::UnknownType, name.span, format!("cannot find class template `{}`", name.name)).emit();
            }
            return None;
        };
        let args = self.class_template_args(&def, name, args)?;
        self.instantiate_class(&def, args, span).map(Type::Struct)
    }

    /// The arguments of a use, one per parameter: those written, then the defaults.
    fn class_template_args(&mut self, def: &ast::ClassTemplateDef, name: &ast::Ident, written: &[ast::TemplateArg]) -> Option<Vec<TemplateArgValue>> {
        let template = &def.class.name;
        if written.len() > def.params.len() {
            let n = def.params.len();
            let span = match &written[n] {
                ast::TemplateArg::Type(t) => t.span,
                ast::TemplateArg::Value(e) => e.span,
            };
            self.error(Code::TemplateArgumentMismatch, span, format!("too many template arguments for `{}`: it has {n} template parameter{}", name.name, super::expr::plural(n)))
                .label(template.span, "the class template")
                .emit();
            return None;
        }
        let mut values: Vec<TemplateArgValue> = Vec::with_capacity(def.params.len());
        for (i, param) in def.params.iter().enumerate() {
            let value = match written.get(i) {
                Some(arg) => self.template_arg(param, arg, &name.name)?,
                None => {
                    let Some(default) = &param.default else {
                        self.error(Code::TemplateArgumentMismatch, name.span, format!("too few template arguments for `{}`: `{}` has no default", name.name, param.name.name))
                            .label(param.span, "declared here")
                            .note(format!("`{}` takes {} template argument{}", name.name, def.params.len(), super::expr::plural(def.params.len())))
                            .emit();
                        return None;
                    };
                    // A default sees the earlier parameters, bound to their arguments.
                    let env: HashMap<String, TemplateArgValue> = def.params.iter().map(|p| p.name.name.clone()).zip(values.iter().cloned()).collect();
                    let saved = self.templates.env.replace(Rc::new(env));
                    let value = self.template_arg(param, default, &name.name);
                    self.templates.env = saved;
                    value?
                }
            };
            values.push(value);
        }
        Some(values)
    }

    /// The instance of `def` for `args`, made on first use.
    fn instantiate_class(&mut self, def: &Rc<ast::ClassTemplateDef>, args: Vec<TemplateArgValue>, request: Span) -> Option<StructId> {
        let name = def.class.name.name.clone();
        let key = (name.clone(), args.clone());
        if let Some(id) = self.class_templates.instances.get(&key) {
            return Some(*id);
        }
        if self.class_templates.failed.contains(&key) {
            return None;
        }
        let shown: Vec<String> = args.iter().map(|a| self.arg_text(a).trim_start_matches("struct ").to_string()).collect();
        let display = format!("{name}<{}>", shown.join(", "));
        if self.templates.depth >= MAX_INSTANTIATION_DEPTH {
            self.error(Code::TemplateDepthExceeded, request, format!("instantiating `{display}` exceeds the maximum depth of {MAX_INSTANTIATION_DEPTH} nested instantiations"))
                .primary("requested here")
                .note("the class template instantiates itself with new arguments without end; recursion through templates needs a way to stop, which cdpc's templates (without specialisations) do not have")
                .emit();
            self.class_templates.failed.insert(key);
            return None;
        }
        let id = StructId(self.structs.len() as u32);
        self.structs.push(hir::StructDef {
            name: display.clone(),
            fields: Vec::new(),
            size: 0,
            align: 1,
            span: def.class.span,
            template: Some(Box::new(ClassInstance { name: name.clone(), args: args.clone() })),
            union: def.class.union,
        });
        self.complete.push(false);
        self.class_templates.instances.insert(key, id);

        let simple = name.rsplit("::").next().unwrap_or(&name).to_string();
        let mut namespaces: Vec<String> = name.split("::").map(str::to_string).collect();
        namespaces.pop();
        let mut env: HashMap<String, TemplateArgValue> = def.params.iter().map(|p| p.name.name.clone()).zip(args.iter().cloned()).collect();
        env.insert(simple.clone(), TemplateArgValue::Type(Type::Struct(id)));
        let env = Rc::new(env);
        let saved_env = self.templates.env.replace(env.clone());
        let saved_func = self.func.take();
        let saved_scope = std::mem::replace(&mut self.decl_scope, namespaces.clone());
        self.templates.depth += 1;
        let first_diag = self.diags.len();

        // `static constexpr int size = N;`: constants the data and function members see like
        // the parameters.
        let statics = self.static_members(def, id);
        let mut with_statics = (*env).clone();
        with_statics.extend(statics.iter().cloned());
        let env = Rc::new(with_statics);
        self.templates.env = Some(env.clone());
        super::decls::define_struct_in_scope(self, &def.class, id);
        // The member functions: declared first (they may call each other), then defined.
        let outside = self.class_templates.members.get(&name).cloned().unwrap_or_default();
        for method in &def.methods {
            let method_name = method.name.name.rsplit("::").next().unwrap_or(&method.name.name).to_string();
            let is_static = method.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::Static);
            // A prototype's body may be defined outside the class, with its own parameters' names.
            let defined_outside = method.body.is_none().then(|| {
                outside.iter().find(|m| m.function.name.name.rsplit("::").next() == Some(method_name.as_str()) && m.function.params.len() == method.params.len())
            });
            let (source, source_env) = match defined_outside.flatten() {
                Some(member) => {
                    let mut own: HashMap<String, TemplateArgValue> = member.params.iter().map(|p| p.name.name.clone()).zip(args.iter().cloned()).collect();
                    own.insert(simple.clone(), TemplateArgValue::Type(Type::Struct(id)));
                    own.extend(statics.iter().cloned());
                    let mut function = member.function.clone();
                    // The definition is the member's: in its class, with the prototype's words.
                    function.in_class = true;
                    let missing: Vec<(ast::FnQualifier, Span)> = method.qualifiers.iter().filter(|(q, _)| !function.qualifiers.iter().any(|(w, _)| w == q)).cloned().collect();
                    function.qualifiers.extend(missing);
                    function.const_method = method.const_method;
                    (Rc::new(function), Rc::new(own))
                }
                None => (Rc::new(method.clone()), env.clone()),
            };
            self.templates.env = Some(source_env.clone());
            self.class_templates.declaring = Some((id, is_static));
            let declared = super::decls::function_signature(self, &source);
            self.class_templates.declaring = None;
            let Some((f, owner)) = declared else { continue };
            if f.params.len() != source.params.len() + usize::from(owner.has_this()) {
                continue; // a parameter failed to check; reported
            }
            let key = format!("{display}::{method_name}");
            let has_body = source.body.is_some();
            self.functions.push(f);
            let fid = FuncId(self.functions.len() as u32 - 1);
            self.cxx.overloads.entry(key.clone()).or_default().push(fid);
            self.cxx.name_spans.insert(fid, source.name.span);
            if has_body {
                self.cxx.has_definition.insert(fid);
            }
            super::scope::record_function(self, fid, &owner, &source);
            self.symbols.entry(key).or_insert(super::GlobalSymbol::Function(fid));
            if let Some(requester) = &saved_func {
                self.templates.requested_by.insert(fid, requester.id);
            }
            if !has_body && self.class_templates.broken.contains(&method.name.name) {
                self.cxx.conflicted.insert(fid);
            }
            if has_body {
                self.class_templates.lazy.insert(fid, Pending { id: fid, def: source, env: source_env, request, display: display.clone() });
            }
        }
        self.decl_scope = saved_scope;

        self.templates.depth -= 1;
        self.func = saved_func;
        self.templates.env = saved_env;
        self.label_instance_diagnostics(first_diag, request, &display);
        Some(id)
    }

    /// The values of an instance's `static constexpr` members, each an integer constant
    /// evaluated with the template's arguments (and the members before it) in scope.
    fn static_members(&mut self, def: &ast::ClassTemplateDef, id: StructId) -> Vec<(String, TemplateArgValue)> {
        let mut out = Vec::new();
        for decl in &def.statics {
            let Some(ty) = self.resolve_spec(&decl.spec) else { continue };
            for init in &decl.declarators {
                let d = &init.declarator;
                let value = match (&init.init, ty.is_integer() && d.pointers.is_empty() && d.array_dims.is_empty()) {
                    (Some(ast::Initializer::Expr(e)), true) => self.expr(e).and_then(|v| self.coerce(v, &ty, Code::TypeMismatch, "the initial value has the wrong type")),
                    _ => {
                        self.error(Code::CxxUnsupported, d.span, format!("static data member `{}` is not an integer constant", d.name.name))
                            .note("a class template's static data members may be integer constants, `static constexpr int size = N;`")
                            .emit();
                        continue;
                    }
                };
                let Some(value) = value else { continue };
                match super::consteval::eval(&value, &self.target) {
                    Some(super::consteval::Const::Int(v)) => {
                        let value = TemplateArgValue::Int { value: v as i64, ty: ty.clone() };
                        self.class_templates.statics.insert((id, d.name.name.clone()), value.clone());
                        // Later members see it.
                        if let Some(env) = &self.templates.env {
                            let mut env = (**env).clone();
                            env.insert(d.name.name.clone(), value.clone());
                            self.templates.env = Some(Rc::new(env));
                        }
                        out.push((d.name.name.clone(), value));
                    }
                    _ => {
                        self.error(Code::NotConstant, value.span, format!("static data member `{}` needs a constant initializer", d.name.name)).emit();
                    }
                }
            }
        }
        out
    }

    /// `Buf<int, 4>::f`: the qualified name the instance's member `f` is declared under.
    pub(super) fn instance_member_name(&mut self, ty: &ast::TypeName, member: &ast::Ident) -> Option<ast::Ident> {
        let class = match self.resolve_type_name(ty)? {
            Type::Struct(id) => id,
            other => {
                let shown = self.show(&other);
                self.error(Code::UnknownType, ty.span, format!("{shown} has no members")).emit();
                return None;
            }
        };
        let name = format!("{}::{}", self.structs[class.0 as usize].name, member.name);
        Some(ast::Ident { name, span: member.span })
    }

    /// `b.size`: the `static constexpr` member `field` of the instance `class` (the object is
    /// not evaluated; C++ evaluates it, which matters only for one with side effects).
    pub(super) fn instance_static(&self, class: StructId, field: &ast::Ident) -> Option<hir::Expr> {
        match self.class_templates.statics.get(&(class, field.name.clone()))? {
            TemplateArgValue::Int { value, ty } => Some(super::expr::int_const(*value, ty.clone(), field.span)),
            TemplateArgValue::Type(_) => None,
        }
    }

    /// `Buf<int, 4>::size`: a `static constexpr` member of an instance.
    pub(super) fn instance_constant(&mut self, ty: &ast::TypeName, member: &ast::Ident) -> Option<hir::Expr> {
        let name = self.instance_member_name(ty, member)?;
        let Type::Struct(class) = self.resolve_type_name(ty)? else { return None };
        match self.class_templates.statics.get(&(class, member.name.clone())) {
            Some(TemplateArgValue::Int { value, ty }) => Some(super::expr::int_const(*value, ty.clone(), member.span)),
            _ => {
                self.error(Code::NoSuchMember, member.span, format!("`{}` is no static data member", name.name))
                    .note("a class template's instance has the static data members declared `static constexpr` in the template; call a member function, `Buf<int, 4>::f()`")
                    .emit();
                None
            }
        }
    }

    /// Labels the diagnostics from `first` on with the use that requested the instance.
    fn label_instance_diagnostics(&mut self, first: usize, request: Span, display: &str) {
        let context = format!("in instantiation of `{display}` requested here");
        for d in self.diags.since_mut(first) {
            let labels = || d.labels.iter().filter(|l| l.message.starts_with("in instantiation of"));
            if !labels().any(|l| l.span == request) && labels().count() < 8 {
                d.labels.push(crate::diag::Label { span: request, message: context.clone(), primary: false, file: None });
            }
        }
    }

    /// The owner of a member function of the instance `class` (`scope::function_owner`).
    pub(super) fn instance_owner(&self, def: &ast::FunctionDef, class: StructId, is_static: bool) -> super::scope::Owner {
        let s = &self.structs[class.0 as usize];
        let template = s.template.as_ref().map_or(s.name.as_str(), |t| t.name.as_str());
        let mut scope: Vec<String> = template.split("::").map(str::to_string).collect();
        scope.pop();
        scope.push(s.name.clone());
        let simple = def.name.name.rsplit("::").next().unwrap_or(&def.name.name).to_string();
        super::scope::Owner {
            scope,
            simple_name: simple,
            class: Some(class),
            is_static,
            is_const: def.const_method,
            ctor: def.ctor_inits.is_some(),
            instance: Some(class),
        }
    }
}
