//! Every device-runtime function against nvcc 13.5: one `.cu` file (also valid `.cdp`) calls
//! each function of `runtime_shim::entry_points::RuntimeFn`; nvcc and cdpc compile it to PTX,
//! and each `.extern .func` declaration cdpc writes must equal nvcc's (symbol, result, the
//! parameters' types, sizes and alignments; only parameter names may differ). The inline
//! functions must produce nvcc's instruction. The layouts of the built-in CUDA structs are
//! compared with nvcc's `sizeof`, `alignof` and `offsetof`.
//!
//! The oracle is nvcc's output only. Skips with a printed reason when nvcc is not installed
//! beside ptxas (`cargo xtask setup` installs it).

use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::front::cdp::sema::cuda_types::builtin_struct_layout;
use cdpc::toolchain::{ToolSearch, Toolchain};
use cdpc::{DefaultStream, Target};
use runtime_shim::entry_points::{CType, InlinePtx, Lowering, RuntimeFn};
use runtime_shim::types::{CEnum, CHandle, CStruct};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn nvcc() -> Option<PathBuf> {
    let tools = match Toolchain::discover(&ToolSearch::default()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("skipped: the NVIDIA tools were not found, run `cargo xtask setup`: {e}");
            return None;
        }
    };
    let nvcc = tools.ptxas.parent()?.join(format!("nvcc{}", std::env::consts::EXE_SUFFIX));
    if !nvcc.is_file() {
        eprintln!("skipped: nvcc is not next to ptxas (pip package nvidia-cuda-nvcc)");
        return None;
    }
    Some(nvcc)
}

/// nvcc's PTX for `source` (sm_90, relocatable device code, as cdpc compiles).
fn nvcc_ptx(nvcc: &PathBuf, source: &str) -> String {
    nvcc_ptx_with(nvcc, source, &[])
}

