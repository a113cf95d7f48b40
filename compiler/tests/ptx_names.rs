//! Every symbol cdpc writes into PTX is a PTX identifier ptxas assembles, whatever Clang named
//! it: the data the compiler makes for `__PRETTY_FUNCTION__` and `__func__` (what `assert`
//! writes), in `static` and template kernels, in anonymous namespaces and in lambdas, under
//! every way of compiling (`-c` whole program with nvcc's module id, `-dc`, `-rdc=true -c`,
//! `-ptx`). nvcc is the oracle for linkage, names and order: it keeps all such data internal,
//! under the names `__unnamed_<n>` and `$str$<n>`.

use crate::build_common::{cdpc, nvcc_ptx, stderr};

/// Kernels whose compiler-made strings Clang names `<name>.<function>`.
const SOURCE: &str = r#"
#include <cassert>
#include <cstdio>
template <typename T> static __global__ void st(T *p) { assert(p[threadIdx.x] >= 0); }
static __global__ void sk(int *p) { if (*p < 0) printf("%s %s\n", __func__, __PRETTY_FUNCTION__); }
namespace {
template <typename T> __global__ void an(T *p) { assert(p[0] != T(1)); printf("%s\n", __func__); }
}
template <typename T> __global__ void lam(T *p) {
    auto check = [p](int i) { assert(p[i] == p[i]); printf("%s\n", __PRETTY_FUNCTION__); };
    check(threadIdx.x);
}
void launch(float *f, int *i) {
    st<<<1, 32>>>(f);
    st<<<1, 32>>>(i);
    sk<<<1, 1>>>(i);
    an<<<1, 1>>>(f);
    lam<<<1, 1>>>(i);
}
"#;

/// Whether `name` is a PTX identifier: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`.
fn is_ptx_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    let Some(first) = bytes.next() else { return false };
    let rest_ok = name.bytes().skip(1).all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    if first.is_ascii_alphabetic() {
        rest_ok
    } else {
        matches!(first, b'_' | b'$' | b'%') && name.len() > 1 && rest_ok
    }
}

/// The `.global` variables a PTX text defines, as (visible, name).
fn globals(ptx: &str) -> Vec<(bool, String)> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with(".extern"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            // A definition, not an instruction of a function's body (`cvta.global.u64`).
            (words.first() == Some(&".global") || words.get(..2) == Some(&[".visible", ".global"][..])).then_some(())?;
            let name = words.iter().find(|w| w.contains('[') || w.ends_with(';')).or(words.last())?;
            let name = name.split(['[', ';', ' ']).next()?.to_string();
            Some((words[0] == ".visible", name))
        })
        .collect()
}

#[test]
fn compiler_made_names_assemble_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("names.cu"), SOURCE).unwrap();
    for mode in [&["-c"][..], &["-dc"], &["-rdc=true", "-c"], &["-c", "-O0"]] {
        let out = cdpc(dir.path(), &[&["-arch=sm_90", "names.cu", "-o", "names.o"][..], mode].concat());
        assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
    }
    let out = cdpc(dir.path(), &["-arch=sm_90", "-rdc=true", "-ptx", "names.cu", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptx = String::from_utf8_lossy(&out.stdout).into_owned();
    let ours = globals(&ptx);
    assert!(ours.len() >= 4, "{ours:?}");
    for (visible, name) in &ours {
        assert!(is_ptx_identifier(name), "`{name}` is no PTX identifier");
        assert!(!visible, "`{name}` is visible; nvcc keeps compiler-made data internal");
    }
    // nvcc's names, in nvcc's order (nvcc 13.5, `nvcc -ptx -rdc=true -arch=sm_90`): the texts of
    // `__PRETTY_FUNCTION__` and `__func__` numbered in the module's order, then the string
    // literals (pipeline/names.rs, `nvcc_data_names`).
    let names: Vec<&str> = ours.iter().map(|(_, name)| name.as_str()).collect();
    let nvccs = ["__unnamed_1", "__unnamed_2", "__unnamed_3", "__unnamed_4", "__unnamed_5", "__unnamed_6", "__unnamed_7", "$str", "$str$1", "$str$2", "$str$3", "$str$4"];
    assert_eq!(names, nvccs);
    if let Some(theirs) = nvcc_ptx(SOURCE) {
        // The oracle: nvcc makes the same strings under the same names, none of them visible.
        let theirs = globals(&theirs);
        assert!(!theirs.is_empty() && theirs.iter().all(|(visible, _)| !visible), "{theirs:?}");
        assert_eq!(theirs.iter().map(|(_, name)| name.as_str()).collect::<Vec<_>>(), nvccs);
    }
}

#[test]
fn identifiers_are_read_as_ptx_reads_them() {
    assert!(is_ptx_identifier("__PRETTY_FUNCTION___$__ZL1kIfEvPT_") && is_ptx_identifier("$str$1") && is_ptx_identifier("_Z1kv"));
    assert!(!is_ptx_identifier("__PRETTY_FUNCTION__._ZL1kIfEvPT_") && !is_ptx_identifier("_") && !is_ptx_identifier("1a"));
}
