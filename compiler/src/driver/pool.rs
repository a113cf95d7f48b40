//! The device allocation pool at the device link (docs/DEVICE-MALLOC.md, "Decided at the
//! link").
//!
//! A relocatable compile leaves the pool to the link by default ([`MallocPool::AtLink`]): its
//! device code calls the runtime's allocation functions through wrappers whose two pool
//! functions are `weak` and serve nothing (`pipeline::malloc_pool`). The device link adds the
//! pool ([`object`]: the pool, its state and strong definitions of the two functions) when it
//! proves that no pointer the pool gave can reach a `free` that does not know the pool
//! ([`decide`]): every input that holds device code frees only through the wrappers, or frees
//! nothing; and when one of them allocates through the wrappers (else the pool's 32 MiB would
//! serve nothing). One input that is not so, or that cdpc cannot read (nvcc's objects, an object
//! compiled with `-fno-device-malloc-pool` that frees, a shared library with device code), and
//! the weak functions stay: the heap, as nvcc's link of the same objects gives.
//!
//! How an input shows it:
//! - a host object (`-dc`'s, `-c`'s) by the section [`POOL_SAFE_SECTION`], which cdpc writes
//!   as its device code's PTX says ([`ptx_mark`]), or by holding no device code; that it
//!   allocates through the wrappers by [`POOL_USED_SECTION`];
//! - a bare device object by its symbols: no runtime `free`, or the wrappers' (the weak or
//!   strong [`GIVE`], or the pool's state [`STATE`] of `-fdevice-malloc-pool`); that it
//!   allocates through them by [`TAKE`] or the state;
//! - an archive by each of its members; a shared library only by holding no device code (the
//!   host linker merges its objects' sections, so a mark there would not speak for all).
//!
//! libcudadevrt, which implements the runtime's functions, is not read.
//!
//! [`MallocPool::AtLink`]: crate::pipeline::malloc_pool::MallocPool::AtLink

use super::{archive, symbols, CompileError};
use crate::back::host_object::{PoolMark, POOL_SAFE_SECTION, POOL_USED_SECTION};
use crate::pipeline::malloc_pool::{FREES, GIVE, STATE, TAKE};
use crate::target::{SmVersion, Target};
use crate::toolchain::{BuildOptions, Toolchain};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The sections of a host object or library that hold device code: the relocatable fat binary
/// (`-dc`) and a whole program's.
const DEVICE_CODE_SECTIONS: &[&str] = &["__nv_relfatbin", ".nv_fatbin"];

/// What a module's PTX says to the device link's pool: [`PoolMark::None`] where it declares
/// or defines a runtime `free` ([`FREES`]) and its allocations were not routed to the pool
/// (it has neither [`GIVE`] nor the pool's [`STATE`]); otherwise [`PoolMark::Used`] where it
/// allocates through the wrappers ([`TAKE`], or the pool's state of `-fdevice-malloc-pool`),
/// [`PoolMark::Safe`] where it does not.
pub fn ptx_mark(ptx: &str) -> PoolMark {
    let (mut frees, mut routed, mut takes) = (false, false, false);
    for line in ptx.lines() {
        let line = line.trim_start();
        if !line.starts_with('.') || !line.contains(".func") {
            continue;
        }
        match symbols::declared_name(line) {
            Some(GIVE) => routed = true,
            Some(TAKE) => takes = true,
            Some(name) if FREES.contains(&name) => frees = true,
            _ => {}
        }
    }
    let pooled = ptx.contains(STATE);
    if frees && !routed && !pooled {
        PoolMark::None
    } else if takes || pooled {
        PoolMark::Used
    } else {
        PoolMark::Safe
    }
}

/// What the device link decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Every input frees only through the pool's wrappers and one allocates through them: the
    /// pool is linked in.
    Pool,
    /// No input allocates through the wrappers: no pool (its 32 MiB would serve nothing).
    Unused,
    /// `input` may free a pool pointer with the heap's `free`: the heap, for `why`.
    Heap {
        /// The input as named on the command line (an archive's member as `lib.a(member.o)`).
        input: String,
        /// Why it may.
        why: &'static str,
    },
}

