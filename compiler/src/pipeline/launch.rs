//! Device-side launches in LLVM IR: recognised in the documented shape, lowered to the ABI
//! cdpc is asked for.
//!
//! # The contract (what counts as a launch)
//!
//! NVIDIA documents device-side launch from NVVM IR as the V1 sequence, and Clang emits
//! exactly it:
//!
//! ```text
//! %buf = call ptr @cudaGetParameterBuffer(i64 align, i64 size)   ; or @__cudaCDP2GetParameterBuffer
//! ;   if %buf is null the launch is skipped
//! store ... into %buf at each argument's offset (stores, GEPs, memcpy into it)
//! %st = call i32 @cudaLaunchDevice(ptr @kernel, ptr %buf, dim3 grid, dim3 block, i32 shmem, ptr stream)
//!                                                              ; or @__cudaCDP2LaunchDevice, _ptsz
//! ```
//!
//! `dim3` may be passed by value (`{ i32, i32, i32 }`, or a named struct of three `i32`s, which
//! [`literal_dims`] first turns into the literal type) or as a `byval` pointer (Clang), the
//! buffer may be `null` for a kernel without parameters, and at `-O0` the CUDA header's
//! static wrappers (`_ZL22cudaGetParameterBuffermm`, `_ZL16cudaLaunchDevice...`) count as the
//! entry points. The buffer must be used for nothing but that: stored into, compared with
//! null, handed to its one launch. A buffer that escapes (stored to memory, passed to another
//! call, returned), whose size is not a constant, or that no launch takes, is `E1010`.
//!
//! # Lowering
//!
//! - **V2 in place**, where the kernel and the configuration (dims by value) are available where
//!   the V1 buffer was asked for (`.cdp` code evaluates every operand first): the V1 buffer becomes
//!   `__cudaCDP2GetParameterBufferV2(kernel, grid, block, shmem)`, the front end's stores stay
//!   as written, each with its own alignment (nvcc's stores), and the launch becomes
//!   `__cudaCDP2LaunchDeviceV2(buf, stream)`, called as it is where the front end's null test
//!   guards it, else through an always-inline helper that tests.
//! - **V2** otherwise (the default, nvcc 13's): the arguments are gathered in a local block where the V1
//!   buffer was, and at the launch `__cudaCDP2GetParameterBufferV2(kernel, grid, block,
//!   shmem)` gives the runtime's buffer, the block is copied into it and
//!   `__cudaCDP2LaunchDeviceV2(buf, stream)` launches; a null buffer skips the launch with
//!   status 69, as `.cdp` launches do ([`crate::back::device_launch::LAUNCH_SKIPPED_STATUS`]).
//!   The copy goes through one always-inline helper per entry point; after
//!   [`super::cleanup`] (inlining, SROA) the arguments are stored straight into the runtime's
//!   buffer, as nvcc's code does.
//! - **V1**: the sequence stays as written; a launch into `cudaStreamTailLaunch` or
//!   `cudaStreamFireAndForget`, which the V1 entry points refuse at run time, is `E0306`.
//!
//! After the lowering, [`dims_by_value`] passes every entry point's `dim3` by value (Clang
//! declares them with `byval` pointers, which NVPTX copies through local memory).
//!
//! A launch whose call carries the metadata [`KEEP_V1`] (`!cdpc.launch.v1 !{}`) stays as
//! written, V1, whatever ABI is asked for, with V1's `E0306`: warp aggregation marks so the
//! launch a warp's leader makes for its group ([`mark_v1`]), since the lanes that wait for it
//! could hang the V2 entry point (docs/AGGREGATION.md). The marker stays on the call.

use super::SourceText;
use crate::back::device_launch::{DeviceRuntime, LAUNCH_SKIPPED_STATUS};
use crate::diag::{Code, Diagnostic, Span};
use crate::llvm::{block_operand, operand, user_instruction};
use crate::target::{LaunchAbi, Target};
use inkwell::attributes::AttributeLoc;
use inkwell::llvm_sys::core::{LLVMConstIntGetZExtValue, LLVMGetConstOpcode, LLVMGetOperand, LLVMIsAConstantExpr, LLVMIsAConstantInt, LLVMIsNull};
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue};
use inkwell::AddressSpace;
use runtime_shim::entry_points::{GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE_V2, LAUNCH_DEVICE_V2_PTSZ};

/// The metadata kind that keeps a launch at V1 under any ABI (module docs): set by warp
/// aggregation ([`mark_v1`]), or by a front end that writes IR (docs/IR-INPUT.md).
pub const KEEP_V1: &str = "cdpc.launch.v1";

/// Marks the launch entry point's call `call` to stay V1 under any ABI ([`KEEP_V1`]).
pub fn mark_v1(call: InstructionValue<'_>) {
    let Some(ctx) = call.get_parent().map(|block| block.get_context()) else { return };
    // An empty node, which is valid metadata on any instruction.
    let _ = call.set_metadata(ctx.metadata_node(&[]), ctx.get_kind_id(KEEP_V1));
}

/// Whether the launch's call carries [`KEEP_V1`].
pub fn keeps_v1(l: &Launch<'_>) -> bool {
    let ctx = l.function.get_type().get_context();
    l.call.get_metadata(ctx.get_kind_id(KEEP_V1)).is_some()
}

