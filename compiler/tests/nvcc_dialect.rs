//! What nvcc makes implicit and Clang's CUDA dialect does not (docs/NVCC-DIALECT.md):
//! the C library's declarations that nvcc's cuda_runtime.h brings into every file (`isfinite`
//! in a host template without `<math.h>`, `clock()` and `CLOCKS_PER_SEC` in `main` without
//! `<time.h>`; `printf` and `assert` in device code without their headers, which only the
//! device pass accepts), and `<omp.h>`, which nvcc's host compiler finds in its own include
//! folder. Each file must compile through cdpc, device side (`--emit ptx`) and both sides
//! (`-dc`); nvcc, where it is in `.cuda`, is the oracle that the file is nvcc's dialect.

use crate::build_common::{cdpc, nvcc, run, stderr};
use std::path::Path;
use std::process::Command;

const HOST_MATH: &str = r#"#include <stdlib.h>
#include <stdio.h>
#include <cuda_runtime.h>
#include <float.h>

template <typename T>
bool all_finite(const T *v, int n) {
  for (int i = 0; i < n; ++i)
    if (!isfinite(v[i])) return false;
  return true;
}

__global__ void halve(float *v) {
  if (isfinite(v[threadIdx.x])) v[threadIdx.x] *= 0.5f;
}

int main() {
  float h[3] = {1.0f, 2.0f, FLT_MAX};
  printf("%d %f\n", all_finite(h, 3) ? 1 : 0, fabs(-2.0));
  return 0;
}
"#;

const HOST_CLOCK: &str = r#"#include <stdio.h>
#include <cuda_runtime.h>

__global__ void spin(long long *t) {
  clock_t start = clock();
  t[0] = (long long)(clock() - start);
}

int main() {
  clock_t start = clock();
  double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
  printf("%f %ld\n", seconds, (long)time(NULL) * 0);
  return 0;
}
"#;

/// Only nvcc's device pass includes `<stdio.h>` and `<assert.h>`: `nvcc -ptx` accepts this,
/// `nvcc -c` does not ("identifier \"assert\" is undefined"), and so do cdpc's `--emit ptx` and
/// `-dc`.
const DEVICE_ONLY: &str = r#"__global__ void check(int *v) {
  assert(v[1] != 0);
  printf("%d\n", v[0]);
}
"#;

const OMP: &str = r#"#include <omp.h>
#include <stdio.h>

__global__ void fill(int *v) { v[threadIdx.x] = threadIdx.x; }

int main() {
  int sum = 0;
#pragma omp parallel for reduction(+ : sum)
  for (int i = 0; i < 100; ++i) sum += i;
  printf("%d %d\n", omp_get_max_threads(), sum);
  return 0;
}
"#;

/// Writes `source` as `name` in a new folder and asserts that cdpc compiles it, device side and
/// both sides (with `more` options); and nvcc too (`-ptx` and `-c`), where it is there.
fn compiles_like_nvcc(name: &str, source: &str, more: &[&str]) {
    crate::build_common::cdpc_ptx_with(name, source, more);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), source).unwrap();
    let mut args = vec!["-dc", name, "-o", "cdpc.o"];
    args.extend_from_slice(more);
    let out = cdpc(dir.path(), &args);
    assert!(out.status.success(), "cdpc -dc {name}: {}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        let mut args = vec!["-arch=sm_90", "-rdc=true", "-std=c++17", "-c", name, "-o", "nvcc.o"];
        args.extend_from_slice(more);
        run(&nvcc, dir.path(), &args);
    }
}

#[test]
fn isfinite_in_a_host_template_needs_no_math_h() {
    compiles_like_nvcc("host_math.cu", HOST_MATH, &[]);
}

#[test]
fn clock_in_host_code_needs_no_time_h() {
    compiles_like_nvcc("host_clock.cu", HOST_CLOCK, &[]);
}

#[test]
fn printf_and_assert_need_no_headers_in_the_device_pass_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("device_only.cu"), DEVICE_ONLY).unwrap();
    let out = cdpc(dir.path(), &["device_only.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["-dc", "device_only.cu", "-o", "cdpc.o"]);
    assert!(!out.status.success() && stderr(&out).contains("'assert'"), "{}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-ptx", "device_only.cu", "-o", "nvcc.ptx"]);
        let refused = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-c", "device_only.cu", "-o", "nvcc.o"]);
        assert!(refused.contains("identifier \"assert\" is undefined"), "{refused}");
    }
}

#[test]
fn omp_h_is_found_in_the_host_compilers_include_folder() {
    let Some(folder) = cdpc::toolchain::host_compiler_include() else {
        println!("skipped: `gcc -print-file-name=include` names no folder");
        return;
    };
    if !Path::new(&folder).join("omp.h").is_file() {
        println!("skipped: no omp.h in {}", folder.display());
        return;
    }
    compiles_like_nvcc("omp.cu", OMP, &[]);
    // nvcc's `-Xcompiler -fopenmp` is the host side's (Clang's OpenMP).
    compiles_like_nvcc("omp.cu", OMP, &["-Xcompiler", "-fopenmp"]);
}

/// A launch whose brackets have blanks in them, as Visual Studio's formatter writes them, in the
/// file, in a header it includes and inside a kernel (a device-side launch); with a template
/// closed with a blank and `operator<< <T>`, which stay C++. nvcc compiles it; cdpc must too,
/// to the same PTX as the file written with `<<<` and `>>>`.
const SPACED: &str = r#"#include "launch.cuh"
#include <ostream>
template <class T> struct Box { T v; };
Box<Box<Box<int>> > boxed;
struct Tag {};
template <class T> std::ostream &operator<<(std::ostream &o, T) { return o; }
void show(std::ostream &o) { operator<< <Tag>(o, Tag()); }

__global__ void child(int *v) { v[threadIdx.x] += 1; }
__global__ void parent(int *v) {
  if (threadIdx.x == 0) child<< <1, 32 >> >(v);
}
void run(int *v) {
  parent<< <1, 32>> >(v);
  parent<<</* grid */ 1, 32>> > (v);
  from_header(v);
}
"#;

const SPACED_HEADER: &str = "__global__ void in_header(int *v) { v[0] = 1; }\nvoid from_header(int *v) { in_header<< <1, 1>> >(v); }\n";

