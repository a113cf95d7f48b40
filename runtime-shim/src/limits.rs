//! Limits of device-side launches.

/// The parameter-buffer limit the programming guide documents ("The maximum size of the
/// parameter buffer is 4KB"). It still applies below sm_70 and to runtimes before CUDA 12.1.
pub const PARAM_BUFFER_DOCUMENTED_MAX_BYTES: u64 = 4096;

/// The kernel-parameter limit from CUDA 12.1 on sm_70 and newer. Measured on an H100 with
/// CUDA 13.0: buffers of 4104 to 32760 bytes launch through both ABIs; nvcc refuses above
/// 32764 ("Formal parameter space overflowed").
pub const PARAM_BUFFER_MAX_BYTES_CUDA_12_1: u64 = 32764;

/// The guaranteed alignment of a buffer returned by the runtime (the guide: "always
/// guaranteed to be 64-byte aligned").
pub const PARAM_BUFFER_ALIGNMENT: u64 = 64;

/// The documented maximum nesting depth of device launches.
pub const MAX_NESTING_DEPTH: u32 = 24;

/// Default size of the pending-launch pool (`cudaLimitDevRuntimePendingLaunchCount`).
pub const DEFAULT_PENDING_LAUNCH_COUNT: u32 = 2048;
