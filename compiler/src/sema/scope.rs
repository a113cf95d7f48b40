//! **Where member functions are resolved**, and the other C++ names of device code: typedefs,
//! namespaces, member functions and base classes.
//!
//! Names stay strings: a member function or a namespace member is a function whose symbol
//! key is its qualified name (`Graph::getOutDegree`, `N::M::f`), and a lookup tries the
//! qualified names a C++ compiler would find, innermost first:
//!
//! 1. in a member function, the class and then its bases (`Graph::f`, `Base::f`);
//! 2. the enclosing namespaces of the function being checked, innermost first, then the
//!    global scope;
//! 3. the namespaces of file-scope `using namespace N;` directives.
//!
//! A namespace alias (`namespace cg = N;`) rewrites the first component of a qualified name.
//! A name may stand for several functions, its overload set (`CxxNames::overloads`); which one
//! a call means is decided in `overload.rs`.
//!
//! A member function is lowered to a plain function whose first parameter is `this` (a pointer
//! to the class, to a const class for a const member function); a call `obj.f(a)` passes
//! `&obj`, `p->f(a)` passes `p`, and `f(a)` inside a member function passes `this`. Data
//! members are reached through `this` when a name is not a local. A base class is the first
//! field of its derived class, named [`BASE_FIELD`], at offset 0 (an empty base takes no room
//! and has no field), so a pointer to the derived class converts to one to the base by a cast.

