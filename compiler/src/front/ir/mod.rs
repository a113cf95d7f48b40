//! LLVM IR and bitcode another front end wrote (`.ll`, `.bc`, `-x ir`): the module read, and
//! checked against the contract of docs/IR-INPUT.md before the launch pipeline sees it. The
//! driver then compiles it as Clang's IR is (`driver::ir`: the pipeline's schedule for
//! `pipeline::Origin::Ir`, NVPTX, ptxas and nvlink with libcudadevrt).
//!
//! The contract, as checked here (each broken rule is a coded error):
//!
//! - the input parses as textual IR or bitcode (`E1011`, at LLVM's line and column for text)
//!   and passes LLVM's verifier (`E1012`);
//! - its triple is `nvptx64-nvidia-cuda` (64-bit, the default) or `nvptx-nvidia-cuda` (with
//!   `--address-size 32`), or empty, which means the target's (`E1013`);
//! - its data layout, when it has one, lays out every scalar, pointer and short vector type
//!   as NVPTX's does (NVVM's spelled-out layout does), or it is empty (`E1014`); the module
//!   then gets NVPTX's own layout string;
//! - the launch entry points ([`GET_PARAMETER_BUFFER`], [`LAUNCH_DEVICE`]) are only called,
//!   with the documented argument types (`E1010`, the launch pipeline's code), and a launch's
//!   parameter buffer is never written once the launch may have happened (`E1015`); what the
//!   pipeline checks itself (a buffer that escapes, a size that is no constant) stays its
//!   `E1010`;
//! - a module that calls libdevice's functions (`__nv_sinf`, ...; declared, not defined) gets
//!   libdevice linked in, as cdpc's own front end and Clang's do, its functions internal so
//!   that only those called stay (the driver links it, `driver::ir::link_libdevice`; a missing
//!   libdevice is the back end's error);
//! - every function and global variable is named with letters, digits, `_`, `$`, `.` and `@`
//!   only, or not at all: PTX has no way to spell other characters, and LLVM's NVPTX printer
//!   would stop the process on them (`E1017`);
//! - an atomic operation on 128 bits (`cmpxchg`, `atomicrmw`, atomic `load`/`store` of `i128`)
//!   needs sm_90 or later (`E1024`, `pipeline::wide_atomics`); the module is then written as
//!   PTX ISA 8.4 at least (the first whose `.b128` atomics take the `.sys` scope);
//! - no global variable is `thread_local` (`E1012`: PTX has no thread-local storage);
//! - a whole-program compilation with no kernel (a function of the `ptx_kernel` calling
//!   convention; NVVM's `!nvvm.annotations` `"kernel"` entries are read as that) is `W1016`.
//!
//! Afterwards the module has NVPTX's triple and data layout, and every launch the pipeline
//! recognises is one whose buffer is complete when it is launched.
//!
//! Two more rules: no function has prefix or prologue data (`E1019`), and the PTX holds no bytes
//! that are not UTF-8 (`E1018`: the input's inline assembly or file names, as written;
//! `back::write_ptx` finds them, and the driver's `From<BackendError>` makes the diagnostic).
//!
//! [`read`] parses and verifies, [`check`] applies every other rule; the tests, IR in and codes
//! out, are in `tests.rs`.

use crate::back;
use crate::back::device_launch::PTX_KERNEL_CALL_CONV;
use crate::diag::{Code, Diagnostic, Label, Span};
use crate::llvm::{block_operand, operand, user_instruction};
use crate::pipeline::{launch, SourceText};
use crate::target::{AddressSize, Target};
use inkwell::context::Context;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;
use inkwell::targets::{TargetData, TargetMachine};
use inkwell::types::{AnyType, AnyTypeEnum, BasicTypeEnum};
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue};
use inkwell::AddressSpace;
use std::collections::HashSet;

/// The triple of 64-bit device code (NVVM IR's and Clang's).
pub const TRIPLE_64: &str = "nvptx64-nvidia-cuda";
/// The triple of 32-bit device code (`--address-size 32`, PTX only).
pub const TRIPLE_32: &str = "nvptx-nvidia-cuda";

