//! Diagnostic tests: each `tests/ui/NAME.cdp` is compiled, and the rendered diagnostics are
//! compared with the snapshot `tests/ui/out/NAME.snap`. A file named after a code
//! (`e0307_...`) must produce that code, so each test proves the diagnostic it is about.
//!
//! `tests/ui/ir/` holds the IR contract's diagnostics (`.ll` and `.bc` inputs, snapshots in
//! `tests/ui/out/ir/`), `tests/ui/link/` the companion files of the link diagnostics' tests (named
//! by a `// link-with:` line), and a `// emit: host-obj` line gives a file the host object's
//! checks (E0239's).

use cdpc::driver::{self, CompileError};
use cdpc::render::{self, Color};
use cdpc::{Code, Diagnostic};
use cdpc_tests::{cdp_files, options_from_header, repo_root};

/// The options of a ui test file: its header's flags, and its path, so that `#include "..."`
/// finds the headers in `tests/ui/include/` and diagnostics name them relative to the root.
fn ui_options(name: &str, source: &str) -> driver::CompileOptions {
    let mut options = options_from_header(source);
    options.preprocess.input = Some(repo_root().join(format!("tests/ui/{name}.cdp")));
    options.preprocess.input_name = Some(format!("tests/ui/{name}.cdp"));
    options
}

/// A ui test file's diagnostics and the text they are rendered against: the checker's, or the
/// encoding error of a file that is not UTF-8 (`E0008`), as `cdpc` reports it.
fn diagnose(name: &str, bytes: Vec<u8>) -> (Vec<Diagnostic>, String) {
    let source = match driver::decode_source(bytes) {
        Ok(source) => source,
        Err(e) => return (vec![e.diagnostic], e.shown),
    };
    let options = ui_options(name, &source);
    if let Some(result) = link_diagnostics(name, &source, &options) {
        return result;
    }
    // `// emit: host-obj`: the warnings of a host object, which need no NVIDIA tool to find.
    let host_obj = source.lines().any(|l| l.trim() == "// emit: host-obj");
    // `// emit: ptx`: the diagnostics of code generation too (the launch pipeline on LLVM IR:
    // `E0306`, its remarks), which need no NVIDIA tool.
    let ptx = source.lines().any(|l| l.trim() == "// emit: ptx");
    let diagnostics = match driver::check(&source, &options) {
        Ok(checked) if host_obj => checked.warnings.iter().cloned().chain(driver::host::stub_warnings(&checked)).collect(),
        Ok(_) if ptx => match driver::compile(&source, &driver::CompileOptions { emit: driver::Emit::Ptx, ..options }) {
            Ok(compiled) => compiled.warnings,
            Err(CompileError::Diagnostics(d)) => d,
            Err(other) => panic!("{name}: expected diagnostics, got {other}"),
        },
        Ok(checked) => checked.warnings,
        Err(CompileError::Diagnostics(d)) => d,
        Err(other) => panic!("{name}: expected diagnostics, got {other}"),
    };
    (diagnostics, source)
}

