//! The seed corpus, made at run time from the one copy of each seed in the repository
//! (fuzz/README.md, "Seeds"): `samples/*.cdp`, `tests/ui/*.cdp` and the hand-written seeds of
//! `fuzz/seeds/text`. A target's `init` ([`install`]) writes them into the run's working corpus
//! (libFuzzer's first corpus folder: `fuzz/corpus/TARGET` under `cargo xtask fuzz` and
//! `cargo fuzz run`), the codegen target's with their options byte in front, so nothing made
//! from another file is committed. Shared by the targets through `mod seeds;`.

// Each target uses part of it.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// What a target reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// The source text as it is (preprocess, lex, parse, check, clang_messages, preamble,
    /// cache_size).
    Text,
    /// The codegen target's: an options byte (fuzz_targets/codegen.rs), then the source.
    Codegen,
    /// LLVM IR text as it is (ir_pipeline): LLVM's NVPTX test inputs ([`llvm_nvptx_dir`]).
    IrText,
    /// The ir_input target's: a mode byte, even (the rest is the input), then LLVM's NVPTX test
    /// inputs ([`llvm_nvptx_dir`]).
    IrInput,
}

/// -O3, 64-bit, launch ABI v2.
pub const CODEGEN_KNOBS: u8 = 3;
/// Grid-granularity aggregation (bits 4-5 = 3) with its remarks and thresholding at 128
/// threads (bit 6): each sample a second time, so that the fuzzer starts from those rewrites.
pub const GRID_KNOBS: u8 = CODEGEN_KNOBS | (3 << 4) | 64;
/// Separate compilation (`-dc`, line tables) at -O1, for the `separate_*` seeds.
pub const SEPARATE_KNOBS: u8 = 0x81;

/// The repository's root (this crate is its `fuzz/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("fuzz/ has a parent").to_path_buf()
}

/// The `.cdp` files of `dir`, sorted; none if it cannot be read.
fn cdp_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "cdp")).collect();
    files.sort();
    files
}

/// LLVM's own NVPTX code-generation tests (`llvm/test/CodeGen/NVPTX/*.ll` of llvm-project),
/// real device IR that this repository does not keep: `CDPC_LLVM_NVPTX_DIR`, else
/// `../shared/corpus/llvm-nvptx` beside the checkout (compiler/tests/llvm_nvptx_inputs.rs reads
/// the same folder).
pub fn llvm_nvptx_dir(root: &Path) -> PathBuf {
    std::env::var_os("CDPC_LLVM_NVPTX_DIR").map_or_else(|| root.join("../shared/corpus/llvm-nvptx"), PathBuf::from)
}

/// The `.ll` files of `dir`, sorted, as (`llvm_nvptx_NAME`, `prefix` then the contents); none
/// if it cannot be read.
fn llvm_nvptx_seeds(dir: &Path, prefix: &[u8]) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "ll")).collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let text = fs::read(&path).ok()?;
            let name = format!("llvm_nvptx_{}", path.file_name()?.to_string_lossy());
            Some((name, [prefix, &text].concat()))
        })
        .collect()
}

/// Every seed of a `kind` target under `root`, as (file name, contents): `sample_NAME` and
/// `ui_NAME` for `samples/NAME` and `tests/ui/NAME`, the hand-written seeds of `fuzz/seeds/text`
/// under their own names; for [`Kind::Codegen`] each behind its options byte, and the samples
/// again as `grid_sample_NAME` with [`GRID_KNOBS`].
pub fn seeds(root: &Path, kind: Kind) -> Vec<(String, Vec<u8>)> {
    match kind {
        Kind::IrText => return llvm_nvptx_seeds(&llvm_nvptx_dir(root), &[]),
        Kind::IrInput => return llvm_nvptx_seeds(&llvm_nvptx_dir(root), &[0]),
        Kind::Text | Kind::Codegen => {}
    }
    let mut out = Vec::new();
    for (folder, prefix) in [("samples", "sample_"), ("tests/ui", "ui_"), ("fuzz/seeds/text", "")] {
        for path in cdp_files(&root.join(folder)) {
            let file = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            // Copies that an old `cargo xtask fuzz-seeds` left in fuzz/seeds/text (git-ignored
            // there, and skipped by compiler/tests/fuzz_smoke.rs too): made above instead.
            if prefix.is_empty() && ["sample_", "ui_", "grid_"].iter().any(|p| file.starts_with(p)) {
                continue;
            }
            let Ok(text) = fs::read(&path) else { continue };
            let name = format!("{prefix}{file}");
            match kind {
                Kind::Text => out.push((name, text)),
                Kind::IrText | Kind::IrInput => {}
                Kind::Codegen => {
                    let knobs = if file.starts_with("separate_") { SEPARATE_KNOBS } else { CODEGEN_KNOBS };
                    if prefix == "sample_" {
                        out.push((format!("grid_{name}"), [&[GRID_KNOBS][..], &text].concat()));
                    }
                    out.push((name, [&[knobs][..], &text].concat()));
                }
            }
        }
    }
    out
}