/// The functions whose call makes a launch's parameter buffer: NVVM IR's documented name and
/// the CDP2 name CUDA's headers (and so Clang) use. `ptr (size_t align, size_t size)`.
pub const GET_PARAMETER_BUFFER: &[&str] = &["cudaGetParameterBuffer", "__cudaCDP2GetParameterBuffer"];
/// The functions whose call is a launch, the documented name and the CDP2 name, each also for
/// the per-thread default stream (`_ptsz`). `i32 (ptr kernel, ptr buffer, dim3 grid, dim3
/// block, i32 shmem, ptr stream)`, a `dim3` as `{ i32, i32, i32 }` or a pointer to one.
pub const LAUNCH_DEVICE: &[&str] = &["cudaLaunchDevice", "__cudaCDP2LaunchDevice", "cudaLaunchDevice_ptsz", "__cudaCDP2LaunchDevice_ptsz"];

/// The name LLVM gives the input in its messages; removed from them.
const BUFFER_NAME: &str = "cdpc-ir-input";

/// Whether `bytes` are LLVM bitcode (raw, or in the wrapper Apple's tools write).
pub fn is_bitcode(bytes: &[u8]) -> bool {
    bytes.starts_with(b"BC\xC0\xDE") || bytes.starts_with(&[0xDE, 0xC0, 0x17, 0x0B])
}

/// The text an IR input's diagnostics are rendered against: the text of textual IR (bytes
/// that are not UTF-8 shown as U+FFFD), nothing for bitcode, whose diagnostics point at its
/// start (with a note naming the function where there is one).
pub fn shown_text(bytes: &[u8]) -> String {
    if is_bitcode(bytes) {
        String::new()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Why [`read`] gave no module: its diagnostic, and whether LLVM's reader crashed (the
/// context must then not be used or disposed of).
pub(crate) struct Unread {
    /// `E1011` or `E1012`.
    pub diagnostic: Diagnostic,
    /// Whether LLVM's reader crashed.
    pub crashed: bool,
}

impl From<Diagnostic> for Unread {
    fn from(diagnostic: Diagnostic) -> Unread {
        Unread { diagnostic, crashed: false }
    }
}

/// The module in `bytes`, parsed and verified (`E1011`, `E1012`).
pub(crate) fn read<'ctx>(context: &'ctx Context, bytes: &[u8], text: &str) -> Result<Module<'ctx>, Unread> {
    let bitcode = is_bitcode(bytes);
    let module = match back::parse_ir(context, bytes, BUFFER_NAME) {
        Ok(module) => module,
        Err(back::ParseFailure::Refused(message)) => return Err(unreadable(&message, bitcode, text).into()),
        Err(back::ParseFailure::Crashed) => {
            let what = if bitcode { "bitcode" } else { "textual IR" };
            let diagnostic = Diagnostic::new(Code::IrUnreadable, Span::default(), format!("the input is not LLVM {what} that LLVM 22 can read: LLVM's reader crashed on it"))
                .with_primary_message(format!("this {what}"))
                .with_note("the file is malformed (LLVM's reader checks most, not all, of what it reads); cdpc reads textual IR (`.ll`) and bitcode (`.bc`) of LLVM 22 or older");
            return Err(Unread { diagnostic, crashed: true });
        }
    };
    if let Err(e) = module.verify() {
        let message = e.to_string();
        let first = message.lines().next().unwrap_or("").trim();
        let mut d = Diagnostic::new(Code::IrInvalid, Span::default(), format!("the module is not valid LLVM IR: {first}"))
            .with_note("LLVM's verifier refuses it; `opt -passes=verify` shows the same")
            .with_primary_message("here");
        // The verifier quotes the offending instruction or global on the next line.
        match message.lines().skip(1).find_map(|quoted| find_line(text, quoted.trim())) {
            Some(span) => d.labels[0].span = span,
            None => d.labels[0].message = "in this module".into(),
        }
        if message.lines().count() > 1 {
            d = d.with_note(message.lines().skip(1).map(str::trim).collect::<Vec<_>>().join("\n"));
        }
        return Err(d.into());
    }
    Ok(module)
}

