//! **Where names are mangled**: the symbols of functions, as nvcc writes them.
//!
//! A function without `extern "C"` is a C++ function, and nvcc gives it its Itanium C++ ABI
//! name (<https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling>): `_Z`, the name's
//! length and the name, then the parameter types (`v` for none). Host code written for nvcc's
//! cubins finds kernels by these names (`_Z5childPii`), so cdpc writes the same ones. The
//! oracle is nvcc itself (`tests/mangling_oracle.rs`).
//!
//! What this covers is what the language has: the builtin types, pointers with `const`
//! pointees, structs (by their name, as classes), arrays, and CUDA's types as its headers
//! declare them (`dim3` is a struct, `cudaStream_t` is `CUstream_st *`, `cudaEvent_t` is
//! `CUevent_st *`, `cudaError_t` is `enum cudaError`), with the ABI's substitutions (`S_`,
//! `S0_`, ...) for repeated components.
//!
//! Variables at file scope are not mangled in C++ (a global `int x` is the symbol `x`), and
//! neither are the functions cdpc makes itself (launch aggregation's clones, which have no nvcc
//! counterpart). Static functions get the same name as if they were not static: nvcc's names
//! for them contain a hash of the file that no other compiler reproduces, and no host code can
//! look them up.

use super::{Function, Linkage, PatternArg, TemplateInstance, TypePattern};
use crate::types::{FloatKind, IntKind, Quals, StructLayouts, TemplateArgValue, Type};

/// `__nv_static_<n>_<module id>_<name>`: nvcc's symbol of an internal kernel or variable whose
/// own symbol is `name`, in the file whose module id is `id`, `n` the id's length (measured
/// with nvcc 13.5).
pub fn nv_static_symbol(id: &str, name: &str) -> String {
    format!("__nv_static_{}_{id}_{name}", id.len())
}


/// The symbol of `f` in PTX and the cubin.
pub fn function_symbol(f: &Function, structs: &dyn StructLayouts) -> String {
    match f.linkage {
        Linkage::C => f.name.clone(),
        Linkage::Cxx => {
            let cxx = &f.cxx;
            if let Some(instance) = &f.template {
                return mangle_template_instance(&cxx.scope, &f.name, instance, structs);
            }
            let params: Vec<Param> = f
                .param_types()
                .skip(cxx.has_this as usize)
                .enumerate()
                .map(|(i, ty)| Param { ty, is_ref: cxx.ref_params.get(i).copied().unwrap_or(false) })
                .collect();
            let name = if cxx.ctor { CTOR } else { &f.name };
            if let Some(class) = cxx.instance {
                return mangle_instance_member(class, name, cxx.const_method, &params, structs);
            }
            mangle_member(&cxx.scope, name, cxx.const_method, &params, structs)
        }
    }
}

/// `_Z<length><name>I<arguments>E<return type><parameter types>`, the Itanium name of an
/// instance of a function template; in namespaces it is nested, `_ZN1N1fIiEEvT_`. The
/// signature is mangled as the template writes it (`T_` for its first parameter, `T0_` for the
/// second, ...), and an instance's name includes its return type. Each scope prefix (`1N`) and
/// then the template's name (`1N1f`) are the first substitution candidates.
pub fn mangle_template_instance(scope: &[String], name: &str, instance: &TemplateInstance, structs: &dyn StructLayouts) -> String {
    let mut m = Mangler { out: String::from("_Z"), substitutions: Vec::new(), structs };
    let mut prefix = String::new();
    for component in scope.iter().map(String::as_str).chain([name]) {
        prefix.push_str(&source_name(component));
        m.substitutions.push(prefix.clone());
    }
    if !scope.is_empty() {
        m.out.push('N');
    }
    m.out.push_str(&prefix);
    m.out.push('I');
    for arg in &instance.args {
        match arg {
            TemplateArgValue::Type(ty) => m.ty(ty, Quals::NONE),
            value => m.out.push_str(&literal(value)),
        }
    }
    m.out.push('E');
    if !scope.is_empty() {
        m.out.push('E');
    }
    m.pattern(&instance.return_pattern, Quals::NONE);
    if instance.param_patterns.is_empty() {
        m.out.push('v');
    }
    for p in &instance.param_patterns {
        m.pattern(p, Quals::NONE);
    }
    m.out
}

/// The symbol of a variable: its name at file scope (C++ leaves those alone), the Itanium nested
/// name in a namespace (`n::m::x` is `_ZN1n1m1xE`), as nvcc writes both.
pub fn variable_symbol(name: &str) -> String {
    if !name.contains("::") {
        return name.to_string();
    }
    let parts: String = name.split("::").map(source_name).collect();
    format!("_ZN{parts}E")
}

/// `<length><name>`, or for a special name (`\0` and its code: a constructor, an operator) the
/// code alone.
fn source_name(name: &str) -> String {
    match name.strip_prefix('\0') {
        Some(special) => special.to_string(),
        None => format!("{}{name}", name.len()),
    }
}

