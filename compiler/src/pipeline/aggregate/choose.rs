//! `-faggregate-launches=auto`, what an optimising build gets by default: the granularity of
//! each kernel's launches, chosen from the IR.
//!
//! Warp granularity takes every launch the others take and more (launches in loops, in device
//! functions, in kernels that return early), and a launch it gathers starts at once; grid
//! granularity replaces a grid's thousands of launches by one, but its children start only
//! when the parent's last block ends. KLAP's programs show both sides (BENCHMARKS.md, "Which
//! options"): graph colouring, whose every thread launches one block of 256 threads, runs in
//! 0.046 of nvcc's time at grid granularity against 0.11 per warp; the quadtree, whose children
//! launch themselves, 2.25x nvcc's time at grid against 1.0 per warp, each level of the tree
//! waiting for the whole level above; BFS, whose threads launch where a vertex is on the
//! frontier (a value loaded from memory), 0.014 against 0.011.
//!
//! So a kernel's launches go to the end of the grid ([`prefers_grid`]) where each of them is
//!
//! - *dense*: the conditions that decide whether a thread reaches it are bounds on thread
//!   indices, the kernel's parameters and constants (`if (i < n)`), no value loaded from
//!   memory and no equality (`threadIdx.x == 0` makes one launch a block: nothing to gather
//!   per warp, and at grid granularity only a wait), so that most threads of the grid launch;
//! - of a *leaf* child: the child and what it calls launch nothing, so that no level of a tree
//!   of launches waits for the whole level above;
//!
//! in a kernel that reads a thread or block index (one that reads none is a driver launched
//! with one thread: nothing to gather), and where [`super::block::plan`] can delay them at all
//! (no launch in a loop or a device function, no other NULL-stream launch of the kernel left
//! at its site, ...). Every other launch is aggregated per warp, at its site.
//!
//! Invariant: only decides; the module is not changed here.

use super::super::callgraph::{callees, calls, is_kernel};
use super::super::clone::{as_function, called_function, value_name};
use super::super::defer::Verdicts;
use super::super::launch::Launch;
use super::super::sites::guard_edges;
use super::super::uniform;
use super::block::{self, KernelPlan};
use crate::llvm::operand;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::Module;
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode};
use inkwell::IntPredicate;
use std::collections::HashSet;

/// How deep [`index_only`] follows a condition's operands.
const MAX_DEPTH: u32 = 12;

/// Whether the launches of the kernel `k` (which [`block::plan`] can delay) go to the end of the
/// grid rather than to their warps: each dense and of a leaf child (module docs).
pub(super) fn prefers_grid<'ctx>(module: &Module<'ctx>, k: &KernelPlan<'ctx>, index_readers: &HashSet<String>) -> bool {
    !k.sites.is_empty() && index_readers.contains(&*k.kernel.get_name().to_string_lossy()) && k.sites.iter().all(|l| leaf_child(l) && dense(module, k.kernel, l))
}

/// The kernels of `module` that read an index ([`reads_an_index`]), by name: taken before
/// thresholding, whose helpers and block tags read both in every kernel they change.
pub(super) fn index_readers(module: &Module<'_>) -> HashSet<String> {
    module.get_functions().filter(|f| is_kernel(*f) && reads_an_index(*f)).map(|f| f.get_name().to_string_lossy().into_owned()).collect()
}

/// Whether `k`, or a function it calls, reads its thread's index in its block or its block's
/// in the grid. A kernel that reads neither does the same in every thread: it is a driver that
/// a program launches with one thread (`parent<<<1, 1>>>`, `samples/devrt_pdl.cdp`), whose
/// launches the grid's end would only delay (1.11x nvcc's time against 1.00 per warp).
fn reads_an_index(k: FunctionValue<'_>) -> bool {
    let (called, _) = callees(k);
    std::iter::once(k).chain(called).flat_map(calls).any(|i| {
        called_function(i.as_value_ref()).and_then(as_function).is_some_and(|t| {
            let name = value_name(t.as_value_ref());
            ["tid.", "ctaid."].iter().any(|r| name.starts_with(&format!("llvm.nvvm.read.ptx.sreg.{r}")))
        })
    })
}

/// Why the launches of `k` were given to the end of the grid, for `R0503`.
pub(super) fn why(k: FunctionValue<'_>) -> String {
    let name = super::super::sites::source_name(&k.get_name().to_string_lossy());
    format!("most threads of `{name}` may make it (only bounds on indices and parameters decide) and the child launches nothing: one launch for the grid's records, made when its last block ends")
}

