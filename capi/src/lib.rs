//! The C API of cdpc: compile `.cdp` source held in memory to a cubin, an object, PTX or LLVM
//! IR, from C, C++ or Python (ctypes). `include/cdpc.h` is generated from this file by cbindgen
//! (a test checks that the committed header is current).
//!
//! Conventions:
//!
//! - every function returns a [`CdpcStatus`] (or a pointer that is NULL on failure) and never
//!   unwinds into C: panics are caught and reported as [`CdpcStatus::Internal`];
//! - invalid arguments (NULL pointers, source or option text that is not UTF-8, unknown options
//!   or values) give [`CdpcStatus::InvalidArgument`] and a message, never a crash;
//! - ownership is explicit: an options object is freed with [`cdpc_options_free`], a result with
//!   [`cdpc_result_free`], every returned string with [`cdpc_string_free`] and every returned
//!   byte buffer with [`cdpc_bytes_free`];
//! - there is no global state; distinct objects may be used from different threads at once.
//!
//! ```c
//! CdpcOptions *options = cdpc_options_new();
//! cdpc_options_set(options, "emit", "cubin", NULL);
//! CdpcResult *result = NULL;
//! if (cdpc_compile(source, options, &result) == CDPC_STATUS_OK) {
//!     uint8_t *cubin; size_t len;
//!     cdpc_result_output(result, &cubin, &len);
//!     /* ... cuModuleLoadData(&module, cubin) ... */
//!     cdpc_bytes_free(cubin, len);
//! } else {
//!     char *text = cdpc_result_diagnostics_text(result);
//!     fputs(text, stderr);
//!     cdpc_string_free(text);
//! }
//! cdpc_result_free(result);
//! cdpc_options_free(options);
//! ```

use cdpc::driver::{self, option_pairs, CompileError, CompileOptions};
use cdpc::render::{self, Color};
use cdpc::Diagnostic;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// What a call did.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CdpcStatus {
    /// Success.
    Ok = 0,
    /// A NULL pointer, text that is not UTF-8, or an unknown option or value.
    InvalidArgument = 1,
    /// The source has errors: see the result's diagnostics.
    Diagnostics = 2,
    /// ptxas or nvlink is missing or failed: see the result's message.
    Tool = 3,
    /// The options ask for something impossible (a cubin at 32 bits, say).
    Usage = 4,
    /// A bug in cdpc (an LLVM failure on valid input, or a caught panic).
    Internal = 5,
}

/// Compiler options; made by [`cdpc_options_new`], changed by [`cdpc_options_set`], freed by
/// [`cdpc_options_free`].
#[derive(Clone)]
pub struct CdpcOptions {
    options: CompileOptions,
    file_name: String,
    /// `-l` and `-L` of [`cdpc_link_files`].
    link: driver::LinkOptions,
}

/// The outcome of [`cdpc_compile`]: a status, the output on success, diagnostics and a
/// message otherwise. Freed by [`cdpc_result_free`].
pub struct CdpcResult {
    status: CdpcStatus,
    output: Vec<u8>,
    diagnostics: Vec<Diagnostic>,
    message: String,
    source: String,
    file_name: String,
}

fn guard<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// Stores `message` in `*error` (when `error` is not NULL) as a string to free with
/// [`cdpc_string_free`].
unsafe fn set_error(error: *mut *mut c_char, message: &str) {
    if !error.is_null() {
        *error = to_c_string(message);
    }
}

fn to_c_string(s: &str) -> *mut c_char {
    CString::new(s.replace('\0', "\\0")).map(CString::into_raw).unwrap_or(std::ptr::null_mut())
}

unsafe fn utf8<'a>(p: *const c_char, what: &str) -> Result<&'a str, String> {
    if p.is_null() {
        return Err(format!("{what} is NULL"));
    }
    CStr::from_ptr(p).to_str().map_err(|e| format!("{what} is not valid UTF-8 (first bad byte at offset {})", e.valid_up_to()))
}

/// A new options object with cdpc's defaults: a cubin for sm_90, 64-bit, launch ABI v2, `-O3`.
/// NULL only if memory runs out.
#[no_mangle]
pub extern "C" fn cdpc_options_new() -> *mut CdpcOptions {
    guard(std::ptr::null_mut(), || Box::into_raw(Box::new(CdpcOptions { options: CompileOptions::default(), file_name: "input.cdp".into(), link: Default::default() })))
}

/// Frees an options object. NULL is ignored.
///
/// # Safety
/// `options` is NULL or came from [`cdpc_options_new`] and was not freed before.
#[no_mangle]
pub unsafe extern "C" fn cdpc_options_free(options: *mut CdpcOptions) {
    if !options.is_null() {
        guard((), || drop(Box::from_raw(options)));
    }
}

