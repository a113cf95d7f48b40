//! The precompiled preamble of a CUDA C++ file: its leading `#include`s (and the `#define`s and
//! conditionals among them), precompiled once and reused while neither the text, the headers
//! nor the options change, as clangd does for the file being edited.
//!
//! Clang's time on a Thrust or CUB program is mostly the parse of those headers (cdpQuadtree:
//! 6.4 s of 9.2 s in `Source`, `-ftime-trace`; BENCHMARKS.md, "CUDA C++ through Clang"). The preamble is
//! precompiled from a copy of the file's first [`bounds`] bytes, kept in the cache beside its
//! header (Clang records where the header's source was), with the same options plus
//! `-iquote DIR` (the file's folder as the file's path spells it, [`quote_dir`]: `#include "..."`
//! finds what it found beside the file, under the name a compilation of the file gives it);
//! the file is then compiled with `-include-pch HEADER -Xclang -preamble-bytes=N,1`, which makes
//! Clang's lexer start after the preamble. The result is the same IR but for the
//! `!srcloc` numbers of inline `asm` (source-location encodings, which PTX does not carry).
//!
//! # The cache
//!
//! `<cache>/preamble/<stem>.{cu,pch,json,seen}`, `<cache>` being the folder of the wrapper's
//! precompiled header ([`super::cache`], which bounds the folder's size and trims it). The stem
//! hashes the preamble's text, the file's folder, the working folder (relative `-I`), Clang's
//! identity, `cuda.h`'s stamp, cdpc's version and every option of the compilation ([`Key`]),
//! and ends with cdpc's version ([`super::cache::stem`]); the `.json` manifest holds the whole
//! of that identity (a hash collision is a miss), the size and modification time of every file
//! the preamble read (Clang's dependency list: a changed header is a miss) and Clang's messages
//! while precompiling it, replayed on every use (a header's warnings are the preamble's: the
//! compilations that use it do not give them again).
//!
//! A preamble costs about a compilation of the file to make, so it is made for the second
//! compilation of the same preamble only ([`Lookup::Build`]), and by the `cdpc` program after
//! that compilation's output, off its critical path ([`super::cache::Fill`]: that compilation
//! uses the wrapper's header, or none); the first leaves the `.seen`
//! mark, which is also the entry's anchor in the cache ([`super::cache::InUse`]: held while the
//! entry is read or written, touched by a hit, and where a header too large for the cache's
//! bound is noted, [`Lookup::TooLarge`], or where the cache has no room for one: a full disk,
//! a read-only folder). Files are written whole and renamed into place, so
//! concurrent compilations read either nothing or a whole file; a manifest that cannot be read
//! or does not match is a miss, a header that is not the file the manifest was written for (its
//! size and time, [`Manifest::header`]) too, and a header Clang refuses (damaged, or gone) is given up
//! ([`Entry::forget`]: removed once no other compilation holds it) and the compilation runs
//! without it. `CDPC_CACHE_DIR=` (empty) turns the cache off;
//! `CDPC_PREAMBLE=0` turns off the preamble alone (the wrapper's header stays).
//!
//! # The two sides of `-dc`
//!
//! Each side of `-dc` has its own preamble, which `setup.rs` makes and uses. The host side's
//! (and its wrapper header) is made without `-fpch-instantiate-templates`, which changes the host
//! object's bytes, and never where the host side holds deferred diagnostics (`shim.cpp` refuses
//! it, `InUse::mark_not_made`) or with `-Xcompiler -g`; the host side's warnings equal to the
//! device side's are dropped. Using a preamble never changes the PTX (checked on the corpus and
//! the `.cu` samples).