/// nvcc's PTX for `source` with `extra` options.
fn nvcc_ptx_with(nvcc: &PathBuf, source: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("devrt.cu");
    let ptx = dir.path().join("devrt.ptx");
    std::fs::write(&cu, source).unwrap();
    let mut path = vec![nvcc.parent().unwrap().to_path_buf()];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    let out = Command::new(nvcc)
        .args(["-arch=sm_90", "-rdc=true", "-ptx", "-diag-suppress=1215"])
        .args(extra)
        .arg(&cu)
        .arg("-o")
        .arg(&ptx)
        .env("PATH", std::env::join_paths(path).unwrap())
        .output()
        .expect("nvcc runs");
    assert!(out.status.success(), "nvcc failed:\n{}{}\n{source}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&ptx).unwrap()
}

fn cdpc_ptx(source: &str) -> String {
    cdpc_ptx_for(source, Target::default())
}

fn cdpc_ptx_for(source: &str, target: Target) -> String {
    let options = CompileOptions { emit: Emit::Ptx, target, ..CompileOptions::default() };
    let compiled = driver::compile(source, &options).unwrap_or_else(|e| panic!("cdpc refused the source: {e}\n{source}"));
    String::from_utf8(compiled.output).unwrap()
}

/// How the test source spells a parameter type (the header's spelling, as C++ allows it).
fn spelling(ty: CType) -> String {
    let handle = |h: CHandle| h.c_name().to_string();
    match ty {
        CType::Int => "int".into(),
        CType::UInt => "unsigned int".into(),
        CType::Bool => "bool".into(),
        CType::SizeT => "size_t".into(),
        CType::ULongLong => "unsigned long long".into(),
        CType::Error => "cudaError_t".into(),
        CType::Enum(e) => e.c_name().into(),
        CType::VoidPtr => "void *".into(),
        CType::ConstVoidPtr => "const void *".into(),
        CType::ConstCharPtr => "const char *".into(),
        CType::VoidPtrPtr => "void **".into(),
        CType::IntPtr => "int *".into(),
        CType::UIntPtr => "unsigned int *".into(),
        CType::SizeTPtr => "size_t *".into(),
        CType::EnumPtr(e) => format!("{} *", e.c_name()),
        CType::Stream => "cudaStream_t".into(),
        CType::StreamPtr => "cudaStream_t *".into(),
        CType::Event => "cudaEvent_t".into(),
        CType::EventPtr => "cudaEvent_t *".into(),
        CType::Dim3 => "dim3".into(),
        CType::Struct(s) => s.c_name().into(),
        CType::StructPtr(s) => format!("{} *", s.c_name()),
        CType::ConstStructPtr(s) => format!("const {} *", s.c_name()),
        CType::Handle(h) => handle(h),
    }
}

/// One kernel per function, taking each argument as a kernel parameter (a kernel where the
/// function takes one).
fn calls_source() -> String {
    let mut src = String::from("__global__ void target_kernel(int *p) { p[0] = 1; }\n");
    for f in RuntimeFn::ALL {
        let ep = f.entry_point();
        let mut params = Vec::new();
        let mut args = Vec::new();
        for (i, (_, ty)) in ep.params.iter().enumerate() {
            if f.kernel_param() == Some(i) {
                args.push(format!("({})target_kernel", spelling(*ty)));
                continue;
            }
            // An enum kernel parameter would be an `int` in cdpc and an enum in nvcc; pass an
            // enumerator, which both accept.
            if let CType::Enum(e) = ty {
                args.push(e.values()[0].0.to_string());
                continue;
            }
            params.push(format!("{} a{i}", spelling(*ty)));
            args.push(format!("a{i}"));
        }
        src.push_str(&format!("__global__ void t_{}({}) {{ {}({}); }}\n", ep.c_name, params.join(", "), ep.c_name, args.join(", ")));
    }
    src
}

/// The `.extern .func` declarations of a PTX text, by symbol, with whitespace collapsed and
/// parameter names replaced by their position.
fn externs(ptx: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = ptx;
    while let Some(start) = rest.find(".extern .func") {
        let end = start + rest[start..].find(';').expect("a declaration ends with ;");
        let decl = rest[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
        rest = &rest[end + 1..];
        // `.extern .func (.param .b32 func_retval0) NAME ( ... )` or `.extern .func NAME ( ... )`.
        let after = decl[".extern .func".len()..].trim();
        let (ret, tail) = match after.strip_prefix('(') {
            Some(r) => {
                let close = r.find(')').unwrap();
                (format!("({})", &r[..close]), r[close + 1..].trim().to_string())
            }
            None => (String::new(), after.to_string()),
        };
        let (name, params) = tail.split_once('(').unwrap();
        let name = name.trim().to_string();
        let params: Vec<String> = params
            .trim_end_matches([')', ' '])
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .enumerate()
            .map(|(i, p)| {
                let words: Vec<&str> = p.split_whitespace().collect();
                let (last, ty) = words.split_last().unwrap();
                let array = last.find('[').map(|at| &last[at..]).unwrap_or("");
                format!("{} p{i}{array}", ty.join(" "))
            })
            .collect();
        let ret = ret.replace("func_retval0", "ret").split_whitespace().collect::<Vec<_>>().join(" ");
        out.insert(name.clone(), format!("{ret} {name}({})", params.join(", ")));
    }
    out
}

#[test]
fn every_declaration_matches_nvcc() {
    let Some(nvcc) = nvcc() else { return };
    let source = calls_source();
    let theirs = nvcc_ptx(&nvcc, &source);
    let ours = cdpc_ptx(&source);
    let (theirs_decls, ours_decls) = (externs(&theirs), externs(&ours));
    assert!(ours_decls.len() >= 50, "too few declarations found in cdpc's PTX:\n{ours}");
    assert_eq!(theirs_decls.keys().collect::<Vec<_>>(), ours_decls.keys().collect::<Vec<_>>(), "nvcc and cdpc declare different symbols");
    for (symbol, decl) in &theirs_decls {
        assert_eq!(&ours_decls[symbol], decl, "{symbol}");
    }
    // Every called function has a declaration, under the table's symbol.
    for f in RuntimeFn::ALL {
        if f.lowering() == Lowering::Call {
            assert!(theirs_decls.contains_key(f.entry_point().ptx_symbol), "nvcc does not call {}", f.entry_point().ptx_symbol);
        }
    }
}

#[test]
fn inline_functions_are_nvcc_instructions() {
    let Some(nvcc) = nvcc() else { return };
    for f in RuntimeFn::ALL {
        let Lowering::Inline(ptx) = f.lowering() else { continue };
        let instruction = match ptx {
            InlinePtx::GridDependencyWait => "griddepcontrol.wait;",
            InlinePtx::LaunchDependents => "griddepcontrol.launch_dependents;",
            InlinePtx::CurrentGraphExec => "%current_graph_exec;",
        };
        let name = f.entry_point().c_name;
        let call = if f.entry_point().ret.is_some() { format!("*out = (unsigned long long){name}();") } else { format!("{name}();") };
        let source = format!("__global__ void k(unsigned long long *out) {{ {call} }}\n");
        let theirs = nvcc_ptx(&nvcc, &source);
        let ours = cdpc_ptx(&source);
        assert!(theirs.contains(instruction), "nvcc's {name} has no `{instruction}`:\n{theirs}");
        assert!(ours.contains(instruction), "cdpc's {name} has no `{instruction}`:\n{ours}");
        assert!(!ours.contains(".extern"), "{name} must not call anything:\n{ours}");
    }
}

#[test]
fn builtin_struct_layouts_match_nvcc() {
    let Some(nvcc) = nvcc() else { return };
    let mut source = String::from("#include <cstddef>\n");
    let mut ours: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for s in CStruct::ALL {
        let Some((size, align, fields)) = builtin_struct_layout(*s, Target::default()) else { continue };
        let name = s.c_name();
        let mut exprs = vec![format!("sizeof({name})"), format!("alignof({name})")];
        exprs.extend(fields.iter().map(|(f, _)| format!("offsetof({name}, {f})")));
        source.push_str(&format!("__device__ unsigned long long layout_{name}[] = {{{}}};\n", exprs.join(", ")));
        let mut values = vec![size, align];
        values.extend(fields.iter().map(|(_, offset)| *offset));
        ours.insert(name.to_string(), values);
    }
    assert!(ours.len() >= 5, "the built-in structs with fields are missing");
    let ptx = nvcc_ptx(&nvcc, &source);
    for (name, values) in &ours {
        let marker = format!("layout_{name}[");
        let line = ptx.lines().find(|l| l.contains(&marker)).unwrap_or_else(|| panic!("nvcc emitted no {marker}:\n{ptx}"));
        let inside = &line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()];
        let numbers: Vec<u64> = inside.split(',').map(|v| v.trim().parse().unwrap()).collect();
        // nvcc writes a u64 array either as `.u64` values or as its little-endian `.b8` bytes.
        let theirs: Vec<u64> = if line.contains(".b8 ") { numbers.chunks(8).map(|bytes| bytes.iter().rev().fold(0, |acc, b| acc << 8 | b)).collect() } else { numbers };
        assert_eq!(&theirs, values, "{name}: nvcc's sizeof, alignof and offsets against cdpc's");
    }
}

#[test]
fn enum_types_are_ints_and_enumerators_have_nvcc_values() {
    let Some(nvcc) = nvcc() else { return };
    let mut source = String::new();
    let mut expected = Vec::new();
    for e in CEnum::ALL {
        for (name, value) in e.values() {
            source.push_str(&format!("__device__ int value_{name} = {name};\n"));
            expected.push((name, *value));
        }
    }
    let ptx = nvcc_ptx(&nvcc, &source);
    for (name, value) in expected {
        // `.global .align 4 .u32 value_NAME = 3;`, or without an initializer for 0.
        let marker = format!(" value_{name}");
        let line = ptx
            .lines()
            .find(|l| l.trim_end_matches(';').contains(&marker) && (l.contains(&format!("{marker} ")) || l.ends_with(&format!("{marker};"))))
            .unwrap_or_else(|| panic!("nvcc emitted no {name}:\n{ptx}"));
        let theirs: i64 = match line.split_once(" = ") {
            Some((_, v)) => v.trim_end_matches(';').trim().parse().unwrap(),
            None => 0,
        };
        assert_eq!(theirs, i64::from(value), "{name}");
    }
}

/// The declarations cdpc writes, one per line, kept in `tests/snapshots/devrt/`: a change to
/// any entry point's PTX shows in review. (Needs no nvcc; the test above holds it to nvcc's.)
#[test]
fn declarations_snapshot() {
    let ours = externs(&cdpc_ptx(&calls_source()));
    let text: Vec<String> = ours.values().cloned().collect();
    insta::with_settings!({ snapshot_path => cdpc_tests::repo_root().join("tests/snapshots/devrt"), prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("declarations", text.join("\n"));
    });
}

/// Calls that the CUDA headers rename to their `_ptsz` forms under `--default-stream
/// per-thread`, a launch, and a kernel that exists only when the macro is defined.
const PER_THREAD_SOURCE: &str = r#"
extern "C" __global__ void child(int *p) { p[0] = 1; }
extern "C" __global__ void parent(int *p, int *q, cudaEvent_t e)
{
    child<<<1, 1>>>(p);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMemcpyAsync(p, q, 4, cudaMemcpyDeviceToDevice, s);
    cudaMemsetAsync(p, 0, 4, s);
    cudaMemcpy2DAsync(p, 16, q, 16, 16, 2, cudaMemcpyDeviceToDevice, s);
    cudaMemset2DAsync(p, 16, 0, 16, 2, s);
    cudaEventRecord(e, s);
    cudaStreamWaitEvent(s, e, 0);
    cudaStreamDestroy(s);
}
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
extern "C" __global__ void per_thread_marker(int *p) { p[0] = CUDA_API_PER_THREAD_DEFAULT_STREAM; }
#endif
"#;

#[test]
fn per_thread_default_stream_matches_nvcc() {
    let Some(nvcc) = nvcc() else { return };
    for (nvcc_args, stream) in [(&[][..], DefaultStream::Legacy), (&["--default-stream", "per-thread"][..], DefaultStream::PerThread)] {
        let theirs = nvcc_ptx_with(&nvcc, PER_THREAD_SOURCE, nvcc_args);
        let ours = cdpc_ptx_for(PER_THREAD_SOURCE, Target { default_stream: stream, ..Target::default() });
        assert_eq!(externs(&theirs), externs(&ours), "{stream:?}: nvcc and cdpc declare different entry points");
        let marker = ".entry per_thread_marker";
        assert_eq!(theirs.contains(marker), stream == DefaultStream::PerThread, "{stream:?}: nvcc's macro");
        assert_eq!(ours.contains(marker), stream == DefaultStream::PerThread, "{stream:?}: cdpc's macro");
        let launch = if stream == DefaultStream::PerThread { "__cudaCDP2LaunchDeviceV2_ptsz" } else { "__cudaCDP2LaunchDeviceV2" };
        assert!(externs(&ours).contains_key(launch), "{stream:?}: cdpc launches through {launch}:\n{ours}");
    }
}

#[test]
fn per_thread_default_stream_links_with_both_launch_abis() {
    // nvcc has no v1 launch to compare with; libcudadevrt must define what cdpc's v1 calls.
    if nvcc().is_none() {
        return;
    }
    for abi in [cdpc::LaunchAbi::V1, cdpc::LaunchAbi::V2] {
        let target = Target { launch_abi: abi, default_stream: DefaultStream::PerThread, ..Target::default() };
        let ptx = cdpc_ptx_for(PER_THREAD_SOURCE, target);
        let expected = if abi == cdpc::LaunchAbi::V1 { "cudaLaunchDevice_ptsz" } else { "__cudaCDP2LaunchDeviceV2_ptsz" };
        assert!(externs(&ptx).contains_key(expected), "{abi}: {expected} in\n{ptx}");
        let options = CompileOptions { emit: Emit::Cubin, target, ..CompileOptions::default() };
        let cubin = driver::compile(PER_THREAD_SOURCE, &options).unwrap_or_else(|e| panic!("{abi}: nvlink refused it: {e}"));
        assert_eq!(&cubin.output[..4], b"\x7fELF", "{abi}: a linked cubin");
    }
}

/// The `.param` declarations of each call sequence in `ptx` that calls `callee`, names dropped
/// (`.align 4 .b8 [12]`), in order, the result's included.
fn call_shapes(ptx: &str, callee: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for seq in ptx.split("{ // callseq").skip(1) {
        let seq = seq.split("} // callseq").next().unwrap_or(seq);
        let calls =
            seq.lines().map(str::trim).any(|l| l.starts_with("call.uni") && l.split([' ', ',', '\t']).any(|w| w == callee)) || seq.lines().map(str::trim).any(|l| l.trim_end_matches(',') == callee);
        if !calls {
            continue;
        }
        let params = seq
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with(".param"))
            .map(|l| {
                let words: Vec<&str> = l.trim_end_matches(';').split_whitespace().collect();
                let (name, ty) = words.split_last().unwrap();
                format!("{} {}", ty.join(" "), name.find('[').map(|at| &name[at..]).unwrap_or(""))
            })
            .collect();
        out.push(params);
    }
    out
}

