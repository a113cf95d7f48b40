//! The fixed costs behind a small compile: cdpc's process start and exit, ptxas and nvlink on
//! empty input, and what the inputs and the environment change (glibc's malloc tunables, which
//! cdpc gives ptxas and nvlink; libcudadevrt as the archive or as the sm_90 device object that
//! `cuobjdump -xelf` takes out of it; nvcc's ptxas options). Each row is a process timed on its
//! own, interleaved with the others round by round; medians of wall-clock time, CPU time and
//! minor page faults (getrusage of the children).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{stats, timed, Measured, Tools, ARCH};
use crate::Result;

/// The malloc tunables cdpc sets for ptxas and nvlink (`MALLOC_TUNABLES` in
/// compiler/src/toolchain/process.rs; a test below checks that the two agree).
pub const CDPC_TUNABLES: &str = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864";
const TUNABLES_VAR: &str = "GLIBC_TUNABLES";
/// The sample whose PTX and object the non-empty rows use.
const SAMPLE: &str = "hello";

/// One measured process.
pub struct Row {
    /// What it shows.
    pub what: String,
    /// Medians: seconds of wall-clock and CPU time, minor page faults.
    pub wall: f64,
    pub cpu: f64,
    pub faults: f64,
}

/// The rows, in the order measured, and how many rounds.
pub struct FixedCosts {
    pub rows: Vec<Row>,
    pub rounds: usize,
}

struct Spec {
    what: String,
    command: Command,
}

/// A command without the user's GLIBC_TUNABLES (`tunables` false) or with cdpc's.
fn with_tunables(mut c: Command, tunables: bool) -> Command {
    if tunables {
        c.env(TUNABLES_VAR, CDPC_TUNABLES);
    } else {
        c.env_remove(TUNABLES_VAR);
    }
    c
}

