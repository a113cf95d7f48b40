//! Statements and local declarations.

use super::decls::{declarator_type, declare_one_global};
use super::{Binding, Context};
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, ExprKind, GlobalSpace, Init, Stmt};
use crate::front::cdp::syntax::ast;
use crate::types::{IntKind, Type};
use std::collections::HashMap;

impl Context {
    pub(super) fn block(&mut self, block: &ast::Block) -> hir::Block {
        self.state().scopes.push(HashMap::new());
        let mark = self.state().jumps.mark();
        let mut stmts = Vec::new();
        for stmt in &block.stmts {
            self.stmt(stmt, &mut stmts);
        }
        self.state().jumps.leave_scope(mark);
        self.state().scopes.pop();
        hir::Block { stmts }
    }

    /// A statement that opens its own scope (the body of `if`, a loop, a `switch`).
    pub(super) fn scoped(&mut self, stmt: &ast::Stmt) -> hir::Block {
        match stmt {
            ast::Stmt::Block(b) => self.block(b),
            other => {
                self.state().scopes.push(HashMap::new());
                let mark = self.state().jumps.mark();
                let mut stmts = Vec::new();
                self.stmt(other, &mut stmts);
                self.state().jumps.leave_scope(mark);
                self.state().scopes.pop();
                hir::Block { stmts }
            }
        }
    }

    pub(super) fn stmt(&mut self, stmt: &ast::Stmt, out: &mut Vec<Stmt>) {
        match stmt {
            ast::Stmt::Decl(decl) => self.local_decl(decl, out),
            ast::Stmt::Expr(e) => {
                if let Some(e) = self.expr(e) {
                    out.push(Stmt::Expr(e));
                }
            }
            ast::Stmt::If { cond, then, otherwise, .. } => {
                let cond = self.condition(cond);
                let then = self.scoped(then);
                let otherwise = otherwise.as_ref().map(|o| self.scoped(o));
                if let Some(cond) = cond {
                    out.push(Stmt::If { cond, then, otherwise });
                }
            }
            ast::Stmt::While { cond, body, .. } => {
                let cond = self.condition(cond);
                let body = self.loop_body(body);
                out.push(Stmt::Loop { init: hir::Block::default(), cond, step: None, body, check_cond_first: true });
            }
            ast::Stmt::DoWhile { body, cond, .. } => {
                let body = self.loop_body(body);
                let cond = self.condition(cond);
                out.push(Stmt::Loop { init: hir::Block::default(), cond, step: None, body, check_cond_first: false });
            }
            ast::Stmt::For { init, cond, step, body, .. } => {
                // The init's declarations are visible in the whole loop and nowhere else.
                self.state().scopes.push(HashMap::new());
                let mark = self.state().jumps.mark();
                let mut init_stmts = Vec::new();
                if let Some(init) = init {
                    self.stmt(init, &mut init_stmts);
                }
                let cond = cond.as_ref().and_then(|c| self.condition(c));
                let step = step.as_ref().and_then(|s| self.expr(s));
                let body = self.loop_body(body);
                self.state().jumps.leave_scope(mark);
                self.state().scopes.pop();
                out.push(Stmt::Loop { init: hir::Block { stmts: init_stmts }, cond, step, body, check_cond_first: true });
            }
            ast::Stmt::Break(span) => {
                if self.state().loop_depth == 0 && !self.state().jumps.in_switch() {
                    self.error(Code::MisplacedStatement, *span, "`break` outside of a loop or `switch`").emit();
                } else {
                    out.push(Stmt::Break);
                }
            }
            ast::Stmt::Continue(span) => {
                if self.state().loop_depth == 0 {
                    self.error(Code::MisplacedStatement, *span, "`continue` outside of a loop").emit();
                } else {
                    out.push(Stmt::Continue);
                }
            }
            ast::Stmt::Return(value, span) => self.return_stmt(value.as_ref(), *span, out),
            ast::Stmt::Block(b) => {
                let b = self.block(b);
                out.push(Stmt::Block(b));
            }
            ast::Stmt::Empty(_) => {}
            ast::Stmt::Asm(a) => self.asm_stmt(a, out),
            ast::Stmt::Switch { cond, body, head, .. } => self.switch_stmt(cond, body, *head, out),
            ast::Stmt::Case { value, high, stmt, span } => self.case_stmt(value, high.as_ref(), stmt, *span, out),
            ast::Stmt::Default { stmt, span } => self.default_stmt(stmt, *span, out),
            ast::Stmt::Label { name, stmt } => self.label_stmt(name, stmt, out),
            ast::Stmt::Goto(name, span) => self.goto_stmt(name, *span, out),
        }
    }

