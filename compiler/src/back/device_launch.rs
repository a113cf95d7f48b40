//! Device-side launches for any front end that builds LLVM IR with inkwell.
//!
//! This is the code the `.cdp` front end's `<<<>>>` lowering runs (`front/cdp/codegen/launch.rs` evaluates
//! the HIR operands and calls [`build_device_launch`]); a compiler with its own front end calls
//! the same functions:
//!
//! 1. [`DeviceRuntime::declare`] (or [`DeviceRuntime::new`], which declares lazily) names the
//!    device-runtime entry points of the target's launch ABI in a module, with the PTX ABI types
//!    of the target's address size;
//! 2. [`crate::layout::layout_params`] / [`crate::layout::checked_layout`] place the arguments
//!    in the parameter buffer;
//! 3. [`build_device_launch`] emits the whole launch at the builder's position and returns the
//!    `cudaError_t` it produced.
//!
//! The sequences are nvcc's:
//!
//! - V2 (nvcc 13): `buf = __cudaCDP2GetParameterBufferV2(kernel, grid, block, shmem)`, then if
//!   `buf` is not null the arguments are stored at their layout offsets and
//!   `__cudaCDP2LaunchDeviceV2(buf, stream)` launches.
//! - V1 (documented): `buf = cudaGetParameterBuffer(align, size)` only when the kernel has
//!   parameters, then the same null check and stores, then
//!   `cudaLaunchDevice(kernel, buf, grid, block, shmem, stream)`.
//!
//! A null buffer means the launch pool is exhausted: the launch is skipped, as nvcc does, and the
//! returned status is [`LAUNCH_SKIPPED_STATUS`].
//!
//! ```
//! use cdpc::back::device_launch::{build_device_launch, mark_kernel, DeviceRuntime, LaunchArg, LaunchSite};
//! use cdpc::layout::{layout_params, ParamSpec};
//! use cdpc::Target;
//! use inkwell::context::Context;
//! use inkwell::AddressSpace;
//!
//! let ctx = Context::create();
//! let module = ctx.create_module("app");
//! let target = Target::default(); // sm_90, 64-bit, V2 ABI
//! let ptr = ctx.ptr_type(AddressSpace::default());
//! // __global__ void child(int *data) {}
//! let child = module.add_function("child", ctx.void_type().fn_type(&[ptr.into()], false), None);
//! mark_kernel(child);
//! let b = ctx.create_builder();
//! b.position_at_end(ctx.append_basic_block(child, "entry"));
//! b.build_return(None).unwrap();
//! // __global__ void parent(int *data) { child<<<1, 32>>>(data); }
//! let parent = module.add_function("parent", ctx.void_type().fn_type(&[ptr.into()], false), None);
//! mark_kernel(parent);
//! b.position_at_end(ctx.append_basic_block(parent, "entry"));
//! let runtime = DeviceRuntime::declare(&module, &target);
//! let data = parent.get_nth_param(0).unwrap();
//! let layout = layout_params(&[ParamSpec::new(8, 8)]);
//! let status = build_device_launch(&b, &runtime, LaunchSite {
//!     kernel: child,
//!     grid: runtime.dim3(1, 1, 1),
//!     block: runtime.dim3(32, 1, 1),
//!     shared_mem: ctx.i32_type().const_zero(),
//!     stream: runtime.stream_handle(0).into(),
//!     args: &[LaunchArg::new(data, 8)],
//! }, &layout).unwrap();
//! assert_eq!(status.get_type().get_bit_width(), 32);
//! b.build_return(None).unwrap();
//! assert!(module.verify().is_ok());
//! assert!(module.get_function("__cudaCDP2LaunchDeviceV2").is_some());
//! ```

use super::BackendError;
use crate::layout::ParamLayout;
use crate::target::{AddressSize, DefaultStream, LaunchAbi, Target};
use inkwell::builder::Builder;
use inkwell::context::ContextRef;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, IntType, PointerType, StructType};
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue, StructValue, ValueKind};
use inkwell::AddressSpace;
use runtime_shim::entry_points::{AbiType, CType, EntryPoint, GET_PARAMETER_BUFFER, GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE, LAUNCH_DEVICE_PTSZ, LAUNCH_DEVICE_V2, LAUNCH_DEVICE_V2_PTSZ};
use runtime_shim::types::{CStruct, FieldType};

/// LLVM's `PTX_Kernel` calling convention: since LLVM 20 only functions with it become `.entry`.
pub const PTX_KERNEL_CALL_CONV: u32 = 71;

