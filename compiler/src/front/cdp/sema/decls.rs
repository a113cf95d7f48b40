//! File-scope declarations: structs, function signatures, globals; then function bodies.
//!
//! Every function's signature comes from one `function_signature`, and a name is one function: a
//! second function of that name with other parameters is C++'s overloading, `E0923`.

use super::{Binding, Context, FunctionState, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, ConstInit, ExprKind, FuncId, FunctionKind, GlobalSpace};
use crate::front::cdp::syntax::ast;
use crate::types::{round_up, Quals, StructId, Type};
use std::collections::HashMap;

/// Registers every struct, function and global so that bodies can refer to any of them.
pub(super) fn declare_items(cx: &mut Context, unit: &ast::TranslationUnit) {
    // Struct names first: a field may point to a struct declared later.
    for item in &unit.items {
        if let ast::Item::Struct(def) = item {
            if runtime_shim::types::type_names().any(|n| n == def.name.name) {
                cx.error(Code::Redefinition, def.name.span, format!("`{}` is a CUDA type and cannot be defined again", def.name.name))
                    .primary("already declared by the CUDA headers")
                    .note("the device-runtime API's types are built in, with nvcc's layout")
                    .emit();
                continue;
            }
            if cx.struct_names.contains_key(&def.name.name) {
                cx.error(Code::Redefinition, def.name.span, format!("struct `{}` is defined twice", def.name.name)).primary("defined again here").emit();
                continue;
            }
            let id = StructId(cx.structs.len() as u32);
            cx.struct_names.insert(def.name.name.clone(), id);
            cx.structs.push(hir::StructDef { name: def.name.name.clone(), fields: Vec::new(), size: 0, align: 1, span: def.span, union: def.union, tagless: def.tagless });
            cx.complete.push(false);
        }
    }
    // Enums after struct names, before anything that may name them.
    for item in &unit.items {
        if let ast::Item::Enum(def) = item {
            super::enums::declare(cx, def);
        }
    }
    for item in &unit.items {
        match item {
            ast::Item::Struct(def) => define_struct(cx, def),
            ast::Item::Function(def) => declare_function(cx, def),
            ast::Item::Global(decl) => declare_globals(cx, decl),
            ast::Item::Typedef(def) => super::scope::declare_typedef(cx, def),
            ast::Item::Enum(_) => {}
        }
    }
}

