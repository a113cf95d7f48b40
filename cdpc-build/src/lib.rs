//! Compile CUDA kernels with device-side launches at build time, in the style of `cc`.
//!
//! In `build.rs` (with `cdpc-build` among the `[build-dependencies]`):
//!
//! ```no_run
//! cdpc_build::Build::new()
//!     .file("kernels/children.cdp")
//!     .arch("sm_90")
//!     .compile("kernels");
//! ```
//!
//! Each file is compiled by cdpc's library into a cubin linked with libcudadevrt, written to
//! `OUT_DIR`, and `OUT_DIR/kernels.rs` gets one module per file (named after the file's stem)
//! with the cubin embedded (`include_bytes!`) and a typed launcher for each kernel, on
//! [cudarc](https://docs.rs/cudarc) (the crate that uses them depends on cudarc with its
//! `driver` and `nvrtc` features):
//!
//! ```ignore
//! mod kernels {
//!     include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
//! }
//! let ctx = cudarc::driver::CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = kernels::children::Module::load(&ctx)?;
//! let mut data = stream.alloc_zeros::<i32>(4096)?;
//! // __global__ void fill_rows(int *data, int rows, int width)
//! unsafe { module.fill_rows(&stream, LaunchConfig::for_num_elems(64), &mut data, 64, 64) }?;
//! ```
//!
//! The launcher's parameters follow the kernel's: `int *` is `&mut CudaSlice<i32>`,
//! `const float *` is `&CudaSlice<f32>`, `unsigned long long` is `u64`, and so on, so passing
//! a slice of the wrong element type or a scalar of the wrong width does not compile. Kernels
//! with parameters that have no such mapping (structs by value, `dim3`, `void *`, pointers to
//! structs) get no launcher and a `cargo:warning`; load them with
//! `module.module.load_function(name)`.
//!
//! A file with errors fails the build with cdpc's rendered diagnostics; every file is printed
//! as `cargo:rerun-if-changed`. ptxas, nvlink and libcudadevrt are found as by `cdpc` (SETUP.md):
//! [`Build::cuda_home`], then `CUDA_HOME`, then a project's `.cuda/`, then `PATH`.

use cdpc::driver::{compile_artifacts, option_pairs, CompileError, CompileOptions};
use cdpc::signature::{FunctionKind, Scalar, Signature, ValueKind};
use cdpc::SmVersion;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

/// A build of one or more kernel files into one generated Rust file.
#[derive(Clone, Debug, Default)]
pub struct Build {
    files: Vec<PathBuf>,
    arch: Option<String>,
    launch_abi: Option<String>,
    opt_level: Option<u8>,
    cuda_home: Option<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    include_dirs: Vec<PathBuf>,
    warnings_as_errors: bool,
    out_dir: Option<PathBuf>,
    tools_optional: bool,
    cargo_metadata: Option<bool>,
}

/// Why a build failed. Its `Display` is what a build script prints.
#[derive(Debug)]
pub enum Error {
    /// An option has an impossible value (an unknown architecture, say).
    Option(String),
    /// A file could not be read or written.
    Io(String),
    /// A file has errors: the rendered diagnostics.
    Compile {
        /// The file.
        file: PathBuf,
        /// cdpc's rendered diagnostics (or the tool's message).
        rendered: String,
    },
    /// Asked for something this version of cdpc cannot do yet.
    Unsupported(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Option(m) | Error::Io(m) | Error::Unsupported(m) => f.write_str(m),
            Error::Compile { file, rendered } => write!(f, "cdpc could not compile {}:\n{rendered}", file.display()),
        }
    }
}

impl std::error::Error for Error {}

/// What [`Build::try_compile`] wrote.
#[derive(Clone, Debug)]
pub struct Output {
    /// The generated Rust file, `OUT_DIR/NAME.rs`.
    pub rust_file: PathBuf,
    /// The cubins, one per input file (absent for a file compiled without the NVIDIA tools).
    pub cubins: Vec<PathBuf>,
    /// Every kernel's and device function's signature, per file stem.
    pub signatures: Vec<(String, Vec<Signature>)>,
    /// Warnings and notes for `cargo:warning` lines.
    pub warnings: Vec<String>,
}

impl Build {
    /// A build with cdpc's defaults: sm_90, launch ABI v2, `-O3`.
    pub fn new() -> Build {
        Build::default()
    }

    /// Adds a `.cdp` or `.cu` file (relative to the crate's root, as cargo runs build scripts).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds several files.
    pub fn files(&mut self, paths: impl IntoIterator<Item = impl AsRef<Path>>) -> &mut Build {
        for p in paths {
            self.file(p);
        }
        self
    }

