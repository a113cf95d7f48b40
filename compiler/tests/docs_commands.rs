//! Every command of the fenced `sh` blocks of README.md, SETUP.md and docs/ is run here, so
//! that an example in the documentation cannot fail unnoticed again (README's fat-binary
//! example once did). Each file's blocks run in order in one scratch folder holding the files
//! the examples name (`app.cdp`, `app.cu`, `launch.cu`, `scale.cu`, `main.cu`, `main.cpp`,
//! `kernel.ll`, `lib/libmine.a`, ...), with `cdpc` and `target/release/cdpc` being the binary under test,
//! nvcc and the NVIDIA tools on PATH and `$CUDA` their folder.
//!
//! A command is run unless [`NOT_RUN`] names it, with the reason, which is printed; an entry
//! that names no command of the documents fails the test, so the list cannot go stale.
//! Commands needing something this machine may lack run only where it is, and otherwise print
//! why not: nvcc and g++ for host programs, a GPU for `cdpc run`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Commands not run here, each with the reason (printed when the test meets it).
const NOT_RUN: &[(&str, &str)] = &[
    ("cargo xtask samples", "`.ci/run` runs it (the README's set-up command) on a fresh machine"),
    ("cargo xtask test", "`.ci/run` runs it (the README's test command); this test is part of it"),
    ("cargo install --path compiler", "a release build and install into ~/.cargo/bin; `cargo xtask samples` (.ci/run) builds the same release binary"),
    ("cargo xtask bench-compile", "the full compile-time benchmark takes many minutes; `cargo xtask test` runs a tiny run of it"),
    ("cargo fmt --all", "rewrites the checkout's sources; compiler/tests/formatting.rs checks that they are formatted"),
    ("cargo clippy --workspace --all-targets --release", "checks every crate of the workspace again (minutes)"),
    ("cargo xtask gpu-bundle", "a release build of the GPU bundle, for a GPU machine"),
    ("sh samples/harness/gpu-run.sh", "runs on the GPU machine, writing its report to $OUT/gpu-diff.md"),
    ("SAMPLES=0 sh samples/harness/gpu-run.sh", "runs on the GPU machine"),
    (
        "STAGE=build WORK_DIR=/tmp/corpus-clang bash samples/harness/corpus-gpu.sh target/release/cdpc ../shared/corpus",
        "builds the 13 corpus programs twice with nvcc and cdpc (many minutes); its report is $WORK_DIR/corpus-gpu.md",
    ),
    ("STAGE=run WORK_DIR=/tmp/corpus-clang bash samples/harness/corpus-gpu.sh cdpc", "runs on the GPU machine"),
    ("cargo xtask plot-gpu", "redraws docs/gpu-ratios.png from a GPU run's results (needs matplotlib)"),
    ("pip install cdpc-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl", "python/tests/test_wheel.py installs the wheel `cargo xtask test` builds into a clean venv"),
    ("cargo xtask wheel", "`cargo xtask test` builds the same wheel for the Python tests"),
    ("mkdir -p build/gpu-python && cp build/wheels/cdpc-*.whl build/gpu-python/", "prepares the GPU machine's folder from `cargo xtask wheel`'s output"),
    (
        "python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d build/gpu-python cffi pycparser",
        "downloads from PyPI, for the GPU machine",
    ),
    ("cargo build --release -p cdpc-example-cudarc && cp target/release/cdpc-example-cudarc build/gpu-python/", "a release build for the GPU machine; `cargo xtask test` builds and tests the example"),
    ("export CUDA_HOME=/usr/local/cuda", "names a toolkit installed at /usr/local/cuda, which this machine need not have"),
    ("pip install cdpc", "downloads from PyPI; python/tests/test_wheel.py installs the wheel `cargo xtask test` builds into a clean venv"),
    (
        "tar -xJf cdpc-0.1.0-x86_64-linux-gnu.tar.xz && export PATH=$PWD/cdpc-0.1.0-x86_64-linux-gnu/bin:$PATH",
        "needs the release archive, which `cargo xtask dist` builds; python/tests/test_c_api.py tests the unpacked archive",
    ),
    ("cdpc app.cu -o app", "README's first build compiles the program README.md shows, not the examples' app.cu: `readme_first_build` below builds it (and runs it on a GPU)"),
    ("./app", "runs the program on a GPU; `readme_first_build` runs README's where there is one, and samples/harness/corpus-gpu.sh with DRIVER=1 runs programs cdpc built"),
    ("make NVCC=$PWD/target/release/cdpc", "needs an nvcc Makefile; compiler/tests/program_build.rs builds one with NVCC=cdpc"),
    ("cmake -S . -B build -DCMAKE_CUDA_COMPILER=$PWD/target/release/cdpc", "needs a CMake project; compiler/tests/cmake_build.rs configures and builds compiler/tests/cmake_project so"),
];