/// A file with `// link-with: link/OTHER.cdp` or `// link-libs: NAME` lines is linked (checked as
/// `driver::link::check` does, no NVIDIA tool needed) with the companions of `tests/ui/link/`
/// and those `-l` libraries: its diagnostics are the link's (E08xx), each label in its file.
fn link_diagnostics(name: &str, source: &str, options: &driver::CompileOptions) -> Option<(Vec<Diagnostic>, String)> {
    let header = |key: &str| -> Vec<String> { source.lines().filter_map(|l| l.strip_prefix(key)).flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>()).collect() };
    let (with, libraries) = (header("// link-with:"), header("// link-libs:"));
    if with.is_empty() && libraries.is_empty() {
        return None;
    }
    let root = repo_root();
    let main = root.join(format!("tests/ui/{name}.cdp"));
    let inputs: Vec<driver::Input> = std::iter::once(main).chain(with.iter().map(|w| root.join(format!("tests/ui/{w}")))).map(driver::Input::Source).collect();
    let link = driver::LinkOptions { libraries, library_dirs: vec![root.join("tests/ui/link")] };
    let diagnostics = match driver::link::check(&inputs, &link, options) {
        Ok(_) => Vec::new(),
        Err(driver::BuildError::Link(d)) => d,
        Err(other) => panic!("{name}: expected link diagnostics, got {other}"),
    };
    // Name the files relative to the root, as the other tests do, so that snapshots hold no
    // machine path.
    let prefix = format!("{}/", root.display());
    let relative = |text: &str| text.replace(&prefix, "");
    let diagnostics = diagnostics
        .into_iter()
        .map(|mut d| {
            d.message = relative(&d.message);
            d.notes = d.notes.iter().map(|n| relative(n)).collect();
            for label in &mut d.labels {
                label.message = relative(&label.message);
                if let Some(file) = &label.file {
                    label.file = Some(std::sync::Arc::new(cdpc::diag::SourceFile { name: relative(&file.name), text: file.text.clone() }));
                }
            }
            d
        })
        .collect();
    Some((diagnostics, source.to_string()))
}

fn render_file(name: &str, bytes: Vec<u8>) -> (String, Vec<Code>) {
    let (diagnostics, source) = diagnose(name, bytes);
    let codes = diagnostics.iter().map(|d| d.code).collect();
    (render::human(&diagnostics, &format!("tests/ui/{name}.cdp"), &source, Color::Never), codes)
}

#[test]
fn diagnostics_match_their_snapshots() {
    let dir = repo_root().join("tests/ui");
    for path in cdp_files(&dir) {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let (rendered, codes) = render_file(&name, std::fs::read(&path).unwrap());
        let expected_code = name.split('_').next().unwrap();
        assert!(codes.iter().any(|c| c.as_str().eq_ignore_ascii_case(expected_code)), "{name}: expected a {expected_code} diagnostic, got {codes:?}\n{rendered}");
        insta::with_settings!({ snapshot_path => dir.join("out"), prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name, rendered);
        });
    }
}

