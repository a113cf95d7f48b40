//! CUDA's cache-hint loads and stores that Clang 22's CUDA headers lack (`__ldca`, `__ldlu`,
//! `__stcg`, `__stcs`, `__stwb`; what nvcc compiles, cdpc compiles): cdpc's header
//! (`clang::cache_hints_header`, included after Clang's wrapper) gives each the instruction
//! nvcc writes. nvcc's PTX of the same source is the oracle; with and without the cache (a
//! precompiled wrapper reads the header from the cache folder), and `-dc`'s host side.

use crate::build_common::{nvcc_ptx, stderr};
use std::process::Command;

const SOURCE: &str = r#"
__global__ void hints(int *i, const int *ci, float4 *f4, const float4 *cf4, char *c, const char *cc, long *l,
                      const long *cl, double2 *d2, const double2 *cd2, unsigned long long *u, const unsigned long long *cu,
                      short2 *s2, const short2 *cs2)
{
    i[0] = __ldca(ci);
    i[1] = __ldlu(ci + 1);
    f4[0] = __ldca(cf4);
    f4[1] = __ldlu(cf4 + 1);
    c[0] = __ldca(cc);
    l[0] = __ldca(cl);
    d2[0] = __ldlu(cd2);
    u[0] = __ldca(cu);
    s2[0] = __ldlu(cs2);
    __stcg(i + 2, 5);
    __stcs(i + 3, 6);
    __stwb(i + 4, 7);
    __stcs(f4 + 2, f4[3]);
    __stcg(c + 1, (char)1);
    __stwb(l + 1, 9l);
    __stcs(d2 + 1, d2[2]);
    __stcg(u + 1, 3ull);
    __stwb(s2 + 1, s2[2]);
}
"#;

/// The cache-hint instructions of a PTX text, sorted.
fn hinted(ptx: &str) -> Vec<String> {
    let hints = ["ld.global.ca.", "ld.global.lu.", "st.global.cg.", "st.global.cs.", "st.global.wb."];
    let mut found: Vec<String> = ptx.lines().filter_map(|l| l.split_whitespace().next()).filter(|op| hints.iter().any(|h| op.starts_with(h))).map(str::to_string).collect();
    found.sort();
    found
}

fn cdpc_with_cache(dir: &std::path::Path, cache: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).env("CDPC_CACHE_DIR", cache).env("CDPC_CACHE_BACKGROUND", "0").args(args).output().expect("cdpc runs")
}

#[test]
fn cache_hint_loads_and_stores_compile_to_nvccs_instructions() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let expected = hinted(&theirs);
    // The oracle says something: one instruction a call.
    assert_eq!(expected.len(), 18, "nvcc:\n{theirs}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hints.cu"), SOURCE).unwrap();
    let cache = dir.path().join("cache");
    // No cache, then a cache twice (the second compilation reads the precompiled wrapper).
    for cache_dir in ["", cache.to_str().unwrap(), cache.to_str().unwrap()] {
        let out = cdpc_with_cache(dir.path(), cache_dir, &["hints.cu", "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "cache `{cache_dir}`: {}", stderr(&out));
        assert_eq!(hinted(&String::from_utf8_lossy(&out.stdout)), expected, "cache `{cache_dir}`");
    }
    assert!(cache.join("include").read_dir().unwrap().count() == 1, "the header is kept once in the cache");
    // The host side of `-dc` sees the same declarations.
    let out = cdpc_with_cache(dir.path(), cache.to_str().unwrap(), &["-dc", "hints.cu", "-o", "hints.o"]);
    assert!(out.status.success(), "-dc: {}", stderr(&out));
}
