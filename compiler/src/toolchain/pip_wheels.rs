//! The site folders of `python3`, where `pip install nvidia-cuda-nvcc nvidia-cuda-runtime` puts
//! the NVIDIA tools (`SITE/nvidia/cu13/`): rule 5 of the search ([`super::discover`]).
//!
//! They are worked out from files, without running Python, in the order Python puts them on
//! `sys.path`:
//!
//! - `python3` is the first one on `PATH`;
//! - a virtual environment (`pyvenv.cfg` beside its `bin/`): its `lib/python3.N/site-packages`;
//!   with `include-system-site-packages = true` also the user's and the base Python's folders
//!   (the base from the file's `home` key);
//! - otherwise the user's folder, `$PYTHONUSERBASE` (default `~/.local`)
//!   `/lib/python3.N/site-packages`, then the system's of the Python the link leads to (prefix
//!   `P`, `/usr` for `/usr/bin/python3`): `P/local/lib/python3.N/dist-packages`,
//!   `P/local/lib/python3.N/site-packages`, `P/lib/python3/dist-packages`,
//!   `P/lib64/python3.N/site-packages`, `P/lib/python3.N/site-packages` and
//!   `P/lib/python3.N/dist-packages` (Debian's, Fedora's and a source build's).
//!
//! `N` is the version the name `python3` links to (`python3.11`); when the links do not tell,
//! every `python3.N` folder is taken, newest first. pyenv's shim is followed to the Python it
//! runs, read from pyenv's version files as pyenv reads them ([`pyenv_python`]). Where the
//! files say nothing (another launcher script, with no Python beside it), `python3` is asked for
//! `site.getusersitepackages()` and `site.getsitepackages()` when [`SearchEnv::ask_python`]
//! allows it, within [`ASK_TIMEOUT`]: a start of Python (and of pyenv's scripts, for its
//! shim) on every compilation that reaches rule 5, 0.1 s with pyenv's on the development
//! machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::discover::{exe_name, is_executable, SearchEnv};

/// How long `python3` may take to name its site folders.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the site folders came from, and the folders (existing ones only), in `sys.path` order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PythonSites {
    /// The `python3` found on `PATH`; `None` when there is none.
    pub python: Option<PathBuf>,
    /// How the folders were found, for the "not found" error.
    pub how: String,
    /// The site folders, first first.
    pub sites: Vec<PathBuf>,
}

/// The site folders of the first `python3` on `env.path`.
pub fn python_sites(env: &SearchEnv) -> PythonSites {
    let Some(python) = env.path.as_ref().and_then(|path| std::env::split_paths(path).filter(|d| !d.as_os_str().is_empty()).map(|d| d.join(exe_name("python3"))).find(|p| is_executable(p))) else {
        return PythonSites { python: None, how: "no python3 on PATH".into(), sites: Vec::new() };
    };
    if let Some((how, sites)) = from_files(&python, env) {
        return PythonSites { python: Some(python), how, sites };
    }
    // pyenv's shim: the Python it would run, from pyenv's files.
    if let Some((version, chosen)) = pyenv_python(&python, env) {
        if let Some((how, sites)) = from_files(&chosen, env) {
            let how = format!("`{}`, pyenv's shim for version {version}: {how}", python.display());
            return PythonSites { python: Some(python), how, sites };
        }
    }
    // A launcher with no Python beside it: ask it.
    if !env.ask_python {
        let how = format!("`{}`, whose files do not tell them (a launcher, not run)", python.display());
        return PythonSites { python: Some(python), how, sites: existing(user_sites(env, None)) };
    }
    match ask(&python) {
        Ok(sites) => {
            let how = format!("`{}`, as it names them", python.display());
            PythonSites { python: Some(python), how, sites: existing(sites) }
        }
        Err(why) => {
            let how = format!("`{}`, which could not name them: {why}", python.display());
            PythonSites { python: Some(python), how, sites: existing(user_sites(env, None)) }
        }
    }
}

