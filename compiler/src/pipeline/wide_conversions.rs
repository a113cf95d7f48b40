//! Conversions between floating point and integers wider than 64 bits, which NVPTX cannot
//! compile, as conversions of 64-bit integers.
//!
//! LLVM 22's NVPTX back end has no instruction for `sitofp`, `uitofp`, `fptosi` and `fptoui`
//! with an integer wider than 64 bits and no library to call for them (`__floattidf`, ...): code
//! generation stopped ("unsupported library call operation", `E1023`). nvcc compiles CUDA C++'s
//! `__int128` conversions, Rust writes `u128 as f64` and Julia `Float64(::Int128)` this way, and
//! Clang writes CUDA C++'s so. This pass rewrites each such conversion of an integer of 65 to
//! 128 bits, in place, without branches:
//!
//! - to floating point (`uitofp`): a value below 2^64 is the 64-bit conversion of its low half;
//!   above, the value shifted left until its leading one is the top bit, its top 64 bits with a
//!   sticky bit for whatever is below them (so that the one rounding of the 64-bit conversion
//!   is the rounding of the whole value: the sticky bit lies below the round bit of every
//!   floating-point type's significand), converted, then scaled by the power of two shifted
//!   out (exact; an overflow is infinity, as it must be). `half` cannot hold 2^64: infinity.
//!   `bfloat` goes through `float` rounded to odd (24 bits, exact; [`odd_float`]), scaled
//!   there, then rounded once, since NVPTX converts 64-bit integers to `bfloat` through `float`
//!   below sm_90, rounding twice. `sitofp`: the magnitude's conversion, negated where the value
//!   is negative.
//! - to an integer (`fptoui`): `half` and `bfloat` extended to `float` (exact); a value below
//!   2^64 is the 64-bit conversion; above, its high half is the 64-bit conversion of the value
//!   divided by 2^64, and its low half that of the remainder (exact: at 2^64 and more, `double`'s
//!   and `float`'s units are 2^11 and 2^40 and more, so the remainder has fewer significant
//!   bits than the type holds). `fptosi`: the magnitude's conversion, negated where the value is
//!   negative. What LLVM leaves undefined (NaN, infinities, values out of the integer's range:
//!   poison) is whatever this computes.
//! - `llvm.fptoui.sat` and `llvm.fptosi.sat` (Rust's `f64 as u128`): NaN is 0, a value past the
//!   integer's range its nearest bound, the rest as `fptoui`/`fptosi`.
//!
//! Vectors are converted lane by lane. Integers of more than 128 bits, and `fp128` and the
//! other wider floating-point types, are left as they are. Run after LLVM's optimisation (`driver::cuda::lower`), which does not write these
//! conversions back.
//!
//! Invariant: afterwards no `sitofp`, `uitofp`, `fptosi`, `fptoui`, `llvm.fptosi.sat` or
//! `llvm.fptoui.sat` has an integer of 65 to 128 bits (or a vector of them) on either side of a
//! `half`, `bfloat`, `float` or `double`.

use crate::llvm::{operand, result_type};
use inkwell::builder::Builder;
use inkwell::context::ContextRef;
use inkwell::module::Module;
use inkwell::types::{BasicTypeEnum, FloatType, IntType};
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, FloatValue, InstructionOpcode, InstructionValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

use super::clone::callee;
use super::emit::{builder_at, element_type, intrinsic, lane_by_lane, ok};

/// The widest integer the pass converts.
const WIDEST: u32 = 128;