use super::cache::{write_atomic, Cache, HeaderStamp, InUse};
use super::in_process::{Level, Message};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The end of `source`'s preamble (a byte offset at the start of a line), or `None` when it
/// has none worth precompiling (no `#include`).
///
/// The preamble is the longest run of leading lines that are blank, comments, or the
/// directives `#include`, `#define`, `#undef`, `#if`, `#ifdef`, `#ifndef`, `#elif`,
/// `#elifdef`, `#elifndef`, `#else`, `#endif` (with `\` continuations), cut back to the last line
/// end where no conditional and no comment is open. Any other directive (`#pragma`, `#line`,
/// `#error`, ...), a byte-order mark or a line of code ends it: what the precompiled preamble
/// keeps of those is not relied on.
pub fn bounds(source: &str) -> Option<usize> {
    if source.starts_with('\u{feff}') {
        return None;
    }
    let bytes = source.as_bytes();
    let mut at = 0;
    let mut depth: usize = 0;
    let mut in_comment = false;
    let mut end = 0;
    let mut includes_at_end = false;
    let mut includes = false;
    while at < bytes.len() {
        // One logical line: up to a newline not preceded by a backslash.
        let mut line_end = at;
        while line_end < bytes.len() {
            if bytes[line_end] == b'\n' {
                let mut back = line_end;
                while back > at && bytes[back - 1] == b'\r' {
                    back -= 1;
                }
                if back > at && bytes[back - 1] == b'\\' {
                    line_end += 1;
                    continue;
                }
                break;
            }
            line_end += 1;
        }
        if line_end == bytes.len() {
            // A last line without a newline is never part of the preamble.
            break;
        }
        let line = &source[at..line_end];
        let code = match strip_comments(line, &mut in_comment) {
            Some(code) => code,
            None => break,
        };
        let code = code.trim();
        if !code.is_empty() {
            let Some(directive) = code.strip_prefix('#') else { break };
            let name: String = directive.trim_start().chars().take_while(|c| c.is_ascii_alphabetic() || *c == '_').collect();
            match name.as_str() {
                "include" => includes = true,
                "define" | "undef" => {}
                "if" | "ifdef" | "ifndef" => depth += 1,
                "elif" | "elifdef" | "elifndef" | "else" => {
                    if depth == 0 {
                        break;
                    }
                }
                "endif" => match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => break,
                },
                _ => break,
            }
        }
        at = line_end + 1;
        if depth == 0 && !in_comment {
            end = at;
            includes_at_end = includes;
        }
    }
    (end > 0 && includes_at_end).then_some(end)
}

/// The line without its comments (a space for each), following a `/* */` comment across lines
/// through `in_comment`; `None` for what the scan does not follow (a string or character
/// literal with a comment marker or quote in it is followed; a raw string is not).
fn strip_comments(line: &str, in_comment: &mut bool) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if *in_comment {
            if c == '*' && chars.peek() == Some(&'/') {
                chars.next();
                *in_comment = false;
                out.push(' ');
            }
            continue;
        }
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => return Some(out),
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                *in_comment = true;
            }
            '"' | '\'' => {
                // `R"(...)"` raw strings are not followed: stop the preamble there.
                if c == '"' && out.ends_with('R') {
                    return None;
                }
                quote = Some(c);
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    // An unterminated literal ends a directive only in broken code: not a preamble.
    quote.is_none().then_some(out)
}

/// The folder of `source` (the file as the compilation names it) as Clang names the folder of
/// the file it compiles: the path's parent, `.` for a bare file name (Clang's `FileManager`).
///
/// A header that the file includes with `#include "..."` is found beside the file, and named
/// in Clang's messages and in the declarations' places as that folder joined with the
/// header's name (`./h.h` for `main.cu`, `src/h.h` for `src/main.cu`). The preamble's copy
/// lives in the cache, so it finds those headers through `-iquote` with this folder, and the
/// names are the same: a replayed warning is the warning a compilation without the preamble
/// gives, in text and JSON, and `-dc`'s host side (with a preamble of its own options) gives it
/// equal, so that it is reported once (compiler/src/driver/cuda.rs, `host_object`). The canonical
/// folder named every such header by its absolute path instead.
pub fn quote_dir(source: &Path) -> PathBuf {
    match source.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// What a preamble is precompiled for: hashed into the cache key, and kept whole in the
/// manifest, which must match it exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// The preamble's text.
    pub text: String,
    /// The folder of the file, canonical.
    pub source_dir: PathBuf,
    /// The folder of the file as its path spells it ([`quote_dir`], `-iquote`): the name of
    /// every header found there, in the header and in its messages.
    pub quote_dir: PathBuf,
    /// The working folder (relative `-I` and file names).
    pub cwd: PathBuf,
    /// Clang's identity (a program, or the linked Clang's CUDA wrapper) with its size and time,
    /// `cuda.h`'s size and time, cdpc's version, and every option of the compilation.
    pub compiler: Vec<String>,
}

impl Key {
    /// The file name stem of this key's entries ([`super::cache::stem`]).
    pub fn stem(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut hasher);
        super::cache::stem(hasher.finish())
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.text, &self.source_dir, &self.quote_dir, &self.cwd, &self.compiler).hash(state)
    }
}

/// A file the preamble read, as it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Dependency {
    path: PathBuf,
    size: u64,
    /// Nanoseconds since the epoch.
    modified: u128,
}

