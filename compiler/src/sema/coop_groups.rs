//! Cooperative groups as real programs use them, built in: `cg::thread_block`,
//! `cg::this_thread_block()`, `cg::sync(g)` and a block's `sync()`, `thread_rank()`,
//! `size()`/`num_threads()`, `thread_index()`, `group_index()`, `dim_threads()`.
//!
//! The front end joins `cg::NAME` into one name `cooperative_groups::NAME`
//! (`crate::front::coop_groups`). A `thread_block` is a built-in struct with nvcc's name
//! (`cooperative_groups::__v1::thread_block`, so a function taking one mangles as nvcc's does)
//! and size (24 bytes: the `thread_group` data and a scratch pointer), whose contents cdpc
//! never reads: every method is lowered to what nvcc's inline header code computes, `bar.sync 0`
//! for `sync` and the linear thread index and block size from the special registers.
//!
//! This is the minimum the corpus needs, written so that it can later become an ordinary class
//! with member functions declared in the shipped `cooperative_groups.h`. The other groups
//! (`coalesced_group`, `thread_block_tile<N>`, `grid_group`, ...) and their functions are
//! refused with `E0950`; a wrong use of a supported one is `E0951`.

use super::expr::make;
use super::Context;
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::front::coop_groups::NAMESPACE;
use crate::hir::{self, Axis, BinaryOp, Builtin, ExprKind, SpecialReg};
use crate::types::Type;

/// nvcc's name for the class (its headers open `namespace cooperative_groups { namespace __v1`).
const THREAD_BLOCK: &str = "cooperative_groups::__v1::thread_block";

impl Context {
    /// The type of a `cooperative_groups::NAME` written as a type.
    pub(super) fn coop_group_type(&mut self, name: &ast::Ident) -> Option<Type> {
        let short = name.name.strip_prefix(NAMESPACE).and_then(|s| s.strip_prefix("::")).unwrap_or(&name.name);
        if short == "thread_block" {
            return Some(self.thread_block_type());
        }
        self.error(Code::CoopGroupsUnsupported, name.span, format!("`cooperative_groups::{short}` is not supported yet"))
            .primary("used here")
            .note("cdpc's cooperative groups are `thread_block`, `this_thread_block()` and `sync(block)`; use `__syncthreads()`, `__ballot_sync` and `__shfl_sync` for the rest")
            .emit();
        None
    }

    fn thread_block_type(&mut self) -> Type {
        if let Some(id) = self.struct_names.get(THREAD_BLOCK) {
            return Type::Struct(*id);
        }
        let data = Type::Array { elem: Box::new(Type::ULONGLONG), len: 2 };
        let fields = vec![
            hir::Field { name: "__cdpc_group_data".into(), ty: data, offset: 0, volatile: false },
            hir::Field { name: "__cdpc_tile_memory".into(), ty: Type::pointer_to(Type::Void), offset: 16, volatile: false },
        ];
        let def = hir::StructDef { name: THREAD_BLOCK.into(), fields, size: 24, align: 8, span: Span::default() };
        let id = crate::types::StructId(self.structs.len() as u32);
        self.struct_names.insert(THREAD_BLOCK.into(), id);
        self.structs.push(def);
        self.complete.push(true);
        Type::Struct(id)
    }

    fn is_thread_block(&self, ty: &Type) -> bool {
        matches!(ty, Type::Struct(id) if self.structs[id.0 as usize].name == THREAD_BLOCK)
    }

    /// A call of a cooperative-groups function or method; `None` when `callee` is neither.
    pub(super) fn coop_group_call(&mut self, callee: &ast::Expr, args: &[ast::Expr], span: Span) -> Option<Option<hir::Expr>> {
        match &callee.kind {
            ast::ExprKind::Ident(name) if crate::front::coop_groups::is_qualified(&name.name) => {
                Some(self.coop_group_function(name, args, span))
            }
            ast::ExprKind::Member { base, field, arrow: false } => {
                let ast::ExprKind::Ident(var) = &base.kind else { return None };
                let b = self.lookup(&var.name)?;
                let ty = match b {
                    super::Binding::Local(id) => self.state().locals[id.0 as usize].ty.clone(),
                    super::Binding::Global(id) => self.globals[id.0 as usize].ty.clone(),
                    super::Binding::Poisoned => return Some(None),
                };
                if !self.is_thread_block(&ty) {
                    return None;
                }
                Some(self.thread_block_method(field, args, span))
            }
            _ => None,
        }
    }

