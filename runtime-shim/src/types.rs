//! The CUDA types the device runtime's functions take: structs with their fields, the enums
//! (passed as 32-bit integers), and the opaque handles (pointers to undefined structs).
//!
//! Source: `driver_types.h` of the `nvidia-cuda-runtime` 13.5.37 wheel. Struct layouts follow
//! C's rules from these field lists; `compiler/tests/devrt_declarations.rs` checks every size
//! and offset against nvcc's.

/// A struct of `driver_types.h` that a device-runtime function takes or returns through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CStruct {
    /// `struct cudaFuncAttributes` (`cudaFuncGetAttributes`).
    FuncAttributes,
    /// `struct cudaPitchedPtr`: a pointer with its pitch and logical extent.
    PitchedPtr,
    /// `struct cudaExtent`: width (bytes for linear memory), height, depth.
    Extent,
    /// `struct cudaPos`: a position in a 3D copy.
    Pos,
    /// `struct cudaMemcpy3DParms` (`cudaMemcpy3DAsync`).
    Memcpy3DParms,
    /// `cudaGraphKernelNodeUpdate` (`cudaGraphKernelNodeUpdatesApply`). Its payload is a union,
    /// which the kernel language lacks, so it is opaque: device code passes pointers to it.
    GraphKernelNodeUpdate,
}

/// The type of a field of a [`CStruct`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    Int,
    SizeT,
    VoidPtr,
    /// An enum, stored as a 32-bit int.
    Enum(CEnum),
    Struct(CStruct),
    Handle(CHandle),
    /// `int name[N]`.
    IntArray(u32),
}

impl CStruct {
    pub const ALL: &'static [CStruct] = &[CStruct::FuncAttributes, CStruct::PitchedPtr, CStruct::Extent, CStruct::Pos, CStruct::Memcpy3DParms, CStruct::GraphKernelNodeUpdate];

    /// The name a program writes (C++ lets it drop `struct`).
    pub fn c_name(self) -> &'static str {
        match self {
            CStruct::FuncAttributes => "cudaFuncAttributes",
            CStruct::PitchedPtr => "cudaPitchedPtr",
            CStruct::Extent => "cudaExtent",
            CStruct::Pos => "cudaPos",
            CStruct::Memcpy3DParms => "cudaMemcpy3DParms",
            CStruct::GraphKernelNodeUpdate => "cudaGraphKernelNodeUpdate",
        }
    }

    pub fn from_c_name(name: &str) -> Option<CStruct> {
        CStruct::ALL.iter().copied().find(|s| s.c_name() == name)
    }

    /// The fields in declaration order; `None` for a struct device code sees only as a pointee.
    pub fn fields(self) -> Option<&'static [(&'static str, FieldType)]> {
        use FieldType::*;
        Some(match self {
            CStruct::FuncAttributes => &[
                ("sharedSizeBytes", SizeT),
                ("constSizeBytes", SizeT),
                ("localSizeBytes", SizeT),
                ("maxThreadsPerBlock", Int),
                ("numRegs", Int),
                ("ptxVersion", Int),
                ("binaryVersion", Int),
                ("cacheModeCA", Int),
                ("maxDynamicSharedSizeBytes", Int),
                ("preferredShmemCarveout", Int),
                ("clusterDimMustBeSet", Int),
                ("requiredClusterWidth", Int),
                ("requiredClusterHeight", Int),
                ("requiredClusterDepth", Int),
                ("clusterSchedulingPolicyPreference", Int),
                ("nonPortableClusterSizeAllowed", Int),
                ("deviceNodeUpdateStatus", Int),
                ("sharedMemoryMode", Enum(CEnum::SharedMemoryMode)),
                ("reserved", IntArray(14)),
            ],
            CStruct::PitchedPtr => &[("ptr", VoidPtr), ("pitch", SizeT), ("xsize", SizeT), ("ysize", SizeT)],
            CStruct::Extent => &[("width", SizeT), ("height", SizeT), ("depth", SizeT)],
            CStruct::Pos => &[("x", SizeT), ("y", SizeT), ("z", SizeT)],
            CStruct::Memcpy3DParms => &[
                ("srcArray", Handle(CHandle::Array)),
                ("srcPos", Struct(CStruct::Pos)),
                ("srcPtr", Struct(CStruct::PitchedPtr)),
                ("dstArray", Handle(CHandle::Array)),
                ("dstPos", Struct(CStruct::Pos)),
                ("dstPtr", Struct(CStruct::PitchedPtr)),
                ("extent", Struct(CStruct::Extent)),
                ("kind", Enum(CEnum::MemcpyKind)),
            ],
            CStruct::GraphKernelNodeUpdate => return None,
        })
    }

    /// Size and alignment with C's rules at `address_bits` (the NVPTX data layout aligns every
    /// scalar to its size, as nvcc's host compiler does on Linux).
    pub fn size_align(self, address_bits: u32) -> Option<(u64, u64)> {
        let mut end = 0u64;
        let mut max_align = 1u64;
        for (_, field) in self.fields()? {
            let (size, align) = field.size_align(address_bits)?;
            end = end.div_ceil(align) * align + size;
            max_align = max_align.max(align);
        }
        Some((end.div_ceil(max_align) * max_align, max_align))
    }
}

