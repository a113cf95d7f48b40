//! `cdpc._cdpc`, the extension module under the `cdpc` Python package. It is deliberately thin:
//! it reads the options as the name/value pairs of [`option_pairs`] (the C API's reading, so
//! both take and refuse the same values), runs one compilation with the GIL released, and
//! returns plain data (dicts, bytes, strings). The Python half (`cdpc/`) owns the public types
//! (`Compiled`, `Diagnostic`, `CompileError`), turns its keyword arguments into those pairs and
//! finds the NVIDIA wheels.
//!
//! Diagnostics cross the boundary as the JSON lines of [`cdpc::render::json`], the format
//! `cdpc --error-format json` prints, so Python sees exactly what machines see on the command
//! line; the rendered text comes from [`cdpc::render::human`].

use cdpc::driver::{compile_artifacts, option_pairs, CompileError, CompileOptions};
use cdpc::render::{self, Color};
use cdpc::signature::{FunctionKind, Signature, ValueKind};
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

/// The options `(name, key, value)` say: each `key` and `value` read by [`option_pairs::set`]
/// in order, `name` the keyword argument of the `cdpc` package they come from, which the
/// ValueError of a refused value begins with.
fn options_of(options: &[(String, String, String)]) -> PyResult<CompileOptions> {
    let mut o = CompileOptions::default();
    for (name, key, value) in options {
        option_pairs::set(&mut o, key, value).map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?;
    }
    Ok(o)
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
#[pyo3(signature = (source, *, ir, file_name, build_cubin, options))]
fn compile<'py>(py: Python<'py>, source: &Bound<'py, PyAny>, ir: bool, file_name: &str, build_cubin: bool, options: Vec<(String, String, String)>) -> PyResult<Bound<'py, PyDict>> {
    let mut options = options_of(&options)?;
    option_pairs::set(&mut options, "file-name", file_name).map_err(PyValueError::new_err)?;
    // The language by the name's extension, as for files: `.cu` is CUDA C++ (Clang's).
    options.language = (!ir).then(|| cdpc::driver::Language::of_path(std::path::Path::new(file_name)));
    // LLVM IR (`ir`) is text or bitcode bytes, rendered against its text (none for bitcode);
    // other sources are text.
    let (bytes, shown) = if ir {
        let bytes: Vec<u8> = match source.extract::<String>() {
            Ok(text) => text.into_bytes(),
            Err(_) => source.extract::<Vec<u8>>()?,
        };
        let shown = cdpc::front::ir::shown_text(&bytes);
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

/// Links several files (sources compiled separately, objects, archives, `libraries`) into
/// one cubin and returns a dict: `ok`, `cubin` (bytes), the warnings or errors
/// (`diagnostics_json`, `rendered`), `error_kind` on failure.
#[pyfunction]
#[pyo3(signature = (paths, *, libraries, library_dirs, options))]
fn link<'py>(py: Python<'py>, paths: Vec<PathBuf>, libraries: Vec<String>, library_dirs: Vec<PathBuf>, options: Vec<(String, String, String)>) -> PyResult<Bound<'py, PyDict>> {
    // What the sources of the link are compiled with, as the command line's link compiles them.
    let options = options_of(&options)?;
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
/// A panic is `E1025` with its reproducer and exit status 70, as in the binary
/// (`cdpc::driver::crash`); the signals stay the interpreter's.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> i32 {
    static CRASH_HOOK: std::sync::Once = std::sync::Once::new();
    CRASH_HOOK.call_once(cdpc::driver::crash::install);
    let code = py.detach(|| match std::panic::catch_unwind(|| cli::main_with_args(argv.clone())) {
        Ok(code) => code,
        Err(_) => cli::report_crash(&argv),
    });
    (0..=255u8).find(|c| std::process::ExitCode::from(*c) == code).map_or(1, i32::from)
}

/// The `cdpc` command, as the binary runs it (signals included), for the release archive's
/// `bin/cdpc` (`cargo xtask dist`), a small program that calls this in the library. Not part of
/// the C API of `cdpc.h`.
///
/// # Safety
/// `argv` points to `argc` NUL-terminated strings, as `main` receives them.
#[no_mangle]
pub unsafe extern "C" fn cdpc_main(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    let args: Vec<String> = (0..usize::try_from(argc).unwrap_or(0)).map(|i| unsafe { std::ffi::CStr::from_ptr(*argv.add(i)) }.to_string_lossy().into_owned()).collect();
    // As the `cdpc` binary runs: signals, panics and crashes as `E1025`, the cache's headers
    // made after the output.
    let code = cli::run_program(args);
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