/// What nvcc writes for the documented V1 launch called from CUDA C++ (nvcc 13 lowers `<<<>>>`
/// only to V2): a kernel of the aggregated kernel's parameters, a pointer and a count.
const V1_CALLS_SOURCE: &str = r#"
extern "C" __global__ void child(unsigned int *r, unsigned int n) { if (threadIdx.x < n) atomicAdd(r, 1u); }
extern "C" __global__ void parent(unsigned int *r, unsigned int n) {
    void *buf = cudaGetParameterBuffer(8, 12);
    if (buf) {
        *(unsigned int **)buf = r;
        *(unsigned int *)((char *)buf + 8) = n;
        cudaLaunchDevice((void *)child, buf, dim3(n), dim3(32), 0, 0);
    }
}
"#;

/// Warp aggregation makes its launches (the warp's aggregated one and, where the group falls
/// back, each thread's own) through the documented V1 entry points in a V2 build
/// (docs/AGGREGATION.md): the declarations and the call sequences of those launches are
/// nvcc's for the same calls written in CUDA C++ (which the CUDA 13 headers name
/// `__cudaCDP2GetParameterBuffer` and `__cudaCDP2LaunchDevice`, the same V1 entry points under
/// their CDP2 names), for both default streams.
#[test]
fn warp_aggregated_launch_is_nvccs_v1_sequence() {
    let Some(nvcc) = nvcc() else { return };
    let parent = r#"
extern "C" __global__ void child(unsigned int *r, unsigned int n) { if (threadIdx.x < n) atomicAdd(r, 1u); }
extern "C" __global__ void parent(unsigned int *r, unsigned int n) { child<<<1, 32>>>(r, n + threadIdx.x); }
"#;
    for (nvcc_args, stream) in [(&[][..], DefaultStream::Legacy), (&["--default-stream", "per-thread"][..], DefaultStream::PerThread)] {
        let theirs = nvcc_ptx_with(&nvcc, V1_CALLS_SOURCE, nvcc_args);
        let target = Target { default_stream: stream, ..Target::default() };
        assert_eq!(target.launch_abi, cdpc::LaunchAbi::V2);
        let options = CompileOptions { emit: Emit::Ptx, target, aggregate: cdpc::pipeline::aggregate::Granularity::Warp, ..CompileOptions::default() };
        let ours = String::from_utf8(driver::compile(parent, &options).unwrap_or_else(|e| panic!("{e}")).output).unwrap();
        let ptsz = if stream == DefaultStream::PerThread { "_ptsz" } else { "" };
        let (their_externs, our_externs) = (externs(&theirs), externs(&ours));
        for (nv, us) in [("__cudaCDP2GetParameterBuffer".to_string(), "cudaGetParameterBuffer".to_string()), (format!("__cudaCDP2LaunchDevice{ptsz}"), format!("cudaLaunchDevice{ptsz}"))] {
            let nv_decl = their_externs.get(&nv).unwrap_or_else(|| panic!("{stream:?}: nvcc declares no {nv}:\n{theirs}"));
            let our_decl = our_externs.get(&us).unwrap_or_else(|| panic!("{stream:?}: cdpc declares no {us}:\n{ours}"));
            assert_eq!(nv_decl.replace(&nv, &us), *our_decl, "{stream:?}");
            let (nv_calls, our_calls) = (call_shapes(&theirs, &nv), call_shapes(&ours, &us));
            assert_eq!(nv_calls.len(), 1, "{stream:?}: {nv} in\n{theirs}");
            assert_eq!(our_calls.len(), 2, "{stream:?}: the aggregated launch and the threads' own through {us} in\n{ours}");
            for ours in &our_calls {
                assert_eq!(nv_calls[0], *ours, "{stream:?}: the call sequence of {us}");
            }
            // two sizes and the buffer; six operands and the status
            assert_eq!(nv_calls[0].len(), if us.starts_with("cudaGet") { 3 } else { 7 }, "{nv_calls:?}");
        }
        // The threads' own launch, as it was, is V1 too: no V2 entry point is left.
        let v2 = format!("__cudaCDP2LaunchDeviceV2{ptsz}");
        assert!(!our_externs.contains_key("__cudaCDP2GetParameterBufferV2") && !our_externs.contains_key(&v2), "{stream:?}:\n{ours}");
    }
}

