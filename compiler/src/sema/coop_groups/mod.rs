//! Cooperative groups as real programs use them, built in: `thread_block`, `coalesced_group`
//! and `thread_block_tile<N>` (N a power of two up to 32), made by `this_thread_block()`,
//! `coalesced_threads()`, `tiled_partition<N>(block)` and `this_thread()`; their member
//! functions; and the free functions `sync(g)`, `thread_rank(g)` and `group_size(g)`.
//!
//! The front end joins `cg::NAME` into one name `cooperative_groups::NAME`, with simple template
//! arguments kept (`cooperative_groups::thread_block_tile<32>`, `crate::front::coop_groups`);
//! this module gives those names their meaning. Each group is a built-in struct with nvcc's
//! class name, size and alignment, so that a function taking one mangles as nvcc's does and
//! passes it as nvcc does (`thread_block`: `cooperative_groups::__v1::thread_block`, 24 bytes;
//! `coalesced_group`, 16 bytes; `thread_block_tile<32u, void>`, 16 bytes;
//! `thread_block_tile<32u, cooperative_groups::__v1::thread_block>`, what `tiled_partition`
//! returns, 1 byte and empty). Where nvcc's class keeps data (the `coalesced_group`'s lane
//! mask, size and place among its siblings, a `thread_block_tile<N, void>`'s), the struct holds
//! the same bits (`thread_group::tg_data`), so a group passed to a function compiled by nvcc
//! means the same there.
//!
//! Every member function is lowered to what nvcc's inline header code computes, through the
//! HIR's warp built-ins: one module per kind of group (`block.rs`, `coalesced.rs`, `tile.rs`),
//! each citing the header's definitions it follows, on the expression builder of `ir.rs` and
//! the argument checks, temporaries and shuffles of `args.rs`. A method is found on any expression of a
//! group type (a variable, a parameter, a reference, a field, `p->`), from
//! `Context::method_call`, before C++ members.
//!
//! The rest of the namespace (`grid_group`, `cluster_group`, `thread_group`, multi-warp tiles,
//! the dynamic `tiled_partition(g, n)`, `reduce`, `memcpy_async`, ...) is refused with `E0950`;
//! a wrong use of a supported group (an unknown member, a wrong argument, a tile size the header
//! rejects) is `E0951`.

mod args;
mod block;
mod coalesced;
mod ir;
mod tile;

use ir::{then, Ir};

use super::Context;
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::front::coop_groups::NAMESPACE;
use crate::hir;
use crate::types::{IntKind, StructId, Type};

/// nvcc's names for the classes (its headers open `namespace cooperative_groups { namespace __v1`).
const THREAD_BLOCK: &str = "cooperative_groups::__v1::thread_block";
const COALESCED_GROUP: &str = "cooperative_groups::__v1::coalesced_group";
const THREAD_BLOCK_TILE: &str = "cooperative_groups::__v1::thread_block_tile";

/// What the E0950 notes say is there.
const SUPPORTED: &str = "cdpc's cooperative groups are `thread_block`, `coalesced_group` and `thread_block_tile<N>` (N = 1, 2, 4, 8, 16 or 32), from `this_thread_block()`, `coalesced_threads()`, `tiled_partition<N>(block)` and `this_thread()`, with `sync`, `thread_rank` and `group_size`; use `__syncthreads()` and the warp intrinsics (`__ballot_sync`, `__shfl_sync`, ...) for the rest";

/// A group type, as its struct's name tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    Block,
    Coalesced,
    /// `thread_block_tile<size, thread_block>` (`of_block`: what `tiled_partition<size>(block)`
    /// returns, with no data) or `thread_block_tile<size, void>` (with the `tg_data` bits).
    Tile { size: u32, of_block: bool },
}

impl Group {
    fn class_name(self) -> String {
        match self {
            Group::Block => THREAD_BLOCK.into(),
            Group::Coalesced => COALESCED_GROUP.into(),
            Group::Tile { size, of_block } => format!("{THREAD_BLOCK_TILE}<{size}u, {}>", if of_block { THREAD_BLOCK } else { "void" }),
        }
    }

    fn of_class(name: &str) -> Option<Group> {
        match name {
            THREAD_BLOCK => return Some(Group::Block),
            COALESCED_GROUP => return Some(Group::Coalesced),
            _ => {}
        }
        let args = name.strip_prefix(THREAD_BLOCK_TILE)?.strip_prefix('<')?.strip_suffix('>')?;
        let (size, parent) = args.split_once(", ")?;
        let size = size.strip_suffix('u')?.parse().ok()?;
        match parent {
            "void" => Some(Group::Tile { size, of_block: false }),
            THREAD_BLOCK => Some(Group::Tile { size, of_block: true }),
            _ => None,
        }
    }

