//! CUDA 12.8's `__nv_atomic_*` built-ins through Clang (cdpc's `front/cuda/additions.h`, section 6),
//! nvcc 13.5's PTX of the same source the oracle. nvcc writes each as inline assembly of the
//! operation's semantics and scope (`atom.add.release.gpu.s32 %r1,[%rd1],%r2;`); Clang 22 knows
//! none of them, and its own scoped built-ins lose both the scope and, through LLVM 22's NVPTX,
//! the ordering of every read-modify-write. Compared per kernel: the atomic instructions, fences,
//! and ordered loads and stores in order, registers named alike. Below sm_90 nvcc writes the
//! cluster scope as `.gpu` and an acquire or release fence as `fence.acq_rel`, and refuses
//! 16-byte exchanges. What nvcc refuses, cdpc refuses with nvcc's message at the call.

use crate::build_common::{cdpc, cdpc_errors, nvcc, nvcc_errors, nvcc_refusal, run, stderr};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const ORDERS: [&str; 6] = ["RELAXED", "CONSUME", "ACQUIRE", "RELEASE", "ACQ_REL", "SEQ_CST"];
const SCOPES: [&str; 5] = ["THREAD", "BLOCK", "CLUSTER", "DEVICE", "SYSTEM"];

/// One kernel a call: every read-modify-write under every order (device scope) and every scope
/// (relaxed), the forms without a result, the default scope, every pair of a compare-and-swap's
/// orders nvcc takes, loads, stores and fences under the orders they take, and each operation
/// over the types nvcc takes it for; with `wide`, the 16-byte forms nvcc takes from sm_90.
fn source(wide: bool) -> String {
    let mut s = String::from("struct S2 { char a, b; };\nstruct S8 { float a, b; };\nstruct __align__(16) S16 { int a, b, c, d; };\nenum E { E0, E1 = 7 };\n");
    let mut n = 0;
    let mut kernel = |params: &str, body: &str| {
        writeln!(s, "__global__ void k{n}({params}) {{ {body} }}").unwrap();
        n += 1;
    };
    let fetches = ["fetch_add", "fetch_sub", "fetch_and", "fetch_or", "fetch_xor", "fetch_min", "fetch_max", "exchange_n"];
    for op in fetches {
        for o in ORDERS {
            kernel("int *p, int v", &format!("p[1] = __nv_atomic_{op}(p, v, __NV_ATOMIC_{o}, __NV_THREAD_SCOPE_DEVICE);"));
        }
        for sc in SCOPES {
            kernel("int *p, int v", &format!("p[1] = __nv_atomic_{op}(p, v, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_{sc});"));
        }
        kernel("int *p, int v", &format!("p[1] = __nv_atomic_{op}(p, v, __NV_ATOMIC_ACQ_REL);"));
    }
    for op in ["add", "sub", "and", "or", "xor", "min", "max"] {
        kernel("unsigned *p, unsigned v", &format!("__nv_atomic_{op}(p, v, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_BLOCK);"));
    }
    for s_ in ORDERS {
        for f in ["RELAXED", "CONSUME", "ACQUIRE", "SEQ_CST"] {
            kernel("int *p, int v", &format!("int e = v; p[1] = __nv_atomic_compare_exchange_n(p, &e, 5, false, __NV_ATOMIC_{s_}, __NV_ATOMIC_{f}, __NV_THREAD_SCOPE_DEVICE); p[2] = e;"));
        }
    }
    for o in ["RELAXED", "CONSUME", "ACQUIRE", "SEQ_CST"] {
        kernel("int *p", &format!("p[1] = __nv_atomic_load_n(p, __NV_ATOMIC_{o}, __NV_THREAD_SCOPE_DEVICE);"));
    }
    for o in ["RELAXED", "RELEASE", "SEQ_CST"] {
        kernel("int *p, int v", &format!("__nv_atomic_store_n(p, v, __NV_ATOMIC_{o}, __NV_THREAD_SCOPE_DEVICE);"));
    }
    for o in ["CONSUME", "ACQUIRE", "RELEASE", "ACQ_REL", "SEQ_CST"] {
        kernel("", &format!("__nv_atomic_thread_fence(__NV_ATOMIC_{o}, __NV_THREAD_SCOPE_DEVICE);"));
    }
    for sc in SCOPES {
        kernel("int *p", &format!("__nv_atomic_thread_fence(__NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_{sc}); p[1] = __nv_atomic_load_n(p, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_{sc});"));
    }
    kernel("", "__nv_atomic_thread_fence(__NV_ATOMIC_ACQUIRE);");
    // The types: what each operation takes, as nvcc types it (an int literal converted to the
    // pointer's type; an enumeration for and, or and xor alone, as its underlying type).
    let args = "__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE";
    for (ty, ops) in [
        ("unsigned", &["fetch_add", "fetch_sub", "fetch_and", "fetch_min", "fetch_max", "exchange_n"][..]),
        ("long", &["fetch_and", "fetch_min", "fetch_max", "exchange_n"]),
        ("unsigned long", &["fetch_add", "fetch_sub", "fetch_xor", "fetch_min"]),
        ("long long", &["fetch_or", "fetch_min", "exchange_n"]),
        ("unsigned long long", &["fetch_add", "fetch_sub", "fetch_and", "fetch_max", "exchange_n"]),
        ("float", &["fetch_add", "fetch_sub"]),
        ("double", &["fetch_add", "fetch_sub"]),
        ("E", &["fetch_and", "fetch_or", "fetch_xor"]),
    ] {
        for op in ops {
            let value = if ty == "E" { "E1" } else { "1" };
            kernel(&format!("{ty} *p"), &format!("p[1] = __nv_atomic_{op}(p, {value}, {args});"));
        }
    }
    for ty in ["char", "unsigned char", "short", "unsigned short", "int", "long long", "bool"] {
        kernel(&format!("{ty} *p"), &format!("p[1] = __nv_atomic_load_n(p, {args}); __nv_atomic_store_n(p + 2, p[3], __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_SYSTEM);"));
    }
    kernel("unsigned long long *p", "unsigned long long e = 1; p[1] = __nv_atomic_compare_exchange_n(p, &e, 2ull, true, __NV_ATOMIC_ACQUIRE, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_BLOCK); p[2] = e;");
    // The generic forms, through pointers to the values.
    for ty in ["S2", "S8", "float", "int"] {
        kernel(
            &format!("{ty} *p"),
            &format!("{ty} r; __nv_atomic_load(p, &r, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE); p[1] = r; __nv_atomic_store(p, &r, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_BLOCK);"),
        );
    }
    for ty in ["S8", "float"] {
        kernel(&format!("{ty} *p"), &format!("{ty} r, v = p[2]; __nv_atomic_exchange(p, &v, &r, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE); p[1] = r;"));
        kernel(
            &format!("{ty} *p, bool *ok"),
            &format!("{ty} e = p[1], d = p[2]; *ok = __nv_atomic_compare_exchange(p, &e, &d, false, __NV_ATOMIC_RELEASE, __NV_ATOMIC_CONSUME, __NV_THREAD_SCOPE_SYSTEM); p[3] = e;"),
        );
    }
    kernel("S16 *p", "S16 r; __nv_atomic_load(p, &r, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE); p[1] = r; __nv_atomic_store(p, &r, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);");
    if wide {
        kernel("S16 *p", "S16 r, v = p[2]; __nv_atomic_exchange(p, &v, &r, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE); p[1] = r;");
        kernel("S16 *p, bool *ok", "S16 e = p[1], d = p[2]; *ok = __nv_atomic_compare_exchange(p, &e, &d, false, __NV_ATOMIC_ACQ_REL, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE); p[3] = e;");
    }
    s
}

