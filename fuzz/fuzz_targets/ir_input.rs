//! LLVM IR and bitcode as input (docs/IR-INPUT.md). The first byte picks the mode: odd, the
//! rest are the choices of a generated module with launches (`cdpc::fuzzing::ir_generated`:
//! it compiles with every launch through the V2 entry points, or is E1015); even, the rest is
//! the input itself, text or bitcode (`cdpc::fuzzing::ir_input`: no panic, every failure coded).
//! Seeds: `fuzz/seeds/ir_input`, and LLVM's NVPTX test inputs where the checkout has them beside
//! it (`seeds::llvm_nvptx_dir`), written into the working corpus behind an even mode byte.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::IrInput), |data: &[u8]| {
    match data.split_first() {
        Some((mode, rest)) if mode & 1 == 1 => cdpc::fuzzing::ir_generated(rest),
        Some((_, rest)) => cdpc::fuzzing::ir_input(rest),
        None => {}
    }
});