/// The V1 parameter-buffer entry points, and the CUDA header's wrapper of them at `-O0`.
const GET_BUFFER: &[&str] = &["cudaGetParameterBuffer", "__cudaCDP2GetParameterBuffer", "_ZL22cudaGetParameterBuffermm"];
/// The V1 launch entry points; names with `_ptsz` launch into the per-thread default stream.
const LAUNCH: &[&str] = &["cudaLaunchDevice", "__cudaCDP2LaunchDevice", "cudaLaunchDevice_ptsz", "__cudaCDP2LaunchDevice_ptsz"];
/// The CUDA header's static wrappers of the launch entry points, as Clang mangles them.
const LAUNCH_WRAPPERS: &[&str] = &["_ZL16cudaLaunchDevice", "_ZL21cudaLaunchDevice_ptsz"];

/// One recognised launch.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'ctx> {
    /// The call of the launch entry point.
    pub call: InstructionValue<'ctx>,
    /// The call that made its parameter buffer; `None` when the buffer is null.
    pub buffer: Option<InstructionValue<'ctx>>,
    /// The buffer's size in bytes (0 without a buffer).
    pub size: u64,
    /// Whether it launches into the per-thread default stream's entry point (`_ptsz`).
    pub per_thread: bool,
    /// The function that launches.
    pub function: FunctionValue<'ctx>,
}

fn callee<'ctx>(inst: InstructionValue<'ctx>) -> Option<FunctionValue<'ctx>> {
    if inst.get_opcode() != InstructionOpcode::Call {
        return None;
    }
    CallSiteValue::try_from(inst).ok()?.get_called_fn_value()
}

fn name_of(f: FunctionValue<'_>) -> String {
    f.get_name().to_string_lossy().into_owned()
}

fn is_launch(name: &str) -> bool {
    LAUNCH.contains(&name) || LAUNCH_WRAPPERS.iter().any(|w| name.starts_with(w))
}

/// Whether `name` is an entry point of a launch, of either ABI, or of its parameter buffer.
pub(super) fn is_launch_entry(name: &str) -> bool {
    is_launch(name) || GET_BUFFER.contains(&name) || [GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE_V2, LAUNCH_DEVICE_V2_PTSZ].iter().any(|e| e.ptx_symbol == name || e.c_name == name)
}

/// A constant integer value (through `inttoptr` of a constant), as the stream handles are.
pub(super) fn constant_u64(value: BasicValueEnum<'_>) -> Option<u64> {
    // SAFETY: queries of a live value.
    unsafe {
        let v = value.as_value_ref();
        if !LLVMIsAConstantInt(v).is_null() {
            return Some(LLVMConstIntGetZExtValue(v));
        }
        if value.is_pointer_value() && LLVMIsNull(v) != 0 {
            return Some(0);
        }
        if !LLVMIsAConstantExpr(v).is_null() && LLVMGetConstOpcode(v) == LLVMOpcode::LLVMIntToPtr {
            let inner = LLVMGetOperand(v, 0);
            if !LLVMIsAConstantInt(inner).is_null() {
                return Some(LLVMConstIntGetZExtValue(inner));
            }
        }
    }
    None
}

fn not_recognised(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(Code::LaunchNotRecognised, Span::new(0, 0), message)
        .with_primary_message("this device-side launch")
        .with_note("a launch is `cudaGetParameterBuffer`, stores into its buffer, then `cudaLaunchDevice` with that buffer (the documented NVVM IR sequence); the buffer may be used for nothing else")
}

/// Whether every use of the buffer made by `buffer` is one the contract allows: a store into
/// it, an address inside it, a null test, a memcpy or memset into it, a lifetime marker, or
/// the launch `launch`. Returns the first offending use.
fn escaping_use<'ctx>(buffer: InstructionValue<'ctx>, launch: InstructionValue<'ctx>) -> Option<InstructionValue<'ctx>> {
    let mut pending = vec![buffer];
    let mut seen = 0;
    while let Some(value) = pending.pop() {
        seen += 1;
        if seen > 100_000 {
            return Some(value);
        }
        let mut next = value.get_first_use();
        while let Some(u) = next {
            next = u.get_next_use();
            let user = match user_instruction(u) {
                Some(i) => i,
                None => return Some(value),
            };
            let is_operand = |i: u32| operand(user, i).is_some_and(|o| o.as_value_ref() == value.as_value_ref());
            match user.get_opcode() {
                // Into the buffer, not the buffer's address stored somewhere.
                InstructionOpcode::Store if !is_operand(0) => {}
                InstructionOpcode::GetElementPtr if is_operand(0) => pending.push(user),
                InstructionOpcode::ICmp => {}
                InstructionOpcode::Call if user == launch && is_operand(1) && !is_operand(0) => {}
                InstructionOpcode::Call => {
                    let name = callee(user).map(name_of).unwrap_or_default();
                    let copy_into = (name.starts_with("llvm.memcpy") || name.starts_with("llvm.memmove")) && is_operand(0) && !is_operand(1);
                    let set = name.starts_with("llvm.memset") && is_operand(0);
                    if !(copy_into || set || name.starts_with("llvm.lifetime")) {
                        return Some(user);
                    }
                }
                _ => return Some(user),
            }
        }
    }
    None
}

