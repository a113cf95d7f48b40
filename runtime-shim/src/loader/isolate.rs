//! Running one sample in a child process.
//!
//! A faulting grid leaves a sticky error (`cudaErrorIllegalAddress`, say) that poisons CUDA for
//! the rest of the process: measured on the H100, every later `cuDevicePrimaryCtxRetain` in the
//! same process returned error 700, so the samples after an expected fault all failed. The
//! differential run therefore gives each run its own process: `cdpc-run` calls itself with the
//! hidden subcommand `run-one`, which writes the result as JSON to a file the parent reads.

use super::compare::RunOutput;
use super::cuda::{run_sample, time_interleaved, CudaError, Interleaved, LoadError, RunOptions, TimingOptions};
use super::manifest::Manifest;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The name of the hidden subcommand that runs one sample for a parent process.
pub const SUBCOMMAND: &str = "run-one";

#[derive(Serialize, Deserialize)]
struct WireError {
    code: i32,
    driver_name: String,
    description: String,
    step: String,
}

impl From<&CudaError> for WireError {
    fn from(e: &CudaError) -> WireError {
        WireError { code: e.code, driver_name: e.driver_name.clone(), description: e.description.clone(), step: e.step.clone() }
    }
}

impl From<WireError> for CudaError {
    fn from(w: WireError) -> CudaError {
        CudaError { code: w.code, driver_name: w.driver_name, runtime_name: super::cuda::runtime_name(w.code), description: w.description, step: w.step }
    }
}

#[derive(Serialize, Deserialize)]
enum Wire {
    Ran { buffers: Vec<(String, Vec<u8>)>, globals: Vec<(String, Vec<u8>)>, stdout: Vec<u8>, error: Option<WireError>, times_ms: Vec<f64>, timing_problems: Vec<String> },
    NoDriver(String),
    Cuda(WireError),
    Other(String),
}

/// The child's side: runs `cubin` as `manifest` says and writes the outcome to `out`.
pub fn serve(cubin: &Path, manifest: &Path, options: &RunOptions, out: &Path) -> Result<(), String> {
    let manifest = Manifest::load(manifest).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(cubin).map_err(|e| format!("reading {}: {e}", cubin.display()))?;
    let wire = match run_sample(&bytes, &manifest, options) {
        Ok(o) => Wire::Ran { buffers: o.buffers, globals: o.globals, stdout: o.stdout, error: o.error.as_ref().map(WireError::from), times_ms: o.times_ms, timing_problems: o.timing_problems },
        Err(LoadError::NoDriver(why)) => Wire::NoDriver(why),
        Err(LoadError::Cuda(e)) => Wire::Cuda(WireError::from(&e)),
        Err(other) => Wire::Other(other.to_string()),
    };
    let text = serde_json::to_vec(&wire).map_err(|e| format!("encoding the result: {e}"))?;
    std::fs::write(out, text).map_err(|e| format!("writing {}: {e}", out.display()))
}

/// How long one run may take before it is stopped: a launch tree that never completes (a hung
/// grid) must not stall the whole differential run.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The parent's side: runs `exe run-one ...` and reads back what it found. A child that dies
/// (a signal, a driver abort) or outlives `timeout` is an error that says so, never a silent
/// success.
pub fn run_in_child(exe: &Path, cubin: &Path, manifest: &Path, options: &RunOptions, timeout: Duration) -> Result<RunOutput, LoadError> {
    let mut command = Command::new(exe);
    command.arg(SUBCOMMAND).arg(cubin).arg(manifest).args(["--repeat", &options.repeat.to_string(), "--warmup", &options.warmup.to_string()]);
    let what = format!("the run of {}", cubin.display());
    let wire: Wire = in_child(command, &what, timeout)?;
    match wire {
        Wire::Ran { buffers, globals, stdout, error, times_ms, timing_problems } => Ok(RunOutput { buffers, globals, stdout, error: error.map(CudaError::from), times_ms, timing_problems }),
        Wire::NoDriver(why) => Err(LoadError::NoDriver(why)),
        Wire::Cuda(e) => Err(LoadError::Cuda(e.into())),
        Wire::Other(message) => Err(LoadError::Isolated(message)),
    }
}

/// Runs `command --out FILE` and decodes the JSON it leaves in FILE.
fn in_child<T: serde::de::DeserializeOwned>(mut command: Command, what: &str, timeout: Duration) -> Result<T, LoadError> {
    let dir = tempfile::tempdir().map_err(|e| LoadError::Isolated(format!("making a temporary folder: {e}")))?;
    let out = dir.path().join("result.json");
    let mut child = command.arg("--out").arg(&out).spawn().map_err(|e| LoadError::Isolated(format!("starting {what}: {e}")))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LoadError::Isolated(format!("{what} did not finish within {} s (hung?) and was stopped", timeout.as_secs())));
            }
            Err(e) => return Err(LoadError::Isolated(format!("waiting for {what}: {e}"))),
        }
    };
    let text = std::fs::read(&out).map_err(|_| LoadError::Isolated(format!("{what} ended ({status}) without a result")))?;
    serde_json::from_slice(&text).map_err(|e| LoadError::Isolated(format!("reading the child's result: {e}")))
}

/// The hidden subcommand that times several cubins of one sample, interleaved.
pub const TIME_SUBCOMMAND: &str = "time-many";

#[derive(Serialize, Deserialize)]
enum TimeWire {
    Timed { times_ms: Vec<Vec<f64>>, problems: Vec<Vec<String>> },
    Failed(String),
}

/// The child's side of [`time_in_child`].
pub fn serve_timing(manifest: &Path, cubins: &[std::path::PathBuf], options: &TimingOptions, out: &Path) -> Result<(), String> {
    let manifest = Manifest::load(manifest).map_err(|e| e.to_string())?;
    let images = cubins.iter().map(|c| std::fs::read(c).map_err(|e| format!("reading {}: {e}", c.display()))).collect::<Result<Vec<_>, _>>()?;
    let wire = match time_interleaved(&images, &manifest, options) {
        Ok(t) => TimeWire::Timed { times_ms: t.times_ms, problems: t.problems },
        Err(e) => TimeWire::Failed(e.to_string()),
    };
    let text = serde_json::to_vec(&wire).map_err(|e| format!("encoding the result: {e}"))?;
    std::fs::write(out, text).map_err(|e| format!("writing {}: {e}", out.display()))
}

/// How long the interleaved timing of one sample may take.
pub const TIME_TIMEOUT: Duration = Duration::from_secs(180);

/// Times `cubins` (one per compiler) of one sample interleaved, in a process of its own:
/// `exe time-many MANIFEST CUBIN... --warmup N --rounds N --seed N --out FILE`.
pub fn time_in_child(exe: &Path, manifest: &Path, cubins: &[&Path], options: &TimingOptions, timeout: Duration) -> Result<Interleaved, LoadError> {
    let mut command = Command::new(exe);
    command.arg(TIME_SUBCOMMAND).arg(manifest).args(cubins).args(["--warmup", &options.warmup.to_string(), "--rounds", &options.rounds.to_string(), "--seed", &options.seed.to_string()]);
    let what = format!("the interleaved timing of {}", manifest.display());
    match in_child::<TimeWire>(command, &what, timeout)? {
        TimeWire::Timed { times_ms, problems } => Ok(Interleaved { times_ms, problems }),
        TimeWire::Failed(why) => Err(LoadError::Isolated(why)),
    }
}