#[test]
fn launch_brackets_with_blanks_inside_compile_as_nvcc_compiles_them() {
    let dir = tempfile::tempdir().unwrap();
    let written = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    written("launch.cuh", SPACED_HEADER);
    written("spaced.cu", SPACED);
    let tight = SPACED.replace("<< <1, 32 >> >", "<<<1, 32>>>").replace("<< <1, 32>> >", "<<<1, 32>>>").replace("<<</* grid */ 1, 32>> >", "<<<1, 32>>>");
    assert!(tight.matches("<< <").count() == 1 && !tight.contains("grid") && tight.contains("Box<Box<int>> >"));
    written("tight.cu", &tight);
    let ptx = |name: &str| {
        let out = cdpc(dir.path(), &[name, "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let spaced = ptx("spaced.cu");
    assert!(spaced.contains("LaunchDevice"), "the device-side launch is compiled:\n{spaced}");
    assert_eq!(spaced, ptx("tight.cu"));
    let out = cdpc(dir.path(), &["-dc", "spaced.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "cdpc -dc: {}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-std=c++17", "-c", "spaced.cu", "-o", "nvcc.o"]);
    }
}

/// What nvcc refuses stays refused: brackets split across lines, and `< < <`.
#[test]
fn launch_brackets_split_further_than_nvcc_takes_are_errors() {
    for (name, launch) in [("lines.cu", "k<<\n<1, 1>>\n>(v);"), ("three.cu", "k< < <1, 1> > >(v);")] {
        let source = format!("__global__ void k(int *v) {{}}\nvoid h(int *v) {{ {launch} }}\n");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), &source).unwrap();
        let out = cdpc(dir.path(), &["-dc", name, "-o", "cdpc.o"]);
        assert!(!out.status.success() && stderr(&out).contains("E1000"), "{name}: {}", stderr(&out));
        if let Some(nvcc) = nvcc() {
            let refused = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-c", name, "-o", "nvcc.o"]);
            assert!(refused.contains("expected an expression"), "{refused}");
        }
    }
}

/// A kernel with launch bounds whose callees LLVM's cost model would keep as calls (large, and
/// called from three places): ptxas refuses a bounded kernel calling a function compiled with
/// more registers than the bound, and nvcc inlines them. cdpc must too: no `.func`, and `-dc`
/// (ptxas) succeeds. Rodinia's dwt2d is the real case (bench/acceptance).
const BOUNDED: &str = r#"
template <int N> struct Window {
  float v[N];
  __device__ void load(const float *in, int at) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = in[at + i * 7] * (i + 1);
  }
  template <bool Edge> __device__ float mix(const float *in, int at) {
    load(in, at);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
      for (int j = i + 1; j < N; ++j) s += Edge ? v[i] * v[j] : v[i] - v[j] * s;
    return s;
  }
  __device__ static float run(const float *in, int at, int sx) {
    Window w;
    if (at + N * 7 >= sx) return w.mix<true>(in, at);
    if (at % 3 == 0) return w.mix<false>(in, at + 1);
    return w.mix<false>(in, at + 2) + w.mix<true>(in, at + 5);
  }
};

template <int T>
__launch_bounds__(T, 8) __global__ void bounded(const float *in, float *out, int sx) {
  out[blockIdx.x * T + threadIdx.x] = Window<40>::run(in, threadIdx.x, sx);
}
template __global__ void bounded<192>(const float *, float *, int);
"#;

#[test]
fn a_bounded_kernels_callees_are_inlined_as_nvcc_inlines_them() {
    let ptx = crate::build_common::cdpc_ptx_with("bounded.cu", BOUNDED, &["-rdc=true"]);
    assert!(ptx.contains(".minnctapersm 8") && !ptx.contains(".func"), "every callee inlined:\n{ptx}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bounded.cu"), BOUNDED).unwrap();
    let out = cdpc(dir.path(), &["-dc", "bounded.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "cdpc -dc: {}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-ptx", "bounded.cu", "-o", "nvcc.ptx"]);
        let theirs = std::fs::read_to_string(dir.path().join("nvcc.ptx")).unwrap();
        assert!(!theirs.contains(".func"), "nvcc inlines them:\n{theirs}");
    }
}

/// What nvcc's front end reads and Clang's lexer and parser did not (compiler/src/front/cuda/
/// nvcc_text.rs), and `register` in C++17: each line is from a real program nvcc compiles
/// (bench/acceptance: NVIDIA's grcuda and cuda-vmm blog samples, cuda-samples'
/// conjugateGradientMultiDeviceCG and cudaGraphsPerfScaling).
const NVCC_TEXT: &str = r#"extern "C"__global__ void saxpy(int n, float a, float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void stamp(unsigned long long *t, unsigned char *flag) {
  register unsigned long long now;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(now));
  asm volatile("{ .reg .pred %p; setp.ne.u64 %p, %1, 0; @%p st.u64 [%0], %1; }" :: "l"(t), "l"(now));
  unsigned int one = 1;
  asm volatile("st.release.sys.global.u8 [%1], %0;" ::"r"(one) "l"(flag) : "memory");
}
"#;

#[test]
fn nvccs_lexical_leniencies_compile_as_nvcc_compiles_them() {
    let ptx = crate::build_common::cdpc_ptx_with("nvcc_text.cu", NVCC_TEXT, &["-std=c++17"]);
    assert!(ptx.contains(".entry saxpy("), "extern \"C\" applies:\n{ptx}");
    assert!(ptx.contains("%globaltimer;") && ptx.contains(".reg .pred %p;"), "a `%` before a name is the PTX's own:\n{ptx}");
    assert!(ptx.contains("st.release.sys.global.u8"), "{ptx}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nvcc_text.cu"), NVCC_TEXT).unwrap();
    let out = cdpc(dir.path(), &["-dc", "-std=c++17", "nvcc_text.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "cdpc -dc: {}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-std=c++17", "-c", "nvcc_text.cu", "-o", "nvcc.o"]);
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-std=c++17", "-ptx", "nvcc_text.cu", "-o", "nvcc.ptx"]);
        let theirs = std::fs::read_to_string(dir.path().join("nvcc.ptx")).unwrap();
        assert!(theirs.contains("%globaltimer;") && theirs.contains(".entry saxpy("), "{theirs}");
    }
}

/// A Latin-1 source (Rodinia's myocyte has one: an author's name in a comment). nvcc 13.5
/// takes a byte that is not UTF-8 in a comment (and a macro never used) and refuses it in a
/// string or character literal ("invalid multibyte character sequence"), on both sides; cdpc
/// the same (CUDA C++ need not be UTF-8; the kernel language still must, E0008), its
/// diagnostics on the right line with `?` shown for the byte.
#[test]
fn a_latin1_source_compiles_where_nvcc_compiles_it() {
    let comments: &[u8] = b"// Jos\xe9, caf\xe9\n#define NEVER \"\xe9\"\n__global__ void say(char *out) {\n  out[threadIdx.x] = 'c'; /* caf\xe9 */\n}\nint main() { return 0; }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("latin1.cu"), comments).unwrap();
    for args in [&["latin1.cu", "--emit", "ptx", "-o", "cdpc.ptx"][..], &["-dc", "latin1.cu", "-o", "cdpc.o"]] {
        let out = cdpc(dir.path(), args);
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
    }
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-c", "latin1.cu", "-o", "nvcc.o"]);
    }
    let literal: &[u8] = b"// Jos\xe9\n__global__ void say(char *out) {\n  const char *s = \"caf\xe9\";\n  out[threadIdx.x] = s[threadIdx.x];\n}\n";
    std::fs::write(dir.path().join("literal.cu"), literal).unwrap();
    let out = cdpc(dir.path(), &["literal.cu", "--emit", "ptx", "-o", "cdpc.ptx"]);
    let said = stderr(&out);
    assert!(!out.status.success() && said.contains("literal.cu:3:23") && said.contains("\"caf?\"") && said.contains("invalid multibyte character sequence"), "{said}");
    if let Some(nvcc) = nvcc() {
        let refused = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-ptx", "literal.cu", "-o", "nvcc.ptx"]);
        assert!(refused.contains("literal.cu(3): error: invalid multibyte character sequence"), "{refused}");
    }
    // The kernel language's own front end still reads UTF-8 only.
    std::fs::write(dir.path().join("latin1.cdp"), b"// caf\xe9\n__global__ void k() {}\n").unwrap();
    let out = cdpc(dir.path(), &["latin1.cdp", "--emit", "ptx", "-o", "cdpc.ptx"]);
    assert!(!out.status.success() && stderr(&out).contains("E0008"), "{}", stderr(&out));
}

/// A program's own `cuda.h` in an `-I` folder (a stub some projects keep for builds without
/// CUDA): nvcc's headers include each other beside themselves and never see it, and the
/// program's `#include "cuda.h"` gets its own. Clang's CUDA wrapper includes `"cuda.h"` with
/// quotes from Clang's resource folder, so the `-I` folder's came first and the wrapper failed
/// ("cuda.h did not define CUDA_VERSION"). Now the wrapper gets CUDA's, the program its own,
/// and the dependency list names both where they lie.
#[test]
fn a_programs_own_cuda_h_in_an_include_folder_is_the_programs_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inc")).unwrap();
    std::fs::write(dir.path().join("inc/cuda.h"), "#pragma once\n#define OWN_CUDA_H 7\ninline int own() { return OWN_CUDA_H; }\n").unwrap();
    let source = "#include \"cuda.h\"\nstatic_assert(OWN_CUDA_H == 7, \"the program's own cuda.h\");\n\
                  __global__ void k(int *p) { p[0] = OWN_CUDA_H + CUDART_VERSION * 0; }\nint main() { return own() - 7; }\n";
    std::fs::write(dir.path().join("own.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["-dc", "-Iinc", "own.cu", "-o", "cdpc.o", "-MD", "-MF", "own.d"]);
    assert!(out.status.success(), "cdpc -dc: {}", stderr(&out));
    let deps = std::fs::read_to_string(dir.path().join("own.d")).unwrap();
    assert!(deps.contains("inc/cuda.h") && deps.contains("include/cuda.h") && deps.contains("include/cuda_runtime.h"), "{deps}");
    assert!(!deps.contains("lib/clang/22/include/cuda.h"), "CUDA's headers under their own names:\n{deps}");
    let out = cdpc(dir.path(), &["-Iinc", "own.cu", "--emit", "ptx", "-o", "cdpc.ptx"]);
    assert!(out.status.success(), "cdpc --emit ptx: {}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-Iinc", "-c", "own.cu", "-o", "nvcc.o"]);
    }
}

