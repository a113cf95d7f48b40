//! The cache folder that cannot be written, on a full disk, and fuzzed: a compilation
//! never fails because of its cache (compiler/src/front/cuda/cache.rs, "Damaged entries").
//!
//! - Read-only: a cache folder under a regular file (every `mkdir` fails with `ENOTDIR`, for any
//!   user, root included, whom permissions do not stop), and a warm cache made read-only (a
//!   read-only bind mount as root, `EROFS`; else its folders mode 0555), with entries to read,
//!   entries missing that cannot be written, and a libdevice copy missing (`--use_fast_math`).
//! - A full disk: the cache on a small file system of its own (a tmpfs, else a loop-mounted
//!   ext2 image; both need root, else the test is skipped with the reason), filled up
//!   completely, to less than a libdevice copy, to a few headers (writes cut short by
//!   `ENOSPC`), and filled after the cache was warm.
//! - `include/` (cdpc's additions header, the libdevice copies) removed, or truncated and
//!   written over in place, while compilations read them: each such compilation runs again
//!   with copies of its own.
//! - Fuzzed: while several cdpc processes compile over one cache folder, a thread does random
//!   operations on the folder's files from a seeded generator (`CDPC_STRESS_SEED`, default 52):
//!   truncates, overwrites, removes and renames them (one entry's file over another's), makes
//!   garbage files, folders and links with cache-like names, and changes modes.
//!   `CDPC_STRESS_ROUNDS` (default 4, each four compilations) makes the run heavier. The
//!   operations are the seed's; which file each hits depends on what the compilations have
//!   written by then, so a failing run is reported with its seed, round and last operations.
//!
//! Every compilation (`cdpc FILE --emit ptx -o -`) exits 0 with the PTX of a compilation without
//! the cache (`CDPC_CACHE_DIR=`), and says at most one line, a note, on stderr; no work folder
//! is left in `TMPDIR`. Overwrites of a precompiled header stay within its first 4 KiB (its
//! control block, whose damage Clang sees): Clang keeps no checksum of the rest, whose damage
//! the cache does not claim to see (ARCHITECTURE.md).

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A device launch, the C library's `printf` (the wrapper's header and the preamble hold
/// `<cstdio>`) and a header of the project's.
const A: &str = "#include <cstdio>\n#include \"k.h\"\n\n__global__ void child(int *out, int n) { out[threadIdx.x] = n * SCALE; }\n\
__global__ void parent(int *out) { child<<<1, 32>>>(out, twice(threadIdx.x)); printf(\"a %d\\n\", out[0]); }\n";
/// Single-precision math, which `--use_fast_math` takes from cdpc's copy of libdevice.
const M: &str = "#include <cmath>\n#include <cstdio>\n#include \"k.h\"\n\n\
__global__ void wave(float *out, float x) { out[threadIdx.x] = sinf(x * twice(threadIdx.x)) / sqrtf(x + SCALE) + expf(x); }\n\
__global__ void top(float *out) { wave<<<1, 32>>>(out, 0.5f); printf(\"m %f\\n\", out[0]); }\n";
const HEADER: &str = "#pragma once\n__device__ inline int twice(int x) { return 2 * x; }\n";
/// A load through `__ldca`, which cdpc's additions header defines (Clang's headers lack it): an
/// empty additions header is still a header, and Clang's only message is then about this file.
/// Compiled with `-DN=3` too, a macro that `cuda.h` and Clang's headers use as a word: the
/// files that hide it from them (clang/hidden_macros.rs) are in the cache's `include/` as well.
const L: &str = "#include \"k.h\"\n\n__global__ void load(int *out, const int *in) { out[threadIdx.x] = twice(__ldca(in + threadIdx.x)) * SCALE * N; }\n";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Job {
    file: &'static str,
    scale: u32,
    fast_math: bool,
    /// `-dc`: the host object (both sides' entries, the host side's of its own options).
    dc: bool,
}

const fn job(file: &'static str, scale: u32, fast_math: bool) -> Job {
    Job { file, scale, fast_math, dc: false }
}