/// Every call in the module's functions, with the function, the CUDA header's launch wrappers
/// left out (calls of them are what launches mean, not launches themselves), and a `.cdp`
/// program's own calls of the runtime (`!cdpc.own`: no `<<<>>>`, left as written).
fn user_calls<'ctx>(module: &Module<'ctx>) -> Vec<(FunctionValue<'ctx>, InstructionValue<'ctx>, FunctionValue<'ctx>)> {
    let mut calls = Vec::new();
    for function in module.get_functions() {
        let fname = name_of(function);
        if GET_BUFFER.contains(&fname.as_str()) || is_launch(&fname) {
            continue;
        }
        for block in function.get_basic_blocks() {
            for inst in block.get_instructions() {
                if let Some(target) = callee(inst).filter(|_| !super::location::is_own_call(inst)) {
                    calls.push((function, inst, target));
                }
            }
        }
    }
    calls
}

/// The module's launch sites as [`recognise`] found them: the table the launch passes share.
/// The schedule ([`super::run`]) recognises them once before the passes and again after a pass
/// that rewrote sites; a pass reads the table it is given and never recognises launches
/// itself, but for thresholding's stream marks, which read the sites its own rewrite made.
pub struct Sites<'ctx> {
    /// Every launch in the documented shape.
    pub launches: Vec<Launch<'ctx>>,
    /// `E1010` for each launch call not in that shape: with any, no pass rewrites a site and
    /// [`lower`] reports them.
    pub refused: Vec<Diagnostic>,
}

impl<'ctx> Sites<'ctx> {
    /// The launch sites of `module` ([`recognise`]).
    pub fn of(module: &Module<'ctx>, source: &SourceText) -> Sites<'ctx> {
        let (launches, refused) = recognise(module, source);
        Sites { launches, refused }
    }
}

/// Finds every launch in the module; the launches it cannot take are `E1010`.
pub fn recognise<'ctx>(module: &Module<'ctx>, source: &SourceText) -> (Vec<Launch<'ctx>>, Vec<Diagnostic>) {
    let mut launches = Vec::new();
    let mut diagnostics = Vec::new();
    let calls = user_calls(module);
    for &(function, inst, target) in &calls {
        let fname = name_of(function);
        let name = name_of(target);
        if !is_launch(&name) {
            continue;
        }
        let per_thread = name.contains("_ptsz");
        let fail = |d: Diagnostic| source.place(d, inst, &fname);
        if inst.get_num_operands() != 7 {
            diagnostics.push(fail(not_recognised(format!("`{name}` takes 6 arguments here, not {}", inst.get_num_operands() - 1))));
            continue;
        }
        let Some(buf) = operand(inst, 1) else { continue };
        if constant_u64(buf) == Some(0) {
            launches.push(Launch { call: inst, buffer: None, size: 0, per_thread, function });
            continue;
        }
        let made_by = buf.as_instruction_value().filter(|b| callee(*b).is_some_and(|f| GET_BUFFER.contains(&name_of(f).as_str())));
        let Some(buffer) = made_by else {
            diagnostics.push(fail(not_recognised("the launch's parameter buffer does not come straight from `cudaGetParameterBuffer`")));
            continue;
        };
        let Some(size) = operand(buffer, 1).and_then(constant_u64) else {
            diagnostics.push(fail(not_recognised("the parameter buffer's size is not a constant")));
            continue;
        };
        if let Some(user) = escaping_use(buffer, inst) {
            let d = not_recognised("the launch's parameter buffer escapes: it is used for something other than storing the arguments").with_primary_message("the buffer escapes here");
            diagnostics.push(source.place(d, user, &fname));
            continue;
        }
        launches.push(Launch { call: inst, buffer: Some(buffer), size, per_thread, function });
    }
    // A buffer no launch takes is a launch cdpc cannot see.
    let stray = calls.iter().find(|(_, inst, target)| GET_BUFFER.contains(&name_of(*target).as_str()) && !launches.iter().any(|l| l.buffer == Some(*inst)));
    if let Some(&(function, inst, _)) = stray.filter(|_| diagnostics.is_empty()) {
        diagnostics.push(source.place(not_recognised("a parameter buffer that no recognised launch takes"), inst, &name_of(function)));
    }
    (launches, diagnostics)
}

/// Launch entry points that take a `dim3` by value as a named struct of three `i32`s (a front
/// end's own `%dim3 = type { i32, i32, i32 }`) redeclared with the literal `{ i32, i32, i32 }`,
/// each call's dims rebuilt field by field. Afterwards every by-value `dim3` of a launch has
/// the literal type, the one thresholding, aggregation and [`to_v2`] build and pass on.
/// Entry points used other than called are left as they are (`E1010` when recognised).
pub(super) fn literal_dims(module: &Module<'_>) -> Result<(), String> {
    let literal = dims_type(module);
    let named_dim3 = |t: inkwell::types::BasicMetadataTypeEnum<'_>| match t {
        inkwell::types::BasicMetadataTypeEnum::StructType(s) => s.get_name().is_some() && is_dims(s),
        _ => false,
    };
    let entry_points: Vec<FunctionValue<'_>> = module.get_functions().filter(|f| f.count_basic_blocks() == 0 && is_launch(&name_of(*f))).collect();
    for old in entry_points {
        let params = old.get_type().get_param_types();
        if !params.iter().any(|t| named_dim3(*t)) {
            continue;
        }
        let fixed: Vec<inkwell::types::BasicMetadataTypeEnum> = params.iter().map(|t| if named_dim3(*t) { literal.into() } else { *t }).collect();
        redeclare(module, old, &fixed, &|b, _, v| {
            Ok(match v {
                BasicValueEnum::StructValue(s) if named_dim3(s.get_type().into()) => {
                    let mut dim = literal.get_poison();
                    for k in 0..3 {
                        let field = e(b.build_extract_value(s, k, "dim.field"))?;
                        dim = e(b.build_insert_value(dim, field, k, "dim.literal"))?.into_struct_value();
                    }
                    dim.into()
                }
                other => other.into(),
            })
        })?;
    }
    Ok(())
}

