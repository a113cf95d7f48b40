//! The fresh-machine property: no tracked test, script or source names a tool by an absolute
//! path outside the checkout. Tools are found the way users find them (`CUDA_HOME`, the
//! checkout's `.cuda/`, `PATH`: SETUP.md); a hard-coded `/tmp/...` folder once made CI pass only
//! because the machine still had it from earlier work.
//!
//! Every code, script and build file of the checkout (what git tracks or would track, not what
//! it ignores) is scanned (documentation, `*.md`, may name such paths: it explains them). An
//! absolute path counts as a tool path when it names CUDA, NVIDIA, LLVM or one of their tools;
//! the few that are deliberate are listed in [`ALLOWED`] with the reason.

use cdpc_tests::repo_root;
use std::path::{Path, PathBuf};

/// (file, path without its leading `/` (so that this file holds none), why it is right there).
const ALLOWED: &[(&str, &str, &str)] = &[
    ("xtask/src/main.rs", "usr/lib/llvm-22", "where apt's llvm-22-dev installs LLVM; set-up installs it there and LLVM_SYS_221_PREFIX overrides it"),
    (
        "compiler/src/front/cuda/in_process.rs",
        "usr/lib/llvm-22",
        "the last entry of the documented list where Clang's resource headers are looked for (apt's libclang-common-22-dev); the earlier entries override it",
    ),
    ("compiler/src/front/cuda/mod.rs", "usr/lib/llvm-22", "the module documentation's copy of that ordered list"),
    (
        "compiler/src/driver/program.rs",
        "usr/lib/llvm-22",
        "the last entry of the documented list where LLVM's OpenMP runtime (libomp-22-dev) is looked for; CDPC_LIBOMP_DIR and the earlier entries override it",
    ),
    ("results/ggml-cuda-backend/device.txt", "usr/local/cuda", "`cdpc --version` as printed on the GPU machine, naming the toolkit it found there"),
    ("bench/acceptance/device.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there, nvcc beside cdpc over the acceptance lists); CUDA_HOME overrides it"),
    ("bench/ggml/ggml.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there, building ggml with nvcc beside cdpc); CUDA_HOME overrides it"),
    (
        "bench/acceptance/outside-programs.sh",
        "usr/local/cuda",
        "the GPU machine's own toolkit (the script runs only there, building programs from outside the corpus with nvcc beside cdpc); CUDA_HOME overrides it",
    ),
    ("samples/harness/gpu-run.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there); CUDA_HOME overrides it"),
    ("samples/harness/soak.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there, building nvcc's cubins to soak beside cdpc's); CUDA_HOME overrides it"),
    ("examples/python/gpu-run.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there); CUDA_HOME overrides it"),
    ("samples/harness/driver-gpu.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there, with compute-sanitizer and cuda-gdb); CUDA_HOME overrides it"),
    ("samples/harness/corpus-timing.py", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there, timing the programs); CUDA_HOME overrides it"),
    ("compiler/tests/docs_commands.rs", "usr/local/cuda", "quotes SETUP.md's `export CUDA_HOME=...` example, which the test does not run, with the reason"),
    ("samples/harness/dc-gpu.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script runs only there, relinking cdpc's -dc objects); CUDA_HOME overrides it"),
    ("bench/malloc-pool/bt-pool.sh", "usr/local/cuda", "the GPU machine's own toolkit (its `run` stage runs only there, building KLAP's BT with nvcc alone); CUDA_HOME overrides it"),
    (
        "compiler/src/toolchain/discover.rs",
        "usr/local/cuda",
        "the last rule of the documented tool search (SETUP.md), the standard toolkit folder: every earlier rule comes first, and tests replace it (SearchEnv::standard_dirs)",
    ),
    ("compiler/src/toolkit.rs", "usr/local/cuda", "`cdpc --version`'s list of the places that tool search looks at"),
    ("bench/dc/empty_state_h200.sh", "usr/local/cuda", "the GPU machine's own toolkit (the script ran only there, timing its nvcc beside the carried cdpc)"),
    ("results/dc-empty-cache/h200-host.log", "usr/local/cuda", "the GPU machine's own toolkit, as cdpc -v printed its commands there"),
    ("samples/harness/corpus-gpu.sh", "usr/local/cuda", "the GPU machine's own toolkit, tried first; CUDA_HOME and NVCC override it, and the checkout's .cuda/ is the fallback"),
];

/// Folders that are not part of the checkout's tracked content (build outputs, installed tools,
/// fuzzing state, virtual environments).
const SKIPPED_DIRS: &[&str] = &[".git", "target", ".cuda", "build", "corpus", "artifacts", ".venv", "venv", "__pycache__", "node_modules"];

/// Roots outside the checkout that an absolute path may start with.
const ROOTS: &[&str] = &["tmp", "opt", "usr", "home", "root", "work", "mnt", "srv", "var", "etc", "scratch"];

