//! The parameter-layout oracle: thousands of random kernel signatures, laid out by
//! nvcc and by cdpc, must agree.
//!
//! The oracle is nvcc's output and nothing else. Each batch of signatures becomes one `.cu`
//! file of `extern "C" __global__ void kN(...) {}` kernels (struct definitions first), compiled
//! with `nvcc -x cu -arch=sm_90 -cubin -rdc=true`; `cuobjdump -elf` then lists, in each
//! kernel's `.nv.info.kN` section, an `EIATTR_KPARAM_INFO` entry per parameter (Ordinal,
//! Offset, Size; `EIATTR_KPARAM_INFO_V2` once a parameter is too big for the old entry's size
//! field) and the total in `EIATTR_CBANK_PARAM_SIZE` (repeated in the upper half of
//! `EIATTR_PARAM_CBANK`). A kernel nvcc refuses ("Formal parameter space overflowed (N bytes
//! required, max 32764 bytes allowed) in function kN") is taken out of the file, which is then
//! compiled again; the refusal and nvcc's N are the oracle's answer for it.
//!
//! The same text is a valid `.cdp` file (the language is a CUDA subset): cdpc's answer is
//! `cdpc::layout::param_layout` over each kernel's parameter types after `driver::check`.
//! Like nvcc, cdpc refuses a kernel definition whose parameters exceed the limit (E0304), so
//! the layouts are read from the same signatures declared as `__device__` functions (which
//! have no limit), and refusal is checked by compiling the kernel, launched from a parent,
//! and expecting E0304 exactly when nvcc refused the kernel.
//!
//! Observed relationship of the total (asserted below): nvcc's `EIATTR_CBANK_PARAM_SIZE` is the
//! end of the last parameter (offset + size), NOT rounded up to the largest parameter
//! alignment; `(double, char)` takes 9 bytes. The "N bytes required" of a refusal is that
//! same number.
//!
//! CUDA's vector types (`float2` 8-aligned, `float3` 12 bytes 4-aligned, `double4_32a`, ...)
//! are drawn wherever a scalar is: as parameters, struct members, array elements, pointees.
//! The 4-vectors CUDA 13 deprecates (`long4`, `double4`, ...) are left out (nvcc warns on each),
//! and so are the `_32a` forms: on sm_90 ptxas places a parameter aligned to 32 bytes 16 past a
//! multiple of 32 (its parameters start at 0x210 in the constant bank), which cdpc follows
//! (`Target::param_bank_base`; 2,049 of 2,051 signatures with them agreed), but near the
//! 32764-byte limit ptxas's count with such parameters is not understood yet (it refused
//! some signatures whose end is under the limit, and accepted one whose end is over it).
//!
//! Unions (`U<n>`, about a quarter of the ordinary structs) are generated like structs, as
//! parameters, members and pointees. About one member in twenty is a run of one to four
//! bit-fields of any integer type and width, unnamed ones and `: 0` among them, in structs and
//! unions. Not generated: `__align__` / `alignas` (explicit alignment is not in the .cdp
//! language), arrays as parameters (they decay to pointers, which are generated).
//!
//! The seed is printed; `CDPC_ORACLE_SEED=N` replays a run. Skips (and passes) with a printed
//! reason when nvcc or cuobjdump cannot be found (`cargo xtask setup` installs both).

use cdpc::driver::{self, CompileError, CompileOptions};
use cdpc::front::cdp::hir::FunctionKind;
use cdpc::Code;
use cdpc_tests::NvidiaTools;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

const DEFAULT_SEED: u64 = 0x0CD9_C0DE_2024;
/// Files of ordinary signatures (1 to 40 parameters, mostly under 4 KB): one nvcc run each.
const ORDINARY_BATCHES: usize = 6;
const ORDINARY_KERNELS: usize = 280;
/// Files of large signatures (over 4 KB, or near the 32764-byte limit): these hold the refusals,
/// so nvcc runs up to three times on each; keeping them apart keeps the test fast.
const LARGE_BATCHES: usize = 4;
const LARGE_KERNELS: usize = 90;
const NVCC_LIMIT: u64 = 32764;
const SHOW_MISMATCHES: usize = 5;

// ---------------------------------------------------------------------------------------------
// The generator. It writes source text only; the sizes it knows are for steering some
// signatures towards 4 KB and 32764 bytes, never for judging.

/// Every scalar type of the language, with its LP64 size (steering only).
const SCALARS: &[(&str, u64)] = &[
    ("bool", 1),
    ("char", 1),
    ("signed char", 1),
    ("unsigned char", 1),
    ("short", 2),
    ("unsigned short", 2),
    ("int", 4),
    ("unsigned int", 4),
    ("long", 8),
    ("unsigned long", 8),
    ("long long", 8),
    ("unsigned long long", 8),
    ("size_t", 8),
    ("float", 4),
    ("double", 8),
    ("cudaError_t", 4),
];

