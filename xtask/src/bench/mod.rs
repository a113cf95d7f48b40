//! `cargo xtask bench-compile`: compile time of cdpc against nvcc.
//!
//! For every `samples/*.cdp` and for generated chains of 1, 10, 100 and 1,000 kernels
//! (`build/bench/gen_N.cdp`) it times, interleaved (cdpc, nvcc, cdpc, nvcc, ...), after a warm-up:
//!
//! - cdpc end to end: `cdpc FILE -o OUT.cubin` (.cdp to a linked cubin);
//! - nvcc: `nvcc -x cu -rdc=true -cubin -arch=sm_90 FILE -o OUT.o` then
//!   `nvlink -arch=sm_90 OUT.o -L<lib> -lcudadevrt -o OUT.cubin`, from the same wheels;
//!
//! each as the wall-clock time of the whole processes, and reports medians. For the corpus
//! files it also times `-dc` (device and host object) against `nvcc -dc`: cdpc's first,
//! second and third compilation in a new cache folder each round. cdpc's phases come
//! from its `--time` flag (`time: <phase> <seconds>` lines on stderr) when the binary has it;
//! otherwise ptxas and nvlink are timed as separate processes on cdpc's `--emit ptx` output.
//! The full run also times linking through nvJitLink in one process against the ptxas + nvlink
//! processes (see `nvjitlink.rs`), writes `BENCHMARKS.md`'s "Compile time" block and plots
//! `docs/compile-time.png`. `--tiny` runs one sample and the 1-kernel chain once each, with no
//! plot and no report: the check CI runs.

mod fixed;
mod gen;
mod gpu_plot;
mod klap_plot;
mod nvjitlink;
mod plot;
mod report;
mod stats;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output, Stdio};
use std::time::Instant;

use crate::Result;

/// cdpc's phases as `--time` prints them, in pipeline order.
pub const PHASES: &[&str] = &["read", "preprocess", "parse", "sema", "llvm-ir", "llvm-opt-ptx", "ptxas", "nvlink", "total"];
const ARCH: &str = "sm_90";
const DEFAULT_SIZES: &[usize] = &[1, 10, 100, 1000];
const DEFAULT_REPEAT: usize = 7;
/// The sample `--tiny` runs.
const TINY_SAMPLE: &str = "hello";

