//! `cdpc._cdpc`, the extension module under the `cdpc` Python package. It is deliberately thin:
//! it turns keyword arguments into [`CompileOptions`], runs one compilation with the GIL
//! released, and returns plain data (dicts, bytes, strings). The Python half (`cdpc/`) owns the
//! public types (`Compiled`, `Diagnostic`, `CompileError`) and finding the NVIDIA wheels.
//!
//! Diagnostics cross the boundary as the JSON lines of [`cdpc::render::json`], the format
//! `cdpc --error-format json` prints, so Python sees exactly what machines see on the command
//! line; the rendered text comes from [`cdpc::render::human`].

use cdpc::driver::{compile_artifacts, CompileError, CompileOptions, WarningPolicy};
use cdpc::render::{self, Color};
use cdpc::signature::{FunctionKind, Signature, ValueKind};
use cdpc::toolchain::ToolSearch;
use cdpc::{AddressSize, Code, LaunchAbi, SmVersion, Target};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::path::PathBuf;

/// The C API (capi/src/lib.rs), compiled into the extension: the extension module exports its
/// `cdpc_*` functions and is the wheel's C library too (`cdpc.get_library()`, docs/EMBEDDING.md),
/// so the wheel holds one copy of LLVM and Clang. python/manylinux/link.py makes the module
/// loadable outside Python.
#[allow(dead_code)]
#[path = "../../capi/src/lib.rs"]
mod capi;
/// The command-line program, compiled into the extension for the `cdpc` console script.
#[allow(dead_code)]
#[path = "../../compiler/src/main.rs"]
mod cli;
// run_cmd.rs (a child of main.rs) names these from the crate root, which main.rs is in the binary.
use cli::{show_tool_runs, ErrorFormat, PreprocessArgs};

fn codes(names: &[String]) -> PyResult<Vec<Code>> {
    names.iter().map(|n| Code::parse(n).ok_or_else(|| PyValueError::new_err(format!("unknown diagnostic code `{n}`")))).collect()
}

fn value<T>(r: Result<T, String>) -> PyResult<T> {
    r.map_err(PyValueError::new_err)
}

fn kind_dict<'py>(py: Python<'py>, kind: &ValueKind) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (name, scalar, is_const) = match kind {
        ValueKind::Void => ("void", None, false),
        ValueKind::Scalar(s) => ("scalar", Some(*s), false),
        ValueKind::Pointer { pointee, is_const } => ("pointer", *pointee, *is_const),
        ValueKind::Handle => ("handle", None, false),
        ValueKind::Dim3 => ("dim3", None, false),
        ValueKind::Aggregate => ("aggregate", None, false),
    };
    d.set_item("kind", name)?;
    d.set_item("dtype", scalar.map(|s| s.numpy_name()))?;
    d.set_item("is_const", is_const)?;
    Ok(d)
}

fn signature_dict<'py>(py: Python<'py>, s: &Signature) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &s.name)?;
    d.set_item("kind", if s.kind == FunctionKind::Kernel { "kernel" } else { "device" })?;
    d.set_item("return_c_type", &s.return_c_type)?;
    d.set_item("return_kind", kind_dict(py, &s.return_kind)?)?;
    d.set_item("param_bytes", s.param_bytes)?;
    let params = PyList::empty(py);
    for p in &s.params {
        let pd = kind_dict(py, &p.kind)?;
        pd.set_item("name", &p.name)?;
        pd.set_item("c_type", &p.c_type)?;
        pd.set_item("size", p.size)?;
        pd.set_item("align", p.align)?;
        pd.set_item("offset", p.offset)?;
        params.append(pd)?;
    }
    d.set_item("params", params)?;
    Ok(d)
}

