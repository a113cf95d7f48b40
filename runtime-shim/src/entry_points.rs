//! Device-runtime entry points: their C-level signatures (what a front end type-checks
//! against) and their PTX symbols and ABI types (what a back end declares and calls).
//!
//! With CDP2 (the default since CUDA 12 and the only kind on sm_90+),
//! `cuda_device_runtime_api.h` maps each API call to a `__cudaCDP2*` symbol in libcudadevrt,
//! so that is what generated code calls. The documented launch pair keeps its plain names.

use crate::types::{CEnum, CHandle, CStruct};

/// A parameter or return type at the C level, as the header declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CType {
    Int,
    UInt,
    /// `bool` (passed as `.b32`, like every integer narrower than 32 bits).
    Bool,
    SizeT,
    /// `unsigned long long` (also `cudaGraphConditionalHandle`): `.b64` at any address size.
    ULongLong,
    /// `cudaError_t`
    Error,
    /// An enum (`enum cudaDeviceAttr`, `enum cudaLimit`, ...): an int.
    Enum(CEnum),
    VoidPtr,
    /// `const void *`
    ConstVoidPtr,
    /// `const char *` (the error strings)
    ConstCharPtr,
    /// `void **`
    VoidPtrPtr,
    /// `int *`
    IntPtr,
    /// `unsigned int *`
    UIntPtr,
    /// `size_t *`
    SizeTPtr,
    /// `enum E *`
    EnumPtr(CEnum),
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
    /// A struct by value (`cudaPitchedPtr`, `cudaExtent`).
    Struct(CStruct),
    /// `struct S *`
    StructPtr(CStruct),
    /// `const struct S *`
    ConstStructPtr(CStruct),
    /// An opaque handle (`cudaGraphExec_t`, `cudaGraphDeviceNode_t`).
    Handle(CHandle),
}

/// How a value crosses the call boundary in PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbiType {
    /// `.b32`
    B32,
    /// `.b64` at every address size.
    B64,
    /// `.b32` at 32 bits, `.b64` at 64 bits (pointers and `size_t`).
    Address,
    /// `.align 4 .b8 [12]`
    Dim3,
    /// `.align A .b8 [N]`: a struct by value, laid out at the address size.
    Struct(CStruct),
}

impl CType {
    pub fn abi(self) -> AbiType {
        match self {
            CType::Int | CType::UInt | CType::Bool | CType::Error | CType::Enum(_) => AbiType::B32,
            CType::ULongLong => AbiType::B64,
            CType::Dim3 => AbiType::Dim3,
            CType::Struct(s) => AbiType::Struct(s),
            CType::SizeT
            | CType::VoidPtr
            | CType::ConstVoidPtr
            | CType::ConstCharPtr
            | CType::VoidPtrPtr
            | CType::IntPtr
            | CType::UIntPtr
            | CType::SizeTPtr
            | CType::EnumPtr(_)
            | CType::Stream
            | CType::StreamPtr
            | CType::Event
            | CType::EventPtr
            | CType::StructPtr(_)
            | CType::ConstStructPtr(_)
            | CType::Handle(_) => AbiType::Address,
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
    /// `None` for `void` (`cudaGraphSetConditional`, the programmatic-launch functions).
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
            AbiType::B64 => format!(".param .b64 {name}"),
            AbiType::Dim3 => format!(".param .align 4 .b8 {name}[12]"),
            AbiType::Struct(s) => {
                let (size, align) = s.size_align(address_bits).unwrap_or((0, 1));
                format!(".param .align {align} .b8 {name}[{size}]")
            }
        };
        let ret = self.ret.map(|r| format!("({}) ", abi(r, "func_retval0"))).unwrap_or_default();
        let params: Vec<String> = self.params.iter().map(|(name, ty)| format!("  {}", abi(*ty, name))).collect();
        format!(".extern .func{ret}{}\n(\n{}\n)\n;", self.ptx_symbol, params.join(",\n"))
    }
}