/// The status [`build_device_launch`] returns when the runtime gave no parameter buffer and the
/// launch was skipped: `cudaErrorLaunchPendingCountExceeded` (69), the pending-launch pool is
/// full.
pub const LAUNCH_SKIPPED_STATUS: i32 = 69;

/// Makes `function` a kernel (`__global__`, a PTX `.entry`) that device code can launch.
pub fn mark_kernel(function: FunctionValue<'_>) {
    function.set_call_conventions(PTX_KERNEL_CALL_CONV);
}

/// A launch's entry points, of both ABIs: the parameter buffer's and the launch's, the
/// per-thread-stream launches included.
const LAUNCH_ENTRY_POINTS: [&EntryPoint; 6] = [&GET_PARAMETER_BUFFER, &LAUNCH_DEVICE, &LAUNCH_DEVICE_PTSZ, &GET_PARAMETER_BUFFER_V2, &LAUNCH_DEVICE_V2, &LAUNCH_DEVICE_V2_PTSZ];

/// The device runtime as seen from one LLVM module: declares its entry points (each once, with
/// external linkage) with the LLVM types of the target's PTX ABI.
///
/// Declarations are made on first use, so that a module names only what it calls; use
/// [`DeviceRuntime::declare`] to declare the launch pair at once.
#[derive(Clone, Copy, Debug)]
pub struct DeviceRuntime<'m, 'ctx> {
    module: &'m Module<'ctx>,
    target: Target,
}

impl<'m, 'ctx> DeviceRuntime<'m, 'ctx> {
    /// The runtime for `module` compiled for `target`; declares nothing yet.
    pub fn new(module: &'m Module<'ctx>, target: &Target) -> Self {
        DeviceRuntime { module, target: *target }
    }

    /// The runtime for `module`, with the launch entry points of `target.launch_abi` declared
    /// now: `cudaLaunchDevice` and `cudaGetParameterBuffer` (V1), or
    /// `__cudaCDP2GetParameterBufferV2` and `__cudaCDP2LaunchDeviceV2` (V2).
    pub fn declare(module: &'m Module<'ctx>, target: &Target) -> Self {
        let runtime = DeviceRuntime::new(module, target);
        for entry in runtime.launch_entry_points() {
            runtime.entry(entry);
        }
        runtime
    }

    /// The target this runtime declares for.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The two entry points a launch calls under the target's ABI, in the order the launch
    /// sequence first uses them.
    pub fn launch_entry_points(&self) -> [&'static EntryPoint; 2] {
        match self.target.launch_abi {
            LaunchAbi::V1 => [self.launch_entry(), &GET_PARAMETER_BUFFER],
            LaunchAbi::V2 => [&GET_PARAMETER_BUFFER_V2, self.launch_entry()],
        }
    }

