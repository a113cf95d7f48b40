//! The launch passes' register caps, kept only where ptxas needs them.
//!
//! A kernel that launch aggregation or thresholding creates or changes must stay launchable
//! with 1024-thread blocks, so the passes cap it at 64 registers (`.maxnreg 64`,
//! `pipeline::aggregate::REGISTER_CAP`). But the directive changes ptxas's choices, not only
//! its limit: most such kernels get more registers under it than without it (the aggregated
//! `mandelbrot_block`: 40 without, 62 under `.maxnreg 64`), and more registers cost
//! occupancy. So the passes mark each cap they add with a comment line in the PTX
//! ([`mark`], `// cdpc.register-cap 64 <kernel>`, the module's file-scope assembly), and the
//! build ([`super::StartedBuild::finish`]) assembles the PTX without the marked caps first
//! ([`uncapped`]); only if a marked kernel then needs more registers than its cap does ptxas
//! run again, on the PTX with the caps of those kernels alone ([`recapped`]). A cap the
//! passes did not mark (the user's `__launch_bounds__` or `__maxnreg__`) is never touched,
//! and PTX without a mark is assembled as it is, once.
//!
//! The PTX a user asks for (`--emit ptx`) keeps every marked cap: assembled by hand, it is
//! launchable with any block size.

use std::collections::HashMap;

/// The comment that marks one cap: `// cdpc.register-cap <registers> <kernel>`.
pub const MARK: &str = "// cdpc.register-cap";

/// The mark of `kernel`'s cap at `registers`, as the file-scope assembly line the passes add.
pub fn mark(registers: u32, kernel: &str) -> String {
    format!("{MARK} {registers} {kernel}")
}

/// The marked caps of `ptx`: kernel and registers.
pub fn marks(ptx: &str) -> HashMap<&str, u32> {
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(MARK))
        .filter_map(|rest| {
            let mut words = rest.split_whitespace();
            let registers = words.next()?.parse().ok()?;
            let kernel = words.next()?;
            words.next().is_none().then_some((kernel, registers))
        })
        .collect()
}

/// `ptx` without the marked caps of the kernels `drop` accepts (a `.maxnreg` line between a
/// marked kernel's `.entry` and its body, of the marked value); every other line as it was.
fn without_caps(ptx: &str, marks: &HashMap<&str, u32>, drop: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(ptx.len());
    // The marked kernel whose directives are being read: from its `.entry` line to its `{`.
    let mut header: Option<(&str, u32)> = None;
    for line in ptx.split_inclusive('\n') {
        let text = line.trim();
        if let Some(name) = entry_name(text) {
            header = marks.get_key_value(name).map(|(k, v)| (*k, *v)).filter(|(k, _)| drop(k));
        } else if text.starts_with('{') {
            header = None;
        } else if let Some((_, cap)) = header {
            if text.strip_prefix(".maxnreg").and_then(|n| n.trim().parse::<u32>().ok()) == Some(cap) {
                continue;
            }
        }
        out.push_str(line);
    }
    out
}

/// The kernel a PTX `.entry` line declares (`.visible .entry name(`).
fn entry_name(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == ".entry" {
            let rest = words.next()?;
            return rest.split('(').next().filter(|n| !n.is_empty());
        }
        if !w.starts_with('.') {
            return None;
        }
    }
    None
}

/// What ptxas assembles first: `ptx` without its marked caps, or `None` when it has none (it
/// is assembled as it is).
pub fn uncapped(ptx: &str) -> Option<String> {
    if !ptx.contains(MARK) {
        return None;
    }
    let marks = marks(ptx);
    (!marks.is_empty()).then(|| without_caps(ptx, &marks, |_| true))
}

/// After the uncapped assembly made `object`: the PTX to assemble again, with the marked caps
/// of the kernels that needed more registers than their cap and no other marked cap, or
/// `None` when none did. A marked kernel whose count `object` does not give keeps its cap.
pub fn recapped(ptx: &str, object: &[u8]) -> Option<String> {
    let marks = marks(ptx);
    let counts = register_counts(object).unwrap_or_default();
    let over = |kernel: &str| counts.get(kernel).is_none_or(|&n| n > marks[kernel]);
    if !marks.keys().any(|k| over(k)) {
        return None;
    }
    Some(without_caps(ptx, &marks, |k| !over(k)))
}

/// `EIATTR_REGCOUNT` of a relocatable object's `.nv.info`: a function's registers.
const EIATTR_REGCOUNT: u8 = 0x2f;
/// `EIFMT_SVAL`: an attribute whose 16-bit field is the size of the data after it.
const EIFMT_SVAL: u8 = 0x04;

