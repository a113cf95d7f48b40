//! `thread_block_tile<N>`: `tiled_partition<N>(block)`, `this_thread()` and the tile's member
//! functions, as `cooperative_groups.h` (CUDA 13) defines them for tiles of one warp or less
//! (`__static_size_thread_block_tile_base<N>` and its parents):
//!
//! - `tiled_partition<N>(block)` returns a `thread_block_tile<N, thread_block>`, an empty class
//!   whose methods are all static; it converts to `thread_block_tile<N, void>`, which stores
//!   the tile's mask, size and meta-group rank and size (`tg_data`, as a coalesced group does).
//! - `thread_rank()` is `details::cta::thread_rank() & (N - 1)`; `size()`/`num_threads()` is N.
//! - The tile's lanes (`build_mask()`) are all 32 for N = 32, else `(2^N - 1) << (laneid & ~(N - 1))`.
//! - `sync()` is `__syncwarp(mask)`; `shfl`, `shfl_up`, `shfl_down`, `shfl_xor` are the
//!   `__shfl*_sync(mask, v, x, N)` intrinsics with the tile's size as their width.
//! - `ballot(p)` is `__ballot_sync(mask, p) >> (laneid & ~(N - 1))`: the tile's bits, from bit
//!   0; `any(p)`/`all(p)` compare the ballot with 0 and with the mask.
//! - `meta_group_rank()` is `cta::thread_rank() / N` and `meta_group_size()` is
//!   `(cta::size() + N - 1) / N` for a tile of a block; the stored fields for `<N, void>`.
//! - `this_thread()` is the `thread_block_tile<1, void>` of the calling thread, of rank 0 of 1.

use super::{Group, Ir, COALESCED_GROUP_ID, META};
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::hir::{self, BinaryOp, ShuffleKind, WarpOp};
use crate::sema::Context;
use crate::types::Type;

impl Context {
    /// `tiled_partition<N>(parent)`; `short` is the name after the namespace.
    pub(super) fn tiled_partition(&mut self, name: &ast::Ident, short: &str, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let written = short.strip_prefix("tiled_partition<").and_then(|a| a.strip_suffix('>')).unwrap_or_default();
        if written.contains(',') {
            self.error(Code::CoopGroupsMisuse, name.span, "`tiled_partition` takes one template argument, the tile's size")
                .note("write `cg::tiled_partition<32>(block)`")
                .emit();
            return None;
        }
        let size = self.tile_size(written, name.span);
        self.expect_args(name, args, 1)?;
        let parent = self.expr(&args[0]);
        let (size, parent) = (size?, parent?);
        match self.group_of(&parent.ty) {
            Some(Group::Block) => {
                let ty = self.group_type(Group::Tile { size, of_block: true });
                let value = Ir::new(span).make_struct(ty, vec![crate::sema::expr::int_const(0, Type::Int(crate::types::IntKind::UChar), span)]);
                Some(super::ir::then(parent, value))
            }
            Some(Group::Tile { .. }) => {
                self.error(Code::CoopGroupsUnsupported, args[0].span, "a tile of a tile is not supported yet")
                    .primary("this is a tile")
                    .note("partition the block: `cg::tiled_partition<N>(block)` with the smaller size")
                    .emit();
                None
            }
            _ => {
                let found = self.show_group(&parent.ty);
                self.error(Code::CoopGroupsMisuse, args[0].span, format!("`tiled_partition<{size}>` partitions a `thread_block` or a `thread_block_tile`, not {found}"))
                    .primary("this is not a block or a tile")
                    .emit();
                None
            }
        }
    }

    /// `this_thread()`: the `thread_block_tile<1, void>` of the calling thread.
    pub(super) fn this_thread(&mut self, span: Span) -> hir::Expr {
        let ty = self.group_type(Group::Tile { size: 1, of_block: false });
        let ir = Ir::new(span);
        // Its parent is `thread_block_tile<1, thread_block_tile<1, thread_block>>`: rank 0 of 1.
        let info = ir.uint(1 | (COALESCED_GROUP_ID << 1) | (1 << 8));
        ir.make_struct(ty, vec![info, ir.uint(1), build_mask(ir, 1), ir.uint(0)])
    }

    /// The `thread_block_tile<size, void>` a tile of a block converts to (its constructor
    /// `__single_warp_thread_block_tile(meta_group_rank, meta_group_size)`).
    pub(super) fn tile_void_value(&self, size: u32, ty: Type, span: Span) -> hir::Expr {
        let ir = Ir::new(span);
        let info = ir.uint(1 | (COALESCED_GROUP_ID << 1) | (size << 8));
        let (rank, count) = (meta_rank_of_block(ir, size), meta_size_of_block(ir, size));
        let meta = ir.op(BinaryOp::BitOr, ir.op(BinaryOp::BitAnd, count, ir.uint(0xffff)), ir.op(BinaryOp::Shl, rank, ir.uint(16)));
        ir.make_struct(ty, vec![info, meta, build_mask(ir, size), ir.uint(0)])
    }

