//! Thresholding on LLVM IR (`-flaunch-threshold=N`): a launch whose grid has at most `N`
//! threads runs its child's threads one after another in the launching thread instead of
//! launching (docs/AGGREGATION.md, "Thresholding"), for every front end that writes LLVM IR,
//! cdpc's `.cdp` code generation among them.
//!
//! A recognised launch ([`super::launch::recognise`]) `C<<<g, b, 0, s>>>(args)` becomes a
//! call of `C__threshold(args block, g, b, 0, s)`, an always-inline helper that does
//!
//! ```c
//! if (valid(g, b) && blocks(g) <= N && blocks(g) * threads(b) <= N) {
//!     for (bl = 0; bl < blocks(g); bl++) for (t = 0; t < threads(b); t++)
//!         C__serial(args, t % b.x, t / b.x % b.y, t / (b.x * b.y), bl % g.x, ..., b, g);
//!     return cudaSuccess;
//! }
//! buf = cudaGetParameterBuffer(align, size); if (!buf) return 69;
//! memcpy(buf, args block, size); return cudaLaunchDevice(C, buf, g, b, 0, s);
//! ```
//!
//! From sm_80 the lanes of a warp that reach the site together may run their small grids
//! together instead, each grid's threads spread over the lanes, where that takes at most half
//! the rounds of each lane running its own ([`Team`]; one lane's grid of 128 threads: 4 rounds
//! instead of 128). A lane alone at a site in a kernel's body with nothing after it that may
//! launch keeps its small grid for the kernel's end instead, where the whole warp meets
//! ([`super::defer`], [`Mode`]).
//!
//! The stores of the arguments, which went into the runtime's buffer, go into a local block
//! (the V2 lowering does the same); the launch left in the helper is in the documented shape,
//! so [`super::launch`] lowers it like any other. `C__serial` is a copy of `C` as an internal
//! function whose reads of `threadIdx`, `blockIdx`, `blockDim` and `gridDim`
//! (`llvm.nvvm.read.ptx.sreg.tid/ctaid/ntid/nctaid.*`) are parameters, as are those of the
//! functions it calls that read them, copied the same way ([`super::clone`]).
//!
//! The NULL stream's order is kept ([`super::stream_order`]): a grid runs in place (or is kept)
//! only where its block has written no mark of a launch into the NULL stream before; every
//! launch the pass leaves, and every call that may launch, in what the kernels that reach a
//! site reach, writes that mark first.
//!
//! Taken: launches into the NULL stream or `cudaStreamFireAndForget` (the latter only under
//! the V2 ABI; V1 refuses it with `E0306`), with no dynamic shared memory, of a child defined
//! here whose threads do not need each other and each do little: neither it nor anything it
//! calls uses a barrier, shared memory, a warp-level primitive, the lane, warp or grid id,
//! inline assembly, stream or event work, launches, calls through pointers or calls
//! functions without a definition (but the device C library's and LLVM's), or runs a loop
//! other than a counted one of at most [`MAX_TRIPS`] iterations (a loop whose counter starts
//! at a constant, steps by a constant and is compared with a constant; its iterations are the
//! counter's steps of one, so that a loop Clang unrolled counts what its source did, and a
//! source loop that steps by more than one counts more than it runs, a conservative choice). Every other launch
//! gets `R0502` with the reason, at its line. A kernel that reaches a rewritten site is capped
//! at 64 registers ([`super::aggregate::REGISTER_CAP`]) unless it has launch bounds or a cap;
//! the cap is marked as the passes' ([`cap_kernel`]), and the build keeps it only where ptxas
//! needs more registers without it (`toolchain::register_cap`).
//!
//! Invariant: with `N = 0`, or no launch to take, the module is untouched; afterwards every
//! site taken is a call of its helper and no launch of the module is lost.

use super::clone::{self, as_function, called_function, value_name};
use super::launch::{self, Launch};
pub(super) use super::emit::{intrinsic, ok};
use super::stream_order;
use super::SourceText;
use crate::back::device_launch::LAUNCH_SKIPPED_STATUS;
use crate::diag::{Code, Diagnostic, Span};
use crate::target::{LaunchAbi, Target};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::llvm_sys::LLVMIntPredicate;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetData;
use inkwell::types::{AnyTypeEnum, BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, IntValue};
use inkwell::IntPredicate;
use std::collections::{HashMap, HashSet};

/// The most iterations a loop of a child run in place may have .
pub const MAX_TRIPS: u32 = 64;

/// The largest grid `x`, `y` and `z`, block `x`, `y`, `z` and threads the runtime launches.
const GRID_LIMITS: [u64; 3] = [(1 << 31) - 1, 65535, 65535];
const BLOCK_LIMITS: [u64; 3] = [1024, 1024, 64];
const MAX_BLOCK_THREADS: u64 = 1024;

/// The source name of a kernel for messages: `_Z5childPi` is `child`, `_ZN2ns1kEv` `ns::k`.
pub(crate) fn source_name(mangled: &str) -> String {
    fn parts(mut s: &str, nested: bool) -> Option<Vec<&str>> {
        let mut out = Vec::new();
        loop {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return (!out.is_empty() && (!nested || s.starts_with('E'))).then_some(out);
            }
            let n: usize = s[..digits].parse().ok()?;
            out.push(s.get(digits..digits + n)?);
            s = &s[digits + n..];
            if !nested {
                return Some(out);
            }
        }
    }
    let found = if let Some(rest) = mangled.strip_prefix("_ZN") { parts(rest, true) } else { mangled.strip_prefix("_Z").and_then(|r| parts(r, false)) };
    found.map_or_else(|| mangled.to_string(), |p| p.join("::"))
}

/// Why a call of `name`, a function without a body here, keeps a child from running in
/// place, if it does; `None` for a built-in it may use.
fn why_not_declaration(name: &str) -> Option<String> {
    let together = |w: &str| Some(format!("{w}: its threads cannot run one after another in the launching thread"));
    if let Some(reg) = name.strip_prefix("llvm.nvvm.read.ptx.sreg.") {
        let allowed = clone::builtin_index(name).is_some() || ["warpsize", "clock", "clock64", "globaltimer", "globaltimer_lo", "globaltimer_hi", "smid", "nsmid"].contains(&reg);
        // The lane and grid ids in the words the remarks have always used.
        let what = if reg == "laneid" || reg == "gridid" { "reads its lane or grid id".to_string() } else { format!("reads `%{reg}`") };
        return if allowed { None } else { together(&what) };
    }
    if let Some(nvvm) = name.strip_prefix("llvm.nvvm.") {
        if nvvm.starts_with("barrier") || nvvm.starts_with("bar.") || nvvm.contains("mbarrier") || nvvm.starts_with("cluster") {
            return together("calls `__syncthreads`");
        }
        let warp = ["shfl", "vote", "activemask", "match.", "redux", "elect", "wgmma", "mma", "ldmatrix", "stmatrix", "cp.async"];
        if warp.iter().any(|w| nvvm.starts_with(w) || nvvm.contains(&format!(".{w}"))) {
            return together("uses warp-level primitives");
        }
        return None;
    }
    if super::callgraph::is_library(name) {
        return None;
    }
    if launch::is_launch_entry(name) {
        return together("launches kernels");
    }
    if name.starts_with("cuda") || name.starts_with("__cuda") {
        if name.contains("Stream") || name.contains("Event") || name.contains("Synchronize") || name.contains("CG") {
            return together("puts work into streams, records events or waits for other threads");
        }
        return None;
    }
    Some(format!("calls `{}`, which has no definition here", source_name(name)))
}

