//! The NVPTX end every front end shares (inkwell over LLVM's NVPTX target): the target machine,
//! LLVM's optimisation pipeline, nvcc's floating-point rules, the device runtime's launch ABI and
//! PTX; and the host side's objects (the kernel language's host object, a device link's
//! registration object).
//!
//! - [`target_machine`] makes the NVPTX target machine, [`configure_module`] gives a module its
//!   triple and data layout, [`optimize`] runs the pipeline cdpc runs and [`write_ptx`] prints
//!   PTX; compilers that build their own LLVM IR with inkwell use these and [`device_launch`],
//!   which declares the device runtime and emits launches.
//! - The kernel language's code generation (`front::cdp::codegen`) builds its module with these;
//!   the launch pipeline's schedule (`pipeline::lower`) optimises every front end's module with
//!   them, the kernel language's through [`optimize_built`].
//!
//! ```
//! use cdpc::back::{configure_module, optimize, target_machine, write_ptx};
//! use cdpc::Target;
//! use inkwell::context::Context;
//!
//! let ctx = Context::create();
//! let module = ctx.create_module("empty");
//! let tm = target_machine(&Target::default(), 3).unwrap();
//! configure_module(&module, &tm);
//! optimize(&module, &tm, 3).unwrap();
//! let ptx = write_ptx(&module, &tm).unwrap();
//! assert!(ptx.contains(".target sm_90"));
//! ```
//!
//! # The files
//!
//! **Where float multiply-adds are fused**: `contract.rs`, after LLVM's pipeline, nvcc's rule of
//! docs/FLOATING-POINT.md as `llvm.fma`, every `contract` flag cleared. **nvcc's single-precision
//! options**: `precision.rs`. `device_launch.rs` writes a launch through the device runtime's
//! entry points (a launch through a pointer to a kernel passes its value as the entry points'
//! kernel operand, `device_launch::build_launch_through`); `split.rs` loads and stores struct
//! values element by element, never as one aggregate access, which NVPTX makes a byte loop from
//! 128 bytes on. `write_ptx` leaves no jump tables in the PTX and tests a small `switch`'s cases
//! in nvcc's order, the last listed falling through (`nvcc_case_order`;
//! `tests/dispatch_oracle.rs` compares the SASS with nvcc's). `debug.rs` says what debug
//! information is asked for and writes `-lineinfo`'s PTX.
//!
//! `llvm_shim.cpp`, built with the Clang shim by `compiler/build.rs`, is what cdpc needs of LLVM's
//! C++ API that its C API lacks: moving a global variable to the end of its module
//! (`move_global_to_end`, with which the names pass and `write_ptx` make the PTX the same on every
//! run); reading IR inside LLVM's crash recovery (`parse_ir`, with which `front::ir` turns
//! bitcode that crashes LLVM's reader into `E1011`, the context leaked); constructors in
//! `.init_array` (`use_init_array`); and pass pipelines and code generation inside the same
//! recovery with LLVM's fatal-error handler (`safely`, whose handler the Clang shim shares).
//! `host_object.rs` writes the kernel language's x86-64 host object (and the object of Clang's
//! host IR), `link_stub.rs` a device link's registration object.

mod contract;
pub(crate) use contract::{contract_as_nvcc, mark_contractable};
mod debug;
pub use debug::{DebugInfo, DebugLevel, Position};
pub mod device_launch;
pub mod host_object;
pub mod link_stub;
pub mod precision;
pub mod safely;
pub(crate) mod split;
pub use precision::FloatMath;

#[cfg(test)]
mod tests;

use crate::target::{AddressSize, Target};
use inkwell::builder::BuilderError;
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine, TargetTriple};
use inkwell::values::FunctionValue;
use inkwell::OptimizationLevel;
use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::Once;

/// How to generate code.
#[derive(Clone, Debug, Default)]
pub struct CodegenOptions {
    /// 0..=3, as `-O`; larger values are treated as 3.
    pub opt_level: u8,
    /// `libdevice.10.bc`, needed only when the program calls math functions.
    pub libdevice: Option<PathBuf>,
    /// `-lineinfo` or `-G`: DWARF for the user's files and lines.
    pub debug: Option<DebugInfo>,
    /// nvcc's `-fmad`: whether a floating-point multiply and an add may become one `fma`.
    pub fmad: Fmad,
    /// nvcc's `-ftz`, `-prec-div`, `-prec-sqrt` and fast math library ([`precision`]).
    pub math: FloatMath,
}

