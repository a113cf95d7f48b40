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
//! A launch into a stream that only its thread holds ([`super::own_stream`]: created into a
//! local whose handle goes only to the function's launches and `cudaStreamDestroy`) runs in
//! place only where the thread has launched nothing into that stream since creating it: a flag
//! the stream's other launches set, which its helper reads (and sets where it launches). Such a
//! site is not kept for the kernel's end.
//!
//! Taken: launches into the NULL stream, `cudaStreamFireAndForget` (only under the V2 ABI; V1
//! refuses it with `E0306`) or the thread's own stream, with no dynamic shared memory, of a child defined
//! here whose threads do not need each other and each do little: neither it nor anything it
//! calls uses a barrier, shared memory, a warp-level primitive, the lane, warp or grid id,
//! inline assembly, stream or event work, launches, calls through pointers or calls
//! functions without a definition (but the device C library's and LLVM's), or runs a loop
//! other than a counted one of at most [`MAX_TRIPS`] iterations (a loop whose counter starts
//! at a constant, steps by a constant and is compared with a constant; its iterations are the
//! counter's steps of one, so that a loop Clang unrolled counts what its source did, and a
//! source loop that steps by more than one counts more than it runs, a conservative choice). Every other launch
//! gets `R0502` with the reason, at its line. A kernel that reaches a rewritten site is capped
//! at 64 registers ([`super::sites::REGISTER_CAP`]) unless it has launch bounds or a cap;
//! the cap is marked as the passes' ([`super::sites::cap_kernel`]), and the build keeps it only where ptxas
//! needs more registers without it (`toolchain::register_cap`).
//!
//! Invariant: with `N = 0`, or no launch to take, the module is untouched; afterwards every
//! site taken is a call of its helper and no launch of the module is lost.

use super::clone::{self, as_function, called_function, value_name};
use super::in_place::{helper, Mode, Team, TEAM_SHUFFLE};
use super::launch::{self, Launch};
use super::own_stream;
use super::sites::{builtin_readers, cap_registers, child_name, const_int, documented_shape, new_helper_with, parameter_layout, replace_by_helper_with, source_name, successors};
use super::stream_order;
use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use crate::llvm::{block_operand, operand};
use crate::target::{LaunchAbi, Target};
use inkwell::basic_block::BasicBlock;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::llvm_sys::LLVMIntPredicate;
use inkwell::module::Module;
use inkwell::targets::TargetData;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, FunctionValue, InstructionOpcode, PointerValue};
use std::collections::{HashMap, HashSet};

/// The most iterations a loop of a child run in place may have .
pub const MAX_TRIPS: u32 = 64;

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
        let (on_false, on_true) = (block_operand(t, 1)?, block_operand(t, 2)?);
        let (stay_true, stay_false) = (body.contains(&on_true), body.contains(&on_false));
        (stay_true != stay_false).then_some((operand(t, 0)?.as_value_ref(), stay_true))
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

/// What a site must be to run in place, the child aside: `None` when it is.
fn why_not_site(l: &Launch<'_>, target: &Target, max_threads: u32) -> Option<String> {
    if !documented_shape(l) {
        return Some("the launch's calls do not have the documented types".into());
    }
    let operand = |i: u32| operand(l.call, i);
    match operand(5).and_then(launch::constant_u64) {
        Some(0) => {}
        Some(4) if target.launch_abi == LaunchAbi::V2 => {}
        Some(4) => return Some("a fire-and-forget launch under the V1 ABI, which refuses it".into()),
        Some(3) => return Some("a tail launch sees the whole parent grid's writes; run in place it would not".into()),
        _ if own_stream::own_stream(l).is_some() => {}
        _ => return Some("a launch into a named stream that other threads or functions may hold runs after the stream's earlier work, which the thread cannot wait for".into()),
    }
    if operand(4).and_then(launch::constant_u64) != Some(0) {
        return Some("the launch asks for dynamic shared memory".into());
    }
    if let Some(threads) = operand(3).and_then(constant_dims).map(|[x, y, z]| x * y * z).filter(|&t| t > u64::from(max_threads)) {
        return Some(format!("its blocks alone have {threads} threads, more than {max_threads}: it is never that small"));
    }
    None
}

