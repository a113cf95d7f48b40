//! The differential run: every sample from every labelled cubin folder, checked against its
//! manifest, compared byte for byte with the reference compiler's run, timed, and tabulated.
//!
//! Each compiler's checked run has a process of its own (an expected fault must not poison the
//! others); then the cubins whose checked run passed are timed together, interleaved run by
//! run in a seeded random order (`stats`, `cuda::time_interleaved`), and the table gives each
//! compiler's min, median and max and the ratio of medians with its 95% bootstrap interval,
//! calling a compiler faster or slower only where that interval excludes 1.

use super::compare::{check_against_manifest, compare_outputs, RunOutput};
use super::cuda::{Interleaved, LoadError};
use super::manifest::{Abi, Manifest};
use super::stats::{self, RatioInterval, Summary, Verdict};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A compiler's cubins: `LABEL=DIR` holding `NAME.cubin` per sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub name: String,
    pub dir: PathBuf,
}

impl Label {
    /// Parses `LABEL=DIR`.
    pub fn parse(text: &str) -> Result<Label, String> {
        match text.split_once('=') {
            Some((name, dir)) if !name.is_empty() && !dir.is_empty() => Ok(Label { name: name.into(), dir: dir.into() }),
            _ => Err(format!("`{text}`: expected LABEL=DIR, e.g. nvcc=build/nvcc")),
        }
    }

    /// The cdpc launch ABI a label stands for, from its last `-v1`/`-v2` part (`cdpc-v1`,
    /// `cdpc-v1-agg-block`).
    pub fn abi(&self) -> Option<Abi> {
        self.name.rsplit(['-', '_']).find_map(Abi::parse)
    }

    /// Whether the label stands for builds with `-flaunch-threshold` (a `threshold` part:
    /// `cdpc-v2-threshold`, `cdpc-v2-threshold-warp`).
    pub fn thresholded(&self) -> bool {
        self.name.split(['-', '_']).any(|part| part == "threshold")
    }
}

/// The result of one sample from one compiler.
#[derive(Clone, Debug)]
pub enum Cell {
    /// It ran; `reasons` lists every way it fell short of its manifest (empty: ok).
    /// `checked` is false where the checked run was skipped (`diff --no-check`): the output is
    /// then empty, the cell is only timed, and it is compared with nothing.
    Ran { output: Box<RunOutput>, reasons: Vec<String>, checked: bool },
    /// No cubin, and the manifest says this ABI cannot build the sample: not a failure.
    NotBuilt(String),
    /// No cubin where one was due, or the sample could not be started.
    Failed(String),
}

impl Cell {
    pub fn is_ok(&self) -> bool {
        match self {
            Cell::Ran { reasons, .. } => reasons.is_empty(),
            Cell::NotBuilt(_) => true,
            Cell::Failed(_) => false,
        }
    }

    /// Why the cell failed: its reasons, or why it could not run (`None` for a cell that passed).
    pub fn why(&self) -> Option<String> {
        match self {
            Cell::Ran { reasons, .. } if !reasons.is_empty() => Some(reasons.join("; ")),
            Cell::Failed(e) => Some(e.clone()),
            _ => None,
        }
    }

    fn output(&self) -> Option<&RunOutput> {
        match self {
            Cell::Ran { output, checked: true, .. } => Some(output),
            _ => None,
        }
    }

    fn ok_text(&self) -> String {
        match self {
            Cell::Ran { checked: false, reasons, .. } if reasons.is_empty() => "not checked".into(),
            Cell::Ran { reasons, .. } if reasons.is_empty() => "ok".into(),
            Cell::Ran { .. } => "FAIL".into(),
            Cell::NotBuilt(why) => format!("not built ({why})"),
            Cell::Failed(_) => "FAIL".into(),
        }
    }

    fn times(&self) -> &[f64] {
        match self {
            Cell::Ran { output, .. } => &output.times_ms,
            _ => &[],
        }
    }

    fn summary(&self) -> Option<Summary> {
        Summary::of(self.times())
    }

    /// Whether this cell's cubin is timed: it ran, passed its checks and raised no error.
    fn timeable(&self, manifest: &Manifest) -> bool {
        manifest.expect_error.is_none() && matches!(self, Cell::Ran { output, reasons, .. } if reasons.is_empty() && output.error.is_none())
    }
}