/// `__shared__ cuda::barrier` in a kernel, the form every `memcpy_async` and TMA kernel writes
/// (cuda-samples' simpleAWBarrier and globalToShmemAsyncCopy, SGEMM_CUDA's Hopper kernels):
/// nvcc leaves the construction and destruction out; Clang refuses the declaration, and cdpc
/// compiles it again as raw storage and a reference (clang/shared_storage.rs). Arrays, a
/// template's, `static`, attributes before the type; the barrier's operations reach shared
/// memory (`mbarrier.*.shared`). At namespace scope nvcc refuses it too, and so does cdpc.
const SHARED_BARRIER: &str = r#"#include <cuda/barrier>
using block_barrier = cuda::barrier<cuda::thread_scope_block>;
#pragma nv_diag_suppress static_var_with_dynamic_init
__global__ void one(float *out) {
  __shared__ block_barrier bar;
  static __shared__ __align__(16) cuda::barrier<cuda::thread_scope_block> bars[2][2];
  if (threadIdx.x == 0) { init(&bar, blockDim.x); init(&bars[1][0], blockDim.x); }
  __syncthreads();
  bar.arrive_and_wait();
  block_barrier::arrival_token token = bars[1][0].arrive();
  bars[1][0].wait(cuda::std::move(token));
  out[threadIdx.x] = sizeof(bars) / sizeof(bar);
}
template <int N> __global__ void many(float *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> b;
  if (threadIdx.x == 0) init(&b, blockDim.x * N);
  __syncthreads();
  b.arrive_and_wait();
}
template __global__ void many<3>(float *);
int main() { return 0; }
"#;

#[test]
fn a_shared_barrier_in_a_kernel_compiles_as_nvcc_compiles_it() {
    let ptx = crate::build_common::cdpc_ptx_with("shared_barrier.cu", SHARED_BARRIER, &["-std=c++17"]);
    assert!(ptx.contains("mbarrier.init.shared") && ptx.contains("mbarrier.arrive"), "{ptx}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shared_barrier.cu"), SHARED_BARRIER).unwrap();
    let out = cdpc(dir.path(), &["-dc", "-std=c++17", "shared_barrier.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "cdpc -dc: {}", stderr(&out));
    assert!(!stderr(&out).contains("W1030"), "the pragma silences it, as nvcc's warning:\n{}", stderr(&out));
    let global = "#include <cuda/barrier>\n__shared__ cuda::barrier<cuda::thread_scope_block> gbar;\n__global__ void k() { init(&gbar, 1); }\n";
    std::fs::write(dir.path().join("global.cu"), global).unwrap();
    let out = cdpc(dir.path(), &["-dc", "-std=c++17", "global.cu", "-o", "global.o"]);
    assert!(!out.status.success() && stderr(&out).contains("initialization is not supported for __shared__ variables"), "{}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-std=c++17", "-c", "shared_barrier.cu", "-o", "nvcc.o"]);
        let refused = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-std=c++17", "-c", "global.cu", "-o", "nvcc.o"]);
        assert!(refused.contains("dynamic initialization is not supported for a __shared__ variable"), "{refused}");
    }
}

/// Every dynamic-parallelism diagnostic of the kernel language (tests/ui's `e03*`/`w03*`
/// files) through both front ends: each `.cdp` file compiled as it is and as CUDA C++ (the same
/// text, which is C++ too), with the file's `// flags:`. Where the launch pipeline or cdpc's
/// reading of Clang gives the same code, it is at the same line; where the code is Clang's own
/// error for the construct (`E1000`: a launch of a `__device__` function, wrong arguments or
/// configuration, a kernel returning a value or called without a launch), the `.cu` file fails
/// too. Two compile as CUDA C++ by design: a launch in a `__host__ __device__` function (C++
/// allows it; nvcc compiles it) and `cudaGridDependencySynchronize` below sm_90 (CUDA's header
/// makes it nothing there, for nvcc as for Clang). docs/NVCC-DIALECT.md has the table.
#[test]
fn the_kernel_languages_launch_diagnostics_hold_for_cuda_cxx() {
    // File stem: the code through the `.cu` front end (`None`: it compiles).
    let expected: &[(&str, Option<&str>)] = &[
        ("e0300_launch_of_device_function", Some("E1000")),
        ("e0300_launch_through_pointer", Some("E1000")),
        ("e0301_launch_arity", Some("E1000")),
        ("e0301_launch_arity_through_pointer", Some("E1000")),
        ("e0302_launch_argument_type", Some("E1000")),
        ("e0303_launch_config_type", Some("E1000")),
        ("e0304_param_buffer_through_pointer", Some("E0304")),
        ("e0304_param_buffer_too_large", Some("E0304")),
        ("e0304_param_limit_32_bit", Some("E0304")),
        ("e0306_tail_launch_needs_v2", Some("E0306")),
        // A warning in nvcc's dialect, as nvcc's (a program nvcc builds builds).
        ("e0307_local_pointer_to_child", Some("W0317")),
        ("e0308_device_synchronize", Some("E0308")),
        ("e0309_missing_required_flag", Some("E0309")),
        ("e0310_launch_in_host_device", None),
        ("e0311_kernel_return_type", Some("E1000")),
        ("e0312_kernel_called_directly", Some("E1000")),
        ("e0312_kernel_called_through_pointer", Some("E1000")),
        ("e0313_graph_stream_misuse", Some("E0313")),
        ("e0314_graph_launch_stream", Some("E0314")),
        ("e0315_needs_newer_arch", None),
        ("w0305_param_buffer_over_4k", Some("W0305")),
        ("w0305_strict_param_limit", Some("W0305")),
        ("w0316_not_in_device_runtime_library", Some("W0316")),
    ];
    let ui = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ui");
    let mut listed: Vec<String> = std::fs::read_dir(&ui)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| (n.starts_with("e03") || n.starts_with("w03")) && n.ends_with(".cdp"))
        .map(|n| n.trim_end_matches(".cdp").to_string())
        .collect();
    listed.sort();
    let mut names: Vec<String> = expected.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    assert_eq!(listed, names, "every E03xx/W03xx ui file has its CUDA C++ expectation here");
    let dir = tempfile::tempdir().unwrap();
    // The first diagnostic's code and line, as JSON gives them.
    let first = |file: &str, flags: &[&str]| -> (bool, Option<(String, u64)>) {
        let mut args = vec![file, "--emit", "ptx", "-o", "out.ptx", "--error-format", "json"];
        args.extend_from_slice(flags);
        let out = cdpc(dir.path(), &args);
        let said = stderr(&out);
        let d = said.lines().find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok().filter(|v| v["code"].is_string()));
        (out.status.success(), d.map(|v| (v["code"].as_str().unwrap().to_string(), v["labels"][0]["line_start"].as_u64().expect("a placed diagnostic"))))
    };
    let mut elsewhere = Vec::new();
    for (stem, code) in expected {
        let text = std::fs::read_to_string(ui.join(format!("{stem}.cdp"))).unwrap();
        let flags: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("// flags:")).flat_map(str::split_whitespace).collect();
        std::fs::write(dir.path().join(format!("{stem}.cdp")), &text).unwrap();
        std::fs::write(dir.path().join(format!("{stem}.cu")), &text).unwrap();
        let (_, cdp) = first(&format!("{stem}.cdp"), &flags);
        let (compiled, cu) = first(&format!("{stem}.cu"), &flags);
        match code {
            None => assert!(compiled, "{stem}.cu compiles: {cu:?}"),
            Some(code) => {
                let (got, line) = cu.unwrap_or_else(|| panic!("{stem}.cu: no diagnostic"));
                assert_eq!(&got, code, "{stem}.cu");
                if !code.starts_with('W') {
                    assert!(!compiled || flags.contains(&"--strict-param-limit"), "{stem}.cu fails");
                }
                let (cdp_code, cdp_line) = cdp.unwrap_or_else(|| panic!("{stem}.cdp: no diagnostic"));
                if cdp_code == *code && line != cdp_line {
                    elsewhere.push(format!("{stem}: .cdp line {cdp_line}, .cu line {line}"));
                }
            }
        }
    }
    assert_eq!(elsewhere, Vec::<String>::new(), "the same line through both front ends");
}

/// An array whose size is no constant expression, with an initialiser: g++'s extension, which
/// nvcc compiles in host code (cuda-samples' cudaNvSciBufMultiplanar:
/// `cudaSurfaceObject_t surfObject[numPlanes] = {0};`) and Clang refuses; cdpc compiles the
/// file again with the array filled by a second declarator (clang/vla_init.rs). The program
/// prints what g++ makes of each array (the elements given, the rest value-initialised), and
/// cdpc's build prints the same bytes as nvcc's. A `const` array stays Clang's error with
/// cdpc's note.
const VLA_INIT: &str = r#"#include <cstdio>
struct P { int x, y; };
__global__ void k(int *o) { o[threadIdx.x] = 1; }
int main(int argc, char **argv) {
  int n = argc + 3;
  unsigned long long s[n] = {0};
  int a[n] = {7, 8}, b = 3;
  P p[n] = {{1, 2}, {3}};
  const char *names[n] = {"x"};
  double d[n] = {};
  long e[n] = {argc};
  for (int i = 0; i < n; i++)
    printf("%llu %d %d,%d %s %g %ld\n", s[i], a[i], p[i].x, p[i].y, names[i] ? names[i] : "-", d[i], e[i]);
  printf("%d\n", b);
  return 0;
}
"#;

