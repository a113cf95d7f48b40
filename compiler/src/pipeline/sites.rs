//! What the passes that rewrite a launch site share, below each of them (`defer`,
//! `threshold`, `aggregate` and its granularities): the documented shape of a launch and its
//! parameter layout, the always-inline helper a site calls and the launch it makes as
//! documented, a launch's configuration read at run time, and the register cap of the kernels
//! they change. It imports only the pipeline's lower pieces (`emit`, `clone`, `launch`,
//! `copies`, `location`, `itanium`).

use super::clone::{self, as_function, called_function, value_name};
use super::emit::ok;
use super::itanium;
use super::launch::{self, Launch};
use crate::back::device_launch::LAUNCH_SKIPPED_STATUS;
use crate::llvm::{block_operand, operand};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetData;
use inkwell::types::{AnyTypeEnum, BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue};
use inkwell::IntPredicate;
use std::collections::{HashMap, HashSet};

/// Registers a kernel may use per thread so that a block of 1024 threads still fits an SM's
/// 65,536 (sm_50 to sm_120 alike). Every kernel that aggregation or thresholding created or
/// changed (itself or a function it calls) is capped at it unless its launch bounds already
/// bound ptxas: the record-building code of a parent and the record-reading code of `C__agg`
/// can take a kernel without bounds past 64 (KLAP's MST, whose kernels run with 1024 threads:
/// 90 registers, and every aggregated launch failed with `cudaErrorLaunchOutOfResources`).
/// The cap is marked as the passes' (`cap_kernel`): the build assembles without it
/// and keeps it only for the kernels that need more registers than this without it, since
/// the directive alone makes ptxas use more (363 of the 789 capped kernels of the samples'
/// and KLAP's aggregated builds got more registers under it, 20 needed it;
/// `toolchain::register_cap`).
pub const REGISTER_CAP: u32 = 64;

/// The largest grid `x`, `y` and `z`, block `x`, `y`, `z` and threads the runtime launches.
const GRID_LIMITS: [u64; 3] = [(1 << 31) - 1, 65535, 65535];
const BLOCK_LIMITS: [u64; 3] = [1024, 1024, 64];
const MAX_BLOCK_THREADS: u64 = 1024;

/// The source name of a kernel for messages: `_Z5childPi` is `child`, `_ZN2ns1kEv` `ns::k`
/// ([`itanium::qualified_name`]); a symbol that has none is shown as it is.
pub(crate) fn source_name(mangled: &str) -> String {
    itanium::qualified_name(mangled).unwrap_or_else(|| mangled.to_string())
}

/// The successors of a block.
pub(super) fn successors<'ctx>(b: BasicBlock<'ctx>) -> Vec<BasicBlock<'ctx>> {
    let Some(t) = b.get_terminator() else { return Vec::new() };
    (0..t.get_num_operands()).filter_map(|i| block_operand(t, i)).collect()
}

/// The edges every path from `function`'s entry to `target` takes that a branch chose: `P -> S`
/// where `S` dominates `target` and has `P` as its one predecessor, `P` ending in a conditional
/// branch, in the order of `S` in the function. What decides whether a thread reaches the
/// block (`if (c) { ... target ... }`); a branch whose arms meet again before `target` is not
/// among them.
pub(super) fn guard_edges<'ctx>(function: FunctionValue<'ctx>, target: BasicBlock<'ctx>) -> Vec<(BasicBlock<'ctx>, BasicBlock<'ctx>)> {
    let blocks = function.get_basic_blocks();
    let at: HashMap<BasicBlock<'_>, usize> = blocks.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let Some(&goal) = at.get(&target) else { return Vec::new() };
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    for (i, b) in blocks.iter().enumerate() {
        for s in successors(*b) {
            preds[at[&s]].push(i);
        }
    }
    // Dominators, by the iterative data-flow rule (kernels have hundreds of blocks at most).
    let all: HashSet<usize> = (0..blocks.len()).collect();
    let mut dom: Vec<HashSet<usize>> = (0..blocks.len()).map(|i| if i == 0 { HashSet::from([0]) } else { all.clone() }).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for i in 1..blocks.len() {
            let mut next = preds[i].iter().map(|p| dom[*p].clone()).reduce(|a, b| a.intersection(&b).copied().collect()).unwrap_or_default();
            next.insert(i);
            if next != dom[i] {
                dom[i] = next;
                changed = true;
            }
        }
    }
    let mut dominators: Vec<usize> = dom[goal].iter().copied().collect();
    dominators.sort_unstable();
    dominators
        .into_iter()
        .filter_map(|s| match preds[s].as_slice() {
            [p] if blocks[*p].get_terminator().is_some_and(|t| t.get_opcode() == inkwell::values::InstructionOpcode::Br && t.get_num_operands() == 3) => Some((blocks[*p], blocks[s])),
            _ => None,
        })
        .collect()
}