    /// The group's name in messages, as programs write it.
    fn written(self) -> String {
        match self {
            Group::Block => "thread_block".into(),
            Group::Coalesced => "coalesced_group".into(),
            Group::Tile { size, of_block: false } => format!("thread_block_tile<{size}>"),
            Group::Tile { size, of_block: true } => format!("thread_block_tile<{size}, thread_block>"),
        }
    }
}

/// The fields of the 16-byte groups, in the order of nvcc's `thread_group::tg_data`: the word
/// of `is_tiled:1, type:7, size:24`, the word of `metaGroupSize:16, metaGroupRank:16`, the lane
/// mask, and a reserved word.
const INFO: u32 = 0;
const META: u32 = 1;
const MASK: u32 = 2;

/// `details::coalesced_group_id`, the `type` bits of a coalesced group and of a tile.
const COALESCED_GROUP_ID: u32 = 1;

impl Context {
    /// The type of a `cooperative_groups::NAME` written as a type.
    pub(super) fn coop_group_type(&mut self, name: &ast::Ident) -> Option<Type> {
        let short = name.name.strip_prefix(NAMESPACE).and_then(|s| s.strip_prefix("::")).unwrap_or(&name.name);
        let group = match short {
            "thread_block" => Group::Block,
            "coalesced_group" => Group::Coalesced,
            "thread_block_tile" => {
                self.error(Code::CoopGroupsMisuse, name.span, "`thread_block_tile` needs its size: `thread_block_tile<32>`")
                    .primary("a class template")
                    .note("its sizes are 1, 2, 4, 8, 16 and 32")
                    .emit();
                return None;
            }
            _ if short.starts_with("thread_block_tile<") => self.tile_type_of(short, name.span)?,
            _ => {
                self.error(Code::CoopGroupsUnsupported, name.span, format!("`cooperative_groups::{short}` is not supported yet"))
                    .primary("used here")
                    .note(SUPPORTED)
                    .emit();
                return None;
            }
        };
        Some(self.group_type(group))
    }

    /// `thread_block_tile<N>` or `thread_block_tile<N, P>` as written (`P` with the namespace
    /// spelled out by the front end).
    fn tile_type_of(&mut self, written: &str, span: Span) -> Option<Group> {
        let args = written.strip_prefix("thread_block_tile<").and_then(|a| a.strip_suffix('>')).unwrap_or_default();
        let (size, parent) = match args.split_once(", ") {
            Some((size, parent)) => (size, Some(parent)),
            None => (args, None),
        };
        let size = self.tile_size(size, span)?;
        let of_block = match parent {
            None | Some("void") => false,
            Some(p) if p == format!("{NAMESPACE}::thread_block") => true,
            Some(p) if !crate::front::coop_groups::is_qualified(p) => {
                self.error(Code::CoopGroupsMisuse, span, format!("`{p}` is not a group, and cannot be a tile's parent"))
                    .primary("a tile of this parent")
                    .note("write `thread_block_tile<N>` or `thread_block_tile<N, cg::thread_block>`")
                    .emit();
                return None;
            }
            Some(p) => {
                self.error(Code::CoopGroupsUnsupported, span, format!("`thread_block_tile<{size}, {p}>` is not supported yet"))
                    .primary("a tile of this parent")
                    .note("cdpc's tiles are `thread_block_tile<N>` and `thread_block_tile<N, cg::thread_block>`, partitions of a block")
                    .emit();
                return None;
            }
        };
        Some(Group::Tile { size, of_block })
    }

    /// A tile's size as written: an integer, or the name of a constant (a template parameter,
    /// a `const` variable); checked as the header's `static_assert` checks it.
    fn tile_size(&mut self, text: &str, span: Span) -> Option<u32> {
        let value = match text.parse::<u64>() {
            Ok(v) => v,
            Err(_) => {
                let e = ast::Expr { kind: ast::ExprKind::Ident(ast::Ident { name: text.to_string(), span }), span };
                let value = self.expr(&e)?;
                match super::consteval::eval(&value, &self.target) {
                    Some(super::consteval::Const::Int(v)) if (0..=u32::MAX as i128).contains(&v) => v as u64,
                    _ => {
                        self.error(Code::CoopGroupsMisuse, span, format!("the size of a tile must be a constant, and `{text}` is not"))
                            .note("write `thread_block_tile<32>`, or name a template parameter or a constant")
                            .emit();
                        return None;
                    }
                }
            }
        };
        let power_of_two = value.is_power_of_two();
        if power_of_two && value <= 32 {
            return Some(value as u32);
        }
        if power_of_two && (64..=512).contains(&value) {
            self.error(Code::CoopGroupsUnsupported, span, format!("tiles of {value} threads are not supported yet"))
                .primary("a tile of several warps")
                .note("cdpc's tiles are at most one warp: 1, 2, 4, 8, 16 or 32 threads")
                .emit();
        } else {
            self.error(Code::CoopGroupsMisuse, span, format!("a tile cannot have {value} threads"))
                .primary("not a size of `thread_block_tile`")
                .note("cooperative_groups.h's tiles have 1, 2, 4, 8, 16 or 32 threads (or 64 to 512 for several warps)")
                .emit();
        }
        None
    }