#[test]
fn an_initialised_variable_length_array_compiles_as_gxx_compiles_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("vla.cu"), VLA_INIT).unwrap();
    let out = cdpc(dir.path(), &["vla.cu", "-o", "vla_cdpc"]);
    assert!(out.status.success(), "cdpc: {}", stderr(&out));
    assert!(stderr(&out).is_empty(), "g++ and nvcc say nothing: {}", stderr(&out));
    let printed = run(&dir.path().join("vla_cdpc"), dir.path(), &[]).stdout;
    let expected = "0 7 1,2 x 0 1\n0 8 3,0 - 0 0\n0 0 0,0 - 0 0\n0 0 0,0 - 0 0\n3\n";
    assert_eq!(String::from_utf8_lossy(&printed), expected);
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "vla.cu", "-o", "vla_nvcc"]);
        assert_eq!(run(&dir.path().join("vla_nvcc"), dir.path(), &[]).stdout, printed, "nvcc's build prints other bytes");
    }
    std::fs::write(dir.path().join("const.cu"), "int f(int n) { const int c[n] = {1}; return c[0]; }\n").unwrap();
    let out = cdpc(dir.path(), &["-dc", "const.cu", "-o", "const.o"]);
    assert!(!out.status.success() && stderr(&out).contains("variable-sized object may not be initialized") && stderr(&out).contains("g++, accepts"), "{}", stderr(&out));
}

/// The reverse of the rest: what nvcc refuses, cdpc refuses. CUDA 8's warp functions without
/// `_sync` (three files of the acceptance table: `__shfl`, `__shfl_xor`, `__shfl_down`; a fourth
/// reached ptxas through inline PTX, `vote` without `.sync`, which ptxas refuses for cdpc too) are
/// `E0903` at the call, where cdpc once compiled them with a warning; `-flegacy-warp-intrinsics`
/// asks for that (W0902, the `_sync` form over the active lanes).
#[test]
fn legacy_warp_functions_are_refused_as_nvcc_refuses_them() {
    let source = "__global__ void k(int *v) {\n  int x = v[threadIdx.x];\n  x += __shfl_xor(x, 1);\n  v[threadIdx.x] = __shfl(x, 0) + __ballot(x > 0);\n}\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["-dc", "old.cu", "-o", "old.o", "--error-format", "json"]);
    assert!(!out.status.success());
    let refused = crate::build_common::cdpc_errors(&out, "E0903");
    assert_eq!(refused.iter().map(|(line, _)| *line).collect::<Vec<_>>(), [3, 4, 4], "{}", stderr(&out));
    let out = cdpc(dir.path(), &["-dc", "-flegacy-warp-intrinsics", "old.cu", "-o", "old.o"]);
    assert!(out.status.success() && stderr(&out).contains("W0902"), "{}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        let refused = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-c", "old.cu", "-o", "nvcc.o"]);
        // The shuffles are undeclared; `__ballot` is deprecated ("not valid on compute_70 and
        // above"), and its `vote` without `.sync` is what ptxas refuses.
        let lines: Vec<u64> = crate::build_common::nvcc_errors(&refused).iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [3, 4], "{refused}");
        assert!(refused.contains("identifier \"__shfl_xor\" is undefined") && refused.contains("__ballot() is not valid on compute_70 and above"), "{refused}");
    }
}

/// nvcc preprocesses its device pass with the host compiler's `-fopenmp` too, so `_OPENMP` is
/// defined in device code (201511, g++ 12's); cdpc's device side gets the same. The program
/// links LLVM's OpenMP runtime, which Clang's host code calls (`E0805` where there is none), and
/// prints what nvcc's build prints.
#[test]
fn openmp_is_defined_on_both_sides_with_xcompiler_fopenmp() {
    let source = "#ifndef _OPENMP\n#error no _OPENMP\n#endif\n__global__ void k(int *p) { p[0] = _OPENMP; }\nint host_value() { return _OPENMP; }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("omp_macro.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["-dc", "-Xcompiler", "-fopenmp", "omp_macro.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["-Xcompiler", "-fopenmp", "omp_macro.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("201511"), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["-dc", "omp_macro.cu", "-o", "none.o"]);
    assert!(!out.status.success() && stderr(&out).contains("no _OPENMP"), "{}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-Xcompiler", "-fopenmp", "-c", "omp_macro.cu", "-o", "nvcc.o"]);
    }
}

/// `-Xcompiler -fopenmp` through a whole build: Clang's host code calls LLVM's OpenMP runtime,
/// which cdpc links in place of g++'s libgomp (`driver/program.rs`, `libomp_dir`); the program
/// prints what nvcc's build prints. Where no libomp is found (checked by pointing
/// `CDPC_LIBOMP_DIR` at an empty folder, as on a machine with GCC alone), the program still
/// builds, with `W0807` saying what to install: its regions run on one thread, `omp.h`'s
/// functions are libgomp's, and it prints nvcc's bytes too.
#[test]
fn an_openmp_program_links_llvms_runtime_and_prints_what_nvccs_prints() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("omp.cu"), OMP).unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = crate::build_common::cdpc_env(dir.path(), &["-Xcompiler", "-fopenmp", "omp.cu", "-o", "omp_serial"], &[("CDPC_LIBOMP_DIR", empty.to_str().unwrap())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning[W0807]") && stderr(&out).contains("libomp-22-dev"), "{}", stderr(&out));
    let serial = Command::new(dir.path().join("omp_serial")).env("OMP_NUM_THREADS", "3").output().unwrap();
    assert!(serial.status.success());
    assert_eq!(String::from_utf8_lossy(&serial.stdout), "3 4950\n");
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-Xcompiler", "-fopenmp", "omp.cu", "-o", "omp_nvcc0"]);
        let theirs = Command::new(dir.path().join("omp_nvcc0")).env("OMP_NUM_THREADS", "3").output().unwrap();
        assert_eq!(theirs.stdout, serial.stdout, "nvcc's build prints other bytes");
    }
    if cdpc::driver::program::libomp_dir().is_err() {
        return println!("skipped: no libomp (libomp-22-dev) to link with");
    }
    let out = cdpc(dir.path(), &["-Xcompiler", "-fopenmp", "omp.cu", "-o", "omp_cdpc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = Command::new(dir.path().join("omp_cdpc")).env("OMP_NUM_THREADS", "3").output().unwrap();
    assert!(printed.status.success());
    assert_eq!(String::from_utf8_lossy(&printed.stdout), "3 4950\n");
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "-Xcompiler", "-fopenmp", "omp.cu", "-o", "omp_nvcc"]);
        let theirs = Command::new(dir.path().join("omp_nvcc")).env("OMP_NUM_THREADS", "3").output().unwrap();
        assert_eq!(theirs.stdout, printed.stdout, "nvcc's build prints other bytes");
    }
}

/// A kernel's assignment to a `__constant__` variable itself: nvcc refuses it ("expression must
/// be a modifiable lvalue"); Clang accepted it and its optimiser dropped the store, so the
/// program silently did not write (found in the acceptance table's second corpus). Now an error
/// at the write (clang/shim.cpp, `NvccRules`). An element of a `__constant__` array, a
/// member of a `__constant__` struct and a write through a pointer one holds are compiled by
/// nvcc, and by cdpc (measured with nvcc 13.5).
#[test]
fn a_write_to_a_constant_variable_in_device_code_is_refused_as_nvcc_refuses_it() {
    let head = "__constant__ int c;\n__constant__ int arr[4];\nstruct S { int x; int *p; };\n__constant__ S s;\n__constant__ int *ptr;\n";
    let dir = tempfile::tempdir().unwrap();
    for (name, body, refused) in [
        ("assign.cu", "__global__ void w(int i) {\n  c = 42;\n}\n", true),
        ("compound.cu", "__global__ void w(int i) {\n  c += i;\n}\n", true),
        ("element.cu", "__global__ void w(int i) {\n  arr[i] = 1; s.x = 2; s.p[0] = 3; ptr[i] = 4;\n}\n", false),
        ("read.cu", "__global__ void w(int *o) {\n  o[0] = c + arr[1] + s.x;\n}\n", false),
    ] {
        std::fs::write(dir.path().join(name), format!("{head}{body}")).unwrap();
        let out = cdpc(dir.path(), &["-dc", name, "-o", "cdpc.o"]);
        if refused {
            assert!(!out.status.success() && stderr(&out).contains("cannot write the __constant__ variable 'c'") && stderr(&out).contains(&format!("{name}:7:")), "{name}: {}", stderr(&out));
        } else {
            assert!(out.status.success(), "{name}: {}", stderr(&out));
        }
        if let Some(nvcc) = nvcc() {
            let args = ["-arch=sm_90", "-rdc=true", "-c", name, "-o", "nvcc.o"];
            if refused {
                let theirs = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &args);
                assert!(theirs.contains(&format!("{name}(7): error: expression must be a modifiable lvalue")), "{theirs}");
            } else {
                run(&nvcc, dir.path(), &args);
            }
        }
    }
}

