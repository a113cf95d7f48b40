//! Static archives (`ar`) of device objects. nvlink reads archives of host objects that carry
//! device code (what `nvcc -lib` writes, libcudadevrt.a) but skips an archive of bare device
//! objects (`ar rcs libx.a a.o b.o` over cdpc's or `nvcc -dc -cubin` objects) as
//! "incompatible". Such an archive's members are handed to nvlink as objects instead.

/// `!<arch>\n`, the magic of an `ar` archive.
const MAGIC: &[u8] = b"!<arch>\n";
/// `EM_CUDA`, the ELF machine of device objects.
const EM_CUDA: u16 = 190;

/// One member of an archive: its name and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's file name.
    pub name: String,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// The members of an `ar` archive (GNU and BSD-less System V forms), without the symbol index
/// and the long-name table; `None` if `bytes` is not a well-formed archive.
pub fn members(bytes: &[u8]) -> Option<Vec<Member>> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let mut long_names: &[u8] = &[];
    let mut found = Vec::new();
    while !rest.is_empty() {
        if rest.len() < 60 {
            return None;
        }
        let (header, after) = rest.split_at(60);
        let name = std::str::from_utf8(&header[..16]).ok()?.trim_end();
        let size: usize = std::str::from_utf8(&header[48..58]).ok()?.trim().parse().ok()?;
        if after.len() < size || &header[58..60] != b"`\n" {
            return None;
        }
        let data = &after[..size];
        rest = &after[size..];
        if size % 2 == 1 && !rest.is_empty() {
            rest = &rest[1..];
        }
        match name {
            "/" | "/SYM64/" => {}
            "//" => long_names = data,
            _ => {
                let name = match name.strip_prefix('/').and_then(|n| n.parse::<usize>().ok()) {
                    Some(offset) => {
                        let tail = long_names.get(offset..)?;
                        let end = tail.iter().position(|&b| b == b'\n').unwrap_or(tail.len());
                        String::from_utf8_lossy(&tail[..end]).trim_end_matches('/').to_string()
                    }
                    None => name.trim_end_matches('/').to_string(),
                };
                found.push(Member { name, bytes: data.to_vec() });
            }
        }
    }
    Some(found)
}

/// Whether `bytes` is a device ELF object (machine `EM_CUDA`).
pub fn is_device_object(bytes: &[u8]) -> bool {
    bytes.len() >= 20 && bytes.starts_with(b"\x7fELF") && bytes[5] == 1 && u16::from_le_bytes([bytes[18], bytes[19]]) == EM_CUDA
}

/// The device objects of an archive whose members are all device objects, or `None` for
/// anything else (an archive nvlink reads itself, or no archive).
pub fn device_members(bytes: &[u8]) -> Option<Vec<Member>> {
    let members = members(bytes)?;
    (!members.is_empty() && members.iter().all(|m| is_device_object(&m.bytes))).then_some(members)
}

/// One symbol of an ELF object's symbol table: its name and whether the object defines it
/// (a section index other than `SHN_UNDEF`) or only references it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// The name.
    pub name: String,
    /// Defined here, not only referenced.
    pub defined: bool,
}

/// A 64-bit little-endian ELF object's bytes, every read bounds-checked.
struct Elf<'a>(&'a [u8]);

/// One section header: (name offset, type, offset, size, link, entry size).
struct Section {
    name: usize,
    kind: usize,
    offset: usize,
    size: usize,
    link: usize,
    entsize: usize,
}