/// Rewrites every conversion between floating point and an integer of 65 to 128 bits in
/// `module`. Returns how many it rewrote.
pub fn wide_conversions(module: &Module<'_>) -> usize {
    let mut found = Vec::new();
    for f in module.get_functions() {
        for inst in f.get_basic_blocks().into_iter().flat_map(|b| b.get_instructions()) {
            let operand = operand(inst, 0).map(|v| v.get_type());
            let result = result_type(inst);
            let (kind, int, fp) = match inst.get_opcode() {
                InstructionOpcode::UIToFP => (Kind::ToFloat { signed: false }, operand, result),
                InstructionOpcode::SIToFP => (Kind::ToFloat { signed: true }, operand, result),
                InstructionOpcode::FPToUI => (Kind::ToInt { signed: false, saturating: false }, result, operand),
                InstructionOpcode::FPToSI => (Kind::ToInt { signed: true, saturating: false }, result, operand),
                InstructionOpcode::Call => match callee(inst).and_then(|c| c.get_name().to_str().ok().map(str::to_string)) {
                    Some(name) if name.starts_with("llvm.fptoui.sat.") => (Kind::ToInt { signed: false, saturating: true }, result, operand),
                    Some(name) if name.starts_with("llvm.fptosi.sat.") => (Kind::ToInt { signed: true, saturating: true }, result, operand),
                    _ => continue,
                },
                _ => continue,
            };
            if int.and_then(wide_int).is_some() && fp.is_some_and(|t| ieee_up_to_double(&module.get_context(), t)) {
                found.push((inst, kind));
            }
        }
    }
    for &(inst, kind) in &found {
        rewrite(module, inst, kind);
    }
    found.len()
}

/// What a conversion the pass rewrites does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `uitofp`, `sitofp`.
    ToFloat { signed: bool },
    /// `fptoui`, `fptosi`, and `llvm.fptoui.sat`/`llvm.fptosi.sat` (Rust's `as`): NaN is 0, a
    /// value past the integer's range its nearest bound.
    ToInt { signed: bool, saturating: bool },
}

/// Whether `t` (a vector's element) is `half`, `bfloat`, `float` or `double`: `fp128`,
/// `x86_fp80` and `ppc_fp128` are left as they are (NVPTX has no arithmetic on them either).
fn ieee_up_to_double(ctx: &ContextRef<'_>, t: BasicTypeEnum<'_>) -> bool {
    matches!(element_type(t), BasicTypeEnum::FloatType(f) if [ctx.f16_type(), ctx.bf16_type(), ctx.f32_type(), ctx.f64_type()].contains(&f))
}

/// The integer type of `t` (a vector's element), if it is one the pass converts.
fn wide_int(t: BasicTypeEnum<'_>) -> Option<IntType<'_>> {
    match element_type(t) {
        BasicTypeEnum::IntType(i) if (65..=WIDEST).contains(&i.get_bit_width()) => Some(i),
        _ => None,
    }
}

fn rewrite<'ctx>(module: &Module<'ctx>, inst: InstructionValue<'ctx>, kind: Kind) {
    let b = builder_at(inst);
    let x = operand(inst, 0).expect("a conversion has an operand");
    let to = result_type(inst).expect("a conversion's type is a basic type");
    let scalar = element_type(to);
    let one = |x: BasicValueEnum<'ctx>| -> BasicValueEnum<'ctx> {
        match kind {
            Kind::ToFloat { signed } => to_float(module, &b, x.into_int_value(), scalar.into_float_type(), signed).into(),
            Kind::ToInt { signed, saturating: false } => to_int(module, &b, x.into_float_value(), scalar.into_int_type(), signed).into(),
            Kind::ToInt { signed, saturating: true } => to_int_saturating(module, &b, x.into_float_value(), scalar.into_int_type(), signed).into(),
        }
    };
    let result = match (x, to) {
        (BasicValueEnum::VectorValue(v), BasicTypeEnum::VectorType(vt)) => lane_by_lane(&b, v, vt, one).as_basic_value_enum(),
        _ => one(x),
    };
    // SAFETY: the conversion and its replacement are live values of the same type.
    unsafe { inkwell::llvm_sys::core::LLVMReplaceAllUsesWith(inst.as_value_ref(), result.as_value_ref()) };
    inst.erase_from_basic_block();
}

