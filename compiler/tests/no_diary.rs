//! No lab notebook in the checkout: no file git tracks (or would track) refers to a result by the
//! number or the order of the sitting of work that produced it. A reader cannot know what such a
//! number means; a result is named by its topic and date (results/README.md is the index) and a
//! change by its commit.
//!
//! Every text file of the checkout is scanned (code, scripts, documentation, the results
//! themselves), case-insensitively, for the word [`WORD`] (not as the tail of a longer word):
//! - followed by a number, with at most a space, `-` or `_` between (a plural too);
//! - right after one of [`DIARY_WORDS`] ("the last one", "the next one", "the ninth one");
//! - as the first name of a folder under [`RESULTS_DIR`].
//!
//! The word in an unrelated sense (an HTTP or ssh one, a Python `requests` one) matches none of
//! these; a use that does anyway and must stay goes in [`ALLOWED`], with the reason. This file
//! spells its examples with `_` for the word's `i`, so that it holds none itself.

use std::path::{Path, PathBuf};

/// (file, text of the line the finding is on, why it is right there). None is needed now.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// The word the scan looks for, lower case.
const WORD: &str = concat!("sess", "ion");

/// Words that, right before [`WORD`], make it a diary's.
const DIARY_WORDS: &[&str] = &["this", "previous", "last", "earlier", "next", "later", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"];

/// The folder of results, whose entries are named by date and topic.
const RESULTS_DIR: &str = "results/";

/// Folders that are not part of the checkout's tracked content (build outputs, installed tools,
/// fuzzing state, virtual environments), skipped where git cannot list the checkout.
const SKIPPED_DIRS: &[&str] = &[".git", "target", ".cuda", "build", "corpus", "artifacts", ".venv", "venv", "__pycache__", "node_modules", "gpu-stage"];

/// The diary references in `text`: (line number from 1, the line).
fn diary_lines(text: &str) -> Vec<(usize, String)> {
    let lower = text.to_ascii_lowercase();
    let mut found: Vec<(usize, String)> = Vec::new();
    for (at, _) in lower.match_indices(WORD) {
        let before = &lower[..at];
        if before.chars().next_back().is_some_and(|c| c.is_ascii_alphabetic()) {
            continue; // the tail of a longer word
        }
        let after = &lower[at + WORD.len()..];
        let after = after.strip_prefix('s').unwrap_or(after);
        let after = after.strip_prefix(&[' ', '-', '_', '\n'][..]).unwrap_or(after);
        let numbered = after.starts_with(|c: char| c.is_ascii_digit());
        let trimmed = before.trim_end();
        let previous_word = trimmed.rsplit(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
        let after_diary_word = trimmed.len() < before.len() && DIARY_WORDS.contains(&previous_word);
        let results_folder = before.ends_with(RESULTS_DIR);
        if numbered || after_diary_word || results_folder {
            let line = before.matches('\n').count() + 1;
            if found.last().is_none_or(|(l, _)| *l != line) {
                found.push((line, text.lines().nth(line - 1).unwrap_or("").trim().to_string()));
            }
        }
    }
    found
}

/// The files git counts as the checkout's (tracked, or untracked and not ignored), relative to
/// `root`; `None` without git or outside a repository.
fn checkout_files(root: &Path) -> Option<Vec<PathBuf>> {
    let out = std::process::Command::new("git").arg("-C").arg(root).args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).output().ok()?;
    out.status.success().then(|| out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned())).collect())
}

