//! `-fdevice-malloc-pool` (`pipeline/malloc_pool.rs`) from the command line: objects of both
//! front ends compiled with it share one pool when linked, beside an nvcc object that
//! allocates from the heap; a module whose allocation functions are not the runtime's is left
//! alone with `W1022`; a whole program's code without the option is unchanged. By default the
//! device link decides (`driver/pool.rs`): the pool where every object frees through it, the
//! heap where one may not (nvcc's, `-fno-device-malloc-pool`'s), and nvcc links cdpc's objects
//! as they are. The GPU check (every allocation filled, read and freed as in nvcc's build) is
//! samples/device_heap.cdp in the differential run and KLAP's BT, built by its Makefile with
//! `NVCC=cdpc` (docs/DEVICE-MALLOC.md).

use crate::build_common::{cdpc, cdpc_ptx, nvcc, run, stderr, tool_dir};

/// CUDA C++ that allocates on the device (Clang's CUDA 13 headers: `__cudaCDP2Malloc`).
const TAKE_CU: &str = r#"
__global__ void take(int **out, int n) {
    int t = threadIdx.x;
    cudaMalloc((void **)&out[t], n * sizeof(int));
    out[t][0] = t;
}
"#;

/// The kernel language, freeing what `take` allocated.
const GIVE_CDP: &str = r#"
__global__ void give(int **blocks) {
    free(blocks[threadIdx.x]);
}
"#;

/// nvcc's own object, allocating from the heap.
const HEAP_CU: &str = r#"
__global__ void heap(int **out) {
    out[threadIdx.x] = (int *)malloc(64);
}
"#;

/// The rows of `cuobjdump -elf`'s symbol tables that name the pool.
fn pool_symbols(cubin: &std::path::Path) -> Vec<String> {
    let cuobjdump = tool_dir().expect("the NVIDIA tools").join("cuobjdump");
    let out = std::process::Command::new(cuobjdump).arg("-elf").arg(cubin).output().expect("cuobjdump runs");
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("OBJECT") && l.ends_with("__cdpc_malloc_pool_v1")).map(str::to_string).collect()
}

#[test]
fn objects_of_both_front_ends_share_one_pool_beside_an_nvcc_object() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("take.cu"), TAKE_CU).unwrap();
    std::fs::write(d.join("give.cdp"), GIVE_CDP).unwrap();
    std::fs::write(d.join("heap.cu"), HEAP_CU).unwrap();
    // Both spellings: cdpc's own, and the one-dash form of its other `-f` options.
    for (source, option) in [("take.cu", "-fdevice-malloc-pool"), ("give.cdp", "--fdevice-malloc-pool")] {
        let out = cdpc(d, &["-dc", "-arch=sm_90", option, source]);
        assert!(out.status.success(), "{source}: {}", stderr(&out));
    }
    run(&nvcc, d, &["-arch=sm_90", "-dc", "heap.cu", "-o", "heap.o"]);
    let out = cdpc(d, &["--device-link", "take.o", "give.o", "heap.o", "-o", "all.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // One pool of 32 MiB for the program, though two objects define it (`.common`).
    let symbols = pool_symbols(&d.join("all.cubin"));
    assert_eq!(symbols.len(), 1, "{symbols:#?}");
    assert!(symbols[0].contains(" 0x2000000 "), "{}", symbols[0]);
    // Each object's PTX holds the pool as `.common`, and its calls of the runtime only
    // behind the pool.
    for (source, runtime) in [("take.cu", "__cudaCDP2Malloc"), ("give.cdp", "free")] {
        let out = cdpc(d, &[source, "-fdevice-malloc-pool", "-dc", "--emit", "ptx", "-o", "-"]);
        let ptx = String::from_utf8_lossy(&out.stdout);
        assert!(ptx.contains(".common .global .align 16 .b8 __cdpc_malloc_pool_v1[33554432];"), "{ptx}");
        assert!(ptx.contains(".common .global .align 8 .u64 __cdpc_malloc_state_v1;"), "{ptx}");
        let calls = ptx.lines().filter(|l| l.trim_start().starts_with("call") && l.contains(&format!(" {runtime},"))).count();
        assert_eq!(calls, 1, "one call of {runtime}, the heap's: {ptx}");
    }
}

#[test]
fn without_the_option_allocations_stay_the_heaps() {
    if tool_dir().is_none() {
        return;
    }
    let ptx = cdpc_ptx("take.cu", TAKE_CU);
    assert!(!ptx.contains("__cdpc_malloc") && ptx.contains("__cudaCDP2Malloc"), "{ptx}");
}

/// LLVM IR whose `free` is its own: pooling its `malloc` would hand pool pointers to it.
const OWN_FREE: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %out) {
  %p = call ptr @malloc(i64 16)
  store ptr %p, ptr %out, align 8
  call void @free(ptr %p)
  ret void
}