/// nvcc's `-fmad=true|false`. nvcc contracts by default (`fma.rn` for `a * b + c`, rounded
/// once), and programs that compare GPU results exactly depend on getting the same bits (KLAP's
/// BT checks its kernels' float2 results with `!=` against a kernel nvcc compiled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fmad {
    /// Every float add, subtract and multiply is marked `contract` (clang's
    /// `-ffp-contract=fast`, which clang also uses for CUDA); LLVM fuses where it can.
    #[default]
    Contract,
    /// Each operation rounded on its own (`-fmad=false`).
    Separate,
}

/// Internal failures of code generation. User errors are sema's business and never get here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// The generated module failed LLVM's verifier (a bug in this back end).
    Verify(String),
    /// The program uses math functions but libdevice is missing or unreadable.
    Libdevice(String),
    /// LLVM's NVPTX target could not be initialised or could not emit code.
    Target(String),
    /// An inconsistency between the HIR and what the back end expected.
    Internal(String),
    /// [`device_launch::build_device_launch`] was given inconsistent input (an argument count
    /// that differs from the layout's, a builder outside a function, a stream of the wrong type).
    Launch(String),
    /// The PTX would hold bytes that are not UTF-8, which only text the input gives as written
    /// can put there (inline assembly, debug information's file names): the line that holds
    /// the first, lossily. A user's error (`E1018`), not the back end's.
    PtxNotText(String),
    /// LLVM ended its run on the module (a fatal error: an operation NVPTX cannot select, or a
    /// crash inside LLVM), with its reason ([`safely`]). The driver's `E1023`.
    Stopped(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Verify(msg) => write!(f, "internal error: LLVM rejected the generated module: {msg}"),
            BackendError::Libdevice(msg) => write!(f, "{msg}"),
            BackendError::Target(msg) => write!(f, "LLVM NVPTX target: {msg}"),
            BackendError::Internal(msg) => write!(f, "internal code generation error: {msg}"),
            BackendError::Launch(msg) => write!(f, "device launch: {msg}"),
            BackendError::PtxNotText(line) => write!(f, "the PTX would hold bytes that are not UTF-8, in: {line}"),
            BackendError::Stopped(reason) => write!(f, "LLVM stopped: {reason}"),
        }
    }
}

impl std::error::Error for BackendError {}

impl From<BuilderError> for BackendError {
    fn from(e: BuilderError) -> BackendError {
        BackendError::Internal(format!("LLVM builder: {e}"))
    }
}

pub(crate) type R<T> = Result<T, BackendError>;

pub(crate) fn internal<T>(msg: impl Into<String>) -> R<T> {
    Err(BackendError::Internal(msg.into()))
}

/// Which texts [`generate`] should produce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// The LLVM IR after optimisation.
    pub llvm_ir: bool,
    /// The PTX.
    pub ptx: bool,
}

/// How long the two halves of code generation took (`cdpc --time`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BackendTimings {
    /// Building the LLVM module from the HIR (and linking libdevice).
    pub llvm_ir: std::time::Duration,
    /// The launch pipeline's schedule (the launch passes, LLVM's optimisation pipeline) and PTX
    /// emission (or printing the IR).
    pub optimize_and_emit: std::time::Duration,
}

/// What one code generation produced.
#[derive(Clone, Debug, Default)]
pub struct Generated {
    /// Present when [`Outputs::llvm_ir`] asked for it.
    pub llvm_ir: Option<String>,
    /// Present when [`Outputs::ptx`] asked for it.
    pub ptx: Option<String>,
    /// The time of each half.
    pub timings: BackendTimings,
}

/// PTX with `-lineinfo`'s line tables as nvcc writes them: the `.loc` and `.file` directives
/// of the DWARF LLVM printed, without the DWARF sections.
pub fn lineinfo_ptx(ptx: &str) -> String {
    debug::directives_only(ptx)
}