    /// The built-in struct of `group`, made on first use.
    fn group_type(&mut self, group: Group) -> Type {
        let name = group.class_name();
        if let Some(id) = self.struct_names.get(&name) {
            return Type::Struct(*id);
        }
        let field = |name: &str, ty: Type, offset: u64| hir::Field { name: name.into(), ty, offset, volatile: false, bits: None };
        let (fields, size, align) = match group {
            // nvcc's: the 16 bytes of `thread_group` data, then the scratch pointer; never read.
            Group::Block => {
                let data = Type::Array { elem: Box::new(Type::ULONGLONG), len: 2 };
                (vec![field("__cdpc_group_data", data, 0), field("__cdpc_tile_memory", Type::pointer_to(Type::Void), 16)], 24, 8)
            }
            Group::Coalesced | Group::Tile { of_block: false, .. } => {
                let words = ["__cdpc_info", "__cdpc_meta", "__cdpc_mask", "__cdpc_reserved"];
                (words.iter().enumerate().map(|(i, w)| field(w, Type::UINT, 4 * i as u64)).collect(), 16, 8)
            }
            // An empty class: one byte.
            Group::Tile { of_block: true, .. } => (vec![field("__cdpc_empty", Type::Int(IntKind::UChar), 0)], 1, 1),
        };
        let def = hir::StructDef { name: name.clone(), fields, size, align, span: Span::default(), template: None, union: false };
        let id = StructId(self.structs.len() as u32);
        self.struct_names.insert(name, id);
        self.structs.push(def);
        self.complete.push(true);
        Type::Struct(id)
    }

    /// A type in a message: a group as programs write it (`thread_block_tile<32>`).
    fn show_group(&self, ty: &Type) -> String {
        match self.group_of(ty) {
            Some(group) => format!("`{}`", group.written()),
            None => self.show(ty),
        }
    }

    fn group_of(&self, ty: &Type) -> Option<Group> {
        match ty {
            Type::Struct(id) => self.group_of_struct(*id),
            _ => None,
        }
    }

    fn group_of_struct(&self, id: StructId) -> Option<Group> {
        Group::of_class(&self.structs[id.0 as usize].name)
    }

    /// Whether the struct is one of the built-in groups (whose methods this module answers).
    pub(super) fn is_group(&self, id: StructId) -> bool {
        self.group_of_struct(id).is_some()
    }

    /// A call of a function of the namespace (`cooperative_groups::NAME(...)`); `None` when
    /// `callee` is not one.
    pub(super) fn coop_group_call(&mut self, callee: &ast::Expr, args: &[ast::Expr], span: Span) -> Option<Option<hir::Expr>> {
        match &callee.kind {
            ast::ExprKind::Ident(name) if crate::front::coop_groups::is_qualified(&name.name) => Some(self.coop_group_function(name, args, span)),
            _ => None,
        }
    }

