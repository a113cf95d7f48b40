//! Finding ptxas, nvlink and libcudadevrt.a.
//!
//! The search order, first match wins (see [`Toolchain::discover`]):
//!
//! 1. an explicit folder, [`ToolSearch::cuda_home`] (the `--cuda-home` flag, the C API's
//!    `cuda-home` option);
//! 2. the `CUDA_HOME` environment variable;
//! 3. the `CUDA_PATH` environment variable (when `CUDA_HOME` is unset or empty);
//! 4. the project-local folder `.cuda/` that `cargo xtask setup` fills with the pinned PyPI
//!    wheels, found by walking up from the current directory (or [`ToolSearch::project_dir`])
//!    and then from the running executable's folder, looking for `.cuda/nvidia/cu13/bin/ptxas`
//!    (so `target/debug/cdpc` finds the checkout's `.cuda/` from anywhere);
//! 5. the NVIDIA pip wheels (`nvidia-cuda-nvcc`, `nvidia-cuda-runtime`, ...) in the site folders
//!    of the first `python3` on `PATH`, `SITE/nvidia/cu13/` ([`pip_wheels`](super::pip_wheels)
//!    says how the folders are found: a virtual environment's, else the user's, then the
//!    system's);
//! 6. `ptxas` on `PATH`; nvlink is taken from the same folder and libcudadevrt.a from
//!    `<bin>/../lib64`, `<bin>/../lib` or `<bin>/../lib/x86_64-linux-gnu`;
//! 7. the standard toolkit folder `/usr/local/cuda` ([`SearchEnv::standard_dirs`]).
//!
//! A folder from (1), (2), (3) or (7) may have the toolkit layout (`bin/ptxas`,
//! `lib64/libcudadevrt.a` or `lib/libcudadevrt.a`, `nvvm/libdevice/libdevice.10.bc`) or the wheel
//! layout (the same under `nvidia/cu13/`, what `pip install --target DIR` makes). Sources (1) to
//! (3) are taken as the user's decision: if the named folder lacks a tool the search stops there
//! with an error instead of quietly using some other toolkit. Sources (4) to (7) fall through to
//! the next one. The "not found" error lists every place looked at, in this order.
//!
//! The Python wheel's library puts one more rule between (2) and (3): the NVIDIA wheels beside
//! it (`capi/src/lib.rs`, `with_wheel_tools`), as the Python package does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::error::ToolError;
use super::pip_wheels::python_sites;

/// The project-local tools folder that `cargo xtask setup` fills.
pub const PROJECT_TOOLS_DIR: &str = ".cuda";
/// Where the CUDA 13 wheels put their files under the install folder.
pub const WHEEL_SUBDIR: &str = "nvidia/cu13";
/// The device runtime library that device-side launches link against.
pub const CUDADEVRT: &str = "libcudadevrt.a";

/// What the caller says about where to look.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolSearch {
    /// An explicit CUDA folder (`--cuda-home`): a toolkit or a `pip install --target` folder.
    pub cuda_home: Option<PathBuf>,
    /// Where to start looking for the project's `.cuda/` folder instead of the current directory.
    pub project_dir: Option<PathBuf>,
}

/// The parts of the process environment the search reads. Tests build one by hand instead of
/// changing the real environment, so they can run in parallel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// `CUDA_HOME`; ignored when empty.
    pub cuda_home: Option<OsString>,
    /// `CUDA_PATH`; ignored when empty, and when `CUDA_HOME` is set.
    pub cuda_path: Option<OsString>,
    /// `HOME` (the user's site folder is `~/.local/lib/python3.N/site-packages`).
    pub home: Option<PathBuf>,
    /// `PYTHONUSERBASE`, which moves the user's site folder from `~/.local`.
    pub python_user_base: Option<OsString>,
    /// `PYENV_VERSION`, the Python pyenv's shim runs, before its version files.
    pub pyenv_version: Option<OsString>,
    /// `PYENV_DIR`, where pyenv's shim looks for a `.python-version` before the current folder.
    pub pyenv_dir: Option<OsString>,
    /// Whether `python3` may be run to name its site folders where its files do not tell them
    /// (a launcher script such as pyenv's); tests leave it off.
    pub ask_python: bool,
    /// The toolkit folders of the last rule (`/usr/local/cuda`); tests leave it empty.
    pub standard_dirs: Vec<PathBuf>,
    /// `PATH`.
    pub path: Option<OsString>,
    /// The current directory (start of the `.cuda/` search).
    pub current_dir: Option<PathBuf>,
    /// The running executable (second start of the `.cuda/` search).
    pub current_exe: Option<PathBuf>,
}

