//! `coalesced_group`: `coalesced_threads()` and the group's member functions, as
//! `cooperative_groups.h` (CUDA 13) defines them. The group keeps its lane mask and size in
//! nvcc's `tg_data` bits; what follows reads them as the header's methods do:
//!
//! - `coalesced_threads()` is `coalesced_group(__activemask())`: the mask, its `__popc` as the
//!   size, meta-group rank 0 of 1, not tiled.
//! - `thread_rank()` is `__popc(mask & %lanemask_lt)`; `size()`/`num_threads()` the stored size.
//! - `sync()` is `__syncwarp(mask)`.
//! - `ballot(p)` is `__ballot_sync(0xFFFFFFFF, p)` when the group has 32 threads, else the
//!   ballot over the mask packed to the group's ranks (`_packLanes`: the n-th lane of the mask
//!   gives bit n); `any(p)`/`all(p)` compare the unpacked ballot with 0 and with the mask.
//! - `shfl(v, rank)` reads from the lane of that rank: `__ffs(mask) - 1` for rank 0, the rank
//!   itself when the group is the whole warp, else `__fns(mask, 0, rank + 1)` (the lane of the
//!   (rank+1)-th set bit); then `__shfl_sync(mask, v, lane, 32)`.
//! - `shfl_down(v, d)`/`shfl_up(v, d)` are `__shfl_down_sync`/`__shfl_up_sync` over the whole
//!   warp when the group is the whole warp, else `__shfl_sync` from `__fns(mask, laneid, d + 1)`
//!   (`-(d + 1)` for up), or from the thread's own lane when there is no such lane.
//! - `meta_group_rank()`/`meta_group_size()` are the stored fields.

use super::{Group, Ir, COALESCED_GROUP_ID, INFO, MASK, META};
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::hir::{self, BinaryOp, BitOp, Builtin, Intrinsic, ShuffleKind, WarpOp};
use crate::sema::Context;
use crate::types::Type;

impl Context {
    /// `coalesced_threads()`: `coalesced_group(__activemask())`.
    pub(super) fn coalesced_threads(&mut self, span: Span) -> hir::Expr {
        let ir = Ir::new(span);
        let ty = self.group_type(Group::Coalesced);
        let mut setup = Vec::new();
        let mask = self.group_temp(ir.warp(WarpOp::ActiveMask, vec![]), &mut setup);
        // is_tiled 0, type coalesced_group_id, size __popc(mask); metaGroupSize 1, metaGroupRank 0.
        let info = ir.op(BinaryOp::BitOr, ir.uint(COALESCED_GROUP_ID << 1), ir.op(BinaryOp::Shl, ir.popc(mask.clone()), ir.uint(8)));
        let value = ir.make_struct(ty, vec![info, ir.uint(1), mask, ir.uint(0)]);
        ir.sequence(setup, value)
    }

