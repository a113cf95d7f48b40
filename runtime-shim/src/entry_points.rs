//! Device-runtime entry points: their C-level signatures (what a front end type-checks
//! against) and their PTX symbols and ABI types (what a back end declares and calls).
//!
//! With CDP2 (the default since CUDA 12 and the only kind on sm_90+),
//! `cuda_device_runtime_api.h` maps each API call to a `__cudaCDP2*` symbol in libcudadevrt,
//! so that is what generated code calls. The documented launch pair keeps its plain names.

/// A parameter or return type at the C level, as the header declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CType {
    Int,
    UInt,
    SizeT,
    /// `cudaError_t`
    Error,
    /// `enum cudaDeviceAttr` (an int)
    DeviceAttr,
    VoidPtr,
    /// `void **`
    VoidPtrPtr,
    /// `int *`
    IntPtr,
    /// `cudaStream_t`
    Stream,
    /// `cudaStream_t *`
    StreamPtr,
    /// `cudaEvent_t`
    Event,
    /// `cudaEvent_t *`
    EventPtr,
    /// `dim3`
    Dim3,
}

/// How a value crosses the call boundary in PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbiType {
    /// `.b32`
    B32,
    /// `.b32` at 32 bits, `.b64` at 64 bits (pointers and `size_t`).
    Address,
    /// `.align 4 .b8 [12]`
    Dim3,
}

impl CType {
    pub fn abi(self) -> AbiType {
        match self {
            CType::Int | CType::UInt | CType::Error | CType::DeviceAttr => AbiType::B32,
            CType::Dim3 => AbiType::Dim3,
            CType::SizeT
            | CType::VoidPtr
            | CType::VoidPtrPtr
            | CType::IntPtr
            | CType::Stream
            | CType::StreamPtr
            | CType::Event
            | CType::EventPtr => AbiType::Address,
        }
    }
}

/// One function of libcudadevrt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// The name a CUDA program writes (`cudaGetLastError`).
    pub c_name: &'static str,
    /// The symbol generated code calls (`__cudaCDP2GetLastError`).
    pub ptx_symbol: &'static str,
    /// `None` for `void` (no entry point here returns void; kept for completeness).
    pub ret: Option<CType>,
    /// Parameter names as the documentation gives them, and their types.
    pub params: &'static [(&'static str, CType)],
}

impl EntryPoint {
    /// The PTX `.extern .func` declaration for this entry point, in the documented form.
    pub fn ptx_extern_declaration(&self, address_bits: u32) -> String {
        let abi = |ty: CType, name: &str| match ty.abi() {
            AbiType::B32 => format!(".param .b32 {name}"),
            AbiType::Address => format!(".param .b{address_bits} {name}"),
            AbiType::Dim3 => format!(".param .align 4 .b8 {name}[12]"),
        };
        let ret = self.ret.map(|r| format!("({}) ", abi(r, "func_retval0"))).unwrap_or_default();
        let params: Vec<String> = self.params.iter().map(|(name, ty)| format!("  {}", abi(*ty, name))).collect();
        format!(".extern .func{ret}{}\n(\n{}\n)\n;", self.ptx_symbol, params.join(",\n"))
    }
}

/// The documented launch pair (the seeds' "Device-side Launch from PTX").
pub const GET_PARAMETER_BUFFER: EntryPoint = EntryPoint {
    c_name: "cudaGetParameterBuffer",
    ptx_symbol: "cudaGetParameterBuffer",
    ret: Some(CType::VoidPtr),
    params: &[("alignment", CType::SizeT), ("size", CType::SizeT)],
};

pub const LAUNCH_DEVICE: EntryPoint = EntryPoint {
    c_name: "cudaLaunchDevice",
    ptx_symbol: "cudaLaunchDevice",
    ret: Some(CType::Error),
    params: &[
        ("func", CType::VoidPtr),
        ("parameterBuffer", CType::VoidPtr),
        ("gridDimension", CType::Dim3),
        ("blockDimension", CType::Dim3),
        ("sharedMemSize", CType::UInt),
        ("stream", CType::Stream),
    ],
};

/// The CDP2 pair nvcc 13 emits: the configuration goes with the buffer request.
pub const GET_PARAMETER_BUFFER_V2: EntryPoint = EntryPoint {
    c_name: "__cudaCDP2GetParameterBufferV2",
    ptx_symbol: "__cudaCDP2GetParameterBufferV2",
    ret: Some(CType::VoidPtr),
    params: &[
        ("func", CType::VoidPtr),
        ("gridDimension", CType::Dim3),
        ("blockDimension", CType::Dim3),
        ("sharedMemSize", CType::UInt),
    ],
};

pub const LAUNCH_DEVICE_V2: EntryPoint = EntryPoint {
    c_name: "__cudaCDP2LaunchDeviceV2",
    ptx_symbol: "__cudaCDP2LaunchDeviceV2",
    ret: Some(CType::Error),
    params: &[("parameterBuffer", CType::VoidPtr), ("stream", CType::Stream)],
};

