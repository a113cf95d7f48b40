//! `--emit host-obj` of the kernel language (`-x cdp`: these `.cu` files are nvcc's input
//! too): the x86-64 object that host programs link like one of `nvcc -dc`'s, with stubs made
//! from cdpc's signatures and launchers for g++. Its sections and symbols are compared with
//! nvcc's object of the same file; an unchanged host
//! program compiled by nvcc (declaring the kernels, launching with `<<<>>>`) and one compiled
//! by g++ (including the header cdpc writes, calling the launcher) must link with it. There is
//! no GPU here: the programs are linked, not run. Cases skip with a printed reason without the
//! NVIDIA tools, nvcc, g++ or readelf/nm.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::build_common::{cdpc, have, run, stderr, tool_dir};

const KERNELS: &str = r#"
extern "C" __global__ void child(int *p) { p[threadIdx.x] += 1; }
extern "C" __global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }
__global__ void scale(float *p, float s, dim3 shape, unsigned char flag) { p[threadIdx.x] *= s + shape.x + flag; }
"#;

const NVCC_MAIN: &str = r#"
extern "C" __global__ void parent(int *);
__global__ void scale(float *p, float s, dim3 shape, unsigned char flag);
int main() {
    int *p; float *f;
    cudaMalloc(&p, 128); cudaMalloc(&f, 128);
    parent<<<1, 1>>>(p);
    scale<<<1, 32>>>(f, 2.0f, dim3(1, 2, 3), 1);
    return (int)cudaDeviceSynchronize();
}
"#;

const GXX_MAIN: &str = r#"
#include "kernels.h"
int main() {
    int *p = 0;
    cudaMalloc((void **)&p, 128);
    cudaError_t e = cdpc_launch_parent(dim3(1), dim3(1), 0, 0, p);
    return e == cudaSuccess ? (int)cudaDeviceSynchronize() : (int)e;
}
"#;

/// The project: the kernels compiled to `kernels.o` with its header.
fn project() -> Option<tempfile::TempDir> {
    tool_dir()?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernels.cu"), KERNELS).unwrap();
    let out = cdpc(dir.path(), &["-x", "cdp", "kernels.cu", "--emit", "host-obj", "-o", "kernels.o", "--host-header", "kernels.h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    Some(dir)
}

/// `nm` of an object: (kind letter, name) of every symbol.
fn symbols(object: &Path) -> BTreeSet<(char, String)> {
    let out = Command::new("nm").arg(object).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().rev();
            let name = w.next()?.to_string();
            let kind = w.next()?.chars().next()?;
            Some((kind, name))
        })
        .collect()
}

/// The global symbols of an object (an upper-case kind letter).
fn globals(object: &Path) -> BTreeSet<(char, String)> {
    symbols(object).into_iter().filter(|(kind, _)| kind.is_ascii_uppercase()).collect()
}

fn sections(object: &Path) -> BTreeSet<String> {
    let out = Command::new("readelf").arg("-SW").arg(object).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(']').nth(1)?.split_whitespace().next().map(str::to_string))
        .filter(|s| s.starts_with("__nv") || s.starts_with(".nv") || s == ".init_array")
        .collect()
}

