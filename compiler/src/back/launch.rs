//! `kernel<<<grid, block, shmem, stream>>>(args)`: the device-side launch, in either ABI.
//!
//! V2 (nvcc 13): `buf = __cudaCDP2GetParameterBufferV2(kernel, grid, block, shmem)` always, then
//! if `buf` is not null the arguments are stored at their layout offsets and
//! `__cudaCDP2LaunchDeviceV2(buf, stream)` launches.
//! V1 (documented): `buf = cudaGetParameterBuffer(align, size)` only when the kernel has
//! parameters, then the same null check and stores, then
//! `cudaLaunchDevice(kernel, buf, grid, block, shmem, stream)`.
//! A null buffer means the launch pool is exhausted: the launch is skipped, as nvcc does.

use super::{internal, Codegen, R};
use crate::hir::Launch;
use crate::target::LaunchAbi;
use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, PointerValue};
use runtime_shim::entry_points::{
    AbiType, CType, EntryPoint, GET_PARAMETER_BUFFER, GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE, LAUNCH_DEVICE_V2,
};

impl<'ctx> Codegen<'ctx, '_> {
    /// The LLVM type of an entry point's parameter or result, following its PTX ABI type:
    /// `.b32`, pointer-sized (`ptr`, or an integer for `size_t`) or the 12-byte dim3.
    fn abi_type(&self, ty: CType) -> BasicTypeEnum<'ctx> {
        match ty.abi() {
            AbiType::B32 => self.ctx.i32_type().into(),
            AbiType::Address if ty == CType::SizeT => self.types.intptr().into(),
            AbiType::Address => self.types.ptr().into(),
            AbiType::Dim3 => self.types.dim3().into(),
        }
    }

    /// Declares a device-runtime entry point once per module.
    pub(crate) fn declare_entry(&self, ep: &EntryPoint) -> FunctionValue<'ctx> {
        let params: Vec<BasicMetadataTypeEnum> = ep.params.iter().map(|(_, ty)| self.abi_type(*ty).into()).collect();
        self.declare_external(ep.ptx_symbol, ep.ret.map(|r| self.abi_type(r)), &params)
    }

    pub(crate) fn launch(&mut self, launch: &Launch) -> R<()> {
        // C semantics: the configuration and the arguments are evaluated before the call.
        let grid = self.value(&launch.grid)?;
        let block = self.value(&launch.block)?;
        let shmem = self.value(&launch.shared_mem)?;
        let stream = self.value(&launch.stream)?;
        let mut args = Vec::with_capacity(launch.args.len());
        for a in &launch.args {
            let v = self.value(a)?;
            args.push(self.reg_to_mem(v, &a.ty)?);
        }
        if args.len() != launch.layout.offsets.len() {
            return internal(format!(
                "launch with {} arguments but a layout for {}",
                args.len(),
                launch.layout.offsets.len()
            ));
        }
        let Some(kernel) = self.functions.get(launch.kernel.0 as usize) else {
            return internal(format!("launch of unknown function {}", launch.kernel.0));
        };
        let kernel: BasicValueEnum = kernel.as_global_value().as_pointer_value().into();
        let shmem = self.coerce(shmem, self.ctx.i32_type().into())?;
        let stream = self.coerce(stream, self.types.ptr().into())?;

        match self.hir.target.launch_abi {
            LaunchAbi::V2 => {
                let get = self.declare_entry(&GET_PARAMETER_BUFFER_V2);
                let buf = self.call_entry(get, &[kernel, grid, block, shmem])?;
                let launch_fn = self.declare_entry(&LAUNCH_DEVICE_V2);
                self.fill_and_launch(buf, launch, &args, |cg, buf| {
                    cg.call_entry(launch_fn, &[buf.into(), stream]).map(|_| ())
                })
            }
            LaunchAbi::V1 => {
                let launch_fn = self.declare_entry(&LAUNCH_DEVICE);
                if args.is_empty() {
                    // The documented ABI allows a NULL buffer for a kernel without parameters.
                    let null = self.types.ptr().const_null().into();
                    self.call_entry(launch_fn, &[kernel, null, grid, block, shmem, stream])?;
                    return Ok(());
                }
                let get = self.declare_entry(&GET_PARAMETER_BUFFER);
                let intptr = self.types.intptr();
                let align = intptr.const_int(launch.layout.align, false).into();
                let size = intptr.const_int(launch.layout.size, false).into();
                let buf = self.call_entry(get, &[align, size])?;
                self.fill_and_launch(buf, launch, &args, |cg, buf| {
                    cg.call_entry(launch_fn, &[kernel, buf.into(), grid, block, shmem, stream]).map(|_| ())
                })
            }
        }
    }

    fn call_entry(&self, f: FunctionValue<'ctx>, args: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        match self.call(f, &args)? {
            Some(v) => Ok(v),
            None => internal("device-runtime entry point returned nothing"),
        }
    }

    /// `if (buf != NULL) { store args; launch(buf); }`
    fn fill_and_launch(
        &mut self,
        buf: BasicValueEnum<'ctx>,
        launch: &Launch,
        args: &[BasicValueEnum<'ctx>],
        do_launch: impl FnOnce(&mut Self, PointerValue<'ctx>) -> R<()>,
    ) -> R<()> {
        let buf = buf.into_pointer_value();
        let is_null = self.builder.build_is_null(buf, "buf.null")?;
        let fill_bb = self.ctx.append_basic_block(self.fs()?.llvm, "launch.fill");
        let skip_bb = self.ctx.append_basic_block(self.fs()?.llvm, "launch.end");
        self.builder.build_conditional_branch(is_null, skip_bb, fill_bb)?;
        self.builder.position_at_end(fill_bb);
        for ((value, arg), offset) in args.iter().zip(&launch.args).zip(&launch.layout.offsets) {
            let idx = self.types.intptr().const_int(*offset, false);
            // SAFETY: the runtime's buffer holds `layout.size` bytes, and offset + size fits.
            let slot = unsafe { self.builder.build_in_bounds_gep(self.ctx.i8_type(), buf, &[idx], "param")? };
            // Each argument with its own type and alignment: the stores nvcc emits.
            self.store_mem(slot, *value, &arg.ty)?;
        }
        do_launch(self, buf)?;
        self.builder.build_unconditional_branch(skip_bb)?;
        self.builder.position_at_end(skip_bb);
        Ok(())
    }
}
