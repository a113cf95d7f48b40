//! `kernel<<<grid, block, shmem, stream>>>(args)` in `.cdp` source: evaluates the HIR operands
//! and hands them to [`super::device_launch::build_device_launch`], the public launch lowering
//! that other front ends call too. The sequences of both ABIs are described there.

use super::device_launch::{build_device_launch, DeviceRuntime, LaunchArg, LaunchSite};
use super::{internal, Codegen, R};
use crate::hir::Launch;
use inkwell::values::{BasicValueEnum, FunctionValue, InstructionOpcode, IntValue, StructValue};
use runtime_shim::entry_points::EntryPoint;

impl<'ctx> Codegen<'ctx, '_> {
    /// The device runtime of this module, declaring entry points on first use.
    pub(crate) fn runtime(&self) -> DeviceRuntime<'_, 'ctx> {
        DeviceRuntime::new(&self.module, &self.hir.target)
    }

    /// Declares a device-runtime entry point once per module.
    pub(crate) fn declare_entry(&self, ep: &EntryPoint) -> FunctionValue<'ctx> {
        self.runtime().entry(ep)
    }

    /// Lowers a launch; with `keep_status`, returns its status (`cudaError_t`), which is
    /// otherwise dropped from the IR.
    pub(crate) fn launch(&mut self, launch: &Launch, keep_status: bool) -> R<Option<IntValue<'ctx>>> {
        // C semantics: the configuration and the arguments are evaluated before the call.
        let grid = self.value(&launch.grid)?;
        let block = self.value(&launch.block)?;
        let shmem = self.value(&launch.shared_mem)?;
        let stream = self.value(&launch.stream)?;
        let mut args = Vec::with_capacity(launch.args.len());
        for a in &launch.args {
            let v = self.value(a)?;
            let align = self.hir.size_align(&a.ty).1.max(1) as u32;
            args.push(LaunchArg { value: self.reg_to_mem(v, &a.ty)?, align });
        }
        let Some(kernel) = self.functions.get(launch.kernel.0 as usize).copied() else {
            return internal(format!("launch of unknown function {}", launch.kernel.0));
        };
        let BasicValueEnum::IntValue(shared_mem) = shmem else {
            return internal("launch with a non-integer shared memory size");
        };
        let site = LaunchSite { kernel, grid: dim3(grid)?, block: dim3(block)?, shared_mem, stream, args: &args };
        let status = build_device_launch(&self.builder, &self.runtime(), site, &launch.layout)?;
        // A launch is a void expression in the language: drop the status nobody reads, so the
        // IR is exactly the launch sequence at every optimisation level.
        if keep_status {
            return Ok(Some(status));
        }
        if let Some(phi) = status.as_instruction().filter(|i| i.get_opcode() == InstructionOpcode::Phi) {
            if phi.get_first_use().is_none() {
                phi.erase_from_basic_block();
            }
        }
        Ok(None)
    }
}

fn dim3(v: BasicValueEnum<'_>) -> R<StructValue<'_>> {
    match v {
        BasicValueEnum::StructValue(s) => Ok(s),
        other => internal(format!("launch configuration is not a dim3: {other:?}")),
    }
}