/// CUDA's vector types with their LP64 sizes (steering only), deprecated ones excepted.
const VECTORS: &[(&str, u64)] = &[
    ("char1", 1),
    ("char2", 2),
    ("char3", 3),
    ("char4", 4),
    ("uchar1", 1),
    ("uchar2", 2),
    ("uchar3", 3),
    ("uchar4", 4),
    ("short1", 2),
    ("short2", 4),
    ("short3", 6),
    ("short4", 8),
    ("ushort1", 2),
    ("ushort2", 4),
    ("ushort3", 6),
    ("ushort4", 8),
    ("int1", 4),
    ("int2", 8),
    ("int3", 12),
    ("int4", 16),
    ("uint1", 4),
    ("uint2", 8),
    ("uint3", 12),
    ("uint4", 16),
    ("long1", 8),
    ("long2", 16),
    ("long3", 24),
    ("ulong1", 8),
    ("ulong2", 16),
    ("ulong3", 24),
    ("longlong1", 8),
    ("longlong2", 16),
    ("longlong3", 24),
    ("ulonglong1", 8),
    ("ulonglong2", 16),
    ("ulonglong3", 24),
    ("float1", 4),
    ("float2", 8),
    ("float3", 12),
    ("float4", 16),
    ("double1", 8),
    ("double2", 16),
    ("double3", 24),
    ("long4_16a", 32),
    ("ulong4_16a", 32),
    ("longlong4_16a", 32),
    ("ulonglong4_16a", 32),
    ("double4_16a", 32),
];

/// The integer types of bit-fields, with their size in bytes (a width is at most 8 times it).
const BIT_FIELD_TYPES: &[(&str, u64)] = &[
    ("bool", 1),
    ("char", 1),
    ("signed char", 1),
    ("unsigned char", 1),
    ("short", 2),
    ("unsigned short", 2),
    ("int", 4),
    ("unsigned int", 4),
    ("long", 8),
    ("unsigned long", 8),
    ("long long", 8),
    ("unsigned long long", 8),
];

struct GenStruct {
    name: String,
    text: String,
    /// Indices of the structs this one names (by value or through a pointer).
    deps: Vec<usize>,
    /// Its size without padding (steering only: it keeps nesting from growing without bound).
    unpadded: u64,
}

impl GenStruct {
    /// How the type is named: `union U3` or `struct S3`.
    fn named(&self) -> String {
        let key = if self.name.starts_with('U') { "union" } else { "struct" };
        format!("{key} {}", self.name)
    }
}

struct Signature {
    kernel: String,
    /// Parameter types as spelled in C, in order (no arrays: a parameter name follows the type).
    params: Vec<String>,
    /// Structs the parameters name.
    deps: Vec<usize>,
}

struct Batch {
    structs: Vec<GenStruct>,
    sigs: Vec<Signature>,
}

impl Batch {
    fn struct_text(&self) -> String {
        self.structs.iter().map(|s| s.text.as_str()).collect()
    }

    /// The source of the batch: struct definitions, then one empty kernel per signature
    /// (except those in `skip`).
    fn source(&self, skip: &dyn Fn(&str) -> bool) -> String {
        let mut s = self.struct_text();
        for sig in &self.sigs {
            if !skip(&sig.kernel) {
                s.push_str(&kernel_text(sig));
            }
        }
        s
    }

    /// The definitions one signature needs, for a readable failure message.
    fn needed_structs(&self, sig: &Signature) -> String {
        let mut needed = vec![false; self.structs.len()];
        let mut stack = sig.deps.clone();
        while let Some(i) = stack.pop() {
            if !needed[i] {
                needed[i] = true;
                stack.extend(&self.structs[i].deps);
            }
        }
        let mut s = String::new();
        for (i, st) in self.structs.iter().enumerate() {
            if needed[i] {
                s.push_str(&st.text);
            }
        }
        s
    }
}

fn kernel_text(sig: &Signature) -> String {
    let params: Vec<String> = sig.params.iter().enumerate().map(|(i, t)| format!("{t} p{i}")).collect();
    format!("extern \"C\" __global__ void {}({}) {{}}\n", sig.kernel, params.join(", "))
}

struct Gen {
    rng: fastrand::Rng,
}

impl Gen {
    /// A scalar, or one time in five a vector type.
    fn scalar(&mut self) -> (&'static str, u64) {
        if self.rng.u32(0..5) == 0 {
            return VECTORS[self.rng.usize(..VECTORS.len())];
        }
        SCALARS[self.rng.usize(..SCALARS.len())]
    }

