//! Copies of functions whose built-in variables become parameters: what a kernel run as a
//! device function, one of its threads at a time, needs (thresholding, [`super::threshold`]).
//!
//! LLVM's C API has no `CloneFunction`; this is it for the functions device code has, built
//! on `LLVMInstructionClone`: each instruction is copied, then its operands that name values
//! or blocks of the original are pointed at the copy's; `phi`s are made anew, since their
//! incoming blocks are no operands. Chosen over a C++ shim around `llvm::CloneFunctionInto`
//! because it needs no C++ compiler, no LLVM headers matching the static libraries byte for
//! byte (LLVM's ABI-breaking-checks setting must agree between them), and nothing in the
//! build; what it does not copy is stated: debug locations and loop metadata are dropped (the
//! copy has no `DISubprogram` to own them; after inlining, its code is at the launch's line),
//! debug records are not copied, and exception handling (`invoke`, `landingpad`), which CUDA
//! device code has not, is not handled (a function holding it is refused by the caller).
//!
//! Below the passes, it also holds what they ask of a value on LLVM's C API: the function a
//! call calls, a value's name, and who uses a value ([`users`]).

use crate::llvm::operand;
use inkwell::attributes::AttributeLoc;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::LLVMInstructionSetDebugLoc;
use inkwell::llvm_sys::prelude::{LLVMBasicBlockRef, LLVMValueRef};
use inkwell::module::{Linkage, Module};
use inkwell::types::{AsTypeRef, BasicMetadataTypeEnum, BasicType};
use inkwell::values::{AsValueRef, FunctionValue, InstructionOpcode};
use std::collections::HashMap;
use std::ffi::CString;

/// The built-in variables a copy takes as parameters, in order: `threadIdx`, `blockIdx`,
/// `blockDim`, `gridDim`, each x, y, z.
pub const BUILTINS: [&str; 12] = ["tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y", "ntid.z", "nctaid.x", "nctaid.y", "nctaid.z"];

/// Which of [`BUILTINS`] the intrinsic `name` reads, if it is one of them.
pub fn builtin_index(name: &str) -> Option<usize> {
    let reg = name.strip_prefix("llvm.nvvm.read.ptx.sreg.")?;
    BUILTINS.iter().position(|b| *b == reg)
}

/// The function a call calls directly, if it does.
pub fn called_function(inst: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: queries of a live instruction.
    unsafe {
        if LLVMIsACallInst(inst).is_null() {
            return None;
        }
        let callee = LLVMGetCalledValue(inst);
        (!callee.is_null() && !LLVMIsAFunction(callee).is_null()).then_some(callee)
    }
}

/// The function the call `i` calls, if it calls one directly.
pub(super) fn callee<'ctx>(i: inkwell::values::InstructionValue<'ctx>) -> Option<inkwell::values::FunctionValue<'ctx>> {
    use inkwell::values::AsValueRef;
    called_function(i.as_value_ref()).and_then(as_function)
}

/// Whether the call `i` calls inline assembly.
pub(super) fn is_inline_asm(i: inkwell::values::InstructionValue<'_>) -> bool {
    use inkwell::values::AsValueRef;
    let callee = operand(i, i.get_num_operands() - 1);
    // SAFETY: a query of a live value.
    callee.is_some_and(|c| unsafe { !LLVMIsAInlineAsm(c.as_value_ref()).is_null() })
}

/// Positions `b` where a function's allocas belong: before the first instruction of its entry
/// block `entry` (at its end while it is empty).
pub fn position_at_start<'ctx>(b: &inkwell::builder::Builder<'ctx>, entry: inkwell::basic_block::BasicBlock<'ctx>) {
    match entry.get_first_instruction() {
        Some(first) => b.position_before(&first),
        None => b.position_at_end(entry),
    }
}

/// Makes every `ret` of `f` (which returns `void`) a branch to one new block `name` at its end,
/// and positions `b` there; the caller ends that block.
pub fn returns_to_one_block<'ctx>(b: &inkwell::builder::Builder<'ctx>, f: FunctionValue<'ctx>, name: &str) -> inkwell::basic_block::BasicBlock<'ctx> {
    let rets: Vec<_> = f.get_basic_blocks().iter().filter_map(|bb| bb.get_terminator()).filter(|t| t.get_opcode() == InstructionOpcode::Return).collect();
    let end = f.get_type().get_context().append_basic_block(f, name);
    for r in rets {
        b.position_before(&r);
        b.build_unconditional_branch(end).expect("the builder is positioned");
        r.erase_from_basic_block();
    }
    b.position_at_end(end);
    end
}