/// PTX assembly for an LLVM module that already has the target machine's triple and data
/// layout ([`configure_module`]) and has been optimised as wanted ([`optimize`]).
///
/// A `switch`, or a chain of `if`s that LLVM made one, becomes compares and branches, never a
/// jump table (`brx.idx` through a table in the constant bank): nvcc writes none, not even for
/// a dense switch of eight cases, and a divergent warp at a `BRX` takes each target in turn
/// anyway (the divergent launch sites of `bench/gpu/launch_sites.cdp`).
///
/// A small `switch` tests its cases in nvcc's order ([`nvcc_case_order`]).
///
/// The lists `@llvm.used` and `@llvm.compiler.used` go last first: NVPTX writes each global
/// after the globals it refers to, in the order of a set keyed by addresses, so a list that
/// came before the variables it names wrote them in an order that changed from run to run.
pub fn write_ptx(module: &Module<'_>, tm: &TargetMachine) -> Result<String, BackendError> {
    for list in ["llvm.used", "llvm.compiler.used"] {
        if let Some(global) = module.get_global(list) {
            move_global_to_end(global);
        }
    }
    let no_jump_tables = module.get_context().create_string_attribute("no-jump-tables", "true");
    for f in module.get_functions().filter(|f| f.count_basic_blocks() > 0) {
        f.add_attribute(inkwell::attributes::AttributeLoc::Function, no_jump_tables);
        nvcc_case_order(f);
    }
    let buffer = safely::emit(module, tm, FileType::Assembly)?;
    String::from_utf8(buffer).map_err(|e| {
        // Only text the input gave as written gets there: inline assembly, debug information's
        // file names. The line that holds the first such byte, with replacement characters for
        // such bytes and escapes for control characters.
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| at + i);
        let line: String = String::from_utf8_lossy(&bytes[start..end]).trim().chars().take(160).collect::<String>().escape_debug().to_string();
        BackendError::PtxNotText(line)
    })
}

extern "C" {
    /// `llvm_shim.cpp`.
    fn cdpc_drop_convergence_control(module: inkwell::llvm_sys::prelude::LLVMModuleRef) -> usize;
    /// `llvm_shim.cpp`.
    fn cdpc_move_global_to_end(global: inkwell::llvm_sys::prelude::LLVMValueRef);
    /// `llvm_shim.cpp`.
    fn cdpc_use_init_array(machine: inkwell::llvm_sys::target_machine::LLVMTargetMachineRef);
    /// `llvm_shim.cpp`.
    fn cdpc_replace_section_bytes(module: inkwell::llvm_sys::prelude::LLVMModuleRef, section: *const std::os::raw::c_char, bytes: *const std::os::raw::c_char, length: usize) -> usize;
    /// `llvm_shim.cpp`.
    fn cdpc_parse_ir_safely(
        context: inkwell::llvm_sys::prelude::LLVMContextRef,
        buffer: inkwell::llvm_sys::prelude::LLVMMemoryBufferRef,
        module: *mut inkwell::llvm_sys::prelude::LLVMModuleRef,
        message: *mut *mut std::os::raw::c_char,
    ) -> std::os::raw::c_int;
}

/// Makes `machine`'s objects list their constructors in `.init_array`, as GCC's and Clang's
/// objects on Linux do; LLVM's default is `.ctors`, whose entries the linker runs in reverse
/// order, so that a `.cu` file's static objects were constructed before its kernels were
/// registered, and a constructor that launches a kernel failed (cms-patatrack's
/// test-dynamic-parallelism: "invalid resource handle" when its library is loaded; nvcc's
/// object registers first).
pub fn use_init_array(machine: &TargetMachine) {
    // SAFETY: the machine is alive for the call; the shim sets one field of its options.
    unsafe { cdpc_use_init_array(machine.as_mut_ptr()) }
}

/// Puts `bytes` in place of the contents of the one global variable of `module` in `section`
/// (a constant byte array): a new variable of their length takes the old one's place in the
/// module's list, its name, attributes and uses, so the module is the one whose variable held
/// `bytes` from the start. Returns how many variables the section had, changing nothing unless
/// it is one.
pub fn replace_section_bytes(module: &inkwell::module::Module<'_>, section: &str, bytes: &[u8]) -> usize {
    let section = std::ffi::CString::new(section).expect("a section name without NUL");
    // SAFETY: the module is alive for the call; the shim reads `length` bytes and the
    // NUL-terminated name, copying both.
    unsafe { cdpc_replace_section_bytes(module.as_mut_ptr(), section.as_ptr(), bytes.as_ptr().cast(), bytes.len()) }
}

/// Why [`parse_ir`] gave no module.
#[derive(Debug)]
pub enum ParseFailure {
    /// LLVM's reader refused the input, with its message.
    Refused(String),
    /// LLVM's reader crashed on it (a malformed bitcode file): the context may be left
    /// half-written, so the caller must not use it again, nor dispose of it (leak it).
    Crashed,
}