#[test]
fn the_object_has_nvcc_dc_sections_registration_and_a_stub_per_kernel() {
    let Some(dir) = project() else { return };
    if !have("nm") || !have("readelf") {
        return;
    }
    let ours = dir.path().join("kernels.o");
    let bytes = std::fs::read(&ours).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 62, "an x86-64 object");
    let symbols = globals(&ours);
    let id = symbols.iter().find_map(|(_, n)| n.strip_prefix("__fatbinwrap")).expect("a __fatbinwrap symbol").to_string();
    for expected in [
        ('T', "child".to_string()),
        ('T', "parent".to_string()),
        ('T', "_Z5scalePff4dim3h".to_string()),
        ('D', format!("__fatbinwrap{id}")),
        ('U', format!("__cudaRegisterLinkedBinary{id}")),
        ('T', "cdpc_launch_parent".to_string()),
    ] {
        assert!(symbols.contains(&expected), "{expected:?} missing from {symbols:?}");
    }
    // nvcc -dc's object of the same file: the same sections, the same kernel stubs.
    let nvcc = tool_dir().unwrap().join("nvcc");
    if !nvcc.is_file() || !have("g++") {
        println!("skipped: the comparison with nvcc -dc needs nvcc and g++");
        return;
    }
    run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "kernels.cu", "-o", "nvcc.o"]);
    let theirs = dir.path().join("nvcc.o");
    assert_eq!(sections(&ours), sections(&theirs).into_iter().filter(|s| !s.starts_with(".nvHR")).collect());
    let kernels =
        |s: &BTreeSet<(char, String)>| -> BTreeSet<String> { s.iter().filter(|(k, n)| *k == 'T' && !n.contains("device_stub") && !n.starts_with("cdpc_launch_")).map(|(_, n)| n.clone()).collect() };
    assert_eq!(kernels(&symbols), kernels(&globals(&theirs)));
}

#[test]
fn an_unchanged_nvcc_host_program_links_with_it() {
    let Some(dir) = project() else { return };
    let nvcc = tool_dir().unwrap().join("nvcc");
    if !nvcc.is_file() || !have("g++") {
        return;
    }
    std::fs::write(dir.path().join("main.cu"), NVCC_MAIN).unwrap();
    // Separately: nvcc -dc, nvcc -dlink, the host link by nvcc; and all in one nvcc command.
    run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "main.cu", "-o", "main.o"]);
    run(&nvcc, dir.path(), &["-dlink", "-arch=sm_90", "main.o", "kernels.o", "-o", "dlink.o"]);
    run(&nvcc, dir.path(), &["-arch=sm_90", "main.o", "kernels.o", "dlink.o", "-o", "app"]);
    run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "main.cu", "kernels.o", "-o", "app2"]);
    for app in ["app", "app2"] {
        assert!(dir.path().join(app).is_file());
        // The program's <<<>>> calls cdpc's stubs.
        let calls = Command::new("objdump").args(["-d", "--no-show-raw-insn"]).arg(dir.path().join(app)).output();
        if let Ok(calls) = calls {
            let text = String::from_utf8_lossy(&calls.stdout);
            assert!(text.contains("call") && text.contains("<parent>") && text.contains("<_Z5scalePff4dim3h>"), "{app} calls no stub");
        }
    }
}

#[test]
fn a_gxx_program_with_the_header_links_with_it() {
    let Some(dir) = project() else { return };
    let tools = tool_dir().unwrap();
    let nvcc = tools.join("nvcc");
    if !nvcc.is_file() || !have("g++") {
        return;
    }
    let header = std::fs::read_to_string(dir.path().join("kernels.h")).unwrap();
    assert!(header.contains("cudaError_t cdpc_launch_parent(dim3 grid, dim3 block, size_t shared_mem, cudaStream_t stream, int * p);"), "{header}");
    assert!(header.contains("extern \"C\" __global__ void parent(int * p);") && header.contains("__global__ void scale(float * p, float s, dim3 shape, unsigned char flag);"), "{header}");
    std::fs::write(dir.path().join("main.cpp"), GXX_MAIN).unwrap();
    let root = tools.parent().unwrap();
    let include = format!("-I{}", root.join("include").display());
    run(Path::new("g++"), dir.path(), &["-c", &include, "main.cpp", "-o", "main.o"]);
    run(&nvcc, dir.path(), &["-dlink", "-arch=sm_90", "kernels.o", "-o", "dlink.o"]);
    let lib = root.join("lib");
    let (devrt, cudart) = (lib.join("libcudadevrt.a"), lib.join("libcudart_static.a"));
    run(Path::new("g++"), dir.path(), &["main.o", "kernels.o", "dlink.o", devrt.to_str().unwrap(), cudart.to_str().unwrap(), "-ldl", "-lpthread", "-lrt", "-o", "app"]);
    assert!(dir.path().join("app").is_file());
}

