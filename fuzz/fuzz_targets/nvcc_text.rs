//! See `cdpc::front::cuda::nvcc_text` (nvcc's forms that Clang does not read) and `cdpc::fuzzing::nvcc_text`.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::nvcc_text(data);
});