    /// The entry point that launches a filled buffer: the `_ptsz` one with per-thread default
    /// streams, as nvcc's `--default-stream per-thread` device code calls.
    pub fn launch_entry(&self) -> &'static EntryPoint {
        match (self.target.launch_abi, self.target.default_stream) {
            (LaunchAbi::V1, DefaultStream::Legacy) => &LAUNCH_DEVICE,
            (LaunchAbi::V1, DefaultStream::PerThread) => &LAUNCH_DEVICE_PTSZ,
            (LaunchAbi::V2, DefaultStream::Legacy) => &LAUNCH_DEVICE_V2,
            (LaunchAbi::V2, DefaultStream::PerThread) => &LAUNCH_DEVICE_V2_PTSZ,
        }
    }

    /// Declares `entry` (any of [`runtime_shim::entry_points`], not only the launch pair) in the
    /// module unless it is there already, and returns it.
    ///
    /// The launch entry points (the parameter buffer's and the launch's) are `nomerge`: LLVM
    /// does not sink identical launches of several branches into one call after them, so each
    /// source launch stays a call site of its own, as in nvcc's code. One call reached by the
    /// whole warp measured 1.18-1.23x nvcc's time against three divergent ones on the H100
    /// (bench/gpu/branch_sites.cdp).
    pub fn entry(&self, entry: &EntryPoint) -> FunctionValue<'ctx> {
        let f = self.module.get_function(entry.ptx_symbol).unwrap_or_else(|| {
            let params: Vec<BasicMetadataTypeEnum> = entry.params.iter().map(|(_, ty)| self.abi_type(*ty).into()).collect();
            let fn_type = match entry.ret {
                Some(ret) => self.abi_type(ret).fn_type(&params, false),
                None => self.context().void_type().fn_type(&params, false),
            };
            self.module.add_function(entry.ptx_symbol, fn_type, Some(Linkage::External))
        });
        if LAUNCH_ENTRY_POINTS.iter().any(|e| e.ptx_symbol == entry.ptx_symbol) {
            let kind = inkwell::attributes::Attribute::get_named_enum_kind_id("nomerge");
            if f.get_enum_attribute(inkwell::attributes::AttributeLoc::Function, kind).is_none() {
                f.add_attribute(inkwell::attributes::AttributeLoc::Function, self.context().create_enum_attribute(kind, 0));
            }
        }
        f
    }

    /// The LLVM type of an entry point's parameter or result, following its PTX ABI type:
    /// `i32` for `.b32`, pointer-sized (`ptr`, or an integer for `size_t`), or the 12-byte dim3.
    pub fn abi_type(&self, ty: CType) -> BasicTypeEnum<'ctx> {
        match ty.abi() {
            AbiType::B32 => self.context().i32_type().into(),
            AbiType::Address if ty == CType::SizeT => self.intptr_type().into(),
            AbiType::Address => self.ptr_type().into(),
            AbiType::B64 => self.context().i64_type().into(),
            AbiType::Dim3 => self.dim3_type().into(),
            AbiType::Struct(s) => self.struct_type(s).into(),
        }
    }

    /// A struct the runtime takes by value, as a literal LLVM struct with C's layout (which
    /// NVPTX passes as `.param .align A .b8 [N]`, as nvcc does).
    pub fn struct_type(&self, s: CStruct) -> StructType<'ctx> {
        let ctx = self.context();
        let fields: Vec<BasicTypeEnum<'ctx>> = s
            .fields()
            .unwrap_or_default()
            .iter()
            .map(|(_, field)| match field {
                FieldType::Int | FieldType::Enum(_) => ctx.i32_type().into(),
                FieldType::SizeT => self.intptr_type().into(),
                FieldType::VoidPtr | FieldType::Handle(_) => self.ptr_type().into(),
                FieldType::Struct(inner) => self.struct_type(*inner).into(),
                FieldType::IntArray(n) => ctx.i32_type().array_type(*n).into(),
            })
            .collect();
        ctx.struct_type(&fields, false)
    }

    /// `dim3`: `{ i32, i32, i32 }`, which NVPTX passes as `.param .align 4 .b8 [12]`.
    pub fn dim3_type(&self) -> StructType<'ctx> {
        let i32 = self.context().i32_type().into();
        self.context().struct_type(&[i32, i32, i32], false)
    }

    /// A constant `dim3(x, y, z)`.
    pub fn dim3(&self, x: u32, y: u32, z: u32) -> StructValue<'ctx> {
        let i32 = self.context().i32_type();
        let c = |v: u32| i32.const_int(u64::from(v), false).as_basic_value_enum();
        self.dim3_type().const_named_struct(&[c(x), c(y), c(z)])
    }

    /// The integer type as wide as a pointer (`size_t`).
    pub fn intptr_type(&self) -> IntType<'ctx> {
        match self.target.address_size {
            AddressSize::Bits32 => self.context().i32_type(),
            AddressSize::Bits64 => self.context().i64_type(),
        }
    }

    /// The generic pointer type (address space 0), also the type of `cudaStream_t`.
    pub fn ptr_type(&self) -> PointerType<'ctx> {
        self.context().ptr_type(AddressSpace::default())
    }

    /// A constant stream handle: 0 for the NULL stream, or one of
    /// [`runtime_shim::streams`]' handles such as `TAIL_LAUNCH` (V2 ABI only).
    pub fn stream_handle(&self, handle: u64) -> PointerValue<'ctx> {
        self.intptr_type().const_int(handle, false).const_to_pointer(self.ptr_type())
    }

    fn context(&self) -> ContextRef<'ctx> {
        self.module.get_context()
    }
}

/// One argument of a launch: its value in memory representation (for instance `i8` for a C
/// `bool`) and the alignment of its type, which the store into the parameter buffer uses.
#[derive(Clone, Copy, Debug)]
pub struct LaunchArg<'ctx> {
    /// The value stored into the parameter buffer.
    pub value: BasicValueEnum<'ctx>,
    /// The alignment of the parameter's type in bytes (the one given to the layout).
    pub align: u32,
}