pub(super) fn const_int(v: LLVMValueRef) -> Option<(u64, u32)> {
    // SAFETY: queries of a live value.
    unsafe {
        if LLVMIsAConstantInt(v).is_null() {
            return None;
        }
        let bits = LLVMGetIntTypeWidth(LLVMTypeOf(v));
        (bits <= 64).then(|| (LLVMConstIntGetZExtValue(v), bits))
    }
}

/// The largest parameter buffer a launch may have (CUDA 12.1's 32764 bytes of parameters).
const MAX_PARAMETER_BYTES: u64 = 32764;

/// Whether the launch's calls have the documented types, which the helper copies: a buffer
/// call with two constant operands returning a pointer, a launch returning `i32` and taking
/// the kernel, a pointer, two dims (`byval` pointers or `{ i32, i32, i32 }`), the shared
/// memory size as `i32` and a pointer stream; and a buffer of at most
/// [`MAX_PARAMETER_BYTES`].
pub(super) fn documented_shape(l: &Launch<'_>) -> bool {
    let operand = |i: u32| operand(l.call, i);
    let dim3 = |v: Option<BasicValueEnum>| match v {
        Some(BasicValueEnum::PointerValue(_)) => true,
        Some(BasicValueEnum::StructValue(s)) => {
            let t = s.get_type();
            t.count_fields() == 3 && t.get_field_types().iter().all(|f| f.is_int_type() && f.into_int_type().get_bit_width() == 32)
        }
        _ => false,
    };
    let int32 = |v: Option<BasicValueEnum>| matches!(v, Some(BasicValueEnum::IntValue(i)) if i.get_type().get_bit_width() == 32);
    // SAFETY: type queries of live instructions.
    let returns_i32 = unsafe {
        let t = LLVMTypeOf(l.call.as_value_ref());
        LLVMGetTypeKind(t) == inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 32
    };
    let buffer_ok = l
        .buffer
        .is_none_or(|buf| buf.get_num_operands() == 3 && (0..2).all(|i| crate::llvm::operand(buf, i).is_some_and(|v| const_int(v.as_value_ref()).is_some())) && buf.get_type().is_pointer_type());
    returns_i32
        && buffer_ok
        && l.size <= MAX_PARAMETER_BYTES
        && matches!(operand(1), Some(BasicValueEnum::PointerValue(_)))
        && dim3(operand(2))
        && dim3(operand(3))
        && int32(operand(4))
        && matches!(operand(5), Some(BasicValueEnum::PointerValue(_)))
}