/// Sets one option: the link's `library` and `library-dir` here, the rest through
/// [`option_pairs::set`], the reading the Python bindings and `cdpc-build` share. `file-name`
/// is also the name the result's diagnostics are rendered under.
fn apply(o: &mut CdpcOptions, key: &str, value: &str) -> Result<(), String> {
    match key {
        "library" => o.link.libraries.push(value.to_string()),
        "library-dir" => o.link.library_dirs.push(PathBuf::from(value)),
        _ if option_pairs::KEYS.contains(&key) => {
            option_pairs::set(&mut o.options, key, value)?;
            if key == "file-name" {
                o.file_name = value.to_string();
            }
        }
        _ => return Err(format!("unknown option `{key}`; the options are {}, library, library-dir", option_pairs::KEYS.join(", "))),
    }
    Ok(())
}

/// Sets one option from text, as the `cdpc` command line spells it:
///
/// | key | values |
/// |---|---|
/// | `arch` | `sm_90`, `90`, `compute_90` |
/// | `launch-abi` | `v1`, `v2` |
/// | `default-stream` | `legacy` (or `null`), `per-thread` (nvcc's `--default-stream`: the `_ptsz` entry points) |
/// | `address-size` | `32`, `64` |
/// | `opt-level` | `0` to `3` |
/// | `emit` | `cubin`, `obj`, `ptx`, `llvm-ir`, `host-obj` (an x86-64 object like `nvcc -dc`'s) |
/// | `language` | `cdp` (the kernel language, the default), `cu` (CUDA C++, through Clang), `ir` (LLVM IR text; bitcode through [`cdpc_compile_ir`]), as `-x` |
/// | `cuda-home` | a CUDA toolkit or `pip install --target` folder |
/// | `ptxas-arg`, `nvlink-arg` | one extra argument (repeatable) |
/// | `werror`, `strict-param-limit` | `true`, `false` |
/// | `aggregate-launches` | `off`, `warp`, `block`, `grid` (`-faggregate-launches=`) |
/// | `launch-threshold` | a thread count, `0` by default (`-flaunch-threshold=`) |
/// | `device-malloc-pool` | `true`, `false`, `link` (the default: decided by the device link where launch optimizations are on; docs/DEVICE-MALLOC.md): small device-side allocations from a static pool (`-fdevice-malloc-pool`, `-fno-device-malloc-pool`) |
/// | `legacy-warp-intrinsics` | `true`, `false` (the default): CUDA C++'s warp functions of before CUDA 9 compiled as their `_sync` forms with W0902, not refused (E0903) as nvcc refuses them (`-flegacy-warp-intrinsics`) |
/// | `pass-remarks` | `aggregate` (`-Rpass=aggregate`: remarks R0500/R0501/R0502 among the diagnostics), `malloc-pool` (`-Rpass=malloc-pool`: the device link's R0504), `none` |
/// | `remarks` | `skipped-headers` (`-Rskipped-headers`: R0611 for each host-only header skipped), `all` (`-Rall`: every remark), `none` (the default) |
/// | `deny`, `allow` | diagnostic codes, comma-separated (`W0209`) |
/// | `tool-timeout` | seconds one ptxas or nvlink run may take before it is killed and the compile fails with [`CdpcStatus::Tool`] (`600` by default, `0` for no limit) |
/// | `file-name` | the name diagnostics and `__FILE__` show for the source |
/// | `input-path` | the source's path: `#include "..."` looks beside it (default: the current folder) |
/// | `define` | `NAME` or `NAME=VALUE`, like `-D` (repeatable; `define` and `undefine` apply in order) |
/// | `undefine` | `NAME`, like `-U` (repeatable) |
/// | `include-dir` | a folder for `#include`, like `-I` (repeatable, searched in order) |
/// | `system-include-dir` | a folder for `#include`, like `-isystem` (repeatable, searched in order after the `include-dir` folders) |
/// | `lineinfo` | `true`: line tables (`-lineinfo`) |
/// | `device-debug` | `true`: full DWARF at -O0 (`-G`) |
/// | `separate` | `true`: one of several files (`-dc`): declared but undefined device functions and `extern` variables are left to a link |
/// | `use-fast-math` | `true`, `false` (the default): nvcc's `--use_fast_math` (denormals flushed, approximate division and square root, the fast `sinf`, `expf`, ...) |
/// | `std` | CUDA C++'s dialect, as nvcc's `-std`: `c++03`, `c++11`, `c++14`, `c++17`, `c++20`, `c++23` (default: C++17 with GNU extensions) |
/// | `ftz`, `prec-div`, `prec-sqrt` | `true`, `false`: nvcc's `-ftz`, `-prec-div`, `-prec-sqrt` (after `use-fast-math`, which sets all three, to change one) |
/// | `fmad` | `true` (the default), `false`: nvcc's `-fmad`, a float multiply and add contracted into `fma` |
/// | `host-arg` | one argument for the host side's compiler, as `-Xcompiler` (repeatable) |
/// | `deprecation-warnings` | `true` (the default), `false`: nvcc's `-Wno-deprecated-declarations` |
/// | `disable-warnings` | `true`, `false` (the default): nvcc's `-w`, no warnings, ptxas's and nvlink's included |
/// | `clang` | a Clang 22 program to compile CUDA C++ with, as `--clang` |
/// | `nv-module-id` | nvcc's module id of the translation unit (`--nv-module-id`): internal kernels and variables named as nvcc's host stubs expect |
/// | `list-headers` | `none` (the default), `user`, `all`: which headers a compilation lists (`-MMD`, `-MD`) |
/// | `overwrite` | `compiler-outputs` (the default), `any`: which existing files an output may replace (`--overwrite`) |
/// | `library` | `NAME`: link `libNAME.a` in [`cdpc_link_files`] (`-l`, repeatable) |
/// | `library-dir` | a folder searched for `library` (`-L`, repeatable, in order) |
///
/// Every key but `library` and `library-dir` means what it means to the Python package and the
/// `cdpc-build` crate: the compiler's `cdpc::driver::option_pairs` reads them for all three.
///
/// On failure returns [`CdpcStatus::InvalidArgument`], leaves the options unchanged and, when
/// `error` is not NULL, stores a message there (free it with [`cdpc_string_free`]).
///
/// # Safety
/// `options` is NULL or a live options object; `key` and `value` are NULL or NUL-terminated;
/// `error` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn cdpc_options_set(options: *mut CdpcOptions, key: *const c_char, value: *const c_char, error: *mut *mut c_char) -> CdpcStatus {
    let outcome = guard(Err((CdpcStatus::Internal, "internal error: panic while setting an option".to_string())), || {
        let Some(options) = options.as_mut() else { return Err((CdpcStatus::InvalidArgument, "options is NULL".into())) };
        let key = utf8(key, "the option name").map_err(|e| (CdpcStatus::InvalidArgument, e))?;
        let value = utf8(value, "the option value").map_err(|e| (CdpcStatus::InvalidArgument, e))?;
        let mut updated = options.clone();
        apply(&mut updated, key, value).map_err(|e| (CdpcStatus::InvalidArgument, e))?;
        *options = updated;
        Ok(())
    });
    match outcome {
        Ok(()) => CdpcStatus::Ok,
        Err((status, message)) => {
            set_error(error, &message);
            status
        }
    }
}

