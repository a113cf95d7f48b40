//! Managed variables (`__managed__`): device variables that the CUDA driver places in unified
//! memory when it loads the module, read and written by device code as any `__device__`
//! variable and by host code through a pointer the runtime fills in.
//!
//! Clang 22 ignores `__managed__` in CUDA (its attribute is HIP's), where nvcc compiles it.
//! cdpc's additions to Clang's CUDA headers (`clang::additions_header`) define the macro as
//! `__device__ __attribute__((section("cdpc.managed")))`: a device variable whose section
//! marks it, on definitions and declarations alike and on both sides of the compilation.
//!
//! - Device side, [`device`]: each variable in [`MARKER`] leaves the section and gets NVVM's
//!   `managed` annotation (`!nvvm.annotations`, the NVVM IR specification's), which NVPTX
//!   writes as nvcc does, `.global .attribute(.managed)` (`.extern` for a declaration). IR from
//!   another front end marks its managed variables with that annotation directly
//!   (docs/IR-INPUT.md). Afterwards no global is in the marker section.
//! - Host side, [`host`] (Clang's host IR of a `-dc` object): nvcc's host code, read from
//!   `nvcc -cuda` 13.5, replaces the variable by a pointer of its name (`int *mv = 0`, hidden,
//!   in the section `__nv_managed_data__`), registers it with `__cudaRegisterManagedVar(handle,
//!   &mv, "mv", "mv", ext, size, constant, 0)` (the runtime stores the managed memory's address
//!   there when it loads the module), keeps the registration's module handle
//!   (`__nv_save_fatbinhandle_for_managed_rt`), and reads every host use as
//!   `*(__nv_init_managed_rt(), mv)`, where the first use loads the module
//!   (`__cudaInitModule(handle)`, which lazy loading needs). This pass does the same on the
//!   IR: afterwards no global is in the marker section, every host instruction that used the
//!   variable uses the pointer's value loaded after that call, and an object compiled by nvcc
//!   that declares `extern __managed__ int mv` finds the pointer under the name it expects.

use crate::llvm::user_instruction;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::{LLVMBuilderRef, LLVMValueRef};
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, BasicValue, FunctionValue, GlobalValue};
use inkwell::{AddressSpace, GlobalVisibility};
use std::collections::HashMap;

/// The section cdpc's `__managed__` macro puts a variable in (compiler/src/front/cuda/additions.h).
pub const MARKER: &str = "cdpc.managed";

/// The section nvcc's host code keeps managed variables' pointers in.
const HOST_SECTION: &str = "__nv_managed_data__";

/// The globals of `module` in the [`MARKER`] section.
fn marked<'ctx>(module: &Module<'ctx>) -> Vec<GlobalValue<'ctx>> {
    module.get_globals().filter(|g| g.get_section().is_some_and(|s| s.to_bytes() == MARKER.as_bytes())).collect()
}

/// Device side (module docs): each marked variable gets NVVM's `managed` annotation instead of
/// the marker section. Returns how many.
pub fn device(module: &Module<'_>) -> usize {
    let globals = marked(module);
    for global in &globals {
        clear_section(*global);
        crate::back::annotate_managed(module, *global);
    }
    globals.len()
}

fn clear_section(global: GlobalValue<'_>) {
    // SAFETY: an empty section name is LLVM's "no section".
    unsafe { LLVMSetSection(global.as_value_ref(), c"".as_ptr()) };
}

/// What the host side needs once a module: the function that loads the module on the first
/// use, and the runtime's registration of a managed variable.
struct Runtime<'ctx> {
    init: FunctionValue<'ctx>,
    register: FunctionValue<'ctx>,
    layout: inkwell::targets::TargetData,
}

impl Runtime<'_> {
    /// The alignment host code may assume of a managed variable's memory: its type's natural
    /// alignment, as host code compiled by nvcc assumes through its pointer. The shadow's own
    /// may be larger (x86-64 aligns an array of 16 bytes or more to 16) than the device
    /// variable's, where the driver places the memory.
    fn alignment(&self, shadow: LLVMValueRef) -> u32 {
        // SAFETY: the shadow is a live global; its value type belongs to the module's context.
        let natural = unsafe { inkwell::llvm_sys::target::LLVMABIAlignmentOfType(self.layout.as_mut_ptr(), LLVMGlobalGetValueType(shadow)) };
        // SAFETY: as above.
        natural.min(unsafe { LLVMGetAlignment(shadow) }.max(1))
    }
}

