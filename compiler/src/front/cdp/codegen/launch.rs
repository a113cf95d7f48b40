//! `kernel<<<grid, block, shmem, stream>>>(args)` in `.cdp` source: evaluates the HIR operands
//! and hands them to [`super::device_launch::build_device_launch`], the public launch lowering
//! that other front ends call too, always for the documented V1 sequence
//! (`cudaGetParameterBuffer`, stores, `cudaLaunchDevice`; docs/IR-INPUT.md). The launch
//! pipeline on LLVM IR (`crate::pipeline`, run by the driver after code generation) recognises
//! it and lowers it to the ABI asked for, as it does Clang's: the ABI, tail launch and
//! fire-and-forget streams and `E0306` come from that one place.
//!
//! Each launch call carries its source span as `!cdpc.span` metadata ([`SPAN_METADATA`]: two
//! `i64` byte offsets in the preprocessed text), which the pipeline's diagnostics and remarks
//! read where there is no debug location; the program's own calls of the runtime's entry
//! points carry `!cdpc.own` ([`crate::pipeline::OWN_METADATA`]) and are no launches. Both kinds
//! are the pipeline's, which removes them before optimisation, so the IR and PTX are as
//! without them.
//!
//! A function's first [`INLINE_LAUNCHES`] launch sites get the sequence in place, as nvcc
//! emits it. Later sites call a helper, one per child kernel and operand types, that holds the
//! sequence once: ptxas needs time and memory that grow faster than linearly with the number
//! of runtime calls in one function (BENCHMARKS.md, "Launches per kernel": 2,000 launches in
//! place take it about 6 s and 540 MB, through the helper about 1.5 s and 130 MB), and the helper
//! costs one call per launch. Programs with fewer launches per function are unchanged.
//!
//! The module declares the entry points of the ABI asked for at its first launch, and the V1
//! ones the sequence calls, each in its documented form for the address size
//! ([`DeviceRuntime::entry`]).

use super::device_launch::{build_device_launch, build_launch_through, DeviceRuntime, LaunchArg, LaunchOperands, LaunchSite};
use super::{internal, Codegen, R};
use crate::diag::Span;
use crate::front::cdp::hir::{Launch, LaunchTarget};
use crate::layout::ParamLayout;
use crate::pipeline::SPAN_METADATA;
use crate::target::{LaunchAbi, Target};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::Linkage;
use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, InstructionOpcode, IntValue, StructValue, ValueKind};
use runtime_shim::entry_points::EntryPoint;

/// How many launch sites of one function are lowered in place before later ones call a shared
/// helper (see the module documentation).
pub const INLINE_LAUNCHES: usize = 64;

