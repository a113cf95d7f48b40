//! No lab notebook in the checkout: no file git tracks (or would track) refers to a result by the
//! number or the order of the sitting of work that produced it. A reader cannot know what such a
//! number means; a result is named by its date and topic (`results/2026-11-25-qt-grid.md`,
//! results/README.md) and a change by its commit.
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

#[test]
fn no_file_refers_to_results_by_a_sitting_of_work() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let files = checkout_files(&root).unwrap_or_else(|| {
        let mut files = Vec::new();
        files_below(&root, &root, &mut files);
        files
    });
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
