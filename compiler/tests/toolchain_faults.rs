//! Tool faults seen from the `cdpc` command: a fake ptxas/nvlink (the test-only program in
//! src/toolchain/testdata/fake_tool.rs, compiled here with rustc) under `--cuda-home`. Each
//! fault is one clear error naming the tool and its command line, with no output file left.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fake_tool_binary(dir: &Path) -> PathBuf {
    let src = dir.join("fake_tool.rs");
    std::fs::write(&src, include_str!("../src/toolchain/testdata/fake_tool.rs")).unwrap();
    let binary = dir.join("fake-tool");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).args(["--edition", "2021", "-o"]).arg(&binary).arg(&src).output().expect("rustc runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    binary
}

/// A toolkit folder under `dir/cuda` with fake tools doing `ptxas_mode` and `nvlink_mode`.
fn fake_cuda(dir: &Path, binary: &Path, ptxas_mode: &str, nvlink_mode: &str) -> PathBuf {
    let prefix = dir.join("cuda");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("lib64")).unwrap();
    std::fs::write(prefix.join("lib64/libcudadevrt.a"), b"!<arch>\n").unwrap();
    for (tool, mode) in [("ptxas", ptxas_mode), ("nvlink", nvlink_mode)] {
        let _ = std::fs::remove_file(prefix.join("bin").join(tool));
        std::fs::copy(binary, prefix.join("bin").join(tool)).unwrap();
        std::fs::write(prefix.join("bin").join(format!("{tool}.mode")), mode).unwrap();
    }
    prefix
}

fn cdpc(dir: &Path, cuda: &Path, extra: &[&str]) -> Output {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    Command::new(env!("CARGO_BIN_EXE_cdpc"))
        .current_dir(dir)
        .env("TMPDIR", &tmp)
        .args(["app.cdp", "-o", "app.cubin", "--cuda-home"])
        .arg(cuda)
        .args(extra)
        .output()
        .expect("cdpc runs")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn tool_faults_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("app.cdp"), "__global__ void child(int *p) { p[0] = 1; }\n__global__ void k(int *p) { child<<<1, 1>>>(p); }\n").unwrap();
    let binary = fake_tool_binary(d);
    std::fs::remove_file(d.join("fake_tool.rs")).unwrap();

    let cases: &[(&str, &str, &str)] = &[
        ("stderr 20\nexit 3", "write", "ptxas failed (exit status 3)"),
        ("abort", "write", "ptxas failed (killed by signal 6 (SIGABRT))"),
        ("stderr 5000000\nexit 1", "write", "ptxas failed (exit status 1)"),
        ("write", "write\nexit 1", "nvlink failed (exit status 1)"),
        ("write", "abort", "nvlink failed (killed by signal 6 (SIGABRT))"),
    ];
    for (ptxas, nvlink, expected) in cases {
        let cuda = fake_cuda(d, &binary, ptxas, nvlink);
        let out = cdpc(d, &cuda, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.starts_with(&format!("error: {expected}\n  command: {}", cuda.join("bin").display())), "{}", &stderr[..stderr.len().min(500)]);
        assert!(stderr.len() < 200_000, "the error stays bounded: {} bytes", stderr.len());
        assert_eq!(names(d), ["app.cdp", "cuda", "fake-tool", "tmp"], "{expected}: no output, no work files");
        assert!(names(&d.join("tmp")).is_empty(), "{expected}: the temporary folder is removed");

        // The same as one JSON line.
        let out = cdpc(d, &cuda, &["--error-format", "json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{}", &stderr[..stderr.len().min(500)]);
        let v: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
        assert!(v["code"].is_null() && v["message"].as_str().unwrap().starts_with(expected), "{v}");
    }

    // nvlink missing, and ptxas not executable.
    let cuda = fake_cuda(d, &binary, "write", "write");
    std::fs::remove_file(cuda.join("bin/nvlink")).unwrap();
    let out = cdpc(d, &cuda, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nvlink") && stderr.contains("not found"), "{stderr}");
    let cuda = fake_cuda(d, &binary, "write", "write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(cuda.join("bin/ptxas"), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = cdpc(d, &cuda, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Discovery passes over a ptxas that cannot be run, and says where it looked.
    assert!(stderr.starts_with("error: ptxas not found") && stderr.contains(&cuda.display().to_string()), "{stderr}");
    assert_eq!(names(d), ["app.cdp", "cuda", "fake-tool", "tmp"]);
    assert!(names(&d.join("tmp")).is_empty());

    // Success, then the output is a directory or lies under a file.
    let cuda = fake_cuda(d, &binary, "write", "stderr 10\nwrite");
    let out = cdpc(d, &cuda, &["-v"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("-lcudadevrt") && stderr.contains("LAST LINE"), "-v shows the commands and tool output: {stderr}");
    // In JSON mode the tool's warnings are one JSON line too.
    let out = cdpc(d, &cuda, &["-v", "--error-format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.lines().count() == 1, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
    assert!(v["severity"] == "warning" && v["message"].as_str().unwrap().ends_with("LAST LINE"), "{v}");
    std::fs::remove_file(d.join("app.cubin")).unwrap();
    std::fs::create_dir(d.join("app.cubin")).unwrap();
    let out = cdpc(d, &cuda, &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("it is a directory"));
    std::fs::remove_dir(d.join("app.cubin")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cdpc"))
        .current_dir(d)
        .args(["app.cdp", "-o", "app.cdp/x.cubin", "--cuda-home"])
        .arg(&cuda)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a folder"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(d), ["app.cdp", "cuda", "fake-tool", "tmp"]);
}