/// A launch's `dim3` whose three fields are constants: by value (a constant, or built field by
/// field with `insertvalue`, the `.cdp` front end's form), or through a `byval` pointer to a
/// local that only constant stores of its fields write (Clang's: `i32` stores at offsets 0, 4
/// and 8, or an `i64` of the first two). Anything else is not known.
fn constant_dims(v: inkwell::values::BasicValueEnum<'_>) -> Option<[u64; 3]> {
    use inkwell::llvm_sys::core::*;
    let mut fields: [Option<u64>; 3] = [None; 3];
    let mut at = v.as_value_ref();
    // SAFETY: queries of live values and their uses; indices read only where there is one.
    unsafe {
        if !LLVMIsAAllocaInst(at).is_null() {
            return local_dims(at);
        }
        for _ in 0..4 {
            if !LLVMIsAInsertValueInst(at).is_null() {
                if LLVMGetNumIndices(at) != 1 {
                    return None;
                }
                let index = *LLVMGetIndices(at) as usize;
                if index < 3 && fields[index].is_none() {
                    fields[index] = Some(const_int(LLVMGetOperand(at, 1))?.0);
                }
                at = LLVMGetOperand(at, 0);
            } else if !LLVMIsAConstant(at).is_null() {
                for (index, field) in fields.iter_mut().enumerate() {
                    if field.is_none() {
                        let element = LLVMGetAggregateElement(at, index as u32);
                        *field = Some(if element.is_null() { None } else { const_int(element) }?.0);
                    }
                }
                break;
            } else {
                return None;
            }
        }
    }
    Some([fields[0]?, fields[1]?, fields[2]?])
}

/// [`constant_dims`] of a local: every use a constant store of a field (directly, or through
/// a constant `getelementptr` of bytes or of the struct), a load, the launch's call or a
/// lifetime marker; one value per field.
///
/// # Safety
/// `slot` is a live `alloca`.
unsafe fn local_dims(slot: LLVMValueRef) -> Option<[u64; 3]> {
    use inkwell::llvm_sys::core::*;
    use inkwell::llvm_sys::LLVMOpcode;
    let mut bytes: [Option<u32>; 12] = [None; 12];
    let mut work = vec![(slot, 0u64)];
    while let Some((pointer, offset)) = work.pop() {
        let mut u = LLVMGetFirstUse(pointer);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            u = LLVMGetNextUse(u);
            if LLVMIsAInstruction(user).is_null() {
                return None;
            }
            match LLVMGetInstructionOpcode(user) {
                LLVMOpcode::LLVMStore if LLVMGetOperand(user, 1) == pointer => {
                    let (value, bits) = const_int(LLVMGetOperand(user, 0))?;
                    if bits % 8 != 0 || offset + u64::from(bits / 8) > 12 {
                        return None;
                    }
                    for k in 0..u64::from(bits / 8) {
                        let byte = &mut bytes[(offset + k) as usize];
                        let new = ((value >> (8 * k)) & 0xff) as u32;
                        if byte.is_some_and(|b| b != new) {
                            return None;
                        }
                        *byte = Some(new);
                    }
                }
                LLVMOpcode::LLVMLoad => {}
                LLVMOpcode::LLVMCall => {
                    // The launch itself, which takes it `byval`, or a lifetime marker; any other
                    // call (a `memcpy` into it) may write it.
                    let callee = LLVMGetCalledValue(user);
                    let name = if LLVMIsAFunction(callee).is_null() { String::new() } else { value_name(callee) };
                    if !(launch::is_launch_entry(&name) || name.starts_with("llvm.lifetime.")) {
                        return None;
                    }
                }
                LLVMOpcode::LLVMGetElementPtr => {
                    // A constant offset from the local: `gep i8, p, C` or `gep %struct.dim3, p, 0, F`.
                    let base = LLVMGetOperand(user, 0);
                    if base != pointer {
                        return None;
                    }
                    let indices: Vec<u64> = (1..LLVMGetNumOperands(user) as u32).map(|i| const_int(LLVMGetOperand(user, i)).map(|c| c.0)).collect::<Option<_>>()?;
                    let step = match indices.as_slice() {
                        [c] if LLVMGetTypeKind(LLVMGetGEPSourceElementType(user)) == inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
                            && LLVMGetIntTypeWidth(LLVMGetGEPSourceElementType(user)) == 8 =>
                        {
                            *c
                        }
                        [0, f] => 4 * f,
                        _ => return None,
                    };
                    work.push((user, offset + step));
                }
                _ => return None,
            }
        }
    }
    let field = |i: usize| -> Option<u64> { (0..4).map(|k| bytes[4 * i + k].map(|b| u64::from(b) << (8 * k))).sum::<Option<u64>>() };
    Some([field(0)?, field(1)?, field(2)?])
}

