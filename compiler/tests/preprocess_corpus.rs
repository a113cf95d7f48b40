//! The preprocessor on real programs and against gcc.
//!
//! `corpus_preprocesses_without_errors`: every `.cu`, `.h`, `.cuh` and `.hpp` of the shared
//! corpus (`../shared/corpus` beside the checkout; skipped with a printed reason when absent),
//! with the `-I` folders its Makefiles use, must preprocess with no error (parsing the result is
//! the C++ front end's business, not this test's). The one exception is [`ABSENT`]: headers
//! the Makefiles find in folders the corpus does not carry; their `E0602` is the right answer.
//!
//! `expansion_matches_gcc`: tricky macro cases, preprocessed by cdpc and by `gcc -E -P` (the
//! oracle; skipped when gcc is absent), must give the same tokens.

use cdpc::front::cdp::preprocess::{preprocess, FileAccess, PreprocessOptions};
use cdpc::{Code, Target};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| ["cu", "h", "cuh", "hpp"].contains(&e.to_str().unwrap_or(""))) {
            out.push(path);
        }
    }
}

/// Quoted headers the corpus's programs include but the corpus does not hold: KLAP's copy of
/// CUB (`klap/include/cub/`) was not kept with it.
const ABSENT: &[&str] = &["\"cub/cub/cub.cuh\""];

#[test]
fn corpus_preprocesses_without_errors() {
    let corpus = repo_root().join("../shared/corpus");
    if !corpus.is_dir() {
        println!("skipped: no corpus at {}", corpus.display());
        return;
    }
    let mut files = Vec::new();
    files_under(&corpus, &mut files);
    files.sort();
    assert!(files.len() > 20, "the corpus has {} files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let Ok(source) = std::fs::read_to_string(path) else { continue };
        // The Makefiles: KLAP's `-I. -I../../include`, cuda-samples' `-I../Common`.
        let dir = path.parent().unwrap().to_path_buf();
        let include_dirs = if path.components().any(|c| c.as_os_str() == "klap") { vec![dir.clone(), corpus.join("klap/include")] } else { vec![dir.clone(), corpus.join("cuda-samples/Common")] };
        let options = PreprocessOptions { input: Some(path.clone()), include_dirs, ..Default::default() };
        let p = cdpc::driver::on_large_stack(|| preprocess(&source, &options, &Target::default()));
        let errors: Vec<String> = p
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .filter(|d| !(d.code == Code::IncludeNotFound && ABSENT.iter().any(|h| d.message.contains(h))))
            .map(|d| format!("{} {} {:?}", d.code, d.message, d.labels.first().map(|l| l.span)))
            .collect();
        if !errors.is_empty() {
            failures.push(format!("{}: {errors:?}", path.display()));
        }
        assert!(p.diagnostics.iter().all(|d| d.code != Code::PreprocessorLimit));
    }
    println!("preprocessed {} corpus files", files.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The tokens of `text`, one per line, comments and line structure dropped: what both
/// preprocessors must agree on.
fn tokens(text: &str) -> Vec<String> {
    let (ranges, _) = cdpc::front::cdp::syntax::lex_only(text);
    ranges.into_iter().map(|r| text[r].to_string()).collect()
}

const TRICKY: &[&str] = &[
    "#define x 3\n#define f(a) f(x * (a))\n#undef x\n#define x 2\n#define g f\n#define z z[0]\n#define h g(~\n#define m(a) a(w)\n#define w 0,1\n#define t(a) a\n#define p() int\n#define q(x) x\n#define r(x,y) x ## y\nf(y+1) + f(f(z)) % t(t(g)(0) + t)(1);\ng(x+(3,4)-w) | h 5) & m\n(f)^m(m);\np() i[q()] = { q(1), r(2,3), r(4,), r(,5), r(,) };\n",
    "#define str(s) # s\n#define xstr(s) str(s)\n#define debug(s, t) printf(\"x\" # s \"= %d, x\" # t \"= %s\", x ## s, x ## t)\n#define INCFILE(n) vers ## n\n#define glue(a, b) a ## b\n#define xglue(a, b) glue(a, b)\n#define HIGHLOW \"hello\"\n#define LOW LOW \", world\"\ndebug(1, 2);\nglue(HIGH, LOW);\nxglue(HIGH, LOW)\n",
    "#define hash_hash # ## #\n#define mkstr(a) # a\n#define in_between(a) mkstr(a)\n#define join(c, d) in_between(c hash_hash d)\nchar p[] = join(x, y);\n",
    "#define t(x,y,z) x ## y ## z\nint j[] = { t(1,2,3), t(,4,5), t(6,,7), t(8,9,), t(10,,), t(,11,), t(,,12), t(,,) };\n",
    "#define OBJ_LIKE (1-1)\n#define OBJ_LIKE /* white space */ (1-1) /* other */\n#define FUNC_LIKE(a) ( a )\n#define FUNC_LIKE( a )( /* note the white space */ a /* other stuff on this line\n */ )\nOBJ_LIKE FUNC_LIKE(3)\n",
    "#define debug(...) fprintf(stderr, __VA_ARGS__)\n#define showlist(...) puts(#__VA_ARGS__)\n#define report(test, ...) ((test)?puts(#test): printf(__VA_ARGS__))\ndebug(\"Flag\");\ndebug(\"X = %d\\n\", x);\nshowlist(The first, second, and third items.);\nreport(x>y, \"x is %d but y is %d\", x, y);\n",
    "#define LOG(fmt, ...) printf(fmt, ##__VA_ARGS__)\nLOG(\"a\"); LOG(\"b %d\", 1);\n#define CHECK(call) do { int e = (call); if (e) { printf(\"%s:%d %s\\n\", \"f\", 1, #call); } } while (0)\nCHECK(cudaMalloc(&p, n * sizeof(int)));\n",
    "#define A 1\n#if A == 1 && defined(A) && !defined B\nyes\n#elif 1/0\nno\n#else\nno\n#endif\n#if (0x7fffffffffffffff + 0 > 0) && (-1 < 0) && (-1 > 0u) && ('\\377' < 0) && (1 ? 2 : (1/0))\nok\n#endif\n",
    "#define EMPTY\n#define LPAREN (\n#define RPAREN )\n#define F(x, y) x + y\n#define ELLIP_FUNC(...) __VA_ARGS__\nELLIP_FUNC(F, LPAREN, 'a', 'b', RPAREN);\n",
];

#[test]
fn expansion_matches_gcc() {
    if Command::new("gcc").arg("--version").output().is_err() {
        println!("skipped: gcc not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, case) in TRICKY.iter().enumerate() {
        let file = dir.path().join(format!("case{i}.c"));
        std::fs::write(&file, case).unwrap();
        let out = Command::new("gcc").args(["-E", "-P", "-undef", "-x", "c"]).arg(&file).output().expect("gcc runs");
        assert!(out.status.success(), "gcc failed on case {i}: {}", String::from_utf8_lossy(&out.stderr));
        let expected = tokens(&String::from_utf8_lossy(&out.stdout));
        let options = PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() };
        let p = preprocess(case, &options, &Target::default());
        assert!(!p.diagnostics.iter().any(|d| d.is_error()), "case {i}: {:?}", p.diagnostics);
        assert_eq!(tokens(&p.text), expected, "case {i}:\n{case}\ncdpc:\n{}", p.text);
    }
}