    fn loop_body(&mut self, body: &ast::Stmt) -> hir::Block {
        self.state().loop_depth += 1;
        let body = self.scoped(body);
        self.state().loop_depth -= 1;
        body
    }

    /// A condition: any scalar, tested against zero by code generation.
    pub(super) fn condition(&mut self, e: &ast::Expr) -> Option<hir::Expr> {
        let e = self.expr(e)?;
        let e = self.rvalue(e);
        if !e.ty.is_scalar() {
            let message = format!("a condition must be a number or a pointer, not {}", self.show(&e.ty));
            self.error(Code::TypeMismatch, e.span, message).emit();
            return None;
        }
        Some(e)
    }

    fn return_stmt(&mut self, value: Option<&ast::Expr>, span: Span, out: &mut Vec<Stmt>) {
        let return_type = self.state().return_type.clone();
        match (value, return_type.is_void()) {
            (None, true) => out.push(Stmt::Return(None)),
            (None, false) => {
                let message = format!("this function returns {}; `return` needs a value", self.show(&return_type));
                self.error(Code::TypeMismatch, span, message).emit();
            }
            (Some(v), true) => {
                if let Some(e) = self.expr(v) {
                    if e.ty.is_void() {
                        out.push(Stmt::Expr(e));
                        out.push(Stmt::Return(None));
                    } else {
                        self.error(Code::TypeMismatch, v.span, "a `void` function cannot return a value").emit();
                    }
                }
            }
            (Some(v), false) => {
                if let Some(e) = self.expr(v) {
                    if let Some(e) = self.coerce(e, &return_type, Code::TypeMismatch, "returned value has the wrong type") {
                        out.push(Stmt::Return(Some(e)));
                    }
                }
            }
        }
    }

