//! The cached precompiled preamble of a CUDA C++ file (compiler/src/front/cuda/preamble.rs): made on
//! the second compilation, used on the next ones while the header and the options are as they
//! were, made again when they change or the cache file is damaged, safe under concurrent
//! compilations, with the header's warnings on every compilation and no temporary files left;
//! made after the compilation's output, by default in a process the compilation does not wait
//! for; and the bound on the cache folder (compiler/src/front/cuda/cache.rs: `CDPC_CACHE_MAX_SIZE`, the
//! least recently used entries trimmed after a compilation that wrote one).
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
        std::fs::write(dir.path().join("main.cu"), "// preamble\n#include \"h.h\"\n\n__global__ void store(int *out) { out[0] = 2 * value() * SCALE; }\n").unwrap();
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

    /// `cdpc main.cu --emit ptx -DSCALE=scale`: the PTX and stderr.
    fn compile(&self, scale: u32, env: &[(&str, &str)]) -> (String, String) {
        let (ptx, stderr) = self.try_compile(scale, env);
        (ptx.unwrap_or_else(|| panic!("{stderr}")), stderr)
    }

    /// [`Project::compile`], which may fail: the PTX if it did not, and stderr.
    fn try_compile(&self, scale: u32, env: &[(&str, &str)]) -> (Option<String>, String) {
        let out = self.path(&format!("out-{}.ptx", std::process::id() as u128 + SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos()));
        let run = self.cdpc(&["main.cu", "--emit", "ptx", &format!("-DSCALE={scale}"), "-o", out.to_str().unwrap()], env);
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        if !run.status.success() {
            assert!(!out.exists(), "no output from a failed compilation");
            return (None, stderr);
        }
        let ptx = std::fs::read_to_string(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        (Some(ptx), stderr)
    }

    /// `cdpc ARGS` in the project's folder, with its own cache folder and work folder, the
    /// cache's variables unset but for `env`.
    fn cdpc(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_cdpc"))
            .current_dir(self.dir.path())
            .args(args)
            .env("CDPC_CACHE_DIR", self.cache())
            .env_remove("CDPC_PREAMBLE")
            .env_remove("CDPC_CACHE_MAX_SIZE")
            // The headers a compilation leaves for later made in its own process, after its
            // output (clang/cache.rs, `Fill`): each compilation leaves the cache as it says.
            .env("CDPC_CACHE_BACKGROUND", "0")
            .envs(env.iter().copied())
            .env("TMPDIR", self.path("tmp"))
            .output()
            .unwrap()
    }

    /// The files of the preamble cache, by extension.
    fn entries(&self, extension: &str) -> Vec<PathBuf> {
        self.files("preamble", extension)
    }

    /// The files of the cache's folder `kind` (`pch`, `preamble`), by extension.
    fn files(&self, kind: &str, extension: &str) -> Vec<PathBuf> {
        let Ok(dir) = std::fs::read_dir(self.cache().join(kind)) else { return Vec::new() };
        let mut out: Vec<PathBuf> = dir.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == extension)).collect();
        out.sort();
        out
    }

    /// Every file of the cache is an entry's (`<16 hex digits>-<version>+<fingerprint>.<ext>`: no
    /// temporary files), the trimmers' lock or cdpc's one header, and the work folder is empty.
    fn assert_clean(&self) {
        let version = env!("CARGO_PKG_VERSION");
        for kind in ["pch", "preamble"] {
            let Ok(dir) = std::fs::read_dir(self.cache().join(kind)) else { continue };
            for e in dir {
                let name = e.unwrap().file_name().into_string().unwrap();
                let (stem, ext) = name.rsplit_once('.').unwrap_or((&name, ""));
                let (key, v) = stem.split_once('-').unwrap_or((stem, ""));
                // The version and the front end's fingerprint: `0.1.0+1a2b3c4d`.
                let this_build = v.strip_prefix(version).and_then(|f| f.strip_prefix('+')).is_some_and(|f| f.len() == 8 && f.chars().all(|c| c.is_ascii_hexdigit()));
                assert!(key.len() == 16 && key.chars().all(|c| c.is_ascii_hexdigit()) && this_build && ["cu", "pch", "json", "seen"].contains(&ext), "left in the cache: {kind}/{name}");
            }
        }
        for e in std::fs::read_dir(self.cache()).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(["pch", "preamble", "include", "trim.lock", "fill.lock", "make.lock"].contains(&name.as_str()), "left in the cache: {name}");
        }
        // cdpc's additions to Clang's CUDA headers, one a build (`clang::additions_header`).
        if let Ok(dir) = std::fs::read_dir(self.cache().join("include")) {
            let names: Vec<String> = dir.map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
            assert_eq!(names, [cdpc::front::cuda::additions_file_name()], "left in the cache's include/");
            assert!(names[0].starts_with(&format!("cdpc-{version}-")), "{names:?}");
        }
        assert_eq!(std::fs::read_dir(self.path("tmp")).unwrap().count(), 0, "work files left");
    }

    /// The bytes of the cache's files.
    fn cache_size(&self) -> u64 {
        ["pch", "preamble"].iter().flat_map(|kind| std::fs::read_dir(self.cache().join(kind)).into_iter().flatten()).map(|e| e.unwrap().metadata().unwrap().len()).sum()
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

/// Waits for the cache's fillers (compiler/src/front/cuda/cache.rs, `FILL_LOCK`).
fn wait_for_fillers(p: &Project) {
    cdpc::front::cuda::cache::wait_for_fillers(&p.cache());
}

/// Holds the cache's `make.lock` (a `flock` process), then compiles once with the filler in
/// the background: the filler waits at the lock while the test looks at it, however long the
/// compilation took on a loaded machine. Returns the holder, which [`release`] ends.
fn compile_with_the_filler_held(p: &Project) -> std::process::Child {
    std::fs::create_dir_all(p.cache()).unwrap();
    // `cat` reads the pipe until the test closes it (or drops the holder, as a failed test
    // does): then it, `flock` and the lock end, and no process is left behind.
    let lock = p.cache().join("make.lock");
    let holder = std::process::Command::new("flock").arg("-x").arg(lock).arg("cat").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    p.compile(1, &[("CDPC_CACHE_BACKGROUND", "1")]);
    holder
}

/// Frees the lock [`compile_with_the_filler_held`] holds: its `cat` reads the end of its input.
fn release(mut holder: std::process::Child) {
    drop(holder.stdin.take());
    holder.wait().unwrap();
}

/// The running fillers of `p`'s cache: processes whose environment names its folder and
/// `CDPC_CACHE_FILL`, but for those whose parent is one (a process a filler started, such as
/// the Python that finds the toolkit's wheels, inherits its environment).
fn fillers(p: &Project) -> Vec<u32> {
    let cache = format!("CDPC_CACHE_DIR={}", p.cache().display());
    let pids = std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok());
    let matching: Vec<u32> = pids
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let vars: Vec<&[u8]> = env.split(|&b| b == 0).collect();
            vars.contains(&cache.as_bytes()) && vars.iter().any(|v| v.starts_with(b"CDPC_CACHE_FILL="))
        })
        .collect();
    let parent = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // stat(5): the parent is field 4, counted after the name's last `)`.
        stat.rfind(')').and_then(|at| stat[at + 1..].split_whitespace().nth(1)?.parse::<u32>().ok())
    };
    matching.iter().copied().filter(|&pid| !parent(pid).is_some_and(|p| matching.contains(&p))).collect()
}