/// Parses IR text or bitcode into `context`, as `Context::create_module_from_ir` does, but
/// inside LLVM's crash recovery (`llvm_shim.cpp`): LLVM's bitcode reader is not proof against
/// every malformed file, and input a user hands cdpc must end in a diagnostic, not a crash.
pub fn parse_ir<'ctx>(context: &'ctx inkwell::context::Context, bytes: &[u8], name: &str) -> Result<inkwell::module::Module<'ctx>, ParseFailure> {
    use inkwell::context::AsContextRef;
    let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(bytes, name);
    let mut module = std::ptr::null_mut();
    let mut message = std::ptr::null_mut();
    // SAFETY: the shim takes the buffer (as LLVMParseIRInContext does), hence `forget`; the
    // module it returns belongs to `context`; the message is LLVM's, disposed of once read.
    let status = unsafe {
        let raw = buffer.as_mut_ptr();
        std::mem::forget(buffer);
        cdpc_parse_ir_safely(context.as_ctx_ref(), raw, &mut module, &mut message)
    };
    match status {
        0 => Ok(unsafe { inkwell::module::Module::new(module) }),
        1 => {
            let text = if message.is_null() {
                String::new()
            } else {
                // SAFETY: a C string LLVM allocated, freed here once copied.
                unsafe {
                    let text = std::ffi::CStr::from_ptr(message).to_string_lossy().into_owned();
                    inkwell::llvm_sys::core::LLVMDisposeMessage(message);
                    text
                }
            };
            Err(ParseFailure::Refused(text))
        }
        _ => Err(ParseFailure::Crashed),
    }
}

/// Lays out `function` so that each small `switch` (at most three cases, which SelectionDAG
/// lowers as a chain of compares, not a tree) tests its cases as nvcc does: in the order the
/// source wrote them, each case's lanes branching away but the last case's, which fall
/// through.
///
/// SimplifyCFG makes `if (x == 0) A; else if (x == 1) B;` a `switch` whose cases are listed
/// in the source's order, as a `switch` statement's are. SelectionDAG sorts them by value (by
/// probability first, equal without profile data) and then, when a case other than the last
/// leads to the block laid out next, compares that case last, so that its block falls
/// through: for the chain above, whose A is laid out next, it tests `x == 1` first and lets
/// A's lanes fall through. nvcc tests `x == 0` first and lets B's lanes fall through; with
/// the chain written the other way round (`x == 1` first) it tests `x == 1` first and lets the
/// `x == 0` lanes fall through; and with three cases it tests them in the source's order with
/// the third falling through (SASS of nvcc 13.5's builds of five such kernels, 2026-11-27).
/// A divergent warp runs the two sides in another order then, and with launches on both sides
/// that is the launch tree's order. Measured on the H100 with `samples/lane_sites.cdp`: with LLVM's order the tree never finished below 0.181 ms,
/// with nvcc's it did (0.133-0.140 ms), as nvcc's build does.
///
/// The block of the case listed last is moved right after the switch's block, so that it is
/// the one laid out next: SelectionDAG then compares it last, and the others in the order of
/// their values, which is the source's where the source wrote them in ascending order (always
/// for two cases). Blocks are only moved, never the entry block: the IR means what it meant. A
/// switch with branch weights, or whose last case leads to its default or its own block, is
/// left alone.
fn nvcc_case_order(function: FunctionValue<'_>) {
    use inkwell::basic_block::BasicBlock;
    use inkwell::llvm_sys::core::{LLVMGetMetadata, LLVMGetNumSuccessors, LLVMGetSuccessor};
    use inkwell::values::{AsValueRef, InstructionOpcode};
    let prof = function.get_type().get_context().get_kind_id("prof");
    let entry = function.get_first_basic_block();
    for block in function.get_basic_blocks() {
        let Some(switch) = block.get_terminator().filter(|t| t.get_opcode() == InstructionOpcode::Switch) else { continue };
        let sw = switch.as_value_ref();
        // SAFETY: `sw` is a switch instruction of a live module: successor 0 is its default,
        // successor i > 0 the destination of its i-th case in the order of its list.
        let (cases, weighted) = unsafe { (LLVMGetNumSuccessors(sw) - 1, !LLVMGetMetadata(sw, prof).is_null()) };
        if cases == 0 || cases > 3 || weighted {
            continue;
        }
        let successor = |i| unsafe { BasicBlock::new(LLVMGetSuccessor(sw, i)) };
        let (Some(last), default) = (successor(cases), successor(0)) else { continue };
        if Some(last) == default || last == block || Some(last) == entry || block.get_next_basic_block() == Some(last) {
            continue;
        }
        let _ = last.move_after(block);
    }
}

