//! results/README.md is the index of what the GPU runs and probes measured: BENCHMARKS.md and
//! docs/ cite the files it lists, and a result nobody can find is a result lost. Every entry of
//! `results/` (a file or a folder, named by topic) is linked from it, and every link of it names
//! an entry that exists. (md_links.rs checks the links of every other document.)

use std::path::Path;

fn results_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

/// The targets of the index's Markdown links, `[text](target)`, in order.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(after[..end].to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    out
}

#[test]
fn every_result_is_in_the_index_and_every_link_resolves() {
    let dir = results_dir();
    let index = std::fs::read_to_string(dir.join("README.md")).expect("results/README.md");
    let targets = link_targets(&index);
    let mut unlisted = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("results/") {
        let name = entry.expect("an entry of results/").file_name().to_string_lossy().into_owned();
        if name == "README.md" || name.starts_with('.') {
            continue;
        }
        // a folder is listed by a link to it or to a file inside it
        if !targets.iter().any(|t| *t == name || t.starts_with(&format!("{name}/"))) {
            unlisted.push(name);
        }
    }
    assert!(unlisted.is_empty(), "results/README.md lists no link to {unlisted:?}: add a line for each, with its date and topic");
    let broken: Vec<&String> = targets.iter().filter(|t| !t.contains("://") && !t.starts_with('#') && !dir.join(t.split('#').next().unwrap_or(t)).exists()).collect();
    assert!(broken.is_empty(), "results/README.md links to entries that do not exist: {broken:?}");
}

#[test]
fn link_targets_are_read_as_markdown_writes_them() {
    assert_eq!(link_targets("- a (2026-11-28): [x/](x/README.md); raw: [y.md](y.md)\n[z](z)"), ["x/README.md", "y.md", "z"]);
    assert!(link_targets("no links (here)").is_empty());
}