/// The structs of the ABI test, one per way System V passes a struct: two floats in one SSE
/// register, an int and a double in a general and an SSE one, 3 and 12 bytes in general ones
/// (the last eightbyte narrower than 8), a float and an int sharing a general register, 24
/// bytes in memory, and CUDA's 16-aligned float4 in two SSE registers. Then the ways C names
/// them: a tagless struct, union and enum by their typedef names, a tagged union as `union U`,
/// a tagged enum as `enum Color` (the header must spell each as the host program does, or its
/// call is of another type).
const ABI_STRUCTS: &str = r#"
struct F2 { float x, y; };
struct ID { int a; double d; };
struct C3 { char c[3]; };
struct I3 { int a, b, c; };
struct FI { float f; int i; };
struct Big { double a, b, c; };
typedef struct { int a; double d; } Pair;
union U { int i; float f; };
typedef union { double d; char c[8]; } W;
typedef enum { M0, M1, M2 } Mode;
enum Color { RED, GREEN };
"#;

const ABI_KERNELS: &str = r#"
#include "structs.h"
extern "C" __global__ void many(int a, F2 f2, ID id, C3 c3, I3 i3, Big big, FI fi, float4 v, double d, char ch) {}
// five general registers taken: I3 needs two, so it goes to memory whole, and `f` takes the last
extern "C" __global__ void spill(long a, long b, long c, long d, long e, I3 s, int f, dim3 g) {}
__global__ void mangled(F2 f, Big b) {}
extern "C" __global__ void named(Pair p, U u, W w, Pair *q, Mode m, Color c) {}
"#;

/// g++ calls the stubs and launchers; fake `cudaLaunchKernel` and `__cudaPopCallConfiguration`
/// record what reaches them, and the program compares each argument's bytes with the values it
/// passed. g++ is the oracle of the calling convention.
const ABI_MAIN: &str = r#"
#include <cstdio>
#include <cstring>
#include <vector>
#include "structs.h"
#include "kernels.h"

static std::vector<std::vector<unsigned char>> got;
static std::vector<size_t> sizes;
static dim3 got_grid, got_block; static size_t got_shared; static cudaStream_t got_stream;
extern "C" cudaError_t cudaLaunchKernel(const void *, dim3 g, dim3 b, void **args, size_t shared, cudaStream_t stream) {
    got.clear();
    for (size_t i = 0; i < sizes.size(); i++) {
        const unsigned char *p = (const unsigned char *)args[i];
        got.push_back(std::vector<unsigned char>(p, p + sizes[i]));
    }
    got_grid = g; got_block = b; got_shared = shared; got_stream = stream;
    return cudaSuccess;
}
extern "C" unsigned __cudaPopCallConfiguration(dim3 *g, dim3 *b, size_t *shared, void *stream) {
    *g = dim3(7, 8, 9); *b = dim3(32, 2, 1); *shared = 48; *(cudaStream_t *)stream = (cudaStream_t)0x77;
    return 0;
}
extern "C" void __cudaRegisterFunction(void *, const void *, const char *, const char *, int, void *, void *, void *, void *, void *) {}
extern "C" void REGISTER_LINKED(void *, void *, void *, void *) {}

extern "C" void many(int, F2, ID, C3, I3, Big, FI, float4, double, char);
extern "C" void spill(long, long, long, long, long, I3, int, dim3);
void mangled(F2, Big);
extern "C" void named(Pair, U, W, Pair *, Mode, Color);

static int failures = 0;
template <class T> static void expect(size_t i, const T &v, const char *what) {
    if (i >= got.size() || got[i].size() != sizeof(T) || memcmp(got[i].data(), &v, sizeof(T)) != 0) {
        printf("argument %zu (%s) differs\n", i, what);
        failures++;
    }
}
static void config(dim3 g, dim3 b, size_t shared, cudaStream_t s) {
    if (got_grid.x != g.x || got_grid.y != g.y || got_grid.z != g.z || got_block.x != b.x || got_block.y != b.y || got_block.z != b.z || got_shared != shared || got_stream != s) {
        printf("launch configuration differs\n");
        failures++;
    }
}

