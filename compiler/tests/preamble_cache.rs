//! The cached precompiled preamble of a CUDA C++ file (compiler/src/clang/preamble.rs): made on
//! the second compilation, used on the next ones while the header and the options are as they
//! were, made again when they change or the cache file is damaged, safe under concurrent
//! compilations, with the header's warnings on every compilation and no temporary files left.
//! Each test has a cache folder of its own (`CDPC_CACHE_DIR`) and runs cdpc as a process.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime};

/// A source whose preamble includes `h.h`, which warns and defines the value the kernel stores.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(value: u32) -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        std::fs::write(
            dir.path().join("main.cu"),
            "// preamble\n#include \"h.h\"\n\n__global__ void store(int *out) { out[0] = 2 * value() * SCALE; }\n",
        )
        .unwrap();
        let p = Project { dir };
        p.header(value);
        p
    }

    /// Writes `h.h` whose `value()` returns `value` (four digits: the same size for every
    /// value). A function, not a macro: Clang's precompiled header keeps the function's body,
    /// but reads a macro's number from the header when it expands it.
    fn header(&self, value: u32) {
        std::fs::write(self.path("h.h"), format!("#pragma once\n#warning \"h.h is read\"\n__device__ inline int value() {{ return {value}; }}\n")).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }

    /// `cdpc main.cu --emit ptx -DSCALE=scale`: the PTX, or the failure's stderr; and stderr.
    fn compile(&self, scale: u32, env: &[(&str, &str)]) -> (String, String) {
        let out = self.path(&format!("out-{}.ptx", std::process::id() as u128 + SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos()));
        let run = Command::new(env!("CARGO_BIN_EXE_cdpc"))
            .current_dir(self.dir.path())
            .arg("main.cu")
            .args(["--emit", "ptx", &format!("-DSCALE={scale}"), "-o"])
            .arg(&out)
            .env("CDPC_CACHE_DIR", self.cache())
            .env_remove("CDPC_PREAMBLE")
            .envs(env.iter().copied())
            .env("TMPDIR", self.path("tmp"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{stderr}");
        let ptx = std::fs::read_to_string(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        (ptx, stderr)
    }

    /// The files of the preamble cache, by extension.
    fn entries(&self, extension: &str) -> Vec<PathBuf> {
        let Ok(dir) = std::fs::read_dir(self.cache().join("preamble")) else { return Vec::new() };
        let mut out: Vec<PathBuf> = dir.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == extension)).collect();
        out.sort();
        out
    }

    /// Every file of the preamble cache is an entry's (no temporary files), and the work
    /// folder is empty.
    fn assert_clean(&self) {
        for e in std::fs::read_dir(self.cache().join("preamble")).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            let (stem, ext) = name.split_once('.').unwrap_or((&name, ""));
            assert!(stem.len() == 16 && stem.chars().all(|c| c.is_ascii_hexdigit()) && ["cu", "pch", "json", "seen"].contains(&ext), "left in the cache: {name}");
        }
        assert_eq!(std::fs::read_dir(self.path("tmp")).unwrap().count(), 0, "work files left");
    }
}

/// The value the kernel stores, as PTX writes it.
fn stores(ptx: &str, value: u32) -> bool {
    ptx.contains(&format!(", {value};"))
}

fn warned_once(stderr: &str) -> bool {
    stderr.matches("\"h.h is read\" [-W#warnings]").count() == 1
}

#[test]
fn the_preamble_is_made_on_the_second_compilation_used_while_its_header_is_unchanged_and_made_again_after() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    let (first, stderr) = p.compile(1, &[]);
    assert!(stores(&first, 2000) && warned_once(&stderr), "{stderr}\n{first}");
    assert!(p.entries("pch").is_empty() && p.entries("seen").len() == 1, "the first compilation only marks the preamble");
    let (second, stderr) = p.compile(1, &[]);
    assert_eq!(p.entries("pch").len(), 1, "the second compilation makes it");
    assert_eq!(second, first);
    assert!(warned_once(&stderr), "the header's warning is replayed: {stderr}");
    // Hit: a header changed behind the cache's back (same size, same time) is not read again,
    // so the kernel keeps the value the preamble was made with.
    let header = p.path("h.h");
    let modified = std::fs::metadata(&header).unwrap().modified().unwrap();
    p.header(1001);
    std::fs::File::options().write(true).open(&header).unwrap().set_modified(modified).unwrap();
    let (third, stderr) = p.compile(1, &[]);
    assert!(stores(&third, 2000), "the precompiled preamble was used: {third}");
    assert!(warned_once(&stderr), "the header's warning is replayed on a hit: {stderr}");
    // Miss: the same change with its own time is read.
    std::fs::File::options().write(true).open(&header).unwrap().set_modified(modified + Duration::from_secs(2)).unwrap();
    let (fourth, stderr) = p.compile(1, &[]);
    assert!(stores(&fourth, 2002) && warned_once(&stderr), "{stderr}\n{fourth}");
    let (fifth, _) = p.compile(1, &[]);
    assert!(stores(&fifth, 2002));
    assert_eq!(p.entries("pch").len(), 1, "made again in place: the key is the same");
    p.assert_clean();
}

#[test]
fn other_options_are_another_preamble() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    for _ in 0..3 {
        assert!(stores(&p.compile(1, &[]).0, 2000));
    }
    for _ in 0..3 {
        assert!(stores(&p.compile(3, &[]).0, 6000));
    }
    assert_eq!(p.entries("pch").len(), 2);
    assert_eq!(p.entries("seen").len(), 2);
    p.assert_clean();
}

#[test]
fn a_damaged_header_or_manifest_is_made_again_not_trusted() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    let (good, _) = p.compile(1, &[]);
    p.compile(1, &[]);
    let pch = p.entries("pch").pop().unwrap();
    std::fs::write(&pch, b"CPCH not a precompiled header at all").unwrap();
    let (ptx, stderr) = p.compile(1, &[]);
    assert_eq!(ptx, good);
    assert!(!stderr.contains("error") && warned_once(&stderr), "{stderr}");
    assert!(!pch.exists(), "a header Clang refuses is removed");
    p.compile(1, &[]);
    assert!(std::fs::read(&pch).unwrap().len() > 1000, "and made again");
    let manifest = p.entries("json").pop().unwrap();
    std::fs::write(&manifest, b"{\"key\": {\"text\": ").unwrap();
    assert_eq!(p.compile(1, &[]).0, good);
    let text = std::fs::read(&manifest).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&text).is_ok(), "a manifest that cannot be read is written again");
    p.assert_clean();
}

#[test]
fn concurrent_compilations_share_the_cache_safely() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    let outputs: Vec<Vec<String>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..3).map(|_| s.spawn(|| (0..3).map(|_| p.compile(1, &[]).0).collect())).collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let all: Vec<&String> = outputs.iter().flatten().collect();
    assert!(stores(all[0], 2000));
    assert!(all.iter().all(|o| *o == all[0]), "every compilation gives the same PTX");
    assert_eq!(p.entries("pch").len(), 1);
    assert!(stores(&p.compile(1, &[]).0, 2000));
    p.assert_clean();
}

#[test]
fn cdpc_preamble_0_turns_the_preamble_off() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    for _ in 0..3 {
        let (ptx, stderr) = p.compile(1, &[("CDPC_PREAMBLE", "0")]);
        assert!(stores(&ptx, 2000) && warned_once(&stderr));
    }
    assert!(!p.cache().join("preamble").exists());
    assert!(p.cache().join("pch").is_dir(), "the wrapper's header stays");
}