/// CUDA C++ files (`tests/ui/cu/NAME.cu`) go through Clang; their diagnostics (Clang's own,
/// `E1000`/`W1001`, and cdpc's about Clang, `E1002`) are rendered and snapshotted like the
/// kernel language's. A `// clang: PATH` header names the Clang to use; `// emit: host-obj`
/// compiles the file as `-dc` does, host side included (`E1020`), and `// emit: obj` to a
/// device object, ptxas included (`E0968`); a `// flags:` first line
/// gives options as in the kernel language's files. A file with a twin of its name in
/// `tests/ui/` (`e0308_device_synchronize.cdp`, the same text) is the kernel language's
/// diagnostic through the other front end: it must say the same thing at the same place
/// (code, severity, message, primary span and label, notes). Skipped with a printed reason
/// where Clang 22 or the NVIDIA tools are missing.
#[test]
fn clang_diagnostics_match_their_snapshots() {
    use cdpc::front::cuda::{find_engine, ClangEnv, ClangSearch};
    if let Err(d) = find_engine(&ClangSearch::default(), &ClangEnv::from_process()) {
        return println!("skipped: {}", d.message);
    }
    if cdpc::toolchain::Toolchain::discover(&Default::default()).is_err() {
        return println!("skipped: the NVIDIA tools are not installed (`cargo xtask setup`)");
    }
    let root = repo_root();
    let dir = root.join("tests/ui/cu");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "cu")).collect();
    files.sort();
    assert!(!files.is_empty());
    let prefix = format!("{}/", root.canonicalize().unwrap().display());
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let source = std::fs::read_to_string(&path).unwrap();
        let mut options = driver::CompileOptions { emit: driver::Emit::Ptx, ..options_from_header(&source) };
        options.preprocess.input = Some(path.clone());
        options.clang.clang = source.lines().find_map(|l| l.strip_prefix("// clang: ")).map(|p| p.trim().into());
        if source.lines().any(|l| l.trim() == "// emit: host-obj") {
            options.emit = driver::Emit::HostObject;
            options.separate = true;
        }
        // `// emit: obj`: ptxas's diagnostics too (`E0968`).
        if source.lines().any(|l| l.trim() == "// emit: obj") {
            options.emit = driver::Emit::Object;
            options.separate = true;
        }
        let diagnostics = match driver::compile(&source, &options) {
            Ok(compiled) => compiled.warnings,
            Err(CompileError::Diagnostics(d)) => d,
            Err(other) => panic!("{name}: expected diagnostics, got {other}"),
        };
        let shown = format!("tests/ui/cu/{name}.cu");
        let rendered = render::human(&diagnostics, &shown, &source, Color::Never).replace(&prefix, "");
        let expected_code = name.split('_').next().unwrap();
        assert!(diagnostics.iter().any(|d| d.code.as_str().eq_ignore_ascii_case(expected_code)), "{name}: expected {expected_code}:\n{rendered}");
        let twin = root.join(format!("tests/ui/{name}.cdp"));
        if twin.exists() {
            let twin_source = std::fs::read_to_string(&twin).unwrap();
            assert_eq!(source, twin_source, "{name}: the .cu file is its .cdp twin's text");
            let (cdp, _) = diagnose(&name, twin_source.into_bytes());
            // What a reader sees of each: the words and the place, not the secondary labels
            // (the kernel language labels a kernel's whole definition, CUDA C++ its name and
            // parameters, from debug information).
            let said = |ds: &[cdpc::Diagnostic]| -> Vec<_> {
                ds.iter()
                    .map(|d| {
                        let primary = d.labels.iter().find(|l| l.primary).map(|l| (l.span, l.message.clone(), l.file.is_none()));
                        (d.code, d.severity, d.message.clone(), primary, d.notes.clone())
                    })
                    .collect()
            };
            assert_eq!(said(&diagnostics), said(&cdp), "{name}: CUDA C++ and the kernel language differ:\n{rendered}");
        }
        // A twin's snapshot is named apart from the kernel language's (`NAME.cu.snap`).
        let snapshot = if twin.exists() { format!("{name}.cu") } else { name };
        insta::with_settings!({ snapshot_path => root.join("tests/ui/out"), prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(snapshot, rendered);
        });
    }
}

/// LLVM IR inputs (`tests/ui/ir/NAME.ll`, `NAME.bc`) under the IR contract (docs/IR-INPUT.md):
/// compiled to PTX, which needs no NVIDIA tool, with the options of a `; flags:` first line,
/// and their diagnostics rendered against the text (none for bitcode) and snapshotted like the
/// others.
#[test]
fn ir_diagnostics_match_their_snapshots() {
    let root = repo_root();
    let mut files: Vec<_> = ir_files();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        // A text file's `; flags: ...` first line, as the kernel language's `// flags:`.
        let mut options = driver::CompileOptions { emit: driver::Emit::Ptx, ..options_from_header(&String::from_utf8_lossy(&bytes)) };
        options.preprocess.input = Some(path.clone());
        let diagnostics = match driver::compile_ir(&bytes, &options) {
            Ok(compiled) => compiled.warnings,
            Err(CompileError::Diagnostics(d)) => d,
            Err(other) => panic!("{name}: expected diagnostics, got {other}"),
        };
        let shown = format!("tests/ui/ir/{}", path.file_name().unwrap().to_string_lossy());
        let rendered = render::human(&diagnostics, &shown, &cdpc::front::ir::shown_text(&bytes), Color::Never);
        let expected_code = name.split('_').next().unwrap();
        assert!(diagnostics.iter().any(|d| d.code.as_str().eq_ignore_ascii_case(expected_code)), "{name}: expected {expected_code}:\n{rendered}");
        insta::with_settings!({ snapshot_path => root.join("tests/ui/out/ir"), prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name, rendered);
        });
    }
}