/// Whether `v` is, or through constant expressions uses, a variable in shared memory.
fn uses_shared(v: LLVMValueRef, depth: u32) -> bool {
    // SAFETY: queries of live values.
    unsafe {
        if !LLVMIsAGlobalVariable(v).is_null() {
            return LLVMGetPointerAddressSpace(LLVMTypeOf(v)) == 3;
        }
        if depth < 8 && !LLVMIsAConstantExpr(v).is_null() {
            return (0..LLVMGetNumOperands(v).max(0) as u32).any(|i| uses_shared(LLVMGetOperand(v, i), depth + 1));
        }
    }
    false
}

/// Why the threads of `child` cannot run one after another in a launching thread, if they
/// cannot: looked for in its body and in every function it calls.
fn why_not_serial(child: FunctionValue<'_>) -> Option<String> {
    let child_name = source_name(&child.get_name().to_string_lossy());
    let mut seen = HashSet::new();
    let mut stack = vec![child];
    while let Some(f) = stack.pop() {
        if !seen.insert(f) {
            continue;
        }
        let fname = f.get_name().to_string_lossy().into_owned();
        let whose = || if f == child { format!("`{child_name}`") } else { format!("`{child_name}`: `{}`, which it calls,", source_name(&fname)) };
        let together = |w: &str| format!("{} {w}: its threads cannot run one after another in the launching thread", whose());
        if f.get_type().is_var_arg() {
            // Its copy, which takes the built-ins after its parameters, could not be called.
            return Some(format!("{} takes a variable number of arguments, which a serial copy cannot", whose()));
        }
        for block in f.get_basic_blocks() {
            for inst in block.get_instructions() {
                let r = inst.as_value_ref();
                // SAFETY: queries of live instructions.
                let operands = unsafe { (0..LLVMGetNumOperands(r).max(0) as u32).map(|i| LLVMGetOperand(r, i)).collect::<Vec<_>>() };
                if operands.iter().any(|&o| uses_shared(o, 0)) {
                    return Some(together("uses shared memory"));
                }
                match inst.get_opcode() {
                    InstructionOpcode::Call => {
                        // SAFETY: the callee operand of a live call.
                        let callee = unsafe { LLVMGetCalledValue(r) };
                        if unsafe { !LLVMIsAInlineAsm(callee).is_null() } {
                            return Some(together("contains inline assembly"));
                        }
                        match called_function(r) {
                            // SAFETY: a function of this module.
                            Some(target) => match as_function(target) {
                                Some(t) if t.count_basic_blocks() > 0 => stack.push(t),
                                _ => {
                                    if let Some(why) = why_not_declaration(&value_name(target)) {
                                        return Some(format!("{} {why}", whose()));
                                    }
                                }
                            },
                            None => return Some(format!("{} calls a function through a pointer: what it calls, and whether its threads need each other, is not known here", whose())),
                        }
                    }
                    InstructionOpcode::Invoke | InstructionOpcode::CallBr | InstructionOpcode::LandingPad | InstructionOpcode::IndirectBr => {
                        return Some(together("has control flow that cannot be copied"));
                    }
                    _ => {}
                }
            }
        }
        if !loops_are_counted(f) {
            return Some(format!(
                "{} runs a loop that is not a counted loop of at most {MAX_TRIPS} iterations: a thread's work is not known to be small, and a grid's worth of it one after another could take longer than the launch",
                whose()
            ));
        }
    }
    None
}

/// The successors of a block.
pub(super) fn successors<'ctx>(b: BasicBlock<'ctx>) -> Vec<BasicBlock<'ctx>> {
    let Some(t) = b.get_terminator() else { return Vec::new() };
    (0..t.get_num_operands()).filter_map(|i| t.get_operand(i).and_then(|o| o.block())).collect()
}

/// Whether every loop of `f` (every back edge of a depth-first walk) is a counted loop of at
/// most [`MAX_TRIPS`] iterations.
fn loops_are_counted(f: FunctionValue<'_>) -> bool {
    let Some(entry) = f.get_first_basic_block() else { return true };
    // Iterative depth-first walk: (block, next successor to visit).
    let mut on_stack = HashSet::new();
    let mut done = HashSet::new();
    let mut stack = vec![(entry, 0usize)];
    on_stack.insert(entry);
    while let Some((b, i)) = stack.last().copied() {
        let succ = successors(b);
        if i < succ.len() {
            stack.last_mut().expect("not empty").1 += 1;
            let s = succ[i];
            if on_stack.contains(&s) {
                if counted_trips(f, s, b).is_none_or(|n| n > MAX_TRIPS) {
                    return false;
                }
            } else if !done.contains(&s) {
                on_stack.insert(s);
                stack.push((s, 0));
            }
        } else {
            stack.pop();
            on_stack.remove(&b);
            done.insert(b);
        }
    }
    true
}

/// The blocks of the loop with `header` and back edge from `latch`.
fn loop_body<'ctx>(f: FunctionValue<'ctx>, header: BasicBlock<'ctx>, latch: BasicBlock<'ctx>) -> HashSet<BasicBlock<'ctx>> {
    let mut preds: HashMap<BasicBlock, Vec<BasicBlock>> = HashMap::new();
    for b in f.get_basic_blocks() {
        for s in successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    let mut body = HashSet::from([header]);
    let mut stack = vec![latch];
    while let Some(b) = stack.pop() {
        if body.insert(b) {
            stack.extend(preds.get(&b).into_iter().flatten().copied());
        }
    }
    body
}

