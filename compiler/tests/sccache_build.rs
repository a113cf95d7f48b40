//! sccache in front of cdpc, as docs/SCCACHE.md sets it up: `sccache cdpc ...`, and CMake's
//! `CMAKE_CUDA_COMPILER_LAUNCHER=sccache`. sccache tells a compiler by the macros left in the
//! `-E` of a C file: cdpc's is its host compiler's, so sccache takes cdpc for GCC (or Clang),
//! hashes `cdpc -E` of each source and runs the compilation itself on a miss. Every test starts
//! a server of its own (its own port, cache folder and no configuration file) and stops it;
//! the counts are sccache's (`--show-stats --stats-format=json`) and the oracle is cdpc without
//! sccache: the same command line's outputs, byte for byte. Skipped, with the reason printed,
//! when sccache (`cargo xtask setup` puts it in `.sccache/bin`) or the NVIDIA tools are missing.

use crate::build_common::{cdpc, have, stderr, tool_dir};
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

/// What became of the compilations since the counters were zeroed: (CUDA hits, CUDA misses,
/// compilations sccache would not cache, calls it did not take for compilations).
fn outcomes(stats: &serde_json::Value) -> (u64, u64, u64, u64) {
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    (count(&stats["cache_hits"]["counts"]["CUDA"]), count(&stats["cache_misses"]["counts"]["CUDA"]), count(&stats["requests_not_cacheable"]), count(&stats["requests_not_compile"]))
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
    for (args, outputs) in CACHED {
        let compared = if cdpc_cache { &outputs[..1] } else { outputs };
        let out = crate::build_common::cdpc_env(dir.path(), args, &env);
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        let plain = take(dir.path(), outputs);
        assert!(plain.iter().all(Option::is_some), "cdpc {args:?} wrote {outputs:?}");
        for (build, outcome) in [("the first build, a miss", (0, 1, 0, 0)), ("the second build, a hit", (1, 0, 0, 0))] {
            server.zero();
            server.cdpc_env(dir.path(), args, &env);
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
    let first = take(dir.path(), &["x.o"]);
    std::fs::write(dir.path().join("twice.cuh"), "#ifdef __CUDA_ARCH__\n__device__ inline int twice(int x) { return 3 * x; }\n#else\n__device__ inline int twice(int x) { return 2 * x; }\n#endif\n")
        .unwrap();
    server.zero();
    server.cdpc(dir.path(), &args);
    assert_eq!(outcomes(&server.stats()), (0, 1, 0, 0), "a device-side change to the header is a miss: {}", server.stats());
    let device_only = take(dir.path(), &["x.o"]);
    assert!(device_only != first, "the device-side change gave the old object");
    let out = cdpc(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(take(dir.path(), &["x.o"]) == device_only, "the object under sccache is not cdpc's");
}

/// What sccache does not cache, compiled as cdpc compiles it: sccache reads a command line as
/// GCC's, for which only `-c` is a compilation (nvcc's `-dc`, `-ptx`, `-cubin` are not: sccache
/// runs them as they are, `requests_not_compile`), and `-gencode` with its value in the next
/// argument is a second input file (`requests_not_cacheable`).
#[test]
fn what_sccache_does_not_cache_still_compiles_as_cdpc_does() {
    let dir = project();
    let Some(server) = Server::start(dir.path(), &[]) else { return };
    let cases: &[(&[&str], &str, (u64, u64, u64, u64))] = &[
        (&["-arch=sm_90", "-dc", "x.cu", "-o", "x.o"], "x.o", (0, 0, 0, 1)),
        (&["-arch=sm_90", "-ptx", "x.cu", "-o", "x.ptx"], "x.ptx", (0, 0, 0, 1)),
        (&["-arch=sm_90", "-cubin", "x.cu", "-o", "x.cubin"], "x.cubin", (0, 0, 0, 1)),
        (&["-gencode", "arch=compute_90,code=sm_90", "-rdc=true", "-c", "x.cu", "-o", "x.o"], "x.o", (0, 0, 1, 0)),
    ];
    for (args, output, expected) in cases {
        let out = cdpc(dir.path(), args);
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        let plain = take(dir.path(), &[output]);
        server.zero();
        server.cdpc(dir.path(), args);
        assert_eq!(outcomes(&server.stats()), *expected, "{args:?}: {}", server.stats());
        assert!(take(dir.path(), &[output]) == plain, "{args:?}: the output under sccache is not cdpc's");
    }
}

/// sccache's probe: `cdpc -E` of a C file is the host compiler's `-E` of it (nvcc runs its host
/// compiler for a host file's `-E`), without nvcc's `__NVCC__`, so sccache takes cdpc for its
/// host compiler and caches its compilations whole.
#[test]
fn the_e_of_a_c_file_is_the_host_compilers() {
    if !have("c++") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe = "#if defined(__NVCC__)\ncompiler_id=nvcc\n#elif defined(__clang__)\ncompiler_id=clang\n#elif defined(__GNUC__)\ncompiler_id=gcc\n#endif\ncompiler_version=__VERSION__\nint f(void) { return M; }\n";
    std::fs::write(dir.path().join("testfile.c"), probe).unwrap();
    let ours = cdpc(dir.path(), &["-DM=3", "-E", "testfile.c"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let host = Command::new("c++").current_dir(dir.path()).args(["-x", "c", "-DM=3", "-E", "testfile.c"]).output().expect("c++ runs");
    assert!(host.status.success(), "{}", stderr(&host));
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&host.stdout));
    let text = String::from_utf8_lossy(&ours.stdout);
    assert!(!text.contains("compiler_id=nvcc") && text.contains("int f(void) { return 3; }"), "{text}");
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

/// Every object (`*.o`) under `dir`, by its path below `dir`, with its bytes.
fn objects(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "o") {
                found.insert(path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    found
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