const fn dc_job(file: &'static str, scale: u32) -> Job {
    Job { file, scale, fast_math: false, dc: true }
}

/// One batch: two of the same file and options (they share every entry), another option, fast
/// math (a libdevice copy in the cache's `include/`), and a host object.
const JOBS: [Job; 5] = [job("a.cu", 1, false), job("a.cu", 2, false), job("m.cu", 1, true), job("a.cu", 1, false), dc_job("a.cu", 4)];
/// Jobs whose entries a warm cache of [`JOBS`] does not hold.
const NEW_JOBS: [Job; 2] = [job("a.cu", 3, false), job("m.cu", 3, true)];
/// What the compilations over a damaged `include/` run: [`JOBS`]' kinds, with `__ldca`.
const INCLUDE_JOBS: [Job; 5] = [job("l.cu", 1, false), job("a.cu", 1, false), job("m.cu", 1, true), job("l.cu", 2, false), dc_job("l.cu", 4)];
/// What the fuzzer's rounds draw from.
const POOL: [Job; 7] = [job("a.cu", 1, false), job("a.cu", 2, false), job("m.cu", 1, true), job("m.cu", 1, false), job("m.cu", 2, true), job("a.cu", 1, true), dc_job("m.cu", 2)];

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

struct Project {
    dir: tempfile::TempDir,
    /// The PTX of each job without the cache.
    references: HashMap<Job, String>,
}

impl Project {
    fn new(jobs: &[Job]) -> Project {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("a.cu", A), ("m.cu", M), ("l.cu", L), ("k.h", HEADER)] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        let mut p = Project { dir, references: HashMap::new() };
        for &j in jobs {
            if !p.references.contains_key(&j) {
                let ptx = p.compile(j, None, &[]).unwrap_or_else(|e| panic!("{j:?} without the cache: {e}"));
                p.references.insert(j, ptx);
            }
        }
        p
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `cdpc FILE --emit ptx -DSCALE=N [--use_fast_math] -o -` in the project's folder over
    /// `cache` (none: `CDPC_CACHE_DIR=`), the cache's other variables unset but for `env`: the
    /// PTX, or why not (a failure, or more on stderr than one note).
    fn compile(&self, j: Job, cache: Option<&Path>, env: &[(&str, &str)]) -> Result<String, String> {
        static OBJECTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let object = self.path(&format!("{}.o", OBJECTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)));
        let mut command = Command::new(env!("CARGO_BIN_EXE_cdpc"));
        if j.dc {
            command.current_dir(self.dir.path()).args([j.file, "-dc", &format!("-DSCALE={}", j.scale), "-o", object.to_str().unwrap()]);
        } else {
            command.current_dir(self.dir.path()).args([j.file, "--emit", "ptx", &format!("-DSCALE={}", j.scale), "-o", "-"]);
        }
        if j.fast_math {
            command.arg("--use_fast_math");
        }
        if j.file == "l.cu" {
            command.arg("-DN=3");
        }
        command
            .env("CDPC_CACHE_DIR", cache.map(Path::as_os_str).unwrap_or_default())
            .env_remove("CDPC_PREAMBLE")
            .env_remove("CDPC_CACHE_MAX_SIZE")
            // The headers a compilation leaves for later made in its own process, after its
            // output (clang/cache.rs, `Fill`): each compilation leaves the cache as it says.
            .env("CDPC_CACHE_BACKGROUND", "0")
            .envs(env.iter().copied())
            .env("TMPDIR", self.path("tmp"));
        let run = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        if !run.status.success() {
            return Err(format!("{:?}:\n{stderr}", run.status));
        }
        let said: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        if said.len() > 1 || said.iter().any(|l| !l.trim_start().starts_with("note")) {
            return Err(format!("more than one note on stderr:\n{stderr}"));
        }
        if j.dc {
            // The object's bytes, in hexadecimal.
            let bytes = std::fs::read(&object).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_file(&object);
            return Ok(bytes.iter().map(|b| format!("{b:02x}")).collect());
        }
        String::from_utf8(run.stdout).map_err(|e| e.to_string())
    }

    /// `jobs` at once over `cache`: each succeeds with the PTX of a compilation without the
    /// cache; no work folder is left.
    fn batch(&self, what: &str, jobs: &[Job], cache: &Path, env: &[(&str, &str)]) -> Result<(), String> {
        let outputs: Vec<Result<String, String>> = std::thread::scope(|s| {
            let runs: Vec<_> = jobs.iter().map(|&j| s.spawn(move || self.compile(j, Some(cache), env))).collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (j, output) in jobs.iter().zip(outputs) {
            let ptx = output.map_err(|e| format!("{what}: {j:?} failed: {e}"))?;
            if ptx != self.references[j] {
                return Err(format!("{what}: {j:?} gave other PTX than a compilation without the cache"));
            }
        }
        let left: Vec<_> = std::fs::read_dir(self.path("tmp")).unwrap().map(|e| e.unwrap().file_name()).collect();
        if !left.is_empty() {
            return Err(format!("{what}: work files left in TMPDIR: {left:?}"));
        }
        Ok(())
    }

    fn check(&self, what: &str, jobs: &[Job], cache: &Path, env: &[(&str, &str)]) {
        self.batch(what, jobs, cache, env).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Every file under `dir` with its size, in a stable order. A file gone between the folder's
/// listing and its own (a compilation's temporary file renamed into place, a file the removing
/// thread took) is left out: seen as a failure of the remover thread in a fresh-clone CI run.
fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = e.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), meta.len()));
            }
        }
    }
    out.sort();
    out
}

