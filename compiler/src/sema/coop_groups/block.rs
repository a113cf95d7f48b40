//! `thread_block`: `this_thread_block()` and the block's member functions. The class keeps no
//! data that cdpc reads: every method is static in `cooperative_groups.h` and lowered to
//! `details::cta`'s special registers, and `sync` to `__barrier_sync(0)` (`barrier.sync 0`).

use super::{Group, Ir};
use crate::diag::Code;
use crate::front::ast;
use crate::hir::{self, Axis, Builtin, ExprKind, SpecialReg};
use crate::sema::expr::make;
use crate::sema::Context;
use crate::diag::Span;
use crate::types::Type;

impl Context {
    /// `this_thread_block()`: a block value. Its contents are never read; a fresh local is it.
    pub(super) fn block_value(&mut self, span: Span) -> hir::Expr {
        let ty = self.group_type(Group::Block);
        let tmp = self.new_local("cg.this_thread_block", ty.clone(), span);
        make(ExprKind::Local(tmp), ty, span)
    }

    pub(super) fn block_method(&mut self, object: hir::Expr, method: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let ir = Ir::new(span);
        let dim3 = |r: fn(Axis) -> SpecialReg| {
            let (x, y, z) = (ir.reg(r(Axis::X)), ir.reg(r(Axis::Y)), ir.reg(r(Axis::Z)));
            make(ExprKind::Dim3 { x: Box::new(x), y: Box::new(y), z: Box::new(z) }, Type::Dim3, span)
        };
        let e = match method.name.as_str() {
            // `details::cta::sync()`: `__barrier_sync(0)`.
            "sync" => ir.builtin(Builtin::BarrierSync, vec![], Type::Void),
            "thread_rank" => ir.cta_rank(),
            "size" | "num_threads" => ir.cta_size(),
            "thread_index" => dim3(SpecialReg::ThreadIdx),
            "group_index" => dim3(SpecialReg::BlockIdx),
            "dim_threads" | "group_dim" => dim3(SpecialReg::BlockDim),
            "barrier_arrive" | "barrier_wait" | "get_type" => {
                self.error(Code::CoopGroupsUnsupported, method.span, format!("`thread_block::{}` is not supported yet", method.name))
                    .note("use `sync()`")
                    .emit();
                return None;
            }
            other => {
                self.error(Code::CoopGroupsMisuse, method.span, format!("`thread_block` has no member function `{other}` in cdpc"))
                    .note("its members here are: sync, thread_rank, size, num_threads, thread_index, group_index, dim_threads, group_dim")
                    .emit();
                return None;
            }
        };
        self.expect_args(method, args, 0)?;
        // Static member functions: the object is evaluated for its effects only.
        Some(super::ir::then(object, e))
    }
}
