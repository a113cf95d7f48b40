//! ccache in front of cdpc, as docs/CCACHE.md sets it up: `compiler_type = nvcc` (ccache then
//! reads nvcc's `-dc` as a compilation), in ccache's default modes (preprocessor mode, which
//! hashes `cdpc -E`'s output, and direct mode, which learns the headers from its line markers),
//! in preprocessor mode alone, and in depend mode (`depend_mode = true`, with cdpc's `-MD` list
//! of headers). The same file built twice, its outputs removed in between, is a hit the second
//! time with a byte-identical object; a changed header is a miss. Skipped, with the reason
//! printed, when ccache or the NVIDIA tools are not installed.

use crate::build_common::{ccache_stats, have, stderr, tool_dir};
use std::path::Path;
use std::process::{Command, Output};

const SOURCE: &str = r#"#include <cstdio>
#include "twice.cuh"

__global__ void scale(int *a) { a[threadIdx.x] = twice(threadIdx.x); }
static __global__ void mark(int *a) { a[0] = 7; }

void launch(int *a) {
  scale<<<1, 32>>>(a);
  mark<<<1, 1>>>(a);
}
"#;

/// The options CMake gives nvcc for a CUDA object of a separable-compilation target.
const CMAKE: [&str; 11] = ["-rdc=true", "-x", "cu", "--generate-code=arch=compute_90,code=[compute_90,sm_90]", "-Xcompiler=-fPIC", "-MD", "-MT", "x.o", "-MF", "x.o.d", "-c"];

/// `ccache cdpc ARGS` in `dir`, with the cache in `cache` and only the configuration in
/// `cache/ccache.conf` (none of the user's `CCACHE_*` variables or files).
fn ccache(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("ccache");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("CCACHE_") {
            command.env_remove(name);
        }
    }
    let out = command.current_dir(dir).env("CCACHE_DIR", cache).env("CCACHE_CONFIGPATH", cache.join("ccache.conf")).arg(env!("CARGO_BIN_EXE_cdpc")).args(args).output().expect("ccache runs");
    assert!(out.status.success(), "ccache cdpc {args:?}: {}", stderr(&out));
    out
}

/// A folder with the source and its header, and a cache with docs/CCACHE.md's depend-mode
/// settings; `None` when ccache or the NVIDIA tools are missing.
fn setup() -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    setup_with("depend_mode = true\ncompiler_type = nvcc\n")
}

/// [`setup`] with `conf` as the cache's `ccache.conf`.
fn setup_with(conf: &str) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    if !have("ccache") {
        return None;
    }
    tool_dir()?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.cu"), SOURCE).unwrap();
    std::fs::write(dir.path().join("twice.cuh"), "__device__ inline int twice(int x) { return 2 * x; }\n").unwrap();
    let cache = dir.path().join("ccache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::write(cache.join("ccache.conf"), conf).unwrap();
    Some((dir, cache))
}

/// Builds `x.o` from nothing (the object and the dependency list removed first): its bytes.
fn build(dir: &Path, cache: &Path, args: &[&str]) -> Vec<u8> {
    for stale in ["x.o", "x.o.d"] {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    ccache(dir, cache, args);
    assert!(dir.join("x.o.d").is_file(), "no dependency list");
    std::fs::read(dir.join("x.o")).expect("the object")
}

#[test]
fn cmakes_compilation_is_a_hit_the_second_time_with_the_same_object() {
    let Some((dir, cache)) = setup() else { return };
    let args = [&CMAKE[..], &["x.cu", "-o", "x.o"]].concat();
    let first = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["direct_cache_hit"]), (1, 0), "{s:?}");
    let second = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["direct_cache_hit"]), (1, 1), "{s:?}");
    assert!(first == second, "the cached object differs from the compiled one");
    // cdpc itself gives the same bytes again (nothing of the run, no temporary name, is in it).
    let out = crate::build_common::cdpc(dir.path(), &[&CMAKE[..], &["x.cu", "-o", "again.o"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read(dir.path().join("again.o")).unwrap() == first, "cdpc's object differs from run to run");
    // A changed header is a miss, not the old object.
    std::fs::write(dir.path().join("twice.cuh"), "__device__ inline int twice(int x) { return x + x + 1; }\n").unwrap();
    let third = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["direct_cache_hit"]), (2, 1), "{s:?}");
    assert!(third != first, "a changed header gave the same object");
}