/// Judges a run against its manifest.
pub fn judge(manifest: &Manifest, outcome: Result<RunOutput, LoadError>) -> Cell {
    match outcome {
        Ok(output) => {
            let reasons = check_against_manifest(manifest, &output);
            Cell::Ran { output: Box::new(output), reasons, checked: true }
        }
        Err(e) => Cell::Failed(e.to_string()),
    }
}

/// The cell for a label whose folder has no cubin for the sample: "not built" where the ABI or
/// thresholding rules the sample out, or where the build left a `NAME.not-built` file beside the
/// cubin's place saying why (`cargo xtask gpu-bundle`: a CUDA C++ sample under a
/// kernel-language label); else a failure.
pub fn missing_cubin(manifest: &Manifest, label: &Label, path: &Path) -> Cell {
    if let Ok(why) = std::fs::read_to_string(path.with_extension("not-built")) {
        return Cell::NotBuilt(why.trim().to_string());
    }
    match label.abi() {
        Some(abi) if !manifest.abis.contains(&abi) => Cell::NotBuilt(format!("the {} launch ABI cannot build it", abi.name())),
        _ if label.thresholded() && manifest.no_threshold.is_some() => Cell::NotBuilt(format!("not with -flaunch-threshold: {}", manifest.no_threshold.as_deref().unwrap_or_default())),
        _ => Cell::Failed(format!("no cubin at {}", path.display())),
    }
}

/// One sample's results, one cell per label (in the labels' order).
#[derive(Clone, Debug)]
pub struct SampleResult {
    pub manifest: Manifest,
    pub cells: Vec<Cell>,
}

/// Runs every sample from every label's folder (needs a GPU): first each cubin's checked run
/// with `run` (the cubin's path and its manifest; `cdpc-run` runs each in its own process;
/// `Ok(None)`: not checked, the cubin is only timed, as `cdpc-run diff --no-check` asks), then the cubins that passed, timed together with `time` (interleaved, `cuda::time_interleaved`),
/// or, for a manifest with `time_alone`, each by itself with its own call of `time` (`cdpc-run`:
/// its own process), one label after another; the outputs are compared either way.
/// `progress` gets one line per cell, a failure's with its reasons; `sample_done` the results so
/// far after each sample (`cdpc-run diff` writes its results file there).
pub fn run_all(
    manifests: &[Manifest],
    labels: &[Label],
    run: impl Fn(&Path, &Manifest) -> Result<Option<super::RunOutput>, LoadError>,
    time: impl Fn(&Manifest, &[&Path]) -> Result<Interleaved, LoadError>,
    mut progress: impl FnMut(&str),
    mut sample_done: impl FnMut(&[SampleResult]),
) -> Vec<SampleResult> {
    let mut results = Vec::with_capacity(manifests.len());
    for m in manifests {
        results.push({
            let paths: Vec<PathBuf> = labels.iter().map(|l| l.dir.join(format!("{}.cubin", m.name))).collect();
            let mut cells: Vec<Cell> = labels
                .iter()
                .zip(&paths)
                .map(|(label, path)| match path.is_file() {
                    true => match run(path, m) {
                        Ok(None) => Cell::Ran { output: Box::default(), reasons: Vec::new(), checked: false },
                        outcome => judge(m, outcome.map(Option::unwrap_or_default)),
                    },
                    false => missing_cubin(m, label, path),
                })
                .collect();
            let timed: Vec<usize> = (0..cells.len()).filter(|&k| cells[k].timeable(m)).collect();
            // one timing of all the cubins together, interleaved; or, where the manifest says
            // `time_alone`, one of each cubin by itself (its own process), in the labels' order
            let groups: Vec<Vec<usize>> = match () {
                _ if timed.is_empty() => Vec::new(),
                _ if m.time_alone.is_some() => timed.iter().map(|&k| vec![k]).collect(),
                _ => vec![timed],
            };
            for group in groups {
                let group_paths: Vec<&Path> = group.iter().map(|&k| paths[k].as_path()).collect();
                let outcome = time(m, &group_paths);
                for (j, &k) in group.iter().enumerate() {
                    if let Cell::Ran { output, reasons, .. } = &mut cells[k] {
                        match &outcome {
                            Ok(t) => {
                                output.times_ms = t.times_ms.get(j).cloned().unwrap_or_default();
                                reasons.extend(t.problems.get(j).into_iter().flatten().map(|p| format!("timing: {p}")));
                            }
                            Err(e) => reasons.push(format!("timing: {e}")),
                        }
                    }
                }
            }
            for (cell, label) in cells.iter().zip(labels) {
                let time = cell.summary().map(|s| format!(", median {:.3} ms (min {:.3}, max {:.3}, {} runs)", s.median, s.min, s.max, s.runs)).unwrap_or_default();
                // a failure says why here too: a run stopped before the results file is written
                // leaves these lines alone
                let why = cell.why().map(|w| format!(": {w}")).unwrap_or_default();
                progress(&format!("{:<5} {} from {}{time}{why}", if cell.is_ok() { "ok" } else { "FAIL" }, m.name, label.name));
            }
            SampleResult { manifest: m.clone(), cells }
        });
        sample_done(&results);
    }
    results
}

