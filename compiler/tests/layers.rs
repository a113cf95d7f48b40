//! The compiler crate's top-level modules import each other without a cycle: a lower layer
//! (`target`, `diag`, `types`, `layout`, ...) never imports a higher one (`front`, `back`,
//! `pipeline`, `driver`, ...). ARCHITECTURE.md ("Layers") lists the order this test keeps
//! ([`LAYERS`]).
//!
//! An import is a `crate::NAME` path outside comments and outside `#[cfg(test)]` modules, in any
//! file under `compiler/src/` but `lib.rs` and `main.rs` (the crate root sees every module), the
//! binary's own modules and the test modules' files (`tests.rs`, `*_tests.rs`).
//!
//! The front ends' modules keep an order of their own ([`FRONT_LAYERS`]: the kernel language's
//! phases in order, CUDA C++ and LLVM IR beside them, no front end importing another), the launch pipeline's
//! too ([`PIPELINE_LAYERS`]), and so do the
//! binary's, the modules `main.rs` declares ([`BINARY_LAYERS`]): none imports an item of
//! `main.rs`, the entry that plans the command line and runs the plan.
//!
//! The device-side passes are called from one schedule, `pipeline::lower`: no module outside
//! the pipeline, `back` (which defines the NVPTX end's steps and the kernel language's
//! optimisation tail the schedule runs) and `fuzzing` (the per-pass oracle) calls one
//! ([`SCHEDULED_PASSES`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The top-level modules each top-level module imports (itself excluded).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let binary = binary_modules();
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
            if first == "lib" || first == "main" || binary.contains(&first) || stem == "tests" || stem.ends_with("_tests") {
                continue; // the crate roots, the binary's modules (whose `crate::` is `main.rs`), and test modules kept in files of their own
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
    assert!(graph.contains_key("types") && graph.contains_key("front") && graph.contains_key("driver"), "modules not found: {graph:?}");
    if let Some(cycle) = cycle(&graph) {
        panic!("import cycle between top-level modules: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_lowest_layers_import_only_lower_ones() {
    let graph = imports();
    let allowed: &[(&str, &[&str])] = &[("target", &[]), ("diag", &[]), ("types", &["target"]), ("layout", &["target", "types"])];
    for (module, may) in allowed {
        let extra: Vec<_> = graph[*module].iter().filter(|m| !may.contains(&m.as_str())).collect();
        assert!(extra.is_empty(), "`{module}` imports higher layers: {extra:?}");
    }
}

/// ARCHITECTURE.md's order of the layers, lowest first; modules of one layer may import each
/// other, but only when that makes no cycle (the test above).
const LAYERS: &[&[&str]] = &[&["target", "diag", "llvm"], &["types"], &["layout", "render", "toolchain"], &["back"], &["error"], &["pipeline"], &["front"], &["signature"], &["driver"], &["fuzzing"]];

#[test]
fn no_module_imports_a_higher_layer() {
    let graph = imports();
    let layer = |module: &str| LAYERS.iter().position(|l| l.contains(&module));
    for (module, used) in &graph {
        let Some(own) = layer(module) else { continue };
        let higher: Vec<&String> = used.iter().filter(|m| layer(m).is_some_and(|l| l > own)).collect();
        assert!(higher.is_empty(), "`{module}` imports the higher layers {higher:?} (ARCHITECTURE.md, \"Layers\")");
    }
    for module in ["back", "error", "front", "driver", "pipeline", "toolchain"] {
        assert!(layer(module).is_some() && graph.contains_key(module), "`{module}` is in no layer");
    }
}

#[test]
fn mangling_is_a_leaf_below_hir() {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/front/cdp/hir/mangle.rs")).unwrap();
    let used: BTreeSet<String> = crate_paths(&text).into_iter().collect();
    assert!(used.iter().all(|m| m == "types"), "`hir::mangle` imports {used:?}");
    assert!(!code_lines(&text).any(|l| l.contains("super::")), "`hir::mangle` imports its parent `hir`");
}

#[test]
fn finds_imports_and_cycles() {
    let text = "use crate::front::cdp::hir::Function;\n// crate::driver in a comment\nfn f() { $crate::x; crate::types::size_align(); }\n#[cfg(test)]\nmod tests { use crate::front::cdp::sema; }\n";
    assert_eq!(crate_paths(text), ["front", "types"]);
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"])].iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect();
    assert_eq!(cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}

/// The launch pipeline's modules, lowest first (ARCHITECTURE.md, "Layers"): the pieces the
/// passes share below the passes, each pass below the ones that use it, each aggregation
/// granularity below the pass that runs it, and what the granularities share (the record's
/// layout, `aggregate::records`; a child's pool, arena and `C__agg` launch, `aggregate::child`)
/// below the granularities. A module may import a lower layer's, or one of its own layer's
/// where that makes no cycle; never a higher one, and there is no allowance for one. `mod.rs`,
/// the pipeline's root that runs the passes (as `lib.rs` is the crate's), is in no layer: its
/// re-exports count as imports of the modules they come from, and no module may import its
/// own items.
const PIPELINE_LAYERS: &[&[&str]] = &[
    &["emit", "location", "itanium", "cxx_abi", "atomics"],
    &["clone", "copies", "names"],
    &["callgraph", "launch", "host_names", "managed", "math", "qualifiers", "warp", "wide_atomics", "wide_conversions", "devrt_missing", "devrt_args"],
    &["uniform", "stream_order", "own_stream", "param_buffer", "malloc_pool", "bounded"],
    &["sites"],
    &["in_place"],
    &["defer"],
    &["threshold"],
    &["aggregate::records"],
    &["aggregate::child"],
    &["aggregate::block"],
    &["aggregate::warp", "aggregate::grid", "aggregate::choose"],
    &["aggregate"],
];

/// The modules under `compiler/src/pipeline/`, as paths below it (`threshold`,
/// `aggregate::block`, `aggregate` for `aggregate/mod.rs`; the root `mod.rs` is ``), each with
/// its file's code (no comments, no test module). Test modules' files are left out.
fn pipeline_files() -> BTreeMap<String, String> {
    files_under("pipeline")
}

/// [`pipeline_files`] of the folder `compiler/src/<folder>`.
fn files_under(folder: &str) -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(folder);
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.clone()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            if path.extension().and_then(|e| e.to_str()) != Some("rs") || stem == "tests" || stem.ends_with("_tests") {
                continue;
            }
            let mut parts: Vec<String> = path.strip_prefix(&dir).unwrap().parent().unwrap().components().map(|c| c.as_os_str().to_str().unwrap().to_string()).collect();
            if stem != "mod" {
                parts.push(stem);
            }
            let text = fs::read_to_string(&path).unwrap();
            files.insert(parts.join("::"), code_lines(&text).collect::<Vec<_>>().join("\n"));
        }
    }
    files
}