fn define_struct(cx: &mut Context, def: &ast::StructDef) {
    let Some(&id) = cx.struct_names.get(&def.name.name) else { return };
    if cx.structs[id.0 as usize].span != def.span {
        return; // the duplicate definition already reported
    }
    let mut fields: Vec<hir::Field> = Vec::new();
    let (mut offset, mut align) = (0u64, 1u64);
    // A union's members all start at 0; its size is its largest member's. Bit-fields are
    // placed in bits (`bit_fields::place`), everything else in bytes.
    let mut union_size = 0u64;
    let mut bits = super::bit_fields::Cursor { end: offset * 8, align: 1 };
    for decl in &def.fields {
        if let Some((q, span)) = decl.qualifiers.first() {
            cx.error(Code::InvalidDeclaration, *span, format!("a struct field cannot be `{}`", qualifier_name(*q))).emit();
        }
        let Some(base) = cx.resolve_spec(&decl.spec) else { continue };
        for init in &decl.declarators {
            let Some(ty) = declarator_type(cx, base.clone(), decl.spec.quals(), &init.declarator, false) else { continue };
            if ty == Type::Struct(id) || !is_complete(cx, &ty) {
                cx.error(Code::InvalidDeclaration, init.declarator.span, format!("field `{}` has incomplete type {}", init.declarator.name.name, cx.show(&ty)))
                    .primary("this field's type is not fully defined here")
                    .note("a struct cannot contain itself, and a struct used by value must be defined before it; use a pointer instead")
                    .emit();
                continue;
            }
            if init.init.is_some() {
                cx.error(Code::InvalidDeclaration, init.declarator.span, "struct fields cannot have initializers").emit();
            }
            if fields.iter().any(|f| f.name == init.declarator.name.name && !f.name.is_empty()) {
                cx.error(Code::Redefinition, init.declarator.name.span, format!("field `{}` is declared twice", init.declarator.name.name)).emit();
                continue;
            }
            let volatile = object_quals(decl, &init.declarator).is_volatile;
            if let Some(width) = &init.declarator.bit_width {
                if let Some(Some(field)) = super::bit_fields::place(cx, &ty, &init.declarator, width, &mut bits, def.union) {
                    fields.push(hir::Field { volatile, ..field });
                }
                offset = bits.end.div_ceil(8);
                union_size = union_size.max(offset);
                align = align.max(bits.align);
                continue;
            }
            let (size, field_align) = cx.size_align(&ty);
            if def.union {
                fields.push(hir::Field { name: init.declarator.name.name.clone(), ty, offset: 0, volatile, bits: None });
                union_size = union_size.max(size);
                align = align.max(field_align);
                continue;
            }
            offset = round_up(offset, field_align);
            fields.push(hir::Field { name: init.declarator.name.name.clone(), ty, offset, volatile, bits: None });
            offset = offset.saturating_add(size);
            bits.end = offset * 8;
            align = align.max(field_align);
        }
    }
    // `__align__(N)` raises the alignment (never lowers it), and the size with it.
    if let Some((wanted, span)) = def.align {
        if !wanted.is_power_of_two() || wanted > 256 {
            cx.error(Code::InvalidDeclaration, span, format!("`__align__({wanted})` is not an alignment cdpc supports")).primary("a power of two from 1 to 256").emit();
        } else {
            align = align.max(wanted);
        }
    }
    if def.union {
        offset = union_size;
    }
    let s = &mut cx.structs[id.0 as usize];
    s.fields = fields;
    s.size = round_up(offset, align).max(if offset == 0 { 1 } else { 0 });
    s.align = align;
    cx.complete[id.0 as usize] = true;
}

impl Context {
    /// The types of the fields a brace list initializes in order: all of a struct's, a union's
    /// first (C's rule).
    pub(super) fn initialised_fields(&self, id: StructId) -> Vec<Type> {
        let def = &self.structs[id.0 as usize];
        let n = if def.union { def.fields.len().min(1) } else { def.fields.len() };
        def.fields[..n].iter().map(hir::Field::value_type).collect()
    }

    pub(super) fn too_many_initializers(&self, id: StructId, given: usize) -> String {
        let def = &self.structs[id.0 as usize];
        if def.union {
            format!("{given} initializers for a union: a brace list initializes its first member only")
        } else {
            format!("{given} initializers for a struct of {} fields", def.fields.len())
        }
    }
}

fn is_complete(cx: &Context, ty: &Type) -> bool {
    match ty {
        Type::Struct(id) => cx.complete[id.0 as usize],
        Type::Array { elem, len } => *len > 0 && is_complete(cx, elem),
        Type::Void => false,
        _ => true,
    }
}

fn qualifier_name(q: ast::VarQualifier) -> &'static str {
    match q {
        ast::VarQualifier::Device => "__device__",
        ast::VarQualifier::Constant => "__constant__",
        ast::VarQualifier::Shared => "__shared__",
        ast::VarQualifier::Managed => "__managed__",
        ast::VarQualifier::Extern => "extern",
        ast::VarQualifier::Static => "static",
    }
}