/// Each function's registers in a relocatable object or cubin as ptxas writes it (ELF64,
/// little-endian): the `EIATTR_REGCOUNT` entries of `.nv.info`, `(symbol index, count)`,
/// named through `.symtab`. `None` where the bytes are not such an object.
pub fn register_counts(elf: &[u8]) -> Option<HashMap<String, u32>> {
    let u16_at = |at: usize| elf.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |at: usize| elf.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let u64_at = |at: usize| elf.get(at..at + 8).and_then(|b| usize::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok());
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum, shstrndx) = (u64_at(0x28)?, usize::from(u16_at(0x3a)?), usize::from(u16_at(0x3c)?), usize::from(u16_at(0x3e)?));
    if shentsize < 0x40 {
        return None;
    }
    // (name offset, type, offset, size, link, entry size) of each section.
    let sections: Vec<(u32, u32, usize, usize, usize, usize)> = (0..shnum)
        .map(|i| {
            let at = shoff.checked_add(i.checked_mul(shentsize)?)?;
            Some((u32_at(at)?, u32_at(at + 4)?, u64_at(at + 0x18)?, u64_at(at + 0x20)?, usize::try_from(u32_at(at + 0x28)?).ok()?, u64_at(at + 0x38)?))
        })
        .collect::<Option<_>>()?;
    let bytes = |off: usize, size: usize| elf.get(off..off.checked_add(size)?);
    let string = |table: usize, at: u32| -> Option<&str> {
        let (_, _, off, size, _, _) = *sections.get(table)?;
        let data = bytes(off, size)?.get(usize::try_from(at).ok()?..)?;
        std::str::from_utf8(&data[..data.iter().position(|&b| b == 0)?]).ok()
    };
    const SHT_SYMTAB: u32 = 2;
    let &(_, _, sym_off, sym_size, sym_strings, sym_entsize) = sections.iter().find(|s| s.1 == SHT_SYMTAB)?;
    if sym_entsize < 24 {
        return None;
    }
    let symbols = bytes(sym_off, sym_size)?;
    let mut counts = HashMap::new();
    for &(name, _, off, size, _, _) in &sections {
        if string(shstrndx, name)? != ".nv.info" {
            continue;
        }
        let info = bytes(off, size)?;
        let mut at = 0;
        while at + 4 <= info.len() {
            let (format, attribute) = (info[at], info[at + 1]);
            let field = usize::from(u16::from_le_bytes([info[at + 2], info[at + 3]]));
            let data = at + 4;
            at = if format == EIFMT_SVAL { data + field } else { data };
            if format == EIFMT_SVAL && attribute == EIATTR_REGCOUNT && field == 8 {
                let entry = info.get(data..data + 8)?;
                let symbol = usize::try_from(u32::from_le_bytes(entry[..4].try_into().expect("4 bytes"))).ok()?;
                let registers = u32::from_le_bytes(entry[4..].try_into().expect("4 bytes"));
                let sym_name = u32::from_le_bytes(symbols.get(symbol * sym_entsize..symbol * sym_entsize + 4)?.try_into().expect("4 bytes"));
                counts.insert(string(sym_strings, sym_name)?.to_string(), registers);
            }
        }
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 8.8
.target sm_90
                                        // Start of file scope inline assembly
// cdpc.register-cap 64 agg
// cdpc.register-cap 64 parent
                                        // End of file scope inline assembly
.visible .entry parent(
\t.param .u64 parent_param_0
)
.maxnreg 64
{
\tret;
}
.entry agg()
.maxnreg 64
{
\tret;
}
.visible .entry user()
.maxnreg 64
{
\tret;
}
";

    #[test]
    fn marks_are_read_from_comment_lines() {
        assert_eq!(marks(PTX), HashMap::from([("agg", 64), ("parent", 64)]));
        assert_eq!(mark(64, "k"), "// cdpc.register-cap 64 k");
        assert!(marks("// cdpc.register-cap x k\n// cdpc.register-cap 64 k extra\n").is_empty());
    }

    #[test]
    fn only_marked_caps_are_left_out_and_a_user_cap_stays() {
        let out = uncapped(PTX).unwrap();
        assert_eq!(out.matches(".maxnreg 64").count(), 1, "{out}");
        assert!(out.contains(".visible .entry user()\n.maxnreg 64\n{"), "{out}");
        assert!(out.contains(".visible .entry parent(\n\t.param .u64 parent_param_0\n)\n{"), "{out}");
        assert!(uncapped(".entry k()\n.maxnreg 64\n{\n}\n").is_none(), "no mark: assembled as it is");
        // A cap of another value than the mark's is not the passes'.
        let other = PTX.replacen(".maxnreg 64\n{\n\tret;\n}\n.entry agg", ".maxnreg 32\n{\n\tret;\n}\n.entry agg", 1);
        assert!(uncapped(&other).unwrap().contains(".maxnreg 32"));
    }

    #[test]
    fn without_an_object_every_marked_cap_stays() {
        assert_eq!(recapped(PTX, b"not an object").as_deref(), Some(PTX));
        assert_eq!(register_counts(b"not an object"), None);
        assert_eq!(register_counts(b"\x7fELF\x02\x01"), None);
    }

    #[test]
    fn entry_names() {
        assert_eq!(entry_name(".visible .entry k("), Some("k"));
        assert_eq!(entry_name(".entry k()"), Some("k"));
        assert_eq!(entry_name(".weak .entry _Z1kv("), Some("_Z1kv"));
        assert_eq!(entry_name(".visible .func f("), None);
        assert_eq!(entry_name("ret;"), None);
    }
}