int main() {
    int a = -7; F2 f2 = {1.5f, -2.25f}; ID id = {42, 3.125}; C3 c3 = {{'x', 'y', 'z'}};
    I3 i3 = {10, 20, 30}; Big big = {0.5, 1.5, 2.5}; FI fi = {6.5f, 99};
    float4 v = make_float4(1.f, 2.f, 3.f, 4.f); double d = 9.75; char ch = 'q';
    sizes = {sizeof a, sizeof f2, sizeof id, sizeof c3, sizeof i3, sizeof big, sizeof fi, sizeof v, sizeof d, sizeof ch};
    for (int via_launcher = 0; via_launcher < 2; via_launcher++) {
        got.clear();
        if (via_launcher) {
            cdpc_launch_many(dim3(2, 3, 4), dim3(5, 6, 7), 99, (cudaStream_t)0x1234, a, f2, id, c3, i3, big, fi, v, d, ch);
            config(dim3(2, 3, 4), dim3(5, 6, 7), 99, (cudaStream_t)0x1234);
        } else {
            many(a, f2, id, c3, i3, big, fi, v, d, ch);
            config(dim3(7, 8, 9), dim3(32, 2, 1), 48, (cudaStream_t)0x77);
        }
        expect(0, a, "int"); expect(1, f2, "F2"); expect(2, id, "ID"); expect(3, c3, "C3"); expect(4, i3, "I3");
        expect(5, big, "Big"); expect(6, fi, "FI"); expect(7, v, "float4"); expect(8, d, "double"); expect(9, ch, "char");
    }
    dim3 g(11, 12, 13);
    sizes = {8, 8, 8, 8, 8, sizeof i3, sizeof(int), sizeof g};
    for (int via_launcher = 0; via_launcher < 2; via_launcher++) {
        if (via_launcher) cdpc_launch_spill(dim3(1), dim3(1), 0, 0, 1, 2, 3, 4, 5, i3, 6, g);
        else spill(1, 2, 3, 4, 5, i3, 6, g);
        long l = 5; int f = 6;
        expect(4, l, "long"); expect(5, i3, "I3 after five longs"); expect(6, f, "int after it"); expect(7, g, "dim3");
    }
    sizes = {sizeof f2, sizeof big};
    mangled(f2, big);
    expect(0, f2, "F2 of a mangled kernel"); expect(1, big, "Big of a mangled kernel");
    Pair pair = {-3, 0.75}; U u; u.f = 1.25f; W w; w.d = -6.5; Pair *q = &pair; Mode m = M2; Color c = GREEN;
    sizes = {sizeof pair, sizeof u, sizeof w, sizeof q, sizeof m, sizeof c};
    for (int via_launcher = 0; via_launcher < 2; via_launcher++) {
        if (via_launcher) cdpc_launch_named(dim3(1), dim3(1), 0, 0, pair, u, w, q, m, c);
        else named(pair, u, w, q, m, c);
        expect(0, pair, "Pair"); expect(1, u, "union U"); expect(2, w, "W"); expect(3, q, "Pair *");
        expect(4, m, "Mode"); expect(5, c, "enum Color");
    }
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures;
}
"#;

