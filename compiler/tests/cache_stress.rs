//! Many cdpc processes over one cache folder: `make -j` never fails because of the
//! other compilations or of a damaged cache (compiler/src/front/cuda/cache.rs, "Damaged entries").
//! Four compilations at a time (two of them of the same file and options, so that they share
//! every entry) over one `CDPC_CACHE_DIR`: cold, warm, with the cache's files truncated,
//! overwritten and removed between the runs and while they run, under a bound that trims the
//! cache after every compilation that writes, and in a cache folder this user cannot write.
//! Every compilation succeeds and gives the PTX of a compilation without the cache
//! (`CDPC_CACHE_DIR=`). Also: a work folder left by a killed process is removed by the next
//! run (compiler/src/toolchain/cleanup.rs, `sweep_stale_work_dirs`).

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Two kernels with a device launch, the C library's `printf` (so that the wrapper's header
/// and the preamble hold `<cstdio>`) and a header of the project's.
const A: &str = "#include <cstdio>\n#include \"k.h\"\n\n__global__ void child(int *out, int n) { out[threadIdx.x] = n * SCALE; }\n\
__global__ void parent(int *out) { child<<<1, 32>>>(out, twice(threadIdx.x)); printf(\"a %d\\n\", out[0]); }\n";
const B: &str = "#include <cstdio>\n#include <cstdlib>\n#include \"k.h\"\n\n__device__ int total;\n\
__global__ void leaf(int n) { atomicAdd(&total, twice(n) * SCALE); }\n\
__global__ void root() { if (threadIdx.x == 0) leaf<<<2, 64>>>(blockIdx.x); printf(\"b %d\\n\", total); }\n";
const HEADER: &str = "#pragma once\n__device__ inline int twice(int x) { return 2 * x; }\n";

/// The compilations of one batch: file, `-DSCALE` and whether it is `-dc` (a host object, whose
/// host side has entries of its own options); the first and fourth share every entry, as do
/// the last two. Those of `-DSCALE=2` also have `-I inc` (a folder holding a header of another
/// name): their wrapper's headers are made without it, and each compilation checks them
/// against it (front/cuda/run.rs, `wrapper_header`).
const JOBS: [(&str, u32, bool); 6] = [("a.cu", 1, false), ("a.cu", 2, false), ("b.cu", 1, false), ("a.cu", 1, false), ("b.cu", 2, true), ("b.cu", 2, true)];

/// The mode bits of `path`.
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

struct Stress {
    dir: tempfile::TempDir,
    /// The PTX of each of [`JOBS`] without the cache.
    reference: Vec<String>,
    /// Numbers the output files.
    runs: AtomicUsize,
}