/// `E1011` from LLVM's message `NAME:LINE:COL: error: MESSAGE` (text) or `NAME: error:
/// MESSAGE` (bitcode).
fn unreadable(message: &str, bitcode: bool, text: &str) -> Diagnostic {
    let first = message.lines().next().unwrap_or("").trim();
    let rest = first.strip_prefix(BUFFER_NAME).unwrap_or(first).trim_start_matches(':');
    let mut parts = rest.splitn(3, ':');
    let place = match (parts.next().map(str::trim).and_then(|l| l.parse::<usize>().ok()), parts.next().and_then(|c| c.trim().parse::<usize>().ok())) {
        (Some(line), Some(col)) => Some((line, col, parts.next().unwrap_or("").trim())),
        _ => None,
    };
    let what = if bitcode { "bitcode" } else { "textual IR" };
    match place {
        Some((line, col, said)) if !bitcode => {
            let said = said.strip_prefix("error:").unwrap_or(said).trim();
            Diagnostic::new(Code::IrUnreadable, crate::diag::span_at(text, line, col), format!("the input is not LLVM {what} that LLVM 22 can read: {said}")).with_primary_message(said.to_string())
        }
        _ => {
            let said = rest.trim().strip_prefix("error:").unwrap_or(rest).trim();
            let said = if said.is_empty() { "LLVM gave no reason" } else { said };
            Diagnostic::new(Code::IrUnreadable, Span::default(), format!("the input is not LLVM {what} that LLVM 22 can read: {said}"))
                .with_primary_message(format!("this {what}"))
                .with_note("cdpc reads textual IR (`.ll`) and bitcode (`.bc`) of LLVM 22 or older")
        }
    }
}

/// The span of the first line of `text` that holds `needle` (trimmed), if any.
fn find_line(text: &str, needle: &str) -> Option<Span> {
    if needle.is_empty() {
        return None;
    }
    let at = text.find(needle)?;
    Some(Span::new(at, at + needle.len()))
}

/// Every rule of the contract the module breaks for `target`, and `W1016` for a whole program
/// (`whole_program`, not `-dc`) without a kernel. Gives the module NVPTX's triple and data
/// layout (`tm`'s) when they are acceptable.
pub(crate) fn check(module: &Module<'_>, target: &Target, whole_program: bool, tm: &TargetMachine, shown: &SourceText) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    found.extend(triple(module, target.address_size, &shown.text));
    found.extend(data_layout(module, tm, &shown.text));
    if found.iter().any(Diagnostic::is_error) {
        return found;
    }
    found.extend(symbol_names(module, &shown.text));
    found.extend(function_data(module, &shown.text));
    found.extend(foreign_intrinsics(module, &shown.text));
    found.extend(crate::pipeline::wide_atomics::refused(module, target.sm, shown));
    found.extend(thread_locals(module, &shown.text));
    found.extend(byval_mismatches(module, shown));
    if found.iter().any(Diagnostic::is_error) {
        return found;
    }
    back::configure_module(module, tm);
    annotated_kernels(module);
    found.extend(entry_point_uses(module, shown));
    if found.iter().any(Diagnostic::is_error) {
        return found;
    }
    found.extend(written_after_launch(module, shown));
    let kernels = module.get_functions().filter(|f| f.get_call_conventions() == PTX_KERNEL_CALL_CONV && f.count_basic_blocks() > 0).count();
    if kernels == 0 && whole_program {
        let span = line_with(&shown.text, "define").unwrap_or_default();
        let d = Diagnostic::new(Code::IrNoKernel, span, "the module defines no kernel: the cubin will have nothing to launch")
            .with_primary_message("no function here is a kernel")
            .with_note("a kernel is a function defined with the `ptx_kernel` calling convention (`define ptx_kernel void @k(...)`), or one that `!nvvm.annotations` marks `!\"kernel\", i32 1`")
            .with_note("compile with `-dc` when the module is a library of device functions for a link");
        found.push(d);
    }
    found
}

/// `E1017` for each function or global variable whose name PTX cannot spell: NVPTX renames
/// `.` and `@` (and gives unnamed ones names), but stops the process on anything else.
fn symbol_names(module: &Module<'_>, text: &str) -> Vec<Diagnostic> {
    let spellable = |name: &str| name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | '@'));
    let functions = module.get_functions().map(|f| f.get_name().to_string_lossy().into_owned());
    let globals = module.get_globals().map(|g| g.get_name().to_string_lossy().into_owned());
    functions
        .chain(globals)
        .filter(|name| !spellable(name))
        .map(|name| {
            let quoted = format!("@\"{}\"", name.escape_default());
            let span = text.find(&format!("@\"{name}\"")).map(|at| Span::new(at, at + name.len() + 3)).unwrap_or_default();
            Diagnostic::new(Code::IrSymbolName, span, format!("the symbol {quoted} has characters PTX cannot spell"))
                .with_primary_message("this name")
                .with_note("a PTX identifier has letters, digits, `_` and `$` (cdpc also takes `.` and `@`, which NVPTX renames); rename the function or variable")
        })
        .collect()
}