use super::{Context, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::hir::{self, ExprKind, FuncId};
use crate::types::{Quals, StructId, Type};
use std::collections::HashMap;

/// The name of the field that holds a base class (no user field can have it).
pub(super) const BASE_FIELD: &str = "::base";

/// What sema knows of the C++ names of the file.
#[derive(Default)]
pub(super) struct CxxNames {
    pub typedefs: HashMap<String, Type>,
    pub methods: HashMap<FuncId, Method>,
    /// The default arguments of a function's parameters (after `this`), as written.
    pub defaults: HashMap<FuncId, Vec<Option<ast::Expr>>>,
    pub bases: HashMap<StructId, StructId>,
    /// The constructors of each class (overloaded by their number of parameters).
    pub ctors: HashMap<StructId, Vec<FuncId>>,
    /// Every function declared under a qualified name, in declaration order: its overload set
    /// (`Context::symbols` holds the first, for the checks that need one function of a name).
    pub overloads: HashMap<String, Vec<FuncId>>,
    /// Where each function's name is first declared, for candidate labels.
    pub name_spans: HashMap<FuncId, Span>,
    /// The function each declaration or definition (by its span) declares.
    pub decl_of: HashMap<Span, FuncId>,
    /// Functions a declaration has given a body to (the first definition keeps it).
    pub has_definition: std::collections::HashSet<FuncId>,
    /// Functions declared again with another return type (`E0973`): not reported as
    /// undefined too.
    pub conflicted: std::collections::HashSet<FuncId>,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Method {
    pub class: StructId,
    pub is_static: bool,
}

/// Where a declared function belongs.
pub(super) struct Owner {
    /// Namespaces and class, outermost first.
    pub scope: Vec<String>,
    pub simple_name: String,
    pub class: Option<StructId>,
    pub is_static: bool,
    pub is_const: bool,
    pub ctor: bool,
    /// A member of a class template's instance (`class_templates.rs`).
    pub instance: Option<StructId>,
}

/// The key of a function in `Context::symbols` and of its overload set: its qualified name.
pub(super) fn symbol_key(def: &ast::FunctionDef) -> String {
    def.name.name.clone()
}

impl Owner {
    pub fn has_this(&self) -> bool {
        self.class.is_some() && !self.is_static
    }

    /// The type of `this`, for a member function that has one.
    pub fn this_type(&self, _cx: &Context) -> Option<Type> {
        let class = self.class.filter(|_| self.has_this())?;
        Some(Type::qualified_pointer_to(Type::Struct(class), Quals { is_const: self.is_const, is_volatile: false }))
    }
}

/// The class or namespaces a function declaration belongs to, from its qualified name.
pub(super) fn function_owner(cx: &mut Context, def: &ast::FunctionDef) -> Option<Owner> {
    let parts: Vec<&str> = def.name.name.split("::").collect();
    let (simple, scope) = parts.split_last().expect("split gives one part at least");
    if parts.iter().any(|p| p.is_empty()) {
        cx.error(Code::InvalidDeclaration, def.name.span, format!("`{}` is not a name cdpc can declare", def.name.name)).emit();
        return None;
    }
    let mut owner = Owner {
        scope: scope.iter().map(|s| s.to_string()).collect(),
        simple_name: simple.to_string(),
        class: None,
        is_static: false,
        is_const: def.const_method,
        ctor: false,
        instance: None,
    };
    let Some(last) = scope.last() else {
        if def.const_method {
            cx.error(Code::InvalidDeclaration, def.name.span, "only a member function can be `const`").emit();
            return None;
        }
        return Some(owner);
    };
    if let Some(&class) = cx.struct_names.get(&scope.join("::")) {
        owner.class = Some(class);
        owner.ctor = def.ctor_inits.is_some();
        if owner.ctor && simple != last {
            cx.error(Code::InvalidDeclaration, def.name.span, format!("a function of `{last}` without a return type must be its constructor, `{last}::{last}`")).emit();
            return None;
        }
        owner.is_static = if def.in_class {
            def.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::Static)
        } else {
            match cx.symbols.get(&symbol_key(def)) {
                Some(GlobalSymbol::Function(id)) => cx.cxx.methods.get(id).is_some_and(|m| m.is_static),
                _ => false,
            }
        };
        if owner.is_static && owner.ctor {
            cx.error(Code::InvalidDeclaration, def.name.span, "a constructor cannot be `static`").emit();
            return None;
        }
        if owner.is_static && def.const_method {
            cx.error(Code::InvalidDeclaration, def.name.span, "a static member function cannot be `const`").emit();
            return None;
        }
        return Some(owner);
    }
    // `Graph::f` where `Graph` is a class that did not parse as device code.
    if cx.skipped.get(*last).is_some_and(|s| s.kind == ast::SkippedKind::Unparsed) && cx.skipped_use(last, def.name.span) {
        return None;
    }
    if def.const_method {
        cx.error(Code::InvalidDeclaration, def.name.span, "only a member function can be `const`").emit();
        return None;
    }
    Some(owner)
}

/// Records a newly declared function's class and default arguments.
pub(super) fn record_function(cx: &mut Context, id: FuncId, owner: &Owner, def: &ast::FunctionDef) {
    if let Some(class) = owner.class {
        cx.cxx.methods.insert(id, Method { class, is_static: owner.is_static });
        if owner.ctor {
            cx.cxx.ctors.entry(class).or_default().push(id);
        }
    }
    record_defaults(cx, id, def);
}

/// Default arguments may be given on any one declaration.
pub(super) fn record_defaults(cx: &mut Context, id: FuncId, def: &ast::FunctionDef) {
    if def.params.iter().any(|p| p.default.is_some()) {
        cx.cxx.defaults.insert(id, def.params.iter().map(|p| p.default.clone()).collect());
    }
}

pub(super) fn declare_typedef(cx: &mut Context, def: &ast::TypedefDef) {
    if def.name.name.is_empty() {
        return; // reported by the parser
    }
    let Some(ty) = cx.in_namespaces_of(&def.name.name, |cx| cx.typedef_type(def)) else { return };
    let name = &def.name.name;
    let clash = match cx.cxx.typedefs.get(name) {
        Some(existing) => *existing != ty,
        None => cx.struct_names.get(name).is_some_and(|id| ty != Type::Struct(*id)) || cx.symbols.contains_key(name),
    };
    if clash {
        cx.error(Code::Redefinition, def.name.span, format!("`{name}` is already declared as something else")).emit();
        return;
    }
    cx.cxx.typedefs.insert(name.clone(), ty);
}

impl Context {
    /// Runs `f` with declarations' names looked up from `scope` (namespaces, outermost first;
    /// `candidates`), then restores the scope it had.
    pub(super) fn in_decl_scope<R>(&mut self, scope: Vec<String>, f: impl FnOnce(&mut Context) -> R) -> R {
        let saved = std::mem::replace(&mut self.decl_scope, scope);
        let result = f(self);
        self.decl_scope = saved;
        result
    }

    /// [`Context::in_decl_scope`] in the namespaces that the qualified name `qualified`
    /// (`n::m::x`: `n`, `m`) is declared in.
    pub(super) fn in_namespaces_of<R>(&mut self, qualified: &str, f: impl FnOnce(&mut Context) -> R) -> R {
        let mut namespaces: Vec<String> = qualified.split("::").map(str::to_string).collect();
        namespaces.pop();
        self.in_decl_scope(namespaces, f)
    }

    /// The qualified names an unqualified or qualified `name` may stand for here, best first.
    pub(super) fn candidates(&self, name: &str) -> Vec<String> {
        // `::x`: the file scope's `x` only.
        let (global, name) = match name.strip_prefix("::") {
            Some(rest) => (true, rest),
            None => (false, name),
        };
        let name = name.to_string();
        if global {
            return vec![name];
        }
        let mut out = Vec::new();
        if let Some(state) = &self.func {
            let f = &self.functions[state.id.0 as usize];
            if let Some(method) = self.cxx.methods.get(&state.id) {
                let mut class = Some(method.class);
                while let Some(c) = class {
                    out.push(format!("{}::{name}", self.structs[c.0 as usize].name));
                    class = self.cxx.bases.get(&c).copied();
                }
            }
            let namespaces = if self.cxx.methods.contains_key(&state.id) { &f.cxx.scope[..f.cxx.scope.len() - 1] } else { &f.cxx.scope[..] };
            for i in (1..=namespaces.len()).rev() {
                out.push(format!("{}::{name}", namespaces[..i].join("::")));
            }
        } else {
            // A declaration outside any body: a struct's fields, a signature, a typedef.
            let namespaces = &self.decl_scope;
            for i in (1..=namespaces.len()).rev() {
                out.push(format!("{}::{name}", namespaces[..i].join("::")));
            }
        }
        out.push(name.clone());
        out
    }

    /// The type a struct, class or typedef name stands for here, looked up as
    /// [`Context::candidates`] orders the qualified names it may mean (`P` inside `namespace
    /// n` is `n::P`, `m::P` through `namespace m = n;`).
    pub(super) fn named_type(&self, name: &str) -> Option<Type> {
        self.candidates(name).into_iter().find_map(|c| match self.cxx.typedefs.get(&c) {
            Some(ty) => Some(ty.clone()),
            None => self.struct_names.get(&c).map(|id| Type::Struct(*id)),
        })
    }

    /// What a function or variable name refers to, and its qualified name.
    pub(super) fn resolve_symbol(&self, name: &str) -> Option<(GlobalSymbol, String)> {
        self.candidates(name).into_iter().find_map(|c| self.symbols.get(&c).map(|s| (*s, c)))
    }

    /// A skipped declaration (host code) that `name` may stand for here.
    pub(super) fn skipped_candidate(&self, name: &str) -> Option<String> {
        self.candidates(name).into_iter().find(|c| self.skipped.contains_key(c))
    }

    /// The member function `name` of `class` or of a base, with the class that declares it.
    pub(super) fn find_method(&self, class: StructId, name: &str) -> Option<(FuncId, StructId)> {
        let mut c = Some(class);
        while let Some(id) = c {
            let qualified = format!("{}::{name}", self.structs[id.0 as usize].name);
            if let Some(GlobalSymbol::Function(f)) = self.symbols.get(&qualified) {
                return Some((*f, id));
            }
            c = self.cxx.bases.get(&id).copied();
        }
        None
    }

    /// The data member `name` of `class` or of a base: the field indices from `class` down.
    pub(super) fn find_field(&self, class: StructId, name: &str) -> Option<(Vec<u32>, Type)> {
        let s = &self.structs[class.0 as usize];
        if let Some(i) = s.fields.iter().position(|f| f.name == name && f.name != BASE_FIELD) {
            return Some((vec![i as u32], s.fields[i].value_type()));
        }
        let base = *self.cxx.bases.get(&class)?;
        let (mut path, ty) = self.find_field(base, name)?;
        if s.fields.first().is_some_and(|f| f.name == BASE_FIELD) {
            path.insert(0, 0);
            Some((path, ty))
        } else {
            None // an empty base has no fields
        }
    }

    /// The names of the data members of `class` and its bases, for a "no field" note.
    pub(super) fn field_names(&self, class: StructId) -> String {
        let mut names = Vec::new();
        let mut c = Some(class);
        while let Some(id) = c {
            names.extend(self.structs[id.0 as usize].fields.iter().filter(|f| f.name != BASE_FIELD).map(|f| f.name.clone()));
            c = self.cxx.bases.get(&id).copied();
        }
        names.join(", ")
    }

    /// Whether `derived` is `base` or derives from it.
    pub(super) fn derives_from(&self, derived: StructId, base: StructId) -> bool {
        let mut c = Some(derived);
        while let Some(id) = c {
            if id == base {
                return true;
            }
            c = self.cxx.bases.get(&id).copied();
        }
        false
    }

    /// `place.path...`: the member at `path` of a struct place.
    pub(super) fn member_path(&self, mut place: hir::Expr, path: &[u32], ty: Type, span: Span) -> hir::Expr {
        for (k, index) in path.iter().enumerate() {
            let Type::Struct(id) = place.ty else { unreachable!("a field path runs through structs") };
            let field_ty = if k + 1 == path.len() { ty.clone() } else { self.structs[id.0 as usize].fields[*index as usize].ty.clone() };
            place = super::expr::make(ExprKind::Member { base: Box::new(place), index: *index }, field_ty, span);
        }
        place
    }

    /// A data member named by its bare name inside a member function: `this->name`.
    pub(super) fn this_member(&mut self, name: &ast::Ident) -> Option<hir::Expr> {
        let (this, class) = self.func.as_ref()?.this?;
        let (path, ty) = self.find_field(class, &name.name)?;
        let this_ty = self.func.as_ref()?.locals[this.0 as usize].ty.clone();
        let object = self.deref_this(this, this_ty, name.span);
        Some(self.member_path(object, &path, ty, name.span))
    }

    fn deref_this(&self, this: hir::LocalId, this_ty: Type, span: Span) -> hir::Expr {
        let pointee = this_ty.pointee().cloned().expect("`this` is a pointer");
        let local = super::expr::make(ExprKind::Local(this), this_ty, span);
        super::expr::make(ExprKind::Deref(Box::new(local)), pointee, span)
    }

    /// The object pointer for calling a member function of `class` from the current one
    /// through its implicit `this`, if it has one of that class or a derived one.
    pub(super) fn implicit_this(&self, class: StructId, span: Span) -> Option<hir::Expr> {
        let (this, own) = self.func.as_ref()?.this?;
        if !self.derives_from(own, class) {
            return None;
        }
        let this_ty = self.func.as_ref()?.locals[this.0 as usize].ty.clone();
        Some(super::expr::make(ExprKind::Local(this), this_ty, span))
    }
}

impl Context {
    /// Whether objects of this type are made by a constructor.
    pub(super) fn has_ctors(&self, ty: &Type) -> Option<StructId> {
        match ty {
            Type::Struct(id) if self.cxx.ctors.contains_key(id) => Some(*id),
            _ => None,
        }
    }

    /// Runs the constructor of `class` that takes `args` on `place`; the call's value is void.
    /// Which constructor is overload resolution's choice (`overload.rs`).
    pub(super) fn construct_into(&mut self, place: hir::Expr, class: StructId, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let ctors = self.cxx.ctors.get(&class).cloned().unwrap_or_default();
        let checked: Vec<Option<hir::Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let checked = checked.into_iter().collect::<Option<Vec<_>>>()?;
        let name = self.structs[class.0 as usize].name.clone();
        let mut operands = vec![place.clone()];
        operands.extend(checked.iter().cloned());
        let what = format!("{name}::{name}");
        let ctor = self.resolve_overload(&what, &ctors, super::overload::Operands { exprs: &operands, object: true }, span)?;
        let this_ty = {
            let f = &self.functions[ctor.0 as usize];
            f.local(f.params[0]).ty.clone()
        };
        let object = super::expr::make(ExprKind::AddrOf(Box::new(place)), this_ty, span);
        self.finish_call_checked(ctor, Some(object), checked, span)
    }

    /// `Parameters(params, true)`: a temporary constructed in place, as a value.
    pub(super) fn construct_temporary(&mut self, class: StructId, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let ty = Type::Struct(class);
        let temp = self.new_local("ctor.tmp", ty.clone(), span);
        let place = super::expr::make(ExprKind::Local(temp), ty.clone(), span);
        let call = self.construct_into(place.clone(), class, args, span)?;
        Some(super::expr::make(ExprKind::Comma { lhs: Box::new(call), rhs: Box::new(place) }, ty, span))
    }

    /// A constructor's member-initializer list, as statements run before its body.
    pub(super) fn member_inits(&mut self, inits: &[ast::MemberInit]) -> Vec<hir::Stmt> {
        let Some((this, class)) = self.func.as_ref().and_then(|f| f.this) else { return Vec::new() };
        let this_ty = self.state().locals[this.0 as usize].ty.clone();
        let mut out = Vec::new();
        for init in inits {
            let own = self.structs[class.0 as usize].fields.iter().position(|f| f.name == init.field.name && f.name != BASE_FIELD);
            let Some(index) = own else {
                let class_name = self.structs[class.0 as usize].name.clone();
                self.error(Code::NoSuchMember, init.field.span, format!("`{class_name}` has no data member `{}` to initialize", init.field.name))
                    .note("cdpc initializes data members of the class itself here, not base classes")
                    .emit();
                continue;
            };
            let field_ty = self.structs[class.0 as usize].fields[index].value_type();
            let object = self.deref_this(this, this_ty.clone(), init.span);
            let place = self.member_path(object, &[index as u32], field_ty.clone(), init.field.span);
            let stmt = if let Some(member_class) = self.has_ctors(&field_ty) {
                self.construct_into(place, member_class, &init.args, init.span)
            } else if let [arg] = init.args.as_slice() {
                self.expr(arg).and_then(|v| self.coerce(v, &field_ty, Code::TypeMismatch, "the initial value has the wrong type")).map(|value| {
                    super::expr::make(ExprKind::Assign { place: Box::new(place), value: Box::new(value) }, field_ty.clone(), init.span)
                })
            } else {
                self.error(Code::CxxUnsupported, init.span, format!("`{}` is initialized with {} values", init.field.name, init.args.len()))
                    .note("a data member that is not a class is initialized with one value")
                    .emit();
                None
            };
            out.extend(stmt.map(hir::Stmt::Expr));
        }
        out
    }
}
