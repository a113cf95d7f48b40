//! Expressions: name lookup, operators with C's conversions, places and values.

use super::{Binding, Context, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, BinaryOp, ExprKind, GlobalSpace, UnaryOp};
use crate::front::cdp::syntax::ast::{self, BinaryOp as AstBin, UnaryOp as AstUn};
use crate::types::{DisplayType, IntKind, Quals, Type};

fn boxed(e: hir::Expr) -> Box<hir::Expr> {
    Box::new(e)
}

pub(super) fn make(kind: ExprKind, ty: Type, span: Span) -> hir::Expr {
    hir::Expr { kind, ty, span }
}

pub(super) fn int_const(value: i64, ty: Type, span: Span) -> hir::Expr {
    make(ExprKind::IntConst(value), ty, span)
}

impl Context {
    /// Checks an expression. Places (variables, `*p`, `a[i]`, `s.f`) are returned as places;
    /// callers that need a value call [`Context::rvalue`].
    pub(super) fn expr(&mut self, e: &ast::Expr) -> Option<hir::Expr> {
        let span = e.span;
        match &e.kind {
            ast::ExprKind::IntLit { value, suffix, decimal } => self.int_literal(*value, *suffix, *decimal, span),
            ast::ExprKind::FloatLit { value, is_float } => {
                let ty = if *is_float { Type::FLOAT } else { Type::DOUBLE };
                let value = if *is_float { *value as f32 as f64 } else { *value };
                Some(make(ExprKind::FloatConst(value), ty, span))
            }
            ast::ExprKind::CharLit(c) => Some(int_const(*c as i8 as i64, Type::CHAR, span)),
            ast::ExprKind::BoolLit(b) => Some(int_const(*b as i64, Type::BOOL, span)),
            ast::ExprKind::StringLit(bytes) => Some(self.string_literal(bytes, span)),
            ast::ExprKind::Ident(ident) => self.ident(ident),
            ast::ExprKind::Unary { op, operand } => self.unary(*op, operand, span),
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let (l, r) = (self.expr(lhs), self.expr(rhs));
                let (l, r) = (l?, r?);
                let (l, r) = (self.rvalue(l), self.rvalue(r));
                self.binary(*op, l, r, span)
            }
            ast::ExprKind::Assign { op, lhs, rhs } => self.assign(*op, lhs, rhs, span),
            ast::ExprKind::Conditional { cond, then, otherwise } => self.conditional(cond, then, otherwise, span),
            ast::ExprKind::Comma { lhs, rhs } => {
                let (l, r) = (self.expr(lhs), self.expr(rhs));
                let r = self.rvalue(r?);
                let ty = r.ty.clone();
                Some(make(ExprKind::Comma { lhs: boxed(l?), rhs: boxed(r) }, ty, span))
            }
            ast::ExprKind::Cast { ty, function, operand } => {
                let to = self.resolve_type_name(ty);
                let to = match (to, function) {
                    (Some(ret), Some(f)) => self.fn_ptr_type(ret, f),
                    (to, _) => to,
                };
                let value = self.expr(operand);
                self.explicit_cast(value?, &to?, span)
            }
            ast::ExprKind::SizeofType(ty) => {
                let ty = self.resolve_type_name(ty)?;
                self.sizeof(&ty, span)
            }
            ast::ExprKind::SizeofExpr(operand) => {
                let operand = self.expr(operand)?;
                if super::bit_fields::refuse_address(self, &operand, "`sizeof`") {
                    return None;
                }
                self.sizeof(&operand.ty, span)
            }
            ast::ExprKind::Call { callee, args } => self.call(callee, args, span),
            ast::ExprKind::Launch { kernel, config, config_span, args } => self.launch(kernel, config, *config_span, args, span),
            ast::ExprKind::LaunchThrough { target, config, config_span, args } => self.launch_through(target, config, *config_span, args, span),
            ast::ExprKind::Index { base, index } => self.index(base, index, span),
            ast::ExprKind::Member { base, field, arrow } => self.member(base, field, *arrow, span),
            ast::ExprKind::Construct { ty, args } => self.construct(ty, args, span),
        }
    }

    /// C's rules for the type of an integer literal: the first of a list of types that holds
    /// the value, where hex and octal literals may also become unsigned.
    fn int_literal(&mut self, value: u64, suffix: ast::IntSuffix, decimal: bool, span: Span) -> Option<hir::Expr> {
        use IntKind::*;
        let candidates: &[IntKind] = match (suffix.unsigned, suffix.long, decimal) {
            (false, 0, true) => &[Int, Long, LongLong],
            (false, 0, false) => &[Int, UInt, Long, ULong, LongLong, ULongLong],
            (true, 0, _) => &[UInt, ULong, ULongLong],
            (false, 1, true) => &[Long, LongLong],
            (false, 1, false) => &[Long, ULong, LongLong, ULongLong],
            (true, 1, _) => &[ULong, ULongLong],
            (false, _, true) => &[LongLong],
            (false, _, false) => &[LongLong, ULongLong],
            (true, _, _) => &[ULongLong],
        };
        let fits = |k: IntKind| {
            let bits = k.bits(&self.target);
            let max = if k.is_signed(&self.target) { (1u128 << (bits - 1)) - 1 } else { (1u128 << bits) - 1 };
            value as u128 <= max
        };
        match candidates.iter().copied().find(|k| fits(*k)) {
            Some(kind) => Some(int_const(value as i64, Type::Int(kind), span)),
            None => {
                self.error(Code::IntegerLiteralOutOfRange, span, format!("integer literal {value} does not fit in any integer type it may have"))
                    .note("add a `u` or `ull` suffix for values above the signed range")
                    .emit();
                None
            }
        }
    }

    /// A string literal is a constant global `const char[N + 1]`.
    pub(super) fn string_literal(&mut self, bytes: &[u8], span: Span) -> hir::Expr {
        let mut data: Vec<hir::ConstInit> = bytes.iter().map(|b| hir::ConstInit::Int(*b as i8 as i64)).collect();
        data.push(hir::ConstInit::Int(0));
        let ty = Type::Array { elem: Box::new(Type::CHAR), len: data.len() as u64 };
        let name = format!("__cdpc_str{}", self.globals.len());
        let id = self.add_global(hir::Global {
            name,
            ty: ty.clone(),
            space: GlobalSpace::StringLiteral,
            init: Some(hir::ConstInit::Array(data)),
            span,
            external: false,
            volatile: false,
            internal: false,
            managed: false,
            local: None,
        });
        self.const_globals.insert(id);
        make(ExprKind::Global(id), ty, span)
    }

    fn ident(&mut self, ident: &ast::Ident) -> Option<hir::Expr> {
        let span = ident.span;
        match self.lookup(&ident.name) {
            Some(Binding::Local(id)) => {
                let ty = self.state().locals[id.0 as usize].ty.clone();
                return Some(make(ExprKind::Local(id), ty, span));
            }
            Some(Binding::Global(id)) => {
                let ty = self.globals[id.0 as usize].ty.clone();
                return Some(make(ExprKind::Global(id), ty, span));
            }
            Some(Binding::Poisoned) => return None,
            None => {}
        }
        if let Some(e) = self.predefined_constant(&ident.name, span) {
            return Some(e);
        }
        if let Some(e) = self.host_constant(&ident.name, span) {
            return Some(e);
        }
        if let Some(GlobalSymbol::Function(_)) = self.resolve_symbol(&ident.name) {
            return self.function_value(ident, span);
        }
        if let Some(register) = special_register_kind(&ident.name) {
            // `blockDim` as a whole is a dim3 (CUDA's uint3 converts to dim3).
            let axis = |a: hir::Axis| {
                let builtin = hir::Builtin::SpecialReg(register(a));
                make(ExprKind::Builtin { builtin, args: vec![] }, Type::UINT, span)
            };
            let (x, y, z) = (axis(hir::Axis::X), axis(hir::Axis::Y), axis(hir::Axis::Z));
            return Some(make(ExprKind::Dim3 { x: boxed(x), y: boxed(y), z: boxed(z) }, Type::Dim3, span));
        }
        if self.skipped_use(&ident.name, span) {
            return None;
        }
        let suggestion = self.similar_name(&ident.name);
        let mut builder = self.error(Code::UnknownName, span, format!("cannot find `{}` in this scope", ident.name)).primary("not found");
        if let Some(suggestion) = suggestion {
            builder = builder.note(format!("a name with a similar spelling exists: `{suggestion}`"));
        }
        if ident.name == "cudaDeviceSynchronize" {
            builder = builder.note("cudaDeviceSynchronize was removed from device code in CUDA 12 (CDP2)");
        }
        builder.emit();
        None
    }

    /// Names the kernel language predefines: null pointers, CUDA's constants, warpSize.
    fn predefined_constant(&mut self, name: &str, span: Span) -> Option<hir::Expr> {
        if name == "NULL" || name == "nullptr" {
            return Some(make(ExprKind::PointerConst(0), Type::pointer_to(Type::Void), span));
        }
        if name == "warpSize" {
            let builtin = hir::Builtin::SpecialReg(hir::SpecialReg::WarpSize);
            return Some(make(ExprKind::Builtin { builtin, args: vec![] }, Type::INT, span));
        }
        if let Some((_, handle)) = runtime_shim::streams::NAMED_HANDLES.iter().find(|(n, _)| *n == name) {
            return Some(make(ExprKind::PointerConst(*handle), Type::Stream, span));
        }
        if let Some((_, flag)) = runtime_shim::streams::NAMED_FLAGS.iter().find(|(n, _)| *n == name) {
            return Some(int_const(*flag as i64, Type::UINT, span));
        }
        if let Some((_, code)) = runtime_shim::errors::NAMED_ERRORS.iter().find(|(n, _)| *n == name) {
            return Some(int_const(*code as i64, Type::CudaError, span));
        }
        if let Some((_, value)) = runtime_shim::types::CEnum::value_named(name) {
            return Some(int_const(value as i64, Type::INT, span));
        }
        None
    }

    /// A visible name close to `name` (edit distance at most 2), for "did you mean".
    fn similar_name(&self, name: &str) -> Option<String> {
        let mut candidates: Vec<String> = self.symbols.keys().cloned().collect();
        if let Some(state) = &self.func {
            for scope in &state.scopes {
                candidates.extend(scope.keys().cloned());
            }
        }
        candidates.extend(super::builtins::BUILTIN_NAMES.iter().map(|s| s.to_string()));
        candidates.into_iter().filter(|c| c != name && edit_distance(c, name) <= 2.min(name.len() / 2)).min_by_key(|c| edit_distance(c, name))
    }

    pub(super) fn is_place(&self, e: &hir::Expr) -> bool {
        match &e.kind {
            ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Deref(_) => true,
            ExprKind::Member { base, .. } => self.is_place(base),
            _ => false,
        }
    }

    pub(super) fn is_const_place(&self, e: &hir::Expr) -> bool {
        match &e.kind {
            ExprKind::Local(id) => self.func.as_ref().is_some_and(|s| s.const_locals.contains(id)),
            ExprKind::Global(id) => self.const_globals.contains(id) || self.globals[id.0 as usize].space == GlobalSpace::Constant,
            ExprKind::Deref(p) => matches!(&p.ty, Type::Pointer { pointee_const: true, .. }),
            ExprKind::Member { base, .. } => self.is_const_place(base),
            _ => false,
        }
    }

    /// The qualifiers of the object a place designates: what `&place` points to.
    pub(super) fn place_quals(&self, e: &hir::Expr) -> Quals {
        Quals { is_const: self.is_const_place(e), is_volatile: self.is_volatile_place(e) }
    }

    pub(super) fn is_volatile_place(&self, e: &hir::Expr) -> bool {
        let locals = self.func.as_ref().map_or(&[][..], |s| &s.locals[..]);
        hir::is_volatile_place(e, locals, &self.globals, &self.structs)
    }

    /// Checks that `e` can be assigned to, reporting why not.
    fn check_modifiable(&mut self, e: &hir::Expr, what: &str) -> bool {
        if !self.is_place(e) {
            self.error(Code::NotAnLvalue, e.span, format!("cannot {what} this expression")).primary("not a variable, element or field").emit();
            return false;
        }
        if matches!(e.ty, Type::Array { .. }) {
            self.error(Code::NotAnLvalue, e.span, format!("cannot {what} an array")).note("assign its elements one by one").emit();
            return false;
        }
        if self.is_const_place(e) {
            let note = match &e.kind {
                ExprKind::Global(id) if self.globals[id.0 as usize].space == GlobalSpace::Constant => "`__constant__` memory is read-only in device code",
                _ => "it is declared `const`",
            };
            self.error(Code::AssignToConst, e.span, format!("cannot {what} a read-only location")).note(note).emit();
            return false;
        }
        true
    }

    fn unary(&mut self, op: AstUn, operand: &ast::Expr, span: Span) -> Option<hir::Expr> {
        if let (AstUn::AddrOf, ast::ExprKind::Ident(name)) = (op, &operand.kind) {
            if self.host_constant_address(name) {
                return None;
            }
        }
        let e = self.expr(operand)?;
        match op {
            // `&add1` is `add1`, a pointer to the function.
            AstUn::AddrOf if matches!(e.kind, ExprKind::FuncAddr(_)) => Some(e),
            AstUn::AddrOf => {
                if !self.is_place(&e) {
                    self.error(Code::NotAnLvalue, e.span, "cannot take the address of this expression").primary("not a variable, element or field").emit();
                    return None;
                }
                if super::bit_fields::refuse_address(self, &e, "`&`") {
                    return None;
                }
                let ty = Type::qualified_pointer_to(e.ty.clone(), self.place_quals(&e));
                Some(make(ExprKind::AddrOf(boxed(e)), ty, span))
            }
            // `*op` designates the function, which is `op` again where it is used.
            AstUn::Deref if e.ty.is_fn_ptr() => Some(self.rvalue(e)),
            AstUn::Deref => {
                let e = self.rvalue(e);
                match &e.ty {
                    Type::Pointer { pointee, .. } if !pointee.is_void() => {
                        let ty = (**pointee).clone();
                        Some(make(ExprKind::Deref(boxed(e)), ty, span))
                    }
                    _ => {
                        let message = format!("cannot dereference a value of type {}", self.show(&e.ty));
                        self.error(Code::InvalidOperands, span, message).emit();
                        None
                    }
                }
            }
            AstUn::PreInc | AstUn::PreDec | AstUn::PostInc | AstUn::PostDec => {
                let what = if matches!(op, AstUn::PreInc | AstUn::PostInc) { "increment" } else { "decrement" };
                if !self.check_modifiable(&e, what) {
                    return None;
                }
                if !(e.ty.is_pointer() || e.ty.is_arithmetic() && e.ty != Type::CudaError) {
                    let message = format!("cannot {what} a value of type {}", self.show(&e.ty));
                    self.error(Code::InvalidOperands, span, message).emit();
                    return None;
                }
                let ty = e.ty.clone();
                let increment = matches!(op, AstUn::PreInc | AstUn::PostInc);
                let prefix = matches!(op, AstUn::PreInc | AstUn::PreDec);
                Some(make(ExprKind::IncDec { place: boxed(e), increment, prefix }, ty, span))
            }
            AstUn::Neg | AstUn::Plus | AstUn::BitNot => {
                let e = self.rvalue(e);
                let ok = if op == AstUn::BitNot { e.ty.is_integer() } else { e.ty.is_arithmetic() };
                if !ok {
                    let message = format!(
                        "invalid operand of type {} to unary `{}`",
                        self.show(&e.ty),
                        match op {
                            AstUn::Neg => "-",
                            AstUn::Plus => "+",
                            _ => "~",
                        }
                    );
                    self.error(Code::InvalidOperands, span, message).emit();
                    return None;
                }
                let ty = self.promote(&e.ty);
                let e = self.cast(e, &ty);
                let op = match op {
                    AstUn::Neg => UnaryOp::Neg,
                    AstUn::BitNot => UnaryOp::BitNot,
                    _ => return Some(hir::Expr { span, ..e }),
                };
                Some(make(ExprKind::Unary { op, operand: boxed(e) }, ty, span))
            }
            AstUn::Not => {
                let e = self.rvalue(e);
                if !e.ty.is_scalar() {
                    let message = format!("invalid operand of type {} to `!`", self.show(&e.ty));
                    self.error(Code::InvalidOperands, span, message).emit();
                    return None;
                }
                Some(make(ExprKind::Unary { op: UnaryOp::Not, operand: boxed(e) }, Type::INT, span))
            }
        }
    }

    /// Binary operators on two values (already decayed).
    pub(super) fn binary(&mut self, op: AstBin, l: hir::Expr, r: hir::Expr, span: Span) -> Option<hir::Expr> {
        use AstBin::*;
        let (lt, rt) = (l.ty.clone(), r.ty.clone());
        let pointer_width = if self.target.long_bytes() == 8 { Type::Int(IntKind::Long) } else { Type::INT };
        match op {
            LogAnd | LogOr if lt.is_scalar() && rt.is_scalar() => {
                let kind = if op == LogAnd { ExprKind::LogicalAnd { lhs: boxed(l), rhs: boxed(r) } } else { ExprKind::LogicalOr { lhs: boxed(l), rhs: boxed(r) } };
                return Some(make(kind, Type::INT, span));
            }
            Add if lt.is_pointer() && rt.is_integer() => return self.pointer_add(l, r, false, span),
            Add if lt.is_integer() && rt.is_pointer() => return self.pointer_add(r, l, false, span),
            Sub if lt.is_pointer() && rt.is_integer() => return self.pointer_add(l, r, true, span),
            Sub if lt.is_pointer() && rt.is_pointer() => {
                if lt != rt {
                    let message = format!("cannot subtract pointers of different types {} and {}", self.show(&lt), self.show(&rt));
                    self.error(Code::InvalidOperands, span, message).emit();
                    return None;
                }
                if lt.pointee().is_some_and(Type::is_void) {
                    self.error(Code::InvalidOperands, span, "cannot subtract `void *` pointers").emit();
                    return None;
                }
                return Some(make(ExprKind::Binary { op: BinaryOp::PtrDiff, lhs: boxed(l), rhs: boxed(r) }, pointer_width, span));
            }
            Lt | Gt | Le | Ge | Eq | Ne if lt.is_pointer_like() || rt.is_pointer_like() => {
                let common = if lt == rt || (self.is_null_constant(&r) && lt.is_pointer_like()) {
                    Some(lt.clone())
                } else if self.is_null_constant(&l) && rt.is_pointer_like() {
                    Some(rt.clone())
                } else if lt.is_pointer() && rt.is_pointer() && (lt.pointee().is_some_and(Type::is_void) || rt.pointee().is_some_and(Type::is_void)) {
                    Some(Type::const_pointer_to(Type::Void))
                } else if let (Type::Pointer { pointee: a, .. }, Type::Pointer { pointee: b, .. }) = (&lt, &rt) {
                    (a == b).then(|| Type::const_pointer_to((**a).clone()))
                } else {
                    None
                };
                let Some(common) = common else {
                    let message = format!("cannot compare {} with {}", self.show(&lt), self.show(&rt));
                    self.error(Code::InvalidOperands, span, message).emit();
                    return None;
                };
                let (l, r) = (self.convert_checked(l, &common), self.convert_checked(r, &common));
                return Some(make(ExprKind::Binary { op: comparison(op), lhs: boxed(l), rhs: boxed(r) }, Type::INT, span));
            }
            _ => {}
        }
        let integer_only = matches!(op, Rem | Shl | Shr | BitAnd | BitOr | BitXor);
        let ok = if integer_only { lt.is_integer() && rt.is_integer() } else { lt.is_arithmetic() && rt.is_arithmetic() };
        if !ok {
            let needs = if integer_only { "integers" } else { "numbers" };
            let message = format!("invalid operands to `{}`: {} and {}", op.symbol(), self.show(&lt), self.show(&rt));
            let (lname, rname) = (self.show(&lt), self.show(&rt));
            self.error(Code::InvalidOperands, span, message).label(l.span, lname).label(r.span, rname).note(format!("`{}` takes {needs}", op.symbol())).emit();
            return None;
        }
        if matches!(op, Shl | Shr) {
            // Shifts take the promoted left type; the right operand only gives the amount.
            let ty = self.promote(&lt);
            let (l, r) = (self.cast(l, &ty), self.cast(r, &ty));
            let hop = if op == Shl { BinaryOp::Shl } else { BinaryOp::Shr };
            return Some(make(ExprKind::Binary { op: hop, lhs: boxed(l), rhs: boxed(r) }, ty, span));
        }
        let common = self.usual_arithmetic(&lt, &rt);
        let (l, r) = (self.cast(l, &common), self.cast(r, &common));
        let (hop, ty) = match op {
            Mul => (BinaryOp::Mul, common),
            Div => (BinaryOp::Div, common),
            Rem => (BinaryOp::Rem, common),
            Add => (BinaryOp::Add, common),
            Sub => (BinaryOp::Sub, common),
            BitAnd => (BinaryOp::BitAnd, common),
            BitOr => (BinaryOp::BitOr, common),
            BitXor => (BinaryOp::BitXor, common),
            Lt | Gt | Le | Ge | Eq | Ne => (comparison(op), Type::INT),
            Shl | Shr | LogAnd | LogOr => unreachable!("handled above"),
        };
        if matches!(hop, BinaryOp::Div | BinaryOp::Rem) && ty.is_integer() && matches!(r.kind, ExprKind::IntConst(0)) {
            self.error(Code::InvalidOperands, r.span, "division by zero").emit();
            return None;
        }
        Some(make(ExprKind::Binary { op: hop, lhs: boxed(l), rhs: boxed(r) }, ty, span))
    }

    fn pointer_add(&mut self, ptr: hir::Expr, offset: hir::Expr, subtract: bool, span: Span) -> Option<hir::Expr> {
        if ptr.ty.pointee().is_some_and(|p| p.is_void() || !p.is_complete_object()) {
            let message = format!("cannot do arithmetic on {}", self.show(&ptr.ty));
            self.error(Code::InvalidOperands, span, message).note("cast to `char *` to move by bytes").emit();
            return None;
        }
        let width = if self.target.long_bytes() == 8 { Type::Int(IntKind::Long) } else { Type::INT };
        let mut offset = self.cast(offset, &width);
        if subtract {
            let s = offset.span;
            offset = make(ExprKind::Unary { op: UnaryOp::Neg, operand: boxed(offset) }, width, s);
        }
        let ty = ptr.ty.clone();
        Some(make(ExprKind::Binary { op: BinaryOp::PtrAdd, lhs: boxed(ptr), rhs: boxed(offset) }, ty, span))
    }

    fn assign(&mut self, op: Option<AstBin>, lhs: &ast::Expr, rhs: &ast::Expr, span: Span) -> Option<hir::Expr> {
        let (place, value) = (self.expr(lhs), self.expr(rhs));
        let (place, value) = (place?, value?);
        if !self.check_modifiable(&place, "assign to") {
            return None;
        }
        let ty = place.ty.clone();
        let Some(op) = op else {
            let value = self.coerce(value, &ty, Code::TypeMismatch, "mismatched types in assignment")?;
            let globals = std::mem::take(&mut self.globals);
            self.state().provenance.record_store(&place, &value, &globals);
            self.globals = globals;
            return Some(make(ExprKind::Assign { place: boxed(place), value: boxed(value) }, ty, span));
        };
        let value = self.rvalue(value);
        // Check `place op value` as a binary expression to get C's conversions, then store back.
        let as_value = place.clone();
        let combined = self.binary(op, as_value, value, span)?;
        let ExprKind::Binary { op: hop, rhs, .. } = combined.kind else {
            self.error(Code::InvalidOperands, span, format!("`{}=` cannot be used here", op.symbol())).emit();
            return None;
        };
        if hop == BinaryOp::PtrDiff || matches!(hop, BinaryOp::Lt | BinaryOp::Gt | BinaryOp::Le | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne) {
            self.error(Code::InvalidOperands, span, format!("`{}=` cannot be used here", op.symbol())).emit();
            return None;
        }
        let op_type = combined.ty.clone();
        if self.implicit_conversion_ok(&make(ExprKind::IntConst(1), op_type.clone(), span), &ty).is_err() && op_type != ty {
            let message = format!("the result of `{}` has type {}, which cannot be stored in {}", op.symbol(), self.show(&op_type), self.show(&ty));
            self.error(Code::TypeMismatch, span, message).emit();
            return None;
        }
        Some(make(ExprKind::CompoundAssign { op: hop, place: boxed(place), value: rhs, op_type }, ty, span))
    }

    fn conditional(&mut self, cond: &ast::Expr, then: &ast::Expr, otherwise: &ast::Expr, span: Span) -> Option<hir::Expr> {
        let cond = self.condition(cond);
        let (t, o) = (self.expr(then), self.expr(otherwise));
        let (cond, t, o) = (cond?, t?, o?);
        let (t, o) = (self.rvalue(t), self.rvalue(o));
        let ty = if t.ty == o.ty {
            t.ty.clone()
        } else if t.ty.is_arithmetic() && o.ty.is_arithmetic() {
            self.usual_arithmetic(&t.ty, &o.ty)
        } else if t.ty.is_pointer_like() && self.is_null_constant(&o) {
            t.ty.clone()
        } else if o.ty.is_pointer_like() && self.is_null_constant(&t) {
            o.ty.clone()
        } else {
            let message = format!("the branches of `?:` have incompatible types {} and {}", self.show(&t.ty), self.show(&o.ty));
            let (tname, oname) = (self.show(&t.ty), self.show(&o.ty));
            self.error(Code::TypeMismatch, span, message).label(t.span, tname).label(o.span, oname).emit();
            return None;
        };
        let (t, o) = (self.convert_checked(t, &ty), self.convert_checked(o, &ty));
        Some(make(ExprKind::Conditional { cond: boxed(cond), then: boxed(t), otherwise: boxed(o) }, ty, span))
    }

    fn sizeof(&mut self, ty: &Type, span: Span) -> Option<hir::Expr> {
        if !ty.is_complete_object() {
            let message = format!("cannot take the size of {}", self.show(ty));
            self.error(Code::InvalidOperands, span, message).emit();
            return None;
        }
        let (size, _) = self.size_align(ty);
        Some(int_const(size as i64, Type::size_t(), span))
    }

    fn index(&mut self, base: &ast::Expr, index: &ast::Expr, span: Span) -> Option<hir::Expr> {
        let (b, i) = (self.expr(base), self.expr(index));
        let (b, i) = (b?, i?);
        let (b, i) = (self.rvalue(b), self.rvalue(i));
        let (ptr, idx) = if b.ty.is_pointer() { (b, i) } else { (i, b) };
        if !ptr.ty.is_pointer() || !idx.ty.is_integer() {
            let message = format!("cannot index {} with {}", self.show(&ptr.ty), self.show(&idx.ty));
            self.error(Code::InvalidOperands, span, message).note("indexing needs a pointer or array and an integer").emit();
            return None;
        }
        let address = self.pointer_add(ptr, idx, false, span)?;
        let ty = address.ty.pointee().cloned().expect("pointer_add keeps the pointer type");
        Some(make(ExprKind::Deref(boxed(address)), ty, span))
    }

    fn member(&mut self, base: &ast::Expr, field: &ast::Ident, arrow: bool, span: Span) -> Option<hir::Expr> {
        if let ast::ExprKind::Ident(id) = &base.kind {
            if !arrow && self.lookup(&id.name).is_none() {
                if let Some(e) = self.special_register(&id.name, field, span) {
                    return e;
                }
            }
        }
        let mut b = self.expr(base)?;
        if arrow {
            b = self.rvalue(b);
            match &b.ty {
                Type::Pointer { pointee, .. } if matches!(**pointee, Type::Struct(_) | Type::Dim3) => {
                    let ty = (**pointee).clone();
                    let s = b.span;
                    b = make(ExprKind::Deref(boxed(b)), ty, s);
                }
                _ => {
                    let message = format!("`->` needs a pointer to a struct, found {}", self.show(&b.ty));
                    self.error(Code::InvalidOperands, base.span, message).emit();
                    return None;
                }
            }
        }
        let (index, ty) = match &b.ty {
            Type::Dim3 => match field.name.as_str() {
                "x" => (0, Type::UINT),
                "y" => (1, Type::UINT),
                "z" => (2, Type::UINT),
                _ => return self.no_field(field, &b.ty, "x, y, z"),
            },
            Type::Struct(id) => match self.find_field(*id, &field.name) {
                Some(found) => found,
                None => {
                    let names = self.field_names(*id);
                    return self.no_field(field, &b.ty.clone(), &names);
                }
            },
            Type::Pointer { .. } if !arrow => {
                self.error(Code::InvalidOperands, span, format!("`{}` is a pointer; use `->` to reach its field", self.show(&b.ty))).emit();
                return None;
            }
            other => {
                let message = format!("{} has no fields", self.show(other));
                self.error(Code::InvalidOperands, base.span, message).emit();
                return None;
            }
        };
        Some(make(ExprKind::Member { base: boxed(b), index }, ty, span))
    }

    fn no_field(&mut self, field: &ast::Ident, ty: &Type, names: &str) -> Option<hir::Expr> {
        let message = format!("{} has no field `{}`", self.show(ty), field.name);
        self.error(Code::UnknownName, field.span, message).note(format!("its fields are: {names}")).emit();
        None
    }

    /// `threadIdx.x` and friends, or `None` if `name` is not one of them.
    fn special_register(&mut self, name: &str, field: &ast::Ident, span: Span) -> Option<Option<hir::Expr>> {
        use hir::Axis;
        let make_reg = special_register_kind(name)?;
        let axis = match field.name.as_str() {
            "x" => Axis::X,
            "y" => Axis::Y,
            "z" => Axis::Z,
            _ => {
                self.error(Code::UnknownName, field.span, format!("`{name}` has no field `{}`", field.name)).note("its fields are: x, y, z").emit();
                return Some(None);
            }
        };
        let builtin = hir::Builtin::SpecialReg(make_reg(axis));
        Some(Some(make(ExprKind::Builtin { builtin, args: vec![] }, Type::UINT, span)))
    }

    fn construct(&mut self, ty: &ast::TypeName, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let target = self.resolve_type_name(ty)?;
        if target == Type::Dim3 {
            return self.dim3_ctor(args, span);
        }
        // `float(x)`, `S(a, b)`: C has casts, `(float)x`, and no constructors; CUDA's `dim3(x)`
        // is the one the kernel language keeps.
        let written = match &target {
            Type::Struct(id) => self.structs[id.0 as usize].name.clone(),
            other => DisplayType { ty: other, structs: &*self }.to_string(),
        };
        let error = crate::front::cdp::syntax::cuda_cxx_error(span, &format!("a functional cast or constructor call, `{written}(...)`,"));
        self.diags.push(error.with_note(format!("in C: a cast, `({})value`", DisplayType { ty: &target, structs: &*self })));
        None
    }

    /// `dim3(x)`, `dim3(x, y)`, `dim3(x, y, z)`: missing dimensions are 1.
    pub(super) fn dim3_ctor(&mut self, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        if args.len() > 3 {
            self.error(Code::CallArity, span, format!("`dim3` takes at most 3 values, found {}", args.len())).emit();
            return None;
        }
        let mut parts = Vec::new();
        for a in args {
            let e = self.expr(a)?;
            parts.push(self.coerce(e, &Type::UINT, Code::TypeMismatch, "a dim3 dimension must be an integer")?);
        }
        while parts.len() < 3 {
            parts.push(int_const(1, Type::UINT, span));
        }
        let z = parts.pop().expect("three parts");
        let y = parts.pop().expect("three parts");
        let x = parts.pop().expect("three parts");
        Some(make(ExprKind::Dim3 { x: boxed(x), y: boxed(y), z: boxed(z) }, Type::Dim3, span))
    }

    fn call(&mut self, callee: &ast::Expr, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        if let ast::ExprKind::Member { base, field, arrow } = &callee.kind {
            return self.member_call(base, field, *arrow, args, span);
        }
        // `op(x)`, `(*op)(x)`, `ops[i](x)`: a call through a pointer to a function.
        let ast::ExprKind::Ident(name) = &callee.kind else {
            let pointer = self.expr(callee)?;
            return self.call_indirect(pointer, args, span);
        };
        if self.lookup(&name.name).is_some() {
            let pointer = self.expr(callee)?;
            return self.call_indirect(pointer, args, span);
        }
        let Some(GlobalSymbol::Function(function)) = self.resolve_symbol(&name.name) else {
            return self.builtin_call(name, args, span);
        };
        // A prototype of one of CUDA's intrinsics (KLAP's QT declares `__device__ int
        // __shfl_up(int, unsigned int, int);`, as CUDA's headers once did) declares the
        // intrinsic, not a function of the program's.
        if super::intrinsics::is_intrinsic(&name.name) && self.functions[function.0 as usize].body.is_none() {
            return self.builtin_call(name, args, span);
        }
        let checked: Vec<Option<hir::Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let checked = checked.into_iter().collect::<Option<Vec<_>>>()?;
        if !self.accepts(function, &checked) {
            // A built-in (`sqrtf`, `make_float2(x, y)`) of the name of a program's function
            // that takes other arguments is still the built-in when these fit it.
            let checkpoint = self.diags.checkpoint();
            if let Some(call) = self.builtin_call(name, args, span) {
                return Some(call);
            }
            self.diags.restore(checkpoint);
        }
        self.finish_call_checked(function, checked, span)
    }

    /// Whether the arguments `args` convert to the parameters of `function`, quietly.
    fn accepts(&self, function: hir::FuncId, args: &[hir::Expr]) -> bool {
        let f = &self.functions[function.0 as usize];
        let decayed = |a: &hir::Expr| match self.decayed_type(a) {
            Some(ty) => hir::Expr { kind: ExprKind::Decay(Box::new(a.clone())), ty, span: a.span },
            None => a.clone(),
        };
        f.params.len() == args.len() && f.param_types().zip(args).all(|(p, a)| self.implicit_conversion_ok(&decayed(a), p).is_ok())
    }

    /// `s.op(x)`, `p->op(x)`: a call through a member that points to a function (a struct has
    /// no member functions: C).
    fn member_call(&mut self, base: &ast::Expr, field: &ast::Ident, arrow: bool, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let callee = self.member(base, field, arrow, callee_span(base, field))?;
        if !callee.ty.is_fn_ptr() {
            let message = format!("`{}` is a data member of type {}, not a pointer to a function", field.name, self.show(&callee.ty));
            self.error(Code::NotCallable, field.span, message).emit();
            return None;
        }
        self.call_indirect(callee, args, span)
    }

    /// A call of `function` with `args`, already checked (a built-in of the same name may take
    /// them instead): the arguments converted to the parameters' types.
    pub(super) fn finish_call_checked(&mut self, function: hir::FuncId, args: Vec<hir::Expr>, span: Span) -> Option<hir::Expr> {
        let f = &self.functions[function.0 as usize];
        if f.kind == hir::FunctionKind::Kernel {
            let fname = f.name.clone();
            self.error(Code::KernelCalledDirectly, span, format!("`{fname}` is a `__global__` kernel and cannot be called like a function"))
                .note(format!("launch it: `{fname}<<<grid, block>>>(...)`"))
                .emit();
            return None;
        }
        let params: Vec<Type> = f.param_types().cloned().collect();
        let (return_type, def_span, fname) = (f.return_type.clone(), f.span, f.name.clone());
        if args.len() != params.len() {
            self.error(Code::CallArity, span, format!("`{fname}` takes {} argument{}, but {} were given", params.len(), plural(params.len()), args.len())).label(def_span, "declared here").emit();
            return None;
        }
        let converted: Vec<Option<hir::Expr>> = args.into_iter().zip(&params).map(|(e, p)| self.coerce(e, p, Code::TypeMismatch, "argument has the wrong type")).collect();
        let args: Vec<hir::Expr> = converted.into_iter().collect::<Option<Vec<_>>>()?;
        self.record_call(function);
        Some(make(ExprKind::Call { func: function, args }, return_type, span))
    }
}