fn failed(status: CdpcStatus, message: String) -> CdpcResult {
    CdpcResult { status, output: Vec::new(), diagnostics: Vec::new(), message, source: String::new(), file_name: String::new() }
}

/// Compiles `source` (NUL-terminated UTF-8 `.cdp` text) with `options` (NULL for the defaults)
/// and returns the status. When `result` is not NULL, `*result` receives a result object in
/// every case, also on failure (it then holds the message and any diagnostics); free it with
/// [`cdpc_result_free`]. Nothing is printed.
///
/// # Safety
/// `source` is NULL or NUL-terminated; `options` is NULL or a live options object; `result` is
/// NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn cdpc_compile(source: *const c_char, options: *const CdpcOptions, result: *mut *mut CdpcResult) -> CdpcStatus {
    let outcome = guard(failed(CdpcStatus::Internal, "internal error: the compiler panicked".into()), || {
        if source.is_null() {
            return failed(CdpcStatus::InvalidArgument, "the source is NULL".into());
        }
        let mut defaults = None;
        let options = &with_wheel_tools(options_or_defaults(options, &mut defaults, "input.cdp"));
        // A source that is not UTF-8 is E0008 at the first bad byte, rendered against the
        // source with `?` for the bad bytes, like any other diagnostic.
        let (source, compiled) = match driver::decode_source(CStr::from_ptr(source).to_bytes().to_vec()) {
            Ok(source) => {
                let compiled = driver::compile(&source, &options.options);
                (source, compiled)
            }
            Err(e) => (e.shown, Err(CompileError::Diagnostics(vec![e.diagnostic]))),
        };
        result_of(compiled, source, options)
    });
    let status = outcome.status;
    if !result.is_null() {
        *result = Box::into_raw(Box::new(outcome));
    }
    status
}

