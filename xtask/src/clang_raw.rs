//! `cargo xtask gpu-bundle`'s `clang-raw-v1` label: every sample compiled by `clang++-22`
//! itself, with no cdpc in the way, to PTX (`-x cuda --cuda-device-only -fgpu-rdc`, the flags
//! cdpc gives its Clang: `cdpc -x cu -v`), then assembled by `ptxas -c` and linked by `nvlink`
//! with libcudadevrt as cdpc links its own cubins. Clang 22 writes device launches with the
//! documented V1 entry points (`cudaGetParameterBuffer` + `cudaLaunchDevice`, spelled
//! `__cudaCDP2*` by CUDA 13's headers) by itself, where nvcc 13 writes V2 only: the label is V1
//! code that cdpc did not write, for timing `cdpc-v1` against. Its outputs may differ
//! from nvcc's where Clang contracts floating point differently; it is for timing.
//!
//! Skipped, each with a printed reason and a `NAME.not-built` file that `cdpc-run diff` shows:
//! samples whose manifest does not list the v1 ABI (no marker: cdpc-run says so itself), that
//! Clang cannot compile, whose kernels Clang names differently from nvcc (static kernels; the
//! names compared are the PTX `.entry` names of both), whose PTX calls a V2 entry point that
//! the source does not call by name, or whose PTX ptxas or nvlink refuses.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// The label's folder under build/gpu/ (its `-v1` part tells cdpc-run the launch ABI).
pub(crate) const LABEL: &str = "clang-raw-v1";

/// The kernels' names of a PTX module: the identifier after each `.entry`.
pub(crate) fn entry_names(ptx: &str) -> BTreeSet<String> {
    ptx.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or("").to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether a PTX module calls one of the V2 launch entry points (then it is not V1 code).
pub(crate) fn calls_v2(ptx: &str) -> bool {
    ptx.lines().any(|l| l.contains("call") && (l.contains("__cudaCDP2GetParameterBufferV2") || l.contains("__cudaCDP2LaunchDeviceV2")))
}

/// Whether a sample's manifest lets the v1 launch ABI build it (`abis` absent: both).
pub(crate) fn manifest_allows_v1(manifest: &str) -> bool {
    match manifest.lines().find(|l| l.trim_start().starts_with("abis")) {
        Some(line) => line.contains("\"v1\""),
        None => true,
    }
}

/// Why Clang's kernel names differ from nvcc's, or `None` when they are the same set.
pub(crate) fn name_mismatch(clang: &BTreeSet<String>, nvcc: &BTreeSet<String>) -> Option<String> {
    if clang == nvcc {
        return None;
    }
    let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| a.difference(b).cloned().collect::<Vec<_>>().join(", ");
    Some(format!("Clang names its kernels differently from nvcc (only Clang's: {}; only nvcc's: {})", only(clang, nvcc), only(nvcc, clang)))
}

/// Runs `cmd`; `Err` with the first lines of its stderr when it fails or cannot start.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{what} could not run: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).take(3).collect();
    Err(format!("{what} failed: {}", first.join(" / ")))
}

/// One sample: Clang's PTX, checked against nvcc's kernel names, assembled and linked into
/// `out_dir/NAME.cubin`; `Err(why)` when it is skipped.
fn build_one(root: &Path, cuda: &Path, clang: &str, work: &Path, name: &str, input: &str, out_dir: &Path) -> Result<(), String> {
    let ptx = work.join(format!("{name}.ptx"));
    let mut c = Command::new(clang);
    c.current_dir(root)
        .args(["-x", "cuda", "--cuda-device-only", "-fgpu-rdc", "-S", "--cuda-gpu-arch=sm_90"])
        .arg(format!("--cuda-path={}", cuda.display()))
        .args(["-Wno-unknown-cuda-version", "-D__CUDACC_RDC__", "-O3", "-isystem"])
        .arg(cuda.join("include/cccl"))
        .arg("-o")
        .arg(&ptx)
        .arg(input);
    run(&mut c, "Clang")?;
    let nvcc_ptx = work.join(format!("{name}.nvcc.ptx"));
    run(Command::new(cuda.join("bin/nvcc")).current_dir(root).args(["-x", "cu", "-rdc=true", "-arch=sm_90", "-ptx", "-o"]).arg(&nvcc_ptx).arg(input), "nvcc (for its kernel names)")?;
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let clang_ptx = read(&ptx)?;
    // a program may call the V2 pair by name (devrt_calls does, as cdpc-v1's build of it keeps);
    // Clang's own launches must not
    let source = fs::read_to_string(root.join(input)).map_err(|e| format!("reading {input}: {e}"))?;
    if calls_v2(&clang_ptx) && !source.contains("LaunchDeviceV2") && !source.contains("GetParameterBufferV2") {
        return Err("Clang's PTX calls the V2 launch entry points: not V1 code".into());
    }
    if let Some(why) = name_mismatch(&entry_names(&clang_ptx), &entry_names(&read(&nvcc_ptx)?)) {
        return Err(why);
    }
    let object = work.join(format!("{name}.o"));
    run(Command::new(cuda.join("bin/ptxas")).args(["-arch=sm_90", "-c", "-O3", "-o"]).arg(&object).arg(&ptx), "ptxas")?;
    run(
        Command::new(cuda.join("bin/nvlink")).arg("-arch=sm_90").arg(&object).arg(format!("-L{}", cuda.join("lib").display())).arg("-lcudadevrt").arg("-o").arg(out_dir.join(format!("{name}.cubin"))),
        "nvlink",
    )
}

