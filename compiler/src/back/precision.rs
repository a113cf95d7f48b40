//! nvcc's single-precision options on LLVM IR: `-ftz`, `-prec-div`, `-prec-sqrt` and
//! `--use_fast_math` (which is `-ftz=true -prec-div=false -prec-sqrt=false -fmad=true` and the
//! fast math library), for every front end.
//!
//! What nvcc 13.5 writes under each, measured on sm_90 (`compiler/tests/fast_math_ptx.rs`):
//!
//! - `-ftz=true`: every single-precision instruction `.ftz`, libdevice's `__CUDA_FTZ` 1. Here:
//!   the functions' `denormal-fp-math-f32` attribute and the `nvvm-reflect-ftz` module flag
//!   ([`flush_denormals`]; Clang's `-fgpu-flush-denormals-to-zero` does the same).
//! - `-prec-div=false`: `x / y` is `div.full.f32`, `1.0f / y` is `rcp.approx.f32` (only an
//!   exact `1.0` numerator: `-1.0f / y` and `2.0f / y` are `div.full`), a power of two's
//!   reciprocal a multiply as before; `__fdiv_rn` and `__frcp_rn` stay IEEE
//!   ([`divisions_as_nvcc`], after optimisation, on `fdiv` instructions, which those built-ins
//!   are not).
//! - `-prec-sqrt=false`: `sqrtf` and libdevice's functions that take a square root (`hypotf`,
//!   `normf`, ...) `sqrt.approx.f32`, `__fsqrt_rn` still `sqrt.rn.f32`: libdevice answers
//!   `__nvvm_reflect("__CUDA_PREC_SQRT")` with 0 ([`adapt_libdevice`]; LLVM's `NVVMReflect`
//!   reads that answer from a process-wide option, which cdpc sets to nvcc's default, so the
//!   answer is written into libdevice instead).
//! - `--use_fast_math`: the above, every single-precision division `div.approx.ftz.f32` (`x /
//!   4.0f` too, `1.0f / y` `rcp.approx.ftz.f32`), and `sinf`, `cosf`, `tanf`, `sincosf`,
//!   `logf`, `log2f`, `log10f`, `expf`, `exp10f`, `powf` and `tanhf` libdevice's
//!   `__nv_fast_` versions (`sin.approx.ftz.f32`, `tanh.approx.f32`, ...): libdevice's own
//!   functions of those names call the fast ones ([`adapt_libdevice`]; no libdevice function
//!   calls them, so only the program's calls change).
//!
//! The adapted libdevice (`libdevice_variant`, named by the options, the toolkit's libdevice and
//! the copy's format) is what the kernel language links, and Clang gets it as a file beside cdpc's
//! Clang header (the cache's `include/`, or a folder of the process where the cache cannot take
//! it); `clang` itself knows only the path.

use crate::llvm::operand;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, FastMathFlags, FunctionValue, InstructionOpcode, InstructionValue};

/// nvcc's single-precision options beyond `-fmad` ([`super::Fmad`]). The default is nvcc's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatMath {
    /// `-ftz=true`: single-precision denormals flushed to zero.
    pub ftz: bool,
    /// `-prec-div` (true by default): single-precision division and reciprocal IEEE-rounded.
    pub prec_div: bool,
    /// `-prec-sqrt` (true by default): single-precision square root IEEE-rounded.
    pub prec_sqrt: bool,
    /// `--use_fast_math`'s library: the transcendental functions' fast versions, every
    /// single-precision division approximate.
    pub fast_library: bool,
}

impl Default for FloatMath {
    fn default() -> FloatMath {
        FloatMath { ftz: false, prec_div: true, prec_sqrt: true, fast_library: false }
    }
}

/// The version of what [`adapt_libdevice`] writes, part of the name of the copy kept beside
/// cdpc's Clang header ([`libdevice_variant`]): raise it when that changes, so that no copy an
/// earlier build made is used.
pub const LIBDEVICE_VARIANT_FORMAT: u32 = 2;