/// nvcc's spelling `-dc` (no `-c`): ccache takes it for a compilation as nvcc's
/// (`compiler_type = nvcc`). Full debug information is spelled `--device-debug`: ccache 4.7.5
/// reads `-G` as GCC's, which takes a value (`-G x.cu`: `no_input_file`, uncached). Its debug
/// information names a `static` kernel by its Clang name, whose suffix is the `-cuid`: the same
/// in every run (it once hashed the run's work folder).
#[test]
fn dc_with_full_debug_information_is_a_hit_the_second_time_with_the_same_object() {
    let Some((dir, cache)) = setup() else { return };
    let args = ["-dc", "--device-debug", "x.cu", "-o", "x.o", "-MD", "-MF", "x.o.d"];
    let first = build(dir.path(), &cache, &args);
    let second = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["direct_cache_hit"]), (1, 1), "{s:?}");
    assert!(first == second, "the cached object differs from the compiled one");
    // Without cdpc's cache (a precompiled preamble changes `-G`'s debug information: the
    // header's name, the types it keeps), two runs of cdpc give the same bytes.
    let run = |out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).env("CDPC_CACHE_DIR", "").args(["-dc", "-G", "x.cu", "-o", out]).output().expect("cdpc runs");
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read(dir.path().join(out)).unwrap()
    };
    assert!(run("a.o") == run("b.o"), "cdpc -G's object differs from run to run");
}

/// ccache's default modes (no depend mode): ccache runs `cdpc ARGS -E -o TMP.i x.cu` and hashes
/// the preprocessed text (preprocessor mode), and learns the headers from its line markers for
/// the next lookup (direct mode). The second build after removing the object is all hits
/// (direct, or preprocessed where the headers were too new for direct mode's manifest), with
/// the same bytes; a changed header is a miss.
#[test]
fn preprocessor_mode_makes_the_second_build_a_hit_with_the_same_object() {
    let Some((dir, cache)) = setup_with("compiler_type = nvcc\n") else { return };
    let args = [&CMAKE[..], &["x.cu", "-o", "x.o"]].concat();
    let first = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["preprocessed_cache_miss"], s["preprocessor_error"]), (1, 1, 0), "{s:?}");
    let second = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!(s["cache_miss"], 1, "the second build missed: {s:?}");
    assert_eq!(s["direct_cache_hit"] + s["preprocessed_cache_hit"], 1, "{s:?}");
    assert!(first == second, "the cached object differs from the compiled one");
    // A third build is a direct hit: the manifest names the headers from `-E`'s line markers.
    let third = build(dir.path(), &cache, &args);
    assert!(third == first);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["direct_cache_hit"] + s["preprocessed_cache_hit"]), (1, 2), "{s:?}");
    // A changed header is a miss, not the old object.
    std::fs::write(dir.path().join("twice.cuh"), "__device__ inline int twice(int x) { return x + x + 1; }\n").unwrap();
    let changed = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!(s["cache_miss"], 2, "{s:?}");
    assert!(changed != first, "a changed header gave the same object");
}

/// Preprocessor mode alone (`direct_mode = false`): every lookup runs `cdpc -E`; the second
/// build is `preprocessed_cache_hit` with the same bytes, and a header change that only the
/// device side sees is a miss: `-E` writes the device side's text too.
#[test]
fn preprocessor_mode_alone_hits_on_the_preprocessed_text() {
    let Some((dir, cache)) = setup_with("compiler_type = nvcc\ndirect_mode = false\n") else { return };
    let args = [&CMAKE[..], &["x.cu", "-o", "x.o"]].concat();
    let first = build(dir.path(), &cache, &args);
    let second = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["preprocessed_cache_hit"], s["direct_cache_hit"]), (1, 1, 0), "{s:?}");
    assert!(first == second, "the cached object differs from the compiled one");
    // The header's text under `__CUDA_ARCH__` only: the host side's preprocessed text is the
    // same, the device side's is not, and the object changes.
    std::fs::write(dir.path().join("twice.cuh"), "#ifdef __CUDA_ARCH__\n__device__ inline int twice(int x) { return 3 * x; }\n#else\n__device__ inline int twice(int x) { return 2 * x; }\n#endif\n")
        .unwrap();
    let device_only = build(dir.path(), &cache, &args);
    let s = ccache_stats(&cache);
    assert_eq!((s["cache_miss"], s["preprocessed_cache_hit"]), (2, 1), "{s:?}");
    assert!(device_only != first, "a device-side change gave the same object");
}