/// The prefixes of LLVM's target-specific intrinsics (`llvm.x86.rdtsc`), NVPTX's own
/// (`llvm.nvvm.`) aside: LLVM 22's `Intrinsics*.td` target prefixes.
const OTHER_TARGETS: &[&str] = &["aarch64", "amdgcn", "arm", "bpf", "dx", "hexagon", "loongarch", "mips", "ppc", "r600", "riscv", "s390", "spv", "ve", "wasm", "x86", "xcore"];

/// `E1012` for each intrinsic of another target that the module calls (`llvm.x86.rdtsc`):
/// NVPTX cannot select it, and LLVM stopped the process on it ("Cannot select: intrinsic",
/// status 134). Also for each `llvm.*` function the module calls that LLVM 22 does not know as
/// an intrinsic (one of a newer LLVM, or a name made up): LLVM's verifier lets such a
/// declaration pass, and NVPTX writes a call of an external function of that name, which ptxas
/// cannot parse (`.extern .func ... llvm.nvvm.test.anytype...`), so the compilation would end
/// in ptxas's syntax error about PTX the user never wrote.
fn foreign_intrinsics(module: &Module<'_>, text: &str) -> Vec<Diagnostic> {
    module
        .get_functions()
        .filter(|f| f.count_basic_blocks() == 0 && f.as_global_value().as_pointer_value().get_first_use().is_some())
        .filter_map(|f| {
            let name = name_of(f);
            let target = name.strip_prefix("llvm.")?.split('.').next()?.to_string();
            let span = crate::pipeline::location::declare_line(text, &name).unwrap_or_default();
            if OTHER_TARGETS.contains(&target.as_str()) {
                return Some(
                    Diagnostic::new(Code::IrInvalid, span, format!("the module calls `{name}`, an intrinsic of the {target} target, which NVPTX cannot compile"))
                        .with_primary_message("declared here")
                        .with_note("device code may call LLVM's target-independent intrinsics and NVPTX's own (`llvm.nvvm.*`); write the operation with those, or leave it to the host side"),
                );
            }
            if f.get_intrinsic_id() != 0 {
                return None;
            }
            Some(
                Diagnostic::new(Code::IrInvalid, span, format!("the module calls `{name}`, which is no intrinsic LLVM 22 knows"))
                    .with_primary_message("declared here")
                    .with_note("names that start with `llvm.` are LLVM's intrinsics; one of a newer LLVM, or a misspelt one, cannot be compiled: use an intrinsic of LLVM 22, or name the function without the `llvm.` prefix and define it"),
            )
        })
        .collect()
}

/// `E1012` for each `thread_local` global variable: PTX has no thread-local storage, and NVPTX
/// stopped on an address of one ("Cannot select: GlobalTLSAddress").
fn thread_locals(module: &Module<'_>, text: &str) -> Vec<Diagnostic> {
    module
        .get_globals()
        .filter(|g| g.is_thread_local())
        .map(|g| {
            let name = g.get_name().to_string_lossy().into_owned();
            let span = [format!("@{name} ="), format!("@\"{name}\" =")].iter().find_map(|head| line_with(text, head)).unwrap_or_default();
            Diagnostic::new(Code::IrInvalid, span, format!("the global variable `@{name}` is `thread_local`, which PTX has no storage for"))
                .with_primary_message("declared here")
                .with_note("every thread of a grid has its own local memory (an `alloca`, `addrspace(5)`) and every block its `__shared__` memory (`addrspace(3)`); a variable of each thread's own is a local of the kernel, passed down")
        })
        .collect()
}