/// A mount of this test's, undone (lazily) when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// `mount ARGS... target`, as root only; why not otherwise.
fn mount(args: &[&str], target: &Path) -> Result<Mount, String> {
    if !root() {
        return Err("not root".into());
    }
    let run = Command::new("mount").args(args).arg(target).output().map_err(|e| format!("mount: {e}"))?;
    if !run.status.success() {
        return Err(format!("mount {}: {}", args.join(" "), String::from_utf8_lossy(&run.stderr).trim()));
    }
    Ok(Mount(target.to_path_buf()))
}

/// A file system of `mib` MiB of its own at `dir`: a tmpfs, else an ext2 image on a loop device.
fn small_file_system(dir: &Path, mib: u64) -> Result<Mount, String> {
    std::fs::create_dir_all(dir).unwrap();
    let tmpfs = match mount(&["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0755"), "tmpfs"], dir) {
        Ok(m) => return Ok(m),
        Err(e) => e,
    };
    let image = dir.with_extension("img");
    std::fs::File::create(&image).and_then(|f| f.set_len(mib << 20)).map_err(|e| e.to_string())?;
    let made = Command::new("mkfs.ext2").args(["-q", "-F", "-m", "0"]).arg(&image).output().map_err(|e| format!("{tmpfs}; mkfs.ext2: {e}"))?;
    if !made.status.success() {
        return Err(format!("{tmpfs}; mkfs.ext2: {}", String::from_utf8_lossy(&made.stderr).trim()));
    }
    mount(&["-o", "loop", image.to_str().unwrap()], dir).map_err(|e| format!("{tmpfs}; {e}"))
}

/// Fills the file system of `dir` until a write fails, then gives `leave` bytes back.
fn fill(dir: &Path, leave: u64) {
    let path = dir.join("filler");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
    let chunk = vec![0x5au8; 1 << 16];
    while file.write_all(&chunk).is_ok() {}
    let _ = file.sync_all();
    let len = file.metadata().unwrap().len();
    file.set_len(len.saturating_sub(leave)).unwrap();
}

