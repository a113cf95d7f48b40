//! The C API's two users: a C program built with gcc and a Python ctypes script, both run
//! against the freshly built libcdpc_capi.so. Each skips with a printed reason when gcc or
//! python3 is missing; the cubin checks run only when the NVIDIA tools are found.

use cdpc::toolchain::{ToolSearch, Toolchain};
use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn samples_dir() -> PathBuf {
    manifest_dir().parent().unwrap().join("samples")
}

/// The cdylib cargo built beside this test (target/debug/deps or target/debug).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [deps, deps.parent().unwrap()] {
        let lib = dir.join("libcdpc_capi.so");
        if lib.exists() {
            return lib;
        }
    }
    panic!("libcdpc_capi.so not found next to {}", exe.display());
}

fn have_tools() -> &'static str {
    match Toolchain::discover(&ToolSearch::default()) {
        Ok(_) => "1",
        Err(_) => {
            eprintln!("NVIDIA tools not found: the cubin checks are skipped");
            "0"
        }
    }
}

fn found(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn c_program_uses_the_api() {
    if !found("gcc") {
        eprintln!("SKIPPED: gcc not found");
        return;
    }
    let lib = library();
    let dir = tempfile_dir();
    let exe = dir.join("test_capi");
    let out = Command::new("gcc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(manifest_dir().join("tests/c/test_capi.c"))
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.parent().unwrap().display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "gcc failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).arg(samples_dir()).arg(have_tools()).current_dir(manifest_dir()).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn python_ctypes_uses_the_api() {
    if !found("python3") {
        eprintln!("SKIPPED: python3 not found");
        return;
    }
    let run = Command::new("python3").arg(manifest_dir().join("tests/python/test_capi.py")).arg(library()).arg(samples_dir()).arg(have_tools()).current_dir(manifest_dir()).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cdpc-capi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn default_stream_option_is_parsed_and_checked() {
    use cdpc_capi::*;
    use std::ffi::CString;
    let set = |options, key: &str, value: &str| {
        let (key, value) = (CString::new(key).unwrap(), CString::new(value).unwrap());
        // SAFETY: live options and NUL-terminated strings; no error string asked for.
        unsafe { cdpc_options_set(options, key.as_ptr(), value.as_ptr(), std::ptr::null_mut()) }
    };
    let options = cdpc_options_new();
    for good in ["legacy", "null", "per-thread"] {
        assert_eq!(set(options, "default-stream", good), CdpcStatus::Ok, "{good}");
    }
    assert_eq!(set(options, "default-stream", "per-block"), CdpcStatus::InvalidArgument);
    // SAFETY: made above, freed once.
    unsafe { cdpc_options_free(options) };
}
