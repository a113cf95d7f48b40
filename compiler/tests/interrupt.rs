//! `cdpc::toolchain::interrupt` as an embedding program calls it from its signal handling: its
//! own test process, since an interrupt stops every later compilation of the process for good.

use cdpc::driver::{compile, CompileError, CompileOptions};
use cdpc::toolchain::{interrupt, BuildOptions, OutputFile, ToolError};

#[test]
fn interrupt_removes_live_work_files_and_stops_later_compilations() {
    let dir = tempfile::tempdir().unwrap();
    // A temporary output file in progress, as during a build.
    let pending = OutputFile::prepare(&dir.path().join("k.cubin")).unwrap();
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(before.len(), 1, "the temporary output exists");

    assert!(interrupt() >= 1, "it removed the temporary output");
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
