//! **Where jumps are checked**: `switch` with its `case` and `default` labels, named labels and
//! `goto` (`E0230`-`E0234`).
//!
//! Every label becomes a `hir::Stmt::Label` where it stands; `switch` and `goto` name labels by
//! `hir::LabelId`. A jump may not enter the scope of a declaration with an initializer past
//! that declaration (C++ [stmt.dcl]/3, as nvcc enforces it): each initialised declaration in
//! scope is tracked in [`Jumps::live`], each jump source and target keeps a copy of it, and a
//! target whose copy holds a declaration that the source's does not is a jump past it
//! (`E0233`). Labels whose `goto` comes before them are checked when the function ends, with
//! the labels never defined (`E0234`).
//!
//! Case values are folded and converted to the condition's promoted type; duplicate, non-constant
//! and ranged (`case low ... high:`) cases are errors, as are labels never defined.

use super::Context;
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{LabelId, Stmt};
use crate::front::cdp::syntax::ast;
use crate::types::Type;
use std::collections::HashMap;

/// The jump state of one function body.
#[derive(Default)]
pub(super) struct Jumps {
    next_label: u32,
    /// The initialised declarations in scope at this point, outermost first (indices into
    /// `initialised`).
    live: Vec<u32>,
    /// Every initialised declaration of the function: its name and span.
    initialised: Vec<(String, Span)>,
    /// The enclosing `switch` statements, innermost last.
    switches: Vec<SwitchState>,
    /// Named labels, defined or only jumped to so far.
    labels: HashMap<String, NamedLabel>,
}

struct SwitchState {
    /// The promoted type of the condition, which the case values are converted to.
    ty: Type,
    span: Span,
    /// The declarations in scope at the `switch`.
    live: Vec<u32>,
    cases: Vec<(i64, LabelId, Span)>,
    default: Option<(LabelId, Span)>,
}

struct NamedLabel {
    id: LabelId,
    /// Where it is defined, with the declarations in scope there.
    defined: Option<(Span, Vec<u32>)>,
    /// Each `goto` to it: its span and the declarations in scope there.
    gotos: Vec<(Span, Vec<u32>)>,
}

impl Jumps {
    fn new_label(&mut self) -> LabelId {
        self.next_label += 1;
        LabelId(self.next_label - 1)
    }

    /// How many declarations are live: a scope's mark, for [`Jumps::leave_scope`].
    pub(super) fn mark(&self) -> usize {
        self.live.len()
    }

    pub(super) fn leave_scope(&mut self, mark: usize) {
        self.live.truncate(mark);
    }

    /// A declaration with an initializer (or a constructor) comes into scope.
    pub(super) fn initialised(&mut self, name: &str, span: Span) {
        self.initialised.push((name.to_string(), span));
        self.live.push(self.initialised.len() as u32 - 1);
    }

    pub(super) fn in_switch(&self) -> bool {
        !self.switches.is_empty()
    }
}

impl Context {
    fn jumps(&mut self) -> &mut Jumps {
        &mut self.state().jumps
    }

    /// A declaration the target's scope holds and the source's does not: what a jump from
    /// `from` to `to` would skip.
    fn skipped_declaration(&self, from: &[u32], to: &[u32]) -> Option<(String, Span)> {
        let jumps = &self.func.as_ref()?.jumps;
        to.iter().find(|d| !from.contains(d)).map(|d| jumps.initialised[*d as usize].clone())
    }

    fn jump_past(&mut self, at: Span, what: &str, target: Span, skipped: (String, Span)) {
        let (name, decl) = skipped;
        self.error(Code::JumpPastInitialization, at, format!("{what} jumps past the initialization of `{name}`"))
            .primary("the jump")
            .label(decl, format!("`{name}` is initialised here"))
            .label(target, "into its scope here")
            .note("C++ forbids entering the scope of a variable past its initializer; put the declaration in a block `{ ... }` that ends before the label, or declare it before the jump")
            .emit();
    }

    /// `switch (cond) body`.
    pub(super) fn switch_stmt(&mut self, cond: &ast::Expr, body: &ast::Stmt, span: Span, out: &mut Vec<Stmt>) {
        let cond = self.expr(cond).map(|c| self.rvalue(c));
        let cond = match cond {
            Some(c) if c.ty.is_integer() => {
                let ty = self.promote(&c.ty);
                Some(self.cast(c, &ty))
            }
            Some(c) => {
                let message = format!("a `switch` condition must be an integer, not {}", self.show(&c.ty));
                self.error(Code::TypeMismatch, c.span, message).emit();
                None
            }
            None => None,
        };
        let ty = cond.as_ref().map_or(Type::INT, |c| c.ty.clone());
        let live = self.jumps().live.clone();
        self.jumps().switches.push(SwitchState { ty, span, live, cases: Vec::new(), default: None });
        let body = self.scoped(body);
        let state = self.jumps().switches.pop().expect("pushed above");
        if let Some(cond) = cond {
            let cases = state.cases.iter().map(|(v, id, _)| (*v, *id)).collect();
            out.push(Stmt::Switch { cond, body, cases, default: state.default.map(|(id, _)| id) });
        }
    }

