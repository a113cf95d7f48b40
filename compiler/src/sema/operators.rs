//! C++ operator overloading: an operator whose operand has class type (a struct of the file or
//! one of CUDA's vector types, `float2`) is a call of an operator function when one is declared,
//! `a + b` as `operator+(a, b)` or `a.operator+(b)`, `a += b` as `operator+=(a, b)`, `-a` as
//! `operator-(a)`, `a++` as `operator++(a, 0)`, `a[i]` as `a.operator[](i)`. Which one is
//! overload resolution's choice (`overload.rs`) among the member functions of the left
//! operand's class and the free operator functions that name lookup finds from here (every
//! enclosing namespace, `using` namespaces: a stand-in for argument-dependent lookup). Operands
//! of other types, or a name with no operator function, keep the built-in operator.

use super::expr::make;
use super::overload::Operands;
use super::Context;
use crate::diag::Span;
use crate::hir::{self, ExprKind, FuncId};
use crate::types::Type;

impl Context {
    /// `operands` (checked, not yet values) under the operator spelled `op`, as a call of an
    /// operator function; `None` when the built-in operator applies. `Some(None)`: reported.
    pub(super) fn overloaded_operator(&mut self, op: &str, operands: Vec<hir::Expr>, span: Span) -> Option<Option<hir::Expr>> {
        if !operands.iter().any(|e| matches!(e.ty, Type::Struct(_))) {
            return None;
        }
        let name = format!("operator{op}");
        let mut candidates: Vec<FuncId> = Vec::new();
        if let Type::Struct(class) = operands[0].ty {
            if let Some((_, declaring)) = self.find_method(class, &name) {
                let qualified = format!("{}::{name}", self.structs[declaring.0 as usize].name);
                candidates.extend(self.cxx.overloads.get(&qualified).into_iter().flatten().copied());
            }
        }
        if op != "[]" && op != "=" {
            for scope in self.candidates(&name) {
                for id in self.cxx.overloads.get(&scope).into_iter().flatten() {
                    if !self.cxx.methods.contains_key(id) && !candidates.contains(id) {
                        candidates.push(*id);
                    }
                }
            }
        }
        if candidates.is_empty() {
            return None;
        }
        let operands_ = Operands { exprs: &operands, object: true };
        let Some(id) = self.resolve_overload(&name, &candidates, operands_, span) else { return Some(None) };
        Some(self.call_operator(id, operands, span))
    }

    fn call_operator(&mut self, id: FuncId, mut operands: Vec<hir::Expr>, span: Span) -> Option<hir::Expr> {
        if !self.functions[id.0 as usize].cxx.has_this {
            return self.finish_call_checked(id, None, operands, span);
        }
        let object = operands.remove(0);
        let pointer = self.object_pointer(id, object);
        self.finish_call_checked(id, Some(pointer), operands, span)
    }

    /// The `this` argument of a call of member function `id` on `object`: its address, or the
    /// address of a temporary holding it when it is a value (`(a + b).f()`).
    pub(super) fn object_pointer(&mut self, id: FuncId, object: hir::Expr) -> hir::Expr {
        let span = object.span;
        let ty = object.ty.clone();
        let pointer = if self.is_place(&object) {
            make(ExprKind::AddrOf(Box::new(object)), Type::pointer_to(ty), span)
        } else {
            let temp = self.new_local("obj.tmp", ty.clone(), span);
            let place = make(ExprKind::Local(temp), ty.clone(), span);
            let store = make(ExprKind::Assign { place: Box::new(place.clone()), value: Box::new(object) }, ty.clone(), span);
            let address = make(ExprKind::AddrOf(Box::new(place)), Type::pointer_to(ty.clone()), span);
            make(ExprKind::Comma { lhs: Box::new(store), rhs: Box::new(address) }, Type::pointer_to(ty), span)
        };
        let f = &self.functions[id.0 as usize];
        let this_ty = f.local(f.params[0]).ty.clone();
        if pointer.ty == this_ty {
            pointer
        } else {
            make(ExprKind::Cast(Box::new(pointer)), this_ty, span)
        }
    }

    /// `*this` inside a member function, as the object of a call by a bare name.
    pub(super) fn implicit_this_object(&self) -> Option<hir::Expr> {
        let (this, _) = self.func.as_ref()?.this?;
        let this_ty = self.func.as_ref()?.locals[this.0 as usize].ty.clone();
        let pointee = this_ty.pointee()?.clone();
        let local = make(ExprKind::Local(this), this_ty, Span::default());
        Some(make(ExprKind::Deref(Box::new(local)), pointee, Span::default()))
    }
}