/// libdevice's functions that `--use_fast_math` replaces by their `__nv_fast_` versions.
pub const FAST_LIBRARY: [&str; 11] = ["sinf", "cosf", "tanf", "sincosf", "logf", "log2f", "log10f", "expf", "exp10f", "powf", "tanhf"];

impl FloatMath {
    /// `--use_fast_math`.
    pub fn fast() -> FloatMath {
        FloatMath { ftz: true, prec_div: false, prec_sqrt: false, fast_library: true }
    }

    /// Whether libdevice itself must change ([`adapt_libdevice`]).
    pub fn changes_libdevice(&self) -> bool {
        !self.prec_sqrt || self.fast_library
    }

    /// A short name of the options that differ from nvcc's defaults, for file names
    /// (`ftz-approxsqrt-fast`); empty for the defaults.
    pub fn tag(&self) -> String {
        let mut parts = Vec::new();
        if self.ftz {
            parts.push("ftz");
        }
        if !self.prec_div {
            parts.push("approxdiv");
        }
        if !self.prec_sqrt {
            parts.push("approxsqrt");
        }
        if self.fast_library {
            parts.push("fast");
        }
        parts.join("-")
    }
}

/// The C string a constant pointer operand names (`ptr @.str`, through constant casts), if any.
fn string_operand(value: inkwell::values::BasicValueEnum<'_>) -> Option<String> {
    use inkwell::llvm_sys::core::{LLVMGetOperand, LLVMIsAConstantExpr};
    let mut v = value.as_value_ref();
    // SAFETY: reading the operands of constant expressions of this module.
    unsafe {
        while !LLVMIsAConstantExpr(v).is_null() {
            v = LLVMGetOperand(v, 0);
        }
    }
    super::c_string(v)
}

/// The calls of `function`.
fn calls_of<'ctx>(function: FunctionValue<'ctx>) -> Vec<InstructionValue<'ctx>> {
    use inkwell::llvm_sys::core::{LLVMGetCalledValue, LLVMGetFirstUse, LLVMGetNextUse, LLVMGetUser, LLVMIsACallInst};
    let mut out = Vec::new();
    // SAFETY: walking the use list of a live function; each user that is a call of it is an
    // instruction of the module.
    unsafe {
        let mut u = LLVMGetFirstUse(function.as_value_ref());
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsACallInst(user).is_null() && LLVMGetCalledValue(user) == function.as_value_ref() {
                out.push(InstructionValue::new(user));
            }
            u = LLVMGetNextUse(u);
        }
    }
    out
}