impl Decision {
    /// The decision as a remark's message (`-Rpass=malloc-pool`).
    pub fn message(&self) -> String {
        match self {
            Decision::Pool => "device-side allocations of at most 16 KiB come from cdpc's pool: every device object of the program frees through it".into(),
            Decision::Unused => "no pool for device-side allocations: no device object of the program allocates through cdpc's pool wrappers".into(),
            Decision::Heap { input, why } => format!("device-side allocations stay with the heap: `{input}` {why}"),
        }
    }
}

/// An input of a device link, as the decision reads it.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// Its bytes, already read.
    Bytes(&'a [u8]),
    /// A file, read when the decision comes to it (a shared library's headers alone).
    File(&'a Path),
}

/// Whether the device link of `inputs` (each named) may add the pool, and whether it has
/// anything to serve. The inputs are read in order, up to the first that keeps the heap.
pub fn decide<'a>(inputs: impl IntoIterator<Item = (String, Input<'a>)>) -> Decision {
    let mut used = false;
    for (name, input) in inputs {
        let verdict = match input {
            Input::Bytes(bytes) => verdict(&name, bytes),
            Input::File(path) => file_verdict(&name, path),
        };
        match verdict {
            Ok(uses) => used |= uses,
            Err((input, why)) => return Decision::Heap { input, why },
        }
    }
    if used {
        Decision::Pool
    } else {
        Decision::Unused
    }
}

/// [`verdict`] of the file at `path`: a shared library by its section headers alone (it can be
/// large, and nvlink does not read it), anything else whole.
fn file_verdict(name: &str, path: &Path) -> Result<bool, (String, &'static str)> {
    let unreadable = || (name.to_string(), "is not an object cdpc can read");
    let mut file = std::fs::File::open(path).map_err(|_| unreadable())?;
    match shared_library_device_code(&mut file) {
        None => {
            let bytes = std::fs::read(path).map_err(|_| unreadable())?;
            verdict(name, &bytes)
        }
        Some(Some(true)) => Err((name.into(), "is a shared library with device code")),
        Some(Some(false)) => Ok(false),
        Some(None) => Err(unreadable()),
    }
}

/// For a shared library (a 64-bit little-endian ELF file of type `ET_DYN`), whether it holds
/// device code, read from its section headers alone (`None` inside: they cannot be read);
/// `None` for any other file.
fn shared_library_device_code(file: &mut std::fs::File) -> Option<Option<bool>> {
    let mut header = [0u8; 64];
    // ELFCLASS64, ELFDATA2LSB, ET_DYN.
    let shared = file.read_exact(&mut header).is_ok() && header.starts_with(b"\x7fELF") && header[4] == 2 && header[5] == 1 && header[16] == 3;
    shared.then(|| shared_library_sections(file, &header).map(|sections| sections.iter().any(|s| DEVICE_CODE_SECTIONS.contains(&s.as_str()))))
}

/// Whether the file at `path` may hold device code: a bare device object, an archive with such
/// a member, an object or shared library with a fat binary's section
/// ([`DEVICE_CODE_SECTIONS`]), or a file cdpc cannot read as an object (a linker script, say).
/// A shared library is read by its section headers alone.
pub fn may_hold_device_code(path: &Path) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else { return true };
    match shared_library_device_code(&mut file) {
        Some(holds) => holds.unwrap_or(true),
        None => std::fs::read(path).map_or(true, |bytes| bytes_may_hold_device_code(&bytes)),
    }
}

/// [`may_hold_device_code`] of a file's bytes.
pub(super) fn bytes_may_hold_device_code(bytes: &[u8]) -> bool {
    if let Some(members) = archive::members(bytes) {
        return members.iter().any(|m| bytes_may_hold_device_code(&m.bytes));
    }
    if archive::is_device_object(bytes) {
        return true;
    }
    archive::elf_section_names(bytes).is_none_or(|sections| sections.iter().any(|s| DEVICE_CODE_SECTIONS.contains(&s.as_str())))
}

