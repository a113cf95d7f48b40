//! Semantic analysis: names, types, conversions and the checks on launches. AST in, HIR out.
//! Never touches LLVM.

use crate::diag::Diagnostic;
use crate::front::ast;
use crate::hir;

/// Options that change what sema accepts.
#[derive(Clone, Debug, Default)]
pub struct SemaOptions {
    pub target: crate::target::Target,
}

pub fn analyze(unit: &ast::TranslationUnit, options: &SemaOptions) -> (Option<hir::Module>, Vec<Diagnostic>) {
    let _ = (unit, options);
    (None, Vec::new())
}