#[test]
fn structs_by_value_reach_the_launch_as_gxx_passes_them() {
    let Some(tools) = tool_dir() else { return };
    if !have("g++") || !have("nm") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("structs.h"), ABI_STRUCTS).unwrap();
    std::fs::write(dir.path().join("kernels.cu"), ABI_KERNELS).unwrap();
    let out = cdpc(dir.path(), &["-x", "cdp", "kernels.cu", "--emit", "host-obj", "-o", "kernels.o", "--host-header", "kernels.h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let header = std::fs::read_to_string(dir.path().join("kernels.h")).unwrap();
    assert!(header.contains("struct F2;") && header.contains("struct I3 s, int f, dim3 g);"), "{header}");
    // a tagged union keeps its keyword and its declaration; tagless types their typedef names,
    // no declaration, and a comment that the host program defines them first
    assert!(header.contains("\nunion U;\n") && header.contains("Pair p, union U u, W w, Pair * q, Mode m, enum Color c);"), "{header}");
    assert!(!header.contains("struct Pair") && !header.contains("union W") && !header.contains("enum Mode"), "{header}");
    assert!(header.contains("defines `Mode`, `Pair`, `W`, `enum Color` before it includes this\n"), "{header}");
    // the registration function named by the object's module id
    let register = globals(&dir.path().join("kernels.o"))
        .into_iter()
        .find(|(kind, name)| *kind == 'U' && name.starts_with("__cudaRegisterLinkedBinary"))
        .expect("the object calls __cudaRegisterLinkedBinary<ID>")
        .1;
    std::fs::write(dir.path().join("main.cpp"), ABI_MAIN.replace("REGISTER_LINKED", &register)).unwrap();
    let include = format!("-I{}", tools.parent().unwrap().join("include").display());
    run(Path::new("g++"), dir.path(), &["-O1", &include, "main.cpp", "kernels.o", "-o", "app"]);
    let ran = Command::new(dir.path().join("app")).output().unwrap();
    assert!(ran.status.success(), "{}{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    // the header's half for nvcc declares the kernels with the same types
    let nvcc = tools.join("nvcc");
    if nvcc.is_file() {
        std::fs::write(dir.path().join("launch.cu"), NVCC_NAMED).unwrap();
        run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "launch.cu", "-o", "launch.o"]);
    }
}

/// An nvcc host program that launches `named` with `<<<>>>` through the header's declaration.
const NVCC_NAMED: &str = r#"
#include "structs.h"
#include "kernels.h"
void launch(Pair p, U u, W w) { named<<<1, 1>>>(p, u, w, &p, M1, RED); }
"#;

/// The local text symbols of an object (kind `t`).
fn local_text(object: &Path) -> BTreeSet<String> {
    symbols(object).into_iter().filter(|(kind, _)| *kind == 't').map(|(_, name)| name).collect()
}

#[test]
fn static_kernels_get_internal_stubs_no_launcher_and_two_objects_link() {
    let Some(_) = tool_dir() else { return };
    let nvcc = tool_dir().unwrap().join("nvcc");
    if !nvcc.is_file() || !have("g++") || !have("nm") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Two files with a `static` kernel of the same name, each launched by its file's public kernel.
    for (file, value) in [("a", 1), ("b", 2)] {
        let source = format!("static __global__ void set(int *p) {{ *p = {value}; }}\n__global__ void run_{file}(int *p) {{ set<<<1, 1>>>(p); }}\n");
        std::fs::write(dir.path().join(format!("{file}.cu")), &source).unwrap();
        let out = cdpc(dir.path(), &["-x", "cdp", &format!("{file}.cu"), "--emit", "host-obj", "-o", &format!("{file}.o"), "--host-header", &format!("{file}.h")]);
        assert!(out.status.success(), "{}", stderr(&out));
        let header = std::fs::read_to_string(dir.path().join(format!("{file}.h"))).unwrap();
        assert!(!header.contains("set"), "a static kernel is in the header:\n{header}");
        let object = dir.path().join(format!("{file}.o"));
        let symbols = globals(&object);
        assert!(symbols.iter().all(|(_, n)| !n.contains("set")), "a static kernel's stub or launcher is global: {symbols:?}");
        assert!(symbols.contains(&('T', format!("cdpc_launch__Z5run_{file}Pi"))), "{symbols:?}");
        // nvcc -dc: the stub of a static kernel is a local symbol too.
        run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", &format!("{file}.cu"), "-o", &format!("nvcc_{file}.o")]);
        assert!(local_text(&dir.path().join(format!("nvcc_{file}.o"))).iter().any(|n| n.ends_with("3setPi")));
        assert!(local_text(&object).iter().any(|n| n.ends_with("3setPi")), "{:?}", local_text(&object));
    }
    // The device link and a host link of both objects: no duplicate symbol on either side.
    std::fs::write(
        dir.path().join("main.cu"),
        "__global__ void run_a(int *);\n__global__ void run_b(int *);\nint main() { int *p; cudaMalloc(&p, 4); run_a<<<1, 1>>>(p); run_b<<<1, 1>>>(p); return (int)cudaDeviceSynchronize(); }\n",
    )
    .unwrap();
    run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "main.cu", "a.o", "b.o", "-o", "app"]);
    assert!(dir.path().join("app").is_file());
}

