//! The command line's macros kept out of the headers that nvcc's compilation never reads.
//!
//! nvcc's compilation of a `.cu` file reads `cuda_runtime.h` (and what it includes) before the
//! file; Clang's CUDA wrapper also includes CUDA's `cuda.h` (the driver API) and cuRAND's
//! `curand_mtgp32_kernel.h` (with `curand.h` and `curand_mtgp32.h`), and cdpc adds its own
//! header ([`super::ADDITIONS`]). A macro of the command line reaches all of them, and names
//! that nvcc's headers never use are everyday macro names there: `-DN=1024` turned `size_t N`
//! in `cuda.h` into `size_t 1024`, and `-DX=1`, `-DY=1`, `-Dk=1`, `-Dnum=1`, `-Dseed=1` broke
//! cuRAND's parameters, where nvcc compiles the file (measured with nvcc 13.5; so did `-DA`,
//! `-DB`, `-DE`, `-DF`, `-DS` in cdpc's own header's templates).
//!
//! So each of those headers that uses one of the command line's macros as a word is read with
//! those macros hidden (`#pragma push_macro`, `#undef`, then `#pragma pop_macro` after it): the
//! wrapper's include of it ([`super::wrapper_includes`] names it through a macro) is pointed at
//! a file that hides the macros, includes the header and shows them again, and cdpc's header
//! hides them around its own declarations. A macro stays visible where a conditional of those
//! headers tests it (`-DCUDA_API_PER_THREAD_DEFAULT_STREAM`, `-DCUDA_FORCE_API_VERSION`:
//! configuration, as before), and so does every reserved name (`__x`, `_X`: the
//! implementation's own, such as `-D_GNU_SOURCE`). Every header nvcc does read sees every macro,
//! as with nvcc. A command line whose macros no such header uses (`-DSCALE=2`, most) changes
//! nothing: no file, the same options.

use std::path::{Path, PathBuf};

/// CUDA's headers that Clang's wrapper includes and nvcc's compilation does not (compared with
/// the line markers of `nvcc -E` and `cdpc -E` of the same file, CUDA 13.5). Clang's own
/// `__clang_cuda_*.h`, which the wrapper includes too, are not nvcc's either ([`hidden_headers`]).
pub const NOT_NVCCS: [&str; 2] = ["cuda.h", "curand_mtgp32_kernel.h"];

/// The headers the command line's macros are hidden from, where the wrapper includes them: the
/// files of [`NOT_NVCCS`] in `cuda_include`, then Clang's own `__clang_cuda_*.h` of
/// `clang_include` (the resource folder's `include`) but the wrapper itself.
pub fn hidden_headers(cuda_include: &Path, clang_include: &Path) -> Vec<PathBuf> {
    let mut headers: Vec<PathBuf> = NOT_NVCCS.iter().map(|h| cuda_include.join(h)).collect();
    let mut clangs: Vec<PathBuf> = std::fs::read_dir(clang_include)
        .map(|entries| {
            entries.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("__clang_cuda_") && n != "__clang_cuda_runtime_wrapper.h")).collect()
        })
        .unwrap_or_default();
    clangs.sort();
    headers.extend(clangs);
    headers
}

/// The macro cdpc's header includes to hide the user's macros, and again to show them: defined
/// (`-D__CDPC_HIDE="<path>"`) only where there is something to hide.
pub const HIDE_MACRO: &str = "__CDPC_HIDE";