/// The modules of `files` that each imports (itself and the root excluded): every
/// `super::`, `crate::pipeline::` and child-module path, resolved as Rust resolves it, one
/// `use` group's names each; a name the root re-exports (`pub use location::SourceText`) is
/// its module's, and one of the root's own items an import of the root (``), which sits above
/// every layer.
fn pipeline_imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    module_imports(files, &["crate", "pipeline"], true)
}

/// [`pipeline_imports`] of the modules below a root, which `root` names (`crate::pipeline`,
/// or `crate` for the binary's `main.rs`); with `root_exports`, a name the root re-exports is
/// its module's, else an import of the root.
fn module_imports(files: &BTreeMap<String, String>, root: &[&str], root_exports: bool) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<&str> = files.keys().map(String::as_str).collect();
    let join = |base: &str, name: &str| if base.is_empty() { name.to_string() } else { format!("{base}::{name}") };
    // `name`'s module below `base`, through as many of `rest`'s segments as are modules.
    let resolve = |base: &str, segments: &[String]| -> String {
        let mut at = base.to_string();
        for s in segments {
            let next = join(&at, s);
            if s == "self" || !known.contains(next.as_str()) {
                break;
            }
            at = next;
        }
        at
    };
    let root_exports: BTreeMap<String, String> = paths_in(&files[""], "", root)
        .into_iter()
        .filter(|_| root_exports)
        .filter(|(_, segments)| segments.len() > 1 && known.contains(segments[0].as_str()))
        .map(|(_, segments)| (segments.last().unwrap().clone(), segments[0].clone()))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in files.iter().filter(|(m, _)| !m.is_empty()) {
        let used = graph.entry(module.clone()).or_default();
        let children: Vec<&str> = known.iter().filter_map(|k| k.strip_prefix(module.as_str()).and_then(|r| r.strip_prefix("::"))).filter(|r| !r.contains("::")).collect();
        for (depth, segments) in paths_in(code, module, root) {
            let parent: Vec<&str> = module.split("::").collect();
            let base = match depth {
                Some(up) if up <= parent.len() => parent[..parent.len() - up].join("::"),
                Some(_) => continue,
                None if children.contains(&segments[0].as_str()) => module.clone(),
                None => continue,
            };
            let mut target = resolve(&base, &segments);
            if target.is_empty() {
                // Else the root's own items (`run`, `PipelineOptions`): the root.
                if let Some(from) = root_exports.get(&segments[0]) {
                    target = from.clone();
                }
            }
            if &target != module {
                used.insert(target);
            }
        }
    }
    graph
}