/// Where each parameter of `child` lies in its parameter buffer (each at its alignment, in
/// order, as Clang and nvcc lay it out), and how: the type to load, or `None` for a `byval`
/// parameter, passed as the address of its bytes.
pub(super) fn parameter_layout<'ctx>(child: FunctionValue<'ctx>, data: &TargetData) -> (Vec<(u64, Option<BasicTypeEnum<'ctx>>)>, u64) {
    let byval = Attribute::get_named_enum_kind_id("byval");
    let align_kind = Attribute::get_named_enum_kind_id("align");
    let mut offset = 0u64;
    let mut out = Vec::new();
    for (i, ty) in child.get_type().get_param_types().into_iter().enumerate() {
        let loc = AttributeLoc::Param(i as u32);
        let (align, size, load) = match child.get_enum_attribute(loc, byval) {
            Some(attr) => {
                // SAFETY: the type of a live `byval` attribute.
                let t = unsafe { AnyTypeEnum::new(LLVMGetTypeAttributeValue(attr.as_mut_ptr())) };
                let natural = data.get_abi_alignment(&t) as u64;
                let given = child.get_enum_attribute(loc, align_kind).map_or(0, |a| a.get_enum_value());
                (natural.max(given), data.get_abi_size(&t), None)
            }
            None => {
                let Ok(ty) = BasicTypeEnum::try_from(ty) else { return (out, u64::MAX) };
                (data.get_abi_alignment(&ty) as u64, data.get_store_size(&ty), Some(ty))
            }
        };
        offset = offset.div_ceil(align.max(1)) * align.max(1);
        out.push((offset, load));
        offset += size;
    }
    (out, offset)
}

/// The functions reachable from `roots` that read a built-in, themselves or through calls.
pub(super) fn builtin_readers<'ctx>(roots: &[FunctionValue<'ctx>]) -> Vec<FunctionValue<'ctx>> {
    let mut calls: HashMap<FunctionValue, Vec<FunctionValue>> = HashMap::new();
    let mut reads = Vec::new();
    let mut stack = roots.to_vec();
    let mut order = Vec::new();
    while let Some(f) = stack.pop() {
        if calls.contains_key(&f) {
            continue;
        }
        let mut callees = Vec::new();
        for b in f.get_basic_blocks() {
            for inst in b.get_instructions() {
                let Some(target) = called_function(inst.as_value_ref()) else { continue };
                if clone::builtin_index(&value_name(target)).is_some() {
                    reads.push(f);
                }
                callees.extend(as_function(target).filter(|t| t.count_basic_blocks() > 0));
            }
        }
        stack.extend(callees.iter().copied());
        calls.insert(f, callees);
        order.push(f);
    }
    // Readers through callees, to a fixed point.
    let mut readers: HashSet<FunctionValue> = reads.into_iter().collect();
    loop {
        let before = readers.len();
        for f in &order {
            if calls[f].iter().any(|c| readers.contains(c)) {
                readers.insert(*f);
            }
        }
        if readers.len() == before {
            break;
        }
    }
    order.into_iter().filter(|f| readers.contains(f)).collect()
}

/// Kernels reaching one of `changed` are capped at [`REGISTER_CAP`]
/// registers, unless they have launch bounds or a cap: a parent that ran with 1024-thread
/// blocks must still be able to.
pub(super) fn cap_registers<'ctx>(module: &Module<'ctx>, changed: &HashSet<FunctionValue<'ctx>>) {
    let mut callers: HashMap<FunctionValue, Vec<FunctionValue>> = HashMap::new();
    for f in module.get_functions() {
        for b in f.get_basic_blocks() {
            for inst in b.get_instructions() {
                if let Some(target) = called_function(inst.as_value_ref()).and_then(as_function) {
                    callers.entry(target).or_default().push(f);
                }
            }
        }
    }
    let mut reaching: HashSet<FunctionValue> = changed.clone();
    let mut stack: Vec<FunctionValue> = changed.iter().copied().collect();
    while let Some(f) = stack.pop() {
        for &caller in callers.get(&f).into_iter().flatten() {
            if reaching.insert(caller) {
                stack.push(caller);
            }
        }
    }
    // In the module's order, not the set's: each cap's mark is a line of the PTX.
    for f in module.get_functions().filter(|f| reaching.contains(f)) {
        let kernel = f.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV;
        let bounded = ["nvvm.maxntid", "nvvm.minctasm", "nvvm.maxnreg"].iter().any(|k| f.get_string_attribute(AttributeLoc::Function, k).is_some());
        if kernel && !bounded {
            cap_kernel(module, f);
        }
    }
}