/// The lines of `file` that `said` (cdpc's or nvcc's stderr) gives an error at: cdpc's
/// `error[...]` followed by its place `┌─ file:LINE:COLUMN`, nvcc's `file(LINE): error` and its
/// host compiler's `file:LINE:COLUMN: error`.
fn error_lines(said: &str, file: &str) -> Vec<u32> {
    let number = |rest: &str| rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse::<u32>().ok());
    let (mut lines, mut in_error) = (Vec::new(), false);
    for line in said.lines() {
        if line.starts_with("error") || line.starts_with("warning") {
            in_error = line.starts_with("error[");
        }
        if let Some((_, rest)) = line.split_once(&format!("┌─ {file}:")).filter(|_| in_error) {
            lines.extend(number(rest));
        }
        if let Some((_, rest)) = line.split_once(&format!("{file}(")).filter(|(_, r)| r.contains("): error")) {
            lines.extend(number(rest));
        }
        // The host compiler's, through nvcc (`#error`): `file:LINE:COLUMN: error:`.
        if let Some(rest) = line.strip_prefix(&format!("{file}:")).filter(|r| r.contains(": error")) {
            lines.extend(number(rest));
        }
    }
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// What a file's compilation refuses, cdpc's (`-dc`) and nvcc's (`-rdc=true -c`), both with
/// `more` options: the lines of its errors, asserted to be `expected` (nvcc 13.5's, measured);
/// nvcc's own are checked where it is there.
fn refused_at(dir: &Path, name: &str, source: &str, more: &[&str], expected: &[u32]) -> String {
    std::fs::write(dir.join(name), source).unwrap();
    let mut args = vec!["-std=c++17", "-dc", name, "-o", "cdpc.o"];
    args.extend(more);
    let out = cdpc(dir, &args);
    let said = stderr(&out);
    assert_eq!(out.status.success(), expected.is_empty(), "{name} {more:?}: {said}");
    assert_eq!(error_lines(&said, name), expected, "{name} {more:?}: {said}");
    if let Some(nvcc) = nvcc() {
        let mut args = vec!["-std=c++17", "-arch=sm_90", "-rdc=true", "-c", name, "-o", "nvcc.o"];
        args.extend(more);
        if expected.is_empty() {
            run(&nvcc, dir, &args);
        } else {
            let theirs = crate::build_common::nvcc_refusal(&nvcc, dir, &args);
            assert_eq!(error_lines(&theirs, name), expected, "nvcc, {name} {more:?}: {theirs}");
        }
    }
    said
}

/// A `constexpr` function without `__device__` called from device code: nvcc's error without
/// `--expt-relaxed-constexpr` (Clang makes such a function `__host__ __device__` and compiled
/// every one), in a constant expression too, and its warning from a `__host__ __device__`
/// function; not for constructors, lambdas, `std::move`, `std::forward`, `std::initializer_list`
/// or a template never instantiated (clang/shim.cpp, `NvccRules`; measured with nvcc 13.5). With
/// the option every file compiles, and `__CUDACC_RELAXED_CONSTEXPR__` is defined, as nvcc does.
#[test]
fn a_constexpr_host_function_called_from_device_code_is_refused_as_nvcc_refuses_it() {
    let head = "#include <algorithm>\n#include <limits>\n#include <utility>\n#include <initializer_list>\n\
constexpr int twice(int x) { return 2 * x; }\n\
struct P { int v; constexpr int get() const { return v; } constexpr P operator+(P o) const { return P{v + o.v}; } };\n\
struct R { constexpr R(int v) : v(twice(v)) {} int v; };\n\
struct D { constexpr D() = default; int v = 3; };\n\
template <class T> constexpr T sq(T x) { return x * x; }\n\
__host__ __device__ constexpr int both(int x) { return x + 1; }\n";
    // Line 11 onwards is each file's own. nvcc reports a constructor's call in a later phase,
    // and only where the file has no other such error: a file here has one kind or the other.
    let cases: [(&str, &str, &[u32]); 11] = [
        ("call.cu", "__device__ int f(int i) { return twice(i); }\n", &[11]),
        ("constant.cu", "__global__ void k(int *o) {\n  constexpr int c = twice(3);\n  o[0] = c;\n}\n", &[12]),
        ("library.cu", "__device__ int f(int i) {\n  return std::max(i, 3)\n    + std::numeric_limits<int>::max();\n}\n", &[12, 13]),
        ("member.cu", "__device__ int f(int i) {\n  P p{i};\n  return (p + p).get();\n}\n", &[13]),
        ("constructor.cu", "__global__ void k(int *o) {\n  R r(o[0]);\n  o[1] = r.v;\n}\n", &[12]),
        ("instance.cu", "template <class T> __device__ T g(T x) { return sq(x); }\n__global__ void k(float *o) { o[0] = g(o[1]); }\n", &[11]),
        ("unused_template.cu", "template <class T> __device__ T g(T x) { return sq(x); }\n", &[]),
        ("allowed.cu", "__global__ void k(int *o) {\n  D p;\n  auto l = [](int x) { return x + 1; };\n  std::initializer_list<int> il = {1, 2};\n  int m = std::move(o[1]) + std::forward<int>(o[2]);\n  o[0] = p.v + l(m) + il.size() + both(m);\n}\n", &[]),
        ("host_device.cu", "__host__ __device__ int hd(int i) { return twice(i); }\n__global__ void k(int *o) { o[0] = hd(o[1]); }\n", &[]),
        ("host.cu", "int h(int i) { return twice(i) + std::max(i, 2); }\n", &[]),
        ("lambda_body.cu", "__global__ void k(int *o) {\n  auto l = [](int x) { return twice(x); };\n  o[0] = l(o[1]);\n}\n", &[12]),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, body, expected) in cases {
        let source = format!("{head}{body}");
        let said = refused_at(dir.path(), name, &source, &[], expected);
        if !expected.is_empty() {
            assert!(said.contains("--expt-relaxed-constexpr"), "{name}: the message names the option: {said}");
        }
        if name == "host_device.cu" {
            assert!(said.contains("warning") && said.contains("host_device.cu:11:") && said.contains("'twice'"), "{name}: nvcc's warning: {said}");
        }
        refused_at(dir.path(), name, &source, &["--expt-relaxed-constexpr"], &[]);
    }
    let probe = "#ifndef __CUDACC_RELAXED_CONSTEXPR__\n#error not relaxed\n#endif\n__global__ void k() {}\n";
    refused_at(dir.path(), "macro.cu", probe, &["--expt-relaxed-constexpr"], &[]);
    refused_at(dir.path(), "macro.cu", probe, &[], &[2]);
}

/// The same refusal where the calling kernel is in a header of the program's that the file's
/// precompiled preamble holds: refused by a compilation that makes the preamble and by one that
/// reads it from a warm cache.
#[test]
fn a_constexpr_host_call_in_a_preamble_header_is_refused_cold_and_warm() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.h"), "#pragma once\nconstexpr int twice(int x) { return 2 * x; }\n__global__ void k(int *o) { o[0] = twice(o[1]); }\n").unwrap();
    std::fs::write(dir.path().join("a.cu"), "#include \"k.h\"\n__global__ void other(int *o) { o[0] = 1; }\n").unwrap();
    let cache = dir.path().join("cache");
    for round in ["cold", "warm", "warm again"] {
        let out = crate::build_common::cdpc_env(dir.path(), &["a.cu", "--emit", "ptx", "-o", "a.ptx"], &[("CDPC_CACHE_DIR", cache.to_str().unwrap()), ("CDPC_CACHE_BACKGROUND", "0")]);
        assert!(!out.status.success() && stderr(&out).contains("k.h:3:") && stderr(&out).contains("'twice'"), "{round}: {}", stderr(&out));
        assert!(!dir.path().join("a.ptx").exists(), "{round}: no output");
    }
}

