//! cdpc: a compiler backend for CUDA dynamic parallelism.
//!
//! The pipeline, one module per phase:
//! `front` (lex, parse: source to [`front::ast`]) → `sema` (names, types, launch checks: AST to
//! [`hir`]) → `back` (LLVM NVPTX: HIR to LLVM IR and PTX) → `toolchain` (ptxas and nvlink:
//! PTX to a linked cubin). [`driver`] runs the phases for the `cdpc` binary and for embedders.

pub mod back;
pub mod diag;
pub mod driver;
pub mod front;
#[doc(hidden)]
pub mod fuzzing;
pub mod hir;
pub mod layout;
pub mod render;
pub mod sema;
pub mod target;
pub mod toolchain;
pub mod types;

pub use diag::{Code, Diagnostic, Severity, Span};
pub use target::{AddressSize, LaunchAbi, SmVersion, Target};