/// Runs every row `max(3 * repeat, 9)` times, interleaved; `results` must hold the sample
/// [`SAMPLE`] (measured successfully) or this is skipped.
pub fn measure(tools: &Tools, results: &[Measured], out_dir: &Path, repeat: usize) -> Result<FixedCosts> {
    if !results.iter().any(|m| m.name == SAMPLE && m.error.is_none()) {
        return Err(format!("samples/{SAMPLE}.cdp was not measured"));
    }
    let dir = out_dir.join("fixed");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let source = tools.root.join("samples").join(format!("{SAMPLE}.cdp"));
    let (ptx, obj) = (dir.join(format!("{SAMPLE}.ptx")), dir.join(format!("{SAMPLE}.o")));
    let empty_ptx = dir.join("empty.ptx");
    let empty_obj = dir.join("empty.o");
    fs::write(&empty_ptx, ".version 8.0\n.target sm_90\n.address_size 64\n").map_err(|e| format!("writing {}: {e}", empty_ptx.display()))?;
    // The inputs, made once, untimed.
    timed(tools.cdpc_command().arg(&source).args(["--emit", "ptx", "-o"]).arg(&ptx))?;
    timed(&mut super::ptxas_cmd(tools, &ptx, &obj))?;
    timed(&mut super::ptxas_cmd(tools, &empty_ptx, &empty_obj))?;
    let devrt_object = extract_devrt(tools, &dir);

    let cubin = |name: &str| dir.join(format!("{name}.cubin"));
    // cdpc as a user runs it: no GLIBC_TUNABLES of ours, so that it sets its own for its tools.
    let cdpc = |args: &[std::ffi::OsString]| {
        let mut c = tools.cdpc_command();
        c.args(args);
        with_tunables(c, false)
    };
    let ptxas = |input: &Path, output: &str, tunables: bool| with_tunables(super::ptxas_cmd(tools, input, &dir.join(output)), tunables);
    let nvlink_lib = |input: &Path, output: &str, tunables: bool| with_tunables(super::nvlink_cmd(tools, input, &cubin(output)), tunables);
    let mut specs = vec![
        Spec { what: "cdpc start and exit: `cdpc --version`".into(), command: cdpc(&["--version".into()]) },
        Spec {
            what: format!("cdpc to PTX, no NVIDIA tool: `cdpc {SAMPLE}.cdp --emit ptx`"),
            command: cdpc(&[source.clone().into(), "--emit".into(), "ptx".into(), "-o".into(), dir.join("again.ptx").into()]),
        },
        Spec { what: format!("cdpc end to end: `cdpc {SAMPLE}.cdp -o {SAMPLE}.cubin`"), command: cdpc(&[source.clone().into(), "-o".into(), cubin("cdpc").into()]) },
        Spec { what: "ptxas -c, empty module".into(), command: ptxas(&empty_ptx, "e1.o", false) },
        Spec { what: "ptxas -c, empty module, cdpc's malloc tunables".into(), command: ptxas(&empty_ptx, "e2.o", true) },
        Spec { what: format!("ptxas -c, {SAMPLE}'s PTX"), command: ptxas(&ptx, "h1.o", false) },
        Spec { what: format!("ptxas -c, {SAMPLE}'s PTX, cdpc's malloc tunables"), command: ptxas(&ptx, "h2.o", true) },
        Spec {
            what: format!("ptxas with nvcc's options (`-arch={ARCH} -m64 --compile-only`, `nvcc -dryrun`), {SAMPLE}'s PTX"),
            command: with_tunables(
                {
                    let mut c = Command::new(&tools.ptxas);
                    c.arg(format!("-arch={ARCH}")).args(["-m64", "--compile-only"]).arg(&ptx).arg("-o").arg(dir.join("h3.o"));
                    c
                },
                false,
            ),
        },
        Spec {
            what: "nvlink, empty object, no library".into(),
            command: with_tunables(
                {
                    let mut c = Command::new(&tools.nvlink);
                    c.arg(format!("-arch={ARCH}")).arg(&empty_obj).arg("-o").arg(cubin("e0"));
                    c
                },
                false,
            ),
        },
        Spec { what: "nvlink, empty object, -lcudadevrt".into(), command: nvlink_lib(&empty_obj, "e1", false) },
        Spec { what: format!("nvlink, {SAMPLE}'s object, -lcudadevrt"), command: nvlink_lib(&obj, "h1", false) },
        Spec { what: format!("nvlink, {SAMPLE}'s object, -lcudadevrt, cdpc's malloc tunables"), command: nvlink_lib(&obj, "h2", true) },
    ];
    if let Some(devrt) = &devrt_object {
        for tunables in [false, true] {
            let mut c = Command::new(&tools.nvlink);
            c.arg(format!("-arch={ARCH}")).arg(&obj).arg(devrt).arg("-o").arg(cubin(if tunables { "h4" } else { "h3" }));
            specs.push(Spec {
                what: format!("nvlink, {SAMPLE}'s object, libcudadevrt's {ARCH} ELF as an object (`cuobjdump -xelf {ARCH}`){}", if tunables { ", cdpc's malloc tunables" } else { "" }),
                command: with_tunables(c, tunables),
            });
        }
    }

    let rounds = (3 * repeat).max(9);
    let mut samples: Vec<Vec<(f64, f64, f64)>> = specs.iter().map(|_| Vec::new()).collect();
    // One untimed round first: page cache.
    for spec in specs.iter_mut() {
        timed(&mut spec.command)?;
    }
    for _ in 0..rounds {
        for (spec, got) in specs.iter_mut().zip(samples.iter_mut()) {
            let run = timed(&mut spec.command)?;
            got.push((run.wall, run.cpu, run.faults));
        }
    }
    let rows = specs
        .into_iter()
        .zip(samples)
        .map(|(spec, got)| {
            let pick = |f: fn(&(f64, f64, f64)) -> f64| stats::median(&got.iter().map(f).collect::<Vec<_>>());
            Row { what: spec.what, wall: pick(|r| r.0), cpu: pick(|r| r.1), faults: pick(|r| r.2) }
        })
        .collect();
    Ok(FixedCosts { rows, rounds })
}

/// libcudadevrt's sm_90 device ELF, taken out with the wheel's `cuobjdump -xelf` (none when it
/// is not there or fails).
fn extract_devrt(tools: &Tools, dir: &Path) -> Option<PathBuf> {
    let cuobjdump = tools.ptxas.with_file_name("cuobjdump");
    let status = Command::new(cuobjdump)
        .arg("-xelf")
        .arg(ARCH)
        .arg(tools.lib_dir.join("libcudadevrt.a"))
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let suffix = format!(".{ARCH}.cubin");
    fs::read_dir(dir).ok()?.filter_map(|e| e.ok()).map(|e| e.path()).find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libcudadevrt.") && n.to_string_lossy().ends_with(&suffix)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tunables_are_the_ones_cdpc_gives_its_tools() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let process = fs::read_to_string(root.join("compiler/src/toolchain/process.rs")).unwrap();
        assert!(process.contains(&format!("const MALLOC_TUNABLES: &str = \"{CDPC_TUNABLES}\";")), "compiler/src/toolchain/process.rs changed its MALLOC_TUNABLES");
    }
}
