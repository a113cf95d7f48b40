//! `cdpc-run`: runs linked cubins as their sample manifests say, on a machine with a GPU and
//! nothing else (no Rust, no LLVM, no CUDA toolkit: libcuda is opened at run time).
//!
//! ```text
//! cdpc-run sample CUBIN MANIFEST [--repeat N] [--warmup N]
//! cdpc-run soak CUBIN MANIFEST --runs N [--limit SECONDS]
//! cdpc-run diff --manifests DIR --cubins LABEL=DIR... [--reference LABEL] [--repeat N]
//!               [--warmup N] [--seed N] [--results FILE] [--no-check]
//! cdpc-run device
//! ```

use runtime_shim::loader::diff::{self, Label};
use runtime_shim::loader::isolate;
use runtime_shim::loader::stats;
use runtime_shim::loader::{check_against_manifest, device_info, run_sample, run_sample_many, Manifest, RunOptions, SoakChecks, TimingOptions};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  cdpc-run sample CUBIN MANIFEST [--repeat N] [--warmup N]
      run one cubin as MANIFEST (samples/NAME.toml) says, check it, print ok/FAIL and the
      median launch-tree time of N timed runs (default 20, after 3 warm-up runs)
  cdpc-run soak CUBIN MANIFEST --runs N [--limit SECONDS]
      run one cubin up to N times in one context, each run with its module loaded afresh,
      and check each run as `sample` does (and, for a deterministic manifest, byte for byte
      against this process's first run); print `ok K MS` or `FAIL K MS: why` per run as it
      ends; stop after a run that ended in a CUDA error (a sticky error poisons the context:
      start a new process for the runs left); a run still going after SECONDS (default 20)
      prints `HUNG K` on standard error and ends the process with status 3; else exit 1 if
      any run failed
  cdpc-run diff --manifests DIR --cubins LABEL=DIR [--cubins LABEL=DIR ...]
                [--reference LABEL] [--repeat N] [--warmup N] [--seed N] [--results FILE]
                [--no-check]
      run every DIR/NAME.toml from every LABEL's DIR/NAME.cubin, check each (one process per
      run), compare outputs byte for byte with the reference (default: the label `nvcc`,
      else the first); then time the cubins that passed together, interleaved: N warm-up runs
      of each (default 3), then --repeat rounds (default 30) in each of which every compiler
      runs once, in a random order drawn from --seed (a manifest with `time_alone`: each
      cubin timed by itself, in a process of its own, one label after another); print one
      table (min / median / max ms, the ratio of medians to the reference with its 95%
      bootstrap interval, faster/slower only where the interval excludes 1) and write it
      with the device, driver, date and command line to FILE (markdown); --no-check skips
      the checked runs and the comparison and only times (for cubins whose outputs a soak
      or an earlier diff has checked: the checked runs take a process each)
  cdpc-run device
      print the GPU and driver this machine has
";

struct Common {
    options: RunOptions,
    seed: u64,
}

