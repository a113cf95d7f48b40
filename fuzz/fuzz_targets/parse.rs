//! Lexer and parser, with the front end's limits, on arbitrary text.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::parse(&String::from_utf8_lossy(data));
});