/// Every path in `code` that starts with `super::` (how many: `Some(n)`), the root's path
/// (`root`: `crate::pipeline::`; `Some(` the depth of `module` `)`) or a bare name followed by
/// `::` (`None`), as its segments; a `use` group (`super::{a, b::c}`) gives a path per name.
fn paths_in(code: &str, module: &str, root: &[&str]) -> Vec<(Option<usize>, Vec<String>)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let bytes: Vec<char> = code.chars().collect();
    let depth_of_root = if module.is_empty() { 0 } else { module.split("::").count() };
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start_ok = i == 0 || !(ident(bytes[i - 1]) || bytes[i - 1] == ':' || bytes[i - 1] == '$');
        if !start_ok || !ident(bytes[i]) {
            i += 1;
            continue;
        }
        // One path: identifiers joined by `::`, maybe ending in a `{...}` group.
        let mut segments: Vec<String> = Vec::new();
        let mut j = i;
        let mut group: Option<String> = None;
        loop {
            let word: String = bytes[j..].iter().take_while(|c| ident(**c)).collect();
            j += word.chars().count();
            segments.push(word);
            if bytes[j..].starts_with(&[':', ':']) {
                j += 2;
                if bytes.get(j) == Some(&'{') {
                    let mut level = 0;
                    let mut text = String::new();
                    for c in &bytes[j..] {
                        j += 1;
                        match c {
                            '{' => level += 1,
                            '}' => level -= 1,
                            _ => {}
                        }
                        if level == 0 {
                            break;
                        }
                        text.push(*c);
                    }
                    group = Some(text[1..].to_string());
                    break;
                }
                if !bytes.get(j).is_some_and(|c| ident(*c)) {
                    break;
                }
                continue;
            }
            break;
        }
        i = j.max(i + 1);
        if segments.len() < 2 && group.is_none() {
            continue;
        }
        let supers = segments.iter().take_while(|s| *s == "super").count();
        let (depth, rest) = if supers > 0 {
            (Some(supers), segments[supers..].to_vec())
        } else if segments.len() >= root.len() && segments.iter().zip(root).all(|(s, r)| s == r) {
            (Some(depth_of_root), segments[root.len()..].to_vec())
        } else if segments[0] == "crate" || segments[0] == "self" {
            continue;
        } else {
            (None, segments)
        };
        match group {
            Some(text) => {
                // Top-level names of the group, each a path of its own.
                let mut level = 0;
                let mut name = String::new();
                let mut names = Vec::new();
                for c in text.chars().chain([',']) {
                    match c {
                        '{' => level += 1,
                        '}' => level -= 1,
                        ',' if level == 0 => {
                            names.push(std::mem::take(&mut name));
                            continue;
                        }
                        _ => {}
                    }
                    name.push(c);
                }
                for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                    let mut path = rest.clone();
                    path.extend(n.split("::").map(|s| s.trim().trim_end_matches(|c: char| !ident(c)).to_string()).take_while(|s| !s.is_empty() && s.chars().all(ident)));
                    if !path.is_empty() {
                        out.push((depth, path));
                    }
                }
            }
            None if !rest.is_empty() => out.push((depth, rest)),
            None => {}
        }
    }
    out
}