/// The documented launch pair (the seeds' "Device-side Launch from PTX").
pub const GET_PARAMETER_BUFFER: EntryPoint =
    EntryPoint { c_name: "cudaGetParameterBuffer", ptx_symbol: "cudaGetParameterBuffer", ret: Some(CType::VoidPtr), params: &[("alignment", CType::SizeT), ("size", CType::SizeT)] };

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

/// `cudaLaunchDevice` for per-thread default streams (`--default-stream per-thread`): what the
/// header's inline `cudaLaunchDevice` calls when `CUDA_API_PER_THREAD_DEFAULT_STREAM` is defined.
pub const LAUNCH_DEVICE_PTSZ: EntryPoint = EntryPoint { c_name: "cudaLaunchDevice_ptsz", ptx_symbol: "cudaLaunchDevice_ptsz", ret: LAUNCH_DEVICE.ret, params: LAUNCH_DEVICE.params };

/// The CDP2 pair nvcc 13 emits: the configuration goes with the buffer request.
pub const GET_PARAMETER_BUFFER_V2: EntryPoint = EntryPoint {
    c_name: "__cudaCDP2GetParameterBufferV2",
    ptx_symbol: "__cudaCDP2GetParameterBufferV2",
    ret: Some(CType::VoidPtr),
    params: &[("func", CType::VoidPtr), ("gridDimension", CType::Dim3), ("blockDimension", CType::Dim3), ("sharedMemSize", CType::UInt)],
};

pub const LAUNCH_DEVICE_V2: EntryPoint =
    EntryPoint { c_name: "__cudaCDP2LaunchDeviceV2", ptx_symbol: "__cudaCDP2LaunchDeviceV2", ret: Some(CType::Error), params: &[("parameterBuffer", CType::VoidPtr), ("stream", CType::Stream)] };

/// `__cudaCDP2LaunchDeviceV2` for per-thread default streams: nvcc 13.5's launch with
/// `--default-stream per-thread` (its PTX, compared in `tests/devrt_declarations.rs`).
pub const LAUNCH_DEVICE_V2_PTSZ: EntryPoint =
    EntryPoint { c_name: "__cudaCDP2LaunchDeviceV2_ptsz", ptx_symbol: "__cudaCDP2LaunchDeviceV2_ptsz", ret: LAUNCH_DEVICE_V2.ret, params: LAUNCH_DEVICE_V2.params };

/// How generated code performs a device-runtime call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowering {
    /// A call of [`EntryPoint::ptx_symbol`], an `.extern .func` of libcudadevrt.
    Call,
    /// The header's inline function is one PTX instruction (`griddepcontrol.wait`,
    /// `mov.u64 %r, %current_graph_exec`); there is no symbol to call.
    Inline(InlinePtx),
}

/// The single instructions the header's inline functions are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InlinePtx {
    /// `griddepcontrol.wait;` (`cudaGridDependencySynchronize`), sm_90 and newer.
    GridDependencyWait,
    /// `griddepcontrol.launch_dependents;` (`cudaTriggerProgrammaticLaunchCompletion`), sm_90+.
    LaunchDependents,
    /// `mov.u64 %r, %current_graph_exec;` (`cudaGetCurrentGraphExec`), PTX ISA 8.0.
    CurrentGraphExec,
}

/// A group of API calls, for documentation tables and for the checks that apply to a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Errors,
    Queries,
    StreamsEvents,
    Memory,
    Launch,
    ProgrammaticLaunch,
    Graphs,
    CooperativeGroups,
}