/// The section names of the ELF file whose first 64 bytes are `header`, reading its section
/// headers and their names' table alone.
fn shared_library_sections(file: &mut std::fs::File, header: &[u8; 64]) -> Option<Vec<String>> {
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([header[at], header[at + 1]]));
    let shoff = u64::from_le_bytes(header[0x28..0x30].try_into().ok()?);
    let (shentsize, shnum, shstrndx) = (u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let read_at = |file: &mut std::fs::File, at: u64, len: u64| -> Option<Vec<u8>> {
        // No section table or names' table of a real library is near this size.
        if len > 64 << 20 {
            return None;
        }
        let mut bytes = vec![0u8; usize::try_from(len).ok()?];
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut bytes).ok()?;
        Some(bytes)
    };
    if shentsize < 64 {
        return None;
    }
    let table = read_at(file, shoff, shentsize.checked_mul(shnum)?)?;
    let field = |at: usize| table.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    let names_header = usize::try_from(shstrndx.checked_mul(shentsize)?).ok()?;
    let names = read_at(file, field(names_header + 0x18)?, field(names_header + 0x20)?)?;
    (0..usize::try_from(shnum).ok()?)
        .map(|i| {
            let at = i * usize::try_from(shentsize).ok()?;
            let offset = usize::try_from(u32::from_le_bytes(table.get(at..at + 4)?.try_into().ok()?)).ok()?;
            archive::string_at(&names, offset)
        })
        .collect()
}

/// `Ok` when `bytes` (an object, archive or shared library named `name`) frees only through
/// the pool's wrappers, with whether it allocates through them; else which input does not,
/// and why.
fn verdict(name: &str, bytes: &[u8]) -> Result<bool, (String, &'static str)> {
    if let Some(members) = archive::members(bytes) {
        let mut used = false;
        for m in &members {
            used |= verdict(&format!("{name}({})", m.name), &m.bytes)?;
        }
        return Ok(used);
    }
    if archive::is_device_object(bytes) {
        let Some(found) = archive::elf_symbols(bytes) else { return Err((name.into(), "is a device object whose symbols cdpc cannot read")) };
        let has = |wanted: &str| found.iter().any(|s| s.name == wanted);
        let frees = found.iter().any(|s| FREES.contains(&s.name.as_str()));
        let pooled = has(GIVE) || has(STATE);
        return if !frees || pooled { Ok(has(TAKE) || has(STATE)) } else { Err((name.into(), "frees device memory outside cdpc's pool (it was not compiled by cdpc for the pool)")) };
    }
    let Some(sections) = archive::elf_section_names(bytes) else { return Err((name.into(), "is not an object cdpc can read")) };
    let has = |wanted: &str| sections.iter().any(|s| s == wanted);
    if !DEVICE_CODE_SECTIONS.iter().any(|s| has(s)) {
        return Ok(false);
    }
    // ET_DYN: a shared library, whose marks the host linker merged.
    if bytes.get(16) == Some(&3) {
        return Err((name.into(), "is a shared library with device code"));
    }
    if has(POOL_SAFE_SECTION) {
        Ok(has(POOL_USED_SECTION))
    } else {
        Err((name.into(), "holds device code that may free outside cdpc's pool (not compiled by cdpc, or with `-fno-device-malloc-pool`)"))
    }
}

