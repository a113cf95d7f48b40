//! `#include`: finding a header, reading it, and the host-only headers that are skipped.
//!
//! `"name"` is looked up beside the including file, then in the `-I` folders in order, then
//! among the shipped headers; `<name>` in the `-I` folders, then among the shipped headers. A
//! `<name>` found nowhere is a host header (`<iostream>`, `<thrust/sort.h>`): device code does
//! not need it, so it is skipped with remark `R0611` and remembered, so that an unknown name
//! can say which skipped header might have declared it. A `"name"` found nowhere is `E0602`.
//!
//! A header's name in diagnostics and `__FILE__` is the including file's folder (as named)
//! joined with the name as written, or the `-I` folder as given joined with it, as gcc does;
//! a shipped header is `<cdpc>/name`. Files are read once (a cache by path), only when they
//! are regular files of at most 64 MiB of UTF-8, so `#include "/dev/zero"` is an error, not
//! a hang.

use super::headers;
use super::lexer::{Kind, RawToken};
use super::macros::Tok;
use super::source_map::{FileId, Loc};
use super::{Fatal, FileAccess, Preprocessor};
use crate::diag::{Code, Diagnostic, SourceFile};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How deep `#include`s may nest (gcc's limit).
pub const MAX_INCLUDE_DEPTH: usize = 200;
/// How many `#include`s may be read in one translation unit.
pub const MAX_INCLUDES: usize = 20_000;

/// What identifies a header for `#pragma once`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Path(PathBuf),
    Shipped(&'static str),
}

/// Where a header was found.
enum Found {
    /// `system`: found in an `-isystem` folder.
    Disk {
        path: PathBuf,
        name: String,
        system: bool,
    },
    Shipped {
        name: &'static str,
        text: &'static str,
    },
}

impl Found {
    fn key(&self) -> Key {
        match self {
            Found::Disk { path, .. } => Key::Path(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone())),
            Found::Shipped { name, .. } => Key::Shipped(name),
        }
    }
}

/// What `#include` keeps between directives.
#[derive(Debug, Default)]
pub struct IncludeState {
    depth: usize,
    total: usize,
    /// Each file's identity and, for a file on disk, its path.
    keys: HashMap<FileId, (Key, Option<PathBuf>)>,
    once: HashSet<Key>,
    cache: HashMap<(Key, String), Arc<SourceFile>>,
    /// The headers read from disk, in the order first read, once each.
    pub read: Vec<super::Header>,
}

impl IncludeState {
    /// `#pragma once` in `file`.
    pub fn pragma_once(&mut self, file: FileId) {
        if let Some((key, _)) = self.keys.get(&file) {
            self.once.insert(key.clone());
        }
    }
}

/// The header name of an `#include` or `__has_include`: `"name"` or `<name>` (then `true`).
fn header_name(toks: &[Tok]) -> Option<(String, bool)> {
    let first = toks.first()?;
    if first.kind == Kind::Str {
        // An unterminated literal (`"name` up to the end of the line) is no header name.
        let name = first.text.strip_prefix('"')?.strip_suffix('"')?;
        return Some((name.to_string(), false));
    }
    if !first.is("<") {
        return None;
    }
    let mut name = String::new();
    for (i, t) in toks.iter().enumerate().skip(1) {
        if t.is(">") {
            return Some((name, true));
        }
        if t.space && i > 1 {
            name.push(' ');
        }
        name.push_str(&t.text);
    }
    None
}