/// The site folders of `python` where its files tell them (a virtual environment, or a Python
/// whose name or prefix shows its version), with how they were found; `None` for a launcher.
fn from_files(python: &Path, env: &SearchEnv) -> Option<(String, Vec<PathBuf>)> {
    let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
    let prefix = bin.parent().map(Path::to_path_buf).unwrap_or_default();

    // A virtual environment.
    if let Ok(cfg) = std::fs::read_to_string(prefix.join("pyvenv.cfg")) {
        let version = version_of(python);
        let mut sites = versioned(&prefix.join("lib"), version.as_deref(), "site-packages");
        let system = cfg_value(&cfg, "include-system-site-packages").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let mut how = format!("the virtual environment `{}`", prefix.display());
        if system {
            sites.extend(user_sites(env, version.as_deref()));
            if let Some(home) = cfg_value(&cfg, "home") {
                let base = Path::new(home).join(exe_name("python3"));
                let real = base.canonicalize().unwrap_or(base);
                let version = version.or_else(|| version_of(&real));
                if let Some(base_prefix) = real.parent().and_then(Path::parent) {
                    sites.extend(system_sites(base_prefix, version.as_deref()));
                }
            }
            how.push_str(", the user's and the system's");
        }
        return Some((how, existing(sites)));
    }

    let real = python.canonicalize().unwrap_or_else(|_| python.to_path_buf());
    let version = version_of(python).or_else(|| version_of(&real));
    let real_prefix = real.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let system = system_sites(&real_prefix, version.as_deref());
    if version.is_some() || !existing(system.clone()).is_empty() {
        let mut sites = user_sites(env, version.as_deref());
        sites.extend(system);
        let how = format!("`{}`: the user's and `{}`'s", python.display(), real_prefix.display());
        return Some((how, existing(sites)));
    }
    None
}

/// The Python that pyenv's shim `python` runs, found as pyenv finds it (`pyenv version-name`,
/// then `pyenv which`), and the version's name; `None` where the files do not settle it (not
/// pyenv's shim, the version `system`, a version not installed under its own name), and
/// `python3` is then asked. The shim is `ROOT/shims/python3`, a script that exports
/// `PYENV_ROOT="ROOT"`, beside `ROOT/versions/`; the version is `PYENV_VERSION`, else the first
/// `.python-version` file in `PYENV_DIR` or a folder above it, then in the current folder or
/// one above it, else `ROOT/version`: its first words, one a line, skipping blank lines, `#`
/// comments and names with `/` or `..`; of several, the first installed with a `bin/python3`. Running the shim instead costs a start of pyenv's scripts
/// and of Python, about 0.1 s, on every compilation.
fn pyenv_python(python: &Path, env: &SearchEnv) -> Option<(String, PathBuf)> {
    let shims = python.parent()?;
    let root = shims.parent()?;
    if shims.file_name()? != "shims" || !root.join("versions").is_dir() {
        return None;
    }
    // pyenv writes its root into each shim, wherever pyenv itself is installed.
    let shim = std::fs::read(python).ok().filter(|text| text.len() <= 64 * 1024)?;
    if !String::from_utf8_lossy(&shim).contains(&format!("export PYENV_ROOT=\"{}\"", root.display())) {
        return None;
    }
    let names: Vec<String> = match env.pyenv_version.as_ref().filter(|v| !v.is_empty()) {
        Some(v) => v.to_string_lossy().split(':').map(str::to_string).collect(),
        None => {
            let pyenv_dir = env.pyenv_dir.as_ref().filter(|d| !d.is_empty()).map(PathBuf::from);
            let local = pyenv_dir.iter().chain(env.current_dir.iter()).flat_map(|d| d.ancestors()).map(|d| d.join(".python-version")).find(|f| f.is_file());
            let file = local.unwrap_or_else(|| root.join("version"));
            version_file_names(&std::fs::read_to_string(file).unwrap_or_default())
        }
    };
    for name in names.iter().filter(|n| !n.is_empty()) {
        if name == "system" || name.contains('/') || name == ".." {
            return None;
        }
        let dir = root.join("versions").join(name);
        if !dir.is_dir() {
            // pyenv would take the newest installed version the name begins: not settled here.
            return None;
        }
        let chosen = dir.join("bin").join(exe_name("python3"));
        if is_executable(&chosen) {
            return Some((name.clone(), chosen));
        }
    }
    None
}