fn const_int(v: LLVMValueRef) -> Option<(u64, u32)> {
    // SAFETY: queries of a live value.
    unsafe {
        if LLVMIsAConstantInt(v).is_null() {
            return None;
        }
        let bits = LLVMGetIntTypeWidth(LLVMTypeOf(v));
        (bits <= 64).then(|| (LLVMConstIntGetZExtValue(v), bits))
    }
}

/// The iterations of the loop at `header` whose back edge comes from `latch`, when it is
/// counted: a `phi` in the header starting at a constant, stepped by adding a constant, and
/// an exit test comparing it (or its next value) with a constant, in the latch or the header.
/// Found by running the counter, up to one past [`MAX_TRIPS`]; counted in steps of one (the
/// trips times the step), since a loop Clang unrolled by 4 steps by 4 and does the work of 4
/// iterations in each trip. Exits that leave earlier only make a loop shorter.
fn counted_trips(f: FunctionValue<'_>, header: BasicBlock<'_>, latch: BasicBlock<'_>) -> Option<u32> {
    let body = loop_body(f, header, latch);
    // The test: a conditional branch leaving the loop, in the latch or else in the header.
    let test_of = |b: BasicBlock| {
        let t = b.get_terminator()?;
        (t.get_opcode() == InstructionOpcode::Br && t.get_num_operands() == 3).then_some(t)?;
        // Operands of a conditional `br`: condition, false target, true target.
        let (on_false, on_true) = (t.get_operand(1)?.block()?, t.get_operand(2)?.block()?);
        let (stay_true, stay_false) = (body.contains(&on_true), body.contains(&on_false));
        (stay_true != stay_false).then_some((t.get_operand(0)?.value()?.as_value_ref(), stay_true))
    };
    let (in_latch, (cond, continue_if)) = match test_of(latch) {
        Some(t) => (true, t),
        None if latch.get_terminator().is_some_and(|t| t.get_num_operands() == 1) => (false, test_of(header)?),
        None => return None,
    };
    // SAFETY: queries of live instructions and constants.
    unsafe {
        if LLVMIsAICmpInst(cond).is_null() {
            return None;
        }
        let pred = LLVMGetICmpPredicate(cond);
        let (a, b) = (LLVMGetOperand(cond, 0), LLVMGetOperand(cond, 1));
        for phi in header.get_instructions().take_while(|i| i.get_opcode() == InstructionOpcode::Phi) {
            let p = phi.as_value_ref();
            if LLVMCountIncoming(p) != 2 {
                continue;
            }
            let from_latch = (0..2).find(|&i| LLVMGetIncomingBlock(p, i) == latch.as_mut_ptr())?;
            let (next, start) = (LLVMGetIncomingValue(p, from_latch), LLVMGetIncomingValue(p, 1 - from_latch));
            let Some((start, bits)) = const_int(start) else { continue };
            if LLVMIsABinaryOperator(next).is_null() || LLVMGetNumOperands(next) != 2 {
                continue;
            }
            let (x, y) = (LLVMGetOperand(next, 0), LLVMGetOperand(next, 1));
            let step = match LLVMGetInstructionOpcode(next) {
                inkwell::llvm_sys::LLVMOpcode::LLVMAdd if x == p => const_int(y)?.0,
                inkwell::llvm_sys::LLVMOpcode::LLVMAdd if y == p => const_int(x)?.0,
                inkwell::llvm_sys::LLVMOpcode::LLVMSub if x == p => const_int(y)?.0.wrapping_neg(),
                _ => continue,
            };
            // The compared operand: the counter or its next value, against a constant.
            let (counter_left, limit) = match (a, b) {
                (a, b) if (a == p || a == next) && const_int(b).is_some() => (true, const_int(b)?.0),
                (a, b) if (b == p || b == next) && const_int(a).is_some() => (false, const_int(a)?.0),
                _ => continue,
            };
            let uses_next = if counter_left { a == next } else { b == next };
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let signed = |v: u64| if bits == 64 { v as i64 as i128 } else { ((v << (64 - bits)) as i64 >> (64 - bits)) as i128 };
            let holds = |v: u64| {
                let (l, r) = if counter_left { (v & mask, limit & mask) } else { (limit & mask, v & mask) };
                use LLVMIntPredicate::*;
                match pred {
                    LLVMIntEQ => l == r,
                    LLVMIntNE => l != r,
                    LLVMIntULT => l < r,
                    LLVMIntULE => l <= r,
                    LLVMIntUGT => l > r,
                    LLVMIntUGE => l >= r,
                    LLVMIntSLT => signed(l) < signed(r),
                    LLVMIntSLE => signed(l) <= signed(r),
                    LLVMIntSGT => signed(l) > signed(r),
                    LLVMIntSGE => signed(l) >= signed(r),
                }
            };
            // Clang's unrolling multiplies the step: the counter's distance is the source
            // loop's iterations when it counted by one, and never fewer than the IR's trips.
            let stride = u32::try_from(signed(step & mask).unsigned_abs()).unwrap_or(u32::MAX).max(1);
            let steps = |trips: u32| Some(trips.saturating_mul(stride));
            let mut i = start & mask;
            let mut trips = 0u32;
            loop {
                let next_i = i.wrapping_add(step) & mask;
                if in_latch {
                    // The body runs, then the test decides whether it runs again.
                    trips += 1;
                    if holds(if uses_next { next_i } else { i }) != continue_if {
                        return steps(trips);
                    }
                } else {
                    if holds(if uses_next { next_i } else { i }) != continue_if {
                        return steps(trips);
                    }
                    trips += 1;
                }
                if trips > MAX_TRIPS {
                    return steps(trips);
                }
                i = next_i;
            }
        }
    }
    None
}

/// The largest parameter buffer a launch may have (CUDA 12.1's 32764 bytes of parameters).
const MAX_PARAMETER_BYTES: u64 = 32764;

/// Whether the launch's calls have the documented types, which the helper copies: a buffer
/// call with two constant operands returning a pointer, a launch returning `i32` and taking
/// the kernel, a pointer, two dims (`byval` pointers or `{ i32, i32, i32 }`), the shared
/// memory size as `i32` and a pointer stream; and a buffer of at most
/// [`MAX_PARAMETER_BYTES`].
pub(super) fn documented_shape(l: &Launch<'_>) -> bool {
    let operand = |i: u32| l.call.get_operand(i).and_then(|o| o.value());
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
    let buffer_ok = l.buffer.is_none_or(|buf| {
        buf.get_num_operands() == 3 && (0..2).all(|i| buf.get_operand(i).and_then(|o| o.value()).is_some_and(|v| const_int(v.as_value_ref()).is_some())) && buf.get_type().is_pointer_type()
    });
    returns_i32 && buffer_ok && l.size <= MAX_PARAMETER_BYTES && matches!(operand(1), Some(BasicValueEnum::PointerValue(_))) && dim3(operand(2)) && dim3(operand(3)) && int32(operand(4)) && matches!(operand(5), Some(BasicValueEnum::PointerValue(_)))
}

