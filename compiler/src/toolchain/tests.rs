//! Tests without a GPU: argument lists, the search order over fake folder trees, fake tools that
//! fail in every way, and (when real tools are found) a real ptxas + nvlink run.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::*;
use crate::target::SmVersion;

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

// ---------------------------------------------------------------------------------------------
// Argument lists

#[test]
fn ptxas_args_default() {
    let opts = BuildOptions::new(SmVersion(90));
    let args = ptxas_args(&opts, Path::new("/w/in.ptx"), Path::new("/w/out.o"));
    assert_eq!(args, os(&["-arch=sm_90", "-c", "-o", "/w/out.o", "/w/in.ptx"]));
}

#[test]
fn ptxas_args_opt_level_and_extra() {
    let mut opts = BuildOptions::new(SmVersion(100));
    opts.opt_level = Some(2);
    opts.ptxas_args = os(&["-v", "--maxrregcount=32"]);
    let args = ptxas_args(&opts, Path::new("a.ptx"), Path::new("a.o"));
    assert_eq!(args, os(&["-arch=sm_100", "-c", "-O2", "-v", "--maxrregcount=32", "-o", "a.o", "a.ptx"]));
}

#[test]
fn nvlink_args_default_and_extra() {
    let mut opts = BuildOptions::new(SmVersion(90));
    let args = nvlink_args(&opts, &[Path::new("/w/a.o")], Path::new("/cuda/lib"), Path::new("/w/x.cubin"));
    assert_eq!(args, os(&["-arch=sm_90", "/w/a.o", "-L/cuda/lib", "-lcudadevrt", "-o", "/w/x.cubin"]));

    opts.nvlink_args = os(&["-v"]);
    let args = nvlink_args(&opts, &[Path::new("a.o"), Path::new("b.o")], Path::new("/l i b"), Path::new("o.cubin"));
    assert_eq!(args, os(&["-arch=sm_90", "a.o", "b.o", "-L/l i b", "-lcudadevrt", "-v", "-o", "o.cubin"]));
}

#[test]
fn shell_quoting_for_display() {
    assert_eq!(shell_quote("-arch=sm_90".as_ref()), "-arch=sm_90");
    assert_eq!(shell_quote("/a b/c".as_ref()), "'/a b/c'");
    assert_eq!(shell_quote("it's".as_ref()), r"'it'\''s'");
    assert_eq!(shell_quote("".as_ref()), "''");
    assert_eq!(command_line("/bin/ptxas".as_ref(), &os(&["-c", "x y.ptx"])), "/bin/ptxas -c 'x y.ptx'");
}

#[test]
fn output_truncation_keeps_the_tail() {
    assert_eq!(error::truncate_output(b"short", 64), "short");
    let long: Vec<u8> = std::iter::repeat_n(b'a', 100).chain(b"END".iter().copied()).collect();
    let t = error::truncate_output(&long, 10);
    assert!(t.starts_with("[... 93 bytes omitted ...]\n"), "{t}");
    assert!(t.ends_with("aaaaaaaEND"), "{t}");
    // Never starts inside a UTF-8 sequence.
    let t = error::truncate_output("xxé€".as_bytes(), 4);
    assert!(t.ends_with('€'), "{t}");
}

#[test]
fn exit_kind_display() {
    assert_eq!(ExitKind::Code(255).to_string(), "exit status 255");
    assert_eq!(ExitKind::Signal(9).to_string(), "killed by signal 9 (SIGKILL)");
}

// ---------------------------------------------------------------------------------------------
// Fake folder trees

fn write_script(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A toolkit-shaped folder at `prefix`: bin/ptxas, bin/nvlink and `<lib>/libcudadevrt.a`.
fn fake_prefix(prefix: &Path, lib: &str) -> PathBuf {
    write_script(&prefix.join("bin/ptxas"), "exit 0");
    write_script(&prefix.join("bin/nvlink"), "exit 0");
    fs::create_dir_all(prefix.join(lib)).unwrap();
    fs::write(prefix.join(lib).join("libcudadevrt.a"), b"!<arch>\n").unwrap();
    prefix.to_path_buf()
}

/// All four sources filled, with the environment pointing at each of them.
struct Trees {
    _root: TempDir,
    flag: PathBuf,
    cuda_home: PathBuf,
    project: PathBuf,
    path_bin: PathBuf,
    elsewhere: PathBuf,
}

fn trees() -> Trees {
    let root = TempDir::new().unwrap();
    let r = root.path();
    let flag = fake_prefix(&r.join("flag"), "lib64");
    let cuda_home = fake_prefix(&r.join("home"), "lib64");
    let project = r.join("proj");
    fake_prefix(&project.join(".cuda/nvidia/cu13"), "lib");
    fs::create_dir_all(project.join("src/deep")).unwrap();
    let path_bin = fake_prefix(&r.join("usr"), "lib64").join("bin");
    let elsewhere = r.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    Trees { flag, cuda_home, project, path_bin, elsewhere, _root: root }
}

fn env_for(t: &Trees) -> SearchEnv {
    SearchEnv {
        cuda_home: Some(t.cuda_home.clone().into()),
        path: Some(std::env::join_paths([Path::new("/nonexistent-bin"), &t.path_bin]).unwrap()),
        current_dir: Some(t.project.join("src/deep")),
        current_exe: Some(t.elsewhere.join("cdpc")),
        ..SearchEnv::default()
    }
}

#[test]
fn search_order_flag_then_cuda_home_then_project_then_path() {
    let t = trees();
    let mut env = env_for(&t);
    let flag = ToolSearch { cuda_home: Some(t.flag.clone()), project_dir: None };

    let tc = Toolchain::discover_with(&flag, &env).unwrap();
    assert_eq!(tc.source, ToolSource::Explicit(t.flag.clone()));
    assert_eq!(tc.ptxas, t.flag.join("bin/ptxas"));
    assert_eq!(tc.nvlink, t.flag.join("bin/nvlink"));
    assert_eq!(tc.cudadevrt_dir, t.flag.join("lib64"));

    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    assert_eq!(tc.source, ToolSource::CudaHome(t.cuda_home.clone()));

    env.cuda_home = None;
    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    let cu13 = t.project.join(".cuda/nvidia/cu13");
    assert_eq!(tc.source, ToolSource::ProjectLocal(cu13.clone()));
    assert_eq!(tc.cudadevrt_dir, cu13.join("lib"));

    env.current_dir = Some(t.elsewhere.clone());
    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    assert_eq!(tc.source, ToolSource::Path(t.path_bin.clone()));
    assert_eq!(tc.ptxas, t.path_bin.join("ptxas"));
    assert_eq!(tc.cudadevrt_dir, t.path_bin.parent().unwrap().join("lib64"));
}

#[test]
fn empty_cuda_home_is_ignored() {
    let t = trees();
    let mut env = env_for(&t);
    env.cuda_home = Some(OsString::new());
    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    assert!(matches!(tc.source, ToolSource::ProjectLocal(_)), "{:?}", tc.source);
}

#[test]
fn project_dir_option_and_executable_location() {
    let t = trees();
    let mut env = env_for(&t);
    env.cuda_home = None;
    env.current_dir = Some(t.elsewhere.clone());
    let cu13 = t.project.join(".cuda/nvidia/cu13");

    // --project-dir style start.
    let s = ToolSearch { cuda_home: None, project_dir: Some(t.project.join("src")) };
    assert_eq!(Toolchain::discover_with(&s, &env).unwrap().source, ToolSource::ProjectLocal(cu13.clone()));

    // The executable lives in the checkout (target/debug/cdpc) while the cwd is elsewhere.
    env.current_exe = Some(t.project.join("target/debug/cdpc"));
    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    assert_eq!(tc.source, ToolSource::ProjectLocal(cu13));
}

#[test]
fn wheel_layout_under_an_explicit_folder_with_optional_tools() {
    let root = TempDir::new().unwrap();
    let cu13 = fake_prefix(&root.path().join("nvidia/cu13"), "lib");
    write_script(&cu13.join("bin/cuobjdump"), "exit 0");
    fs::create_dir_all(cu13.join("nvvm/libdevice")).unwrap();
    fs::write(cu13.join("nvvm/libdevice/libdevice.10.bc"), b"BC").unwrap();

    let s = ToolSearch { cuda_home: Some(root.path().to_path_buf()), project_dir: None };
    let tc = Toolchain::discover_with(&s, &SearchEnv::default()).unwrap();
    assert_eq!(tc.source, ToolSource::Explicit(cu13.clone()));
    assert_eq!(tc.cudadevrt_dir, cu13.join("lib"));
    assert_eq!(tc.libdevice, Some(cu13.join("nvvm/libdevice/libdevice.10.bc")));
    assert_eq!(tc.cuobjdump, Some(cu13.join("bin/cuobjdump")));
}

#[test]
fn incomplete_explicit_folder_is_an_error_naming_the_missing_library() {
    let t = trees();
    let env = env_for(&t);
    fs::remove_file(t.flag.join("lib64/libcudadevrt.a")).unwrap();
    let s = ToolSearch { cuda_home: Some(t.flag.clone()), project_dir: None };
    let err = Toolchain::discover_with(&s, &env).unwrap_err();
    let msg = err.to_string();
    match &err {
        ToolError::NotFound { what, searched } => {
            assert!(what.starts_with("libcudadevrt.a"), "{what}");
            assert_eq!(searched.len(), 2, "{searched:?}"); // toolkit and wheel layouts, nothing else
        }
        other => panic!("{other:?}"),
    }
    assert!(msg.contains(&t.flag.display().to_string()), "{msg}");
    assert!(msg.contains("nvidia/cu13"), "{msg}");
    // It does not fall through to CUDA_HOME.
    assert!(!msg.contains(&t.cuda_home.display().to_string()), "{msg}");
}

#[test]
fn nothing_found_lists_every_place_and_how_to_install() {
    let root = TempDir::new().unwrap();
    let empty_bin = root.path().join("bin");
    fs::create_dir_all(&empty_bin).unwrap();
    let env = SearchEnv {
        cuda_home: None,
        path: Some(empty_bin.clone().into()),
        current_dir: Some(root.path().to_path_buf()),
        current_exe: Some(root.path().join("x/cdpc")),
        standard_dirs: vec![root.path().join("usr/local/cuda")],
        ..SearchEnv::default()
    };
    let err = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("the NVIDIA tools (ptxas, nvlink and libcudadevrt.a"), "{msg}");
    for needle in [
        "from the current directory",
        "from the cdpc executable's folder",
        "PATH: no folder on PATH holds ptxas",
        "NVIDIA pip wheels: no site folder to look in (no python3 on PATH)",
        "standard folder: `",
        "usr/local/cuda` (does not exist)",
        "cargo xtask setup",
        "pip install nvidia-cuda-nvcc==13.5.37 nvidia-cuda-runtime==13.5.37",
        "CUDA_HOME",
    ] {
        assert!(msg.contains(needle), "missing {needle:?} in:\n{msg}");
    }
}

