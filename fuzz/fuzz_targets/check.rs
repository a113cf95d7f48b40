//! The whole front end through semantic checks, and both renderings of the diagnostics.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::check(&String::from_utf8_lossy(data));
});