/// The result object of a compilation's outcome; `source` is the text its diagnostics are
/// rendered against.
fn result_of(compiled: Result<driver::Compiled, CompileError>, source: String, options: &CdpcOptions) -> CdpcResult {
    let mut r = match compiled {
        Ok(compiled) => CdpcResult { status: CdpcStatus::Ok, output: compiled.output, diagnostics: compiled.warnings, message: String::new(), source: String::new(), file_name: String::new() },
        Err(CompileError::Diagnostics(diagnostics)) => {
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let mut r = failed(CdpcStatus::Diagnostics, String::new());
            r.message = format!("could not compile `{}` due to {errors} error{}", options.file_name, if errors == 1 { "" } else { "s" });
            r.diagnostics = diagnostics;
            r
        }
        Err(e @ CompileError::Tool(_)) => failed(CdpcStatus::Tool, e.to_string()),
        Err(e @ CompileError::Usage(_)) => failed(CdpcStatus::Usage, e.to_string()),
        Err(e @ (CompileError::Io { .. } | CompileError::NotUtf8(_))) => failed(CdpcStatus::Tool, e.to_string()),
        Err(e @ CompileError::Backend(_)) => failed(CdpcStatus::Internal, e.to_string()),
    };
    r.source = source;
    r.file_name = options.file_name.clone();
    r
}

/// The options `options` points to, or the defaults (for an input named `default_name`).
unsafe fn options_or_defaults<'a>(options: *const CdpcOptions, defaults: &'a mut Option<CdpcOptions>, default_name: &str) -> &'a CdpcOptions {
    match options.as_ref() {
        Some(o) => o,
        None => defaults.insert(CdpcOptions { options: CompileOptions::default(), file_name: default_name.into(), link: Default::default() }),
    }
}

/// The file this library was loaded from (`libcdpc_capi.so`, or the Python wheel's extension
/// module `cdpc/_cdpc.abi3.so`, which exports this API too).
fn this_library() -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads the address of a function of this library and fills `info`.
    let found = unsafe { libc::dladdr(this_library as *const std::ffi::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic loader.
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes()));
    path.canonicalize().ok()
}

/// The NVIDIA wheels installed beside the library (`site-packages/nvidia/cu13` when the library
/// is the wheel's `site-packages/cdpc/_cdpc.abi3.so`), when they hold ptxas, nvlink and
/// libcudadevrt.a.
fn wheel_tools() -> Option<PathBuf> {
    let site = this_library()?.parent()?.parent()?.to_path_buf();
    let cu13 = site.join(cdpc::toolchain::WHEEL_SUBDIR);
    ["bin/ptxas", "bin/nvlink", "lib/libcudadevrt.a"].iter().all(|f| cu13.join(f).is_file()).then_some(cu13)
}

/// The options with the tools' folder filled in as the Python package does it: the
/// `cuda-home` option, else `CUDA_HOME`, else the NVIDIA wheels beside the library (a
/// `pip install cdpc`), else the compiler's own search (the project's `.cuda/`, `PATH`).
fn with_wheel_tools(options: &CdpcOptions) -> std::borrow::Cow<'_, CdpcOptions> {
    let cuda_home_set = std::env::var_os("CUDA_HOME").is_some_and(|h| !h.is_empty());
    if options.options.tools.cuda_home.is_some() || cuda_home_set {
        return std::borrow::Cow::Borrowed(options);
    }
    match wheel_tools() {
        Some(dir) => {
            let mut owned = options.clone();
            owned.options.tools.cuda_home = Some(dir);
            std::borrow::Cow::Owned(owned)
        }
        None => std::borrow::Cow::Borrowed(options),
    }
}

/// Compiles LLVM IR another front end wrote, `len` bytes at `data`, textual (`.ll`) or bitcode
/// (`.bc`, told apart by its magic), under the contract of docs/IR-INPUT.md, with `options`
/// (NULL for the defaults; `language` is ignored) and returns the status, as [`cdpc_compile`]
/// does: `*result` (when `result` is not NULL) receives a result object in every case. Textual
/// IR's diagnostics point at its lines (E1011 at LLVM's line and column); bitcode's at its
/// start.
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes; `options` is NULL or a live options
/// object; `result` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn cdpc_compile_ir(data: *const u8, len: usize, options: *const CdpcOptions, result: *mut *mut CdpcResult) -> CdpcStatus {
    let outcome = guard(failed(CdpcStatus::Internal, "internal error: the compiler panicked".into()), || {
        if data.is_null() {
            return failed(CdpcStatus::InvalidArgument, "the IR is NULL".into());
        }
        let mut defaults = None;
        let options = &with_wheel_tools(options_or_defaults(options, &mut defaults, "input.ll"));
        let ir = std::slice::from_raw_parts(data, len);
        result_of(driver::compile_ir(ir, &options.options), cdpc::front::ir::shown_text(ir), options)
    });
    let status = outcome.status;
    if !result.is_null() {
        *result = Box::into_raw(Box::new(outcome));
    }
    status
}

