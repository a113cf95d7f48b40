//! See `cdpc::front::cuda::cache::parse_size` (`CDPC_CACHE_MAX_SIZE`).
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match cdpc::front::cuda::cache::parse_size(&text) {
        // A size starts with a digit and is written back the same in bytes.
        Ok(size) => {
            assert!(text.trim_start().starts_with(|c: char| c.is_ascii_digit()));
            assert_eq!(cdpc::front::cuda::cache::parse_size(&size.to_string()), Ok(size));
        }
        Err(why) => assert!(!why.is_empty()),
    }
});
