//! Link-time optimisation of device code (`-dc -dlto`, a `-dlto` device link:
//! `driver/lto.rs`): the objects carry their device IR, and cdpc's device link compiles the IR
//! of all of them as one module, so that a launch of another file's kernel is aggregated as a
//! launch of the file's own is, also where the child is in a static library of such objects
//! (nvlink links every member of an archive that holds device code). What stays as without
//! it: objects that carry no IR, an archive with a member that carries none, objects
//! compiled with other options (`W0709`), a link without `-dlto`, nvcc's link of the objects.
//! The GPU check (nvcc's output in every run) is `bench/lto/check.sh`.

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

/// A folder holding `child.cu` and `parent.cu`.
fn two_files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("child.cu"), CHILD_CU).unwrap();
    std::fs::write(dir.path().join("parent.cu"), PARENT_CU).unwrap();
    dir
}

/// Whether the device code of `name` in `d` holds the child's aggregated kernel.
fn aggregated(d: &std::path::Path, name: &str) -> bool {
    device_functions(&d.join(name)).iter().any(|f| f.starts_with("_Z5childPii__agg"))
}

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
    let dir = two_files();
    let d = dir.path();
    let aggregated = |name: &str| aggregated(d, name);

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
    // And the device link to a cubin, for the driver API.
    let out = cdpc(d, &["--device-link", "-dlto", "-arch=sm_90", "child.o", "parent.o", "-o", "all.cubin"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(aggregated("all.cubin"));
    let out = cdpc(d, &["--device-link", "-arch=sm_90", "child.o", "parent.o", "-o", "plain.cubin"]);
    assert!(out.status.success() && !aggregated("plain.cubin"), "{}", stderr(&out));

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

    // A program cdpc builds from two relocatable CUDA C++ sources: the same by default, without
    // `-dlto` (the build sees every file), and not without launch optimizations.
    let out = cdpc(d, &["-rdc=true", "-arch=sm_90", "child.cu", "parent.cu", "-o", "from-sources"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(aggregated("from-sources"));
    let out = cdpc(d, &["-rdc=true", "-arch=sm_90", "child.cu", "parent.cu", "-o", "from-sources-plain", "-fno-launch-optimizations"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(!aggregated("from-sources-plain"));

    // nvcc links the objects as it links any `-dc` object: their cubins.
    if let Some(nvcc) = nvcc() {
        run(&nvcc, d, &["-arch=sm_90", "-rdc=true", "child.o", "parent.o", "-o", "by-nvcc"]);
        assert!(!aggregated("by-nvcc"));
    }
}

#[test]
fn a_static_library_of_dlto_objects_is_compiled_with_the_program_at_the_link() {
    let dir = two_files();
    let d = dir.path();
    // A kernel nothing launches or calls: nvlink links the member all the same.
    std::fs::write(d.join("other.cu"), "__global__ void other(int *out) { out[1] = 2; }\nvoid launch_other(int *out) { other<<<1, 1>>>(out); }\n").unwrap();
    let aggregated = |name: &str| aggregated(d, name);
    let out = cdpc(d, &["-dc", "-dlto", "-arch=sm_90", "child.cu", "other.cu", "parent.cu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    run(std::path::Path::new("ar"), d, &["rcs", "libchild.a", "child.o", "other.o"]);
    // The library as a file and through `-l`, before the object and after it: the launch is
    // aggregated, every member's kernels are there, and each module is registered as without
    // `-dlto`.
    let out = cdpc(d, &["-arch=sm_90", "parent.o", "libchild.a", "-o", "plain"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(!aggregated("plain"));
    let plain = registrations(&d.join("plain"));
    assert!(["_child_cu", "_other_cu", "_parent_cu"].iter().all(|f| plain.iter().any(|r| r.contains(f))), "{plain:?}");
    for (n, args) in [&["parent.o", "libchild.a"][..], &["parent.o", "-L.", "-lchild"], &["libchild.a", "parent.o"]].iter().enumerate() {
        let name = format!("app{n}");
        let mut all = vec!["-dlto", "-arch=sm_90", "-o", &name];
        all.extend_from_slice(args);
        let out = cdpc(d, &all);
        assert!(out.status.success() && stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
        assert!(aggregated(&name), "{args:?}");
        assert!(device_functions(&d.join(&name)).iter().any(|f| f == "_Z5otherPi"), "{args:?}");
        assert_eq!(registrations(&d.join(&name)), plain, "{args:?}");
    }
    // `-dlink` and the device link to a cubin read the library too.
    let out = cdpc(d, &["-dlink", "-dlto", "-arch=sm_90", "parent.o", "libchild.a", "-o", "dlink.o"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(aggregated("dlink.o"));
    let out = cdpc(d, &["--device-link", "-dlto", "-arch=sm_90", "parent.o", "libchild.a", "-o", "all.cubin"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(aggregated("all.cubin"));
    // A member without IR: nvlink links every member's cubin, so the library's IR is left out
    // (the object alone has nothing to see across).
    let out = cdpc(d, &["-dc", "-arch=sm_90", "other.cu", "-o", "other-cubin.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    run(std::path::Path::new("ar"), d, &["rcs", "libmixed.a", "child.o", "other-cubin.o"]);
    let out = cdpc(d, &["-dlto", "-arch=sm_90", "parent.o", "libmixed.a", "-o", "mixed"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(!aggregated("mixed"));
    assert_eq!(registrations(&d.join("mixed")), plain);
}

/// How many of the device images (one an architecture) of `file` define `name`, from
/// `cuobjdump -elf`'s symbol tables.
fn images_defining(file: &std::path::Path, name: &str) -> usize {
    let cuobjdump = tool_dir().expect("the NVIDIA tools").join("cuobjdump");
    let out = std::process::Command::new(cuobjdump).arg("-elf").arg(file).output().expect("cuobjdump runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split("Fatbin elf code").skip(1).filter(|image| image.lines().any(|l| l.contains("FUNC") && l.split_whitespace().last() == Some(name))).count()
}

#[test]
fn every_architecture_of_the_objects_is_compiled_at_the_link() {
    let dir = two_files();
    let d = dir.path();
    let two = ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90"];
    let with = |args: &[&str]| cdpc(d, &two.iter().chain(args).copied().collect::<Vec<_>>());
    let out = with(&["-dc", "-dlto", "child.cu", "parent.cu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Each object carries the IR of both architectures: the link compiles both, and says what
    // it did once.
    let out = with(&["-dlto", "child.o", "parent.o", "-o", "app", "-Rpass=aggregate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out).matches("launch of `child` aggregated").count(), 1, "{}", stderr(&out));
    assert_eq!(images_defining(&d.join("app"), "_Z5childPii__agg"), 2);
    assert_eq!(images_defining(&d.join("app"), "_Z5childPii"), 2);
    let out = with(&["child.o", "parent.o", "-o", "plain"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(images_defining(&d.join("plain"), "_Z5childPii__agg"), 0);
    assert_eq!(registrations(&d.join("app")), registrations(&d.join("plain")));
}

#[test]
fn damaged_device_ir_leaves_the_objects_cubins_to_the_link() {
    let dir = two_files();
    let d = dir.path();
    let out = cdpc(d, &["-dc", "-dlto", "-arch=sm_90", "child.cu", "parent.cu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let object = std::fs::read(d.join("parent.o")).unwrap();
    let magic = b"cdpc device IR v1\n";
    let at = object.windows(magic.len()).position(|w| w == magic).expect("the section's entry");
    let header = u32::from_le_bytes(object[at + magic.len()..at + magic.len() + 4].try_into().unwrap()) as usize;
    let bitcode = at + magic.len() + 4 + header + 8;
    let length = u64::from_le_bytes(object[bitcode - 8..bitcode].try_into().unwrap()) as usize;
    // Damaged in the header's length, in the bitcode's middle, and at spread bytes of the
    // whole entry, as an object and as a library's member: the link goes on with the cubins,
    // and W0709 says why; never a crash.
    let mut damaged: Vec<Vec<u8>> = Vec::new();
    let mut huge = object.clone();
    huge[at + magic.len()..at + magic.len() + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    damaged.push(huge);
    let mut middle = object.clone();
    middle[bitcode + length / 2..bitcode + length / 2 + 64].fill(0xa5);
    damaged.push(middle);
    let span = bitcode + length - at;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..16 {
        let mut copy = object.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            copy[at + (seed as usize) % span] ^= 1 << (seed % 8);
        }
        damaged.push(copy);
    }
    for (n, bytes) in damaged.iter().enumerate() {
        std::fs::write(d.join("damaged.o"), bytes).unwrap();
        let out = cdpc(d, &["-dlto", "-arch=sm_90", "child.o", "damaged.o", "-o", "app"]);
        assert!(out.status.success(), "damage {n}: {}", stderr(&out));
        // The entry's hash finds every damage.
        assert!(stderr(&out).starts_with("warning[W0709]: `-dlto`: `damaged.o`'s device IR cannot be read (damaged"), "damage {n}: {}", stderr(&out));
        // The same object in a static library, named as nvlink names a member.
        let _ = std::fs::remove_file(d.join("libdamaged.a"));
        run(std::path::Path::new("ar"), d, &["rcs", "libdamaged.a", "damaged.o"]);
        let out = cdpc(d, &["-dlto", "-arch=sm_90", "child.o", "-L.", "-ldamaged", "-o", "app"]);
        assert!(out.status.success(), "damage {n}, in a library: {}", stderr(&out));
        assert!(stderr(&out).contains("`-dlto`: `") && stderr(&out).contains("libdamaged.a(damaged.o)`'s device IR cannot be read (damaged"), "damage {n}, in a library: {}", stderr(&out));
    }
}