/// Compiles `source` and returns a dict: on success `ok` is true and it holds `ptx`,
/// `llvm_ir`, `object` and `cubin` (bytes or None), `signatures`, `tool_runs` and the warnings
/// (`diagnostics_json`, `rendered`); on failure `ok` is false, `error_kind` says which
/// (`diagnostics`, `usage`, `tool`, `internal`) and the diagnostics say what.
#[pyfunction]
#[pyo3(signature = (
    source, *, ir, file_name, arch, opt_level, launch_abi, default_stream, address_size, aggregate_launches,
    launch_threshold, device_malloc_pool, pass_remarks, warnings_as_errors, deny, allow, ptxas_args, nvlink_args, cuda_home,
    build_cubin, defines, include_dirs, tool_timeout, debug, separate, use_fast_math, std, legacy_warp_intrinsics
))]
#[allow(clippy::too_many_arguments)]
fn compile<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    ir: bool,
    file_name: &str,
    arch: &str,
    opt_level: u8,
    launch_abi: &str,
    default_stream: &str,
    address_size: u32,
    aggregate_launches: &str,
    launch_threshold: u32,
    device_malloc_pool: bool,
    pass_remarks: bool,
    warnings_as_errors: bool,
    deny: Vec<String>,
    allow: Vec<String>,
    ptxas_args: Vec<String>,
    nvlink_args: Vec<String>,
    cuda_home: Option<PathBuf>,
    build_cubin: bool,
    defines: Vec<(String, Option<String>)>,
    include_dirs: Vec<PathBuf>,
    tool_timeout: Option<f64>,
    debug: &str,
    separate: bool,
    use_fast_math: bool,
    std: Option<String>,
    legacy_warp_intrinsics: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let tool_timeout = match tool_timeout {
        None => cdpc::driver::CompileOptions::default().tool_timeout,
        Some(t) if t.is_finite() && t == 0.0 => None,
        Some(t) if t.is_finite() && t > 0.0 => Some(std::time::Duration::from_secs_f64(t)),
        Some(t) => return Err(PyValueError::new_err(format!("tool_timeout {t} is not a number of seconds (0 for no limit)"))),
    };
    let preprocess = cdpc::preprocess::PreprocessOptions {
        input_name: Some(file_name.to_string()),
        macros: defines
            .into_iter()
            .map(|(name, v)| {
                cdpc::preprocess::MacroOption::Define(match v {
                    Some(v) => format!("{name}={v}"),
                    None => name,
                })
            })
            .collect(),
        include_dirs,
        ..Default::default()
    };
    let address_size = match address_size {
        32 => AddressSize::Bits32,
        64 => AddressSize::Bits64,
        other => return Err(PyValueError::new_err(format!("address size {other} does not exist; use 32 or 64"))),
    };
    let options = CompileOptions {
        target: Target {
            sm: value(arch.parse::<SmVersion>())?,
            address_size,
            launch_abi: value(launch_abi.parse::<LaunchAbi>())?,
            default_stream: value(default_stream.parse::<cdpc::DefaultStream>())?,
        },
        opt_level,
        ptxas_args,
        nvlink_args,
        warnings: WarningPolicy { deny_all: warnings_as_errors, deny: codes(&deny)?, allow: codes(&allow)?, ..Default::default() },
        tools: ToolSearch { cuda_home, ..Default::default() },
        aggregate: value(aggregate_launches.parse())?,
        launch_threshold,
        malloc_pool: device_malloc_pool,
        pass_remarks,
        tool_timeout,
        preprocess,
        debug: debug_level(debug)?,
        separate,
        // The language by the name's extension, as for files: `.cu` is CUDA C++ (Clang's).
        language: (!ir).then(|| cdpc::driver::Language::of_path(std::path::Path::new(file_name))),
        float_math: if use_fast_math { cdpc::back::FloatMath::fast() } else { cdpc::back::FloatMath::default() },
        cuda_cxx: cuda_cxx_options(std)?,
        legacy_warp_intrinsics,
        ..CompileOptions::default()
    };
    // LLVM IR (`ir`) is text or bitcode bytes, rendered against its text (none for bitcode);
    // other sources are text.
    let (bytes, shown) = if ir {
        let bytes: Vec<u8> = match source.extract::<String>() {
            Ok(text) => text.into_bytes(),
            Err(_) => source.extract::<Vec<u8>>()?,
        };
        let shown = cdpc::driver::ir::shown_text(&bytes);
        (bytes, shown)
    } else {
        (Vec::new(), source.extract::<String>()?)
    };
    let source = shown.as_str();
    let result = py.detach(|| if ir { cdpc::driver::compile_ir_artifacts(&bytes, &options, build_cubin) } else { compile_artifacts(source, &options, build_cubin) });
    let d = PyDict::new(py);
    let rendered = |diagnostics: &[cdpc::Diagnostic]| render::human(diagnostics, file_name, source, Color::Never);
    match result {
        Ok(out) => {
            d.set_item("ok", true)?;
            d.set_item("ptx", out.ptx)?;
            d.set_item("llvm_ir", out.llvm_ir)?;
            d.set_item("object", out.object.as_deref().map(|b| PyBytes::new(py, b)))?;
            d.set_item("cubin", out.cubin.as_deref().map(|b| PyBytes::new(py, b)))?;
            let signatures = PyList::empty(py);
            for s in &out.signatures {
                signatures.append(signature_dict(py, s)?)?;
            }
            d.set_item("signatures", signatures)?;
            let runs = PyList::empty(py);
            for run in &out.tool_runs {
                let r = PyDict::new(py);
                r.set_item("tool", &run.tool)?;
                r.set_item("command", &run.command)?;
                r.set_item("stdout", &run.stdout)?;
                r.set_item("stderr", &run.stderr)?;
                runs.append(r)?;
            }
            d.set_item("tool_runs", runs)?;
            d.set_item("diagnostics_json", render::json(&out.warnings, file_name, source))?;
            d.set_item("rendered", rendered(&out.warnings))?;
        }
        Err(CompileError::Diagnostics(diagnostics)) => {
            d.set_item("ok", false)?;
            d.set_item("error_kind", "diagnostics")?;
            d.set_item("diagnostics_json", render::json(&diagnostics, file_name, source))?;
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let summary = format!("error: could not compile `{file_name}` due to {errors} previous error{}\n", if errors == 1 { "" } else { "s" });
            d.set_item("rendered", rendered(&diagnostics) + &summary)?;
        }
        Err(e) => {
            let kind = match e {
                CompileError::Usage(_) => "usage",
                CompileError::Tool(_) => "tool",
                _ => "internal",
            };
            let message = e.to_string();
            d.set_item("ok", false)?;
            d.set_item("error_kind", kind)?;
            d.set_item("diagnostics_json", render::json_failure(file_name, &message))?;
            d.set_item("rendered", format!("error: {message}\n"))?;
        }
    }
    Ok(d)
}