/// The JSON rendering of pipeline errors in IR without debug locations: in textual IR the
/// label is at the instruction and a note names the function and the instruction; in bitcode
/// (`e1010_escapes_in_bitcode.bc` is `e1010_buffer_escapes.ll` without its comment, through
/// `llvm-as-22`) the label stays at the input's start and the note is the place.
#[test]
fn ir_json_diagnostics_match_their_snapshots() {
    let root = repo_root();
    for file in ["e1010_buffer_escapes.ll", "e1010_escapes_in_bitcode.bc", "e1015_written_after_launch.ll"] {
        let path = root.join("tests/ui/ir").join(file);
        let bytes = std::fs::read(&path).unwrap();
        let mut options = driver::CompileOptions { emit: driver::Emit::Ptx, ..Default::default() };
        options.preprocess.input = Some(path.clone());
        let Err(CompileError::Diagnostics(diagnostics)) = driver::compile_ir(&bytes, &options) else { panic!("{file}: expected diagnostics") };
        let json = render::json(&diagnostics, &format!("tests/ui/ir/{file}"), &cdpc::front::ir::shown_text(&bytes));
        assert!(json.contains("in function `@parent`, "), "{json}");
        assert_eq!(json.contains("\"line_start\":1,"), file.ends_with(".bc"), "{json}");
        let name = format!("ir_{}", file.replace('.', "_"));
        insta::with_settings!({ snapshot_path => root.join("tests/ui/out/json"), prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name, json);
        });
    }
}

fn ir_files() -> Vec<std::path::PathBuf> {
    let dir = repo_root().join("tests/ui/ir");
    std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "ll" || e == "bc")).collect()
}

