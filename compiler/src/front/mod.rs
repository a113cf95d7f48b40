//! The front ends: each turns one input language into LLVM IR for the launch pipeline
//! ([`crate::pipeline`]), which all of them share.
//!
//! - [`cdp`]: the kernel language (`.cdp`), cdpc's own front end: preprocessor, syntax, semantic
//!   analysis, the typed IR and code generation from it.
//! - [`cuda`]: CUDA C++ (`.cu`), Clang 22's device compilation (linked into cdpc, or a Clang
//!   program), its headers, caches and messages.
//! - [`ir`]: LLVM IR another compiler wrote (`.ll`, `.bc`), read and checked against
//!   docs/IR-INPUT.md's contract.
//!
//! The front ends do not import each other (`compiler/tests/layers.rs`).

pub mod cdp;
pub mod cuda;
pub mod ir;