/// What a site must be to run in place, the child aside: `None` when it is.
fn why_not_site(l: &Launch<'_>, target: &Target) -> Option<String> {
    if !documented_shape(l) {
        return Some("the launch's calls do not have the documented types".into());
    }
    let operand = |i: u32| l.call.get_operand(i).and_then(|o| o.value());
    match operand(5).and_then(launch::constant_u64) {
        Some(0) => {}
        Some(4) if target.launch_abi == LaunchAbi::V2 => {}
        Some(4) => return Some("a fire-and-forget launch under the V1 ABI, which refuses it".into()),
        Some(3) => return Some("a tail launch sees the whole parent grid's writes; run in place it would not".into()),
        _ => return Some("a launch into a named stream runs after the stream's earlier work, which the thread cannot wait for".into()),
    }
    if operand(4).and_then(launch::constant_u64) != Some(0) {
        return Some("the launch asks for dynamic shared memory".into());
    }
    None
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

/// Runs the launches of `module` whose grids have at most `max_threads` threads in place
/// (module docs); returns the `R0502` remarks of the launches it leaves alone.
pub fn threshold(module: &Module<'_>, max_threads: u32, target: &Target, source: &SourceText) -> Vec<Diagnostic> {
    if max_threads == 0 {
        return Vec::new();
    }
    let (launches, errors) = launch::recognise(module, source);
    if !errors.is_empty() {
        // The launch pass reports them; nothing is changed.
        return Vec::new();
    }
    let data = TargetData::create(&module.get_data_layout().as_str().to_string_lossy());
    let mut remarks = Vec::new();
    let mut children: HashMap<LLVMValueRef, Option<String>> = HashMap::new();
    let mut taken = Vec::new();
    for l in &launches {
        let kernel = l.call.get_operand(0).and_then(|o| o.value());
        let child = kernel.and_then(|k| as_function(k.as_value_ref()));
        let why = match child {
            None => Some("the launch goes through a pointer: which kernel it launches is known at run time only, and running it in place needs the child's body".to_string()),
            Some(c) if c.count_basic_blocks() == 0 => Some(format!("`{}` has no definition here", source_name(&c.get_name().to_string_lossy()))),
            Some(c) => why_not_site(l, target).or_else(|| children.entry(c.as_value_ref()).or_insert_with(|| why_not_serial(c)).clone()).or_else(|| {
                let (_, end) = parameter_layout(c, &data);
                (end > l.size && l.buffer.is_some() || end > 0 && l.buffer.is_none()).then(|| "the launch's parameter buffer does not hold the child's parameters as laid out".to_string())
            }),
        };
        match (why, child) {
            (None, Some(c)) => taken.push((*l, c)),
            (Some(why), _) => {
                let name = child.map_or_else(|| "a kernel through a pointer".to_string(), |c| format!("`{}`", source_name(&c.get_name().to_string_lossy())));
                let d = Diagnostic::new(Code::ThresholdRemark, Span::new(0, 0), format!("launch of {name} not run in the launching thread when small")).with_primary_message(why);
                remarks.push(source.place(d, l.call, &l.function.get_name().to_string_lossy()));
            }
            (None, None) => {}
        }
    }
    if taken.is_empty() {
        return remarks;
    }
    // One serial copy per child, and copies of the functions it calls that read built-ins.
    let mut wanted: Vec<FunctionValue> = Vec::new();
    for (_, c) in &taken {
        if !wanted.contains(c) {
            wanted.push(*c);
        }
    }
    let readers = builtin_readers(&wanted);
    let mut originals = wanted.clone();
    originals.extend(readers.into_iter().filter(|f| !wanted.contains(f)));
    let copies = clone::clone_with_builtins(module, &originals, "serial");
    let serial: HashMap<FunctionValue, FunctionValue> = originals.into_iter().zip(copies).collect();
    let team = Team::for_target(target);
    let kept = if team == Team::Warp { super::defer::kept_sites(&taken) } else { HashSet::new() };
    // Sites that code of another module may reach also ask whether the block's kernel is ours
    // (`stream_order`, decided before any site is rewritten).
    let outside = stream_order::callable_from_outside(module);
    let owned = |l: &Launch| outside.contains(&l.function);
    let mut rewritten = HashSet::new();
    let mut keep: Vec<(FunctionValue, Vec<(Launch, FunctionValue)>)> = Vec::new();
    for (i, (l, c)) in taken.iter().enumerate() {
        if kept.contains(&i) {
            match keep.iter_mut().find(|(k, _)| *k == l.function) {
                Some((_, sites)) => sites.push((*l, serial[c])),
                None => keep.push((l.function, vec![(*l, serial[c])])),
            }
        } else {
            rewrite_site(module, l, serial[c], max_threads, &data, team, owned(l));
        }
        rewritten.insert(l.function);
    }
    for (k, sites) in &keep {
        // A kept site is in a kernel's own body: `owned` when the kernel is called as a function.
        super::defer::keep(module, *k, sites, max_threads, &data, owned(&sites[0].0));
    }
    stream_order::mark(module, source, taken.iter().any(|(l, _)| owned(l)));
    cap_registers(module, &rewritten);
    remarks
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

/// Kernels reaching one of `changed` are capped at [`super::aggregate::REGISTER_CAP`]
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

/// Caps kernel `f` at [`super::aggregate::REGISTER_CAP`] registers (`nvvm.maxnreg`) and marks
/// the cap as the launch passes' in the module's file-scope assembly, a PTX comment
/// (`toolchain::register_cap::mark`): the build leaves it out where ptxas needs no more
/// registers without it. Never called for a kernel with launch bounds or a cap of its own.
pub(super) fn cap_kernel<'ctx>(module: &Module<'ctx>, f: FunctionValue<'ctx>) {
    let cap = super::aggregate::REGISTER_CAP;
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
pub(super) fn load_arguments<'ctx>(ctx: &inkwell::context::ContextRef<'ctx>, b: &inkwell::builder::Builder<'ctx>, layout: &[(u64, Option<BasicTypeEnum<'ctx>>)], at: inkwell::values::PointerValue<'ctx>, align: u32) -> Vec<BasicMetadataValueEnum<'ctx>> {
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
            if let Some(attr) = callee.get_enum_attribute(AttributeLoc::Param(i), kind).filter(|_| callee.get_enum_attribute(AttributeLoc::Param(i), Attribute::get_named_enum_kind_id("byval")).is_some()) {
                call.add_attribute(AttributeLoc::Param(i), attr);
            }
        }
    }
}