/// 2^`k` in `ty` (`float` or `double`), for a runtime `k` whose power `ty` holds or overflows:
/// the exponent field written directly.
fn power_of_two<'ctx>(ctx: &ContextRef<'ctx>, b: &Builder<'ctx>, ty: FloatType<'ctx>, k: IntValue<'ctx>) -> FloatValue<'ctx> {
    let (bits, bias, mantissa) = if ty == ctx.f64_type() { (ctx.i64_type(), 1023, 52) } else { (ctx.i32_type(), 127, 23) };
    let k = ok(b.build_int_cast_sign_flag(k, bits, true, ""));
    let biased = ok(b.build_int_add(k, bits.const_int(bias, false), ""));
    let field = ok(b.build_left_shift(biased, bits.const_int(mantissa, false), ""));
    ok(b.build_bit_cast(field, ty, "")).into_float_value()
}

/// `x` (of 65 to 128 bits) as `to`, signed or not, rounded once to nearest even.
fn to_float<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, x: IntValue<'ctx>, to: FloatType<'ctx>, signed: bool) -> FloatValue<'ctx> {
    let ctx = module.get_context();
    let ty = x.get_type();
    let n = ty.get_bit_width();
    let i64t = ctx.i64_type();
    let (negative, magnitude) = if signed {
        let negative = ok(b.build_int_compare(IntPredicate::SLT, x, ty.const_zero(), ""));
        let negated = ok(b.build_int_sub(ty.const_zero(), x, ""));
        (Some(negative), ok(b.build_select(negative, negated, x, "")).into_int_value())
    } else {
        (None, x)
    };
    let bfloat = to == ctx.bf16_type();
    // Below 2^64: the low half's conversion.
    let low = ok(b.build_int_truncate(magnitude, i64t, ""));
    let small = if bfloat { ok(b.build_float_trunc(odd_float(module, b, low), to, "")) } else { ok(b.build_unsigned_int_to_float(low, to, "")) };
    // At 2^64 and above: the leading one at the top, its top 64 bits with a sticky bit.
    let large_value = ok(b.build_int_compare(IntPredicate::UGT, magnitude, ty.const_int(u64::MAX, false), ""));
    let ctlz = intrinsic(module, "llvm.ctlz", &[ty.into()]);
    let zeros = ok(b.build_call(ctlz, &[magnitude.into(), ctx.bool_type().const_zero().into()], "")).try_as_basic_value().basic().expect("ctlz returns").into_int_value();
    let normal = ok(b.build_left_shift(magnitude, zeros, ""));
    let top = ok(b.build_int_truncate(ok(b.build_right_shift(normal, ty.const_int(u64::from(n - 64), false), false, "")), i64t, ""));
    let below = ok(b.build_and(normal, ok(b.build_right_shift(ty.const_all_ones(), ty.const_int(64, false), false, "")), ""));
    let sticky = ok(b.build_int_z_extend(ok(b.build_int_compare(IntPredicate::NE, below, ty.const_zero(), "")), i64t, ""));
    let top = ok(b.build_or(top, sticky, ""));
    // The power of two shifted out: n - 64 - zeros, 1 to n - 64.
    let k = ok(b.build_int_sub(ty.const_int(u64::from(n - 64), false), zeros, ""));
    let large = if to == ctx.f16_type() {
        // 2^64 and more is past half's largest finite value, 65504.
        to.const_float(f64::INFINITY)
    } else {
        let wide = if to == ctx.f64_type() { ctx.f64_type() } else { ctx.f32_type() };
        let extended = if bfloat { odd_float(module, b, top) } else { ok(b.build_unsigned_int_to_float(top, to, "")) };
        let scaled = ok(b.build_float_mul(extended, power_of_two(&ctx, b, wide, k), ""));
        if to == wide {
            scaled
        } else {
            ok(b.build_float_trunc(scaled, to, ""))
        }
    };
    let result = ok(b.build_select(large_value, large, small, "")).into_float_value();
    match negative {
        Some(negative) => ok(b.build_select(negative, ok(b.build_float_neg(result, "")), result, "")).into_float_value(),
        None => result,
    }
}