    fn coop_group_function(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let short = &name.name[NAMESPACE.len() + 2..];
        match short {
            "this_thread_block" => {
                self.expect_args(name, args, 0)?;
                let ty = self.thread_block_type();
                // Its contents are never read: a fresh block value is enough.
                let tmp = self.new_local("cg$this_thread_block", ty.clone(), span);
                Some(make(ExprKind::Local(tmp), ty, span))
            }
            "sync" => {
                self.expect_args(name, args, 1)?;
                let group = self.expr(&args[0])?;
                if !self.is_thread_block(&group.ty) {
                    let found = self.show(&group.ty);
                    self.error(Code::CoopGroupsMisuse, args[0].span, format!("`cooperative_groups::sync` needs a `thread_block`, found {found}")).emit();
                    return None;
                }
                Some(sync_threads(span))
            }
            _ => {
                // An unsupported group's value, if any, stays unchecked: the call is refused.
                self.error(Code::CoopGroupsUnsupported, name.span, format!("`cooperative_groups::{short}` is not supported yet"))
                    .primary("called here")
                    .note("cdpc's cooperative groups are `thread_block`, `this_thread_block()` and `sync(block)`; use `__syncthreads()`, `__ballot_sync` and `__shfl_sync` for the rest")
                    .emit();
                None
            }
        }
    }

    fn thread_block_method(&mut self, method: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let reg = |r: fn(Axis) -> SpecialReg, a: Axis| make(ExprKind::Builtin { builtin: Builtin::SpecialReg(r(a)), args: vec![] }, Type::UINT, span);
        let dim3 = |r: fn(Axis) -> SpecialReg| {
            let (x, y, z) = (reg(r, Axis::X), reg(r, Axis::Y), reg(r, Axis::Z));
            make(ExprKind::Dim3 { x: Box::new(x), y: Box::new(y), z: Box::new(z) }, Type::Dim3, span)
        };
        let e = match method.name.as_str() {
            "sync" => sync_threads(span),
            // nvcc's `vec3_to_linear`: z * (ny * nx) + y * nx + x, in unsigned int.
            "thread_rank" => {
                let (nx, ny) = (reg(SpecialReg::BlockDim, Axis::X), reg(SpecialReg::BlockDim, Axis::Y));
                let z = mul(mul(reg(SpecialReg::ThreadIdx, Axis::Z), ny, span), nx.clone(), span);
                let y = mul(reg(SpecialReg::ThreadIdx, Axis::Y), nx, span);
                add(add(z, y, span), reg(SpecialReg::ThreadIdx, Axis::X), span)
            }
            "size" | "num_threads" => {
                let xy = mul(reg(SpecialReg::BlockDim, Axis::X), reg(SpecialReg::BlockDim, Axis::Y), span);
                mul(xy, reg(SpecialReg::BlockDim, Axis::Z), span)
            }
            "thread_index" => dim3(SpecialReg::ThreadIdx),
            "group_index" => dim3(SpecialReg::BlockIdx),
            "dim_threads" | "group_dim" => dim3(SpecialReg::BlockDim),
            other => {
                self.error(Code::CoopGroupsMisuse, method.span, format!("`thread_block` has no member function `{other}` in cdpc"))
                    .note("its members here are: sync, thread_rank, size, num_threads, thread_index, group_index, dim_threads, group_dim")
                    .emit();
                return None;
            }
        };
        self.expect_args(method, args, 0)?;
        Some(e)
    }

    fn expect_args(&mut self, name: &ast::Ident, args: &[ast::Expr], n: usize) -> Option<()> {
        if args.len() == n {
            return Some(());
        }
        let short = name.name.rsplit("::").next().unwrap_or(&name.name).to_string();
        self.error(Code::CoopGroupsMisuse, name.span, format!("`{short}` takes {n} argument{}, but {} were given", super::expr::plural(n), args.len())).emit();
        None
    }
}

fn sync_threads(span: Span) -> hir::Expr {
    make(ExprKind::Builtin { builtin: Builtin::SyncThreads, args: vec![] }, Type::Void, span)
}

fn mul(a: hir::Expr, b: hir::Expr, span: Span) -> hir::Expr {
    make(ExprKind::Binary { op: BinaryOp::Mul, lhs: Box::new(a), rhs: Box::new(b) }, Type::UINT, span)
}

fn add(a: hir::Expr, b: hir::Expr, span: Span) -> hir::Expr {
    make(ExprKind::Binary { op: BinaryOp::Add, lhs: Box::new(a), rhs: Box::new(b) }, Type::UINT, span)
}
