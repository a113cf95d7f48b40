//! `cdpc run`: argument mistakes are usage errors before any compilation, and without a CUDA
//! driver the run fails with a clear error (never a panic). `cdpc FILE` is unchanged.

use std::path::Path;
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn cdpc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(root()).args(args).output().expect("cdpc runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn launch_mistakes_are_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "samples/permute.cdp", "--kernel", "permute", "--buf", "data:i32"], "expected NAME:TYPE:LEN"),
        (&["run", "samples/permute.cdp", "--kernel", "permute", "--arg", "i33:4"], "unknown type `i33`"),
        (&["run", "samples/permute.cdp", "--kernel", "permute", "--arg", "buf:nope"], "no [[buffer]] named `nope`"),
        (&["run", "samples/permute.cdp", "--grid", "1"], "--kernel NAME"),
        (&["run", "samples/hello.cdp", "--manifest", "samples/hello.toml", "--print", "data"], "no buffer `data`"),
    ];
    for (args, want) in cases {
        let out = cdpc(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
}

#[test]
fn without_a_driver_run_fails_clearly() {
    let out = cdpc(&["run", "samples/hello.cdp", "--manifest", "samples/hello.toml"]);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    if err.contains("ptxas") || err.contains("nvlink") || err.contains("libcudadevrt") {
        return println!("skipped: the NVIDIA tools are missing (`cargo xtask setup`): {err}");
    }
    if out.status.success() {
        return println!("skipped: this machine has a GPU and the sample ran: {}", String::from_utf8_lossy(&out.stdout));
    }
    if !err.contains("no CUDA driver found") {
        return println!("skipped: a CUDA driver is present but the run failed: {err}");
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("compiled `samples/hello.cdp`, but cannot run it: no CUDA driver found"), "{err}");
}

#[test]
fn a_file_named_run_still_compiles_with_a_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run"), "extern \"C\" __global__ void k() {}\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).args(["./run", "--emit", "ptx", "-o", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(".entry k"));
}