/// CUDA C++'s options from `std` (nvcc's `-std`: `"c++17"`, ...; `None`: cdpc's default).
fn cuda_cxx_options(std: Option<String>) -> PyResult<cdpc::clang::CudaCxxOptions> {
    let std = match std.as_deref() {
        None => None,
        Some(text) => {
            Some(cdpc::clang::CxxStandard::parse(text).ok_or_else(|| PyValueError::new_err(format!("std `{text}` is not one of nvcc's dialects: c++03, c++11, c++14, c++17, c++20 or c++23")))?)
        }
    };
    Ok(cdpc::clang::CudaCxxOptions { std, ..Default::default() })
}

/// `"none"`, `"lineinfo"` (`-lineinfo`) or `"full"` (`-G`).
fn debug_level(text: &str) -> PyResult<Option<cdpc::driver::DebugLevel>> {
    match text {
        "none" => Ok(None),
        "lineinfo" => Ok(Some(cdpc::driver::DebugLevel::LineTables)),
        "full" => Ok(Some(cdpc::driver::DebugLevel::Full)),
        other => Err(PyValueError::new_err(format!("debug `{other}` does not exist; use none, lineinfo or full"))),
    }
}

/// Links several files (sources compiled separately, objects, archives, `libraries`) into
/// one cubin and returns a dict: `ok`, `cubin` (bytes), the warnings or errors
/// (`diagnostics_json`, `rendered`), `error_kind` on failure.
#[pyfunction]
#[pyo3(signature = (paths, *, arch, opt_level, debug, libraries, library_dirs, cuda_home, defines, include_dirs, tool_timeout, launch_abi, aggregate_launches, launch_threshold, device_malloc_pool, use_fast_math, std, legacy_warp_intrinsics))]
#[allow(clippy::too_many_arguments)]
fn link<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    arch: &str,
    opt_level: u8,
    debug: &str,
    libraries: Vec<String>,
    library_dirs: Vec<PathBuf>,
    cuda_home: Option<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    include_dirs: Vec<PathBuf>,
    tool_timeout: Option<f64>,
    launch_abi: &str,
    aggregate_launches: &str,
    launch_threshold: u32,
    device_malloc_pool: bool,
    use_fast_math: bool,
    std: Option<String>,
    legacy_warp_intrinsics: bool,
) -> PyResult<Bound<'py, PyDict>> {
    // What `compile` takes that the sources of a link are compiled with too (the launch
    // pipeline's passes, nvcc's fast math, the C++ dialect), as the command line's link does.
    let mut options = CompileOptions {
        target: Target { sm: value(arch.parse::<SmVersion>())?, launch_abi: value(launch_abi.parse::<LaunchAbi>())?, ..Target::default() },
        opt_level,
        debug: debug_level(debug)?,
        tools: ToolSearch { cuda_home, ..Default::default() },
        aggregate: value(aggregate_launches.parse())?,
        launch_threshold,
        malloc_pool: device_malloc_pool,
        float_math: if use_fast_math { cdpc::back::FloatMath::fast() } else { cdpc::back::FloatMath::default() },
        cuda_cxx: cuda_cxx_options(std)?,
        legacy_warp_intrinsics,
        ..CompileOptions::default()
    };
    options.preprocess.include_dirs = include_dirs;
    options.preprocess.macros = defines
        .into_iter()
        .map(|(name, v)| {
            cdpc::preprocess::MacroOption::Define(match v {
                Some(v) => format!("{name}={v}"),
                None => name,
            })
        })
        .collect();
    match tool_timeout {
        None => {}
        Some(t) if t.is_finite() && t == 0.0 => options.tool_timeout = None,
        Some(t) if t.is_finite() && t > 0.0 => options.tool_timeout = Some(std::time::Duration::from_secs_f64(t)),
        Some(t) => return Err(PyValueError::new_err(format!("tool_timeout {t} is not a number of seconds (0 for no limit)"))),
    }
    let inputs: Vec<cdpc::driver::Input> = paths.iter().map(|p| cdpc::driver::Input::classify(p)).collect();
    let link = cdpc::driver::LinkOptions { libraries, library_dirs };
    let result = py.detach(move || cdpc::driver::link(&inputs, &link, &options));
    let d = PyDict::new(py);
    let render_all = |diagnostics: &[cdpc::Diagnostic], name: &str, text: &str| (render::json(diagnostics, name, text), render::human(diagnostics, name, text, Color::Never));
    match result {
        Ok(linked) => {
            d.set_item("ok", true)?;
            d.set_item("cubin", PyBytes::new(py, &linked.cubin))?;
            let (mut json, mut human) = (String::new(), String::new());
            for w in &linked.warnings {
                let (j, h) = render_all(&w.warnings, &w.name, &w.text);
                json.push_str(&j);
                human.push_str(&h);
            }
            d.set_item("diagnostics_json", json)?;
            d.set_item("rendered", human)?;
        }
        Err(cdpc::driver::BuildError::Source { name, text, error }) => {
            let diagnostics = match error {
                CompileError::Diagnostics(d) => d,
                CompileError::NotUtf8(e) => vec![e.diagnostic],
                other => {
                    let message = other.to_string();
                    d.set_item("ok", false)?;
                    d.set_item("error_kind", if matches!(other, CompileError::Usage(_)) { "usage" } else { "tool" })?;
                    d.set_item("diagnostics_json", render::json_failure(&name, &message))?;
                    d.set_item("rendered", format!("error: {message}\n"))?;
                    return Ok(d);
                }
            };
            let (json, human) = render_all(&diagnostics, &name, &text);
            d.set_item("ok", false)?;
            d.set_item("error_kind", "diagnostics")?;
            d.set_item("diagnostics_json", json)?;
            d.set_item("rendered", human)?;
        }
        Err(cdpc::driver::BuildError::Link(diagnostics)) => {
            let (mut json, mut human) = (String::new(), String::new());
            for diagnostic in &diagnostics {
                let file = diagnostic.labels.iter().find_map(|l| l.file.clone());
                let (name, text) = file.as_deref().map_or(("<link>", ""), |f| (f.name.as_str(), f.text.as_str()));
                let (j, h) = render_all(std::slice::from_ref(diagnostic), name, text);
                json.push_str(&j);
                human.push_str(&h);
            }
            d.set_item("ok", false)?;
            d.set_item("error_kind", "diagnostics")?;
            d.set_item("diagnostics_json", json)?;
            d.set_item("rendered", human)?;
        }
        Err(cdpc::driver::BuildError::Other(e)) => {
            let message = e.to_string();
            d.set_item("ok", false)?;
            d.set_item("error_kind", if matches!(e, CompileError::Usage(_)) { "usage" } else { "tool" })?;
            d.set_item("diagnostics_json", render::json_failure("<link>", &message))?;
            d.set_item("rendered", format!("error: {message}\n"))?;
        }
    }
    Ok(d)
}

