//! Semantic analysis: names, types, conversions and the checks on launches. AST in, HIR out.
//!
//! Sema reports every problem it finds and keeps going: an expression that fails to check
//! becomes `None` and its parents stay quiet, so one mistake gives one diagnostic.
//! Never touches LLVM and never spawns processes.

mod asm;
mod bit_fields;
mod builtins;
mod consteval;
mod convert;
pub mod cuda_types;
mod decls;
mod enums;
mod expr;
mod fn_pointers;
mod host;
mod intrinsics;
mod jumps;
mod launch;
mod provenance;
mod scope;
mod stmt;
mod vector;

use crate::diag::{Code, Diagnostic, Diagnostics, Span};
use crate::front::cdp::hir::{self, FuncId, GlobalId, LocalId};
use crate::front::cdp::syntax::ast;
use crate::target::Target;
use crate::types::{DisplayType, StructId, StructLayouts, Type};
use std::collections::HashMap;

/// Options that change what sema accepts.
#[derive(Clone, Debug, Default)]
pub struct SemaOptions {
    pub target: Target,
    /// Separate compilation (`-dc`, several inputs, a link with libraries): a device function
    /// or `extern` variable declared but not defined here is left to the link step, which
    /// reports it (E0801) if no input defines it. Off, such a use is E0104 here.
    pub separate: bool,
}

/// Checks a parsed file and lowers it to HIR. The module is returned only when there was no
/// error; warnings come back either way.
pub fn analyze(unit: &ast::TranslationUnit, options: &SemaOptions) -> (Option<hir::Module>, Vec<Diagnostic>) {
    let mut cx = Context::new(options.target);
    cx.separate = options.separate;
    cx.skipped = host::index_skipped(&unit.skipped);
    decls::declare_items(&mut cx, unit);
    decls::define_functions(&mut cx, unit);
    let failed = cx.diags.has_errors();
    let module = hir::Module { target: cx.target, structs: cx.structs, globals: cx.globals, functions: cx.functions, enums: cx.enums, nv_module_id: None };
    (if failed { None } else { Some(module) }, cx.diags.into_vec())
}

/// What a name at file scope refers to.
#[derive(Clone, Copy, Debug)]
enum GlobalSymbol {
    Function(FuncId),
    Global(GlobalId),
}

/// What a name in a function body refers to: most locals are stack variables, but `__shared__`
/// and `static` declarations inside a body become module globals.
#[derive(Clone, Copy, Debug)]
enum Binding {
    Local(LocalId),
    Global(GlobalId),
    /// A declaration that failed to check: uses of the name stay quiet instead of cascading
    /// into "cannot find" errors.
    Poisoned,
}

struct Context {
    target: Target,
    structs: Vec<hir::StructDef>,
    struct_names: HashMap<String, StructId>,
    /// Structs whose fields are known; a struct may be named before then, but not used by value.
    complete: Vec<bool>,
    globals: Vec<hir::Global>,
    functions: Vec<hir::Function>,
    symbols: HashMap<String, GlobalSymbol>,
    /// Caller and callee of every call and launch checked, for the reachability of
    /// `__host__ __device__` functions and the check that called functions are defined.
    calls: Vec<(FuncId, FuncId)>,
    /// Declarations the front end left to the host compiler, by name (see `host.rs`).
    skipped: HashMap<String, ast::Skipped>,
    /// Host variables that device code may read as constants (`const int N = 4;` at file
    /// scope, without `__device__`): their values, as typed constant expressions (host.rs).
    host_consts: HashMap<String, hir::Expr>,
    /// Globals declared `const` (and string literals): read-only places.
    const_globals: std::collections::HashSet<GlobalId>,
    /// Typedef names and which declaration declares which function (`scope.rs`).
    names: scope::Names,
    diags: Diagnostics,
    /// State of the function body being checked.
    func: Option<FunctionState>,
    /// [`SemaOptions::separate`].
    separate: bool,
    /// The user enums (`enums.rs`), by `EnumId`.
    enums: Vec<hir::EnumDef>,
}

struct FunctionState {
    id: FuncId,
    kind: hir::FunctionKind,
    return_type: Type,
    locals: Vec<hir::Local>,
    scopes: Vec<HashMap<String, Binding>>,
    loop_depth: u32,
    /// `switch`, labels and `goto` (`jumps.rs`).
    jumps: jumps::Jumps,
    /// Locals declared `const` (`const int x`, `int *const p`).
    const_locals: std::collections::HashSet<LocalId>,
    provenance: provenance::Tracker,
}

