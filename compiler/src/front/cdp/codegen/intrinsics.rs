//! CUDA's integer and warp intrinsics (`hir::Intrinsic`, checked in `front/cdp/sema/intrinsics.rs`), as
//! LLVM's bit-manipulation intrinsics and NVVM's warp vote, shuffle and `fns` intrinsics.

use super::{internal, Codegen, R};
use crate::front::cdp::hir::{BitOp, Intrinsic, ShuffleKind, Vote};
use crate::types::Type;
use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::IntPredicate;

type BV<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Codegen<'ctx, '_> {
    pub(crate) fn cuda_intrinsic(&mut self, op: Intrinsic, vals: &[BV<'ctx>], ty: &Type) -> R<Option<BV<'ctx>>> {
        match op {
            Intrinsic::Bits { op, wide } => self.bits(op, wide, int(vals, 0)?).map(|v| Some(v.into())),
            Intrinsic::Vote(vote) => {
                let name = match vote {
                    Vote::Any => "llvm.nvvm.vote.any.sync",
                    Vote::All => "llvm.nvvm.vote.all.sync",
                };
                let pred = int(vals, 1)?;
                let pred = self.builder.build_int_compare(IntPredicate::NE, pred, pred.get_type().const_zero(), "")?;
                let Some(BasicValueEnum::IntValue(r)) = self.call(self.intrinsic(name, &[])?, &[int(vals, 0)?.into(), pred.into()])? else {
                    return internal("warp vote returned no value");
                };
                Ok(Some(self.builder.build_int_z_extend(r, self.ctx.i32_type(), "")?.into()))
            }
            Intrinsic::Shuffle(kind) => self.shuffle(kind, vals, ty).map(Some),
            Intrinsic::Fns => {
                let f = self.intrinsic("llvm.nvvm.fns", &[])?;
                self.call(f, &[int(vals, 0)?.into(), int(vals, 1)?.into(), int(vals, 2)?.into()])
            }
        }
    }

    fn bits(&mut self, op: BitOp, wide: bool, v: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let i32t = self.ctx.i32_type();
        let vt = v.get_type();
        let call = |cx: &Self, name: &str, extra: Option<IntValue<'ctx>>| -> R<IntValue<'ctx>> {
            let f = cx.intrinsic(name, &[vt.into()])?;
            let mut args: Vec<inkwell::values::BasicMetadataValueEnum<'ctx>> = vec![v.into()];
            if let Some(e) = extra {
                args.push(e.into());
            }
            match cx.call(f, &args)? {
                Some(BasicValueEnum::IntValue(r)) => Ok(r),
                _ => internal(format!("{name} returned no integer")),
            }
        };
        let to_int = |cx: &Self, r: IntValue<'ctx>| -> R<IntValue<'ctx>> { Ok(if wide { cx.builder.build_int_truncate(r, i32t, "")? } else { r }) };
        // LLVM's "is zero poison" flag, false: the count for 0 is the width, as CUDA's `__clz(0)` is 32.
        let zero_is_poison = self.ctx.bool_type().const_zero();
        match op {
            BitOp::PopCount => {
                let r = call(self, "llvm.ctpop", None)?;
                to_int(self, r)
            }
            BitOp::CountLeadingZeros => {
                let r = call(self, "llvm.ctlz", Some(zero_is_poison))?;
                to_int(self, r)
            }
            BitOp::FindFirstSet => {
                // ffs(x) = x == 0 ? 0 : cttz(x) + 1
                let tz = call(self, "llvm.cttz", Some(zero_is_poison))?;
                let tz = to_int(self, tz)?;
                let plus_one = self.builder.build_int_add(tz, i32t.const_int(1, false), "")?;
                let is_zero = self.builder.build_int_compare(IntPredicate::EQ, v, vt.const_zero(), "")?;
                let r = self.builder.build_select(is_zero, i32t.const_zero(), plus_one, "")?;
                Ok(r.into_int_value())
            }
            BitOp::Reverse => call(self, "llvm.bitreverse", None),
        }
    }

    /// `shfl.sync` with CUDA's `c` operand: the segment mask `(32 - width) << 8`, and the
    /// clamp 31 except for `up` (0), as `sm_30_intrinsics.hpp` computes them.
    fn shuffle(&mut self, kind: ShuffleKind, vals: &[BV<'ctx>], ty: &Type) -> R<BV<'ctx>> {
        let i32t = self.ctx.i32_type();
        let (name, clamp) = match kind {
            ShuffleKind::Idx => ("llvm.nvvm.shfl.sync.idx.i32", 0x1f),
            ShuffleKind::Up => ("llvm.nvvm.shfl.sync.up.i32", 0),
            ShuffleKind::Down => ("llvm.nvvm.shfl.sync.down.i32", 0x1f),
            ShuffleKind::Xor => ("llvm.nvvm.shfl.sync.bfly.i32", 0x1f),
        };
        let width = int(vals, 3)?;
        let segment = self.builder.build_int_sub(i32t.const_int(32, false), width, "")?;
        let segment = self.builder.build_left_shift(segment, i32t.const_int(8, false), "")?;
        let c = self.builder.build_or(segment, i32t.const_int(clamp, false), "")?;
        let is_float = *ty == Type::FLOAT;
        let value = match vals.get(1) {
            Some(BasicValueEnum::FloatValue(f)) => self.builder.build_bit_cast(*f, i32t, "")?.into_int_value(),
            Some(BasicValueEnum::IntValue(i)) => *i,
            other => return internal(format!("shuffle value {other:?}")),
        };
        let f = self.intrinsic(name, &[])?;
        let Some(BasicValueEnum::IntValue(r)) = self.call(f, &[int(vals, 0)?.into(), value.into(), int(vals, 2)?.into(), c.into()])? else {
            return internal("shuffle returned no value");
        };
        Ok(if is_float { self.builder.build_bit_cast(r, self.ctx.f32_type(), "")? } else { r.into() })
    }
}

fn int<'ctx>(vals: &[BV<'ctx>], i: usize) -> R<IntValue<'ctx>> {
    match vals.get(i) {
        Some(BasicValueEnum::IntValue(v)) => Ok(*v),
        other => internal(format!("intrinsic operand {i} is not an integer: {other:?}")),
    }
}
