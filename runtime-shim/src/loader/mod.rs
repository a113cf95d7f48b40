//! The host side (feature `loader`): sample manifests, a CUDA driver-API loader that dlopens
//! libcuda (no CUDA or GPU needed to build), result checks and the differential run behind
//! `cdpc-run` and `cdpc run`. No LLVM.
//!
//! The files: sample manifests (`manifest.rs`, the format in `samples/MANIFEST.md`), a kernel's
//! symbol from its source name (`symbols.rs`), the driver-API loader on cudarc with libcuda opened
//! at run time (`cuda.rs`: one checked run, the interleaved timing of several compilers' cubins in
//! one context, cooperative launches), device graphs built from a manifest's `[[graph]]` tables
//! and instantiated for device launch, and host-launched graphs with conditional nodes
//! (`graphs.rs`), checks and byte comparison (`compare.rs`), the timing statistics (`stats.rs`:
//! round orders, min/median/max, the seeded bootstrap interval of a ratio), and the differential
//! run and its table (`diff.rs`; a manifest's `time_alone` times each compiler's cubin in a
//! process of its own instead of interleaved).

pub mod compare;
pub mod cuda;
pub mod diff;
mod graphs;
pub mod isolate;
pub mod manifest;
pub mod stats;
pub mod symbols;

pub use compare::{check_against_manifest, compare_outputs, RunOutput, SoakChecks};
pub use cuda::{device_info, init_driver, run_sample, run_sample_many, time_interleaved, CudaError, DeviceInfo, Interleaved, LoadError, RunOptions, TimingOptions};
pub use manifest::{Abi, Arg, ElemType, Manifest, ManifestError, Num};