/// The pool as a relocatable device object for `target`'s architecture and address size: the
/// module of `pipeline::malloc_pool::link_object_ir`, through NVPTX and ptxas.
pub fn object(tools: &Toolchain, target: &Target, sm: SmVersion, build: &BuildOptions) -> Result<Vec<u8>, CompileError> {
    let target = Target { sm, ..*target };
    let context = Context::create();
    let ir = crate::pipeline::malloc_pool::link_object_ir();
    let module = context
        .create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "cdpc-malloc-pool"))
        .map_err(|e| crate::back::BackendError::Internal(format!("the device allocation pool's IR: {e}")))?;
    let tm = crate::back::target_machine(&target, 3)?;
    crate::back::configure_module(&module, &tm);
    let ptx = crate::back::write_ptx(&module, &tm)?;
    let mut build = build.clone();
    build.arch = sm;
    Ok(tools.assemble(&ptx, &build)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_that_frees_is_marked_only_when_routed_or_pooled() {
        // What NVPTX writes for a kernel calling the runtime's `free` and `__cudaCDP2Free`.
        let frees = ".extern .func free\n(\n\t.param .b64 free_param_0\n)\n;\n.extern .func  (.param .b32 func_retval0) __cudaCDP2Free\n(\n\t.param .b64 p\n)\n;\n.visible .entry k(\n";
        assert_eq!(ptx_mark(frees), PoolMark::None);
        let routed = format!("{frees}.weak .func  (.param .b32 func_retval0) __cdpc_pool_give_v1(\n");
        assert_eq!(ptx_mark(&routed), PoolMark::Safe);
        assert_eq!(ptx_mark(&format!("{routed}.weak .func  (.param .b64 func_retval0) __cdpc_pool_take_v1(\n")), PoolMark::Used);
        assert_eq!(ptx_mark(&format!("{frees}.common .global .align 8 .u64 __cdpc_malloc_state_v1;\n")), PoolMark::Used);
        // Allocating without freeing hands no pool pointer to a heap's free.
        assert_eq!(ptx_mark(".extern .func  (.param .b64 func_retval0) malloc\n(\n\t.param .b64 malloc_param_0\n)\n;\n"), PoolMark::Safe);
        // A module's own `free` is not the runtime's: no mark.
        assert_eq!(ptx_mark(".visible .func free(\n\t.param .b64 p\n)\n{\n\tret;\n}\n"), PoolMark::None);
        // A call is no declaration.
        assert_eq!(ptx_mark("\tcall.uni free, (param0);\n"), PoolMark::Safe);
    }

    /// A host (x86-64) ELF object of sections named `names`, empty but for the names' table,
    /// laid out as an assembler writes it: header, the names, then the section headers.
    fn host_elf(names: &[&str]) -> Vec<u8> {
        let mut strings = vec![0u8];
        let mut offsets = Vec::new();
        for name in names.iter().chain([&".shstrtab"]) {
            offsets.push(strings.len());
            strings.extend(name.as_bytes());
            strings.push(0);
        }
        let shoff = 64 + strings.len();
        let count = names.len() + 2; // the null section, the names, .shstrtab
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[16] = 1; // ET_REL
        elf[18] = 62; // EM_X86_64
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&(count as u16).to_le_bytes());
        elf[0x3e..0x40].copy_from_slice(&((count - 1) as u16).to_le_bytes());
        elf.extend(&strings);
        elf.extend([0u8; 64]);
        for (i, name) in offsets.iter().enumerate() {
            let mut header = [0u8; 64];
            header[..4].copy_from_slice(&(*name as u32).to_le_bytes());
            header[4..8].copy_from_slice(&(if i == names.len() { 3u32 } else { 1 }).to_le_bytes());
            if i == names.len() {
                header[0x18..0x20].copy_from_slice(&64u64.to_le_bytes());
                header[0x20..0x28].copy_from_slice(&(strings.len() as u64).to_le_bytes());
            }
            elf.extend(header);
        }
        elf
    }

    #[test]
    fn a_host_object_with_device_code_needs_the_mark() {
        let named = |sections: &[&str]| decide([("a.o".to_string(), Input::Bytes(host_elf(sections).as_slice()))]);
        assert_eq!(named(&[".text", "__nv_relfatbin", POOL_SAFE_SECTION, POOL_USED_SECTION]), Decision::Pool);
        // Safe, but nothing allocates through the wrappers: no pool for nothing.
        assert_eq!(named(&[".text", "__nv_relfatbin", POOL_SAFE_SECTION]), Decision::Unused);
        assert_eq!(
            named(&[".text", "__nv_relfatbin"]),
            Decision::Heap { input: "a.o".into(), why: "holds device code that may free outside cdpc's pool (not compiled by cdpc, or with `-fno-device-malloc-pool`)" }
        );
        assert!(matches!(named(&[".nv_fatbin"]), Decision::Heap { .. }));
        // Host code alone frees nothing of the device's.
        assert_eq!(named(&[".text", ".data"]), Decision::Unused);
        // A shared library's marks do not speak for all of its objects.
        let mut shared = host_elf(&["__nv_relfatbin", POOL_SAFE_SECTION]);
        shared[16] = 3;
        assert_eq!(decide([("libx.so".to_string(), Input::Bytes(shared.as_slice()))]), Decision::Heap { input: "libx.so".into(), why: "is a shared library with device code" });
    }

    #[test]
    fn files_are_read_as_they_come_a_shared_library_by_its_headers() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let mut with_device = host_elf(&[".text", ".nv_fatbin"]);
        with_device[16] = 3;
        let mut host_only = host_elf(&[".text", ".dynsym"]);
        host_only[16] = 3;
        let (with_device, host_only) = (write("libd.so", &with_device), write("libh.so", &host_only));
        let used = write("a.o", &host_elf(&["__nv_relfatbin", POOL_SAFE_SECTION, POOL_USED_SECTION]));
        let file = |name: &str, path| (name.to_string(), Input::File(path));
        assert_eq!(decide([file("a.o", &used), file("libh.so", &host_only)]), Decision::Pool);
        assert_eq!(decide([file("a.o", &used), file("libd.so", &with_device)]), Decision::Heap { input: "libd.so".into(), why: "is a shared library with device code" });
        // One that cannot be read keeps the heap; the decision stops at the first that does.
        let missing = dir.path().join("gone.o");
        assert_eq!(decide([file("gone.o", &missing), file("a.o", &used)]), Decision::Heap { input: "gone.o".into(), why: "is not an object cdpc can read" });
        // A shared library whose section table lies past its end.
        let mut short = std::fs::read(&host_only).unwrap();
        short.truncate(100);
        let short = write("libs.so", &short);
        assert!(matches!(decide([file("libs.so", &short)]), Decision::Heap { .. }));
    }

    #[test]
    fn damaged_objects_are_refused_without_a_panic() {
        // Every truncation and many single-byte changes of a marked object: a decision, never a
        // panic (an out-of-range offset or count is `Heap`).
        let elf = host_elf(&[".text", "__nv_relfatbin", POOL_SAFE_SECTION, POOL_USED_SECTION]);
        for end in 0..elf.len() {
            let _ = decide([("a.o".to_string(), Input::Bytes(&elf[..end]))]);
        }
        // Offsets at the end of the address space.
        for far in [u64::MAX, u64::MAX - 10, u64::MAX - 64, 1 << 63] {
            let mut damaged = elf.clone();
            damaged[0x28..0x30].copy_from_slice(&far.to_le_bytes());
            assert!(matches!(decide([("a.o".to_string(), Input::Bytes(damaged.as_slice()))]), Decision::Heap { .. }));
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut damaged = elf.clone();
            let at = (state % damaged.len() as u64) as usize;
            damaged[at] = (state >> 32) as u8;
            let _ = decide([("a.o".to_string(), Input::Bytes(damaged.as_slice()))]);
        }
    }

    #[test]
    fn unreadable_and_foreign_inputs_keep_the_heap() {
        assert_eq!(decide([("x.o".to_string(), Input::Bytes(&b"not an object"[..]))]), Decision::Heap { input: "x.o".into(), why: "is not an object cdpc can read" });
        assert_eq!(decide(std::iter::empty()), Decision::Unused);
        // An archive is read member by member.
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend(format!("{:<16}{:<32}{:<10}`\n", "junk.o/", "", 4).as_bytes());
        archive.extend(b"junk");
        assert_eq!(decide([("libx.a".to_string(), Input::Bytes(archive.as_slice()))]), Decision::Heap { input: "libx.a(junk.o)".into(), why: "is not an object cdpc can read" });
    }
}