#[test]
fn a_read_only_cache_compiles_without_caching() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let mut jobs = JOBS.to_vec();
    jobs.extend(NEW_JOBS);
    let p = Project::new(&jobs);
    // A folder that can never be made, whoever runs the test: its parent is a regular file.
    std::fs::write(p.path("not-a-folder"), "").unwrap();
    let under_a_file = p.path("not-a-folder/cache");
    p.check("a cache folder under a regular file", &JOBS, &under_a_file, &[]);
    p.check("a cache folder under a regular file, again", &JOBS, &under_a_file, &[]);
    // A warm cache, its libdevice copy removed, then made read-only.
    let cache = p.path("cache");
    p.check("cold", &JOBS, &cache, &[]);
    p.check("warm (the preambles made)", &JOBS, &cache, &[]);
    for (file, _) in listing(&cache.join("include")) {
        if file.to_string_lossy().contains("-libdevice-") {
            std::fs::remove_file(file).unwrap();
        }
    }
    let before = listing(&cache);
    let read_only = if root() {
        let bound = mount(&["--bind", cache.to_str().unwrap()], &cache);
        // The remount is undone with the bind mount.
        match bound.and_then(|m| mount(&["-o", "remount,bind,ro"], &cache).map(|ro| (m, std::mem::forget(ro)).0)) {
            Ok(m) => Some(m),
            Err(why) => return println!("read-only cache with entries skipped: root, and no read-only bind mount ({why})"),
        }
    } else {
        for dir in [&cache, &cache.join("include"), &cache.join("pch"), &cache.join("preamble")] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        None
    };
    p.check("read-only, hits", &JOBS, &cache, &[]);
    p.check("read-only, misses", &NEW_JOBS, &cache, &[]);
    p.check("read-only, misses without preambles", &NEW_JOBS, &cache, &[("CDPC_PREAMBLE", "0")]);
    drop(read_only);
    for dir in [&cache, &cache.join("include"), &cache.join("pch"), &cache.join("preamble")] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let after = listing(&cache);
    assert_eq!(after, before, "the read-only cache is as it was");
}

#[test]
fn a_cache_on_a_full_disk_compiles_without_caching() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let mut jobs = JOBS.to_vec();
    jobs.extend(NEW_JOBS);
    let p = Project::new(&jobs);
    let disk = p.path("disk");
    // Room for the entries of JOBS (three wrapper headers and three preambles of 11 MB each)
    // and [`cdpc::front::cuda::cache::MIN_ROOM`] besides.
    let _mounted = match small_file_system(&disk, 160) {
        Ok(m) => m,
        Err(why) => return println!("skipped: no small file system to fill ({why})"),
    };
    // Full; room for the additions header but not a libdevice copy (64 KiB); room for a few
    // headers (more than `MIN_ROOM`, less than the six that JOBS make): writes cut short by
    // ENOSPC.
    for (i, leave) in [0u64, 64 << 10, 40 << 20].into_iter().enumerate() {
        let cache = disk.join(format!("cache{i}"));
        fill(&disk, leave);
        p.check(&format!("{leave} bytes free, cold"), &JOBS, &cache, &[]);
        if leave > cdpc::front::cuda::cache::MIN_ROOM {
            p.check(&format!("{leave} bytes free, second sight"), &JOBS, &cache, &[]);
            p.check(&format!("{leave} bytes free, third"), &JOBS, &cache, &[]);
        }
        let leftovers: Vec<_> = listing(&cache).into_iter().filter(|(f, _)| f.file_name().unwrap().to_string_lossy().starts_with(".tmp")).collect();
        assert!(leftovers.is_empty(), "{leave} bytes free: partial files left: {leftovers:?}");
        std::fs::remove_file(disk.join("filler")).unwrap();
        std::fs::remove_dir_all(&cache).unwrap();
    }
    // Warm, then full: hits go on, misses are not kept.
    let cache = disk.join("warm");
    p.check("warm cache, cold", &JOBS, &cache, &[]);
    p.check("warm cache, second sight", &JOBS, &cache, &[]);
    assert!(listing(&cache).iter().any(|(f, _)| f.starts_with(cache.join("preamble")) && f.extension().is_some_and(|e| e == "pch")), "the cache is warm");
    fill(&disk, 0);
    p.check("warm cache on a full disk, hits", &JOBS, &cache, &[]);
    p.check("warm cache on a full disk, misses", &NEW_JOBS, &cache, &[]);
    p.check("warm cache on a full disk, second sight of the misses", &NEW_JOBS, &cache, &[]);
}

