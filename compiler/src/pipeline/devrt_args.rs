//! The device runtime's rules on constant arguments, checked on any front end's IR as the
//! kernel language's sema checks them (`front/cdp/sema/builtins.rs`), so that CUDA C++ and LLVM IR get
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

use super::launch::constant_u64;
use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use crate::llvm::operand;
use inkwell::module::Module;
use runtime_shim::entry_points::{CType, RuntimeFn};
use runtime_shim::streams::{describe, is_graph_stream, EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING};

/// The errors of every call in `module` that breaks one of the rules (module docs).
pub fn check(module: &Module<'_>, source: &SourceText) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (caller, inst, name) in super::devrt_missing::declared_calls(module) {
        let Some(f) = super::devrt_missing::runtime_fn(&name) else { continue };
        let entry = f.entry_point();
        // The call's arguments (its last operand is the callee).
        let args: Vec<_> = (0..inst.get_num_operands().saturating_sub(1)).filter_map(|i| operand(inst, i)).collect();
        for (value, (_, ctype)) in args.iter().zip(entry.params) {
            if *ctype != CType::Stream {
                continue;
            }
            let Some(handle) = constant_u64(*value) else { continue };
            let graph_stream = is_graph_stream(handle);
            let d = if f == RuntimeFn::GraphLaunch && !graph_stream {
                Diagnostic::new(Code::GraphLaunchStream, Span::new(0, 0), "a graph launched from device code must go into a graph stream")
                    .with_primary_message(format!("this call passes {}", describe(handle)))
                    .with_note("use `cudaStreamGraphTailLaunch`, `cudaStreamGraphFireAndForget` or `cudaStreamGraphFireAndForgetAsSibling`; the programming guide's \"Device Graph Launch\": device graphs cannot be launched into regular streams, only into these named ones")
            } else if f != RuntimeFn::GraphLaunch && graph_stream {
                let what = if f.kernel_param().is_some() || entry.c_name.starts_with("cudaLaunch") { "a kernel launch".to_string() } else { format!("`{}`", entry.c_name) };
                Diagnostic::new(Code::GraphStreamMisuse, Span::new(0, 0), format!("{} is only for `cudaGraphLaunch`", describe(handle))).with_primary_message(format!("passed to {what}")).with_note(
                    "graph streams name where a device-launched graph runs; kernels, copies and events need a created stream, the NULL stream, `cudaStreamTailLaunch` or `cudaStreamFireAndForget`",
                )
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
        let Some(flags) = args.get(1).and_then(|v| constant_u64(*v)) else { continue };
        if flags as u32 & flag == 0 {
            let d = Diagnostic::new(Code::MissingRequiredFlag, Span::new(0, 0), format!("{what} must be created with `{flag_name}`"))
                .with_primary_message(format!("this call's flags lack `{flag_name}`"))
                .with_note("the device runtime supports only non-blocking streams and events without timing");
            out.push(source.place(d, inst, &caller));
        }
    }
    out
}