/// Why [`host`] stopped.
#[derive(Debug)]
pub enum HostError {
    /// The program's mistake: the managed variable `variable`'s address in the initializer of
    /// the host variable `holder` (symbols), which nvcc makes a dynamic initialisation that
    /// runs before the runtime has loaded the module; the driver reports it (`E1020`).
    AddressInInitializer {
        /// The host variable's symbol.
        holder: String,
        /// The managed variable's symbol.
        variable: String,
    },
    /// Clang's host IR was not as Clang writes it.
    Internal(String),
}

/// Host side (module docs).
pub fn host(module: &Module<'_>) -> Result<(), HostError> {
    let globals = marked(module);
    if globals.is_empty() {
        return Ok(());
    }
    let runtime = runtime(module)?;
    for shadow in globals {
        replace_by_pointer(module, shadow, &runtime)?;
    }
    Ok(())
}

/// The declarations, globals and the init function; the handle stored at the start of the
/// registration callback that `__cudaRegisterLinkedBinary<id>` receives (Clang's
/// `__cuda_register_globals`, or its `dummy` when the file registers nothing).
fn runtime<'ctx>(module: &Module<'ctx>) -> Result<Runtime<'ctx>, HostError> {
    let callback = registration_callback(module).ok_or_else(|| internal_error("Clang's host code has no registration callback taking the module handle"))?;
    let ctx = module.get_context();
    let ptr = ctx.ptr_type(AddressSpace::default());
    let i8t = ctx.i8_type();
    let internal = |name: &str, value: &dyn BasicValue<'ctx>| {
        let g = module.add_global(value.as_basic_value_enum().get_type(), None, name);
        g.set_linkage(Linkage::Internal);
        g.set_initializer(value);
        g
    };
    let handle = internal("__cdpc_managed_handle", &ptr.const_null());
    let inited = internal("__cdpc_managed_inited", &i8t.const_zero());
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let init_module = declared(module, "__cudaInitModule", i8t.fn_type(&[ptr.into()], false))?;
    let register_type = ctx.void_type().fn_type(&[ptr.into(), ptr.into(), ptr.into(), ptr.into(), i32t.into(), i64t.into(), i32t.into(), i32t.into()], false);
    let register = declared(module, "__cudaRegisterManagedVar", register_type)?;
    // Clang's registration of a device variable has the managed one's parameters.
    if module.get_function("__cudaRegisterVar").is_some_and(|f| f.get_type() != register_type) {
        return Err(internal_error("`__cudaRegisterVar` is not declared as the CUDA runtime's"));
    }

    // __nv_init_managed_rt: inited = inited ? inited : __cudaInitModule(handle)
    let init = module.add_function("__cdpc_init_managed_rt", ctx.void_type().fn_type(&[], false), Some(Linkage::Internal));
    let b = ctx.create_builder();
    let (entry, load, done) = (ctx.append_basic_block(init, "entry"), ctx.append_basic_block(init, "load"), ctx.append_basic_block(init, "done"));
    let built = (|| -> Result<(), inkwell::builder::BuilderError> {
        b.position_at_end(entry);
        let flag = b.build_load(i8t, inited.as_pointer_value(), "inited")?.into_int_value();
        let loaded = b.build_int_compare(inkwell::IntPredicate::NE, flag, i8t.const_zero(), "loaded")?;
        b.build_conditional_branch(loaded, done, load)?;
        b.position_at_end(load);
        let h = b.build_load(ptr, handle.as_pointer_value(), "handle")?;
        let r = b.build_call(init_module, &[h.into()], "init")?.try_as_basic_value().basic().expect("__cudaInitModule returns a char");
        b.build_store(inited.as_pointer_value(), r)?;
        b.build_unconditional_branch(done)?;
        b.position_at_end(done);
        b.build_return(None)?;
        // The callback's handle, kept at its start. Clang's callback of a file that registers
        // nothing (`dummy`) says it reads no memory and keeps nothing of its parameter: no more.
        super::clone::position_at_start(&b, callback.get_first_basic_block().expect("a defined callback"));
        b.build_store(handle.as_pointer_value(), callback.get_nth_param(0).expect("the callback takes the handle"))?;
        for (location, attribute) in [(AttributeLoc::Function, "memory"), (AttributeLoc::Param(0), "readnone"), (AttributeLoc::Param(0), "captures")] {
            callback.remove_enum_attribute(location, Attribute::get_named_enum_kind_id(attribute));
        }
        Ok(())
    })();
    built.map_err(|e| internal_error(&e.to_string()))?;
    let layout = inkwell::targets::TargetData::create(&module.get_data_layout().as_str().to_string_lossy());
    Ok(Runtime { init, register, layout })
}