/// The name a constructor gets in place of its class's: the complete-object constructor.
/// (nvcc also writes the base-object constructor, `C2`, with the same body; cdpc calls and
/// writes `C1` only.)
const CTOR: &str = "\0C1";

/// A parameter as mangling sees it: a reference parameter's HIR type is the pointer that
/// carries it, and mangles as `R` where a pointer has `P`.
pub struct Param<'t> {
    /// The HIR type (for a reference, the pointer that carries it).
    pub ty: &'t Type,
    /// The parameter is a reference.
    pub is_ref: bool,
}

/// The Itanium name of a function in namespaces or a class: `_ZN1N5Graph3degEj`, with `K`
/// after the `N` for a const member function (`_ZNK5Graph3getEj`); each prefix of the nested
/// name (`1N`, `1N5Graph`) is a substitution candidate, numbered before the parameters'.
/// Without a scope this is [`mangle_function`].
pub fn mangle_member(scope: &[String], name: &str, const_method: bool, params: &[Param], structs: &dyn StructLayouts) -> String {
    let mut m = Mangler { out: String::from("_Z"), substitutions: Vec::new(), structs };
    if scope.is_empty() {
        m.out.push_str(&source_name(name));
    } else {
        m.out.push('N');
        if const_method {
            m.out.push('K');
        }
        let mut prefix = String::new();
        for component in scope {
            prefix.push_str(&format!("{}{component}", component.len()));
            m.substitutions.push(prefix.clone());
        }
        m.out.push_str(&prefix);
        m.out.push_str(&source_name(name));
        m.out.push('E');
    }
    m.params(params);
    m.out
}

/// The Itanium name of a member function of a class template's instance: the class is a
/// nested name's prefix with its template arguments, `_ZNK3BufIiLi4EE3sumEv`,
/// `_ZN1n1WI1PE3setES1_`; the template's name and then the instance are substitution
/// candidates, as they are where the instance is a parameter's type.
pub fn mangle_instance_member(class: crate::types::StructId, name: &str, const_method: bool, params: &[Param], structs: &dyn StructLayouts) -> String {
    let mut m = Mangler { out: String::from("_ZN"), substitutions: Vec::new(), structs };
    if const_method {
        m.out.push('K');
    }
    let (template, args) = structs.struct_template(class).expect("a member of a class template's instance");
    let args: Vec<PatternArg> = args.iter().map(concrete_arg).collect();
    let template = template.to_string();
    m.instance_parts(&template, &args, false);
    let key = m.instance_key(&template, &args);
    m.substitutions.push(key);
    m.out.push_str(&source_name(name));
    m.out.push('E');
    m.params(params);
    m.out
}

/// A class template's argument as a pattern that is all concrete.
fn concrete_arg(arg: &TemplateArgValue) -> PatternArg {
    match arg {
        TemplateArgValue::Type(ty) => PatternArg::Type(TypePattern::Concrete(ty.clone())),
        value => PatternArg::Value(value.clone()),
    }
}

/// `L<type><value>E`, a non-type template argument.
fn literal(value: &TemplateArgValue) -> String {
    match value {
        TemplateArgValue::Int { value, ty } => {
            let code = builtin(ty).unwrap_or("i");
            let digits = if *value < 0 { format!("n{}", value.unsigned_abs()) } else { value.to_string() };
            format!("L{code}{digits}E")
        }
        TemplateArgValue::Type(_) => unreachable!("a type is no literal"),
    }
}

/// `T_`, `T0_`, ...: a template parameter by index.
fn template_param(index: u32) -> String {
    if index == 0 {
        "T_".to_string()
    } else {
        format!("T{}_", index - 1)
    }
}