    fn pointer(&mut self, structs: &[GenStruct], deps: &mut Vec<usize>) -> String {
        let konst = if self.rng.bool() { "const " } else { "" };
        match self.rng.u32(0..10) {
            0..=4 => format!("{konst}{} *", self.scalar().0),
            5..=6 if !structs.is_empty() => {
                let i = self.rng.usize(..structs.len());
                deps.push(i);
                format!("{konst}{} *", structs[i].named())
            }
            7 => format!("{konst}void *"),
            8 => format!("{} **", self.scalar().0),
            _ => format!("{konst}dim3 *"),
        }
    }

    /// An ordinary struct: 1 to 8 members of mixed alignment, nested structs, arrays of one to
    /// three dimensions, pointers.
    fn ordinary_struct(&mut self, structs: &mut Vec<GenStruct>, name: String) {
        let mut deps = Vec::new();
        // About a quarter are unions, named `U<n>` (`GenStruct::named`).
        let name = if self.rng.u32(0..4) == 0 { name.replacen('S', "U", 1) } else { name };
        let mut text = format!("{} {{", if name.starts_with('U') { format!("union {name}") } else { format!("struct {name}") });
        let earlier = structs.len();
        let mut unpadded = 0;
        for f in 0..self.rng.usize(1..=8) {
            let scalar = self.scalar();
            // Nest only structs under 512 bytes, so that ordinary structs stay small.
            let nested = (earlier > 0).then(|| self.rng.usize(..earlier)).filter(|&i| structs[i].unpadded < 512);
            let (ty, size, dims) = match self.rng.u32(0..20) {
                0..=7 => (scalar.0.to_string(), scalar.1, 0),
                8..=10 => (scalar.0.to_string(), scalar.1, self.rng.usize(1..=3)),
                11..=12 => (self.pointer(structs, &mut deps), 8, 0),
                13 => ("dim3".to_string(), 12, self.rng.usize(0..=1)),
                14 => (["cudaStream_t", "cudaEvent_t"][self.rng.usize(..2)].to_string(), 8, 0),
                15 => {
                    // A run of one to four bit-fields, named or not, `: 0` among them.
                    for b in 0..self.rng.usize(1..=4) {
                        let (ty, bytes) = BIT_FIELD_TYPES[self.rng.usize(..BIT_FIELD_TYPES.len())];
                        let width = self.rng.u64(0..=bytes * 8);
                        if width == 0 || self.rng.u32(0..5) == 0 {
                            let _ = write!(text, " {ty} : {width};");
                        } else {
                            let _ = write!(text, " {ty} f{f}b{b} : {width};");
                        }
                    }
                    unpadded += 8;
                    continue;
                }
                _ if nested.is_some() => {
                    let i = nested.unwrap();
                    deps.push(i);
                    (structs[i].named(), structs[i].unpadded, if self.rng.u32(0..3) == 0 { self.rng.usize(1..=2) } else { 0 })
                }
                _ => (scalar.0.to_string(), scalar.1, 0),
            };
            let mut decl = format!(" {ty} f{f}");
            let mut count = 1;
            for _ in 0..dims {
                let n = self.rng.u64(1..=5);
                count *= n;
                let _ = write!(decl, "[{n}]");
            }
            unpadded += size * count;
            text.push_str(&decl);
            text.push(';');
        }
        text.push_str(" };\n");
        structs.push(GenStruct { name, text, deps, unpadded });
    }

    /// A struct of about `bytes` bytes: a large array between small members.
    fn big_struct(&mut self, structs: &mut Vec<GenStruct>, name: String, bytes: u64) {
        let (elem, size) = self.scalar();
        let mut text = format!("struct {name} {{");
        if self.rng.bool() {
            let _ = write!(text, " {} head;", self.scalar().0);
        }
        let n = (bytes / size).max(1);
        if self.rng.u32(0..3) == 0 && n >= 8 {
            let _ = write!(text, " {elem} a[{}][4];", n / 4);
        } else {
            let _ = write!(text, " {elem} a[{n}];");
        }
        if self.rng.bool() {
            let _ = write!(text, " {} tail;", self.scalar().0);
        }
        text.push_str(" };\n");
        structs.push(GenStruct { name, text, deps: Vec::new(), unpadded: n * size });
    }

    fn param(&mut self, structs: &[GenStruct], ordinary: usize, deps: &mut Vec<usize>) -> String {
        match self.rng.u32(0..20) {
            0..=8 => self.scalar().0.to_string(),
            9..=12 => self.pointer(structs, deps),
            13 => "dim3".to_string(),
            14 => ["cudaStream_t", "cudaEvent_t"][self.rng.usize(..2)].to_string(),
            _ => {
                let i = self.rng.usize(..ordinary);
                deps.push(i);
                structs[i].named()
            }
        }
    }