macro_rules! runtime_fns {
    ($($variant:ident = $c_name:literal, $symbol:literal, $family:ident, $ret:expr, [$(($p:literal, $t:expr)),* $(,)?];)*) => {
        /// The device-runtime API calls a kernel may make directly: every device-callable
        /// function of CUDA 13's `cuda_device_runtime_api.h` (the fabric-operation pair aside).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum RuntimeFn { $($variant),* }

        impl RuntimeFn {
            pub const ALL: &'static [RuntimeFn] = &[$(RuntimeFn::$variant),*];

            /// The C signature, and the symbol nvcc 13 calls (checked against nvcc's PTX by
            /// `compiler/tests/devrt_declarations.rs`). For an [`Lowering::Inline`] function
            /// the symbol is the C name and is never declared.
            pub fn entry_point(self) -> EntryPoint {
                #[allow(unused_imports)]
                use CType::*;
                match self {
                    $(RuntimeFn::$variant => EntryPoint { c_name: $c_name, ptx_symbol: $symbol, ret: $ret, params: &[$(($p, $t)),*] },)*
                }
            }

            pub fn family(self) -> Family {
                match self { $(RuntimeFn::$variant => Family::$family),* }
            }
        }
    };
}

const E: Option<CType> = Some(CType::Error);

runtime_fns! {
    GetLastError = "cudaGetLastError", "__cudaCDP2GetLastError", Errors, E, [];
    PeekAtLastError = "cudaPeekAtLastError", "__cudaCDP2PeekAtLastError", Errors, E, [];
    GetErrorString = "cudaGetErrorString", "__cudaCDP2GetErrorString", Errors, Some(ConstCharPtr), [("error", Error)];
    GetErrorName = "cudaGetErrorName", "__cudaCDP2GetErrorName", Errors, Some(ConstCharPtr), [("error", Error)];
    GetDeviceCount = "cudaGetDeviceCount", "__cudaCDP2GetDeviceCount", Queries, E, [("count", IntPtr)];
    GetDevice = "cudaGetDevice", "__cudaCDP2GetDevice", Queries, E, [("device", IntPtr)];
    RuntimeGetVersion = "cudaRuntimeGetVersion", "__cudaCDP2RuntimeGetVersion", Queries, E, [("runtimeVersion", IntPtr)];
    DeviceGetAttribute = "cudaDeviceGetAttribute", "__cudaCDP2DeviceGetAttribute", Queries, E,
        [("value", IntPtr), ("attr", Enum(CEnum::DeviceAttr)), ("device", Int)];
    DeviceGetLimit = "cudaDeviceGetLimit", "__cudaCDP2DeviceGetLimit", Queries, E, [("pValue", SizeTPtr), ("limit", Enum(CEnum::Limit))];
    DeviceGetCacheConfig = "cudaDeviceGetCacheConfig", "__cudaCDP2DeviceGetCacheConfig", Queries, E,
        [("pCacheConfig", EnumPtr(CEnum::FuncCache))];
    DeviceGetSharedMemConfig = "cudaDeviceGetSharedMemConfig", "__cudaCDP2DeviceGetSharedMemConfig", Queries, E,
        [("pConfig", EnumPtr(CEnum::SharedMemConfig))];
    FuncGetAttributes = "cudaFuncGetAttributes", "__cudaCDP2FuncGetAttributes", Queries, E,
        [("attr", StructPtr(CStruct::FuncAttributes)), ("func", ConstVoidPtr)];
    OccupancyMaxActiveBlocksPerMultiprocessor = "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
        "__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessor", Queries, E,
        [("numBlocks", IntPtr), ("func", ConstVoidPtr), ("blockSize", Int), ("dynamicSmemSize", SizeT)];
    OccupancyMaxActiveBlocksPerMultiprocessorWithFlags = "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        "__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessorWithFlags", Queries, E,
        [("numBlocks", IntPtr), ("func", ConstVoidPtr), ("blockSize", Int), ("dynamicSmemSize", SizeT), ("flags", UInt)];
    StreamCreateWithFlags = "cudaStreamCreateWithFlags", "__cudaCDP2StreamCreateWithFlags", StreamsEvents, E,
        [("pStream", StreamPtr), ("flags", UInt)];
    StreamDestroy = "cudaStreamDestroy", "__cudaCDP2StreamDestroy", StreamsEvents, E, [("stream", Stream)];
    StreamWaitEvent = "cudaStreamWaitEvent", "__cudaCDP2StreamWaitEvent", StreamsEvents, E,
        [("stream", Stream), ("event", Event), ("flags", UInt)];
    StreamWaitEventPtsz = "cudaStreamWaitEvent_ptsz", "__cudaCDP2StreamWaitEvent_ptsz", StreamsEvents, E,
        [("stream", Stream), ("event", Event), ("flags", UInt)];
    EventCreateWithFlags = "cudaEventCreateWithFlags", "__cudaCDP2EventCreateWithFlags", StreamsEvents, E,
        [("event", EventPtr), ("flags", UInt)];
    EventRecord = "cudaEventRecord", "__cudaCDP2EventRecord", StreamsEvents, E, [("event", Event), ("stream", Stream)];
    EventRecordPtsz = "cudaEventRecord_ptsz", "__cudaCDP2EventRecord_ptsz", StreamsEvents, E, [("event", Event), ("stream", Stream)];
    EventRecordWithFlags = "cudaEventRecordWithFlags", "__cudaCDP2EventRecordWithFlags", StreamsEvents, E,
        [("event", Event), ("stream", Stream), ("flags", UInt)];
    EventRecordWithFlagsPtsz = "cudaEventRecordWithFlags_ptsz", "__cudaCDP2EventRecordWithFlags_ptsz", StreamsEvents, E,
        [("event", Event), ("stream", Stream), ("flags", UInt)];
    EventDestroy = "cudaEventDestroy", "__cudaCDP2EventDestroy", StreamsEvents, E, [("event", Event)];
    Malloc = "cudaMalloc", "__cudaCDP2Malloc", Memory, E, [("devPtr", VoidPtrPtr), ("size", SizeT)];
    Free = "cudaFree", "__cudaCDP2Free", Memory, E, [("devPtr", VoidPtr)];
    MemcpyAsync = "cudaMemcpyAsync", "__cudaCDP2MemcpyAsync", Memory, E,
        [("dst", VoidPtr), ("src", ConstVoidPtr), ("count", SizeT), ("kind", Enum(CEnum::MemcpyKind)), ("stream", Stream)];
    MemcpyAsyncPtsz = "cudaMemcpyAsync_ptsz", "__cudaCDP2MemcpyAsync_ptsz", Memory, E,
        [("dst", VoidPtr), ("src", ConstVoidPtr), ("count", SizeT), ("kind", Enum(CEnum::MemcpyKind)), ("stream", Stream)];
    Memcpy2DAsync = "cudaMemcpy2DAsync", "__cudaCDP2Memcpy2DAsync", Memory, E,
        [("dst", VoidPtr), ("dpitch", SizeT), ("src", ConstVoidPtr), ("spitch", SizeT), ("width", SizeT), ("height", SizeT),
         ("kind", Enum(CEnum::MemcpyKind)), ("stream", Stream)];
    Memcpy2DAsyncPtsz = "cudaMemcpy2DAsync_ptsz", "__cudaCDP2Memcpy2DAsync_ptsz", Memory, E,
        [("dst", VoidPtr), ("dpitch", SizeT), ("src", ConstVoidPtr), ("spitch", SizeT), ("width", SizeT), ("height", SizeT),
         ("kind", Enum(CEnum::MemcpyKind)), ("stream", Stream)];
    Memcpy3DAsync = "cudaMemcpy3DAsync", "__cudaCDP2Memcpy3DAsync", Memory, E,
        [("p", ConstStructPtr(CStruct::Memcpy3DParms)), ("stream", Stream)];
    Memcpy3DAsyncPtsz = "cudaMemcpy3DAsync_ptsz", "__cudaCDP2Memcpy3DAsync_ptsz", Memory, E,
        [("p", ConstStructPtr(CStruct::Memcpy3DParms)), ("stream", Stream)];
    MemsetAsync = "cudaMemsetAsync", "__cudaCDP2MemsetAsync", Memory, E,
        [("devPtr", VoidPtr), ("value", Int), ("count", SizeT), ("stream", Stream)];
    MemsetAsyncPtsz = "cudaMemsetAsync_ptsz", "__cudaCDP2MemsetAsync_ptsz", Memory, E,
        [("devPtr", VoidPtr), ("value", Int), ("count", SizeT), ("stream", Stream)];
    Memset2DAsync = "cudaMemset2DAsync", "__cudaCDP2Memset2DAsync", Memory, E,
        [("devPtr", VoidPtr), ("pitch", SizeT), ("value", Int), ("width", SizeT), ("height", SizeT), ("stream", Stream)];
    Memset2DAsyncPtsz = "cudaMemset2DAsync_ptsz", "__cudaCDP2Memset2DAsync_ptsz", Memory, E,
        [("devPtr", VoidPtr), ("pitch", SizeT), ("value", Int), ("width", SizeT), ("height", SizeT), ("stream", Stream)];
    Memset3DAsync = "cudaMemset3DAsync", "__cudaCDP2Memset3DAsync", Memory, E,
        [("pitchedDevPtr", Struct(CStruct::PitchedPtr)), ("value", Int), ("extent", Struct(CStruct::Extent)), ("stream", Stream)];
    Memset3DAsyncPtsz = "cudaMemset3DAsync_ptsz", "__cudaCDP2Memset3DAsync_ptsz", Memory, E,
        [("pitchedDevPtr", Struct(CStruct::PitchedPtr)), ("value", Int), ("extent", Struct(CStruct::Extent)), ("stream", Stream)];
    GetParameterBuffer = "cudaGetParameterBuffer", "__cudaCDP2GetParameterBuffer", Launch, Some(VoidPtr),
        [("alignment", SizeT), ("size", SizeT)];
    GetParameterBufferV2 = "cudaGetParameterBufferV2", "__cudaCDP2GetParameterBufferV2", Launch, Some(VoidPtr),
        [("func", VoidPtr), ("gridDimension", Dim3), ("blockDimension", Dim3), ("sharedMemSize", UInt)];
    LaunchDevice = "cudaLaunchDevice", "__cudaCDP2LaunchDevice", Launch, E,
        [("func", VoidPtr), ("parameterBuffer", VoidPtr), ("gridDimension", Dim3), ("blockDimension", Dim3),
         ("sharedMemSize", UInt), ("stream", Stream)];
    LaunchDevicePtsz = "cudaLaunchDevice_ptsz", "__cudaCDP2LaunchDevice_ptsz", Launch, E,
        [("func", VoidPtr), ("parameterBuffer", VoidPtr), ("gridDimension", Dim3), ("blockDimension", Dim3),
         ("sharedMemSize", UInt), ("stream", Stream)];
    LaunchDeviceV2 = "cudaLaunchDeviceV2", "__cudaCDP2LaunchDeviceV2", Launch, E, [("parameterBuffer", VoidPtr), ("stream", Stream)];
    LaunchDeviceV2Ptsz = "cudaLaunchDeviceV2_ptsz", "__cudaCDP2LaunchDeviceV2_ptsz", Launch, E,
        [("parameterBuffer", VoidPtr), ("stream", Stream)];
    GridDependencySynchronize = "cudaGridDependencySynchronize", "cudaGridDependencySynchronize", ProgrammaticLaunch, None, [];
    TriggerProgrammaticLaunchCompletion = "cudaTriggerProgrammaticLaunchCompletion", "cudaTriggerProgrammaticLaunchCompletion",
        ProgrammaticLaunch, None, [];
    GraphLaunch = "cudaGraphLaunch", "cudaGraphLaunch", Graphs, E, [("graphExec", Handle(CHandle::GraphExec)), ("stream", Stream)];
    GetCurrentGraphExec = "cudaGetCurrentGraphExec", "cudaGetCurrentGraphExec", Graphs, Some(Handle(CHandle::GraphExec)), [];
    GraphKernelNodeSetParam = "cudaGraphKernelNodeSetParam", "cudaGraphKernelNodeSetParam", Graphs, E,
        [("node", Handle(CHandle::GraphDeviceNode)), ("offset", SizeT), ("value", ConstVoidPtr), ("size", SizeT)];
    GraphKernelNodeSetEnabled = "cudaGraphKernelNodeSetEnabled", "cudaGraphKernelNodeSetEnabled", Graphs, E,
        [("node", Handle(CHandle::GraphDeviceNode)), ("enable", Bool)];
    GraphKernelNodeSetGridDim = "cudaGraphKernelNodeSetGridDim", "cudaGraphKernelNodeSetGridDim", Graphs, E,
        [("node", Handle(CHandle::GraphDeviceNode)), ("gridDim", Dim3)];
    GraphKernelNodeUpdatesApply = "cudaGraphKernelNodeUpdatesApply", "cudaGraphKernelNodeUpdatesApply", Graphs, E,
        [("updates", ConstStructPtr(CStruct::GraphKernelNodeUpdate)), ("updateCount", SizeT)];
    GraphSetConditional = "cudaGraphSetConditional", "cudaGraphSetConditional", Graphs, None, [("handle", ULongLong), ("value", UInt)];
    CGGetIntrinsicHandle = "cudaCGGetIntrinsicHandle", "cudaCGGetIntrinsicHandle", CooperativeGroups, Some(ULongLong),
        [("scope", Enum(CEnum::CGScope))];
    CGSynchronize = "cudaCGSynchronize", "cudaCGSynchronize", CooperativeGroups, E, [("handle", ULongLong), ("flags", UInt)];
    CGSynchronizeGrid = "cudaCGSynchronizeGrid", "cudaCGSynchronizeGrid", CooperativeGroups, E, [("handle", ULongLong), ("flags", UInt)];
    CGGetSize = "cudaCGGetSize", "cudaCGGetSize", CooperativeGroups, E,
        [("numThreads", UIntPtr), ("numGrids", UIntPtr), ("handle", ULongLong)];
    CGGetRank = "cudaCGGetRank", "cudaCGGetRank", CooperativeGroups, E,
        [("threadRank", UIntPtr), ("gridRank", UIntPtr), ("handle", ULongLong)];
}