/// `E1012` for each argument of a direct call that is `byval` where the callee's parameter is
/// not, or is not where it is, or is `byval` of another type. LLVM's verifier lets a call's
/// parameter attributes differ from its callee's, but NVPTX declares the callee's parameters
/// from the function and passes the arguments as the call says: a struct copied into the
/// parameter space for a parameter declared as a pointer, which ptxas refused ("Type of
/// argument does not match formal parameter").
fn byval_mismatches(module: &Module<'_>, shown: &SourceText) -> Vec<Diagnostic> {
    use inkwell::attributes::{Attribute, AttributeLoc};
    let byval = Attribute::get_named_enum_kind_id("byval");
    let type_of = |a: Option<Attribute>| a.filter(|a| a.is_type()).map(|a| a.get_type_value().print_to_string().to_string());
    let mut found = Vec::new();
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            let mut next = block.get_first_instruction();
            while let Some(inst) = next {
                next = inst.get_next_instruction();
                if inst.get_opcode() != InstructionOpcode::Call {
                    continue;
                }
                let Ok(call) = inkwell::values::CallSiteValue::try_from(inst) else { continue };
                let Some(callee) = call.get_called_fn_value() else { continue };
                for i in 0..call.count_arguments().min(callee.count_params()) {
                    let passed = type_of(call.get_enum_attribute(AttributeLoc::Param(i), byval));
                    let taken = type_of(callee.get_enum_attribute(AttributeLoc::Param(i), byval));
                    if passed == taken {
                        continue;
                    }
                    // A named struct prints as `%s = type { ... }`: its name is what the call shows.
                    let show = |t: &Option<String>| t.as_ref().map_or("a plain pointer".to_string(), |t| format!("`byval({})`", t.split(" = type ").next().unwrap_or(t)));
                    let callee_name = name_of(callee);
                    let d = Diagnostic::new(
                        Code::IrInvalid,
                        Span::default(),
                        format!("argument {} of this call of `@{callee_name}` is passed as {}, but `@{callee_name}` takes it as {}", i + 1, show(&passed), show(&taken)),
                    )
                    .with_primary_message("this call")
                    .with_note("PTX passes a `byval` argument as a copy of its bytes and a pointer as an address: the call's `byval` attribute and the callee's parameter must agree");
                    found.push(shown.place(d, inst, &name_of(function)));
                }
            }
        }
    }
    found
}

/// `E1019` for each function with prefix or prologue data (`define ... prefix`/`prologue`):
/// PTX has no place for data before or at the start of a function's code, and LLVM 22's NVPTX
/// printer recursed without end on a function whose prologue named the function itself (found
/// by the IR fuzz smoke test, seed 116).
fn function_data(module: &Module<'_>, text: &str) -> Vec<Diagnostic> {
    use inkwell::llvm_sys::core::{LLVMHasPrefixData, LLVMHasPrologueData};
    use inkwell::values::AsValueRef;
    module
        .get_functions()
        // SAFETY: queries of a live function.
        .filter_map(|f| {
            let (prefix, prologue) = unsafe { (LLVMHasPrefixData(f.as_value_ref()) != 0, LLVMHasPrologueData(f.as_value_ref()) != 0) };
            let what = match (prefix, prologue) {
                (false, false) => return None,
                (true, false) => "prefix data",
                (false, true) => "prologue data",
                (true, true) => "prefix and prologue data",
            };
            let name = name_of(f);
            let span = crate::pipeline::location::define_line(text, &name).unwrap_or_default();
            Some(
                Diagnostic::new(Code::IrFunctionData, span, format!("the function `@{name}` has {what}, which PTX cannot hold"))
                    .with_primary_message(format!("{what} here"))
                    .with_note("PTX has no data before or at the start of a function's code; remove `prefix` and `prologue` from the function's definition"),
            )
        })
        .collect()
}

/// `E1013` unless the triple is the target's or empty (then the target's).
fn triple(module: &Module<'_>, address_size: AddressSize, text: &str) -> Option<Diagnostic> {
    let triple = module.get_triple();
    let triple = triple.as_str().to_string_lossy();
    let (wanted, other, flag) = match address_size {
        AddressSize::Bits64 => (TRIPLE_64, TRIPLE_32, "`--address-size 32` (PTX only)"),
        AddressSize::Bits32 => (TRIPLE_32, TRIPLE_64, "`--address-size 64` (the default)"),
    };
    if triple.is_empty() || triple == wanted {
        return None;
    }
    let mut d =
        Diagnostic::new(Code::IrWrongTriple, Span::default(), format!("the module's target triple is `{triple}`; this compilation takes `{wanted}`")).with_primary_message("the module's triple");
    d = if triple == other {
        d.with_note(format!("a `{other}` module is compiled with {flag}"))
    } else {
        d.with_note(format!("cdpc compiles device code for NVPTX: write `target triple = \"{wanted}\"` (or none) in the module"))
    };
    d.labels[0].span = line_with(text, "target triple").unwrap_or_default();
    Some(d)
}