#[test]
fn ptxas_on_path_without_library_says_what_is_missing() {
    let root = TempDir::new().unwrap();
    let bin = root.path().join("opt/bin");
    write_script(&bin.join("ptxas"), "exit 0");
    write_script(&bin.join("nvlink"), "exit 0");
    let env = SearchEnv { path: Some(bin.clone().into()), ..SearchEnv::default() };
    let msg = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap_err().to_string();
    assert!(msg.starts_with("libcudadevrt.a (the CUDA device runtime"), "{msg}");
    assert!(msg.contains(&format!("PATH: `{}` (no libcudadevrt.a)", bin.display())), "{msg}");
}

/// A virtual environment at `dir` (`bin/python3`, `pyvenv.cfg`, `lib/python3.11/site-packages`)
/// whose site folder holds the NVIDIA wheels' tools when `with_tools`; returns that
/// `nvidia/cu13` folder.
fn fake_venv(dir: &Path, cfg: &str, with_tools: bool) -> PathBuf {
    write_script(&dir.join("bin/python3"), "exit 1");
    fs::write(dir.join("pyvenv.cfg"), cfg).unwrap();
    let site = dir.join("lib/python3.11/site-packages");
    fs::create_dir_all(&site).unwrap();
    let cu13 = site.join("nvidia/cu13");
    if with_tools {
        fake_prefix(&cu13, "lib");
    }
    cu13
}

/// A Python installed under `prefix` as `bin/python3.12` with the link `bin/python3`.
#[cfg(unix)]
fn fake_python(prefix: &Path) -> PathBuf {
    write_script(&prefix.join("bin/python3.12"), "exit 1");
    std::os::unix::fs::symlink("python3.12", prefix.join("bin/python3")).unwrap();
    prefix.join("bin")
}

#[test]
fn every_rule_in_order_cuda_path_pip_wheels_and_the_standard_folder() {
    let t = trees();
    let r = t.flag.parent().unwrap().to_path_buf();
    let cuda_path = fake_prefix(&r.join("cuda-path"), "lib64");
    let venv = r.join("venv");
    let wheels = fake_venv(&venv, "home = /nonexistent\ninclude-system-site-packages = false\n", true);
    let standard = fake_prefix(&r.join("usr-local-cuda"), "lib64");
    let mut env = SearchEnv {
        cuda_path: Some(cuda_path.clone().into()),
        path: Some(std::env::join_paths([venv.join("bin"), t.path_bin.clone()]).unwrap()),
        standard_dirs: vec![standard.clone()],
        ..env_for(&t)
    };
    let search = ToolSearch::default();
    let found = |env: &SearchEnv| Toolchain::discover_with(&search, env).unwrap().source;

    assert_eq!(found(&env), ToolSource::CudaHome(t.cuda_home.clone()));
    env.cuda_home = Some(OsString::new());
    assert_eq!(found(&env), ToolSource::CudaPath(cuda_path.clone()));
    env.cuda_path = None;
    assert_eq!(found(&env), ToolSource::ProjectLocal(t.project.join(".cuda/nvidia/cu13")));
    env.current_dir = Some(t.elsewhere.clone());
    let tc = Toolchain::discover_with(&search, &env).unwrap();
    assert_eq!(tc.source, ToolSource::PipWheels(wheels.clone()));
    assert_eq!(tc.ptxas, wheels.join("bin/ptxas"));
    assert_eq!(tc.cudadevrt_dir, wheels.join("lib"));
    assert_eq!(tc.root(), wheels);
    fs::remove_dir_all(wheels.parent().unwrap()).unwrap();
    assert_eq!(found(&env), ToolSource::Path(t.path_bin.clone()));
    env.path = Some(venv.join("bin").into());
    let tc = Toolchain::discover_with(&search, &env).unwrap();
    assert_eq!(tc.source, ToolSource::Standard(standard.clone()));
    assert_eq!(tc.cudadevrt_dir, standard.join("lib64"));
}

