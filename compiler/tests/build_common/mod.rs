//! What the build tests share (`separate_compilation.rs`, `debug_info.rs`, `host_object.rs`):
//! running the `cdpc` binary and the NVIDIA tools, and finding them, each missing one a
//! printed reason to skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `cdpc` binary in `dir`.
pub fn cdpc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).args(args).output().expect("cdpc runs")
}

/// [`cdpc`] with more environment variables.
pub fn cdpc_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).args(args).envs(env.iter().copied()).output().expect("cdpc runs")
}

/// cdpc's PTX of `source` saved as `file` (its extension picks the front end), in a folder of
/// its own; the compilation must succeed.
pub fn cdpc_ptx(file: &str, source: &str) -> String {
    cdpc_ptx_with(file, source, &[])
}

/// [`cdpc_ptx`] with more options.
pub fn cdpc_ptx_with(file: &str, source: &str, options: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(dir.path().join(file), source).expect("the source is written");
    let out = cdpc(dir.path(), &[&[file, "--emit", "ptx", "-o", "-"][..], options].concat());
    assert!(out.status.success(), "{file} {options:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each line of what cdpc wrote to stderr under `--error-format json`, as a JSON value (a line
/// that is not JSON fails the test).
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    stderr(out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

/// cdpc's JSON diagnostics ([`json_lines`]) as (line of the label, message), each asserted to
/// be an error of `code` with one label.
pub fn cdpc_errors(out: &Output, code: &str) -> Vec<(u64, String)> {
    json_lines(out)
        .into_iter()
        .map(|d| {
            assert_eq!((&d["severity"], &d["code"]), (&serde_json::json!("error"), &serde_json::json!(code)), "{d}");
            assert_eq!(d["labels"].as_array().map(Vec::len), Some(1), "one label: {d}");
            (d["labels"][0]["line_start"].as_u64().expect("a line"), d["message"].as_str().expect("a message").to_string())
        })
        .collect()
}

/// nvcc's errors in what it wrote to stderr (`FILE(LINE): error: MESSAGE`), as (line, message),
/// in its order.
pub fn nvcc_errors(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| {
            let (head, message) = l.split_once(": error: ")?;
            Some((head.rsplit_once('(')?.1.trim_end_matches(')').parse().ok()?, message.to_string()))
        })
        .collect()
}

/// What a process wrote to stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The folder of ptxas and nvlink, or `None` (with the reason printed).
pub fn tool_dir() -> Option<PathBuf> {
    match cdpc::toolchain::Toolchain::discover(&Default::default()) {
        Ok(t) => t.ptxas.parent().map(Path::to_path_buf),
        Err(_) => {
            println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
            None
        }
    }
}

/// nvcc beside ptxas, or `None` (with the reason printed).
pub fn nvcc() -> Option<PathBuf> {
    let nvcc = tool_dir()?.join("nvcc");
    if !nvcc.is_file() {
        println!("skipped: no nvcc beside ptxas");
        return None;
    }
    Some(nvcc)
}

/// Whether `program --version` runs (with the reason printed when not).
pub fn have(program: &str) -> bool {
    let found = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        println!("skipped: `{program}` is not available");
    }
    found
}

/// Runs `program` in `dir` with the tools' folder first on `PATH` (nvcc finds its own tools
/// there) and asserts that it succeeded.
pub fn run(program: &Path, dir: &Path, args: &[&str]) -> Output {
    let tools = tool_dir().expect("the NVIDIA tools");
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(program).current_dir(dir).env("PATH", path).args(args).output().expect("the tool runs");
    assert!(out.status.success(), "{} {args:?}: {}{}", program.display(), stderr(&out), String::from_utf8_lossy(&out.stdout));
    out
}

/// What `nvcc` (from [`nvcc`]) wrote to stderr refusing a compilation in `dir` (`args`); a
/// compilation nvcc accepts fails the test. The oracle of tests about nvcc's errors.
pub fn nvcc_refusal(nvcc: &Path, dir: &Path, args: &[&str]) -> String {
    let tools = tool_dir().expect("the NVIDIA tools");
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(nvcc).current_dir(dir).env("PATH", path).args(args).output().expect("nvcc runs");
    assert!(!out.status.success(), "nvcc accepted {args:?}");
    stderr(&out)
}

/// nvcc's PTX of `source` (`nvcc -arch=sm_90 -rdc=true -ptx`, the oracle of the PTX tests), or
/// `None` with the reason printed when nvcc is not there. A source nvcc rejects fails the test.
pub fn nvcc_ptx(source: &str) -> Option<String> {
    nvcc_ptx_with(source, &[])
}

/// [`nvcc_ptx`] with more of nvcc's options (`-G`, `-lineinfo`).
pub fn nvcc_ptx_with(source: &str, options: &[&str]) -> Option<String> {
    let nvcc = nvcc()?;
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(dir.path().join("oracle.cu"), source).expect("the source is written");
    let mut args = vec!["-arch=sm_90", "-rdc=true", "-ptx", "oracle.cu", "-o", "oracle.ptx"];
    args.extend_from_slice(options);
    run(&nvcc, dir.path(), &args);
    Some(std::fs::read_to_string(dir.path().join("oracle.ptx")).expect("nvcc wrote the PTX"))
}

/// The functions a PTX text defines: (linkage, symbol) of every `.entry` and `.func` that is
/// not `.extern` (`host_template_launch.rs`, `cxx_types_ptx.rs`).
pub fn ptx_functions(ptx: &str) -> std::collections::BTreeSet<(String, String)> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| (l.contains(".entry ") || l.contains(".func ")) && !l.starts_with(".extern") && !l.starts_with("//"))
        .filter_map(|l| {
            let linkage = l.split_whitespace().next()?.to_string();
            let name = l.split_whitespace().find(|w| w.starts_with("_Z") || (!w.starts_with('.') && !w.starts_with('(') && w.ends_with('(')))?;
            Some((linkage, name.trim_end_matches('(').to_string()))
        })
        .collect()
}

/// ccache's counters for the cache folder `cache` (`ccache --print-stats`: `name<TAB>value`
/// lines), every one that is a number.
pub fn ccache_stats(cache: &Path) -> std::collections::BTreeMap<String, u64> {
    let out = Command::new("ccache").env("CCACHE_DIR", cache).env("CCACHE_CONFIGPATH", cache.join("ccache.conf")).arg("--print-stats").output().expect("ccache runs");
    assert!(out.status.success(), "ccache --print-stats: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_once('\t')).filter_map(|(name, value)| Some((name.to_string(), value.trim().parse().ok()?))).collect()
}

/// Every object (`*.o`) under `dir`, by its path below `dir`, with its bytes.
pub fn objects(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
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