/// The span of the first line of `text` that starts with `prefix` (after blanks).
fn line_with(text: &str, prefix: &str) -> Option<Span> {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end();
        let blank = body.len() - body.trim_start().len();
        if body.trim_start().starts_with(prefix) {
            return Some(Span::new(start + blank, start + body.len()));
        }
        start += line.len();
    }
    None
}

/// The types whose layout must be NVPTX's: every scalar and pointer a kernel's code or
/// parameters use, and the short vectors of NVPTX's vector loads.
fn layout_probes<'ctx>(context: inkwell::context::ContextRef<'ctx>) -> Vec<(String, AnyTypeEnum<'ctx>)> {
    let mut probes: Vec<(String, AnyTypeEnum)> = Vec::new();
    let ints = [context.bool_type(), context.i8_type(), context.i16_type(), context.i32_type(), context.i64_type()];
    for int in ints {
        probes.push((format!("i{}", int.get_bit_width()), int.as_any_type_enum()));
    }
    probes.push(("half".into(), context.f16_type().as_any_type_enum()));
    probes.push(("float".into(), context.f32_type().as_any_type_enum()));
    probes.push(("double".into(), context.f64_type().as_any_type_enum()));
    for space in [0u16, 1, 3, 4, 5] {
        let name = if space == 0 { "ptr".to_string() } else { format!("ptr addrspace({space})") };
        probes.push((name, context.ptr_type(AddressSpace::from(space)).as_any_type_enum()));
    }
    probes.push(("<2 x i16>".into(), context.i16_type().vec_type(2).as_any_type_enum()));
    probes.push(("<2 x i32>".into(), context.i32_type().vec_type(2).as_any_type_enum()));
    probes.push(("<4 x i32>".into(), context.i32_type().vec_type(4).as_any_type_enum()));
    probes.push(("<2 x float>".into(), context.f32_type().vec_type(2).as_any_type_enum()));
    probes.push(("<4 x float>".into(), context.f32_type().vec_type(4).as_any_type_enum()));
    probes.push(("<2 x double>".into(), context.f64_type().vec_type(2).as_any_type_enum()));
    probes
}

/// `E1014` unless the module's data layout is empty or lays out every probe type as NVPTX's.
fn data_layout(module: &Module<'_>, tm: &TargetMachine, text: &str) -> Option<Diagnostic> {
    let layout = module.get_data_layout().as_str().to_string_lossy().into_owned();
    if layout.is_empty() {
        return None;
    }
    let (ours, theirs) = (tm.get_target_data(), TargetData::create(&layout));
    let mut differences = Vec::new();
    if ours.get_byte_ordering() != theirs.get_byte_ordering() {
        differences.push("byte order: the module's is big-endian, NVPTX is little-endian".to_string());
    }
    for (name, ty) in layout_probes(module.get_context()) {
        let (size, align) = (theirs.get_abi_size(&ty), theirs.get_abi_alignment(&ty));
        let (want_size, want_align) = (ours.get_abi_size(&ty), ours.get_abi_alignment(&ty));
        if (size, align) != (want_size, want_align) {
            differences.push(format!("`{name}`: {size} bytes aligned to {align} in the module, {want_size} aligned to {want_align} for NVPTX"));
        }
    }
    let first = differences.first()?;
    let mut d = Diagnostic::new(Code::IrWrongDataLayout, Span::default(), format!("the module's data layout is not NVPTX's: {first}"))
        .with_primary_message("the module's data layout")
        .with_note(format!("NVPTX's is `{}`; NVVM IR's spelled-out layout is accepted too, and an empty one means NVPTX's", ours.get_data_layout().as_str().to_string_lossy()));
    if differences.len() > 1 {
        d = d.with_note(format!("{} more type{} differ", differences.len() - 1, if differences.len() == 2 { "" } else { "s" }));
    }
    d.labels[0].span = line_with(text, "target datalayout").unwrap_or_default();
    Some(d)
}