#[test]
fn an_incomplete_cuda_path_stops_the_search() {
    let t = trees();
    let root = TempDir::new().unwrap();
    let cuda_path = root.path().join("cuda");
    write_script(&cuda_path.join("bin/ptxas"), "exit 0");
    let env = SearchEnv { cuda_home: None, cuda_path: Some(cuda_path.clone().into()), ..env_for(&t) };
    let err = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("nvlink and libcudadevrt.a (beside a ptxas that was found)"), "{msg}");
    assert!(msg.contains(&format!("CUDA_PATH (toolkit layout): `{}` (no nvlink, no libcudadevrt.a)", cuda_path.display())), "{msg}");
    // The project's .cuda/ and PATH, complete, are not used and not named.
    assert!(!msg.contains(".cuda/nvidia/cu13"), "{msg}");
    assert!(!msg.contains("PATH:"), "{msg}");
}

#[cfg(unix)]
#[test]
fn pip_wheels_of_the_user_site_come_before_the_system_site_of_the_same_version() {
    let root = TempDir::new().unwrap();
    let r = root.path();
    let prefix = r.join("usr");
    let bin = fake_python(&prefix);
    let system = fake_prefix(&prefix.join("lib/python3.12/site-packages/nvidia/cu13"), "lib");
    let user = fake_prefix(&r.join("home/.local/lib/python3.12/site-packages/nvidia/cu13"), "lib");
    // Another Python version's user site is not this python3's.
    let other = fake_prefix(&r.join("base/lib/python3.11/site-packages/nvidia/cu13"), "lib");
    let mut env = SearchEnv { path: Some(bin.clone().into()), home: Some(r.join("home")), ..SearchEnv::default() };
    let found = |env: &SearchEnv| Toolchain::discover_with(&ToolSearch::default(), env).unwrap().source;

    assert_eq!(found(&env), ToolSource::PipWheels(user.clone()));
    // PYTHONUSERBASE moves the user's folder.
    env.python_user_base = Some(r.join("base").into());
    assert_eq!(found(&env), ToolSource::PipWheels(system.clone()));
    fs::remove_file(system.join("lib/libcudadevrt.a")).unwrap();
    let err = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap_err().to_string();
    assert!(err.starts_with("libcudadevrt.a (the CUDA device runtime"), "{err}");
    assert!(err.contains(&format!("NVIDIA pip wheels: `{}` (no libcudadevrt.a)", system.display())), "{err}");
    assert!(!err.contains(&other.display().to_string()), "{err}");

    let sites = super::pip_wheels::python_sites(&env);
    assert_eq!(sites.python, Some(bin.join("python3")));
    assert_eq!(sites.sites, vec![prefix.join("lib/python3.12/site-packages")]);
}

#[cfg(unix)]
#[test]
fn a_virtual_environment_sees_the_system_site_only_when_its_cfg_says_so() {
    let root = TempDir::new().unwrap();
    let r = root.path();
    let base_bin = fake_python(&r.join("base"));
    let system = fake_prefix(&r.join("base/lib/python3.12/site-packages/nvidia/cu13"), "lib");
    let venv = r.join("venv");
    let cfg = |system: bool| format!("home = {}\ninclude-system-site-packages = {system}\nversion = 3.12.1\n", base_bin.display());
    fake_venv(&venv, &cfg(false), false);
    let env = SearchEnv { path: Some(venv.join("bin").into()), home: Some(r.join("home")), ..SearchEnv::default() };

    let err = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap_err().to_string();
    assert!(err.contains(&format!("NVIDIA pip wheels: no nvidia/cu13/bin/ptxas in `{}` (the site folders of the virtual environment", venv.join("lib/python3.11/site-packages").display())), "{err}");
    assert!(err.contains(&format!("the virtual environment `{}`", venv.display())), "{err}");
    assert!(!err.contains(&system.display().to_string()), "{err}");

    fs::write(venv.join("pyvenv.cfg"), cfg(true)).unwrap();
    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    assert_eq!(tc.source, ToolSource::PipWheels(system));
}

#[test]
fn a_python3_launcher_whose_folders_files_do_not_tell_is_not_run_unless_allowed() {
    let root = TempDir::new().unwrap();
    let shims = root.path().join("shims");
    // Were it run, it would name a site folder with the tools.
    let site = root.path().join("site");
    fake_prefix(&site.join("nvidia/cu13"), "lib");
    write_script(&shims.join("python3"), &format!("echo {}", site.display()));
    let mut env = SearchEnv { path: Some(shims.clone().into()), ..SearchEnv::default() };
    let err = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap_err().to_string();
    assert!(err.contains("whose files do not tell them (a launcher, not run)"), "{err}");
    env.ask_python = true;
    let tc = Toolchain::discover_with(&ToolSearch::default(), &env).unwrap();
    assert_eq!(tc.source, ToolSource::PipWheels(site.join("nvidia/cu13")));
}

/// pyenv's layout under `root`: the shim `shims/python3` as pyenv writes it (were it run, it
/// would fail: no pyenv is installed), and each version of `versions` installed as
/// [`fake_python`] makes one, with the tools in its site folder; the global version file names
/// `global`.
#[cfg(unix)]
fn fake_pyenv(root: &Path, versions: &[&str], global: &str) -> PathBuf {
    let shim = format!("set -e\nprogram=\"${{0##*/}}\"\nexport PYENV_ROOT=\"{}\"\nexec \"{}/libexec/pyenv\" exec \"$program\" \"$@\"", root.display(), root.display());
    write_script(&root.join("shims/python3"), &shim);
    for v in versions {
        let prefix = root.join("versions").join(v);
        fake_python(&prefix);
        fake_prefix(&prefix.join("lib/python3.12/site-packages/nvidia/cu13"), "lib");
    }
    fs::write(root.join("version"), format!("{global}\n")).unwrap();
    root.join("shims")
}

