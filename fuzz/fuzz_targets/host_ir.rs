//! See `cdpc::fuzzing::host_ir`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    cdpc::fuzzing::host_ir(&text);
});
