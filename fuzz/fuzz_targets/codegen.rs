//! Parse, check and, for programs that pass, LLVM code generation to PTX (no ptxas). The first
//! byte picks the optimisation level, the address size, the launch ABI and launch aggregation;
//! bit 6, thresholding (`-flaunch-threshold=128`) with the remarks (`-Rpass=aggregate`); its top
//! bit, separate compilation (`-dc`) with line tables (`-lineinfo`, or `-G` at -O0).
#![no_main]
use cdpc::pipeline::aggregate::Granularity;
use cdpc::driver::CompileOptions;
use cdpc::{AddressSize, LaunchAbi};
use libfuzzer_sys::fuzz_target;

mod seeds;

fuzz_target!(init: seeds::install(seeds::Kind::Codegen), |data: &[u8]| {
    let Some((&knobs, text)) = data.split_first() else { return };
    let mut options = CompileOptions { opt_level: knobs & 3, ..CompileOptions::default() };
    if knobs & 4 != 0 {
        options.target.launch_abi = LaunchAbi::V1;
    }
    if knobs & 8 != 0 {
        options.target.address_size = AddressSize::Bits32;
    }
    options.aggregate = [Granularity::Off, Granularity::Block, Granularity::Warp, Granularity::Grid][(knobs >> 4) as usize & 3];
    options.pass_remarks = knobs & 64 != 0;
    options.launch_threshold = if knobs & 64 != 0 { 128 } else { 0 };
    if knobs & 128 != 0 {
        options.separate = true;
        options.debug = Some(if knobs & 3 == 0 { cdpc::driver::DebugLevel::Full } else { cdpc::driver::DebugLevel::LineTables });
    }
    cdpc::fuzzing::codegen(&String::from_utf8_lossy(text), &options);
});