/// Makes the convergence of `module`'s functions implicit: removes the `convergencectrl`
/// operand bundles and the convergence intrinsics (`llvm.experimental.convergence.*`) that
/// Clang's `-fconvergence-control` and other front ends write. The launch passes add
/// convergent calls of their own (`activemask`, votes, `bar.sync`), which the verifier refuses
/// beside controlled ones ("Entry intrinsic cannot be preceded by a convergent operation");
/// NVPTX reads neither form, and the implicit one is CUDA's model. Returns how many calls changed.
pub fn drop_convergence_control(module: &inkwell::module::Module<'_>) -> usize {
    // SAFETY: a valid module; the shim rewrites calls in place and keeps the module valid.
    unsafe { cdpc_drop_convergence_control(module.as_mut_ptr()) }
}

/// Moves a global variable to the end of its module's list of global variables (LLVM's C API
/// adds and deletes globals but does not move them: `llvm_shim.cpp`); a function's global value
/// stays where it is.
pub fn move_global_to_end(global: inkwell::values::GlobalValue<'_>) {
    use inkwell::values::AsValueRef;
    // SAFETY: a valid global value; the shim moves it only when it is a variable of a module.
    unsafe { cdpc_move_global_to_end(global.as_value_ref()) }
}

/// Marks `global` a managed variable as the NVVM IR specification does (`!nvvm.annotations`,
/// `"managed"`), which NVPTX writes as nvcc does, `.attribute(.managed)`.
pub(crate) fn annotate_managed<'ctx>(module: &inkwell::module::Module<'ctx>, global: inkwell::values::GlobalValue<'ctx>) {
    let ctx = module.get_context();
    let node = ctx.metadata_node(&[global.as_pointer_value().into(), ctx.metadata_string("managed").into(), ctx.i32_type().const_int(1, false).into()]);
    module.add_global_metadata("nvvm.annotations", &node).expect("a named metadata list takes a metadata node");
}

/// Gives `module` the triple and data layout of `tm` (`nvptx64-nvidia-cuda` or
/// `nvptx-nvidia-cuda`), as every module cdpc builds has.
pub fn configure_module(module: &Module<'_>, tm: &TargetMachine) {
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
}

/// Runs LLVM's `default<O{opt_level}>` pipeline (the one `cdpc -O` runs; levels above 3 are 3)
/// and verifies the result.
pub fn optimize(module: &Module<'_>, tm: &TargetMachine, opt_level: u8) -> Result<(), BackendError> {
    let passes = format!("default<O{}>", opt_level.min(3));
    safely::run_passes(module, &passes, tm)?;
    module.verify().map_err(|e| BackendError::Verify(format!("after optimisation: {e}")))
}

pub(crate) fn opt_level(options: &CodegenOptions) -> u8 {
    options.opt_level.min(3)
}

static INIT_NVPTX: Once = Once::new();
static NVCC_REFLECT: Once = Once::new();

/// nvcc's default math for every module this process compiles: libdevice's square roots
/// correctly rounded (`sqrt.rn.f32`), where LLVM 22's `NVVMReflect` answers 0 for
/// `__CUDA_PREC_SQRT` (no module flag says otherwise) and libdevice then takes
/// `sqrt.approx.f32`: `sqrtf(x)` differed from nvcc's in the last bit through both front ends
/// (`compiler/tests/math_ptx.rs`). LLVM reads the option when its reflect pass is made, in
/// cdpc's pipeline and in the Clang linked into cdpc alike, so it is set once per process,
/// before either runs ([`target_machine`] and the driver's Clang path call this); a compilation
/// that needs another answer (`-prec-sqrt=false`) links a libdevice with its answer written in
/// ([`precision::adapt_libdevice`]). The one process-wide LLVM option cdpc sets (a Clang
/// program run as a process gets it as `-mllvm`).
pub fn nvcc_math_defaults() {
    NVCC_REFLECT.call_once(|| {
        let option = std::ffi::CString::new(crate::target::PREC_SQRT_REFLECT).expect("no NUL in the option");
        let args = [c"cdpc".as_ptr(), option.as_ptr()];
        // SAFETY: two NUL-terminated strings that live for the call; LLVM copies what it keeps.
        unsafe { inkwell::llvm_sys::support::LLVMParseCommandLineOptions(args.len() as i32, args.as_ptr(), std::ptr::null()) };
    });
}

