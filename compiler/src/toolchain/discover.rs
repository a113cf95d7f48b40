//! Finding ptxas, nvlink and libcudadevrt.a.
//!
//! The search order, first match wins (see [`Toolchain::discover`]):
//!
//! 1. an explicit folder, [`ToolSearch::cuda_home`] (the `--cuda-home` flag);
//! 2. the `CUDA_HOME` environment variable;
//! 3. the project-local folder `.cuda/` that `cargo xtask setup` fills with the pinned PyPI
//!    wheels, found by walking up from the current directory (or [`ToolSearch::project_dir`])
//!    and then from the running executable's folder, looking for `.cuda/nvidia/cu13/bin/ptxas`
//!    (so `target/debug/cdpc` finds the checkout's `.cuda/` from anywhere);
//! 4. `ptxas` on `PATH`; nvlink is taken from the same folder and libcudadevrt.a from
//!    `<bin>/../lib64`, `<bin>/../lib` or `<bin>/../lib/x86_64-linux-gnu`.
//!
//! A folder from (1) or (2) may have the toolkit layout (`bin/ptxas`, `lib64/libcudadevrt.a` or
//! `lib/libcudadevrt.a`, `nvvm/libdevice/libdevice.10.bc`) or the wheel layout (the same under
//! `nvidia/cu13/`, what `pip install --target DIR` makes). Sources (1) and (2) are taken as the
//! user's decision: if the named folder lacks a tool the search stops there with an error instead
//! of quietly using some other toolkit. Sources (3) and (4) fall through to the next one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::error::ToolError;

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
    /// `PATH`.
    pub path: Option<OsString>,
    /// The current directory (start of the `.cuda/` search).
    pub current_dir: Option<PathBuf>,
    /// The running executable (second start of the `.cuda/` search).
    pub current_exe: Option<PathBuf>,
}

impl SearchEnv {
    /// Reads `CUDA_HOME`, `PATH`, the current directory and the running executable's path.
    pub fn from_process() -> SearchEnv {
        SearchEnv {
            cuda_home: std::env::var_os("CUDA_HOME"),
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
    /// A project-local `.cuda/` (the path is its `nvidia/cu13` folder).
    ProjectLocal(PathBuf),
    /// `ptxas` on `PATH` (the path is the folder holding it).
    Path(PathBuf),
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
            ToolSource::Explicit(dir) | ToolSource::CudaHome(dir) | ToolSource::ProjectLocal(dir) => dir.clone(),
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
            return probe_prefix_dirs(&dir, "--cuda-home", &mut searched, &mut best)
                .map(|(p, layout)| p.into_toolchain(ToolSource::Explicit(layout)))
                .ok_or_else(|| not_found(best, searched));
        }

        // 2. CUDA_HOME.
        if let Some(home) = env.cuda_home.as_ref().filter(|h| !h.is_empty()) {
            let dir = absolute(Path::new(home), env);
            return probe_prefix_dirs(&dir, "CUDA_HOME", &mut searched, &mut best)
                .map(|(p, layout)| p.into_toolchain(ToolSource::CudaHome(layout)))
                .ok_or_else(|| not_found(best, searched));
        }

        // 3. The project-local .cuda/, from the current (or project) directory, then from the
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
                searched.push(format!(
                    "project-local: no {PROJECT_TOOLS_DIR}/{WHEEL_SUBDIR}/bin/ptxas in `{}` or any parent folder (from {what})",
                    start.display()
                ));
            }
        }

        // 4. PATH.
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
        Err(not_found(best, searched))
    }
}

/// The file name of an executable on this platform.
fn exe_name(tool: &str) -> String {
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
        let lib_dirs = [
            prefix.join("lib64"),
            prefix.join("lib"),
            prefix.join("lib").join("x64"),
            prefix.join("lib").join("x86_64-linux-gnu"),
        ];
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
fn probe_prefix_dirs(
    dir: &Path,
    origin: &str,
    searched: &mut Vec<String>,
    best: &mut Option<Probe>,
) -> Option<(Probe, PathBuf)> {
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
