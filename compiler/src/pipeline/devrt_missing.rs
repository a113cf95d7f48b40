//! Calls of device-runtime functions that CUDA 13.5's libcudadevrt does not define (declared by
//! `cuda_device_runtime_api.h`, so Clang and other front ends accept them), warned at the call
//! as the kernel language's sema warns (`W0316`): the link would otherwise fail with nvlink's
//! raw "undefined reference" and no place in the source.
//!
//! A call of `cudaDeviceSynchronize`, which CUDA 12 removed from the device runtime (CDP2: no
//! header declares it for the device, libcudadevrt has no such symbol, and ptxas refuses it for
//! sm_90 with no place in the source), is the kernel language's `E0308`, in its words
//! ([`crate::diag::words`]): IR from another front end, or CUDA C++ that declared it itself.
//!
//! Invariant: the module is never changed; a `.cdp` program's own calls (`!cdpc.own`), which its
//! sema has warned about already, get no second warning.

use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use inkwell::module::Module;
use inkwell::values::{InstructionOpcode, InstructionValue};
use runtime_shim::entry_points::RuntimeFn;

/// `W0316` at each call of a runtime function libcudadevrt lacks, by its C name or its symbol;
/// `E0308` at each call of `cudaDeviceSynchronize`.
pub fn warn(module: &Module<'_>, source: &SourceText) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (function, inst, name) in declared_calls(module) {
        if name == "cudaDeviceSynchronize" {
            use crate::diag::words;
            let d = Diagnostic::new(Code::DeviceSynchronizeRemoved, Span::new(0, 0), words::DEVICE_SYNCHRONIZE)
                .with_primary_message(words::DEVICE_SYNCHRONIZE_LABEL)
                .with_note(words::DEVICE_SYNCHRONIZE_NOTE);
            out.push(source.place(d, inst, &function));
            continue;
        }
        let Some(f) = runtime_fn(&name).filter(|f| f.missing_from_libcudadevrt()) else { continue };
        let entry = f.entry_point();
        let d = Diagnostic::new(Code::NotInDeviceRuntimeLibrary, Span::new(0, 0), format!("libcudadevrt does not define `{}`", entry.ptx_symbol))
            .with_primary_message(format!("`{}` is declared by cuda_device_runtime_api.h, but linking will fail", entry.c_name))
            .with_note("CUDA 13.5's libcudadevrt.a has no such symbol, so nvlink reports an undefined reference (for nvcc's code as well); PTX output is unaffected");
        out.push(source.place(d, inst, &function));
    }
    out
}

/// Every call of a function the module declares but does not define (the runtime's, a
/// library's), but a `.cdp` program's own calls: the caller's name, the call, the callee's name.
pub(super) fn declared_calls<'c>(module: &Module<'c>) -> Vec<(String, InstructionValue<'c>, String)> {
    let mut out = Vec::new();
    for function in module.get_functions() {
        for inst in function.get_basic_blocks().iter().flat_map(|b| b.get_instructions()) {
            if inst.get_opcode() != InstructionOpcode::Call || super::location::is_own_call(inst) {
                continue;
            }
            let Some(callee) = super::clone::callee(inst) else { continue };
            if callee.count_basic_blocks() == 0 {
                out.push((function.get_name().to_string_lossy().into_owned(), inst, callee.get_name().to_string_lossy().into_owned()));
            }
        }
    }
    out
}

/// The device runtime's function a declaration's name is: its C name or its PTX symbol.
pub(super) fn runtime_fn(name: &str) -> Option<RuntimeFn> {
    RuntimeFn::ALL.iter().copied().find(|f| f.entry_point().c_name == name || f.entry_point().ptx_symbol == name)
}