/// The type a declarator gives its name. `[]` is allowed only where `allow_unsized` (extern
/// shared arrays); parameters handle their own decay.
pub(super) fn declarator_type(cx: &mut Context, base: Type, quals: Quals, d: &ast::Declarator, allow_unsized: bool) -> Option<Type> {
    let mut ty = match &d.function {
        // `int *(*ops[4])(int)`: the pointers are the return type's.
        Some(f) => {
            let ret = cx.wrap_pointers(base, quals, &d.pointers);
            cx.fn_ptr_type(ret, f)?
        }
        None => cx.wrap_pointers(base, quals, &d.pointers),
    };
    // `int a[2][3]` is an array of 2 arrays of 3: build from the innermost dimension out.
    for (i, dim) in d.array_dims.iter().enumerate().rev() {
        let len = match &dim.size {
            None if allow_unsized && i == 0 => 0,
            None => {
                cx.error(Code::InvalidArraySize, dim.span, "an array needs a size here").note("only `extern __shared__` arrays may leave the size empty").emit();
                return None;
            }
            Some(expr) => array_len(cx, expr)?,
        };
        if ty.is_void() {
            cx.error(Code::InvalidDeclaration, d.span, "an array of `void` is not a type").emit();
            return None;
        }
        ty = Type::Array { elem: Box::new(ty), len };
    }
    Some(ty)
}

fn array_len(cx: &mut Context, expr: &ast::Expr) -> Option<u64> {
    let e = cx.expr(expr)?;
    match super::consteval::eval(&e, &cx.target) {
        Some(super::consteval::Const::Int(n)) if e.ty.is_integer() && n > 0 && n <= (1 << 40) => Some(n as u64),
        Some(super::consteval::Const::Int(n)) if e.ty.is_integer() => {
            cx.error(Code::InvalidArraySize, expr.span, format!("array size {n} is not positive or is too large")).emit();
            None
        }
        _ => {
            cx.error(Code::NotConstant, expr.span, "an array size must be an integer constant expression").emit();
            None
        }
    }
}

fn function_kind(cx: &mut Context, def: &ast::FunctionDef) -> Option<FunctionKind> {
    use ast::FnQualifier as Q;
    let has = |q: Q| def.qualifiers.iter().any(|(x, _)| *x == q);
    match (has(Q::Global), has(Q::Device), has(Q::Host)) {
        (true, false, false) => Some(FunctionKind::Kernel),
        (false, true, false) => Some(FunctionKind::Device),
        (false, true, true) => Some(FunctionKind::HostDevice),
        (true, _, _) => {
            cx.error(Code::InvalidDeclaration, def.name.span, "a `__global__` function cannot also be `__device__` or `__host__`").emit();
            None
        }
        (false, false, _) => {
            cx.error(Code::UnsupportedSyntax, def.name.span, format!("`{}` is host code, which cdpc does not compile", def.name.name))
                .primary("no `__global__` or `__device__` here")
                .note("cdpc compiles device code only; mark the function `__device__` or `__global__`, or move host code to a .cu file")
                .emit();
            None
        }
    }
}

/// `inline`, `__forceinline__`, `__noinline__` and a kernel's `__launch_bounds__` (`E0911` on
/// any other function, as nvcc refuses it).
fn fn_attrs(cx: &mut Context, def: &ast::FunctionDef, kind: FunctionKind) -> hir::FnAttrs {
    let mut attrs = hir::FnAttrs::default();
    for (q, span) in &def.qualifiers {
        match q {
            ast::FnQualifier::Inline => attrs.odr_inline = true,
            ast::FnQualifier::ForceInline => {
                attrs.inline = Some(true);
                attrs.odr_inline = true;
            }
            ast::FnQualifier::NoInline => attrs.inline = Some(false),
            ast::FnQualifier::LaunchBounds(_) if kind != FunctionKind::Kernel => {
                cx.error(Code::InvalidLaunchBounds, *span, "`__launch_bounds__` is only allowed on a `__global__` function")
                    .primary("on a function that is not a kernel")
                    .note("launch bounds describe the blocks of a launch; only kernels are launched")
                    .emit();
            }
            ast::FnQualifier::LaunchBounds(bounds) => attrs.launch_bounds = Some(*bounds),
            _ => {}
        }
    }
    attrs
}

