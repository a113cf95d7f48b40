//! The C preprocessor alone (no file is read; only the shipped headers exist), its source map
//! and both renderings of its diagnostics.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::preprocess(&String::from_utf8_lossy(data));
});