#[cfg(unix)]
#[test]
fn pyenvs_shim_is_followed_to_the_python_its_version_files_choose_without_running_it() {
    let dir = TempDir::new().unwrap();
    let r = dir.path();
    let shims = fake_pyenv(&r.join("pyenv"), &["3.12.1", "3.12.7"], "3.12.1");
    let project = r.join("project/src");
    fs::create_dir_all(&project).unwrap();
    let env = SearchEnv { path: Some(shims.clone().into()), current_dir: Some(project.clone()), ..SearchEnv::default() };
    let wheels = |v: &str| r.join("pyenv/versions").join(v).join("lib/python3.12/site-packages/nvidia/cu13");
    let found = |env: &SearchEnv| Toolchain::discover_with(&ToolSearch::default(), env).map(|t| t.source).map_err(|e| e.to_string());

    // The global version file.
    assert_eq!(found(&env), Ok(ToolSource::PipWheels(wheels("3.12.1"))));
    let sites = super::pip_wheels::python_sites(&env);
    assert_eq!(sites.python, Some(shims.join("python3")), "the shim is the python3 named");
    assert!(sites.how.contains("pyenv's shim for version 3.12.1"), "{}", sites.how);
    // A `.python-version` above the current folder: comments, blank lines and paths skipped.
    fs::write(r.join("project/.python-version"), "# pinned\n\n../x\n3.12.7 extra words\n").unwrap();
    assert_eq!(found(&env), Ok(ToolSource::PipWheels(wheels("3.12.7"))));
    // PYENV_VERSION before the files; of several, the first with a python3.
    fs::create_dir_all(r.join("pyenv/versions/pypy3.10/bin")).unwrap();
    let with = |v: &str| SearchEnv { pyenv_version: Some(v.into()), ..env.clone() };
    assert_eq!(found(&with("3.12.1")), Ok(ToolSource::PipWheels(wheels("3.12.1"))));
    assert_eq!(found(&with("pypy3.10:3.12.7")), Ok(ToolSource::PipWheels(wheels("3.12.7"))));
    // PYENV_DIR's file before the current folder's.
    fs::create_dir_all(r.join("other")).unwrap();
    fs::write(r.join("other/.python-version"), "3.12.1\n").unwrap();
    assert_eq!(found(&SearchEnv { pyenv_dir: Some(r.join("other").into()), ..env.clone() }), Ok(ToolSource::PipWheels(wheels("3.12.1"))));
    // What the files do not settle is left to the shim, which the tests do not run.
    for unsettled in ["system", "3.12", "3.13.0"] {
        let err = found(&with(unsettled)).unwrap_err();
        assert!(err.contains("whose files do not tell them (a launcher, not run)"), "{unsettled}: {err}");
    }
    // Not pyenv's: a `shims` folder whose script names another root.
    write_script(&shims.join("python3"), "export PYENV_ROOT=\"/elsewhere\"\nexit 1");
    assert!(found(&env).unwrap_err().contains("a launcher, not run"));
}

/// The oracle is pyenv itself: on a machine whose `python3` is pyenv's shim, for every version
/// installed, the site folders read from pyenv's files are the ones that version's Python
/// names when the shim runs it (those that exist).
#[cfg(unix)]
#[test]
fn pyenvs_shim_read_from_files_names_the_folders_its_python_names() {
    let env = SearchEnv { ask_python: false, ..SearchEnv::from_process() };
    let shim = super::pip_wheels::python_sites(&env);
    if !shim.how.contains("pyenv's shim") {
        eprintln!("skipped: the python3 on PATH is not pyenv's shim ({})", shim.how);
        return;
    }
    let root = shim.python.as_deref().and_then(Path::parent).and_then(Path::parent).expect("ROOT/shims/python3").to_path_buf();
    let mut versions: Vec<String> = fs::read_dir(root.join("versions")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    versions.sort();
    let mut compared = 0;
    for v in versions.iter().filter(|v| root.join("versions").join(v.as_str()).join("bin/python3").exists()) {
        let ours = super::pip_wheels::python_sites(&SearchEnv { pyenv_version: Some(v.into()), ..env.clone() });
        assert!(ours.how.contains(&format!("pyenv's shim for version {v}")), "{v}: {}", ours.how);
        let out = std::process::Command::new(shim.python.as_ref().unwrap()).args(["-c", super::pip_wheels::ASK_SCRIPT]).env("PYENV_VERSION", v).output().unwrap();
        assert!(out.status.success(), "{v}: {}", String::from_utf8_lossy(&out.stderr));
        let theirs: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).filter(|p| p.is_dir()).collect();
        assert_eq!(ours.sites, theirs, "pyenv's {v}");
        compared += 1;
    }
    assert!(compared > 0, "no version of pyenv's with a python3 under {}", root.display());
    eprintln!("pyenv's {compared} versions: the same site folders as each Python names");
}

// ---------------------------------------------------------------------------------------------
// Fake tools

/// Writes the file named after `-o` (its content: `tag` and the arguments).
const WRITE_OUTPUT: &str = r#"out=""; prev=""
for a in "$@"; do if [ "$prev" = "-o" ]; then out="$a"; fi; prev="$a"; done
printf '%s %s\n' "$TAG" "$*" > "$out""#;

struct Fake {
    dir: TempDir,
    tc: Toolchain,
    opts: BuildOptions,
}

impl Fake {
    fn out_dir(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    fn temp_root(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }
    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }
}

/// Completes the fake toolkit under `dir/cuda` (whose bin/ is in place): libcudadevrt, the
/// output and temporary folders, and the toolchain found there.
fn fake_toolkit(dir: TempDir) -> Fake {
    let prefix = dir.path().join("cuda");
    fs::create_dir_all(prefix.join("lib64")).unwrap();
    fs::write(prefix.join("lib64/libcudadevrt.a"), b"!<arch>\n").unwrap();
    fs::create_dir_all(dir.path().join("out")).unwrap();
    fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let s = ToolSearch { cuda_home: Some(prefix), project_dir: None };
    let tc = Toolchain::discover_with(&s, &SearchEnv::default()).unwrap();
    let mut opts = BuildOptions::new(SmVersion(90));
    opts.temp_root = Some(dir.path().join("tmp"));
    Fake { dir, tc, opts }
}

fn fake(ptxas_body: &str, nvlink_body: &str) -> Fake {
    let dir = TempDir::new().unwrap();
    let prefix = dir.path().join("cuda");
    write_script(&prefix.join("bin/ptxas"), &format!("TAG=OBJ\n{ptxas_body}"));
    write_script(&prefix.join("bin/nvlink"), &format!("TAG=CUBIN\n{nvlink_body}"));
    fake_toolkit(dir)
}