impl Mangler<'_> {
    /// A function's parameter types (`v` for none), references as `R`.
    fn params(&mut self, params: &[Param]) {
        if params.is_empty() {
            self.out.push('v');
        }
        for p in params {
            if p.is_ref {
                let (pointee, quals) = match p.ty {
                    Type::Pointer { pointee, .. } => (&**pointee, p.ty.pointee_quals()),
                    other => (other, Quals::NONE),
                };
                let key = format!("R{}", self.plain(pointee, quals));
                match self.substitutions.iter().position(|s| *s == key) {
                    Some(index) => self.out.push_str(&substitution(index)),
                    None => {
                        self.out.push('R');
                        self.ty(pointee, quals);
                        self.substitutions.push(key);
                    }
                }
            } else {
                self.ty(p.ty, Quals::NONE);
            }
        }
    }

    /// The name of a class template's instance, `3BufIiLi4EE` (`N1n1WI1PEE` in a namespace,
    /// `nested` writing the `N...E` around it): each enclosing namespace and then the
    /// template's name are substitution candidates (the longest one seen is written as its
    /// substitution), then come the arguments. The caller records the whole instance.
    fn instance_parts(&mut self, template: &str, args: &[PatternArg], nested: bool) {
        let parts: Vec<&str> = template.split("::").collect();
        let wrap = nested && parts.len() > 1;
        if wrap {
            self.out.push('N');
        }
        let prefix_key = |n: usize| parts[..n].iter().map(|p| format!("{}{p}", p.len())).collect::<String>();
        let mut start = 0;
        for n in (1..=parts.len()).rev() {
            if let Some(index) = self.substitutions.iter().position(|s| *s == prefix_key(n)) {
                self.out.push_str(&substitution(index));
                start = n;
                break;
            }
        }
        for n in start + 1..=parts.len() {
            let p = parts[n - 1];
            self.out.push_str(&format!("{}{p}", p.len()));
            self.substitutions.push(prefix_key(n));
        }
        self.out.push('I');
        for arg in args {
            match arg {
                PatternArg::Type(p) => self.pattern(p, Quals::NONE),
                PatternArg::Value(v) => self.out.push_str(&literal(v)),
                PatternArg::ValueParam(i) => self.out.push_str(&format!("X{}E", template_param(*i))),
            }
        }
        self.out.push('E');
        if wrap {
            self.out.push('E');
        }
    }

    /// The unsubstituted mangling of a class template's instance: its substitution key.
    fn instance_key(&self, template: &str, args: &[PatternArg]) -> String {
        let parts: Vec<&str> = template.split("::").collect();
        let mut key = String::new();
        if parts.len() > 1 {
            key.push('N');
        }
        key.extend(parts.iter().map(|p| format!("{}{p}", p.len())));
        key.push('I');
        for arg in args {
            key.push_str(&match arg {
                PatternArg::Type(p) => self.plain_pattern(p, Quals::NONE),
                PatternArg::Value(v) => literal(v),
                PatternArg::ValueParam(i) => format!("X{}E", template_param(*i)),
            });
        }
        key.push('E');
        if parts.len() > 1 {
            key.push('E');
        }
        key
    }
}

/// `_Z<length><name><parameter types>`, the Itanium name of a function at global scope.
pub fn mangle_function(name: &str, params: &[&Type], structs: &dyn StructLayouts) -> String {
    let mut m = Mangler { out: format!("_Z{}{name}", name.len()), substitutions: Vec::new(), structs };
    if params.is_empty() {
        m.out.push('v');
    }
    for ty in params {
        m.ty(ty, Quals::NONE);
    }
    m.out
}

struct Mangler<'a> {
    out: String,
    /// The components seen so far, in the order the ABI numbers them, each as its full
    /// unsubstituted mangling.
    substitutions: Vec<String>,
    structs: &'a dyn StructLayouts,
}

