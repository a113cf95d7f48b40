//! The host side (feature `loader`): sample manifests, a CUDA driver-API loader that dlopens
//! libcuda (no CUDA or GPU needed to build), result checks and the differential run behind
//! `cdpc-run` and `cdpc run`. No LLVM.

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