#[test]
fn another_entrys_header_in_the_place_of_one_is_a_miss() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(&JOBS);
    let cache = p.path("cache");
    let headers = |kind: &str| -> Vec<PathBuf> { listing(&cache.join(kind)).into_iter().map(|(f, _)| f).filter(|f| f.extension().is_some_and(|e| e == "pch")).collect() };
    p.check("cold", &JOBS, &cache, &[]);
    p.check("warm", &JOBS, &cache, &[]);
    let (wrappers, preambles) = (headers("pch"), headers("preamble"));
    assert!(!wrappers.is_empty() && !preambles.is_empty(), "{wrappers:?} {preambles:?}");
    // A wrapper's header over each preamble's (Clang takes it, and the file's own headers are
    // missing: "use of undeclared identifier" before the manifest named its header).
    for (i, preamble) in preambles.iter().enumerate() {
        std::fs::copy(&wrappers[i % wrappers.len()], preamble).unwrap();
    }
    p.check("preambles' headers replaced by a wrapper's", &JOBS, &cache, &[]);
    // Each is a miss (its manifest names another file), made again by the step's compilations:
    // its mark stays, so this is no first sight.
    let remade = headers("preamble");
    assert_eq!(remade, preambles, "the damaged preambles are made again within the step");
    let wrapper_sizes: Vec<u64> = wrappers.iter().map(|w| std::fs::metadata(w).unwrap().len()).collect();
    for preamble in &remade {
        assert!(!wrapper_sizes.contains(&std::fs::metadata(preamble).unwrap().len()), "{preamble:?} is still a wrapper's header");
    }
    // The other way: a preamble's header in the place of each wrapper's, read without preambles.
    for (i, wrapper) in wrappers.iter().enumerate() {
        std::fs::copy(&preambles[i % preambles.len()], wrapper).unwrap();
    }
    p.check("wrappers' headers replaced by a preamble's", &JOBS, &cache, &[("CDPC_PREAMBLE", "0")]);
    // Each is a miss too (the wrapper's manifest names another file; without it Clang took a
    // preamble's header where the options matched), made again within the step. A wrapper's
    // header is made only by a compilation that reads it, one without a preamble: warm
    // compilations with preambles, which the test ran here before, leave a missing one missing.
    // (Compilations without preambles may also make wrappers' headers no step needed before.)
    let now = headers("pch");
    assert!(wrappers.iter().all(|w| now.contains(w)), "the damaged wrappers' headers are made again within the step: {wrappers:?} {now:?}");
    let preamble_sizes: Vec<u64> = preambles.iter().map(|w| std::fs::metadata(w).unwrap().len()).collect();
    for wrapper in &wrappers {
        assert!(!preamble_sizes.contains(&std::fs::metadata(wrapper).unwrap().len()), "{wrapper:?} is still a preamble's header");
    }
    // And renamed, as `mv` does: one entry's header gone to another's place.
    let (wrappers, preambles) = (headers("pch"), headers("preamble"));
    std::fs::rename(&preambles[0], &preambles[preambles.len() - 1]).unwrap();
    std::fs::rename(&wrappers[0], &wrappers[wrappers.len() - 1]).unwrap();
    p.check("headers renamed over each other", &JOBS, &cache, &[]);
    p.check("headers renamed over each other, without preambles", &JOBS, &cache, &[("CDPC_PREAMBLE", "0")]);
}