    fn coop_group_function(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let short = &name.name[NAMESPACE.len() + 2..];
        if !self.in_function(name) {
            return None;
        }
        let method = |n: &str| ast::Ident { name: n.into(), span: name.span };
        match short {
            "this_thread_block" => {
                self.expect_args(name, args, 0)?;
                Some(self.block_value(span))
            }
            "coalesced_threads" => {
                self.expect_args(name, args, 0)?;
                Some(self.coalesced_threads(span))
            }
            "this_thread" => {
                self.expect_args(name, args, 0)?;
                Some(self.this_thread(span))
            }
            "sync" | "thread_rank" | "group_size" => {
                self.expect_args(name, args, 1)?;
                let group = self.expr(&args[0])?;
                let Some(kind) = self.group_of(&group.ty) else {
                    let found = self.show_group(&group.ty);
                    self.error(Code::CoopGroupsMisuse, args[0].span, format!("`cooperative_groups::{short}` needs a group, found {found}"))
                        .primary("not a group")
                        .note("pass a `thread_block`, `coalesced_group` or `thread_block_tile<N>`")
                        .emit();
                    return None;
                };
                // The header's `g.sync()`, `g.thread_rank()` and `g.num_threads()`.
                let m = method(if short == "group_size" { "num_threads" } else { short });
                self.group_method(group, kind, &m, &[], span)
            }
            _ if short.starts_with("tiled_partition<") => self.tiled_partition(name, short, args, span),
            "tiled_partition" => {
                self.error(Code::CoopGroupsUnsupported, name.span, "the dynamic `tiled_partition(group, size)` is not supported yet")
                    .primary("it returns a `thread_group`")
                    .note("write the size as a template argument, `cg::tiled_partition<32>(block)`, which gives a `thread_block_tile<32>`")
                    .emit();
                None
            }
            _ => {
                self.error(Code::CoopGroupsUnsupported, name.span, format!("`cooperative_groups::{short}` is not supported yet"))
                    .primary("called here")
                    .note(SUPPORTED)
                    .emit();
                None
            }
        }
    }

    /// A member function call on an object of a group type (`object` is the group's place or
    /// value; `p->f()` arrives as `(*p).f()`).
    pub(super) fn coop_group_method(&mut self, object: hir::Expr, id: StructId, method: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let group = self.group_of_struct(id).expect("called for a group's struct");
        if !self.in_function(method) {
            return None;
        }
        self.group_method(object, group, method, args, span)
    }

    fn group_method(&mut self, object: hir::Expr, group: Group, method: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        match group {
            Group::Block => self.block_method(object, method, args, span),
            Group::Coalesced => self.coalesced_method(object, method, args, span),
            Group::Tile { size, of_block } => self.tile_method(object, size, of_block, method, args, span),
        }
    }

    /// Groups are values of functions: sema cannot make their temporaries elsewhere.
    fn in_function(&mut self, name: &ast::Ident) -> bool {
        if self.func.is_some() {
            return true;
        }
        self.error(Code::CoopGroupsMisuse, name.span, "cooperative groups are used inside device functions")
            .primary("outside a function")
            .note("a group describes the threads running a function; make it in the function's body")
            .emit();
        false
    }

    /// Whether the implicit conversion of a group of type `from` to `to` exists: only the
    /// header's `thread_block_tile<N, P>` to `thread_block_tile<N, void>`.
    pub(super) fn group_converts(&self, from: StructId, to: StructId) -> bool {
        matches!(
            (self.group_of_struct(from), self.group_of_struct(to)),
            (Some(Group::Tile { size: a, of_block: true }), Some(Group::Tile { size: b, of_block: false })) if a == b
        )
    }

    /// The conversion [`Context::group_converts`] allows.
    pub(super) fn convert_group(&self, e: hir::Expr, to: &Type) -> hir::Expr {
        let Some(Group::Tile { size, .. }) = self.group_of(to) else { unreachable!("only tiles convert") };
        let span = e.span;
        let value = self.tile_void_value(size, to.clone(), span);
        then(e, value)
    }

    /// `T x;` of a group type (or an array of them) is refused: no group has a default
    /// constructor. Reports it and returns true.
    pub(super) fn group_without_value(&mut self, ty: &Type, span: Span) -> bool {
        let elem = match ty {
            Type::Array { elem, .. } => elem,
            other => other,
        };
        let Some(group) = self.group_of(elem) else { return false };
        let made_by = match group {
            Group::Block => "`cg::this_thread_block()`",
            Group::Coalesced => "`cg::coalesced_threads()`",
            Group::Tile { .. } => "`cg::tiled_partition<N>(block)`",
        };
        self.error(Code::CoopGroupsMisuse, span, format!("a `{}` must be initialized where it is declared", group.written()))
            .primary("declared without a value")
            .note(format!("groups have no default constructor; initialize it with {made_by}"))
            .emit();
        true
    }

    /// `a = b` of a group type other than `thread_block_tile<N, thread_block>` is refused: nvcc's
    /// `thread_group::operator=` is declared but never defined (a link error there), and a
    /// `thread_block`'s is deleted. Reports it and returns true.
    pub(super) fn group_assignment(&mut self, ty: &Type, span: Span) -> bool {
        match self.group_of(ty) {
            None | Some(Group::Tile { of_block: true, .. }) => false,
            Some(group) => {
                self.error(Code::CoopGroupsMisuse, span, format!("a `{}` cannot be assigned", group.written()))
                    .primary("assigned here")
                    .note("cooperative_groups.h declares no usable assignment of groups; declare a new variable for the new group")
                    .emit();
                true
            }
        }
    }


}