/// The NVPTX target machine for `target` (its architecture and address size) at `opt_level`
/// (0 to 3; more is 3). LLVM's NVPTX target is initialised once per process, under a
/// [`Once`], so this may be called from several threads at the same time.
pub fn target_machine(target: &Target, opt_level: u8) -> Result<TargetMachine, BackendError> {
    target_machine_with_features(target, opt_level, "")
}

/// [`target_machine`] with LLVM subtarget features (`+ptx80`).
pub(crate) fn target_machine_with_features(target: &Target, opt_level: u8, features: &str) -> Result<TargetMachine, BackendError> {
    INIT_NVPTX.call_once(|| LlvmTarget::initialize_nvptx(&InitializationConfig::default()));
    nvcc_math_defaults();
    let triple = TargetTriple::create(match target.address_size {
        AddressSize::Bits64 => "nvptx64-nvidia-cuda",
        AddressSize::Bits32 => "nvptx-nvidia-cuda",
    });
    let llvm_target = LlvmTarget::from_triple(&triple).map_err(|e| BackendError::Target(e.to_string()))?;
    let level = match opt_level.min(3) {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    let cpu = target.sm.to_string();
    llvm_target.create_target_machine(&triple, &cpu, features, level, RelocMode::Default, CodeModel::Default).ok_or_else(|| BackendError::Target(format!("cannot create a target machine for {cpu}")))
}

/// The text of a global holding a constant C string (`@.str = ... c"name\00"`), without its
/// final NUL; `None` for any other value. What the passes read of annotations, module ids and
/// libdevice's reflect questions (`pipeline::qualifiers`, `pipeline::host_names`, `precision`).
pub(crate) fn c_string(global: inkwell::llvm_sys::prelude::LLVMValueRef) -> Option<String> {
    use inkwell::llvm_sys::core::{LLVMGetAsString, LLVMGetInitializer, LLVMIsAConstantDataSequential, LLVMIsAGlobalVariable, LLVMIsConstantString};
    // SAFETY: `global` is a live value; every call reads it only, and a null or non-data
    // initializer is checked before it is read as data.
    unsafe {
        if LLVMIsAGlobalVariable(global).is_null() {
            return None;
        }
        let init = LLVMGetInitializer(global);
        if init.is_null() || LLVMIsAConstantDataSequential(init).is_null() || LLVMIsConstantString(init) == 0 {
            return None;
        }
        let mut len = 0usize;
        let data = LLVMGetAsString(init, &mut len);
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len);
        Some(String::from_utf8_lossy(bytes.strip_suffix(&[0]).unwrap_or(bytes)).into_owned())
    }
}

/// The kernel language's optimisation tail, at `opt_level` (0 to 3): `-ftz=true`'s denormal
/// mode, LLVM's pipeline, single-precision division as nvcc writes it under `math`, and nvcc's
/// contraction rule under `-fmad=true`. Run by the launch pipeline's schedule
/// (`pipeline::lower`) after the launch passes, and by code generation without the pipeline
/// (`front::cdp::codegen::generate`). The libdevice functions nobody calls are gone already
/// (code generation's `build_ir`).
pub fn optimize_built(module: &Module<'_>, tm: &TargetMachine, opt_level: u8, math: FloatMath, fmad: Fmad) -> R<()> {
    if math.ftz {
        // Every function, the launch pipeline's included, before LLVM folds any constant.
        precision::flush_denormals(module);
    }
    // The same pipeline embedders run through `optimize`.
    optimize(module, tm, opt_level)?;
    precision::divisions_as_nvcc(module, math);
    if fmad == Fmad::Contract {
        // nvcc's contraction, not LLVM's (contract.rs); every `contract` flag cleared.
        contract::contract_as_nvcc(module)?;
        module.verify().map_err(|e| BackendError::Verify(format!("after contraction: {e}")))?;
    }
    Ok(())
}