    pub(super) fn coalesced_method(&mut self, object: hir::Expr, method: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let ir = Ir::new(span);
        let arity = match method.name.as_str() {
            "thread_rank" | "size" | "num_threads" | "meta_group_rank" | "meta_group_size" | "sync" => 0,
            "ballot" | "any" | "all" => 1,
            "shfl" | "shfl_up" | "shfl_down" => 2,
            "match_any" | "match_all" | "get_type" => {
                self.error(Code::CoopGroupsUnsupported, method.span, format!("`coalesced_group::{}` is not supported yet", method.name))
                    .note("use `__match_any_sync`/`__match_all_sync` with the group's lanes")
                    .emit();
                return None;
            }
            other => {
                self.error(Code::CoopGroupsMisuse, method.span, format!("`coalesced_group` has no member function `{other}` in cdpc"))
                    .note("its members here are: thread_rank, size, num_threads, meta_group_rank, meta_group_size, sync, ballot, any, all, shfl, shfl_up, shfl_down")
                    .emit();
                return None;
            }
        };
        self.expect_args(method, args, arity)?;
        let mut setup = Vec::new();
        let g = self.reusable(object, &mut setup);
        let mask = ir.field(&g, MASK);
        // `_data.coalesced.size`: the 24 bits above is_tiled and type.
        let size = ir.op(BinaryOp::Shr, ir.field(&g, INFO), ir.uint(8));
        let whole_warp = ir.op(BinaryOp::Eq, size.clone(), ir.uint(32));
        let value = match method.name.as_str() {
            "thread_rank" => ir.popc(ir.op(BinaryOp::BitAnd, mask, ir.warp(WarpOp::LaneMaskLt, vec![]))),
            "size" | "num_threads" => size,
            "meta_group_rank" => ir.op(BinaryOp::Shr, ir.field(&g, META), ir.uint(16)),
            "meta_group_size" => ir.op(BinaryOp::BitAnd, ir.field(&g, META), ir.uint(0xffff)),
            "sync" => ir.warp(WarpOp::SyncWarp, vec![mask]),
            "ballot" | "any" | "all" => {
                let pred = self.group_arg_once(method, &args[0], &Type::INT, &mut setup)?;
                let ballot = ir.ballot(mask.clone(), pred.clone());
                match method.name.as_str() {
                    "any" => ir.op(BinaryOp::Ne, ballot, ir.uint(0)),
                    "all" => ir.op(BinaryOp::Eq, ballot, mask),
                    _ => {
                        let packed = ir.warp(WarpOp::PackLanes, vec![mask, ballot]);
                        ir.cond(whole_warp, ir.ballot(ir.uint(u32::MAX), pred), packed)
                    }
                }
            }
            "shfl" => {
                let v = self.shuffled_value(method, &args[0], &mut setup)?;
                let rank = self.group_arg_once(method, &args[1], &Type::INT, &mut setup)?;
                let ffs = ir.builtin(Builtin::Intrinsic(Intrinsic::Bits { op: BitOp::FindFirstSet, wide: false }), vec![mask.clone()], Type::INT);
                let first = ir.cast(ir.op(BinaryOp::Sub, ffs, ir.int(1)), &Type::UINT);
                let nth = self.fns(ir, mask.clone(), ir.uint(0), ir.op(BinaryOp::Add, rank.clone(), ir.int(1)));
                let lane = ir.cond(ir.op(BinaryOp::Eq, rank.clone(), ir.int(0)), first, ir.cond(whole_warp, ir.cast(rank, &Type::UINT), nth));
                self.group_shuffle(ir, ShuffleKind::Idx, mask, &v, lane, 32, &mut setup)
            }
            _ => {
                // shfl_down(v, unsigned delta), shfl_up(v, int delta).
                let down = method.name == "shfl_down";
                let v = self.shuffled_value(method, &args[0], &mut setup)?;
                let delta_ty = if down { Type::UINT } else { Type::INT };
                let delta = self.group_arg_once(method, &args[1], &delta_ty, &mut setup)?;
                let kind = if down { ShuffleKind::Down } else { ShuffleKind::Up };
                let whole = self.group_shuffle(ir, kind, ir.uint(u32::MAX), &v, delta.clone(), 32, &mut setup);
                let step = ir.cast(ir.op(BinaryOp::Add, delta, ir.cast(ir.int(1), &delta_ty)), &Type::INT);
                let offset = if down { step } else { make_neg(ir, step) };
                let mut lanes = Vec::new();
                let found = self.fns(ir, mask.clone(), ir.lane_id(), offset);
                let found = self.reusable(found, &mut lanes);
                let lane = ir.cond(ir.op(BinaryOp::Ge, found.clone(), ir.uint(32)), ir.lane_id(), found);
                let inside = self.group_shuffle(ir, ShuffleKind::Idx, mask, &v, lane, 32, &mut lanes);
                ir.cond(whole_warp, whole, ir.sequence(lanes, inside))
            }
        };
        Some(ir.sequence(setup, value))
    }

    /// `__fns(mask, base, offset)`.
    pub(super) fn fns(&self, ir: Ir, mask: hir::Expr, base: hir::Expr, offset: hir::Expr) -> hir::Expr {
        ir.builtin(Builtin::Intrinsic(Intrinsic::Fns), vec![mask, base, ir.cast(offset, &Type::INT)], Type::UINT)
    }
}

fn make_neg(ir: Ir, e: hir::Expr) -> hir::Expr {
    let ty = e.ty.clone();
    crate::sema::expr::make(hir::ExprKind::Unary { op: hir::UnaryOp::Neg, operand: Box::new(e) }, ty, ir.span)
}