fn declare_function(cx: &mut Context, def: &ast::FunctionDef) {
    let Some(candidate) = function_signature(cx, def) else { return };
    let name = &def.name.name;
    match cx.symbols.get(name).copied() {
        None => {
            cx.functions.push(candidate);
            let id = FuncId(cx.functions.len() as u32 - 1);
            cx.names.decl_of.insert(def.span, id);
            cx.names.name_spans.insert(id, def.name.span);
            if def.body.is_some() {
                cx.names.has_definition.insert(id);
            }
            cx.symbols.insert(name.clone(), GlobalSymbol::Function(id));
        }
        Some(GlobalSymbol::Function(id)) => {
            let existing = &cx.functions[id.0 as usize];
            if !existing.param_types().eq(candidate.param_types()) {
                // C has one function of a name; a second with other parameters is C++'s
                // overloading.
                let first = cx.names.name_spans.get(&id).copied().unwrap_or(existing.span);
                let error = crate::front::cdp::syntax::cuda_cxx_error(def.name.span, &format!("a second `{name}` with other parameters (overloading)"));
                cx.diags.push(error.with_label(first, format!("the first `{name}`")));
                return;
            }
            // A prototype and its definition must agree.
            if existing.kind != candidate.kind || existing.return_type != candidate.return_type {
                let previous = existing.span;
                cx.error(Code::Redefinition, def.name.span, format!("`{name}` is declared again with a different signature")).label(previous, "first declared here").emit();
                return;
            } else if existing.body.is_some() || def.body.is_none() || cx.names.has_definition.contains(&id) {
                // Duplicate prototypes are harmless; a duplicate definition is caught when defining.
            } else {
                let f = &mut cx.functions[id.0 as usize];
                f.locals = candidate.locals;
                f.span = candidate.span;
                // `__noinline__` or `__forceinline__` on the definition counts too.
                f.attrs.inline = candidate.attrs.inline.or(f.attrs.inline);
                cx.names.has_definition.insert(id);
            }
            // `inline` on any declaration makes the function inline: nvcc then leaves it out
            // where nothing calls it.
            if candidate.attrs.odr_inline {
                cx.functions[id.0 as usize].attrs.odr_inline = true;
            }
            cx.names.decl_of.insert(def.span, id);
        }
        Some(GlobalSymbol::Global(_)) => {
            cx.error(Code::Redefinition, def.name.span, format!("`{name}` is already declared as a variable")).emit();
        }
    }
}

/// The HIR function a definition or prototype declares, without a body; `None` when its kind
/// or return type is wrong (reported).
pub(super) fn function_signature(cx: &mut Context, def: &ast::FunctionDef) -> Option<hir::Function> {
    let kind = function_kind(cx, def)?;
    let return_type = cx.resolve_type_name(&def.return_type)?;
    if kind == FunctionKind::Kernel && !return_type.is_void() {
        cx.error(Code::KernelReturnType, def.return_type.span, format!("a `__global__` function must return `void`, not {}", cx.show(&return_type))).primary("kernels cannot return a value").emit();
    }
    if matches!(return_type, Type::Array { .. }) {
        cx.error(Code::UnsupportedSyntax, def.return_type.span, "returning an array is not supported").note("return through a pointer parameter instead").emit();
        return None;
    }
    let mut locals = Vec::new();
    let mut params = Vec::new();
    for param in &def.params {
        let Some(base) = cx.resolve_spec(&param.ty) else { continue };
        // `int a[]` and `int a[4]` parameters are pointers, as in C.
        let mut d = param.declarator.clone();
        let decays = !d.array_dims.is_empty();
        if decays {
            d.array_dims.remove(0);
        }
        let Some(mut ty) = declarator_type(cx, base, param.ty.quals(), &d, false) else { continue };
        // The qualifiers of the parameter object, or of the elements of an array parameter.
        let quals = d.pointers.last().map(|level| level.quals()).unwrap_or(param.ty.quals());
        if decays {
            // `const float a[]` is `const float *a`.
            ty = Type::qualified_pointer_to(ty, quals);
        }
        if ty.is_void() {
            if def.params.len() == 1 && d.pointers.is_empty() {
                continue; // `f(void)`
            }
            cx.error(Code::InvalidDeclaration, param.span, "a parameter cannot have type `void`").emit();
            continue;
        }
        if !is_complete(cx, &ty) {
            cx.error(Code::InvalidDeclaration, param.span, format!("parameter has incomplete type {}", cx.show(&ty))).emit();
            continue;
        }
        let volatile = quals.is_volatile && !decays;
        locals.push(hir::Local { name: d.name.name.clone(), ty, span: param.span, volatile });
        params.push(hir::LocalId(locals.len() as u32 - 1));
    }
    if kind == FunctionKind::Kernel {
        check_kernel_param_size(cx, def, &locals);
    }
    let linkage = if def.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::ExternC) { hir::Linkage::C } else { hir::Linkage::Cxx };
    let attrs = fn_attrs(cx, def, kind);
    // `static` is internal linkage.
    let internal = def.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::Static);
    Some(hir::Function { name: def.name.name.clone(), kind, linkage, return_type, params, locals, body: None, span: def.span, attrs, internal })
}