/// The device-runtime API calls a kernel may make directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeFn {
    GetLastError,
    PeekAtLastError,
    StreamCreateWithFlags,
    StreamDestroy,
    EventCreateWithFlags,
    EventRecord,
    StreamWaitEvent,
    EventDestroy,
    Malloc,
    Free,
    GetDevice,
    DeviceGetAttribute,
}

impl RuntimeFn {
    pub const ALL: &'static [RuntimeFn] = &[
        RuntimeFn::GetLastError,
        RuntimeFn::PeekAtLastError,
        RuntimeFn::StreamCreateWithFlags,
        RuntimeFn::StreamDestroy,
        RuntimeFn::EventCreateWithFlags,
        RuntimeFn::EventRecord,
        RuntimeFn::StreamWaitEvent,
        RuntimeFn::EventDestroy,
        RuntimeFn::Malloc,
        RuntimeFn::Free,
        RuntimeFn::GetDevice,
        RuntimeFn::DeviceGetAttribute,
    ];

    pub fn entry_point(self) -> EntryPoint {
        use CType::*;
        let (c_name, ptx_symbol, params): (_, _, &'static [(&'static str, CType)]) = match self {
            RuntimeFn::GetLastError => ("cudaGetLastError", "__cudaCDP2GetLastError", &[]),
            RuntimeFn::PeekAtLastError => ("cudaPeekAtLastError", "__cudaCDP2PeekAtLastError", &[]),
            RuntimeFn::StreamCreateWithFlags => (
                "cudaStreamCreateWithFlags",
                "__cudaCDP2StreamCreateWithFlags",
                &[("pStream", StreamPtr), ("flags", UInt)],
            ),
            RuntimeFn::StreamDestroy => ("cudaStreamDestroy", "__cudaCDP2StreamDestroy", &[("stream", Stream)]),
            RuntimeFn::EventCreateWithFlags => (
                "cudaEventCreateWithFlags",
                "__cudaCDP2EventCreateWithFlags",
                &[("event", EventPtr), ("flags", UInt)],
            ),
            RuntimeFn::EventRecord => {
                ("cudaEventRecord", "__cudaCDP2EventRecord", &[("event", Event), ("stream", Stream)])
            }
            RuntimeFn::StreamWaitEvent => (
                "cudaStreamWaitEvent",
                "__cudaCDP2StreamWaitEvent",
                &[("stream", Stream), ("event", Event), ("flags", UInt)],
            ),
            RuntimeFn::EventDestroy => ("cudaEventDestroy", "__cudaCDP2EventDestroy", &[("event", Event)]),
            RuntimeFn::Malloc => ("cudaMalloc", "__cudaCDP2Malloc", &[("devPtr", VoidPtrPtr), ("size", SizeT)]),
            RuntimeFn::Free => ("cudaFree", "__cudaCDP2Free", &[("devPtr", VoidPtr)]),
            RuntimeFn::GetDevice => ("cudaGetDevice", "__cudaCDP2GetDevice", &[("device", IntPtr)]),
            RuntimeFn::DeviceGetAttribute => (
                "cudaDeviceGetAttribute",
                "__cudaCDP2DeviceGetAttribute",
                &[("value", IntPtr), ("attr", DeviceAttr), ("device", Int)],
            ),
        };
        EntryPoint { c_name, ptx_symbol, ret: Some(CType::Error), params }
    }

    /// The API call a program names, if it is one of ours.
    pub fn from_c_name(name: &str) -> Option<RuntimeFn> {
        RuntimeFn::ALL.iter().copied().find(|f| f.entry_point().c_name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_64_bit_launch_device_declaration() {
        // The form in the programming guide, section "cudaLaunchDevice".
        let expected = ".extern .func(.param .b32 func_retval0) cudaLaunchDevice\n(\n  .param .b64 func,\n  .param .b64 parameterBuffer,\n  .param .align 4 .b8 gridDimension[12],\n  .param .align 4 .b8 blockDimension[12],\n  .param .b32 sharedMemSize,\n  .param .b64 stream\n)\n;";
        assert_eq!(LAUNCH_DEVICE.ptx_extern_declaration(64), expected);
    }

    #[test]
    fn documented_32_bit_get_parameter_buffer_declaration() {
        let expected = ".extern .func(.param .b32 func_retval0) cudaGetParameterBuffer\n(\n  .param .b32 alignment,\n  .param .b32 size\n)\n;";
        assert_eq!(GET_PARAMETER_BUFFER.ptx_extern_declaration(32), expected);
    }

    #[test]
    fn every_api_call_maps_to_a_cdp2_symbol() {
        for f in RuntimeFn::ALL {
            let ep = f.entry_point();
            assert_eq!(RuntimeFn::from_c_name(ep.c_name), Some(*f));
            assert_eq!(ep.ptx_symbol, format!("__cudaCDP2{}", &ep.c_name[4..]));
        }
    }
}