define void @free(ptr %p) {
  ret void
}

declare ptr @malloc(i64)
"#;

#[test]
fn allocation_functions_that_are_not_the_runtimes_are_left_alone_with_w1022() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("own.ll"), OWN_FREE).unwrap();
    let out = cdpc(dir.path(), &["own.ll", "-fdevice-malloc-pool", "--emit", "ptx", "-o", "own.ptx"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains("warning[W1022]: device allocations not pooled: the module defines `free`"), "{text}");
    let ptx = std::fs::read_to_string(dir.path().join("own.ptx")).unwrap();
    assert!(!ptx.contains("__cdpc_malloc"), "{ptx}");
    // An error when asked, and then no output.
    let out = cdpc(dir.path(), &["own.ll", "-fdevice-malloc-pool", "--deny", "W1022", "--emit", "ptx", "-o", "denied.ptx"]);
    assert!(!out.status.success() && stderr(&out).contains("error[W1022]"), "{}", stderr(&out));
    assert!(!dir.path().join("denied.ptx").exists());
}

/// nvcc's own object that frees what it is handed: a pool pointer there would reach the heap.
const HEAP_FREE_CU: &str = r#"
__global__ void heap_free(int **blocks) {
    free(blocks[threadIdx.x]);
}
"#;

/// A host `main`, for a program's link.
const MAIN_CU: &str = r#"
#include <cstdio>
__global__ void take(int **out, int n);
int main() {
    int **out;
    cudaMalloc(&out, 32 * sizeof(int *));
    take<<<1, 32>>>(out, 4);
    printf("%d\n", (int)cudaDeviceSynchronize());
}
"#;

/// Whether `object`'s ELF sections include `name` (readelf's section table).
fn has_section(object: &std::path::Path, name: &str) -> bool {
    let out = std::process::Command::new("readelf").arg("-SW").arg(object).output().expect("readelf runs");
    String::from_utf8_lossy(&out.stdout).split_whitespace().any(|w| w == name)
}

/// The rows of `cuobjdump -elf`'s symbol tables that name `symbol`.
fn symbol_rows(file: &std::path::Path, symbol: &str) -> Vec<String> {
    let cuobjdump = tool_dir().expect("the NVIDIA tools").join("cuobjdump");
    let out = std::process::Command::new(cuobjdump).arg("-elf").arg(file).output().expect("cuobjdump runs");
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.split_whitespace().last() == Some(symbol)).map(str::to_string).collect()
}