#[test]
fn cache_includes_removed_while_compilations_read_them_are_made_again() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(&JOBS);
    let cache = p.path("cache");
    p.check("cold", &JOBS, &cache, &[]);
    p.check("warm", &JOBS, &cache, &[]);
    // cdpc's additions header and the libdevice copy are checked (made again where missing) as
    // a compilation starts, and read by Clang later: removed in between, by a thread that
    // removes them every few milliseconds, that compilation runs again with copies of its own.
    let include = cache.join("include");
    let stop = AtomicBool::new(false);
    let removed = std::thread::scope(|s| {
        let remover = s.spawn(|| {
            let mut removed = 0;
            while !stop.load(Ordering::SeqCst) {
                for (file, _) in listing(&include) {
                    removed += usize::from(std::fs::remove_file(file).is_ok());
                }
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            removed
        });
        let envs: [&[(&str, &str)]; 3] = [&[], &[("CDPC_PREAMBLE", "0")], &[]];
        let results: Vec<Result<(), String>> = envs.iter().enumerate().map(|(round, env)| p.batch(&format!("include/ removed, round {round}"), &JOBS, &cache, env)).collect();
        stop.store(true, Ordering::SeqCst);
        let removed = remover.join().unwrap();
        results.into_iter().collect::<Result<(), String>>().unwrap_or_else(|e| panic!("{e}"));
        removed
    });
    assert!(removed > 0, "the files were removed");
    p.check("after", &JOBS, &cache, &[]);
}

#[test]
fn cache_includes_damaged_while_compilations_read_them_are_made_again() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(&INCLUDE_JOBS);
    let cache = p.path("cache");
    p.check("cold", &INCLUDE_JOBS, &cache, &[]);
    // As above, but the files stay where they are and their bytes change in place: emptied,
    // cut in half, or a run of bytes in the middle written over (a seeded generator's), every
    // few milliseconds. A compilation whose Clang read a file that changed since it was checked
    // runs again with copies of its own, whether Clang failed or not.
    let include = cache.join("include");
    let stop = AtomicBool::new(false);
    let damaged = std::thread::scope(|s| {
        let damager = s.spawn(|| {
            let (mut rng, mut damaged) = (Rng(52), 0);
            while !stop.load(Ordering::SeqCst) {
                for (file, len) in listing(&include) {
                    let Ok(mut f) = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW).open(&file) else { continue };
                    // Emptied (still a header Clang reads without a word about it), cut in
                    // half, or bytes written over in its middle.
                    let done = if rng.below(3) == 0 {
                        f.set_len(0)
                    } else if rng.below(2) == 0 {
                        f.set_len(len / 2)
                    } else {
                        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(len / 3)).and_then(|_| f.write_all(&rng.bytes(64)))
                    };
                    damaged += usize::from(done.is_ok());
                }
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            damaged
        });
        let envs: [&[(&str, &str)]; 3] = [&[], &[("CDPC_PREAMBLE", "0")], &[]];
        let results: Vec<Result<(), String>> = envs.iter().enumerate().map(|(round, env)| p.batch(&format!("include/ damaged, round {round}"), &INCLUDE_JOBS, &cache, env)).collect();
        stop.store(true, Ordering::SeqCst);
        let damaged = damager.join().unwrap();
        results.into_iter().collect::<Result<(), String>>().unwrap_or_else(|e| panic!("{e}"));
        damaged
    });
    assert!(damaged > 0, "the files were damaged");
    p.check("after", &INCLUDE_JOBS, &cache, &[]);
}

/// SplitMix64: the fuzzer's operations, from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A name the cache might hold in `dir`: an entry's file (of an entry there, or a new key),
/// a temporary file, or something else.
fn garbage_name(rng: &mut Rng, files: &[(PathBuf, u64)]) -> String {
    let ext = *rng.pick(&["pch", "json", "cu", "seen"]);
    match rng.below(4) {
        0 if !files.is_empty() => {
            let name = rng.pick(files).0.file_name().unwrap().to_string_lossy().into_owned();
            format!("{}.{ext}", name.split('.').next().unwrap_or("x"))
        }
        1 => format!(".tmp{:06x}", rng.below(1 << 24)),
        2 => format!("junk-{}", rng.below(100)),
        _ => format!("{:016x}-{}.{ext}", rng.next(), cdpc::front::cuda::cache::version_tag()),
    }
}

