//! LLVM IR and bitcode as input (docs/IR-INPUT.md): the command line (`cdpc kernel.ll -o
//! kernel.cubin`, `cdpc kernel.bc --emit ptx`, `-x ir`), IR in a link of several inputs and
//! with `-dc`, and the IR of `ir_input/launch.ll` against the same program as CUDA C++
//! (`launch.cu`) through cdpc's Clang path and through nvcc, the oracle: the same kernels with
//! the same parameters, and the same launch sequence in the parent.

use crate::build_common::{cdpc, nvcc_ptx, stderr, tool_dir};
use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::front::cuda::{find_engine, ClangEnv, ClangSearch};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ir_input").join(name)
}

/// A scratch folder holding copies of the fixtures `names`.
fn scratch(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    dir
}

/// `launch.ll` as bitcode, written by LLVM (through inkwell) beside it in `dir`.
fn write_bitcode(dir: &Path) -> PathBuf {
    let context = inkwell::context::Context::create();
    let text = std::fs::read(fixture("launch.ll")).unwrap();
    let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(&text, "launch.ll");
    let module = context.create_module_from_ir(buffer).unwrap();
    let path = dir.join("launch.bc");
    assert!(module.write_bitcode_to_path(&path));
    path
}

/// Each `.entry`'s name and its parameters' widths in bits, in order.
fn entries(ptx: &str) -> Vec<(String, Vec<u32>)> {
    let mut out = Vec::new();
    let mut lines = ptx.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        let Some(at) = line.find(".entry ") else { continue };
        if line.starts_with(".extern") {
            continue;
        }
        let name = line[at + 7..].trim_end_matches('(').trim().to_string();
        let mut widths = Vec::new();
        while let Some(param) = lines.next_if(|l| l.starts_with(".param")) {
            let width = param.split_whitespace().find_map(|w| w.get(2..).filter(|_| w.starts_with(".u") || w.starts_with(".b") || w.starts_with(".s")).and_then(|b| b.parse().ok()));
            widths.push(width.unwrap_or(0));
        }
        out.push((name, widths));
    }
    out.sort();
    out
}

/// The body of kernel `name` in `ptx`.
fn body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("no kernel {name}:\n{ptx}"));
    let rest = &ptx[start..];
    &rest[..rest.find("\n}").unwrap_or(rest.len())]
}

/// A body's launch sequence, register names left out: the functions called, in order, the
/// constants passed to them (`param1+4=1`, sorted), and the stores into memory as
/// `+OFFSET=VALUE` (a register that holds a constant read as that constant, others as `reg`).
fn launch_sequence(body: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
    let lines: Vec<&str> = body.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut called = Vec::new();
    let mut constants: std::collections::HashMap<&str, &str> = Default::default();
    let (mut passed, mut stored) = (Vec::new(), Vec::new());
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("call") {
            // nvcc writes the callee on the next line, LLVM on the same one.
            let text = format!("{line} {}", lines.get(i + 1).unwrap_or(&""));
            let callee = text.split([' ', '\t', ',', '(', ')']).find(|w| w.starts_with("__") || w.starts_with("cuda")).map(str::to_string);
            called.extend(callee);
        } else if let Some(rest) = line.strip_prefix("mov.") {
            let mut words = rest.split_whitespace().skip(1);
            if let (Some(reg), Some(value)) = (words.next(), words.next()) {
                let value = value.trim_end_matches(';');
                if value.parse::<i64>().is_ok() {
                    constants.insert(reg.trim_end_matches(','), value);
                }
            }
        } else if line.starts_with("st.") {
            let Some((address, value)) = line.split_once("], ") else { continue };
            let place = address.rsplit_once('[').map_or("", |(_, p)| p);
            let (base, offset) = place.split_once('+').unwrap_or((place, "0"));
            let value = value.trim_end_matches(';');
            let value = constants.get(value).copied().unwrap_or(value);
            let constant = value.parse::<i64>().is_ok();
            if line.starts_with("st.param") {
                if constant && base.starts_with("param") {
                    passed.push(format!("{base}+{offset}={value}"));
                }
            } else {
                stored.push(format!("+{offset}={}", if constant { value } else { "reg" }));
            }
        }
    }
    passed.sort();
    stored.sort();
    (called, passed, stored)
}

fn ptx_options() -> CompileOptions {
    CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() }
}