/// A lambda annotated `__device__` or `__host__` (an extended lambda) needs nvcc's
/// `--extended-lambda`, wherever it is; with the option it compiles, `__CUDACC_EXTENDED_LAMBDA__`
/// is defined as nvcc defines it, and CCCL's `cuda::std::invoke_result` (which asks nvcc's
/// closure traits then) still compiles.
#[test]
fn an_extended_lambda_needs_the_option_as_nvcc_says() {
    let source = "#include <cuda/std/functional>\n\
template <class F> __global__ void apply(F f, int *o) { o[threadIdx.x] = f(threadIdx.x); }\n\
void launch(int *o) {\n  auto f = [] __device__ (int x) { return 2 * x; };\n  apply<<<1, 32>>>(f, o);\n}\n\
void launch2(int *o) {\n  auto g = [] __host__ __device__ (int x) -> int { return x; };\n  using R = cuda::std::invoke_result_t<decltype(g), int>;\n  apply<<<1, 32>>>(g, o);\n  (void)sizeof(R);\n}\n\
__global__ void k(int *o) {\n  auto h = [] (int x) { return x; };\n  o[0] = h(1);\n}\n";
    let dir = tempfile::tempdir().unwrap();
    let said = refused_at(dir.path(), "lambda.cu", source, &[], &[4, 8]);
    assert!(said.contains("--extended-lambda"), "{said}");
    refused_at(dir.path(), "lambda.cu", source, &["--extended-lambda"], &[]);
    refused_at(dir.path(), "lambda.cu", source, &["--expt-extended-lambda"], &[]);
    let probe = "#ifndef __CUDACC_EXTENDED_LAMBDA__\n#error not extended\n#endif\n__global__ void k() {}\n";
    refused_at(dir.path(), "macro.cu", probe, &["--extended-lambda"], &[]);
}

/// `new` and `delete` in device code under `--extended-lambda`, as nvcc compiles them: the
/// option's `cuda_runtime.h` includes `<functional>`, whose `<new>` (Clang's wrapper of it) must
/// not define the device `operator new` before device code's `malloc` is declared ("reference
/// to __host__ function 'malloc' in __device__ function"). With no precompiled header (a cold
/// cache), a header made in the foreground, and one read back.
#[test]
fn device_new_compiles_with_extended_lambdas_cold_and_warm() {
    let source = "struct Node { int v; Node *next; };\n\
__global__ void child(int *out, Node *n) { out[threadIdx.x] = n->v; }\n\
__global__ void parent(int *out) { Node *n = new Node{7, nullptr}; child<<<1, 1>>>(out, n); }\n\
__global__ void cleanup(Node *n) { delete n; int *a = new int[4]; delete[] a; }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("new.cu"), source).unwrap();
    let cache = dir.path().join("cache");
    for (round, background) in [("cold", "1"), ("made in the foreground", "0"), ("warm", "0")] {
        let args = ["-std=c++17", "--extended-lambda", "-dc", "new.cu", "-o", "new.o"];
        let out = crate::build_common::cdpc_env(dir.path(), &args, &[("CDPC_CACHE_DIR", cache.to_str().unwrap()), ("CDPC_CACHE_BACKGROUND", background)]);
        assert!(out.status.success(), "{round}: {}", stderr(&out));
    }
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-std=c++17", "--extended-lambda", "-arch=sm_90", "-rdc=true", "-c", "new.cu", "-o", "nvcc.o"]);
    }
}

/// `using namespace std;` and device code's `malloc`/`free`, unqualified and as `std::`, as
/// NPSLab's show-me-dynamic-parallelism writes them: nvcc's `std::malloc` is `::malloc`, where
/// Clang's wrapper made it a function of its own and the unqualified call ambiguous.
const USING_STD_MALLOC: &str = r#"#include <cstdlib>
#include <vector>
using namespace std;

__global__ void child(unsigned int *buffer, int n) { buffer[threadIdx.x % n] = threadIdx.x; }

__global__ void parent(int n, unsigned int **out) {
  unsigned int *buffer = (unsigned int *)malloc(sizeof(unsigned int) * n);
  child<<<1, n>>>(buffer, n);
  out[blockIdx.x] = buffer;
  void *scratch = std::malloc(16);
  std::free(scratch);
  if (n < 0) free(buffer);
}

int host_side() { vector<int> v(3); void *p = malloc(4); free(p); return (int)v.size(); }
"#;

#[test]
fn device_malloc_under_using_namespace_std_compiles_as_nvcc_compiles_it() {
    compiles_like_nvcc("using_std_malloc.cu", USING_STD_MALLOC, &[]);
    let ptx = crate::build_common::cdpc_ptx_with("using_std_malloc.cu", USING_STD_MALLOC, &[]);
    // The device runtime's own `malloc` and `free`, as nvcc calls them.
    for name in ["malloc", "free"] {
        assert!(ptx.lines().any(|l| l.starts_with(".extern .func") && (l.ends_with(&format!(" {name}")) || l.contains(&format!(" {name}(")))), "{name}: {ptx}");
    }
}

/// Everyday macro names on the command line: nvcc's compilation reads no header that uses them,
/// while Clang's wrapper includes CUDA's `cuda.h` (`size_t N`), cuRAND's
/// `curand_mtgp32_kernel.h` (`X`, `Y`, `k`, `seed`, `num`, `mean`), Clang's own headers
/// (`template <int N>`) and cdpc's additions (`A`, `B`, `E`, `F`, `S`): each of these names
/// stopped cdpc with an error in one of those headers (docs/NVCC-DIALECT.md). The file uses
/// each macro, so the values must still reach it, on both sides. (A file that includes `cuda.h`
/// or cuRAND's headers itself is refused by nvcc with these macros too.)
const COMMAND_LINE_MACROS: &str = r#"#include <cstdio>

__global__ void child(int *out) { out[threadIdx.x] = N + X + Y + A + B + E + F + S + seed; }

__global__ void parent(int *out) { child<<<1, 32>>>(out); }

int main() {
  std::printf("%d %d\n", N, k + num + mean);
  return 0;
}
"#;