/// One of Clang's messages while precompiling the preamble.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredMessage {
    level: u8,
    place: Option<(String, usize, usize)>,
    text: String,
}

/// The `.json` beside a preamble's header.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    key: Key,
    /// The header as it was written ([`HeaderStamp`]): a header replaced by another file
    /// (another entry's header renamed or copied over it, which Clang accepts and compiles the
    /// file against, the preamble's declarations missing), truncated or written in place is a
    /// miss.
    header: HeaderStamp,
    dependencies: Vec<Dependency>,
    messages: Vec<StoredMessage>,
}

/// The files of one preamble in the cache.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The copy of the preamble that Clang precompiles (and records as the header's source).
    pub copy: PathBuf,
    /// The precompiled header.
    pub pch: PathBuf,
    manifest: PathBuf,
    seen: PathBuf,
    key: Key,
}

/// What the cache says about a preamble. The entry is held ([`InUse`]) by a hit and a build,
/// until the compilation that uses it is over.
#[derive(Debug)]
pub enum Lookup {
    /// A header that fits, with the messages of its making to replay (marked used now).
    Hit(Vec<Message>, InUse),
    /// Seen before and not (or no longer) in the cache: make it now.
    Build(InUse),
    /// First seen now (marked): compile without it.
    FirstSight,
    /// Made before, and larger than the cache's bound then and now: compile without it.
    TooLarge,
    /// The mark could not be made (a read-only cache) or held (the entry is being removed):
    /// compile without it.
    Unusable,
}

impl Entry {
    /// The entry of `key` in `cache`.
    pub fn new(cache: &Cache, key: Key) -> Entry {
        let dir = cache.kind_dir("preamble");
        let stem = key.stem();
        Entry { copy: dir.join(format!("{stem}.cu")), pch: dir.join(format!("{stem}.pch")), manifest: dir.join(format!("{stem}.json")), seen: dir.join(format!("{stem}.seen")), key }
    }

    /// Looks the preamble up, holding its entry first: a hit when the manifest matches the
    /// key and every file the preamble read is as it was, and the header is there. A header
    /// larger than `max_size` (the cache's bound) is not made.
    pub fn lookup(&self, max_size: u64) -> Lookup {
        let Some(mut held) = InUse::hold(&self.seen) else { return Lookup::Unusable };
        if let Some(messages) = self.read_manifest() {
            if self.copy.is_file() && held.found(&self.pch) {
                held.touch();
                return Lookup::Hit(messages, held);
            }
        }
        if held.first_sight {
            Lookup::FirstSight
        } else if held.too_large(max_size) {
            Lookup::TooLarge
        } else {
            Lookup::Build(held)
        }
    }

    fn read_manifest(&self) -> Option<Vec<Message>> {
        let text = std::fs::read(&self.manifest).ok()?;
        let manifest: Manifest = serde_json::from_slice(&text).ok()?;
        if manifest.key != self.key || !manifest.header.matches(&self.pch) {
            return None;
        }
        for d in &manifest.dependencies {
            if stamp(&d.path)? != (d.size, d.modified) {
                return None;
            }
        }
        Some(manifest.messages.into_iter().map(|m| Message { level: level_of(m.level), place: m.place, text: m.text }).collect())
    }

    /// Writes the copy of the preamble that Clang precompiles (before [`Entry::store`]).
    pub fn write_copy(&self) -> std::io::Result<()> {
        super::filler::make_dir(self.copy.parent().unwrap_or(Path::new(".")))?;
        if std::fs::read(&self.copy).ok().as_deref() == Some(self.key.text.as_bytes()) {
            return Ok(());
        }
        write_atomic(&self.copy, self.key.text.as_bytes())
    }

    /// Whether the copy still holds the preamble's text, after Clang precompiled it: a copy
    /// damaged while Clang read it (truncated, say) makes a header of something else, which is
    /// neither kept nor used (Clang's check of the copy's size and time would pass).
    pub fn copy_intact(&self) -> bool {
        std::fs::read(&self.copy).is_ok_and(|text| text == self.key.text.as_bytes())
    }