    fn local_decl(&mut self, decl: &ast::DeclStmt, out: &mut Vec<Stmt>) {
        use ast::VarQualifier as Q;
        let has = |q: Q| decl.qualifiers.iter().any(|(x, _)| *x == q);
        let Some(base) = self.resolve_spec(&decl.spec) else {
            // The type is reported; uses of the names stay quiet instead of "cannot find".
            for init in &decl.declarators {
                self.bind(&init.declarator.name, Binding::Poisoned);
            }
            return;
        };
        // A `static __managed__` local is one variable for the program, as nvcc takes it.
        if let Some(&(_, span)) = decl.qualifiers.iter().find(|(q, _)| *q == Q::Managed).filter(|_| !has(Q::Static)) {
            self.error(Code::InvalidDeclaration, span, "a `__managed__` variable in a function must be `static`")
                .note("a managed variable lives for the whole program; declare it at file scope, or `static` here")
                .emit();
            for init in &decl.declarators {
                self.bind(&init.declarator.name, Binding::Poisoned);
            }
            return;
        }
        let hoisted = if has(Q::Shared) {
            Some(if has(Q::Extern) { GlobalSpace::ExternShared } else { GlobalSpace::Shared })
        } else if has(Q::Static) || has(Q::Device) {
            Some(GlobalSpace::Device)
        } else {
            if let Some((q, span)) = decl.qualifiers.iter().find(|(q, _)| matches!(q, Q::Extern | Q::Constant)) {
                let what = if *q == Q::Extern { "extern" } else { "__constant__" };
                self.error(Code::InvalidDeclaration, *span, format!("`{what}` variables must be declared at file scope")).emit();
                return;
            }
            None
        };
        for init in &decl.declarators {
            let name = &init.declarator.name;
            if let Some(space) = hoisted {
                // Shared and static variables live for the whole grid: they become module globals
                // with a name that cannot clash with the user's.
                let function = self.current_function_name();
                let symbol = format!("{function}__{}", name.name);
                let symbol = self.unique_global_name(symbol);
                // nvcc's name for it (`hir::LocalStatic`); `extern __shared__` is the block's
                // dynamic shared memory, one array for every function.
                let local = (space != GlobalSpace::ExternShared).then(|| {
                    let id = self.func.as_ref().expect("inside a function").id;
                    let earlier = self.globals.iter().filter_map(|g| g.local.as_ref()).filter(|l| l.function == id && l.name == name.name).count() as u32;
                    hir::LocalStatic { function: id, name: name.name.clone(), earlier }
                });
                match declare_one_global(self, base.clone(), decl, init, space, &symbol, local) {
                    Some(id) => self.bind(name, Binding::Global(id)),
                    None => self.bind(name, Binding::Poisoned),
                }
                continue;
            }
            let sized = sized_by_initializer(&init.declarator, init.init.as_ref());
            let Some(ty) = declarator_type(self, base.clone(), decl.spec.quals(), sized.as_ref().unwrap_or(&init.declarator), false) else {
                self.bind(name, Binding::Poisoned);
                continue;
            };
            if !ty.is_complete_object() {
                let message = format!("`{}` cannot have type {}", name.name, self.show(&ty));
                self.error(Code::InvalidDeclaration, init.declarator.span, message).emit();
                continue;
            }
            // The initializer is checked before the name is in scope, as in C (`int x = x;` aside).
            let value = init.init.as_ref().and_then(|i| self.local_init(i, &ty));
            let local = self.new_local(&name.name, ty.clone(), init.declarator.span);
            let quals = super::decls::object_quals(decl, &init.declarator);
            if quals.is_const {
                self.state().const_locals.insert(local);
            }
            self.state().locals[local.0 as usize].volatile = quals.is_volatile;
            self.bind(name, Binding::Local(local));
            if init.init.is_some() {
                self.state().jumps.initialised(&name.name, init.declarator.span);
            }
            if let Some(Init::Expr(value)) = &value {
                let place = hir::Expr { kind: ExprKind::Local(local), ty: ty.clone(), span: name.span };
                let globals = std::mem::take(&mut self.globals);
                self.state().provenance.record_store(&place, value, &globals);
                self.globals = globals;
            }
            out.push(Stmt::Decl { local, init: value });
        }
    }