/// Replaces the launch `l` of `child` by a call of its helper (module docs).
#[allow(clippy::too_many_arguments)]
fn rewrite_site<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, serial: FunctionValue<'ctx>, max: u32, data: &TargetData, team: Team, owned: bool) {
    let name = format!("{}__threshold", child_name(l));
    let helper = helper(module, new_helper(module, l, &name), l, serial, max, data, Mode::Site(team), owned);
    replace_by_helper(module, l, helper, "thr");
}

/// The name of the kernel `l` launches (empty for a launch through a pointer).
pub(super) fn child_name(l: &Launch<'_>) -> String {
    let operand = l.call.get_operand(0).and_then(|o| o.value()).expect("a launch's operand");
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
    let operand = |i: u32| l.call.get_operand(i).and_then(|o| o.value()).expect("a launch's operand");
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

/// How aligned the argument bytes a helper receives are: an argument block made by
/// [`replace_by_helper`] (at least this, whatever the launch's buffer asked for) or a record's
/// arguments (`aggregate::RECORD_ALIGN`). Copies and loads of them say so, so that they move
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
    let align = l.buffer.and_then(|buf| buf.get_operand(0)).and_then(|o| o.value()).and_then(launch::constant_u64).filter(|a| a.is_power_of_two() && *a <= 1 << 12).unwrap_or(64).max(ARGS_ALIGN.into());
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
    let operand = |i: u32| l.call.get_operand(i).and_then(|o| o.value()).expect("a launch's operand");
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

/// Where a thresholding helper runs a small grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// At the site: alone, or with the lanes that reach it together ([`Team`]); a large grid
    /// is launched.
    Site(Team),
    /// At the site a small grid is kept for the kernel's end: the helper's three extra
    /// parameters point at the lane's flag and the grid's and block's dims, which it sets; a
    /// large grid is launched ([`super::defer`]).
    Keep,
    /// At the kernel's end, by every lane of the warp ([`Team::Warp`]): the dims are pointers
    /// to the kept ones and the extra parameter says whether this lane kept a grid; nothing is
    /// launched ([`super::defer`]).
    End,
}

/// Fills `f`, a helper made for the launch `l` (by [`new_helper`], or for [`Mode::End`] by
/// [`super::defer`]), as `mode` says: in [`Mode::Site`] the always-inline helper
/// `C__threshold(args, grid, block)` of the module docs. A grid runs in place (or is kept) only
/// where its block has no NULL-stream launch in flight before it ([`stream_order`]; `owned`:
/// and its kernel is one of the module's, for a site that another module's code may reach).
#[allow(clippy::too_many_arguments)]
pub(super) fn helper<'ctx>(module: &Module<'ctx>, f: FunctionValue<'ctx>, l: &Launch<'ctx>, serial: FunctionValue<'ctx>, max: u32, data: &TargetData, mode: Mode, owned: bool) -> FunctionValue<'ctx> {
    let ctx = module.get_context();
    let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
    let operand = |i: u32| l.call.get_operand(i).and_then(|o| o.value()).expect("a launch's operand");
    let child = as_function(operand(0).as_value_ref());
    let p = |i: u32| f.get_nth_param(i).expect("a parameter");
    let b = ctx.create_builder();
    let entry = ctx.append_basic_block(f, "entry");
    let launch_bb = ctx.append_basic_block(f, "launch");
    b.position_at_end(entry);
    let config = Config::load(&ctx, &b, p(1), p(2));
    let c64 = |v: u64| i64t.const_int(v, false);
    let (blocks, threads) = (config.blocks, config.threads);
    let small = if mode == Mode::End {
        // Kept at the site only when small.
        p(3).into_int_value()
    } else {
        let mut conds = vec![config.valid];
        conds.push(ok(b.build_int_compare(IntPredicate::ULE, blocks, c64(max.into()), "blocks.small")));
        // Blocks and threads are bounded by now, so the product cannot wrap.
        conds.push(ok(b.build_int_compare(IntPredicate::ULE, ok(b.build_int_mul(blocks, threads, "m")), c64(max.into()), "grid.small")));
        conds.push(stream_order::may_run_in_place(module, &b, owned));
        conds.into_iter().reduce(|a, c| ok(b.build_and(a, c, "small"))).expect("conditions")
    };
    let (g, bd) = (config.grid, config.block);
    let (layout, _) = parameter_layout(child.expect("a taken site launches a function"), data);
    let args_ptr = p(0).into_pointer_value();
    // Where a small grid runs in place, between the entry and the launch (a grid kept for the
    // kernel's end runs there, not here: no such block).
    let new_in_place = || ctx.insert_basic_block_after(entry, "in_place");
    let in_place = match mode {
        Mode::Site(Team::Off) => {
            let in_place = new_in_place();
            ok(b.build_conditional_branch(small, in_place, launch_bb));
            Some(in_place)
        }
        Mode::Site(Team::Warp) | Mode::End => {
            let in_place = new_in_place();
            let dispatch = ctx.append_basic_block(f, "alone");
            let together = team_path(module, f, &b, l, serial, &layout, args_ptr, &config, small, launch_bb);
            ok(b.build_conditional_branch(together.0, together.1, dispatch));
            b.position_at_end(dispatch);
            ok(b.build_conditional_branch(small, in_place, launch_bb));
            Some(in_place)
        }
        Mode::Keep => {
            // The flag and the dims into the kernel's slots; the arguments stay in the site's
            // argument block, which nothing writes after the site.
            let keep = ctx.append_basic_block(f, "keep");
            ok(b.build_conditional_branch(small, keep, launch_bb));
            b.position_at_end(keep);
            ok(b.build_store(p(3).into_pointer_value(), ctx.bool_type().const_all_ones()));
            let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
            for (dims, slot) in [(g, p(4)), (bd, p(5))] {
                for (k, v) in dims.into_iter().enumerate() {
                    let at = ok(b.build_struct_gep(dim3, slot.into_pointer_value(), k as u32, "kept.d"));
                    ok(b.build_store(at, v));
                }
            }
            ok(b.build_return(Some(&i32t.const_zero())));
            None
        }
    };

    // In place: the arguments, then a loop over blocks and one over threads.
    if let Some(in_place) = in_place {
        in_place_loops(module, f, &b, in_place, serial, &layout, args_ptr, &config);
    }

    // Launched: the documented sequence, from the argument block; at the kernel's end, where
    // only kept grids are run, nothing.
    b.position_at_end(launch_bb);
    if mode == Mode::End {
        ok(b.build_return(Some(&i32t.const_zero())));
    } else {
        launch_as_documented(module, f, &b, l, l.buffer, args_ptr, p(1), p(2));
    }
    f
}