/// Caps kernel `f` at [`REGISTER_CAP`] registers (`nvvm.maxnreg`) and marks
/// the cap as the launch passes' in the module's file-scope assembly, a PTX comment
/// (`toolchain::register_cap::mark`): the build leaves it out where ptxas needs no more
/// registers without it. Never called for a kernel with launch bounds or a cap of its own.
pub(super) fn cap_kernel<'ctx>(module: &Module<'ctx>, f: FunctionValue<'ctx>) {
    let cap = REGISTER_CAP;
    f.add_attribute(AttributeLoc::Function, module.get_context().create_string_attribute("nvvm.maxnreg", &cap.to_string()));
    let line = crate::toolchain::register_cap::mark(cap, &f.get_name().to_string_lossy());
    // SAFETY: the module is valid; LLVM copies the `len` bytes it is given.
    unsafe { inkwell::llvm_sys::core::LLVMAppendModuleInlineAsm(module.as_mut_ptr(), line.as_ptr().cast(), line.len()) };
}

/// A launch's configuration, read at the builder's position.
pub(super) struct Config<'ctx> {
    pub grid: [IntValue<'ctx>; 3],
    pub block: [IntValue<'ctx>; 3],
    /// Blocks and threads per block, `i64`.
    pub blocks: IntValue<'ctx>,
    pub threads: IntValue<'ctx>,
    /// Whether the runtime would launch it: every dimension at least 1 and within its limit,
    /// at most 1024 threads a block.
    pub valid: IntValue<'ctx>,
}

impl<'ctx> Config<'ctx> {
    /// The dims as the launch takes them: `byval` pointers or `{ i32, i32, i32 }` values.
    pub(super) fn load(ctx: &inkwell::context::ContextRef<'ctx>, b: &inkwell::builder::Builder<'ctx>, grid: BasicValueEnum<'ctx>, block: BasicValueEnum<'ctx>) -> Self {
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let dims = |v: BasicValueEnum<'ctx>, name: &str| -> [IntValue<'ctx>; 3] {
            let agg = if v.is_pointer_value() {
                let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
                ok(b.build_load(dim3, v.into_pointer_value(), name)).into_struct_value()
            } else {
                v.into_struct_value()
            };
            [0, 1, 2].map(|i| ok(b.build_extract_value(agg, i, &format!("{name}.{}", ["x", "y", "z"][i as usize]))).into_int_value())
        };
        let (g, bd) = (dims(grid, "grid"), dims(block, "block"));
        let wide = |v: IntValue<'ctx>| ok(b.build_int_z_extend(v, i64t, "w"));
        let c64 = |v: u64| i64t.const_int(v, false);
        let mul = |x: IntValue<'ctx>, y: IntValue<'ctx>| ok(b.build_int_mul(x, y, "m"));
        let blocks = mul(mul(wide(g[0]), wide(g[1])), wide(g[2]));
        let threads = mul(mul(wide(bd[0]), wide(bd[1])), wide(bd[2]));
        let mut conds = Vec::new();
        for (d, limits) in [(g, GRID_LIMITS), (bd, BLOCK_LIMITS)] {
            for (v, limit) in d.into_iter().zip(limits) {
                conds.push(ok(b.build_int_compare(IntPredicate::UGE, wide(v), c64(1), "ge1")));
                conds.push(ok(b.build_int_compare(IntPredicate::ULE, wide(v), c64(limit), "le")));
            }
        }
        conds.push(ok(b.build_int_compare(IntPredicate::ULE, threads, c64(MAX_BLOCK_THREADS), "threads.ok")));
        let valid = conds.into_iter().reduce(|a, c| ok(b.build_and(a, c, "valid"))).expect("conditions");
        Config { grid: g, block: bd, blocks, threads, valid }
    }
}