impl SearchEnv {
    /// The standard toolkit folder, the last rule of the search.
    pub const STANDARD_TOOLKIT: &'static str = "/usr/local/cuda";

    /// Reads `CUDA_HOME`, `CUDA_PATH`, `PATH`, `HOME`, `PYTHONUSERBASE`, `PYENV_VERSION`,
    /// `PYENV_DIR`, the current directory and the running executable's path.
    pub fn from_process() -> SearchEnv {
        SearchEnv {
            cuda_home: std::env::var_os("CUDA_HOME"),
            cuda_path: std::env::var_os("CUDA_PATH"),
            home: std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
            python_user_base: std::env::var_os("PYTHONUSERBASE"),
            pyenv_version: std::env::var_os("PYENV_VERSION"),
            pyenv_dir: std::env::var_os("PYENV_DIR"),
            ask_python: true,
            standard_dirs: vec![PathBuf::from(SearchEnv::STANDARD_TOOLKIT)],
            path: std::env::var_os("PATH"),
            current_dir: std::env::current_dir().ok(),
            current_exe: std::env::current_exe().ok().map(|p| p.canonicalize().unwrap_or(p)),
        }
    }
}

/// Which rule of the search found the tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolSource {
    /// [`ToolSearch::cuda_home`]; the path is the layout's folder (maybe `<dir>/nvidia/cu13`).
    Explicit(PathBuf),
    /// `CUDA_HOME`.
    CudaHome(PathBuf),
    /// `CUDA_PATH`.
    CudaPath(PathBuf),
    /// A project-local `.cuda/` (the path is its `nvidia/cu13` folder).
    ProjectLocal(PathBuf),
    /// The NVIDIA pip wheels in a site folder of `python3` (the path is `SITE/nvidia/cu13`).
    PipWheels(PathBuf),
    /// `ptxas` on `PATH` (the path is the folder holding it).
    Path(PathBuf),
    /// A standard toolkit folder (`/usr/local/cuda`).
    Standard(PathBuf),
}

/// The NVIDIA tools cdpc runs, all absolute paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The PTX assembler.
    pub ptxas: PathBuf,
    /// The device linker.
    pub nvlink: PathBuf,
    /// The folder holding `libcudadevrt.a` (given to nvlink as `-L`).
    pub cudadevrt_dir: PathBuf,
    /// `libdevice.10.bc` when the `nvidia-nvvm` wheel or a toolkit provides it.
    pub libdevice: Option<PathBuf>,
    /// `cuobjdump`, when present (tests use it to list a cubin's symbols).
    pub cuobjdump: Option<PathBuf>,
    /// Which rule of the search found the tools.
    pub source: ToolSource,
}

impl Toolchain {
    /// The CUDA folder the tools were found in (a toolkit, or the wheels' `nvidia/cu13`), whose
    /// `include/` holds CUDA's headers: what Clang gets as `--cuda-path`.
    pub fn root(&self) -> PathBuf {
        match &self.source {
            ToolSource::Explicit(dir) | ToolSource::CudaHome(dir) | ToolSource::CudaPath(dir) | ToolSource::ProjectLocal(dir) | ToolSource::PipWheels(dir) | ToolSource::Standard(dir) => dir.clone(),
            ToolSource::Path(bin) => bin.parent().map_or_else(|| bin.clone(), Path::to_path_buf),
        }
    }

    /// Searches in the documented order (module docs) with the process's environment.
    pub fn discover(search: &ToolSearch) -> Result<Toolchain, ToolError> {
        Toolchain::discover_with(search, &SearchEnv::from_process())
    }

