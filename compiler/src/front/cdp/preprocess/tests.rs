//! Unit tests of the preprocessor. `check(input, expect)` compares the preprocessed text token
//! by token (comments dropped, tokens joined by single spaces), so tests state the tokens, not
//! the spacing.

use super::*;

fn run(input: &str, options: &PreprocessOptions) -> Preprocessed {
    preprocess(input, options, &Target::default())
}

fn fold(text: &str) -> String {
    lexer::lex(text).iter().map(|t| t.text(text).into_owned()).collect::<Vec<_>>().join(" ")
}

fn codes(p: &Preprocessed) -> Vec<&'static str> {
    p.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// Preprocesses `input` with files from the shipped headers only and compares the folded text.
fn check(input: &str, expect: &str) {
    let p = run(input, &PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() });
    let errors: Vec<_> = p.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "unexpected errors for {input:?}: {errors:?}");
    assert_eq!(fold(&p.text), fold(expect), "input: {input:?}\noutput: {:?}", p.text);
}

/// Preprocesses `input` and returns the diagnostic codes.
fn diagnose(input: &str) -> Vec<&'static str> {
    let p = run(input, &PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() });
    codes(&p)
}

#[test]
fn text_without_directives_is_byte_identical_with_an_identity_map() {
    let source = "extern \"C\" __global__ void k(int *p) {\n  // comment\n  p[0] = 1; /* x */\n}\n";
    let p = run(source, &PreprocessOptions::default());
    assert_eq!(p.text, source);
    assert!(p.diagnostics.is_empty());
    assert_eq!(p.map.map_span(crate::diag::Span::new(5, 9)), Loc { file: 0, start: 5, end: 9 });
}

#[test]
fn object_and_function_like_macros() {
    check("#define N 256\nint a[N];", "int a[ 256 ];");
    check("#define SQ(x) ((x) * (x))\nSQ(a + 1)", "((a + 1) * (a + 1))");
    check("#define F(x) x\nF\n(\n1\n)", "1");
    check("#define F(x) x\nF + 1", "F + 1");
    check("#define E()  e\nE()", "e");
    check("#define TWO(a, b) b a\nTWO((1, 2), 3)", "3 (1, 2)");
}

#[test]
fn recursion_stops_expanding() {
    check("#define A A + 1\nA", "A + 1");
    check("#define A B\n#define B A\nA B", "A B");
    // The classic cases of C11 6.10.3.5 example 3.
    check(
        "#define x 3\n#define f(a) f(x * (a))\n#undef x\n#define x 2\n#define g f\n#define z z[0]\n#define h g(~\n#define m(a) a(w)\n#define w 0,1\n#define t(a) a\nf(y+1) + f(f(z)) % t(t(g)(0) + t)(1);\ng(x+(3,4)-w) | h 5) & m\n(f)^m(m);",
        "f(2 * (y+1)) + f(2 * (f(2 * (z[0])))) % f(2 * (0)) + t(1); f(2 * (2+(3,4)-0,1)) | f(2 * (~ 5)) & f(2 * (0,1))^m(0,1);",
    );
}