/// Links several files into one cubin, as `cdpc a.cu b.cu x.o -lNAME` does: each source
/// (`.cu`, `.cdp`, LLVM IR `.ll` and `.bc`, anything but `.o`, `.obj`, `.cubin`, `.a`, `.lib`) compiled separately, then
/// nvlink over them, the objects and archives, the options' `library` archives and
/// libcudadevrt. `paths` holds `count` NUL-terminated paths. Like [`cdpc_compile`], `*result`
/// (when `result` is not NULL) receives a result in every case: the cubin, or the diagnostics
/// (a source's errors, rendered against that source; E0800-E0802 of the link, each label in
/// its file).
///
/// # Safety
/// `paths` is NULL or points to `count` pointers, each NULL or NUL-terminated; `options` is
/// NULL or a live options object; `result` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn cdpc_link_files(paths: *const *const c_char, count: usize, options: *const CdpcOptions, result: *mut *mut CdpcResult) -> CdpcStatus {
    let outcome = guard(failed(CdpcStatus::Internal, "internal error: the compiler panicked".into()), || {
        if paths.is_null() || count == 0 {
            return failed(CdpcStatus::InvalidArgument, "no input paths".into());
        }
        let mut inputs = Vec::with_capacity(count);
        for i in 0..count {
            match utf8(*paths.add(i), "an input path") {
                Ok(path) => inputs.push(driver::Input::classify(std::path::Path::new(path))),
                Err(e) => return failed(CdpcStatus::InvalidArgument, e),
            }
        }
        let defaults = CdpcOptions { options: CompileOptions::default(), file_name: "input.cdp".into(), link: Default::default() };
        let options = &with_wheel_tools(options.as_ref().unwrap_or(&defaults));
        match driver::link(&inputs, &options.link, &options.options) {
            Ok(linked) => CdpcResult {
                status: CdpcStatus::Ok,
                output: linked.cubin,
                diagnostics: linked.warnings.into_iter().flat_map(|w| w.warnings).collect(),
                message: String::new(),
                source: String::new(),
                file_name: String::new(),
            },
            Err(driver::BuildError::Source { name, text, error }) => {
                let mut r = match error {
                    CompileError::Diagnostics(d) => {
                        let mut r = failed(CdpcStatus::Diagnostics, format!("could not compile `{name}`"));
                        r.diagnostics = d;
                        r
                    }
                    CompileError::NotUtf8(e) => {
                        let mut r = failed(CdpcStatus::Diagnostics, format!("could not compile `{name}`"));
                        r.diagnostics = vec![e.diagnostic];
                        r
                    }
                    CompileError::Usage(m) => failed(CdpcStatus::Usage, m),
                    CompileError::Backend(e) => failed(CdpcStatus::Internal, e.to_string()),
                    other => failed(CdpcStatus::Tool, other.to_string()),
                };
                r.source = text;
                r.file_name = name;
                r
            }
            Err(driver::BuildError::Link(d)) => {
                let mut r = failed(CdpcStatus::Diagnostics, format!("could not link due to {} error{}", d.len(), if d.len() == 1 { "" } else { "s" }));
                // Render against the file of the first label that has one; every label says its file.
                if let Some(file) = d.iter().flat_map(|d| &d.labels).find_map(|l| l.file.clone()) {
                    r.file_name = file.name.clone();
                    r.source = file.text.clone();
                }
                r.diagnostics = d;
                r
            }
            Err(driver::BuildError::Other(e @ CompileError::Usage(_))) => failed(CdpcStatus::Usage, e.to_string()),
            Err(driver::BuildError::Other(e)) => failed(CdpcStatus::Tool, e.to_string()),
        }
    });
    let status = outcome.status;
    if !result.is_null() {
        *result = Box::into_raw(Box::new(outcome));
    }
    status
}

/// The status of a result ([`CdpcStatus::InvalidArgument`] for NULL).
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_status(result: *const CdpcResult) -> CdpcStatus {
    result.as_ref().map_or(CdpcStatus::InvalidArgument, |r| r.status)
}

/// Copies the output (cubin or object bytes, or PTX or LLVM IR text without a NUL) to a new
/// buffer: `*data` and `*len` receive it; free it with [`cdpc_bytes_free`]. Returns
/// [`CdpcStatus::InvalidArgument`] for NULL arguments, or the result's status when it has no
/// output (then `*data` is NULL and `*len` 0).
///
/// # Safety
/// `result` is NULL or a live result; `data` and `len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_output(result: *const CdpcResult, data: *mut *mut u8, len: *mut usize) -> CdpcStatus {
    let (Some(r), false, false) = (result.as_ref(), data.is_null(), len.is_null()) else {
        return CdpcStatus::InvalidArgument;
    };
    *data = std::ptr::null_mut();
    *len = 0;
    if r.status != CdpcStatus::Ok {
        return r.status;
    }
    guard(CdpcStatus::Internal, || {
        let boxed: Box<[u8]> = r.output.clone().into_boxed_slice();
        *len = boxed.len();
        *data = Box::into_raw(boxed) as *mut u8;
        CdpcStatus::Ok
    })
}