/// What a `diff` run says at its end, and its results file's `result:` line: whether every
/// sample of `results` passed (`check`: their outputs were checked), and, where `results` holds
/// fewer than the run's `samples` (a run stopped early, or a file written after each sample),
/// how many it has.
pub fn verdict(results: &[SampleResult], reference: usize, check: bool, samples: usize) -> (&'static str, String) {
    let (said, verdict) = match (all_passed(results, reference), check) {
        (true, true) => ("all samples passed", "all samples passed"),
        (true, false) => ("timed only (--no-check): outputs not checked or compared", "timed only (--no-check): outputs not checked or compared"),
        (false, _) => ("SOME SAMPLES FAILED", "some samples FAILED"),
    };
    match results.len() < samples {
        true => (said, format!("unfinished, {} of {samples} samples so far; {verdict}", results.len())),
        false => (said, verdict.to_string()),
    }
}

/// Whether two cells' outputs are identical: `Some(diffs)` when both ran (empty: identical).
fn identical(manifest: &Manifest, a: &Cell, b: &Cell) -> Option<Vec<String>> {
    Some(compare_outputs(manifest, a.output()?, b.output()?))
}

fn identical_text(manifest: &Manifest, a: &Cell, b: &Cell) -> String {
    match identical(manifest, a, b) {
        None => "–".into(),
        Some(d) if d.is_empty() => "yes".into(),
        Some(_) if !manifest.deterministic => "n/a (not deterministic)".into(),
        Some(_) => "NO".into(),
    }
}

fn ms_text(s: Option<Summary>) -> String {
    s.map(|s| format!("{:.3} / {:.3} / {:.3}", s.min, s.median, s.max)).unwrap_or_else(|| "–".into())
}

/// A cell's ratio of medians to the reference's, with its 95% bootstrap interval (`seed`).
/// `c`'s ratio to `reference` with its bootstrap interval. A pure function of the two cells'
/// times and the seed, kept once computed: the table and the summary ask for the same ratios,
/// and `cdpc-run diff` writes its results file after every sample (its own bootstrap of 2,000
/// resamples for each cell each time, otherwise: minutes of a device call over a whole run).
fn ratio(c: &Cell, reference: &Cell, seed: u64) -> Option<RatioInterval> {
    type Key = (Vec<u64>, Vec<u64>, u64);
    thread_local! {
        static KEPT: std::cell::RefCell<std::collections::HashMap<Key, Option<RatioInterval>>> = Default::default();
    }
    let bits = |times: &[f64]| times.iter().map(|t| t.to_bits()).collect::<Vec<u64>>();
    let key = (bits(c.times()), bits(reference.times()), seed);
    if let Some(kept) = KEPT.with(|k| k.borrow().get(&key).copied()) {
        return kept;
    }
    let r = stats::bootstrap_ratio(c.times(), reference.times(), 0.95, stats::RESAMPLES, seed);
    KEPT.with(|k| k.borrow_mut().insert(key, r));
    r
}

/// The table: one row per sample and compared label, against the reference label. Times are
/// min / median / max (ms); the ratio is of the medians, with its 95% bootstrap interval
/// (seeded with `seed`), and the verdict says faster or slower only when the interval
/// excludes 1.
pub fn table(results: &[SampleResult], labels: &[Label], reference: usize, seed: u64) -> String {
    let r = &labels[reference].name;
    let mut out = format!("| sample | compiler | compiler output ok | {r} output ok | identical | compiler ms (min / median / max) | {r} ms (min / median / max) | ratio | 95% interval | verdict |\n");
    out.push_str("|---|---|---|---|---|---:|---:|---:|---:|---|\n");
    for s in results {
        let rc = &s.cells[reference];
        for (k, label) in labels.iter().enumerate() {
            if k == reference {
                continue;
            }
            let c = &s.cells[k];
            let (ratio_text, interval, verdict) = match ratio(c, rc, seed) {
                Some(r) => (format!("{:.2}", r.ratio), format!("{:.2}–{:.2}", r.low, r.high), r.verdict().text()),
                None => ("–".into(), "–".into(), "–"),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.manifest.name,
                label.name,
                c.ok_text(),
                rc.ok_text(),
                identical_text(&s.manifest, c, rc),
                ms_text(c.summary()),
                ms_text(rc.summary()),
                ratio_text,
                interval,
                verdict
            );
        }
    }
    out
}