fn number(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<usize, String> {
    let v = args.next().ok_or_else(|| format!("{flag} needs a number"))?;
    v.parse().map_err(|_| format!("{flag}: `{v}` is not a number"))
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let result = match argv.get(1).map(String::as_str) {
        Some("sample") => sample(argv[2..].to_vec()),
        Some("soak") => soak(argv[2..].to_vec()),
        Some("diff") => diff_cmd(&argv),
        Some(isolate::SUBCOMMAND) => run_one(argv[2..].to_vec()),
        Some(isolate::TIME_SUBCOMMAND) => time_many(argv[2..].to_vec()),
        Some("device") => device_info()
            .map(|d| {
                println!("{d}");
                ExitCode::SUCCESS
            })
            .map_err(|e| e.to_string()),
        Some("-h") | Some("--help") | Some("help") => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(format!("expected a subcommand\n\n{USAGE}")),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cdpc-run: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse_common(flag: &str, args: &mut impl Iterator<Item = String>, c: &mut Common) -> Result<bool, String> {
    match flag {
        "--repeat" => c.options.repeat = number(args, flag)?,
        "--warmup" => c.options.warmup = number(args, flag)?,
        "--seed" => {
            let v = args.next().ok_or("--seed needs a number")?;
            c.seed = v.parse().map_err(|_| format!("--seed: `{v}` is not a number"))?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn sample(args: Vec<String>) -> Result<ExitCode, String> {
    let mut common = Common { options: RunOptions::default(), seed: stats::DEFAULT_SEED };
    let mut positional = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if !parse_common(&a, &mut it, &mut common)? {
            if a.starts_with("--") {
                return Err(format!("unknown option `{a}`\n\n{USAGE}"));
            }
            positional.push(a);
        }
    }
    let [cubin, manifest] = <[String; 2]>::try_from(positional).map_err(|_| format!("`sample` needs CUBIN and MANIFEST\n\n{USAGE}"))?;
    let manifest = Manifest::load(&PathBuf::from(&manifest)).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&cubin).map_err(|e| format!("cannot read {cubin}: {e}"))?;
    let output = run_sample(&bytes, &manifest, &common.options).map_err(|e| e.to_string())?;
    if !output.stdout.is_empty() {
        println!("printed:\n{}", String::from_utf8_lossy(&output.stdout));
    }
    let reasons = check_against_manifest(&manifest, &output);
    let time = stats::Summary::of(&output.times_ms).map(|s| format!(" (min {:.3}, median {:.3}, max {:.3} ms of {} runs)", s.min, s.median, s.max, s.runs)).unwrap_or_default();
    if reasons.is_empty() {
        println!("ok   {}{time}", manifest.name);
        Ok(ExitCode::SUCCESS)
    } else {
        println!("FAIL {}{time}", manifest.name);
        for r in reasons {
            println!("  {r}");
        }
        Ok(ExitCode::FAILURE)
    }
}

/// Exit status of `soak` when a run did not finish within its limit.
const HUNG_STATUS: i32 = 3;

fn soak(args: Vec<String>) -> Result<ExitCode, String> {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    let (mut positional, mut runs, mut limit) = (Vec::new(), None, 20);
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = Some(number(&mut it, &a)?),
            "--limit" => limit = number(&mut it, &a)?,
            other if other.starts_with("--") => return Err(format!("unknown option `{other}`\n\n{USAGE}")),
            _ => positional.push(a),
        }
    }
    let [cubin, manifest] = <[String; 2]>::try_from(positional).map_err(|_| format!("`soak` needs CUBIN and MANIFEST\n\n{USAGE}"))?;
    let runs = runs.ok_or("`soak` needs --runs N")?;
    let manifest = Manifest::load(&PathBuf::from(&manifest)).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&cubin).map_err(|e| format!("cannot read {cubin}: {e}"))?;
    // The watchdog: a run (the context's creation counted in the first) that has not ended
    // within the limit is reported and ends the process; the driver tears the context down.
    // Shared with it: the number of the run going on and when it started.
    let run = Arc::new(Mutex::new((0usize, Instant::now())));
    {
        let run = Arc::clone(&run);
        let limit = Duration::from_secs(limit as u64);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            let (k, started) = *run.lock().unwrap_or_else(|e| e.into_inner());
            if started.elapsed() > limit {
                // To standard error: a run in progress has standard output redirected into
                // its capture of the device's printf (`StdoutCapture`), where this line was lost.
                eprintln!("HUNG {k} (still running after {} s)", limit.as_secs());
                std::process::exit(HUNG_STATUS);
            }
        });
    }
    let mut checks = SoakChecks::new(&manifest);
    let mut failed = 0;
    let made = run_sample_many(&bytes, &manifest, runs, true, |k, output| {
        let ms = run.lock().unwrap_or_else(|e| e.into_inner()).1.elapsed().as_millis();
        let reasons = checks.check(output);
        if reasons.is_empty() {
            println!("ok {k} {ms}");
        } else {
            failed += 1;
            println!("FAIL {k} {ms}: {}", reasons.join("; "));
        }
        let _ = std::io::stdout().flush();
        *run.lock().unwrap_or_else(|e| e.into_inner()) = (k + 1, Instant::now());
    })
    .map_err(|e| e.to_string())?;
    if made < runs {
        println!("stopped after {made} run(s): the last ended in a CUDA error");
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `run-one CUBIN MANIFEST --repeat N --warmup N --out FILE`: the child side of `diff`.
fn run_one(args: Vec<String>) -> Result<ExitCode, String> {
    let mut common = Common { options: RunOptions { capture_stdout: true, ..RunOptions::default() }, seed: stats::DEFAULT_SEED };
    let (mut positional, mut out) = (Vec::new(), None);
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if parse_common(&a, &mut it, &mut common)? {
            continue;
        }
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a file")?)),
            _ => positional.push(PathBuf::from(a)),
        }
    }
    let [cubin, manifest] = positional.as_slice() else { return Err(format!("{} needs CUBIN MANIFEST", isolate::SUBCOMMAND)) };
    isolate::serve(cubin, manifest, &common.options, &out.ok_or("--out is required")?)?;
    Ok(ExitCode::SUCCESS)
}