/// At `in_place`, the end of the helper `f`: each of the grid's threads, one after another,
/// in calls of `serial`; then `return cudaSuccess`.
#[allow(clippy::too_many_arguments)]
fn in_place_loops<'ctx>(
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    in_place: BasicBlock<'ctx>,
    serial: FunctionValue<'ctx>,
    layout: &[(u64, Option<BasicTypeEnum<'ctx>>)],
    args_ptr: inkwell::values::PointerValue<'ctx>,
    config: &Config<'ctx>,
) {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let (blocks, threads, g, bd) = (config.blocks, config.threads, config.grid, config.block);
    b.position_at_end(in_place);
    let args = load_arguments(&ctx, b, layout, args_ptr, ARGS_ALIGN);
    let u32_of = |v: IntValue<'ctx>| ok(b.build_int_truncate(v, i32t, "n"));
    let (nblocks, nthreads) = (u32_of(blocks), u32_of(threads));
    let outer_head = ctx.append_basic_block(f, "blocks");
    let outer_body = ctx.append_basic_block(f, "block");
    let inner_head = ctx.append_basic_block(f, "threads");
    let inner_body = ctx.append_basic_block(f, "thread");
    let inner_done = ctx.append_basic_block(f, "block.done");
    let all_done = ctx.append_basic_block(f, "done");
    ok(b.build_unconditional_branch(outer_head));
    b.position_at_end(outer_head);
    let bl = ok(b.build_phi(i32t, "bl"));
    let bl_v = bl.as_basic_value().into_int_value();
    let more = ok(b.build_int_compare(IntPredicate::ULT, bl_v, nblocks, "more.blocks"));
    ok(b.build_conditional_branch(more, outer_body, all_done));
    b.position_at_end(outer_body);
    let block_idx = unflatten(b, bl_v, g);
    ok(b.build_unconditional_branch(inner_head));
    b.position_at_end(inner_head);
    let t = ok(b.build_phi(i32t, "t"));
    let t_v = t.as_basic_value().into_int_value();
    let more = ok(b.build_int_compare(IntPredicate::ULT, t_v, nthreads, "more.threads"));
    ok(b.build_conditional_branch(more, inner_body, inner_done));
    b.position_at_end(inner_body);
    let thread_idx = unflatten(b, t_v, bd);
    let mut call_args = args.clone();
    call_args.extend(thread_idx.iter().chain(&block_idx).chain(&bd).chain(&g).map(|v| BasicMetadataValueEnum::from(*v)));
    let call = ok(b.build_call(serial, &call_args, ""));
    byval_at_call(serial, call);
    let t_next = ok(b.build_int_add(t_v, i32t.const_int(1, false), "t.next"));
    ok(b.build_unconditional_branch(inner_head));
    t.add_incoming(&[(&i32t.const_zero(), outer_body), (&t_next, inner_body)]);
    b.position_at_end(inner_done);
    let bl_next = ok(b.build_int_add(bl_v, i32t.const_int(1, false), "bl.next"));
    ok(b.build_unconditional_branch(outer_head));
    bl.add_incoming(&[(&i32t.const_zero(), in_place), (&bl_next, inner_done)]);
    b.position_at_end(all_done);
    ok(b.build_return(Some(&i32t.const_zero())));
}

/// Who runs a small grid in place: the launching thread alone, or its warp's converged lanes
/// together where that takes at most half the rounds ([`team_path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Team {
    /// Each launching thread runs its own grid's threads one after another.
    Off,
    /// The lanes that reach the site together (`__activemask()`) run each small grid among
    /// them, one grid after another, where that takes at most half the rounds of each lane
    /// running its own: sm_80 and newer, whose `redux.sync` counts the rounds in one instruction.
    Warp,
}

impl Team {
    /// [`Team::Warp`] where the target has `redux.sync` (sm_80), else [`Team::Off`].
    pub(super) fn for_target(target: &Target) -> Team {
        if target.sm >= crate::target::SmVersion(80) {
            Team::Warp
        } else {
            Team::Off
        }
    }
}

