//! Hostile and extreme sources: each gives a diagnostic with a code and a span, or compiles;
//! none panics, overflows the stack, hangs or takes unbounded memory. The limits are those of
//! `cdpc::front::cdp::syntax` (docs/KERNEL-LANGUAGE.md, "Limits"). Each test runs on a thread with the test harness's usual
//! 2 MiB stack and a generous time bound; the CLI cases also run under `ulimit -v`.

use cdpc::driver::{self, CompileError, CompileOptions};
use cdpc::{Code, Diagnostic};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a fresh thread with a 2 MiB stack (what `cargo test` gives each test) and fails
/// if it takes longer than `secs`.
fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("took longer than {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the compilation panicked"),
    }
}

/// The diagnostics of checking `source` (empty when it compiles), after checking their spans.
fn check(source: String) -> Vec<Diagnostic> {
    bounded(60, move || {
        let diags = match driver::check(&source, &CompileOptions::default()) {
            Ok(checked) => checked.warnings,
            Err(CompileError::Diagnostics(d)) => {
                assert!(d.iter().any(Diagnostic::is_error));
                d
            }
            Err(other) => panic!("{other}"),
        };
        cdpc::fuzzing::assert_spans_valid(&source, &diags);
        diags
    })
}

/// PTX for `source` at `opt_level` (no libdevice, no ptxas).
fn ptx(source: String, opt_level: u8) -> String {
    bounded(120, move || {
        let options = CompileOptions { opt_level, emit: driver::Emit::Ptx, ..CompileOptions::default() };
        match driver::compile(&source, &options) {
            Ok(compiled) => String::from_utf8(compiled.output).expect("PTX is text"),
            Err(CompileError::Diagnostics(d)) => panic!("{d:#?}"),
            Err(e) => panic!("{e}"),
        }
    })
}

fn codes(diags: &[Diagnostic]) -> Vec<Code> {
    diags.iter().map(|d| d.code).collect()
}

fn assert_code(diags: &[Diagnostic], code: Code) {
    assert!(diags.iter().any(|d| d.code == code), "expected {code}, got {:?}", codes(diags));
}

const KERNEL_START: &str = "__global__ void k(int *p, int x) {\n";

// ---------------------------------------------------------------------------------------------
// Depth

#[test]
fn ten_thousand_nested_parentheses() {
    let src = format!("{KERNEL_START}p[0] = {}x{};\n}}\n", "(".repeat(10_000), ")".repeat(10_000));
    assert_code(&check(src), Code::NestingTooDeep);
}

#[test]
fn ten_thousand_nested_blocks() {
    let src = format!("{KERNEL_START}{}p[0] = 1;{}\n}}\n", "{".repeat(10_000), "}".repeat(10_000));
    assert_code(&check(src), Code::NestingTooDeep);
}

#[test]
fn ten_thousand_unary_operators_and_a_long_operator_chain() {
    let src = format!("{KERNEL_START}p[0] = {}x;\n}}\n", "- ".repeat(10_000));
    assert_code(&check(src), Code::NestingTooDeep);
    let src = format!("{KERNEL_START}p[0] = x{};\n}}\n", " + x".repeat(10_000));
    assert_code(&check(src), Code::NestingTooDeep);
}

#[test]
fn ten_thousand_else_ifs() {
    let src = format!("{KERNEL_START}if (x == 0) p[0] = 0;{}\n}}\n", " else if (x) p[0] = 1;".repeat(10_000));
    assert_code(&check(src), Code::NestingTooDeep);
}