/// A kernel whose parameters exceed the target's limit can be launched from nowhere; nvcc
/// refuses its definition ("Formal parameter space overflowed"), and so does cdpc.
fn check_kernel_param_size(cx: &mut Context, def: &ast::FunctionDef, params: &[hir::Local]) {
    let layout = crate::layout::param_layout(params.iter().map(|p| &p.ty), cx, &cx.target);
    if let Err(too_large) = layout.check_size(&cx.target) {
        let (size, limit) = (too_large.size, too_large.limit);
        let (sm, bits) = (cx.target.sm, cx.target.address_size.pointer_bytes() * 8);
        let params_span = match (def.params.first(), def.params.last()) {
            (Some(first), Some(last)) => first.span.to(last.span),
            _ => def.name.span,
        };
        cx.error(Code::ParamBufferTooLarge, def.name.span, format!("the parameters of kernel `{}` need {size} bytes, more than the {limit} a launch can pass", def.name.name))
            .label(params_span, "these parameters")
            .note(format!("the limit for {sm} at {bits}-bit addresses is {limit} bytes; pass large data through a pointer to global memory"))
            .emit();
    }
}

fn declare_globals(cx: &mut Context, decl: &ast::DeclStmt) {
    use ast::VarQualifier as Q;
    let has = |q: Q| decl.qualifiers.iter().any(|(x, _)| *x == q);
    if let Some(&(_, span)) = decl.qualifiers.iter().find(|(q, _)| *q == Q::Managed).filter(|_| has(Q::Shared) || has(Q::Constant)) {
        let other = if has(Q::Shared) { "__shared__" } else { "__constant__" };
        cx.error(Code::InvalidDeclaration, span, format!("a `__managed__` variable cannot be `{other}`"))
            .note("a managed variable is a `__device__` variable in unified memory, which host and device code both reach by its name")
            .emit();
        return;
    }
    let space = if has(Q::Shared) {
        if has(Q::Extern) {
            GlobalSpace::ExternShared
        } else {
            GlobalSpace::Shared
        }
    } else if has(Q::Constant) {
        GlobalSpace::Constant
    } else if has(Q::Device) || has(Q::Managed) {
        GlobalSpace::Device
    } else {
        // A host variable: device code may use only the value of a `const` one (host.rs).
        cx.declare_host_variables(decl);
        return;
    };
    if let Some(base) = cx.resolve_spec(&decl.spec) {
        for init in &decl.declarators {
            declare_one_global(cx, base.clone(), decl, init, space, &init.declarator.name.name.clone(), None);
        }
    }
}

