//! LLVM's code generation and pass pipelines, run inside LLVM's crash recovery.
//!
//! LLVM ends the process on some inputs instead of returning an error: `report_fatal_error`
//! ("unsupported library call operation" for `frem` of `fp128`, "Cannot select" for an
//! operation NVPTX has no instruction for), failed assertions, and errors reported through a
//! context with no diagnostic handler ("no libcall available for ftan", then `exit(1)`). IR a
//! user hands cdpc may hold such operations, and a compiler embedded in another program (the C
//! API, the Python package) must not take that program down with it. Here both run through
//! `llvm_shim.cpp`, inside a `CrashRecoveryContext` with LLVM's fatal-error handler installed and
//! a diagnostic handler on the module's context for the run (collecting its errors, dropping its
//! warnings): a stop returns [`BackendError::Stopped`] with LLVM's reason, which the driver
//! reports as `E1023`.
//!
//! Invariant: after a stop the module may be half-lowered; callers only return the error, and
//! the module is disposed of with its context, never used again.

use inkwell::module::Module;
use inkwell::targets::{FileType, TargetMachine};
use std::ffi::{c_char, c_int, CStr, CString};

use super::BackendError;

extern "C" {
    /// `llvm_shim.cpp`.
    fn cdpc_emit_safely(
        machine: inkwell::llvm_sys::target_machine::LLVMTargetMachineRef,
        module: inkwell::llvm_sys::prelude::LLVMModuleRef,
        kind: inkwell::llvm_sys::target_machine::LLVMCodeGenFileType,
        out: *mut inkwell::llvm_sys::prelude::LLVMMemoryBufferRef,
        message: *mut *mut c_char,
    ) -> c_int;
    /// `llvm_shim.cpp`.
    fn cdpc_run_passes_safely(
        module: inkwell::llvm_sys::prelude::LLVMModuleRef,
        passes: *const c_char,
        machine: inkwell::llvm_sys::target_machine::LLVMTargetMachineRef,
        message: *mut *mut c_char,
    ) -> c_int;
}

/// LLVM's message, disposed of once read.
///
/// # Safety
/// `message` is null or a message LLVM allocated (`LLVMCreateMessage`), not used afterwards.
unsafe fn take_message(message: *mut c_char) -> String {
    if message.is_null() {
        return String::new();
    }
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned();
    unsafe { inkwell::llvm_sys::core::LLVMDisposeMessage(message) };
    text
}

/// The shim's status as a result: 0 done, 1 LLVM's error ([`BackendError::Target`], `what`
/// first), 2 a stop ([`BackendError::Stopped`], its reason's first line without addresses).
fn status(code: c_int, message: String, what: &str) -> Result<(), BackendError> {
    match code {
        0 => Ok(()),
        1 => Err(BackendError::Target(format!("{what}: {message}"))),
        _ => Err(BackendError::Stopped(without_addresses(message.lines().next().unwrap_or_default()))),
    }
}

/// LLVM's reason without the addresses of its objects, which differ from run to run
/// ("Cannot select: 0x7f3c...: f64 = fcos 0x7f3c...:1" is "Cannot select: f64 = fcos"): each
/// `0x` and four or more hexadecimal digits goes, with a `:N` result number or `: ` after it.
fn without_addresses(reason: &str) -> String {
    let bytes = reason.as_bytes();
    let mut out = String::with_capacity(reason.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes[i..].iter().skip(2).take_while(|b| b.is_ascii_hexdigit()).count();
        if bytes[i..].starts_with(b"0x") && digits >= 4 && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            i += 2 + digits;
            if bytes.get(i) == Some(&b':') {
                let number = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                i += 1 + if number > 0 { number } else { usize::from(bytes.get(i + 1) == Some(&b' ')) };
            }
            continue;
        }
        let c = reason[i..].chars().next().expect("a character");
        out.push(c);
        i += c.len_utf8();
    }
    // The commas that separated the operands removed.
    out.split_whitespace().filter(|w| *w != ",").collect::<Vec<_>>().join(" ").trim_end_matches(',').to_string()
}

/// `module`'s code for `tm` (assembly or an object), the bytes `TargetMachine::write_to_memory_buffer`
/// writes.
pub fn emit(module: &Module<'_>, tm: &TargetMachine, kind: FileType) -> Result<Vec<u8>, BackendError> {
    let kind = match kind {
        FileType::Assembly => inkwell::llvm_sys::target_machine::LLVMCodeGenFileType::LLVMAssemblyFile,
        FileType::Object => inkwell::llvm_sys::target_machine::LLVMCodeGenFileType::LLVMObjectFile,
    };
    let mut out = std::ptr::null_mut();
    let mut message = std::ptr::null_mut();
    // SAFETY: the machine and the module are alive for the call; the message is taken once.
    let code = unsafe { cdpc_emit_safely(tm.as_mut_ptr(), module.as_mut_ptr(), kind, &mut out, &mut message) };
    status(code, unsafe { take_message(message) }, "code generation")?;
    // SAFETY: status 0: the shim's buffer, not null, disposed of once copied.
    let buffer = unsafe { inkwell::memory_buffer::MemoryBuffer::new(out) };
    Ok(buffer.as_slice().to_vec())
}

/// Runs the new pass manager's `passes` (a pipeline in `opt`'s syntax) on `module`, as
/// `Module::run_passes` with default options does.
pub fn run_passes(module: &Module<'_>, passes: &str, tm: &TargetMachine) -> Result<(), BackendError> {
    let text = CString::new(passes).expect("a pass pipeline without NUL");
    let mut message = std::ptr::null_mut();
    // SAFETY: the module and the machine are alive for the call; the shim copies nothing it
    // keeps; the message is taken once.
    let code = unsafe { cdpc_run_passes_safely(module.as_mut_ptr(), text.as_ptr(), tm.as_mut_ptr(), &mut message) };
    status(code, unsafe { take_message(message) }, passes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reasons_lose_their_addresses() {
        assert_eq!(super::without_addresses("Cannot select: 0x7f5098041030: f64 = fcos 0x7f5098040bd0:1"), "Cannot select: f64 = fcos");
        assert_eq!(super::without_addresses("Cannot select: 0x7f15cc064120: f64 = fpow 0x7f15cc064040, 0x7f15cc0640b0"), "Cannot select: f64 = fpow");
        assert_eq!(super::without_addresses("unsupported library call operation"), "unsupported library call operation");
        assert_eq!(super::without_addresses("constant 0x10 and name a0x12345"), "constant 0x10 and name a0x12345");
    }
}