/// `time-many MANIFEST CUBIN... --warmup N --rounds N --seed N --out FILE`: the timing side of
/// `diff`, every cubin in one context, interleaved.
fn time_many(args: Vec<String>) -> Result<ExitCode, String> {
    let mut options = TimingOptions::default();
    let (mut positional, mut out) = (Vec::new(), None);
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--warmup" => options.warmup = number(&mut it, &a)?,
            "--rounds" => options.rounds = number(&mut it, &a)?,
            "--seed" => {
                let v = it.next().ok_or("--seed needs a number")?;
                options.seed = v.parse().map_err(|_| format!("--seed: `{v}` is not a number"))?;
            }
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a file")?)),
            _ => positional.push(PathBuf::from(a)),
        }
    }
    let Some((manifest, cubins)) = positional.split_first() else { return Err(format!("{} needs MANIFEST CUBIN...", isolate::TIME_SUBCOMMAND)) };
    isolate::serve_timing(manifest, cubins, &options, &out.ok_or("--out is required")?)?;
    Ok(ExitCode::SUCCESS)
}

/// Timed rounds per cell unless `--repeat` says otherwise: 30 rounds are what the method asks
/// for at the least (docs/gpu-benchmarks.md).
const DEFAULT_ROUNDS: usize = 30;