/// The folder libFuzzer adds new inputs to: its first positional argument, when that is a
/// folder. None when the run is not fuzzing a corpus: inputs named one by one, a merge
/// (`cargo fuzz cmin`), crash minimisation or cleansing (`cargo fuzz tmin`).
fn working_corpus(args: &[String]) -> Option<PathBuf> {
    const NOT_FUZZING: [&str; 4] = ["-merge=", "-set_cover_merge=", "-minimize_crash=", "-cleanse_crash="];
    if args.iter().any(|a| NOT_FUZZING.iter().any(|flag| a.starts_with(flag) && !a.ends_with("=0"))) {
        return None;
    }
    let first = args.iter().skip(1).find(|a| !a.starts_with('-'))?;
    let dir = PathBuf::from(first);
    dir.is_dir().then_some(dir)
}

/// Writes the seeds of a `kind` target into `dir` (a file already holding the same bytes is
/// left alone); returns how many it wrote.
pub fn write_seeds(root: &Path, kind: Kind, dir: &Path) -> std::io::Result<usize> {
    let mut written = 0;
    for (name, bytes) in seeds(root, kind) {
        let path = dir.join(&name);
        if fs::read(&path).is_ok_and(|old| old == bytes) {
            continue;
        }
        fs::write(&path, &bytes)?;
        written += 1;
    }
    Ok(written)
}

/// A target's `init`: the seeds of `kind` into the run's working corpus (see the module's
/// documentation). `cargo xtask fuzz codegen` also names `fuzz/seeds/codegen`, which holds no
/// committed seeds: it is made (empty, git-ignored) so that libFuzzer finds the folder.
pub fn install(kind: Kind) {
    let root = repo_root();
    if kind == Kind::Codegen {
        let _ = fs::create_dir_all(root.join("fuzz/seeds/codegen"));
    }
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = working_corpus(&args) else { return };
    match write_seeds(&root, kind, &dir) {
        Ok(n) => eprintln!("INFO: seeds: {n} written into {} (fuzz/fuzz_targets/seeds.rs)", dir.display()),
        Err(e) => eprintln!("WARNING: seeds: writing into {}: {e}", dir.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_corpus_is_the_first_folder_argument() {
        let tmp = std::env::temp_dir();
        let t = tmp.to_string_lossy().into_owned();
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(working_corpus(&args(&["bin", "-runs=5", &t, "seeds/text"])), Some(tmp.clone()));
        assert_eq!(working_corpus(&args(&["bin", "-merge=1", &t, "x"])), None);
        assert_eq!(working_corpus(&args(&["bin", "-merge=0", &t])), Some(tmp.clone()));
        assert_eq!(working_corpus(&args(&["bin", "/no/such/crash-file"])), None);
        assert_eq!(working_corpus(&args(&["bin", "-runs=5"])), None);
    }

    #[test]
    fn llvm_nvptx_inputs_are_seeds_of_the_ir_targets() {
        let dir = std::env::temp_dir().join(format!("cdpc-seeds-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("b.ll"), "define void @b() {\n  ret void\n}\n").unwrap();
        fs::write(dir.join("a.ll"), "; a\n").unwrap();
        fs::write(dir.join("notes.txt"), "not IR").unwrap();
        let text = llvm_nvptx_seeds(&dir, &[]);
        assert_eq!(text.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["llvm_nvptx_a.ll", "llvm_nvptx_b.ll"]);
        assert_eq!(text[0].1, b"; a\n");
        let input = llvm_nvptx_seeds(&dir, &[0]);
        assert_eq!(input[0].1, b"\0; a\n", "an even mode byte: the rest is the input");
        assert!(llvm_nvptx_seeds(&dir.join("absent"), &[]).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