/// The runtime's function `name` of type `ty`, declared if the module has none.
fn declared<'ctx>(module: &Module<'ctx>, name: &str, ty: inkwell::types::FunctionType<'ctx>) -> Result<FunctionValue<'ctx>, HostError> {
    match module.get_function(name) {
        Some(f) if f.get_type() == ty => Ok(f),
        Some(_) => Err(internal_error(&format!("`{name}` is not declared as the CUDA runtime's"))),
        None => Ok(module.add_function(name, ty, None)),
    }
}

/// The function Clang's module constructor hands `__cudaRegisterLinkedBinary<id>` as the
/// callback that registers the file's kernels and variables with the module handle.
fn registration_callback<'ctx>(module: &Module<'ctx>) -> Option<FunctionValue<'ctx>> {
    let linked = module.get_functions().find(|f| f.get_name().to_bytes().starts_with(b"__cudaRegisterLinkedBinary"))?;
    let call = user_instruction(linked.as_global_value().as_pointer_value().get_first_use()?)?;
    // SAFETY: queries of a live call; the callback is its first argument.
    let callback = unsafe {
        let call = call.as_value_ref();
        if LLVMIsACallInst(call).is_null() || LLVMGetCalledValue(call) != linked.as_value_ref() || LLVMGetNumArgOperands(call) < 1 {
            return None;
        }
        let callback = LLVMGetOperand(call, 0);
        if LLVMIsAFunction(callback).is_null() || LLVMCountBasicBlocks(callback) == 0 {
            return None;
        }
        FunctionValue::new(callback)?
    };
    callback.get_nth_param(0).filter(|p| p.is_pointer_value()).map(|_| callback)
}

fn internal_error(what: &str) -> HostError {
    HostError::Internal(format!("managed variables: {what}"))
}

/// The lists whose entries only keep a global alive: the pointer may stand in them.
const KEEP_ALIVE_LISTS: [&str; 3] = ["llvm.used", "llvm.compiler.used", "__clang_gpu_used_external"];

fn replace_by_pointer<'ctx>(module: &Module<'ctx>, shadow: GlobalValue<'ctx>, runtime: &Runtime<'ctx>) -> Result<(), HostError> {
    let ctx = module.get_context();
    let ptr = ctx.ptr_type(AddressSpace::default());
    let name = shadow.get_name().to_string_lossy().into_owned();
    let linkage = shadow.get_linkage();
    let defined = shadow.get_initializer().is_some();
    shadow.set_name(&format!("{name}.cdpc.shadow"));
    let pointer = module.add_global(ptr, None, &name);
    pointer.set_linkage(linkage);
    if defined {
        pointer.set_initializer(&ptr.const_null());
    }
    if !matches!(linkage, Linkage::Internal | Linkage::Private) {
        pointer.set_visibility(GlobalVisibility::Hidden);
    }
    pointer.set_section(Some(HOST_SECTION));
    pointer.set_alignment(8);
    let (shadow_ref, pointer_ref) = (shadow.as_value_ref(), pointer.as_value_ref());

    // The instructions that use the variable, and the globals whose initializers do,
    // directly or through constant expressions.
    let super::clone::Users { instructions, globals, .. } = super::clone::users(shadow_ref);
    for list in KEEP_ALIVE_LISTS {
        if let Some(g) = module.get_global(list) {
            replace_in_array(g, shadow_ref, pointer_ref);
        }
    }
    // A user's global whose initializer holds the variable's address: no host code runs
    // before it is needed.
    let holder = globals.into_iter().filter(|&g| g != shadow_ref).map(super::value_name).find(|g| !KEEP_ALIVE_LISTS.contains(&g.as_str()));
    if let Some(holder) = holder {
        return Err(HostError::AddressInInitializer { holder, variable: name });
    }
    let b = ctx.create_builder();
    for inst in instructions {
        rewrite_instruction(&b, inst, shadow_ref, pointer, runtime).map_err(internal_error)?;
    }
    // What still uses the variable are the constant expressions the rewritten instructions no
    // longer use (constants outlive their last user); anything else is a use left behind.
    let left = super::clone::users(shadow_ref);
    if !left.instructions.is_empty() || left.other {
        return Err(internal_error(&format!("`{name}` is still used after its uses were rewritten")));
    }
    // SAFETY: only dead constants use it: they take a poison pointer, and it goes.
    unsafe {
        LLVMReplaceAllUsesWith(shadow_ref, LLVMGetPoison(LLVMTypeOf(shadow_ref)));
        shadow.delete();
    }
    Ok(())
}