#[test]
fn everyday_macro_names_on_the_command_line_compile_as_nvcc_compiles_them() {
    let macros = ["-DN=1024", "-DX=1", "-DY=2", "-DA=3", "-DB=4", "-DE=5", "-DF=6", "-DS=7", "-Dk=8", "-Dseed=9", "-Dnum=10", "-Dmean=11"];
    compiles_like_nvcc("command_line_macros.cu", COMMAND_LINE_MACROS, &macros);
    // The sum of the device side's macros, 1,061, is in the child's code.
    let ptx = crate::build_common::cdpc_ptx_with("command_line_macros.cu", COMMAND_LINE_MACROS, &macros);
    assert!(ptx.contains(", 1061;"), "{ptx}");
    // A macro that CUDA's hidden headers test stays theirs too: with
    // `CUDA_API_PER_THREAD_DEFAULT_STREAM`, cuda.h names the per-thread entry points.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ptds.cu"), "#include <cuda.h>\nint main() { return cuStreamQuery == cuStreamQuery_ptsz ? 0 : 1; }\n").unwrap();
    let out = cdpc(dir.path(), &["-dc", "ptds.cu", "-o", "ptds.o", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM", "-DCDPC_TEST_HIDDEN=1"]);
    assert!(out.status.success(), "cdpc -dc ptds.cu: {}", stderr(&out));
    // cdpc's `-E` output (ccache's preprocessor mode) keeps the hidden headers' words as they
    // are: compiled with the same options (the macros again), it is the file's PTX and object.
    std::fs::write(dir.path().join("macros.cu"), COMMAND_LINE_MACROS).unwrap();
    let with = |args: &[&str]| -> Vec<String> { args.iter().map(|s| s.to_string()).chain(macros.iter().map(|s| s.to_string())).collect() };
    for (args, outputs) in [(&["--emit", "ptx"][..], ["file.ptx", "pre.ptx"]), (&["-dc"][..], ["file.o", "pre.o"])] {
        let e = cdpc(dir.path(), &with(&["-E", "macros.cu", "-o", "macros.pre.cu"]).iter().map(String::as_str).collect::<Vec<_>>());
        assert!(e.status.success(), "cdpc -E: {}", stderr(&e));
        for (input, output) in [("macros.cu", outputs[0]), ("macros.pre.cu", outputs[1])] {
            let mut all = with(args);
            all.extend([input.to_string(), "-o".into(), output.into()]);
            let out = cdpc(dir.path(), &all.iter().map(String::as_str).collect::<Vec<_>>());
            assert!(out.status.success(), "cdpc {all:?}: {}", stderr(&out));
        }
        if outputs[0].ends_with(".ptx") {
            assert_eq!(std::fs::read_to_string(dir.path().join(outputs[0])).unwrap(), std::fs::read_to_string(dir.path().join(outputs[1])).unwrap());
        }
    }
}

/// A pragma made by an object-like macro, alone on its line before a loop, as a
/// parallel-primitives library writes its unrolling for the device pass only. `unroll 1` keeps
/// the loop, which LLVM and nvcc unroll without it (four loads): one load means the pragma held.
const PRAGMA_MACRO: &str = r#"#ifdef __CUDA_ARCH__
#define PRAGMA_NO_UNROLL #pragma unroll 1
#else
#define PRAGMA_NO_UNROLL
#endif
__global__ void sum4(const int *p, int *out) {
    int s = 0;
    PRAGMA_NO_UNROLL
    for (int i = 0; i < 4; ++i) s += p[i * blockDim.x];
    *out = s;
}
"#;

/// Host code that declares the built-in variables with CUDA's types for its host pass, as some
/// code bases do; the kernel reads them.
const BUILTIN_REDECLARED: &str = r#"#ifndef __CUDA_ARCH__
extern const dim3 blockDim;
extern const uint3 threadIdx;
extern const dim3 gridDim;
extern const uint3 blockIdx;
#endif
__global__ void index(int *p) { p[blockIdx.x * blockDim.x + threadIdx.x] = gridDim.x; }
"#;

#[test]
fn a_pragma_from_a_macro_and_redeclared_built_ins_compile_as_nvcc_compiles_them() {
    compiles_like_nvcc("pragma_macro.cu", PRAGMA_MACRO, &[]);
    compiles_like_nvcc("builtin_redeclared.cu", BUILTIN_REDECLARED, &[]);
    let loads = |ptx: &str| ptx.lines().filter(|l| l.trim_start().starts_with("ld.global")).count();
    let ours = crate::build_common::cdpc_ptx_with("pragma_macro.cu", PRAGMA_MACRO, &["-fno-launch-optimizations"]);
    assert_eq!(loads(&ours), 1, "the loop kept:\n{ours}");
    let plain = crate::build_common::cdpc_ptx_with("unrolled.cu", &PRAGMA_MACRO.replace("    PRAGMA_NO_UNROLL\n", ""), &["-fno-launch-optimizations"]);
    assert_eq!(loads(&plain), 4, "without the pragma the loop is unrolled:\n{plain}");
    if let Some(theirs) = crate::build_common::nvcc_ptx(PRAGMA_MACRO) {
        assert_eq!(loads(&theirs), 1, "nvcc keeps the loop:\n{theirs}");
    }
}

/// A narrowing conversion in a braced initializer: nvcc warns ("invalid narrowing conversion",
/// #2361-D) in a kernel, and so does its host compiler (g++) where host code narrows a
/// variable's value, and both compile; g++ refuses host code that narrows a constant, so nvcc
/// does. SHOC's neural-network benchmark has the kernel's line.
#[test]
fn a_narrowing_initializer_is_a_warning_where_nvccs_is() {
    let source = "#include <cstdio>\n__global__ void k(int *o) { int y[2] = {0.0, 1.5}; o[threadIdx.x] = y[threadIdx.x & 1]; }\nint main() { double d = 2.5; int y[2] = {1, d}; printf(\"%d\\n\", y[0] + y[1]); }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("narrow.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["narrow.cu", "-o", "narrow_cdpc"]);
    assert!(out.status.success(), "cdpc: {}", stderr(&out));
    assert!(stderr(&out).contains("warning") && stderr(&out).contains("narrowed"), "a warning as nvcc's: {}", stderr(&out));
    let printed = run(&dir.path().join("narrow_cdpc"), dir.path(), &[]).stdout;
    assert_eq!(String::from_utf8_lossy(&printed), "3\n");
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "narrow.cu", "-o", "narrow_nvcc"]);
        assert_eq!(run(&dir.path().join("narrow_nvcc"), dir.path(), &[]).stdout, printed, "nvcc's build prints other bytes");
    }
    let constant = "int host() { int y[2] = {0.0, 1.5}; return y[1]; }\n";
    std::fs::write(dir.path().join("constant.cu"), constant).unwrap();
    let out = cdpc(dir.path(), &["-dc", "constant.cu", "-o", "constant.o"]);
    assert!(!out.status.success() && stderr(&out).contains("narrowed"), "g++ refuses a host constant that narrows: {}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        let refused = Command::new(&nvcc).current_dir(dir.path()).args(["-arch=sm_90", "-dc", "constant.cu", "-o", "n.o"]).output().unwrap();
        assert!(!refused.status.success(), "nvcc refuses constant.cu too");
    }
}

/// A helper that exists as a `__device__` function only where `__CUDA_ARCH__` is defined, the
/// host side having a macro of the same name, called from host functions and a host variable's
/// initializer (ccminer's `cuda_swab64`, `ROTL64`, `__funnelshift_r` in five of its files):
/// nvcc's device pass does not look at calls from host code, so nvcc compiles it; Clang's
/// device pass refused each call ("call to __device__ function from __host__ function"). The
/// program prints what nvcc's build prints. A real call from host code to device code is still
/// refused (the host pass sees it), as is any other error of host code that only the device
/// pass sees, both as nvcc refuses them.
#[test]
fn host_code_calling_a_device_only_helper_compiles_as_nvcc_compiles_it() {
    let source = r#"#include <cstdio>
#include <cstdint>
#ifdef __CUDA_ARCH__
__device__ __forceinline__ uint32_t swab32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }
#else
#define swab32(x) __builtin_bswap32(x)
#endif
__constant__ uint32_t c_key[2];
static const uint32_t host_key[2] = {swab32(1u), swab32(2u)};
__global__ void k(uint32_t *o) { o[threadIdx.x] = swab32(c_key[threadIdx.x & 1]); }
void set_key(const uint32_t *in) {
  uint32_t t[2];
  for (int i = 0; i < 2; i++) t[i] = swab32(in[i]);
  cudaMemcpyToSymbol(c_key, t, sizeof t);
}
int main() {
  uint32_t in[2] = {host_key[0], host_key[1]};
  printf("%08x %08x\n", swab32(in[0]), host_key[1]);
  if (in[0] == 0) set_key(in);
  return 0;
}
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("swab.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["swab.cu", "-o", "swab_cdpc"]);
    assert!(out.status.success(), "cdpc: {}", stderr(&out));
    assert!(stderr(&out).is_empty(), "nvcc says nothing: {}", stderr(&out));
    let printed = run(&dir.path().join("swab_cdpc"), dir.path(), &[]).stdout;
    assert_eq!(String::from_utf8_lossy(&printed), "00000001 02000000\n");
    let ptx = crate::build_common::cdpc_ptx_with("swab.cu", source, &[]);
    assert!(ptx.contains("prmt.b32"), "the kernel's swab32 is the device helper's:\n{ptx}");
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-arch=sm_90", "swab.cu", "-o", "swab_nvcc"]);
        assert_eq!(run(&dir.path().join("swab_nvcc"), dir.path(), &[]).stdout, printed, "nvcc's build prints other bytes");
    }
    for (name, source, said) in [
        ("real.cu", "__device__ int dev() { return 1; }\nint host() { return dev(); }\n", "call to __device__ function from __host__ function"),
        ("other.cu", "int host() {\n#ifdef __CUDA_ARCH__\n  return undeclared_thing;\n#else\n  return 0;\n#endif\n}\n", "undeclared identifier 'undeclared_thing'"),
    ] {
        std::fs::write(dir.path().join(name), source).unwrap();
        let out = cdpc(dir.path(), &["-dc", name, "-o", "x.o"]);
        assert!(!out.status.success() && stderr(&out).contains(said), "{name}: {}", stderr(&out));
        assert!(!dir.path().join("x.o").exists(), "{name}: no output on failure");
        if let Some(nvcc) = nvcc() {
            let refused = Command::new(&nvcc).current_dir(dir.path()).args(["-arch=sm_90", "-dc", name, "-o", "n.o"]).output().unwrap();
            assert!(!refused.status.success(), "nvcc refuses {name} too");
        }
    }
}