/// The front ends' modules (`compiler/src/front/`), lowest first: the kernel language's typed
/// IR, the phases that lead to it and its code generation from it; CUDA C++'s Clang front end
/// and LLVM IR's contract, which share nothing with the kernel language's or each other. A module of a front-end folder (`cdp::sema::expr`) is in its
/// folder's layer (`cdp::sema`); the folders of one layer import each other without a cycle
/// (the preprocessor reads the syntax's size limit, sema its tree).
const FRONT_LAYERS: &[&[&str]] = &[&["cdp::hir", "cuda", "ir"], &["cdp::preprocess", "cdp::syntax", "cdp::sema", "cdp::codegen"], &["cdp"]];

/// `module`'s entry in FRONT_LAYERS: itself, or the folder it lies in.
fn front_layer(module: &str) -> Option<usize> {
    FRONT_LAYERS.iter().position(|l| l.iter().any(|m| module == *m || module.starts_with(&format!("{m}::"))))
}

#[test]
fn front_ends_import_only_lower_layers_and_not_each_other() {
    let files = files_under("front");
    let graph = module_imports(&files, &["crate", "front"], true);
    assert!(graph.contains_key("cdp::sema") && graph.contains_key("cuda::cache") && graph.contains_key("cdp::hir::mangle") && graph.contains_key("ir"), "modules not found: {graph:?}");
    let folder = |m: &str| -> String { m.split("::").take(if m.starts_with("cdp") { 2 } else { 1 }).collect::<Vec<_>>().join("::") };
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, used) in &graph {
        let own = front_layer(module).unwrap_or_else(|| panic!("`front::{module}` is in no layer of FRONT_LAYERS"));
        // Within one phase's folder its modules import each other freely (as a module's files).
        let higher: Vec<&String> = used.iter().filter(|m| folder(m) != folder(module) && front_layer(m).is_none_or(|l| l > own)).collect();
        assert!(higher.is_empty(), "`front::{module}` imports the higher layers {higher:?} (ARCHITECTURE.md, \"Layers\")");
        folders.entry(folder(module)).or_default().extend(used.iter().map(|m| folder(m)).filter(|m| *m != folder(module)));
        let front_end = |m: &str| m.split("::").next().unwrap_or_default().to_string();
        let across: Vec<&String> = used.iter().filter(|m| front_end(m) != front_end(module)).collect();
        assert!(across.is_empty(), "`front::{module}` imports another front end: {across:?}");
    }
    if let Some(cycle) = cycle(&folders) {
        panic!("import cycle between the front ends' folders: {}", cycle.join(" -> "));
    }
}

#[test]
fn pipeline_modules_import_only_lower_layers() {
    let files = pipeline_files();
    let graph = pipeline_imports(&files);
    assert!(graph.contains_key("threshold") && graph.contains_key("aggregate::block") && graph.contains_key("aggregate::records"), "modules not found: {graph:?}");
    if let Some(cycle) = cycle(&graph) {
        panic!("import cycle inside pipeline/: {}", cycle.join(" -> "));
    }
    let layer = |module: &str| PIPELINE_LAYERS.iter().position(|l| l.contains(&module));
    for (module, used) in &graph {
        assert!(!used.contains(""), "`pipeline::{module}` imports an item of `pipeline/mod.rs` itself, which runs the passes: move the item into a layer");
        let own = layer(module).unwrap_or_else(|| panic!("`pipeline::{module}` is in no layer of PIPELINE_LAYERS"));
        let higher: Vec<&String> = used.iter().filter(|m| layer(m).is_none_or(|l| l > own)).collect();
        assert!(higher.is_empty(), "`pipeline::{module}` imports the higher layers {higher:?} (ARCHITECTURE.md, \"Layers\")");
    }
}

