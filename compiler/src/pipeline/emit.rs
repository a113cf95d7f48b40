//! What the passes write IR with, below every pass that does (`stream_order`, `threshold`,
//! `defer`, `aggregate`, `math`, `wide_conversions`): a builder's result, LLVM's intrinsics, a
//! builder at an instruction, and a vector's lanes. It imports nothing of the pipeline.

use inkwell::builder::Builder;
use inkwell::module::Module;
use inkwell::types::{BasicTypeEnum, VectorType};
use inkwell::values::{BasicValueEnum, FunctionValue, InstructionValue, VectorValue};

/// The declaration of LLVM's intrinsic `name` for the overload `types`, added to `module`.
pub(super) fn intrinsic<'ctx>(module: &Module<'ctx>, name: &str, types: &[BasicTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
    inkwell::intrinsics::Intrinsic::find(name).and_then(|i| i.get_declaration(module, types)).unwrap_or_else(|| panic!("LLVM has `{name}`"))
}

/// A builder's result; the builder is always positioned here.
pub(super) fn ok<T>(r: Result<T, inkwell::builder::BuilderError>) -> T {
    r.expect("the builder is positioned")
}

/// A builder positioned before `inst`, writing `inst`'s debug location: what a pass that
/// replaces `inst` by other instructions writes them with.
pub(super) fn builder_at<'ctx>(inst: InstructionValue<'ctx>) -> Builder<'ctx> {
    let b = inst.get_parent().expect("an instruction in a block").get_context().create_builder();
    b.position_before(&inst);
    if let Some(location) = inst.get_debug_location() {
        b.set_current_debug_location(location);
    }
    b
}

/// The type of `t`'s scalars: a vector's element type, else `t`.
pub(super) fn element_type(t: BasicTypeEnum<'_>) -> BasicTypeEnum<'_> {
    match t {
        BasicTypeEnum::VectorType(v) => v.get_element_type(),
        other => other,
    }
}

/// The vector of type `to` whose lanes are `each` of `x`'s, lane by lane.
pub(super) fn lane_by_lane<'ctx>(b: &Builder<'ctx>, x: VectorValue<'ctx>, to: VectorType<'ctx>, mut each: impl FnMut(BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx>) -> VectorValue<'ctx> {
    let i32t = x.get_type().get_context().i32_type();
    let mut r = to.get_undef();
    for lane in 0..to.get_size() {
        let index = i32t.const_int(u64::from(lane), false);
        r = ok(b.build_insert_element(r, each(ok(b.build_extract_element(x, index, ""))), index, ""));
    }
    r
}