impl Stress {
    fn new() -> Stress {
        let dir = tempfile::tempdir().unwrap();
        // Readable by the user the read-only case may run as; `out` and `tmp` writable by it.
        chmod(dir.path(), 0o755);
        for (name, text) in [("a.cu", A), ("b.cu", B), ("k.h", HEADER)] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        std::fs::create_dir(dir.path().join("inc")).unwrap();
        std::fs::write(dir.path().join("inc/unrelated.h"), "#pragma once\n").unwrap();
        for folder in ["out", "tmp"] {
            std::fs::create_dir(dir.path().join(folder)).unwrap();
            chmod(&dir.path().join(folder), 0o1777);
        }
        let mut s = Stress { dir, reference: Vec::new(), runs: AtomicUsize::new(0) };
        s.reference = s.batch_outputs(&[("CDPC_CACHE_DIR", "")], None).into_iter().map(|r| r.unwrap_or_else(|e| panic!("without the cache: {e}"))).collect();
        s
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `cdpc FILE --emit ptx -DSCALE=N` (or `cdpc -dc FILE -DSCALE=N`) in the project's folder
    /// with its cache and work folders (the cache's variables unset but for `env`), as `uid`
    /// when given: the PTX (the host object's bytes in hexadecimal), or stderr.
    fn compile(&self, (file, scale, dc): (&str, u32, bool), env: &[(&str, &str)], uid: Option<u32>) -> Result<String, String> {
        let out = self.path(&format!("out/{}.{}", self.runs.fetch_add(1, Ordering::SeqCst), if dc { "o" } else { "ptx" }));
        let mut command = Command::new(env!("CARGO_BIN_EXE_cdpc"));
        let emit: &[&str] = if dc { &["-dc"] } else { &["--emit", "ptx"] };
        command
            .current_dir(self.dir.path())
            .arg(file)
            .args(emit)
            .args([&format!("-DSCALE={scale}"), "-o", out.to_str().unwrap()])
            .args(if scale == 2 { &["-I", "inc"][..] } else { &[][..] })
            .env("CDPC_CACHE_DIR", self.path("cache"))
            .env_remove("CDPC_PREAMBLE")
            .env_remove("CDPC_CACHE_MAX_SIZE")
            // The headers a compilation leaves for later made in its own process, after its
            // output (clang/cache.rs, `Fill`): each compilation leaves the cache as it says.
            .env("CDPC_CACHE_BACKGROUND", "0")
            .envs(env.iter().copied())
            .env("TMPDIR", self.path("tmp"));
        if let Some(uid) = uid {
            std::os::unix::process::CommandExt::uid(&mut command, uid);
            std::os::unix::process::CommandExt::gid(&mut command, uid);
        }
        // Started as another user, cdpc may not be reachable: a folder above the checkout that
        // other users cannot enter (a 0700 home folder, `mktemp -d`) makes `exec` fail.
        let run: Output = command.output().map_err(|e| format!("`{}` could not be started: {e}", env!("CARGO_BIN_EXE_cdpc")))?;
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        if !run.status.success() {
            return Err(stderr);
        }
        let bytes = std::fs::read(&out).unwrap();
        let ptx = if dc { bytes.iter().map(|b| format!("{b:02x}")).collect() } else { String::from_utf8(bytes).unwrap() };
        std::fs::remove_file(&out).unwrap();
        // At most one note, no warning or error: the cache never speaks up (the sources are clean).
        assert!(stderr.lines().filter(|l| !l.trim().is_empty()).count() <= 1, "{file}: {stderr}");
        Ok(ptx)
    }

    /// [`JOBS`] at once.
    fn batch_outputs(&self, env: &[(&str, &str)], uid: Option<u32>) -> Vec<Result<String, String>> {
        std::thread::scope(|s| {
            let runs: Vec<_> = JOBS.iter().map(|&job| s.spawn(move || self.compile(job, env, uid))).collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        })
    }

    /// [`JOBS`] at once: every one succeeds with the PTX of a compilation without the cache.
    fn batch(&self, what: &str, env: &[(&str, &str)]) {
        self.check(what, self.batch_outputs(env, None));
    }

    fn check(&self, what: &str, outputs: Vec<Result<String, String>>) {
        for (i, output) in outputs.into_iter().enumerate() {
            let ptx = output.unwrap_or_else(|stderr| panic!("{what}: {:?} failed:\n{stderr}", JOBS[i]));
            let reference = &self.reference[JOBS.iter().position(|j| *j == JOBS[i]).unwrap()];
            assert!(&ptx == reference, "{what}: {:?} gave other PTX than a compilation without the cache", JOBS[i]);
        }
    }

    /// The files of the cache's entries (`pch/` and `preamble/`), in a stable order.
    fn entry_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = ["pch", "preamble"]
            .iter()
            .flat_map(|kind| std::fs::read_dir(self.path("cache").join(kind)).into_iter().flatten())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| ["pch", "json", "cu", "seen"].contains(&e.to_str().unwrap())))
            .collect();
        files.sort();
        files
    }

    fn cache_size(&self) -> u64 {
        self.entry_files().iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
    }
}

/// Damages `path` in one of five ways, in place as a crashed writer or a full disk would (or
/// gone): truncated to nothing, to 4 KiB (Clang's "malformed block record in PCH file"), to
/// half, its first 4 KiB overwritten, removed.
fn damage(path: &Path, how: usize) {
    let Ok(mut file) = std::fs::OpenOptions::new().write(true).open(path) else { return };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = match how % 5 {
        0 => file.set_len(0),
        1 => file.set_len(len.min(4096)),
        2 => file.set_len(len / 2),
        3 => file.rewind().and_then(|()| file.write_all(&vec![0xa5; len.clamp(1, 4096) as usize])),
        _ => std::fs::remove_file(path),
    };
}