#[test]
fn the_ir_gives_the_kernels_and_launch_sequence_of_the_same_program_in_cuda_cxx() {
    let ir = std::fs::read(fixture("launch.ll")).unwrap();
    let from_ir = String::from_utf8(driver::compile_ir(&ir, &ptx_options()).unwrap().output).unwrap();
    let parent = body(&from_ir, "parent");
    let sequence = launch_sequence(parent);
    assert_eq!(sequence.0, ["__cudaCDP2GetParameterBufferV2", "__cudaCDP2LaunchDeviceV2"], "{parent}");
    assert_eq!(sequence.2, ["+0=reg", "+8=7"], "{parent}");
    if let Err(d) = find_engine(&ClangSearch::default(), &ClangEnv::from_process()) {
        return println!("skipped the comparison: no Clang 22: {}", d.message);
    }
    let Some(oracle) = nvcc_ptx(&std::fs::read_to_string(fixture("launch.cu")).unwrap()) else { return };
    let cu = fixture("launch.cu");
    let options = CompileOptions { preprocess: cdpc::front::cdp::preprocess::PreprocessOptions { input: Some(cu.clone()), ..Default::default() }, ..ptx_options() };
    let from_cu = String::from_utf8(driver::compile(&std::fs::read_to_string(&cu).unwrap(), &options).unwrap().output).unwrap();
    for (what, other) in [("cdpc's Clang path", &from_cu), ("nvcc", &oracle)] {
        assert_eq!(entries(&from_ir), entries(other), "kernels against {what}:\n{from_ir}\n{other}");
        let theirs = body(other, "parent");
        assert_eq!(sequence, launch_sequence(theirs), "the launch sequence against {what}:\n{parent}\n{theirs}");
    }
}