    /// The GPU architecture, `"sm_90"` (the default), `"sm_80"`, ...
    pub fn arch(&mut self, arch: &str) -> &mut Build {
        self.arch = Some(arch.to_string());
        self
    }

    /// `"v2"` (the default; what nvcc 13 emits) or `"v1"`.
    pub fn launch_abi(&mut self, abi: &str) -> &mut Build {
        self.launch_abi = Some(abi.to_string());
        self
    }

    /// 0 to 3 (default 3).
    pub fn opt_level(&mut self, level: u8) -> &mut Build {
        self.opt_level = Some(level);
        self
    }

    /// Where ptxas, nvlink and libcudadevrt are (a CUDA toolkit or a wheel install folder).
    pub fn cuda_home(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.cuda_home = Some(dir.as_ref().to_path_buf());
        self
    }

    /// A preprocessor macro (`-DNAME` or `-DNAME=VALUE`).
    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut Build {
        self.defines.push((name.to_string(), value.map(str::to_string)));
        self
    }

    /// A folder for `#include "..."` (`-I`).
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// Fail on warnings (`-Werror`).
    pub fn warnings_as_errors(&mut self, yes: bool) -> &mut Build {
        self.warnings_as_errors = yes;
        self
    }

    /// Where to write (default: the `OUT_DIR` cargo gives build scripts).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// When the NVIDIA tools are missing, generate the launchers anyway (from the PTX
    /// compilation, which needs no tool) with an empty cubin, and say so in a `cargo:warning`:
    /// the crate builds and its tests run, and `Module::load` fails at run time. Off by default.
    pub fn tools_optional(&mut self, yes: bool) -> &mut Build {
        self.tools_optional = yes;
        self
    }

    /// Print `cargo:rerun-if-changed` and `cargo:warning` lines (default: when `OUT_DIR` is
    /// set, that is inside a build script).
    pub fn cargo_metadata(&mut self, yes: bool) -> &mut Build {
        self.cargo_metadata = Some(yes);
        self
    }

    /// The options as name/value pairs read by [`cdpc::driver::option_pairs`], which the C API
    /// and the Python package read theirs with: the same values are taken and refused alike.
    fn options(&self) -> Result<CompileOptions, Error> {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        for (name, value) in &self.defines {
            pairs.push(("define", value.as_ref().map_or_else(|| name.clone(), |v| format!("{name}={v}"))));
        }
        for dir in &self.include_dirs {
            let dir = dir.to_str().ok_or_else(|| Error::Option(format!("include folder {} is not UTF-8", dir.display())))?;
            pairs.push(("include-dir", dir.to_string()));
        }
        if let Some(arch) = &self.arch {
            pairs.push(("arch", arch.clone()));
        }
        if let Some(abi) = &self.launch_abi {
            pairs.push(("launch-abi", abi.clone()));
        }
        if let Some(level) = self.opt_level {
            pairs.push(("opt-level", level.to_string()));
        }
        if let Some(dir) = &self.cuda_home {
            let dir = dir.to_str().ok_or_else(|| Error::Option(format!("cuda_home {} is not UTF-8", dir.display())))?;
            pairs.push(("cuda-home", dir.to_string()));
        }
        pairs.push(("werror", self.warnings_as_errors.to_string()));
        option_pairs::from_pairs(pairs.iter().map(|(key, value)| (*key, value.as_str()))).map_err(Error::Option)
    }

    /// Compiles every file and writes `OUT_DIR/NAME.rs`; panics with the rendered diagnostics
    /// on failure, which is how a build script fails (like `cc::Build::compile`).
    pub fn compile(&self, name: &str) {
        if let Err(e) = self.try_compile(name) {
            panic!("\n{e}\n");
        }
    }

