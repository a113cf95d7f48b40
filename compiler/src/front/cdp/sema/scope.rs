//! **Where names are found**: typedefs, type names, functions and variables at file scope, and
//! data members.
//!
//! The kernel language is C: one file scope, no namespaces, no classes with member functions
//! or bases, no overloading (all CUDA C++, refused by the front end or by `decls.rs`, `E0923`).
//! A name at file scope stands for one function or variable (`Context::symbols`), a struct
//! (`Context::struct_names`) or a typedef (`Names::typedefs`, enums' names too).
//!
//! A call whose arguments a program's function does not take may still be the built-in of that
//! name (`sqrtf`, `make_float2(x, y)`) where they fit the built-in (`expr.rs`).

use super::{Context, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::cdp::hir::FuncId;
use crate::front::cdp::syntax::ast;
use crate::types::{StructId, Type};
use std::collections::{HashMap, HashSet};

/// What sema knows of the file-scope names besides `Context::symbols` and `struct_names`.
#[derive(Default)]
pub(super) struct Names {
    pub typedefs: HashMap<String, Type>,
    /// The function each declaration or definition (by its span) declares.
    pub decl_of: HashMap<Span, FuncId>,
    /// Functions a declaration has given a body to (the first definition keeps it).
    pub has_definition: HashSet<FuncId>,
    /// Where each function's name is first declared, for labels.
    pub name_spans: HashMap<FuncId, Span>,
}

pub(super) fn declare_typedef(cx: &mut Context, def: &ast::TypedefDef) {
    if def.name.name.is_empty() {
        return; // reported by the parser
    }
    let Some(ty) = cx.typedef_type(def) else { return };
    let name = &def.name.name;
    let clash = match cx.names.typedefs.get(name) {
        Some(existing) => *existing != ty,
        None => cx.struct_names.get(name).is_some_and(|id| ty != Type::Struct(*id)) || cx.symbols.contains_key(name),
    };
    if clash {
        cx.error(Code::Redefinition, def.name.span, format!("`{name}` is already declared as something else")).emit();
        return;
    }
    cx.names.typedefs.insert(name.clone(), ty);
}

impl Context {
    /// The type a struct or typedef name stands for.
    pub(super) fn named_type(&self, name: &str) -> Option<Type> {
        match self.names.typedefs.get(name) {
            Some(ty) => Some(ty.clone()),
            None => self.struct_names.get(name).map(|id| Type::Struct(*id)),
        }
    }

    /// What a function or variable name at file scope refers to.
    pub(super) fn resolve_symbol(&self, name: &str) -> Option<GlobalSymbol> {
        self.symbols.get(name).copied()
    }

    /// The data member `name` of `class`: its index and the type of its values.
    pub(super) fn find_field(&self, class: StructId, name: &str) -> Option<(u32, Type)> {
        let s = &self.structs[class.0 as usize];
        let i = s.fields.iter().position(|f| f.name == name)?;
        Some((i as u32, s.fields[i].value_type()))
    }

    /// The names of the data members of `class`, for a "no field" note.
    pub(super) fn field_names(&self, class: StructId) -> String {
        self.structs[class.0 as usize].fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>().join(", ")
    }
}