/// The result's message (empty on success), as a new string to free with
/// [`cdpc_string_free`]; NULL for a NULL result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_message(result: *const CdpcResult) -> *mut c_char {
    match result.as_ref() {
        Some(r) => guard(std::ptr::null_mut(), || to_c_string(&r.message)),
        None => std::ptr::null_mut(),
    }
}

/// The number of diagnostics (errors and warnings) of a result; 0 for NULL.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_diagnostic_count(result: *const CdpcResult) -> usize {
    result.as_ref().map_or(0, |r| r.diagnostics.len())
}

/// The diagnostics rendered as text, as `cdpc` prints them (no colour), as a new string to free
/// with [`cdpc_string_free`]; empty when there are none, NULL for a NULL result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_diagnostics_text(result: *const CdpcResult) -> *mut c_char {
    match result.as_ref() {
        Some(r) => guard(std::ptr::null_mut(), || to_c_string(&render::human(&r.diagnostics, &r.file_name, &r.source, Color::Never))),
        None => std::ptr::null_mut(),
    }
}

/// The diagnostics as JSON, one object a line, exactly as `cdpc --error-format json` writes
/// them (code, severity, message, file, labels with byte and line/column ranges, notes), as a
/// new string to free with [`cdpc_string_free`]; empty when there are none, NULL for a NULL
/// result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_diagnostics_json(result: *const CdpcResult) -> *mut c_char {
    match result.as_ref() {
        Some(r) => guard(std::ptr::null_mut(), || to_c_string(&render::json(&r.diagnostics, &r.file_name, &r.source))),
        None => std::ptr::null_mut(),
    }
}

/// Frees a result. NULL is ignored.
///
/// # Safety
/// `result` is NULL or came from [`cdpc_compile`] and was not freed before.
#[no_mangle]
pub unsafe extern "C" fn cdpc_result_free(result: *mut CdpcResult) {
    if !result.is_null() {
        guard((), || drop(Box::from_raw(result)));
    }
}

/// Frees a string returned by this library. NULL is ignored.
///
/// # Safety
/// `s` is NULL or a string from this library that was not freed before.
#[no_mangle]
pub unsafe extern "C" fn cdpc_string_free(s: *mut c_char) {
    if !s.is_null() {
        guard((), || drop(CString::from_raw(s)));
    }
}

/// Frees a byte buffer returned by [`cdpc_result_output`], with the length it came with. NULL is
/// ignored.
///
/// # Safety
/// `data` is NULL or a buffer from [`cdpc_result_output`] of `len` bytes, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cdpc_bytes_free(data: *mut u8, len: usize) {
    if !data.is_null() {
        guard((), || drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(data, len))));
    }
}

/// Stops every compilation of the process for good and removes their work files
/// ([`cdpc::toolchain::interrupt`]): running ptxas and nvlink runs are killed, compilations in
/// progress fail with [`CdpcStatus::Tool`], and so does every later one. Returns how many work
/// folders and temporary files it removed. For a program that stops on SIGINT, SIGTERM or
/// SIGHUP: call it from a thread that waits for the signals (`sigwait`), never from a signal
/// handler (it takes a lock and deletes files), then exit.
#[no_mangle]
pub extern "C" fn cdpc_interrupt() -> usize {
    guard(0, cdpc::toolchain::interrupt)
}

/// The library's version, a static string (do not free).
#[no_mangle]
pub extern "C" fn cdpc_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// The version of this header's ABI: its functions and their signatures, the status values
/// and the ownership rules (who frees what). It grows by one whenever one of them changes
/// incompatibly; adding a function leaves it as it is (look such a function up with `dlsym`).
/// A program compares the loaded library's [`cdpc_abi_version`] with the `CDPC_ABI_VERSION`
/// it was compiled against and refuses a library whose number differs.
pub const CDPC_ABI_VERSION: u32 = 1;

