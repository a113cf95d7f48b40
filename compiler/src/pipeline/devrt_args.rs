//! The device runtime's rules on constant arguments, checked on any front end's IR as the
//! kernel language's sema checks them (`sema/builtins.rs`), so that CUDA C++ and LLVM IR get
//! the same errors at the call:
//!
//! - `E0309`: a stream created in device code must be `cudaStreamNonBlocking`, an event
//!   `cudaEventDisableTiming` (`cudaStreamCreateWithFlags`, `cudaEventCreateWithFlags` with
//!   constant flags that lack it; the device runtime refuses them when the program runs);
//! - `E0313`: a graph stream (`cudaStreamGraphTailLaunch`, ...) passed to anything but
//!   `cudaGraphLaunch` (a kernel launch, a copy, an event);
//! - `E0314`: `cudaGraphLaunch` from device code into a stream that is no graph stream.
//!
//! Only constants are checked (a null stream, an `inttoptr` of a constant, a constant flags
//! word), as sema checks constant expressions. nvcc 13.5 compiles each of these and the
//! runtime fails the call.
//!
//! Invariant: the module is never changed; a `.cdp` program's own calls (`!cdpc.own`), which its
//! sema has checked already, are left alone.

use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use inkwell::llvm_sys::core::{LLVMConstIntGetZExtValue, LLVMGetConstOpcode, LLVMGetOperand, LLVMIsAConstantExpr, LLVMIsAConstantInt, LLVMIsAConstantPointerNull};
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, InstructionOpcode};
use runtime_shim::entry_points::{CType, RuntimeFn};
use runtime_shim::streams::{is_graph_stream, EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING};

/// The errors of every call in `module` that breaks one of the rules (module docs).
pub fn check(module: &Module<'_>, source: &SourceText) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for function in module.get_functions() {
        let caller = function.get_name().to_string_lossy().into_owned();
        for inst in function.get_basic_blocks().iter().flat_map(|b| b.get_instructions()) {
            if inst.get_opcode() != InstructionOpcode::Call || super::location::is_own_call(inst) {
                continue;
            }
            let Some(callee) = super::clone::callee(inst) else { continue };
            if callee.count_basic_blocks() > 0 {
                continue;
            }
            let name = callee.get_name().to_string_lossy();
            let Some(f) = RuntimeFn::ALL.iter().copied().find(|f| f.entry_point().c_name == name || f.entry_point().ptx_symbol == name) else { continue };
            let entry = f.entry_point();
            // The call's arguments (its last operand is the callee).
            let args: Vec<LLVMValueRef> = (0..inst.get_num_operands().saturating_sub(1))
                .filter_map(|i| inst.get_operand(i).and_then(|o| o.value()).map(|v| v.as_value_ref()))
                .collect();
            for (value, (_, ctype)) in args.iter().zip(entry.params) {
                if *ctype != CType::Stream {
                    continue;
                }
                let Some(handle) = constant(*value) else { continue };
                let graph_stream = is_graph_stream(handle);
                let d = if f == RuntimeFn::GraphLaunch && !graph_stream {
                    Diagnostic::new(Code::GraphLaunchStream, Span::new(0, 0), "a graph launched from device code must go into a graph stream")
                        .with_primary_message(format!("this call passes {}", stream_name(handle)))
                        .with_note("use `cudaStreamGraphTailLaunch`, `cudaStreamGraphFireAndForget` or `cudaStreamGraphFireAndForgetAsSibling`; the programming guide's \"Device Graph Launch\": device graphs cannot be launched into regular streams, only into these named ones")
                } else if f != RuntimeFn::GraphLaunch && graph_stream {
                    let what = if f.kernel_param().is_some() || entry.c_name.starts_with("cudaLaunch") { "a kernel launch".to_string() } else { format!("`{}`", entry.c_name) };
                    Diagnostic::new(Code::GraphStreamMisuse, Span::new(0, 0), format!("{} is only for `cudaGraphLaunch`", stream_name(handle)))
                        .with_primary_message(format!("passed to {what}"))
                        .with_note("graph streams name where a device-launched graph runs; kernels, copies and events need a created stream, the NULL stream, `cudaStreamTailLaunch` or `cudaStreamFireAndForget`")
                } else {
                    continue;
                };
                out.push(source.place(d, inst, &caller));
            }
            let (flag, flag_name, what) = match f {
                RuntimeFn::StreamCreateWithFlags => (STREAM_NON_BLOCKING, "cudaStreamNonBlocking", "a stream created in device code"),
                RuntimeFn::EventCreateWithFlags => (EVENT_DISABLE_TIMING, "cudaEventDisableTiming", "an event created in device code"),
                _ => continue,
            };
            let Some(flags) = args.get(1).and_then(|v| constant(*v)) else { continue };
            if flags as u32 & flag == 0 {
                let d = Diagnostic::new(Code::MissingRequiredFlag, Span::new(0, 0), format!("{what} must be created with `{flag_name}`"))
                    .with_primary_message(format!("this call's flags lack `{flag_name}`"))
                    .with_note("the device runtime supports only non-blocking streams and events without timing");
                out.push(source.place(d, inst, &caller));
            }
        }
    }
    out
}

/// The value of a constant integer, null pointer or `inttoptr` of a constant integer.
fn constant(value: LLVMValueRef) -> Option<u64> {
    // SAFETY: `value` is a live value of the module being checked; these calls only read it.
    unsafe {
        if !LLVMIsAConstantInt(value).is_null() {
            return Some(LLVMConstIntGetZExtValue(value));
        }
        if !LLVMIsAConstantPointerNull(value).is_null() {
            return Some(0);
        }
        if !LLVMIsAConstantExpr(value).is_null() && LLVMGetConstOpcode(value) == LLVMOpcode::LLVMIntToPtr {
            let int = LLVMGetOperand(value, 0);
            if !LLVMIsAConstantInt(int).is_null() {
                return Some(LLVMConstIntGetZExtValue(int));
            }
        }
    }
    None
}

/// How sema names a stream handle.
fn stream_name(handle: u64) -> String {
    match runtime_shim::streams::NAMED_HANDLES.iter().find(|(_, h)| *h == handle) {
        Some((name, _)) => format!("`{name}`"),
        None if handle == runtime_shim::streams::NULL_STREAM => "the NULL stream".to_string(),
        None => format!("the stream handle {handle:#x}"),
    }
}