/// libdevice at `path` as a module whose function bodies are read only when the link takes
/// them, each definition made `linkonce_odr`: LLVM's linker then links a function of it only
/// where the module (or a function it links) refers to it, as Clang links
/// `-mlink-builtin-bitcode`. Reading all of libdevice's 350-odd bodies took about 45 ms of a
/// compilation that calls one math function (`samples/sqrt_rounding.cdp`'s `llvm-ir` phase,
/// `cdpc --time`, 2026-12-03), and the link copied them all for `globaldce` to delete.
fn read_lazily<'ctx>(context: &'ctx Context, path: &std::path::Path) -> Result<Module<'ctx>, String> {
    use inkwell::llvm_sys::bit_reader::LLVMGetBitcodeModuleInContext2;
    use inkwell::llvm_sys::core::LLVMIsDeclaration;
    use inkwell::values::AsValueRef;
    let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_file(path).map_err(|e| e.to_string())?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: a live context and buffer; on success the module owns the buffer (LLVM's
    // BitReader.h: "Takes ownership of MemBuf if (and only if) the module was read
    // successfully"), so it is forgotten here, and dropped here on failure.
    let failed = unsafe { LLVMGetBitcodeModuleInContext2(context.raw(), buffer.as_mut_ptr(), &mut raw) };
    if failed != 0 || raw.is_null() {
        return Err("not a bitcode file LLVM reads".to_string());
    }
    std::mem::forget(buffer);
    // SAFETY: a module LLVM just made in `context`, owned by nobody else.
    let module = unsafe { Module::new(raw) };
    for f in module.get_functions() {
        // SAFETY: a function of a live module; a body not read yet is not a declaration (which
        // inkwell's `count_basic_blocks` cannot tell: it counts 0 for both).
        let defined = unsafe { LLVMIsDeclaration(f.as_value_ref()) } == 0;
        if defined && f.get_linkage() == Linkage::External {
            f.set_linkage(Linkage::LinkOnceODR);
        }
    }
    Ok(module)
}

/// Links libdevice into `module` and makes all of its symbols internal, so that only the
/// functions we call survive and the PTX exports nothing of it (IR input links it too:
/// `driver::ir::link_libdevice`).
pub(crate) fn link_libdevice<'ctx>(context: &'ctx Context, module: &Module<'ctx>, options: &CodegenOptions, ours: &HashSet<String>) -> R<()> {
    let path = options.libdevice.as_ref().ok_or_else(|| {
        BackendError::Libdevice(
            "this program calls math functions, which need libdevice.10.bc: install the `nvidia-nvvm` \
             wheel (pip install nvidia-nvvm) and pass its nvvm/libdevice/libdevice.10.bc"
                .to_string(),
        )
    })?;
    let cannot_read = |e: String| BackendError::Libdevice(format!("cannot read libdevice at {}: {e}", path.display()));
    // `-prec-sqrt=false` and the fast math library are libdevice's own answers (precision.rs):
    // they change bodies, so they read the whole file; otherwise only the bodies the link
    // takes are read ([`read_lazily`]).
    let adapted = !options.math.prec_sqrt || options.math.fast_library;
    let libdevice = if adapted {
        let libdevice = Module::parse_bitcode_from_path(path, context).map_err(|e| cannot_read(e.to_string()))?;
        precision::adapt_libdevice(&libdevice, options.math).map_err(|e| BackendError::Libdevice(format!("{}: {e}", path.display())))?;
        libdevice
    } else {
        read_lazily(context, path).map_err(cannot_read)?
    };
    // libdevice carries its own triple and layout; adopt ours so the linker does not warn.
    libdevice.set_triple(&module.get_triple());
    libdevice.set_data_layout(&module.get_data_layout());
    module.link_in_module(libdevice).map_err(|e| BackendError::Libdevice(format!("cannot link libdevice from {}: {e}", path.display())))?;
    for f in module.get_functions() {
        let name = f.get_name().to_string_lossy();
        if f.count_basic_blocks() > 0 && !ours.contains(name.as_ref()) {
            f.set_linkage(Linkage::Internal);
            // nvcc contracts libdevice's operations as the program's (contract.rs).
            if options.fmad == Fmad::Contract {
                contract::mark_contractable(f);
            }
        }
    }
    for g in module.get_globals() {
        let name = g.get_name().to_string_lossy();
        // `llvm.used` and its kind are LLVM's own, with appending linkage that must stay.
        if g.get_initializer().is_some() && !ours.contains(name.as_ref()) && !name.starts_with("llvm.") {
            g.set_linkage(Linkage::Internal);
        }
    }
    Ok(())
}