/// How long a test waits for a filler to appear or to end. A filler runs at the idle
/// scheduling policy: while both cores of a 2-core machine run other tests' compilations (the
/// suite's tests run in parallel, some of them one compilation a core for minutes), it gets no
/// CPU at all, even to start or to see its folder gone. The bound is for a filler that never
/// does, not a speed the test asks for.
const IDLE_BOUND: Duration = Duration::from_secs(600);

/// `p`'s fillers, once there is one (the compilation has started it, but at the idle policy it
/// may not have run yet), waiting at most [`IDLE_BOUND`]; none if none came.
fn started_fillers(p: &Project) -> Vec<u32> {
    let start = std::time::Instant::now();
    loop {
        let found = fillers(p);
        if !found.is_empty() || start.elapsed() > IDLE_BOUND {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits at most `limit` for `p`'s fillers to end: whether they did.
fn fillers_end_within(p: &Project, limit: Duration) -> bool {
    let start = std::time::Instant::now();
    while !fillers(p).is_empty() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A cache folder removed while its filler waits to make a header (held at `make.lock`): the
/// removal succeeds, the filler stops without waiting for the lock, and nothing comes back
/// (compiler/src/front/cuda/filler.rs): no cache folder once the lock is free, no work files.
#[test]
fn a_cache_folder_removed_under_a_waiting_filler_stops_it_and_stays_removed() {
    if !crate::cuda_cxx::tools_ready() || !crate::build_common::have("flock") || !std::path::Path::new("/proc/self/environ").exists() {
        return println!("skipped: no tools, no flock or no /proc");
    }
    let p = Project::new(1000);
    let holder = compile_with_the_filler_held(&p);
    let waiting = started_fillers(&p);
    assert_eq!(waiting.len(), 1, "a filler waits for make.lock");
    // `cdpc --cache-status` lists it: its process, what it makes and its compilation.
    let status = p.cdpc(&["--cache-status"], &[]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(text.starts_with(&format!("cache: {} (from CDPC_CACHE_DIR)\n", p.cache().display())), "{text}");
    assert!(text.contains("fillers running: 1\n"), "{text}");
    assert!(text.contains(&format!("  pid {}, ", waiting[0])) && text.contains(", making the CUDA wrapper's header: ") && text.contains(" main.cu --emit ptx -DSCALE=1 -o "), "{text}");
    std::fs::remove_dir_all(p.cache()).expect("the cache folder is removed while its filler runs");
    // The filler runs at the idle priority: on a loaded machine it may wait for a core.
    assert!(fillers_end_within(&p, IDLE_BOUND), "the filler stopped");
    release(holder);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!p.cache().exists(), "the cache folder came back");
    assert_eq!(std::fs::read_dir(p.path("tmp")).unwrap().count(), 0, "work files left");
}

/// A cache folder removed right after a compilation, while its filler starts or makes the
/// wrapper's header (as a test harness removes its temporary folder): the removal succeeds
/// every time and nothing comes back.
#[test]
fn a_cache_folder_removed_right_after_a_compilation_stays_removed() {
    if !crate::cuda_cxx::tools_ready() || !std::path::Path::new("/proc/self/environ").exists() {
        return println!("skipped: no tools or no /proc");
    }
    let p = Project::new(1000);
    for (round, pause) in [0u64, 150, 600].into_iter().enumerate() {
        p.compile(1, &[("CDPC_CACHE_BACKGROUND", "1")]);
        std::thread::sleep(Duration::from_millis(pause));
        std::fs::remove_dir_all(p.cache()).unwrap_or_else(|e| panic!("round {round}: the cache folder could not be removed: {e}"));
        assert!(fillers_end_within(&p, IDLE_BOUND), "round {round}: the filler stopped");
        assert!(!p.cache().exists(), "round {round}: the cache folder came back");
        assert_eq!(std::fs::read_dir(p.path("tmp")).unwrap().count(), 0, "round {round}: work files left");
    }
}

/// A filler runs after its compilation exited, when a build may be removing the output's
/// folder: it writes nothing there, not even while it runs (a harness's temporary folder could
/// not be removed, "Directory not empty", while a filler's unused temporary output was in it).
/// The filler is held at the cache's `make.lock` while the folder is looked at.
#[test]
fn a_filler_puts_nothing_beside_the_output_while_it_runs() {
    if !crate::cuda_cxx::tools_ready() || !crate::build_common::have("flock") {
        return println!("skipped: no tools or no flock");
    }
    let p = Project::new(1000);
    let holder = compile_with_the_filler_held(&p);
    let beside = || -> Vec<String> { std::fs::read_dir(p.dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".tmp")).collect() };
    for _ in 0..10 {
        assert_eq!(beside(), Vec::<String>::new(), "a filler's file beside the output");
        std::thread::sleep(Duration::from_millis(100));
    }
    release(holder);
    wait_for_fillers(&p);
    assert_eq!(p.files("pch", "pch").len(), 1, "the filler made the wrapper's header once the lock was free");
    assert_eq!(beside(), Vec::<String>::new());
    p.assert_clean();
}

/// A filler yields the CPU to the build: the idle scheduling policy, nice 19, and where Linux
/// schedules the processes of one `setsid` group together (autogroup), nice 19 for that group
/// too, whose nice otherwise decides its share: without it a filler takes half of a 2-core
/// machine from `make -j2` (cold build 0.66x nvcc's, `python3 bench/dc/make_j.py --jobs 2`,
/// 2026-11-27). The filler is held at the cache's
/// `make.lock` while it is looked at in /proc.
#[test]
fn a_filler_runs_at_the_lowest_priority_in_its_own_scheduling_group() {
    if !crate::cuda_cxx::tools_ready() || !crate::build_common::have("flock") || !std::path::Path::new("/proc/self/stat").exists() {
        return println!("skipped: no tools, no flock or no /proc");
    }
    let p = Project::new(1000);
    let holder = compile_with_the_filler_held(&p);
    let pid = *started_fillers(&p).first().expect("a filler waiting for make.lock");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // stat(5): field 19 is the nice value, field 41 the policy (fields from 3 on after the name)
    assert_eq!(fields[19 - 3], "19", "nice: {stat}");
    assert_eq!(fields[41 - 3], libc::SCHED_IDLE.to_string(), "policy: {stat}");
    let autogroups = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled").is_ok_and(|t| t.trim() == "1");
    match std::fs::read_to_string(format!("/proc/{pid}/autogroup")) {
        Ok(group) if autogroups => assert!(group.trim_end().ends_with("nice 19"), "{group}"),
        _ => println!("no autogroup scheduling here: the group's nice is not checked"),
    }
    release(holder);
    wait_for_fillers(&p);
    assert_eq!(p.files("pch", "pch").len(), 1, "the filler made the wrapper's header once the lock was free");
    p.assert_clean();
}

#[test]
fn a_filler_makes_the_headers_after_the_compilation_which_does_not_wait_for_it() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    let background = [("CDPC_CACHE_BACKGROUND", "1")];
    let (first, stderr) = p.compile(1, &background);
    assert!(stores(&first, 2000) && warned_once(&stderr), "{stderr}\n{first}");
    wait_for_fillers(&p);
    assert_eq!(p.files("pch", "pch").len(), 1, "the first compilation's filler makes the wrapper's header");
    assert!(p.entries("pch").is_empty() && p.entries("seen").len() == 1, "and only marks the preamble");
    let (second, stderr) = p.compile(1, &background);
    assert_eq!(second, first);
    assert!(warned_once(&stderr), "{stderr}");
    wait_for_fillers(&p);
    assert_eq!(p.entries("pch").len(), 1, "the second compilation's filler makes the preamble");
    let (third, stderr) = p.compile(1, &background);
    assert_eq!(third, first);
    assert!(warned_once(&stderr), "the header's warning is replayed: {stderr}");
    // Options not seen before, compiled again and again while the fillers of the earlier
    // compilations run: the same PTX every time, whichever headers each found.
    let runs: Vec<String> = (0..4).map(|_| p.compile(2, &background).0).collect();
    assert!(stores(&runs[0], 4000) && runs.iter().all(|r| *r == runs[0]));
    wait_for_fillers(&p);
    assert_eq!(p.entries("pch").len(), 2, "the other options' preamble, made once");
    assert_eq!(p.compile(2, &background).0, runs[0]);
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
    // Damaged in place, its size and modification time kept: a miss all the same (the manifest
    // names the file written, whose change time moved, and a hash of its bytes), made again at
    // once, never handed to Clang.
    let (len, time) = std::fs::metadata(&pch).map(|m| (m.len(), m.modified().unwrap())).unwrap();
    let garbage = b"CPCH not a precompiled header at all".repeat(1 + len as usize / 36);
    let file = std::fs::OpenOptions::new().write(true).open(&pch).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &garbage[..len as usize], 0).unwrap();
    file.set_modified(time).unwrap();
    drop(file);
    let (ptx, stderr) = p.compile(1, &[]);
    assert_eq!(ptx, good);
    assert!(!stderr.contains("error") && warned_once(&stderr), "{stderr}");
    let made = std::fs::read(&pch).unwrap();
    assert!(made.len() > 1000 && !made.starts_with(b"CPCH not"), "made again");
    // Another file in its place (of another size): a miss, made again at once.
    std::fs::write(&pch, b"CPCH not a precompiled header at all").unwrap();
    let (ptx, stderr) = p.compile(1, &[]);
    assert_eq!(ptx, good);
    assert!(!stderr.contains("error") && warned_once(&stderr), "{stderr}");
    assert!(std::fs::read(&pch).unwrap().len() > 1000, "made again");
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

#[test]
fn templates_the_preamble_instantiates_give_the_ptx_of_a_compilation_without_it() {
    // Precompiled headers are made with `-fpch-instantiate-templates`: the header's pending
    // instantiations (`twice<int>` from `value()`) happen when the header is made, and the
    // file's own (`twice<long>`, the header's class template at a type the file declares) at
    // its end, as without a header.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(0);
    std::fs::write(
        p.path("h.h"),
        "#pragma once\n#warning \"h.h is read\"\ntemplate <class T> __device__ T twice(T x) { return x + x; }\n\
         template <class T> struct Box { T v; __device__ T get() const { return twice(v); } };\n\
         __device__ inline int value() { return Box<int>{1234}.get(); }\n",
    )
    .unwrap();
    std::fs::write(
        p.path("main.cu"),
        "// preamble\n#include \"h.h\"\n\nstruct Mine { int a; };\n\
         __device__ Mine twice(Mine m) { return Mine{m.a * 3}; }\n\
         __global__ void store(long *out) { out[0] = value() * SCALE; out[1] = twice(4321L); out[2] = Box<Mine>{Mine{555}}.get().a; }\n",
    )
    .unwrap();
    let (without, stderr) = p.compile(1, &[("CDPC_PREAMBLE", "0")]);
    assert!(warned_once(&stderr), "{stderr}");
    for value in [2468, 8642, 1665] {
        assert!(stores(&without, value), "{value} in\n{without}");
    }
    for _ in 0..3 {
        let (ptx, stderr) = p.compile(1, &[]);
        assert_eq!(ptx, without, "{stderr}");
    }
    assert_eq!(p.entries("pch").len(), 1, "the preamble was made and used");
    p.assert_clean();
}

#[test]
fn a_host_function_called_from_device_code_in_a_precompiled_header_is_clangs_error_at_every_compilation() {
    // Clang defers "reference to __host__ function" in a `__host__ __device__` function until a
    // kernel reaches it, and does not keep such deferred diagnostics in a precompiled header:
    // the device IR then calls the host function unresolved. cdpc compiles such a file again
    // without precompiled headers (compiler/src/driver/cuda.rs, `precompiled_header_may_hide_errors`), so that the error is Clang's at
    // the header's line on the first compilation (the wrapper's header), the second (the
    // preamble made and used) and the third (the preamble from the cache), in text and in JSON,
    // as without the preamble. Precompiled headers also drop the deferred-diagnostic roots that
    // cannot matter (compiler/src/front/cuda/shim.cpp); the header in `sys/` is a system header to
    // Clang (`#pragma GCC system_header`), as CUDA's are.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(0);
    std::fs::create_dir(p.path("sys")).unwrap();
    std::fs::write(p.path("sys/lib.h"), "#pragma once\n#pragma GCC system_header\nint host_only();\ninline __host__ __device__ int hd() { return host_only(); }\n").unwrap();
    std::fs::write(p.path("mine.h"), "#pragma once\nint host_too();\ninline __host__ __device__ int dev() { return host_too(); }\n").unwrap();
    std::fs::write(p.path("main.cu"), "#include <lib.h>\n#include \"mine.h\"\n\n__global__ void k(int *out) { out[0] = hd() + dev(); }\n").unwrap();
    let run = |format: &str, env: &[(&str, &str)]| {
        let out = p.cdpc(&["main.cu", "-I", "sys", "-o", "k.cubin", "--error-format", format], env);
        assert!(!out.status.success() && !p.path("k.cubin").exists());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let without = run("human", &[("CDPC_PREAMBLE", "0")]);
    let without_json = run("json", &[("CDPC_PREAMBLE", "0")]);
    for (callee, file, line, column) in [("host_only", "sys/lib.h", 4, 46), ("host_too", "./mine.h", 3, 47)] {
        let message = format!("error[E1000]: reference to __host__ function '{callee}' in __host__ __device__ function");
        let place = format!("{file}:{line}:{column}");
        assert!(without.contains(&message) && without.contains(&place), "{message} at {place}:\n{without}");
        let json = format!("\"code\":\"E1000\",\"severity\":\"error\",\"message\":\"reference to __host__ function '{callee}' in __host__ __device__ function\"");
        let label = format!("\"file\":\"{file}\",");
        let at = format!("\"line_start\":{line},\"column_start\":{column},");
        let line = without_json.lines().find(|l| l.contains(&json)).unwrap_or_else(|| panic!("{json}:\n{without_json}"));
        assert!(line.contains(&label) && line.contains(&at), "{label} {at}:\n{line}");
    }
    assert!(!without.contains("nvlink"), "{without}");
    for compilation in ["first", "second", "third"] {
        assert_eq!(run("human", &[]), without, "the {compilation} compilation");
        if compilation == "second" {
            assert_eq!(p.entries("pch").len(), 1, "the second compilation made the preamble");
        }
    }
    assert_eq!(run("json", &[]), without_json, "JSON from the preamble in the cache");
    assert_eq!(p.entries("pch").len(), 1, "the preamble was made and used");
    p.assert_clean();
}

#[test]
fn a_device_function_of_another_file_called_with_a_precompiled_preamble_is_compiled_once() {
    // With `-dc`, the main file's call of another file's `__device__` function is unresolved
    // in its device IR, as a header's call of a host function is with a precompiled header; the
    // main file's code is never in one, so it is not compiled again. `-v` shows each Clang run.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1234);
    std::fs::write(p.path("main.cu"), "// preamble\n#include \"h.h\"\n\nextern __device__ int twice(int x);\n__global__ void store(int *out) { out[0] = twice(value()) * SCALE; }\n").unwrap();
    std::fs::write(p.path("other.cu"), "__device__ int twice(int x) { return 2 * x; }\n").unwrap();
    for compilation in ["first", "second", "third"] {
        let out = p.cdpc(&["-v", "-dc", "main.cu", "other.cu", "-DSCALE=1"], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "the {compilation} compilation:\n{stderr}");
        let device: Vec<&str> =
            stderr.lines().filter(|l| l.starts_with("clang++ ") && l.contains("--cuda-device-only") && !l.contains("-emit-pch") && l.contains("main.cu (Clang inside cdpc")).collect();
        assert_eq!(device.len(), 1, "the {compilation} compilation compiles main.cu's device side once:\n{stderr}");
        // The first compilation makes no header before it compiles (clang/cache.rs, `Fill`):
        // the wrapper's is made after it, the preamble after the second.
        assert_eq!(device[0].contains("-include-pch"), compilation != "first", "a precompiled header from the second compilation on:\n{stderr}");
        assert_eq!(device[0].contains("-preamble-bytes="), compilation == "third", "the preamble from the third compilation on:\n{stderr}");
    }
    let out = p.cdpc(&["-dlink", "main.o", "other.o", "-o", "app.cubin"], &[]);
    assert!(out.status.success() && p.path("app.cubin").is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    p.assert_clean();
}

/// The warnings of `each_warning_of_a_file_is_reported_once_with_and_without_the_preamble`'s project: Clang's message,
/// then the primary label's place and the secondary label's (file, line, column), as a
/// compilation of `main.cu` from its folder names them (`./h.h`: the folder of `main.cu` is
/// `.` to Clang). Two are the preamble's headers' (`g.h` included by `h.h`), one the preamble's
/// own (a macro redefined in `main.cu` before its first line of code), one the main file's
/// after it, and one in the main file with a note in the header.
const WARNINGS: [(&str, (&str, u32, u32), Option<(&str, u32, u32)>); 5] = [
    ("\"g.h is read\" [-W#warnings]", ("./g.h", 2, 2), None),
    ("\"h.h is read\" [-W#warnings]", ("./h.h", 3, 2), None),
    ("'TWICE' macro redefined [-Wmacro-redefined]", ("main.cu", 4, 9), Some(("main.cu", 3, 9))),
    ("\"main.cu is read\" [-W#warnings]", ("main.cu", 7, 2), None),
    ("'old' is deprecated [-Wdeprecated-declarations]", ("main.cu", 8, 61), Some(("./h.h", 5, 36))),
];

/// Writes the project of [`WARNINGS`] into `dir`: `main.cu`, its headers and `other.cu`,
/// which defines the function `main.cu` calls.
fn write_warning_project(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("g.h"), "#pragma once\n#warning \"g.h is read\"\n").unwrap();
    std::fs::write(
        dir.join("h.h"),
        "#pragma once\n#include \"g.h\"\n#warning \"h.h is read\"\n__device__ inline int value() { return 7; }\n__host__ __device__ __attribute__((deprecated)) inline int old() { return 1; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.cu"),
        "// preamble\n#include \"h.h\"\n#define TWICE 1\n#define TWICE 2\n\nextern __device__ int twice(int x);\n#warning \"main.cu is read\"\n__global__ void store(int *out) { out[0] = twice(value()) + old(); }\n",
    )
    .unwrap();
    std::fs::write(dir.join("other.cu"), "__device__ int twice(int x) { return 2 * x; }\n").unwrap();
}

/// Asserts that `stderr` (`--error-format human` or `json`) holds exactly [`WARNINGS`], each
/// once, with `folder` (`./` or `sub/`) in place of the headers' `./` and `main` for `main.cu`.
fn assert_each_warning_once(stderr: &str, format: &str, folder: &str, main: &str, what: &str) {
    let at = |(file, line, column): (&str, u32, u32)| (if file == "main.cu" { main.to_string() } else { file.replacen("./", folder, 1) }, line, column);
    if format == "json" {
        let found: Vec<serde_json::Value> = stderr.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
        let place = |label: &serde_json::Value| (label["file"].as_str().unwrap().to_string(), label["line_start"].as_u64().unwrap() as u32, label["column_start"].as_u64().unwrap() as u32);
        assert_eq!(found.len(), WARNINGS.len(), "{what}:\n{stderr}");
        for (d, (message, primary, secondary)) in found.iter().zip(WARNINGS) {
            assert_eq!((d["code"].as_str(), d["severity"].as_str(), d["message"].as_str()), (Some("W1001"), Some("warning"), Some(message)), "{what}:\n{stderr}");
            let labels = d["labels"].as_array().unwrap();
            assert_eq!(place(&labels[0]), at(primary), "{what}: {message}");
            assert_eq!(labels.get(1).map(place), secondary.map(at), "{what}: {message}");
        }
    } else {
        assert_eq!(stderr.matches("warning[W1001]: ").count(), WARNINGS.len(), "{what}:\n{stderr}");
        for (message, primary, _) in WARNINGS {
            let (file, line, column) = at(primary);
            let text = format!("warning[W1001]: {message}\n  ┌─ {file}:{line}:{column}\n");
            assert_eq!(stderr.matches(&text).count(), 1, "{what}: {text}\n{stderr}");
        }
        let (file, line, column) = at(WARNINGS[4].2.unwrap());
        assert_eq!(stderr.matches(&format!("  ┌─ {file}:{line}:{column}\n")).count(), 1, "{what}: the note's place\n{stderr}");
    }
}

#[test]
fn each_warning_of_a_file_is_reported_once_with_and_without_the_preamble() {
    // The preamble's warnings are recorded when it is made and replayed on every use; its copy
    // lives in the cache and finds the file's headers through `-iquote` with the file's folder
    // spelled as Clang spells it for the file (`.`), so that they are named as without the
    // preamble (`./h.h`, not the absolute path). Then `-dc`'s host side, which compiles the
    // file with a preamble of its own, gives the same warnings, which it drops: each warning once, as
    // without the preamble, on the first compilation (the wrapper's header), the second (the
    // preamble made and used) and the third (from the cache), `-dc` and whole-program, text and
    // JSON. Each mode and format has a cache of its own, so each goes through all three.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(0);
    write_warning_project(p.dir.path());
    for (mode, args) in [("-dc", &["-dc", "main.cu", "other.cu"][..]), ("whole-program", &["main.cu", "other.cu", "-o", "app.cubin"][..])] {
        for format in ["human", "json"] {
            let _ = std::fs::remove_dir_all(p.cache());
            let run = |env: &[(&str, &str)]| {
                let out = p.cdpc(&[args, &["--error-format", format]].concat(), env);
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(out.status.success(), "{mode} {format}:\n{stderr}");
                stderr
            };
            let without = run(&[("CDPC_PREAMBLE", "0")]);
            assert_each_warning_once(&without, format, "./", "main.cu", &format!("{mode} {format} without the preamble"));
            // `-dc` makes one for each side (the host side's has its own options).
            let sides = if mode == "-dc" { 2 } else { 1 };
            for compilation in ["first", "second", "third"] {
                assert_eq!(run(&[]), without, "{mode} {format}: the {compilation} compilation says what one without the preamble says");
                assert_eq!(p.entries("pch").len(), sides * usize::from(compilation != "first"), "{mode} {format}: the preamble is made on the second compilation");
            }
        }
    }
    // A file named from another folder: its headers are named from there (`sub/h.h`).
    write_warning_project(&p.path("sub"));
    let _ = std::fs::remove_dir_all(p.cache());
    for compilation in ["first", "second", "third"] {
        let out = p.cdpc(&["-dc", "sub/main.cu", "sub/other.cu"], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        assert_each_warning_once(&stderr, "human", "sub/", "sub/main.cu", &format!("sub/main.cu, the {compilation} compilation"));
    }
    assert_eq!(p.entries("pch").len(), 2, "each side's");
    p.assert_clean();
}

#[test]
fn unused_functions_are_reported_with_the_precompiled_headers_as_without() {
    // A header's `static` functions not used yet are recorded in the precompiled header, and
    // the compilation that reads it warns about those still unused at its end. cdpc's headers
    // keep only the user's own (those of system headers are never reported): the user's
    // header's unused function is reported on the first compilation (the wrapper's header),
    // the second (the preamble made and used) and the third, as without the preamble; a
    // system header's never. Each side's headers are made once and kept: when the system
    // headers' unused declarations were first left out, a declaration read while the host
    // side walked the file's (`HostWarningsInDeviceCode`, shim.cpp) crashed it, and every
    // other compilation gave up the wrapper's header and made it again.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    // The warnings name the headers as without the preamble, though the declarations are read
    // from it, whose files it records by absolute path (`/tmp/.../u.h` where the compilation
    // without it says `./u.h`): a header beside the file and one found through `-I`.
    let p = Project::new(0);
    std::fs::create_dir(p.path("sys")).unwrap();
    std::fs::create_dir(p.path("inc")).unwrap();
    std::fs::write(p.path("u.h"), "#pragma once\nstatic int unused_helper(int x) { return x + 1; }\n").unwrap();
    std::fs::write(p.path("inc/i.h"), "#pragma once\nstatic int unused_included(int x) { return x + 3; }\n").unwrap();
    std::fs::create_dir(p.path("abs")).unwrap();
    std::fs::write(p.path("abs/a.h"), "#pragma once\nstatic int unused_absolute(int x) { return x + 4; }\n").unwrap();
    std::fs::write(p.path("sys/s.h"), "#pragma once\nstatic int unused_system(int x) { return x + 2; }\n").unwrap();
    std::fs::write(p.path("main.cu"), "#include \"u.h\"\n#include \"i.h\"\n#include \"a.h\"\n#include <s.h>\n__global__ void k(int *p) { p[0] = 1; }\n").unwrap();
    // An absolute `-I` folder under the working folder: its header keeps its absolute name.
    let absolute = format!("-I{}", p.path("abs").display());
    let args = ["-dc", "-Xcompiler", "-Wall", "-isystem", "sys", "-Iinc", &absolute, "main.cu"];
    let warned = |env: &[(&str, &str)], what: &str| {
        let out = p.cdpc(&args, env);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{what}:\n{stderr}");
        assert_eq!(stderr.matches("warning[W1001]: unused function 'unused_helper' [-Wunused-function]\n  ┌─ ./u.h:2:12").count(), 1, "{what}:\n{stderr}");
        assert_eq!(stderr.matches("warning[W1001]: unused function 'unused_included' [-Wunused-function]\n  ┌─ inc/i.h:2:12").count(), 1, "{what}:\n{stderr}");
        let at = format!("warning[W1001]: unused function 'unused_absolute' [-Wunused-function]\n  ┌─ {}:2:12", p.path("abs/a.h").display());
        assert_eq!(stderr.matches(&at).count(), 1, "{what}:\n{stderr}");
        assert!(!stderr.contains("unused_system"), "{what}:\n{stderr}");
        stderr
    };
    let reference = warned(&[("CDPC_PREAMBLE", "0")], "without the preamble");
    for compilation in ["first", "second", "third"] {
        assert_eq!(warned(&[], compilation), reference, "{compilation}");
        assert_eq!(p.entries("pch").len(), 2 * usize::from(compilation != "first"), "{compilation}: each side's preamble made on the second compilation and kept");
        assert_eq!(p.files("pch", "pch").len(), 2, "{compilation}: each side's wrapper header made on the first compilation and kept");
    }
    p.assert_clean();
}

#[test]
fn warnings_are_the_same_whatever_the_cache_holds() {
    // What a compilation says depends on its options, never on the cache. Two ways it did not:
    // the host side drops its warnings in device code (nvcc's host compiler never sees a
    // `__device__` function's body), but the messages a preamble replays were kept whole, so
    // a user's header's `__device__` function's unused variable under `-Xcompiler -Wall` was
    // reported from the file's third compilation on (its preamble made and read); and a
    // precompiled header keeps none of the warnings its headers gave while it was made, so
    // `-Xcompiler -Wsystem-headers` gave 119 warnings with an empty cache, none with the
    // wrapper's header and 133 with the preamble (the replay of a making that had dropped
    // nothing). Each compilation here says what the one without a cache says.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(0);
    std::fs::create_dir(p.path("sys")).unwrap();
    std::fs::write(
        p.path("u.h"),
        "#pragma once\n__device__ inline int dev_helper(int x) { int unused_dev = 3; return x * 2; }\ninline int host_helper(int x) { int unused_host = 4; return x + 1; }\n",
    )
    .unwrap();
    std::fs::write(p.path("sys/s.h"), "#pragma once\ninline int system_helper(int x) { int unused_system = 5; return x + 2; }\n").unwrap();
    std::fs::write(p.path("main.cu"), "#include \"u.h\"\n#include <s.h>\n__global__ void k(int *p) { p[0] = dev_helper(1); }\nint h() { return host_helper(1) + system_helper(2); }\n").unwrap();
    for options in [&["-Xcompiler", "-Wall"][..], &["-Xcompiler", "-Wall,-Wsystem-headers"][..]] {
        let args = [&["-dc", "-isystem", "sys", "main.cu"][..], options].concat();
        let said = |env: &[(&str, &str)], what: &str| {
            let out = p.cdpc(&args, env);
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{options:?}, {what}:\n{stderr}");
            stderr
        };
        let reference = said(&[("CDPC_CACHE_DIR", "")], "without a cache");
        assert_eq!(reference.matches("unused variable 'unused_host'").count(), 1, "{options:?}:\n{reference}");
        assert!(!reference.contains("unused_dev"), "{options:?}: device code's warning on the host side:\n{reference}");
        let system = options[1].contains("system-headers");
        assert_eq!(reference.matches("unused variable 'unused_system'").count(), usize::from(system), "{options:?}:\n{reference}");
        for compilation in ["first", "second", "third"] {
            assert_eq!(said(&[], compilation), reference, "{options:?}, {compilation} compilation");
        }
        assert_eq!(said(&[("CDPC_PREAMBLE", "0")], "the wrapper's header alone"), reference, "{options:?}");
    }
    p.assert_clean();
}

#[test]
fn warning_policies_apply_to_the_preambles_replayed_warnings() {
    // `-Werror`, `--deny W1001` and `--allow W1001` are cdpc's, not Clang's: a preamble made
    // without them is used with them, and its replayed warnings are denied or silenced like
    // the compilation's own, each once.
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(0);
    write_warning_project(p.dir.path());
    for _ in 0..2 {
        assert!(p.cdpc(&["-dc", "main.cu", "other.cu"], &[]).status.success());
    }
    assert_eq!(p.entries("pch").len(), 2, "each side's preamble is in the cache");
    std::fs::remove_file(p.path("main.o")).unwrap();
    for policy in [&["-Werror"][..], &["--deny", "W1001"][..]] {
        let denied = |env: &[(&str, &str)]| {
            let out = p.cdpc(&[&["-dc", "main.cu", "other.cu"][..], policy].concat(), env);
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(!out.status.success() && !p.path("main.o").exists(), "{policy:?}:\n{stderr}");
            stderr
        };
        let stderr = denied(&[]);
        assert_eq!(stderr, denied(&[("CDPC_PREAMBLE", "0")]), "{policy:?}: the replayed warnings' errors are those of a compilation without the preamble");
        assert_eq!(stderr.matches("error[W1001]: ").count(), WARNINGS.len(), "{policy:?}:\n{stderr}");
        for (message, _, _) in WARNINGS {
            assert_eq!(stderr.matches(&format!("error[W1001]: {message}\n")).count(), 1, "{policy:?}: {message}\n{stderr}");
        }
        assert!(!stderr.contains("warning["), "{policy:?}:\n{stderr}");
    }
    let out = p.cdpc(&["-dc", "main.cu", "other.cu", "--allow", "W1001"], &[]);
    assert!(out.status.success() && p.path("main.o").is_file());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "every warning silenced, the replayed ones too");
    assert_eq!(p.entries("pch").len(), 2, "one preamble a side for every policy");
    p.assert_clean();
}

/// The files that `after` has and `before` had not.
fn new_files(before: &[PathBuf], after: &[PathBuf]) -> Vec<PathBuf> {
    after.iter().filter(|p| !before.contains(p)).cloned().collect()
}

#[test]
fn the_cache_stays_within_its_bound_and_the_least_recently_used_entry_goes_first() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    // The first compilation makes the wrapper's header (W1) and marks the preamble: its size
    // sets a bound of three and a half entries (a preamble's header, P, is the wrapper's and a
    // little more).
    p.compile(1, &[]);
    let w1 = p.files("pch", "pch");
    assert_eq!(w1.len(), 1);
    let entry = std::fs::metadata(&w1[0]).unwrap().len();
    let bound = (entry * 7 / 2).to_string();
    let env = [("CDPC_CACHE_MAX_SIZE", bound.as_str())];
    let step = |scale: u32| {
        let (pch, pre) = (p.files("pch", "pch"), p.entries("pch"));
        let (ptx, _) = p.compile(scale, &env);
        assert!(stores(&ptx, 2000 * scale), "{ptx}");
        assert!(p.cache_size() <= entry * 7 / 2, "{} bytes in the cache, over the bound of {bound}", p.cache_size());
        (new_files(&pch, &p.files("pch", "pch")), new_files(&pre, &p.entries("pch")))
    };
    let (_, p1) = step(1);
    assert_eq!(p1.len(), 1, "the second compilation makes P1");
    let (w2, _) = step(2);
    let (_, p2) = step(2);
    // Four entries do not fit: the least recently used, W1, went.
    assert!(!w1[0].exists() && p1[0].exists() && w2[0].exists() && p2[0].exists());
    // A hit on P1 (no entry written: nothing is trimmed) makes it the most recently used.
    let mark = p1[0].with_extension("seen");
    std::fs::File::options().write(true).open(&mark).unwrap().set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000)).unwrap();
    let (w, pre) = step(1);
    assert!(w.is_empty() && pre.is_empty());
    assert!(std::fs::metadata(&mark).unwrap().modified().unwrap() > SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000), "a hit marks its entry used");
    // W3 does not fit beside the three: W2 goes, used before P2 and P1 (P1 was made first, but
    // used last).
    let (w3, _) = step(3);
    assert_eq!(w3.len(), 1);
    assert!(!w2[0].exists() && p2[0].exists() && p1[0].exists() && w3[0].exists());
    // The entry goes whole: header, source and mark.
    assert!(!w2[0].with_extension("cu").exists() && !w2[0].with_extension("seen").exists());
    p.assert_clean();
}