impl FieldType {
    pub fn size_align(self, address_bits: u32) -> Option<(u64, u64)> {
        let address = u64::from(address_bits / 8);
        Some(match self {
            FieldType::Int | FieldType::Enum(_) => (4, 4),
            FieldType::SizeT | FieldType::VoidPtr | FieldType::Handle(_) => (address, address),
            FieldType::Struct(s) => s.size_align(address_bits)?,
            FieldType::IntArray(n) => (4 * u64::from(n), 4),
        })
    }
}

/// An opaque handle: a pointer to a struct that is never defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CHandle {
    /// `cudaGraphExec_t`, an executable graph (`struct CUgraphExec_st *`).
    GraphExec,
    /// `cudaGraphDeviceNode_t`, a device-updatable kernel node.
    GraphDeviceNode,
    /// `cudaArray_t`, a CUDA array (only a field of `cudaMemcpy3DParms` in device code).
    Array,
}

impl CHandle {
    pub const ALL: &'static [CHandle] = &[CHandle::GraphExec, CHandle::GraphDeviceNode, CHandle::Array];

    /// The typedef a program writes.
    pub fn c_name(self) -> &'static str {
        match self {
            CHandle::GraphExec => "cudaGraphExec_t",
            CHandle::GraphDeviceNode => "cudaGraphDeviceNode_t",
            CHandle::Array => "cudaArray_t",
        }
    }

    /// The undefined struct it points to.
    pub fn struct_name(self) -> &'static str {
        match self {
            CHandle::GraphExec => "CUgraphExec_st",
            CHandle::GraphDeviceNode => "CUgraphDeviceUpdatableNode_st",
            CHandle::Array => "cudaArray",
        }
    }

    pub fn from_c_name(name: &str) -> Option<CHandle> {
        CHandle::ALL.iter().copied().find(|h| h.c_name() == name)
    }
}

/// An enum of `driver_types.h`; every one is passed as a 32-bit int.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CEnum {
    DeviceAttr,
    Limit,
    FuncCache,
    SharedMemConfig,
    MemcpyKind,
    CGScope,
    GraphKernelNodeField,
    SharedMemoryMode,
}

impl CEnum {
    pub const ALL: &'static [CEnum] =
        &[CEnum::DeviceAttr, CEnum::Limit, CEnum::FuncCache, CEnum::SharedMemConfig, CEnum::MemcpyKind, CEnum::CGScope, CEnum::GraphKernelNodeField, CEnum::SharedMemoryMode];