#[test]
fn the_command_line_compiles_ll_to_a_cubin_and_bc_to_ptx() {
    let dir = scratch(&["launch.ll"]);
    let bitcode = write_bitcode(dir.path());
    let out = cdpc(dir.path(), &["launch.bc", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptx = String::from_utf8(out.stdout).unwrap();
    assert!(ptx.contains(".entry parent(") && ptx.contains("__cudaCDP2LaunchDeviceV2"), "{ptx}");
    // `-x ir` for a file of another name.
    std::fs::copy(&bitcode, dir.path().join("launch.bin")).unwrap();
    let out = cdpc(dir.path(), &["-x", "ir", "launch.bin", "--emit", "llvm-ir", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("@__cudaCDP2LaunchDeviceV2("));
    if tool_dir().is_none() {
        return;
    }
    let out = cdpc(dir.path(), &["launch.ll", "-o", "launch.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cubin = std::fs::read(dir.path().join("launch.cubin")).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    let has = |needle: &[u8]| cubin.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"parent") && has(b"child") && has(b"__cudaCDP2LaunchDeviceV2"));
    // A fat binary with the cubin and the PTX of bitcode.
    let out = cdpc(dir.path(), &["launch.bc", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-o", "launch.fatbin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::metadata(dir.path().join("launch.fatbin")).unwrap().len() > 0);
}

#[test]
fn a_broken_module_is_reported_at_its_line_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.ll"), "target triple = \"nvptx64-nvidia-cuda\"\n\ndefine ptx_kernel void @k() {\n  frobnicate\n}\n").unwrap();
    let out = cdpc(dir.path(), &["bad.ll", "--emit", "ptx", "-o", "bad.ptx"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("error[E1011]") && err.contains("bad.ll:4:3"), "{err}");
    assert!(!dir.path().join("bad.ptx").exists());
    let out = cdpc(dir.path(), &["bad.ll", "--emit", "ptx", "--error-format", "json", "-o", "bad.ptx"]);
    assert!(stderr(&out).starts_with("{\"code\":\"E1011\""), "{}", stderr(&out));
    // Bitcode cut short: no line to show, still coded.
    std::fs::write(dir.path().join("cut.bc"), b"BC\xC0\xDE\x35\x14").unwrap();
    let out = cdpc(dir.path(), &["cut.bc", "--emit", "ptx", "-o", "cut.ptx"]);
    assert!(stderr(&out).contains("error[E1011]"), "{}", stderr(&out));
    assert!(!dir.path().join("cut.ptx").exists());
}

/// LLVM's math intrinsics, as front ends other than Clang's CUDA headers write math (Julia,
/// Numba, Rust): each one NVPTX cannot select, where LLVM 22 stopped ("Cannot select",
/// "no libcall available for ftan"), of each type libdevice serves (`half` and `bfloat`
/// through `float`), scalar and as vectors, with and without `afn`: every one compiles to a
/// linked cubin (ptxas and nvlink find every function), at `-O0` and `-O3`. The pass makes each
/// call without `afn` a call of the function of CUDA's math API, as nvcc's `cos(x)` calls
/// `__nv_cos` (CUDA's math API documentation), but for `exp2` of `float`, NVPTX's
/// `ex2.approx.f32`, which `__nv_exp2f` is.
#[test]
fn llvm_math_intrinsics_become_libdevices_functions() {
    let unary = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "exp2", "exp10", "log", "log2", "log10"];
    let dir = tempfile::tempdir().unwrap();
    // (type, its overload suffix, libdevice's suffix, the vector's lanes)
    let types = [("double", "f64", "", None), ("float", "f32", "f", None), ("half", "f16", "f", None), ("bfloat", "bf16", "f", None), ("double", "f64", "", Some(2)), ("float", "f32", "f", Some(4))];
    for (scalar, m, suffix, lanes) in types {
        let (ty, m): (String, String) = match lanes {
            Some(n) => (format!("<{n} x {scalar}>"), format!("v{n}{m}")),
            None => (scalar.to_string(), m.to_string()),
        };
        let int = |i: &str, n: u32| if n > 1 { format!("<{n} x {i}>") } else { i.to_string() };
        let lanes: u32 = lanes.unwrap_or(1);
        let pair = format!("{{ {ty}, {ty} }}");
        for afn in ["", "afn "] {
            let mut decls = Vec::new();
            let mut body = vec![format!("  %a = load {ty}, ptr %p, align 16")];
            let mut expected = Vec::new();
            let mut call = |decl: String, call: String, result: &str, libdevice: &str| {
                decls.push(decl);
                let n = body.len();
                body.push(format!("  %r{n} = {call}\n  store volatile {result} %r{n}, ptr %p"));
                expected.push(format!("__nv_{libdevice}{suffix}"));
            };
            for f in unary {
                call(format!("declare {ty} @llvm.{f}.{m}({ty})"), format!("call {afn}{ty} @llvm.{f}.{m}({ty} %a)"), &ty, f);
            }
            for f in ["pow", "atan2"] {
                call(format!("declare {ty} @llvm.{f}.{m}({ty}, {ty})"), format!("call {afn}{ty} @llvm.{f}.{m}({ty} %a, {ty} %a)"), &ty, f);
            }
            call(format!("declare {ty} @llvm.powi.{m}.i32({ty}, i32)"), format!("call {afn}{ty} @llvm.powi.{m}.i32({ty} %a, i32 5)"), &ty, "powi");
            for f in ["sincos", "modf"] {
                call(format!("declare {pair} @llvm.{f}.{m}({ty})"), format!("call {afn}{pair} @llvm.{f}.{m}({ty} %a)"), &pair, f);
            }
            for (f, width, libdevice) in [("lround", "i32", "llround"), ("llround", "i64", "llround"), ("lrint", "i32", "llrint"), ("llrint", "i64", "llrint")] {
                let it = int(width, lanes);
                let im = if lanes > 1 { format!("v{lanes}{width}") } else { width.to_string() };
                call(format!("declare {it} @llvm.{f}.{im}.{m}({ty})"), format!("call {it} @llvm.{f}.{im}.{m}({ty} %a)"), &it, libdevice);
            }
            let ir = format!("target triple = \"nvptx64-nvidia-cuda\"\n{}\n\ndefine ptx_kernel void @k(ptr %p) {{\n{}\n  ret void\n}}\n", decls.join("\n"), body.join("\n"));
            let name = format!("math_{m}{}.ll", if afn.is_empty() { "" } else { "_afn" });
            std::fs::write(dir.path().join(&name), &ir).unwrap();
            if afn.is_empty() {
                let context = inkwell::context::Context::create();
                let module = context.create_module_from_ir(inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), &name)).unwrap();
                cdpc::pipeline::math::intrinsics_as_libdevice(&module);
                let called: std::collections::BTreeSet<String> =
                    module.get_functions().filter(|f| f.count_basic_blocks() == 0).map(|f| f.get_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("__nv_")).collect();
                for function in &expected {
                    let native = function == "__nv_exp2f" && scalar == "float";
                    assert_eq!(called.contains(function), !native, "{name}: {function} in {called:?}");
                }
                assert!(!module.print_to_string().to_string().contains("@llvm.exp2") || scalar == "float", "{name}");
            }
            let out = cdpc(dir.path(), &[&name, "-O0", "--emit", "ptx", "-o", "-"]);
            assert!(out.status.success(), "{name}: {}\n{ir}", stderr(&out));
            if tool_dir().is_some() {
                for opt in ["-O0", "-O3"] {
                    let out = cdpc(dir.path(), &[&name, opt, "-o", &name.replace(".ll", ".cubin")]);
                    assert!(out.status.success(), "{name} {opt}: {}", stderr(&out));
                }
            }
        }
    }
}

/// `llvm.canonicalize` of every floating-point type and its vectors compiles at -O0 and -O3:
/// LLVM 22.1's NVPTX cannot select it for `bfloat` nor for vectors of `half` and `bfloat`
/// ("Cannot select: fcanonicalize", `E1023`), and the optimisation would make vectors of the
/// lanes again were they split before it.
#[test]
fn canonicalize_of_every_floating_point_type_compiles() {
    let dir = tempfile::tempdir().unwrap();
    for (ty, m) in [("half", "f16"), ("bfloat", "bf16"), ("float", "f32"), ("double", "f64"), ("<2 x half>", "v2f16"), ("<2 x bfloat>", "v2bf16"), ("<4 x bfloat>", "v4bf16"), ("<2 x float>", "v2f32")]
    {
        let ir = format!("target triple = \"nvptx64-nvidia-cuda\"\n\ndefine ptx_kernel void @k(ptr %p) {{\n  %a = load {ty}, ptr %p\n  %c = call {ty} @llvm.canonicalize.{m}({ty} %a)\n  store {ty} %c, ptr %p\n  ret void\n}}\n");
        let name = format!("canonicalize_{m}.ll");
        std::fs::write(dir.path().join(&name), &ir).unwrap();
        for arch in ["sm_75", "sm_90"] {
            for opt in ["-O0", "-O3"] {
                let out = cdpc(dir.path(), &[&name, opt, &format!("-arch={arch}"), "--emit", "ptx", "-o", "-"]);
                assert!(out.status.success(), "{name} {arch} {opt}: {}", stderr(&out));
                let ptx = String::from_utf8(out.stdout).unwrap();
                // NVPTX's canonicalize: a multiplication by one, of the type or of `float`.
                assert!(ptx.contains("mul.rn."), "{name} {arch} {opt}:\n{ptx}");
                if tool_dir().is_some() {
                    let out = cdpc(dir.path(), &[&name, opt, &format!("-arch={arch}"), "-o", "k.cubin"]);
                    assert!(out.status.success(), "{name} {arch} {opt}: {}", stderr(&out));
                }
            }
        }
    }
}

/// Conversions between floating point and integers of 65 to 128 bits (Rust's `u128 as f64` and
/// `f64 as u128`, saturating, Julia's `Float16(::Int128)`), which LLVM 22's NVPTX cannot compile
/// ("unsupported library call operation", `E1023`): every direction, signedness and
/// floating-point type, scalars and vectors, the saturating intrinsics, compile to a linked cubin at -O0 and -O3 (`pipeline::wide_conversions`; on a GPU
/// the results match nvcc's and Python's).
#[test]
fn conversions_of_128_bit_integers_compile() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = Vec::new();
    let mut n = 0;
    for (int, fp) in [("i128", "double"), ("i128", "float"), ("i128", "half"), ("i128", "bfloat"), ("i96", "double"), ("<2 x i128>", "<2 x float>")] {
        for op in ["sitofp", "uitofp"] {
            body.push(format!("  %i{n} = load {int}, ptr %p, align 16\n  %c{n} = {op} {int} %i{n} to {fp}\n  store volatile {fp} %c{n}, ptr %p"));
            n += 1;
        }
        for op in ["fptosi", "fptoui"] {
            body.push(format!("  %f{n} = load {fp}, ptr %p, align 16\n  %c{n} = {op} {fp} %f{n} to {int}\n  store volatile {int} %c{n}, ptr %p, align 16"));
            n += 1;
        }
    }
    // Rust's `as`: the saturating intrinsics.
    let mut decls = Vec::new();
    for (int, fp, m) in [("i128", "double", "f64"), ("i128", "float", "f32"), ("i128", "half", "f16"), ("i100", "bfloat", "bf16")] {
        for op in ["fptosi", "fptoui"] {
            let f = format!("llvm.{op}.sat.{int}.{m}");
            decls.push(format!("declare {int} @{f}({fp})"));
            body.push(format!("  %f{n} = load {fp}, ptr %p, align 16\n  %c{n} = call {int} @{f}({fp} %f{n})\n  store volatile {int} %c{n}, ptr %p, align 16"));
            n += 1;
        }
    }
    let ir = format!("target triple = \"nvptx64-nvidia-cuda\"\n{}\n\ndefine ptx_kernel void @k(ptr %p) {{\n{}\n  ret void\n}}\n", decls.join("\n"), body.join("\n"));
    std::fs::write(dir.path().join("conversions.ll"), &ir).unwrap();
    for opt in ["-O0", "-O3"] {
        let out = cdpc(dir.path(), &["conversions.ll", opt, "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "{opt}: {}\n{ir}", stderr(&out));
        if tool_dir().is_some() {
            let out = cdpc(dir.path(), &["conversions.ll", opt, "-o", "conversions.cubin"]);
            assert!(out.status.success(), "{opt}: {}", stderr(&out));
        }
    }
}

/// Atomic operations on 128 bits, as Rust's `AtomicU128` or another front end's
/// `std::atomic<__int128>` write them: PTX has `atom.cas.b128` and `atom.exch.b128` from sm_90
/// on, which NVPTX writes from PTX ISA 8.3 on with the `.sys` scope ptxas takes from 8.4 on.
/// At sm_90's oldest PTX, 7.8, NVPTX stops ("unsupported cmpxchg", `E1023`); so such a module
/// is PTX 8.4 at sm_90 (where NVPTX's oldest is newer, that), every
/// form is a `.b128` atomic, the cubin assembles and links, and a module without one keeps 7.8.
/// Below sm_90: `E1024` at the operation (tests/ui/ir/e1024_wide_atomic_below_sm_90.ll).
#[test]
fn atomics_of_128_bits_are_ptx_b128_atomics_from_sm_90_on() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\n\n\
              define ptx_kernel void @k(ptr addrspace(1) %p, ptr addrspace(3) %s, ptr %g, i128 %a, i128 %b) {\n\
              \x20 %r = cmpxchg ptr addrspace(1) %p, i128 %a, i128 %b seq_cst seq_cst\n\
              \x20 %v = extractvalue { i128, i1 } %r, 0\n\
              \x20 %x = atomicrmw xchg ptr addrspace(1) %p, i128 %v monotonic\n\
              \x20 %y = atomicrmw add ptr addrspace(1) %p, i128 %x monotonic\n\
              \x20 %z = atomicrmw umax ptr addrspace(3) %s, i128 %y syncscope(\"block\") acq_rel\n\
              \x20 %w = atomicrmw xchg ptr %g, i128 %z acquire\n\
              \x20 %l = load atomic i128, ptr addrspace(1) %p acquire, align 16\n\
              \x20 %m = add i128 %w, %l\n\
              \x20 store atomic i128 %m, ptr addrspace(1) %p release, align 16\n\
              \x20 ret void\n\
              }\n";
    let plain = "target triple = \"nvptx64-nvidia-cuda\"\n\ndefine ptx_kernel void @k(ptr addrspace(1) %p) {\n  store i32 1, ptr addrspace(1) %p\n  ret void\n}\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.ll"), ir).unwrap();
    std::fs::write(dir.path().join("plain.ll"), plain).unwrap();
    let version = |ptx: &str| ptx.lines().find_map(|l| l.strip_prefix(".version ")).map(str::to_string).unwrap();
    for (arch, expected) in [("sm_90", "8.4"), ("sm_90a", "8.4"), ("sm_100", "8.6"), ("sm_120", "8.7")] {
        let out = cdpc(dir.path(), &["wide.ll", &format!("-arch={arch}"), "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "{arch}: {}", stderr(&out));
        let ptx = String::from_utf8(out.stdout).unwrap();
        assert_eq!(version(&ptx), expected, "{arch}");
        // cmpxchg, xchg, the add's and the umax's loops, the load's cas, the store's and the
        // generic xchg's exch: no operation is split into narrower ones.
        assert_eq!(ptx.matches(".cas.b128").count(), 4, "{arch}:\n{ptx}");
        assert_eq!(ptx.matches(".exch.b128").count(), 3, "{arch}:\n{ptx}");
        if tool_dir().is_some() {
            let out = cdpc(dir.path(), &["wide.ll", &format!("-arch={arch}"), "-o", "wide.cubin"]);
            assert!(out.status.success(), "{arch}: {}", stderr(&out));
        }
    }
    let out = cdpc(dir.path(), &["plain.ll", "-arch=sm_90", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(version(&String::from_utf8(out.stdout).unwrap()), "7.8");
    let out = cdpc(dir.path(), &["wide.ll", "-arch=sm_89", "--emit", "ptx", "-o", "-"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("error[E1024]: a compare-and-swap of 128 bits needs sm_90 or later; the target is sm_89"), "{}", stderr(&out));
}

/// Operations LLVM 22's NVPTX back end has no instruction nor library call for (arithmetic on
/// `fp128`) stop its code generation with a fatal error ("unsupported library call operation"),
/// which ended the process, status 134, with no diagnostic. Each is `E1023` with LLVM's reason,
/// the command line leaves no output, and the library goes on to compile the next input, at
/// `-O0` and `-O3` alike.
#[test]
fn operations_llvm_stops_on_are_e1023_and_the_process_goes_on() {
    let dir = scratch(&["launch.ll"]);
    let good = std::fs::read(fixture("launch.ll")).unwrap();
    let operations = [
        ("fadd fp128 %a, %a", "fp128"),
        ("fmul fp128 %a, %a", "fp128"),
        ("fdiv fp128 %a, %a", "fp128"),
        ("frem fp128 %a, %a", "fp128"),
        ("fptosi fp128 %a to i32", "i32"),
        ("fptrunc fp128 %a to double", "double"),
    ];
    for (i, (operation, ty)) in operations.iter().enumerate() {
        let ir = format!(
            "target triple = \"nvptx64-nvidia-cuda\"\n\ndefine ptx_kernel void @k(ptr %p) {{\n  %a = load fp128, ptr %p, align 16\n  %b = {operation}\n  store {ty} %b, ptr %p, align 16\n  ret void\n}}\n"
        );
        for opt in [0, 3] {
            let options = CompileOptions { opt_level: opt, ..CompileOptions::default() };
            match driver::compile_ir_artifacts(ir.as_bytes(), &options, false) {
                Err(driver::CompileError::Diagnostics(d)) => {
                    assert!(d.len() == 1 && d[0].code.as_str() == "E1023" && d[0].message.contains("unsupported library call operation"), "{operation}: {d:?}")
                }
                other => panic!("{operation}: {:?}", other.map(|_| "compiled")),
            }
            let after = driver::compile_ir_artifacts(&good, &options, false).unwrap_or_else(|e| panic!("after {operation}: {e:?}"));
            assert!(after.ptx.contains(".entry parent("));
        }
        if i == 0 {
            std::fs::write(dir.path().join("stop.ll"), &ir).unwrap();
            let out = cdpc(dir.path(), &["stop.ll", "-o", "stop.cubin"]);
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(stderr(&out).contains("error[E1023]: LLVM stopped compiling this input: unsupported library call operation"), "{}", stderr(&out));
            assert!(!dir.path().join("stop.cubin").exists());
            let out = cdpc(dir.path(), &["stop.ll", "--error-format", "json", "-o", "stop.cubin"]);
            assert!(stderr(&out).starts_with("{\"code\":\"E1023\""), "{}", stderr(&out));
        }
    }
}

/// `reader_crash.bc`: a mutation of a generated module's bitcode (the IR fuzz smoke test,
/// seed 22) on which LLVM 22's bitcode reader crashes (SIGSEGV in `parseFunctionBody`). It is
/// `E1011` and no output, in the command line and in the library, and the process goes on to
/// compile the next input.
#[test]
fn bitcode_that_crashes_llvms_reader_is_e1011_and_the_process_goes_on() {
    let dir = scratch(&["reader_crash.bc", "launch.ll"]);
    let out = cdpc(dir.path(), &["reader_crash.bc", "--emit", "ptx", "-o", "crash.ptx"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("error[E1011]") && stderr(&out).contains("LLVM's reader crashed on it"), "{}", stderr(&out));
    assert!(!dir.path().join("crash.ptx").exists());
    let bytes = std::fs::read(fixture("reader_crash.bc")).unwrap();
    for _ in 0..2 {
        let err = driver::compile_ir_artifacts(&bytes, &CompileOptions::default(), false).expect_err("refused");
        match err {
            driver::CompileError::Diagnostics(d) => assert!(d.len() == 1 && d[0].code.as_str() == "E1011" && d[0].message.contains("crashed"), "{d:?}"),
            other => panic!("{other:?}"),
        }
        let good = driver::compile_ir_artifacts(&std::fs::read(fixture("launch.ll")).unwrap(), &CompileOptions::default(), false).unwrap();
        assert!(good.ptx.contains(".entry parent("));
    }
}

#[test]
fn ir_takes_part_in_a_link_and_in_dash_dc_like_a_source() {
    if tool_dir().is_none() {
        return;
    }
    let dir = scratch(&["link_parent.ll", "link_child.cdp"]);
    let out = cdpc(dir.path(), &["link_parent.ll", "link_child.cdp", "-o", "app.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(&std::fs::read(dir.path().join("app.cubin")).unwrap()[..4], b"\x7fELF");
    let out = cdpc(dir.path(), &["-dc", "link_parent.ll", "link_child.cdp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("link_parent.o").is_file() && dir.path().join("link_child.o").is_file());
    let out = cdpc(dir.path(), &["link_parent.o", "link_child.o", "-o", "objects.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Alone, the parent's child is missing: the link says so with the IR file's name.
    let out = cdpc(dir.path(), &["-dlink", "link_parent.ll", "-o", "alone.cubin"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("E0801") && stderr(&out).contains("link_parent.ll"), "{}", stderr(&out));
}

#[test]
fn the_library_reads_ir_files_by_their_extension() {
    let dir = scratch(&["launch.ll"]);
    let bitcode = write_bitcode(dir.path());
    for input in [dir.path().join("launch.ll"), bitcode] {
        let output = input.with_extension("ptx");
        let compiled = driver::compile_file(&input, &output, &ptx_options()).unwrap();
        assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
        assert!(std::fs::read_to_string(&output).unwrap().contains(".entry parent("));
    }
    let artifacts = driver::compile_ir_artifacts(&std::fs::read(fixture("launch.ll")).unwrap(), &CompileOptions::default(), false).unwrap();
    assert!(artifacts.llvm_ir.contains("@__cudaCDP2LaunchDeviceV2(") && artifacts.ptx.contains(".entry child("));
}

/// A global that `!nvvm.annotations` marks `"managed"` (the NVVM IR specification's mark, in
/// docs/IR-INPUT.md's contract) is declared as nvcc declares `__managed__ int total;`
/// (`nvcc -rdc=true -ptx`, 13.5: `.visible .global .attribute(.managed) .align 4 .u32 total;`).
#[test]
fn an_annotated_managed_global_is_nvccs_managed_variable() {
    let ir = r#"
target triple = "nvptx64-nvidia-cuda"
@total = addrspace(1) externally_initialized global i32 0, align 4
define ptx_kernel void @count() {
  %old = atomicrmw add ptr addrspace(1) @total, i32 1 monotonic, align 4
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr addrspace(1) @total, !"managed", i32 1}
"#;
    let ptx = String::from_utf8(driver::compile_ir(ir.as_bytes(), &ptx_options()).unwrap().output).unwrap();
    assert!(ptx.lines().any(|l| l.trim() == ".visible .global .attribute(.managed) .align 4 .u32 total;"), "{ptx}");
}

/// PTX of the module that ptxas refuses outside inline assembly (here the module's own `module
/// asm`) is the input's `E1023` with ptxas's message, under `--error-format json` a diagnostic
/// line like any other, and leaves no cubin; it was ptxas's uncoded tool error.
#[test]
fn ptx_that_ptxas_refuses_is_e1023() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\nmodule asm \".bogus_directive 1;\"\ndefine ptx_kernel void @k(ptr %p) {\n  store i32 1, ptr %p\n  ret void\n}\n";
    std::fs::write(dir.path().join("k.ll"), ir).unwrap();
    let out = cdpc(dir.path(), &["-arch=sm_90", "-cubin", "k.ll", "-o", "k.cubin", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stderr(&out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    assert_eq!(lines.len(), 1, "{}", stderr(&out));
    assert_eq!(lines[0]["code"], "E1023");
    assert!(lines[0]["message"].as_str().unwrap().contains("Parsing error near '.bogus_directive'"), "{}", lines[0]);
    assert!(!dir.path().join("k.cubin").exists());
}
