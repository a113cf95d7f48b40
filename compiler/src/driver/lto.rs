//! Link-time optimisation of device code (nvcc's `-dlto`): the launch optimizations with every
//! file of the program in view.
//!
//! Compiled one file at a time, a launch of a kernel another file defines is left as written:
//! aggregation and thresholding need the child's body (`R0500`: "has no definition to
//! clone"). With `-dc -dlto`, a CUDA C++ object carries its device side's IR (Clang's bitcode,
//! before the launch pipeline; one entry for each architecture it was compiled for) in the
//! section [`SECTION`] beside its cubins ([`carried`], [`section`]); any linker takes the
//! object as it takes one without it (nvlink and nvcc's link read the cubin). A device link
//! that cdpc runs with `-dlto` (a program's, `-dlink`'s, `--device-link -o x.cubin`'s:
//! [`compile`]) reads the IR of every object that carries it for the link's architecture,
//! prepares each as its own compile does (`pipeline::prepare`, its `static` names under its
//! module id), links them into one module and runs the launch pipeline and LLVM's code
//! generation once over all of them (`pipeline::lower_prepared`), then ptxas: one relocatable
//! object that nvlink links in place of those objects' cubins. A static library (an archive
//! given as a file or by `-l`) is read as nvlink reads it, every member that holds device code
//! linked, so its IR takes part where every such member carries some, and the archive then
//! leaves nvlink's inputs.
//! Objects without IR (nvcc's, the kernel language's, and archives with such a member) are
//! linked as they are, and the registration lists the replaced objects' and members' module
//! ids, so their host code registers the linked image as before.
//!
//! The IR carries the options its compile lowered it with, as [`super::option_pairs`] pairs
//! (architecture, launch ABI, optimisation level, launch optimizations, floating-point
//! options): the link compiles with them, and where two objects differ it links the cubins as
//! they are, with `W0709` saying why (so does an object whose IR cannot be read).
//!
//! The section: entries to the end, each [`MAGIC`], a little-endian `u32` length and that many
//! bytes of `key=value` lines, a `u64` length and that many bytes of bitcode, and a `u64`
//! FNV-1a hash of the lines and the bitcode (an entry whose hash differs is damaged, and the
//! link takes the cubins). A host linker's `-r` that merged two objects' sections merges their
//! entries. Where the link-time compile fails all the same (IR that reads back but is not what
//! the compile wrote), the link takes the cubins too, with `W0709` saying why.

use super::{archive, build_options, opt_level, option_pairs, pipeline_options, CompileError, CompileOptions, Emit};
use crate::back::{self, BackendError};
use crate::diag::{Code, Diagnostic, Span};
use crate::pipeline::{self, Origin, SourceText, Stop};
use crate::target::SmVersion;
use crate::toolchain::{BuildOptions, Toolchain};
use inkwell::context::Context;
use inkwell::module::Module;
use std::path::PathBuf;

/// The host object's section that holds the device IR.
pub const SECTION: &str = "__cdpc_device_ir";
/// The section's first bytes; a new layout takes a new version.
const MAGIC: &[u8] = b"cdpc device IR v1\n";
/// The key of an entry's module id, the one key that differs between a program's objects.
const MODULE_ID: &str = "nv-module-id";

/// Whether a compile with `options` carries its device IR: `-dlto` with `-dc` of CUDA C++
/// (relocatable: a whole program's device code is linked already), without debug
/// information or ptxas arguments of its own, which the link would not know to repeat.
pub(crate) fn carried(options: &CompileOptions) -> bool {
    options.device_lto && options.separate && options.emit == Emit::HostObject && !options.whole_program && options.debug.is_none() && options.ptxas_args.is_empty()
}

/// The options an entry's IR was lowered with, as option pairs in a fixed order: the link's
/// compile sets them ([`option_pairs::set`]) and compares them between objects.
fn pairs(options: &CompileOptions, id: &str) -> Vec<(&'static str, String)> {
    let math = options.float_math;
    vec![
        ("arch", options.target.sm.to_string()),
        ("address-size", options.target.address_size.to_string()),
        ("launch-abi", options.target.launch_abi.to_string()),
        ("default-stream", options.target.default_stream.to_string()),
        ("opt-level", options.opt_level.to_string()),
        ("launch-threshold", options.launch_threshold.to_string()),
        ("aggregate-launches", options.aggregate.to_string()),
        ("device-malloc-pool", options.malloc_pool.to_string()),
        ("legacy-warp-intrinsics", options.legacy_warp_intrinsics.to_string()),
        ("use-fast-math", math.fast_library.to_string()),
        ("ftz", math.ftz.to_string()),
        ("prec-div", math.prec_div.to_string()),
        ("prec-sqrt", math.prec_sqrt.to_string()),
        ("fmad", (options.fmad == back::Fmad::Contract).to_string()),
        (MODULE_ID, id.to_string()),
    ]
}