/// At `b`'s position in the helper `f` (its entry, after `small`): the warp's choice between
/// running the small grids of its converged lanes together and each lane running its own;
/// returns the choice (uniform across those lanes) and the block that runs them together.
///
/// ```c
/// mask = __activemask(); want = __ballot_sync(mask, small);
/// team = popc(mask); rank = popc(mask & lanemask_lt);
/// mine = small ? blocks * threads : 0;
/// rounds = __reduce_add_sync(mask, ceil(mine / team)); alone = __reduce_max_sync(mask, mine);
/// together = alone > 0 && 2 * (rounds + popc(want)) <= alone;
/// if (together) {
///     for each lane L of want, lowest first:      // the grids, one after another
///         config, args = L's, through __shfl_sync(mask, ..., L);
///         for (i = rank; i < blocks * threads; i += team)
///             C__serial(args, unflatten(i % threads, block), unflatten(i / threads, grid), ...);
///     __syncwarp(mask);
///     if (small) return cudaSuccess; else launch as documented;
/// }
/// ```
///
/// Each lane alone takes as many rounds as the largest grid; together, the sum over grids of
/// their rounds among `team` lanes: one lane's grid of 128 threads is 128 rounds alone and 4
/// together, and 32 grids of one thread are 1 round alone and 32 together. A round together
/// costs more (the flat index divided into coordinates; each grid's dims and arguments
/// shuffled first), so the warp goes together only where that takes at most half the rounds,
/// counting a grid as a round: measured on the H100 (results/2026-11-25-warp-team), 29 lanes with grids
/// of 32 to 256 threads took 1.5x as long together where the plain comparison chose it.
///
/// The child's threads need not run together (what thresholding takes), so any lane may run
/// any of them; `__syncwarp` orders the lanes' writes before the launching
/// threads go on, as the thread's own writes were when it ran them alone.
#[allow(clippy::too_many_arguments)]
fn team_path<'ctx>(
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    b: &inkwell::builder::Builder<'ctx>,
    l: &Launch<'ctx>,
    serial: FunctionValue<'ctx>,
    layout: &[(u64, Option<BasicTypeEnum<'ctx>>)],
    args: inkwell::values::PointerValue<'ctx>,
    config: &Config<'ctx>,
    small: IntValue<'ctx>,
    launch_bb: BasicBlock<'ctx>,
) -> (IntValue<'ctx>, BasicBlock<'ctx>) {
    let ctx = module.get_context();
    let (i1t, i8t, i32t, i64t) = (ctx.bool_type(), ctx.i8_type(), ctx.i32_type(), ctx.i64_type());
    let c32 = |v: u64| i32t.const_int(v, false);
    let call = |name: &str, types: &[BasicTypeEnum<'ctx>], args: &[BasicMetadataValueEnum<'ctx>], label: &str| -> Option<BasicValueEnum<'ctx>> {
        ok(b.build_call(intrinsic(module, name, types), args, label)).try_as_basic_value().basic()
    };
    let int = |v: Option<BasicValueEnum<'ctx>>| v.expect("a value").into_int_value();
    let popc = |v: IntValue<'ctx>, name: &str| int(call("llvm.ctpop", &[i32t.into()], &[v.into()], name));

    // The choice, in the entry.
    let mask = int(call("llvm.nvvm.activemask", &[], &[], "mask"));
    let want = int(call("llvm.nvvm.vote.ballot.sync", &[], &[mask.into(), small.into()], "want"));
    let team = popc(mask, "team");
    let lt = int(call("llvm.nvvm.read.ptx.sreg.lanemask.lt", &[], &[], "lanemask.lt"));
    let rank = popc(ok(b.build_and(mask, lt, "below")), "rank");
    let grid_threads = ok(b.build_int_truncate(ok(b.build_int_mul(config.blocks, config.threads, "all")), i32t, "all32"));
    let mine = ok(b.build_select(small, grid_threads, c32(0), "mine")).into_int_value();
    let rounds = ok(b.build_int_unsigned_div(ok(b.build_int_add(mine, ok(b.build_int_sub(team, c32(1), "team.less")), "up")), team, "rounds"));
    let together_rounds = int(call("llvm.nvvm.redux.sync.add", &[], &[rounds.into(), mask.into()], "rounds.together"));
    let alone_rounds = int(call("llvm.nvvm.redux.sync.umax", &[], &[mine.into(), mask.into()], "rounds.alone"));
    // A round together costs more than one alone (the grid's numbering is worked out from
    // the flat index, and each grid's configuration and arguments are shuffled first): the
    // team is taken where it takes at most half the rounds, a grid counted as one more.
    let grids = popc(want, "grids");
    let cost = ok(b.build_left_shift(ok(b.build_int_add(together_rounds, grids, "cost.rounds")), c32(1), "cost"));
    let cheaper = ok(b.build_int_compare(IntPredicate::ULE, cost, alone_rounds, "cheaper"));
    // (No lane's grid is small: nothing to run, alone or together.)
    let some = ok(b.build_int_compare(IntPredicate::NE, alone_rounds, c32(0), "some"));
    let together = ok(b.build_and(cheaper, some, "together"));
    // The argument block's bytes as 32-bit words, the last padded.
    let size = l.size;
    let words = size.div_ceil(4);
    let shared_args = if words > 0 {
        let entry = f.get_first_basic_block().expect("the helper's entry");
        let here = b.get_insert_block().expect("positioned");
        clone::position_at_start(b, entry);
        let block = ok(b.build_alloca(i8t.array_type((words * 4) as u32), "team.args"));
        block.as_instruction_value().expect("an alloca").set_alignment(ARGS_ALIGN).expect("a power of two");
        b.position_at_end(here);
        block
    } else {
        args
    };

    let start = ctx.append_basic_block(f, "together");
    let grids = ctx.append_basic_block(f, "together.grid");
    let head = ctx.append_basic_block(f, "together.threads");
    let body = ctx.append_basic_block(f, "together.thread");
    let next = ctx.append_basic_block(f, "together.next");
    let synced = ctx.append_basic_block(f, "together.done");
    let done = ctx.append_basic_block(f, "together.ran");

    b.position_at_end(start);
    ok(b.build_unconditional_branch(grids));

    // One grid: its launching lane's dims and arguments to every lane.
    b.position_at_end(grids);
    let w = ok(b.build_phi(i32t, "want.left"));
    let w_v = w.as_basic_value().into_int_value();
    let lane = int(call("llvm.cttz", &[i32t.into()], &[w_v.into(), i1t.const_zero().into()], "lane"));
    // A constant is every lane's already; a value that becomes one once the helper is
    // inlined (a launch's `blockDim` of 32) is marked so that the clean-up folds it
    // ([`fold_team_shuffles`]), and dividing by it costs no division.
    let team_kind = ctx.get_kind_id(TEAM_SHUFFLE);
    let shfl = |v: IntValue<'ctx>, name: &str| {
        if v.is_const() {
            return v;
        }
        let c = ok(b.build_call(intrinsic(module, "llvm.nvvm.shfl.sync.idx.i32", &[]), &[mask.into(), v.into(), lane.into(), c32(31).into()], name));
        let v = c.try_as_basic_value().basic().expect("a value").into_int_value();
        let _ = v.as_instruction_value().expect("a call").set_metadata(ctx.metadata_node(&[]), team_kind);
        v
    };
    let gd = [0, 1, 2].map(|i| shfl(config.grid[i], "grid.d"));
    let bd = [0, 1, 2].map(|i| shfl(config.block[i], "block.d"));
    for k in 0..words {
        let at = |base: inkwell::values::PointerValue<'ctx>| {
            // SAFETY: a word inside the argument bytes (the last one inside the padded block).
            unsafe { ok(b.build_gep(i8t, base, &[i64t.const_int(k * 4, false)], "word.at")) }
        };
        let whole = k * 4 + 4 <= size;
        let word = if whole {
            let v = ok(b.build_load(i32t, at(args), "word")).into_int_value();
            v.as_instruction_value().expect("a load").set_alignment(super::copies::aligned_at(ARGS_ALIGN.into(), k * 4) as u32).expect("a power of two");
            v
        } else {
            // The last bytes, one by one, into the low end of a word.
            let mut acc = c32(0);
            for byte in 0..size - k * 4 {
                // SAFETY: a byte inside the argument bytes.
                let p = unsafe { ok(b.build_gep(i8t, args, &[i64t.const_int(k * 4 + byte, false)], "byte.at")) };
                let v = ok(b.build_int_z_extend(ok(b.build_load(i8t, p, "byte")).into_int_value(), i32t, "byte32"));
                acc = ok(b.build_or(acc, ok(b.build_left_shift(v, c32(8 * byte), "byte.up")), "word"));
            }
            acc
        };
        let theirs = shfl(word, "word.shared");
        let store = ok(b.build_store(at(shared_args), theirs));
        store.set_alignment(super::copies::aligned_at(ARGS_ALIGN.into(), k * 4) as u32).expect("a power of two");
    }
    let their_args = load_arguments(&ctx, b, layout, shared_args, ARGS_ALIGN);
    let mul = |x: IntValue<'ctx>, y: IntValue<'ctx>, name: &str| ok(b.build_int_mul(x, y, name));
    let threads = mul(mul(bd[0], bd[1], "m"), bd[2], "threads");
    let total = mul(mul(mul(gd[0], gd[1], "m"), gd[2], "blocks"), threads, "total");
    ok(b.build_unconditional_branch(head));

    // Its threads, `team` at a time.
    b.position_at_end(head);
    let i = ok(b.build_phi(i32t, "i"));
    let i_v = i.as_basic_value().into_int_value();
    let cached = ok(b.build_phi(i32t, "cached.block"));
    let coords = ["cached.x", "cached.y", "cached.z"].map(|n| ok(b.build_phi(i32t, n)));
    let more = ok(b.build_int_compare(IntPredicate::ULT, i_v, total, "more"));
    ok(b.build_conditional_branch(more, body, next));
    // The block's coordinates are worked out again only when a lane moves to another block
    // (divisions by a grid's size, which is rarely a constant).
    b.position_at_end(body);
    let bl = ok(b.build_int_unsigned_div(i_v, threads, "bl"));
    let t = ok(b.build_int_sub(i_v, mul(bl, threads, "bl.first"), "t"));
    let same = ok(b.build_int_compare(IntPredicate::EQ, bl, cached.as_basic_value().into_int_value(), "same.block"));
    let new_block = ctx.append_basic_block(f, "together.block");
    let run_bb = ctx.append_basic_block(f, "together.run");
    ok(b.build_conditional_branch(same, run_bb, new_block));
    b.position_at_end(new_block);
    let fresh = unflatten(b, bl, gd);
    ok(b.build_unconditional_branch(run_bb));
    b.position_at_end(run_bb);
    let block_idx = [0, 1, 2].map(|k| {
        let phi = ok(b.build_phi(i32t, ["block.x", "block.y", "block.z"][k]));
        phi.add_incoming(&[(&coords[k].as_basic_value(), body), (&fresh[k], new_block)]);
        phi.as_basic_value().into_int_value()
    });
    let thread_idx = unflatten(b, t, bd);
    let mut call_args = their_args;
    call_args.extend(thread_idx.iter().chain(&block_idx).chain(&bd).chain(&gd).map(|v| BasicMetadataValueEnum::from(*v)));
    let run = ok(b.build_call(serial, &call_args, ""));
    byval_at_call(serial, run);
    let i_next = ok(b.build_int_add(i_v, team, "i.next"));
    ok(b.build_unconditional_branch(head));
    i.add_incoming(&[(&rank, grids), (&i_next, run_bb)]);
    // No block yet: a block number no grid has.
    cached.add_incoming(&[(&c32(u32::MAX.into()), grids), (&bl, run_bb)]);
    for k in 0..3 {
        coords[k].add_incoming(&[(&c32(0), grids), (&block_idx[k], run_bb)]);
    }

    b.position_at_end(next);
    let w_next = ok(b.build_and(w_v, ok(b.build_int_sub(w_v, c32(1), "w.less")), "want.next"));
    let left = ok(b.build_int_compare(IntPredicate::NE, w_next, c32(0), "left"));
    ok(b.build_conditional_branch(left, grids, synced));
    w.add_incoming(&[(&want, start), (&w_next, next)]);

    b.position_at_end(synced);
    ok(b.build_call(intrinsic(module, "llvm.nvvm.bar.warp.sync", &[]), &[mask.into()], ""));
    ok(b.build_conditional_branch(small, done, launch_bb));
    b.position_at_end(done);
    ok(b.build_return(Some(&c32(0))));

    // Back to the entry's end, for the caller's branch.
    b.position_at_end(f.get_first_basic_block().expect("the helper's entry"));
    (together, start)
}