pub const USAGE: &str = "\
  bench-compile [--sizes 1,10,100,1000] [--repeat N] [--tiny] [--no-corpus]
                    compile time of cdpc against nvcc + nvlink on samples/*.cdp and on generated
                    chains of N kernels; writes BENCHMARKS.md (Compile time) and
                    docs/compile-time.png; --tiny: one sample and the 1-kernel chain, once each,
                    no report (skips, exit 0, when nvcc is absent); --no-corpus: the samples and
                    chains alone (the corpus's tables are left out of the report)
";

struct Options {
    sizes: Vec<usize>,
    repeat: usize,
    tiny: bool,
    /// The corpus files are not compiled (`--no-corpus`).
    no_corpus: bool,
    command_line: String,
}

fn parse_options(args: &[OsString]) -> Result<Options> {
    let mut o = Options { sizes: DEFAULT_SIZES.to_vec(), repeat: DEFAULT_REPEAT, tiny: false, no_corpus: false, command_line: String::from("cargo xtask bench-compile") };
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        o.command_line.push(' ');
        o.command_line.push_str(&a);
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => {
                    let v = it.next().ok_or_else(|| format!("{name} needs a value"))?;
                    o.command_line.push(' ');
                    o.command_line.push_str(&v);
                    Ok(v)
                }
            }
        };
        match flag.as_str() {
            "--sizes" => {
                let v = value("--sizes")?;
                o.sizes = v
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse::<usize>().ok().filter(|&n| n >= 1))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("--sizes {v}: expected numbers >= 1, like 1,10,100"))?;
            }
            "--repeat" => {
                let v = value("--repeat")?;
                o.repeat = v.parse::<usize>().ok().filter(|&n| n >= 1).ok_or_else(|| format!("--repeat {v}: expected a number >= 1"))?;
            }
            "--tiny" => o.tiny = true,
            "--no-corpus" => o.no_corpus = true,
            other => return Err(format!("bench-compile: unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    if o.tiny {
        o.sizes = vec![1];
        o.repeat = 1;
    }
    Ok(o)
}

/// The tools both compilers need, from the project's `.cuda/` wheels.
pub struct Tools {
    /// The repository root: cdpc runs there, so it finds the checkout's `.cuda/` even when
    /// CARGO_TARGET_DIR puts its binary outside the checkout.
    pub root: PathBuf,
    pub cdpc: PathBuf,
    pub nvcc: PathBuf,
    pub ptxas: PathBuf,
    pub nvlink: PathBuf,
    pub lib_dir: PathBuf,
}

impl Tools {
    pub fn cdpc_command(&self) -> Command {
        let mut c = Command::new(&self.cdpc);
        c.current_dir(&self.root);
        c
    }
}

/// How cdpc's phase breakdown is obtained.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PhaseSource {
    /// `cdpc --time`: every phase, from the timed runs themselves.
    TimeFlag,
    /// The binary rejects `--time`: `cdpc --emit ptx`, ptxas and nvlink timed as processes.
    SeparateProcesses,
}

/// One program's measurements (seconds, one entry per repeat).
#[derive(Default)]
pub struct Measured {
    pub name: String,
    /// The path shown in the report, relative to the repository root.
    pub file: String,
    pub kernels: usize,
    pub generated: bool,
    /// A device-code file of `../shared/corpus` (`tests/corpus-programs.txt`), compiled as a
    /// relocatable device object by both compilers (cdpc: `-dc --emit obj`, through Clang) (no nvlink: cdpAdvancedQuicksort's kernels
    /// call cdpBitonicSort.cu's).
    pub corpus: bool,
    /// A corpus file that nvcc cannot build (KLAP's QT: ptxas refuses its pre-CUDA-9 warp
    /// votes): left out of the comparison, not a failure (`error` says why).
    pub not_compared: bool,
    /// cdpc, with a warm cache for a `.cu` file (Clang's precompiled headers, made by two
    /// warm-up runs: the preamble's is made for its second sight, after it, by a filler).
    pub cdpc: Vec<f64>,
    /// CPU seconds (user + system, children included) of the same cdpc runs.
    pub cdpc_cpu: Vec<f64>,
    /// A sample's plain build, `-fno-launch-optimizations` (launches as written, no
    /// thresholding or aggregation: the build nvcc's matches), in the same rounds. Empty for
    /// the chains and the corpus.
    pub cdpc_plain: Vec<f64>,
    /// A `.cu` file's cdpc runs with an empty cache (`CDPC_CACHE_DIR` a new folder each run):
    /// what the first compilation on a machine costs. Empty for `.cdp` files.
    pub cdpc_cold: Vec<f64>,
    /// CPU seconds of the cold runs.
    pub cdpc_cold_cpu: Vec<f64>,
    /// A `.cu` file's cdpc runs as its first compilation on a machine that has compiled CUDA
    /// C++ before: the warm cache's precompiled wrapper header, no preamble
    /// (`CDPC_PREAMBLE=0`; a file's preamble is only made for its second sight). Empty for
    /// `.cdp` files.
    pub cdpc_first: Vec<f64>,
    /// A corpus file's `cdpc -dc` (device and host object, like `nvcc -dc`) in a cache folder
    /// new each round: its first compilation (nothing cached), second (the wrapper's headers) and
    /// third (warm). Empty for other files.
    pub dc_first: Vec<f64>,
    pub dc_second: Vec<f64>,
    pub dc_warm: Vec<f64>,
    /// `nvcc -dc` of the same file, in the same rounds.
    pub nvcc_dc: Vec<f64>,
    /// nvcc + nvlink, both processes.
    pub nvcc_total: Vec<f64>,
    /// CPU seconds of the same nvcc + nvlink runs (nvcc's subprocesses included).
    pub nvcc_cpu: Vec<f64>,
    pub nvcc_only: Vec<f64>,
    pub nvcc_nvlink: Vec<f64>,
    /// `--time` phases (TimeFlag), or "emit-ptx", "ptxas", "nvlink" (SeparateProcesses).
    pub phases: BTreeMap<String, Vec<f64>>,
    pub error: Option<String>,
}

impl Measured {
    pub fn phase_median(&self, phase: &str) -> Option<f64> {
        self.phases.get(phase).filter(|v| !v.is_empty()).map(|v| stats::median(v))
    }
    /// Median wall-clock of cdpc minus the medians of its ptxas and nvlink: what is ours.
    pub fn ours_fraction(&self) -> Option<f64> {
        let wall = stats::median(&self.cdpc);
        let tools = self.phase_median("ptxas")? + self.phase_median("nvlink")?;
        Some(((wall - tools) / wall).max(0.0))
    }
}

pub fn bench_compile(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let opts = parse_options(args)?;
    let cu = root.join(crate::CUDA_DIR).join("nvidia/cu13");
    let nvcc = cu.join("bin/nvcc");
    let s = crate::setup(root, false)?;
    // Set-up installs nvcc; where it still is not there, there is nothing to compare with.
    if !nvcc.is_file() {
        println!("bench-compile: skipped: nvcc not found at {} (`cargo xtask setup` installs it)", nvcc.display());
        return Ok(ExitCode::SUCCESS);
    }
    crate::build_release_cdpc(root, &s)?;
    let tools = Tools {
        root: root.to_path_buf(),
        cdpc: crate::target_dir(root).join("release").join(format!("cdpc{}", std::env::consts::EXE_SUFFIX)),
        nvcc,
        ptxas: cu.join("bin/ptxas"),
        nvlink: cu.join("bin/nvlink"),
        lib_dir: cu.join("lib"),
    };
    for (what, p) in [("cdpc", &tools.cdpc), ("ptxas", &tools.ptxas), ("nvlink", &tools.nvlink)] {
        if !p.is_file() {
            return Err(format!("{what} not found at {}", p.display()));
        }
    }
    if !tools.lib_dir.join("libcudadevrt.a").is_file() {
        return Err(format!("libcudadevrt.a not found in {}", tools.lib_dir.display()));
    }

    let bench_dir = root.join("build/bench");
    let out_dir = bench_dir.join("out");
    fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;

    // The programs: samples (one with --tiny), then the generated chains, then the corpus.
    let mut programs: Vec<Job> = Vec::new();
    let mut names: Vec<String> = fs::read_dir(root.join("samples"))
        .map_err(|e| format!("reading samples/: {e}"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".cdp") || n.ends_with(".cu"))
        .collect();
    names.sort();
    if opts.tiny {
        let pick = names.iter().find(|n| n.strip_suffix(".cdp") == Some(TINY_SAMPLE)).or(names.first()).cloned();
        names = pick.into_iter().collect();
    }
    for n in names {
        let path = root.join("samples").join(&n);
        let name = n.strip_suffix(".cdp").map_or_else(|| n.replace('.', "_"), str::to_string);
        programs.push(Job { name, path, generated: false, corpus: None });
    }
    for &n in &opts.sizes {
        let path = bench_dir.join(format!("gen_{n}.cdp"));
        fs::write(&path, gen::chain_program(n)).map_err(|e| format!("writing {}: {e}", path.display()))?;
        programs.push(Job { name: format!("gen_{n}"), path, generated: true, corpus: None });
    }
    if !opts.tiny && !opts.no_corpus {
        programs.extend(corpus_jobs(root, &bench_dir)?);
    }

    let phase_source = detect_time_flag(&tools, &programs[0].path, &out_dir);
    println!(
        "bench-compile: {} program(s), {} timed run(s) each{}; phases: {}",
        programs.len(),
        opts.repeat,
        if opts.tiny { ", no warm-up" } else { " after a warm-up" },
        match phase_source {
            PhaseSource::TimeFlag => "cdpc --time",
            PhaseSource::SeparateProcesses => "cdpc has no --time: --emit ptx, ptxas and nvlink timed as separate processes",
        }
    );

    let mut loads = vec![load_average()];
    let started = Instant::now();
    let mut results = Vec::new();
    for job in &programs {
        let path = &job.path;
        let src = fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let shown = match &job.corpus {
            Some(_) => format!("corpus/{}", path.strip_prefix(corpus_root(root)).unwrap_or(path).display()),
            None => path.strip_prefix(root).unwrap_or(path).display().to_string(),
        };
        let mut m = Measured { name: job.name.clone(), file: shown, kernels: gen::count_kernels(&src), generated: job.generated, corpus: job.corpus.is_some(), ..Default::default() };
        if job.corpus.is_some() && !nvcc_builds(&tools, job, &out_dir) {
            println!("  {:<30} not compared: nvcc cannot build it for {ARCH}", m.file);
            m.error = Some(format!("not compared: nvcc cannot build it for {ARCH} (docs/CORPUS.md)"));
            m.not_compared = true;
        } else if let Err(e) = measure(&tools, job, &out_dir, &opts, phase_source, &mut m) {
            println!("  FAIL  {}: {e}", m.file);
            m.error = Some(e);
        } else {
            println!(
                "  {:<30} {:>5} kernels  cdpc {:.3} s  nvcc {:.3} s  nvcc/cdpc {:.1}x (CPU {:.1}x){}",
                m.file,
                m.kernels,
                stats::median(&m.cdpc),
                stats::median(&m.nvcc_total),
                stats::median(&m.nvcc_total) / stats::median(&m.cdpc),
                stats::median(&m.nvcc_cpu) / stats::median(&m.cdpc_cpu),
                m.ours_fraction().map(|f| format!("  ours {:.0}%", 100.0 * f)).unwrap_or_default()
            );
        }
        loads.push(load_average());
        results.push(m);
    }
    let failed: Vec<&str> = results.iter().filter(|m| m.error.is_some() && !m.not_compared).map(|m| m.file.as_str()).collect();
    println!("bench-compile: measured in {:.0} s", started.elapsed().as_secs_f64());

    if opts.tiny {
        // The closing line in the plain "N passed, N failed" form that test reports read.
        if !failed.is_empty() {
            println!("bench-compile: failed: {}", failed.join(", "));
        }
        println!("bench-compile: {} passed, {} failed", results.len() - failed.len(), failed.len());
        return Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }

    // nvJitLink against ptxas + nvlink processes, on cdpc's PTX of a few programs.
    let jit = nvjitlink::measure(root, &tools, &results, &out_dir, opts.repeat);
    if let Err(e) = &jit {
        println!("bench-compile: nvJitLink measurement not made: {e}");
    }
    loads.push(load_average());
    // The processes' fixed costs: start-up, ptxas and nvlink on empty input, what the malloc
    // tunables and libcudadevrt's archive change.
    let fixed = fixed::measure(&tools, &results, &out_dir, opts.repeat);
    if let Err(e) = &fixed {
        println!("bench-compile: fixed costs not measured: {e}");
    }
    loads.push(load_average());

    let png = root.join("docs/compile-time.png");
    if let Err(e) = plot::draw(&png, &results) {
        println!("bench-compile: no plot: {e}");
    } else {
        println!("bench-compile: wrote {}", png.display());
    }
    let env = report::Environment::collect(&tools, loads);
    let md = report::render(&opts.command_line, &env, phase_source, &results, jit.as_ref().ok(), fixed.as_ref().ok());
    let path = root.join("BENCHMARKS.md");
    report::write_section(&path, &md)?;
    println!("bench-compile: wrote the Compile time section of {}", path.display());
    print!("{}", report::targets_summary(&results));
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        println!("bench-compile: failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// Whether this cdpc has `--time`: one run with it, which must succeed and print `time: total`.
fn detect_time_flag(tools: &Tools, input: &Path, out_dir: &Path) -> PhaseSource {
    let out = out_dir.join("time-probe.cubin");
    let result = tools.cdpc_command().arg("--time").arg(input).arg("-o").arg(&out).stdin(Stdio::null()).output();
    match result {
        Ok(o) if o.status.success() && parse_time_lines(&o.stderr).contains_key("total") => PhaseSource::TimeFlag,
        _ => PhaseSource::SeparateProcesses,
    }
}

/// `time: <phase> <seconds>` lines from cdpc's stderr.
pub fn parse_time_lines(stderr: &[u8]) -> BTreeMap<String, f64> {
    let mut phases = BTreeMap::new();
    for line in String::from_utf8_lossy(stderr).lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("time:") {
            continue;
        }
        if let (Some(phase), Some(secs), None) = (words.next(), words.next(), words.next()) {
            if let Ok(s) = secs.parse::<f64>() {
                phases.insert(phase.to_string(), s);
            }
        }
    }
    phases
}

/// CPU seconds (user + system) of this process's finished and waited-for children, and theirs,
/// and their minor page faults (`ru_minflt`): getrusage(RUSAGE_CHILDREN). The difference around
/// one child is that child's CPU time, which other processes' load changes much less than
/// wall-clock time. NaNs where not available.
fn children_usage() -> (f64, f64) {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        #[repr(C)]
        struct Timeval {
            sec: i64,
            usec: i64,
        }
        #[repr(C)]
        struct Rusage {
            utime: Timeval,
            stime: Timeval,
            // maxrss, ixrss, idrss, isrss, minflt, ...
            rest: [i64; 14],
        }
        extern "C" {
            fn getrusage(who: i32, usage: *mut Rusage) -> i32;
        }
        const RUSAGE_CHILDREN: i32 = -1;
        let mut u = Rusage { utime: Timeval { sec: 0, usec: 0 }, stime: Timeval { sec: 0, usec: 0 }, rest: [0; 14] };
        // SAFETY: getrusage writes one struct rusage, whose layout on 64-bit Linux this is.
        if unsafe { getrusage(RUSAGE_CHILDREN, &mut u) } == 0 {
            let t = |v: &Timeval| v.sec as f64 + v.usec as f64 * 1e-6;
            return (t(&u.utime) + t(&u.stime), u.rest[4] as f64);
        }
    }
    (f64::NAN, f64::NAN)
}

/// One finished command: wall-clock seconds, CPU seconds (its and its children's), its output.
pub struct Run {
    pub wall: f64,
    pub cpu: f64,
    /// Minor page faults of the process(es).
    pub faults: f64,
    pub out: Output,
}

/// Runs a command with no input and captured output, timed; an error names it with its stderr.
fn timed(cmd: &mut Command) -> Result<Run> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (cpu, faults) = children_usage();
    let t = Instant::now();
    let out = cmd.output().map_err(|e| format!("could not run `{}`: {e}", crate::display(cmd)))?;
    let wall = t.elapsed().as_secs_f64();
    let (cpu_after, faults_after) = children_usage();
    let (cpu, faults) = (cpu_after - cpu, faults_after - faults);
    if !out.status.success() {
        let mut msg = format!("`{}` failed ({})", crate::display(cmd), crate::describe_status(out.status));
        for line in String::from_utf8_lossy(&out.stderr).lines().take(20) {
            msg.push_str("\n        ");
            msg.push_str(line);
        }
        return Err(msg);
    }
    Ok(Run { wall, cpu, faults, out })
}

/// Waits until no filler of cdpc's cache folder `cache` runs (an exclusive `flock` on its
/// `fill.lock`, which each filler holds shared: compiler/src/front/cuda/cache.rs, `Fill`): the headers
/// a compilation leaves for later are made by a process of their own after it, which the
/// compilation's time does not include, and the next compilation timed must find the cache as
/// that compilation left it (not half made, nor a filler beside it on the CPU).
fn wait_for_fillers(cache: &Path) {
    if cache.is_dir() {
        let _ = Command::new("flock").arg("-x").arg(cache.join("fill.lock")).arg("true").status();
    }
}

/// cdpc's command for `job`, with `cache` as its cache folder (`CDPC_CACHE_DIR`).
fn cdpc_cmd(tools: &Tools, job: &Job, output: &Path, time_flag: bool, cache: &Path, preamble: bool, plain: bool) -> Command {
    let mut c = tools.cdpc_command();
    if plain {
        c.arg("-fno-launch-optimizations");
    }
    c.env("CDPC_CACHE_DIR", cache);
    if preamble {
        c.env_remove("CDPC_PREAMBLE");
    } else {
        c.env("CDPC_PREAMBLE", "0");
    }
    if time_flag {
        c.arg("--time");
    }
    if let Some(corpus) = &job.corpus {
        // Clang (a `.cu` file is CUDA C++) and the device object alone, like nvcc's
        // `-rdc=true -cubin`: `--emit obj` leaves out the host object `-dc` writes by default.
        c.args(["-dc", "--emit", "obj"]).args(&corpus.args).args(&corpus.cdpc_args);
    }
    c.arg(&job.path).arg("-o").arg(output);
    c
}

/// Whether nvcc builds a corpus file with its options (one untimed run).
fn nvcc_builds(tools: &Tools, job: &Job, out_dir: &Path) -> bool {
    let mut nvcc = Command::new(&tools.nvcc);
    nvcc.args(["-x", "cu", "-rdc=true", "-cubin"]).arg(format!("-arch={ARCH}")).arg(&job.path);
    nvcc.arg("-o").arg(out_dir.join(format!("{}.probe.o", job.name)));
    if let Some(corpus) = &job.corpus {
        nvcc.args(&corpus.args);
    }
    timed(&mut nvcc).is_ok()
}

/// One program to measure.
struct Job {
    name: String,
    path: PathBuf,
    generated: bool,
    corpus: Option<CorpusOptions>,
}

/// A corpus file's Makefile options, for both compilers (`-I`, `-D`, `--default-stream`),
/// and cdpc's own (the table's `-f...` words: `-flegacy-warp-intrinsics` for KLAP's QT).
struct CorpusOptions {
    args: Vec<OsString>,
    cdpc_args: Vec<OsString>,
}

fn corpus_root(root: &Path) -> PathBuf {
    root.join("../shared/corpus")
}

/// The corpus files of `tests/corpus-programs.txt` (the table tests/corpus.rs reads), with
/// their Makefiles' options; none when `../shared/corpus` is not there. KLAP's
/// `cub/cub/cub.cuh` comes from a shim folder that includes the toolkit's CUB, as in the tests.
fn corpus_jobs(root: &Path, bench_dir: &Path) -> Result<Vec<Job>> {
    let corpus = corpus_root(root);
    if !corpus.is_dir() {
        println!("bench-compile: no corpus at {}: its files are not measured", corpus.display());
        return Ok(Vec::new());
    }
    let shim = bench_dir.join("corpus-shim");
    fs::create_dir_all(shim.join("cub/cub")).map_err(|e| format!("creating {}: {e}", shim.display()))?;
    fs::write(shim.join("cub/cub/cub.cuh"), "#include <cub/cub.cuh>\n").map_err(|e| format!("writing the CUB shim: {e}"))?;
    let table_path = root.join("tests/corpus-programs.txt");
    let table = fs::read_to_string(&table_path).map_err(|e| format!("reading {}: {e}", table_path.display()))?;
    let mut jobs = Vec::new();
    for line in table.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 3 {
            return Err(format!("{}: bad line `{line}`", table_path.display()));
        }
        let path = corpus.join(w[1]);
        let mut args: Vec<OsString> = Vec::new();
        let mut include = |dir: &Path| {
            let mut a = OsString::from("-I");
            a.push(dir);
            args.push(a);
        };
        include(path.parent().unwrap_or(&corpus));
        let mut cdpc_args = Vec::new();
        for word in &w[3..] {
            if word.starts_with('-') {
                cdpc_args.push(OsString::from(word));
            } else {
                include(&corpus.join(word));
            }
        }
        include(&shim);
        args.push("-DcudaThreadSynchronize=cudaDeviceSynchronize".into());
        if w[2] == "per-thread" {
            args.extend(["--default-stream".into(), "per-thread".into()]);
        }
        jobs.push(Job { name: format!("corpus_{}", w[0]), path, generated: false, corpus: Some(CorpusOptions { args, cdpc_args }) });
    }
    Ok(jobs)
}

pub fn ptxas_cmd(tools: &Tools, ptx: &Path, obj: &Path) -> Command {
    let mut c = Command::new(&tools.ptxas);
    c.arg(format!("-arch={ARCH}")).arg("-c").arg(ptx).arg("-o").arg(obj);
    c
}

pub fn nvlink_cmd(tools: &Tools, obj: &Path, cubin: &Path) -> Command {
    let mut c = Command::new(&tools.nvlink);
    let mut lib = OsString::from("-L");
    lib.push(&tools.lib_dir);
    c.arg(format!("-arch={ARCH}")).arg(obj).arg(lib).arg("-lcudadevrt").arg("-o").arg(cubin);
    c
}

/// One program: warm-up, then `repeat` rounds of cdpc, nvcc (+ nvlink), and in the fallback
/// mode cdpc --emit ptx, ptxas and nvlink.
fn measure(tools: &Tools, job: &Job, out_dir: &Path, opts: &Options, phase_source: PhaseSource, m: &mut Measured) -> Result<()> {
    let o = |ext: &str| out_dir.join(format!("{}.{ext}", m.name));
    let (cdpc_cubin, nvcc_obj, nvcc_cubin) = (o("cdpc.cubin"), o("nvcc.o"), o("nvcc.cubin"));
    let (ptx, obj, sep_cubin) = (o("ptx"), o("sep.o"), o("sep.cubin"));
    let time_flag = phase_source == PhaseSource::TimeFlag;
    // CUDA C++ goes through Clang, whose precompiled headers cdpc caches: the warm runs share
    // the bench's cache, each cold run has an empty one.
    let cu = job.path.extension().is_some_and(|e| e == "cu");
    let warm_cache = out_dir.join("cache");
    let cold_cache = out_dir.join(format!("{}.cold-cache", m.name));

    let cdpc_as = |cache: &Path, preamble: bool, plain: bool| -> Result<(Run, BTreeMap<String, f64>)> {
        let _ = fs::remove_file(&cdpc_cubin);
        let run = timed(&mut cdpc_cmd(tools, job, &cdpc_cubin, time_flag, cache, preamble, plain));
        wait_for_fillers(cache);
        let run = run?;
        if !cdpc_cubin.is_file() {
            return Err(format!("cdpc exited 0 but wrote no {}", cdpc_cubin.display()));
        }
        let phases = if time_flag { parse_time_lines(&run.out.stderr) } else { BTreeMap::new() };
        Ok((run, phases))
    };
    let cdpc_in = |cache: &Path, preamble: bool| cdpc_as(cache, preamble, false);
    let cdpc = || cdpc_in(&warm_cache, true);
    // The samples' plain build beside the default one.
    let plain = !job.generated && job.corpus.is_none();
    let cdpc_plain = || cdpc_as(&warm_cache, true, true).map(|(run, _)| run);
    let cdpc_first = || cdpc_in(&warm_cache, false).map(|(run, _)| run);
    let cdpc_cold = || -> Result<Run> {
        let _ = fs::remove_dir_all(&cold_cache);
        let run = cdpc_in(&cold_cache, true).map(|(run, _)| run);
        let _ = fs::remove_dir_all(&cold_cache);
        run
    };
    let nvcc_run = || -> Result<(Run, Run)> {
        let _ = fs::remove_file(&nvcc_cubin);
        let mut nvcc = Command::new(&tools.nvcc);
        nvcc.args(["-x", "cu", "-rdc=true", "-cubin"]).arg(format!("-arch={ARCH}")).arg(&job.path).arg("-o").arg(&nvcc_obj);
        if let Some(corpus) = &job.corpus {
            // a relocatable object, as cdpc -dc writes: no device link
            nvcc.args(&corpus.args);
            let a = timed(&mut nvcc)?;
            let none = Run { wall: 0.0, cpu: 0.0, faults: 0.0, out: std::process::Output { status: Default::default(), stdout: Vec::new(), stderr: Vec::new() } };
            return Ok((a, none));
        }
        let a = timed(&mut nvcc)?;
        let b = timed(&mut nvlink_cmd(tools, &nvcc_obj, &nvcc_cubin))?;
        Ok((a, b))
    };
    // `-dc`, what a build runs: cdpc's first, second and third compilation in a new cache
    // folder, against `nvcc -dc`.
    let dc_object = o("dc.o");
    let dc_cache = out_dir.join(format!("{}.dc-cache", m.name));
    let cdpc_dc = || -> Result<f64> {
        let corpus = job.corpus.as_ref().expect("corpus files only");
        let mut c = tools.cdpc_command();
        c.env("CDPC_CACHE_DIR", &dc_cache).env_remove("CDPC_PREAMBLE");
        c.args(["-dc", &format!("-arch={ARCH}")]).args(&corpus.args).args(&corpus.cdpc_args).arg(&job.path).arg("-o").arg(&dc_object);
        let run = timed(&mut c);
        wait_for_fillers(&dc_cache);
        Ok(run?.wall)
    };
    let nvcc_dc = || -> Result<f64> {
        let corpus = job.corpus.as_ref().expect("corpus files only");
        let mut c = Command::new(&tools.nvcc);
        c.args(["-dc", &format!("-arch={ARCH}")]).args(&corpus.args).arg(&job.path).arg("-o").arg(o("nvcc-dc.o"));
        Ok(timed(&mut c)?.wall)
    };
    let separate = || -> Result<(f64, f64, f64)> {
        let mut emit = tools.cdpc_command();
        emit.arg(&job.path).args(["--emit", "ptx", "-o"]).arg(&ptx);
        let a = timed(&mut emit)?.wall;
        let b = timed(&mut ptxas_cmd(tools, &ptx, &obj))?.wall;
        let c = timed(&mut nvlink_cmd(tools, &obj, &sep_cubin))?.wall;
        Ok((a, b, c))
    };

    if !opts.tiny {
        // Warm-up: page cache, dynamic loader, and for CUDA C++ the cache (a preamble is
        // made for its second sight, by the filler after it); the results are dropped.
        cdpc()?;
        if cu {
            cdpc()?;
        }
        if plain {
            cdpc_plain()?;
        }
        nvcc_run()?;
        if !time_flag {
            separate()?;
        }
        if job.corpus.is_some() {
            nvcc_dc()?;
        }
    }
    for _ in 0..opts.repeat {
        if job.corpus.is_some() && !opts.tiny {
            let _ = fs::remove_dir_all(&dc_cache);
            m.dc_first.push(cdpc_dc()?);
            m.dc_second.push(cdpc_dc()?);
            m.dc_warm.push(cdpc_dc()?);
            let _ = fs::remove_dir_all(&dc_cache);
            m.nvcc_dc.push(nvcc_dc()?);
        }
        let (run, phases) = cdpc()?;
        m.cdpc.push(run.wall);
        m.cdpc_cpu.push(run.cpu);
        for (phase, s) in phases {
            m.phases.entry(phase).or_default().push(s);
        }
        if plain && !opts.tiny {
            m.cdpc_plain.push(cdpc_plain()?.wall);
        }
        if cu && !opts.tiny {
            m.cdpc_first.push(cdpc_first()?.wall);
            let run = cdpc_cold()?;
            m.cdpc_cold.push(run.wall);
            m.cdpc_cold_cpu.push(run.cpu);
        }
        let (a, b) = nvcc_run()?;
        m.nvcc_only.push(a.wall);
        m.nvcc_nvlink.push(b.wall);
        m.nvcc_total.push(a.wall + b.wall);
        m.nvcc_cpu.push(a.cpu + b.cpu);
        if !time_flag {
            let (e, p, l) = separate()?;
            for (k, v) in [("emit-ptx", e), ("ptxas", p), ("nvlink", l)] {
                m.phases.entry(k.to_string()).or_default().push(v);
            }
        }
    }
    Ok(())
}

/// The 1-, 5- and 15-minute load averages from /proc/loadavg (zeros where unreadable).
pub fn load_average() -> [f64; 3] {
    let text = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut v = text.split_whitespace().map(|w| w.parse::<f64>().unwrap_or(0.0));
    [v.next().unwrap_or(0.0), v.next().unwrap_or(0.0), v.next().unwrap_or(0.0)]
}

pub use gpu_plot::plot_gpu;
pub use klap_plot::plot_klap;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_lines_are_parsed_and_other_lines_ignored() {
        let err = b"warning: something\ntime: read 0.000012\ntime: llvm-opt-ptx 0.0125\n\
                    time: total 0.05\ntime: bogus\ntime: parse x\n";
        let p = parse_time_lines(err);
        assert_eq!(p.len(), 3);
        assert_eq!(p["read"], 0.000012);
        assert_eq!(p["llvm-opt-ptx"], 0.0125);
        assert_eq!(p["total"], 0.05);
    }

    #[test]
    fn options() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let o = parse_options(&a(&["--sizes", "1,50", "--repeat=3"])).unwrap();
        assert_eq!(o.sizes, vec![1, 50]);
        assert_eq!(o.repeat, 3);
        let t = parse_options(&a(&["--tiny"])).unwrap();
        assert!(t.tiny && t.repeat == 1 && t.sizes == vec![1]);
        assert!(parse_options(&a(&["--sizes", "0"])).is_err());
        assert!(parse_options(&a(&["--bogus"])).is_err());
    }
}
