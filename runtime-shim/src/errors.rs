//! `cudaError_t` values the device runtime returns (from `driver_types.h`, CUDA 13.5).

pub const SUCCESS: i32 = 0;

/// Named error codes the kernel language predefines, and that loaders print by name.
pub const NAMED_ERRORS: &[(&str, i32)] = &[
    ("cudaSuccess", 0),
    ("cudaErrorInvalidValue", 1),
    ("cudaErrorMemoryAllocation", 2),
    ("cudaErrorInitializationError", 3),
    ("cudaErrorCudartUnloading", 4),
    ("cudaErrorInvalidConfiguration", 9),
    ("cudaErrorInvalidDevicePointer", 17),
    ("cudaErrorStubLibrary", 34),
    ("cudaErrorInsufficientDriver", 35),
    ("cudaErrorDevicesUnavailable", 46),
    ("cudaErrorLaunchMaxDepthExceeded", 65),
    ("cudaErrorSyncDepthExceeded", 68),
    ("cudaErrorLaunchPendingCountExceeded", 69),
    ("cudaErrorNoDevice", 100),
    ("cudaErrorInvalidDevice", 101),
    ("cudaErrorInvalidKernelImage", 200),
    ("cudaErrorNoKernelImageForDevice", 209),
    ("cudaErrorInvalidPtx", 218),
    ("cudaErrorInvalidResourceHandle", 400),
    ("cudaErrorSymbolNotFound", 500),
    ("cudaErrorNotReady", 600),
    ("cudaErrorIllegalAddress", 700),
    ("cudaErrorLaunchOutOfResources", 701),
    ("cudaErrorLaunchTimeout", 702),
    ("cudaErrorAssert", 710),
    ("cudaErrorHardwareStackError", 714),
    ("cudaErrorIllegalInstruction", 715),
    ("cudaErrorMisalignedAddress", 716),
    ("cudaErrorInvalidAddressSpace", 717),
    ("cudaErrorInvalidPc", 718),
    ("cudaErrorLaunchFailure", 719),
    ("cudaErrorCooperativeLaunchTooLarge", 720),
    ("cudaErrorNotSupported", 801),
    ("cudaErrorCdpNotSupported", 811),
    ("cudaErrorCdpVersionMismatch", 812),
    ("cudaErrorUnknown", 999),
];

/// The name of an error code, if it is one of [`NAMED_ERRORS`].
pub fn error_name(code: i32) -> Option<&'static str> {
    NAMED_ERRORS.iter().find(|(_, value)| *value == code).map(|(name, _)| *name)
}

/// `cudaDeviceAttr` values the kernel language predefines for `cudaDeviceGetAttribute`.
pub const NAMED_DEVICE_ATTRIBUTES: &[(&str, i32)] = &[
    ("cudaDevAttrMaxThreadsPerBlock", 1),
    ("cudaDevAttrMaxBlockDimX", 2),
    ("cudaDevAttrMaxGridDimX", 5),
    ("cudaDevAttrMaxSharedMemoryPerBlock", 8),
    ("cudaDevAttrWarpSize", 10),
    ("cudaDevAttrClockRate", 13),
    ("cudaDevAttrMultiProcessorCount", 16),
    ("cudaDevAttrComputeCapabilityMajor", 75),
    ("cudaDevAttrComputeCapabilityMinor", 76),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (name, code) in NAMED_ERRORS {
            assert_eq!(error_name(*code), Some(*name));
        }
        assert_eq!(error_name(12345), None);
    }
}