/// Every file below `dir` outside [`SKIPPED_DIRS`], relative to `root`.
fn files_below(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if !SKIPPED_DIRS.iter().any(|s| entry.file_name() == *s) {
                files_below(root, &path, out);
            }
        } else if kind.is_file() {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// The checkout's files as git lists them, or every file below `root` outside [`SKIPPED_DIRS`].
fn scanned_files(root: &Path) -> Vec<PathBuf> {
    checkout_files(root).unwrap_or_else(|| {
        let mut files = Vec::new();
        files_below(root, root, &mut files);
        files
    })
}

#[test]
fn no_file_refers_to_results_by_a_sitting_of_work() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let files = scanned_files(&root);
    assert!(files.len() > 100, "the scan found only {} files under {}", files.len(), root.display());
    let mut bad = Vec::new();
    for rel in &files {
        // Binary files (cubins, archives) and files deleted from the work tree are skipped.
        let Ok(text) = std::fs::read_to_string(root.join(rel)) else { continue };
        if text.contains('\0') {
            continue;
        }
        let rel = rel.to_string_lossy().replace('\\', "/");
        for (line, content) in diary_lines(&text) {
            if !ALLOWED.iter().any(|(f, l, _)| *f == rel && content.contains(l)) {
                bad.push(format!("{rel}:{line}: {content}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "files that refer to a result by the number or order of the sitting of work that made it (name the result's file, its date or the commit instead; results/README.md lists the results; or add the line to ALLOWED with the reason):\n  {}",
        bad.join("\n  ")
    );
}

/// `diary_lines` of `text` written with `_` for the word's `i`, so that this file, which the
/// scan reads too, holds no finding of its own: the line numbers found.
fn scan(text: &str) -> Vec<usize> {
    diary_lines(&text.replace("ess_on", "ession").replace("ESS_ON", "ESSION")).into_iter().map(|(line, _)| line).collect()
}

#[test]
fn the_scan_finds_what_it_is_for() {
    assert_eq!(scan("measured in sess_on 43 on the H100"), [1]);
    assert_eq!(scan("see results/gpu-diff-sess_on31.md"), [1]);
    assert_eq!(scan("raw runs: results/sess_on44/README.md"), [1]);
    assert_eq!(scan("# SESS_ON 41's runs"), [1]);
    assert_eq!(scan("as sess_ons 40 and 41 read"), [1]);
    assert_eq!(scan("the sess_on-45 check"), [1]);
    assert_eq!(scan("a\nafter this sess_on's changes"), [2]);
    assert_eq!(scan("the previous sess_on found it, the last sess_on too"), [1]);
    assert_eq!(scan("Run F (the eighth sess_on)"), [1]);
    assert_eq!(scan("1.18-1.44 aggregated; sess_on\n34 also read"), [1]);
    assert_eq!(scan("earlier sess_ons compared"), [1]);
    // The word in other senses, and as the tail of another word, is fine.
    assert!(scan("requests.Sess_on() keeps the cookies; an ssh sess_on to the GPU machine").is_empty());
    assert!(scan("obsess_on 3 times; a CUDA sess_on's context").is_empty());
    assert!(scan("results/2026-11-25-qt-grid.md, commit b229f7e").is_empty());
}

// Code comments say what the code does and why, never in which issue or in which results
// folder: an issue is closed and renumbered by nobody's reading, and a results folder is raw
// data that is renamed or removed (results/README.md indexes it; BENCHMARKS.md and docs/ cite
// it). Only comments are read: a string the code prints or a test's document text is not one.

/// The extensions whose `//` and `/* */` comments are read (Rust nests its block comments).
const SLASH_COMMENTED: &[&str] = &["rs", "c", "h", "cc", "cpp", "hpp", "cu", "cuh", "cdp"];
/// The extensions whose `#` comments are read (and, for Python, its docstrings).
const HASH_COMMENTED: &[&str] = &["py", "sh", "bash", "toml", "cmake", "yml", "yaml"];

/// Files whose comments name a results entry for a reason that stays true: (file, text of the
/// comment, why).
const RESULTS_ALLOWED: &[(&str, &str, &str)] = &[
    ("samples/harness/gpu-run.sh", "results/gpu-diff.md in this copy", "where the script copies its report (the code below does), not a citation"),
    ("samples/harness/gpu-run.sh", "(and results/gpu-bench.md)", "where the script copies its report (the code below does), not a citation"),
    ("samples/harness/gpu-run.sh", "every plain build (results/gpu-bench.md)", "the report the script writes says so for each run"),
    ("samples/harness/soak.sh", "(or results/soak.md)", "where the script writes its report without $OUT"),
    ("xtask/src/bench/gpu_plot.rs", "(`results/gpu-diff.md`, written on the GPU machine", "the plot's default input, the copy samples/harness/gpu-run.sh writes"),
    ("xtask/src/bench/klap_plot.rs", "(`results/corpus-timing.md`)", "the plot's default input, corpus-timing.py's report"),
];

/// The comment text of a source file named `path`, by line: (line number from 1, the comment
/// text on that line); `None` for a file that is not source code the scan knows.
fn comments(path: &str, text: &str) -> Option<Vec<(usize, String)>> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if SLASH_COMMENTED.contains(&ext) {
        Some(slash_comments(text, ext == "rs"))
    } else if HASH_COMMENTED.contains(&ext) || name == "CMakeLists.txt" || name == "Makefile" || name == "Dockerfile" || (ext.is_empty() && text.starts_with("#!")) {
        Some(hash_comments(text, ext == "py", ext == "toml", ext == "sh" || ext == "bash" || ext.is_empty()))
    } else {
        None
    }
}

/// Appends `c` to the comment text of line `line` in `out`.
fn push_comment(out: &mut Vec<(usize, String)>, line: usize, c: char) {
    match out.last_mut() {
        Some((l, s)) if *l == line => s.push(c),
        _ => out.push((line, c.to_string())),
    }
}

/// `//` and `/* */` comments, outside string and character literals (Rust's raw strings and
/// lifetimes included).
fn slash_comments(text: &str, rust: bool) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            i += 2;
            while i < chars.len() && chars[i] != '\n' {
                push_comment(&mut out, line, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 1;
            i += 2;
            while i < chars.len() && depth > 0 {
                if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                } else if rust && chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    push_comment(&mut out, line, chars[i]);
                    i += 1;
                }
            }
        } else if rust && (c == 'r' || (c == 'b' && next == Some('r'))) && !chars[..i].last().is_some_and(|p| p.is_alphanumeric() || *p == '_') && {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            chars.get(start + hashes) == Some(&'"')
        } {
            // A raw string: r"...", r#"..."#, br#"..."#.
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            i = start + hashes + 1;
            while i < chars.len() && !(chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes) {
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1 + hashes;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), else a Rust lifetime or label.
            if next == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i] != '\'' && chars[i] != '\n' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `#` comments outside quotes (in a shell script only where `#` starts a word, so that `$#`
/// and `${#x}` are not comments), and Python's docstrings: a triple-quoted string that is a
/// statement of its own.
fn hash_comments(text: &str, python: bool, toml: bool, shell: bool) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let mut line_start = true; // only blanks so far on this line
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
            line_start = true;
            continue;
        }
        let triple = (python || toml) && (c == '"' || c == '\'') && chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
        if c == '#' && (!shell || i == 0 || chars[i - 1].is_whitespace() || chars[i - 1] == ';') {
            while i < chars.len() && chars[i] != '\n' {
                push_comment(&mut out, line, chars[i]);
                i += 1;
            }
        } else if triple {
            let docstring = python && line_start;
            i += 3;
            while i < chars.len() && !(chars[i] == c && chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c)) {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    line += 1;
                } else if docstring && i < chars.len() {
                    push_comment(&mut out, line, chars[i]);
                }
                i += 1;
            }
            i += 3;
        } else if c == '"' || c == '\'' {
            let escapes = c == '"' || python;
            i += 1;
            while i < chars.len() && chars[i] != c {
                if escapes && chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            i += 1;
        }
        if !c.is_whitespace() {
            line_start = false;
        }
    }
    out
}

