//! The compiler crate's top-level modules import each other without a cycle: a lower layer
//! (`target`, `diag`, `types`, `layout`, `hir`, ...) never imports a higher one (`front`, `sema`,
//! `back`, `pipeline`, `driver`, ...). ARCHITECTURE.md ("Layers") lists the order this test keeps
//! ([`LAYERS`]).
//!
//! An import is a `crate::NAME` path outside comments and outside `#[cfg(test)]` modules, in any
//! file under `compiler/src/` but `lib.rs` and `main.rs` (the crate root sees every module) and
//! the test modules' files (`tests.rs`, `*_tests.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The top-level modules each top-level module imports (itself excluded).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str().to_str().unwrap().trim_end_matches(".rs").to_string();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            if first == "lib" || first == "main" || stem == "tests" || stem.ends_with("_tests") {
                continue; // the crate root, and test modules kept in files of their own
            }
            let text = fs::read_to_string(&path).unwrap();
            let used = graph.entry(first.clone()).or_default();
            for module in crate_paths(&text) {
                if module != first {
                    used.insert(module);
                }
            }
        }
    }
    graph
}

/// The first segment of every `crate::` path in code (not in comments, not in test modules).
fn crate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in code_lines(text) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `$crate::` in a macro, or a longer word
            }
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

/// The lines of `text` before its first `#[cfg(test)]` module, without comments.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut lines = text.lines().peekable();
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") && lines.peek().is_some_and(|next| next.trim_start().starts_with("mod ")) {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push(line.split("//").next().unwrap_or(line));
    }
    out.into_iter()
}

/// A cycle of the graph, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(node: &str, graph: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    let graph = imports();
    assert!(graph.contains_key("types") && graph.contains_key("hir") && graph.contains_key("driver"), "modules not found: {graph:?}");
    if let Some(cycle) = cycle(&graph) {
        panic!("import cycle between top-level modules: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_lowest_layers_import_only_lower_ones() {
    let graph = imports();
    let allowed: &[(&str, &[&str])] = &[
        ("target", &[]),
        ("diag", &[]),
        ("types", &["target"]),
        ("layout", &["target", "types"]),
        ("hir", &["diag", "layout", "target", "types"]),
    ];
    for (module, may) in allowed {
        let extra: Vec<_> = graph[*module].iter().filter(|m| !may.contains(&m.as_str())).collect();
        assert!(extra.is_empty(), "`{module}` imports higher layers: {extra:?}");
    }
}

/// ARCHITECTURE.md's order of the layers, lowest first; modules of one layer may import each
/// other, but only when that makes no cycle (the test above).
const LAYERS: &[&[&str]] = &[
    &["target", "diag"],
    &["types"],
    &["layout", "render", "toolchain"],
    &["hir"],
    &["front", "clang"],
    &["preprocess", "sema", "signature"],
    &["back"],
    &["pipeline"],
    &["driver"],
    &["fuzzing"],
];

#[test]
fn no_module_imports_a_higher_layer() {
    let graph = imports();
    let layer = |module: &str| LAYERS.iter().position(|l| l.contains(&module));
    for (module, used) in &graph {
        // The binary's own files (`run_cmd`, `signals`, `nvcc_options`) sit above the library.
        let Some(own) = layer(module) else { continue };
        let higher: Vec<&String> = used.iter().filter(|m| layer(m).is_some_and(|l| l > own)).collect();
        assert!(higher.is_empty(), "`{module}` imports the higher layers {higher:?} (ARCHITECTURE.md, \"Layers\")");
    }
    for module in ["back", "clang", "driver", "pipeline", "preprocess", "toolchain"] {
        assert!(layer(module).is_some() && graph.contains_key(module), "`{module}` is in no layer");
    }
}

#[test]
fn mangling_is_a_leaf_below_hir() {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/hir/mangle.rs")).unwrap();
    let used: BTreeSet<String> = crate_paths(&text).into_iter().collect();
    assert!(used.iter().all(|m| m == "types"), "`hir::mangle` imports {used:?}");
    assert!(!code_lines(&text).any(|l| l.contains("super::")), "`hir::mangle` imports its parent `hir`");
}

#[test]
fn finds_imports_and_cycles() {
    let text = "use crate::hir::Function;\n// crate::driver in a comment\nfn f() { $crate::x; crate::types::size_align(); }\n#[cfg(test)]\nmod tests { use crate::sema; }\n";
    assert_eq!(crate_paths(text), ["hir", "types"]);
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"])].iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect();
    assert_eq!(cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}
