//! See `cdpc::fuzzing::ir_pipeline`. Seeds: `fuzz/seeds/ir`, and LLVM's NVPTX test inputs where the
//! checkout has them beside it (`seeds::llvm_nvptx_dir`), written into the working corpus.
#![no_main]
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::IrText), |data: &[u8]| {
    cdpc::fuzzing::ir_pipeline(data);
});