fn diff_cmd(argv: &[String]) -> Result<ExitCode, String> {
    let mut common = Common { options: RunOptions { repeat: DEFAULT_ROUNDS, ..RunOptions::default() }, seed: stats::DEFAULT_SEED };
    let mut manifests_dir = None;
    let mut labels = Vec::new();
    let mut reference = None;
    let mut results_file = None;
    let mut check = true;
    let mut it = argv[2..].iter().cloned();
    while let Some(a) = it.next() {
        if parse_common(&a, &mut it, &mut common)? {
            continue;
        }
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
        match a.as_str() {
            "--manifests" => manifests_dir = Some(PathBuf::from(value(&a)?)),
            "--cubins" => {
                labels.push(Label::parse(&value(&a)?)?);
                // `--cubins A=x B=y`: further LABEL=DIR words belong to it too
            }
            "--reference" => reference = Some(value(&a)?),
            "--results" => results_file = Some(PathBuf::from(value(&a)?)),
            "--no-check" => check = false,
            other if other.contains('=') && !other.starts_with('-') && !labels.is_empty() => labels.push(Label::parse(other)?),
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    let manifests_dir = manifests_dir.ok_or("diff needs --manifests DIR")?;
    if labels.is_empty() {
        return Err("diff needs at least one --cubins LABEL=DIR".into());
    }
    let reference = match reference {
        Some(r) => labels.iter().position(|l| l.name == r).ok_or_else(|| format!("--reference {r}: no such label"))?,
        None => labels.iter().position(|l| l.name == "nvcc").unwrap_or(0),
    };
    let manifests = diff::load_manifests(&manifests_dir)?;
    if manifests.is_empty() {
        return Err(format!("no manifests (NAME.toml) in {}", manifests_dir.display()));
    }
    let device = device_info().map_err(|e| e.to_string())?;
    println!("device: {device}");
    // Each run in its own process: an expected fault must not poison the runs after it.
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    // The checked run alone (repeat 0); the timing comes after, all compilers together.
    let checked = RunOptions { repeat: 0, ..common.options };
    let run = |cubin: &std::path::Path, m: &Manifest| match check {
        true => isolate::run_in_child(&exe, cubin, &manifests_dir.join(format!("{}.toml", m.name)), &checked, isolate::RUN_TIMEOUT).map(Some),
        false => Ok(None),
    };
    let timing = TimingOptions { warmup: common.options.warmup, rounds: common.options.repeat, seed: common.seed };
    let time = |m: &Manifest, cubins: &[&std::path::Path]| isolate::time_in_child(&exe, &manifests_dir.join(format!("{}.toml", m.name)), cubins, &timing, isolate::TIME_TIMEOUT);
    let command = argv.iter().map(|a| if a.contains(' ') { format!("'{a}'") } else { a.clone() }).collect::<Vec<_>>().join(" ");
    let report = Report { labels: &labels, reference, common: &common, check, device: &device.to_string(), command: &command, samples: manifests.len() };
    // The results file is written again after each sample, so that a run stopped early (a
    // device call's time limit) leaves the samples it finished.
    let write = |results: &[diff::SampleResult]| -> Result<(), String> {
        let Some(path) = &results_file else { return Ok(()) };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(path, report.text(results)).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let mut unwritten = None;
    let results = diff::run_all(
        &manifests,
        &labels,
        run,
        time,
        |line| println!("{line}"),
        |so_far| {
            if let Err(e) = write(so_far) {
                unwritten.get_or_insert(e);
            }
        },
    );
    let table = diff::table(&results, &labels, reference, common.seed);
    let summary = diff::summary(&results, &labels, reference, common.seed);
    let details = diff::details(&results, &labels, reference);
    let notes = diff::timing_notes(&results);
    let passed = diff::all_passed(&results, reference);
    println!();
    print!("{table}");
    if !notes.is_empty() {
        println!();
        print!("{notes}");
    }
    println!();
    print!("{summary}");
    if !details.is_empty() {
        println!();
        print!("{details}");
    }
    println!("\n{}", report.verdict(&results).0);
    if let Some(e) = unwritten {
        return Err(e);
    }
    if let Some(path) = &results_file {
        // written after the last sample
        println!("results written to {}", path.display());
    }
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What a `diff` run's results file says of the run, beside its results.
struct Report<'a> {
    labels: &'a [Label],
    reference: usize,
    common: &'a Common,
    check: bool,
    device: &'a str,
    command: &'a str,
    /// The samples the run has to do.
    samples: usize,
}

impl Report<'_> {
    /// What the run says at its end, and the results file's `result:` line; a run with
    /// samples still to do says so there.
    fn verdict(&self, results: &[diff::SampleResult]) -> (&'static str, String) {
        diff::verdict(results, self.reference, self.check, self.samples)
    }

    /// The results file for `results`.
    fn text(&self, results: &[diff::SampleResult]) -> String {
        let (labels, reference, check, device, command) = (self.labels, self.reference, self.check, self.device, self.command);
        let table = diff::table(results, labels, reference, self.common.seed);
        let summary = diff::summary(results, labels, reference, self.common.seed);
        let details = diff::details(results, labels, reference);
        let notes = diff::timing_notes(results);
        let verdict = self.verdict(results).1;
        let labels_text = labels.iter().map(|l| format!("`{}` = {}", l.name, l.dir.display())).collect::<Vec<_>>().join(", ");
        format!(
            "# Differential GPU run: cdpc against {reference_name}\n\n\
             - date: {date}\n\
             - device: {device}\n\
             - command: `{command}`\n\
             - cubins: {labels_text}\n\
             - timing: every compiler's cubins of a sample loaded in one process and timed interleaved: {warmup} warm-up \
             runs of each, then {repeat} rounds in each of which every compiler runs once, in a random order (seed {seed}); \
             CUDA events recorded around the top-level launch and the completion of its launch tree (ms); min / median / max \
             per compiler (samples whose manifest says `time_alone`: each compiler's cubin in a process of its own, one after \
             another, listed below the table); ratio = compiler median / {reference_name} median, with the 95% percentile-bootstrap interval \
             ({resamples} resamples, seed {seed}); a compiler is called faster or slower only where that interval excludes 1\n\
             - identical: {identical}\n\
             - result: {verdict}\n\n\
             {table}\n{notes_section}## Summary\n\n{summary}\n{details_heading}{details}",
            reference_name = labels[reference].name,
            date = diff::today(),
            repeat = self.common.options.repeat,
            warmup = self.common.options.warmup,
            seed = self.common.seed,
            resamples = stats::RESAMPLES,
            identical = match check {
                true => format!("buffers, `__device__` globals and printed output compared byte for byte with {}'s run", labels[reference].name),
                false => "not compared (--no-check: the checked runs were skipped; the cubins were only timed)".to_string(),
            },
            details_heading = if details.is_empty() { "" } else { "## Details\n\n" },
            notes_section = if notes.is_empty() { String::new() } else { format!("## Timed one compiler at a time\n\n{notes}\n") },
        )
    }
}
