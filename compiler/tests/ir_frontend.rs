//! The textual-IR front-end example (docs/EMBEDDING.md): its IR is in the contract (no
//! diagnostic), its PTX makes both launches through the V2 entry points in order with each
//! stage's constant at offset 8, its cubin links when the NVIDIA tools are there, and its GPU
//! manifest parses.

#[path = "../examples/ir_frontend.rs"]
mod example;

use cdpc::driver::{compile_ir, CompileOptions, Emit};
use example::Stage;

#[test]
fn ptx_launches_the_stages_in_order_through_v2() {
    let stages = [Stage::Add(7), Stage::Mul(2)];
    let ir = example::emit_ir(&stages);
    let compiled = compile_ir(ir.as_bytes(), &CompileOptions { emit: Emit::Ptx, ..Default::default() }).unwrap();
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    let ptx = String::from_utf8(compiled.output).unwrap();
    let parent = &ptx[ptx.find(".entry parent(").expect("a parent kernel")..];
    let mut at = 0;
    for needle in ["__cudaCDP2GetParameterBufferV2", "+8], 7;", "__cudaCDP2LaunchDeviceV2", "__cudaCDP2GetParameterBufferV2", "+8], 2;", "__cudaCDP2LaunchDeviceV2"] {
        at += parent[at..].find(needle).unwrap_or_else(|| panic!("`{needle}` missing or out of order:\n{parent}")) + needle.len();
    }
    assert!(ptx.contains(".entry stage0(") && ptx.contains(".entry stage1("), "{ptx}");
}

#[test]
fn cubin_links_when_the_tools_exist_and_the_manifest_parses() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir_frontend.toml");
    runtime_shim::loader::Manifest::load(&manifest).unwrap();
    if cdpc::toolchain::Toolchain::discover(&Default::default()).is_err() {
        return println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
    }
    let cubin = example::build(&[Stage::Add(7), Stage::Mul(2)], Emit::Cubin).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    let has = |needle: &[u8]| cubin.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"parent") && has(b"stage0") && has(b"stage1"));
}
