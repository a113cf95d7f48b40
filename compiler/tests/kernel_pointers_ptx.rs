//! Launches through pointers to kernels against nvcc's PTX (docs/launch-sequence.md,
//! "Launches through a pointer to a kernel"): a `__device__` table of kernels is initialised
//! with their symbols, a launch through a table element, a dereferenced one, and a device
//! function's parameter stores its arguments at the offsets of the pointer's type, and the
//! device function that takes a kernel pointer has nvcc's symbol. Both front ends; nvcc is the
//! oracle.

use crate::build_common::{cdpc, nvcc_ptx, stderr};

const SOURCE: &str = r#"
struct S { int a; double b; };
extern "C" __global__ void child(S s, int *p) { p[threadIdx.x] = s.a + (int)s.b; }
extern "C" __global__ void other(S s, int *p) { p[threadIdx.x] = s.a - (int)s.b; }
__device__ void (*table[2])(S, int *) = {child, other};
__device__ void launch_via(void (*k)(S, int *), S s, int *p) { k<<<1, 32>>>(s, p); }
extern "C" __global__ void parent(int *p, int i)
{
    S s = {i, 2.5};
    table[i % 2]<<<1, 32>>>(s, p);
    (*table[1])<<<2, 32, 0, cudaStreamTailLaunch>>>(s, p);
    launch_via(table[i % 2], s, p);
}
"#;

/// The body of `.entry`/`.func` `name`.
fn body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(" {name}(")).unwrap_or_else(|| panic!("no {name} in\n{ptx}"));
    let rest = &ptx[start..];
    let open = rest.find("\n{").unwrap_or_else(|| panic!("no body of {name}"));
    let end = rest[open..].find("\n}").map_or(rest.len(), |e| open + e);
    &rest[open..end]
}

/// The launches of a body: how many, and each store into a parameter buffer (width in bits,
/// offset), in order: generic stores through a register, which only the buffers get here.
fn launches(body: &str) -> (usize, Vec<(u32, u64)>) {
    let count = body.matches("__cudaCDP2GetParameterBufferV2").count();
    let mut stores = Vec::new();
    for line in body.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("st.") else { continue };
        let Some((ty, operands)) = rest.split_once(char::is_whitespace) else { continue };
        if ty.starts_with("param") || ty.starts_with("global") || ty.starts_with("shared") || ty.starts_with("local") {
            continue;
        }
        // A vector store (`st.v2.b64`, the IR path's copy of a 16-aligned struct) counts as
        // one store of all its lanes.
        let (lanes, scalar) = match ty.strip_prefix('v').and_then(|v| v.split_once('.')) {
            Some((n, scalar)) => (n.parse::<u32>().unwrap_or_else(|_| panic!("store type {ty}")), scalar),
            None => (1, ty),
        };
        let bits: u32 = lanes * scalar[1..].parse::<u32>().unwrap_or_else(|_| panic!("store type {ty}"));
        let address = operands.trim().trim_start_matches('[').split(']').next().unwrap_or_default();
        let offset = address.split_once('+').map_or(0, |(_, o)| o.parse().unwrap_or_else(|_| panic!("offset in {line}")));
        stores.push((bits, offset));
    }
    (count, stores)
}

#[test]
fn launches_through_kernel_pointers_are_nvcc_s() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let table = ".visible .global .align 8 .u64 table[2] = {child, other};";
    assert!(theirs.contains(table), "nvcc:\n{theirs}");
    let symbol = ".visible .func _Z10launch_viaPFv1SPiES_S0_(";
    assert!(theirs.contains(symbol), "nvcc:\n{theirs}");
    let expected = launches(body(&theirs, "parent"));
    // The oracle says something: three launches, each storing S's int, S's double and the pointer.
    assert_eq!(expected, (3, [(32, 0), (64, 8), (64, 16)].repeat(3)), "nvcc:\n{theirs}");
    let dir = tempfile::tempdir().unwrap();
    for file in ["pointers.cdp", "pointers.cu"] {
        std::fs::write(dir.path().join(file), SOURCE).unwrap();
        // Relocatable, as nvcc's oracle (`-rdc=true`): the device function stays visible.
        let out = cdpc(dir.path(), &[file, "-rdc=true", "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        let ours = String::from_utf8_lossy(&out.stdout);
        assert!(ours.contains(table), "{file}:\n{ours}");
        assert!(ours.contains(symbol), "{file}:\n{ours}");
        assert_eq!(launches(body(&ours, "parent")), expected, "{file}:\n{ours}");
        // In the device function, Clang copies the struct argument as two 8-byte words, its
        // padding included (the IR path's struct copies, not the launch): the same bytes are
        // stored, and the same launch made.
        let (via_ours, via_theirs) = (launches(body(&ours, "_Z10launch_viaPFv1SPiES_S0_")), launches(body(&theirs, "_Z10launch_viaPFv1SPiES_S0_")));
        if file.ends_with(".cdp") {
            assert_eq!(via_ours, via_theirs, "{file}:\n{ours}");
        } else {
            assert_eq!(via_ours.0, via_theirs.0, "{file}:\n{ours}");
            let covered = |stores: &[(u32, u64)]| stores.iter().flat_map(|&(bits, at)| at..at + u64::from(bits / 8)).collect::<std::collections::BTreeSet<u64>>();
            assert!(covered(&via_ours.1).is_superset(&covered(&via_theirs.1)), "{file}: {via_ours:?} against nvcc's {via_theirs:?}");
        }
    }
}