    /// Searches in the documented order with the given environment.
    pub fn discover_with(search: &ToolSearch, env: &SearchEnv) -> Result<Toolchain, ToolError> {
        let mut searched = Vec::new();
        let mut best: Option<Probe> = None;

        // 1. The explicit folder.
        if let Some(dir) = &search.cuda_home {
            let dir = absolute(dir, env);
            return probe_prefix_dirs(&dir, "--cuda-home", &mut searched, &mut best).map(|(p, layout)| p.into_toolchain(ToolSource::Explicit(layout))).ok_or_else(|| not_found(best, searched));
        }

        // 2. CUDA_HOME.
        if let Some(home) = env.cuda_home.as_ref().filter(|h| !h.is_empty()) {
            let dir = absolute(Path::new(home), env);
            return probe_prefix_dirs(&dir, "CUDA_HOME", &mut searched, &mut best).map(|(p, layout)| p.into_toolchain(ToolSource::CudaHome(layout))).ok_or_else(|| not_found(best, searched));
        }

        // 3. CUDA_PATH.
        if let Some(path) = env.cuda_path.as_ref().filter(|h| !h.is_empty()) {
            let dir = absolute(Path::new(path), env);
            return probe_prefix_dirs(&dir, "CUDA_PATH", &mut searched, &mut best).map(|(p, layout)| p.into_toolchain(ToolSource::CudaPath(layout))).ok_or_else(|| not_found(best, searched));
        }

        // 4. The project-local .cuda/, from the current (or project) directory, then from the
        //    executable's folder.
        let mut starts: Vec<(PathBuf, &str)> = Vec::new();
        match &search.project_dir {
            Some(dir) => starts.push((absolute(dir, env), "the project directory")),
            None => {
                if let Some(cwd) = &env.current_dir {
                    starts.push((cwd.clone(), "the current directory"));
                }
            }
        }
        if let Some(exe) = env.current_exe.as_ref().and_then(|e| e.parent()) {
            starts.push((exe.to_path_buf(), "the cdpc executable's folder"));
        }
        for (start, what) in &starts {
            let mut hit = false;
            for dir in start.ancestors() {
                let layout = dir.join(PROJECT_TOOLS_DIR).join(WHEEL_SUBDIR);
                if !is_executable(&layout.join("bin").join(exe_name("ptxas"))) {
                    continue;
                }
                hit = true;
                let probe = Probe::of_prefix(&layout);
                searched.push(describe(&format!("project-local (from {what})"), &layout, &probe));
                if probe.is_complete() {
                    return Ok(probe.into_toolchain(ToolSource::ProjectLocal(layout)));
                }
                keep_best(&mut best, probe);
            }
            if !hit {
                searched.push(format!("project-local: no {PROJECT_TOOLS_DIR}/{WHEEL_SUBDIR}/bin/ptxas in `{}` or any parent folder (from {what})", start.display()));
            }
        }

        // 5. The NVIDIA pip wheels of python3.
        let python = python_sites(env);
        let mut wheels_seen = false;
        for site in &python.sites {
            let layout = site.join(WHEEL_SUBDIR);
            if !is_executable(&layout.join("bin").join(exe_name("ptxas"))) {
                continue;
            }
            wheels_seen = true;
            let probe = Probe::of_prefix(&layout);
            searched.push(describe("NVIDIA pip wheels", &layout, &probe));
            if probe.is_complete() {
                return Ok(probe.into_toolchain(ToolSource::PipWheels(layout)));
            }
            keep_best(&mut best, probe);
        }
        if !wheels_seen {
            searched.push(if python.sites.is_empty() {
                format!("NVIDIA pip wheels: no site folder to look in ({})", python.how)
            } else {
                let sites = python.sites.iter().map(|s| format!("`{}`", s.display())).collect::<Vec<_>>().join(", ");
                format!("NVIDIA pip wheels: no {WHEEL_SUBDIR}/bin/ptxas in {sites} (the site folders of {})", python.how)
            });
        }

        // 6. PATH.
        let mut path_dirs_with_ptxas = 0;
        if let Some(path) = &env.path {
            for bin in std::env::split_paths(path) {
                if bin.as_os_str().is_empty() || !is_executable(&bin.join(exe_name("ptxas"))) {
                    continue;
                }
                let bin = absolute(&bin, env);
                path_dirs_with_ptxas += 1;
                let probe = Probe::of_bin_dir(&bin);
                searched.push(describe("PATH", &bin, &probe));
                if probe.is_complete() {
                    return Ok(probe.into_toolchain(ToolSource::Path(bin)));
                }
                keep_best(&mut best, probe);
            }
        }
        if path_dirs_with_ptxas == 0 {
            searched.push(match &env.path {
                Some(_) => "PATH: no folder on PATH holds ptxas".to_string(),
                None => "PATH: not set".to_string(),
            });
        }

        // 7. The standard toolkit folder.
        for dir in &env.standard_dirs {
            if !dir.is_dir() {
                searched.push(format!("standard folder: `{}` (does not exist)", dir.display()));
                continue;
            }
            let probe = Probe::of_prefix(dir);
            searched.push(describe("standard folder", dir, &probe));
            if probe.is_complete() {
                return Ok(probe.into_toolchain(ToolSource::Standard(dir.clone())));
            }
            keep_best(&mut best, probe);
        }
        Err(not_found(best, searched))
    }
}

/// The file name of an executable on this platform.
pub(crate) fn exe_name(tool: &str) -> String {
    format!("{tool}{}", std::env::consts::EXE_SUFFIX)
}

fn absolute(p: &Path, env: &SearchEnv) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else if let Some(cwd) = &env.current_dir {
        cwd.join(p)
    } else {
        p.to_path_buf()
    }
}