    fn batch(&mut self, first_kernel: usize, kernels: usize, large: bool) -> Batch {
        let mut structs = Vec::new();
        for i in 0..self.rng.usize(8..=16) {
            self.ordinary_struct(&mut structs, format!("S{i}"));
        }
        let ordinary = structs.len();
        // Big structs for signatures over 4 KB.
        for i in 0..3 {
            let bytes = self.rng.u64(1000..=9000);
            self.big_struct(&mut structs, format!("G{i}"), bytes);
        }
        let mut sigs = Vec::new();
        for k in 0..kernels {
            let kernel = format!("k{}", first_kernel + k);
            let mut deps = Vec::new();
            let mut params = Vec::new();
            let class = if large { self.rng.u32(0..5) } else { 5 + self.rng.u32(0..95) };
            match class {
                // Near the 32764-byte limit: a few small parameters around one struct sized to
                // land within a few dozen bytes of the limit, on either side.
                0..=1 => {
                    let before = self.rng.usize(0..=3);
                    let after = self.rng.usize(0..=2);
                    let small: Vec<(&str, u64)> = (0..before + after).map(|_| self.scalar()).collect();
                    let small_bytes: u64 = small.iter().map(|s| s.1).sum();
                    let target = (NVCC_LIMIT as i64 + self.rng.i64(-40..=40)) as u64;
                    let (elem, size) = [("char", 1), ("short", 2), ("int", 4), ("double", 8)][self.rng.usize(..4)];
                    let n = (target - small_bytes) / size;
                    let name = format!("L{k}");
                    structs.push(GenStruct { name: name.clone(), text: format!("struct {name} {{ {elem} pad[{n}]; }};\n"), deps: Vec::new(), unpadded: n * size });
                    params.extend(small[..before].iter().map(|s| s.0.to_string()));
                    deps.push(structs.len() - 1);
                    params.push(format!("struct {name}"));
                    params.extend(small[before..].iter().map(|s| s.0.to_string()));
                }
                // Over 4 KB: one to three big structs among ordinary parameters.
                2..=9 => {
                    let n = self.rng.usize(1..=20);
                    for _ in 0..n {
                        params.push(self.param(&structs, ordinary, &mut deps));
                    }
                    for _ in 0..self.rng.usize(1..=3) {
                        let i = ordinary + self.rng.usize(..3);
                        deps.push(i);
                        let at = self.rng.usize(..=params.len());
                        params.insert(at, format!("struct G{}", i - ordinary));
                    }
                }
                _ => {
                    for _ in 0..self.rng.usize(1..=40) {
                        params.push(self.param(&structs, ordinary, &mut deps));
                    }
                }
            }
            sigs.push(Signature { kernel, params, deps });
        }
        Batch { structs, sigs }
    }
}

/// Signatures that pin the limit exactly and the hand-checked example; batch 0 carries them.
fn fixed_batch(first_kernel: usize) -> Batch {
    let structs = vec![
        GenStruct { name: "A".into(), text: "struct A { char a[32764]; };\n".into(), deps: vec![], unpadded: 0 },
        GenStruct { name: "B".into(), text: "struct B { char a[32765]; };\n".into(), deps: vec![], unpadded: 0 },
        GenStruct { name: "C".into(), text: "struct C { char a[32760]; };\n".into(), deps: vec![], unpadded: 0 },
        GenStruct { name: "D".into(), text: "struct D { char c; double d; };\n".into(), deps: vec![], unpadded: 0 },
        GenStruct { name: "E".into(), text: "struct E { char c; int a[2][3]; struct D d; short s; };\n".into(), deps: vec![3], unpadded: 0 },
        GenStruct { name: "F".into(), text: "struct F { char a[32755]; };\n".into(), deps: vec![], unpadded: 0 },
    ];
    let spelled: &[(&[&str], &[usize])] = &[
        (&["int *", "double", "char", "int"], &[]),
        (&["struct A"], &[0]),
        (&["struct B"], &[1]),
        (&["int", "struct C"], &[2]),
        (&["int", "struct C", "char"], &[2]),
        (&["struct C", "double"], &[2]),
        (&["double", "char"], &[]),
        (&["char", "dim3", "char", "struct D", "struct E", "char"], &[3, 4]),
        (&["cudaStream_t", "char", "cudaEvent_t", "bool"], &[]),
        (&["char", "struct C", "double"], &[2]),
        (&["unsigned char", "size_t", "struct F"], &[5]),
    ];
    let sigs = spelled.iter().enumerate().map(|(i, (p, d))| Signature { kernel: format!("k{}", first_kernel + i), params: p.iter().map(|s| s.to_string()).collect(), deps: d.to_vec() }).collect();
    Batch { structs, sigs }
}