#[test]
fn a_malformed_bound_is_e1005_and_a_bound_of_zero_or_an_empty_cache_dir_keeps_nothing() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    for bad in ["2 gigs", "-1", "1.5G", "G"] {
        let (ptx, stderr) = p.try_compile(1, &[("CDPC_CACHE_MAX_SIZE", bad)]);
        assert!(ptx.is_none(), "{bad}");
        assert!(stderr.contains("E1005") && stderr.contains(&format!("`CDPC_CACHE_MAX_SIZE={bad}` is not a size")) && stderr.contains("`500M`, `2G`"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!p.cache().exists(), "nothing is cached by a compilation that stops");
    for _ in 0..3 {
        assert!(stores(&p.compile(1, &[("CDPC_CACHE_MAX_SIZE", "0")]).0, 2000));
    }
    assert!(!p.cache().exists(), "a bound of 0 keeps nothing");
    // `CDPC_CACHE_DIR=` turns the cache off, where the default folders would be used.
    let home = p.path("home");
    std::fs::create_dir(&home).unwrap();
    let env = [("CDPC_CACHE_DIR", ""), ("HOME", home.to_str().unwrap()), ("XDG_CACHE_HOME", home.to_str().unwrap())];
    for _ in 0..3 {
        assert!(stores(&p.compile(1, &env).0, 2000));
    }
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0, "nothing in the default folders");
    assert_eq!(std::fs::read_dir(p.path("tmp")).unwrap().count(), 0, "work files left");
}

#[test]
fn compilations_see_misses_not_errors_while_others_trim() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let p = Project::new(1000);
    p.compile(1, &[]);
    let entry = std::fs::metadata(&p.files("pch", "pch")[0]).unwrap().len();
    // Room for two entries: nearly every compilation that writes one removes others, which the
    // other threads are about to read or are reading.
    let bound = (entry * 5 / 2).to_string();
    let env = [("CDPC_CACHE_MAX_SIZE", bound.as_str())];
    std::thread::scope(|s| {
        for thread in 0..3u32 {
            let (p, env) = (&p, &env);
            s.spawn(move || {
                for round in 0..4u32 {
                    let scale = 1 + (thread + round) % 3;
                    let (ptx, stderr) = p.compile(scale, env);
                    assert!(stores(&ptx, 2000 * scale), "{ptx}");
                    assert!(warned_once(&stderr) && !stderr.contains("error"), "{stderr}");
                }
            });
        }
    });
    // One more that writes, alone: the bound holds again.
    let (ptx, _) = p.compile(4, &env);
    assert!(stores(&ptx, 8000));
    assert!(p.cache_size() <= entry * 5 / 2, "{} bytes over {bound}", p.cache_size());
    p.assert_clean();
}