/// Builds `gpu/clang-raw-v1/` from `names` (sample name, path from the root). Prints one line
/// per sample; never fails the bundle for a sample (the label is optional), only for the file
/// system. Without `clang` it prints why and builds nothing.
pub(crate) fn build(root: &Path, cuda: &Path, clang: &str, gpu: &Path, names: &[(String, String)]) -> Result<(), String> {
    if Command::new(clang).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().map_or(true, |s| !s.success()) {
        println!("  --    {LABEL}: not built ({clang} is not installed: `cargo xtask setup` installs it)");
        return Ok(());
    }
    let dir = gpu.join(LABEL);
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let work = gpu.join(format!("{LABEL}.work"));
    fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    let mut built = 0;
    for (name, input) in names {
        let manifest = fs::read_to_string(root.join(format!("samples/{name}.toml"))).unwrap_or_default();
        if !manifest_allows_v1(&manifest) {
            println!("  --    {LABEL} {name}: not built (its manifest's abis leave out v1)");
            continue;
        }
        match build_one(root, cuda, clang, &work, name, input, &dir) {
            Ok(()) => {
                built += 1;
                println!("  ok    {LABEL} {name}");
            }
            Err(why) => {
                println!("  --    {LABEL} {name}: not built ({why})");
                let marker = dir.join(format!("{name}.not-built"));
                fs::write(&marker, format!("{why}\n")).map_err(|e| format!("writing {}: {e}", marker.display()))?;
            }
        }
    }
    fs::remove_dir_all(&work).map_err(|e| format!("removing {}: {e}", work.display()))?;
    println!("  {LABEL}: {built} of {} samples built by {clang} (timing only: see samples/README.md)", names.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_of_ptx() {
        let ptx = ".visible .entry recurse(\n\t.param .u32 recurse_param_0\n)\n.weak .entry _Z5childPii (\n.entry _ZN12_GLOBAL__N_14kernEv(\n// .entry in a comment(\n";
        let names: Vec<String> = entry_names(ptx).into_iter().collect();
        assert_eq!(names, ["_Z5childPii", "_ZN12_GLOBAL__N_14kernEv", "recurse"]);
    }

    #[test]
    fn names_compared_as_sets() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<String>>();
        assert_eq!(name_mismatch(&set(&["a", "b"]), &set(&["b", "a"])), None);
        assert_eq!(
            name_mismatch(&set(&["a", "_ZL1kv"]), &set(&["a", "_ZN12_GLOBAL__N_11kEv"])).as_deref(),
            Some("Clang names its kernels differently from nvcc (only Clang's: _ZL1kv; only nvcc's: _ZN12_GLOBAL__N_11kEv)")
        );
    }

    #[test]
    fn v2_calls_found() {
        assert!(calls_v2("\tcall.uni (retval0), __cudaCDP2GetParameterBufferV2, (param0, param1, param2, param3);"));
        assert!(calls_v2("\tcall.uni (retval0), __cudaCDP2LaunchDeviceV2, (param0, param1);"));
        // a declaration alone, or the V1 pair, is not a V2 call
        assert!(!calls_v2(".extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2\n"));
        assert!(!calls_v2("\tcall.uni (retval0), __cudaCDP2GetParameterBuffer, (param0, param1);\n\tcall.uni (retval0), __cudaCDP2LaunchDevice, (param0);"));
    }

    #[test]
    fn v1_from_the_manifest() {
        assert!(manifest_allows_v1("description = \"x\"\n[launch]\n"));
        assert!(manifest_allows_v1("abis = [\"v1\", \"v2\"]\n"));
        assert!(!manifest_allows_v1("abis = [\"v2\"]   # tail launch\n"));
    }
}