/// The section's bytes for the device IR `bitcode` of the compile of `options` under the
/// module id `id`.
pub(crate) fn section(options: &CompileOptions, id: &str, bitcode: &[u8]) -> Vec<u8> {
    let header: String = pairs(options, id).iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let mut out = MAGIC.to_vec();
    out.extend((header.len() as u32).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend((bitcode.len() as u64).to_le_bytes());
    out.extend(bitcode);
    out.extend(fnv1a(&[header.as_bytes(), bitcode]).to_le_bytes());
    out
}

/// The 64-bit FNV-1a hash of `parts`, one after another.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    parts.iter().flat_map(|p| p.iter()).fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// One entry of the section: its options' pairs and its bitcode.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    pairs: Vec<(String, String)>,
    bitcode: Vec<u8>,
}

impl Entry {
    fn value(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The pairs but the module id: what must be the same for objects compiled together.
    fn options(&self) -> Vec<&(String, String)> {
        self.pairs.iter().filter(|(k, _)| k != MODULE_ID).collect()
    }
}

/// The entries of a section's bytes, or `None` where they are not [`section`]'s layout.
fn entries(bytes: &[u8]) -> Option<Vec<Entry>> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        rest = rest.strip_prefix(MAGIC)?;
        let (len, tail) = rest.split_at_checked(4)?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        let (header, tail) = tail.split_at_checked(len)?;
        let pairs = std::str::from_utf8(header).ok()?.lines().map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))).collect::<Option<Vec<_>>>()?;
        let (len, tail) = tail.split_at_checked(8)?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
        let (bitcode, tail) = tail.split_at_checked(len)?;
        let (hash, tail) = tail.split_at_checked(8)?;
        if u64::from_le_bytes(hash.try_into().ok()?) != fnv1a(&[header, bitcode]) {
            return None;
        }
        out.push(Entry { pairs, bitcode: bitcode.to_vec() });
        // Merged sections may be padded to the next one's alignment.
        rest = &tail[tail.iter().take_while(|&&b| b == 0).count()..];
    }
    Some(out)
}

/// What the link-time compile made: the relocatable object of the objects' IR, which objects
/// it stands for, their module ids, and the launch pipeline's remarks (`-Rpass=aggregate`).
pub(crate) struct LinkTime {
    pub object: Vec<u8>,
    pub replaced: Vec<PathBuf>,
    pub module_ids: Vec<String>,
    pub remarks: Vec<Diagnostic>,
}

/// Why a `-dlto` link links the objects' cubins as they are: `None` where fewer than two
/// objects carry IR for the architecture (nothing to see across), else a warning's text.
pub(crate) type Unchanged = Option<String>;

/// The link-time compile of `objects` for `arch` (module docs): its object, or why the link
/// takes the cubins as they are.
pub(crate) fn compile(objects: &[PathBuf], arch: SmVersion, link: &CompileOptions, tools: &Toolchain, build: &BuildOptions) -> Result<LinkTime, Unchanged> {
    match compile_here(objects, arch, link, tools, build) {
        Ok(done) => done,
        // The objects compiled; their IR, read back, did not: their cubins, and why.
        Err(e) => {
            let why = e.to_string();
            Err(Some(format!("the link-time compile failed ({}): each object's cubin is linked as it is", why.lines().next().unwrap_or_default().trim_end_matches(':'))))
        }
    }
}