// ---------------------------------------------------------------------------------------------
// The oracle: nvcc and cuobjdump.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    /// Offsets and sizes of the parameters, and the total.
    Layout { offsets: Vec<u64>, sizes: Vec<u64>, total: u64 },
    /// Refused by nvcc's front end: "Formal parameter space overflowed (N bytes required, max
    /// 32764 bytes allowed)". N is the SUM OF THE PARAMETER SIZES, padding not counted:
    /// `(char, struct { char a[32760]; }, double)` says 32769 where the layout ends at 32776.
    RefusedSum { sum_of_sizes: u64 },
    /// Refused by ptxas, which sees the padded layout the front end let through: "Entry
    /// function 'kN' uses too much parameter space (0x8003 bytes, 0x7ffc max)". The number is
    /// the end of the last parameter, like the total of an accepted kernel.
    RefusedEnd { end: u64 },
}

/// nvcc's answers, through the shared tools ([`NvidiaTools`]).
struct Tools(NvidiaTools);

fn find_tools() -> Result<Tools, String> {
    NvidiaTools::find().map(Tools)
}

impl Tools {
    fn nvcc(&self, cu: &Path, cubin: &Path) -> std::process::Output {
        self.0.nvcc_cubin(cu, cubin)
    }

    fn elf(&self, cubin: &Path) -> String {
        let out = Command::new(&self.0.cuobjdump).arg("-elf").arg(cubin).output().expect("cuobjdump runs");
        assert!(out.status.success(), "cuobjdump -elf {} failed: {}", cubin.display(), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// nvcc's answer for every kernel of `batch`.
    fn oracle(&self, batch: &Batch, dir: &Path, tag: &str) -> HashMap<String, Answer> {
        let mut refused: BTreeMap<String, Answer> = BTreeMap::new();
        let cu = dir.join(format!("{tag}.cu"));
        let cubin = dir.join(format!("{tag}.cubin"));
        // Three rounds at most: the front end reports all its refusals at once and stops before
        // ptxas; ptxas then reports all of its own at once.
        for round in 0..3 {
            std::fs::write(&cu, batch.source(&|k| refused.contains_key(k))).unwrap();
            let out = self.nvcc(&cu, &cubin);
            if out.status.success() {
                let mut answers: HashMap<String, Answer> = parse_elf(&self.elf(&cubin))
                    .into_iter()
                    .map(|(k, info)| {
                        let answer = info.into_answer().unwrap_or_else(|e| panic!("{tag}: kernel {k}: {e}"));
                        (k, answer)
                    })
                    .collect();
                answers.extend(refused);
                return answers;
            }
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
            let found = parse_refusals(&stderr);
            assert!(round < 2 && !found.is_empty(), "{tag}: nvcc failed and not (only) for parameter space:\n{stderr}\nsource in {}", cu.display());
            refused.extend(found);
        }
        unreachable!()
    }
}

/// The refusals in nvcc's error output, one line per refused kernel:
/// `a.cu(6): Error: Formal parameter space overflowed (32765 bytes required, max 32764 bytes
/// allowed) in function k2` from the front end, and `ptxas a.ptx, line 119; error   : Entry
/// function 'k3' uses too much parameter space (0x8003 bytes, 0x7ffc max).` from ptxas.
/// Empty when any error line is something else (the caller then fails with the whole text).
fn parse_refusals(stderr: &str) -> BTreeMap<String, Answer> {
    let mut found = BTreeMap::new();
    for line in stderr.lines().filter(|l| l.contains("rror")) {
        if line.starts_with("ptxas fatal") && line.contains("aborted due to errors") {
            continue;
        }
        if let Some(rest) = line.split("Formal parameter space overflowed (").nth(1) {
            let sum_of_sizes: u64 = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("cannot read `{line}`"));
            assert!(rest.contains(&format!("max {NVCC_LIMIT} bytes allowed")), "a different limit: `{line}`");
            let kernel = rest.rsplit("in function ").next().unwrap().trim().to_string();
            found.insert(kernel, Answer::RefusedSum { sum_of_sizes });
        } else if let Some(rest) = line.split("Entry function '").nth(1).filter(|r| r.contains("uses too much parameter space (0x")) {
            let kernel = rest.split('\'').next().unwrap().to_string();
            let numbers: Vec<u64> = rest.split(['(', ')', ',', ' ']).filter_map(|w| u64::from_str_radix(w.strip_prefix("0x")?, 16).ok()).collect();
            assert!(numbers.len() == 2 && numbers[1] == NVCC_LIMIT, "cannot read `{line}`");
            found.insert(kernel, Answer::RefusedEnd { end: numbers[0] });
        } else {
            return BTreeMap::new();
        }
    }
    found
}

#[derive(Default, Debug)]
struct KernelInfo {
    /// ordinal -> (offset, size)
    params: BTreeMap<u64, (u64, u64)>,
    cbank_param_size: Option<u64>,
    param_cbank_size: Option<u64>,
}

impl KernelInfo {
    fn into_answer(self) -> Result<Answer, String> {
        let n = self.params.len() as u64;
        if self.params.keys().copied().ne(0..n) {
            return Err(format!("parameter ordinals are not 0..{n}: {:?}", self.params));
        }
        let total = self.cbank_param_size.unwrap_or(0);
        if self.param_cbank_size.unwrap_or(0) != total {
            return Err(format!("EIATTR_PARAM_CBANK says {:?} bytes, EIATTR_CBANK_PARAM_SIZE {total}", self.param_cbank_size));
        }
        let (offsets, sizes) = self.params.values().copied().unzip();
        Ok(Answer::Layout { offsets, sizes, total })
    }
}

fn hex_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let value = rest.trim_start().strip_prefix(':')?.split_whitespace().next()?;
    u64::from_str_radix(value.strip_prefix("0x")?, 16).ok()
}