/// Declares one global (also used for `__shared__` and `static` declarations in bodies, which
/// get a unique `symbol`). Returns its id.
pub(super) fn declare_one_global(
    cx: &mut Context,
    base: Type,
    decl: &ast::DeclStmt,
    init: &ast::InitDeclarator,
    space: GlobalSpace,
    symbol: &str,
    local: Option<hir::LocalStatic>,
) -> Option<hir::GlobalId> {
    // `__constant__ float k[] = {1, 2, 3};`: the size is the initializer's, as for a local.
    let sized = super::stmt::sized_by_initializer(&init.declarator, init.init.as_ref());
    let d = sized.as_ref().unwrap_or(&init.declarator);
    let ty = declarator_type(cx, base, decl.spec.quals(), d, space == GlobalSpace::ExternShared)?;
    if space == GlobalSpace::ExternShared && !matches!(ty, Type::Array { len: 0, .. }) {
        cx.error(Code::InvalidDeclaration, d.span, "`extern __shared__` declares the dynamic shared memory: write it as an unsized array, `extern __shared__ T name[];`").emit();
        return None;
    }
    if space != GlobalSpace::ExternShared && !is_complete(cx, &ty) {
        cx.error(Code::InvalidDeclaration, d.span, format!("`{}` has incomplete type {}", d.name.name, cx.show(&ty))).emit();
        return None;
    }
    let const_init = match (&init.init, space) {
        (None, _) => None,
        (Some(_), GlobalSpace::Shared | GlobalSpace::ExternShared) => {
            cx.error(Code::InvalidDeclaration, d.span, "`__shared__` variables cannot have initializers")
                .note("shared memory is uninitialised at block start; assign it in the kernel, then `__syncthreads()`")
                .emit();
            None
        }
        (Some(i), _) => Some(const_initializer(cx, i, &ty)?),
    };
    // At file scope, or a `static` local (stmt.rs refuses any other local).
    let managed = decl.qualifiers.iter().any(|(q, _)| *q == ast::VarQualifier::Managed);
    // `extern __device__ T x;` declares a variable another translation unit defines.
    let external = cx.func.is_none() && init.init.is_none() && matches!(space, GlobalSpace::Device | GlobalSpace::Constant) && decl.qualifiers.iter().any(|(q, _)| *q == ast::VarQualifier::Extern);
    if cx.func.is_none() {
        if let Some(&GlobalSymbol::Global(earlier)) = cx.symbols.get(symbol) {
            // A definition (or another declaration) after an `extern` declaration of the same
            // variable is the C rule: the definition wins.
            let g = &cx.globals[earlier.0 as usize];
            if (g.external || external) && g.ty == ty && g.space == space && g.managed == managed {
                if !external {
                    let g = &mut cx.globals[earlier.0 as usize];
                    g.external = false;
                    g.init = const_init;
                    g.span = d.span;
                }
                return Some(earlier);
            }
        }
        if cx.symbols.contains_key(symbol) {
            cx.error(Code::Redefinition, d.name.span, format!("`{symbol}` is already declared")).emit();
            return None;
        }
    }
    let quals = object_quals(decl, d);
    // `static` at file scope; a `static` local is hoisted here too, under a name of its own.
    let internal = cx.func.is_none() && decl.qualifiers.iter().any(|(q, _)| *q == ast::VarQualifier::Static);
    let id = cx.add_global(hir::Global { name: symbol.to_string(), ty, space, init: const_init, span: d.span, external, volatile: quals.is_volatile, internal, managed, local });
    if quals.is_const {
        cx.const_globals.insert(id);
    }
    if cx.func.is_none() {
        cx.symbols.insert(symbol.to_string(), GlobalSymbol::Global(id));
    }
    Some(id)
}

