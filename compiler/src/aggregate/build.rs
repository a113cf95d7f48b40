//! Small constructors for HIR nodes, so the rewrite reads like the C it stands for. Every node
//! carries the span of the launch site it was made for.

use crate::diag::Span;
use crate::hir::{
    AtomicOp, Axis, BinaryOp, Block, Builtin, Expr, ExprKind, Function, Global, GlobalId, GlobalSpace, Init, Local, LocalId, Module,
    SpecialReg, Stmt,
};
use crate::target::AddressSize;
use crate::types::{IntKind, Type};

#[derive(Clone, Copy)]
pub(crate) struct B {
    pub span: Span,
    /// `long` at 64 bits, `int` at 32: the offset type of pointer arithmetic.
    pub ptr_int: IntKind,
}

impl B {
    pub fn e(&self, kind: ExprKind, ty: Type) -> Expr {
        Expr { kind, ty, span: self.span }
    }
    pub fn uint(&self, v: u64) -> Expr {
        self.e(ExprKind::IntConst(v as u32 as i64), Type::UINT)
    }
    pub fn ull(&self, v: u64) -> Expr {
        self.e(ExprKind::IntConst(v as i64), Type::ULONGLONG)
    }
    /// The null pointer of pointer type `ty`.
    pub fn null(&self, ty: &Type) -> Expr {
        self.e(ExprKind::PointerConst(0), ty.clone())
    }
    /// The NULL stream, `(cudaStream_t)0`.
    pub fn null_stream(&self) -> Expr {
        self.e(ExprKind::PointerConst(0), Type::Stream)
    }
    pub fn int(&self, v: i64) -> Expr {
        self.e(ExprKind::IntConst(v), Type::INT)
    }
    pub fn local(&self, id: LocalId, ty: &Type) -> Expr {
        self.e(ExprKind::Local(id), ty.clone())
    }
    pub fn global(&self, id: GlobalId, ty: &Type) -> Expr {
        self.e(ExprKind::Global(id), ty.clone())
    }
    pub fn member(&self, base: Expr, index: u32, ty: &Type) -> Expr {
        self.e(ExprKind::Member { base: Box::new(base), index }, ty.clone())
    }
    /// `dim3` field `x`, `y` or `z`.
    pub fn axis(&self, base: Expr, axis: Axis) -> Expr {
        let index = match axis {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        };
        self.member(base, index, &Type::UINT)
    }
    /// Arithmetic or bitwise operator: both operands and the result of type `lhs.ty`.
    pub fn arith(&self, op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        let ty = lhs.ty.clone();
        self.e(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, ty)
    }
    /// Comparison of two operands of one type: `int` 0 or 1.
    pub fn cmp(&self, op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        self.e(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, Type::INT)
    }
    pub fn and(&self, lhs: Expr, rhs: Expr) -> Expr {
        self.e(ExprKind::LogicalAnd { lhs: Box::new(lhs), rhs: Box::new(rhs) }, Type::INT)
    }
    pub fn or(&self, lhs: Expr, rhs: Expr) -> Expr {
        self.e(ExprKind::LogicalOr { lhs: Box::new(lhs), rhs: Box::new(rhs) }, Type::INT)
    }
    pub fn cast(&self, e: Expr, ty: &Type) -> Expr {
        if &e.ty == ty {
            return e;
        }
        self.e(ExprKind::Cast(Box::new(e)), ty.clone())
    }
    pub fn assign(&self, place: Expr, value: Expr) -> Stmt {
        let ty = place.ty.clone();
        Stmt::Expr(self.e(ExprKind::Assign { place: Box::new(place), value: Box::new(value) }, ty))
    }
    pub fn addr_of(&self, place: Expr) -> Expr {
        let ty = Type::pointer_to(place.ty.clone());
        self.e(ExprKind::AddrOf(Box::new(place)), ty)
    }
    pub fn deref(&self, ptr: Expr) -> Expr {
        let ty = ptr.ty.pointee().cloned().unwrap_or(Type::Void);
        self.e(ExprKind::Deref(Box::new(ptr)), ty)
    }
    pub fn decay(&self, array: Expr) -> Expr {
        let elem = match &array.ty {
            Type::Array { elem, .. } => (**elem).clone(),
            other => other.clone(),
        };
        self.e(ExprKind::Decay(Box::new(array)), Type::pointer_to(elem))
    }
    /// `ptr + index` (pointer arithmetic, scaled by the pointee).
    pub fn ptr_add(&self, ptr: Expr, index: Expr) -> Expr {
        let ty = ptr.ty.clone();
        let index = self.cast(index, &Type::Int(self.ptr_int));
        self.e(ExprKind::Binary { op: BinaryOp::PtrAdd, lhs: Box::new(ptr), rhs: Box::new(index) }, ty)
    }
    /// `ptr[index]` as a place.
    pub fn index(&self, ptr: Expr, index: Expr) -> Expr {
        let p = self.ptr_add(ptr, index);
        self.deref(p)
    }
    pub fn special(&self, reg: SpecialReg) -> Expr {
        self.e(ExprKind::Builtin { builtin: Builtin::SpecialReg(reg), args: Vec::new() }, Type::UINT)
    }
    pub fn builtin(&self, builtin: Builtin, args: Vec<Expr>, ty: &Type) -> Expr {
        self.e(ExprKind::Builtin { builtin, args }, ty.clone())
    }
    pub fn atomic(&self, op: AtomicOp, ptr: Expr, value: Expr) -> Expr {
        let ty = value.ty.clone();
        self.builtin(Builtin::Atomic(op), vec![ptr, value], &ty)
    }
    pub fn sync(&self) -> Stmt {
        Stmt::Expr(self.builtin(Builtin::SyncThreads, Vec::new(), &Type::Void))
    }
    pub fn decl(&self, local: LocalId, init: Expr) -> Stmt {
        Stmt::Decl { local, init: Some(Init::Expr(init)) }
    }
    pub fn if_(&self, cond: Expr, then: Vec<Stmt>) -> Stmt {
        Stmt::If { cond, then: Block { stmts: then }, otherwise: None }
    }
    pub fn if_else(&self, cond: Expr, then: Vec<Stmt>, otherwise: Vec<Stmt>) -> Stmt {
        Stmt::If { cond, then: Block { stmts: then }, otherwise: Some(Block { stmts: otherwise }) }
    }
    /// `for (init; cond; step) body`.
    pub fn for_(&self, init: Vec<Stmt>, cond: Expr, step: Expr, body: Vec<Stmt>) -> Stmt {
        Stmt::Loop { init: Block { stmts: init }, cond: Some(cond), step: Some(step), body: Block { stmts: body }, check_cond_first: true }
    }
    /// `a * b * c` of the three fields of a dim3 value, in `ty`.
    pub fn volume(&self, dim: &Expr, ty: &Type) -> Expr {
        let x = self.cast(self.axis(dim.clone(), Axis::X), ty);
        let y = self.cast(self.axis(dim.clone(), Axis::Y), ty);
        let z = self.cast(self.axis(dim.clone(), Axis::Z), ty);
        self.arith(BinaryOp::Mul, self.arith(BinaryOp::Mul, x, y), z)
    }
    pub fn dim3(&self, x: Expr, y: Expr, z: Expr) -> Expr {
        self.e(ExprKind::Dim3 { x: Box::new(x), y: Box::new(y), z: Box::new(z) }, Type::Dim3)
    }
}

/// A builder for nodes at `span`, with the module's pointer-offset type.
pub(super) fn builder(module: &Module, span: Span) -> B {
    let ptr_int = if module.target.address_size == AddressSize::Bits64 { IntKind::Long } else { IntKind::Int };
    B { span, ptr_int }
}

/// A new local of `f`.
pub(super) fn new_local(f: &mut Function, name: &str, ty: Type, span: Span) -> LocalId {
    let id = LocalId(f.locals.len() as u32);
    f.locals.push(Local { name: name.to_string(), ty, span, volatile: false });
    id
}

/// A new module-scope variable in `space` (`__shared__` or `__device__`), zero-initialised.
pub(super) fn new_global(module: &mut Module, name: String, ty: Type, space: GlobalSpace, span: Span) -> GlobalId {
    let id = GlobalId(module.globals.len() as u32);
    module.globals.push(Global { name, ty, space, init: None, span, external: false, volatile: false, internal: false });
    id
}