/// `v` (unsigned) as a `float` of at most 24 significant bits, rounded to odd: truncated, with
/// its last bit set where anything was cut off, so exact in `float`, and one rounding of it to
/// a type of at most 22 bits (`bfloat`'s 8) rounds as a rounding of `v` itself would. For
/// `bfloat`, whose conversion from a 64-bit integer NVPTX writes through `float` below sm_90
/// (two roundings: `cvt.rn.f32.u64`, `cvt.rn.bf16.f32`).
fn odd_float<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, v: IntValue<'ctx>) -> FloatValue<'ctx> {
    let ctx = module.get_context();
    let i64t = ctx.i64_type();
    let ctlz = intrinsic(module, "llvm.ctlz", &[i64t.into()]);
    let zeros = ok(b.build_call(ctlz, &[v.into(), ctx.bool_type().const_zero().into()], "")).try_as_basic_value().basic().expect("ctlz returns").into_int_value();
    // The bits below the leading 24: 40 - zeros, none for a value below 2^24.
    let cut = ok(b.build_int_sub(i64t.const_int(40, false), zeros, ""));
    let cut = ok(b.build_select(ok(b.build_int_compare(IntPredicate::SGT, cut, i64t.const_zero(), "")), cut, i64t.const_zero(), "")).into_int_value();
    let kept = ok(b.build_right_shift(v, cut, false, ""));
    let mask = ok(b.build_int_sub(ok(b.build_left_shift(i64t.const_int(1, false), cut, "")), i64t.const_int(1, false), ""));
    let lost = ok(b.build_int_compare(IntPredicate::NE, ok(b.build_and(v, mask, "")), i64t.const_zero(), ""));
    let odd = ok(b.build_or(kept, ok(b.build_int_z_extend(lost, i64t, "")), ""));
    let f32t = ctx.f32_type();
    let exact = ok(b.build_unsigned_int_to_float(odd, f32t, ""));
    ok(b.build_float_mul(exact, power_of_two(&ctx, b, f32t, cut), ""))
}

/// `x` as the integer `to` (of 65 to 128 bits), signed or not, rounded toward zero.
fn to_int<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, x: FloatValue<'ctx>, to: IntType<'ctx>, signed: bool) -> IntValue<'ctx> {
    let ctx = module.get_context();
    let i64t = ctx.i64_type();
    // Work in `double` or `float`: `half` and `bfloat` extend to `float` exactly.
    let ty = x.get_type();
    let wide = if ty == ctx.f64_type() { ctx.f64_type() } else { ctx.f32_type() };
    let x = if ty == wide { x } else { ok(b.build_float_ext(x, wide, "")) };
    let (negative, magnitude) = if signed {
        let negative = ok(b.build_float_compare(FloatPredicate::OLT, x, wide.const_zero(), ""));
        let fabs = intrinsic(module, "llvm.fabs", &[wide.into()]);
        let abs = ok(b.build_call(fabs, &[x.into()], "")).try_as_basic_value().basic().expect("fabs returns").into_float_value();
        (Some(negative), abs)
    } else {
        (None, x)
    };
    let two_64 = wide.const_float(18446744073709551616.0);
    let small = ok(b.build_int_z_extend(ok(b.build_float_to_unsigned_int(magnitude, i64t, "")), to, ""));
    let large_value = ok(b.build_float_compare(FloatPredicate::OGE, magnitude, two_64, ""));
    // The high half: the value divided by 2^64 (exact), truncated; the low half: the remainder.
    let high = ok(b.build_float_to_unsigned_int(ok(b.build_float_mul(magnitude, wide.const_float(1.0 / 18446744073709551616.0), "")), i64t, ""));
    let high_part = ok(b.build_float_mul(ok(b.build_unsigned_int_to_float(high, wide, "")), two_64, ""));
    let low = ok(b.build_float_to_unsigned_int(ok(b.build_float_sub(magnitude, high_part, "")), i64t, ""));
    let shifted = ok(b.build_left_shift(ok(b.build_int_z_extend(high, to, "")), to.const_int(64, false), ""));
    let large = ok(b.build_or(shifted, ok(b.build_int_z_extend(low, to, "")), ""));
    let result = ok(b.build_select(large_value, large, small, "")).into_int_value();
    match negative {
        Some(negative) => ok(b.build_select(negative, ok(b.build_int_sub(to.const_zero(), result, "")), result, "")).into_int_value(),
        None => result,
    }
}