impl<'ctx> Codegen<'ctx, '_> {
    /// The device runtime of this module, declaring entry points on first use.
    pub(crate) fn runtime(&self) -> DeviceRuntime<'_, 'ctx> {
        DeviceRuntime::new(&self.module, &self.hir.target)
    }

    /// Declares a device-runtime entry point once per module.
    pub(crate) fn declare_entry(&self, ep: &EntryPoint) -> FunctionValue<'ctx> {
        self.runtime().entry(ep)
    }

    /// The runtime the launches are written for: the documented V1 entry points, whatever
    /// ABI is asked for (the pipeline lowers them to it).
    fn launch_runtime(&self) -> DeviceRuntime<'_, 'ctx> {
        DeviceRuntime::new(&self.module, &Target { launch_abi: LaunchAbi::V1, ..self.hir.target })
    }

    /// Declares the launch entry points of the ABI asked for at the module's first launch, as
    /// they were declared when code generation called them itself: the pipeline's lowering
    /// then calls these declarations, and the PTX declares them in the same order as before.
    fn declare_target_entries(&self) {
        DeviceRuntime::declare(&self.module, &self.hir.target);
    }

    /// Lowers a launch, a `void` expression: the entry point's status is dropped from the IR
    /// (the device runtime records a launch's error itself).
    pub(crate) fn launch(&mut self, launch: &Launch) -> R<()> {
        // C semantics: the kernel pointer, the configuration and the arguments are evaluated
        // before the call (the pointer first, as nvcc does).
        let pointer = match &launch.target {
            LaunchTarget::Pointer(p) => match self.value(p)? {
                BasicValueEnum::PointerValue(p) => Some(p),
                other => return internal(format!("a kernel pointer that is not a pointer: {other:?}")),
            },
            LaunchTarget::Kernel(_) => None,
        };
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
        let BasicValueEnum::IntValue(shared_mem) = shmem else {
            return internal("launch with a non-integer shared memory size");
        };
        let kernel_id = match &launch.target {
            LaunchTarget::Kernel(k) => *k,
            LaunchTarget::Pointer(_) => {
                let Some(pointer) = pointer else { return internal("a launch through a pointer without its value") };
                let operands = LaunchOperands { grid: dim3(grid)?, block: dim3(block)?, shared_mem, stream, args: &args };
                self.declare_target_entries();
                let status = build_launch_through(&self.builder, &self.launch_runtime(), pointer, operands, &launch.layout)?;
                self.mark_span(status, launch.span);
                self.drop_status(status);
                return Ok(());
            }
        };
        let Some(kernel) = self.functions.get(kernel_id.0 as usize).copied() else {
            return internal(format!("launch of unknown function {}", kernel_id.0));
        };
        let site = LaunchSite { kernel, grid: dim3(grid)?, block: dim3(block)?, shared_mem, stream, args: &args };
        self.declare_target_entries();
        let lowered = self.fs.as_mut().map_or(0, |fs| {
            fs.launches += 1;
            fs.launches
        });
        let status = if lowered > INLINE_LAUNCHES {
            self.call_launch_helper(kernel_id.0 as usize, site, &launch.layout, launch.span)?
        } else {
            build_device_launch(&self.builder, &self.launch_runtime(), site, &launch.layout)?
        };
        self.mark_span(status, launch.span);
        self.drop_status(status);
        Ok(())
    }

    /// Gives the call that produced `status` (the launch entry point's call, or the shared
    /// helper's) the launch's `span` as [`SPAN_METADATA`]. The status is that call, or the phi
    /// that joins it with the skipped launch's constant.
    fn mark_span(&self, status: IntValue<'ctx>, span: Span) {
        if let Some(call) = launch_call(status) {
            let i64t = self.ctx.i64_type();
            let node = self.ctx.metadata_node(&[i64t.const_int(span.start as u64, false).into(), i64t.const_int(span.end as u64, false).into()]);
            // A call's metadata of a kind never set fails only for non-instruction values.
            let _ = call.set_metadata(node, self.ctx.get_kind_id(SPAN_METADATA));
        }
    }

    /// Drops a launch's status: a launch is a void expression in the language, and the IR is
    /// then exactly the launch sequence at every optimisation level.
    fn drop_status(&self, status: IntValue<'ctx>) {
        if let Some(phi) = status.as_instruction().filter(|i| i.get_opcode() == InstructionOpcode::Phi) {
            if phi.get_first_use().is_none() {
                phi.erase_from_basic_block();
            }
        }
    }
}