/// The [`CDPC_ABI_VERSION`] the library was built with (see there).
#[no_mangle]
pub extern "C" fn cdpc_abi_version() -> u32 {
    CDPC_ABI_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(options: *mut CdpcOptions, key: &str, value: &str) -> CdpcStatus {
        let (key, value) = (CString::new(key).unwrap(), CString::new(value).unwrap());
        unsafe { cdpc_options_set(options, key.as_ptr(), value.as_ptr(), std::ptr::null_mut()) }
    }

    /// Every key the compiler's pairs read, and the link's, has a row in `cdpc_options_set`'s
    /// table (in the header C programmers read); an unknown key is refused with them all.
    #[test]
    fn every_key_is_documented_and_listed() {
        let header = include_str!("../include/cdpc.h");
        // A row's first cell: "`ptxas-arg`, `nvlink-arg`".
        let first_cells: Vec<&str> = header.lines().filter_map(|l| l.strip_prefix("// | ")).filter_map(|row| row.split(" | ").next()).collect();
        for key in option_pairs::KEYS.iter().chain(&["library", "library-dir"]) {
            assert!(first_cells.iter().any(|cell| cell.split(", ").any(|k| k == format!("`{key}`"))), "`{key}` has no row in cdpc_options_set's table");
        }
        let options = cdpc_options_new();
        let (key, value) = (CString::new("optimize").unwrap(), CString::new("3").unwrap());
        let mut error = std::ptr::null_mut();
        assert_eq!(unsafe { cdpc_options_set(options, key.as_ptr(), value.as_ptr(), &mut error) }, CdpcStatus::InvalidArgument);
        let message = unsafe { CString::from_raw(error) }.into_string().unwrap();
        assert!(message.starts_with("unknown option `optimize`; the options are arch, launch-abi, "), "{message}");
        assert!(message.ends_with(", list-headers, overwrite, library, library-dir"), "{message}");
        unsafe { cdpc_options_free(options) };
    }

    /// `std` and `use-fast-math` reach CUDA C++; a dialect nvcc lacks is refused.
    #[test]
    fn cuda_cxx_options() {
        let options = cdpc_options_new();
        assert_eq!(set(options, "std", "c++99"), CdpcStatus::InvalidArgument);
        assert_eq!(set(options, "use-fast-math", "true"), CdpcStatus::Ok);
        assert_eq!(set(options, "std", "c++20"), CdpcStatus::Ok);
        let o = unsafe { &*options };
        assert_eq!(o.options.cuda_cxx.std, Some(cdpc::front::cuda::CxxStandard::Cxx20));
        assert_eq!(o.options.float_math, cdpc::back::FloatMath { ftz: true, prec_div: false, prec_sqrt: false, fast_library: true });
        unsafe { cdpc_options_free(options) };
    }

    /// `define`, `undefine` and `include-dir` reach the preprocessor, in order.
    #[test]
    fn preprocessor_options() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.h"), "#define FROM_HEADER 3\n").unwrap();
        let options = cdpc_options_new();
        assert_eq!(set(options, "emit", "ptx"), CdpcStatus::Ok);
        assert_eq!(set(options, "define", "N=4"), CdpcStatus::Ok);
        assert_eq!(set(options, "define", "GONE"), CdpcStatus::Ok);
        assert_eq!(set(options, "undefine", "GONE"), CdpcStatus::Ok);
        assert_eq!(set(options, "include-dir", dir.path().to_str().unwrap()), CdpcStatus::Ok);
        assert_eq!(set(options, "define", "=1"), CdpcStatus::InvalidArgument);
        let source = CString::new("#include <n.h>\n#if N != 4 || FROM_HEADER != 3 || defined(GONE)\n#error wrong\n#endif\nextern \"C\" __global__ void k(int *p) { p[0] = N; }\n").unwrap();
        let mut result = std::ptr::null_mut();
        let status = unsafe { cdpc_compile(source.as_ptr(), options, &mut result) };
        let text = unsafe { CString::from_raw(cdpc_result_diagnostics_text(result)) };
        assert_eq!(status, CdpcStatus::Ok, "{text:?}");
        unsafe {
            cdpc_result_free(result);
            cdpc_options_free(options);
        }
    }

    fn output(result: *const CdpcResult) -> Vec<u8> {
        let (mut data, mut len) = (std::ptr::null_mut(), 0);
        assert_eq!(unsafe { cdpc_result_output(result, &mut data, &mut len) }, CdpcStatus::Ok);
        let bytes = unsafe { std::slice::from_raw_parts(data, len) }.to_vec();
        unsafe { cdpc_bytes_free(data, len) };
        bytes
    }

    /// `lineinfo` puts `.loc` lines in the PTX; `separate` leaves an extern declaration alone.
    #[test]
    fn lineinfo_and_separate_options() {
        let options = cdpc_options_new();
        assert_eq!(set(options, "emit", "ptx"), CdpcStatus::Ok);
        assert_eq!(set(options, "lineinfo", "true"), CdpcStatus::Ok);
        assert_eq!(set(options, "separate", "true"), CdpcStatus::Ok);
        assert_eq!(set(options, "lineinfo", "maybe"), CdpcStatus::InvalidArgument);
        let source = CString::new("extern __device__ int counter;\nextern \"C\" __global__ void k(int *p) {\n  p[0] = counter;\n}\n").unwrap();
        let mut result = std::ptr::null_mut();
        assert_eq!(unsafe { cdpc_compile(source.as_ptr(), options, &mut result) }, CdpcStatus::Ok);
        let ptx = String::from_utf8(output(result)).unwrap();
        assert!(ptx.contains(".loc\t1 3 ") && ptx.contains(".extern .global .align 4 .u32 counter;"), "{ptx}");
        unsafe {
            cdpc_result_free(result);
            cdpc_options_free(options);
        }
    }

    /// Several files linked into one cubin; a duplicate definition is E0800 with both files.
    #[test]
    fn link_files_of_several_sources() {
        if cdpc::toolchain::Toolchain::discover(&Default::default()).is_err() {
            println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            CString::new(path.to_str().unwrap()).unwrap()
        };
        let user = write("user.cu", "extern __device__ int counter;\n__device__ int twice(int);\nextern \"C\" __global__ void k(int *p) { p[0] = twice(counter); }\n");
        let lib = write("lib.cu", "__device__ int counter = 2;\n__device__ int twice(int x) { return 2 * x; }\n");
        let again = write("again.cu", "__device__ int counter = 3;\n");
        let mut result = std::ptr::null_mut();
        let paths = [user.as_ptr(), lib.as_ptr()];
        assert_eq!(unsafe { cdpc_link_files(paths.as_ptr(), 2, std::ptr::null(), &mut result) }, CdpcStatus::Ok);
        assert_eq!(&output(result)[..4], b"\x7fELF");
        unsafe { cdpc_result_free(result) };
        let paths = [user.as_ptr(), lib.as_ptr(), again.as_ptr()];
        assert_eq!(unsafe { cdpc_link_files(paths.as_ptr(), 3, std::ptr::null(), &mut result) }, CdpcStatus::Diagnostics);
        let text = unsafe { CString::from_raw(cdpc_result_diagnostics_text(result)) }.into_string().unwrap();
        assert!(text.contains("error[E0800]") && text.contains("lib.cu") && text.contains("again.cu:1:16"), "{text}");
        unsafe { cdpc_result_free(result) };
        assert_eq!(unsafe { cdpc_link_files(std::ptr::null(), 0, std::ptr::null(), &mut result) }, CdpcStatus::InvalidArgument);
        unsafe { cdpc_result_free(result) };
    }

    const IR: &str = "target triple = \"nvptx64-nvidia-cuda\"\ndeclare ptr @cudaGetParameterBuffer(i64, i64)\ndeclare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)\ndefine ptx_kernel void @child(ptr %p) {\n  ret void\n}\ndefine ptx_kernel void @parent(ptr %p) {\n  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)\n  store ptr %p, ptr %buf, align 8\n  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, i32 0, ptr null)\n  ret void\n}\n";

    /// IR as bytes through `cdpc_compile_ir`, and as text through `cdpc_compile` with
    /// `language=ir`; a broken module's diagnostics at its line.
    #[test]
    fn ir_input_through_compile_ir_and_the_language_option() {
        let options = cdpc_options_new();
        assert_eq!(set(options, "emit", "ptx"), CdpcStatus::Ok);
        let mut result = std::ptr::null_mut();
        assert_eq!(unsafe { cdpc_compile_ir(IR.as_ptr(), IR.len(), options, &mut result) }, CdpcStatus::Ok);
        let ptx = String::from_utf8(output(result)).unwrap();
        assert!(ptx.contains(".entry parent(") && ptx.contains("__cudaCDP2LaunchDeviceV2"), "{ptx}");
        unsafe { cdpc_result_free(result) };
        assert_eq!(set(options, "language", "ir"), CdpcStatus::Ok);
        assert_eq!(set(options, "language", "fortran"), CdpcStatus::InvalidArgument);
        let text = CString::new(IR).unwrap();
        assert_eq!(unsafe { cdpc_compile(text.as_ptr(), options, &mut result) }, CdpcStatus::Ok);
        unsafe { cdpc_result_free(result) };
        let broken = IR.replace("store ptr", "stor ptr");
        assert_eq!(unsafe { cdpc_compile_ir(broken.as_ptr(), broken.len(), options, &mut result) }, CdpcStatus::Diagnostics);
        let shown = unsafe { CString::from_raw(cdpc_result_diagnostics_text(result)) }.into_string().unwrap();
        assert!(shown.contains("error[E1011]") && shown.contains(":9:3"), "{shown}");
        unsafe { cdpc_result_free(result) };
        assert_eq!(unsafe { cdpc_compile_ir(std::ptr::null(), 0, options, &mut result) }, CdpcStatus::InvalidArgument);
        unsafe {
            cdpc_result_free(result);
            cdpc_options_free(options);
        }
    }
}