/// A braced list assigned to `__half2` or `__nv_bfloat162` in device code, `x = {};` or
/// `x = {a, b};` (HeCBench's quant3MatMul): nvcc's front end takes the copy assignment where
/// Clang found `operator=` for `const T &`, `const T &&` and the raw type equally good; cdpc
/// takes it too (clang/nvcc_text.rs, rule 7), and the kernels store what nvcc's store, a list
/// of one (the raw assignment) and `{raw}` included. `__half` and `__nv_bfloat16` are refused,
/// as nvcc refuses them, and so are host and `__host__ __device__` code, which nvcc's host
/// compiler refuses as ambiguous: `E1031`, whose spelling both compilers take.
#[test]
fn a_braced_list_assigned_to_a_half_pair_compiles_as_nvcc_compiles_it() {
    let source = r#"#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ half2 zero() { half2 x; x = {}; return x; }
template <class T, class H> __device__ T pair(H v) { T x; x = {v, v}; return x; }
__global__ void k(unsigned *o, __half2_raw r) {
  const __half h = __half_raw{0x4400};
  half2 x = __half2_raw{7, 7};
  x = {}; o[0] = *(unsigned *)&x;
  x = {h, h}; o[1] = *(unsigned *)&x;
  x = {1, 2}; o[2] = *(unsigned *)&x;
  x = {h}; o[3] = *(unsigned *)&x;
  x = {1}; o[4] = *(unsigned *)&x;
  x = {r}; o[5] = *(unsigned *)&x;
  __nv_bfloat162 y;
  y = {}; o[6] = *(unsigned *)&y;
  y = {__nv_bfloat16_raw{0x4080}, __nv_bfloat16_raw{0x4040}}; o[7] = *(unsigned *)&y;
  x = zero(); o[8] = *(unsigned *)&x;
  y = pair<__nv_bfloat162>(__nv_bfloat16(__nv_bfloat16_raw{0x3f80})); o[9] = *(unsigned *)&y;
}
"#;
    compiles_like_nvcc("half_pairs.cu", source, &[]);
    let ptx = crate::build_common::cdpc_ptx("half_pairs.cu", source);
    // The constants stored: `{}` (0), `{h, h}` (0x44004400), `{1}` (the raw assignment's bits,
    // 1), the bf16 pairs (0x40404080, 0x3f803f80): as nvcc's PTX stores them.
    for stored in ["[%rd2], 0;", "1140868096;", "+16], 1;", "1077952640;", "1065369472;"] {
        assert!(ptx.contains(stored), "{stored}:\n{ptx}");
    }
    if let Some(theirs) = crate::build_common::nvcc_ptx(source) {
        for constant in ["1140868096", "1077952640", "cvt.rn.f16.s32", "cvt.rzi.u16.f16"] {
            assert!(theirs.contains(constant) && ptx.contains(constant), "{constant}: nvcc's\n{theirs}\ncdpc's\n{ptx}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    // One file each: cdpc's device side refuses host code before its host side runs.
    for (name, code) in
        [("both.cu", "__host__ __device__ half2 both() { half2 x; x = {}; return x; }\n"), ("host.cu", "__nv_bfloat162 host(__nv_bfloat16 v) { __nv_bfloat162 y; y = {v, v}; return y; }\n")]
    {
        let said = refused_at(dir.path(), name, &format!("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n{code}"), &[], &[3]);
        assert!(said.contains("error[E1031]") && said.contains("{a, b};`"), "{said}");
    }
    let singles = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n__global__ void k(__half *a, __nv_bfloat16 *b) {\n  __half z; z = {}; *a = z;\n  __nv_bfloat16 w; w = {}; *b = w;\n}\n";
    let said = refused_at(dir.path(), "singles.cu", singles, &[], &[4, 5]);
    assert!(!said.contains("E1031"), "{said}");
    let named = "#include <cuda_fp16.h>\n__host__ __device__ half2 both(__half h) { half2 x; x = half2{}; x = half2{h, h}; return x; }\n";
    compiles_like_nvcc("named.cu", named, &[]);
}

/// A `__device__` lambda capturing an object whose copy constructor is host-only, copied in
/// device code (gunrock's copy_ctor experiment, where Thrust copies it): nvcc copies the lambda
/// without the capture's copy constructor (warning #20011-D) and compiles; Clang's copy of the
/// lambda calls it, a host function, and refuses: `E1032`, at the copy, with the lambda
/// labelled. Capturing what the lambda uses compiles with both.
#[test]
fn a_device_lambda_copied_with_a_host_only_capture_is_e1032() {
    let head = r#"struct Holder {
  Holder() {}
  Holder(const Holder &other) : value(other.value) {}
  __host__ __device__ int get() const { return value; }
  int value = 0;
};
template <class F> __device__ int copy_and_call(const F &f) {
  F copy = f;
  return copy(1);
}
template <class F> __global__ void apply(F f, int *out) { *out = copy_and_call(f); }
"#;
    let refused = format!("{head}void launch(Holder h, int *out) {{\n  auto op = [=] __device__(int i) {{ return h.get() + i; }};\n  apply<<<1, 1>>>(op, out);\n}}\n");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lambda.cu"), &refused).unwrap();
    let out = cdpc(dir.path(), &["-std=c++17", "--extended-lambda", "-dc", "lambda.cu", "-o", "cdpc.o"]);
    let said = stderr(&out);
    assert!(!out.status.success() && said.contains("error[E1032]") && said.contains("#20011-D"), "{said}");
    assert_eq!(error_lines(&said, "lambda.cu"), [8], "{said}");
    if let Some(nvcc) = nvcc() {
        let out = run(&nvcc, dir.path(), &["-std=c++17", "-arch=sm_90", "-rdc=true", "--extended-lambda", "-c", "lambda.cu", "-o", "nvcc.o"]);
        assert!(stderr(&out).contains("20011"), "nvcc warns: {}", stderr(&out));
    }
    let captured = format!("{head}void launch(Holder h, int *out) {{\n  int value = h.get();\n  auto op = [=] __device__(int i) {{ return value + i; }};\n  apply<<<1, 1>>>(op, out);\n}}\n");
    compiles_like_nvcc("captured.cu", &captured, &["--extended-lambda"]);
}

/// CUTLASS's `config.h` defines its macros of SM100 and later only where `CUTLASS_CLANG_CUDA`
/// is not set, which its `platform.h` sets wherever `__clang__` and `__CUDA__` are (its CUDA
/// example 87c declares a type under such a macro and uses it outside): nvcc compiles it, cdpc's
/// Clang does not, `E1033` at the use with the declaration labelled. Used only under the same
/// condition, the name compiles with both.
#[test]
fn a_name_cutlass_declares_for_nvcc_alone_is_e1033() {
    let config = "#if defined(__clang__) && defined(__CUDA__)\n#define CUTLASS_CLANG_CUDA 1\n#endif\n\
#if !CUTLASS_CLANG_CUDA && (__CUDACC_VER_MAJOR__ >= 13)\n#define CUTLASS_ARCH_MMA_SM120_SUPPORTED 1\n#endif\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.h"), config).unwrap();
    let body = "#include \"config.h\"\n#if defined(CUTLASS_ARCH_MMA_SM120_SUPPORTED)\nusing ProblemShape = int;\n#endif\n";
    let refused = format!("{body}__global__ void k(int *out) {{ *out = sizeof(ProblemShape); }}\n");
    std::fs::write(dir.path().join("sm120.cu"), &refused).unwrap();
    let out = cdpc(dir.path(), &["-std=c++17", "-dc", "sm120.cu", "-o", "cdpc.o"]);
    let said = stderr(&out);
    assert!(!out.status.success() && said.contains("error[E1033]") && said.contains("CUTLASS_CLANG_CUDA"), "{said}");
    assert_eq!(error_lines(&said, "sm120.cu"), [5], "{said}");
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-std=c++17", "-arch=sm_90", "-rdc=true", "-c", "sm120.cu", "-o", "nvcc.o"]);
    }
    let guarded = format!("{body}#if defined(CUTLASS_ARCH_MMA_SM120_SUPPORTED)\n__global__ void k(int *out) {{ *out = sizeof(ProblemShape); }}\n#endif\n");
    std::fs::write(dir.path().join("guarded.cu"), &guarded).unwrap();
    let out = cdpc(dir.path(), &["-std=c++17", "-dc", "guarded.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-std=c++17", "-arch=sm_90", "-rdc=true", "-c", "guarded.cu", "-o", "nvcc.o"]);
    }
}

/// A program sees the include guard of `curand.h` or `cuda.h` only once it includes the header,
/// as with nvcc, though Clang's CUDA wrapper reads both first (`front/cuda/nvcc_text.rs`, rule
/// 8): NVIDIA's `helper_cuda.h` compiles a `static` function for each library header it finds
/// so, and `-Xcompiler -Wall,-Werror` failed on the unused ones where nvcc builds.
#[test]
fn headers_only_clangs_wrapper_reads_are_not_included_for_the_program() {
    const GUARDS: &str = r#"#include <cstdio>
#if defined(CURAND_H_) || defined(__cuda_cuda_h__) || defined(CURAND_MTGP32_H) || defined(CURAND_MTGP32_KERNEL_H)
#error "a header the program did not include"
#endif
static const char *status_name(int s) { return s ? "error" : "success"; }
#include <curand.h>
#include <cuda.h>
#include <curand_kernel.h>
#if !defined(CURAND_H_) || !defined(__cuda_cuda_h__)
#error "the program's own includes"
#endif
__global__ void seed(curandState *s, unsigned long long n) { curand_init(n, threadIdx.x, 0, &s[threadIdx.x]); }
int main() {
  curandStatus_t st = CURAND_STATUS_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  printf("%s %d\n", status_name((int)st), (int)r);
  return 0;
}
"#;
    compiles_like_nvcc("guards.cu", GUARDS, &["-Xcompiler", "-Wall,-Werror"]);
}
