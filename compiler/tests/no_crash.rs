//! No input makes cdpc crash, and a crash of cdpc's own is a coded error with a reproducer.
//!
//! - Everyday CUDA C++ whose device IR carries what inkwell cannot type (metadata operands:
//!   the `llvm.experimental.noalias.scope.decl` that inlining a `__restrict__` function leaves)
//!   compiles under every launch option.
//! - The IR seeds (`fuzz/seeds/ir/`: Clang's launches, the documented sequence, and modules
//!   with every operand kind: metadata, tokens and operand bundles, `callbr`'s blocks, `switch`,
//!   constrained floating point, i128 conversions) compile, or fail with a coded error, under
//!   every launch option: never a panic.
//! - A panic (forced with `CDPC_DEBUG_CRASH=1`, as Clang's `#pragma clang __debug crash`) is
//!   `E1025` with exit status 70, no Rust report and no output file, and its reproducer, given
//!   to cdpc with the same options, compiles.

use crate::build_common::{cdpc, cdpc_env, json_lines, stderr, tool_dir};
use std::path::Path;

/// Every way of treating launches, and the builds around them.
const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-O0"],
    &["-G"],
    &["-fno-launch-optimizations"],
    &["-faggregate-launches=warp"],
    &["-faggregate-launches=block"],
    &["-faggregate-launches=grid"],
    &["-flaunch-threshold=64"],
    &["-fdevice-malloc-pool"],
    &["--launch-abi=v1"],
];

/// The two lines: a `__restrict__` device function inlined twice into its kernel.
const RESTRICT: &str = "static __device__ void add(float *__restrict__ a, const float *__restrict__ b, int i) { a[i] += b[i]; }\n\
__global__ void k(float *__restrict__ a, const float *__restrict__ b) { add(a, b, threadIdx.x); add(a, b, threadIdx.x + 32); }\n\
__global__ void parent(float *a, const float *b) { if (threadIdx.x == 0) k<<<1, 32>>>(a, b); }\n";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// Whether `out` is a crash rather than an answer: Rust's panic status, the internal error's,
/// or a signal.
fn crashed(out: &std::process::Output) -> bool {
    matches!(out.status.code(), Some(101) | Some(70) | None) || stderr(out).contains("panicked")
}

#[test]
fn restrict_functions_inlined_compile_under_every_option() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), RESTRICT).unwrap();
    // Whole program (nvcc's module id names the `static` function) by default, relocatable
    // under every launch option.
    for (mode, options) in std::iter::once((&["-c"][..], &[][..])).chain(OPTION_SETS.iter().map(|o| (&["-rdc=true", "-c"][..], *o))) {
        let out = cdpc(dir.path(), &[&["-arch=sm_90", "k.cu", "-o", "k.o"][..], mode, options].concat());
        assert!(out.status.success(), "{mode:?} {options:?}: {}", stderr(&out));
    }
}

#[test]
fn ir_seeds_never_crash_under_any_option() {
    let seeds = repo_root().join("fuzz/seeds/ir");
    let mut files: Vec<_> = std::fs::read_dir(&seeds).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "ll")).collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    // The modules written for the operand kinds compile; the others may be refused, coded.
    let must_compile = ["every_operand_kind.ll", "convergence_tokens.ll", "callbr.ll"];
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for options in OPTION_SETS {
            let input = file.to_str().unwrap();
            let out = cdpc(&seeds, &[&["-arch=sm_90", "--emit", "ptx", "-o", "-", input][..], options].concat());
            assert!(!crashed(&out), "{name} {options:?} crashed: {}", stderr(&out));
            if must_compile.contains(&name.as_str()) {
                assert!(out.status.success(), "{name} {options:?}: {}", stderr(&out));
            } else if !out.status.success() {
                assert!(stderr(&out).contains("error[E"), "{name} {options:?}: an error without a code: {}", stderr(&out));
            }
        }
    }
}

/// The reproducer folder the E1025 message names.
fn reproducer_dir(text: &str) -> std::path::PathBuf {
    let at = text.find("A reproducer is in `").expect("the message names a reproducer") + "A reproducer is in `".len();
    let end = text[at..].find('`').unwrap();
    std::path::PathBuf::from(&text[at..at + end])
}

/// A folder with the inputs the crash tests compile (`k.cu`, the lines; `odd.ll`, the
/// IR seed with every operand kind) and an empty `crashes/` for the reproducers.
fn crash_inputs() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let crashes = dir.path().join("crashes");
    std::fs::create_dir(&crashes).unwrap();
    std::fs::write(dir.path().join("k.cu"), RESTRICT).unwrap();
    std::fs::copy(repo_root().join("fuzz/seeds/ir/every_operand_kind.ll"), dir.path().join("odd.ll")).unwrap();
    (dir, crashes)
}