fn read_file(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    let limit = crate::front::cdp::syntax::MAX_SOURCE_BYTES as u64;
    if meta.len() > limit {
        return Err(format!("it has {} bytes; the limit is {limit} bytes (64 MiB)", meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path).and_then(|f| f.take(limit + 1).read_to_end(&mut bytes)).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| format!("it is not valid UTF-8 (first bad byte at offset {})", e.utf8_error().valid_up_to()))
}

impl Preprocessor<'_> {
    /// The folder `"..."` headers of `file` are looked up in, and its name's folder.
    fn folder_of(&self, file: FileId) -> Option<(PathBuf, PathBuf)> {
        let name_dir = Path::new(&self.map.files[file as usize].file.name).parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = if file == 0 {
            match &self.options.input {
                Some(input) => input.parent().map(Path::to_path_buf).unwrap_or_default(),
                None => PathBuf::new(),
            }
        } else {
            self.includes.keys.get(&file)?.1.as_ref()?.parent()?.to_path_buf()
        };
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        Some((dir, name_dir))
    }

    fn find(&self, name: &str, angle: bool, includer: FileId) -> Option<Found> {
        let disk = self.options.files == FileAccess::Disk && !name.is_empty();
        if disk && Path::new(name).is_absolute() {
            return Path::new(name).is_file().then(|| Found::Disk { path: name.into(), name: name.into(), system: false });
        }
        if disk && !angle {
            if let Some((dir, name_dir)) = self.folder_of(includer) {
                let path = dir.join(name);
                if path.is_file() {
                    return Some(Found::Disk { path, name: name_dir.join(name).display().to_string(), system: false });
                }
            }
        }
        if disk {
            let user = self.options.include_dirs.iter().map(|d| (d, false));
            for (dir, system) in user.chain(self.options.system_include_dirs.iter().map(|d| (d, true))) {
                let path = dir.join(name);
                if path.is_file() {
                    return Some(Found::Disk { name: path.display().to_string(), path, system });
                }
            }
        }
        headers::shipped(name).map(|(name, text)| Found::Shipped { name, text })
    }

    /// `__has_include(...)`: whether `#include` would find the header.
    pub(super) fn has_include(&self, inner: &[Tok], file: FileId) -> bool {
        header_name(inner).is_some_and(|(name, angle)| self.find(&name, angle, file).is_some())
    }

    /// `#include` and `#include_next` (which cdpc reads as `#include`).
    pub(super) fn include(&mut self, file: FileId, text: &str, args: &[RawToken], whole: Loc) -> Result<(), Fatal> {
        let raw: Vec<Tok> = args.iter().map(|t| Tok::from_raw(t, text, file, &self.no_hide)).collect();
        let spec = match header_name(&raw) {
            Some(spec) => Some(spec),
            None => {
                self.site = whole;
                let expanded = self.expand(raw, None, 0)?;
                header_name(&expanded)
            }
        };
        let Some((name, angle)) = spec else {
            let d = Diagnostic::new(Code::MalformedDirective, whole.span(), "`#include` expects \"FILENAME\" or <FILENAME>").with_primary_message("no header name here");
            let d = self.map.located(d, whole);
            self.report(d);
            return Ok(());
        };
        let spelled = if angle { format!("<{name}>") } else { format!("\"{name}\"") };
        let Some(found) = self.find(&name, angle, file) else {
            if angle {
                if !self.skipped_headers.contains(&spelled) {
                    self.skipped_headers.push(spelled.clone());
                }
                let d = Diagnostic::new(Code::HostHeaderSkipped, whole.span(), format!("skipped the host-only header {spelled}"))
                    .with_primary_message("not found on the -I path and not shipped with cdpc")
                    .with_note("cdpc compiles device code; names that only this header declares cannot be used in it");
                let d = self.map.located(d, whole);
                self.report(d);
            } else {
                let mut d = Diagnostic::new(Code::IncludeNotFound, whole.span(), format!("header {spelled} not found")).with_primary_message("no such file");
                let mut looked: Vec<String> = Vec::new();
                if self.options.files == FileAccess::Disk {
                    // The folder as the user named it: a real path could be anyone's home.
                    looked.extend(self.folder_of(file).map(|(_, named)| if named.as_os_str().is_empty() { ".".into() } else { named.display().to_string() }));
                    looked.extend(self.options.include_dirs.iter().chain(&self.options.system_include_dirs).map(|d| d.display().to_string()));
                }
                looked.push("the headers shipped with cdpc".into());
                d = d.with_note(format!("looked in: {}", looked.join(", "))).with_note("add the header's folder with -I DIR");
                let d = self.map.located(d, whole);
                self.report(d);
            }
            return Ok(());
        };
        let key = found.key();
        if self.includes.once.contains(&key) {
            return Ok(());
        }
        if self.includes.depth >= MAX_INCLUDE_DEPTH || self.includes.total >= MAX_INCLUDES {
            let (message, note) = if self.includes.depth >= MAX_INCLUDE_DEPTH {
                (
                    "`#include` nested too deeply".to_string(),
                    format!("headers may include each other at most {MAX_INCLUDE_DEPTH} levels deep; a header that includes itself needs an include guard or `#pragma once`"),
                )
            } else {
                ("too many `#include`s".to_string(), format!("a translation unit may read at most {MAX_INCLUDES} headers"))
            };
            let d = Diagnostic::new(Code::PreprocessorLimit, whole.span(), message).with_primary_message(format!("including {spelled}")).with_note(note);
            return Err(self.fatal(d, whole));
        }
        let display = match &found {
            Found::Disk { name, .. } => name.clone(),
            Found::Shipped { name, .. } => format!("<cdpc>/{name}"),
        };
        let source = match self.includes.cache.get(&(key.clone(), display.clone())) {
            Some(source) => source.clone(),
            None => {
                let text = match &found {
                    Found::Disk { path, .. } => match read_file(path) {
                        Ok(text) => text,
                        Err(why) => {
                            let d = Diagnostic::new(Code::IncludeNotFound, whole.span(), format!("cannot read header {spelled}")).with_primary_message(format!("`{}`: {why}", path.display()));
                            let d = self.map.located(d, whole);
                            self.report(d);
                            return Ok(());
                        }
                    },
                    Found::Shipped { text, .. } => text.to_string(),
                };
                let source = Arc::new(SourceFile { name: display.clone(), text });
                self.includes.cache.insert((key.clone(), display), source.clone());
                source
            }
        };
        let id = self.map.add_file(source, Some(whole));
        let path = match found {
            Found::Disk { path, system, .. } => {
                if !self.includes.read.iter().any(|h| h.path == path) {
                    self.includes.read.push(super::Header { path: path.clone(), system });
                }
                Some(path)
            }
            Found::Shipped { .. } => None,
        };
        self.includes.keys.insert(id, (key, path));
        self.includes.depth += 1;
        self.includes.total += 1;
        let result = self.run_file(id);
        self.includes.depth -= 1;
        result?;
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        Ok(())
    }
}
