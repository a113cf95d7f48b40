//! Link-time optimisation of device code (`-dc -dlto`, a `-dlto` device link:
//! `driver/lto.rs`): the objects carry their device IR, and cdpc's device link compiles the IR
//! of all of them as one module, so that a launch of another file's kernel is aggregated as a
//! launch of the file's own is. What stays as without it: objects that carry no IR, objects
//! compiled with other options (`W0709`), a link without `-dlto`, nvcc's link of the objects.
//! The GPU check (nvcc's output, every run) is `bench/lto/check.sh` (results/device-lto/).

use crate::build_common::{cdpc, nvcc, run, stderr, tool_dir};

/// The child, in a file of its own; a `static` variable of the same name as the parent's.
const CHILD_CU: &str = r#"
static __device__ int calls;
__global__ void child(int *out, int t) {
    atomicAdd(&out[t], threadIdx.x + 1);
    if (threadIdx.x == 0) atomicAdd(&calls, 1);
}
"#;

/// Every thread of the parent launches the child, which only the whole program defines.
const PARENT_CU: &str = r#"
static __device__ int calls;
__global__ void child(int *out, int t);
__global__ void parent(int *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&calls, 1);
    child<<<1, 2 + t % 3>>>(out, t);
}
int main() {
    int *out;
    cudaMalloc(&out, 1024 * sizeof(int));
    parent<<<8, 128>>>(out);
    return cudaDeviceSynchronize() != cudaSuccess;
}
"#;

/// The names of the functions in the device code of `file` (a program or object), from
/// `cuobjdump -elf`'s symbol tables.
fn device_functions(file: &std::path::Path) -> Vec<String> {
    let cuobjdump = tool_dir().expect("the NVIDIA tools").join("cuobjdump");
    let out = std::process::Command::new(cuobjdump).arg("-elf").arg(file).output().expect("cuobjdump runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("FUNC")).filter_map(|l| l.split_whitespace().last().map(str::to_string)).collect();
    names.sort();
    names.dedup();
    names
}

/// The host symbols of `file` that register a module's linked device code.
fn registrations(file: &std::path::Path) -> Vec<String> {
    let out = std::process::Command::new("nm").arg(file).output().expect("nm runs");
    let mut found: Vec<String> =
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(" T __cudaRegisterLinkedBinary_")).map(|l| l.split_whitespace().last().unwrap_or_default().to_string()).collect();
    found.sort();
    found
}

#[test]
fn the_device_link_aggregates_a_launch_of_another_files_kernel_with_dlto() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("child.cu"), CHILD_CU).unwrap();
    std::fs::write(d.join("parent.cu"), PARENT_CU).unwrap();
    let aggregated = |name: &str| device_functions(&d.join(name)).iter().any(|f| f.starts_with("_Z5childPii__agg"));

    // One file at a time, the child has no body to clone: left as written, and said.
    let out = cdpc(d, &["-dc", "-dlto", "-arch=sm_90", "child.cu", "parent.cu", "-Rpass=aggregate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("has no definition to clone"), "{}", stderr(&out));
    // The link sees both: the launch is aggregated, and `-Rpass=aggregate` says so there.
    let out = cdpc(d, &["-dlto", "-arch=sm_90", "child.o", "parent.o", "-o", "app", "-Rpass=aggregate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("launch of `child` aggregated"), "{}", stderr(&out));
    assert!(aggregated("app"));
    // Both files' `static calls` are there, each under its own module's name.
    let statics = std::process::Command::new(tool_dir().unwrap().join("cuobjdump")).arg("-elf").arg(d.join("app")).output().unwrap();
    let statics = String::from_utf8_lossy(&statics.stdout).lines().filter(|l| l.contains("OBJECT") && l.contains("calls")).count();
    assert_eq!(statics, 2);
    // Each object's host code registers the linked code under its own module id, as without it.
    let out = cdpc(d, &["-arch=sm_90", "child.o", "parent.o", "-o", "app-plain"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(!aggregated("app-plain"));
    let (lto, plain) = (registrations(&d.join("app")), registrations(&d.join("app-plain")));
    assert!(["_child_cu", "_parent_cu"].iter().all(|f| lto.iter().any(|r| r.contains(f))), "{lto:?}");
    assert_eq!(lto, plain);
    // `-dlink`'s object holds the same.
    let out = cdpc(d, &["-dlink", "-dlto", "-arch=sm_90", "child.o", "parent.o", "-o", "dlink.o"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(aggregated("dlink.o"));

    // An object without IR is linked as it is; with one object left carrying IR there is
    // nothing to see across, and nothing to say.
    let out = cdpc(d, &["-dc", "-arch=sm_90", "child.cu", "-o", "child-cubin.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(d, &["-dlto", "-arch=sm_90", "child-cubin.o", "parent.o", "-o", "mixed"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(!aggregated("mixed"));
    // Objects compiled with other options: the cubins, and W0709 names the option.
    let out = cdpc(d, &["-dc", "-dlto", "-O2", "-arch=sm_90", "child.cu", "-o", "child-o2.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(d, &["-dlto", "-arch=sm_90", "child-o2.o", "parent.o", "-o", "differ"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning[W0709]: `-dlto`: `child-o2.o` and `parent.o` were compiled with different options (`opt-level` 2 against 3)"), "{}", stderr(&out));
    assert!(!aggregated("differ"));

    // nvcc links the objects as it links any `-dc` object: their cubins.
    if let Some(nvcc) = nvcc() {
        run(&nvcc, d, &["-arch=sm_90", "-rdc=true", "child.o", "parent.o", "-o", "by-nvcc"]);
        assert!(!aggregated("by-nvcc"));
    }
}
