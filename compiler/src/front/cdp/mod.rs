//! The kernel language's front end (`.cdp`, docs/KERNEL-LANGUAGE.md), phase by phase:
//! [`preprocess`] (text and a source map), [`syntax`] (tokens and the syntax tree), [`sema`]
//! (names, types and checks, the tree to [`hir`]) and [`hir`] (the typed IR `back` writes as
//! LLVM IR). Each phase hands the next a plain data structure; none spawns a process or touches
//! LLVM. `driver::check` runs them in order.

// The phases' internal data structures (syntax tree, HIR) are public for tests and for
// `back::emit_ptx`, but are not documented item by item.
#[allow(missing_docs)]
pub mod hir;
pub mod preprocess;
#[allow(missing_docs)]
pub mod sema;
#[allow(missing_docs)]
pub mod syntax;