#[test]
fn fake_tools_success_writes_the_output_and_cleans_up() {
    let f = fake(WRITE_OUTPUT, WRITE_OUTPUT);
    let out = f.out_dir().join("k.cubin");
    f.tc.build_cubin(".version 8.0", &f.opts, &out).unwrap();
    let text = fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("CUBIN -arch=sm_90 "), "{text}");
    assert!(text.contains("/module.o -L"), "{text}");
    assert!(text.contains("/lib64 -lcudadevrt -o "), "{text}");
    assert_eq!(Fake::entries(&f.out_dir()), vec!["k.cubin"]);
    assert!(Fake::entries(&f.temp_root()).is_empty());

    let obj = f.out_dir().join("k.o");
    f.tc.build_object(".version 8.0", &f.opts, &obj).unwrap();
    let text = fs::read_to_string(&obj).unwrap();
    assert!(text.starts_with("OBJ -arch=sm_90 -c -o "), "{text}");
    assert!(Fake::entries(&f.temp_root()).is_empty());

    f.opts.log.take();
    let bytes = f.tc.assemble(".version 8.0", &f.opts).unwrap();
    let runs = f.opts.log.take();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].command.starts_with(&f.tc.ptxas.display().to_string()), "{runs:?}");
    assert!(bytes.starts_with(b"OBJ "));
    assert!(Fake::entries(&f.temp_root()).is_empty());

    // link() of a ready object.
    let linked = f.out_dir().join("linked.cubin");
    f.tc.link(&[obj.as_path()], &f.opts, &linked).unwrap();
    assert!(fs::read_to_string(&linked).unwrap().contains(&format!("-arch=sm_90 {} -L", obj.display())));
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn ptxas_failure_reports_command_status_and_stderr() {
    let f = fake("echo 'ptxas fatal   : Unresolved extern function child' >&2\necho some stdout\nexit 255", WRITE_OUTPUT);
    let out = f.out_dir().join("k.cubin");
    let err = f.tc.build_cubin("bad", &f.opts, &out).unwrap_err();
    match &err {
        ToolError::Failed { tool, command, status, stderr, stdout } => {
            assert_eq!(tool, "ptxas");
            assert!(command.starts_with(&f.tc.ptxas.display().to_string()), "{command}");
            assert!(command.contains(" -arch=sm_90 -c -o "), "{command}");
            assert_eq!(*status, ExitKind::Code(255));
            assert!(stderr.contains("Unresolved extern function child"), "{stderr}");
            assert!(stdout.contains("some stdout"), "{stdout}");
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with("ptxas failed (exit status 255)\n  command: "), "{msg}");
    assert!(msg.contains("\n  stderr:\n    ptxas fatal   : Unresolved"), "{msg}");
    assert!(!out.exists());
    assert!(Fake::entries(&f.out_dir()).is_empty(), "{:?}", Fake::entries(&f.out_dir()));
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn tool_killed_by_a_signal() {
    let f = fake("kill -9 $$", WRITE_OUTPUT);
    let out = f.out_dir().join("k.cubin");
    let err = f.tc.build_cubin("x", &f.opts, &out).unwrap_err();
    assert!(matches!(err, ToolError::Failed { status: ExitKind::Signal(9), .. }), "{err:?}");
    assert!(err.to_string().starts_with("ptxas failed (killed by signal 9 (SIGKILL))"), "{err}");
    assert!(Fake::entries(&f.out_dir()).is_empty());
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn nvlink_failure_keeps_the_previous_output_untouched() {
    // nvlink writes a partial file and then fails.
    let f = fake(WRITE_OUTPUT, &format!("{WRITE_OUTPUT}\necho 'nvlink error   : Undefined reference to cudaLaunchDevice' >&2\nexit 1"));
    let out = f.out_dir().join("k.cubin");
    fs::write(&out, b"previous build").unwrap();
    let err = f.tc.build_cubin("x", &f.opts, &out).unwrap_err();
    assert!(matches!(&err, ToolError::Failed { tool, status: ExitKind::Code(1), .. } if tool == "nvlink"), "{err:?}");
    assert!(err.to_string().contains("-lcudadevrt"), "{err}");
    assert!(err.to_string().contains("Undefined reference to cudaLaunchDevice"), "{err}");
    assert_eq!(fs::read(&out).unwrap(), b"previous build");
    assert_eq!(Fake::entries(&f.out_dir()), vec!["k.cubin"]);
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn huge_stderr_is_truncated_to_the_tail() {
    let f = fake("i=0; while [ $i -lt 2000 ]; do printf '%0100d\\n' $i >&2; i=$((i+1)); done; echo LAST LINE >&2; exit 3", WRITE_OUTPUT);
    let err = f.tc.assemble("x", &f.opts).unwrap_err();
    match err {
        ToolError::Failed { stderr, .. } => {
            assert!(stderr.len() < CAPTURE_LIMIT + 100, "{}", stderr.len());
            assert!(stderr.starts_with("[... "), "{}", &stderr[..40]);
            assert!(stderr.trim_end().ends_with("LAST LINE"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn output_path_that_is_a_directory_is_refused_before_running_anything() {
    let f = fake(&format!("touch {}/ran\n{WRITE_OUTPUT}", "$(dirname $0)"), WRITE_OUTPUT);
    let out = f.out_dir().join("dir.cubin");
    fs::create_dir_all(&out).unwrap();
    let err = f.tc.build_cubin("x", &f.opts, &out).unwrap_err();
    assert!(matches!(err, ToolError::OutputPathInvalid { .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("cannot write the output `{}`: it is a directory", out.display()));
    assert!(!f.tc.ptxas.parent().unwrap().join("ran").exists());

    let missing = f.out_dir().join("no/such/k.cubin");
    let err = f.tc.build_object("x", &f.opts, &missing).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn tool_that_cannot_start() {
    let mut f = fake(WRITE_OUTPUT, WRITE_OUTPUT);
    f.tc.ptxas = f.dir.path().join("gone/ptxas");
    let err = f.tc.build_cubin("x", &f.opts, &f.out_dir().join("k.cubin")).unwrap_err();
    assert!(matches!(err, ToolError::Spawn { .. }), "{err:?}");
    assert!(err.to_string().starts_with("ptxas could not be started: "), "{err}");
    assert!(Fake::entries(&f.out_dir()).is_empty());
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// The fake tool binary (testdata/fake_tool.rs): the faults the scripts above do not cover

/// testdata/fake_tool.rs compiled with rustc, once per test process, cached by content beside
/// the test binary (a build output, like the binary itself: not in the temporary folder, which
/// the test run empties).
fn fake_tool_binary() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        let source = include_str!("testdata/fake_tool.rs");
        let hash = source.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let build_dir = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)).unwrap_or_else(std::env::temp_dir);
        let dir = build_dir.join(format!("cdpc-fake-tool-{hash:016x}"));
        let binary = dir.join("fake-tool");
        if binary.exists() {
            return binary;
        }
        fs::create_dir_all(&dir).unwrap();
        let work = tempfile::tempdir_in(&dir).unwrap();
        let src = work.path().join("fake_tool.rs");
        fs::write(&src, source).unwrap();
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let out = std::process::Command::new(rustc).args(["--edition", "2021", "-C", "opt-level=1", "-o"]).arg(work.path().join("fake-tool")).arg(&src).output().expect("rustc runs");
        assert!(out.status.success(), "compiling the fake tool: {}", String::from_utf8_lossy(&out.stderr));
        // Rename into place: concurrent test processes may race here, and either copy is fine.
        let _ = fs::rename(work.path().join("fake-tool"), &binary);
        binary
    })
}

/// A toolkit folder whose ptxas and nvlink are copies of the fake tool, doing `ptxas_mode` and
/// `nvlink_mode` (see testdata/fake_tool.rs).
fn fake_bin(ptxas_mode: &str, nvlink_mode: &str) -> Fake {
    let dir = TempDir::new().unwrap();
    let prefix = dir.path().join("cuda");
    fs::create_dir_all(prefix.join("bin")).unwrap();
    for (tool, mode) in [("ptxas", ptxas_mode), ("nvlink", nvlink_mode)] {
        fs::copy(fake_tool_binary(), prefix.join("bin").join(tool)).unwrap();
        fs::write(prefix.join("bin").join(format!("{tool}.mode")), mode).unwrap();
    }
    fake_toolkit(dir)
}

impl Fake {
    /// Builds a cubin and an object, expecting both to fail, and checks what every failure must
    /// leave: no output file (nor a temporary one) and an empty temporary root.
    fn both_fail(&self) -> (ToolError, ToolError) {
        let cubin = self.out_dir().join("k.cubin");
        let e1 = self.tc.build_cubin(".version 8.0", &self.opts, &cubin).unwrap_err();
        assert!(Fake::entries(&self.out_dir()).is_empty(), "{:?}", Fake::entries(&self.out_dir()));
        assert!(Fake::entries(&self.temp_root()).is_empty(), "work folder left behind");
        let obj = self.out_dir().join("k.o");
        let e2 = self.tc.build_object(".version 8.0", &self.opts, &obj).unwrap_err();
        assert!(Fake::entries(&self.out_dir()).is_empty(), "{:?}", Fake::entries(&self.out_dir()));
        assert!(Fake::entries(&self.temp_root()).is_empty(), "work folder left behind");
        (e1, e2)
    }
}

/// One clear error: it names the tool and, where one ran, the whole command line.
fn assert_names_tool(err: &ToolError, tool: &str, program: &Path) {
    let msg = err.to_string();
    assert!(msg.starts_with(tool), "{msg}");
    assert!(msg.contains(&format!("command: {}", program.display())), "{msg}");
}

#[test]
fn binary_fake_tools_succeed() {
    let f = fake_bin("write", "stderr 100\nwrite");
    let out = f.out_dir().join("k.cubin");
    f.tc.build_cubin(".version 8.0", &f.opts, &out).unwrap();
    assert!(fs::read_to_string(&out).unwrap().starts_with("FAKE nvlink -arch=sm_90 "));
    let runs = f.opts.log.take();
    assert_eq!(runs.len(), 2);
    assert!(runs[1].stderr.ends_with("LAST LINE\n"), "nvlink's warnings are returned, not printed");
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn binary_fake_tool_exits_non_zero() {
    let f = fake_bin("stderr 50\nexit 2", "write");
    let (e1, _) = f.both_fail();
    assert!(matches!(e1, ToolError::Failed { status: ExitKind::Code(2), .. }), "{e1:?}");
    assert_names_tool(&e1, "ptxas failed (exit status 2)", &f.tc.ptxas);

    let f = fake_bin("write", "write\nexit 1");
    let cubin = f.out_dir().join("k.cubin");
    let err = f.tc.build_cubin("x", &f.opts, &cubin).unwrap_err();
    assert_names_tool(&err, "nvlink failed (exit status 1)", &f.tc.nvlink);
    assert!(err.to_string().contains("-lcudadevrt"), "{err}");
    assert!(!cubin.exists(), "nvlink's partial output must not appear");
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn binary_fake_tool_killed_by_a_signal() {
    let f = fake_bin("abort", "write");
    let (e1, e2) = f.both_fail();
    for e in [&e1, &e2] {
        assert!(matches!(e, ToolError::Failed { status: ExitKind::Signal(6), .. }), "{e:?}");
        assert_names_tool(e, "ptxas failed (killed by signal 6 (SIGABRT))", &f.tc.ptxas);
    }
    let f = fake_bin("write", "write\nabort");
    let (e1, _) = f.both_fail_cubin_only();
    assert_names_tool(&e1, "nvlink failed (killed by signal 6 (SIGABRT))", &f.tc.nvlink);
}

impl Fake {
    fn both_fail_cubin_only(&self) -> (ToolError, ()) {
        let cubin = self.out_dir().join("k.cubin");
        let e = self.tc.build_cubin("x", &self.opts, &cubin).unwrap_err();
        assert!(Fake::entries(&self.out_dir()).is_empty());
        assert!(Fake::entries(&self.temp_root()).is_empty());
        (e, ())
    }
}

#[test]
fn binary_fake_tool_prints_megabytes_to_stderr_and_stdout() {
    // 8 MB on each stream: both are drained (no deadlock) and only the last 64 KiB is kept.
    let f = fake_bin("stdout 8000000\nstderr 8000000\nexit 1", "write");
    let (e1, _) = f.both_fail();
    match &e1 {
        ToolError::Failed { stderr, stdout, .. } => {
            assert!(stderr.len() < CAPTURE_LIMIT + 100 && stdout.len() < CAPTURE_LIMIT + 100);
            assert!(stderr.starts_with("[... ") && stderr.trim_end().ends_with("LAST LINE"), "{}", &stderr[..60]);
        }
        other => panic!("{other:?}"),
    }
    assert_names_tool(&e1, "ptxas failed (exit status 1)", &f.tc.ptxas);
    assert!(e1.to_string().len() < 3 * CAPTURE_LIMIT, "the message stays bounded");
}

#[test]
fn binary_fake_tool_missing_or_not_executable() {
    // nvlink deleted after discovery.
    let f = fake_bin("write", "write");
    fs::remove_file(&f.tc.nvlink).unwrap();
    let (e1, _) = f.both_fail_cubin_only();
    assert!(matches!(e1, ToolError::Spawn { .. }), "{e1:?}");
    assert_names_tool(&e1, "nvlink could not be started: ", &f.tc.nvlink);

    // ptxas without execute permission (refused even to root).
    let f = fake_bin("write", "write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&f.tc.ptxas, fs::Permissions::from_mode(0o644)).unwrap();
    }
    let (e1, e2) = f.both_fail();
    for e in [&e1, &e2] {
        assert!(matches!(e, ToolError::Spawn { .. }), "{e:?}");
        assert_names_tool(e, "ptxas could not be started: ", &f.tc.ptxas);
        assert!(e.to_string().contains("ermission denied"), "{e}");
    }

    // Not a program at all.
    let f = fake_bin("write", "write");
    fs::write(&f.tc.ptxas, b"\x00\x01 not an executable").unwrap();
    let (e1, _) = f.both_fail();
    assert_names_tool(&e1, "ptxas could not be started: ", &f.tc.ptxas);
}

#[test]
fn unwritable_output_locations() {
    let f = fake_bin("write", "write");
    let run = |out: &Path| {
        let err = f.tc.build_cubin("x", &f.opts, out).unwrap_err();
        assert!(Fake::entries(&f.temp_root()).is_empty());
        err
    };
    // The output is a directory.
    let dir_out = f.out_dir().join("k.cubin");
    fs::create_dir(&dir_out).unwrap();
    assert!(run(&dir_out).to_string().ends_with("it is a directory"));
    fs::remove_dir(&dir_out).unwrap();
    // A path under a regular file: unwritable even for root.
    let file = f.out_dir().join("plain");
    fs::write(&file, b"").unwrap();
    let err = run(&file.join("k.cubin"));
    assert!(matches!(err, ToolError::OutputPathInvalid { .. }), "{err:?}");
    assert!(err.to_string().contains("is not a folder"), "{err}");
    // A folder without write permission; root ignores the mode, so this runs only when the
    // mode is honoured.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = f.out_dir().join("locked");
        fs::create_dir(&locked).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
        if fs::write(locked.join("probe"), b"").is_ok() {
            eprintln!("running as root: chmod does not deny writes; the path-under-a-file case covers it");
        } else {
            let err = run(&locked.join("k.cubin"));
            assert!(err.to_string().contains("permission denied"), "{err}");
            assert!(Fake::entries(&locked).is_empty());
        }
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    }
    #[cfg(unix)]
    assert_eq!(Fake::entries(&f.out_dir()), ["locked", "plain"]);
}

#[test]
fn unwritable_temporary_root_is_one_clear_error() {
    let mut f = fake_bin("write", "write");
    let file = f.dir.path().join("not-a-folder");
    fs::write(&file, b"").unwrap();
    f.opts.temp_root = Some(file.clone());
    let out = f.out_dir().join("k.cubin");
    let err = f.tc.build_cubin("x", &f.opts, &out).unwrap_err();
    assert!(err.to_string().contains("creating a temporary work folder in"), "{err}");
    assert!(Fake::entries(&f.out_dir()).is_empty());
}

#[test]
fn a_hung_tool_is_killed_at_the_time_limit() {
    for (ptxas, nvlink, tool) in [("sleep 60", "write", "ptxas"), ("write", "stderr 10\nsleep 60", "nvlink")] {
        let mut f = fake_bin(ptxas, nvlink);
        f.opts.tool_timeout = Some(std::time::Duration::from_millis(300));
        let started = std::time::Instant::now();
        let (err, _) = f.both_fail_cubin_only();
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
        let program = if tool == "ptxas" { &f.tc.ptxas } else { &f.tc.nvlink };
        match &err {
            ToolError::TimedOut { tool: t, command, limit, .. } => {
                assert_eq!(t, tool);
                assert!(command.starts_with(&program.display().to_string()), "{command}");
                assert_eq!(*limit, std::time::Duration::from_millis(300));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(err.code().map(|c| c.as_str()), Some("E0702"));
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("{tool} did not finish within 0.3 s and was killed\n  command: {}", program.display())), "{msg}");
        assert!(msg.contains("--tool-timeout"), "{msg}");
        if tool == "nvlink" {
            assert!(msg.contains("stderr so far:") && msg.contains("LAST LINE"), "what it printed is kept: {msg}");
        }
    }
}

#[test]
fn a_hung_script_whose_child_holds_the_pipes_does_not_hang_the_build() {
    // sh waits for `sleep`, which inherits stdout and stderr: killing sh leaves the pipes open.
    let mut f = fake("sleep 5\nexit 0", WRITE_OUTPUT);
    f.opts.tool_timeout = Some(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    let err = f.tc.build_cubin("x", &f.opts, &f.out_dir().join("k.cubin")).unwrap_err();
    assert!(matches!(err, ToolError::TimedOut { .. }), "{err:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "waited for the grandchild: {:?}", started.elapsed());
    assert!(Fake::entries(&f.out_dir()).is_empty());
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn no_time_limit_waits_and_a_quick_tool_is_not_slowed() {
    let mut f = fake_bin("write", "write");
    f.opts.tool_timeout = None;
    f.tc.build_cubin(".version 8.0", &f.opts, &f.out_dir().join("k.cubin")).unwrap();
    f.opts.tool_timeout = Some(std::time::Duration::from_secs(60));
    f.tc.build_cubin(".version 8.0", &f.opts, &f.out_dir().join("k.cubin")).unwrap();
    assert_eq!(BuildOptions::default().tool_timeout, Some(DEFAULT_TOOL_TIMEOUT));
}

#[test]
fn work_folders_are_named_after_cdpc_and_the_process() {
    // ptxas records the folder it was given its input in.
    let f = fake(&format!("for a; do last=\"$a\"; done; basename \"$(dirname \"$last\")\" > \"$(dirname $0)/seen\"\n{WRITE_OUTPUT}"), WRITE_OUTPUT);
    f.tc.build_cubin("x", &f.opts, &f.out_dir().join("k.cubin")).unwrap();
    let seen = fs::read_to_string(f.tc.ptxas.parent().unwrap().join("seen")).unwrap();
    assert!(seen.starts_with(&format!("cdpc-work-{}-", std::process::id())), "{seen}");
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn guarded_output_refuses_the_input_and_foreign_files_before_running_anything() {
    let f = fake(&format!("touch {}/ran\n{WRITE_OUTPUT}", "$(dirname $0)"), WRITE_OUTPUT);
    let source = f.out_dir().join("app.cdp");
    fs::write(&source, "source text").unwrap();
    let guard = OutputGuard { inputs: vec![source.clone()], overwrite: Overwrite::CompilerOutputs };
    let err = OutputFile::prepare_guarded(&source, guard.clone()).err().unwrap();
    assert!(matches!(err, ToolError::OutputIsInput { .. }), "{err:?}");
    // A file that appears between the start and the end of a build is checked again.
    let out = f.out_dir().join("k.cubin");
    let file = OutputFile::prepare_guarded(&out, guard).unwrap();
    fs::write(&out, "the user's notes").unwrap();
    let err = file.commit(b"\x7fELF new").unwrap_err();
    assert!(matches!(err, ToolError::WouldOverwrite { .. }), "{err:?}");
    assert_eq!(fs::read_to_string(&out).unwrap(), "the user's notes");
    assert_eq!(fs::read_to_string(&source).unwrap(), "source text");
    assert_eq!(Fake::entries(&f.out_dir()), ["app.cdp", "k.cubin"], "no temporary output is left");
    assert!(!f.tc.ptxas.parent().unwrap().join("ran").exists());
}

// ---------------------------------------------------------------------------------------------
// The real tools, when present

const LAUNCH_V1_PTX: &str = include_str!("testdata/launch_v1.ptx");

/// The real tools, found as `cdpc` finds them (`CUDA_HOME`, the checkout's `.cuda/`, `PATH`).
fn real_toolchain() -> Option<Toolchain> {
    Toolchain::discover(&ToolSearch::default()).ok()
}

#[test]
fn real_ptxas_and_nvlink_build_a_cubin_with_a_device_side_launch() {
    let Some(tc) = real_toolchain() else {
        eprintln!("SKIPPED: no ptxas/nvlink/libcudadevrt.a found (run `cargo xtask setup`)");
        return;
    };
    eprintln!("using {tc:?}");
    let dir = TempDir::new().unwrap();
    let mut opts = BuildOptions::new(SmVersion(90));
    opts.temp_root = Some(dir.path().to_path_buf());
    opts.opt_level = Some(3);
    let out = dir.path().join("launch.cubin");
    tc.build_cubin(LAUNCH_V1_PTX, &opts, &out).unwrap_or_else(|e| panic!("{e}"));
    let runs = opts.log.take();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let cubin = fs::read(&out).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    let has = |needle: &[u8]| cubin.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"parent") && has(b"inc"));

    let obj = dir.path().join("launch.o");
    tc.build_object(LAUNCH_V1_PTX, &opts, &obj).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&fs::read(&obj).unwrap()[..4], b"\x7fELF");
    assert_eq!(Fake::entries(dir.path()), vec!["launch.cubin", "launch.o"]);

    // A real ptxas error comes back with ptxas's own message.
    let err = tc.build_cubin(".version 8.0\n.target sm_90\n.address_size 64\nnonsense;\n", &opts, &out).unwrap_err();
    assert!(matches!(&err, ToolError::Failed { tool, .. } if tool == "ptxas"), "{err}");
    assert!(err.to_string().contains("syntax error"), "{err}");
    assert_eq!(&fs::read(&out).unwrap()[..4], b"\x7fELF", "the earlier cubin is kept");

    // Without libcudadevrt the launch does not resolve: nvlink reports it.
    let mut no_devrt = opts.clone();
    no_devrt.temp_root = Some(dir.path().to_path_buf());
    let bare = Toolchain { cudadevrt_dir: dir.path().join("empty"), ..tc.clone() };
    fs::create_dir_all(dir.path().join("empty")).unwrap();
    let err = bare.build_cubin(LAUNCH_V1_PTX, &no_devrt, &dir.path().join("x.cubin")).unwrap_err();
    assert!(matches!(&err, ToolError::Failed { tool, .. } if tool == "nvlink"), "{err}");
    eprintln!("{err}");
    assert!(!dir.path().join("x.cubin").exists());
}

/// A disk that fills up while the output is written: `E0704` naming the output (not the
/// temporary file), the previous output untouched, and no temporary file left beside it.
#[test]
fn a_full_disk_while_writing_the_output_leaves_the_old_file_and_no_temporary() {
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("k.cubin");
    fs::write(&out, b"previous build").unwrap();
    let file = OutputFile::prepare(&out).unwrap();
    let err = file
        .commit_with(|w| {
            w.write_all(b"half a cubin")?;
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
    assert!(matches!(&err, ToolError::OutputIo { path, .. } if path == &out), "{err:?}");
    assert_eq!(err.code(), Some(crate::Code::OutputNotWritable));
    let text = err.to_string();
    assert!(text.starts_with(&format!("cannot write the output `{}`: No space left on device", out.display())), "{text}");
    assert!(!text.contains("os error"), "{text}");
    assert_eq!(fs::read(&out).unwrap(), b"previous build");
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["k.cubin"], "the temporary output is removed");
}

// ---------------------------------------------------------------------------------------------
// Tools started before their input exists (early.rs)

/// A fake ptxas that copies its input to its output and a fake nvlink that copies its object:
/// a cubin equal to the PTX shows that each read its whole input. Each writes its pid to
/// `<tool>.pid` beside it as it starts, before it opens its input (`exec`: the pid stays the
/// one that reads).
fn copying_fake() -> Fake {
    let ptxas = r#"echo $$ > "$(dirname "$0")/ptxas.pid"
out=""; prev=""; for a in "$@"; do if [ "$prev" = "-o" ]; then out="$a"; fi; prev="$a"; last="$a"; done
exec cat "$last" > "$out""#;
    let nvlink = r#"echo $$ > "$(dirname "$0")/nvlink.pid"
out=""; prev=""; for a in "$@"; do if [ "$prev" = "-o" ]; then out="$a"; fi; prev="$a"; done
exec cat "$2" > "$out""#;
    fake(ptxas, nvlink)
}

/// Whether this system gives leases on files in `dir` (Linux, a local file system).
fn leases_work(dir: &Path) -> bool {
    let probe = dir.join("lease-probe");
    let works = early::LeasedInput::create(&probe).is_ok();
    let _ = fs::remove_file(&probe);
    if !works {
        eprintln!("SKIPPED: no file leases in {}; the tools run after their inputs", dir.display());
    }
    works
}

/// The pid a fake tool wrote as it started, waiting (at most 20 s) for it.
fn started_pid(tool: &Path) -> u32 {
    let file = tool.with_file_name(format!("{}.pid", tool.file_name().unwrap().to_string_lossy()));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(pid) = fs::read_to_string(&file).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        assert!(std::time::Instant::now() < until, "{} never started", tool.display());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn tools_started_before_their_input_read_all_of_it() {
    let f = copying_fake();
    if !leases_work(&f.temp_root()) {
        return;
    }
    // A megabyte, so that a read before the whole input is written would show.
    let ptx: String = (0..80_000).map(|i| format!("// line {i}\n")).collect();
    for link in [true, false] {
        let _ = fs::remove_file(f.tc.ptxas.with_file_name("ptxas.pid"));
        let started = f.tc.start_build(&f.opts, link).unwrap();
        // ptxas runs (and is waiting for its input) before the PTX exists.
        let pid = started_pid(&f.tc.ptxas);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(alive(pid), "ptxas waits for its input");
        let output = started.finish(&ptx).unwrap();
        assert_eq!(output.len(), ptx.len());
        assert!(output == ptx.as_bytes(), "{} read a partial input", if link { "ptxas or nvlink" } else { "ptxas" });
        let runs = f.opts.log.take();
        assert_eq!(runs.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(), if link { vec!["ptxas", "nvlink"] } else { vec!["ptxas"] });
        if link {
            assert!(runs[1].command.contains("/module.o -L"), "{}", runs[1].command);
        }
        assert!(Fake::entries(&f.temp_root()).is_empty());
    }
    // The same through the plain entry points (ptxas and nvlink overlapping).
    let out = f.out_dir().join("k.cubin");
    f.tc.build_cubin(&ptx, &f.opts, &out).unwrap();
    assert!(fs::read(&out).unwrap() == ptx.as_bytes());
    assert!(f.tc.assemble(&ptx, &f.opts).unwrap() == ptx.as_bytes());
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn a_build_dropped_before_its_input_kills_its_tool_and_cleans_up() {
    let f = copying_fake();
    if !leases_work(&f.temp_root()) {
        return;
    }
    let started = f.tc.start_build(&f.opts, true).unwrap();
    let pid = started_pid(&f.tc.ptxas);
    assert!(alive(pid));
    drop(started);
    assert!(!alive(pid), "ptxas was killed and reaped");
    assert!(Fake::entries(&f.temp_root()).is_empty(), "{:?}", Fake::entries(&f.temp_root()));
    assert!(f.opts.log.take().is_empty());
}

#[test]
fn without_early_start_the_tools_run_after_their_input() {
    let f = copying_fake();
    let ptx: String = (0..1000).map(|i| format!("// line {i}\n")).collect();
    let started = f.tc.start_build_with(&f.opts, true, false).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(!f.tc.ptxas.with_file_name("ptxas.pid").exists(), "nothing started yet");
    assert!(started.finish(&ptx).unwrap() == ptx.as_bytes());
    assert_eq!(f.opts.log.take().len(), 2);
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

#[test]
fn an_early_tool_that_fails_runs_again_and_its_failure_is_reported() {
    // ptxas fails on its input; nvlink, started as ptxas's input was released, is killed.
    let f = fake("for a; do last=\"$a\"; done\ncat \"$last\" >&2\nexit 3", "sleep 30");
    if !leases_work(&f.temp_root()) {
        return;
    }
    let started = std::time::Instant::now();
    let err = f.tc.start_build(&f.opts, true).unwrap().finish("bad ptx").unwrap_err();
    match &err {
        ToolError::Failed { tool, status: ExitKind::Code(3), stderr, .. } => {
            assert_eq!(tool, "ptxas");
            assert_eq!(stderr, "bad ptx", "ptxas read its input");
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "nvlink was not waited for");
    assert!(Fake::entries(&f.temp_root()).is_empty());

    // A ptxas whose early run fails (as one that cannot read a leased file would) and whose
    // run afterwards succeeds: the build succeeds, and the log has the run that did.
    let flaky = format!("runs=\"$(dirname \"$0\")/runs\"; echo x >> \"$runs\"\nif [ \"$(wc -l < \"$runs\")\" -eq 1 ]; then exit 1; fi\n{WRITE_OUTPUT}");
    let f = fake(&flaky, WRITE_OUTPUT);
    let cubin = f.tc.start_build(&f.opts, true).unwrap().finish(".version 8.0").unwrap();
    assert!(cubin.starts_with(b"CUBIN "), "{}", String::from_utf8_lossy(&cubin));
    assert_eq!(fs::read_to_string(f.tc.ptxas.with_file_name("runs")).unwrap(), "x\nx\n", "ptxas ran twice");
    assert_eq!(f.opts.log.take().iter().map(|r| r.tool.clone()).collect::<Vec<_>>(), ["ptxas", "nvlink"]);
    assert!(Fake::entries(&f.temp_root()).is_empty());
}

/// `_FORTIFY_SOURCE` among a compiler's predefined macros: Ubuntu 24.04's GCC at `-O2`, one
/// without it (Debian's, upstream), and a zero, which fortifies nothing.
#[test]
fn the_fortify_level_is_read_from_the_predefined_macros() {
    assert_eq!(super::fortify_level("#define __GNUC__ 13\n#define _FORTIFY_SOURCE 3\n#define __OPTIMIZE__ 1\n"), Some(3));
    assert_eq!(super::fortify_level("#define __GNUC__ 12\n#define __OPTIMIZE__ 1\n"), None);
    assert_eq!(super::fortify_level("#define _FORTIFY_SOURCE 0\n"), None);
    assert_eq!(super::fortify_level("#define _FORTIFY_SOURCE_X 2\n"), None);
}