/// One random operation on the cache folder `cache`: what it did. `include/` (cdpc's additions
/// to Clang's headers and its libdevice copies) only when no compilation runs (`quiet`): those
/// are checked, and replaced when damaged, as a compilation starts, and read by path later; a
/// compilation whose Clang names one it could not read, or that finds one changed since it
/// checked it, runs again with copies of its own
/// ([`cache_includes_removed_while_compilations_read_them_are_made_again`],
/// [`cache_includes_damaged_while_compilations_read_them_are_made_again`]).
fn fuzz_once(rng: &mut Rng, cache: &Path, quiet: bool) -> String {
    let kinds: &[&str] = if quiet { &["pch", "preamble", "include"] } else { &["pch", "preamble"] };
    let files: Vec<(PathBuf, u64)> = listing(cache).into_iter().filter(|(f, _)| quiet || !f.starts_with(cache.join("include"))).collect();
    let folders: Vec<PathBuf> = [cache.to_path_buf()].into_iter().chain(kinds.iter().map(|k| cache.join(k))).collect();
    // Truncate, overwrite, remove, rename, garbage file, link, folder, chmod, a kind's folder
    // removed: the last rarely, or the cache would mostly be empty.
    const WEIGHTS: [u64; 9] = [6, 6, 4, 4, 4, 2, 2, 2, 1];
    let mut roll = rng.below(WEIGHTS.iter().sum());
    let op = WEIGHTS.iter().position(|&w| roll < w || (roll -= w, false).1).unwrap();
    // Nothing to damage yet: garbage.
    let op = if files.is_empty() && op < 6 { 4 } else { op };
    // Writes go to the file, never through a link (one may point into `include/`).
    let open = |path: &Path| std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW).open(path);
    let (file, len) = if files.is_empty() { (cache.join("x"), 0) } else { rng.pick(&files).clone() };
    let short = |p: &Path| p.strip_prefix(cache).unwrap_or(p).display().to_string();
    let done = match op {
        0 => {
            let to = rng.below(len + 1);
            (open(&file).and_then(|f| f.set_len(to)), format!("truncate {} to {to}", short(&file)))
        }
        1 => {
            // A header's control block only (see the module's text); elsewhere anywhere.
            let span = if file.extension().is_some_and(|e| e == "pch") { len.min(4096) } else { len };
            let at = rng.below(span);
            let n = 1 + rng.below(64) as usize;
            let bytes = rng.bytes(n);
            let written = open(&file).and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &bytes[..bytes.len().min((len - at) as usize)], at));
            (written, format!("overwrite {} bytes of {} at {at}", bytes.len(), short(&file)))
        }
        2 => (std::fs::remove_file(&file), format!("remove {}", short(&file))),
        3 => {
            // Over another file of the cache (another entry's, or another kind's), or away.
            let to = if rng.below(3) > 0 { rng.pick(&files).0.clone() } else { file.with_file_name(garbage_name(rng, &files)) };
            (std::fs::rename(&file, &to), format!("rename {} to {}", short(&file), short(&to)))
        }
        4 => {
            let to = rng.pick(&folders).join(garbage_name(rng, &files));
            let n = rng.below(8192) as usize;
            let bytes = rng.bytes(n);
            (std::fs::write(&to, bytes), format!("garbage file {}", short(&to)))
        }
        5 => {
            // A link to another file of the cache, in place of a file or beside.
            let target = rng.pick(&files).0.clone();
            let at = if rng.below(2) == 0 { file.clone() } else { rng.pick(&folders).join(garbage_name(rng, &files)) };
            let _ = std::fs::remove_file(&at);
            (std::os::unix::fs::symlink(&target, &at), format!("link {} to {}", short(&at), short(&target)))
        }
        6 => {
            let at = rng.pick(&folders).join(garbage_name(rng, &files));
            (std::fs::create_dir_all(&at), format!("folder {}", short(&at)))
        }
        7 => {
            let mode = *rng.pick(&[0o000, 0o200, 0o444, 0o644]);
            let at = if rng.below(4) == 0 { rng.pick(&folders[1..]).clone() } else { file };
            let mode = if at.is_dir() { *rng.pick(&[0o555, 0o755, 0o700]) } else { mode };
            let changed = if at.is_symlink() { Err(std::io::Error::other("a link")) } else { std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode)) };
            (changed, format!("chmod {mode:o} {}", short(&at)))
        }
        _ => {
            // A whole kind of entries gone (`rm -rf ~/.cache/cdpc/pch`).
            let at = rng.pick(&folders[1..]).clone();
            (std::fs::remove_dir_all(&at), format!("remove the folder {}", short(&at)))
        }
    };
    match done {
        (Ok(()), what) => what,
        (Err(e), what) => format!("{what} (failed: {e})"),
    }
}