/// The name of each macro that `args` (`-DNAME`, `-DNAME=value`, `-DNAME(x)=...`, or `-D` then
/// the definition) defines, in order, each once.
fn defined_names(args: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let definition = match arg.strip_prefix("-D") {
            Some("") => args.next().map(String::as_str),
            Some(rest) => Some(rest),
            None => None,
        };
        let Some(definition) = definition else { continue };
        let name: String = definition.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Whether `name` is reserved to the implementation (`__x`, `_X`).
fn reserved(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next() == Some('_') && chars.next().is_some_and(|c| c == '_' || c.is_ascii_uppercase())
}

/// How `text` uses the identifier `name`: (as a word anywhere, in a conditional directive:
/// `#if`, `#ifdef`, `#ifndef`, `#elif`, continuation lines included). A `#define`'s parameters
/// and body configure nothing: they count as uses.
fn uses(text: &str, name: &str) -> (bool, bool) {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let (mut used, mut tested) = (false, false);
    for (at, _) in text.match_indices(name) {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        if before.is_some_and(word) || after.is_some_and(word) {
            continue;
        }
        used = true;
        // The logical line: back over the lines that end in `\`.
        let mut start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        while start > 0 {
            let previous = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            if !text[previous..start - 1].trim_end().ends_with('\\') {
                break;
            }
            start = previous;
        }
        let directive = text[start..].trim_start().strip_prefix('#').map(str::trim_start);
        if directive.is_some_and(|d| d.starts_with("if") || d.starts_with("elif")) {
            tested = true;
            break;
        }
    }
    (used, tested)
}

/// The text of `header` with the texts of the headers it includes by a quoted name found
/// beside it (cuRAND's `curand.h` and `curand_mtgp32.h` for `curand_mtgp32_kernel.h`), at any
/// depth: what is read where the wrapper includes it.
fn text_with_beside(header: &Path) -> String {
    let mut files: Vec<PathBuf> = vec![header.to_path_buf()];
    let mut all = String::new();
    let mut i = 0;
    while i < files.len() {
        if let Ok(text) = std::fs::read_to_string(&files[i]) {
            let dir = files[i].parent().map(Path::to_path_buf).unwrap_or_default();
            for line in text.lines() {
                let quoted = super::included_header(line).filter(|(_, spelled)| spelled.starts_with('"')).map(|(name, _)| name);
                if let Some(beside) = quoted.map(|name| dir.join(name)).filter(|p| p.is_file() && !files.contains(p)) {
                    files.push(beside);
                }
            }
            all.push_str(&text);
            all.push('\n');
        }
        i += 1;
    }
    all
}

/// What to hide, and where.
#[derive(Debug, PartialEq, Eq)]
pub struct Hiding {
    /// The macros: defined on the command line, not reserved, tested by no conditional of the
    /// candidate headers, and used as a word by one of them or by cdpc's header.
    pub names: Vec<String>,
    /// The candidate headers that use one of them, to be read with them hidden.
    pub headers: Vec<PathBuf>,
}

/// The [`Hiding`] of the macros `args` define (`-D` options) from `candidates`
/// ([`hidden_headers`]) and from cdpc's header, whose text is `ours`; `None` where there is
/// nothing to hide.
pub fn plan(args: &[String], candidates: &[PathBuf], ours: &str) -> Option<Hiding> {
    let names: Vec<String> = defined_names(args).into_iter().filter(|n| !reserved(n)).collect();
    if names.is_empty() {
        return None;
    }
    let texts: Vec<(PathBuf, String)> = candidates.iter().map(|h| (h.clone(), text_with_beside(h))).collect();
    let mut hidden = Vec::new();
    let mut users: Vec<bool> = vec![false; texts.len()];
    for name in names {
        let found: Vec<(bool, bool)> = texts.iter().map(|(_, text)| uses(text, &name)).collect();
        if found.iter().any(|&(_, tested)| tested) {
            continue;
        }
        let in_ours = uses(ours, &name).0;
        if !in_ours && !found.iter().any(|&(used, _)| used) {
            continue;
        }
        for (user, (used, _)) in users.iter_mut().zip(&found) {
            *user |= *used;
        }
        hidden.push(name);
    }
    if hidden.is_empty() {
        return None;
    }
    let headers = texts.into_iter().zip(users).filter(|(_, user)| *user).map(|((path, _), _)| path).collect();
    Some(Hiding { names: hidden, headers })
}

/// The files that hide `names` (not empty) from `headers` ([`hidden_headers`]): `(file name,
/// text)`, the first the toggle cdpc's header includes (once to hide, once to show), then one
/// in place of each header, named for it. Names carry cdpc's version and a hash of the macros
/// and the headers' paths, so that files of other macros or another toolkit sit beside them.
pub fn hiding_files(names: &[String], headers: &[PathBuf]) -> Vec<(String, String)> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    names.hash(&mut hasher);
    headers.hash(&mut hasher);
    let stem = format!("cdpc-{}-{:016x}", env!("CARGO_PKG_VERSION"), hasher.finish());
    let toggle = format!("{stem}-hide.h");
    // System headers, as the ones they stand for are (no warnings from them).
    let mut text = String::from("/* cdpc: the command line's macros, hidden from the headers nvcc's compilation does not read\n * (clang/hidden_macros.rs). Included once to hide them, once to show them again. */\n#pragma clang system_header\n");
    text.push_str("#ifndef __CDPC_HIDING\n#define __CDPC_HIDING\n");
    for name in names {
        text.push_str(&format!("#pragma push_macro(\"{name}\")\n#undef {name}\n"));
    }
    text.push_str("#else\n#undef __CDPC_HIDING\n");
    for name in names.iter().rev() {
        text.push_str(&format!("#pragma pop_macro(\"{name}\")\n"));
    }
    text.push_str("#endif\n");
    let mut files = vec![(toggle.clone(), text)];
    for header in headers {
        let name = header.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = format!("/* cdpc: {name}, which nvcc's compilation does not read, without the command line's macros. */\n#pragma clang system_header\n#include \"{toggle}\"\n#include \"{}\"\n#include \"{toggle}\"\n", header.display());
        files.push((format!("{stem}-{name}"), text));
    }
    files
}