impl<'a> Elf<'a> {
    /// `bytes` as an ELFCLASS64, ELFDATA2LSB object, or `None`.
    fn new(bytes: &'a [u8]) -> Option<Elf<'a>> {
        (bytes.starts_with(b"\x7fELF") && bytes.get(4) == Some(&2) && bytes.get(5) == Some(&1)).then_some(Elf(bytes))
    }

    fn u16_at(&self, at: usize) -> Option<usize> {
        self.0.get(at..at.checked_add(2)?).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    }

    fn u32_at(&self, at: usize) -> Option<usize> {
        self.0.get(at..at.checked_add(4)?).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn u64_at(&self, at: usize) -> Option<usize> {
        self.0.get(at..at.checked_add(8)?).and_then(|b| usize::try_from(u64::from_le_bytes(b.try_into().ok()?)).ok())
    }

    /// The section headers, or `None` when the table does not fit in the bytes.
    fn sections(&self) -> Option<Vec<Section>> {
        let (shoff, shentsize, shnum) = (self.u64_at(0x28)?, self.u16_at(0x3a)?, self.u16_at(0x3c)?);
        if shentsize < 64 {
            return None;
        }
        (0..shnum)
            .map(|i| {
                // A header's last field is 0x38 on: an offset that far from the end reads nothing.
                let at = shoff.checked_add(i.checked_mul(shentsize)?).filter(|at| at.checked_add(64).is_some())?;
                Some(Section {
                    name: self.u32_at(at)?,
                    kind: self.u32_at(at + 4)?,
                    offset: self.u64_at(at + 0x18)?,
                    size: self.u64_at(at + 0x20)?,
                    link: self.u32_at(at + 0x28)?,
                    entsize: self.u64_at(at + 0x38)?,
                })
            })
            .collect()
    }

    /// The bytes of `section`.
    fn contents(&self, section: &Section) -> Option<&'a [u8]> {
        self.0.get(section.offset..section.offset.checked_add(section.size)?)
    }
}

/// The NUL-terminated string at `at` of a string table.
pub(super) fn string_at(table: &[u8], at: usize) -> Option<String> {
    let tail = table.get(at..)?;
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    Some(String::from_utf8_lossy(&tail[..end]).into_owned())
}

/// The symbols of a 64-bit little-endian ELF object (`.symtab`, else `.dynsym` of a shared
/// library), or `None` for anything else or a table that does not fit in `bytes`.
pub fn elf_symbols(bytes: &[u8]) -> Option<Vec<Symbol>> {
    const SHT_SYMTAB: usize = 2;
    const SHT_DYNSYM: usize = 11;
    let elf = Elf::new(bytes)?;
    let sections = elf.sections()?;
    let table = sections.iter().find(|s| s.kind == SHT_SYMTAB).or_else(|| sections.iter().find(|s| s.kind == SHT_DYNSYM))?;
    let names = elf.contents(sections.get(table.link)?)?;
    if table.entsize < 24 {
        return None;
    }
    let mut out = Vec::new();
    for i in 1..table.size / table.entsize {
        let at = table.offset.checked_add(i * table.entsize).filter(|at| at.checked_add(24).is_some())?;
        let name = string_at(names, elf.u32_at(at)?)?;
        let shndx = elf.u16_at(at + 6)?;
        if !name.is_empty() {
            out.push(Symbol { name, defined: shndx != 0 });
        }
    }
    Some(out)
}

/// The bytes of the first section named `name` of a 64-bit little-endian ELF object, or `None`
/// where there is none or the object does not fit in `bytes`.
pub fn elf_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let elf = Elf::new(bytes)?;
    let sections = elf.sections()?;
    let names = elf.contents(sections.get(elf.u16_at(0x3e)?)?)?;
    let section = sections.iter().find(|s| string_at(names, s.name).as_deref() == Some(name))?;
    elf.contents(section)
}

/// The section names of a 64-bit little-endian ELF object, or `None` for anything else or a
/// section table that does not fit in `bytes`.
pub fn elf_section_names(bytes: &[u8]) -> Option<Vec<String>> {
    let elf = Elf::new(bytes)?;
    let sections = elf.sections()?;
    let names = elf.contents(sections.get(elf.u16_at(0x3e)?)?)?;
    sections.iter().map(|s| string_at(names, s.name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: usize) -> Vec<u8> {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
    }

    fn device_elf() -> Vec<u8> {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[5] = 1;
        elf[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        elf
    }

    #[test]
    fn members_of_a_gnu_archive_with_long_names() {
        let long = b"a_rather_long_object_name.o/\n".to_vec();
        let elf = device_elf();
        let mut ar = MAGIC.to_vec();
        ar.extend(header("/", 4));
        ar.extend([0, 0, 0, 0]);
        ar.extend(header("//", long.len()));
        ar.extend(&long);
        ar.push(b'\n'); // odd sizes are padded to even
        ar.extend(header("/0", elf.len()));
        ar.extend(&elf);
        ar.extend(header("b.o/", 3));
        ar.extend(b"abc\n");
        let m = members(&ar).unwrap();
        assert_eq!(m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["a_rather_long_object_name.o", "b.o"]);
        assert_eq!(m[1].bytes, b"abc");
        assert!(is_device_object(&m[0].bytes) && !is_device_object(&m[1].bytes));
        assert_eq!(device_members(&ar), None);
    }

    #[test]
    fn truncated_or_foreign_bytes_are_no_archive() {
        assert_eq!(members(b"!<arch>\nshort"), None);
        assert_eq!(members(b"\x7fELF"), None);
        assert_eq!(members(MAGIC), Some(vec![]));
        assert_eq!(device_members(MAGIC), None);
    }
}