    /// Keeps a header Clang made: `pch` (its bytes), `depfile` (Clang's `-MD` list of what it
    /// read) and its messages, whose places in the copy are put back in `source`. The header
    /// goes in first and the manifest last, each whole.
    pub fn store(&self, pch: &[u8], depfile: &str, messages: &[Message], source: &Path) -> std::io::Result<()> {
        let mut dependencies = Vec::new();
        for path in parse_depfile(depfile) {
            if path == self.copy {
                continue;
            }
            let Some((size, modified)) = stamp(&path) else {
                return Err(std::io::Error::other(format!("`{}` is gone", path.display())));
            };
            dependencies.push(Dependency { path, size, modified });
        }
        let copy = self.copy.to_string_lossy();
        let messages = messages
            .iter()
            .map(|m| StoredMessage {
                level: level_code(m.level),
                place: m.place.clone().map(|(file, line, column)| (if file == copy { source.to_string_lossy().into_owned() } else { file }, line, column)),
                text: m.text.clone(),
            })
            .collect();
        write_atomic(&self.pch, pch)?;
        let header = HeaderStamp::written(pch, &self.pch).ok_or_else(|| std::io::Error::other(format!("`{}` is gone", self.pch.display())))?;
        let manifest = Manifest { key: self.key.clone(), header, dependencies, messages };
        write_atomic(&self.manifest, &serde_json::to_vec(&manifest).map_err(std::io::Error::other)?)
    }

    /// Gives up the entry whose header Clang refused (`held`, from [`Entry::lookup`]'s hit),
    /// removing the header and its manifest when no other compilation holds it
    /// ([`InUse::discard`]); the mark stays, so the next compilation makes it again.
    pub fn forget(&self, held: InUse) {
        held.discard(&[&self.manifest, &self.pch]);
    }

    /// Clang's messages with places in the copy put back in the source file.
    pub fn in_source(&self, messages: Vec<Message>, source: &Path) -> Vec<Message> {
        self.placed(messages, source, &[])
    }

    /// [`Entry::in_source`] for a compilation that read the preamble, whose places in its
    /// headers are also named as without it. A precompiled header records each file by its
    /// absolute path (the working folder joined, `.` and `..` taken out), so that a message at
    /// a declaration read from it (a function still unused at the end of the file, the note at
    /// a called function's declaration) named `/work/app/u.h` where the compilation without the
    /// preamble says `./u.h`. A place in a file under one of the folders headers are searched in,
    /// as they are spelled (`.`, `src`, `/opt/lib/include`: [`Key::quote_dir`], and `search`,
    /// the `-I` and `-isystem` folders), is named as that folder joined with the rest, as Clang
    /// names a header it finds there; the folder nearest the file where several hold it
    /// (`inc/i.h` for `-Iinc`'s `i.h`, not `./inc/i.h`; an absolute `-I` folder under the
    /// working folder keeps its headers' absolute names), as a header is most often included
    /// by its name in its own folder; a path the preamble's text spells itself
    /// (`#include "/abs/h.h"`) stays as it is.
    pub fn in_source_read(&self, messages: Vec<Message>, source: &Path, search: &[&Path]) -> Vec<Message> {
        let folders: Vec<(PathBuf, &Path)> = std::iter::once(self.key.quote_dir.as_path()).chain(search.iter().copied()).map(|dir| (lexically_normal(&self.key.cwd.join(dir)), dir)).collect();
        self.placed(messages, source, &folders)
    }

    fn placed(&self, messages: Vec<Message>, source: &Path, folders: &[(PathBuf, &Path)]) -> Vec<Message> {
        let copy = self.copy.to_string_lossy().into_owned();
        messages
            .into_iter()
            .map(|mut m| {
                if let Some((file, _, _)) = &mut m.place {
                    if *file == copy {
                        *file = source.to_string_lossy().into_owned();
                    } else if Path::new(file.as_str()).is_absolute() && !self.key.text.contains(file.as_str()) {
                        let named = folders
                            .iter()
                            .filter_map(|(absolute, spelled)| Path::new(file.as_str()).strip_prefix(absolute).ok().map(|rest| (rest.components().count(), spelled.join(rest))))
                            .min_by_key(|(depth, _)| *depth)
                            .map(|(_, named)| named);
                        if let Some(named) = named {
                            *file = named.to_string_lossy().into_owned();
                        }
                    }
                }
                m
            })
            .collect()
    }
}

/// `path` with its `.` components taken out and each `..` taking out the one before, without
/// reading the file system, as Clang writes a path into a precompiled header.
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn level_code(level: Level) -> u8 {
    match level {
        Level::Note => 0,
        Level::Remark => 1,
        Level::Warning => 2,
        Level::Error => 3,
        Level::Fatal => 4,
    }
}