/// NVVM IR's way of marking a kernel, `!nvvm.annotations = !{!{ptr @k, !"kernel", i32 1}}`,
/// as the calling convention NVPTX reads (LLVM 22 upgrades most such modules itself when it
/// reads them; this covers the rest).
fn annotated_kernels(module: &Module<'_>) {
    for node in module.get_global_metadata("nvvm.annotations") {
        let values = node.get_node_values().unwrap_or_default();
        let [function, key, value, ..] = values.as_slice() else { continue };
        let is_kernel = matches!(key, BasicMetadataValueEnum::MetadataValue(k) if k.get_string_value() == Some(b"kernel".as_slice()));
        let one = matches!(value, BasicMetadataValueEnum::IntValue(v) if v.get_zero_extended_constant() == Some(1));
        if let (true, true, BasicMetadataValueEnum::PointerValue(p)) = (is_kernel, one, function) {
            let name = p.get_name().to_string_lossy().into_owned();
            if let Some(f) = module.get_function(&name).filter(|f| f.count_basic_blocks() > 0) {
                crate::back::device_launch::mark_kernel(f);
            }
        }
    }
}

pub(crate) fn name_of(f: FunctionValue<'_>) -> String {
    f.get_name().to_string_lossy().into_owned()
}

fn is_dim3(ty: BasicTypeEnum<'_>) -> bool {
    match ty {
        BasicTypeEnum::PointerType(_) => true,
        // The literal type or a named one of the same fields (the launch pipeline rewrites a
        // named one to the literal type first: `launch::literal_dims`).
        BasicTypeEnum::StructType(s) => s.get_field_types().len() == 3 && s.get_field_types().iter().all(|f| f.is_int_type() && f.into_int_type().get_bit_width() == 32),
        _ => false,
    }
}

/// Why a call of a launch entry point does not have the contract's argument types, if it
/// does not: `ptr (int, int)` for a buffer, `i32 (ptr, ptr, dim3, dim3, i32, ptr)` for a launch.
fn call_mismatch(call: InstructionValue<'_>, launch: bool) -> Option<String> {
    let args: Vec<BasicTypeEnum> = (0..call.get_num_operands().saturating_sub(1)).filter_map(|i| operand(call, i)).map(|v| v.get_type()).collect();
    let returns = call.get_type();
    if launch {
        let fits = args.len() == 6
            && args[0].is_pointer_type()
            && args[1].is_pointer_type()
            && is_dim3(args[2])
            && is_dim3(args[3])
            && args[4].is_int_type()
            && args[4].into_int_type().get_bit_width() == 32
            && (args[5].is_pointer_type() || args[5].is_int_type())
            && matches!(returns, AnyTypeEnum::IntType(t) if t.get_bit_width() == 32);
        (!fits).then(|| "a launch is `i32 (ptr kernel, ptr buffer, dim3 grid, dim3 block, i32 shmem, ptr stream)`, a dim3 as `{ i32, i32, i32 }` (literal or a named struct of those fields) or a pointer to one".to_string())
    } else {
        let fits = args.len() == 2 && args.iter().all(|a| a.is_int_type()) && returns.is_pointer_type();
        (!fits).then(|| "a parameter buffer is `ptr (size_t alignment, size_t size)`".to_string())
    }
}

/// `E1010` for each use of a launch entry point that is not a direct call with the contract's
/// types: the launch pipeline could not see or lower it.
fn entry_point_uses(module: &Module<'_>, shown: &SourceText) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    for (names, launch) in [(GET_PARAMETER_BUFFER, false), (LAUNCH_DEVICE, true)] {
        for name in names {
            let Some(f) = module.get_function(name) else { continue };
            let mut next = f.as_global_value().as_pointer_value().get_first_use();
            while let Some(u) = next {
                next = u.get_next_use();
                let Some(user) = user_instruction(u) else {
                    let d = Diagnostic::new(Code::LaunchNotRecognised, Span::default(), format!("`{name}` is used in a constant, not called"));
                    found.push(d.with_note("the launch entry points may only be called directly"));
                    continue;
                };
                let function = user.get_parent().and_then(|b| b.get_parent()).map(name_of).unwrap_or_default();
                let called = user.get_opcode() == InstructionOpcode::Call && operand(user, user.get_num_operands() - 1).is_some_and(|c| c.as_value_ref() == f.as_value_ref());
                let problem = if called { call_mismatch(user, launch) } else { Some("the launch entry points may only be called directly".to_string()) };
                if let Some(note) = problem {
                    let what = if called { format!("this call of `{name}` does not have the documented argument types") } else { format!("`{name}` is used other than called") };
                    let d = Diagnostic::new(Code::LaunchNotRecognised, Span::default(), what).with_primary_message("here").with_note(note);
                    found.push(shown.place(d, user, &function));
                }
            }
        }
    }
    found
}