impl<'ctx> LaunchArg<'ctx> {
    /// An argument `value` whose type is aligned to `align` bytes.
    pub fn new(value: impl BasicValue<'ctx>, align: u32) -> LaunchArg<'ctx> {
        LaunchArg { value: value.as_basic_value_enum(), align }
    }
}

/// `kernel<<<grid, block, shared_mem, stream>>>(args)`, as LLVM values.
#[derive(Clone, Copy, Debug)]
pub struct LaunchSite<'a, 'ctx> {
    /// The kernel launched (marked with [`mark_kernel`]).
    pub kernel: FunctionValue<'ctx>,
    /// The grid size, a `{ i32, i32, i32 }` value ([`DeviceRuntime::dim3`] for a constant).
    pub grid: StructValue<'ctx>,
    /// The block size, a `{ i32, i32, i32 }` value.
    pub block: StructValue<'ctx>,
    /// Dynamic shared memory in bytes; any integer width (it is converted to `unsigned int`).
    pub shared_mem: IntValue<'ctx>,
    /// The stream: a pointer, or a pointer-sized integer handle.
    pub stream: BasicValueEnum<'ctx>,
    /// The arguments, one per parameter of `layout`.
    pub args: &'a [LaunchArg<'ctx>],
}

fn call<'ctx>(builder: &Builder<'ctx>, f: FunctionValue<'ctx>, args: &[BasicValueEnum<'ctx>]) -> Result<BasicValueEnum<'ctx>, BackendError> {
    let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
    match builder.build_call(f, &args, "")?.try_as_basic_value() {
        ValueKind::Basic(v) => Ok(v),
        _ => Err(BackendError::Internal(format!("device-runtime entry point {} returned nothing", f.get_name().to_string_lossy()))),
    }
}

/// Emits a complete device-side launch at the builder's position and returns its
/// `cudaError_t` (an `i32`): the launch entry point's result, or [`LAUNCH_SKIPPED_STATUS`] when
/// the runtime had no parameter buffer. The builder is left at the end of the code, in a new
/// block where the function continues.
///
/// `layout` must have one offset per argument ([`crate::layout::layout_params`] computes it);
/// the check of its size against the target ([`ParamLayout::check_size`]) is the caller's.
/// Errors are [`BackendError::Launch`] for inconsistent input (argument count, builder not in a
/// function, a tail-launch handle is not checked here) and builder failures.
pub fn build_device_launch<'ctx>(builder: &Builder<'ctx>, runtime: &DeviceRuntime<'_, 'ctx>, site: LaunchSite<'_, 'ctx>, layout: &ParamLayout) -> Result<IntValue<'ctx>, BackendError> {
    let kernel = site.kernel.as_global_value().as_pointer_value();
    let operands = LaunchOperands { grid: site.grid, block: site.block, shared_mem: site.shared_mem, stream: site.stream, args: site.args };
    build_launch_through(builder, runtime, kernel, operands, layout)
}

/// The operands of a launch other than its kernel (see [`LaunchSite`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchOperands<'a, 'ctx> {
    pub(crate) grid: StructValue<'ctx>,
    pub(crate) block: StructValue<'ctx>,
    pub(crate) shared_mem: IntValue<'ctx>,
    pub(crate) stream: BasicValueEnum<'ctx>,
    pub(crate) args: &'a [LaunchArg<'ctx>],
}