/// What in a comment's `text` cites an issue or a results entry: the matched words.
fn citations(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    for (at, _) in lower.match_indices("issue") {
        if lower[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || "/-_".contains(c)) {
            continue; // "tissue", or a file's name in a path
        }
        let after = &lower[at + "issue".len()..];
        let after = after.strip_prefix('s').unwrap_or(after);
        let after = after.strip_prefix(&[' ', '-', '_'][..]).unwrap_or(after);
        let after = after.strip_prefix('#').unwrap_or(after);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            let number: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
            found.push(format!("{}{number}", &text[at..at + (lower.len() - at - after.len())]));
        }
    }
    for (at, _) in lower.match_indices(RESULTS_DIR) {
        let path_before = lower[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || "_-./$".contains(c));
        let entry = lower[at + RESULTS_DIR.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        // The index itself is no results folder.
        let index = lower[at + RESULTS_DIR.len()..].starts_with("readme.md");
        if !path_before && entry && !index {
            let end = lower[at..].find(|c: char| c.is_whitespace() || "),;`'\"".contains(c)).map_or(lower.len(), |e| at + e);
            found.push(text[at..end].to_string());
        }
    }
    found
}

#[test]
fn no_code_comment_cites_an_issue_or_a_results_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let files = scanned_files(&root);
    let mut bad = Vec::new();
    let mut scanned = 0;
    let mut used = vec![false; RESULTS_ALLOWED.len()];
    for rel in &files {
        let rel = rel.to_string_lossy().replace('\\', "/");
        // results/ is the raw data itself: its scripts and logs are what ran.
        if rel.starts_with(RESULTS_DIR) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else { continue };
        let Some(comments) = comments(&rel, &text) else { continue };
        scanned += 1;
        for (line, comment) in comments {
            for cited in citations(&comment) {
                if let Some(at) = RESULTS_ALLOWED.iter().position(|(f, c, _)| *f == rel && comment.contains(c)) {
                    used[at] = true;
                } else {
                    bad.push(format!("{rel}:{line}: {cited}  ({})", comment.trim()));
                }
            }
        }
    }
    let stale: Vec<_> = RESULTS_ALLOWED.iter().zip(&used).filter(|(_, u)| !**u).map(|((f, c, _), _)| format!("{f}: {c}")).collect();
    assert!(stale.is_empty(), "RESULTS_ALLOWED entries that match no comment any more (remove them): {stale:?}");
    assert!(scanned > 100, "the scan read the comments of only {scanned} files under {}", root.display());
    assert!(
        bad.is_empty(),
        "code comments that cite an issue or a results folder (say what the code does and why, with the measurement's figure and device if it matters; BENCHMARKS.md and docs/ cite the results; or add the comment to RESULTS_ALLOWED with the reason):\n  {}",
        bad.join("\n  ")
    );
}