#[test]
fn finds_pipeline_imports() {
    let files: BTreeMap<String, String> = [
        ("", "pub use location::{collapse, SourceText};\nfn run() { threshold::threshold(); }"),
        ("location", ""),
        ("threshold", "use super::sites::{self, ok};\nuse super::{SourceText, users};\nfn f() { super::defer::keep(); }"),
        ("sites", "use super::emit::ok; fn g() { crate::pipeline::location::copy(); }"),
        ("emit", ""),
        ("defer", ""),
        ("aggregate", "mod block;\nuse super::sites::{launch_as_documented, Config};\nfn a() { block::plan(); launch::x(); }"),
        ("aggregate::block", "use super::super::callgraph::{is_kernel};\nuse super::{byte_gep, HEADER};"),
        ("callgraph", ""),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let graph = pipeline_imports(&files);
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(graph["threshold"], set(&["", "defer", "location", "sites"]));
    assert_eq!(graph["sites"], set(&["emit", "location"]));
    assert_eq!(graph["aggregate"], set(&["aggregate::block", "sites"]));
    assert_eq!(graph["aggregate::block"], set(&["aggregate", "callgraph"]));
}

/// The binary's modules, the `mod` items of `main.rs`, lowest first (ARCHITECTURE.md, "Layers"):
/// the command line's type and the pieces every command shares (how it reports, its outputs'
/// names, what the toolkit says) below the commands that use them, the plan (`plan`, which
/// decides everything a command line asks for) below the runner of its tasks (`runner`), which
/// the plan never imports. A module may import a lower layer's, or one of its own layer's where
/// that makes no cycle; never a higher one. `main.rs`, the entry that plans the command line
/// and runs the plan, is in no layer, and no module imports its items: what two modules share
/// lives in the lower one.
const BINARY_LAYERS: &[&[&str]] =
    &[&["cache_cmd", "command_line", "nvcc_options", "signals"], &["outputs", "report"], &["toolkit"], &["link_launcher", "preprocess_cmd", "run_cmd", "sccache_steps"], &["plan"], &["runner"]];

/// The names of the modules `main.rs` declares (`mod plan;`, `pub(crate) mod signals;`).
fn binary_modules() -> BTreeSet<String> {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs")).unwrap();
    declared_modules(&text)
}

/// The modules a file declares with `mod NAME;`, outside comments and test modules.
fn declared_modules(text: &str) -> BTreeSet<String> {
    code_lines(text)
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub(crate) ").or_else(|| line.strip_prefix("pub ")).unwrap_or(line);
            line.strip_prefix("mod ")?.strip_suffix(';').map(|name| name.trim().to_string())
        })
        .collect()
}

/// The binary's files: `main.rs` as the root (``) and each module it declares, `src/NAME.rs`,
/// each with its code (no comments, no test module).
fn binary_files() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let code = |path: &Path| code_lines(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).collect::<Vec<_>>().join("\n");
    let mut files: BTreeMap<String, String> = binary_modules().into_iter().map(|m| (m.clone(), code(&src.join(format!("{m}.rs"))))).collect();
    files.insert(String::new(), code(&src.join("main.rs")));
    files
}

/// The modules of the binary's `files` that each imports, as [`pipeline_imports`] finds them
/// below `crate`: any path to an item of `main.rs` (`super::fail`, `crate::Cli`), re-exported
/// there or not, is an import of the root (``).
fn binary_imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    module_imports(files, &["crate"], false)
}

#[test]
fn binary_modules_import_only_lower_layers() {
    let files = binary_files();
    let graph = binary_imports(&files);
    assert!(graph.contains_key("plan") && graph.contains_key("preprocess_cmd"), "modules not found: {graph:?}");
    if let Some(cycle) = cycle(&graph) {
        panic!("import cycle between the binary's modules: {}", cycle.join(" -> "));
    }
    let layer = |module: &str| BINARY_LAYERS.iter().position(|l| l.contains(&module));
    for (module, used) in &graph {
        assert!(!used.contains(""), "`{module}` imports an item of `main.rs`, the binary's entry: move the item into the module below that owns it");
        let own = layer(module).unwrap_or_else(|| panic!("`{module}`, a module of the binary, is in no layer of BINARY_LAYERS"));
        let higher: Vec<&String> = used.iter().filter(|m| layer(m).is_none_or(|l| l > own)).collect();
        assert!(higher.is_empty(), "`{module}` imports the higher layers {higher:?} (ARCHITECTURE.md, \"Layers\")");
    }
    assert!(!graph["plan"].contains("runner"), "the plan imports the runner of its tasks");
}