/// Unflattens `i` as the hardware numbers a grid's blocks and a block's threads, x fastest.
pub(super) fn unflatten<'ctx>(b: &inkwell::builder::Builder<'ctx>, i: IntValue<'ctx>, d: [IntValue<'ctx>; 3]) -> [IntValue<'ctx>; 3] {
    let x = ok(b.build_int_unsigned_rem(i, d[0], "x"));
    let over_x = ok(b.build_int_unsigned_div(i, d[0], "over.x"));
    let y = ok(b.build_int_unsigned_rem(over_x, d[1], "y"));
    let z = ok(b.build_int_unsigned_div(i, ok(b.build_int_mul(d[0], d[1], "xy")), "z"));
    [x, y, z]
}

/// The arguments of a child laid out as `layout` in the bytes at `at`, which is aligned to
/// `align`: loaded (each at the alignment its offset has), or for a `byval` parameter the
/// address of its bytes.
pub(super) fn load_arguments<'ctx>(
    ctx: &inkwell::context::ContextRef<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    layout: &[(u64, Option<BasicTypeEnum<'ctx>>)],
    at: inkwell::values::PointerValue<'ctx>,
    align: u32,
) -> Vec<BasicMetadataValueEnum<'ctx>> {
    layout
        .iter()
        .map(|(offset, load)| {
            // SAFETY: an offset inside the argument bytes, checked against their size.
            let p = unsafe { ok(b.build_gep(ctx.i8_type(), at, &[ctx.i64_type().const_int(*offset, false)], "arg.at")) };
            match load {
                Some(ty) => {
                    let v = ok(b.build_load(*ty, p, "arg"));
                    v.as_instruction_value().expect("a load").set_alignment(super::copies::aligned_at(align.into(), *offset) as u32).expect("a power of two");
                    v.into()
                }
                None => p.into(),
            }
        })
        .collect()
}

/// Adds `byval` (and `align`) of `callee`'s parameters to the call's arguments.
pub(super) fn byval_at_call(callee: FunctionValue<'_>, call: inkwell::values::CallSiteValue<'_>) {
    for i in 0..callee.count_params() {
        for kind in [Attribute::get_named_enum_kind_id("byval"), Attribute::get_named_enum_kind_id("align")] {
            if let Some(attr) =
                callee.get_enum_attribute(AttributeLoc::Param(i), kind).filter(|_| callee.get_enum_attribute(AttributeLoc::Param(i), Attribute::get_named_enum_kind_id("byval")).is_some())
            {
                call.add_attribute(AttributeLoc::Param(i), attr);
            }
        }
    }
}

/// The name of the kernel `l` launches (empty for a launch through a pointer).
pub(super) fn child_name(l: &Launch<'_>) -> String {
    let operand = operand(l.call, 0).expect("a launch's operand");
    as_function(operand.as_value_ref()).map_or_else(String::new, |c| c.get_name().to_string_lossy().into_owned())
}

/// Declares the always-inline helper `i32 NAME(ptr args, grid, block)` of the launch `l`,
/// its dims typed and attributed as the launch takes them.
pub(super) fn new_helper<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, name: &str) -> FunctionValue<'ctx> {
    new_helper_with(module, l, name, &[])
}

/// [`new_helper`] with `extra` parameters after the dims.
pub(super) fn new_helper_with<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, name: &str, extra: &[BasicMetadataTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
    let ctx = module.get_context();
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let operand = |i: u32| operand(l.call, i).expect("a launch's operand");
    let mut params: Vec<BasicMetadataTypeEnum> = vec![ptr.into(), operand(2).get_type().into(), operand(3).get_type().into()];
    params.extend_from_slice(extra);
    let f = module.add_function(name, ctx.i32_type().fn_type(&params, false), Some(Linkage::Internal));
    f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0));
    // `byval` dims, as the launch takes them.
    // SAFETY: attribute copies from the launch to the helper's parameters.
    unsafe {
        for (from, to) in [(3u32, 1u32), (4, 2)] {
            let count = LLVMGetCallSiteAttributeCount(l.call.as_value_ref(), from);
            let mut attrs = vec![std::ptr::null_mut(); count as usize];
            LLVMGetCallSiteAttributes(l.call.as_value_ref(), from, attrs.as_mut_ptr());
            for a in attrs {
                LLVMAddAttributeAtIndex(f.as_value_ref(), to + 1, a);
            }
        }
    }
    for (i, name) in ["args", "grid.dim", "block.dim"].into_iter().enumerate() {
        f.get_nth_param(i as u32).expect("a parameter").set_name(name);
    }
    f
}

