//! `cdpc::toolchain::interrupt` as an embedding program calls it from its signal handling: its
//! own test process, since an interrupt stops every later compilation of the process for good.

use cdpc::driver::{compile, CompileError, CompileOptions};
use cdpc::toolchain::{interrupt, BuildOptions, OutputFile, ToolError, ToolSource, Toolchain};

#[test]
fn interrupt_removes_live_work_files_and_stops_later_compilations() {
    let dir = tempfile::tempdir().unwrap();
    // A temporary output file in progress, as during a build.
    let pending = OutputFile::prepare(&dir.path().join("k.cubin")).unwrap();
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(before.len(), 1, "the temporary output exists");

    // A ptxas started before its input exists, waiting in `open` for it: no thread watches it,
    // so `interrupt` kills it itself (at once, not after its grace for watched tools).
    let early = early_tool(dir.path());
    let started = early.as_ref().map(|(tools, opts, _)| tools.start_build(opts, true).unwrap());
    let pid = early.as_ref().map(|(tools, _, _)| started_pid(&tools.ptxas.with_file_name("ptxas.pid")));

    let interrupting = std::time::Instant::now();
    assert!(interrupt() >= 1, "it removed the temporary output");
    if let Some(pid) = pid {
        assert!(interrupting.elapsed() < std::time::Duration::from_millis(1500), "{:?}", interrupting.elapsed());
        // Killed: a zombie (soon: the signal is delivered as it runs) until the build is
        // dropped and reaps it; nothing else waits for it.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')) {
                break;
            }
            assert!(std::time::Instant::now() < until, "not killed: {state}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        drop(started);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let err = pending.commit(b"\x7fELF").unwrap_err();
    assert!(!dir.path().join("k.cubin").exists(), "nothing appears after an interrupt: {err}");

    // New work is refused with E0703, before any file or tool.
    let err = OutputFile::prepare(&dir.path().join("k2.cubin")).err().unwrap();
    assert!(matches!(err, ToolError::Interrupted), "{err:?}");
    assert_eq!(err.code().map(|c| c.as_str()), Some("E0703"));
    let tools = cdpc::toolchain::Toolchain::discover(&Default::default());
    if let Ok(tools) = tools {
        let opts = BuildOptions { temp_root: Some(dir.path().to_path_buf()), ..BuildOptions::default() };
        assert!(matches!(tools.assemble(".version 8.0", &opts), Err(ToolError::Interrupted)));
        match compile("__global__ void k(int *p) { p[0] = 1; }", &CompileOptions::default()) {
            Err(e @ CompileError::Tool(ToolError::Interrupted)) => assert_eq!(e.code().map(|c| c.as_str()), Some("E0703")),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("compiled after an interrupt"),
        }
    } else {
        println!("skipped the tool half: ptxas/nvlink not found; run `cargo xtask setup`");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A toolchain whose ptxas (a script) writes its pid to `ptxas.pid` beside it and then reads
/// its input, with work folders in `work`; `None` where this system gives no file leases (the
/// tool would not wait for its input).
fn early_tool(work: &std::path::Path) -> Option<(Toolchain, BuildOptions, tempfile::TempDir)> {
    let folder = tempfile::tempdir().unwrap();
    let bin = folder.path().to_path_buf();
    let script = "#!/bin/sh\necho $$ > \"$(dirname \"$0\")/ptxas.pid\"\nfor a; do last=\"$a\"; done\nexec cat \"$last\"\n";
    for tool in ["ptxas", "nvlink"] {
        let path = bin.join(tool);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let probe = bin.join("probe");
    let file = std::fs::File::create(&probe).unwrap();
    // SAFETY: fcntl on a descriptor this function owns.
    let leases = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_SETLEASE, libc::F_WRLCK as libc::c_int) } == 0;
    drop(file);
    std::fs::remove_file(&probe).unwrap();
    if !leases {
        println!("skipped the early-tool half: no file leases here");
        return None;
    }
    let tools = Toolchain { ptxas: bin.join("ptxas"), nvlink: bin.join("nvlink"), cudadevrt_dir: bin.clone(), libdevice: None, cuobjdump: None, source: ToolSource::Explicit(bin) };
    Some((tools, BuildOptions { temp_root: Some(work.to_path_buf()), ..BuildOptions::default() }, folder))
}

fn started_pid(file: &std::path::Path) -> u32 {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        assert!(std::time::Instant::now() < until, "the early ptxas never started");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
