//! nvcc's floating-point contraction (`-fmad=true`), decided by cdpc on the optimised IR.
//!
//! Measured against nvcc 13.5's SASS (docs/FLOATING-POINT.md has the table): nvcc fuses a
//! multiply into an add or subtract that uses it only when **every** use of the product is an
//! add or subtract in the same basic block (directly, or through a negation); then it is fused
//! into each of them. A product that is also stored, compared, multiplied, passed on, carried
//! round a loop (a phi) or used in another block stays a rounded multiply, and its adds round
//! on their own. When both operands of an add or subtract are such products, the first operand
//! is fused (the minuend of a subtraction). This holds across variables, inlined functions,
//! `const &` parameters and struct temporaries alike, since it is a rule about the program after
//! inlining and common-subexpression elimination, not about how the source spells it.
//!
//! LLVM's NVPTX back end fuses more: with `contract` on both operations it fuses a product
//! whatever its other uses are (it keeps the multiply as well), which changed 0.2% of the pixels
//! of a Mandelbrot image (`re * re` is used by `|z|²` and by the next iteration's `z * z`).
//! So code generation marks the program's own float adds, subtracts, multiplies and negations
//! `contract` (`function.rs`), LLVM's pipeline runs as usual (it forms no `fma` from them), and
//! then [`contract_as_nvcc`] replaces exactly the pairs nvcc fuses by `llvm.fma` and clears every
//! `contract` flag: LLVM then fuses nothing more, and NVPTX writes the remaining operations as
//! `mul.rn`/`add.rn`/`sub.rn`, which ptxas never fuses. What runs is what this pass decided.
//!
//! libdevice's operations are contracted by the same rule: nvcc compiles libdevice with its
//! `-fmad=true` (its PTX of `pow(double)` has libdevice's 39 explicit `fma`s, 3 more it formed,
//! and plain `add.f64`/`mul.f64`), and without that `pow(double)` gave another last bit than
//! nvcc's for 11 of 1,048,576 inputs on an H200, with it none, nor for any other function.
//! Where libdevice is linked by cdpc
//! (`back::link_libdevice`), its functions' operations are marked with [`mark_contractable`]; in
//! Clang's IR, whose own operations carry `contract` and whose libdevice Clang linked and
//! inlined, every one is (`driver/cuda.rs`).

use crate::llvm::{operand, result_type, user_instruction};
use inkwell::builder::Builder;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::values::{BasicMetadataValueEnum, BasicValue, FloatValue};
use inkwell::values::{BasicValueEnum, FastMathFlags, InstructionOpcode, InstructionValue};
use std::collections::HashSet;

use super::{internal, R};

/// Marks every scalar float add, subtract, multiply and negation of `f` `contract`, as nvcc's
/// `-fmad=true` treats libdevice's.
pub(crate) fn mark_contractable(f: inkwell::values::FunctionValue<'_>) {
    for block in f.get_basic_block_iter() {
        for i in block.get_instructions() {
            if matches!(i.get_opcode(), InstructionOpcode::FAdd | InstructionOpcode::FSub | InstructionOpcode::FMul | InstructionOpcode::FNeg) && is_scalar_float(i) {
                let flags = i.get_fast_math_flags().unwrap_or(FastMathFlags::empty());
                let _ = i.set_fast_math_flags(flags | FastMathFlags::AllowContract);
            }
        }
    }
}

/// Whether `i` is a float operation the program wrote and that may be contracted.
fn contractable(i: InstructionValue<'_>) -> bool {
    i.get_fast_math_flags().is_ok_and(|f| f.contains(FastMathFlags::AllowContract)) && is_scalar_float(i)
}

/// `float` or `double`, the types nvcc contracts (vectors and halves are left alone).
fn is_scalar_float(i: InstructionValue<'_>) -> bool {
    matches!(result_type(i), Some(inkwell::types::BasicTypeEnum::FloatType(t))
        if t == t.get_context().f32_type() || t == t.get_context().f64_type())
}

/// The instructions that use `i`, one entry per use.
fn users<'ctx>(i: InstructionValue<'ctx>) -> Vec<Option<InstructionValue<'ctx>>> {
    let mut out = Vec::new();
    let mut u = i.get_first_use();
    while let Some(use_) = u {
        out.push(user_instruction(use_));
        u = use_.get_next_use();
    }
    out
}

fn same_block(a: InstructionValue<'_>, b: InstructionValue<'_>) -> bool {
    a.get_parent().is_some() && a.get_parent() == b.get_parent()
}

fn is_add_or_sub(i: InstructionValue<'_>) -> bool {
    matches!(i.get_opcode(), InstructionOpcode::FAdd | InstructionOpcode::FSub) && contractable(i)
}

/// nvcc's condition on a product: every use an add or subtract in its block, directly or
/// through a negation whose every use is one.
fn fusable_product(m: InstructionValue<'_>) -> bool {
    if m.get_opcode() != InstructionOpcode::FMul || !contractable(m) {
        return false;
    }
    let uses = users(m);
    !uses.is_empty()
        && uses.iter().all(|u| match u {
            Some(u) if same_block(*u, m) && is_add_or_sub(*u) => true,
            Some(u) if same_block(*u, m) && u.get_opcode() == InstructionOpcode::FNeg => {
                let negs = users(*u);
                !negs.is_empty() && negs.iter().all(|n| n.is_some_and(|n| same_block(n, m) && is_add_or_sub(n)))
            }
            _ => false,
        })
}

