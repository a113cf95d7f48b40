//! `include/cdpc.h` is what cbindgen generates from the current source.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new().with_crate(dir).with_config(config).generate().expect("cbindgen runs").write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = dir.join("include/cdpc.h");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if std::env::var_os("CDPC_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    assert!(committed == generated, "capi/include/cdpc.h is stale: run `CDPC_BLESS=1 cargo test -p cdpc-capi --test header` and commit it");
}