#[test]
fn every_code_has_a_ui_test() {
    let mut names: Vec<String> = cdp_files(&repo_root().join("tests/ui")).iter().map(|p| p.file_stem().unwrap().to_string_lossy().to_lowercase()).collect();
    names.extend(std::fs::read_dir(repo_root().join("tests/ui/cu")).unwrap().flatten().map(|e| e.path().file_stem().unwrap().to_string_lossy().to_lowercase()));
    names.extend(ir_files().iter().map(|p| p.file_stem().unwrap().to_string_lossy().to_lowercase()));
    // A 64 MiB source is generated by `oversized_source_is_refused` instead of stored. The E07xx
    // codes are about files and tools, not the source: compiler/tests/cli.rs (E0700, E0701),
    // compiler/tests/toolchain_faults.rs (E0702), compiler/tests/interrupt.rs (E0703) and
    // compiler/tests/cli.rs's `io_failures_are_coded_and_leave_nothing_behind` (E0704-E0706).
    // E0707 and E0708 are about the command line: compiler/tests/nvcc_command_line.rs.
    // W0709 (`-arch=native` without a GPU, `-dlto`) is about the command line and the machine:
    // compiler/tests/separate_compilation.rs's `architecture_sets_and_code_lists_build_nvccs_images`
    // hides the GPUs (`CUDA_VISIBLE_DEVICES=`), compiler/tests/nvcc_command_line.rs's
    // `device_link_time_optimisation_is_compiled_without_and_said`.
    // W0801 is about -gencode and a link, not a source: compiler/tests/separate_compilation.rs.
    // E0803 is about a host linker's message: compiler/tests/program_build.rs and
    // `cdpc::driver::program`'s unit tests; E0804 about a foreign link's message and objects:
    // compiler/tests/link_launcher.rs. E0805 is retired; W0807 (host OpenMP without LLVM's
    // runtime, its regions on one thread) is about the installation:
    // compiler/tests/nvcc_dialect.rs's
    // `an_openmp_program_links_llvms_runtime_and_prints_what_nvccs_prints` points
    // `CDPC_LIBOMP_DIR` at an empty folder. E0806 (a program without `main`) is about the host
    // link: compiler/tests/program_build.rs's `a_program_without_main_says_what_to_write_instead`.
    // E1025 (cdpc's own crash) is no input's: compiler/tests/no_crash.rs forces it with
    // `CDPC_DEBUG_CRASH=1` and checks its message, status and reproducer.
    // E1003 (CUDA's headers incomplete) is about the installation: `cdpc::front::cuda`'s unit tests.
    // E1004 (Clang crashed) needs a crash: compiler/tests/cuda_cxx.rs's
    // `a_clang_crash_is_e1004_and_leaves_nothing` makes the shim abort inside Clang's run.
    // E1005 (a malformed `CDPC_CACHE_MAX_SIZE`) is about the environment, which a ui test in this
    // process cannot set for itself alone: compiler/tests/preamble_cache.rs's
    // `a_malformed_bound_is_e1005_...` runs cdpc with it, and `cdpc::front::cuda::cache`'s unit tests.
    // R0504 (the device link's pool decision) is a link's, of objects: compiler/tests/malloc_pool.rs's
    // `by_default_the_device_link_pools_a_program_whose_objects_all_free_through_the_pool`
    // checks both of its messages.
    let generated = [
        Code::MallocPoolDecision,
        Code::SourceTooLarge,
        Code::OutputIsInput,
        Code::OutputNotCompilerOutput,
        Code::ToolTimedOut,
        Code::Interrupted,
        Code::OutputNotWritable,
        Code::InputNotReadable,
        Code::WorkFileFailed,
        Code::OptionUnsupported,
        Code::OptionInvalid,
        Code::OptionFallback,
        Code::PtxOfLinkNotPacked,
        Code::DeviceLinkMissing,
        Code::ForeignLinkFailed,
        Code::OpenMpRuntimeMissing,
        Code::OpenMpRegionsSerial,
        Code::ProgramWithoutMain,
        Code::CudaHeadersNotFound,
        Code::ClangCrashed,
        Code::CacheSizeInvalid,
        Code::InternalError,
    ];
    for code in Code::ALL {
        let prefix = code.as_str().to_lowercase();
        assert!(generated.contains(code) || names.iter().any(|n| n.starts_with(&prefix)), "diagnostic {code} has no test file in tests/ui");
    }
}

#[test]
fn oversized_source_is_refused() {
    let mut source = String::from("__global__ void k(int *p) { p[0] = 1; }\n");
    source.push_str(&"// padding\n".repeat(64 * 1024 * 1024 / 11 + 1));
    let options = options_from_header(&source);
    match driver::check(&source, &options) {
        Err(CompileError::Diagnostics(d)) => assert!(d.iter().any(|d| d.code == Code::SourceTooLarge), "{d:?}"),
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("a source over the size limit compiled"),
    }
}

/// The JSON rendering (`--error-format json`) of a few files, one object per line, snapshotted
/// in `tests/ui/out/json/`: a syntax error, a diagnostic with secondary labels and notes, a
/// warning, an invalid character, a label in an included header, and a source that is not UTF-8.
#[test]
fn json_diagnostics_match_their_snapshots() {
    let dir = repo_root().join("tests/ui");
    for name in ["e0006_syntax_error", "e0307_local_pointer_to_child", "w0209_missing_return", "e0001_invalid_token", "e0606_macro_arguments", "e0008_invalid_utf8"] {
        let (diagnostics, source) = diagnose(name, std::fs::read(dir.join(format!("{name}.cdp"))).unwrap());
        let json = render::json(&diagnostics, &format!("tests/ui/{name}.cdp"), &source);
        assert_eq!(json.lines().count(), diagnostics.len());
        assert!(json.lines().all(|l| l.starts_with("{\"code\":\"") && l.ends_with('}')), "{json}");
        insta::with_settings!({ snapshot_path => dir.join("out/json"), prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name, json);
        });
    }
}
