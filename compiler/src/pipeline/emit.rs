//! What the passes write IR with, below every pass that does (`stream_order`, `threshold`,
//! `defer`, `aggregate`): a builder's result and LLVM's intrinsics. It imports nothing of the
//! pipeline.

use inkwell::module::Module;
use inkwell::types::BasicTypeEnum;
use inkwell::values::FunctionValue;

/// The declaration of LLVM's intrinsic `name` for the overload `types`, added to `module`.
pub(super) fn intrinsic<'ctx>(module: &Module<'ctx>, name: &str, types: &[BasicTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
    inkwell::intrinsics::Intrinsic::find(name).and_then(|i| i.get_declaration(module, types)).unwrap_or_else(|| panic!("LLVM has `{name}`"))
}

/// A builder's result; the builder is always positioned here.
pub(super) fn ok<T>(r: Result<T, inkwell::builder::BuilderError>) -> T {
    r.expect("the builder is positioned")
}