    /// Like [`Build::compile`], returning the failure instead of panicking.
    pub fn try_compile(&self, name: &str) -> Result<Output, Error> {
        let metadata = self.cargo_metadata.unwrap_or_else(|| std::env::var_os("OUT_DIR").is_some());
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| Error::Option("OUT_DIR is not set: call from a build script or set out_dir()".into()))?,
        };
        if !is_identifier(name) {
            return Err(Error::Option(format!("`{name}` is not a Rust identifier (it names OUT_DIR/{name}.rs)")));
        }
        let options = self.options()?;
        let mut rust = format!("// Generated by cdpc-build {} from cdpc's signatures; do not edit.\n", env!("CARGO_PKG_VERSION"));
        let mut output = Output { rust_file: out_dir.join(format!("{name}.rs")), cubins: Vec::new(), signatures: Vec::new(), warnings: Vec::new() };
        let mut stems = Vec::new();
        for file in &self.files {
            if metadata {
                println!("cargo:rerun-if-changed={}", file.display());
            }
            let stem = module_name(file)?;
            if stems.contains(&stem) {
                return Err(Error::Option(format!("two files would make module `{stem}`; rename one")));
            }
            stems.push(stem.clone());
            let source = std::fs::read_to_string(file).map_err(|e| Error::Io(format!("cannot read {}: {e}", file.display())))?;
            let file_name = file.display().to_string();
            let fail = |rendered: String| Error::Compile { file: file.clone(), rendered };
            let artifacts = match compile_artifacts(&source, &options, true) {
                Ok(a) => a,
                Err(CompileError::Tool(e)) if self.tools_optional => {
                    output.warnings.push(format!("{}: the NVIDIA tools are missing, so its cubin is empty and Module::load will fail: {}", file.display(), first_line(&e.to_string())));
                    compile_artifacts(&source, &options, false).map_err(|e| fail(render_error(e, &file_name, &source)))?
                }
                Err(e) => return Err(fail(render_error(e, &file_name, &source))),
            };
            for w in &artifacts.warnings {
                output.warnings.push(first_line(&cdpc::render::human(std::slice::from_ref(w), &file_name, &source, cdpc::render::Color::Never)));
            }
            let cubin_name = format!("{name}-{stem}.cubin");
            let cubin_path = out_dir.join(&cubin_name);
            let bytes = artifacts.cubin.as_deref().unwrap_or_default();
            std::fs::write(&cubin_path, bytes).map_err(|e| Error::Io(format!("cannot write {}: {e}", cubin_path.display())))?;
            if artifacts.cubin.is_some() {
                output.cubins.push(cubin_path);
            }
            let (module, skipped) = generate_module(&stem, &file_name, &cubin_name, options.target.sm, &artifacts.signatures);
            for kernel in skipped {
                output.warnings.push(format!("{}: {kernel}", file.display()));
            }
            rust.push_str(&module);
            output.signatures.push((stem, artifacts.signatures));
        }
        std::fs::write(&output.rust_file, rust).map_err(|e| Error::Io(format!("cannot write {}: {e}", output.rust_file.display())))?;
        if metadata {
            for w in &output.warnings {
                println!("cargo:warning={w}");
            }
        }
        Ok(output)
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