/// libdevice (`module`, before it is linked) as `math` makes it: `__nvvm_reflect`'s answer for
/// `__CUDA_PREC_SQRT` written in (0 with `-prec-sqrt=false`), and with the fast library each
/// of [`FAST_LIBRARY`]'s `__nv_` functions a call of its `__nv_fast_` version. The defaults
/// change nothing.
pub fn adapt_libdevice(module: &Module<'_>, math: FloatMath) -> Result<(), String> {
    if !math.prec_sqrt {
        if let Some(reflect) = module.get_function("__nvvm_reflect") {
            let zero = module.get_context().i32_type().const_zero();
            for call in calls_of(reflect) {
                let asks = operand(call, 0).and_then(string_operand);
                if asks.as_deref() == Some("__CUDA_PREC_SQRT") {
                    // SAFETY: a call of this module replaced by a constant of its type, then removed.
                    unsafe { inkwell::llvm_sys::core::LLVMReplaceAllUsesWith(call.as_value_ref(), zero.as_value_ref()) };
                    call.erase_from_basic_block();
                }
            }
        }
    }
    if math.fast_library {
        let context = module.get_context();
        let builder = context.create_builder();
        for name in FAST_LIBRARY {
            let (Some(slow), Some(fast)) = (module.get_function(&format!("__nv_{name}")), module.get_function(&format!("__nv_fast_{name}"))) else {
                return Err(format!("libdevice has no __nv_{name} or __nv_fast_{name}"));
            };
            // The slow function is made again with the same type, linkage and attributes and a
            // body that calls the fast one (deleting a function drops its blocks' references to
            // each other first, which deleting its blocks one by one would not).
            if slow.as_global_value().as_pointer_value().get_first_use().is_some() {
                return Err(format!("libdevice calls __nv_{name} itself"));
            }
            let (ty, linkage) = (slow.get_type(), slow.get_linkage());
            let attributes = slow.attributes(inkwell::attributes::AttributeLoc::Function);
            // SAFETY: a function nothing refers to (checked above).
            unsafe { slow.delete() };
            let slow = module.add_function(&format!("__nv_{name}"), ty, Some(linkage));
            for attribute in attributes {
                slow.add_attribute(inkwell::attributes::AttributeLoc::Function, attribute);
            }
            let entry = context.append_basic_block(slow, "entry");
            builder.position_at_end(entry);
            let args: Vec<BasicMetadataValueEnum> = slow.get_param_iter().map(Into::into).collect();
            let call = builder.build_call(fast, &args, "").map_err(|e| e.to_string())?;
            match call.try_as_basic_value().basic() {
                Some(value) => builder.build_return(Some(&value)),
                None => builder.build_return(None),
            }
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// libdevice (`original`) as `math` makes it ([`adapt_libdevice`]:
/// nvcc's `-prec-sqrt=false`, the fast math library), as a file in `dir` (the folder of
/// `clang::additions_header`) named by cdpc's version, the options, the original's path, size and
/// time and the format of the change, written whole and renamed into place when it is missing.
///
/// `dir` is the cache's `include/` when there is a cache, so the copy is a cache file like any
/// other (`clang::cache`, "Damaged entries"): beside it, `<name>.sum` holds the hash of its
/// bytes, and a copy whose bytes do not match (truncated, overwritten, its sum gone) is made
/// again and replaced whole; a compilation never hands Clang a damaged one it could have seen.
/// Where `dir` cannot take the copy (a read-only cache, a full disk), it goes to a folder of
/// this process ([`process_folder`]) and the compilation goes on, as without a cache.
pub fn libdevice_variant(dir: &std::path::Path, original: &std::path::Path, math: FloatMath) -> Result<std::path::PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let meta = std::fs::metadata(original).map_err(|e| format!("{}: {e}", original.display()))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (original, meta.len(), meta.modified().ok(), math.tag(), LIBDEVICE_VARIANT_FORMAT).hash(&mut hasher);
    let name = format!("cdpc-{}-libdevice-{}-{:016x}.bc", env!("CARGO_PKG_VERSION"), math.tag(), hasher.finish());
    let path = dir.join(&name);
    if intact(&path) {
        return Ok(path);
    }
    let context = inkwell::context::Context::create();
    let module = inkwell::module::Module::parse_bitcode_from_path(original, &context).map_err(|e| format!("{}: {e}", original.display()))?;
    adapt_libdevice(&module, math)?;
    let bitcode = module.write_bitcode_to_memory();
    let bytes = bitcode.as_slice();
    if keep(&path, bytes).is_ok() {
        return Ok(path);
    }
    let own = process_folder()?.join(&name);
    if !intact(&own) {
        keep(&own, bytes).map_err(|e| format!("{}: {e}", own.display()))?;
    }
    Ok(own)
}

/// The sum file of a libdevice copy at `path`: `<name>.sum`.
fn sum_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".sum");
    std::path::PathBuf::from(name)
}

/// The hash a copy's sum file holds: of its length and bytes.
fn sum_of(bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("{:016x}\n", hasher.finish())
}