/// Runs the launches of `sites`, the module's as they are now, whose grids have at most
/// `max_threads` threads in place (module docs); returns the `R0502` remarks of the launches
/// it leaves alone.
pub fn threshold<'ctx>(module: &Module<'ctx>, sites: &launch::Sites<'ctx>, max_threads: u32, target: &Target, source: &SourceText) -> Vec<Diagnostic> {
    if max_threads == 0 || !sites.refused.is_empty() {
        // With a launch refused, the launch pass reports it; nothing is changed.
        return Vec::new();
    }
    let launches = &sites.launches;
    let data = TargetData::create(&module.get_data_layout().as_str().to_string_lossy());
    let mut remarks = Vec::new();
    let mut children: HashMap<LLVMValueRef, Option<String>> = HashMap::new();
    let mut taken = Vec::new();
    for l in launches {
        let kernel = operand(l.call, 0);
        let child = kernel.and_then(|k| as_function(k.as_value_ref()));
        let why = match child {
            None => Some("the launch goes through a pointer: which kernel it launches is known at run time only, and running it in place needs the child's body".to_string()),
            Some(c) if c.count_basic_blocks() == 0 => Some(format!("`{}` has no definition here", source_name(&c.get_name().to_string_lossy()))),
            Some(c) => why_not_site(l, target, max_threads).or_else(|| children.entry(c.as_value_ref()).or_insert_with(|| why_not_serial(c)).clone()).or_else(|| {
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
    // A launch into its thread's own stream runs in place only where the stream is idle: a
    // flag the launches into it keep ([`own_stream`]); such a site is not kept for the
    // kernel's end.
    let taken_launches: Vec<Launch> = taken.iter().map(|(l, _)| *l).collect();
    let own = own_stream::instrument(module, launches, &taken_launches);
    let kept = if team == Team::Warp { super::defer::kept_sites(&taken) } else { HashSet::new() };
    let kept: HashSet<usize> = kept.into_iter().filter(|&i| !own.contains_key(&taken[i].0.call)).collect();
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
            rewrite_site(module, l, serial[c], max_threads, &data, team, owned(l), own.get(&l.call).copied());
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

/// Replaces the launch `l` of `child` by a call of its helper (module docs); a launch into its
/// thread's own stream passes the stream and the stream's flag too ([`own_stream`]).
#[allow(clippy::too_many_arguments)]
fn rewrite_site<'ctx>(module: &Module<'ctx>, l: &Launch<'ctx>, serial: FunctionValue<'ctx>, max: u32, data: &TargetData, team: Team, owned: bool, own: Option<PointerValue<'ctx>>) {
    let name = format!("{}__threshold", child_name(l));
    let ptr = module.get_context().ptr_type(inkwell::AddressSpace::default());
    let (types, args): (Vec<BasicMetadataTypeEnum>, Vec<BasicMetadataValueEnum>) = match own.zip(operand(l.call, 5)) {
        Some((flag, stream)) => (vec![stream.get_type().into(), ptr.into()], vec![stream.into(), flag.into()]),
        None => (Vec::new(), Vec::new()),
    };
    let f = new_helper_with(module, l, &name, &types);
    for (param, name) in f.get_param_iter().skip(3).zip(["stream", "stream.launched"]) {
        param.set_name(name);
    }
    let helper = helper(module, f, l, serial, max, data, Mode::Site(team), owned, !args.is_empty());
    replace_by_helper_with(module, l, helper, "thr", &args);
}

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