/// The version names of a pyenv version file (`pyenv version-file-read`): the first word of
/// each line, without blank lines, `#` comments, `..` and names with `/`.
fn version_file_names(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| line.split_whitespace().next()).filter(|w| !w.starts_with('#') && *w != ".." && !w.contains('/')).map(str::to_string).collect()
}

/// `3.11` from a file name `python3.11` (following the links from `python`, the last that has
/// one).
fn version_of(python: &Path) -> Option<String> {
    let mut path = python.to_path_buf();
    let mut found = None;
    for _ in 0..16 {
        if let Some(v) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("python")).filter(|v| is_version(v)) {
            found = Some(v.to_string());
        }
        match std::fs::read_link(&path) {
            Ok(next) => path = path.parent().map_or(next.clone(), |dir| dir.join(&next)),
            Err(_) => break,
        }
    }
    found
}

/// `3.N` with digits only.
fn is_version(v: &str) -> bool {
    v.strip_prefix("3.").is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
}

/// `lib/python3.N/<leaf>` for the version, or for every `python3.N` in `lib`, newest first.
fn versioned(lib: &Path, version: Option<&str>, leaf: &str) -> Vec<PathBuf> {
    if let Some(v) = version {
        return vec![lib.join(format!("python{v}")).join(leaf)];
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(lib)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let v = name.strip_prefix("python")?.to_string();
            if !is_version(&v) {
                return None;
            }
            let minor = v.strip_prefix("3.")?.parse().ok()?;
            Some((minor, e.path().join(leaf)))
        })
        .collect();
    found.sort_by_key(|(minor, _)| std::cmp::Reverse(*minor));
    found.into_iter().map(|(_, p)| p).collect()
}

/// The user's site folders: `$PYTHONUSERBASE` or `~/.local`, `lib/python3.N/site-packages`.
fn user_sites(env: &SearchEnv, version: Option<&str>) -> Vec<PathBuf> {
    let base = match env.python_user_base.as_ref().filter(|b| !b.is_empty()) {
        Some(b) => PathBuf::from(b),
        None => match &env.home {
            Some(home) => home.join(".local"),
            None => return Vec::new(),
        },
    };
    versioned(&base.join("lib"), version, "site-packages")
}

/// The system site folders of the Python installed under `prefix`.
fn system_sites(prefix: &Path, version: Option<&str>) -> Vec<PathBuf> {
    let mut sites = Vec::new();
    sites.extend(versioned(&prefix.join("local/lib"), version, "dist-packages"));
    sites.extend(versioned(&prefix.join("local/lib"), version, "site-packages"));
    sites.push(prefix.join("lib/python3/dist-packages"));
    sites.extend(versioned(&prefix.join("lib64"), version, "site-packages"));
    sites.extend(versioned(&prefix.join("lib"), version, "site-packages"));
    sites.extend(versioned(&prefix.join("lib"), version, "dist-packages"));
    sites
}

/// The existing folders, each once, in order.
fn existing(sites: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for s in sites {
        if s.is_dir() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The value of `key = value` in a `pyvenv.cfg`.
fn cfg_value<'a>(cfg: &'a str, key: &str) -> Option<&'a str> {
    cfg.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// What `python3 -c` prints to name its site folders, one a line (user first, as on `sys.path`).
pub(super) const ASK_SCRIPT: &str = "import site\n\
    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []\n\
    print('\\n'.join(user + list(site.getsitepackages())))\n";

/// Asks `python` for its site folders (user first, as on `sys.path`).
fn ask(python: &Path) -> Result<Vec<PathBuf>, String> {
    let mut child = Command::new(python).args(["-c", ASK_SCRIPT]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(|e| format!("could not run it: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < ASK_TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", ASK_TIMEOUT.as_secs()));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("it failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).map(PathBuf::from).collect())
}
