//! The warp intrinsics of CUDA before 9.0, in LLVM IR.
//!
//! `__shfl_up(v, d)`, `__any(p)` and their kin reach the IR as `llvm.nvvm.shfl.up.i32` or
//! `llvm.nvvm.vote.any`, which NVPTX cannot select for sm_70 and newer (Clang stops with
//! "Cannot select: intrinsic %llvm.nvvm.shfl.up.i32", and nvcc no longer compiles them). As
//! the `.cdp` front end does, each becomes its `_sync` form over the lanes active at the call
//! (`llvm.nvvm.activemask`), with `W0902` at its source line. In CUDA C++ they are `E0903`
//! instead, unless `-flegacy-warp-intrinsics` asks for the rewrite: for sm_70 and newer nvcc's
//! headers leave the shuffles undeclared ("identifier \"__shfl\" is undefined") and declare the
//! votes deprecated, whose PTX (`vote` without `.sync`) ptxas then refuses (measured, nvcc 13.5). Invariant afterwards:
//! no call of a legacy shuffle or vote is left.

use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use crate::llvm::operand;
use inkwell::module::Module;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValue, CallSiteValue, InstructionOpcode};

/// `(legacy intrinsic, its _sync form, the CUDA function a user wrote)`.
const LEGACY: &[(&str, &str, &str)] = &[
    ("llvm.nvvm.shfl.idx.i32", "llvm.nvvm.shfl.sync.idx.i32", "__shfl"),
    ("llvm.nvvm.shfl.idx.f32", "llvm.nvvm.shfl.sync.idx.f32", "__shfl"),
    ("llvm.nvvm.shfl.up.i32", "llvm.nvvm.shfl.sync.up.i32", "__shfl_up"),
    ("llvm.nvvm.shfl.up.f32", "llvm.nvvm.shfl.sync.up.f32", "__shfl_up"),
    ("llvm.nvvm.shfl.down.i32", "llvm.nvvm.shfl.sync.down.i32", "__shfl_down"),
    ("llvm.nvvm.shfl.down.f32", "llvm.nvvm.shfl.sync.down.f32", "__shfl_down"),
    ("llvm.nvvm.shfl.bfly.i32", "llvm.nvvm.shfl.sync.bfly.i32", "__shfl_xor"),
    ("llvm.nvvm.shfl.bfly.f32", "llvm.nvvm.shfl.sync.bfly.f32", "__shfl_xor"),
    ("llvm.nvvm.vote.all", "llvm.nvvm.vote.all.sync", "__all"),
    ("llvm.nvvm.vote.any", "llvm.nvvm.vote.any.sync", "__any"),
    ("llvm.nvvm.vote.uni", "llvm.nvvm.vote.uni.sync", "__uni"),
    ("llvm.nvvm.vote.ballot", "llvm.nvvm.vote.ballot.sync", "__ballot"),
];

/// Rewrites every legacy shuffle and vote (module docs); one `W0902` per call in the source
/// (calls of an unrolled loop share one), or with `refuse` one `E0903`.
pub fn legacy_to_sync(module: &Module<'_>, source: &SourceText, refuse: bool) -> Vec<Diagnostic> {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let builder = ctx.create_builder();
    let mut diagnostics = Vec::new();
    for &(old, new, user) in LEGACY {
        let Some(old_fn) = module.get_function(old) else { continue };
        let modern = format!("{user}_sync");
        let old_ty = old_fn.get_type();
        let mut params: Vec<BasicMetadataTypeEnum> = vec![i32t.into()];
        params.extend(old_ty.get_param_types());
        let new_ty = match old_ty.get_return_type() {
            Some(inkwell::types::BasicTypeEnum::FloatType(t)) => t.fn_type(&params, false),
            Some(inkwell::types::BasicTypeEnum::IntType(t)) => t.fn_type(&params, false),
            _ => continue,
        };
        let new_fn = module.get_function(new).unwrap_or_else(|| module.add_function(new, new_ty, None));
        let active = module.get_function("llvm.nvvm.activemask").unwrap_or_else(|| module.add_function("llvm.nvvm.activemask", i32t.fn_type(&[], false), None));
        // The calls, collected first: each is replaced and erased below.
        let mut calls = Vec::new();
        for function in module.get_functions() {
            for block in function.get_basic_blocks() {
                for inst in block.get_instructions() {
                    if inst.get_opcode() == InstructionOpcode::Call {
                        let site = CallSiteValue::try_from(inst).expect("a call");
                        if site.get_called_fn_value() == Some(old_fn) {
                            calls.push((inst, function.get_name().to_string_lossy().into_owned()));
                        }
                    }
                }
            }
        }
        for (inst, function) in calls {
            builder.position_before(&inst);
            let mask = builder.build_call(active, &[], "active").expect("positioned").try_as_basic_value().basic().expect("i32");
            let mut args: Vec<BasicMetadataValueEnum> = vec![mask.into()];
            for i in 0..inst.get_num_operands() - 1 {
                let operand = operand(inst, i).expect("intrinsic operands are values");
                args.push(operand.into());
            }
            let call = builder.build_call(new_fn, &args, "sync").expect("positioned");
            let d = if refuse {
                Diagnostic::new(Code::LegacyWarpIntrinsicRefused, Span::new(0, 0), format!("`{user}` is the warp intrinsic of before CUDA 9, which nvcc refuses for sm_70 and newer"))
                    .with_primary_message(if user.starts_with("__shfl") {
                        format!("nvcc: identifier \"{user}\" is undefined")
                    } else {
                        "nvcc: deprecated, and ptxas refuses `vote` without `.sync` for sm_70 and newer".to_string()
                    })
                    .with_note(format!(
                        "write `{modern}` with the mask of the lanes that take part (since Volta the lanes of a warp need not run together); `-flegacy-warp-intrinsics` compiles the old form as `{modern}(__activemask(), ...)` with a warning (W0902)"
                    ))
            } else {
                Diagnostic::new(Code::LegacyWarpIntrinsic, Span::new(0, 0), format!("`{user}` is the warp intrinsic of before CUDA 9"))
                    .with_primary_message(format!("compiled as `{modern}(__activemask(), ...)`"))
                    .with_note(format!(
                        "write `{modern}` with the mask of the lanes that take part; since Volta the lanes of a warp need not run together, and nvcc no longer compiles the old forms for sm_70 and newer"
                    ))
            };
            // One per place in the source: a loop Clang unrolled has a call per copy.
            let placed = source.place(d, inst, &function);
            if !diagnostics.contains(&placed) {
                diagnostics.push(placed);
            }
            let location = inst.get_debug_location();
            for value in [mask, call.try_as_basic_value().basic().expect("the _sync forms return a value")] {
                if let Some(new_inst) = value.as_instruction_value() {
                    new_inst.set_debug_location(location);
                }
            }
            if let Some(new_inst) = call.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()) {
                inst.replace_all_uses_with(&new_inst);
            }
            inst.erase_from_basic_block();
        }
        // SAFETY: every call of the legacy declaration is gone.
        if old_fn.as_global_value().as_pointer_value().get_first_use().is_none() {
            unsafe { old_fn.delete() };
        }
    }
    diagnostics
}
