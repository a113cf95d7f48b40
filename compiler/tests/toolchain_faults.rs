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
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).env("TMPDIR", &tmp).args(["app.cdp", "-o", "app.cubin", "--cuda-home"]).arg(cuda).args(extra).output().expect("cdpc runs")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A folder with `app.cdp` holding `source` and the compiled fake tool `fake-tool`.
fn project(source: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.cdp"), source).unwrap();
    let binary = fake_tool_binary(dir.path());
    std::fs::remove_file(dir.path().join("fake_tool.rs")).unwrap();
    (dir, binary)
}

#[test]
fn tool_faults_through_the_command_line() {
    let (dir, binary) = project("__global__ void child(int *p) { p[0] = 1; }\n__global__ void k(int *p) { child<<<1, 1>>>(p); }\n");
    let d = dir.path();

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
    // The fake's "cubin" is text, no compiler output: it is not replaced without --overwrite.
    let out = cdpc(d, &cuda, &["-v"]);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error[E0701]: refusing to overwrite `app.cubin`"), "{out:?}");
    std::fs::remove_file(d.join("app.cubin")).unwrap();
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
    let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(d).args(["app.cdp", "-o", "app.cdp/x.cubin", "--cuda-home"]).arg(&cuda).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a folder"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(d), ["app.cdp", "cuda", "fake-tool", "tmp"]);
}

#[test]
fn a_hung_tool_is_killed_after_tool_timeout() {
    let (dir, binary) = project("__global__ void k(int *p) { p[0] = 1; }\n");
    let d = dir.path();
    for (ptxas, nvlink, tool) in [("sleep 60", "write", "ptxas"), ("write", "sleep 60", "nvlink")] {
        let cuda = fake_cuda(d, &binary, ptxas, nvlink);
        let started = std::time::Instant::now();
        let out = cdpc(d, &cuda, &["--tool-timeout", "0.5"]);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let program = cuda.join("bin").join(tool);
        assert!(stderr.starts_with(&format!("error[E0702]: {tool} did not finish within 0.5 s and was killed\n  command: {}", program.display())), "{stderr}");
        assert_eq!(names(d), ["app.cdp", "cuda", "fake-tool", "tmp"], "no output, no work files");
        assert!(names(&d.join("tmp")).is_empty());

        let out = cdpc(d, &cuda, &["--tool-timeout", "0.5", "--error-format", "json"]);
        let v: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&out.stderr).trim()).unwrap();
        assert_eq!(v["code"], "E0702", "{v}");
    }
    // Nonsense limits are refused by the option parser.
    let cuda = fake_cuda(d, &binary, "write", "write");
    for bad in ["-1", "soon", "inf", "NaN"] {
        let out = cdpc(d, &cuda, &["--tool-timeout", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // 0 means no limit: a quick tool still succeeds.
    assert!(cdpc(d, &cuda, &["--tool-timeout", "0"]).status.success());
}

/// Starts `cdpc` with TMPDIR in `d/tmp`, waits until its work folder exists, sends `signal`,
/// and returns how it ended.
#[cfg(unix)]
fn interrupt_when_working(d: &Path, args: &[&str], env: &[(&str, &str)], signal: i32) -> std::process::ExitStatus {
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cdpc"))
        .current_dir(d)
        .env("TMPDIR", &tmp)
        .envs(env.iter().copied())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while names(&tmp).is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "cdpc ended before its work folder appeared");
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "no work folder appeared");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let work = names(&tmp);
    assert!(work[0].starts_with(&format!("cdpc-work-{}-", child.id())), "{work:?}");
    // SAFETY: kill(2) on the pid of a child we have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    child.wait().unwrap()
}

