//! The kernel language's front end (`.cdp`, docs/KERNEL-LANGUAGE.md), phase by phase:
//! [`preprocess`] (text and a source map), [`syntax`] (tokens and the syntax tree), [`sema`]
//! (names, types and checks, the tree to [`hir`]), [`hir`] (the typed IR) and [`codegen`] (the
//! HIR as an LLVM module for the NVPTX end). Each phase before code generation hands the next a
//! plain data structure and none spawns a process or touches LLVM; `driver::check` runs them in
//! order, and the driver's build hands the checked HIR to [`codegen`].

// The phases' internal data structures (syntax tree, HIR) are public for tests and for
// `codegen::emit_ptx`, but are not documented item by item.
pub mod codegen;
#[allow(missing_docs)]
pub mod hir;
pub mod preprocess;
#[allow(missing_docs)]
pub mod sema;
#[allow(missing_docs)]
pub mod syntax;