/// One command of a document: its text (continuation lines joined, the trailing comment
/// dropped) and where it is.
struct Doc {
    text: String,
    place: String,
}

/// The commands of the fenced `sh` blocks of `file`, in order.
fn commands(file: &Path) -> Vec<Doc> {
    let text = std::fs::read_to_string(file).unwrap();
    commands_in(&text, &file.strip_prefix(root()).unwrap().display().to_string())
}

/// The commands of the fenced `sh` blocks of a document's `text`, placed in file `name`.
fn commands_in(text: &str, name: &str) -> Vec<Doc> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(String, usize)> = None;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = match line.find(" #") {
            Some(at) => &line[..at],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        };
        let (joined, start) = match pending.take() {
            Some((before, start)) => (format!("{before} {}", code.trim()), start),
            None => (code.trim().to_string(), n + 1),
        };
        if let Some(open) = joined.strip_suffix('\\') {
            pending = Some((open.trim_end().to_string(), start));
        } else if !joined.is_empty() {
            out.push(Doc { text: joined, place: format!("{name}:{start}") });
        }
    }
    out
}

/// The documents whose commands are run: README.md, SETUP.md and every `.md` under docs/.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("SETUP.md")];
    let mut stack = vec![root().join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

const APP: &str = r#"// The examples' one-file program: nvcc's main.cu launches `parent`.
#include <cstdio>
#include <time.h>
__device__ int factor = 3;
__device__ int scale(int x) { return x * factor; }
extern "C" __global__ void child(int *data) { data[threadIdx.x] = scale(data[threadIdx.x]) + factor; }
extern "C" __global__ void parent(int *data, int n) {
    if (threadIdx.x % warpSize == 0) child<<<1, n>>>(data);
}
"#;

/// The scratch folder of one document, with the files its examples name.
fn scratch(cdpc: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["launch.cu", "scale.cu", "main.cu", "main.cpp", "main-host.cpp"] {
        std::fs::copy(root().join("docs/build-example").join(name), d.join(name)).unwrap();
    }
    std::fs::write(d.join("app.cu"), APP).unwrap();
    // docs/IR-INPUT.md's module: a parent launching a child through the documented sequence.
    std::fs::copy(root().join("compiler/tests/ir_input/launch.ll"), d.join("kernel.ll")).unwrap();
    std::fs::write(d.join("app.cdp"), APP).unwrap();
    for folder in ["bin", "target/release", "lib", "build", "include", "third_party"] {
        std::fs::create_dir_all(d.join(folder)).unwrap();
    }
    std::os::unix::fs::symlink(cdpc, d.join("bin/cdpc")).unwrap();
    std::os::unix::fs::symlink(cdpc, d.join("target/release/cdpc")).unwrap();
    std::os::unix::fs::symlink(root().join("samples"), d.join("samples")).unwrap();
    // `-L lib -lmine`: an archive of one unrelated device object.
    std::fs::write(d.join("mine.cu"), "__device__ int mine(int x) { return x + 1; }\n").unwrap();
    let out = Command::new(cdpc).current_dir(d).args(["-dc", "mine.cu", "-o", "mine.o"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new("ar").current_dir(d).args(["rcs", "lib/libmine.a", "mine.o"]).output().unwrap();
    assert!(out.status.success(), "ar: {}", String::from_utf8_lossy(&out.stderr));
    dir
}

fn works(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).output().is_ok_and(|o| o.status.success())
}

#[test]
fn every_documented_command_runs() {
    let Ok(tools) = cdpc::toolchain::Toolchain::discover(&Default::default()) else {
        println!("skipped: every documented command: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    };
    let bin = tools.ptxas.parent().unwrap().to_path_buf();
    let cuda = bin.parent().unwrap().to_path_buf();
    let host = bin.join("nvcc").is_file() && works("g++", "--version");
    let gpu = Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    let cdpc = PathBuf::from(env!("CARGO_BIN_EXE_cdpc"));
    let mut used = vec![false; NOT_RUN.len()];
    let mut ran = 0;
    for file in documents() {
        let docs = commands(&file);
        if docs.is_empty() {
            continue;
        }
        let dir = scratch(&cdpc);
        let path = format!("{}:{}:{}", dir.path().join("bin").display(), bin.display(), std::env::var("PATH").unwrap_or_default());
        for doc in docs {
            if let Some(i) = NOT_RUN.iter().position(|(c, _)| *c == doc.text) {
                used[i] = true;
                println!("not run: `{}` ({}): {}", doc.text, doc.place, NOT_RUN[i].1);
                continue;
            }
            let program = doc.text.split_whitespace().next().unwrap();
            if matches!(program, "nvcc" | "g++") && !host {
                println!("skipped: `{}` ({}): needs nvcc and g++ for the host program", doc.text, doc.place);
                continue;
            }
            if doc.text.split_whitespace().nth(1) == Some("run") && !gpu {
                println!("skipped: `{}` ({}): needs a GPU (`nvidia-smi -L` lists none)", doc.text, doc.place);
                continue;
            }
            let out = Command::new("sh").current_dir(dir.path()).env("PATH", &path).env("CUDA", &cuda).env_remove("CUDA_HOME").args(["-c", &doc.text]).output().unwrap();
            assert!(out.status.success(), "`{}` ({}) failed:\n{}{}", doc.text, doc.place, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            // An example prints no warning: it shows what to write.
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("warning[") && !stderr.contains("note["), "`{}` ({}) warns:\n{stderr}", doc.text, doc.place);
            ran += 1;
        }
    }
    for ((command, _), used) in NOT_RUN.iter().zip(used) {
        assert!(used, "NOT_RUN names `{command}`, which no document shows any more: remove it");
    }
    assert!(ran >= 25, "only {ran} commands ran");
    println!("ran {ran} documented commands");
}

#[test]
fn commands_are_read_as_a_shell_reads_them() {
    let text = "text\n```sh\na one   # comment\nb \\\n    two \\\n    three\n# only a comment\n```\n```c\nnot a command\n```\n";
    let found: Vec<String> = commands_in(text, "x.md").into_iter().map(|d| format!("{} @{}", d.text, d.place)).collect();
    assert_eq!(found, ["a one @x.md:3", "b two three @x.md:4"]);
}

/// README's first build: the program its `cuda` block shows, built with the command after it,
/// prints the number its `printf` line's comment says where a GPU runs it.
#[test]
fn readme_first_build() {
    if cdpc::toolchain::Toolchain::discover(&Default::default()).is_err() {
        println!("skipped: README's first build: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = &readme[readme.find("## A first build").expect("README has \"## A first build\"")..];
    let start = section.find("```cuda\n").expect("a ```cuda block in README's first build") + "```cuda\n".len();
    let source = &section[start..start + section[start..].find("```").unwrap()];
    let build: Vec<String> = commands_in(section, "README.md").into_iter().map(|d| d.text).take(2).collect();
    assert_eq!(build, ["cdpc app.cu -o app", "./app"], "README's first build shows other commands than this test runs");
    let expected = source.lines().find(|l| l.contains("printf")).and_then(|l| l.rsplit("// ").next()).expect("the printf line says what it prints").trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.cu"), source).unwrap();
    let cdpc = PathBuf::from(env!("CARGO_BIN_EXE_cdpc"));
    let out = Command::new(&cdpc).current_dir(dir.path()).args(["app.cu", "-o", "app"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "`cdpc app.cu -o app` failed:\n{stderr}");
    assert!(!stderr.contains("warning[") && !stderr.contains("note["), "`cdpc app.cu -o app` warns:\n{stderr}");
    if !Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && !o.stdout.is_empty()) {
        println!("README's first build: built; not run (`nvidia-smi -L` lists no GPU)");
        return;
    }
    let run = Command::new(dir.path().join("app")).output().unwrap();
    assert!(run.status.success(), "./app failed: {}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), expected, "./app printed other than README says");
}