/// The operand `index` of `i` as a float value.
fn float_operand<'ctx>(i: InstructionValue<'ctx>, index: u32) -> Option<FloatValue<'ctx>> {
    match operand(i, index)? {
        BasicValueEnum::FloatValue(f) => Some(f),
        _ => None,
    }
}

/// A fusable product feeding `add` as operand `index`: the multiply and whether it is negated.
fn product_at<'ctx>(add: InstructionValue<'ctx>, index: u32, fusable: &HashSet<InstructionValue<'ctx>>) -> Option<(InstructionValue<'ctx>, bool)> {
    let v = float_operand(add, index)?.as_instruction()?;
    if !same_block(v, add) {
        return None;
    }
    if fusable.contains(&v) {
        return Some((v, false));
    }
    if v.get_opcode() == InstructionOpcode::FNeg {
        let m = float_operand(v, 0)?.as_instruction()?;
        if fusable.contains(&m) {
            return Some((m, true));
        }
    }
    None
}

/// Fuses what nvcc fuses (see the module's documentation) and clears every `contract` flag.
pub(crate) fn contract_as_nvcc(module: &Module<'_>) -> R<()> {
    let fma = Intrinsic::find("llvm.fma").ok_or_else(|| super::BackendError::Internal("no llvm.fma".into()))?;
    let context = module.get_context();
    let builder = context.create_builder();
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            let instructions: Vec<_> = block.get_instructions().collect();
            // Decided on the block as it is, before any change.
            let fusable: HashSet<_> = instructions.iter().copied().filter(|&i| fusable_product(i)).collect();
            if fusable.is_empty() {
                continue;
            }
            let mut plan = Vec::new();
            for &add in &instructions {
                if !is_add_or_sub(add) {
                    continue;
                }
                if let Some(found) = product_at(add, 0, &fusable).map(|p| (0, p)).or_else(|| product_at(add, 1, &fusable).map(|p| (1, p))) {
                    plan.push((add, found));
                }
            }
            let mut erased = HashSet::new();
            for (add, (index, (mul, negated))) in plan {
                fuse(&builder, module, fma, add, index, mul, negated)?;
                erased.insert(add);
            }
            // Products and negations that every add took in are unused now.
            for &i in instructions.iter().rev() {
                if !erased.contains(&i) && matches!(i.get_opcode(), InstructionOpcode::FMul | InstructionOpcode::FNeg) && contractable(i) && i.get_first_use().is_none() {
                    i.erase_from_basic_block();
                }
            }
        }
    }
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            let instructions: Vec<_> = block.get_instructions().collect();
            for i in instructions {
                if i.get_fast_math_flags().is_ok_and(|f| f.contains(FastMathFlags::AllowContract)) {
                    without_contract(&builder, i)?;
                }
            }
        }
    }
    Ok(())
}

/// Replaces `i` by the same operation without fast-math flags (LLVM's C API can add flags to
/// an instruction but not take them away). Only the scalar operations cdpc marked (the
/// program's and libdevice's, [`mark_contractable`]) and Clang's carry them.
fn without_contract<'ctx>(builder: &Builder<'ctx>, i: InstructionValue<'ctx>) -> R<()> {
    let (Some(a), b) = (float_operand(i, 0), float_operand(i, 1)) else { return Ok(()) };
    builder.position_before(&i);
    let name = "";
    let new = match (i.get_opcode(), b) {
        (InstructionOpcode::FAdd, Some(b)) => builder.build_float_add(a, b, name)?,
        (InstructionOpcode::FSub, Some(b)) => builder.build_float_sub(a, b, name)?,
        (InstructionOpcode::FMul, Some(b)) => builder.build_float_mul(a, b, name)?,
        (InstructionOpcode::FNeg, _) => builder.build_float_neg(a, name)?,
        _ => return Ok(()),
    };
    let Some(new) = new.as_instruction() else { return Ok(()) };
    new.set_debug_location(i.get_debug_location());
    i.replace_all_uses_with(&new);
    i.erase_from_basic_block();
    Ok(())
}

/// Replaces `add` (an `fadd` or `fsub`) by one `llvm.fma` of the product `mul` (negated when
/// `negated`), its operand `index`, and the other operand.
fn fuse<'ctx>(builder: &Builder<'ctx>, module: &Module<'ctx>, fma: Intrinsic, add: InstructionValue<'ctx>, index: u32, mul: InstructionValue<'ctx>, negated: bool) -> R<()> {
    let (Some(x), Some(y), Some(other)) = (float_operand(mul, 0), float_operand(mul, 1), float_operand(add, 1 - index)) else {
        return internal("contraction: operands are not floats");
    };
    let ty = x.get_type();
    let Some(decl) = fma.get_declaration(module, &[ty.into()]) else {
        return internal("contraction: no llvm.fma for this type");
    };
    builder.position_before(&add);
    // add: p + o, o + p. sub: p - o (index 0), o - p (index 1). A negated product flips p's sign.
    let subtract = add.get_opcode() == InstructionOpcode::FSub;
    let product_negative = negated ^ (subtract && index == 1);
    let x = if product_negative { builder.build_float_neg(x, "fma.neg")? } else { x };
    let other = if subtract && index == 0 { builder.build_float_neg(other, "fma.neg")? } else { other };
    let args: [BasicMetadataValueEnum; 3] = [x.into(), y.into(), other.into()];
    let call = builder.build_call(decl, &args, "fma")?;
    let Some(result) = call.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()) else {
        return internal("contraction: llvm.fma returned nothing");
    };
    result.set_debug_location(add.get_debug_location());
    add.replace_all_uses_with(&result);
    add.erase_from_basic_block();
    Ok(())
}
