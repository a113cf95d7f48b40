//! Host code as device code sees it.
//!
//! The front end leaves host declarations to the host compiler (`front::split`); when device
//! code names one, [`Context::skipped_use`] says why it cannot use it (`E0900`, `E0901`)
//! instead of a bare "cannot find".
//!
//! `__host__ __device__` functions follow clang's rule: they are compiled for the device only
//! when device code calls them. Their bodies are checked with their diagnostics held back;
//! [`finish_host_device`] keeps the diagnostics and the body of those that kernels and
//! `__device__` functions reach, and drops both for the others, which then stay host code
//! (a host-only helper may do what device code cannot, such as launching from a `__host__`
//! path of a `__host__ __device__` function).

use super::{Context, FunctionState};
use crate::diag::{Code, Diagnostic, Diagnostics, Span};
use crate::front::ast::{Skipped, SkippedKind};
use crate::hir::{FuncId, FunctionKind};
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
    /// If `name` was declared by a skipped declaration, reports the use at `span` and returns
    /// true; otherwise reports nothing.
    pub(super) fn skipped_use(&mut self, name: &str, span: Span) -> bool {
        let Some(skipped) = self.skipped.get(name) else { return false };
        let declared = skipped.names.iter().find(|n| n.name == name).map_or(skipped.span, |n| n.span);
        let diagnostic = match (skipped.kind, &skipped.error) {
            (SkippedKind::Unparsed, Some(error)) => Diagnostic::new(
                Code::NotCompiledForDevice,
                span,
                format!("`{name}` cannot be compiled for the device"),
            )
            .with_primary_message("used in device code here")
            .with_label(error.primary_span(), error.message.clone())
            .with_note(format!(
                "cdpc compiles a declaration that device code may use only when it parses as device code; \
                 this one does not ({}), so it was left to the host compiler",
                error.code
            )),
            (SkippedKind::Function, _) => Diagnostic::new(
                Code::HostCodeInDevice,
                span,
                format!("`{name}` is a host function; device code cannot call it"),
            )
            .with_primary_message("called from device code here")
            .with_label(declared, "declared without `__device__`")
            .with_note("mark it `__host__ __device__` to compile it for both sides, or `__device__` for the device only"),
            (SkippedKind::Variable, _) => Diagnostic::new(
                Code::HostCodeInDevice,
                span,
                format!("`{name}` is a host variable; device code cannot use it"),
            )
            .with_primary_message("used in device code here")
            .with_label(declared, "declared without `__device__` or `__constant__`")
            .with_note("declare it `__device__` or `__constant__`, or pass its value to the kernel as an argument"),
            _ => Diagnostic::new(
                Code::HostCodeInDevice,
                span,
                format!("`{name}` is declared by host code, which cdpc leaves to the host compiler"),
            )
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
    let mut work: Vec<FuncId> = cx
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind != FunctionKind::HostDevice)
        .map(|(i, _)| FuncId(i as u32))
        .collect();
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
