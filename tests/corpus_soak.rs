//! The corpus programs' GPU soak (`samples/harness/corpus-timing.py --stage soak`), run here
//! without a GPU: a bundle of stand-in executables (shell scripts that print what KLAP's
//! programs print, fail, hang or print another result) and an `nvidia-smi` that names a GPU.
//! What is checked is the soak's bookkeeping, which a GPU run cannot check for itself: every
//! run counted once, a failure and a hang told apart, an output nvcc's runs never gave not
//! passed as ok, and the exit status.

use cdpc_tests::repo_root;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A stand-in program: `body` is the shell script after `#!/bin/sh`.
fn script(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Builds a bundle of BT and BFS, nvcc's and `clang`'s, with these scripts, runs the soak
/// (3 runs of each, a 2-second limit) and returns its exit status and report.
fn soak(bt_clang: &str, bfs_clang: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let ok = "echo 'Average kernel time = 1.25 ms'; echo 'verified 3 of 7'";
    let exes = [("BT", "nvcc", ok), ("BT", "clang", bt_clang), ("BFS", "nvcc", ok), ("BFS", "clang", bfs_clang)];
    let mut listed = Vec::new();
    for (program, variant, body) in exes {
        let rel = format!("klap/test/{program}/{variant}.exe");
        script(&work.join(&rel), body);
        listed.push(format!("\"{program} {variant}\": \"{rel}\""));
    }
    let manifest = format!(
        "{{\"built_with\": \"stand-ins\", \"built\": \"today\", \"programs\": [\"BT\", \"BFS\"], \
         \"variants\": {{\"nvcc\": null, \"clang\": {{\"cdpc_args\": [], \"per_program\": {{}}}}}}, \
         \"executables\": {{{}}}, \"failed\": []}}",
        listed.join(", ")
    );
    fs::write(work.join("manifest.json"), manifest).unwrap();
    let bundle = dir.path().join("bundle.tar.xz");
    let tar = Command::new("tar").arg("-cJf").arg(&bundle).arg("-C").arg(&work).args(["manifest.json", "klap"]).status().unwrap();
    assert!(tar.success());
    let bin = dir.path().join("bin");
    script(&bin.join("nvidia-smi"), "echo 'Stand-in GPU, 0.0'");
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = Command::new("python3")
        .current_dir(repo_root())
        .env("PATH", path)
        .env("OUT", &out)
        .arg("samples/harness/corpus-timing.py")
        .args(["--stage", "soak", "--programs", "BT,BFS", "--runs", "3", "--jobs", "2", "--run-limit", "2", "--bundle"])
        .arg(&bundle)
        .output()
        .unwrap();
    let report = fs::read_to_string(out.join("corpus-soak.md")).unwrap_or_default();
    assert!(report.contains("12 of 12 runs made"), "{report}\n{}", String::from_utf8_lossy(&run.stderr));
    (run.status.code().unwrap_or(-1), report)
}

#[test]
fn a_soak_of_runs_that_all_give_nvccs_output_passes() {
    let ok = "echo 'Average kernel time = 0.75 ms'; echo 'verified 3 of 7'";
    let (status, report) = soak(ok, ok);
    assert_eq!(status, 0, "{report}");
    // program, variant, runs, ok, failed, hung, outputs, seen from nvcc
    assert!(report.contains("| BT | clang | 3 | 3 | 0 | 0 | 1 | 3 |"), "{report}");
    assert!(report.contains("| BFS | nvcc | 3 | 3 | 0 | 0 | 1 | 3 |"), "{report}");
}

#[test]
fn a_soak_counts_failed_hung_and_unseen_runs_and_fails() {
    let hangs = "sleep 30; echo 'Average kernel time = 1.0 ms'";
    let fails = "echo 'an illegal memory access'; exit 3";
    let (status, report) = soak(hangs, fails);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains("| BT | clang | 3 | 0 | 0 | 3 | 0 | 0 |"), "{report}");
    assert!(report.contains("| BFS | clang | 3 | 0 | 3 | 0 | 0 | 0 |"), "{report}");
    assert!(report.contains("BFS clang: first failure: exit 3: an illegal memory access"), "{report}");

    // A run that exits 0 with a time but prints a result nvcc's runs never printed (numbers
    // with a decimal point are masked as timings: an integer differs).
    let other = "echo 'Average kernel time = 1.0 ms'; echo 'verified 2 of 7'";
    let ok = "echo 'Average kernel time = 1.0 ms'; echo 'verified 3 of 7'";
    let (status, report) = soak(other, ok);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains("| BT | clang | 3 | 3 | 0 | 0 | 1 | 0 |"), "{report}");
}