/// Makes a helper of [`new_helper_with`] a function of its own: `noinline` in place of its
/// `alwaysinline`, for a helper that several places call (one copy for all of them).
pub(super) fn keep_out_of_line(f: FunctionValue<'_>) {
    let ctx = f.get_type().get_context();
    f.remove_enum_attribute(AttributeLoc::Function, Attribute::get_named_enum_kind_id("alwaysinline"));
    f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("noinline"), 0));
}

/// How aligned the argument bytes a helper receives are: an argument block made by
/// [`replace_by_helper`] (at least this, whatever the launch's buffer asked for) or a record's
/// arguments (`aggregate::records::RECORD_ALIGN`). Copies and loads of them say so, so that they move
/// words, not bytes ([`super::copies`]).
pub(super) const ARGS_ALIGN: u32 = 16;

/// Replaces the launch `l` by a call of `helper` (made by [`new_helper`]): the stores of its
/// arguments go into a local block (`PREFIX.args`) where the runtime's buffer was, and the
/// call takes the block and the launch's dims; its status is the launch's.
pub(super) fn replace_by_helper<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, helper: FunctionValue<'ctx>, prefix: &str) {
    replace_by_helper_with(module, l, helper, prefix, &[]);
}

/// [`replace_by_helper`], the call taking `extra` arguments after the dims; returns the
/// argument block (a null pointer for a launch without parameters).
pub(super) fn replace_by_helper_with<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, helper: FunctionValue<'ctx>, prefix: &str, extra: &[BasicMetadataValueEnum<'ctx>]) -> BasicValueEnum<'ctx> {
    let ctx = module.get_context();
    let b = ctx.create_builder();
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let align = l.buffer.and_then(|buf| operand(buf, 0)).and_then(launch::constant_u64).filter(|a| a.is_power_of_two() && *a <= 1 << 12).unwrap_or(64).max(ARGS_ALIGN.into());
    let block = match l.buffer {
        Some(buffer) => {
            let entry = l.function.get_first_basic_block().expect("a launch is in a function with a body");
            clone::position_at_start(&b, entry);
            let block = ok(b.build_alloca(ctx.i8_type().array_type(l.size.max(1) as u32), &format!("{prefix}.args")));
            let inst = block.as_instruction_value().expect("an alloca");
            inst.set_alignment(align as u32).expect("a power of two");
            buffer.replace_all_uses_with(&inst);
            buffer.erase_from_basic_block();
            block.as_basic_value_enum()
        }
        None => ptr.const_null().as_basic_value_enum(),
    };
    b.position_before(&l.call);
    let operand = |i: u32| operand(l.call, i).expect("a launch's operand");
    let mut args: Vec<BasicMetadataValueEnum> = vec![block.into(), operand(2).into(), operand(3).into()];
    args.extend_from_slice(extra);
    let call = ok(b.build_call(helper, &args, &format!("{prefix}.status")));
    copy_byval(l.call.as_value_ref(), call.as_value_ref(), &[(3, 2), (4, 3)]);
    let status = call.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()).expect("a status");
    status.set_debug_location(l.call.get_debug_location());
    super::location::copy_cdp_span(l.call, status);
    l.call.replace_all_uses_with(&status);
    l.call.erase_from_basic_block();
    block
}