#[test]
fn finds_binary_imports() {
    assert_eq!(declared_modules("mod plan;\n// mod old;\npub(crate) mod signals;\nuse plan::Task;\n"), ["plan".to_string(), "signals".to_string()].into());
    let files: BTreeMap<String, String> = [
        ("", "mod plan;\nmod report;\npub(crate) use report::show_tool_runs;\nfn fail() {}\nstruct Cli;"),
        ("plan", "use super::{fail, preprocess_cmd, Cli};\nuse super::report::show_tool_runs;"),
        ("run_cmd", "fn f() { crate::show_tool_runs(); }\nstruct R { p: crate::report::Args }"),
        ("runner", "use super::show_tool_runs;\nuse super::plan::Task;"),
        ("preprocess_cmd", ""),
        ("report", ""),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let graph = binary_imports(&files);
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(graph["plan"], set(&["", "preprocess_cmd", "report"]));
    assert_eq!(graph["run_cmd"], set(&["", "report"]));
    assert_eq!(graph["runner"], set(&["", "plan"]));
}

/// ARCHITECTURE.md, "Invariants": LLVM's pass pipelines and code generation run inside its
/// crash recovery, through `back::safely` alone, so that an operation LLVM stops on is `E1023`
/// and not the end of the process. No other file of `compiler/src/` calls inkwell's
/// `run_passes` or `write_to_memory_buffer` outside its test modules.
#[test]
fn llvm_runs_passes_and_code_generation_only_through_back_safely() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if !name.ends_with(".rs") || name == "tests.rs" || name.ends_with("_tests.rs") || path.ends_with("back/safely.rs") {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap();
            for line in code_lines(&text) {
                if line.contains(".run_passes(") || line.contains(".write_to_memory_buffer(") {
                    found.push(format!("{}: {}", path.strip_prefix(&src).unwrap().display(), line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "LLVM run outside `back::safely`: {found:#?}");
}

/// The device-side passes that `pipeline::lower`, the schedule, calls, as code calls them.
const SCHEDULED_PASSES: [&str; 19] = [
    "pipeline::run(",
    "pipeline::cleanup(",
    "pipeline::promote_locals(",
    "atomics::atomics_as_nvcc(",
    "cxx_abi::null_slots(",
    "qualifiers::apply(",
    "qualifiers::raise_ptx_version(",
    "wide_atomics::require_ptx(",
    "math::intrinsics_as_libdevice(",
    "math::canonicalize_as_selected(",
    "wide_conversions::wide_conversions(",
    "divisions_as_nvcc(",
    "contract_as_nvcc(",
    "flush_denormals(",
    "mark_contractable",
    "threshold::threshold(",
    "aggregate::aggregate_with(",
    "malloc_pool::pool(",
    "launch::lower(",
];

/// The modules allowed to call a device-side pass themselves: the pipeline (the schedule and
/// the passes' own calls of each other), `back` (which defines the NVPTX end's steps, and
/// `optimize_built`, the kernel language's optimisation tail the schedule calls) and `fuzzing`
/// (the oracle that checks each pass's invariant on its own).
fn may_call_passes(module: &str) -> bool {
    module == "pipeline" || module.starts_with("pipeline::") || module == "back" || module.starts_with("back::") || module == "fuzzing"
}

#[test]
fn device_passes_are_called_from_the_schedule_alone() {
    let files = files_under(".");
    let schedule = files.get("pipeline").expect("pipeline/mod.rs");
    for pass in SCHEDULED_PASSES {
        let own = pass.strip_prefix("pipeline::").unwrap_or(pass);
        assert!(schedule.contains(own), "`{own}` is not called in pipeline/mod.rs: SCHEDULED_PASSES names a pass the schedule no longer calls");
    }
    let mut found = Vec::new();
    for (module, code) in &files {
        if may_call_passes(module) {
            continue;
        }
        for pass in SCHEDULED_PASSES.iter().filter(|p| code.contains(*p)) {
            found.push(format!("{module} calls `{pass}`"));
        }
    }
    assert!(found.is_empty(), "device-side passes called outside `pipeline::lower`, the one schedule:\n{}", found.join("\n"));
}

#[test]
fn launch_sites_are_recognised_by_the_schedule_alone() {
    let files = pipeline_files();
    let mut found = Vec::new();
    for (module, code) in &files {
        // `launch` defines the table; thresholding's stream marks read the sites its own
        // rewrite made (`stream_order::mark`).
        let recognises = code.contains("recognise(") && !matches!(module.as_str(), "launch" | "stream_order");
        let builds_table = code.contains("Sites::of(") && !matches!(module.as_str(), "" | "launch");
        if recognises || builds_table {
            found.push(module.clone());
        }
    }
    assert!(found.is_empty(), "pipeline modules that recognise launch sites themselves instead of reading the schedule's table (`launch::Sites`): {found:?}");
    assert!(files[""].contains("launch::Sites::of("), "the schedule (pipeline/mod.rs) no longer builds the launch-site table");
}
