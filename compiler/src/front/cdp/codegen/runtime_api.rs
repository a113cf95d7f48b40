//! Calls of the device-runtime API (`Builtin::Runtime`): a call of the libcudadevrt symbol nvcc
//! calls, with the arguments in its PTX ABI types, or the one PTX instruction of the header's
//! inline functions (programmatic dependent launch, `cudaGetCurrentGraphExec`).

use super::{internal, Codegen, R};
use crate::front::cdp::hir::RuntimeFn;
use crate::types::Type;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum};
use runtime_shim::entry_points::{InlinePtx, Lowering};

type BV<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Codegen<'ctx, '_> {
    /// `ty` is the call's C result type (`Void` for none).
    pub(crate) fn runtime_call(&mut self, f: RuntimeFn, vals: &[BV<'ctx>], ty: &Type) -> R<Option<BV<'ctx>>> {
        if let Lowering::Inline(ptx) = f.lowering() {
            return self.inline_runtime(ptx);
        }
        let ep = f.entry_point();
        let callee = self.declare_entry(&ep);
        let params = callee.get_type().get_param_types();
        if params.len() != vals.len() {
            return internal(format!("{} takes {} arguments, got {}", ep.c_name, params.len(), vals.len()));
        }
        let mut call_args: Vec<BasicMetadataValueEnum> = Vec::with_capacity(vals.len());
        for (v, p) in vals.iter().zip(params) {
            call_args.push(self.coerce(*v, p)?.into());
        }
        let result = self.call(callee, &call_args)?;
        // The program's own call (of `cudaLaunchDevice`, say), not a `<<<>>>`: the launch
        // pipeline leaves it as written (`pipeline::OWN_METADATA`).
        if let Some(call) = result.and_then(|v| inkwell::values::BasicValue::as_instruction_value(&v)) {
            let _ = call.set_metadata(self.ctx.metadata_node(&[]), self.ctx.get_kind_id(crate::pipeline::OWN_METADATA));
        }
        match (result, ty) {
            (None, _) | (_, Type::Void) => Ok(None),
            (Some(v), Type::CudaError) => self.int_result(v, &Type::CudaError, ty),
            (Some(v), _) => Ok(Some(v)),
        }
    }

    fn inline_runtime(&mut self, ptx: InlinePtx) -> R<Option<BV<'ctx>>> {
        match ptx {
            InlinePtx::GridDependencyWait => {
                self.call(self.intrinsic("llvm.nvvm.griddepcontrol.wait", &[])?, &[])?;
                Ok(None)
            }
            InlinePtx::LaunchDependents => {
                self.call(self.intrinsic("llvm.nvvm.griddepcontrol.launch.dependents", &[])?, &[])?;
                Ok(None)
            }
            InlinePtx::CurrentGraphExec => {
                // The header's `asm("mov.u64 %0, %%current_graph_exec;")`; no intrinsic exists.
                // Not `volatile`: the value is fixed for the grid, so LLVM may reuse it.
                let i64t = self.ctx.i64_type();
                let fn_type = i64t.fn_type(&[], false);
                let asm = self.ctx.create_inline_asm(fn_type, "mov.u64 $0, %current_graph_exec;".to_string(), "=l".to_string(), false, false, None, false);
                let call = self.builder.build_indirect_call(fn_type, asm, &[], "graph_exec")?;
                let Some(BasicValueEnum::IntValue(bits)) = call.try_as_basic_value().basic() else {
                    return internal("inline asm returned no value");
                };
                Ok(Some(self.builder.build_int_to_ptr(bits, self.types.ptr(), "graph_exec")?.into()))
            }
        }
    }
}
