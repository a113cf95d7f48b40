//! `*this` for a call by a bare name inside a member function.

use super::expr::make;
use super::Context;
use crate::diag::Span;
use crate::hir::{self, ExprKind};

impl Context {
    /// `*this` inside a member function, as the object of a call by a bare name.
    pub(super) fn implicit_this_object(&self) -> Option<hir::Expr> {
        let (this, _) = self.func.as_ref()?.this?;
        let this_ty = self.func.as_ref()?.locals[this.0 as usize].ty.clone();
        let pointee = this_ty.pointee()?.clone();
        let local = make(ExprKind::Local(this), this_ty, Span::default());
        Some(make(ExprKind::Deref(Box::new(local)), pointee, Span::default()))
    }
}