#[test]
fn concurrent_compilations_survive_a_damaged_and_trimmed_cache() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let s = Stress::new();
    // A work folder of a process killed by SIGKILL (no process has that number: Linux's
    // largest is 2^22): the first run removes it.
    let killed = s.path("tmp/cdpc-work-4194304-killed");
    std::fs::create_dir(&killed).unwrap();
    std::fs::write(killed.join("module.ptx"), "").unwrap();
    s.batch("cold", &[]);
    assert!(!killed.exists(), "the work folder of a process that no longer runs is removed");
    s.batch("warm (the preambles made)", &[]);
    s.batch("hot", &[]);
    assert!(s.entry_files().iter().any(|p| p.starts_with(s.path("cache/preamble")) && p.extension().unwrap() == "pch"), "the preambles are used");
    let largest = s.entry_files().iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).max().unwrap();
    // Between runs: every file of every entry damaged (each kind of damage on each kind of
    // file). Every other round without the preambles, so that the wrapper's headers are read
    // (a damaged preamble is made again, without them).
    let rounds = |round: usize| if round % 2 == 0 { &[("CDPC_PREAMBLE", "0")][..] } else { &[][..] };
    for round in 0..5 {
        for (i, file) in s.entry_files().iter().enumerate() {
            damage(file, i + round);
        }
        s.batch(&format!("damaged between runs, round {round}"), rounds(round));
    }
    // While they run.
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let damager = scope.spawn(|| {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let files = s.entry_files();
                if !files.is_empty() {
                    damage(&files[(n * 7) % files.len()], n);
                }
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(15));
            }
            n
        });
        // The damager stops also when a batch fails (a panic), so that the test reports it
        // instead of waiting for the damager for ever.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let stopping = Stop(&stop);
        for round in 0..2 {
            s.batch(&format!("damaged while running, round {round}"), rounds(round));
        }
        drop(stopping);
        assert!(damager.join().unwrap() > 10, "the cache was damaged while the compilations ran");
    });
    // A bound that holds one entry, so that every compilation that writes one trims the others.
    let bound = (largest * 3 / 2).to_string();
    s.batch("trimmed", &[("CDPC_CACHE_MAX_SIZE", &bound)]);
    s.batch("trimmed again", &[("CDPC_CACHE_MAX_SIZE", &bound)]);
    // Alone, with a key of its own (a header written, nothing else in use): down to the bound.
    let alone = s.compile(("a.cu", 3, false), &[("CDPC_CACHE_MAX_SIZE", &bound)], None).unwrap();
    assert_eq!(alone, s.compile(("a.cu", 3, false), &[("CDPC_CACHE_DIR", "")], None).unwrap());
    assert!(s.cache_size() <= largest * 3 / 2, "trimmed to the bound: {} > {bound}", s.cache_size());
    s.batch("hot again", &[]);
    let work: Vec<_> = std::fs::read_dir(s.path("tmp")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(work.is_empty(), "work files left: {work:?}");
}

#[test]
fn a_cache_folder_that_cannot_be_written_compiles_without_caching() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let s = Stress::new();
    s.batch("cold", &[]);
    s.batch("warm", &[]);
    // Root writes anywhere: the compilations run as `nobody` then, to whom the cache's folders
    // (and its private headers, mode 0600) are closed; another user gets the folders read-only.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut folders = vec![s.path("cache")];
    folders.extend(["include", "pch", "preamble"].iter().map(|k| s.path("cache").join(k)));
    let before: Vec<(PathBuf, u64)> = s.entry_files().into_iter().map(|p| (p.clone(), std::fs::metadata(&p).unwrap().len())).collect();
    if !root {
        for f in &folders {
            chmod(f, 0o555);
        }
    }
    let uid = root.then_some(65534);
    // `nobody` needs to enter every folder above cdpc and the NVIDIA tools, which a checkout
    // in a folder closed to other users does not give it.
    if root {
        if let Err(why) = s.compile(("a.cu", 1, false), &[("CDPC_CACHE_DIR", "")], uid) {
            return println!("skipped: cdpc does not compile as nobody here (is the checkout in a folder other users cannot enter?): {}", why.trim_end());
        }
    }
    s.check("read-only", s.batch_outputs(&[], uid));
    s.check("read-only again", s.batch_outputs(&[], uid));
    for f in &folders {
        chmod(f, 0o755);
    }
    let after: Vec<(PathBuf, u64)> = s.entry_files().into_iter().map(|p| (p.clone(), std::fs::metadata(&p).unwrap().len())).collect();
    assert_eq!(after, before, "the cache is as it was");
}