impl<'ctx> Codegen<'ctx, '_> {
    /// Calls the helper that launches `site.kernel` with operands of these types, made on first
    /// use: `i32 @__cdpc_launch_<kernel>(grid, block, shmem, stream, args...)`, internal and
    /// never inlined, whose body is [`build_device_launch`] on its parameters. The helper's
    /// launch carries the span of the site that made it; the call at each site, its own.
    fn call_launch_helper(&mut self, kernel_index: usize, site: LaunchSite<'_, 'ctx>, layout: &ParamLayout, span: Span) -> R<IntValue<'ctx>> {
        let mut operands: Vec<BasicValueEnum<'ctx>> = vec![site.grid.into(), site.block.into(), site.shared_mem.into(), site.stream];
        operands.extend(site.args.iter().map(|a| a.value));
        let types: Vec<BasicTypeEnum<'ctx>> = operands.iter().map(|v| v.get_type()).collect();
        let types_key = types.iter().map(|t| t.print_to_string().to_string()).collect::<Vec<_>>().join(",");
        let key = (kernel_index, types_key);
        let helper = match self.launch_helpers.get(&key) {
            Some(helper) => *helper,
            None => {
                let helper = self.define_launch_helper(site, layout, &types, span)?;
                self.launch_helpers.insert(key, helper);
                helper
            }
        };
        let operands: Vec<BasicMetadataValueEnum<'ctx>> = operands.into_iter().map(Into::into).collect();
        let call = self.builder.build_call(helper, &operands, "launch.status")?;
        match call.try_as_basic_value() {
            ValueKind::Basic(BasicValueEnum::IntValue(status)) => Ok(status),
            _ => internal("a launch helper returned no status"),
        }
    }

    fn define_launch_helper(&self, site: LaunchSite<'_, 'ctx>, layout: &ParamLayout, types: &[BasicTypeEnum<'ctx>], span: Span) -> R<FunctionValue<'ctx>> {
        let params: Vec<BasicMetadataTypeEnum<'ctx>> = types.iter().map(|t| (*t).into()).collect();
        let name = format!("__cdpc_launch_{}", site.kernel.get_name().to_string_lossy());
        let helper = self.module.add_function(&name, self.ctx.i32_type().fn_type(&params, false), Some(Linkage::Internal));
        let noinline = Attribute::get_named_enum_kind_id("noinline");
        helper.add_attribute(AttributeLoc::Function, self.ctx.create_enum_attribute(noinline, 0));
        let builder = self.ctx.create_builder();
        builder.position_at_end(self.ctx.append_basic_block(helper, "entry"));
        let param = |i: u32| helper.get_nth_param(i).ok_or_else(|| super::BackendError::Internal("launch helper parameter".into()));
        let args: Vec<LaunchArg<'ctx>> = site.args.iter().enumerate().map(|(i, a)| Ok(LaunchArg { value: param(4 + i as u32)?, align: a.align })).collect::<R<_>>()?;
        let BasicValueEnum::IntValue(shared_mem) = param(2)? else { return internal("launch helper shared memory") };
        let inner = LaunchSite { kernel: site.kernel, grid: dim3(param(0)?)?, block: dim3(param(1)?)?, shared_mem, stream: param(3)?, args: &args };
        let status = build_device_launch(&builder, &self.launch_runtime(), inner, layout)?;
        // Its launch is a launch for the pipeline, at the site that made the helper.
        self.mark_span(status, span);
        builder.build_return(Some(&status))?;
        Ok(helper)
    }
}

fn dim3(v: BasicValueEnum<'_>) -> R<StructValue<'_>> {
    match v {
        BasicValueEnum::StructValue(s) => Ok(s),
        other => internal(format!("launch configuration is not a dim3: {other:?}")),
    }
}

/// The call that produced a launch's `status`: the status itself, or the call among the
/// incoming values of the phi that joins it with the skipped launch's constant.
fn launch_call(status: IntValue<'_>) -> Option<inkwell::values::InstructionValue<'_>> {
    let inst = status.as_instruction()?;
    match inst.get_opcode() {
        InstructionOpcode::Call => Some(inst),
        InstructionOpcode::Phi => inkwell::values::PhiValue::try_from(inst)
            .ok()
            .and_then(|phi| (0..phi.count_incoming()).find_map(|i| inkwell::values::BasicValue::as_instruction_value(&phi.get_incoming(i)?.0)))
            .filter(|i| i.get_opcode() == InstructionOpcode::Call),
        _ => None,
    }
}
