//! See `cdpc::front::cuda::preamble::bounds` and `parse_depfile`.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(n) = cdpc::front::cuda::preamble::bounds(&text) {
        assert!(text.is_char_boundary(n) && text.as_bytes()[n - 1] == b'\n');
        assert_eq!(cdpc::front::cuda::preamble::bounds(&text[..n]), Some(n));
    }
    cdpc::front::cuda::preamble::parse_depfile(&text);
});