/// `-dc` writes the host object by default: for the kernel language (`.cdp`) the same object
/// `--emit host-obj` writes, header included; `--emit obj` the device object alone.
#[test]
fn dc_of_the_kernel_language_is_its_host_object() {
    let Some(_) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernels.cdp"), KERNELS).unwrap();
    let out = cdpc(dir.path(), &["-dc", "kernels.cdp", "-o", "dc.o", "--host-header", "dc.h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["kernels.cdp", "--emit", "host-obj", "-o", "emit.o", "--host-header", "emit.h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("dc.o"), read("emit.o"), "-dc and --emit host-obj differ");
    assert_eq!(read("dc.h"), read("emit.h"));
    assert_eq!(u16::from_le_bytes([read("dc.o")[18], read("dc.o")[19]]), 62, "an x86-64 object");
    let out = cdpc(dir.path(), &["-dc", "--emit", "obj", "kernels.cdp", "-o", "device.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cdpc::driver::archive::is_device_object(&read("device.o")));
    // `--host-header` names a host object's launchers: not with a device object.
    let out = cdpc(dir.path(), &["-dc", "--emit", "obj", "kernels.cdp", "-o", "device.o", "--host-header", "x.h"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`--host-header` describes the launchers of a host object"), "{}", stderr(&out));
}

/// A CUDA C++ file's host object is Clang's host side (its own host code, no launchers):
/// `--emit host-obj` is `-dc`'s object, and `--host-header`, whose launchers come from the
/// kernel language's signatures, is refused with the way to get them.
#[test]
fn a_cuda_cxx_host_object_is_dc_and_has_no_launcher_header() {
    let Some(_) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) { *p = 1; }\nvoid run(int *p) { k<<<1, 1>>>(p); }\n").unwrap();
    let out = cdpc(dir.path(), &["-dc", "k.cu", "-o", "dc.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["k.cu", "--emit", "host-obj", "-o", "emit.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("dc.o"), read("emit.o"));
    if have("nm") {
        let symbols = globals(&dir.path().join("dc.o"));
        assert!(symbols.contains(&('T', "_Z3runPi".to_string())) && symbols.contains(&('T', "_Z1kPi".to_string())), "{symbols:?}");
        assert!(!symbols.iter().any(|(_, n)| n.starts_with("cdpc_launch")), "{symbols:?}");
    }
    let out = cdpc(dir.path(), &["-dc", "k.cu", "-o", "h.o", "--host-header", "k.h"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("this file is CUDA C++") && err.contains("add `-x cdp`"), "{err}");
    assert!(!dir.path().join("h.o").exists() && !dir.path().join("k.h").exists());
}

/// Clang's errors in the host code are diagnostics at their line, as the device side's are, and
/// no object is written.
#[test]
fn host_code_errors_are_e1000_at_their_line() {
    let Some(_) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.cu"), "__global__ void k(int *p) { *p = 1; }\nint host() {\n    return undeclared_host_name;\n}\n").unwrap();
    let out = cdpc(dir.path(), &["-dc", "bad.cu", "-o", "bad.o"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("error[E1000]") && err.contains("undeclared_host_name") && err.contains("bad.cu:3:"), "{err}");
    assert!(!dir.path().join("bad.o").exists());
}

/// A `.cu` file whose global object's constructor launches one of its kernels, as
/// cms-patatrack's test-dynamic-parallelism library does when it is loaded.
const LAUNCH_AT_LOAD: &str = r#"
#include <cstdio>
__global__ void hello(int *p) { *p = 42; }
struct AtLoad {
    int status;
    AtLoad() { int *p; cudaMalloc(&p, sizeof(int)); hello<<<1, 1>>>(p); status = (int)cudaDeviceSynchronize(); int h = 0; cudaMemcpy(&h, p, sizeof h, cudaMemcpyDeviceToHost); if (h != 42) status = -h - 1; }
} at_load;
int main() { printf("%d\n", at_load.status); return at_load.status; }
"#;

/// The symbol each `.init_array` entry of `object` calls, in order (`readelf -r` against `nm`).
fn init_array(dir: &Path, object: &str) -> Vec<String> {
    let relocs = Command::new("readelf").current_dir(dir).args(["-rW", object]).output().expect("readelf runs");
    let text = String::from_utf8_lossy(&relocs.stdout).to_string();
    let section = text.split("Relocation section '.rela.init_array'").nth(1).unwrap_or_default();
    let symbols = Command::new("nm").current_dir(dir).args(["--defined-only", object]).output().expect("nm runs");
    let symbols = String::from_utf8_lossy(&symbols.stdout).to_string();
    section
        .lines()
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            // `.text + 150`, `.text.startup + 0` or a symbol by name.
            let target = l.split_whitespace().skip(4).collect::<Vec<_>>().join(" ");
            let (base, offset) = target.split_once(" + ").unwrap_or((&target, "0"));
            if !base.starts_with('.') {
                return Some(base.to_string());
            }
            let offset = u64::from_str_radix(offset, 16).ok()?;
            // The symbol at that offset of that section: nm gives only the offset, so the
            // section is told by the symbol's kind (`t` both): the static initializers live in
            // `.text.startup`, the others in `.text`.
            symbols
                .lines()
                .filter_map(|s| {
                    let mut w = s.split_whitespace();
                    let (value, kind, name) = (w.next()?, w.next()?, w.next()?);
                    (u64::from_str_radix(value, 16).ok()? == offset && kind.eq_ignore_ascii_case("t") && (base == ".text.startup") == name.starts_with("_GLOBAL__sub_I")).then(|| name.to_string())
                })
                .next()
        })
        .collect()
}

/// A file's kernels are registered before its static objects are constructed, as nvcc's object
/// does (the oracle: its `.init_array` lists `__sti____cudaRegisterAll` before
/// `_GLOBAL__sub_I_*`), so that a constructor may launch them; Clang lists its module
/// constructor last, and there the launch fails with "invalid resource handle" (on the
/// H100). With a GPU the program runs and prints 0.
#[test]
fn a_files_kernels_are_registered_before_its_static_objects_are_constructed() {
    if !have("readelf") || !have("nm") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("at_load.cu"), LAUNCH_AT_LOAD).unwrap();
    let out = cdpc(dir.path(), &["-dc", "at_load.cu", "-o", "cdpc.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = init_array(dir.path(), "cdpc.o");
    assert_eq!(ours.first().map(String::as_str), Some("__cuda_module_ctor"), "{ours:?}");
    assert!(ours.iter().any(|s| s.starts_with("_GLOBAL__sub_I")), "{ours:?}");
    if let Some(nvcc) = crate::build_common::nvcc() {
        run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "at_load.cu", "-o", "nvcc.o"]);
        let theirs = init_array(dir.path(), "nvcc.o");
        assert!(theirs.first().is_some_and(|s| s.contains("__sti____cudaRegisterAll")), "{theirs:?}");
    }
    let out = cdpc(dir.path(), &["at_load.cu", "-o", "at_load"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let gpu = Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !gpu {
        println!("skipped: running the program: no GPU here (`nvidia-smi -L` lists none)");
        return;
    }
    let ran = Command::new(dir.path().join("at_load")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "0\n", "{}", stderr(&ran));
}