/// The `.nv.info.<kernel>` sections of `cuobjdump -elf`.
fn parse_elf(text: &str) -> BTreeMap<String, KernelInfo> {
    let mut kernels: BTreeMap<String, KernelInfo> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut attribute = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix(".nv.info.") {
            let name = name.trim().to_string();
            kernels.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        if line.starts_with('.') {
            current = None;
            continue;
        }
        let Some(kernel) = &current else { continue };
        let line = line.trim();
        if let Some(a) = line.strip_prefix("Attribute:") {
            attribute = a.trim().to_string();
        } else if let Some(value) = line.strip_prefix("Value:") {
            let info = kernels.get_mut(kernel).unwrap();
            match attribute.as_str() {
                "EIATTR_KPARAM_INFO" | "EIATTR_KPARAM_INFO_V2" => {
                    let field = |k| hex_after(value, k).unwrap_or_else(|| panic!("no {k} in `{value}`"));
                    let previous = info.params.insert(field("Ordinal"), (field("Offset"), field("Size")));
                    assert!(previous.is_none(), "{kernel}: parameter listed twice: `{value}`");
                }
                "EIATTR_CBANK_PARAM_SIZE" => {
                    let v = value.split_whitespace().next().and_then(|v| u64::from_str_radix(v.strip_prefix("0x")?, 16).ok());
                    info.cbank_param_size = Some(v.unwrap_or_else(|| panic!("{kernel}: cannot read `{value}`")));
                }
                "EIATTR_PARAM_CBANK" => {
                    // `0x18 0x680210`: symbol index, then size << 16 | offset in the bank.
                    let v = value.split_whitespace().nth(1).and_then(|v| u64::from_str_radix(v.strip_prefix("0x")?, 16).ok());
                    info.param_cbank_size = Some(v.unwrap_or_else(|| panic!("{kernel}: cannot read `{value}`")) >> 16);
                }
                _ => {}
            }
        }
    }
    kernels
}

// ---------------------------------------------------------------------------------------------
// cdpc's answer.

fn diagnostics_text(e: &CompileError, source: &str) -> String {
    match e {
        CompileError::Diagnostics(d) => cdpc::render::human(d, "oracle.cdp", source, cdpc::render::Color::Never),
        other => other.to_string(),
    }
}

/// cdpc's layout of every kernel of `batch` (the same text nvcc compiled, refused kernels
/// included, with `__global__` made `__device__` so that cdpc's size check, tested
/// separately, does not stop it).
/// Per kernel: offsets, size, and the sum of the parameter sizes (for nvcc's front-end refusals).
fn cdpc_layouts(batch: &Batch) -> HashMap<String, (Vec<u64>, u64, u64)> {
    let source = batch.source(&|_| false).replace("__global__", "__device__");
    let checked = driver::check(&source, &CompileOptions::default()).unwrap_or_else(|e| panic!("cdpc rejects a signature batch nvcc accepts:\n{}\n{source}", diagnostics_text(&e, &source)));
    let module = &checked.module;
    module
        .functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Device)
        .map(|f| {
            let layout = cdpc::layout::param_layout(f.param_types(), module, &module.target);
            let sum = f.param_types().map(|t| module.size_align(t).0).sum();
            (f.name.clone(), (layout.offsets, layout.size, sum))
        })
        .collect()
}

