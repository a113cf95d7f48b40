//! cdpc's integration tests against their oracles: one module per boundary, in one test binary.
//!
//! Every test binary links LLVM statically, so each costs about 100 MB of disk and a link of
//! several seconds; CI once ran out of disk building one binary per file. What the modules
//! share is the `cdpc_tests` library (`src/lib.rs`).

mod corpus;
mod corpus_soak;
mod devrt_declarations;
mod dispatch_oracle;
mod extern_declarations;
mod layout_oracle;
mod machine_paths;
mod mangling_oracle;
mod samples;
mod ui;