/// A compile-time initializer for a global of type `ty`.
fn const_initializer(cx: &mut Context, init: &ast::Initializer, ty: &Type) -> Option<ConstInit> {
    match (init, ty) {
        (ast::Initializer::List(items, span), Type::Array { elem, len }) => {
            if items.len() as u64 > *len {
                cx.error(Code::TypeMismatch, *span, format!("{} initializers for an array of {len}", items.len())).emit();
                return None;
            }
            let values = items.iter().map(|i| const_initializer(cx, i, elem)).collect::<Option<Vec<_>>>()?;
            Some(ConstInit::Array(values))
        }
        (ast::Initializer::List(items, span), Type::Struct(id)) => {
            let fields = cx.initialised_fields(*id);
            if items.len() > fields.len() {
                cx.error(Code::TypeMismatch, *span, cx.too_many_initializers(*id, items.len())).emit();
                return None;
            }
            let values = items.iter().zip(&fields).map(|(i, t)| const_initializer(cx, i, t)).collect::<Option<Vec<_>>>()?;
            Some(ConstInit::Struct(values))
        }
        (ast::Initializer::List(items, span), _) if items.len() == 1 => {
            let _ = span;
            const_initializer(cx, &items[0], ty)
        }
        (ast::Initializer::Expr(e), _) if !matches!(ty, Type::Array { .. } | Type::Struct(_)) => {
            let value = cx.expr(e)?;
            let value = cx.coerce(value, ty, Code::TypeMismatch, "initializer has the wrong type")?;
            to_const(cx, &value)
        }
        (ast::Initializer::Expr(e), Type::Array { elem, .. }) if matches!(e.kind, ast::ExprKind::StringLit(_)) && matches!(**elem, Type::Int(_)) => {
            let ast::ExprKind::StringLit(bytes) = &e.kind else { unreachable!() };
            Some(ConstInit::Array(bytes.iter().chain(std::iter::once(&0)).map(|b| ConstInit::Int(*b as i8 as i64)).collect()))
        }
        (other, _) => {
            let span = match other {
                ast::Initializer::Expr(e) => e.span,
                ast::Initializer::List(_, s) | ast::Initializer::Ctor(_, s) => *s,
            };
            cx.error(Code::TypeMismatch, span, format!("this initializer does not fit a variable of type {}", cx.show(ty))).emit();
            None
        }
    }
}

fn to_const(cx: &mut Context, value: &hir::Expr) -> Option<ConstInit> {
    use super::consteval::{eval, Const};
    // Addresses of globals (string literals included) are link-time constants.
    let mut inner = value;
    while let ExprKind::Cast(e) = &inner.kind {
        inner = e;
    }
    if let ExprKind::AddrOf(place) | ExprKind::Decay(place) = &inner.kind {
        if let ExprKind::Global(id) = place.kind {
            return Some(ConstInit::GlobalAddress(id));
        }
    }
    if let ExprKind::FuncAddr(f) = inner.kind {
        return Some(ConstInit::FunctionAddress(f));
    }
    match eval(value, &cx.target) {
        Some(Const::Int(v)) => Some(ConstInit::Int(v as i64)),
        Some(Const::Float(f)) => Some(ConstInit::Float(f)),
        Some(Const::Pointer(0)) => Some(ConstInit::Zero),
        _ => {
            cx.error(Code::NotConstant, value.span, "a global's initializer must be a constant expression").emit();
            None
        }
    }
}