impl RuntimeFn {
    /// The API call a program names, if it is one of ours.
    pub fn from_c_name(name: &str) -> Option<RuntimeFn> {
        RuntimeFn::ALL.iter().copied().find(|f| f.entry_point().c_name == name)
    }

    /// The `_ptsz` form that `CUDA_API_PER_THREAD_DEFAULT_STREAM` (nvcc's `--default-stream
    /// per-thread`) turns a call of this function into, as `cuda_runtime_api.h`'s
    /// `__CUDART_API_PTSZ` macros do; `None` for functions without one. (`cudaGraphLaunch_ptsz`
    /// is an inline function of the header that only replaces stream 0, which `cudaGraphLaunch`
    /// refuses anyway; it is not modelled.)
    pub fn per_thread_variant(self) -> Option<RuntimeFn> {
        use RuntimeFn::*;
        Some(match self {
            MemcpyAsync => MemcpyAsyncPtsz,
            Memcpy2DAsync => Memcpy2DAsyncPtsz,
            Memcpy3DAsync => Memcpy3DAsyncPtsz,
            MemsetAsync => MemsetAsyncPtsz,
            Memset2DAsync => Memset2DAsyncPtsz,
            Memset3DAsync => Memset3DAsyncPtsz,
            EventRecord => EventRecordPtsz,
            EventRecordWithFlags => EventRecordWithFlagsPtsz,
            StreamWaitEvent => StreamWaitEventPtsz,
            LaunchDevice => LaunchDevicePtsz,
            LaunchDeviceV2 => LaunchDeviceV2Ptsz,
            _ => return None,
        })
    }

