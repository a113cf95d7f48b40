//! The `.cdp` grammar (lalrpop), Clang in process (`src/front/cuda/shim.cpp`, linked like LLVM) and
//! the little of LLVM's C++ API the back end needs (`src/back/llvm_shim.cpp`).
//!
//! Clang's libraries come from the LLVM 22 that llvm-sys links (`llvm-config`, found as
//! llvm-sys finds it: `LLVM_SYS_221_PREFIX/bin/llvm-config`, else `llvm-config-22`, else
//! `llvm-config` on PATH); Debian's and Ubuntu's `libclang-22-dev` holds them. With the feature
//! `llvm-static` (the default: the release binary, the wheel) Clang's static archives are
//! linked, in the order of their dependencies as Clang's CMake package lists them, and the
//! linker keeps only the objects the shim reaches; with `llvm-dynamic` only, libclang-cpp.so
//! (which loads the same libLLVM.so as inkwell).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    // The grammar lives beside the lexer in src/front/cdp/syntax/; lalrpop writes the parser into OUT_DIR.
    // Said here because the shim's own `rerun-if-changed` lines replace cargo's default (rerun
    // on any change), so a grammar edit would otherwise keep a stale parser.
    println!("cargo:rerun-if-changed=src/front/cdp/syntax/grammar.lalrpop");
    lalrpop::Configuration::new().use_cargo_dir_conventions().process().expect("lalrpop grammar failed to generate");
    clang_shim();
    // The `cdpc` binary is a position-dependent executable on Linux: as a PIE its 185,000
    // relative relocations (LLVM's and Clang's vtables and tables, 2.4 MB of `.data.rel.ro`)
    // are applied at every start, each written page a private copy: 1,277 page faults and
    // 5.9 ms of CPU for `cdpc --version`, against 1,031 and 4.7 ms without (2-core development
    // machine, 2026-11-24). The library, the Python extension and the C API,
    // which are loaded into other programs, stay position-independent.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=cdpc=-no-pie");
    }
}

/// The Clang libraries the shim needs: the front end, code generation and the driver.
const CLANG_ROOTS: &[&str] = &["clangCodeGen", "clangFrontend", "clangDriver"];

fn clang_shim() {
    println!("cargo:rerun-if-changed=src/front/cuda/shim.cpp");
    println!("cargo:rerun-if-changed=src/back/llvm_shim.cpp");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    let config = llvm_config();
    let query = |arg: &str| -> String {
        let out = Command::new(&config).arg(arg).output().unwrap_or_else(|e| panic!("running {} {arg}: {e}", config.display()));
        assert!(out.status.success(), "{} {arg} failed", config.display());
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let libdir = PathBuf::from(query("--libdir"));
    let mut build = cc::Build::new();
    build.cpp(true).file("src/front/cuda/shim.cpp").file("src/back/llvm_shim.cpp").warnings(false);
    for flag in query("--cxxflags").split_whitespace() {
        // LLVM's build flags minus its own warnings and optimisation choices.
        if flag.starts_with("-W") || flag.starts_with("-O") || flag.starts_with("-g") {
            continue;
        }
        build.flag(flag);
    }
    build.flag("-O2");
    build.compile("cdpc_clang_shim");

    println!("cargo:rustc-link-search=native={}", libdir.display());
    // Where Clang's resource headers are looked for last (clang::in_process::find_resource_dir).
    println!("cargo:rustc-env=CDPC_LLVM_LIBDIR={}", libdir.display());
    let statically = std::env::var_os("CARGO_FEATURE_LLVM_STATIC").is_some();
    if statically {
        for lib in clang_archives(&libdir) {
            // Not bundled into cdpc's rlib (hundreds of MB): the final link reads them from libdir.
            println!("cargo:rustc-link-lib=static:-bundle={lib}");
        }
    } else {
        let shared = std::fs::read_dir(&libdir)
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("libclang-cpp.so"))
            .min_by_key(|n| n.len())
            .unwrap_or_else(|| panic!("no libclang-cpp.so in {}: install libclang-cpp22 (apt-get install libclang-22-dev)", libdir.display()));
        println!("cargo:rustc-link-lib=dylib:+verbatim={shared}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir.display());
    }
}

/// llvm-config, found as llvm-sys finds it.
fn llvm_config() -> PathBuf {
    if let Some(prefix) = std::env::var_os("LLVM_SYS_221_PREFIX").filter(|p| !p.is_empty()) {
        return Path::new(&prefix).join("bin/llvm-config");
    }
    for name in ["llvm-config-22", "llvm-config"] {
        if Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return PathBuf::from(name);
        }
    }
    panic!("llvm-config of LLVM 22 not found: run `cargo xtask setup`, or set LLVM_SYS_221_PREFIX");
}

/// Clang's static libraries that [`CLANG_ROOTS`] need, dependents before their dependencies
/// (what a one-pass linker needs), read from `lib/cmake/clang/ClangTargets.cmake`.
fn clang_archives(libdir: &Path) -> Vec<String> {
    let cmake = libdir.join("cmake/clang/ClangTargets.cmake");
    let text = std::fs::read_to_string(&cmake).unwrap_or_else(|e| panic!("reading {}: {e}: install libclang-22-dev", cmake.display()));
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("set_target_properties(") {
            current = rest.split_whitespace().next().map(str::to_string);
        } else if let (Some(target), Some(list)) = (&current, line.strip_prefix("INTERFACE_LINK_LIBRARIES \"")) {
            let list = list.trim_end_matches('"');
            let names = list.split(';').map(|d| d.trim_start_matches("$<LINK_ONLY:").trim_end_matches('>').to_string()).filter(|d| d.starts_with("clang")).collect();
            deps.insert(target.clone(), names);
        }
    }
    // Depth-first, each library after everything that depends on it: reversed post-order.
    fn visit(lib: &str, deps: &BTreeMap<String, Vec<String>>, seen: &mut BTreeSet<String>, order: &mut Vec<String>) {
        if !seen.insert(lib.to_string()) {
            return;
        }
        for d in deps.get(lib).into_iter().flatten() {
            visit(d, deps, seen, order);
        }
        order.push(lib.to_string());
    }
    let (mut seen, mut order) = (BTreeSet::new(), Vec::new());
    for root in CLANG_ROOTS {
        visit(root, &deps, &mut seen, &mut order);
    }
    order.reverse();
    for lib in &order {
        let archive = libdir.join(format!("lib{lib}.a"));
        assert!(archive.is_file(), "{} is missing: install libclang-22-dev", archive.display());
        println!("cargo:rerun-if-changed={}", archive.display());
    }
    order
}
