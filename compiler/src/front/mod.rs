//! The front ends: each turns one input language into LLVM IR for the launch pipeline
//! ([`crate::pipeline`]), which all of them share.
//!
//! - [`cdp`]: the kernel language (`.cdp`), cdpc's own front end: preprocessor, syntax, semantic
//!   analysis and the typed IR, from which `back` writes LLVM IR.
//! - [`cuda`]: CUDA C++ (`.cu`), Clang 22's device compilation (linked into cdpc, or a Clang
//!   program), its headers, caches and messages.
//!
//! LLVM IR from another compiler (`.ll`, `.bc`) needs no front end: `driver::ir` checks it
//! against docs/IR-INPUT.md's contract and hands it to the pipeline.
//!
//! The two front ends do not import each other (`compiler/tests/layers.rs`).

pub mod cdp;
pub mod cuda;