/// Whether the launch's child, and every function it calls, launches nothing (a call through
/// a pointer may launch).
fn leaf_child(l: &Launch<'_>) -> bool {
    let child = operand(l.call, 0).and_then(|k| as_function(k.as_value_ref()));
    child.is_some_and(|c| !Verdicts::default().may_launch(c))
}

/// Whether every condition on the way to the launch in its kernel `k` is a bound on indices,
/// parameters and constants (module docs).
fn dense<'ctx>(module: &Module<'ctx>, k: FunctionValue<'ctx>, l: &Launch<'ctx>) -> bool {
    let (kernel, at) = block::host(module, l);
    if kernel != k {
        return false;
    }
    // The launch's own block is where its buffer is made (the buffer's test guards the call);
    // a helper's, where it is called.
    let at = if l.function == k { l.buffer.unwrap_or(l.call) } else { at };
    let Some(site) = at.get_parent() else { return false };
    guard_edges(k, site).into_iter().all(|(p, _)| {
        let condition = p.get_terminator().and_then(|t| operand(t, 0));
        condition.is_some_and(|c| index_only(k, c, 0))
    })
}

/// Whether `v` is computed from constants, `k`'s parameters (a by-value one read through its
/// pointer), the special registers and arithmetic and comparisons of them other than
/// equality, through locals that only their declaration stores (the `.cdp` front end's IR).
fn index_only<'ctx>(k: FunctionValue<'ctx>, v: BasicValueEnum<'ctx>, depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Some(inst) = v.as_instruction_value() else {
        // A constant or one of the kernel's parameters (a global's address is a constant too,
        // but only a load reads it, and loads of memory are refused below).
        return true;
    };
    let operand = |i: u32| operand(inst, i);
    let operands_ok = |from: u32, to: u32| (from..to).all(|i| operand(i).is_some_and(|o| index_only(k, o, depth + 1)));
    use InstructionOpcode::*;
    match inst.get_opcode() {
        Add | Sub | Mul | UDiv | SDiv | URem | SRem | Shl | LShr | AShr | And | Or | Xor | FAdd | FSub | FMul | FDiv | FNeg | ZExt | SExt | Trunc | SIToFP | UIToFP | FPToSI | FPToUI | FPExt
        | FPTrunc | Freeze | Select | FCmp => operands_ok(0, inst.get_num_operands()),
        // A local's address tested against null: a constant, what a launch's test of its
        // buffer becomes once the passes give it a local argument block.
        ICmp if (0..2).any(|i| operand(i).is_some_and(|o| o.as_instruction_value().is_some_and(|a| a.get_opcode() == Alloca)))
            && (0..2).any(|i| operand(i).is_some_and(|o| o.is_pointer_value() && o.into_pointer_value().is_null())) =>
        {
            true
        }
        ICmp => !matches!(inst.get_icmp_predicate(), Some(IntPredicate::EQ)) && operands_ok(0, 2),
        Load => match uniform::single_store(inst) {
            Some(stored) => index_only(k, stored, depth + 1),
            None => operand(0).is_some_and(|p| by_value_parameter(k, p, depth)),
        },
        Call => called_function(inst.as_value_ref()).and_then(as_function).is_some_and(|f| {
            let name = value_name(f.as_value_ref());
            name.starts_with("llvm.nvvm.read.ptx.sreg.") && ["tid", "ntid", "ctaid", "nctaid"].iter().any(|r| name["llvm.nvvm.read.ptx.sreg.".len()..].starts_with(r))
        }),
        _ => false,
    }
}

/// Whether `p` points into a parameter of `k` passed by value (`byval`): a load of it reads the
/// kernel's argument, as reading a scalar parameter does.
fn by_value_parameter<'ctx>(k: FunctionValue<'ctx>, p: BasicValueEnum<'ctx>, depth: u32) -> bool {
    let byval = Attribute::get_named_enum_kind_id("byval");
    let mut p = p;
    for _ in depth..MAX_DEPTH {
        if let Some(i) = p.as_instruction_value() {
            if i.get_opcode() != InstructionOpcode::GetElementPtr || !(1..i.get_num_operands()).all(|n| operand(i, n).is_some_and(|o| o.as_instruction_value().is_none())) {
                return false;
            }
            match operand(i, 0) {
                Some(base) => p = base,
                None => return false,
            }
            continue;
        }
        return k.get_param_iter().enumerate().any(|(n, param)| param.as_value_ref() == p.as_value_ref() && k.get_enum_attribute(AttributeLoc::Param(n as u32), byval).is_some());
    }
    false
}
