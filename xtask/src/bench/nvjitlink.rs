//! Linking in one process through nvJitLink against the two processes cdpc runs today.
//!
//! cdpc hands its PTX to `ptxas -c` and the object to `nvlink ... -lcudadevrt`. nvJitLink
//! (`libnvJitLink.so`, PyPI `nvidia-nvjitlink`) takes PTX and static libraries such as
//! libcudadevrt.a and returns the linked cubin from a library call. This measures both on the
//! same PTX (cdpc's `--emit ptx` of a few programs), interleaved, from one Python process that
//! loads the library through ctypes: the nvJitLink time covers Create, AddData (PTX), AddFile
//! (libcudadevrt.a), Complete, GetLinkedCubin and Destroy, as cdpc would call them; loading the
//! library (once per cdpc process) and the first link are reported apart. The wheel is installed
//! into `build/bench/nvjitlink/`, not into `.cuda/`: the compiler does not use it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Measured, Tools};
use crate::Result;

/// One PTX file's result, seconds.
pub struct JitResult {
    pub name: String,
    pub kernels: usize,
    pub ptx_bytes: u64,
    /// ptxas + nvlink processes, median.
    pub processes: f64,
    pub ptxas: f64,
    pub nvlink: f64,
    /// nvJitLink in process, median of the runs after the first.
    pub jit: f64,
    /// The first nvJitLink link in the process.
    pub jit_first: f64,
    pub cubin_bytes_nvlink: u64,
    pub cubin_bytes_jit: u64,
}

pub struct JitReport {
    pub wheel: String,
    /// Loading libnvJitLink.so (ctypes.CDLL).
    pub dlopen: f64,
    pub results: Vec<JitResult>,
}

/// The programs measured: the sample with the most kernels, the smallest sample, and every
/// generated chain.
fn pick(results: &[Measured]) -> Vec<&Measured> {
    let ok: Vec<&Measured> = results.iter().filter(|m| m.error.is_none()).collect();
    let samples: Vec<&Measured> = ok.iter().copied().filter(|m| !m.generated && !m.corpus).collect();
    let mut picked = Vec::new();
    if let Some(big) = samples.iter().max_by_key(|m| m.kernels) {
        picked.push(*big);
    }
    if let Some(hello) = samples.iter().find(|m| m.name == "hello") {
        if !picked.iter().any(|p| p.name == hello.name) {
            picked.insert(0, *hello);
        }
    }
    picked.extend(ok.iter().copied().filter(|m| m.generated));
    picked
}

fn nvjitlink_wheel() -> String {
    let version = crate::WHEELS.iter().find_map(|w| w.strip_prefix("nvidia-cuda-nvcc==")).unwrap_or("13.5.37");
    format!("nvidia-nvjitlink=={version}")
}

/// Installs the pinned nvJitLink wheel into `build/bench/nvjitlink/` when it is not there.
fn ensure_library(root: &Path, wheel: &str) -> Result<PathBuf> {
    let dir = root.join("build/bench/nvjitlink");
    let lib = dir.join("nvidia/cu13/lib/libnvJitLink.so.13");
    let stamp = dir.join(".wheel");
    if lib.is_file() && fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == wheel) {
        return Ok(lib);
    }
    let _ = fs::remove_dir_all(&dir);
    let pip = |extra: &[&str]| {
        let mut c = Command::new("python3");
        c.env("PIP_ROOT_USER_ACTION", "ignore").args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q"]).args(["--no-deps", "--target"]).arg(&dir).args(extra).arg(wheel);
        c
    };
    let (ok, stderr) = crate::run_capturing_stderr(&mut pip(&[]))?;
    let retried = !ok && stderr.contains("externally-managed") && crate::run_capturing_stderr(&mut pip(&["--break-system-packages"]))?.0;
    if !ok && !retried {
        return Err(format!("pip could not install {wheel} into {}", dir.display()));
    }
    if !lib.is_file() {
        return Err(format!("{wheel} installed, but {} is not there", lib.display()));
    }
    fs::write(&stamp, wheel).map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    Ok(lib)
}

pub fn measure(root: &Path, tools: &Tools, results: &[Measured], out_dir: &Path, repeat: usize) -> Result<JitReport> {
    let picked = pick(results);
    if picked.is_empty() {
        return Err("no program compiled".into());
    }
    let wheel = nvjitlink_wheel();
    let lib = ensure_library(root, &wheel)?;
    let script = out_dir.join("nvjitlink_bench.py");
    fs::write(&script, SCRIPT).map_err(|e| format!("writing {}: {e}", script.display()))?;

    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(&lib).arg(&tools.ptxas).arg(&tools.nvlink).arg(&tools.lib_dir).arg(repeat.max(3).to_string()).arg(out_dir);
    for m in &picked {
        let input = root.join(&m.file);
        let ptx = out_dir.join(format!("{}.jit.ptx", m.name));
        let mut emit = tools.cdpc_command();
        emit.arg(&input).args(["--emit", "ptx", "-o"]).arg(&ptx);
        super::timed(&mut emit)?;
        cmd.arg(format!("{}={}", m.name, ptx.display()));
    }
    println!("bench-compile: nvJitLink ({wheel}) against ptxas + nvlink on {} PTX file(s)", picked.len());
    let out = super::timed(&mut cmd)?.out;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut report = JitReport { wheel, dlopen: f64::NAN, results: Vec::new() };
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["DLOPEN", s] => report.dlopen = s.parse().unwrap_or(f64::NAN),
            ["RESULT", name, ptx_bytes, procs, ptxas, nvlink, jit, first, cb_nvlink, cb_jit] => {
                let f = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
                let kernels = picked.iter().find(|m| m.name == *name).map_or(0, |m| m.kernels);
                report.results.push(JitResult {
                    name: name.to_string(),
                    kernels,
                    ptx_bytes: ptx_bytes.parse().unwrap_or(0),
                    processes: f(procs),
                    ptxas: f(ptxas),
                    nvlink: f(nvlink),
                    jit: f(jit),
                    jit_first: f(first),
                    cubin_bytes_nvlink: cb_nvlink.parse().unwrap_or(0),
                    cubin_bytes_jit: cb_jit.parse().unwrap_or(0),
                });
                println!("  {name:<16} ptxas+nvlink {:.4} s  nvJitLink {:.4} s (first {:.4} s)  ratio {:.2}", f(procs), f(jit), f(first), f(procs) / f(jit));
            }
            _ => {}
        }
    }
    if report.results.is_empty() {
        return Err(format!("the measurement printed no result:\n{text}"));
    }
    Ok(report)
}

