//! Functions, statements and expressions.
//!
//! Locals live in allocas created in the entry block (mem2reg promotes them when optimising);
//! places are generic pointers; values are SSA registers of the register type.

use super::globals::poison;
use super::{internal, Codegen, FnState, R};
use crate::front::cdp::hir::{BinaryOp, Block, Expr, ExprKind, FunctionKind, Init, Stmt, UnaryOp};
use crate::types::{FloatKind, IntKind, Type};
use inkwell::module::Linkage;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};

use super::device_launch::PTX_KERNEL_CALL_CONV as PTX_KERNEL_CC;

/// What kind of LLVM value a HIR type is, for conversions and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Bool,
    Int { bits: u32, signed: bool },
    Float(FloatKind),
    Ptr,
    Aggregate,
    Void,
}

type BV<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Codegen<'ctx, '_> {
    pub(crate) fn class(&self, ty: &Type) -> Class {
        match ty {
            Type::Int(IntKind::Bool) => Class::Bool,
            Type::Int(kind) => Class::Int { bits: self.types.int_bits(*kind), signed: kind.is_signed(&self.hir.target) },
            Type::CudaError => Class::Int { bits: 32, signed: true },
            Type::Enum { underlying, .. } => self.class(&Type::Int(*underlying)),
            Type::Float(kind) => Class::Float(*kind),
            Type::Pointer { .. } | Type::Stream | Type::Event | Type::FnPtr(_) => Class::Ptr,
            Type::Array { .. } | Type::Struct(_) | Type::Dim3 => Class::Aggregate,
            Type::Void => Class::Void,
        }
    }

    // ---------------------------------------------------------------- functions

    pub(crate) fn declare_functions(&mut self) -> R<()> {
        for f in &self.hir.functions {
            let mut params: Vec<BasicMetadataTypeEnum> = Vec::new();
            for ty in f.param_types() {
                params.push(self.types.mem(ty)?.into());
            }
            let fn_ty = if f.return_type.is_void() { self.ctx.void_type().fn_type(&params, false) } else { self.types.mem(&f.return_type)?.fn_type(&params, false) };
            // External linkage keeps names exact and visible, like nvcc with -rdc; a `static`
            // function is internal (no `.visible`), as nvcc's are. C++'s inline functions
            // (`inline`, `__forceinline__`): nvcc writes no `.func` for one once every call is
            // inlined, and a `.weak` one otherwise (LLVM's linkonce_odr does both).
            let linkage = if f.internal {
                Linkage::Internal
            } else if f.attrs.odr_inline && f.kind != FunctionKind::Kernel && f.body.is_some() {
                Linkage::LinkOnceODR
            } else {
                Linkage::External
            };
            let fv = self.module.add_function(&f.symbol(self.hir), fn_ty, Some(linkage));
            if f.kind == FunctionKind::Kernel {
                fv.set_call_conventions(PTX_KERNEL_CC);
                if f.internal {
                    // Host code launches it by name: kept though no device code calls it.
                    self.used.push(fv.as_global_value().as_pointer_value());
                }
            }
            self.function_attributes(fv, &f.attrs);
            self.functions.push(fv);
        }
        Ok(())
    }

    /// `__forceinline__` and `__noinline__` as LLVM's `alwaysinline` and `noinline`;
    /// `__launch_bounds__` as NVPTX's `nvvm.maxntid` ("256,1,1", which prints `.maxntid 256, 1, 1`
    /// as nvcc does), `nvvm.minctasm` (`.minnctapersm`) and `nvvm.maxclusterrank`. A 0 asks
    /// nothing, as in nvcc. (The launch pipeline caps the registers of the kernels it changes
    /// on the IR, `pipeline::threshold::cap_registers`.)
    ///
    /// Every function is also `convergent`, as clang makes CUDA's: a call may hold warp-level
    /// operations (`__activemask`, `__ballot_sync`, a coalesced group), so that LLVM never
    /// merges or moves calls across branches that decide which threads run them (two calls in
    /// the two arms of an `if` must stay two). LLVM drops the attribute itself from functions
    /// that call nothing convergent.
    fn function_attributes(&self, fv: inkwell::values::FunctionValue<'ctx>, attrs: &crate::front::cdp::hir::FnAttrs) {
        use inkwell::attributes::{Attribute, AttributeLoc};
        let convergent = Attribute::get_named_enum_kind_id("convergent");
        fv.add_attribute(AttributeLoc::Function, self.ctx.create_enum_attribute(convergent, 0));
        if let Some(inline) = attrs.inline {
            let kind = Attribute::get_named_enum_kind_id(if inline { "alwaysinline" } else { "noinline" });
            fv.add_attribute(AttributeLoc::Function, self.ctx.create_enum_attribute(kind, 0));
        }
        let string = |key: &str, value: String| fv.add_attribute(AttributeLoc::Function, self.ctx.create_string_attribute(key, &value));
        let Some(bounds) = attrs.launch_bounds else { return };
        if bounds.max_threads > 0 {
            string("nvvm.maxntid", format!("{},1,1", bounds.max_threads));
        }
        if let Some(min) = bounds.min_blocks.filter(|&m| m > 0) {
            string("nvvm.minctasm", min.to_string());
        }
        if let Some(max) = bounds.max_blocks_per_cluster.filter(|&m| m > 0) {
            string("nvvm.maxclusterrank", max.to_string());
        }
    }

    pub(crate) fn define_function(&mut self, index: usize) -> R<()> {
        let f = &self.hir.functions[index];
        let Some(body) = &f.body else { return Ok(()) };
        let fv = self.functions[index];
        let entry = self.ctx.append_basic_block(fv, "entry");
        let start = self.ctx.append_basic_block(fv, "start");
        self.debug_begin_function(fv, f);
        self.builder.position_at_end(entry);
        self.builder.build_unconditional_branch(start)?;
        self.fs = Some(FnState { index, llvm: fv, locals: Vec::new(), entry, loops: Vec::new(), labels: Default::default(), launches: 0 });
        let mut locals = Vec::with_capacity(f.locals.len());
        for local in &f.locals {
            locals.push(self.entry_alloca(&local.ty, &local.name)?);
        }
        self.builder.position_at_end(start);
        for (i, id) in f.params.iter().enumerate() {
            let Some(value) = fv.get_nth_param(i as u32) else {
                return internal(format!("{}: missing parameter {i}", f.name));
            };
            let Some(ptr) = locals.get(id.0 as usize).copied() else {
                return internal(format!("{}: parameter local {} out of range", f.name, id.0));
            };
            let ty = &f.local(*id).ty;
            self.store_mem(ptr, value, ty)?;
            self.debug_variable(f.local(*id), i as u32 + 1, ptr);
        }
        for (i, local) in f.locals.iter().enumerate() {
            if !f.params.iter().any(|p| p.0 as usize == i) {
                self.debug_variable(local, 0, locals[i]);
            }
        }
        self.fs_mut()?.locals = locals;
        self.block(body)?;
        if !self.terminated() {
            // The implicit return is at the closing brace.
            self.debug_at(crate::diag::Span::new(f.span.end.saturating_sub(1) as usize, f.span.end as usize));
            if f.return_type.is_void() {
                self.builder.build_return(None)?;
            } else {
                // Falling off the end of a non-void function: the value is undefined in C.
                let v = poison(self.types.mem(&f.return_type)?);
                self.builder.build_return(Some(&v))?;
            }
        }
        self.fs = None;
        self.debug_end_function();
        Ok(())
    }

    /// Storage in the entry block (so it is allocated once), as a generic pointer.
    pub(crate) fn entry_alloca_raw(&mut self, llvm_ty: BasicTypeEnum<'ctx>, align: u64, name: &str) -> R<PointerValue<'ctx>> {
        let entry = self.fs()?.entry;
        let Some(term) = entry.get_terminator() else { return internal("entry block without terminator") };
        let b = self.ctx.create_builder();
        b.position_before(&term);
        let ptr = b.build_alloca(llvm_ty, name)?;
        if let Some(inst) = ptr.as_instruction_value() {
            inst.set_alignment(align.max(1) as u32).map_err(|e| super::BackendError::Internal(e.to_string()))?;
        }
        // The data layout may put allocas in the local address space; HIR pointers are generic.
        if ptr.get_type().get_address_space() != AddressSpace::default() {
            return Ok(b.build_address_space_cast(ptr, self.types.ptr(), name)?);
        }
        Ok(ptr)
    }

    fn entry_alloca(&mut self, ty: &Type, name: &str) -> R<PointerValue<'ctx>> {
        let llvm_ty = self.types.mem(ty)?;
        let align = self.hir.size_align(ty).1;
        self.entry_alloca_raw(llvm_ty, align, name)
    }

    pub(crate) fn terminated(&self) -> bool {
        self.builder.get_insert_block().and_then(|b| b.get_terminator()).is_some()
    }

    fn new_block(&self, name: &str) -> R<inkwell::basic_block::BasicBlock<'ctx>> {
        Ok(self.ctx.append_basic_block(self.fs()?.llvm, name))
    }

    // ---------------------------------------------------------------- statements

    fn block(&mut self, block: &Block) -> R<()> {
        for stmt in &block.stmts {
            // Code after return/break/continue/goto is unreachable unless a label in it is
            // jumped to: emit nothing for it, or emit it into a block without predecessors.
            if self.terminated() {
                if !stmt.has_label() {
                    continue;
                }
                if !matches!(stmt, Stmt::Label(_)) {
                    let dead = self.new_block("unreachable")?;
                    self.builder.position_at_end(dead);
                }
            }
            self.stmt(stmt)?;
        }
        Ok(())
    }

    /// The block of label `id`.
    fn label_block(&mut self, id: crate::front::cdp::hir::LabelId) -> R<inkwell::basic_block::BasicBlock<'ctx>> {
        if let Some(bb) = self.fs()?.labels.get(&id) {
            return Ok(*bb);
        }
        let bb = self.new_block("label")?;
        self.fs_mut()?.labels.insert(id, bb);
        Ok(bb)
    }

    fn stmt(&mut self, stmt: &Stmt) -> R<()> {
        if let Some(span) = stmt_span(stmt) {
            self.debug_at(span);
        }
        match stmt {
            Stmt::Decl { local, init } => {
                if let Some(init) = init {
                    let ptr = self.local_ptr(local.0)?;
                    let decl = self.hir.functions[self.fs()?.index].local(*local);
                    let (ty, volatile) = (decl.ty.clone(), decl.volatile);
                    match init {
                        // `volatile int x = v;` stores as every later access does.
                        Init::Expr(e) if volatile => {
                            let v = self.value(e)?;
                            self.store_access(ptr, v, &ty, true)?;
                        }
                        _ => self.init(ptr, &ty, init)?,
                    }
                }
            }
            Stmt::Expr(e) => {
                self.expr(e)?;
            }
            Stmt::If { cond, then, otherwise } => {
                let c = self.cond(cond)?;
                let then_bb = self.new_block("if.then")?;
                let merge_bb = self.new_block("if.end")?;
                let else_bb = if otherwise.is_some() { self.new_block("if.else")? } else { merge_bb };
                self.builder.build_conditional_branch(c, then_bb, else_bb)?;
                self.builder.position_at_end(then_bb);
                self.block(then)?;
                if !self.terminated() {
                    self.builder.build_unconditional_branch(merge_bb)?;
                }
                if let Some(otherwise) = otherwise {
                    self.builder.position_at_end(else_bb);
                    self.block(otherwise)?;
                    if !self.terminated() {
                        self.builder.build_unconditional_branch(merge_bb)?;
                    }
                }
                self.builder.position_at_end(merge_bb);
            }
            Stmt::Loop { init, cond, step, body, check_cond_first } => {
                self.block(init)?;
                if self.terminated() {
                    return Ok(());
                }
                let cond_bb = self.new_block("loop.cond")?;
                let body_bb = self.new_block("loop.body")?;
                let step_bb = self.new_block("loop.step")?;
                let exit_bb = self.new_block("loop.end")?;
                self.builder.build_unconditional_branch(if *check_cond_first { cond_bb } else { body_bb })?;
                self.builder.position_at_end(cond_bb);
                match cond {
                    Some(c) => {
                        let c = self.cond(c)?;
                        self.builder.build_conditional_branch(c, body_bb, exit_bb)?;
                    }
                    None => {
                        self.builder.build_unconditional_branch(body_bb)?;
                    }
                }
                self.builder.position_at_end(body_bb);
                self.fs_mut()?.loops.push((Some(step_bb), exit_bb));
                let result = self.block(body);
                self.fs_mut()?.loops.pop();
                result?;
                if !self.terminated() {
                    self.builder.build_unconditional_branch(step_bb)?;
                }
                self.builder.position_at_end(step_bb);
                if let Some(step) = step {
                    self.expr(step)?;
                }
                self.builder.build_unconditional_branch(cond_bb)?;
                self.builder.position_at_end(exit_bb);
            }
            Stmt::Break => {
                let Some((_, exit)) = self.fs()?.loops.last().copied() else { return internal("break outside a loop") };
                self.builder.build_unconditional_branch(exit)?;
            }
            Stmt::Continue => {
                let Some(step) = self.fs()?.loops.iter().rev().find_map(|(step, _)| *step) else {
                    return internal("continue outside a loop");
                };
                self.builder.build_unconditional_branch(step)?;
            }
            Stmt::Switch { cond, body, cases, default } => {
                let value = self.value(cond)?.into_int_value();
                let exit_bb = self.new_block("switch.end")?;
                let default_bb = match default {
                    Some(id) => self.label_block(*id)?,
                    None => exit_bb,
                };
                let mut targets = Vec::with_capacity(cases.len());
                for (bits, id) in cases {
                    let v = self.int_const(&cond.ty, *bits)?.into_int_value();
                    targets.push((v, self.label_block(*id)?));
                }
                self.builder.build_switch(value, default_bb, &targets)?;
                // The body before the first label is reached only by jumps into it.
                let start = self.new_block("switch.body")?;
                self.builder.position_at_end(start);
                self.fs_mut()?.loops.push((None, exit_bb));
                let result = self.block(body);
                self.fs_mut()?.loops.pop();
                result?;
                if !self.terminated() {
                    self.builder.build_unconditional_branch(exit_bb)?;
                }
                self.builder.position_at_end(exit_bb);
            }
            Stmt::Label(id) => {
                let bb = self.label_block(*id)?;
                if !self.terminated() {
                    self.builder.build_unconditional_branch(bb)?;
                }
                self.builder.position_at_end(bb);
            }
            Stmt::Goto(id) => {
                let bb = self.label_block(*id)?;
                self.builder.build_unconditional_branch(bb)?;
            }
            Stmt::Return(value) => match value {
                Some(e) => {
                    let v = self.value(e)?;
                    let v = self.reg_to_mem(v, &e.ty)?;
                    self.builder.build_return(Some(&v))?;
                }
                None => {
                    self.builder.build_return(None)?;
                }
            },
            Stmt::Block(b) => self.block(b)?,
            Stmt::Asm(a) => self.inline_asm(a)?,
        }
        Ok(())
    }

    fn local_ptr(&self, id: u32) -> R<PointerValue<'ctx>> {
        match self.fs()?.locals.get(id as usize) {
            Some(p) => Ok(*p),
            None => internal(format!("local {id} out of range")),
        }
    }

    /// Stores an initializer; a brace list zero-fills the object first, as C requires.
    fn init(&mut self, ptr: PointerValue<'ctx>, ty: &Type, init: &Init) -> R<()> {
        match init {
            Init::Expr(e) if Self::is_place(e) && self.same_size(&e.ty, ty) && self.chunks(ty).is_some() && !self.is_volatile(e)? => {
                let src = self.place(e)?;
                self.copy_memory(ptr, src, ty)
            }
            Init::Expr(e) => {
                let v = self.value(e)?;
                self.store(ptr, v, ty)
            }
            Init::List(items) => {
                let (size, align) = self.hir.size_align(ty);
                match ty {
                    Type::Array { elem, .. } => {
                        self.zero_fill(ptr, size, align)?;
                        let elem_ty = self.types.mem(elem)?;
                        for (i, item) in items.iter().enumerate() {
                            let idx = self.types.intptr().const_int(i as u64, false);
                            // SAFETY: the index is within the array, whose size sema checked.
                            let p = unsafe { self.builder.build_in_bounds_gep(elem_ty, ptr, &[idx], "init.elem")? };
                            self.init(p, elem, item)?;
                        }
                        Ok(())
                    }
                    // `union U u = { v };`: the first member.
                    Type::Struct(_) if self.types.is_union(ty) => {
                        self.zero_fill(ptr, size, align)?;
                        match items.first() {
                            Some(item) => {
                                let fty = self.types.field_type(self.hir, ty, 0)?;
                                self.init(ptr, &fty, item)
                            }
                            None => Ok(()),
                        }
                    }
                    Type::Struct(_) | Type::Dim3 => {
                        self.zero_fill(ptr, size, align)?;
                        let llvm_ty = self.types.mem(ty)?.into_struct_type();
                        for (i, item) in items.iter().enumerate() {
                            if let Some((bf, fty)) = self.hir_bit_field(ty, i) {
                                // `{ 5 }` or `{ { 5 } }`: one value, already of the field's value type.
                                let mut item = item;
                                while let Init::List(inner) = item {
                                    let Some(first) = inner.first() else { break };
                                    item = first;
                                }
                                if let Init::Expr(e) = item {
                                    let v = self.value(e)?;
                                    let p = self.field_byte_ptr(ptr, ty, i as u32)?;
                                    self.store_bit_field(p, bf, v, &fty, false)?;
                                }
                                continue;
                            }
                            let slot = self.types.field_slot(ty, i as u32)?;
                            let fty = self.types.field_type(self.hir, ty, i as u32)?;
                            let p = self.builder.build_struct_gep(llvm_ty, ptr, slot, "init.field")?;
                            self.init(p, &fty, item)?;
                        }
                        Ok(())
                    }
                    // `int x = { 5 };`
                    _ => match items.first() {
                        Some(item) => self.init(ptr, ty, item),
                        None => {
                            let zero = self.types.mem(ty)?.const_zero();
                            self.store_mem(ptr, zero, ty)
                        }
                    },
                }
            }
        }
    }

    fn zero_fill(&mut self, ptr: PointerValue<'ctx>, size: u64, align: u64) -> R<()> {
        let zero = self.ctx.i8_type().const_zero();
        let len = self.types.intptr().const_int(size, false);
        self.builder.build_memset(ptr, align.max(1) as u32, zero, len)?;
        Ok(())
    }

    // ---------------------------------------------------------------- memory

    /// Register value to memory representation (`bool`: i1 to i8).
    pub(crate) fn reg_to_mem(&self, v: BV<'ctx>, ty: &Type) -> R<BV<'ctx>> {
        if self.class(ty) == Class::Bool {
            return Ok(self.builder.build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "bool.mem")?.into());
        }
        Ok(v)
    }

    /// Memory representation to register value (`bool`: i8 to i1).
    pub(crate) fn mem_to_reg(&self, v: BV<'ctx>, ty: &Type) -> R<BV<'ctx>> {
        if self.class(ty) == Class::Bool {
            let zero = self.ctx.i8_type().const_zero();
            return Ok(self.builder.build_int_compare(IntPredicate::NE, v.into_int_value(), zero, "bool.reg")?.into());
        }
        Ok(v)
    }

    /// Loads with the type's alignment; `volatile` as the place requires (`ld.volatile`).
    pub(crate) fn load_access(&self, ptr: PointerValue<'ctx>, ty: &Type, volatile: bool) -> R<BV<'ctx>> {
        if self.split_access(ty, volatile) {
            return super::split::load(&self.builder, &self.td, ptr, self.types.mem(ty)?, self.align_of(ty));
        }
        let v = self.builder.build_load(self.types.mem(ty)?, ptr, "load")?;
        self.set_align(v.as_instruction_value(), ty)?;
        self.set_volatile(v.as_instruction_value(), volatile)?;
        self.mem_to_reg(v, ty)
    }

    /// Loads the value of the place `e` at `ptr` (a bit-field's bits, or the object).
    fn load_place(&self, ptr: PointerValue<'ctx>, e: &Expr) -> R<BV<'ctx>> {
        let volatile = self.is_volatile(e)?;
        match self.bit_field(e) {
            Some(bf) => self.load_bit_field(ptr, bf, &e.ty, volatile),
            None => self.load_access(ptr, &e.ty, volatile),
        }
    }

    /// Stores `v` into the place `e` at `ptr`; the value the place then holds (`v` but for a
    /// bit-field, which keeps only its width).
    fn store_place(&self, ptr: PointerValue<'ctx>, e: &Expr, v: BV<'ctx>) -> R<BV<'ctx>> {
        let volatile = self.is_volatile(e)?;
        match self.bit_field(e) {
            Some(bf) => self.store_bit_field(ptr, bf, v, &e.ty, volatile),
            None => self.store_access(ptr, v, &e.ty, volatile).map(|()| v),
        }
    }

    /// Stores a register value.
    pub(crate) fn store(&self, ptr: PointerValue<'ctx>, v: BV<'ctx>, ty: &Type) -> R<()> {
        self.store_access(ptr, v, ty, false)
    }

    pub(crate) fn store_access(&self, ptr: PointerValue<'ctx>, v: BV<'ctx>, ty: &Type, volatile: bool) -> R<()> {
        let v = self.reg_to_mem(v, ty)?;
        if self.split_access(ty, volatile) {
            return super::split::store(&self.builder, &self.td, ptr, v, self.align_of(ty));
        }
        let inst = self.builder.build_store(ptr, v)?;
        self.set_align(Some(inst), ty)?;
        self.set_volatile(Some(inst), volatile)
    }

    /// Stores a value already in memory representation, with the type's alignment.
    pub(crate) fn store_mem(&self, ptr: PointerValue<'ctx>, v: BV<'ctx>, ty: &Type) -> R<()> {
        if self.split_access(ty, false) {
            return super::split::store(&self.builder, &self.td, ptr, v, self.align_of(ty));
        }
        let inst = self.builder.build_store(ptr, v)?;
        self.set_align(Some(inst), ty)
    }

    /// Marks a float add, subtract, multiply or negation `contract` under `-fmad=true` (the
    /// default): an operation the program wrote, which `contract.rs` may fuse as nvcc does after
    /// LLVM's pipeline (and then clears the flag, so that LLVM itself fuses nothing).
    fn contract(&self, v: inkwell::values::FloatValue<'ctx>) {
        if self.fmad == super::Fmad::Contract {
            if let Some(inst) = v.as_instruction() {
                let _ = inst.set_fast_math_flags(inkwell::values::FastMathFlags::AllowContract);
            }
        }
    }

    /// Whether accesses to the place `e` are volatile (`hir::is_volatile_place`).
    pub(crate) fn is_volatile(&self, e: &Expr) -> R<bool> {
        let f = &self.hir.functions[self.fs()?.index];
        Ok(crate::front::cdp::hir::is_volatile_place(e, &f.locals, &self.hir.globals, &self.hir.structs))
    }

    fn set_volatile(&self, inst: Option<inkwell::values::InstructionValue<'ctx>>, volatile: bool) -> R<()> {
        match inst {
            Some(inst) if volatile => inst.set_volatile(true).map_err(|e| super::BackendError::Internal(e.to_string())),
            _ => Ok(()),
        }
    }

    /// Whether an access of `ty` goes element by element (`split.rs`, where the reason is): a
    /// struct or array that is not volatile and holds no union (a union's other members may
    /// overlap its first member's padding, which an element-wise copy would not carry).
    fn split_access(&self, ty: &Type, volatile: bool) -> bool {
        fn holds_union(hir: &crate::front::cdp::hir::Module, ty: &Type) -> bool {
            match ty {
                Type::Struct(id) => hir.structs.get(id.0 as usize).is_none_or(|def| def.union || def.fields.iter().any(|f| holds_union(hir, &f.ty))),
                Type::Array { elem, .. } => holds_union(hir, elem),
                _ => false,
            }
        }
        !volatile && matches!(ty, Type::Struct(_) | Type::Array { .. }) && !holds_union(self.hir, ty)
    }

    /// Whether `place = value` copies memory to memory (`copy_memory`): a struct or array
    /// value read from a place of the same size, neither side volatile.
    fn copies_as_memory(&self, place: &Expr, value: &Expr) -> R<bool> {
        Ok(Self::is_place(value) && self.same_size(&value.ty, &place.ty) && self.chunks(&place.ty).is_some() && !self.is_volatile(place)? && !self.is_volatile(value)?)
    }

    /// The chunks, `(offset, bytes)`, in which an object of struct or array type `ty` is copied:
    /// each as wide as the type's alignment up to 16 bytes (`ld.v4.b32`), at most
    /// [`super::split::MAX_ACCESSES`] of them; `None` for other types and larger objects.
    fn chunks(&self, ty: &Type) -> Option<Vec<(u64, u64)>> {
        if !matches!(ty, Type::Struct(_) | Type::Array { .. }) {
            return None;
        }
        let (size, align) = self.hir.size_align(ty);
        let width = align.clamp(1, 16);
        if size == 0 || size.div_ceil(width) > super::split::MAX_ACCESSES {
            return None;
        }
        let mut chunks = Vec::new();
        let mut offset = 0;
        while offset < size {
            // The tail (none when the size is a multiple of the alignment, as C's are) in
            // halves, each still aligned where it starts.
            let mut w = width;
            while offset + w > size {
                w /= 2;
            }
            chunks.push((offset, w));
            offset += w;
        }
        Some(chunks)
    }

    /// Copies an object of type `ty` from `src` to `dst` as nvcc copies a struct: in `<N x i8>`
    /// chunks of its alignment (`chunks`), which NVPTX loads and stores as 4-, 8- or 16-byte
    /// accesses. Every byte is copied, padding and a union's other members included, and
    /// byte by byte in the IR's semantics (a vector of bytes keeps each byte's own state).
    /// Not a `memcpy`: NVPTX makes one of 128 bytes or more a loop of single bytes.
    fn copy_memory(&self, dst: PointerValue<'ctx>, src: PointerValue<'ctx>, ty: &Type) -> R<()> {
        let Some(chunks) = self.chunks(ty) else {
            return internal(format!("copy_memory of {ty:?}"));
        };
        let align = self.align_of(ty);
        let i8 = self.ctx.i8_type();
        for (offset, bytes) in chunks {
            let chunk = i8.vec_type(bytes as u32);
            let idx = self.types.intptr().const_int(offset, false);
            // SAFETY: offset + bytes is within the object (`chunks`).
            let (from, to) = unsafe { (self.builder.build_in_bounds_gep(i8, src, &[idx], "copy.src")?, self.builder.build_in_bounds_gep(i8, dst, &[idx], "copy.dst")?) };
            let v = self.builder.build_load(chunk, from, "copy")?;
            let at = if offset == 0 { align } else { align.min(1 << offset.trailing_zeros().min(31)) };
            if let Some(inst) = v.as_instruction_value() {
                inst.set_alignment(at).map_err(|e| super::BackendError::Internal(e.to_string()))?;
            }
            let store = self.builder.build_store(to, v)?;
            store.set_alignment(at).map_err(|e| super::BackendError::Internal(e.to_string()))?;
        }
        Ok(())
    }

    /// Whether objects of types `a` and `b` have the same size: a copy of one into the other
    /// reads no byte past its source (a `char[8]` initialised from a `char[4]` string does not
    /// qualify).
    fn same_size(&self, a: &Type, b: &Type) -> bool {
        self.hir.size_align(a).0 == self.hir.size_align(b).0
    }

    fn align_of(&self, ty: &Type) -> u32 {
        self.hir.size_align(ty).1.max(1) as u32
    }

    fn set_align(&self, inst: Option<inkwell::values::InstructionValue<'ctx>>, ty: &Type) -> R<()> {
        if let Some(inst) = inst {
            let align = self.align_of(ty);
            inst.set_alignment(align).map_err(|e| super::BackendError::Internal(e.to_string()))?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- expressions

    fn is_place(e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Deref(_) => true,
            ExprKind::Member { base, .. } => Self::is_place(base),
            _ => false,
        }
    }

    /// The generic address of a place.
    pub(crate) fn place(&mut self, e: &Expr) -> R<PointerValue<'ctx>> {
        match &e.kind {
            ExprKind::Local(id) => self.local_ptr(id.0),
            ExprKind::Global(id) => self.global_ptr(*id),
            ExprKind::Deref(p) => Ok(self.value(p)?.into_pointer_value()),
            ExprKind::Member { base, index } if Self::is_place(base) => {
                let base_ptr = self.place(base)?;
                if self.bit_field(e).is_some() {
                    return self.field_byte_ptr(base_ptr, &base.ty, *index);
                }
                if self.types.is_union(&base.ty) {
                    return Ok(base_ptr);
                }
                let slot = self.types.field_slot(&base.ty, *index)?;
                let llvm_ty = self.types.mem(&base.ty)?.into_struct_type();
                Ok(self.builder.build_struct_gep(llvm_ty, base_ptr, slot, "member")?)
            }
            other => internal(format!("not a place: {other:?}")),
        }
    }

    /// An expression that must produce a value.
    pub(crate) fn value(&mut self, e: &Expr) -> R<BV<'ctx>> {
        match self.expr(e)? {
            Some(v) => Ok(v),
            None => internal(format!("void expression used as a value: {:?}", e.kind)),
        }
    }

    /// A scalar condition as i1.
    pub(crate) fn cond(&mut self, e: &Expr) -> R<IntValue<'ctx>> {
        let v = self.value(e)?;
        Ok(self.to_bool(v, &e.ty)?.into_int_value())
    }

    fn int_const(&self, ty: &Type, bits_value: i64) -> R<BV<'ctx>> {
        Ok(match self.class(ty) {
            Class::Bool => self.ctx.bool_type().const_int((bits_value != 0) as u64, false).into(),
            Class::Int { bits, .. } => {
                let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
                self.types.reg(ty)?.into_int_type().const_int(bits_value as u64 & mask, false).into()
            }
            Class::Float(_) => self.types.reg(ty)?.into_float_type().const_float(bits_value as f64).into(),
            Class::Ptr => self.ptr_const(bits_value as u64),
            _ => return internal(format!("integer constant of type {ty:?}")),
        })
    }

    fn ptr_const(&self, v: u64) -> BV<'ctx> {
        if v == 0 {
            self.types.ptr().const_null().into()
        } else {
            self.types.intptr().const_int(v, false).const_to_pointer(self.types.ptr()).into()
        }
    }

    pub(crate) fn expr(&mut self, e: &Expr) -> R<Option<BV<'ctx>>> {
        let v: BV<'ctx> = match &e.kind {
            ExprKind::IntConst(v) => self.int_const(&e.ty, *v)?,
            ExprKind::FloatConst(v) => match self.class(&e.ty) {
                Class::Float(FloatKind::Float) => self.ctx.f32_type().const_float(*v as f32 as f64).into(),
                Class::Float(FloatKind::Double) => self.ctx.f64_type().const_float(*v).into(),
                _ => return internal(format!("float constant of type {:?}", e.ty)),
            },
            ExprKind::PointerConst(v) => self.ptr_const(*v),
            ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Deref(_) => {
                let ptr = self.place(e)?;
                self.load_access(ptr, &e.ty, self.is_volatile(e)?)?
            }
            ExprKind::Member { base, index } => {
                if Self::is_place(base) {
                    let ptr = self.place(e)?;
                    self.load_place(ptr, e)?
                } else if let Some(bf) = self.bit_field(e) {
                    // A bit-field of a struct value (`f().b`): through memory, like a union's.
                    let agg = self.value(base)?;
                    let tmp = self.entry_alloca(&base.ty, "bitfield.tmp")?;
                    self.store_mem(tmp, agg, &base.ty)?;
                    let ptr = self.field_byte_ptr(tmp, &base.ty, *index)?;
                    self.load_bit_field(ptr, bf, &e.ty, false)?
                } else if self.types.is_union(&base.ty) {
                    // A member of a union value (`f().x`): through memory, where they overlap.
                    let agg = self.value(base)?;
                    let tmp = self.entry_alloca(&base.ty, "union.tmp")?;
                    self.store_mem(tmp, agg, &base.ty)?;
                    self.load_access(tmp, &e.ty, false)?
                } else {
                    let agg = self.value(base)?;
                    let slot = self.types.field_slot(&base.ty, *index)?;
                    let v = self.builder.build_extract_value(agg.into_struct_value(), slot, "field")?;
                    self.mem_to_reg(v, &e.ty)?
                }
            }
            ExprKind::AddrOf(place) | ExprKind::Decay(place) => self.place(place)?.into(),
            ExprKind::Cast(operand) => {
                let v = self.expr(operand)?;
                if e.ty.is_void() {
                    return Ok(None);
                }
                let Some(v) = v else { return internal("cast of a void expression to a value") };
                self.cast(v, &operand.ty, &e.ty)?
            }
            ExprKind::Unary { op, operand } => {
                let v = self.value(operand)?;
                match op {
                    UnaryOp::Neg => match self.class(&e.ty) {
                        Class::Float(_) => {
                            // `contract` too, so that `-(a * b) + c` stays contractable once
                            // LLVM folds the negation into the multiply (contract.rs).
                            let v = self.builder.build_float_neg(v.into_float_value(), "neg")?;
                            self.contract(v);
                            v.into()
                        }
                        _ => self.builder.build_int_neg(v.into_int_value(), "neg")?.into(),
                    },
                    UnaryOp::BitNot => self.builder.build_not(v.into_int_value(), "not")?.into(),
                    UnaryOp::Not => {
                        let b = self.to_bool(v, &operand.ty)?.into_int_value();
                        let n = self.builder.build_not(b, "lnot")?;
                        self.bool_to(n, &e.ty)?
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.value(lhs)?;
                let r = self.value(rhs)?;
                self.binop(*op, l, r, &lhs.ty, &rhs.ty, &e.ty)?
            }
            ExprKind::LogicalAnd { lhs, rhs } => self.logical(lhs, rhs, true, &e.ty)?,
            ExprKind::LogicalOr { lhs, rhs } => self.logical(lhs, rhs, false, &e.ty)?,
            ExprKind::Conditional { cond, then, otherwise } => return self.conditional(cond, then, otherwise, &e.ty),
            ExprKind::Comma { lhs, rhs } => {
                self.expr(lhs)?;
                return self.expr(rhs);
            }
            ExprKind::Assign { place, value } if self.copies_as_memory(place, value)? => {
                // The right operand's address first, then the place's, as for a value.
                let src = self.place(value)?;
                let dst = self.place(place)?;
                self.copy_memory(dst, src, &place.ty)?;
                // The assignment's value, should anything use it (else removed as dead).
                self.load_access(dst, &place.ty, false)?
            }
            ExprKind::Assign { place, value } => {
                // Like clang: the right operand first, then the place's address.
                let v = self.value(value)?;
                let ptr = self.place(place)?;
                self.store_place(ptr, place, v)?
            }
            ExprKind::CompoundAssign { op, place, value, op_type } => {
                let r = self.value(value)?;
                let ptr = self.place(place)?;
                let old = self.load_place(ptr, place)?;
                let l = self.cast(old, &place.ty, op_type)?;
                let result = self.binop(*op, l, r, op_type, &value.ty, op_type)?;
                let new = self.cast(result, op_type, &place.ty)?;
                self.store_place(ptr, place, new)?
            }
            ExprKind::IncDec { place, increment, prefix } => {
                let ptr = self.place(place)?;
                let old = self.load_place(ptr, place)?;
                let new = self.inc_dec(old, &place.ty, *increment)?;
                let new = self.store_place(ptr, place, new)?;
                if *prefix {
                    new
                } else {
                    old
                }
            }
            ExprKind::Call { func, args } => {
                let Some(callee) = self.functions.get(func.0 as usize).copied() else {
                    return internal(format!("unknown function {}", func.0));
                };
                let mut values: Vec<BasicMetadataValueEnum> = Vec::with_capacity(args.len());
                for a in args {
                    let v = self.value(a)?;
                    values.push(self.reg_to_mem(v, &a.ty)?.into());
                }
                let call = self.builder.build_call(callee, &values, "call")?;
                if e.ty.is_void() {
                    return Ok(None);
                }
                match call.try_as_basic_value() {
                    inkwell::values::ValueKind::Basic(v) => self.mem_to_reg(v, &e.ty)?,
                    _ => return internal("call of a void function used as a value"),
                }
            }
            ExprKind::FuncAddr(func) => match self.functions.get(func.0 as usize) {
                Some(f) => f.as_global_value().as_pointer_value().into(),
                None => return internal(format!("unknown function {}", func.0)),
            },
            ExprKind::CallIndirect { callee, args } => {
                let Type::FnPtr(sig) = &callee.ty else { return internal(format!("call through {:?}", callee.ty)) };
                let target = self.value(callee)?.into_pointer_value();
                let mut params: Vec<BasicMetadataTypeEnum> = Vec::with_capacity(sig.params.len());
                for ty in &sig.params {
                    params.push(self.types.mem(ty)?.into());
                }
                let fn_type = if sig.ret.is_void() { self.ctx.void_type().fn_type(&params, false) } else { self.types.mem(&sig.ret)?.fn_type(&params, false) };
                let mut values: Vec<BasicMetadataValueEnum> = Vec::with_capacity(args.len());
                for a in args {
                    let v = self.value(a)?;
                    values.push(self.reg_to_mem(v, &a.ty)?.into());
                }
                let call = self.builder.build_indirect_call(fn_type, target, &values, "icall")?;
                if e.ty.is_void() {
                    return Ok(None);
                }
                match call.try_as_basic_value() {
                    inkwell::values::ValueKind::Basic(v) => self.mem_to_reg(v, &e.ty)?,
                    _ => return internal("call through a pointer to a void function used as a value"),
                }
            }
            ExprKind::Builtin { builtin, args } => return self.builtin(builtin, args, &e.ty),
            ExprKind::Dim3 { x, y, z } => {
                let vx = self.value(x)?;
                let vy = self.value(y)?;
                let vz = self.value(z)?;
                let mut agg: inkwell::values::AggregateValueEnum = self.types.dim3().get_undef().into();
                for (i, v) in [vx, vy, vz].into_iter().enumerate() {
                    agg = self.builder.build_insert_value(agg, v, i as u32, "dim3")?;
                }
                agg.as_basic_value_enum()
            }
            ExprKind::Launch(launch) => {
                self.launch(launch)?;
                return Ok(None);
            }
        };
        Ok(Some(v))
    }

    fn inc_dec(&self, old: BV<'ctx>, ty: &Type, increment: bool) -> R<BV<'ctx>> {
        Ok(match self.class(ty) {
            Class::Ptr => {
                let elem = self.pointee_mem(ty)?;
                let step = self.types.intptr().const_int(if increment { 1 } else { u64::MAX }, true);
                // SAFETY: pointer arithmetic within an object, as C requires.
                unsafe { self.builder.build_gep(elem, old.into_pointer_value(), &[step], "incdec")? }.into()
            }
            Class::Float(_) => {
                let one = old.into_float_value().get_type().const_float(1.0);
                if increment {
                    self.builder.build_float_add(old.into_float_value(), one, "inc")?.into()
                } else {
                    self.builder.build_float_sub(old.into_float_value(), one, "dec")?.into()
                }
            }
            // `b++` sets a bool; `b--` flips it (C++17 removed both, C keeps them).
            Class::Bool => {
                if increment {
                    self.ctx.bool_type().const_int(1, false).into()
                } else {
                    self.builder.build_not(old.into_int_value(), "dec")?.into()
                }
            }
            Class::Int { .. } => {
                let one = old.into_int_value().get_type().const_int(1, false);
                if increment {
                    self.builder.build_int_add(old.into_int_value(), one, "inc")?.into()
                } else {
                    self.builder.build_int_sub(old.into_int_value(), one, "dec")?.into()
                }
            }
            _ => return internal(format!("++/-- on {ty:?}")),
        })
    }

    /// The memory type a pointer points to; `void *` steps by bytes (a GNU extension).
    fn pointee_mem(&self, ptr_ty: &Type) -> R<BasicTypeEnum<'ctx>> {
        match ptr_ty.pointee() {
            Some(Type::Void) | None => Ok(self.ctx.i8_type().into()),
            Some(t) => self.types.mem(t),
        }
    }

    fn pointee_size(&self, ptr_ty: &Type) -> u64 {
        match ptr_ty.pointee() {
            Some(t) => self.hir.size_align(t).0,
            None => 1,
        }
    }

    /// i1 to the expression's integer type (comparisons and logical operators yield int).
    fn bool_to(&self, b: IntValue<'ctx>, ty: &Type) -> R<BV<'ctx>> {
        match self.class(ty) {
            Class::Bool => Ok(b.into()),
            Class::Int { .. } => Ok(self.builder.build_int_z_extend(b, self.types.reg(ty)?.into_int_type(), "bool.int")?.into()),
            _ => internal(format!("boolean result of type {ty:?}")),
        }
    }

    /// A scalar compared with zero, as i1.
    pub(crate) fn to_bool(&self, v: BV<'ctx>, ty: &Type) -> R<BV<'ctx>> {
        Ok(match self.class(ty) {
            Class::Bool => v,
            Class::Int { .. } => {
                let zero = v.into_int_value().get_type().const_zero();
                self.builder.build_int_compare(IntPredicate::NE, v.into_int_value(), zero, "tobool")?.into()
            }
            // C: a NaN is nonzero, so the unordered comparison.
            Class::Float(_) => {
                let zero = v.into_float_value().get_type().const_zero();
                self.builder.build_float_compare(FloatPredicate::UNE, v.into_float_value(), zero, "tobool")?.into()
            }
            Class::Ptr => self.builder.build_is_not_null(v.into_pointer_value(), "tobool")?.into(),
            _ => return internal(format!("condition of type {ty:?}")),
        })
    }

    /// Conversion between types, per C; the source's signedness picks sign or zero extension.
    pub(crate) fn cast(&self, v: BV<'ctx>, from: &Type, to: &Type) -> R<BV<'ctx>> {
        if from == to {
            return Ok(v);
        }
        let b = &self.builder;
        Ok(match (self.class(from), self.class(to)) {
            (_, Class::Bool) => self.to_bool(v, from)?,
            (Class::Bool, Class::Int { .. }) => b.build_int_z_extend(v.into_int_value(), self.types.reg(to)?.into_int_type(), "conv")?.into(),
            (Class::Int { signed, .. }, Class::Int { .. }) => b.build_int_cast_sign_flag(v.into_int_value(), self.types.reg(to)?.into_int_type(), signed, "conv")?.into(),
            (Class::Bool, Class::Float(_)) => b.build_unsigned_int_to_float(v.into_int_value(), self.types.reg(to)?.into_float_type(), "conv")?.into(),
            (Class::Int { signed, .. }, Class::Float(_)) => {
                let ft = self.types.reg(to)?.into_float_type();
                if signed {
                    b.build_signed_int_to_float(v.into_int_value(), ft, "conv")?.into()
                } else {
                    b.build_unsigned_int_to_float(v.into_int_value(), ft, "conv")?.into()
                }
            }
            (Class::Float(_), Class::Int { signed, .. }) => {
                let it = self.types.reg(to)?.into_int_type();
                if signed {
                    b.build_float_to_signed_int(v.into_float_value(), it, "conv")?.into()
                } else {
                    b.build_float_to_unsigned_int(v.into_float_value(), it, "conv")?.into()
                }
            }
            (Class::Float(_), Class::Float(_)) => b.build_float_cast(v.into_float_value(), self.types.reg(to)?.into_float_type(), "conv")?.into(),
            (Class::Ptr, Class::Ptr) => v,
            (Class::Int { signed, .. }, Class::Ptr) => {
                let wide = b.build_int_cast_sign_flag(v.into_int_value(), self.types.intptr(), signed, "conv")?;
                b.build_int_to_ptr(wide, self.types.ptr(), "conv")?.into()
            }
            (Class::Bool, Class::Ptr) => {
                let wide = b.build_int_z_extend(v.into_int_value(), self.types.intptr(), "conv")?;
                b.build_int_to_ptr(wide, self.types.ptr(), "conv")?.into()
            }
            (Class::Ptr, Class::Int { .. }) => b.build_ptr_to_int(v.into_pointer_value(), self.types.reg(to)?.into_int_type(), "conv")?.into(),
            (Class::Aggregate, Class::Aggregate) => v,
            (f, t) => return internal(format!("no conversion from {from:?} ({f:?}) to {to:?} ({t:?})")),
        })
    }

    /// A binary operator; `lty`/`rty` are the operands' types and `ty` the result's.
    pub(crate) fn binop(&self, op: BinaryOp, l: BV<'ctx>, r: BV<'ctx>, lty: &Type, rty: &Type, ty: &Type) -> R<BV<'ctx>> {
        let b = &self.builder;
        match op {
            BinaryOp::PtrAdd => {
                // The pointer may be on either side (`n + p`).
                let (p, pty, i, ity) = if self.class(lty) == Class::Ptr { (l, lty, r, rty) } else { (r, rty, l, lty) };
                let signed = !matches!(self.class(ity), Class::Int { signed: false, .. } | Class::Bool);
                let idx = b.build_int_cast_sign_flag(i.into_int_value(), self.types.intptr(), signed, "idx")?;
                let elem = self.pointee_mem(pty)?;
                // SAFETY: C pointer arithmetic; out-of-object results are UB in the source too.
                return Ok(unsafe { b.build_gep(elem, p.into_pointer_value(), &[idx], "ptradd")? }.into());
            }
            BinaryOp::PtrDiff => {
                let it = self.types.intptr();
                let li = b.build_ptr_to_int(l.into_pointer_value(), it, "lhs")?;
                let ri = b.build_ptr_to_int(r.into_pointer_value(), it, "rhs")?;
                let bytes = b.build_int_sub(li, ri, "diff")?;
                let size = self.pointee_size(lty).max(1);
                let elems = if size == 1 { bytes } else { b.build_int_exact_signed_div(bytes, it.const_int(size, false), "ptrdiff")? };
                return Ok(b.build_int_cast_sign_flag(elems, self.types.reg(ty)?.into_int_type(), true, "ptrdiff")?.into());
            }
            BinaryOp::Lt | BinaryOp::Gt | BinaryOp::Le | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => {
                let c = self.compare(op, l, r, lty)?;
                return self.bool_to(c, ty);
            }
            _ => {}
        }
        if let Class::Float(_) = self.class(ty) {
            let (l, r) = (l.into_float_value(), r.into_float_value());
            let v = match op {
                BinaryOp::Add => b.build_float_add(l, r, "fadd")?,
                BinaryOp::Sub => b.build_float_sub(l, r, "fsub")?,
                BinaryOp::Mul => b.build_float_mul(l, r, "fmul")?,
                BinaryOp::Div => b.build_float_div(l, r, "fdiv")?,
                BinaryOp::Rem => b.build_float_rem(l, r, "frem")?,
                _ => return internal(format!("{op:?} on floating point")),
            };
            if matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) {
                self.contract(v);
            }
            return Ok(v.into());
        }
        let signed = matches!(self.class(ty), Class::Int { signed: true, .. });
        let (l, r) = (l.into_int_value(), r.into_int_value());
        // Shifts: the right operand is converted to the left's type by sema; be lenient.
        let r = if r.get_type() != l.get_type() {
            let rsigned = matches!(self.class(rty), Class::Int { signed: true, .. });
            b.build_int_cast_sign_flag(r, l.get_type(), rsigned, "conv")?
        } else {
            r
        };
        Ok(match op {
            BinaryOp::Add => b.build_int_add(l, r, "add")?,
            BinaryOp::Sub => b.build_int_sub(l, r, "sub")?,
            BinaryOp::Mul => b.build_int_mul(l, r, "mul")?,
            BinaryOp::Div if signed => b.build_int_signed_div(l, r, "div")?,
            BinaryOp::Div => b.build_int_unsigned_div(l, r, "div")?,
            BinaryOp::Rem if signed => b.build_int_signed_rem(l, r, "rem")?,
            BinaryOp::Rem => b.build_int_unsigned_rem(l, r, "rem")?,
            BinaryOp::Shl => b.build_left_shift(l, r, "shl")?,
            BinaryOp::Shr => b.build_right_shift(l, r, signed, "shr")?,
            BinaryOp::BitAnd => b.build_and(l, r, "and")?,
            BinaryOp::BitOr => b.build_or(l, r, "or")?,
            BinaryOp::BitXor => b.build_xor(l, r, "xor")?,
            _ => return internal(format!("unexpected operator {op:?}")),
        }
        .into())
    }

    fn compare(&self, op: BinaryOp, l: BV<'ctx>, r: BV<'ctx>, ty: &Type) -> R<IntValue<'ctx>> {
        let b = &self.builder;
        Ok(match self.class(ty) {
            Class::Float(_) => {
                let pred = match op {
                    BinaryOp::Lt => FloatPredicate::OLT,
                    BinaryOp::Gt => FloatPredicate::OGT,
                    BinaryOp::Le => FloatPredicate::OLE,
                    BinaryOp::Ge => FloatPredicate::OGE,
                    BinaryOp::Eq => FloatPredicate::OEQ,
                    _ => FloatPredicate::UNE,
                };
                b.build_float_compare(pred, l.into_float_value(), r.into_float_value(), "fcmp")?
            }
            class => {
                let signed = matches!(class, Class::Int { signed: true, .. });
                let (l, r) = if class == Class::Ptr {
                    let it = self.types.intptr();
                    (b.build_ptr_to_int(l.into_pointer_value(), it, "lp")?, b.build_ptr_to_int(r.into_pointer_value(), it, "rp")?)
                } else {
                    (l.into_int_value(), r.into_int_value())
                };
                let pred = match (op, signed) {
                    (BinaryOp::Lt, true) => IntPredicate::SLT,
                    (BinaryOp::Lt, false) => IntPredicate::ULT,
                    (BinaryOp::Gt, true) => IntPredicate::SGT,
                    (BinaryOp::Gt, false) => IntPredicate::UGT,
                    (BinaryOp::Le, true) => IntPredicate::SLE,
                    (BinaryOp::Le, false) => IntPredicate::ULE,
                    (BinaryOp::Ge, true) => IntPredicate::SGE,
                    (BinaryOp::Ge, false) => IntPredicate::UGE,
                    (BinaryOp::Eq, _) => IntPredicate::EQ,
                    _ => IntPredicate::NE,
                };
                b.build_int_compare(pred, l, r, "icmp")?
            }
        })
    }

    /// Short-circuit `&&` (`is_and`) or `||`.
    fn logical(&mut self, lhs: &Expr, rhs: &Expr, is_and: bool, ty: &Type) -> R<BV<'ctx>> {
        let l = self.cond(lhs)?;
        let lhs_end = self.builder.get_insert_block();
        let rhs_bb = self.new_block(if is_and { "and.rhs" } else { "or.rhs" })?;
        let merge_bb = self.new_block(if is_and { "and.end" } else { "or.end" })?;
        if is_and {
            self.builder.build_conditional_branch(l, rhs_bb, merge_bb)?;
        } else {
            self.builder.build_conditional_branch(l, merge_bb, rhs_bb)?;
        }
        self.builder.position_at_end(rhs_bb);
        let r = self.cond(rhs)?;
        let rhs_end = self.builder.get_insert_block();
        self.builder.build_unconditional_branch(merge_bb)?;
        self.builder.position_at_end(merge_bb);
        let phi = self.builder.build_phi(self.ctx.bool_type(), "logical")?;
        let short = self.ctx.bool_type().const_int(!is_and as u64, false);
        let (Some(lhs_end), Some(rhs_end)) = (lhs_end, rhs_end) else { return internal("builder not positioned") };
        phi.add_incoming(&[(&short, lhs_end), (&r, rhs_end)]);
        self.bool_to(phi.as_basic_value().into_int_value(), ty)
    }

    fn conditional(&mut self, cond: &Expr, then: &Expr, otherwise: &Expr, ty: &Type) -> R<Option<BV<'ctx>>> {
        let c = self.cond(cond)?;
        let then_bb = self.new_block("cond.then")?;
        let else_bb = self.new_block("cond.else")?;
        let merge_bb = self.new_block("cond.end")?;
        self.builder.build_conditional_branch(c, then_bb, else_bb)?;
        self.builder.position_at_end(then_bb);
        let tv = self.expr(then)?;
        let then_end = self.builder.get_insert_block();
        self.builder.build_unconditional_branch(merge_bb)?;
        self.builder.position_at_end(else_bb);
        let ev = self.expr(otherwise)?;
        let else_end = self.builder.get_insert_block();
        self.builder.build_unconditional_branch(merge_bb)?;
        self.builder.position_at_end(merge_bb);
        if ty.is_void() {
            return Ok(None);
        }
        let (Some(tv), Some(ev), Some(then_end), Some(else_end)) = (tv, ev, then_end, else_end) else {
            return internal("conditional branch without a value");
        };
        let phi = self.builder.build_phi(self.types.reg(ty)?, "cond")?;
        phi.add_incoming(&[(&tv as &dyn BasicValue, then_end), (&ev as &dyn BasicValue, else_end)]);
        Ok(Some(phi.as_basic_value()))
    }
}

/// Where a statement is, for its line in the debug information: its first expression's span.
fn stmt_span(stmt: &Stmt) -> Option<crate::diag::Span> {
    match stmt {
        Stmt::Expr(e) | Stmt::If { cond: e, .. } | Stmt::Return(Some(e)) => Some(e.span),
        Stmt::Loop { cond: Some(e), .. } => Some(e.span),
        Stmt::Asm(a) => Some(a.span),
        Stmt::Decl { init: Some(crate::front::cdp::hir::Init::Expr(e)), .. } => Some(e.span),
        _ => None,
    }
}