/// Compiles `sig`'s kernel launched from a parent; true when cdpc refuses with E0304.
fn cdpc_refuses_launch(batch: &Batch, sig: &Signature) -> Result<bool, String> {
    let mut source = batch.needed_structs(sig) + &kernel_text(sig);
    let params: Vec<String> = sig.params.iter().enumerate().map(|(i, t)| format!("{t} *a{i}")).collect();
    let args: Vec<String> = (0..sig.params.len()).map(|i| format!("*a{i}")).collect();
    let _ = writeln!(source, "extern \"C\" __global__ void parent({}) {{ {}<<<1, 1>>>({}); }}", params.join(", "), sig.kernel, args.join(", "));
    match driver::check(&source, &CompileOptions::default()) {
        Ok(_) => Ok(false),
        Err(CompileError::Diagnostics(d)) if d.iter().filter(|d| d.is_error()).all(|d| d.code == Code::ParamBufferTooLarge) => Ok(true),
        Err(e) => Err(format!("the launch does not check:\n{}\n{source}", diagnostics_text(&e, &source))),
    }
}

// ---------------------------------------------------------------------------------------------

fn seed() -> u64 {
    match std::env::var("CDPC_ORACLE_SEED") {
        Ok(s) => {
            let s = s.trim();
            let parsed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("CDPC_ORACLE_SEED=`{s}` is not a number"))
        }
        Err(_) => DEFAULT_SEED,
    }
}