/// Words that make an absolute path a tool path.
const TOOL_WORDS: &[&str] = &["nvtools", "cuda", "nvidia", "ptxas", "nvlink", "nvcc", "libdevice", "cudadevrt", "llvm", "cu13", "cu12"];

/// The absolute tool paths in `text`: each `/root/...` that is not the tail of a longer path
/// or variable (`$HOME/tmp/x`, `dir/tmp/x` are relative) and names a tool.
fn tool_paths(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (at, _) in text.match_indices('/') {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b"_.~$}/\\".contains(&b)) {
            continue;
        }
        let rest = &text[at + 1..];
        let Some(root) = ROOTS.iter().find(|r| rest.starts_with(**r) && rest[r.len()..].starts_with('/')) else { continue };
        let end = rest.find(|c: char| c.is_whitespace() || "\"'`(){}[],;:<>|*".contains(c)).unwrap_or(rest.len());
        let path = format!("/{}", &rest[..end]);
        let lower = path.to_ascii_lowercase();
        if TOOL_WORDS.iter().any(|w| lower.contains(w)) {
            debug_assert!(path.starts_with(&format!("/{root}/")));
            found.push(path);
        }
    }
    found
}

fn is_code_or_script(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    matches!(ext, "rs" | "sh" | "py" | "toml" | "c" | "h" | "cu" | "cdp" | "lalrpop" | "cmake" | "json" | "yml" | "yaml" | "txt" | "cfg" | "ini" | "mk")
        || matches!(name, "Makefile" | "run" | "CMakeLists.txt" | "Dockerfile")
        // A file in the `.ci` folder (the folder's name, not an extension).
        || path.parent().is_some_and(|p| p.file_name().is_some_and(|n| n == ".ci"))
}

fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if !SKIPPED_DIRS.iter().any(|s| name == *s) {
                files_below(&path, out);
            }
        } else if kind.is_file() && is_code_or_script(&path) {
            out.push(path);
        }
    }
}

/// The files git counts as the checkout's (tracked, or untracked and not ignored), relative
/// to `root`; `None` without git or outside a repository, when the walk's folders alone decide.
fn checkout_files(root: &Path) -> Option<std::collections::HashSet<PathBuf>> {
    let out = std::process::Command::new("git").arg("-C").arg(root).args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).output().ok()?;
    out.status.success().then(|| out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned())).collect())
}

#[test]
fn no_tracked_file_names_a_tool_outside_the_checkout() {
    let root = repo_root();
    let mut files = Vec::new();
    files_below(&root, &mut files);
    // A scratch file git ignores (a staged GPU script, say) is no part of what a clone holds.
    if let Some(checkout) = checkout_files(&root) {
        files.retain(|f| f.strip_prefix(&root).is_ok_and(|rel| checkout.contains(rel)));
    }
    assert!(files.len() > 50, "the scan found only {} files under {}", files.len(), root.display());
    let mut bad = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let rel = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        for path in tool_paths(&text) {
            if !ALLOWED.iter().any(|(f, p, _)| *f == rel && path[1..].starts_with(p)) {
                bad.push(format!("{rel}: {path}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "absolute tool paths outside the checkout (find tools through CUDA_HOME, the checkout's .cuda/ or PATH, as SETUP.md says; or add the path to ALLOWED with the reason):\n  {}",
        bad.join("\n  ")
    );
}

/// `tool_paths` of `text` written with `@` for the `/` that starts an absolute path, so that this
/// file, which the scan reads too, holds no absolute path of its own.
fn scan(text: &str) -> Vec<String> {
    tool_paths(&text.replace('@', "/")).into_iter().map(|p| p.replacen('/', "@", 1)).collect()
}

#[test]
fn the_scan_finds_what_it_is_for() {
    assert_eq!(scan(r#"const P: &str = "@tmp/nvidia-tools/nvidia/cu13/bin/ptxas";"#), ["@tmp/nvidia-tools/nvidia/cu13/bin/ptxas"]);
    assert_eq!(scan("CU=${1:-@tmp/nvidia-tools/nvidia/cu13}"), ["@tmp/nvidia-tools/nvidia/cu13"]);
    assert_eq!(scan("PATH=@opt/cuda/bin:$PATH"), ["@opt/cuda/bin"]);
    assert_eq!(scan("cuda_home: Some(\"@home/me/nv\".into()) // nvidia"), Vec::<String>::new());
    assert_eq!(scan("ls @home/me/nvidia-wheels"), ["@home/me/nvidia-wheels"]);
    // Relative paths, paths below a variable, and non-tool absolute paths are fine.
    assert!(scan("$HOME/tmp/cuda .cuda/nvidia/cu13/bin dir/usr/cuda").is_empty());
    assert!(scan("@usr/share/fonts/truetype/dejavu/DejaVuSans.ttf @tmp/cdpc-work").is_empty());
}