/// The documents say what was measured, with its date and device, and what a feature does: an
/// issue number tells a reader nothing. (They may cite results/, which holds the raw data;
/// results/ itself, raw records of what ran, is not read.)
#[test]
fn no_document_names_an_issue_by_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let mut bad = Vec::new();
    for rel in scanned_files(&root) {
        let rel = rel.to_string_lossy().replace('\\', "/");
        if !rel.ends_with(".md") || rel.starts_with(RESULTS_DIR) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else { continue };
        for (n, line) in text.lines().enumerate() {
            for cited in citations(line).into_iter().filter(|c| c.to_ascii_lowercase().starts_with("issue")) {
                bad.push(format!("{rel}:{}: {cited}", n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "documents that name an issue by number (say what was measured or what the feature does instead):\n  {}", bad.join("\n  "));
}

/// The citations found in the comments of `text` as the file `path`: (line, what was cited).
fn cited(path: &str, text: &str) -> Vec<(usize, String)> {
    comments(path, text).unwrap().into_iter().flat_map(|(line, c)| citations(&c).into_iter().map(move |s| (line, s))).collect()
}

#[test]
fn the_comment_scan_finds_citations_in_comments_only() {
    let found = |path: &str, text: &str| cited(path, text).into_iter().map(|(l, _)| l).collect::<Vec<_>>();
    // Planted: each kind of comment, each way of citing.
    assert_eq!(cited("a.rs", "fn f() {} // fixed in issue 28\n"), [(1, "issue 28".to_string())]);
    assert_eq!(found("a.rs", "//! measured (results/2026-11-27-gpu-soak/)\nfn f() {}"), [1]);
    assert_eq!(found("a.rs", "fn f() {}\n/// Issue #52: the link\n/* see\n   issues 16 and 26 */"), [2, 4]);
    assert_eq!(found("a.rs", "/* outer /* inner */ still issue-3 */"), [1]);
    assert_eq!(found("a.cu", "int x; /* results/qt-grid-probe.md */\n// Issue_27"), [1, 2]);
    assert_eq!(found("a.cdp", "// (issue 51's held-out shape)"), [1]);
    assert_eq!(found("a.py", "x = 1  # issue 12\n\"\"\"Docstring\n(issues 16 and 26).\"\"\"\n"), [1, 3]);
    assert_eq!(found("a.sh", "echo hi # (results/mst-probe.md)\n"), [1]);
    assert_eq!(found("a.toml", "# see results/2026-11-24-x.md\nk = 1"), [1]);
    assert_eq!(found("run", "#!/bin/sh\n# issue 9\n"), [2]);
    // Not comments: strings, characters, raw strings, shell's `$#`, Python strings that are
    // values.
    assert!(found("a.rs", "let s = \"// issue 28\"; let c = '/'; let d = '\"'; // fine\n").is_empty());
    assert!(found("a.rs", "let r = r#\"a \"quoted\" // issue 28 \"#; fn f<'a>(x: &'a str) {} // ok\n").is_empty());
    assert!(found("a.rs", "let s = \"line\\\n// issue 28\";\n").is_empty());
    assert!(found("a.sh", "echo \"# issue 28\" '# results/x.md'; n=$#; echo ${#n}\n").is_empty());
    assert!(found("a.py", "x = \"# issue 28\"\ny = f(\"\"\"issue 28\"\"\")\n").is_empty());
    assert!(found("a.toml", "k = \"\"\"\n# issue 28\n\"\"\"\n").is_empty());
    assert!(found("a.rs", "let q = '\\''; let s = \"// issue 28\";\n").is_empty());
    assert!(comments("a.md", "issue 28").is_none());
    // Not citations: other words, the folder itself, a path that only ends in results/.
    assert!(found("a.rs", "// tissue 3; the issue is 3x slower; git show abc:bench/issue-28.md\n// writes $OUT/results/x.md; build/results/y; results/ holds them; results/README.md").is_empty());
    // Line numbers follow block comments and strings across lines.
    assert_eq!(found("a.rs", "/*\n\n*/ let s = \"\n\n\"; // issue 1\n"), [5]);
}
