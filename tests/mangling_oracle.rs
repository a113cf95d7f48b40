//! The mangling oracle: kernels and device functions without `extern "C"` get the symbols nvcc
//! gives them (Itanium C++ ABI names), for hundreds of random signatures.
//!
//! Each run writes one `.cu` file of random `__global__` and `__device__` functions (every
//! scalar type, pointers to const, volatile and unqualified objects, pointers to pointers, structs by value and by
//! pointer, `dim3`, `cudaStream_t`, `cudaEvent_t`, `cudaError_t`, pointers to functions written
//! out and behind `typedef`s, repeated types so that the ABI's substitutions are exercised). nvcc compiles it to PTX (`-rdc=true` keeps every
//! external function); the answer is the name on each `.entry` and `.func` line. cdpc compiles
//! the same text, and the names must be the same, function by function.
//!
//! The seed is printed; `CDPC_ORACLE_SEED=N` replays a run. Skips (and passes) with a printed
//! reason when nvcc cannot be found (`cargo xtask setup` installs it).

use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::toolchain::{ToolSearch, Toolchain};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const DEFAULT_SEED: u64 = 0x4D41_4E47_4C45;
const FUNCTIONS: usize = 300;

const SCALARS: &[&str] = &[
    "bool",
    "char",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned int",
    "long",
    "unsigned long",
    "long long",
    "unsigned long long",
    "size_t",
    "float",
    "double",
    "cudaError_t",
    "dim3",
    "cudaStream_t",
    "cudaEvent_t",
];
const STRUCTS: &[&str] = &["Pair", "Node", "Big"];
/// Pointers to functions behind `typedef`s (`source` declares them), used like the structs.
const FN_TYPEDEFS: &[&str] = &["Unary", "Binary", "Thunk"];

fn random_type(rng: &mut fastrand::Rng) -> String {
    if rng.u8(0..8) == 0 {
        return fn_pointer(rng);
    }
    let base = if rng.u8(0..6) == 0 {
        FN_TYPEDEFS[rng.usize(0..FN_TYPEDEFS.len())].to_string()
    } else if rng.u8(0..4) == 0 {
        STRUCTS[rng.usize(0..STRUCTS.len())].to_string()
    } else {
        SCALARS[rng.usize(0..SCALARS.len())].to_string()
    };
    // Structs, dim3 and the handles by value; anything behind up to two pointers, each pointee
    // const, volatile, both or neither (`PVKi`). `void *` too.
    match rng.u8(0..6) {
        0 | 1 => base,
        2 => format!("{base} *"),
        3 => format!("{}{base} *", quals(rng)),
        4 => format!("{}{base} *{}*", quals(rng), quals(rng).replace("const volatile", "volatile const")),
        _ => format!("{}void *", quals(rng)),
    }
}

/// A pointer to a function written out, `int (*)(float, Pair *)` (`source` puts the
/// parameter's name after the `*`): its types repeat others, so that the function type's
/// substitutions are exercised.
fn fn_pointer(rng: &mut fastrand::Rng) -> String {
    let scalar = |rng: &mut fastrand::Rng| match rng.u8(0..4) {
        0 => format!("{} *", STRUCTS[rng.usize(0..STRUCTS.len())]),
        _ => SCALARS[rng.usize(0..SCALARS.len())].to_string(),
    };
    let ret = if rng.bool() { "void".to_string() } else { scalar(rng) };
    let params: Vec<String> = (0..rng.usize(0..4)).map(|_| scalar(rng)).collect();
    format!("{ret} (*)({})", if params.is_empty() { "void".to_string() } else { params.join(", ") })
}

/// A pointee's qualifiers, as a declaration writes them before the type or after a `*`.
fn quals(rng: &mut fastrand::Rng) -> &'static str {
    ["", "const ", "volatile ", "const volatile "][rng.usize(0..4)]
}