fn compile_here(objects: &[PathBuf], arch: SmVersion, link: &CompileOptions, tools: &Toolchain, build: &BuildOptions) -> Result<Result<LinkTime, Unchanged>, CompileError> {
    // The inputs in nvlink's order (the objects, then the libraries), each once.
    let mut paths: Vec<&PathBuf> = Vec::new();
    for path in objects.iter().chain(&build.link_libraries) {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    let mut carried: Vec<Carried> = Vec::new();
    let mut replaced: Vec<PathBuf> = Vec::new();
    for path in paths {
        let Ok(bytes) = std::fs::read(path) else { continue };
        // nvlink links every member of an archive that holds device code: the archive's IR
        // stands for it only where every such member carries IR for the architecture (a
        // library of `-dc -dlto` objects); otherwise its members' cubins are linked.
        let (members, archive) = match archive::members(&bytes) {
            Some(members) => {
                (members.into_iter().filter(|m| super::pool::bytes_may_hold_device_code(&m.bytes)).map(|m| (Holder::Member { archive: path.clone(), member: m.name }, m.bytes)).collect(), true)
            }
            None => (vec![(Holder::Object(path.clone()), bytes)], false),
        };
        let mut found = Vec::new();
        for (origin, bytes) in &members {
            let Some(section) = archive::elf_section(bytes, SECTION) else { continue };
            let Some(entries) = entries(section) else {
                return Ok(Err(Some(format!("`{origin}`'s device IR cannot be read (damaged, or not written by this cdpc)"))));
            };
            let entries: Vec<Entry> = entries.into_iter().filter(|e| e.value("arch") == Some(&arch.to_string())).collect();
            if !entries.is_empty() {
                found.push(Carried { origin: origin.clone(), entries });
            }
        }
        if found.is_empty() || (archive && found.len() < members.len()) {
            continue;
        }
        replaced.push(path.clone());
        carried.extend(found);
    }
    if carried.iter().map(|c| c.entries.len()).sum::<usize>() < 2 {
        return Ok(Err(None));
    }
    let context = Context::create();
    // Every entry read before any module is changed: IR that LLVM cannot read (damaged, or
    // written by another LLVM) leaves the objects' cubins to the link.
    let mut carrying: Vec<(&Holder, &Entry)> = Vec::new();
    let mut modules = Vec::new();
    let mut crashed = None;
    'read: for c in &carried {
        for entry in &c.entries {
            let unreadable = format!("`{}`'s device IR cannot be read (damaged, or not written by this cdpc)", c.origin);
            // Bitcode alone (LLVM would read text too), inside LLVM's crash recovery.
            if !crate::front::ir::is_bitcode(&entry.bitcode) {
                return Ok(Err(Some(unreadable)));
            }
            match back::parse_ir(&context, &entry.bitcode, &c.origin.to_string()) {
                Ok(module) if module.verify().is_ok() => {
                    modules.push(module);
                    carrying.push((&c.origin, entry));
                }
                Err(back::ParseFailure::Crashed) => {
                    crashed = Some(unreadable);
                    break 'read;
                }
                _ => return Ok(Err(Some(unreadable))),
            }
        }
    }
    if let Some(unreadable) = crashed {
        // The reader stopped half-way: its context is never used or disposed of again.
        std::mem::forget(modules);
        std::mem::forget(context);
        return Ok(Err(Some(unreadable)));
    }
    let (first_path, first) = &carrying[0];
    if let Some((path, other)) = carrying.iter().find(|(_, e)| e.options() != first.options()) {
        let differs: Vec<String> = other.options().iter().filter(|p| !first.options().contains(p)).map(|(k, v)| format!("`{k}` {} against {v}", first.value(k).unwrap_or("unset"))).collect();
        return Ok(Err(Some(format!("`{first_path}` and `{path}` were compiled with different options ({}): each object's cubin is linked as it is", differs.join(", ")))));
    }
    let mut options = link.clone();
    for (key, value) in first.options() {
        if let Err(e) = option_pairs::set(&mut options, key, value) {
            return Ok(Err(Some(format!("`{first_path}`'s device IR was compiled with options this cdpc does not take ({e})"))));
        }
    }
    options.separate = true;
    options.whole_program = false;
    options.sole_device_source = false;
    options.debug = None;
    options.emit = Emit::Object;
    let mut linked: Option<Module<'_>> = None;
    for ((path, entry), module) in carrying.iter().zip(modules) {
        let own = CompileOptions { nv_module_id: entry.value(MODULE_ID).map(str::to_string), ..options.clone() };
        let libdevice = |m: &_| {
            let tm = back::target_machine(&own.target, opt_level(&own))?;
            super::ir::link_libdevice(&context, m, &own, Some(tools), &tm)
        };
        pipeline::prepare(&module, Origin::Clang, &pipeline_options(&own, true), &SourceText::default(), libdevice).map_err(|stop| stopped(stop, path))?;
        match &linked {
            None => linked = Some(module),
            Some(into) => into.link_in_module(module).map_err(|e| BackendError::Internal(format!("linking the device IR of `{path}`: {e}")))?,
        }
    }
    let Some(module) = linked else { return Ok(Err(None)) };
    let lowered = pipeline::lower_prepared::<CompileError>(&module, Origin::Clang, &pipeline_options(&options, true), &SourceText::default(), None).map_err(|stop| stopped(stop, first_path))?;
    let Some(tm) = lowered.machine else { return Err(BackendError::Internal("the pipeline made no target machine".into()).into()) };
    module.strip_debug_info();
    module.verify().map_err(|e| BackendError::Verify(e.to_string()))?;
    let ptx = back::write_ptx(&module, &tm)?;
    let mut build = BuildOptions { log: build.log.clone(), ..build_options(&options) };
    build.arch = arch;
    let object = tools.assemble(&ptx, &build)?;
    // The compiles reported their warnings; the link adds what only it saw, the remarks.
    let remarks = lowered.warnings.into_iter().filter(|d| d.severity == crate::diag::Severity::Remark).collect();
    let module_ids = carrying.iter().filter_map(|(_, e)| e.value(MODULE_ID).map(str::to_string)).collect();
    Ok(Ok(LinkTime { object, replaced, module_ids, remarks }))
}