/// `llvm.fptosi.sat`/`llvm.fptoui.sat` of `x` to `to` (of 65 to 128 bits): NaN is 0, a value
/// below the integer's range its least value, above it its greatest, the rest truncated as
/// [`to_int`] does (given an in-range value, so that it computes nothing undefined).
fn to_int_saturating<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, x: FloatValue<'ctx>, to: IntType<'ctx>, signed: bool) -> IntValue<'ctx> {
    let ctx = module.get_context();
    let ty = x.get_type();
    let wide = if ty == ctx.f64_type() { ctx.f64_type() } else { ctx.f32_type() };
    let x = if ty == wide { x } else { ok(b.build_float_ext(x, wide, "")) };
    let n = to.get_bit_width();
    // The bounds as powers of two: 2^n (2^(n-1) signed) is past the greatest value, and -2^(n-1)
    // (0 unsigned) the least; in `float` 2^128 is infinity, past every finite value too.
    let above = wide.const_float(2f64.powi(if signed { n as i32 - 1 } else { n as i32 }));
    let least = if signed { wide.const_float(-(2f64.powi(n as i32 - 1))) } else { wide.const_zero() };
    let (min, max) = if signed {
        // 2^(n-1) - 1 and -2^(n-1), as two words (n is 65 to 128).
        let top = 1u64 << (n - 65);
        (to.const_int_arbitrary_precision(&[0, top]), to.const_int_arbitrary_precision(&[u64::MAX, top - 1]))
    } else {
        (to.const_zero(), to.const_all_ones())
    };
    let high = ok(b.build_float_compare(FloatPredicate::OGE, x, above, ""));
    let low = ok(b.build_float_compare(FloatPredicate::OLT, x, least, ""));
    let nan = ok(b.build_float_compare(FloatPredicate::UNO, x, x, ""));
    let outside = ok(b.build_or(ok(b.build_or(high, low, "")), nan, ""));
    // Unsigned, (-1, 0) truncates to 0: the magnitude conversion takes no negative value.
    let inside = if signed { x } else { ok(b.build_select(ok(b.build_float_compare(FloatPredicate::OLT, x, wide.const_zero(), "")), wide.const_zero(), x, "")).into_float_value() };
    let safe = ok(b.build_select(outside, wide.const_zero(), inside, "")).into_float_value();
    let converted = to_int(module, b, safe, to, signed);
    let bounded = ok(b.build_select(high, max, ok(b.build_select(low, min, converted, "")).into_int_value(), "")).into_int_value();
    ok(b.build_select(nan, to.const_zero(), bounded, "")).into_int_value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    fn rewritten(body: &str, ty: &str) -> (usize, String) {
        let ir = format!("define void @f({ty} %x, ptr %p) {{\n{body}\n  ret void\n}}\n");
        let ctx = Context::create();
        let module = ctx.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t")).unwrap();
        let n = wide_conversions(&module);
        module.verify().unwrap_or_else(|e| panic!("{e}\n{}", module.print_to_string()));
        (n, module.print_to_string().to_string())
    }

    #[test]
    fn every_conversion_of_65_to_128_bits_becomes_64_bit_ones() {
        for (ty, conversions) in [
            ("i128", vec![("uitofp", "double"), ("sitofp", "float"), ("uitofp", "half"), ("sitofp", "bfloat")]),
            ("i96", vec![("uitofp", "double"), ("sitofp", "double")]),
            ("<2 x i128>", vec![("sitofp", "<2 x double>")]),
        ] {
            for (op, to) in conversions {
                let (n, out) = rewritten(&format!("  %r = {op} {ty} %x to {to}\n  store {to} %r, ptr %p"), ty);
                assert_eq!(n, 1, "{op} {ty} to {to}");
                assert!(!out.lines().any(|l| l.contains("itofp ") && !l.contains("itofp i64")), "{out}");
                assert!(out.contains("uitofp i64"), "{out}");
            }
        }
        // bfloat is rounded once, from `float` (rounded to odd), not converted from 64 bits.
        let (_, out) = rewritten("  %r = uitofp i128 %x to bfloat\n  store bfloat %r, ptr %p", "i128");
        assert!(!out.contains("to bfloat\n") || out.lines().filter(|l| l.contains("to bfloat")).all(|l| l.contains("fptrunc float")), "{out}");
        assert!(out.contains("uitofp i64") && out.contains("to float") && out.contains("fptrunc float"), "{out}");
        for (from, op, to) in [("double", "fptoui", "i128"), ("float", "fptosi", "i128"), ("half", "fptosi", "i100"), ("bfloat", "fptoui", "i128"), ("<2 x double>", "fptosi", "<2 x i128>")] {
            let (n, out) = rewritten(&format!("  %r = {op} {from} %x to {to}\n  store {to} %r, ptr %p"), from);
            assert_eq!(n, 1, "{op} {from} to {to}");
            assert!(!out.lines().any(|l| l.contains(" = fpto") && !l.contains(" to i64")), "{out}");
            assert!(out.contains("fptoui double") || out.contains("fptoui float"), "{out}");
        }
    }

    #[test]
    fn saturating_conversions_clamp_before_converting() {
        for (from, op, to) in [("double", "fptoui", "i128"), ("float", "fptosi", "i128"), ("half", "fptosi", "i100")] {
            let m = match from {
                "double" => "f64",
                "float" => "f32",
                _ => "f16",
            };
            let call = format!("llvm.{op}.sat.{to}.{m}");
            let (n, out) = rewritten(&format!("  %r = call {to} @{call}({from} %x)\n  store {to} %r, ptr %p\n  ret void\n}}\ndeclare {to} @{call}({from})\ndefine void @g() {{"), from);
            assert_eq!(n, 1, "{call}");
            assert!(!out.contains(&format!("call {to} @{call}")), "{out}");
            // NaN is 0: an unordered comparison of the value with itself.
            assert!(out.contains("fcmp uno"), "{out}");
            assert!(out.lines().filter(|l| l.contains(" = fpto")).all(|l| l.contains(" to i64")), "{out}");
        }
        // The signed bounds of i100: 2^99 - 1 and -2^99.
        let (_, out) =
            rewritten("  %r = call i100 @llvm.fptosi.sat.i100.f64(double %x)\n  store i100 %r, ptr %p\n  ret void\n}\ndeclare i100 @llvm.fptosi.sat.i100.f64(double)\ndefine void @g() {", "double");
        assert!(out.contains("i100 633825300114114700748351602687") && out.contains("i100 -633825300114114700748351602688"), "{out}");
    }

    #[test]
    fn sixty_four_bits_more_than_128_and_fp128_are_left_alone() {
        let (n, out) = rewritten(
            "  %a = uitofp i64 %x to double\n  store double %a, ptr %p\n  %w = zext i64 %x to i256\n  %b = sitofp i256 %w to double\n  store double %b, ptr %p\n  %v = zext i64 %x to i128\n  %q = uitofp i128 %v to fp128\n  store fp128 %q, ptr %p\n  %r = fptosi fp128 %q to i128\n  store i128 %r, ptr %p",
            "i64",
        );
        assert_eq!(n, 0);
        assert!(out.contains("uitofp i64 %x to double") && out.contains("sitofp i256 %w to double") && out.contains("uitofp i128 %v to fp128") && out.contains("fptosi fp128 %q to i128"), "{out}");
    }
}
