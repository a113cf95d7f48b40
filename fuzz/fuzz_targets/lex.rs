//! The lexer alone on arbitrary text (invalid UTF-8 is decoded lossily, as a sanitised file).
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Text), |data: &[u8]| {
    cdpc::fuzzing::lex(&String::from_utf8_lossy(data));
});
