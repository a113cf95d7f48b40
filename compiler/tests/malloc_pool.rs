//! `-fdevice-malloc-pool` (`pipeline/malloc_pool.rs`) from the command line: objects of both
//! front ends compiled with it share one pool when linked, beside an nvcc object that
//! allocates from the heap; a module whose allocation functions are not the runtime's is left
//! alone with `W1022`; without the option nothing changes. The GPU check (every allocation
//! filled, read and freed as in nvcc's build) is samples/device_heap.cdp in the differential
//! run (docs/DEVICE-MALLOC.md).

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
