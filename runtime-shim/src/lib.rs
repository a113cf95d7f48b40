//! The CUDA device runtime (libcudadevrt) as data.
//!
//! Everything a compiler needs to know to call the device runtime from generated code: the
//! entry points with their C and PTX signatures at 32 and 64 bits, the predefined stream
//! handles, the flags, the error codes and the limits. No LLVM, no CUDA: a front end in any
//! language can depend on this crate to check and lower its own launches.
//!
//! Sources: `cuda_device_runtime_api.h` and `driver_types.h` from the `nvidia-cuda-runtime`
//! 13.5.37 wheel, the CUDA programming guide (../shared/seeds) and measurements on an H100
//! (../shared/ABI-NOTES.md).

pub mod entry_points;
pub mod errors;
pub mod limits;
pub mod streams;
pub mod types;

#[cfg(feature = "loader")]
pub mod loader;