    pub(super) fn tile_method(&mut self, object: hir::Expr, size: u32, of_block: bool, method: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let ir = Ir::new(span);
        let arity = match method.name.as_str() {
            "thread_rank" | "size" | "num_threads" | "meta_group_rank" | "meta_group_size" | "sync" => 0,
            "ballot" | "any" | "all" => 1,
            "shfl" | "shfl_up" | "shfl_down" | "shfl_xor" => 2,
            "match_any" | "match_all" | "get_type" => {
                self.error(Code::CoopGroupsUnsupported, method.span, format!("`thread_block_tile::{}` is not supported yet", method.name))
                    .note("use `__match_any_sync`/`__match_all_sync` with the tile's lanes")
                    .emit();
                return None;
            }
            other => {
                let written = Group::Tile { size, of_block }.written();
                self.error(Code::CoopGroupsMisuse, method.span, format!("`{written}` has no member function `{other}` in cdpc"))
                    .note("its members here are: thread_rank, size, num_threads, meta_group_rank, meta_group_size, sync, ballot, any, all, shfl, shfl_up, shfl_down, shfl_xor")
                    .emit();
                return None;
            }
        };
        self.expect_args(method, args, arity)?;
        let mut setup = Vec::new();
        let g = self.reusable(object, &mut setup);
        let mask = build_mask(ir, size);
        let value = match method.name.as_str() {
            "thread_rank" => ir.op(BinaryOp::BitAnd, ir.cta_rank(), ir.uint(size - 1)),
            "size" | "num_threads" => ir.uint(size),
            "meta_group_rank" if of_block => meta_rank_of_block(ir, size),
            "meta_group_size" if of_block => meta_size_of_block(ir, size),
            "meta_group_rank" => ir.op(BinaryOp::Shr, ir.field(&g, META), ir.uint(16)),
            "meta_group_size" => ir.op(BinaryOp::BitAnd, ir.field(&g, META), ir.uint(0xffff)),
            "sync" => ir.warp(WarpOp::SyncWarp, vec![mask]),
            "ballot" | "any" | "all" => {
                let pred = self.group_arg(method, &args[0], &Type::INT)?;
                let ballot = ir.ballot(mask.clone(), pred);
                match method.name.as_str() {
                    "any" => ir.op(BinaryOp::Ne, ballot, ir.uint(0)),
                    "all" => ir.op(BinaryOp::Eq, ballot, mask),
                    _ => ir.op(BinaryOp::Shr, ballot, tile_base(ir, size)),
                }
            }
            _ => {
                // shfl(v, int srcRank); shfl_up, shfl_down(v, unsigned delta); shfl_xor(v, unsigned laneMask).
                let (kind, operand) = match method.name.as_str() {
                    "shfl" => (ShuffleKind::Idx, Type::INT),
                    "shfl_up" => (ShuffleKind::Up, Type::UINT),
                    "shfl_down" => (ShuffleKind::Down, Type::UINT),
                    _ => (ShuffleKind::Xor, Type::UINT),
                };
                let v = self.shuffled_value(method, &args[0], &mut setup)?;
                let x = self.group_arg_once(method, &args[1], &operand, &mut setup)?;
                self.group_shuffle(ir, kind, mask, &v, x, size as i32, &mut setup)
            }
        };
        // A tile's methods read no data but the meta group's: the object is evaluated once.
        let value = super::ir::then(g, value);
        Some(ir.sequence(setup, value))
    }
}

/// `build_mask()`: every lane for a warp-sized tile, else the tile's `size` lanes.
fn build_mask(ir: Ir, size: u32) -> hir::Expr {
    if size == 32 {
        return ir.uint(u32::MAX);
    }
    ir.op(BinaryOp::Shl, ir.uint((1u32 << size) - 1), tile_base(ir, size))
}

/// The first lane of the thread's tile: `laneid & ~(size - 1)`.
fn tile_base(ir: Ir, size: u32) -> hir::Expr {
    ir.op(BinaryOp::BitAnd, ir.lane_id(), ir.uint(!(size - 1)))
}

fn meta_rank_of_block(ir: Ir, size: u32) -> hir::Expr {
    ir.op(BinaryOp::Div, ir.cta_rank(), ir.uint(size))
}

fn meta_size_of_block(ir: Ir, size: u32) -> hir::Expr {
    ir.op(BinaryOp::Div, ir.op(BinaryOp::Add, ir.cta_size(), ir.uint(size - 1)), ir.uint(size))
}