/// The metadata kind that marks the shuffles of [`team_path`]: each shares a value of the lane
/// whose grid the team runs, always a lane of the shuffle's mask.
pub(super) const TEAM_SHUFFLE: &str = "cdpc.team.shuffle";

/// Replaces each shuffle of a team ([`TEAM_SHUFFLE`]) whose value is a constant by the
/// constant: every lane of the mask holds it, so the lane read gives it; whether any was. Run
/// by the clean-up after inlining, when a launch's constant dims and arguments have reached
/// the helper's shuffles. Shuffles that the program wrote are not touched: a `shfl.sync` also
/// waits for its mask's lanes.
pub fn fold_team_shuffles(module: &Module<'_>) -> bool {
    let Some(shuffle) = module.get_function("llvm.nvvm.shfl.sync.idx.i32") else { return false };
    let mut folded = false;
    let kind = module.get_context().get_kind_id(TEAM_SHUFFLE);
    // SAFETY: walks the uses of a live function, then replaces and erases the calls found,
    // whose uses are then gone.
    unsafe {
        let mut calls = Vec::new();
        let mut u = LLVMGetFirstUse(shuffle.as_value_ref());
        while !u.is_null() {
            calls.push(LLVMGetUser(u));
            u = LLVMGetNextUse(u);
        }
        for call in calls {
            if LLVMIsACallInst(call).is_null() || LLVMGetMetadata(call, kind).is_null() {
                continue;
            }
            let value = LLVMGetOperand(call, 1);
            if LLVMIsConstant(value) != 0 {
                LLVMReplaceAllUsesWith(call, value);
                LLVMInstructionEraseFromParent(call);
                folded = true;
            }
        }
    }
    folded
}

/// At `b`'s position in `f`: the launch `l` as the documented sequence, its arguments copied
/// from `args` into a new parameter buffer (a copy of `old_buffer`'s call; none without one),
/// its dims `grid` and `block`, its shared memory and stream `l`'s constants; returns the
/// launch's status, or [`LAUNCH_SKIPPED_STATUS`] when there is no buffer.
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
) {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let operand = |i: u32| l.call.get_operand(i).and_then(|o| o.value()).expect("a launch's operand");
    let launch_callee = l.call.get_operand(l.call.get_num_operands() - 1).and_then(|o| o.value()).expect("a callee");
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
    let launch_args: Vec<BasicMetadataValueEnum> = vec![operand(0).into(), buf.into(), grid.into(), block.into(), operand(4).into(), operand(5).into()];
    let launch = ok(b.build_call(launch_fn, &launch_args, "status"));
    copy_byval(l.call.as_value_ref(), launch.as_value_ref(), &[(3, 3), (4, 4)]);
    if let Some(inst) = launch.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()) {
        super::location::copy_cdp_span(l.call, inst);
    }
    let status = launch.try_as_basic_value().basic().expect("a status");
    ok(b.build_return(Some(&status)));
}