/// Each kernel's atomic instructions, fences and ordered loads and stores, in order, with every
/// register named `%R` (nvcc's `%r1`, cdpc's `%r3`, and the `.b128` registers cdpc declares
/// inside its assembly, `__cdpc_q0`); statements inside an assembly block's braces each count.
fn atomics(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in ptx.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix(".visible .entry ") {
            current = Some((rest.trim_end_matches('(').to_string(), Vec::new()));
            continue;
        }
        if line == "}" {
            if let Some((name, found)) = current.take() {
                out.insert(name, found);
            }
            continue;
        }
        let Some((_, found)) = current.as_mut() else { continue };
        for statement in line.trim_matches(|c| c == '{' || c == '}').split(';').map(str::trim) {
            let ordered = ["atom.", "fence.", "membar.", "ld.relaxed.", "ld.acquire.", "st.relaxed.", "st.release."];
            if ordered.iter().any(|p| statement.starts_with(p)) {
                found.push(registers_renamed(statement));
            }
        }
    }
    out
}

fn registers_renamed(statement: &str) -> String {
    let mut out = String::new();
    let mut rest = statement;
    while let Some(at) = rest.find(['%', '_']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let is_register = tail.starts_with('%') || tail.starts_with("__cdpc_q");
        if !is_register {
            out.push('_');
            rest = &tail[1..];
            continue;
        }
        let end = tail[1..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(tail.len(), |i| i + 1);
        out.push_str("%R");
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// nvcc's PTX and cdpc's of `source` for `arch`, or `None` where nvcc is missing.
fn both(source: &str, arch: &str) -> Option<(String, String)> {
    let nvcc = nvcc()?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("atomics.cu"), source).unwrap();
    run(&nvcc, dir.path(), &[&format!("-arch={arch}"), "-rdc=true", "-ptx", "atomics.cu", "-o", "nvcc.ptx"]);
    let out = cdpc(dir.path(), &["atomics.cu", "-arch", arch, "--emit", "ptx", "-o", "cdpc.ptx"]);
    assert!(out.status.success(), "{arch}: {}", stderr(&out));
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    Some((read("nvcc.ptx"), read("cdpc.ptx")))
}

fn assert_same(arch: &str, wide: bool, expected_kernels: usize) {
    let Some((theirs, ours)) = both(&source(wide), arch) else { return };
    let (expected, found) = (atomics(&theirs), atomics(&ours));
    // The oracle says something: every kernel, and at least one instruction in each.
    assert_eq!(expected.len(), expected_kernels, "nvcc at {arch}:\n{theirs}");
    assert!(expected.values().all(|v| !v.is_empty()), "{expected:?}");
    let differ: Vec<_> = expected.iter().filter(|(k, v)| found.get(*k) != Some(v)).map(|(k, v)| format!("{k}:\n  nvcc {v:?}\n  cdpc {:?}", found.get(k))).collect();
    assert!(differ.is_empty(), "{arch}: {} of {} kernels differ:\n{}", differ.len(), expected.len(), differ.join("\n"));
}

#[test]
fn every_order_scope_and_type_is_nvccs_instruction_at_sm_90() {
    assert_same("sm_90", true, 193);
}

#[test]
fn below_sm_90_the_cluster_scope_and_fences_are_nvccs_too() {
    assert_same("sm_80", false, 191);
}

/// The calls nvcc refuses, one a line, with nvcc's message for each (read from nvcc, the
/// oracle): cdpc refuses each at its line with the same words.
const REFUSED: &str = r#"__global__ void k(int *p, long *l, float *f, short *s, double *d, int o) {
  p[0] = __nv_atomic_fetch_add(p, 1, o, __NV_THREAD_SCOPE_DEVICE);
  p[0] = __nv_atomic_fetch_add(p, 1, __NV_ATOMIC_RELAXED, o);
  p[0] = __nv_atomic_fetch_add(p, 1, 9, __NV_THREAD_SCOPE_DEVICE);
  p[0] = __nv_atomic_fetch_add(p, 1, __NV_ATOMIC_RELAXED, 7);
  l[0] = __nv_atomic_fetch_add(l, 1l, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  f[0] = __nv_atomic_fetch_or(f, 1.0f, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  d[0] = __nv_atomic_fetch_min(d, 1.0, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_store_n(p, 1, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE);
  p[0] = __nv_atomic_load_n(p, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_thread_fence(__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  int e = 0; p[0] = __nv_atomic_compare_exchange_n(p, &e, 1, false, __NV_ATOMIC_ACQ_REL, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
  f[0] = __nv_atomic_exchange_n(f, 2.0f, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  short r, v = 1; __nv_atomic_exchange(s, &v, &r, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
}
"#;

/// nvcc's errors as (line, message without its final period), sorted, without its second
/// message about a refused call's value ("a value of type void cannot be assigned"), which
/// follows from the first.
fn nvcc_refusals(text: &str) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> =
        nvcc_errors(text).into_iter().map(|(line, m)| (line, m.trim_end_matches('.').to_string())).filter(|(_, m)| !m.starts_with("a value of type") && !m.starts_with("no operator")).collect();
    out.sort();
    out
}

#[test]
fn what_nvcc_refuses_is_refused_at_the_call_with_nvccs_message() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("refused.cu"), REFUSED).unwrap();
    let theirs = nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-ptx", "refused.cu", "-o", "nvcc.ptx"]);
    let expected = nvcc_refusals(&theirs);
    assert_eq!(expected.len(), REFUSED.lines().count() - 2, "one error a call:\n{theirs}");

    let out = cdpc(dir.path(), &["refused.cu", "--emit", "ptx", "-o", "-", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    // One label each, the call's: the attribute's place in cdpc's header is left out.
    let mut found: Vec<(u64, String)> = cdpc_errors(&out, "E1000").into_iter().map(|(line, m)| (line, m.trim_end_matches('.').to_string())).collect();
    found.sort();
    assert_eq!(found, expected);
}

/// Unoptimised and debug builds keep every case of a call's switch over orders and scopes (the
/// one of its constants runs); they must still assemble and link (no `memcmp` call, no
/// `.cluster` below sm_90).
#[test]
fn unoptimised_and_debug_builds_assemble_and_link() {
    if crate::build_common::tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("atomics.cu"), source(true)).unwrap();
    std::fs::write(dir.path().join("narrow.cu"), source(false)).unwrap();
    for (file, arch, option) in [("atomics.cu", "sm_90", "-O0"), ("atomics.cu", "sm_90", "-G"), ("narrow.cu", "sm_80", "-O0")] {
        let out = cdpc(dir.path(), &[file, "-arch", arch, option, "-o", "out.cubin"]);
        assert!(out.status.success(), "{file} {arch} {option}: {}", stderr(&out));
    }
}