/// Just inside the limits: sema and code generation recurse over these trees and must fit in
/// a 2 MiB stack at every optimisation level.
#[test]
fn deepest_accepted_trees_compile_on_a_small_stack() {
    let n = 500; // below MAX_TREE_DEPTH (512), counting the statement and the assignment
    let cases = [
        format!("{KERNEL_START}p[0] = {}x;\n}}\n", "- ".repeat(n)),
        format!("{KERNEL_START}p[0] = {}x;\n}}\n", "!".repeat(n)),
        format!("{KERNEL_START}p[0] = x{};\n}}\n", " + x".repeat(n)),
        format!("{KERNEL_START}p[0] = {}0;\n}}\n", "x ? x : ".repeat(n)),
        format!("{KERNEL_START}p[0] = {}x{};\n}}\n", "(".repeat(250), ")".repeat(250)),
        format!("{KERNEL_START}{}p[0] = 1;{}\n}}\n", "{".repeat(250), "}".repeat(250)),
        format!("{KERNEL_START}{}p[0] = 1;\n}}\n", "if (x) ".repeat(n)),
        format!("{KERNEL_START}{}p[0] = 1;\n}}\n", "while (x) ".repeat(n)),
        format!("{KERNEL_START}if (x == 0) p[0] = 0;{}\n}}\n", " else if (x) p[0] = 1;".repeat(n / 2 - 5)),
        format!("{KERNEL_START}p[0] = {}x{};\n}}\n", "(int)(".repeat(120), ")".repeat(120)),
        format!("{KERNEL_START}p[0] = {}x;\n}}\n", "x = ".repeat(n)),
    ];
    for (i, src) in cases.into_iter().enumerate() {
        println!("case {i}");
        let diags = check(src.clone());
        assert!(diags.is_empty(), "case {i}: {:?}", codes(&diags));
        for level in [0, 3] {
            assert!(ptx(src.clone(), level).contains(".entry"), "case {i} -O{level}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Size

#[test]
fn fifty_megabyte_source() {
    // 20,000 small device functions (about 1 MB) and 49 MB of comments and blank lines.
    let mut src = String::with_capacity(51 << 20);
    for i in 0..20_000 {
        src.push_str(&format!("__device__ int f{i}(int x) {{ return x + {i}; }}\n"));
    }
    src.push_str("__global__ void k(int *p) { p[0] = f0(1) + f19999(2); }\n");
    let filler = "// filler filler filler filler filler filler filler filler filler filler\n\n";
    while src.len() < 50 << 20 {
        src.push_str(filler);
    }
    let diags = check(src);
    assert!(diags.is_empty(), "{:?}", codes(&diags));
}

#[test]
fn one_megabyte_lines() {
    // A 1 MB identifier, a 1 MB string literal, and a 1 MB line of statements.
    let name = "a".repeat(1 << 20);
    let src = format!("{KERNEL_START}int {name} = x; p[0] = {name};\n}}\n");
    assert!(check(src).is_empty());
    let text = "x".repeat(1 << 20);
    let src = format!("#include <cstdio>\n{KERNEL_START}printf(\"{text}\");\n}}\n");
    assert!(check(src).is_empty());
    let line = "p[0] += x; ".repeat((1 << 20) / 11);
    let src = format!("{KERNEL_START}{line}\n}}\n");
    assert!(check(src).is_empty());
    // A diagnostic at the end of a 1 MB line.
    let src = format!("{KERNEL_START}{line} undefined_name = 1;\n}}\n");
    let diags = check(src.clone());
    assert_code(&diags, Code::UnknownName);
    let rendered = cdpc::render::json(&diags, "long.cdp", &src);
    assert!(rendered.contains("\"line_start\":2"), "{}", &rendered[..200.min(rendered.len())]);
}

// ---------------------------------------------------------------------------------------------
// Bad bytes and bad tokens

#[test]
fn nul_bytes() {
    let diags = check(format!("{KERNEL_START}p[0] = 1;\0\0 p[1] = 2;\n}}\n"));
    assert_code(&diags, Code::InvalidToken);
    let diags = check("\0".repeat(100_000));
    assert_code(&diags, Code::InvalidToken);
    assert!(diags.len() <= 1000, "{} diagnostics for NUL bytes", diags.len());
}

#[test]
fn unterminated_comments_strings_and_characters() {
    assert_code(&check(format!("{KERNEL_START}/* never closed\n p[0] = 1;\n}}\n")), Code::UnterminatedComment);
    assert_code(&check(format!("{KERNEL_START}printf(\"never closed\n);\n}}\n")), Code::UnterminatedLiteral);
    assert_code(&check(format!("{KERNEL_START}p[0] = 'a")), Code::UnterminatedLiteral);
    assert_code(&check(format!("{KERNEL_START}printf(\"ends in a backslash\\")), Code::UnterminatedLiteral);
    assert_code(&check("/*".into()), Code::UnterminatedComment);
}

#[test]
fn integer_literals_out_of_range() {
    for literal in ["18446744073709551616", "0xffffffffffffffffff", "99999999999999999999999999999999999999", "0777777777777777777777777"] {
        let diags = check(format!("{KERNEL_START}p[0] = {literal};\n}}\n"));
        assert_code(&diags, Code::IntegerLiteralOutOfRange);
    }
    // The largest ones are fine.
    assert!(check(format!("{KERNEL_START}p[0] = (int)18446744073709551615u + (int)0xffffffffffffffff;\n}}\n")).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Big programs

#[test]
fn kernel_with_a_thousand_parameters_launched_from_the_device() {
    let params: Vec<String> = (0..1000).map(|i| format!("int a{i}")).collect();
    let args: Vec<String> = (0..1000).map(|i| format!("{i}")).collect();
    let src = format!("__global__ void wide({}) {{ }}\n__global__ void k(int *p) {{ wide<<<1, 1>>>({}); }}\n", params.join(", "), args.join(", "));
    assert!(check(src.clone()).is_empty());
    let ptx = ptx(src, 0);
    assert!(ptx.contains("_param_999"), "the 1000th parameter is in the PTX");
}

#[test]
fn ten_thousand_launches_in_one_function() {
    let body = "child<<<1, 1>>>(p);\n".repeat(10_000);
    let src = format!("__global__ void child(int *p) {{ p[0] = 1; }}\n__global__ void k(int *p) {{\n{body}}}\n");
    assert!(check(src.clone()).is_empty());
    let ptx = ptx(src, 0);
    assert!(launch_sites(&ptx) >= 10_000);
}

/// Launches in the PTX: in place, or (past `cdpc::front::cdp::codegen::INLINE_LAUNCHES` in one function) as
/// calls of the shared helper.
fn launch_sites(ptx: &str) -> usize {
    // The helper is named after the child's symbol (`__cdpc_launch__Z5childPi` when mangled);
    // a call names it followed by its arguments, `NAME, (`.
    let helper_calls =
        ptx.match_indices(" __cdpc_launch_").filter(|(at, _)| ptx[at + 1..].split_once(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).is_some_and(|(_, rest)| rest.starts_with(" ("))).count();
    ptx.matches("__cudaCDP2LaunchDeviceV2").count() + helper_calls
}

#[test]
fn ten_thousand_launches_in_one_expression() {
    // A launch is a void expression; comma operators chain them in one statement, up to the
    // limit on operators per statement.
    let chain = vec!["child<<<1, 1>>>(p)"; 10_000].join(", ");
    let src = format!("__global__ void child(int *p) {{ p[0] = 1; }}\n__global__ void k(int *p) {{\n{chain};\n}}\n");
    assert_code(&check(src), Code::NestingTooDeep);
    let chain = vec!["child<<<1, 1>>>(p)"; 200].join(", ");
    let src = format!("__global__ void child(int *p) {{ p[0] = 1; }}\n__global__ void k(int *p) {{\n{chain};\n}}\n");
    assert!(check(src.clone()).is_empty());
    assert!(launch_sites(&ptx(src, 0)) >= 200);
}

#[test]
fn recursion_between_device_functions() {
    let src = "__device__ int odd(int n);\n\
               __device__ int even(int n) { return n == 0 ? 1 : odd(n - 1); }\n\
               __device__ int odd(int n) { return n == 0 ? 0 : even(n - 1); }\n\
               __device__ int self(int n) { return n <= 1 ? 1 : n * self(n - 1); }\n\
               __global__ void k(int *p) { p[0] = even(p[1]) + self(p[2]); }\n";
    assert!(check(src.into()).is_empty());
    assert!(ptx(src.into(), 3).contains(".entry"));
}

#[test]
fn structs_that_contain_themselves() {
    assert_code(&check("struct S { int a; S inner; };\n__global__ void k(S *p) { }\n".into()), Code::InvalidDeclaration);
    // Through another struct, and through an array.
    let src = "struct A;\nstruct B { A a; };\nstruct A { B b; };\n__global__ void k(A *p) { }\n";
    assert!(!check(src.into()).is_empty());
    let src = "struct S { S items[4]; };\n__global__ void k(S *p) { }\n";
    assert!(!check(src.into()).is_empty());
    // A pointer to itself is fine.
    let src = "struct Node { int v; Node *next; };\n__global__ void k(Node *p) { p->next->v = 1; }\n";
    assert!(check(src.into()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// The command line

fn cdpc_limited(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    // At most 4 GiB of address space and 120 s, whatever the input.
    Command::new("sh").current_dir(dir).arg("-c").arg("ulimit -v 4194304; exec timeout 120 \"$0\" \"$@\"").arg(env!("CARGO_BIN_EXE_cdpc")).args(args).output().expect("cdpc runs")
}

#[test]
fn cli_invalid_utf8_names_the_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = KERNEL_START.as_bytes().to_vec();
    let offset = bytes.len() + 7;
    bytes.extend_from_slice(b"p[0] = \xff\xfe 1;\n}\n");
    std::fs::write(dir.path().join("bad.cdp"), &bytes).unwrap();
    let out = cdpc_limited(dir.path(), &["bad.cdp", "--emit", "ptx", "-o", "bad.ptx"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bad.cdp") && stderr.contains(&format!("offset {offset}")), "{stderr}");
    assert!(!dir.path().join("bad.ptx").exists());
    // And as JSON.
    let out = cdpc_limited(dir.path(), &["bad.cdp", "--emit", "ptx", "--error-format", "json"]);
    let line = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert!(v["message"].as_str().unwrap().contains(&format!("offset {offset}")), "{v}");
    assert_eq!(v["code"], "E0008", "{v}");
    // 0xFF and 0xFE are two separate invalid bytes: the label covers the first, a note counts the other.
    assert_eq!((v["labels"][0]["byte_start"].as_u64(), v["labels"][0]["byte_end"].as_u64()), (Some(offset as u64), Some(offset as u64 + 1)), "{v}");
    assert!(v["notes"].to_string().contains("1 more byte further on is not UTF-8"), "{v}");
}

#[test]
fn invalid_utf8_sequences_are_spanned_whole_and_offsets_kept() {
    // A truncated three-byte character at the very end, after a valid multi-byte one.
    let e = driver::decode_source("é = 1;\n\u{20AC}".as_bytes()[..10].to_vec()).unwrap_err();
    assert_eq!(e.diagnostic.code, Code::InvalidUtf8);
    assert_eq!(e.diagnostic.primary_span().range(), 8..10);
    assert_eq!(e.shown, "é = 1;\n??");
    assert!(e.diagnostic.labels[0].message.contains("0xE2 0x82"), "{:?}", e.diagnostic);
    // Valid text comes back unchanged.
    assert_eq!(driver::decode_source("é\u{20AC}".as_bytes().to_vec()).unwrap(), "é\u{20AC}");
}

/// 50 MB of `(` after `prefix`, through the CLI under `ulimit -v`: `E0400`, quickly.
fn fifty_megabytes_of_parens_are_refused(prefix: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut src = format!("{prefix}{KERNEL_START}");
    while src.len() < 50 << 20 {
        src.push_str(&"(".repeat(1 << 20));
    }
    std::fs::write(dir.path().join("deep.cdp"), &src).unwrap();
    let out = cdpc_limited(dir.path(), &["deep.cdp", "--emit", "ptx", "--error-format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", &stderr[..stderr.len().min(2000)]);
    assert!(stderr.contains("\"code\":\"E0400\""), "{}", &stderr[..stderr.len().min(2000)]);
}

#[test]
fn cli_fifty_megabytes_of_deep_nesting_is_refused_quickly() {
    fifty_megabytes_of_parens_are_refused("");
}

/// The same after a directive, so that the preprocessor tokenizes all of it (12 bytes a token).
#[test]
fn cli_fifty_megabytes_of_deep_nesting_after_a_define_is_refused_quickly() {
    fifty_megabytes_of_parens_are_refused("#define N 1\n");
}

// ---------------------------------------------------------------------------------------------
// Regressions

/// logos restarted itself recursively after each skipped comment or whitespace run, so a file
/// of many comment lines overflowed the stack in the lexer (found by `fifty_megabyte_source`).
#[test]
fn regression_comment_lines_overflowed_the_lexer_stack() {
    let src = "// a comment line\n/* a block */\n#pragma x\n".repeat(200_000);
    let (tokens, diags) = std::thread::Builder::new().stack_size(256 << 10).spawn(move || cdpc::front::cdp::syntax::lex_only(&src)).unwrap().join().expect("the lexer ran on a 256 KiB stack");
    assert!(tokens.is_empty() && diags.is_empty());
}

/// Each NUL byte of a run was its own diagnostic: 100,000 NULs gave 100,000 errors.
#[test]
fn regression_a_run_of_nul_bytes_is_one_diagnostic() {
    let diags = check(format!("{KERNEL_START}{}\n}}\n", "\0".repeat(1000)));
    let nul: Vec<&Diagnostic> = diags.iter().filter(|d| d.message.contains("NUL")).collect();
    assert_eq!(nul.len(), 1, "{diags:?}");
    assert_eq!(nul[0].message, "1000 NUL bytes in source");
}

/// Every bad character was a diagnostic, each rendered with its whole line: 5 million `@` on
/// one 10 MB line took gigabytes of memory and printed a 10 MB line 5 million times.
#[test]
fn regression_many_errors_on_a_long_line_are_capped_and_not_printed_whole() {
    let src = "@ ".repeat(200_000);
    let diags = check(src.clone());
    assert_eq!(diags.len(), cdpc::diag::MAX_DIAGNOSTICS);
    assert!(diags.last().unwrap().notes.iter().any(|n| n.contains("199800 more diagnostics are not shown")), "{:?}", diags.last());
    let text = cdpc::render::human(&diags, "at.cdp", &src, cdpc::render::Color::Never);
    assert!(text.len() < 100_000, "{} bytes of text", text.len());
    assert!(text.contains("at.cdp:1:399: this character does not start any token"), "{}", &text[..500]);
    // Sema too.
    let diags = check(format!("{KERNEL_START}{}}}\n", "undefined_name;\n".repeat(20_000)));
    assert_eq!(diags.len(), cdpc::diag::MAX_DIAGNOSTICS);
    assert_code(&diags, Code::UnknownName);
}

// The preprocessor's limits (docs/KERNEL-LANGUAGE.md, "Limits"; `cdpc::front::cdp::preprocess`).

/// Checks `source`, whose `"..."` headers are looked up in `dir`.
fn check_in(dir: &std::path::Path, source: String) -> Vec<Diagnostic> {
    let input = dir.join("main.cu");
    bounded(60, move || {
        let mut options = CompileOptions::default();
        options.preprocess.input = Some(input);
        match driver::check(&source, &options) {
            Ok(checked) => checked.warnings,
            Err(CompileError::Diagnostics(d)) => d,
            Err(other) => panic!("{other}"),
        }
    })
}

#[test]
fn include_cycles_without_guards_end_at_the_depth_limit() {
    let dir = tempfile::tempdir().unwrap();
    // Each header includes both, twice: without a depth limit this is 4^200 inclusions.
    std::fs::write(dir.path().join("a.h"), "#include \"b.h\"\n#include \"a.h\"\n").unwrap();
    std::fs::write(dir.path().join("b.h"), "#include \"a.h\"\n#include \"b.h\"\n").unwrap();
    let d = check_in(dir.path(), "#include \"a.h\"\n__global__ void k() {}\n".into());
    assert_eq!(codes(&d), [Code::PreprocessorLimit], "{d:?}");
    assert!(d[0].message.contains("nested too deeply"));
    // With guards the same cycle is fine.
    std::fs::write(dir.path().join("a.h"), "#pragma once\n#include \"b.h\"\n#include \"a.h\"\n").unwrap();
    std::fs::write(dir.path().join("b.h"), "#ifndef B\n#define B\n#include \"a.h\"\n#include \"b.h\"\n#endif\n").unwrap();
    assert!(check_in(dir.path(), "#include \"a.h\"\n__global__ void k() {}\n".into()).is_empty());
}

#[test]
fn recursive_macros_stop_expanding() {
    // A becomes `A * 2 + 1`: the inner A is painted blue and left for sema, which does not know it.
    let d = check("#define A B + 1\n#define B A * 2\n#define F(x) F(x) + 1\n__global__ void k(int *p) { p[0] = A; p[1] = F(2); }\n".into());
    assert_eq!(codes(&d), [Code::UnknownName, Code::UnknownName], "{d:?}");
    assert!(d[0].message.contains("`A`") && d[1].message.contains("`F`"), "{d:?}");
}

#[test]
fn ten_thousand_nested_ifs() {
    let n = 10_000;
    let source = format!("{}__global__ void k(int *p) {{ p[0] = 1; }}\n{}", "#if 1\n".repeat(n), "#endif\n".repeat(n));
    assert!(check(source).is_empty());
    let unclosed = format!("{}__global__ void k() {{}}\n", "#ifdef X\n".repeat(n));
    assert_eq!(codes(&check(unclosed)), [Code::UnbalancedConditional]);
}

#[test]
fn a_macro_expanding_to_megabytes_is_refused() {
    // Each level doubles: X24 would be 16 million tokens.
    let mut source = String::from("#define X0 1+\n");
    for i in 1..=24 {
        source.push_str(&format!("#define X{i} X{} X{}\n", i - 1, i - 1));
    }
    source.push_str("__global__ void k(int *p) { p[0] = X24 1; }\n");
    let d = check(source);
    assert_eq!(codes(&d), [Code::PreprocessorLimit], "{d:?}");
    // Half a megabyte of expansion is fine.
    let mut source = String::from("#define X0 1+\n");
    for i in 1..=16 {
        source.push_str(&format!("#define X{i} X{} X{}\n", i - 1, i - 1));
    }
    source.push_str("__global__ void k(int *p) { p[0] = (X16 1); }\n");
    let d = check(source);
    assert!(d.iter().all(|d| d.code != Code::PreprocessorLimit), "{d:?}");
}

#[test]
fn deeply_nested_macro_arguments_are_refused() {
    let n = 5_000;
    let source = format!("#define F(x) x\n__global__ void k(int *p) {{ p[0] = {}1{}; }}\n", "F(".repeat(n), ")".repeat(n));
    assert_eq!(codes(&check(source)), [Code::PreprocessorLimit]);
}

#[test]
fn reading_a_device_file_is_an_error_not_a_hang() {
    let d = check("#include \"/dev/zero\"\n__global__ void k() {}\n".into());
    assert_eq!(codes(&d), [Code::IncludeNotFound], "{d:?}");
}
