//! Which memory a pointer may point into, for the rule that a child grid can never see its
//! parent's local or shared memory.
//!
//! The analysis is flow-insensitive and errs towards silence: a pointer variable remembers every
//! local or shared address ever stored into it in the function, and a pointer loaded from
//! memory or received as a parameter is assumed global. So it reports `&x`, local arrays,
//! `__shared__` arrays and pointers derived from them, without false alarms on global data.

use crate::diag::Span;
use crate::front::cdp::hir::{self, ExprKind, GlobalSpace, LocalId};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Space {
    Local,
    Shared,
}

impl Space {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Space::Local => "local memory",
            Space::Shared => "shared memory",
        }
    }
}

/// Where a pointer came from: the space and the span of the variable or expression that gave
/// it, so the diagnostic can point at both.
#[derive(Clone, Copy, Debug)]
pub(super) struct Origin {
    pub space: Space,
    pub span: Span,
}

#[derive(Debug, Default)]
pub(super) struct Tracker {
    variables: HashMap<LocalId, Origin>,
}

impl Tracker {
    /// Records that `value` was stored into `place` (a declaration or an assignment).
    pub(super) fn record_store(&mut self, place: &hir::Expr, value: &hir::Expr, globals: &[hir::Global]) {
        if let ExprKind::Local(id) = place.kind {
            if let Some(origin) = self.origin(value, globals) {
                self.variables.entry(id).or_insert(origin);
            }
        }
    }

    /// The non-global memory `e` may point into, if any.
    pub(super) fn origin(&self, e: &hir::Expr, globals: &[hir::Global]) -> Option<Origin> {
        match &e.kind {
            ExprKind::AddrOf(place) | ExprKind::Decay(place) => self.place_origin(place, globals),
            ExprKind::Local(id) if e.ty.is_pointer() => self.variables.get(id).copied(),
            ExprKind::Cast(inner) => self.origin(inner, globals),
            ExprKind::Binary { op: hir::BinaryOp::PtrAdd, lhs, .. } => self.origin(lhs, globals),
            ExprKind::Conditional { then, otherwise, .. } => self.origin(then, globals).or_else(|| self.origin(otherwise, globals)),
            ExprKind::Comma { rhs, .. } => self.origin(rhs, globals),
            ExprKind::Assign { value, .. } => self.origin(value, globals),
            ExprKind::CompoundAssign { place, .. } | ExprKind::IncDec { place, .. } => self.origin(place, globals),
            _ => None,
        }
    }

    /// The memory a place lives in, following members and array elements to their root.
    fn place_origin(&self, place: &hir::Expr, globals: &[hir::Global]) -> Option<Origin> {
        match &place.kind {
            ExprKind::Local(_) => Some(Origin { space: Space::Local, span: place.span }),
            ExprKind::Global(id) => match globals[id.0 as usize].space {
                GlobalSpace::Shared | GlobalSpace::ExternShared => Some(Origin { space: Space::Shared, span: place.span }),
                _ => None,
            },
            ExprKind::Member { base, .. } => self.place_origin(base, globals),
            // `a[i]` is `*(a + i)`: the element lives where the pointer points.
            ExprKind::Deref(pointer) => self.origin(pointer, globals),
            _ => None,
        }
    }
}