/// The measurement program: `python3 SCRIPT LIB PTXAS NVLINK LIBDIR REPEAT OUTDIR NAME=PTX...`.
/// Prints `DLOPEN s` and per PTX `RESULT name ptx_bytes procs ptxas nvlink jit jit_first
/// cubin_bytes_nvlink cubin_bytes_jit`.
const SCRIPT: &str = r#"
import ctypes, os, statistics, subprocess, sys, time

lib_path, ptxas, nvlink, lib_dir, repeat, out_dir = sys.argv[1:7]
repeat = int(repeat)
jobs = [a.split("=", 1) for a in sys.argv[7:]]
devrt = os.path.join(lib_dir, "libcudadevrt.a").encode()

t = time.perf_counter()
lib = ctypes.CDLL(lib_path)
print("DLOPEN %.6f" % (time.perf_counter() - t), flush=True)

def fn(name, argtypes):
    # The header maps each call to a versioned symbol (__nvJitLinkCreate_13_5 ...).
    for minor in range(9, -1, -1):
        f = getattr(lib, "__%s_13_%d" % (name, minor), None)
        if f is not None:
            break
    else:
        f = getattr(lib, name)
    f.argtypes = argtypes
    f.restype = ctypes.c_int
    return f

H = ctypes.c_void_p
create = fn("nvJitLinkCreate", [ctypes.POINTER(H), ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)])
add_data = fn("nvJitLinkAddData", [H, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p])
add_file = fn("nvJitLinkAddFile", [H, ctypes.c_int, ctypes.c_char_p])
complete = fn("nvJitLinkComplete", [H])
cubin_size = fn("nvJitLinkGetLinkedCubinSize", [H, ctypes.POINTER(ctypes.c_size_t)])
get_cubin = fn("nvJitLinkGetLinkedCubin", [H, ctypes.c_void_p])
destroy = fn("nvJitLinkDestroy", [ctypes.POINTER(H)])
log_size = fn("nvJitLinkGetErrorLogSize", [H, ctypes.POINTER(ctypes.c_size_t)])
get_log = fn("nvJitLinkGetErrorLog", [H, ctypes.c_char_p])
INPUT_PTX, INPUT_ANY = 2, 10

def jit_link(ptx):
    h = H()
    opts = (ctypes.c_char_p * 1)(b"-arch=sm_90")
    def check(r, what):
        if r != 0:
            n = ctypes.c_size_t(0)
            log_size(h, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value + 1)
            get_log(h, buf)
            raise SystemExit("nvJitLink %s failed (%d): %s" % (what, r, buf.value.decode(errors="replace")))
    check(create(ctypes.byref(h), 1, opts), "Create")
    check(add_data(h, INPUT_PTX, ptx, len(ptx), b"input.ptx"), "AddData")
    check(add_file(h, INPUT_ANY, devrt), "AddFile(libcudadevrt.a)")
    check(complete(h), "Complete")
    n = ctypes.c_size_t(0)
    check(cubin_size(h, ctypes.byref(n)), "GetLinkedCubinSize")
    buf = ctypes.create_string_buffer(n.value)
    check(get_cubin(h, buf), "GetLinkedCubin")
    destroy(ctypes.byref(h))
    return buf.raw

def processes(ptx_path, base):
    obj, cubin = base + ".proc.o", base + ".proc.cubin"
    t0 = time.perf_counter()
    subprocess.run([ptxas, "-arch=sm_90", "-c", ptx_path, "-o", obj], check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    t1 = time.perf_counter()
    subprocess.run([nvlink, "-arch=sm_90", obj, "-L" + lib_dir, "-lcudadevrt", "-o", cubin],
                   check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, os.path.getsize(cubin)

for name, ptx_path in jobs:
    with open(ptx_path, "rb") as f:
        ptx = f.read()
    base = os.path.join(out_dir, name)
    t = time.perf_counter()
    cubin = jit_link(ptx)
    first = time.perf_counter() - t
    if cubin[:4] != b"\x7fELF":
        raise SystemExit("nvJitLink returned no ELF for " + name)
    with open(base + ".jit.cubin", "wb") as f:
        f.write(cubin)
    processes(ptx_path, base)  # warm-up
    procs, pa, nl, jit = [], [], [], []
    for _ in range(repeat):
        a, b, size_proc = processes(ptx_path, base)
        pa.append(a); nl.append(b); procs.append(a + b)
        t = time.perf_counter()
        cubin = jit_link(ptx)
        jit.append(time.perf_counter() - t)
    med = statistics.median
    print("RESULT %s %d %.6f %.6f %.6f %.6f %.6f %d %d" % (
        name, len(ptx), med(procs), med(pa), med(nl), med(jit), first, size_proc, len(cubin)),
        flush=True)
"#;