    fn unique_global_name(&self, base: String) -> String {
        let mut name = base.clone();
        let mut n = 1;
        while self.globals.iter().any(|g| g.name == name) || self.symbols.contains_key(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        name
    }

    fn local_init(&mut self, init: &ast::Initializer, ty: &Type) -> Option<Init> {
        match (init, ty) {
            (ast::Initializer::Ctor(args, span), Type::Dim3) => {
                let e = self.dim3_ctor(args, *span)?;
                Some(Init::Expr(e))
            }
            // `int x(3);`: C++'s direct-initialization; `dim3 g(2, 1)` is the one the kernel
            // language keeps.
            (ast::Initializer::Ctor(_, span), _) => {
                let error = crate::front::cdp::syntax::cuda_cxx_error(*span, &format!("direct-initialization of {}, `(...)` after the name,", self.show(ty)));
                self.diags.push(error.with_note("in C: `= value`, or `= { ... }` for a struct or an array"));
                None
            }
            (ast::Initializer::List(items, span), Type::Array { elem, len }) => {
                if items.len() as u64 > *len {
                    self.error(Code::TypeMismatch, *span, format!("{} initializers for an array of {len}", items.len())).emit();
                    return None;
                }
                let elem = (**elem).clone();
                let values = items.iter().map(|i| self.local_init(i, &elem)).collect::<Vec<_>>();
                Some(Init::List(values.into_iter().collect::<Option<Vec<_>>>()?))
            }
            (ast::Initializer::List(items, span), Type::Struct(id)) => {
                let fields = self.initialised_fields(*id);
                if items.len() > fields.len() {
                    let message = self.too_many_initializers(*id, items.len());
                    self.error(Code::TypeMismatch, *span, message).emit();
                    return None;
                }
                let values = items.iter().zip(&fields).map(|(i, t)| self.local_init(i, t)).collect::<Vec<_>>();
                Some(Init::List(values.into_iter().collect::<Option<Vec<_>>>()?))
            }
            (ast::Initializer::List(items, _), Type::Dim3) if (1..=3).contains(&items.len()) && items.iter().all(|i| matches!(i, ast::Initializer::Expr(_))) => {
                let args: Vec<ast::Expr> = items
                    .iter()
                    .map(|i| match i {
                        ast::Initializer::Expr(e) => e.clone(),
                        _ => unreachable!(),
                    })
                    .collect();
                let span = args[0].span.to(args[args.len() - 1].span);
                Some(Init::Expr(self.dim3_ctor(&args, span)?))
            }
            (ast::Initializer::List(items, _), _) if items.len() == 1 => self.local_init(&items[0], ty),
            (ast::Initializer::List(_, span), _) => {
                let message = format!("a brace list cannot initialize {}", self.show(ty));
                self.error(Code::TypeMismatch, *span, message).emit();
                None
            }
            (ast::Initializer::Expr(ast::Expr { kind: ast::ExprKind::StringLit(bytes), span }), Type::Array { elem, len })
                if matches!(**elem, Type::Int(IntKind::Char | IntKind::SChar | IntKind::UChar)) =>
            {
                // `char s[] = "\t";`: the characters and the terminating zero.
                if bytes.len() as u64 + 1 > *len {
                    self.error(Code::TypeMismatch, *span, format!("a string of {} characters does not fit an array of {len}", bytes.len())).emit();
                    return None;
                }
                let chars = bytes.iter().chain(std::iter::once(&0u8)).map(|b| Init::Expr(super::expr::int_const(*b as i8 as i64, (**elem).clone(), *span)));
                Some(Init::List(chars.collect()))
            }
            (ast::Initializer::Expr(e), Type::Array { .. }) => {
                self.error(Code::TypeMismatch, e.span, "an array is initialized with a brace list `{ ... }`").emit();
                None
            }
            (ast::Initializer::Expr(e), _) => {
                let value = self.expr(e)?;
                Some(Init::Expr(self.coerce(value, ty, Code::TypeMismatch, "initializer has the wrong type")?))
            }
        }
    }
}

/// `char s[] = "\t";`, `int a[] = {1, 2};`: the array's size is the initializer's.
pub(super) fn sized_by_initializer(d: &ast::Declarator, init: Option<&ast::Initializer>) -> Option<ast::Declarator> {
    let first = d.array_dims.first().filter(|dim| dim.size.is_none())?;
    let len = match init? {
        ast::Initializer::Expr(ast::Expr { kind: ast::ExprKind::StringLit(bytes), .. }) => bytes.len() + 1,
        ast::Initializer::List(items, _) => items.len(),
        _ => return None,
    };
    let mut sized = d.clone();
    let size = ast::Expr { kind: ast::ExprKind::IntLit { value: len as u64, suffix: Default::default(), decimal: true }, span: first.span };
    sized.array_dims[0].size = Some(size);
    Some(sized)
}

/// Whether every path through `block` ends in `return` (a conservative check for the
/// missing-return warning: loops are assumed to exit). A `goto` counts as never falling
/// through; a label after the statement that returns may be jumped to, so only the statements
/// after the last label count. A `switch` returns when it has a `default`, no `break` of its
/// own, and its body returns.
pub(super) fn always_returns(block: &hir::Block) -> bool {
    let after_label = block.stmts.iter().rposition(Stmt::has_label).map_or(0, |i| i);
    block.stmts[after_label..].iter().any(|s| match s {
        Stmt::Return(_) | Stmt::Goto(_) => true,
        Stmt::Block(b) => always_returns(b),
        Stmt::If { then, otherwise: Some(otherwise), .. } => always_returns(then) && always_returns(otherwise),
        Stmt::Loop { cond: None, body, .. } => !contains_break(body),
        Stmt::Switch { body, default: Some(_), .. } => !contains_break(body) && always_returns(body),
        _ => false,
    })
}

/// Whether `block` holds a `break` that leaves it (not one of a nested loop or `switch`).
fn contains_break(block: &hir::Block) -> bool {
    block.stmts.iter().any(|s| match s {
        Stmt::Break => true,
        Stmt::Block(b) => contains_break(b),
        Stmt::If { then, otherwise, .. } => contains_break(then) || otherwise.as_ref().is_some_and(contains_break),
        _ => false,
    })
}