/// Entry points of the device runtime that take a `dim3` through a `byval` pointer (Clang's
/// declarations from the CUDA header: V1's launch, V2's parameter buffer when the program
/// calls it itself) redeclared with the `dim3` by value, `{ i32, i32, i32 }`, each call loading
/// it from the pointer where it was passed. Both are the same PTX parameter, `.param .align 4
/// .b8 [12]`, as nvcc declares it; but NVPTX copies a `byval` argument from its pointer, so the
/// dims a launch builds went to a local-memory slot and back into the parameter space (a
/// 32-byte frame in every thread of the launching kernel), where from a value they are
/// stored into it directly, as nvcc's code does. Run after [`lower`] (the passes' own launches
/// included); afterwards no entry point takes a `dim3` through a pointer. Entry points used
/// other than called are left as they are.
pub(super) fn dims_by_value(module: &Module<'_>) -> Result<(), String> {
    let dims = dims_type(module);
    let byval = inkwell::attributes::Attribute::get_named_enum_kind_id("byval");
    let entry_points: Vec<FunctionValue<'_>> = module.get_functions().filter(|f| f.count_basic_blocks() == 0 && is_launch_entry(&name_of(*f))).collect();
    for old in entry_points {
        let params = old.get_type().get_param_types();
        // A parameter that is a pointer `byval` of a struct of three `i32`s.
        let by_pointer: Vec<bool> = (0..params.len() as u32)
            .map(|i| {
                params[i as usize].is_pointer_type()
                    && old
                        .get_enum_attribute(inkwell::attributes::AttributeLoc::Param(i), byval)
                        .is_some_and(|a| a.is_type() && matches!(a.get_type_value(), inkwell::types::AnyTypeEnum::StructType(s) if is_dims(s)))
            })
            .collect();
        if !by_pointer.contains(&true) {
            continue;
        }
        let fixed: Vec<inkwell::types::BasicMetadataTypeEnum> = params.iter().zip(&by_pointer).map(|(t, &p)| if p { dims.into() } else { *t }).collect();
        redeclare(module, old, &fixed, &|b, i, v| Ok(if by_pointer[i as usize] { e(b.build_load(dims, v.into_pointer_value(), "dim3"))?.into() } else { v.into() }))?;
    }
    Ok(())
}

/// The literal `{ i32, i32, i32 }` a launch's `dim3` is passed as.
fn dims_type<'ctx>(module: &Module<'ctx>) -> inkwell::types::StructType<'ctx> {
    let i32t = module.get_context().i32_type();
    module.get_context().struct_type(&[i32t.into(), i32t.into(), i32t.into()], false)
}

/// Whether `s` is a struct of three `i32`s, as `dim3` is.
fn is_dims(s: inkwell::types::StructType<'_>) -> bool {
    s.count_fields() == 3 && s.get_field_types().iter().all(|f| f.is_int_type() && f.into_int_type().get_bit_width() == 32)
}