#[test]
fn hand_example_reads_from_the_elf() {
    let tools = match find_tools() {
        Ok(t) => t,
        Err(why) => return println!("skipped: {why}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let batch = fixed_batch(0);
    let answers = tools.oracle(&batch, dir.path(), "hand");
    // child(int *data, double x, char c, int n): nvcc 13.5 stores at 0, 8, 16, 20.
    assert_eq!(answers["k0"], Answer::Layout { offsets: vec![0, 8, 16, 20], sizes: vec![8, 8, 1, 4], total: 24 });
    assert_eq!(answers["k1"], Answer::Layout { offsets: vec![0], sizes: vec![32764], total: 32764 });
    assert_eq!(answers["k2"], Answer::RefusedSum { sum_of_sizes: 32765 });
    assert_eq!(answers["k3"], Answer::Layout { offsets: vec![0, 4], sizes: vec![4, 32760], total: 32764 });
    assert_eq!(answers["k4"], Answer::RefusedSum { sum_of_sizes: 32765 });
    assert_eq!(answers["k5"], Answer::RefusedSum { sum_of_sizes: 32768 });
    // Not rounded up to the alignment of 8.
    assert_eq!(answers["k6"], Answer::Layout { offsets: vec![0, 8], sizes: vec![8, 1], total: 9 });
    assert_eq!(answers["k7"], Answer::Layout { offsets: vec![0, 4, 16, 24, 40, 96], sizes: vec![1, 12, 1, 16, 56, 1], total: 97 });
    assert_eq!(answers["k8"], Answer::Layout { offsets: vec![0, 8, 16, 24], sizes: vec![8, 1, 8, 1], total: 25 });
    // The front end counts no padding: this layout ends at 32776.
    assert_eq!(answers["k9"], Answer::RefusedSum { sum_of_sizes: 32769 });
    // 1 + 8 + 32755 = 32764 passes the front end; padded, it ends at 32771 and ptxas refuses.
    assert_eq!(answers["k10"], Answer::RefusedEnd { end: 32771 });
}

#[test]
fn cdpc_layout_matches_nvcc() {
    let tools = match find_tools() {
        Ok(t) => t,
        Err(why) => return println!("skipped: {why}"),
    };
    let started = Instant::now();
    let seed = seed();
    println!("layout oracle: seed {seed} (replay with CDPC_ORACLE_SEED={seed})");
    let mut gen = Gen { rng: fastrand::Rng::with_seed(seed) };
    let mut batches = vec![fixed_batch(0)];
    for b in 0..ORDINARY_BATCHES + LARGE_BATCHES {
        let large = b >= ORDINARY_BATCHES;
        batches.push(gen.batch(1000 + b * ORDINARY_KERNELS, if large { LARGE_KERNELS } else { ORDINARY_KERNELS }, large));
    }

    // nvcc, in parallel. CDPC_ORACLE_KEEP=1 keeps the generated files.
    let mut dir = tempfile::tempdir().unwrap();
    if std::env::var_os("CDPC_ORACLE_KEEP").is_some() {
        println!("layout oracle: files kept in {}", dir.path().display());
        dir.disable_cleanup(true);
    }
    let next = AtomicUsize::new(0);
    let answers: Mutex<Vec<Option<HashMap<String, Answer>>>> = Mutex::new((0..batches.len()).map(|_| None).collect());
    // nvcc waits about half of its wall time (processes, files): two runs per core.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get() * 2).clamp(2, 8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            // Last first: the large files, which take up to three nvcc runs, start early.
            s.spawn(|| {
                while let Some(i) = batches.len().checked_sub(1 + next.fetch_add(1, Ordering::Relaxed)) {
                    let a = tools.oracle(&batches[i], dir.path(), &format!("batch{i}"));
                    answers.lock().unwrap()[i] = Some(a);
                }
            });
        }
    });
    let answers: Vec<HashMap<String, Answer>> = answers.into_inner().unwrap().into_iter().map(Option::unwrap).collect();
    let nvcc_time = started.elapsed();

    // cdpc, and the comparison.
    let mut mismatches: Vec<String> = Vec::new();
    let (mut signatures, mut refused_sum, mut refused_end, mut over_4k, mut near_limit_accepted) = (0, 0, 0, 0, 0);
    for (b, batch) in batches.iter().enumerate() {
        let ours = cdpc_layouts(batch);
        for sig in &batch.sigs {
            signatures += 1;
            let nvcc = answers[b].get(&sig.kernel).unwrap_or_else(|| panic!("nvcc's output lacks {}", sig.kernel));
            let (offsets, size, sum) = &ours[&sig.kernel];
            let mut wrong = Vec::new();
            let mut check_launch = false;
            match nvcc {
                Answer::Layout { offsets: o, sizes, total } => {
                    // The observed relationship: the total is the end of the last parameter.
                    let end = o.iter().zip(sizes).map(|(o, s)| o + s).max().unwrap_or(0);
                    assert_eq!(*total, end, "{}: nvcc's total is not the end of the last parameter", sig.kernel);
                    assert_eq!(o.len(), sig.params.len(), "{}: nvcc lists another number of parameters", sig.kernel);
                    if o != offsets || total != size {
                        wrong.push(format!("nvcc: offsets {o:?} sizes {sizes:?} total {total}\ncdpc: offsets {offsets:?} total {size}"));
                    }
                    over_4k += usize::from(*total > 4096);
                    if *total > NVCC_LIMIT - 1024 {
                        near_limit_accepted += 1;
                        check_launch = true;
                    }
                }
                Answer::RefusedSum { sum_of_sizes } => {
                    refused_sum += 1;
                    check_launch = true;
                    if sum_of_sizes != sum {
                        wrong.push(format!("nvcc: refused, parameters of {sum_of_sizes} bytes\ncdpc: parameters of {sum} bytes, offsets {offsets:?} total {size}"));
                    }
                }
                Answer::RefusedEnd { end } => {
                    refused_end += 1;
                    check_launch = true;
                    if end != size {
                        wrong.push(format!("nvcc: refused by ptxas, {end} bytes\ncdpc: offsets {offsets:?} total {size}"));
                    }
                }
            }
            if check_launch {
                let nvcc_refused = !matches!(nvcc, Answer::Layout { .. });
                match cdpc_refuses_launch(batch, sig) {
                    Ok(r) if r == nvcc_refused => {}
                    Ok(r) => wrong.push(format!("nvcc {} the kernel; a launch of it in cdpc {}", if nvcc_refused { "refuses" } else { "accepts" }, if r { "fails with E0304" } else { "passes" })),
                    Err(e) => wrong.push(e),
                }
            }
            if !wrong.is_empty() {
                mismatches.push(format!("{}{}{}", batch.needed_structs(sig), kernel_text(sig), wrong.join("\n")));
            }
        }
    }
    println!(
        "layout oracle: {signatures} signatures in {} files (refused by nvcc: {refused_sum} in its front end, {refused_end} in ptxas; {near_limit_accepted} accepted within 1 KB of the limit, {over_4k} over 4 KB); nvcc {:.1?}, total {:.1?}",
        batches.len(),
        nvcc_time,
        started.elapsed()
    );
    // Keep the generator honest: the interesting regions must be reached.
    assert!(signatures >= 2000);
    if seed == DEFAULT_SEED {
        assert!(refused_sum >= 10 && refused_end >= 2 && near_limit_accepted >= 10 && over_4k >= 100, "the generator no longer reaches the limits");
    }
    if !mismatches.is_empty() {
        let shown: Vec<&String> = mismatches.iter().take(SHOW_MISMATCHES).collect();
        panic!(
            "{} of {signatures} signatures disagree (seed {seed}, CDPC_ORACLE_SEED={seed} replays); the first {}:\n\n{}",
            mismatches.len(),
            shown.len(),
            shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n\n")
        );
    }
}