/// Whether the constant `value` is `target` or holds it. Constants share operands (a DAG), so
/// each is looked at once: `seen` keeps the answers.
fn holds_in(value: LLVMValueRef, target: LLVMValueRef, seen: &mut HashMap<LLVMValueRef, bool>) -> bool {
    if value == target {
        return true;
    }
    if let Some(&known) = seen.get(&value) {
        return known;
    }
    // SAFETY: operands of a live constant.
    let answer = unsafe {
        if LLVMIsAConstant(value).is_null() || !LLVMIsAGlobalValue(value).is_null() {
            false
        } else {
            (0..LLVMGetNumOperands(value).max(0) as u32).any(|i| holds_in(LLVMGetOperand(value, i), target, seen))
        }
    };
    seen.insert(value, answer);
    answer
}

/// The keep-alive list `list` with `old` replaced by `new` where it is an element.
fn replace_in_array(list: GlobalValue<'_>, old: LLVMValueRef, new: LLVMValueRef) {
    let Some(init) = list.get_initializer() else { return };
    // SAFETY: the list's initializer is a constant array of pointers; the new array has the
    // same type.
    unsafe {
        let array = init.as_value_ref();
        let n = LLVMGetNumOperands(array).max(0) as u32;
        let mut elements: Vec<LLVMValueRef> = (0..n).map(|i| LLVMGetOperand(array, i)).collect();
        if !elements.contains(&old) {
            return;
        }
        for e in &mut elements {
            if *e == old {
                *e = new;
            }
        }
        let element_type = LLVMGetElementType(LLVMTypeOf(array));
        let rebuilt = LLVMConstArray2(element_type, elements.as_mut_ptr(), elements.len() as u64);
        LLVMSetInitializer(list.as_value_ref(), rebuilt);
    }
}

/// Points `inst`'s operands that are, or hold, `shadow` at the managed memory: before it (for
/// a `phi`, at the end of the incoming block), the init call and a load of `pointer`; the
/// registration of `shadow` becomes the registration of the pointer.
fn rewrite_instruction<'ctx>(b: &inkwell::builder::Builder<'ctx>, inst: LLVMValueRef, shadow: LLVMValueRef, pointer: GlobalValue<'ctx>, runtime: &Runtime<'ctx>) -> Result<(), &'static str> {
    // SAFETY: the instruction is live; the builder is positioned in its function.
    unsafe {
        if let Some(callee) = super::called_function(inst) {
            let name = super::value_name(callee);
            if name == "__cudaRegisterVar" && LLVMGetNumArgOperands(inst) == 8 && LLVMGetOperand(inst, 1) == shadow {
                let mut args: Vec<LLVMValueRef> = (0..8).map(|i| LLVMGetOperand(inst, i)).collect();
                args[1] = pointer.as_value_ref();
                LLVMPositionBuilderBefore(b.as_mut_ptr(), inst);
                let register = runtime.register.as_value_ref();
                LLVMBuildCall2(b.as_mut_ptr(), LLVMGlobalGetValueType(register), register, args.as_mut_ptr(), 8, c"".as_ptr());
                LLVMInstructionEraseFromParent(inst);
                return Ok(());
            }
        }
        let is_phi = !LLVMIsAPHINode(inst).is_null();
        // Which constants hold the variable, for this instruction's operands and their rebuilds.
        let mut holding = HashMap::new();
        for i in 0..LLVMGetNumOperands(inst).max(0) as u32 {
            let operand = LLVMGetOperand(inst, i);
            if !holds_in(operand, shadow, &mut holding) || !LLVMIsABasicBlock(operand).is_null() {
                continue;
            }
            let at = if is_phi { LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(inst, i)) } else { inst };
            LLVMPositionBuilderBefore(b.as_mut_ptr(), at);
            let init = runtime.init.as_value_ref();
            LLVMBuildCall2(b.as_mut_ptr(), LLVMGlobalGetValueType(init), init, std::ptr::null_mut(), 0, c"".as_ptr());
            let address = LLVMBuildLoad2(b.as_mut_ptr(), LLVMTypeOf(pointer.as_value_ref()), pointer.as_value_ref(), c"managed".as_ptr());
            LLVMSetAlignment(address, 8);
            let value =
                materialize(b.as_mut_ptr(), operand, shadow, address, &mut holding, &mut HashMap::new()).ok_or("a host use of a managed variable in a constant expression cdpc does not rewrite")?;
            LLVMSetOperand(inst, i, value);
            clamp_alignment(address, runtime.alignment(shadow));
        }
    }
    Ok(())
}