/// Redeclares the declaration `old` with the parameter types `fixed`, under its name, and
/// rebuilds each of its calls with every argument through `arg` (the builder before the call,
/// the argument's index and value); each new call keeps the old one's debug location,
/// metadata (a `.cdp` launch's span, [`KEEP_V1`]) and attributes, and the declaration the old
/// one's, but those of a parameter whose type changed. A declaration used other than called (its
/// address taken) is left as it is.
fn redeclare<'ctx>(
    module: &Module<'ctx>,
    old: FunctionValue<'ctx>,
    fixed: &[inkwell::types::BasicMetadataTypeEnum<'ctx>],
    arg: &dyn Fn(&inkwell::builder::Builder<'ctx>, u32, BasicValueEnum<'ctx>) -> Result<BasicMetadataValueEnum<'ctx>, String>,
) -> Result<(), String> {
    let ctx = module.get_context();
    let (mut calls, mut only_called) = (Vec::new(), true);
    let mut next = old.as_global_value().as_pointer_value().get_first_use();
    while let Some(u) = next {
        next = u.get_next_use();
        match user_instruction(u).filter(|i| callee(*i) == Some(old)) {
            Some(call) => calls.push(call),
            None => only_called = false,
        }
    }
    if !only_called || calls.is_empty() {
        return Ok(());
    }
    let ty = old.get_type();
    let new_ty = match ty.get_return_type() {
        Some(r) => inkwell::types::BasicType::fn_type(&r, fixed, ty.is_var_arg()),
        None => ctx.void_type().fn_type(fixed, ty.is_var_arg()),
    };
    let name = name_of(old);
    let new = module.add_function(&format!("{name}.redeclared"), new_ty, old.get_linkage().into());
    // The attributes stay (`nomerge`, `convergent`, ...), but those of a parameter whose type
    // changed (`byval`, `align`).
    let params = ty.get_param_types();
    let kept = |loc: AttributeLoc| match loc {
        AttributeLoc::Param(i) => params.get(i as usize) == fixed.get(i as usize),
        _ => true,
    };
    let locations: Vec<AttributeLoc> = [AttributeLoc::Function, AttributeLoc::Return].into_iter().chain((0..params.len() as u32).map(AttributeLoc::Param)).filter(|l| kept(*l)).collect();
    for &loc in &locations {
        for a in old.attributes(loc) {
            new.add_attribute(loc, a);
        }
    }
    let b = ctx.create_builder();
    for call in calls {
        b.position_before(&call);
        let mut args: Vec<BasicMetadataValueEnum> = Vec::new();
        for i in 0..call.get_num_operands() - 1 {
            args.push(arg(&b, i, operand(call, i).ok_or("a call's argument")?)?);
        }
        let site = e(b.build_call(new, &args, ""))?;
        if let Ok(was) = CallSiteValue::try_from(call) {
            site.set_call_convention(was.get_call_convention());
            for &loc in &locations {
                for a in was.attributes(loc) {
                    site.add_attribute(loc, a);
                }
            }
        }
        let rebuilt = site.try_as_basic_value().basic().and_then(|v| v.as_instruction_value());
        let name = call.get_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(r) = rebuilt {
            r.set_debug_location(call.get_debug_location());
            copy_metadata(call, r);
            call.replace_all_uses_with(&r);
        }
        call.erase_from_basic_block();
        if let (Some(r), Some(name)) = (rebuilt, name) {
            let _ = r.set_name(&name);
        }
    }
    // SAFETY: the old declaration has no use left.
    unsafe { old.delete() };
    new.as_global_value().set_name(&name);
    Ok(())
}

/// Every metadata attachment of `from` but its debug location, on `to`.
fn copy_metadata(from: InstructionValue<'_>, to: InstructionValue<'_>) {
    use inkwell::context::AsContextRef;
    use inkwell::llvm_sys::core::{
        LLVMDisposeValueMetadataEntries, LLVMInstructionGetAllMetadataOtherThanDebugLoc, LLVMMetadataAsValue, LLVMSetMetadata, LLVMValueMetadataEntriesGetKind, LLVMValueMetadataEntriesGetMetadata,
    };
    let Some(block) = from.get_parent() else { return };
    // SAFETY: reads of `from`'s attachments, written on `to`, both live instructions of one
    // context; the entries are disposed of once read.
    unsafe {
        let mut count = 0usize;
        let entries = LLVMInstructionGetAllMetadataOtherThanDebugLoc(from.as_value_ref(), &mut count);
        if entries.is_null() {
            return;
        }
        for i in 0..count as u32 {
            let kind = LLVMValueMetadataEntriesGetKind(entries, i);
            let node = LLVMValueMetadataEntriesGetMetadata(entries, i);
            LLVMSetMetadata(to.as_value_ref(), kind, LLVMMetadataAsValue(block.get_context().as_ctx_ref(), node));
        }
        LLVMDisposeValueMetadataEntries(entries);
    }
}

/// Lowers the launches of `sites`, the module's as they are now, to `target`'s ABI (module
/// docs); with a launch refused, returns the refusals and changes nothing.
pub fn lower<'ctx>(module: &Module<'ctx>, sites: &Sites<'ctx>, target: &Target, source: &SourceText) -> Vec<Diagnostic> {
    if !sites.refused.is_empty() {
        return sites.refused.clone();
    }
    let launches = &sites.launches;
    let mut diagnostics = Vec::new();
    // A kernel defined in another file is declared here without the kernel calling
    // convention (Clang's declaration of a `__global__` function it only launches): it must
    // be an `.extern .entry` in the PTX, as nvcc writes it, for nvlink to join the two.
    for l in launches {
        let kernel = operand(l.call, 0).and_then(|k| module.get_function(&k.get_name().to_string_lossy()));
        if let Some(k) = kernel.filter(|k| k.count_basic_blocks() == 0 && !k.get_name().to_bytes().starts_with(b"llvm.")) {
            crate::back::device_launch::mark_kernel(k);
        }
    }
    // Which launches stay V1, read before any is lowered: lowering erases a launch's call, so
    // its metadata cannot be asked afterwards.
    let stays_v1: Vec<bool> = launches.iter().map(|l| target.launch_abi == LaunchAbi::V1 || keeps_v1(l)).collect();
    match target.launch_abi {
        LaunchAbi::V1 => {}
        LaunchAbi::V2 => {
            for l in launches.iter().zip(&stays_v1).filter(|(_, v1)| !**v1).map(|(l, _)| l) {
                let lowered = match in_place_v2(module, target, l) {
                    Ok(true) => Ok(()),
                    Ok(false) => to_v2(module, target, l),
                    Err(e) => Err(e),
                };
                if let Err(e) = lowered {
                    diagnostics.push(source.place(not_recognised(e), l.call, &name_of(l.function)));
                }
            }
        }
    }
    // What stays V1 (all at V1, the marked launches at V2): the streams its entry points refuse.
    for l in launches.iter().zip(&stays_v1).filter(|(_, v1)| **v1).map(|(l, _)| l) {
        let stream = operand(l.call, 5).and_then(constant_u64);
        if let Some(handle) = stream.filter(|s| runtime_shim::streams::needs_v2_abi(*s)) {
            let which = match handle {
                runtime_shim::streams::TAIL_LAUNCH => "cudaStreamTailLaunch".to_string(),
                runtime_shim::streams::FIRE_AND_FORGET => "cudaStreamFireAndForget".to_string(),
                other => format!("stream handle {other:#x}"),
            };
            let note = match target.launch_abi {
                LaunchAbi::V1 => "the documented V1 entry points refuse this stream at run time (the child never runs); compile with `--launch-abi v2` (the default)".to_string(),
                LaunchAbi::V2 => format!("the documented V1 entry points refuse this stream at run time (the child never runs); the launch's call is marked `!{KEEP_V1}`, which keeps it V1"),
            };
            let d = Diagnostic::new(Code::StreamNeedsV2Abi, Span::new(0, 0), format!("a launch into `{which}` needs the V2 launch ABI"))
                .with_primary_message(format!("launched into `{which}`"))
                .with_note(note);
            diagnostics.push(source.place(d, l.call, &name_of(l.function)));
        }
    }
    diagnostics
}