fn level_of(code: u8) -> Level {
    match code {
        0 => Level::Note,
        1 => Level::Remark,
        2 => Level::Warning,
        3 => Level::Error,
        _ => Level::Fatal,
    }
}

/// A file's size and modification time (nanoseconds since the epoch).
fn stamp(path: &Path) -> Option<(u64, u128)> {
    let m = std::fs::metadata(path).ok()?;
    let modified = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some((m.len(), modified))
}

/// The files of a Make-style dependency list (`target: a b \` lines, `\ ` for a space).
pub fn parse_depfile(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        // The target ends at the first `: ` (a path may hold a colon, not followed by a space).
        let Some(colon) = line.find(": ") else { continue };
        let mut word = String::new();
        let mut chars = line[colon + 2..].chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    word.push(' ');
                    chars.next();
                }
                ' ' | '\t' => {
                    if !word.is_empty() {
                        out.push(PathBuf::from(std::mem::take(&mut word)));
                    }
                }
                _ => word.push(c),
            }
        }
        if !word.is_empty() {
            out.push(PathBuf::from(word));
        }
    }
    out
}

/// Whether the preamble is turned off (`CDPC_PREAMBLE=0`).
pub fn disabled() -> bool {
    std::env::var_os("CDPC_PREAMBLE").is_some_and(|v| v == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preamble_is_the_leading_directives_at_top_level() {
        let s = "// a comment\n#include <a.h>\n\n/* two\n lines */\n#define X 1\n#include \"b.h\"\nint x;\n#include <c.h>\n";
        assert_eq!(bounds(s), Some(s.find("int x").unwrap()));
        // A conditional open at the first code line is cut back to before it.
        let s = "#include <a.h>\n#ifdef X\n#include <b.h>\nint y;\n#endif\n";
        assert_eq!(bounds(s), Some(s.find("#ifdef").unwrap()));
        let s = "#include <a.h>\n#if A\n#include <b.h>\n#else\n#include <c.h>\n#endif\nint y;\n";
        assert_eq!(bounds(s), Some(s.find("int y").unwrap()));
        // Continuations belong to their directive.
        let s = "#include <a.h>\n#define M(x) \\\n  (x + 1)\nint y;\n";
        assert_eq!(bounds(s), Some(s.find("int y").unwrap()));
        // A comment open at the code line is cut back too.
        let s = "#include <a.h>\n/* open\n#include <b.h>\n*/ int y;\n";
        assert_eq!(bounds(s), Some(s.find("/* open").unwrap()));
    }

    #[test]
    fn no_preamble_without_an_include_or_at_other_directives() {
        assert_eq!(bounds("#define X 1\nint x;\n"), None);
        assert_eq!(bounds("int x;\n#include <a.h>\n"), None);
        assert_eq!(bounds(""), None);
        assert_eq!(bounds("#include <a.h>"), None, "a last line without a newline is not in it");
        assert_eq!(bounds("\u{feff}#include <a.h>\nint x;\n"), None);
        // #pragma, #line and unbalanced conditionals end the preamble.
        let s = "#include <a.h>\n#pragma once\n#include <b.h>\n";
        assert_eq!(bounds(s), Some(s.find("#pragma").unwrap()));
        let s = "#include <a.h>\n#line 7\nint x;\n";
        assert_eq!(bounds(s), Some(s.find("#line").unwrap()));
        assert_eq!(bounds("#endif\n#include <a.h>\n"), None);
        // A comment marker inside a string is not a comment.
        let s = "#include \"a/*b.h\"\nint x;\n";
        assert_eq!(bounds(s), Some(s.find("int x").unwrap()));
        let s = "#define S R\"(x)\"\n#include <a.h>\n";
        assert_eq!(bounds(s), None);
    }

    #[test]
    fn the_quote_folder_is_the_files_folder_as_its_path_spells_it() {
        // Clang names `#include "h.h"` of `main.cu` `./h.h`, of `src/main.cu` `src/h.h`
        // (compiler/tests/preamble_cache.rs checks those names in cdpc's messages).
        assert_eq!(lexically_normal(Path::new("/w/./src/../inc/./h.h")), Path::new("/w/inc/h.h"));
        assert_eq!(lexically_normal(Path::new("/w/.")), Path::new("/w"));
        assert_eq!(quote_dir(Path::new("main.cu")), Path::new("."));
        assert_eq!(quote_dir(Path::new("./main.cu")), Path::new("."));
        assert_eq!(quote_dir(Path::new("src/main.cu")), Path::new("src"));
        assert_eq!(quote_dir(Path::new("../src/main.cu")), Path::new("../src"));
        assert_eq!(quote_dir(Path::new("/abs/src/main.cu")), Path::new("/abs/src"));
        assert_eq!(quote_dir(Path::new("/main.cu")), Path::new("/"));
    }

    #[test]
    fn dependency_lists_are_read_with_continuations_and_escaped_spaces() {
        let d = "out.pch: /a/b.cu \\\n  /usr/include/x.h /dir\\ with\\ space/y.h \\\n  /z.h\n";
        assert_eq!(parse_depfile(d), ["/a/b.cu", "/usr/include/x.h", "/dir with space/y.h", "/z.h"].map(PathBuf::from));
    }

    #[test]
    fn a_manifest_that_does_not_match_or_cannot_be_read_is_a_miss_and_a_changed_dependency_too() {
        let dir = tempfile::tempdir().unwrap();
        let header = dir.path().join("h.h");
        std::fs::write(&header, "int h;\n").unwrap();
        let key = Key { text: "#include \"h.h\"\n".into(), source_dir: dir.path().into(), quote_dir: ".".into(), cwd: dir.path().into(), compiler: vec!["-O3".into()] };
        let cache = Cache { dir: dir.path().into(), max_size: 1 << 20 };
        let entry = Entry::new(&cache, key.clone());
        assert!(matches!(entry.lookup(1), Lookup::FirstSight));
        let Lookup::Build(held) = entry.lookup(1) else { panic!("a second sight builds") };
        // A header over the bound is noted and not made again while the bound is smaller.
        held.mark_too_large(2);
        drop(held);
        assert!(matches!(entry.lookup(1), Lookup::TooLarge));
        assert!(matches!(entry.lookup(2), Lookup::Build(_)));
        entry.write_copy().unwrap();
        let warning = Message { level: Level::Warning, place: Some((entry.copy.display().to_string(), 1, 2)), text: "w".into() };
        entry.store(b"PCH", &format!("x.pch: {} {}\n", entry.copy.display(), header.display()), &[warning], Path::new("/src/f.cu")).unwrap();
        match entry.lookup(1) {
            Lookup::Hit(m, _) => assert_eq!(m, [Message { level: Level::Warning, place: Some(("/src/f.cu".into(), 1, 2)), text: "w".into() }]),
            other => panic!("{other:?}"),
        }
        // Another key with the same stem (a collision, made by hand) does not match.
        let other = Entry { key: Key { compiler: vec!["-O2".into()], ..key.clone() }, ..entry.clone() };
        assert!(matches!(other.lookup(2), Lookup::Build(_)));
        // A changed header.
        std::fs::write(&header, "int h, i;\n").unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Build(_)));
        // A corrupt manifest.
        std::fs::write(&header, "int h;\n").unwrap();
        entry.store(b"PCH", &format!("x.pch: {}\n", header.display()), &[], Path::new("/src/f.cu")).unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Hit(..)));
        std::fs::write(&entry.manifest, b"{\"key\": tru").unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Build(_)));
        // Another file in the header's place (another entry's header copied over it).
        entry.store(b"PCH", &format!("x.pch: {}\n", header.display()), &[], Path::new("/src/f.cu")).unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Hit(..)));
        std::fs::write(&entry.pch, b"OTHER HEADER").unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Build(_)), "a header of another size");
        // Written over in place with its size and modification time kept (`touch -r`).
        entry.store(b"PCH", &format!("x.pch: {}\n", header.display()), &[], Path::new("/src/f.cu")).unwrap();
        let written = std::fs::metadata(&entry.pch).unwrap().modified().unwrap();
        std::fs::write(&entry.pch, b"HCP").unwrap();
        std::fs::File::options().write(true).open(&entry.pch).unwrap().set_modified(written).unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Build(_)), "a header of the same size and time");
        // A copy of the cache: other files, the same bytes.
        entry.store(b"PCH", &format!("x.pch: {}\n", header.display()), &[], Path::new("/src/f.cu")).unwrap();
        let copy = dir.path().join("copied.pch");
        std::fs::copy(&entry.pch, &copy).unwrap();
        std::fs::rename(&copy, &entry.pch).unwrap();
        assert!(matches!(entry.lookup(2), Lookup::Hit(..)), "the same bytes in another file");
        // Nothing but the entry's files: no temporary files left.
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("preamble")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        let stem = key.stem();
        assert_eq!(names, ["cu", "json", "pch", "seen"].map(|e| format!("{stem}.{e}")));
    }
}