/// Checks every function body in order.
pub(super) fn define_functions(cx: &mut Context, unit: &ast::TranslationUnit) {
    let mut defined: HashMap<FuncId, Span> = HashMap::new();
    let mut deferred = super::host::Deferred::default();
    for item in &unit.items {
        let ast::Item::Function(def) = item else { continue };
        let Some(body) = &def.body else { continue };
        let Some(id) = cx.names.decl_of.get(&def.span).copied() else { continue };
        if let Some(previous) = defined.insert(id, def.name.span) {
            cx.error(Code::Redefinition, def.name.span, format!("`{}` is defined twice", def.name.name)).label(previous, "first defined here").emit();
            continue;
        }
        let f = &cx.functions[id.0 as usize];
        if f.span != def.span {
            continue; // the signature did not match; already reported
        }
        let scope = param_scope(f, def);
        let kind = f.kind;
        let check = |cx: &mut Context| define_body(cx, id, def, body, scope);
        if kind == FunctionKind::HostDevice {
            deferred.hold(cx, id, check);
        } else {
            check(cx);
        }
    }
    let called = super::host::finish_host_device(cx, deferred);
    // Calls to functions that are declared but never defined would fail in nvlink; say it here.
    // Under separate compilation the link step resolves them against the other inputs.
    if cx.separate {
        return;
    }
    for (i, f) in cx.functions.iter().enumerate() {
        if f.body.is_none() && called.contains(&FuncId(i as u32)) {
            cx.diags.push(
                crate::diag::Diagnostic::new(Code::MissingDefinition, f.span, format!("`{}` is called but never defined", f.name))
                    .with_note("this compilation links one file; define the function in it, or compile each file with `-dc` and link them together"),
            );
        }
    }
    for g in &cx.globals {
        if g.external {
            cx.diags.push(
                crate::diag::Diagnostic::new(Code::MissingDefinition, g.span, format!("`{}` is declared `extern` but never defined", g.name))
                    .with_note("this compilation links one file; define the variable in it, or compile each file with `-dc` and link them together"),
            );
        }
    }
}

/// The parameters of `f`, declared by `def`, as the outermost scope of its body.
fn param_scope(f: &hir::Function, def: &ast::FunctionDef) -> HashMap<String, Binding> {
    let mut scope = HashMap::new();
    for p in &f.params {
        scope.insert(f.locals[p.0 as usize].name.clone(), Binding::Local(*p));
    }
    // A parameter whose type failed to check is already reported; its uses stay quiet.
    for p in &def.params {
        scope.entry(p.declarator.name.name.clone()).or_insert(Binding::Poisoned);
    }
    scope
}

/// Checks one function's body into the HIR.
fn define_body(cx: &mut Context, id: FuncId, def: &ast::FunctionDef, body: &ast::Block, scope: HashMap<String, Binding>) {
    let f = &cx.functions[id.0 as usize];
    cx.func = Some(FunctionState {
        id,
        kind: f.kind,
        return_type: f.return_type.clone(),
        locals: f.locals.clone(),
        scopes: vec![scope],
        loop_depth: 0,
        jumps: Default::default(),
        const_locals: Default::default(),
        provenance: Default::default(),
    });
    let errors_before = cx.diags.iter().filter(|d| d.is_error()).count();
    let block = cx.block(body);
    cx.check_labels();
    // A statement that failed to check is left out of the block; whether the body returns is
    // then unknown, and the error already reported.
    let body_failed = cx.diags.iter().filter(|d| d.is_error()).count() > errors_before;
    let state = cx.func.take().expect("function state");
    let f = &mut cx.functions[id.0 as usize];
    f.locals = state.locals;
    f.body = Some(block);
    if !body_failed && !f.return_type.is_void() && !super::stmt::always_returns(f.body.as_ref().expect("just set")) {
        let name = def.name.name.clone();
        let closing_brace = crate::diag::Span { start: body.span.end.saturating_sub(1), end: body.span.end };
        cx.error(Code::MissingReturn, closing_brace, format!("`{name}` can reach its end without returning a value")).primary("control may fall off the end here").emit();
    }
}

/// Whether the declared object itself (not what it points to) is `const`.
/// The qualifiers of the object a declarator declares: its last `*`'s (`int *const p`), or the
/// specifiers' when it has none (`volatile int x`, and each element of `volatile int a[4]`).
pub(super) fn object_quals(decl: &ast::DeclStmt, d: &ast::Declarator) -> Quals {
    match d.pointers.last() {
        Some(level) => level.quals(),
        None => decl.spec.quals(),
    }
}