/// Whether the copy at `path` is there and its bytes are the ones its sum file names.
pub(crate) fn intact(path: &std::path::Path) -> bool {
    match (std::fs::read(path), std::fs::read(sum_path(path))) {
        (Ok(bytes), Ok(sum)) => sum == sum_of(&bytes).as_bytes(),
        _ => false,
    }
}

/// Writes a copy and then its sum, each whole and renamed into place (a concurrent
/// compilation writes the same bytes, so any mix of the two is intact).
fn keep(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::toolchain::cleanup::make_dirs(path.parent().unwrap_or(std::path::Path::new(".")))?;
    crate::toolchain::cleanup::write_atomic(path, bytes)?;
    crate::toolchain::cleanup::write_atomic(&sum_path(path), sum_of(bytes).as_bytes())
}

/// A folder of this process for the libdevice copies the cache cannot take: a work folder
/// (`cdpc-work-<pid>-*` in the temporary folder), made on first need and kept while the process
/// runs (Clang reads a copy by its path, later), removed at the process's exit, with the work
/// folders by an interrupt (`toolchain::cleanup`), or, after a SIGKILL, by the next cdpc's
/// sweep of stale work folders.
fn process_folder() -> Result<&'static std::path::Path, String> {
    static FOLDER: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    extern "C" fn remove_at_exit() {
        if let Some(Ok(dir)) = FOLDER.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let made = FOLDER.get_or_init(|| {
        let root = std::env::temp_dir();
        let create = || {
            tempfile::Builder::new()
                .prefix(&crate::toolchain::cleanup::work_dir_prefix())
                .tempdir_in(&root)
                .map_err(|e| crate::toolchain::ToolError::io("creating a folder for libdevice's copy in", &root, e))
        };
        let (dir, tracked) = crate::toolchain::cleanup::tracked(create, |d: &tempfile::TempDir| d.path().to_path_buf()).map_err(|e| e.to_string())?;
        // Recorded for good: the folder lives as long as the process.
        std::mem::forget(tracked);
        // SAFETY: registers a function without arguments that only removes a folder.
        unsafe { libc::atexit(remove_at_exit) };
        Ok(dir.keep())
    });
    made.as_deref().map_err(Clone::clone)
}

/// `-ftz=true` for IR that Clang did not write (cdpc's own front end's, IR input): every
/// defined function flushes single-precision denormals (`denormal-fp-math-f32`, which NVPTX
/// writes as `.ftz`), before optimisation. libdevice's `__nvvm_reflect("__CUDA_FTZ")` reads
/// the module flag `nvvm-reflect-ftz`, which the code linking libdevice sets.
pub fn flush_denormals(module: &Module<'_>) {
    use inkwell::attributes::AttributeLoc;
    let context = module.get_context();
    for function in module.get_functions().filter(|f| f.count_basic_blocks() > 0) {
        function.add_attribute(AttributeLoc::Function, context.create_string_attribute("denormal-fp-math-f32", "preserve-sign,preserve-sign"));
    }
}