/// The same V1 calls in CUDA C++ through Clang, at `--launch-abi v1`, and a launch beside a
/// program's own call of V2's parameter buffer at V2 (the CUDA header's declarations take each
/// `dim3` through a `byval` pointer): nvcc stores the dims straight into the call's parameter
/// space and keeps no local memory; so must cdpc (it copied them through a 32-byte local frame
/// until the pipeline redeclared those entry points with the dims by value). The declarations
/// stay nvcc's.
#[test]
fn clangs_dims_reach_the_parameter_space_without_local_memory() {
    let Some(nvcc) = nvcc() else { return };
    let v2_source = r#"
extern "C" __global__ void child(unsigned int *r, unsigned int n) { if (threadIdx.x < n) atomicAdd(r, 1u); }
extern "C" __global__ void parent(unsigned int *r, unsigned int n) {
    void *buf = cudaGetParameterBufferV2((void *)child, dim3(n), dim3(32), 0);
    if (buf) {
        *(unsigned int **)buf = r;
        *(unsigned int *)((char *)buf + 8) = n;
        cudaLaunchDeviceV2(buf, 0);
    }
}
extern "C" __global__ void launcher(unsigned int *r, unsigned int n) { child<<<n, 32>>>(r, n); }
"#;
    for (source, abi, entry) in [(V1_CALLS_SOURCE, cdpc::LaunchAbi::V1, "__cudaCDP2LaunchDevice"), (v2_source, cdpc::LaunchAbi::V2, "__cudaCDP2GetParameterBufferV2")] {
        let theirs = nvcc_ptx(&nvcc, source);
        let target = Target { launch_abi: abi, ..Target::default() };
        let options = CompileOptions { emit: Emit::Ptx, target, language: Some(driver::Language::Cuda), ..CompileOptions::default() };
        let ours = String::from_utf8(driver::compile(source, &options).unwrap_or_else(|e| panic!("{e}")).output).unwrap();
        assert!(!theirs.contains(".local"), "nvcc keeps no local memory:\n{theirs}");
        assert!(!ours.contains(".local"), "{abi:?}: the dims went through local memory:\n{ours}");
        assert_eq!(externs(&theirs).get(entry), externs(&ours).get(entry), "{abi:?}: the declaration of {entry}");
        let (nv_calls, our_calls) = (call_shapes(&theirs, entry), call_shapes(&ours, entry));
        assert!(!our_calls.is_empty() && our_calls.iter().all(|c| *c == nv_calls[0]), "{abi:?}: the calls of {entry}: {our_calls:?} against nvcc's {nv_calls:?}");
    }
}