fn source(rng: &mut fastrand::Rng) -> String {
    let mut src = String::from(
        "struct Pair { int a; int b; };\nstruct Node { Node *next; float v; };\nstruct Big { double d[4]; char c; };\n\
         typedef int (*Unary)(int);\ntypedef Pair *(*Binary)(float, Pair *);\ntypedef void (*Thunk)(void);\n",
    );
    for i in 0..FUNCTIONS {
        let n = rng.usize(0..7);
        let params: Vec<String> = (0..n)
            .map(|p| {
                let ty = random_type(rng);
                if ty.contains("(*)") {
                    ty.replacen("(*)", &format!("(*p{p})"), 1)
                } else {
                    format!("{ty} p{p}")
                }
            })
            .collect();
        let (qualifier, name) = if rng.bool() { ("__global__", format!("k{i}")) } else { ("__device__", format!("d{i}")) };
        src.push_str(&format!("{qualifier} void {name}({}) {{}}\n", params.join(", ")));
    }
    src
}

/// Function name as written -> symbol, from PTX: the `.entry` and `.func` lines. The name as
/// written is read back from the symbol (`_Z<len><name>`), which both compilers follow.
fn symbols(ptx: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in ptx.lines() {
        let Some(at) = line.find(".entry ").map(|i| i + 7).or_else(|| line.contains(".func").then(|| line.rfind(' ').map_or(0, |i| i + 1))) else {
            continue;
        };
        let symbol: String = line[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let Some(rest) = symbol.strip_prefix("_Z") else { continue };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(len) = digits.parse::<usize>() else { continue };
        let name = rest[digits.len()..].chars().take(len).collect::<String>();
        out.insert(name, symbol);
    }
    out
}

fn nvcc() -> Result<PathBuf, String> {
    let tools = Toolchain::discover(&ToolSearch::default()).map_err(|e| format!("the NVIDIA tools were not found, run `cargo xtask setup`:\n{e}"))?;
    let bin = tools.ptxas.parent().ok_or("ptxas has no folder")?.to_path_buf();
    let nvcc = bin.join(format!("nvcc{}", std::env::consts::EXE_SUFFIX));
    nvcc.is_file().then_some(nvcc).ok_or_else(|| format!("nvcc is not next to ptxas in {}", bin.display()))
}

#[test]
fn cdpc_mangles_names_as_nvcc_does() {
    let nvcc = match nvcc() {
        Ok(n) => n,
        Err(why) => return println!("skipped: {why}"),
    };
    let seed = std::env::var("CDPC_ORACLE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_SEED);
    println!("seed {seed} (CDPC_ORACLE_SEED={seed} replays this run)");
    let mut rng = fastrand::Rng::with_seed(seed);
    let text = source(&mut rng);

    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("mangling.cu");
    let ptx = dir.path().join("mangling.ptx");
    std::fs::write(&cu, &text).unwrap();
    let bin = nvcc.parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    let out = Command::new(&nvcc).args(["-x", "cu", "-arch=sm_90", "-rdc=true", "-ptx"]).arg(&cu).arg("-o").arg(&ptx).env("PATH", path).output().expect("nvcc runs");
    assert!(out.status.success(), "nvcc failed:\n{}\n{text}", String::from_utf8_lossy(&out.stderr));
    let expected = symbols(&std::fs::read_to_string(&ptx).unwrap());
    assert_eq!(expected.len(), FUNCTIONS, "nvcc's PTX should name every function");

    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let compiled = driver::compile(&text, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}\n{text}"));
    let got = symbols(&String::from_utf8(compiled.output).unwrap());

    let mismatches: Vec<String> = expected
        .iter()
        .filter(|(name, symbol)| got.get(*name) != Some(symbol))
        .map(|(name, symbol)| {
            let line = text.lines().find(|l| l.contains(&format!(" {name}("))).unwrap_or("");
            format!("{line}\n  nvcc: {symbol}\n  cdpc: {}", got.get(name).map_or("(missing)", String::as_str))
        })
        .collect();
    assert!(mismatches.is_empty(), "{} of {FUNCTIONS} names differ:\n{}", mismatches.len(), mismatches[..mismatches.len().min(5)].join("\n"));
}

#[test]
fn extern_c_names_stay_as_written() {
    let text = "extern \"C\" __global__ void k(int *p) {}\nextern \"C\" { __device__ int d(int x) { return x; } }\n__global__ void m(int *p) {}";
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let ptx = String::from_utf8(driver::compile(text, &options).unwrap().output).unwrap();
    assert!(ptx.contains(".entry k("), "{ptx}");
    assert!(ptx.contains(" d("), "{ptx}");
    assert!(ptx.contains(".entry _Z1mPi("), "{ptx}");
}