/// [`build_device_launch`] of the kernel whose address is `kernel`, a value known at run time
/// only (`table[i]<<<g, b>>>(p)`): both ABIs pass it where they pass a kernel's address, as
/// nvcc does (`docs/launch-sequence.md`, "Launches through a pointer").
pub(crate) fn build_launch_through<'ctx>(
    builder: &Builder<'ctx>,
    runtime: &DeviceRuntime<'_, 'ctx>,
    kernel: PointerValue<'ctx>,
    site: LaunchOperands<'_, 'ctx>,
    layout: &ParamLayout,
) -> Result<IntValue<'ctx>, BackendError> {
    if site.args.len() != layout.offsets.len() {
        return Err(BackendError::Launch(format!("launch with {} arguments but a layout for {}", site.args.len(), layout.offsets.len())));
    }
    let head = builder.get_insert_block().ok_or_else(|| BackendError::Launch("the builder is not positioned in a basic block".into()))?;
    let function = head.get_parent().ok_or_else(|| BackendError::Launch("the builder's block is not in a function".into()))?;
    let ctx = runtime.context();
    let i32 = ctx.i32_type();
    let kernel: BasicValueEnum = kernel.into();
    let grid: BasicValueEnum = site.grid.into();
    let block: BasicValueEnum = site.block.into();
    // The entry points take `unsigned int` shared memory and a pointer stream.
    let shmem: BasicValueEnum = if site.shared_mem.get_type() == i32 { site.shared_mem.into() } else { builder.build_int_cast_sign_flag(site.shared_mem, i32, false, "abi")?.into() };
    let stream: BasicValueEnum = match site.stream {
        BasicValueEnum::IntValue(i) => builder.build_int_to_ptr(i, runtime.ptr_type(), "abi")?.into(),
        BasicValueEnum::PointerValue(p) => p.into(),
        other => return Err(BackendError::Launch(format!("the stream must be a pointer or an integer, not {:?}", other.get_type()))),
    };

    let fill_and_launch = |buf: BasicValueEnum<'ctx>, do_launch: &dyn Fn(PointerValue<'ctx>) -> Result<BasicValueEnum<'ctx>, BackendError>| {
        // if (buf != NULL) { store args; status = launch(buf); }
        let buf = buf.into_pointer_value();
        let is_null = builder.build_is_null(buf, "buf.null")?;
        let null_from = builder.get_insert_block().unwrap_or(head);
        let fill_bb = ctx.append_basic_block(function, "launch.fill");
        let skip_bb = ctx.append_basic_block(function, "launch.end");
        builder.build_conditional_branch(is_null, skip_bb, fill_bb)?;
        builder.position_at_end(fill_bb);
        // A struct argument is stored element by element (`split.rs`: as one aggregate store
        // its vector members would not be merged into nvcc's 16-byte stores); that needs the
        // module's data layout, without which it is stored whole.
        let td = if site.args.iter().any(|a| super::split::splits(a.value.get_type())) {
            let layout_str = runtime.module.get_data_layout().as_str().to_string_lossy().into_owned();
            (!layout_str.is_empty()).then(|| inkwell::targets::TargetData::create(&layout_str))
        } else {
            None
        };
        for (arg, offset) in site.args.iter().zip(&layout.offsets) {
            let idx = runtime.intptr_type().const_int(*offset, false);
            // SAFETY: the runtime's buffer holds `layout.size` bytes, and offset + size fits.
            let slot = unsafe { builder.build_in_bounds_gep(ctx.i8_type(), buf, &[idx], "param")? };
            // Each argument with its own type and alignment: the stores nvcc emits.
            match &td {
                Some(td) if super::split::splits(arg.value.get_type()) => super::split::store(builder, td, slot, arg.value, arg.align)?,
                _ => {
                    let store = builder.build_store(slot, arg.value)?;
                    store.set_alignment(arg.align.max(1)).map_err(|e| BackendError::Launch(e.to_string()))?;
                }
            }
        }
        let status = do_launch(buf)?;
        let launched_from = builder.get_insert_block().unwrap_or(fill_bb);
        builder.build_unconditional_branch(skip_bb)?;
        builder.position_at_end(skip_bb);
        let phi = builder.build_phi(i32, "launch.status")?;
        let skipped = i32.const_int(LAUNCH_SKIPPED_STATUS as u64, true);
        phi.add_incoming(&[(&status, launched_from), (&skipped, null_from)]);
        Ok::<IntValue<'ctx>, BackendError>(phi.as_basic_value().into_int_value())
    };

    match runtime.target.launch_abi {
        LaunchAbi::V2 => {
            let get = runtime.entry(&GET_PARAMETER_BUFFER_V2);
            let buf = call(builder, get, &[kernel, grid, block, shmem])?;
            let launch = runtime.entry(runtime.launch_entry());
            fill_and_launch(buf, &|buf| call(builder, launch, &[buf.into(), stream]))
        }
        LaunchAbi::V1 => {
            let launch = runtime.entry(runtime.launch_entry());
            if site.args.is_empty() {
                // The documented ABI allows a NULL buffer for a kernel without parameters.
                let null = runtime.ptr_type().const_null().into();
                return Ok(call(builder, launch, &[kernel, null, grid, block, shmem, stream])?.into_int_value());
            }
            let get = runtime.entry(&GET_PARAMETER_BUFFER);
            let intptr = runtime.intptr_type();
            let align = intptr.const_int(layout.align, false).into();
            let size = intptr.const_int(layout.size, false).into();
            let buf = call(builder, get, &[align, size])?;
            fill_and_launch(buf, &|buf| call(builder, launch, &[kernel, buf.into(), grid, block, shmem, stream]))
        }
    }
}