#[test]
fn stringizing_and_pasting() {
    check("#define S(x) #x\nS(a  +  \"b\\n\")", r#""a + \"b\\n\"""#);
    check("#define CAT(a, b) a ## b\nCAT(foo, bar) CAT(1, 2) CAT(, x) CAT(x, )", "foobar 12 x x");
    check("#define XS(x) S(x)\n#define S(x) #x\n#define V 3\nXS(V) S(V)", "\"3\" \"V\"");
    assert_eq!(diagnose("#define CAT(a, b) a ## b\nCAT(+, /)"), ["E0607"]);
    assert_eq!(diagnose("#define S(x) #y\n"), ["E0607"]);
    assert_eq!(diagnose("#define P ## x\n"), ["E0607"]);
}

#[test]
fn variadic_macros() {
    check("#define P(fmt, ...) printf(fmt, __VA_ARGS__)\nP(\"%d %d\", 1, 2)", "printf(\"%d %d\", 1, 2)");
    check("#define P(fmt, ...) printf(fmt, ## __VA_ARGS__)\nP(\"x\") P(\"%d\", 1)", "printf(\"x\") printf(\"%d\", 1)");
    check("#define P(fmt, args...) f(fmt, args)\nP(a, b, c)", "f(a, b, c)");
    check("#define C(...) #__VA_ARGS__\nC(a, b)", "\"a, b\"");
}

#[test]
fn argument_count_is_checked() {
    assert_eq!(diagnose("#define F(a, b) a\nF(1)"), ["E0606"]);
    assert_eq!(diagnose("#define F(a) a\nF(1, 2)"), ["E0606"]);
    assert_eq!(diagnose("#define F(a) a\nF(1"), ["E0606"]);
    assert_eq!(diagnose("#define F() a\nF(1)"), ["E0606"]);
}

#[test]
fn conditionals() {
    check("#if 1\na\n#else\nb\n#endif", "a");
    check("#if 0\na\n#elif 2 > 1\nb\n#else\nc\n#endif", "b");
    check("#define X\n#ifdef X\na\n#endif\n#ifndef X\nb\n#endif", "a");
    check("#if defined(X) || defined Y\na\n#else\nb\n#endif", "b");
    check("#if 0\n#if 1\na\n#else\nb\n#endif\n#else\nc\n#endif", "c");
    check("#if 0\n#bogus directive\ndon't\n#endif\nok", "ok");
    check("#if -1 < 0u\nunsigned\n#else\nsigned\n#endif", "signed");
    check("#if (2 + 3) * 4 == 20 && 7 / 2 == 3 && -7 % 3 == -1 && (1 << 4) == 16 && ~0 == -1\nok\n#endif", "ok");
    check("#if 0 && 1 / 0\nno\n#else\nyes\n#endif", "yes");
    check("#if 1 ? 2 : 1 / 0\nyes\n#endif", "yes");
    check("#if 'A' == 65 && '\\n' == 10 && '\\377' < 0 && 0x10 == 16 && 010 == 8 && 0b11 == 3\nok\n#endif", "ok");
    check("#define V 3\n#if V >= 3 && UNDEFINED == 0 && true\nok\n#endif", "ok");
    check("#if __has_include(<cstdio>) && !__has_include(<nope.h>)\nok\n#endif", "ok");
}

#[test]
fn conditional_errors() {
    assert_eq!(diagnose("#endif"), ["E0604"]);
    assert_eq!(diagnose("#if 1\n"), ["E0604"]);
    assert_eq!(diagnose("#if 1\n#else\n#elif 1\n#endif"), ["E0604"]);
    assert_eq!(diagnose("#if 1 / 0\n#endif"), ["E0605"]);
    assert_eq!(diagnose("#if\n#endif"), ["E0605"]);
    assert_eq!(diagnose("#if 1.0\n#endif"), ["E0605"]);
    assert_eq!(diagnose("#if (1\n#endif"), ["E0605"]);
    assert_eq!(diagnose("#if 1 +\n#endif"), ["E0605"]);
    assert_eq!(diagnose(&format!("#if {}1{}\n#endif", "(".repeat(300), ")".repeat(300))), ["E0605"]);
}

#[test]
fn deep_if_nesting_costs_no_recursion() {
    let n = 10_000;
    let source = format!("{}x\n{}", "#if 1\n".repeat(n), "#endif\n".repeat(n));
    check(&source, "x");
}

#[test]
fn predefined_macros() {
    check("__CUDACC__ __CUDA_ARCH__ __CUDACC_RDC__ __cplusplus __CDPC__ __LP64__", "1 900 1 201703L 1 1");
    check("__CUDACC_VER_MAJOR__ __CUDACC_VER_MINOR__", "13 5");
    check("__LINE__\n\n__LINE__ __FILE__", "1 3 \"<input>\"");
    check("__COUNTER__ __COUNTER__", "0 1");
    check("#define L __LINE__\n\nL", "3");
    let sm80 = Target { sm: crate::target::SmVersion(80), ..Target::default() };
    let p = preprocess("__CUDA_ARCH__", &PreprocessOptions::default(), &sm80);
    assert_eq!(fold(&p.text), "800");
}

#[test]
fn command_line_macros_apply_in_order() {
    let options = PreprocessOptions {
        macros: vec![
            MacroOption::Define("A".into()),
            MacroOption::Define("B=2 + 3".into()),
            MacroOption::Define("F(x)=x x".into()),
            MacroOption::Define("C=1".into()),
            MacroOption::Undefine("C".into()),
            MacroOption::Undefine("__CUDACC__".into()),
        ],
        files: FileAccess::ShippedOnly,
        ..Default::default()
    };
    let p = run("A B F(y) C __CUDACC__", &options);
    assert_eq!(fold(&p.text), "1 2 + 3 y y C __CUDACC__");
}

#[test]
fn shipped_headers_and_skipped_host_headers() {
    check("#include <climits>\n#include <cstdio>\nINT_MAX NULL", "2147483647 0");
    check("#include <cstdint>\n#include <cstdint>\nuint32_t", "unsigned int");
    let p = run("#include <iostream>\n#include <thrust/sort.h>\n#include <iostream>\nx", &PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() });
    assert_eq!(codes(&p), ["R0611", "R0611", "R0611"]);
    assert_eq!(p.skipped_headers, ["<iostream>", "<thrust/sort.h>"]);
    assert_eq!(diagnose("#include \"missing.h\""), ["E0602"]);
    assert_eq!(diagnose("#include missing"), ["E0601"]);
    // Found by the preprocessor fuzz run: an unterminated name ending in a multi-byte character.
    assert_eq!(diagnose("#include \"x.h\u{fffd}\n"), ["E0601"]);
    assert_eq!(diagnose("#include \""), ["E0601"]);
    check("#define H <cstdio>\n#include H\nok", "ok");
}