#[cfg(unix)]
#[test]
fn a_signal_removes_the_work_folder_and_kills_the_tool() {
    use std::os::unix::process::ExitStatusExt;
    let (dir, binary) = project("__global__ void k(int *p) { p[0] = 1; }\n");
    let d = dir.path();
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // ptxas "hangs", so the signal arrives while a tool runs in the work folder.
        let cuda = fake_cuda(d, &binary, "sleep 60", "write");
        let cuda_arg = cuda.display().to_string();
        let started = std::time::Instant::now();
        let status = interrupt_when_working(d, &["app.cdp", "-o", "app.cubin", "--cuda-home", &cuda_arg], &[], signal);
        assert_eq!(status.signal(), Some(signal), "cdpc dies of the signal: {status:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the hung ptxas was killed");
        assert!(names(&d.join("tmp")).is_empty(), "signal {signal}: the work folder is removed");
        assert_eq!(names(d), ["app.cdp", "cuda", "fake-tool", "tmp"], "signal {signal}: no output, no temporary output");
    }
    // No process of the fake ptxas is left: each wrote nothing, and none still runs.
    let ours = std::process::Command::new("pgrep").args(["-f", &d.join("cuda/bin/ptxas").display().to_string()]).output();
    if let Ok(out) = ours {
        assert!(out.stdout.is_empty(), "a killed ptxas still runs: {}", String::from_utf8_lossy(&out.stdout));
    }
}

/// A CUDA C++ compilation whose cdpc headers (the additions to Clang's, the macro-hiding files)
/// live in a folder of its own, there being no cache to hold them or the cache's folder not
/// being one that can be made: SIGTERM as soon as that folder appears (before Clang runs)
/// removes it too, as every work folder of the process is recorded for the interrupt, and
/// nothing makes it again afterwards.
#[cfg(unix)]
#[test]
fn a_signal_removes_the_folder_of_cdpcs_headers() {
    use std::os::unix::process::ExitStatusExt;
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("app.cu"), "__global__ void k(int *p) { p[threadIdx.x] = N; }\n").unwrap();
    std::fs::write(d.join("not-a-folder"), "").unwrap();
    let under_a_file = d.join("not-a-folder/cache").display().to_string();
    // The signal lands at a different point of the headers' writing each time: a thread still
    // writing them once made the folder again after the interrupt had removed it (one run in
    // seven left a folder), so each case is tried a few times.
    for cache in ["", under_a_file.as_str()].repeat(8) {
        let status = interrupt_when_working(d, &["app.cu", "-DN=3", "-c", "-o", "app.o"], &[("CDPC_CACHE_DIR", cache)], libc::SIGTERM);
        assert_eq!(status.signal(), Some(libc::SIGTERM), "cache {cache:?}: {status:?}");
        assert!(names(&d.join("tmp")).is_empty(), "cache {cache:?}: work folders left: {:?}", names(&d.join("tmp")));
        assert_eq!(names(d), ["app.cu", "not-a-folder", "tmp"], "cache {cache:?}: no output, no temporary output");
    }
}

/// The real tools on a kernel big enough for ptxas to take a while: SIGTERM in the middle of a
/// real compile leaves nothing behind.
#[cfg(unix)]
#[test]
fn a_signal_during_a_real_compile_leaves_nothing_behind() {
    use std::os::unix::process::ExitStatusExt;
    if cdpc::toolchain::Toolchain::discover(&Default::default()).is_err() {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut source = String::from("extern \"C\" __global__ void child(int *p, int i) { p[i] += 1; }\nextern \"C\" __global__ void parent(int *p) {\n");
    for i in 0..2000 {
        source.push_str(&format!("    child<<<1, 1>>>(p, {i});\n"));
    }
    source.push_str("}\n");
    std::fs::write(d.join("app.cdp"), source).unwrap();
    let status = interrupt_when_working(d, &["app.cdp", "-o", "app.cubin"], &[], libc::SIGTERM);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert!(names(&d.join("tmp")).is_empty(), "the work folder is removed");
    assert_eq!(names(d), ["app.cdp", "tmp"], "no output, no temporary output");
}