/// Runs the `cdpc` command line with `argv` (program name first) and returns its exit status.
/// It prints to the process's stdout and stderr, like the binary.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> i32 {
    let code = py.detach(|| cli::main_with_args(argv));
    (0..=255u8).find(|c| std::process::ExitCode::from(*c) == code).map_or(1, i32::from)
}

/// The `cdpc` binary's signal handling (compiler/src/signals.rs, a module of the binary's
/// `main.rs`, which is `cli` here), for [`cdpc_main`].
use cli::signals;

/// The `cdpc` command, as the binary runs it (signals included), for the release archive's
/// `bin/cdpc` (`cargo xtask dist`), a small program that calls this in the library. Not part of
/// the C API of `cdpc.h`.
///
/// # Safety
/// `argv` points to `argc` NUL-terminated strings, as `main` receives them.
#[no_mangle]
pub unsafe extern "C" fn cdpc_main(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    let args: Vec<String> = (0..usize::try_from(argc).unwrap_or(0)).map(|i| unsafe { std::ffi::CStr::from_ptr(*argv.add(i)) }.to_string_lossy().into_owned()).collect();
    signals::install();
    // As the `cdpc` binary: the cache's headers a compilation misses are made after it.
    cdpc::clang::cache::set_deferred(true);
    let code = cli::main_with_args(args);
    cli::fill_cache();
    signals::settle();
    (0..=255u8).find(|c| std::process::ExitCode::from(*c) == code).map_or(1, std::ffi::c_int::from)
}

/// The extension module.
#[pymodule]
fn _cdpc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(link, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