pub(crate) fn is_executable(p: &Path) -> bool {
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                true
            }
        }
        _ => false,
    }
}

/// What one candidate folder holds.
#[derive(Clone, Debug, Default)]
struct Probe {
    ptxas: Option<PathBuf>,
    nvlink: Option<PathBuf>,
    cudadevrt_dir: Option<PathBuf>,
    libdevice: Option<PathBuf>,
    cuobjdump: Option<PathBuf>,
}

impl Probe {
    /// A toolkit-shaped folder: `bin/`, `lib64/` or `lib/`, `nvvm/libdevice/`.
    fn of_prefix(prefix: &Path) -> Probe {
        Probe::of_bin_dir(&prefix.join("bin"))
    }

    /// A `bin/` folder; the libraries are looked for beside it.
    fn of_bin_dir(bin: &Path) -> Probe {
        let prefix = bin.parent().unwrap_or(bin);
        let tool = |name: &str| Some(bin.join(exe_name(name))).filter(|p| is_executable(p));
        let lib_dirs = [prefix.join("lib64"), prefix.join("lib"), prefix.join("lib").join("x64"), prefix.join("lib").join("x86_64-linux-gnu")];
        let libdevices = [
            prefix.join("nvvm/libdevice/libdevice.10.bc"),
            // Debian's nvidia-cuda-toolkit package.
            prefix.join("lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc"),
        ];
        Probe {
            ptxas: tool("ptxas"),
            nvlink: tool("nvlink"),
            cudadevrt_dir: lib_dirs.into_iter().find(|d| d.join(CUDADEVRT).is_file()),
            libdevice: libdevices.into_iter().find(|f| f.is_file()),
            cuobjdump: tool("cuobjdump"),
        }
    }

    fn missing(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if self.ptxas.is_none() {
            m.push("ptxas");
        }
        if self.nvlink.is_none() {
            m.push("nvlink");
        }
        if self.cudadevrt_dir.is_none() {
            m.push(CUDADEVRT);
        }
        m
    }

    fn is_complete(&self) -> bool {
        self.missing().is_empty()
    }

    fn into_toolchain(self, source: ToolSource) -> Toolchain {
        Toolchain {
            ptxas: self.ptxas.expect("complete probe"),
            nvlink: self.nvlink.expect("complete probe"),
            cudadevrt_dir: self.cudadevrt_dir.expect("complete probe"),
            libdevice: self.libdevice,
            cuobjdump: self.cuobjdump,
            source,
        }
    }
}

/// Tries `dir` as a toolkit and as a wheel install folder (`dir/nvidia/cu13`), in that order.
fn probe_prefix_dirs(dir: &Path, origin: &str, searched: &mut Vec<String>, best: &mut Option<Probe>) -> Option<(Probe, PathBuf)> {
    let layouts = [(dir.to_path_buf(), "toolkit layout"), (dir.join(WHEEL_SUBDIR), "wheel layout")];
    for (layout, kind) in layouts {
        let probe = Probe::of_prefix(&layout);
        searched.push(describe(&format!("{origin} ({kind})"), &layout, &probe));
        if probe.is_complete() {
            return Some((probe, layout));
        }
        keep_best(best, probe);
    }
    None
}

fn describe(origin: &str, dir: &Path, probe: &Probe) -> String {
    let missing = probe.missing();
    if missing.is_empty() {
        format!("{origin}: `{}` (complete)", dir.display())
    } else {
        format!("{origin}: `{}` (no {})", dir.display(), missing.join(", no "))
    }
}

/// Keeps the candidate that got furthest, so the error names what is really missing.
fn keep_best(best: &mut Option<Probe>, probe: Probe) {
    let better = match best {
        None => true,
        Some(b) => probe.missing().len() < b.missing().len(),
    };
    if better {
        *best = Some(probe);
    }
}

fn not_found(best: Option<Probe>, searched: Vec<String>) -> ToolError {
    let missing = best.filter(|b| b.missing().len() < 3).map(|b| b.missing()).unwrap_or_default();
    let what = if missing.is_empty() {
        "the NVIDIA tools (ptxas, nvlink and libcudadevrt.a from CUDA 12 or 13)".to_string()
    } else if missing == [CUDADEVRT] {
        format!(
            "{CUDADEVRT} (the CUDA device runtime that device-side launches link against; \
             the nvidia-cuda-runtime wheel or a CUDA toolkit has it)"
        )
    } else if !missing.contains(&"ptxas") {
        format!("{} (beside a ptxas that was found)", missing.join(" and "))
    } else {
        missing.join(" and ")
    };
    ToolError::NotFound { what, searched }
}