#[test]
fn directives_that_are_kept_ignored_or_reported() {
    check("#pragma unroll 4\nfor", "#pragma unroll 4\nfor");
    check("#line 10\n# 5 \"x.c\"\n#ident \"x\"\n#\nok", "ok");
    assert_eq!(diagnose("#error stop here\n"), ["E0603"]);
    assert_eq!(diagnose("#warning careful\n"), ["W0610"]);
    // `#pragma message`, with parentheses or without, its literals joined: the remark R1034 and
    // no line for the lexer; one whose operand is no string literal is kept as other pragmas.
    for (input, said) in
        [("#pragma message (\"a b\")\nok", "#pragma message: \"a b\""), ("#pragma message \"a\"\nok", "#pragma message: \"a\""), ("#pragma message(\"a\" \"b\")\nok", "#pragma message: \"ab\"")]
    {
        let p = run(input, &PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() });
        assert_eq!(codes(&p), ["R1034"], "{input}");
        assert_eq!(p.diagnostics[0].message, said);
        assert_eq!(p.diagnostics[0].severity, crate::diag::Severity::Remark);
        assert_eq!(fold(&p.text), "ok", "{input}");
    }
    check("#pragma message(FOO)\nok", "#pragma message(FOO)\nok");
    assert_eq!(diagnose("#pragma message\n#pragma message ()\n"), Vec::<&str>::new());
    assert_eq!(diagnose("#frobnicate\n"), ["E0600"]);
    assert_eq!(diagnose("#define 3 x\n"), ["E0601"]);
    assert_eq!(diagnose("#define F(a, a) a\n"), ["E0601"]);
    assert_eq!(diagnose("#define X 1\n#define X 2\n"), ["W0609"]);
    assert_eq!(diagnose("#define X  1 \n#define X 1\n"), Vec::<&str>::new());
}

#[test]
fn errors_name_the_line_in_the_file() {
    let p = run("int a;\n#error here\n", &PreprocessOptions::default());
    let d = &p.diagnostics[0];
    assert_eq!(d.primary_span(), crate::diag::Span::new(7, 18));
    assert!(d.labels[0].file.is_none());
}

#[test]
fn exponential_macros_hit_the_limit() {
    let mut source = String::from("#define X0 a\n");
    for i in 1..40 {
        source.push_str(&format!("#define X{i} X{} X{}\n", i - 1, i - 1));
    }
    source.push_str("X39\n");
    let started = std::time::Instant::now();
    let p = run(&source, &PreprocessOptions::default());
    assert_eq!(codes(&p), ["E0608"]);
    assert!(p.text.is_empty(), "no partial output after a limit");
    assert!(started.elapsed().as_secs() < 60);
}

#[test]
fn expansion_maps_back_to_the_invocation_with_its_chain() {
    let source = "#define INNER bad\n#define OUTER(x) x + INNER\nint y = OUTER(1);\n";
    let p = run(source, &PreprocessOptions::default());
    let at = p.text.find("bad").unwrap();
    let loc = p.map.map_span(crate::diag::Span::new(at, at + 3));
    assert_eq!(&source[loc.start as usize..loc.end as usize], "OUTER(1)");
    let chain = p.map.expansion_chain(at as u32);
    let names: Vec<&str> = chain.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["INNER", "OUTER"]);
    assert_eq!(&source[chain[0].0.start as usize..chain[0].0.end as usize], "bad");
    assert_eq!(&source[chain[1].0.start as usize..chain[1].0.end as usize], "INNER");
    // An argument maps to itself.
    let one = p.text.find("1 +").unwrap();
    let loc = p.map.map_span(crate::diag::Span::new(one, one + 1));
    assert_eq!(&source[loc.start as usize..loc.end as usize], "1");
}

#[test]
fn every_shipped_header_preprocesses_cleanly_twice() {
    for name in headers::names() {
        let source = format!("#include <{name}>\n#include <{name}>\n");
        let p = run(&source, &PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() });
        assert!(p.diagnostics.is_empty(), "<{name}>: {:?}", p.diagnostics);
    }
}

#[test]
fn cuda_runtime_h_brings_limits_h_as_cuda_13_5_does() {
    // Measured in the wheels' headers: cuda_runtime.h -> builtin_types.h -> driver_types.h ->
    // <limits.h>; KLAP's BFS uses UINT_MAX with only <cuda_runtime_api.h> included.
    check("#include <cuda_runtime_api.h>\nunsigned m = UINT_MAX;", "unsigned m = 4294967295U;");
    check("#include <cuda.h>\nint m = INT_MAX;", "int m = 2147483647;");
}

#[test]
fn a_directive_ending_in_a_splice_before_an_empty_line_leaves_no_backslash() {
    // lonestargpu's cutil_subset.h: `#define CUDA_SAFE_CALL(call) ...; \` then a blank line.
    let p = run("#define A(c) B(c);   \\\n\nint x;\n", &PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() });
    assert!(!p.text.contains('\\'), "{:?}", p.text);
    assert_eq!(fold(&p.text), "int x ;");
}