/// Per compared label: how many samples it was timed on, how many it is faster, slower or not
/// shown different on (by the interval rule of [`table`]), and the geometric mean of the ratios.
pub fn summary(results: &[SampleResult], labels: &[Label], reference: usize, seed: u64) -> String {
    let r = &labels[reference].name;
    let mut out = format!("| compiler | samples timed | faster than {r} | slower | no difference shown | geometric mean of ratios |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for (k, label) in labels.iter().enumerate() {
        if k == reference {
            continue;
        }
        let ratios: Vec<RatioInterval> = results.iter().filter_map(|s| ratio(&s.cells[k], &s.cells[reference], seed)).collect();
        let count = |v: Verdict| ratios.iter().filter(|r| r.verdict() == v).count();
        let geomean = if ratios.is_empty() { "–".to_string() } else { format!("{:.3}", (ratios.iter().map(|r| r.ratio.ln()).sum::<f64>() / ratios.len() as f64).exp()) };
        let _ = writeln!(out, "| {} | {} | {} | {} | {} | {} |", label.name, ratios.len(), count(Verdict::Faster), count(Verdict::Slower), count(Verdict::Undecided), geomean);
    }
    out
}

/// Every failure, mismatch and the captured output, for the results file.
pub fn details(results: &[SampleResult], labels: &[Label], reference: usize) -> String {
    let mut out = String::new();
    for s in results {
        let mut lines = Vec::new();
        for (k, label) in labels.iter().enumerate() {
            match &s.cells[k] {
                Cell::Ran { reasons, .. } => lines.extend(reasons.iter().map(|r| format!("{}: {r}", label.name))),
                Cell::Failed(why) => lines.push(format!("{}: {why}", label.name)),
                Cell::NotBuilt(_) => {}
            }
            if k != reference && s.manifest.deterministic {
                if let Some(diffs) = identical(&s.manifest, &s.cells[k], &s.cells[reference]) {
                    lines.extend(diffs.iter().map(|d| format!("{} against {}: {d}", label.name, labels[reference].name)));
                }
            }
        }
        let printed = s.cells.iter().filter_map(Cell::output).map(|o| &o.stdout).find(|o| !o.is_empty());
        if lines.is_empty() && printed.is_none() {
            continue;
        }
        let _ = writeln!(out, "- **{}** ({})", s.manifest.name, s.manifest.description);
        for l in lines {
            let _ = writeln!(out, "  - {l}");
        }
        if let Some(p) = printed {
            let _ = writeln!(out, "  - printed: `{}`", String::from_utf8_lossy(p).escape_debug());
        }
    }
    out
}

/// The samples timed one compiler at a time (`time_alone` in their manifests), with the reason:
/// their ratios compare runs of different processes, one after another, not interleaved rounds.
/// Empty when there are none.
pub fn timing_notes(results: &[SampleResult]) -> String {
    let mut out = String::new();
    for s in results {
        if let Some(why) = &s.manifest.time_alone {
            let _ = writeln!(
                out,
                "- **{}**: each compiler's cubin timed in a process of its own, one after another (not interleaved; its ratios include \
                 whatever drifts between processes): {why}",
                s.manifest.name
            );
        }
    }
    out
}

/// Whether the whole run passed: every cell ok, deterministic outputs identical to the reference.
pub fn all_passed(results: &[SampleResult], reference: usize) -> bool {
    results.iter().all(|s| s.cells.iter().all(Cell::is_ok) && (!s.manifest.deterministic || s.cells.iter().all(|c| identical(&s.manifest, c, &s.cells[reference]).is_none_or(|d| d.is_empty()))))
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    civil_date(secs / 86400)
}

/// Days since 1970-01-01 to YYYY-MM-DD (Howard Hinnant's civil_from_days).
pub fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Loads every `NAME.toml` in `dir`, sorted by name.
pub fn load_manifests(dir: &Path) -> Result<Vec<Manifest>, String> {
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    paths.iter().map(|p| Manifest::load(p).map_err(|e| e.to_string())).collect()
}