/// Whether the value `def` is available at `at` (both in one function): not an instruction,
/// or an instruction before `at` in its block, or in a block that dominates `at`'s (every path
/// from the entry to `at`'s block passes through it).
fn available_at(def: BasicValueEnum<'_>, at: InstructionValue<'_>) -> bool {
    let Some(def) = def.as_instruction_value() else { return true };
    let (Some(db), Some(ab)) = (def.get_parent(), at.get_parent()) else { return false };
    if db == ab {
        let mut next = def.get_next_instruction();
        while let Some(i) = next {
            if i == at {
                return true;
            }
            next = i.get_next_instruction();
        }
        return false;
    }
    let Some(entry) = ab.get_parent().and_then(|f| f.get_first_basic_block()) else { return false };
    if db == entry {
        return true;
    }
    // `db` dominates `ab` when `ab` cannot be reached from the entry without passing `db`.
    let mut seen = std::collections::HashSet::from([entry]);
    let mut pending = vec![entry];
    while let Some(block) = pending.pop() {
        if block == ab {
            return false;
        }
        let Some(term) = block.get_terminator() else { continue };
        for i in 0..term.get_num_operands() {
            if let Some(next) = block_operand(term, i) {
                if next != db && seen.insert(next) {
                    pending.push(next);
                }
            }
        }
    }
    true
}

/// V2 in place, where it can be: when the kernel and the configuration (dims by value) are
/// available where the V1 buffer was asked for, as in `.cdp` code, which evaluates every
/// operand first. The V1 buffer becomes `__cudaCDP2GetParameterBufferV2(kernel, grid, block,
/// shmem)`, the front end's stores stay as written (each with its own alignment: nvcc's
/// stores), and the launch becomes `__cudaCDP2LaunchDeviceV2(buf, stream)` behind a null test
/// (a helper, always inlined, which LLVM folds into the front end's own test). Returns false,
/// changing nothing, where the operands come later or the dims are pointers: [`to_v2`] then.
fn in_place_v2(module: &Module<'_>, target: &Target, l: &Launch<'_>) -> Result<bool, String> {
    let runtime = DeviceRuntime::new(module, target);
    let get = runtime.entry(&GET_PARAMETER_BUFFER_V2);
    if get.get_type().get_param_types().get(1).is_some_and(|t| t.is_pointer_type()) {
        return Ok(false);
    }
    let config: Vec<BasicValueEnum<'_>> = [0, 2, 3, 4].iter().map(|&i| operand(l.call, i)).collect::<Option<_>>().ok_or("a launch without its configuration")?;
    // Without a V1 buffer (a kernel without parameters), the V2 buffer is asked for at the launch.
    let at = l.buffer.unwrap_or(l.call);
    if config[1].is_pointer_value() || config[2].is_pointer_value() || !config.iter().all(|v| available_at(*v, at)) {
        return Ok(false);
    }
    let guarded = l.buffer.is_some_and(|buffer| tested_not_null(buffer, l.call));
    let ctx = module.get_context();
    let b = ctx.create_builder();
    b.position_before(&at);
    let args: Vec<BasicMetadataValueEnum> = config.iter().map(|v| (*v).into()).collect();
    let buf = e(b.build_call(get, &args, "buf"))?.try_as_basic_value().basic().ok_or("no buffer")?;
    let buf_inst = buf.as_instruction_value().ok_or("no buffer")?;
    buf_inst.set_debug_location(at.get_debug_location());
    if let Some(buffer) = l.buffer {
        buffer.replace_all_uses_with(&buf_inst);
        buffer.erase_from_basic_block();
    }
    b.position_before(&l.call);
    let stream = match operand(l.call, 5).ok_or("a launch without a stream")? {
        BasicValueEnum::IntValue(i) => e(b.build_int_to_ptr(i, runtime.ptr_type(), "stream"))?.into(),
        other => other,
    };
    // The front end's own null test guards the launch already (`.cdp`'s does): the launch
    // entry point is called as it is; otherwise through the helper that tests.
    let launch = if guarded { runtime.entry(if l.per_thread { &LAUNCH_DEVICE_V2_PTSZ } else { &LAUNCH_DEVICE_V2 }) } else { filled_helper(module, target, l.per_thread)? };
    let status = e(b.build_call(launch, &[buf.into(), stream.into()], "launch"))?;
    let status = status.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()).ok_or("no status")?;
    status.set_debug_location(l.call.get_debug_location());
    l.call.replace_all_uses_with(&status);
    l.call.erase_from_basic_block();
    Ok(true)
}