/// Whether `inst` writes through `buffer` or an address inside it: a store into it, or a
/// memcpy, memmove or memset whose destination it is.
fn writes_into(inst: InstructionValue<'_>, inside: &HashSet<LLVMValueRef>) -> bool {
    let is_inside = |v: Option<BasicValueEnum<'_>>| v.is_some_and(|v| inside.contains(&v.as_value_ref()));
    match inst.get_opcode() {
        InstructionOpcode::Store => is_inside(operand(inst, 1)),
        InstructionOpcode::Call => {
            let callee = operand(inst, inst.get_num_operands() - 1).map(|c| c.get_name().to_string_lossy().into_owned()).unwrap_or_default();
            ["llvm.memcpy", "llvm.memmove", "llvm.memset"].iter().any(|p| callee.starts_with(p)) && is_inside(operand(inst, 0))
        }
        _ => false,
    }
}

/// The buffer and every address computed from it (GEPs of GEPs).
fn addresses_inside(buffer: InstructionValue<'_>) -> HashSet<LLVMValueRef> {
    let mut inside = HashSet::from([buffer.as_value_ref()]);
    let mut pending = vec![buffer];
    while let Some(value) = pending.pop() {
        let mut next = value.get_first_use();
        while let Some(u) = next {
            next = u.get_next_use();
            if let Some(user) = user_instruction(u) {
                let base = operand(user, 0).is_some_and(|o| o.as_value_ref() == value.as_value_ref());
                if user.get_opcode() == InstructionOpcode::GetElementPtr && base && inside.insert(user.as_value_ref()) {
                    pending.push(user);
                }
            }
        }
    }
    inside
}

/// `E1015` for each launch whose parameter buffer is written on some path after the launch
/// (before that path makes a new buffer): the runtime may already have read it, or (V2) the
/// copy into the runtime's buffer has been made, so the write is lost or races.
fn written_after_launch(module: &Module<'_>, shown: &SourceText) -> Vec<Diagnostic> {
    let (launches, _) = launch::recognise(module, shown);
    let mut found = Vec::new();
    for l in launches {
        let Some(buffer) = l.buffer else { continue };
        let inside = addresses_inside(buffer);
        if let Some(write) = first_write_after(l.call, buffer, &inside) {
            let function = name_of(l.function);
            let d = Diagnostic::new(Code::ParamBufferWrittenAfterLaunch, Span::default(), "the launch's parameter buffer is written after the launch")
                .with_primary_message("this write may happen after the launch")
                .with_note("a parameter buffer belongs to the runtime once it is launched: store every argument before `cudaLaunchDevice`, and get a new buffer for the next launch");
            let mut d = shown.place(d, write, &function);
            if let Some(launched) = shown.label_at(l.call, &function).filter(|at| d.labels.first().is_some_and(|w| w.span != at.span)) {
                d.labels.push(Label { message: "the launch".into(), primary: false, ..launched });
            }
            found.push(d);
        }
    }
    found
}

/// The first write into `inside` reachable from just after `launch` without passing through
/// `buffer`'s call (which would make a new buffer), in a walk of the control-flow graph.
fn first_write_after<'ctx>(launch: InstructionValue<'ctx>, buffer: InstructionValue<'ctx>, inside: &HashSet<LLVMValueRef>) -> Option<InstructionValue<'ctx>> {
    let mut seen = HashSet::new();
    let mut pending = vec![launch.get_next_instruction()];
    while let Some(start) = pending.pop() {
        let mut at = start;
        let mut last = None;
        while let Some(inst) = at {
            if inst == buffer {
                last = None;
                break;
            }
            if writes_into(inst, inside) {
                return Some(inst);
            }
            last = Some(inst);
            at = inst.get_next_instruction();
        }
        let Some(terminator) = last.filter(|t| t.is_terminator()) else { continue };
        for i in 0..terminator.get_num_operands() {
            if let Some(block) = block_operand(terminator, i) {
                if seen.insert(block) {
                    pending.push(block.get_first_instruction());
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