    pub fn lowering(self) -> Lowering {
        match self {
            RuntimeFn::GridDependencySynchronize => Lowering::Inline(InlinePtx::GridDependencyWait),
            RuntimeFn::TriggerProgrammaticLaunchCompletion => Lowering::Inline(InlinePtx::LaunchDependents),
            RuntimeFn::GetCurrentGraphExec => Lowering::Inline(InlinePtx::CurrentGraphExec),
            _ => Lowering::Call,
        }
    }

    /// Whether the call puts work in a stream or orders streams (events, copies, sets, graph
    /// and explicit launches): moving a `<<<>>>` launch past it would change what it sees.
    pub fn orders_stream_work(self) -> bool {
        use RuntimeFn::*;
        match self.family() {
            Family::Memory => !matches!(self, Malloc | Free),
            Family::Launch => !matches!(self, GetParameterBuffer | GetParameterBufferV2),
            Family::Graphs => self == GraphLaunch,
            Family::StreamsEvents => matches!(self, EventRecord | EventRecordPtsz | EventRecordWithFlags | EventRecordWithFlagsPtsz | StreamWaitEvent | StreamWaitEventPtsz),
            _ => false,
        }
    }

    /// Declared by `cuda_device_runtime_api.h` 13.5 but defined nowhere in libcudadevrt 13.5:
    /// nvlink refuses a program that calls it, nvcc's as well (checked by
    /// `compiler/tests/devrt_declarations.rs`).
    pub fn missing_from_libcudadevrt(self) -> bool {
        matches!(self, RuntimeFn::EventRecordWithFlags | RuntimeFn::EventRecordWithFlagsPtsz)
    }