fn callee_span(base: &ast::Expr, field: &ast::Ident) -> Span {
    base.span.to(field.span)
}

impl Context {
    /// Checks each argument and converts it to its parameter's type; every bad argument is
    /// reported, not just the first.
    pub(super) fn convert_args(&mut self, args: &[ast::Expr], params: &[Type], code: Code, what: &str) -> Option<Vec<hir::Expr>> {
        let mut converted = Vec::new();
        for (a, p) in args.iter().zip(params) {
            let e = self.expr(a);
            converted.push(e.and_then(|e| self.coerce(e, p, code, what)));
        }
        converted.into_iter().collect()
    }
}

/// The special register behind `threadIdx`, `blockIdx`, `blockDim` or `gridDim`, per axis.
fn special_register_kind(name: &str) -> Option<fn(hir::Axis) -> hir::SpecialReg> {
    use hir::SpecialReg;
    Some(match name {
        "threadIdx" => SpecialReg::ThreadIdx,
        "blockIdx" => SpecialReg::BlockIdx,
        "blockDim" => SpecialReg::BlockDim,
        "gridDim" => SpecialReg::GridDim,
        _ => return None,
    })
}

fn comparison(op: AstBin) -> BinaryOp {
    match op {
        AstBin::Lt => BinaryOp::Lt,
        AstBin::Gt => BinaryOp::Gt,
        AstBin::Le => BinaryOp::Le,
        AstBin::Ge => BinaryOp::Ge,
        AstBin::Eq => BinaryOp::Eq,
        _ => BinaryOp::Ne,
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Levenshtein distance, for name suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = (previous + (ca != *cb) as usize).min(row[j] + 1).min(current + 1);
            previous = current;
        }
    }
    row[b.len()]
}