    /// `case value: stmt` (or GNU's `case low ... high:`, refused).
    pub(super) fn case_stmt(&mut self, value: &ast::Expr, high: Option<&ast::Expr>, stmt: &ast::Stmt, span: Span, out: &mut Vec<Stmt>) {
        if !self.jumps().in_switch() {
            self.error(Code::MisplacedStatement, span, "`case` outside of a `switch`").emit();
            self.stmt(stmt, out);
            return;
        }
        let switch_span = self.jumps().switches.last().expect("checked").span;
        if let Some(high) = high {
            self.error(Code::CaseRange, span.to(high.span), "case ranges (`case low ... high:`) are a GNU extension cdpc does not accept")
                .primary("a range")
                .label(switch_span, "in this `switch`")
                .note("write one `case` label per value, or test the range with `if` before the `switch`")
                .emit();
            self.stmt(stmt, out);
            return;
        }
        let ty = self.jumps().switches.last().expect("checked").ty.clone();
        let folded = self.expr(value).and_then(|e| {
            let e = self.rvalue(e);
            match super::consteval::eval(&e, &self.target) {
                Some(super::consteval::Const::Int(v)) if e.ty.is_integer() => Some(v),
                _ => {
                    self.error(Code::CaseNotConstant, value.span, "a `case` label must be an integer constant expression")
                        .primary("not an integer constant")
                        .label(switch_span, "in this `switch`")
                        .note("use a literal, an enumerator, or a `const` integer initialised with a constant")
                        .emit();
                    None
                }
            }
        });
        if let Some(v) = folded {
            let bits = super::consteval::truncate_int(v, &ty, &self.target);
            let live = self.jumps().live.clone();
            let switch = self.jumps().switches.last().expect("checked");
            let previous = switch.cases.iter().find(|(b, _, _)| *b == bits).map(|(_, _, s)| *s);
            let from = switch.live.clone();
            match previous {
                Some(first) => {
                    self.error(Code::DuplicateCase, value.span, format!("duplicate `case` value {v}")).primary("this value").label(first, "has a `case` label here already").emit();
                }
                None => {
                    let id = self.jumps().new_label();
                    self.jumps().switches.last_mut().expect("checked").cases.push((bits, id, span));
                    out.push(Stmt::Label(id));
                    if let Some(skipped) = self.skipped_declaration(&from, &live) {
                        self.jump_past(switch_span, "this `switch`", span, skipped);
                    }
                }
            }
        }
        self.stmt(stmt, out);
    }

    /// `default: stmt`.
    pub(super) fn default_stmt(&mut self, stmt: &ast::Stmt, span: Span, out: &mut Vec<Stmt>) {
        if !self.jumps().in_switch() {
            self.error(Code::MisplacedStatement, span, "`default` outside of a `switch`").emit();
        } else {
            let switch = self.jumps().switches.last().expect("checked");
            let (switch_span, from, previous) = (switch.span, switch.live.clone(), switch.default.map(|(_, s)| s));
            match previous {
                Some(first) => {
                    self.error(Code::DuplicateCase, span, "a second `default` label in one `switch`").primary("this `default`").label(first, "the first `default` is here").emit();
                }
                None => {
                    let id = self.jumps().new_label();
                    self.jumps().switches.last_mut().expect("checked").default = Some((id, span));
                    out.push(Stmt::Label(id));
                    let live = self.jumps().live.clone();
                    if let Some(skipped) = self.skipped_declaration(&from, &live) {
                        self.jump_past(switch_span, "this `switch`", span, skipped);
                    }
                }
            }
        }
        self.stmt(stmt, out);
    }

    fn named_label(&mut self, name: &str) -> LabelId {
        if let Some(l) = self.jumps().labels.get(name) {
            return l.id;
        }
        let id = self.jumps().new_label();
        self.jumps().labels.insert(name.to_string(), NamedLabel { id, defined: None, gotos: Vec::new() });
        id
    }

    /// `name: stmt`.
    pub(super) fn label_stmt(&mut self, name: &ast::Ident, stmt: &ast::Stmt, out: &mut Vec<Stmt>) {
        let id = self.named_label(&name.name);
        let live = self.jumps().live.clone();
        let label = self.jumps().labels.get_mut(&name.name).expect("just made");
        match &label.defined {
            Some((first, _)) => {
                let first = *first;
                self.error(Code::Redefinition, name.span, format!("label `{}` is defined twice in this function", name.name)).primary("defined again here").label(first, "first defined here").emit();
            }
            None => {
                label.defined = Some((name.span, live.clone()));
                // Earlier `goto`s to it are checked now that its scope is known.
                let gotos = label.gotos.clone();
                out.push(Stmt::Label(id));
                for (at, from) in gotos {
                    if let Some(skipped) = self.skipped_declaration(&from, &live) {
                        self.jump_past(at, "this `goto`", name.span, skipped);
                    }
                }
            }
        }
        self.stmt(stmt, out);
    }

    /// `goto name;`
    pub(super) fn goto_stmt(&mut self, name: &ast::Ident, span: Span, out: &mut Vec<Stmt>) {
        let id = self.named_label(&name.name);
        let live = self.jumps().live.clone();
        let label = self.jumps().labels.get_mut(&name.name).expect("just made");
        match label.defined.clone() {
            Some((at, target)) => {
                if let Some(skipped) = self.skipped_declaration(&live, &target) {
                    self.jump_past(span, "this `goto`", at, skipped);
                }
            }
            None => label.gotos.push((span, live)),
        }
        out.push(Stmt::Goto(id));
    }

    /// At the end of a body: every label jumped to must be defined.
    pub(super) fn check_labels(&mut self) {
        let mut undefined: Vec<(String, Span)> = self.jumps().labels.iter().filter(|(_, l)| l.defined.is_none()).filter_map(|(name, l)| l.gotos.first().map(|(at, _)| (name.clone(), *at))).collect();
        undefined.sort_by_key(|(_, at)| at.start);
        for (name, at) in undefined {
            self.error(Code::UndefinedLabel, at, format!("`goto {name}` jumps to a label that is not defined"))
                .primary("no label of this name in the function")
                .note(format!("define it in this function as `{name}: statement`"))
                .emit();
        }
    }
}