/// Whether `launch` runs only when `buffer` is not null: its block is entered only from the
/// conditional branch on `buffer == null` (or `!= null`), from the side where it is not.
fn tested_not_null(buffer: InstructionValue<'_>, launch: InstructionValue<'_>) -> bool {
    use inkwell::llvm_sys::core::{LLVMGetICmpPredicate, LLVMGetSuccessor};
    use inkwell::llvm_sys::LLVMIntPredicate;
    let Some(block) = launch.get_parent() else { return false };
    // One use of the block: the branch into it.
    let Some(only) = block.get_first_use().filter(|u| u.get_next_use().is_none()) else { return false };
    let Some(branch) = user_instruction(only).filter(|i| i.get_opcode() == InstructionOpcode::Br && i.get_num_operands() == 3) else { return false };
    let Some(test) = operand(branch, 0).and_then(|c| c.as_instruction_value()).filter(|c| c.get_opcode() == InstructionOpcode::ICmp) else { return false };
    let (a, z) = (operand(test, 0), operand(test, 1));
    let is_buffer = |v: Option<BasicValueEnum<'_>>| v.is_some_and(|v| v.as_value_ref() == buffer.as_value_ref());
    let is_null = |v: Option<BasicValueEnum<'_>>| v.and_then(constant_u64) == Some(0);
    if !((is_buffer(a) && is_null(z)) || (is_buffer(z) && is_null(a))) {
        return false;
    }
    // SAFETY: queries of a live compare and a live two-way branch.
    unsafe {
        let not_null = match LLVMGetICmpPredicate(test.as_value_ref()) {
            LLVMIntPredicate::LLVMIntEQ => LLVMGetSuccessor(branch.as_value_ref(), 1),
            LLVMIntPredicate::LLVMIntNE => LLVMGetSuccessor(branch.as_value_ref(), 0),
            _ => return false,
        };
        not_null == block.as_mut_ptr() && LLVMGetSuccessor(branch.as_value_ref(), 0) != LLVMGetSuccessor(branch.as_value_ref(), 1)
    }
}

/// The always-inline helper that launches a filled V2 buffer: `i32 (ptr buf, ptr stream)`,
/// status 69 without launching when the buffer is null.
fn filled_helper<'ctx>(module: &Module<'ctx>, target: &Target, per_thread: bool) -> Result<FunctionValue<'ctx>, String> {
    let name = if per_thread { "__cdpc_launch_v2_filled_ptsz" } else { "__cdpc_launch_v2_filled" };
    if let Some(f) = module.get_function(name) {
        return Ok(f);
    }
    let ctx = module.get_context();
    let runtime = DeviceRuntime::new(module, target);
    let (ptr, i32t) = (ctx.ptr_type(AddressSpace::default()), ctx.i32_type());
    let f = module.add_function(name, i32t.fn_type(&[ptr.into(), ptr.into()], false), Some(Linkage::Internal));
    let inline = ctx.create_enum_attribute(inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline"), 0);
    f.add_attribute(inkwell::attributes::AttributeLoc::Function, inline);
    let launch = runtime.entry(if per_thread { &LAUNCH_DEVICE_V2_PTSZ } else { &LAUNCH_DEVICE_V2 });
    let b = ctx.create_builder();
    let p = |i: u32| f.get_nth_param(i).expect("two parameters");
    let (entry, go, skip) = (ctx.append_basic_block(f, "entry"), ctx.append_basic_block(f, "launch"), ctx.append_basic_block(f, "skip"));
    b.position_at_end(entry);
    let null = e(b.build_is_null(p(0).into_pointer_value(), "null"))?;
    e(b.build_conditional_branch(null, skip, go))?;
    b.position_at_end(go);
    let status = e(b.build_call(launch, &[p(0).into(), p(1).into()], "status"))?.try_as_basic_value().basic().ok_or("no status")?;
    e(b.build_return(Some(&status)))?;
    b.position_at_end(skip);
    e(b.build_return(Some(&i32t.const_int(LAUNCH_SKIPPED_STATUS as u64, false))))?;
    Ok(f)
}