/// Single-precision division as nvcc compiles it under `math` (see the module's text), on
/// optimised IR: each `float` `fdiv` made approximate (`afn`: `div.approx`, `rcp.approx` for a
/// numerator of 1) with the fast library; otherwise with `-prec-div=false` a numerator of
/// exactly 1 approximate and any other `llvm.nvvm.div.full` (`.ftz` with `-ftz`); with
/// `-prec-sqrt=false` alone, the reciprocal of an approximate root IEEE
/// ([`reciprocal_of_approximate_root`]). Returns how many divisions changed; a second run
/// changes none (its invariant: no `float` division is left that `math` would write otherwise).
pub fn divisions_as_nvcc(module: &Module<'_>, math: FloatMath) -> usize {
    let ieee = math.prec_div && !math.fast_library;
    if ieee && math.prec_sqrt {
        return 0;
    }
    let float = module.get_context().f32_type();
    let builder = module.get_context().create_builder();
    let mut changed = 0;
    for i in float_divisions(module) {
        // Approximate already (this pass's, or a front end's): nothing to do.
        if i.get_fast_math_flags().is_ok_and(|f| f.contains(FastMathFlags::ApproxFunc)) {
            continue;
        }
        let (Some(x), Some(y)) = (operand(i, 0), operand(i, 1)) else { continue };
        let numerator_is_one = x.into_float_value().get_constant().is_some_and(|(value, _)| value == 1.0);
        if ieee {
            if numerator_is_one && reciprocal_of_approximate_root(y) {
                let name = if math.ftz { "llvm.nvvm.rcp.rn.ftz.f" } else { "llvm.nvvm.rcp.rn.f" };
                let rcp = module.get_function(name).unwrap_or_else(|| module.add_function(name, float.fn_type(&[float.into()], false), None));
                changed += usize::from(replace_with_call(&builder, i, rcp, &[y.into()]));
            }
        } else if math.fast_library || numerator_is_one {
            // `afn`: NVPTX's approximate division and reciprocal.
            let flags = i.get_fast_math_flags().unwrap_or(FastMathFlags::empty()) | FastMathFlags::ApproxFunc;
            changed += usize::from(i.set_fast_math_flags(flags).is_ok());
        } else {
            let name = if math.ftz { "llvm.nvvm.div.full.ftz" } else { "llvm.nvvm.div.full" };
            let full = module.get_function(name).unwrap_or_else(|| module.add_function(name, float.fn_type(&[float.into(), float.into()], false), None));
            changed += usize::from(replace_with_call(&builder, i, full, &[x.into(), y.into()]));
        }
    }
    changed
}

/// The module's `float` `fdiv` instructions (not vectors', not doubles').
fn float_divisions<'ctx>(module: &Module<'ctx>) -> Vec<InstructionValue<'ctx>> {
    let float = module.get_context().f32_type();
    let mut out = Vec::new();
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            let mut next = block.get_first_instruction();
            while let Some(i) = next {
                next = i.get_next_instruction();
                if i.get_opcode() == InstructionOpcode::FDiv && i.get_type() == float.into() {
                    out.push(i);
                }
            }
        }
    }
    out
}

/// Whether `divisor` is an approximate square root (`llvm.nvvm.sqrt.approx.*`), whose
/// reciprocal NVPTX would make one `rsqrt.approx`: nvcc divides under `-prec-sqrt=false` alone
/// (`rcp.rn` of `sqrt.approx`), and NVPTX's IEEE reciprocal intrinsic is not combined.
fn reciprocal_of_approximate_root(divisor: inkwell::values::BasicValueEnum<'_>) -> bool {
    use inkwell::llvm_sys::core::{LLVMGetCalledValue, LLVMGetValueName2, LLVMIsACallInst};
    // SAFETY: reading the callee's name of a call of this module.
    unsafe {
        let d = divisor.as_value_ref();
        if LLVMIsACallInst(d).is_null() {
            return false;
        }
        let mut len = 0;
        let name = LLVMGetValueName2(LLVMGetCalledValue(d), &mut len);
        std::slice::from_raw_parts(name as *const u8, len).starts_with(b"llvm.nvvm.sqrt.approx.")
    }
}

