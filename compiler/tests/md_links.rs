//! Every relative link of every Markdown document of the checkout resolves: `[text](target)`
//! and `![alt](target)` name a file or folder that exists, relative to the document (a
//! `#fragment` dropped). A moved document, a renamed result or a removed page otherwise leaves
//! links that lead nowhere, which no reader reports. Links to other sites (`https:`, `mailto:`)
//! and to a place in the same page (`#...`) are not checked; nor is text in code (fenced blocks
//! and `inline code`), which shows Markdown rather than linking.

use std::path::{Path, PathBuf};

/// Folders that hold no document of the checkout's own (build outputs, installed tools, the
/// fuzzers' state, virtual environments), skipped where git cannot list the checkout.
const SKIPPED_DIRS: &[&str] = &[".git", "target", ".cuda", "build", "corpus", "artifacts", ".venv", "venv", "__pycache__", "node_modules"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The `.md` files git counts as the checkout's (tracked, or untracked and not ignored), relative
/// to the root; every `.md` below it outside [`SKIPPED_DIRS`] where git cannot say.
fn documents(root: &Path) -> Vec<PathBuf> {
    let listed = std::process::Command::new("git").arg("-C").arg(root).args(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md"]).output().ok();
    if let Some(out) = listed.filter(|o| o.status.success()) {
        return out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned())).filter(|p| root.join(p).exists()).collect();
    }
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !SKIPPED_DIRS.iter().any(|s| entry.file_name() == *s) {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    found
}

/// The link targets of a Markdown `text` outside code: (line number from 1, target).
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Inline code spans dropped: the text between backtick runs of the same length.
        let mut prose = String::new();
        let mut rest = line;
        while let Some(at) = rest.find('`') {
            prose.push_str(&rest[..at]);
            let ticks = rest[at..].chars().take_while(|&c| c == '`').count();
            let after = &rest[at + ticks..];
            let fence = "`".repeat(ticks);
            match after.find(&fence) {
                Some(end) => rest = &after[end + ticks..],
                None => {
                    rest = after;
                    prose.push_str(&fence);
                }
            }
        }
        prose.push_str(rest);
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            // `[text](target "title")`: the target is the first word.
            let target = after[..end].split_whitespace().next().unwrap_or("").trim_matches(|c| c == '<' || c == '>');
            if !target.is_empty() {
                out.push((n + 1, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    out
}

/// Whether a link target is one this test checks: relative, into the checkout.
fn is_relative(target: &str) -> bool {
    !(target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") || target.starts_with('/'))
}

#[test]
fn every_relative_link_of_every_document_resolves() {
    let root = root();
    let docs = documents(&root);
    assert!(docs.iter().any(|d| d == Path::new("README.md")) && docs.len() > 10, "found only {} documents under {}", docs.len(), root.display());
    let mut broken = Vec::new();
    for doc in &docs {
        let Ok(text) = std::fs::read_to_string(root.join(doc)) else { continue };
        let dir = root.join(doc).parent().unwrap().to_path_buf();
        for (line, target) in links(&text) {
            if !is_relative(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap_or(&target);
            let path = path.split('?').next().unwrap_or(path);
            if !dir.join(path).exists() {
                broken.push(format!("{}:{line}: {target}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to files that do not exist (fix the target, or name the file in `code` if it is not meant to be followed):\n  {}", broken.join("\n  "));
}

#[test]
fn links_are_read_outside_code_only() {
    let found = |text: &str| links(text).into_iter().map(|(l, t)| format!("{l}:{t}")).collect::<Vec<_>>();
    assert_eq!(found("see [a](docs/A.md) and ![p](docs/p.png \"title\")\n[b](../results/x/README.md#top)"), ["1:docs/A.md", "1:docs/p.png", "2:../results/x/README.md#top"]);
    assert_eq!(found("`[no](code.md)` but [yes](y.md); ``[no](n.md)``"), ["1:y.md"]);
    assert_eq!(found("```sh\necho [no](n.md)\n```\n[after](a.md)"), ["4:a.md"]);
    assert!(found("(plain) [brackets] no link; a](b without end").is_empty());
    assert!(!is_relative("https://example.com/a") && !is_relative("#section") && !is_relative("mailto:x@y") && is_relative("docs/A.md"));
}
