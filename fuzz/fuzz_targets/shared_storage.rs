//! See `cdpc::front::cuda::shared_storage` (`__shared__` declarations made raw storage) and
//! `cdpc::fuzzing::shared_storage`.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::shared_storage(data);
});