#[test]
fn by_default_the_device_link_pools_a_program_whose_objects_all_free_through_the_pool() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (file, text) in [("take.cu", TAKE_CU), ("give.cdp", GIVE_CDP), ("main.cu", MAIN_CU), ("heap.cu", HEAP_FREE_CU)] {
        std::fs::write(d.join(file), text).unwrap();
    }
    for source in ["take.cu", "give.cdp", "main.cu"] {
        let out = cdpc(d, &["-dc", "-arch=sm_90", source]);
        assert!(out.status.success(), "{source}: {}", stderr(&out));
        // Each says so in its host object: its frees go through the pool's wrappers, or it
        // frees nothing.
        assert!(has_section(&d.join(source.replace(".cu", ".o").replace(".cdp", ".o")), "__cdpc_pool_safe"), "{source}");
        // And whether it allocates through them: the pool is for those that do.
        assert_eq!(has_section(&d.join(source.replace(".cu", ".o").replace(".cdp", ".o")), "__cdpc_pool_used"), source == "take.cu", "{source}");
    }
    // The wrappers ask weak functions that serve nothing until the link replaces them.
    let ptx = String::from_utf8_lossy(&cdpc(d, &["give.cdp", "-dc", "--emit", "ptx", "-o", "-"]).stdout).into_owned();
    assert!(ptx.contains(".weak .func  (.param .b32 func_retval0) __cdpc_pool_give_v1("), "{ptx}");
    assert!(!ptx.contains("__cdpc_malloc_pool_v1"), "{ptx}");

    // cdpc's device link of them: the pool, once, and a remark when asked.
    let out = cdpc(d, &["--device-link", "take.o", "give.o", "main.o", "-o", "all.cubin", "-Rpass=malloc-pool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("[R0504]: device-side allocations of at most 16 KiB come from cdpc's pool: every device object of the program frees through it"), "{}", stderr(&out));
    assert_eq!(pool_symbols(&d.join("all.cubin")).len(), 1);
    // Nothing allocating through the wrappers, nothing to pool: no 32 MiB for nothing.
    let out = cdpc(d, &["--device-link", "give.o", "-o", "give.cubin", "-Rpass=malloc-pool"]);
    assert!(stderr(&out).contains("[R0504]: no pool for device-side allocations: no device object of the program allocates through cdpc's pool wrappers"), "{}", stderr(&out));
    assert!(pool_symbols(&d.join("give.cubin")).is_empty());
    // A program's: the same in its linked device code, and nvlink's note about the pool's
    // object (no host code) not shown.
    let out = cdpc(d, &["-arch=sm_90", "take.o", "give.o", "main.o", "-o", "app"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(symbol_rows(&d.join("app"), "__cdpc_malloc_pool_v1").len(), 1);
    let out = cdpc(d, &["-arch=sm_90", "-dlink", "take.o", "give.o", "main.o", "-o", "dlink.o"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(symbol_rows(&d.join("dlink.o"), "__cdpc_malloc_pool_v1").len(), 1);

    // nvcc's object that frees: the heap, and the remark names it.
    run(&nvcc, d, &["-arch=sm_90", "-dc", "heap.cu", "-o", "heap.o"]);
    let out = cdpc(d, &["-arch=sm_90", "take.o", "give.o", "main.o", "heap.o", "-o", "mixed", "-Rpass=malloc-pool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("device-side allocations stay with the heap: `heap.o` holds device code that may free outside cdpc's pool"), "{}", stderr(&out));
    assert!(symbol_rows(&d.join("mixed"), "__cdpc_malloc_pool_v1").is_empty());
    // So does a file of cdpc's compiled without the pool, and a link that says no.
    let out = cdpc(d, &["-dc", "-arch=sm_90", "give.cdp", "-fno-device-malloc-pool", "-o", "give-heap.o"]);
    assert!(out.status.success() && !has_section(&d.join("give-heap.o"), "__cdpc_pool_safe"), "{}", stderr(&out));
    let out = cdpc(d, &["-arch=sm_90", "take.o", "give-heap.o", "main.o", "-o", "heap-give", "-Rpass=malloc-pool"]);
    assert!(stderr(&out).contains("`give-heap.o` holds device code"), "{}", stderr(&out));
    assert!(symbol_rows(&d.join("heap-give"), "__cdpc_malloc_pool_v1").is_empty());
    let out = cdpc(d, &["-arch=sm_90", "take.o", "give.o", "main.o", "-o", "no-pool", "-fno-device-malloc-pool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(symbol_rows(&d.join("no-pool"), "__cdpc_malloc_pool_v1").is_empty());

    // The build without launch optimizations is nvcc's: the heap, at the compile and at the link.
    let out = cdpc(d, &["-dc", "-arch=sm_90", "give.cdp", "-fno-launch-optimizations", "-o", "give-plain.o"]);
    assert!(out.status.success() && !has_section(&d.join("give-plain.o"), "__cdpc_pool_safe"), "{}", stderr(&out));
    let out = cdpc(d, &["-arch=sm_90", "take.o", "give.o", "main.o", "-o", "plain", "-fno-launch-optimizations"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(symbol_rows(&d.join("plain"), "__cdpc_malloc_pool_v1").is_empty());

    // nvcc links cdpc's objects as they are: the weak functions, the heap.
    run(&nvcc, d, &["-arch=sm_90", "-rdc=true", "take.o", "give.o", "main.o", "-o", "by-nvcc"]);
    assert!(symbol_rows(&d.join("by-nvcc"), "__cdpc_malloc_pool_v1").is_empty());
    assert!(!symbol_rows(&d.join("by-nvcc"), "__cdpc_pool_give_v1").is_empty());
}

/// A whole program in one CUDA C++ file: threads allocate, a child frees (KLAP's BT's pattern).
const WHOLE_CU: &str = r#"
#include <cstdio>
__global__ void child(int *buf, int *out, int t) {
    atomicAdd(&out[t], buf[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) free(buf);
}
__global__ void parent(int *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int *buf = (int *)malloc(4 * sizeof(int));
    for (int i = 0; i < 4; i++) buf[i] = t + i;
    child<<<1, 4>>>(buf, out, t);
}
int main() {
    int *out;
    cudaMalloc(&out, 256 * sizeof(int));
    parent<<<4, 64>>>(out);
    cudaDeviceSynchronize();
    return 0;
}
"#;

#[test]
fn a_program_built_from_one_source_pools_its_whole_program_device_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("app.cu"), WHOLE_CU).unwrap();
    std::fs::write(d.join("host.cpp"), "int host_side(int x) { return x + 1; }\n").unwrap();
    std::fs::write(d.join("other.cu"), "__global__ void other(int *p) { free(p); }\nvoid run_other(int *p) { other<<<1, 1>>>(p); }\n").unwrap();
    let pooled = |name: &str| symbol_rows(&d.join(name), "__cdpc_malloc_pool_v1").len();
    // `cdpc app.cu -o app`: its module is all of the program's device code, so no other
    // module's `free` can be handed a pool pointer; the pool, with a remark when asked.
    let out = cdpc(d, &["-arch=sm_90", "app.cu", "-o", "app", "-Rpass=malloc-pool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("[R0504]: device-side allocations of at most 16 KiB come from cdpc's pool"), "{}", stderr(&out));
    assert_eq!(pooled("app"), 1);
    // With a host file beside it, which holds no device code: the same.
    let out = cdpc(d, &["-arch=sm_90", "app.cu", "host.cpp", "-o", "with-host"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(pooled("with-host"), 1);
    // Another module of device code (a second source, a whole-program object): each is its
    // own module, whose `free` would not know the other's pool: the heap, and the remark says
    // how to get the pool.
    let out = cdpc(d, &["-arch=sm_90", "app.cu", "other.cu", "-o", "two", "-Rpass=malloc-pool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("device-side allocations stay with the heap: this whole-program module (no `-rdc=true`)"), "{}", stderr(&out));
    assert_eq!(pooled("two"), 0);
    let out = cdpc(d, &["-arch=sm_90", "-c", "other.cu", "-o", "other.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(d, &["-arch=sm_90", "app.cu", "other.o", "-o", "with-object"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(pooled("with-object"), 0);
    // nvcc's `-c` object of one file: other modules may join it at the host link.
    let out = cdpc(d, &["-arch=sm_90", "-c", "app.cu", "-o", "app.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(pooled("app.o"), 0);
    // Asked not to, or without launch optimizations (nvcc's build): the heap.
    for (flag, name) in [("-fno-device-malloc-pool", "no-pool"), ("-fno-launch-optimizations", "plain")] {
        let out = cdpc(d, &["-arch=sm_90", "app.cu", flag, "-o", name]);
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        assert_eq!(pooled(name), 0, "{flag}");
    }
}