/// `v` as the function it is, if it is one.
pub fn as_function<'ctx>(v: LLVMValueRef) -> Option<FunctionValue<'ctx>> {
    // SAFETY: a query of a live value; a function's value is a function.
    unsafe { (!v.is_null() && !LLVMIsAFunction(v).is_null()).then(|| FunctionValue::new(v)).flatten() }
}

pub fn value_name(v: LLVMValueRef) -> String {
    let mut len = 0;
    // SAFETY: the name of a live value, copied at once.
    unsafe {
        let p = LLVMGetValueName2(v, &mut len);
        if p.is_null() {
            return String::new();
        }
        String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len)).into_owned()
    }
}

/// Who uses a value, directly or through constant expressions (each walked once: constants
/// may share operands).
pub struct Users {
    /// The instructions, in the order first met.
    pub instructions: Vec<LLVMValueRef>,
    /// The global variables whose initializers do, in the order first met.
    pub globals: Vec<LLVMValueRef>,
    /// Whether anything but an instruction does: a global's initializer, or a use that is
    /// neither.
    pub other: bool,
}

/// [`Users`] of `value`.
pub fn users(value: LLVMValueRef) -> Users {
    let mut found = Users { instructions: Vec::new(), globals: Vec::new(), other: false };
    let mut met: std::collections::HashSet<LLVMValueRef> = std::collections::HashSet::new();
    let mut work = vec![value];
    while let Some(value) = work.pop() {
        if !met.insert(value) {
            continue;
        }
        // SAFETY: walking the use lists of live values.
        unsafe {
            let mut u = LLVMGetFirstUse(value);
            while !u.is_null() {
                let user = LLVMGetUser(u);
                if !LLVMIsAInstruction(user).is_null() {
                    if met.insert(user) {
                        found.instructions.push(user);
                    }
                } else if !LLVMIsAConstant(user).is_null() && LLVMIsAGlobalValue(user).is_null() {
                    work.push(user);
                } else {
                    if !LLVMIsAGlobalVariable(user).is_null() && met.insert(user) {
                        found.globals.push(user);
                    }
                    found.other = true;
                }
                u = LLVMGetNextUse(u);
            }
        }
    }
    found
}