impl Mangler<'_> {
    /// Writes a type as a template's signature writes it.
    fn pattern(&mut self, p: &TypePattern, quals: Quals) {
        match p {
            TypePattern::Concrete(ty) => self.ty(ty, quals),
            TypePattern::Param(index) => {
                let param = template_param(*index);
                if quals != Quals::NONE {
                    let key = format!("{}{param}", cv(quals));
                    self.component(key, |m| {
                        m.out.push_str(cv(quals));
                        m.component(param.clone(), |m| m.out.push_str(&param));
                    });
                } else {
                    self.component(param.clone(), |m| m.out.push_str(&param));
                }
            }
            TypePattern::Pointer { pointee, pointee_quals } => {
                let key = format!("P{}", self.plain_pattern(pointee, *pointee_quals));
                self.component(key, |m| {
                    m.out.push('P');
                    m.pattern(pointee, *pointee_quals);
                });
            }
            TypePattern::Reference { pointee, pointee_quals } => {
                let key = format!("R{}", self.plain_pattern(pointee, *pointee_quals));
                self.component(key, |m| {
                    m.out.push('R');
                    m.pattern(pointee, *pointee_quals);
                });
            }
            TypePattern::Instance { template, args } => {
                let key = self.instance_key(template, args);
                let qualified = format!("{}{key}", cv(quals));
                self.component(qualified, |m| {
                    m.out.push_str(cv(quals));
                    m.component(key, |m| m.instance_parts(template, args, true));
                });
            }
        }
    }

    /// The unsubstituted mangling of a pattern: its substitution key.
    fn plain_pattern(&self, p: &TypePattern, quals: Quals) -> String {
        let inner = match p {
            TypePattern::Concrete(ty) => return self.plain(ty, quals),
            TypePattern::Param(0) => "T_".to_string(),
            TypePattern::Param(i) => format!("T{}_", i - 1),
            TypePattern::Pointer { pointee, pointee_quals } => format!("P{}", self.plain_pattern(pointee, *pointee_quals)),
            TypePattern::Reference { pointee, pointee_quals } => format!("R{}", self.plain_pattern(pointee, *pointee_quals)),
            TypePattern::Instance { template, args } => self.instance_key(template, args),
        };
        format!("{}{inner}", cv(quals))
    }

    /// A class name, nested in namespaces when it has `::` (`N18cooperative_groups4__v112thread_blockE`),
    /// with each enclosing namespace a substitution candidate of its own. A class template's
    /// instance is named with its arguments (`...::thread_block_tile<32u, void>`, see
    /// [`template_args`]): its template name is one more candidate, then come its arguments.
    fn nested_class(&mut self, name: &str) {
        let (head, args) = template_args(name);
        let parts: Vec<&str> = head.split("::").collect();
        let prefix_key = |n: usize| parts[..n].iter().map(|p| format!("{}{p}", p.len())).collect::<String>();
        // The prefixes that are candidates: the enclosing namespaces, and a template's name.
        let candidates = if args.is_some() { parts.len() } else { parts.len() - 1 };
        // The longest candidate prefix seen before is written as its substitution.
        let mut start = 0;
        let mut out = String::from("N");
        for n in (1..=candidates).rev() {
            if let Some(index) = self.substitutions.iter().position(|s| *s == prefix_key(n)) {
                out.push_str(&substitution(index));
                start = n;
                break;
            }
        }
        for n in start + 1..=parts.len() {
            let p = parts[n - 1];
            out.push_str(&format!("{}{p}", p.len()));
            if n <= candidates {
                self.substitutions.push(prefix_key(n));
            }
        }
        self.out.push_str(&out);
        if let Some(args) = args {
            self.out.push('I');
            for arg in args {
                self.template_arg(arg);
            }
            self.out.push('E');
        }
        self.out.push('E');
    }

    /// One argument of a class template's instance, as [`template_args`] reads it.
    fn template_arg(&mut self, arg: &str) {
        match TemplateArg::of(arg) {
            TemplateArg::Unsigned(digits) => self.out.push_str(&format!("Lj{digits}E")),
            TemplateArg::Void => self.out.push('v'),
            TemplateArg::Class(class) => {
                let key = plain_class(class);
                if let Some(index) = self.substitutions.iter().position(|s| *s == key) {
                    self.out.push_str(&substitution(index));
                    return;
                }
                self.write_class(class);
                self.substitutions.push(key);
            }
        }
    }

    /// A class's name, nested or not, without substituting the class itself.
    fn write_class(&mut self, name: &str) {
        if name.contains("::") {
            self.nested_class(name);
        } else {
            self.out.push_str(&format!("{}{name}", name.len()));
        }
    }

    /// Writes `ty` qualified by `quals`, substituting repeated components. A qualified type is
    /// one component, whatever its qualifiers (`VKi`), and its unqualified type another.
    fn ty(&mut self, ty: &Type, quals: Quals) {
        if let Some(code) = builtin(ty) {
            if quals != Quals::NONE {
                self.component(format!("{}{code}", cv(quals)), |m| {
                    m.out.push_str(cv(quals));
                    m.out.push_str(code);
                });
            } else {
                self.out.push_str(code);
            }
            return;
        }
        let key = self.plain(ty, quals);
        if let Some(index) = self.substitutions.iter().position(|s| *s == key) {
            self.out.push_str(&substitution(index));
            return;
        }
        if quals != Quals::NONE {
            self.out.push_str(cv(quals));
            self.ty(ty, Quals::NONE);
        } else {
            match ty {
                Type::Pointer { pointee, .. } => {
                    self.out.push('P');
                    self.ty(pointee, ty.pointee_quals());
                }
                Type::Array { elem, len } => {
                    self.out.push_str(&format!("A{len}_"));
                    self.ty(elem, Quals::NONE);
                }
                Type::Stream | Type::Event => {
                    self.out.push('P');
                    let name = if *ty == Type::Stream { "CUstream_st" } else { "CUevent_st" };
                    self.class_name(name);
                }
                // `int (*)(int)` is `PFiiE`; the function type `FiiE` is a component too.
                Type::FnPtr(sig) => {
                    self.out.push('P');
                    let key = self.plain(ty, Quals::NONE)[1..].to_string();
                    self.component(key, |m| {
                        m.out.push('F');
                        m.ty(&sig.ret, Quals::NONE);
                        sig.params.iter().for_each(|p| m.ty(p, Quals::NONE));
                        if sig.params.is_empty() {
                            m.out.push('v');
                        }
                        m.out.push('E');
                    });
                }
                Type::Struct(id) if self.structs.struct_template(*id).is_some() => {
                    let (template, args) = self.structs.struct_template(*id).expect("just checked");
                    let args: Vec<PatternArg> = args.iter().map(concrete_arg).collect();
                    let template = template.to_string();
                    self.instance_parts(&template, &args, true);
                }
                other => {
                    let name = self.class_of(other);
                    self.write_class(&name);
                }
            }
        }
        self.substitutions.push(key);
    }

    /// A class or enum name that is a component of its own (`CUstream_st` in `P11CUstream_st`).
    fn class_name(&mut self, name: &str) {
        let key = format!("{}{name}", name.len());
        self.component(key.clone(), |m| m.out.push_str(&key));
    }

    /// Writes a substitutable component through `write`, or its substitution if seen before.
    fn component(&mut self, key: String, write: impl FnOnce(&mut Self)) {
        match self.substitutions.iter().position(|s| *s == key) {
            Some(index) => self.out.push_str(&substitution(index)),
            None => {
                write(self);
                self.substitutions.push(key);
            }
        }
    }

    /// The name a struct-like type is mangled by.
    fn class_of(&self, ty: &Type) -> String {
        match ty {
            Type::Struct(id) => self.structs.struct_name(*id).to_string(),
            Type::Dim3 => "dim3".into(),
            Type::CudaError => "cudaError".into(),
            Type::Enum { id, .. } => self.structs.enum_name(*id).to_string(),
            other => format!("{other:?}"),
        }
    }

    /// The mangling of `ty` without substitutions: the key substitutions are looked up by.
    fn plain(&self, ty: &Type, quals: Quals) -> String {
        let inner = match builtin(ty) {
            Some(code) => code.to_string(),
            None => match ty {
                Type::Pointer { pointee, .. } => format!("P{}", self.plain(pointee, ty.pointee_quals())),
                Type::Array { elem, len } => format!("A{len}_{}", self.plain(elem, Quals::NONE)),
                Type::Stream => "P11CUstream_st".into(),
                Type::Event => "P10CUevent_st".into(),
                Type::FnPtr(sig) => {
                    let params: String = sig.params.iter().map(|p| self.plain(p, Quals::NONE)).collect();
                    format!("PF{}{}E", self.plain(&sig.ret, Quals::NONE), if params.is_empty() { "v" } else { &params })
                }
                Type::Struct(id) if self.structs.struct_template(*id).is_some() => {
                    let (template, args) = self.structs.struct_template(*id).expect("just checked");
                    let args: Vec<PatternArg> = args.iter().map(concrete_arg).collect();
                    self.instance_key(template, &args)
                }
                other => plain_class(&self.class_of(other)),
            },
        };
        format!("{}{inner}", cv(quals))
    }
}

