//! The C API's integration tests, in one test binary: each test binary links LLVM statically
//! and costs about 100 MB of disk (see `compiler/tests/integration.rs`).

mod header;
mod tool_timeout;
mod users;