/// Declares, for each of `originals`, an internal copy named `<name>__<suffix>` taking the
/// original's parameters and then the twelve [`BUILTINS`] as `i32`, with the original's
/// attributes but for those that only a kernel has; then fills each copy with its original's
/// body, its reads of the built-ins replaced by the parameters and its calls of the other
/// originals by calls of their copies. Returns the copies, in order.
pub fn clone_with_builtins<'ctx>(module: &Module<'ctx>, originals: &[FunctionValue<'ctx>], suffix: &str) -> Vec<FunctionValue<'ctx>> {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let copies: Vec<FunctionValue<'ctx>> = originals
        .iter()
        .map(|&f| {
            let ty = f.get_type();
            let mut params: Vec<BasicMetadataTypeEnum> = ty.get_param_types();
            params.extend([BasicMetadataTypeEnum::from(i32t.as_basic_type_enum()); 12]);
            let new_ty = match ty.get_return_type() {
                Some(r) => r.fn_type(&params, false),
                None => ctx.void_type().fn_type(&params, false),
            };
            let name = format!("{}__{suffix}", f.get_name().to_string_lossy());
            let copy = module.add_function(&name, new_ty, Some(Linkage::Internal));
            copy_attributes(f, copy);
            inline_if_byval(copy);
            copy
        })
        .collect();
    let map: HashMap<LLVMValueRef, FunctionValue<'ctx>> = originals.iter().map(|f| f.as_value_ref()).zip(copies.iter().copied()).collect();
    for (&f, &copy) in originals.iter().zip(&copies) {
        fill(module, f, copy, &map);
    }
    copies
}

/// Marks `copy` always-inline when it takes a `byval` parameter (and may be inlined): a
/// device function's `byval` parameter is a copy in local memory on both sides of the call
/// in NVPTX, while inlined into its one caller (`C__agg`, `C__threshold`) the struct is
/// loaded where it lies and SROA keeps it in registers ([`super::copies`]).
fn inline_if_byval(copy: FunctionValue<'_>) {
    let kind = |name: &str| inkwell::attributes::Attribute::get_named_enum_kind_id(name);
    let byval = (0..copy.count_params()).any(|i| copy.get_enum_attribute(AttributeLoc::Param(i), kind("byval")).is_some());
    let barred = ["noinline", "optnone"].iter().any(|a| copy.get_enum_attribute(AttributeLoc::Function, kind(a)).is_some());
    if byval && !barred {
        copy.add_attribute(AttributeLoc::Function, copy.get_type().get_context().create_enum_attribute(kind("alwaysinline"), 0));
    }
}

/// Attributes of the function, its result and its parameters, but for a kernel's own
/// (`nvvm.*`: launch bounds, register caps), the result's `range` (the built-ins' ranges it
/// was derived from are now parameters) and a kernel's `noinline`, which Clang gives every
/// kernel (a device function's `__noinline__` stays, and so does `noinline` beside `optnone`,
/// `-O0`'s).
fn copy_attributes(from: FunctionValue<'_>, to: FunctionValue<'_>) {
    let kernel = from.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV;
    let skip_fn = |a: &inkwell::attributes::Attribute| {
        if a.is_string() {
            a.get_string_kind_id().to_string_lossy().starts_with("nvvm.")
        } else {
            let kind = a.get_enum_kind_id();
            kernel
                && kind == inkwell::attributes::Attribute::get_named_enum_kind_id("noinline")
                && from.get_enum_attribute(AttributeLoc::Function, inkwell::attributes::Attribute::get_named_enum_kind_id("optnone")).is_none()
        }
    };
    for a in from.attributes(AttributeLoc::Function) {
        if !skip_fn(&a) {
            to.add_attribute(AttributeLoc::Function, a);
        }
    }
    let range = inkwell::attributes::Attribute::get_named_enum_kind_id("range");
    for a in from.attributes(AttributeLoc::Return) {
        if a.is_string() || a.get_enum_kind_id() != range {
            to.add_attribute(AttributeLoc::Return, a);
        }
    }
    for i in 0..from.count_params() {
        for a in from.attributes(AttributeLoc::Param(i)) {
            to.add_attribute(AttributeLoc::Param(i), a);
        }
    }
}

fn fill<'ctx>(module: &Module<'ctx>, f: FunctionValue<'ctx>, copy: FunctionValue<'ctx>, copies: &HashMap<LLVMValueRef, FunctionValue<'ctx>>) {
    let ctx = module.get_context();
    let builder = ctx.create_builder();
    let n = f.count_params();
    let mut map: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();
    for i in 0..n {
        let (old, new) = (f.get_nth_param(i).expect("a parameter"), copy.get_nth_param(i).expect("a parameter"));
        map.insert(old.as_value_ref(), new.as_value_ref());
        let name = value_name(old.as_value_ref());
        // SAFETY: naming a parameter of the function just made.
        unsafe { LLVMSetValueName2(new.as_value_ref(), name.as_ptr().cast(), name.len()) };
    }
    let builtin = |i: usize| copy.get_nth_param(n + i as u32).expect("a built-in parameter").as_value_ref();
    for (i, b) in BUILTINS.iter().enumerate() {
        // SAFETY: naming a parameter of the function just made.
        unsafe { LLVMSetValueName2(builtin(i), b.as_ptr().cast(), b.len()) };
    }
    let blocks = f.get_basic_blocks();
    let new_blocks: Vec<_> = blocks.iter().map(|b| ctx.append_basic_block(copy, &b.get_name().to_string_lossy())).collect();
    for (old, new) in blocks.iter().zip(&new_blocks) {
        // SAFETY: blocks of live functions.
        unsafe { map.insert(LLVMBasicBlockAsValue(old.as_mut_ptr()), LLVMBasicBlockAsValue(new.as_mut_ptr())) };
    }
    let dbg_kind = |name: &str| unsafe { LLVMGetMDKindIDInContext(ctx.raw(), name.as_ptr().cast(), name.len() as u32) };
    let loop_kind = dbg_kind("llvm.loop");
    let mut cloned: Vec<LLVMValueRef> = Vec::new();
    let mut phis: Vec<(LLVMValueRef, LLVMValueRef)> = Vec::new();
    for (old, new) in blocks.iter().zip(&new_blocks) {
        builder.position_at_end(*new);
        for inst in old.get_instructions() {
            let r = inst.as_value_ref();
            if let Some(i) = called_function(r).and_then(|c| builtin_index(&value_name(c))) {
                map.insert(r, builtin(i));
                continue;
            }
            // SAFETY: copies of live instructions inserted at the builder's position; the
            // copy's operands still name the original's values until remapped below.
            unsafe {
                let name = CString::new(value_name(r)).unwrap_or_default();
                let c = if inst.get_opcode() == InstructionOpcode::Phi {
                    let phi = LLVMBuildPhi(builder.as_mut_ptr(), LLVMTypeOf(r), name.as_ptr());
                    phis.push((r, phi));
                    phi
                } else {
                    let c = LLVMInstructionClone(r);
                    LLVMInsertIntoBuilderWithName(builder.as_mut_ptr(), c, name.as_ptr());
                    cloned.push(c);
                    c
                };
                LLVMInstructionSetDebugLoc(c, std::ptr::null_mut());
                LLVMSetMetadata(c, loop_kind, std::ptr::null_mut());
                map.insert(r, c);
            }
        }
    }
    let remap = |v: LLVMValueRef| map.get(&v).copied().unwrap_or(v);
    // SAFETY: operand updates of the copies made above, with values of the same types.
    unsafe {
        for &c in &cloned {
            for i in 0..LLVMGetNumOperands(c).max(0) as u32 {
                let op = LLVMGetOperand(c, i);
                if let Some(&new) = map.get(&op) {
                    LLVMSetOperand(c, i, new);
                }
            }
        }
        for &(old, phi) in &phis {
            for i in 0..LLVMCountIncoming(old) {
                let mut value = remap(LLVMGetIncomingValue(old, i));
                let block: LLVMBasicBlockRef = LLVMGetIncomingBlock(old, i);
                let mut new_block = LLVMValueAsBasicBlock(remap(LLVMBasicBlockAsValue(block)));
                LLVMAddIncoming(phi, &mut value, &mut new_block, 1);
            }
        }
        // Calls of the other originals become calls of their copies, with the built-ins.
        for &c in &cloned {
            let Some(callee) = called_function(c) else { continue };
            let Some(target) = copies.get(&callee) else { continue };
            LLVMPositionBuilderBefore(builder.as_mut_ptr(), c);
            let nargs = LLVMGetNumArgOperands(c);
            let mut args: Vec<LLVMValueRef> = (0..nargs).map(|i| LLVMGetOperand(c, i)).collect();
            args.extend((0..12).map(builtin));
            let name = CString::new(value_name(c)).unwrap_or_default();
            LLVMSetValueName2(c, c"".as_ptr(), 0);
            let call = LLVMBuildCall2(builder.as_mut_ptr(), target.get_type().as_type_ref(), target.as_value_ref(), args.as_mut_ptr(), args.len() as u32, name.as_ptr());
            LLVMSetInstructionCallConv(call, LLVMGetInstructionCallConv(c));
            // The call site's attributes (`byval` above all), at the same indices.
            for idx in [inkwell::llvm_sys::LLVMAttributeFunctionIndex, inkwell::llvm_sys::LLVMAttributeReturnIndex].into_iter().chain(1..=nargs) {
                let count = LLVMGetCallSiteAttributeCount(c, idx);
                let mut attrs = vec![std::ptr::null_mut(); count as usize];
                LLVMGetCallSiteAttributes(c, idx, attrs.as_mut_ptr());
                for a in attrs {
                    LLVMAddCallSiteAttribute(call, idx, a);
                }
            }
            LLVMReplaceAllUsesWith(c, call);
            LLVMInstructionEraseFromParent(c);
        }
    }
}
