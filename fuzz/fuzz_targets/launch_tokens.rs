//! See `cdpc::clang::launch_tokens` (nvcc's `<< <` and `>> >`) and `cdpc::fuzzing::launch_tokens`.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::launch_tokens(data);
});