/// The unsubstituted mangling of a class's name (see [`Mangler::nested_class`]).
fn plain_class(name: &str) -> String {
    let (head, args) = template_args(name);
    if !head.contains("::") && args.is_none() {
        return format!("{}{name}", name.len());
    }
    let mut out = String::from("N");
    out.extend(head.split("::").map(|p| format!("{}{p}", p.len())));
    if let Some(args) = args {
        out.push('I');
        for arg in args {
            match TemplateArg::of(arg) {
                TemplateArg::Unsigned(digits) => out.push_str(&format!("Lj{digits}E")),
                TemplateArg::Void => out.push('v'),
                TemplateArg::Class(class) => out.push_str(&plain_class(class)),
            }
        }
        out.push('E');
    }
    out.push('E');
    out
}

/// A class name's template arguments: `A::B<32u, void>` is `A::B` and `["32u", "void"]`. Only
/// built-in classes have them (cooperative groups' `thread_block_tile<N, ParentT>`, named so by
/// `sema::coop_groups`); an argument is an `unsigned int` (`32u`), `void` or a class name.
fn template_args(name: &str) -> (&str, Option<Vec<&str>>) {
    let Some(open) = name.find('<').filter(|_| name.ends_with('>')) else { return (name, None) };
    let inner = &name[open + 1..name.len() - 1];
    let (mut args, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' if depth == 0 => {
                args.push(inner[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    args.push(inner[from..].trim());
    (&name[..open], Some(args))
}

/// A template argument of a built-in class's name.
enum TemplateArg<'a> {
    Unsigned(&'a str),
    Void,
    Class(&'a str),
}

impl<'a> TemplateArg<'a> {
    fn of(arg: &'a str) -> Self {
        match arg.strip_suffix('u') {
            Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => TemplateArg::Unsigned(digits),
            _ if arg == "void" => TemplateArg::Void,
            _ => TemplateArg::Class(arg),
        }
    }
}

/// The `<CV-qualifiers>` of the ABI, in its order: `V` (volatile) before `K` (const).
fn cv(quals: Quals) -> &'static str {
    match (quals.is_volatile, quals.is_const) {
        (false, false) => "",
        (false, true) => "K",
        (true, false) => "V",
        (true, true) => "VK",
    }
}

/// The one-letter codes of the builtin types, which are never substituted.
fn builtin(ty: &Type) -> Option<&'static str> {
    Some(match ty {
        Type::Void => "v",
        Type::Int(kind) => match kind {
            IntKind::Bool => "b",
            IntKind::Char => "c",
            IntKind::SChar => "a",
            IntKind::UChar => "h",
            IntKind::Short => "s",
            IntKind::UShort => "t",
            IntKind::Int => "i",
            IntKind::UInt => "j",
            IntKind::Long => "l",
            IntKind::ULong => "m",
            IntKind::LongLong => "x",
            IntKind::ULongLong => "y",
        },
        Type::Float(FloatKind::Float) => "f",
        Type::Float(FloatKind::Double) => "d",
        _ => return None,
    })
}

/// `S_` for the first component, then `S0_`, `S1_`, ... in base 36 (digits, then capitals).
fn substitution(index: usize) -> String {
    if index == 0 {
        return "S_".into();
    }
    let mut n = index - 1;
    let mut digits = Vec::new();
    loop {
        let d = (n % 36) as u8;
        digits.push(if d < 10 { b'0' + d } else { b'A' + d - 10 });
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    format!("S{}_", String::from_utf8(digits).expect("ASCII digits"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StructId;

    struct Names;
    impl StructLayouts for Names {
        fn struct_size_align(&self, _: StructId) -> (u64, u64) {
            (8, 4)
        }
        fn struct_name(&self, _: StructId) -> &str {
            "Pair"
        }
    }

    fn mangle(name: &str, params: &[Type]) -> String {
        mangle_function(name, &params.iter().collect::<Vec<_>>(), &Names)
    }

    fn ptr(t: Type) -> Type {
        Type::pointer_to(t)
    }

    fn cptr(t: Type) -> Type {
        Type::const_pointer_to(t)
    }

    // Expected names are nvcc 13.5's (`nvcc -arch=sm_90 -rdc=true -ptx`); tests/mangling_oracle.rs
    // asks nvcc itself for many more.
    #[test]
    fn names_nvcc_gives() {
        let pair = Type::Struct(StructId(0));
        assert_eq!(mangle("k0", &[]), "_Z2k0v");
        assert_eq!(mangle("k1", &[ptr(Type::INT), Type::INT]), "_Z2k1Pii");
        assert_eq!(
            mangle("k2", &[cptr(Type::INT), cptr(Type::INT), ptr(pair.clone()), ptr(pair.clone()), pair.clone()]),
            "_Z2k2PKiS0_P4PairS2_S1_"
        );
        assert_eq!(
            mangle("k4", &[Type::Dim3, Type::Stream, Type::Event, Type::CudaError, Type::size_t(), Type::Stream]),
            "_Z2k44dim3P11CUstream_stP10CUevent_st9cudaErrormS1_"
        );
        assert_eq!(
            mangle(
                "k5",
                &[
                    ptr(ptr(Type::INT)),
                    ptr(cptr(Type::INT)),
                    cptr(ptr(Type::INT)),
                    cptr(pair.clone()),
                    cptr(pair),
                    ptr(Type::Void),
                    cptr(Type::Void)
                ]
            ),
            "_Z2k5PPiPPKiPKS_PK4PairS8_PvPKv"
        );
    }

    fn member(scope: &[&str], name: &str, is_const: bool, params: &[(Type, bool)]) -> String {
        let scope: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
        let params: Vec<Param> = params.iter().map(|(ty, is_ref)| Param { ty, is_ref: *is_ref }).collect();
        mangle_member(&scope, name, is_const, &params, &Names)
    }

    // nvcc 13.5's names (compiler/tests/corpus_cxx.rs compares many more with nvcc itself).
    #[test]
    fn nested_names_references_and_constructors() {
        let pair = Type::Struct(StructId(0));
        assert_eq!(member(&["Graph"], "deg", false, &[(Type::UINT, false)]), "_ZN5Graph3degEj");
        assert_eq!(member(&["Graph"], "get", true, &[(Type::UINT, false)]), "_ZNK5Graph3getEj");
        assert_eq!(member(&["N", "M"], "h", false, &[(Type::INT, false), (ptr(pair.clone()), true)]), "_ZN1N1M1hEiR4Pair");
        assert_eq!(
            member(&["N"], "k", false, &[(cptr(Type::INT), true), (ptr(Type::INT), true), (ptr(pair.clone()), false), (ptr(pair.clone()), true)]),
            "_ZN1N1kERKiRiP4PairRS3_"
        );
        // The class is the first substitution: a reference to it is `RS_`.
        assert_eq!(member(&["Pair"], "same", true, &[(cptr(pair.clone()), true)]), "_ZNK4Pair4sameERKS_");
        assert_eq!(member(&["Pair"], CTOR, false, &[(ptr(Type::INT), false), (Type::INT, false)]), "_ZN4PairC1EPii");
        assert_eq!(member(&[], "kref", false, &[(ptr(Type::INT), true)]), "_Z4krefRi");
    }

    #[test]
    fn substitution_numbers_are_base_36() {
        assert_eq!(substitution(0), "S_");
        assert_eq!(substitution(1), "S0_");
        assert_eq!(substitution(10), "S9_");
        assert_eq!(substitution(11), "SA_");
        assert_eq!(substitution(36), "SZ_");
        assert_eq!(substitution(37), "S10_");
    }

    /// Struct 0 is `cooperative_groups::__v1::thread_block`, struct 1 `...::grid_group`.
    struct Groups;
    impl StructLayouts for Groups {
        fn struct_size_align(&self, _: StructId) -> (u64, u64) {
            (24, 8)
        }
        fn struct_name(&self, id: StructId) -> &str {
            ["cooperative_groups::__v1::thread_block", "cooperative_groups::__v1::grid_group"][id.0 as usize]
        }
    }

    // nvcc 13.5's names for functions taking classes declared in those namespaces.
    #[test]
    fn classes_in_namespaces_are_nested_names_with_substitutable_prefixes() {
        let block = Type::Struct(StructId(0));
        let grid = Type::Struct(StructId(1));
        let m = |name: &str, params: &[Type]| mangle_function(name, &params.iter().collect::<Vec<_>>(), &Groups);
        assert_eq!(m("usecg", &[block.clone(), Type::INT]), "_Z5usecgN18cooperative_groups4__v112thread_blockEi");
        assert_eq!(m("usecg2", &[block.clone(), block.clone()]), "_Z6usecg2N18cooperative_groups4__v112thread_blockES1_");
        assert_eq!(
            m("usecg3", &[ptr(block.clone()), ptr(grid), ptr(block)]),
            "_Z6usecg3PN18cooperative_groups4__v112thread_blockEPNS0_10grid_groupES2_"
        );
    }

    /// Struct 0 is `thread_block`, 1 to 3 are tiles of `cooperative_groups::__v1`.
    struct Tiles;
    impl StructLayouts for Tiles {
        fn struct_size_align(&self, _: StructId) -> (u64, u64) {
            (16, 8)
        }
        fn struct_name(&self, id: StructId) -> &str {
            [
                "cooperative_groups::__v1::thread_block",
                "cooperative_groups::__v1::thread_block_tile<32u, void>",
                "cooperative_groups::__v1::thread_block_tile<16u, void>",
                "cooperative_groups::__v1::thread_block_tile<4u, cooperative_groups::__v1::thread_block>",
                "cooperative_groups::__v1::coalesced_group",
            ][id.0 as usize]
        }
    }

    // nvcc 13.5's names for functions taking instances of the class template
    // `thread_block_tile` (compiler/tests/coop_groups_ptx.rs asks nvcc for them).
    #[test]
    fn class_template_instances_nest_their_arguments_with_substitutions() {
        let s = |i: u32| Type::Struct(StructId(i));
        let m = |name: &str, params: &[Type]| mangle_function(name, &params.iter().collect::<Vec<_>>(), &Tiles);
        assert_eq!(m("f2", &[s(1)]), "_Z2f2N18cooperative_groups4__v117thread_block_tileILj32EvEE");
        assert_eq!(m("f3", &[s(3)]), "_Z2f3N18cooperative_groups4__v117thread_block_tileILj4ENS0_12thread_blockEEE");
        assert_eq!(m("g1", &[s(1), s(2), s(1)]), "_Z2g1N18cooperative_groups4__v117thread_block_tileILj32EvEENS1_ILj16EvEES2_");
        assert_eq!(m("g2", &[s(0), s(3), ptr(s(3))]), "_Z2g2N18cooperative_groups4__v112thread_blockENS0_17thread_block_tileILj4ES1_EEPS3_");
        assert_eq!(m("g4", &[s(4), s(2)]), "_Z2g4N18cooperative_groups4__v115coalesced_groupENS0_17thread_block_tileILj16EvEE");
    }

    fn instance(args: Vec<TemplateArgValue>, ret: TypePattern, params: Vec<TypePattern>) -> TemplateInstance {
        TemplateInstance { args, return_pattern: ret, param_patterns: params }
    }

    fn p_of(p: TypePattern, pointee_const: bool) -> TypePattern {
        TypePattern::Pointer { pointee: Box::new(p), pointee_quals: Quals { is_const: pointee_const, is_volatile: false } }
    }

    // nvcc 13.5's names for instances of function templates (the test `template_mangling` in
    // compiler/tests/corpus_templates.rs asks nvcc for these and more).
    #[test]
    fn template_instances_mangle_their_arguments_and_written_signature() {
        use TypePattern::{Concrete, Param};
        let pair = Type::Struct(StructId(0));
        let void = Concrete(Type::Void);
        let int_arg = |v: i64| TemplateArgValue::Int { value: v, ty: Type::INT };
        // template <int N> __global__ void k(int *)
        let k = instance(vec![int_arg(128)], void.clone(), vec![Concrete(ptr(Type::INT))]);
        assert_eq!(mangle_template_instance(&[], "k", &k, &Names), "_Z1kILi128EEvPi");
        // template <unsigned N> __global__ void ku(int *) with 5u
        let ku = instance(vec![TemplateArgValue::Int { value: 5, ty: Type::UINT }], void.clone(), vec![Concrete(ptr(Type::INT))]);
        assert_eq!(mangle_template_instance(&[], "ku", &ku, &Names), "_Z2kuILj5EEvPi");
        // template <typename T, int N> void g(const T *, T) with <Pair, -2>
        let g = instance(vec![TemplateArgValue::Type(pair.clone()), int_arg(-2)], void.clone(), vec![p_of(Param(0), true), Param(0)]);
        assert_eq!(mangle_template_instance(&[], "g", &g, &Names), "_Z1gI4PairLin2EEvPKT_S1_");
        // template <typename T> T *ra(Pair *, T *, T *) with <Pair>
        let ra = instance(vec![TemplateArgValue::Type(pair.clone())], p_of(Param(0), false), vec![Concrete(ptr(pair)), p_of(Param(0), false), p_of(Param(0), false)]);
        assert_eq!(mangle_template_instance(&[], "ra", &ra, &Names), "_Z2raI4PairEPT_PS0_S2_S2_");
        // template <class A, class B> B conv(A) with <int, float>
        let conv = instance(vec![TemplateArgValue::Type(Type::INT), TemplateArgValue::Type(Type::FLOAT)], Param(1), vec![Param(0)]);
        assert_eq!(mangle_template_instance(&[], "conv", &conv, &Names), "_Z4convIifET0_T_");
        // template <typename T> void h(T, T, const T *, T **) with <float>
        let h = instance(vec![TemplateArgValue::Type(Type::FLOAT)], void, vec![Param(0), Param(0), p_of(Param(0), true), p_of(p_of(Param(0), false), false)]);
        assert_eq!(mangle_template_instance(&[], "h", &h, &Names), "_Z1hIfEvT_S0_PKS0_PPS0_");
    }

    /// Struct 0 is `Buf<int, 2>`, 1 `Buf<Buf<int, 2>, 3>`, 2 `Buf<int, 4>`, 3 `n::W<P>` and 4 `P`.
    struct Instances;
    impl StructLayouts for Instances {
        fn struct_size_align(&self, _: StructId) -> (u64, u64) {
            (8, 4)
        }
        fn struct_name(&self, id: StructId) -> &str {
            ["Buf<int, 2>", "Buf<Buf<int, 2>, 3>", "Buf<int, 4>", "n::W<P>", "P"][id.0 as usize]
        }
        fn struct_template(&self, id: StructId) -> Option<(&str, &[TemplateArgValue])> {
            use std::sync::OnceLock;
            static ARGS: OnceLock<Vec<Vec<TemplateArgValue>>> = OnceLock::new();
            let int = |v: i64| TemplateArgValue::Int { value: v, ty: Type::INT };
            let args = ARGS.get_or_init(|| {
                vec![
                    vec![TemplateArgValue::Type(Type::INT), int(2)],
                    vec![TemplateArgValue::Type(Type::Struct(StructId(0))), int(3)],
                    vec![TemplateArgValue::Type(Type::INT), int(4)],
                    vec![TemplateArgValue::Type(Type::Struct(StructId(4)))],
                ]
            });
            let name = ["Buf", "Buf", "Buf", "n::W"].get(id.0 as usize)?;
            Some((name, args[id.0 as usize].as_slice()))
        }
    }

    // nvcc 13.5's names for class templates' instances and their members
    // (compiler/tests/cxx_types_ptx.rs asks nvcc for these and more).
    #[test]
    fn class_template_instances_substitute_their_template_name_and_themselves() {
        let s = |i: u32| Type::Struct(StructId(i));
        let m = |name: &str, params: &[Type]| mangle_function(name, &params.iter().collect::<Vec<_>>(), &Instances);
        assert_eq!(m("k", &[s(2), ptr(Type::INT)]), "_Z1k3BufIiLi4EEPi");
        assert_eq!(m("k2", &[s(1), s(2), s(0)]), "_Z2k23BufIS_IiLi2EELi3EES_IiLi4EES0_");
        assert_eq!(m("k3", &[s(3), ptr(s(3))]), "_Z2k3N1n1WI1PEEPS2_");
        let sum = mangle_instance_member(StructId(2), "sum", true, &[], &Instances);
        assert_eq!(sum, "_ZNK3BufIiLi4EE3sumEv");
        let add = mangle_instance_member(StructId(2), "add", false, &[Param { ty: &cptr(s(2)), is_ref: true }], &Instances);
        assert_eq!(add, "_ZN3BufIiLi4EE3addERKS0_");
        // template <class T> __global__ void kt(Buf<T, 2>, T *) with <float>
        let pattern = TypePattern::Instance { template: "Buf".into(), args: vec![PatternArg::Type(TypePattern::Param(0)), PatternArg::Value(TemplateArgValue::Int { value: 2, ty: Type::INT })] };
        let kt = instance(vec![TemplateArgValue::Type(Type::FLOAT)], TypePattern::Concrete(Type::Void), vec![pattern, p_of(TypePattern::Param(0), false)]);
        assert_eq!(mangle_template_instance(&[], "kt", &kt, &Instances), "_Z2ktIfEv3BufIT_Li2EEPS1_");
    }
}