/// The always-inline helper that takes a launch's argument block to the V2 entry points:
/// `i32 (ptr kernel, dim3 grid, dim3 block, i32 shmem, ptr stream, ptr args, i64 size)`.
fn v2_helper<'ctx>(module: &Module<'ctx>, target: &Target, per_thread: bool) -> Result<FunctionValue<'ctx>, String> {
    let name = if per_thread { "__cdpc_launch_v2_ptsz" } else { "__cdpc_launch_v2" };
    if let Some(f) = module.get_function(name) {
        return Ok(f);
    }
    let ctx = module.get_context();
    let runtime = DeviceRuntime::new(module, target);
    let (ptr, i32t, i64t, dim3) = (ctx.ptr_type(AddressSpace::default()), ctx.i32_type(), ctx.i64_type(), runtime.dim3_type());
    let ty = i32t.fn_type(&[ptr.into(), dim3.into(), dim3.into(), i32t.into(), ptr.into(), ptr.into(), i64t.into()], false);
    let f = module.add_function(name, ty, Some(Linkage::Internal));
    let inline = ctx.create_enum_attribute(inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline"), 0);
    f.add_attribute(inkwell::attributes::AttributeLoc::Function, inline);
    let get = runtime.entry(&GET_PARAMETER_BUFFER_V2);
    let launch = runtime.entry(if per_thread { &LAUNCH_DEVICE_V2_PTSZ } else { &LAUNCH_DEVICE_V2 });
    let b = ctx.create_builder();
    let p = |i: u32| f.get_nth_param(i).expect("seven parameters");
    let (entry, fill, skip) = (ctx.append_basic_block(f, "entry"), ctx.append_basic_block(f, "fill"), ctx.append_basic_block(f, "skip"));
    b.position_at_end(entry);
    // A module that calls the V2 entry points itself (Clang's declaration from the CUDA
    // header) passes each dim3 as a `byval` pointer; cdpc's own declaration, by value.
    let by_pointer = get.get_type().get_param_types().get(1).is_some_and(|t| t.is_pointer_type());
    let mut dims: Vec<BasicMetadataValueEnum> = Vec::new();
    for i in [1, 2] {
        if by_pointer {
            let slot = e(b.build_alloca(dim3, "dim3"))?;
            e(b.build_store(slot, p(i)))?;
            dims.push(slot.into());
        } else {
            dims.push(p(i).into());
        }
    }
    let args: Vec<BasicMetadataValueEnum> = vec![p(0).into(), dims[0], dims[1], p(3).into()];
    let call = e(b.build_call(get, &args, "buf"))?;
    if by_pointer {
        let byval = ctx.create_type_attribute(inkwell::attributes::Attribute::get_named_enum_kind_id("byval"), dim3.into());
        call.add_attribute(inkwell::attributes::AttributeLoc::Param(1), byval);
        call.add_attribute(inkwell::attributes::AttributeLoc::Param(2), byval);
    }
    let buf = call.try_as_basic_value().basic().ok_or("no buffer")?.into_pointer_value();
    let null = e(b.build_is_null(buf, "null"))?;
    e(b.build_conditional_branch(null, skip, fill))?;
    b.position_at_end(fill);
    // The runtime's buffer is aligned for every parameter type (nvcc stores 16-byte vectors).
    e(b.build_memcpy(buf, 16, p(5).into_pointer_value(), 16, p(6).into_int_value()))?;
    let status = e(b.build_call(launch, &[buf.into(), p(4).into()], "status"))?.try_as_basic_value().basic().ok_or("no status")?;
    e(b.build_return(Some(&status)))?;
    b.position_at_end(skip);
    e(b.build_return(Some(&i32t.const_int(LAUNCH_SKIPPED_STATUS as u64, false))))?;
    Ok(f)
}

/// A builder's result with its error as text.
fn e<T>(r: Result<T, inkwell::builder::BuilderError>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

fn to_v2(module: &Module<'_>, target: &Target, l: &Launch<'_>) -> Result<(), String> {
    let ctx = module.get_context();
    let runtime = DeviceRuntime::new(module, target);
    let dim3 = runtime.dim3_type();
    let helper = v2_helper(module, target, l.per_thread)?;
    let b = ctx.create_builder();
    // The argument block: a local where the V1 buffer was.
    let entry = l.function.get_first_basic_block().ok_or("a launch in a function without a body")?;
    super::clone::position_at_start(&b, entry);
    let bytes = ctx.i8_type().array_type(l.size.max(1) as u32);
    let block = e(b.build_alloca(bytes, "launch.args"))?;
    block.as_instruction_value().expect("an alloca").set_alignment(64).map_err(|e| e.to_string())?;
    if let Some(buffer) = l.buffer {
        buffer.replace_all_uses_with(&block.as_instruction_value().expect("an alloca"));
        buffer.erase_from_basic_block();
    }
    b.position_before(&l.call);
    let dim = |i: u32| -> Result<BasicValueEnum<'_>, String> {
        let v = operand(l.call, i).ok_or("a launch without its configuration")?;
        Ok(if v.is_pointer_value() { e(b.build_load(dim3, v.into_pointer_value(), "dim3"))? } else { v })
    };
    let (grid, blk) = (dim(2)?, dim(3)?);
    let kernel = operand(l.call, 0).ok_or("a launch without a kernel")?;
    let shmem = operand(l.call, 4).ok_or("a launch without its shared memory size")?;
    let stream = match operand(l.call, 5).ok_or("a launch without a stream")? {
        BasicValueEnum::IntValue(i) => e(b.build_int_to_ptr(i, runtime.ptr_type(), "stream"))?.into(),
        other => other,
    };
    let size = ctx.i64_type().const_int(l.size, false);
    let args: Vec<BasicMetadataValueEnum> = vec![kernel.into(), grid.into(), blk.into(), shmem.into(), stream.into(), block.into(), size.into()];
    let call = e(b.build_call(helper, &args, "launch"))?;
    let status = call.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()).ok_or("no status")?;
    status.set_debug_location(l.call.get_debug_location());
    l.call.replace_all_uses_with(&status);
    l.call.erase_from_basic_block();
    Ok(())
}