    /// Whether the call reads the thread's last launch error.
    pub fn reads_launch_errors(self) -> bool {
        matches!(self, RuntimeFn::GetLastError | RuntimeFn::PeekAtLastError)
    }

    /// The parameter that names a kernel (`func`): device code passes the kernel itself.
    pub fn kernel_param(self) -> Option<usize> {
        self.entry_point().params.iter().position(|(name, ty)| *name == "func" && matches!(ty, CType::VoidPtr | CType::ConstVoidPtr))
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
    fn cdp2_functions_map_to_cdp2_symbols_and_the_rest_keep_their_names() {
        // The header maps exactly the CDP1-era API (errors, queries, streams, memory, launch)
        // to `__cudaCDP2*`; graph, CG and inline functions keep their names.
        for f in RuntimeFn::ALL {
            let ep = f.entry_point();
            assert_eq!(RuntimeFn::from_c_name(ep.c_name), Some(*f));
            let cdp2 = matches!(f.family(), Family::Errors | Family::Queries | Family::StreamsEvents | Family::Memory | Family::Launch);
            if cdp2 {
                assert_eq!(ep.ptx_symbol, format!("__cudaCDP2{}", &ep.c_name[4..]));
            } else {
                assert_eq!(ep.ptx_symbol, ep.c_name);
            }
        }
    }

    #[test]
    fn memset_3d_passes_its_structs_by_value_in_bytes() {
        // nvcc 13.5: `.param .align 8 .b8 __cudaCDP2Memset3DAsync_param_0[32]` and `..._2[24]`.
        let decl = RuntimeFn::Memset3DAsync.entry_point().ptx_extern_declaration(64);
        assert!(decl.contains(".param .align 8 .b8 pitchedDevPtr[32]"), "{decl}");
        assert!(decl.contains(".param .align 8 .b8 extent[24]"), "{decl}");
    }
}