/// Modes back to the owner's (what the fuzzer's chmods took away), so that the folder can be
/// listed and removed.
fn restore_modes(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = e.path().symlink_metadata() else { continue };
        if meta.is_dir() {
            restore_modes(&e.path());
        } else if meta.is_file() {
            let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644));
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn concurrent_compilations_survive_a_fuzzed_cache_folder() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let seed = env_number("CDPC_STRESS_SEED", 52);
    let rounds = env_number("CDPC_STRESS_ROUNDS", 4);
    let p = Project::new(&POOL);
    let cache = p.path("cache");
    let log = Mutex::new(Vec::<String>::new());
    let mut rng = Rng(seed);
    let mut operations = 0;
    for round in 0..rounds {
        let jobs: Vec<Job> = (0..4).map(|_| *rng.pick(&POOL)).collect();
        // Every third round without preambles (the wrapper's headers are read), every fourth
        // under a bound that holds two headers (every compilation that writes trims).
        let env: &[(&str, &str)] = match round % 12 {
            2 | 5 | 8 => &[("CDPC_PREAMBLE", "0")],
            3 | 7 | 11 => &[("CDPC_CACHE_MAX_SIZE", "24M")],
            _ => &[],
        };
        // Between the runs: a burst.
        for _ in 0..rng.below(12) {
            let what = fuzz_once(&mut rng, &cache, true);
            log.lock().unwrap().push(format!("round {round}, between: {what}"));
            operations += 1;
        }
        // While they run: one operation every few milliseconds.
        let stop = AtomicBool::new(false);
        let mut during = Rng(rng.next());
        // Some rounds damage the cache often (it is mostly cold), others seldom (mostly hits).
        let pace = *rng.pick(&[20, 100, 400]);
        let result = std::thread::scope(|s| {
            let damager = s.spawn(|| {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let what = fuzz_once(&mut during, &cache, false);
                    log.lock().unwrap().push(format!("round {round}, during: {what}"));
                    n += 1;
                    std::thread::sleep(std::time::Duration::from_millis(2 + during.below(pace)));
                }
                n
            });
            let result = p.batch(&format!("round {round}"), &jobs, &cache, env);
            stop.store(true, Ordering::SeqCst);
            operations += damager.join().unwrap();
            result
        });
        if let Err(e) = result {
            let log = log.lock().unwrap();
            if let Some(path) = std::env::var_os("CDPC_STRESS_LOG") {
                std::fs::write(path, log.join("\n")).unwrap();
            }
            let done: Vec<&String> = log.iter().filter(|s| !s.ends_with("nothing yet")).collect();
            let last = &done[done.len().saturating_sub(60)..];
            restore_modes(&cache);
            panic!("seed {seed} (CDPC_STRESS_SEED), {e}\nthe last operations on the cache:\n{}", last.iter().map(|s| format!("  {s}\n")).collect::<String>());
        }
    }
    restore_modes(&cache);
    println!("{rounds} rounds, {operations} operations on the cache folder, seed {seed}");
    assert!(operations as u64 > rounds * 3, "the cache was fuzzed: {operations} operations");
}