/// Copies the call-site attributes of `from`'s argument `i` to `to`'s argument `j`, for each
/// `(i, j)` (1-based attribute indices).
pub(super) fn copy_byval(from: LLVMValueRef, to: LLVMValueRef, pairs: &[(u32, u32)]) {
    for &(i, j) in pairs {
        // SAFETY: attribute queries and updates of two live calls.
        unsafe {
            let count = LLVMGetCallSiteAttributeCount(from, i);
            let mut attrs = vec![std::ptr::null_mut(); count as usize];
            LLVMGetCallSiteAttributes(from, i, attrs.as_mut_ptr());
            for a in attrs {
                LLVMAddCallSiteAttribute(to, j, a);
            }
        }
    }
}

/// At `b`'s position in `f`: the launch `l` as the documented sequence, its arguments copied
/// from `args` into a new parameter buffer (a copy of `old_buffer`'s call; none without one),
/// its dims `grid` and `block`, its shared memory `l`'s constant, its stream `l`'s constant or,
/// for a launch into a named stream, `stream` (the helper's parameter that holds it); returns
/// the launch's status, or [`LAUNCH_SKIPPED_STATUS`] when there is no buffer. Gives back the
/// launch's call, for a caller that marks it ([`super::launch::mark_v1`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_as_documented<'ctx>(
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    l: &Launch<'ctx>,
    old_buffer: Option<inkwell::values::InstructionValue<'ctx>>,
    args: inkwell::values::PointerValue<'ctx>,
    grid: BasicValueEnum<'ctx>,
    block: BasicValueEnum<'ctx>,
    stream: Option<BasicValueEnum<'ctx>>,
) -> Option<inkwell::values::InstructionValue<'ctx>> {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let operand = |i: u32| operand(l.call, i).expect("a launch's operand");
    let launch_callee = crate::llvm::operand(l.call, l.call.get_num_operands() - 1).expect("a callee");
    let launch_fn = as_function(launch_callee.as_value_ref()).expect("a recognised launch calls its entry point");
    let buf = match old_buffer {
        Some(old) => {
            // The same call (its operands are constants: `documented_shape`).
            // SAFETY: a copy of a live call inserted at the builder's position.
            let buf = unsafe {
                let c = LLVMInstructionClone(old.as_value_ref());
                LLVMInsertIntoBuilderWithName(b.as_mut_ptr(), c, c"buf".as_ptr());
                inkwell::values::PointerValue::new(c)
            };
            let fill = ctx.append_basic_block(f, "fill");
            let skip = ctx.append_basic_block(f, "skip");
            let null = ok(b.build_is_null(buf, "null"));
            ok(b.build_conditional_branch(null, skip, fill));
            b.position_at_end(skip);
            ok(b.build_return(Some(&i32t.const_int(LAUNCH_SKIPPED_STATUS as u64, false))));
            b.position_at_end(fill);
            // The runtime's buffer is aligned for every parameter type (nvcc stores 16-byte
            // vectors into it): the copy moves words, also where `args` is a record in memory
            // that SROA cannot take apart (NVPTX copies a `llvm.memcpy` from there in bytes).
            super::copies::word_copy(b, (buf, 16), (args, ARGS_ALIGN.into()), l.size);
            buf
        }
        None => ptr.const_null(),
    };
    let stream = stream.unwrap_or_else(|| operand(5));
    let launch_args: Vec<BasicMetadataValueEnum> = vec![operand(0).into(), buf.into(), grid.into(), block.into(), operand(4).into(), stream.into()];
    let launch = ok(b.build_call(launch_fn, &launch_args, "status"));
    copy_byval(l.call.as_value_ref(), launch.as_value_ref(), &[(3, 3), (4, 4)]);
    if let Some(inst) = launch.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()) {
        super::location::copy_cdp_span(l.call, inst);
    }
    let status = launch.try_as_basic_value().basic().expect("a status");
    ok(b.build_return(Some(&status)));
    status.as_instruction_value()
}