/// Where an entry of device IR was read: an object of the link, which the link-time object
/// replaces, or a member of an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Holder {
    Object(PathBuf),
    Member { archive: PathBuf, member: String },
}

impl std::fmt::Display for Holder {
    /// As nvlink and the linkers name them: `a.o`, `libx.a(b.o)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Object(path) => write!(f, "{}", path.display()),
            Holder::Member { archive, member } => write!(f, "{}({member})", archive.display()),
        }
    }
}

/// An object or archive member and its entries for the link's architecture.
struct Carried {
    origin: Holder,
    entries: Vec<Entry>,
}

/// `W0709` for a `-dlto` link that links the cubins as they are, saying `why`.
pub(crate) fn unchanged_warning(why: &str) -> Diagnostic {
    let mut d = Diagnostic::new(Code::OptionFallback, Span::default(), format!("`-dlto`: {why}"))
        .with_note("compile every file with the same options and `-dc -dlto` for the device link to optimise their launches together");
    d.labels.clear();
    d
}

/// A [`pipeline::lower`] stop at the link as the compile's error, naming the object.
fn stopped(stop: Stop<CompileError>, path: &Holder) -> CompileError {
    match stop {
        Stop::Diagnostics(found) => CompileError::Diagnostics(found),
        Stop::Backend(e) => e.into(),
        Stop::Link(e) => e,
        Stop::Qualifiers(_) => CompileError::Usage(format!("the device IR of `{path}` has a kernel qualifier its compile refused")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_reads_back_as_its_entries_also_merged_and_padded() {
        let options = CompileOptions { device_lto: true, separate: true, emit: Emit::HostObject, ..CompileOptions::default() };
        assert!(carried(&options));
        let one = section(&options, "_1_a_cu", b"BC\xc0\xde one");
        let found = entries(&one).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].bitcode, b"BC\xc0\xde one");
        assert_eq!(found[0].value("arch"), Some("sm_90"));
        assert_eq!(found[0].value(MODULE_ID), Some("_1_a_cu"));
        // Every pair is one the options' reading takes back, to the same options.
        let mut again = CompileOptions::default();
        for (k, v) in found[0].options() {
            option_pairs::set(&mut again, k, v).unwrap();
        }
        assert_eq!(pairs(&again, "_1_a_cu"), pairs(&options, "_1_a_cu"));
        // Two objects' sections as `ld -r` merges them, the second aligned.
        let mut merged = one.clone();
        merged.extend([0u8; 6]);
        merged.extend(section(&CompileOptions { opt_level: 2, ..options.clone() }, "_2_b_cu", b"two"));
        let found = entries(&merged).unwrap();
        assert_eq!(found.iter().map(|e| e.value(MODULE_ID).unwrap()).collect::<Vec<_>>(), ["_1_a_cu", "_2_b_cu"]);
        assert_ne!(found[0].options(), found[1].options());
        // Damaged: no entries rather than a panic, at every length.
        for end in 0..one.len() {
            let cut = entries(&one[..end]);
            assert!(end == 0 && cut == Some(vec![]) || cut.is_none(), "{end}");
        }
        // Any byte changed anywhere in the entry: damaged, so no entries.
        for at in 0..one.len() {
            let mut wrong = one.clone();
            wrong[at] ^= 0x10;
            assert_eq!(entries(&wrong), None, "{at}");
        }
    }

    #[test]
    fn only_a_relocatable_cuda_cxx_object_without_debug_information_carries_ir() {
        let lto = CompileOptions { device_lto: true, separate: true, emit: Emit::HostObject, ..CompileOptions::default() };
        assert!(carried(&lto));
        assert!(!carried(&CompileOptions { device_lto: false, ..lto.clone() }));
        assert!(!carried(&CompileOptions { whole_program: true, ..lto.clone() }));
        assert!(!carried(&CompileOptions { emit: Emit::Ptx, ..lto.clone() }));
        assert!(!carried(&CompileOptions { debug: Some(super::super::DebugLevel::LineTables), ..lto.clone() }));
        assert!(!carried(&CompileOptions { ptxas_args: vec!["-v".into()], ..lto }));
    }
}