fn render_error(e: CompileError, file_name: &str, source: &str) -> String {
    match e {
        CompileError::Diagnostics(d) => cdpc::render::human(&d, file_name, source, cdpc::render::Color::Never),
        other => format!("error: {other}\n"),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn module_name(file: &Path) -> Result<String, Error> {
    let stem = file.file_stem().map(|s| s.to_string_lossy().replace(['-', '.'], "_")).unwrap_or_default();
    if is_identifier(&stem) {
        Ok(stem)
    } else {
        Err(Error::Option(format!("{}: its stem is no Rust module name", file.display())))
    }
}

/// The Rust type of a kernel parameter in a launcher, or why there is none.
fn rust_param(kind: &ValueKind) -> Result<String, String> {
    match kind {
        ValueKind::Scalar(s) => Ok(s.rust_name().to_string()),
        ValueKind::Pointer { pointee: Some(s), is_const: true } => Ok(format!("&cudarc::driver::CudaSlice<{}>", pointee_rust(*s))),
        ValueKind::Pointer { pointee: Some(s), is_const: false } => Ok(format!("&mut cudarc::driver::CudaSlice<{}>", pointee_rust(*s))),
        ValueKind::Pointer { pointee: None, .. } => Err("an untyped pointer".into()),
        ValueKind::Handle => Err("a stream or event handle".into()),
        ValueKind::Dim3 => Err("a dim3".into()),
        ValueKind::Aggregate => Err("a struct or array by value".into()),
        ValueKind::Void => Err("void".into()),
    }
}

/// Element types of device slices: `bool` has no `DeviceRepr` as an element in cudarc's
/// zeroable sense, so `bool *` is a slice of `u8` (same representation).
fn pointee_rust(s: Scalar) -> &'static str {
    if s == Scalar::Bool {
        "u8"
    } else {
        s.rust_name()
    }
}

fn rust_ident(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
        "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
        "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
    ];
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// The Rust module for one file: the embedded cubin, `Module::load` and a launcher per kernel.
/// Returns it and a note for each kernel that got no launcher.
pub fn generate_module(stem: &str, file_name: &str, cubin_name: &str, sm: SmVersion, signatures: &[Signature]) -> (String, Vec<String>) {
    let mut skipped = Vec::new();
    let mut launchers = Vec::new();
    for s in signatures.iter().filter(|s| s.kind == FunctionKind::Kernel) {
        let params: Result<Vec<(String, String)>, String> = s
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let name = if p.name.is_empty() { format!("arg{i}") } else { rust_ident(&p.name) };
                rust_param(&p.kind).map(|ty| (name, ty)).map_err(|why| format!("parameter `{} {}` is {why}", p.c_type, p.name))
            })
            .collect();
        match params {
            Ok(params) => launchers.push((s, params)),
            Err(why) => skipped.push(format!("kernel `{}` gets no typed launcher: its {why}", s.name)),
        }
    }
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "\n/// The kernels of `{file_name}`, compiled by cdpc for {sm}.");
    let _ = writeln!(w, "#[allow(dead_code, clippy::too_many_arguments)]\npub mod {stem} {{");
    let _ = writeln!(w, "    /// The cubin, linked with libcudadevrt (empty when built without the NVIDIA tools).");
    let _ = writeln!(w, "    pub const CUBIN: &[u8] = include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{cubin_name}\"));\n");
    let _ = writeln!(w, "    /// The loaded module and its kernels.\n    pub struct Module {{\n        /// The cudarc module, for anything the launchers do not cover.");
    let _ = writeln!(w, "        pub module: std::sync::Arc<cudarc::driver::CudaModule>,");
    for (s, _) in &launchers {
        let _ = writeln!(w, "        {}: cudarc::driver::CudaFunction,", rust_ident(&s.name));
    }
    let _ = writeln!(w, "    }}\n\n    impl Module {{");
    let _ = writeln!(w, "        /// Loads [`CUBIN`] into `ctx` (`cuModuleLoadData`) and looks its kernels up.");
    let _ = writeln!(w, "        pub fn load(ctx: &std::sync::Arc<cudarc::driver::CudaContext>) -> Result<Module, cudarc::driver::DriverError> {{");
    let _ = writeln!(w, "            let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(CUBIN.to_vec()))?;");
    let _ = writeln!(w, "            Ok(Module {{");
    for (s, _) in &launchers {
        let _ = writeln!(w, "                {}: module.load_function({:?})?,", rust_ident(&s.name), s.name);
    }
    let _ = writeln!(w, "                module,\n            }})\n        }}");
    for (s, params) in &launchers {
        let c_params: Vec<String> = s.params.iter().map(|p| format!("{} {}", p.c_type, p.name)).collect();
        let _ = writeln!(w, "\n        /// Launches `__global__ void {}({})` on `stream`.", s.name, c_params.join(", "));
        let _ = writeln!(w, "        ///\n        /// # Safety\n        /// The kernel runs as written in CUDA C: what it reads and writes must lie inside the slices passed.");
        let mut sig = format!("        pub unsafe fn {}(&self, stream: &cudarc::driver::CudaStream, cfg: cudarc::driver::LaunchConfig", rust_ident(&s.name));
        for (name, ty) in params {
            let _ = write!(sig, ", {name}: {ty}");
        }
        let _ = writeln!(w, "{sig}) -> Result<(), cudarc::driver::DriverError> {{");
        let _ = writeln!(w, "            let mut args = stream.launch_builder(&self.{});", rust_ident(&s.name));
        for (name, ty) in params {
            let arg = if ty.starts_with('&') { name.clone() } else { format!("&{name}") };
            let _ = writeln!(w, "            cudarc::driver::PushKernelArg::arg(&mut args, {arg});");
        }
        let _ = writeln!(w, "            unsafe {{ args.launch(cfg) }}.map(|_| ())\n        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = r#"
        struct P { int a; };
        extern "C" __global__ void child(int *data, const float *in, unsigned long long n, bool flag, double type) { }
        extern "C" __global__ void parent(int *data, int n) { child<<<1, 1>>>(data, 0, n, true, 1.0); }
        extern "C" __global__ void by_value(struct P p) { }
        extern "C" __device__ int helper(int x) { return x; }
    "#;

    fn build(dir: &Path, source: &str) -> Result<Output, Error> {
        let file = dir.join("my-kernels.cdp");
        std::fs::write(&file, source).unwrap();
        Build::new().file(&file).out_dir(dir).tools_optional(true).cargo_metadata(false).try_compile("kernels")
    }

    #[test]
    fn generates_typed_launchers_from_the_signatures() {
        let dir = tempfile::tempdir().unwrap();
        let out = build(dir.path(), SOURCE).unwrap();
        let rust = std::fs::read_to_string(&out.rust_file).unwrap();
        assert!(rust.contains("pub mod my_kernels {"), "{rust}");
        assert!(rust.contains("include_bytes!(concat!(env!(\"OUT_DIR\"), \"/kernels-my_kernels.cubin\"))"));
        // int * -> &mut CudaSlice<i32>, const float * -> &CudaSlice<f32>, bool -> bool, keyword -> r#type
        assert!(rust.contains(
            "pub unsafe fn child(&self, stream: &cudarc::driver::CudaStream, cfg: cudarc::driver::LaunchConfig, data: &mut cudarc::driver::CudaSlice<i32>, r#in: &cudarc::driver::CudaSlice<f32>, n: u64, flag: bool, r#type: f64)"
        ), "{rust}");
        assert!(rust.contains("cudarc::driver::PushKernelArg::arg(&mut args, &n);"));
        assert!(rust.contains("cudarc::driver::PushKernelArg::arg(&mut args, data);"));
        assert!(rust.contains("parent: module.load_function(\"parent\")?,"));
        // a struct by value has no launcher, and the build says why; device functions have none
        assert!(!rust.contains("fn by_value") && !rust.contains("fn helper"));
        assert!(out.warnings.iter().any(|w| w.contains("kernel `by_value` gets no typed launcher: its parameter `struct P p` is a struct or array by value")), "{:?}", out.warnings);
        let stems: Vec<&str> = out.signatures.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(stems, ["my_kernels"]);
    }

    #[test]
    fn errors_carry_the_rendered_diagnostics() {
        let dir = tempfile::tempdir().unwrap();
        let e = build(dir.path(), "__global__ void k() { undefined(); }").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("cdpc could not compile") && text.contains("error[E0100]"), "{text}");
        assert!(!dir.path().join("kernels.rs").exists());
    }

    #[test]
    fn options_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let e = Build::new().arch("sm_1").out_dir(dir.path()).try_compile("k").unwrap_err();
        assert!(matches!(e, Error::Option(ref m) if m.contains("sm_1")), "{e}");
        let e = Build::new().opt_level(4).out_dir(dir.path()).try_compile("k").unwrap_err();
        assert!(matches!(e, Error::Option(ref m) if m == "optimisation level `4` does not exist; use 0 to 3"), "{e}");
        let e = Build::new().launch_abi("v3").out_dir(dir.path()).try_compile("k").unwrap_err();
        assert!(matches!(e, Error::Option(ref m) if m.contains("v3")), "{e}");
        let e = Build::new().out_dir(dir.path()).try_compile("not-an-ident").unwrap_err();
        assert!(e.to_string().contains("not a Rust identifier"));
        let e = Build::new().define("4N", None).out_dir(dir.path()).try_compile("k").unwrap_err();
        assert!(matches!(e, Error::Option(ref m) if m.contains("4N")), "{e}");
    }

    /// `define()` and `include()` are the preprocessor's `-D` and `-I`: a kernel named by a
    /// macro, and one from a header found in the folder given.
    #[test]
    fn defines_and_include_folders_reach_the_preprocessor() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("inc");
        std::fs::create_dir(&inc).unwrap();
        std::fs::write(inc.join("extra.h"), "extern \"C\" __global__ void from_header(int *p) { p[0] = 1; }\n").unwrap();
        let file = dir.path().join("k.cdp");
        std::fs::write(&file, "#include \"extra.h\"\nextern \"C\" __global__ void NAME(int *p) { p[0] = SCALE; }\n").unwrap();
        let out = Build::new()
            .file(&file)
            .define("NAME", Some("scaled"))
            .define("SCALE", Some("3"))
            .include(&inc)
            .out_dir(dir.path())
            .tools_optional(true)
            .cargo_metadata(false)
            .try_compile("kernels")
            .unwrap();
        let rust = std::fs::read_to_string(&out.rust_file).unwrap();
        assert!(rust.contains("pub unsafe fn scaled(") && rust.contains("pub unsafe fn from_header("), "{rust}");
        let e = Build::new().file(&file).include(&inc).out_dir(dir.path()).tools_optional(true).cargo_metadata(false).try_compile("kernels").unwrap_err();
        assert!(e.to_string().contains("NAME") || e.to_string().contains("SCALE"), "without the macros: {e}");
    }
}