    pub fn c_name(self) -> &'static str {
        match self {
            CEnum::DeviceAttr => "cudaDeviceAttr",
            CEnum::Limit => "cudaLimit",
            CEnum::FuncCache => "cudaFuncCache",
            CEnum::SharedMemConfig => "cudaSharedMemConfig",
            CEnum::MemcpyKind => "cudaMemcpyKind",
            CEnum::CGScope => "cudaCGScope",
            CEnum::GraphKernelNodeField => "cudaGraphKernelNodeField",
            CEnum::SharedMemoryMode => "cudaSharedMemoryMode",
        }
    }

    pub fn from_c_name(name: &str) -> Option<CEnum> {
        CEnum::ALL.iter().copied().find(|e| e.c_name() == name)
    }

    /// The enumerators the kernel language predefines.
    pub fn values(self) -> &'static [(&'static str, i32)] {
        match self {
            CEnum::DeviceAttr => crate::errors::NAMED_DEVICE_ATTRIBUTES,
            CEnum::Limit => &[
                ("cudaLimitStackSize", 0x00),
                ("cudaLimitPrintfFifoSize", 0x01),
                ("cudaLimitMallocHeapSize", 0x02),
                ("cudaLimitDevRuntimeSyncDepth", 0x03),
                ("cudaLimitDevRuntimePendingLaunchCount", 0x04),
                ("cudaLimitMaxL2FetchGranularity", 0x05),
                ("cudaLimitPersistingL2CacheSize", 0x06),
                ("cudaLimitPerBlockMemorySize", 0x0A),
            ],
            CEnum::FuncCache => &[("cudaFuncCachePreferNone", 0), ("cudaFuncCachePreferShared", 1), ("cudaFuncCachePreferL1", 2), ("cudaFuncCachePreferEqual", 3)],
            CEnum::SharedMemConfig => &[("cudaSharedMemBankSizeDefault", 0), ("cudaSharedMemBankSizeFourByte", 1), ("cudaSharedMemBankSizeEightByte", 2)],
            CEnum::MemcpyKind => &[("cudaMemcpyHostToHost", 0), ("cudaMemcpyHostToDevice", 1), ("cudaMemcpyDeviceToHost", 2), ("cudaMemcpyDeviceToDevice", 3), ("cudaMemcpyDefault", 4)],
            CEnum::CGScope => &[("cudaCGScopeInvalid", 0), ("cudaCGScopeGrid", 1), ("cudaCGScopeReserved", 2)],
            CEnum::GraphKernelNodeField => {
                &[("cudaGraphKernelNodeFieldInvalid", 0), ("cudaGraphKernelNodeFieldGridDim", 1), ("cudaGraphKernelNodeFieldParam", 2), ("cudaGraphKernelNodeFieldEnabled", 3)]
            }
            CEnum::SharedMemoryMode => &[
                ("cudaSharedMemoryModeDefault", 0),
                ("cudaSharedMemoryModeRequirePortable", 1),
                ("cudaSharedMemoryModeAllowNonPortable", 2),
                ("cudaSharedMemoryModeAllowOversizedSharedMemory", 3),
                ("cudaSharedMemoryModePreferOversizedSharedMemory", 4),
            ],
        }
    }

    /// The enumerator called `name`, with its enum.
    pub fn value_named(name: &str) -> Option<(CEnum, i32)> {
        CEnum::ALL.iter().find_map(|e| e.values().iter().find(|(n, _)| *n == name).map(|(_, v)| (*e, *v)))
    }
}

/// `cudaGraphConditionalHandle`, a typedef of `unsigned long long`.
pub const GRAPH_CONDITIONAL_HANDLE: &str = "cudaGraphConditionalHandle";

/// Every type name these declarations add to the language: the front end reads them as type
/// names, like a struct's.
pub fn type_names() -> impl Iterator<Item = &'static str> {
    CStruct::ALL.iter().map(|s| s.c_name()).chain(CHandle::ALL.iter().map(|h| h.c_name())).chain(CEnum::ALL.iter().map(|e| e.c_name())).chain(std::iter::once(GRAPH_CONDITIONAL_HANDLE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_of_the_3d_copy_structs_at_64_bits() {
        // Worked by hand from driver_types.h: every field is 8 bytes but `kind`.
        assert_eq!(CStruct::PitchedPtr.size_align(64), Some((32, 8)));
        assert_eq!(CStruct::Extent.size_align(64), Some((24, 8)));
        assert_eq!(CStruct::Memcpy3DParms.size_align(64), Some((8 + 24 + 32 + 8 + 24 + 32 + 24 + 8, 8)));
        assert_eq!(CStruct::GraphKernelNodeUpdate.size_align(64), None);
    }

    #[test]
    fn names_are_unique() {
        let names: Vec<&str> = type_names().collect();
        let set: std::collections::HashSet<&str> = names.iter().copied().collect();
        assert_eq!(names.len(), set.len());
        for e in CEnum::ALL {
            for (name, value) in e.values() {
                assert_eq!(CEnum::value_named(name), Some((*e, *value)), "{name}");
            }
        }
    }
}