/// `i` replaced by a call of `function` with `args` just before it; whether it was.
fn replace_with_call<'ctx>(builder: &inkwell::builder::Builder<'ctx>, i: InstructionValue<'ctx>, function: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> bool {
    builder.position_before(&i);
    let Some(value) = builder.build_call(function, args, "").ok().and_then(|call| call.try_as_basic_value().basic()) else { return false };
    // SAFETY: an instruction of this module replaced by a value of its type, then removed.
    unsafe { inkwell::llvm_sys::core::LLVMReplaceAllUsesWith(i.as_value_ref(), value.as_value_ref()) };
    i.erase_from_basic_block();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    fn parse<'c>(context: &'c Context, ir: &str) -> Module<'c> {
        let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test");
        context.create_module_from_ir(buffer).expect("valid IR")
    }

    /// What libdevice looks like where it matters: the reflect calls of `__nv_sqrtf`, and a slow
    /// and a fast version of each function of the fast library.
    fn libdevice_like() -> String {
        let mut ir = String::from(
            "@ftz = private unnamed_addr constant [11 x i8] c\"__CUDA_FTZ\\00\"\n\
             @prec = private unnamed_addr constant [17 x i8] c\"__CUDA_PREC_SQRT\\00\"\n\
             declare i32 @__nvvm_reflect(ptr)\n\
             declare float @llvm.nvvm.sqrt.rn.f(float)\n\
             declare float @llvm.nvvm.sqrt.approx.f(float)\n\
             define float @__nv_sqrtf(float %x) {\n\
               %f = call i32 @__nvvm_reflect(ptr @ftz)\n\
               %p = call i32 @__nvvm_reflect(ptr @prec)\n\
               %c = icmp ne i32 %p, 0\n\
               br i1 %c, label %rn, label %approx\n\
             rn:\n  %a = call float @llvm.nvvm.sqrt.rn.f(float %x)\n  ret float %a\n\
             approx:\n  %b = call float @llvm.nvvm.sqrt.approx.f(float %x)\n  ret float %b\n}\n",
        );
        for name in FAST_LIBRARY {
            let (params, args, ret) = match name {
                "sincosf" => ("float %a, ptr %s, ptr %c", "float %a, ptr %s, ptr %c", "void"),
                "powf" => ("float %a, float %b", "float %a, float %b", "float"),
                _ => ("float %a", "float %a", "float"),
            };
            let _ = args;
            let body = if ret == "void" { "ret void".to_string() } else { "ret float %a".to_string() };
            // A loop: blocks that refer to each other, as libdevice's do.
            ir.push_str(&format!(
                "define {ret} @__nv_{name}({params}) {{\nentry:\n  br label %loop\nloop:\n  %i = phi i32 [ 0, %entry ], [ %n, %loop ]\n  %n = add i32 %i, 1\n  %more = icmp ult i32 %n, 4\n  br i1 %more, label %loop, label %done\ndone:\n  %slow = fadd float %a, 1.0\n  {body}\n}}\n"
            ));
            ir.push_str(&format!("define {ret} @__nv_fast_{name}({params}) {{\n  {body}\n}}\n"));
        }
        ir
    }

    #[test]
    fn the_defaults_leave_libdevice_as_it_is() {
        let context = Context::create();
        let module = parse(&context, &libdevice_like());
        let before = module.print_to_string().to_string();
        adapt_libdevice(&module, FloatMath::default()).unwrap();
        assert_eq!(module.print_to_string().to_string(), before);
    }

    #[test]
    fn approximate_roots_answer_prec_sqrt_with_zero_and_leave_ftz_to_the_flag() {
        let context = Context::create();
        let module = parse(&context, &libdevice_like());
        adapt_libdevice(&module, FloatMath { prec_sqrt: false, ..FloatMath::default() }).unwrap();
        module.verify().unwrap();
        let ir = module.print_to_string().to_string();
        assert!(ir.contains("call i32 @__nvvm_reflect(ptr @ftz)"), "{ir}");
        assert!(!ir.contains("@__nvvm_reflect(ptr @prec)") && ir.contains("icmp ne i32 0, 0"), "{ir}");
        // The fast library is another option.
        assert!(ir.contains("%slow = fadd"), "{ir}");
    }

    #[test]
    fn the_fast_library_calls_the_fast_versions() {
        let context = Context::create();
        let module = parse(&context, &libdevice_like());
        adapt_libdevice(&module, FloatMath::fast()).unwrap();
        module.verify().unwrap();
        for name in FAST_LIBRARY {
            let slow = module.get_function(&format!("__nv_{name}")).unwrap();
            let text = inkwell::values::AnyValue::print_to_string(&slow).to_string();
            assert!(text.contains(&format!("call {} @__nv_fast_{name}(", if name == "sincosf" { "void" } else { "float" })) && !text.contains("%slow"), "{text}");
        }
        assert!(!module.print_to_string().to_string().contains("@__nvvm_reflect(ptr @prec)"));
    }

    #[test]
    fn a_libdevice_without_a_fast_version_is_an_error() {
        let context = Context::create();
        let module = parse(&context, "define float @__nv_sinf(float %a) {\n  ret float %a\n}\n");
        let error = adapt_libdevice(&module, FloatMath::fast()).unwrap_err();
        assert!(error.contains("__nv_fast_sinf"), "{error}");
    }

    const DIVISIONS: &str = "declare float @llvm.nvvm.sqrt.approx.f(float)\n\
        define void @k(ptr %o, float %x, float %y, double %d) {\n\
          %q = fdiv float %x, %y\n  store volatile float %q, ptr %o\n\
          %r = fdiv float 1.0, %y\n  store volatile float %r, ptr %o\n\
          %n = fdiv float -1.0, %y\n  store volatile float %n, ptr %o\n\
          %s = call float @llvm.nvvm.sqrt.approx.f(float %x)\n\
          %rs = fdiv float 1.0, %s\n  store volatile float %rs, ptr %o\n\
          %dd = fdiv double %d, %d\n  store volatile double %dd, ptr %o\n\
          ret void\n}\n";

    fn divided(math: FloatMath) -> (usize, String) {
        let context = Context::create();
        let module = parse(&context, DIVISIONS);
        let changed = divisions_as_nvcc(&module, math);
        module.verify().unwrap();
        (changed, module.print_to_string().to_string())
    }

    #[test]
    fn ieee_division_is_left_alone() {
        let (changed, ir) = divided(FloatMath::default());
        assert_eq!(changed, 0);
        assert!(!ir.contains("afn") && !ir.contains("div.full") && !ir.contains("rcp.rn"), "{ir}");
    }

    #[test]
    fn prec_div_false_divides_fully_and_approximates_reciprocals_of_one() {
        let (changed, ir) = divided(FloatMath { prec_div: false, ..FloatMath::default() });
        assert_eq!(changed, 4, "{ir}");
        assert!(ir.contains("call float @llvm.nvvm.div.full(float %x, float %y)"), "{ir}");
        assert!(ir.contains("call float @llvm.nvvm.div.full(float -1.000000e+00, float %y)"), "{ir}");
        assert!(ir.contains("fdiv afn float 1.000000e+00, %y") && ir.contains("fdiv afn float 1.000000e+00, %s"), "{ir}");
        assert!(ir.contains("fdiv double %d, %d"), "{ir}");
        let (_, ftz) = divided(FloatMath { prec_div: false, ftz: true, ..FloatMath::default() });
        assert!(ftz.contains("@llvm.nvvm.div.full.ftz(float %x, float %y)"), "{ftz}");
    }

    #[test]
    fn the_fast_library_approximates_every_single_precision_division() {
        let (changed, ir) = divided(FloatMath::fast());
        assert_eq!(changed, 4, "{ir}");
        assert_eq!(ir.matches("fdiv afn float").count(), 4, "{ir}");
        assert!(!ir.contains("div.full") && ir.contains("fdiv double"), "{ir}");
    }

    #[test]
    fn approximate_roots_alone_keep_their_reciprocal_ieee() {
        let (changed, ir) = divided(FloatMath { prec_sqrt: false, ..FloatMath::default() });
        assert_eq!(changed, 1, "{ir}");
        assert!(ir.contains("call float @llvm.nvvm.rcp.rn.f(float %s)") && ir.contains("fdiv float 1.000000e+00, %y"), "{ir}");
    }
}
