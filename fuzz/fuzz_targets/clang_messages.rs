//! See `cdpc::fuzzing::clang_messages`.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The first line is the main file's text, the rest Clang's stderr.
    let (main, stderr) = text.split_once('\n').unwrap_or((&text, ""));
    cdpc::fuzzing::clang_messages(stderr, main);
});
