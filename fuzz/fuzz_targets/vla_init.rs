//! See `cdpc::front::cuda::vla_init` (initialised variable-length arrays filled by a second
//! declarator) and `cdpc::fuzzing::vla_init`.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::vla_init(data);
});