/// Memory reached from `address` (through `getelementptr`s, casts, `phi`s and `select`s) is
/// accessed with at most `align`: what Clang derived from the shadow's alignment may exceed the
/// managed memory's (an SSE load of an `align 16` array).
///
/// # Safety
/// `address` is a live instruction.
unsafe fn clamp_alignment(address: LLVMValueRef, align: u32) {
    let mut work = vec![address];
    let mut seen: std::collections::HashSet<LLVMValueRef> = std::collections::HashSet::from([address]);
    while let Some(value) = work.pop() {
        let mut u = LLVMGetFirstUse(value);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            u = LLVMGetNextUse(u);
            if LLVMIsAInstruction(user).is_null() {
                continue;
            }
            let derived = !LLVMIsAGetElementPtrInst(user).is_null() || !LLVMIsACastInst(user).is_null() || !LLVMIsAPHINode(user).is_null() || !LLVMIsASelectInst(user).is_null();
            if derived {
                if seen.insert(user) {
                    work.push(user);
                }
            } else if (!LLVMIsALoadInst(user).is_null() && LLVMGetOperand(user, 0) == value)
                || (!LLVMIsAStoreInst(user).is_null() && LLVMGetOperand(user, 1) == value)
                || (!LLVMIsAAtomicRMWInst(user).is_null() && LLVMGetOperand(user, 0) == value)
                || (!LLVMIsAAtomicCmpXchgInst(user).is_null() && LLVMGetOperand(user, 0) == value)
            {
                if LLVMGetAlignment(user) > align {
                    LLVMSetAlignment(user, align);
                }
            } else if !LLVMIsACallInst(user).is_null() {
                let align_kind = inkwell::attributes::Attribute::get_named_enum_kind_id("align");
                for i in 0..LLVMGetNumArgOperands(user) {
                    if LLVMGetOperand(user, i) == value {
                        LLVMRemoveCallSiteEnumAttribute(user, i + 1, align_kind);
                    }
                }
            }
        }
    }
}

/// `constant` as instructions at the builder, with `shadow` replaced by `address` (`holding`:
/// which constants hold it, `made`: the rebuilds so far): the
/// constant expressions optimised host code keeps around a global's address (`getelementptr`,
/// casts, `add`/`sub`/`xor`). `None` for another kind.
///
/// # Safety
/// `constant` is a live constant and the builder is positioned.
unsafe fn materialize(
    b: LLVMBuilderRef,
    constant: LLVMValueRef,
    shadow: LLVMValueRef,
    address: LLVMValueRef,
    holding: &mut HashMap<LLVMValueRef, bool>,
    made: &mut HashMap<LLVMValueRef, LLVMValueRef>,
) -> Option<LLVMValueRef> {
    if constant == shadow {
        return Some(address);
    }
    if let Some(&done) = made.get(&constant) {
        return Some(done);
    }
    if LLVMIsAConstantExpr(constant).is_null() {
        return None;
    }
    let n = LLVMGetNumOperands(constant).max(0) as u32;
    let mut operands = Vec::with_capacity(n as usize);
    for i in 0..n {
        let op = LLVMGetOperand(constant, i);
        operands.push(if holds_in(op, shadow, holding) { materialize(b, op, shadow, address, holding, made)? } else { op });
    }
    let opcode = LLVMGetConstOpcode(constant);
    Some(match opcode {
        LLVMOpcode::LLVMGetElementPtr => {
            let source = LLVMGetGEPSourceElementType(constant);
            let flags = LLVMGEPGetNoWrapFlags(constant);
            LLVMBuildGEPWithNoWrapFlags(b, source, operands[0], operands[1..].as_mut_ptr(), n - 1, c"".as_ptr(), flags)
        }
        LLVMOpcode::LLVMPtrToInt | LLVMOpcode::LLVMIntToPtr | LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast | LLVMOpcode::LLVMTrunc => {
            LLVMBuildCast(b, opcode, operands[0], LLVMTypeOf(constant), c"".as_ptr())
        }
        LLVMOpcode::LLVMAdd | LLVMOpcode::LLVMSub | LLVMOpcode::LLVMXor => LLVMBuildBinOp(b, opcode, operands[0], operands[1], c"".as_ptr()),
        _ => return None,
    })
    .inspect(|&value| {
        made.insert(constant, value);
    })
}