impl StructLayouts for Context {
    fn struct_size_align(&self, id: StructId) -> (u64, u64) {
        let s = &self.structs[id.0 as usize];
        (s.size, s.align)
    }
    fn struct_name(&self, id: StructId) -> &str {
        &self.structs[id.0 as usize].name
    }
    fn struct_keyword(&self, id: StructId) -> Option<&'static str> {
        self.structs[id.0 as usize].keyword()
    }
    fn enum_name(&self, id: crate::types::EnumId) -> &str {
        &self.enums[id.0 as usize].name
    }
    fn enum_tagless(&self, id: crate::types::EnumId) -> bool {
        self.enums[id.0 as usize].tagless
    }
}

impl Context {
    fn new(target: Target) -> Context {
        Context {
            target,
            structs: Vec::new(),
            struct_names: HashMap::new(),
            complete: Vec::new(),
            globals: Vec::new(),
            functions: Vec::new(),
            symbols: HashMap::new(),
            calls: Vec::new(),
            skipped: HashMap::new(),
            host_consts: HashMap::new(),
            const_globals: Default::default(),
            names: Default::default(),
            diags: Diagnostics::default(),
            func: None,
            separate: false,
            enums: Vec::new(),
        }
    }

    fn error(&mut self, code: Code, span: Span, message: impl Into<String>) -> DiagnosticBuilder<'_> {
        DiagnosticBuilder { diags: &mut self.diags, diagnostic: Some(Diagnostic::new(code, span, message)) }
    }

    fn show(&self, ty: &Type) -> String {
        format!("`{}`", DisplayType { ty, structs: self })
    }

    fn size_align(&self, ty: &Type) -> (u64, u64) {
        crate::types::size_align(ty, self, &self.target)
    }

    fn add_global(&mut self, global: hir::Global) -> GlobalId {
        self.globals.push(global);
        GlobalId(self.globals.len() as u32 - 1)
    }

    fn state(&mut self) -> &mut FunctionState {
        self.func.as_mut().expect("function state exists while checking a body")
    }

    fn current_function_name(&self) -> String {
        let id = self.func.as_ref().expect("inside a function").id;
        self.functions[id.0 as usize].name.clone()
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        if let Some(state) = &self.func {
            for scope in state.scopes.iter().rev() {
                if let Some(binding) = scope.get(name) {
                    return Some(*binding);
                }
            }
        }
        match self.resolve_symbol(name) {
            Some(GlobalSymbol::Global(id)) => Some(Binding::Global(id)),
            _ => None,
        }
    }

    fn new_local(&mut self, name: &str, ty: Type, span: Span) -> LocalId {
        let state = self.state();
        state.locals.push(hir::Local { name: name.to_string(), ty, span, volatile: false });
        LocalId(state.locals.len() as u32 - 1)
    }

    /// Binds `name` in the innermost scope, reporting a redefinition in the same scope.
    fn bind(&mut self, name: &ast::Ident, binding: Binding) {
        let state = self.func.as_mut().expect("binding inside a function");
        let scope = state.scopes.last_mut().expect("a scope is open");
        if scope.insert(name.name.clone(), binding).is_some() {
            self.error(Code::Redefinition, name.span, format!("`{}` is already declared in this scope", name.name)).primary("declared again here").emit();
        }
    }
}

/// Builds a diagnostic fluently and records it on `emit` (or when dropped, so none is lost).
struct DiagnosticBuilder<'a> {
    diags: &'a mut Diagnostics,
    diagnostic: Option<Diagnostic>,
}

impl DiagnosticBuilder<'_> {
    fn primary(mut self, message: impl Into<String>) -> Self {
        self.diagnostic = self.diagnostic.take().map(|d| d.with_primary_message(message));
        self
    }
    fn label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.diagnostic = self.diagnostic.take().map(|d| d.with_label(span, message));
        self
    }
    fn note(mut self, note: impl Into<String>) -> Self {
        self.diagnostic = self.diagnostic.take().map(|d| d.with_note(note));
        self
    }
    fn emit(self) {}
}

impl Drop for DiagnosticBuilder<'_> {
    fn drop(&mut self) {
        if let Some(d) = self.diagnostic.take() {
            self.diags.push(d);
        }
    }
}

#[cfg(test)]
mod tests;