/// Writes `files` ([`hiding_files`] of `headers`) into `dir` (where cdpc's header is) and points
/// `wrapper_macros` ([`super::wrapper_includes`]'s `-D` options, which name the headers the
/// wrapper includes) at them instead of `headers`; adds [`HIDE_MACRO`]'s definition to them.
/// The paths written, with the texts they hold, the toggle first.
pub fn install(files: &[(String, String)], headers: &[PathBuf], dir: &Path, wrapper_macros: &mut Vec<String>) -> std::io::Result<Vec<(PathBuf, String)>> {
    let mut written = Vec::new();
    for (name, text) in files {
        written.push((super::generated_header(dir, name, text)?, text.clone()));
    }
    let stand_ins: Vec<PathBuf> = written.iter().skip(1).map(|(p, _)| p.clone()).collect();
    repoint(headers, &stand_ins, wrapper_macros);
    wrapper_macros.retain(|m| !m.starts_with(&format!("-D{HIDE_MACRO}=")));
    if let Some((toggle, _)) = written.first() {
        wrapper_macros.push(format!("-D{HIDE_MACRO}=\"{}\"", super::define_value(toggle)));
    }
    Ok(written)
}

/// `wrapper_macros` with each `-D` option naming a file of `from` naming the file of `to` at the
/// same place instead (the headers and their stand-ins; a compilation's own copies of the
/// stand-ins for the cache's).
pub fn repoint(from: &[PathBuf], to: &[PathBuf], wrapper_macros: &mut [String]) {
    for (old, new) in from.iter().zip(to) {
        let theirs = format!("=\"{}\"", super::define_value(old));
        for m in wrapper_macros.iter_mut() {
            if let Some(name) = m.strip_suffix(&theirs) {
                *m = format!("{name}=\"{}\"", super::define_value(new));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_of_every_spelling_of_a_definition() {
        assert_eq!(defined_names(&args(&["-DN=1024", "-D", "X", "-DF(a)=a", "-UY", "-I.", "-DN", "-D1bad"])), ["N", "X", "F"]);
    }

    #[test]
    fn only_used_macros_are_hidden_and_tested_ones_stay_visible() {
        let dir = tempfile::tempdir().unwrap();
        let cuda = dir.path().join("cuda.h");
        std::fs::write(&cuda, "#include \"beside.h\"\n#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM) || \\\n  defined(CONTINUED)\n#define A(x) \\\n  CONT x\n#endif\nint f(size_t N, int NX2);\n")
            .unwrap();
        std::fs::write(dir.path().join("beside.h"), "#ifdef FROM_BESIDE\n#endif\nint g(int M);\n").unwrap();
        let other = dir.path().join("other.h");
        std::fs::write(&other, "int h(int unrelated);\n").unwrap();
        let given = args(&["-DN=1", "-D_GNU_SOURCE", "-D__X=1", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM", "-DCONT", "-DCONTINUED", "-DFROM_BESIDE", "-DM", "-DNX", "-DSCALE=2", "-DT"]);
        let plan = plan(&given, &[cuda.clone(), other], "template <class T> struct S;").unwrap();
        // `NX` is no word of the header (`NX2` is another); `SCALE` none of any; `T` cdpc's.
        assert_eq!(plan.names, ["N", "CONT", "M", "T"]);
        assert_eq!(plan.headers, [cuda]);
        assert_eq!(super::plan(&args(&["-DSCALE=2", "-D_GNU_SOURCE"]), &[], "int x;"), None);
    }

    #[test]
    fn the_toggle_hides_then_shows_and_each_header_is_pointed_at() {
        let headers = [PathBuf::from("/cuda/include/cuda.h"), PathBuf::from("/cuda/include/curand_mtgp32_kernel.h")];
        let files = hiding_files(&args(&["N", "X"]), &headers);
        assert_eq!(files.len(), 3);
        let toggle = &files[0].1;
        assert!(toggle.contains("#pragma push_macro(\"N\")\n#undef N\n") && toggle.contains("#pragma pop_macro(\"X\")\n#pragma pop_macro(\"N\")\n"), "{toggle}");
        assert!(files[1].1.contains("#include \"/cuda/include/cuda.h\""), "{}", files[1].1);
        let written: Vec<(PathBuf, String)> = files.iter().map(|(n, t)| (Path::new("/cache/include").join(n), t.clone())).collect();
        let mut macros = args(&["-D__C00___=\"/cuda/include/cuda.h\"", "-D__C01___=\"/cuda/include/driver_types.h\"", "-D__C02___=\"/cuda/include/curand_mtgp32_kernel.h\""]);
        let stand_ins: Vec<PathBuf> = written.iter().skip(1).map(|(p, _)| p.clone()).collect();
        repoint(&headers, &stand_ins, &mut macros);
        assert_eq!(macros[0], format!("-D__C00___=\"{}\"", written[1].0.display()));
        assert_eq!(macros[1], "-D__C01___=\"/cuda/include/driver_types.h\"");
        assert_eq!(macros[2], format!("-D__C02___=\"{}\"", written[2].0.display()));
    }
}