#[test]
fn a_crash_is_e1025_with_a_reproducer_that_compiles() {
    if tool_dir().is_none() {
        return;
    }
    let (dir, crashes) = crash_inputs();
    std::fs::copy(repo_root().join("samples/bfs.cdp"), dir.path().join("v.cdp")).ok();
    let env = [("CDPC_DEBUG_CRASH", "1"), ("CDPC_CRASH_DIR", crashes.to_str().unwrap())];
    let mut inputs = vec![("k.cu", "bc"), ("odd.ll", "ll")];
    if dir.path().join("v.cdp").exists() {
        inputs.push(("v.cdp", "cdp"));
    }
    for (input, extension) in inputs {
        let out = cdpc_env(dir.path(), &["-arch=sm_90", "-c", input, "-o", "out.o"], &env);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(70), "{input}: {text}");
        assert!(text.starts_with("error[E1025]: internal compiler error: CDPC_DEBUG_CRASH=1 asked for a crash"), "{input}: {text}");
        assert!(!text.contains("panicked") && !text.contains("RUST_BACKTRACE"), "{input}: Rust's report: {text}");
        assert!(text.contains(&format!("seen while compiling `{input}`")) || text.contains(&format!("/{input}`")), "{input}: {text}");
        assert!(!dir.path().join("out.o").exists(), "{input}: a partial output");
        let repro = reproducer_dir(&text);
        assert!(repro.starts_with(&crashes), "{}", repro.display());
        let stem = input.split('.').next().unwrap();
        let file = repro.join(format!("{stem}.{extension}"));
        let command = std::fs::read_to_string(repro.join("command.txt")).unwrap();
        assert!(command.contains(&format!("{stem}.{extension}")) && command.contains("-arch=sm_90"), "{command}");
        assert!(std::fs::read_to_string(repro.join("message.txt")).unwrap().contains("CDPC_DEBUG_CRASH"));
        // The reproducer is cdpc's input: without the forced crash it compiles.
        let out = cdpc(&repro, &["-arch=sm_90", "--emit", "ptx", "-o", "-", file.to_str().unwrap()]);
        assert!(out.status.success(), "{input}'s reproducer {}: {}", file.display(), stderr(&out));
    }
    // Machines read it too: one JSON line with the code.
    let out = cdpc_env(dir.path(), &["-arch=sm_90", "-c", "k.cu", "-o", "out.o", "--error-format", "json"], &env);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", stderr(&out));
    assert_eq!(lines[0]["code"], "E1025", "{}", stderr(&out));
}

/// A crash outside Rust (a signal in LLVM's or Clang's code, forced with `CDPC_DEBUG_CRASH=segv`
/// or `abort` at the point where a compilation notes its reproducer) is `E1025` too: exit
/// status 70, not death by the signal, the input named, a reproducer that compiles, no output
/// file and no work folder left.
#[test]
fn a_crash_by_signal_is_e1025_with_a_reproducer_and_nothing_left() {
    if tool_dir().is_none() {
        return;
    }
    let (dir, crashes) = crash_inputs();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (how, signal) in [("segv", "SIGSEGV"), ("abort", "SIGABRT")] {
        for (input, extension) in [("k.cu", "bc"), ("odd.ll", "ll")] {
            let env = [("CDPC_DEBUG_CRASH", how), ("CDPC_CRASH_DIR", crashes.to_str().unwrap()), ("TMPDIR", tmp.to_str().unwrap())];
            let out = cdpc_env(dir.path(), &["-arch=sm_90", "-c", input, "-o", "out.o"], &env);
            let text = stderr(&out);
            assert_eq!(out.status.code(), Some(70), "{how} {input}: {text}");
            assert!(text.starts_with(&format!("error[E1025]: internal compiler error: cdpc stopped on {signal}")), "{how} {input}: {text}");
            assert!(text.contains(&format!("seen while compiling `{input}`")) || text.contains(&format!("/{input}`")), "{how} {input}: {text}");
            assert!(!dir.path().join("out.o").exists(), "{how} {input}: a partial output");
            let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.file_name()).collect();
            assert!(left.is_empty(), "{how} {input}: left in TMPDIR: {left:?}");
            let repro = reproducer_dir(&text);
            assert!(repro.starts_with(&crashes), "{}", repro.display());
            assert!(std::fs::read_to_string(repro.join("message.txt")).unwrap().contains(signal));
            let file = repro.join(format!("{}.{extension}", input.split('.').next().unwrap()));
            let out = cdpc(&repro, &["-arch=sm_90", "--emit", "ptx", "-o", "-", file.to_str().unwrap()]);
            assert!(out.status.success(), "{how} {input}'s reproducer {}: {}", file.display(), stderr(&out));
        }
    }
}

/// The passes read operands and users through `cdpc::llvm`, never inkwell's calls that panic
/// on metadata, tokens and labels (ARCHITECTURE.md, "No panic on any module").
#[test]
fn no_pass_reads_operands_with_inkwells_panicking_calls() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("llvm.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if [".get_operand(", ".get_user()", ".get_used_value()", ".get_operands()", ".get_operand_use("].iter().any(|c| code.contains(c)) {
                    found.push(format!("{}:{}: {}", path.strip_prefix(&src).unwrap().display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "read through `cdpc::llvm` instead:\n{}", found.join("\n"));
}
