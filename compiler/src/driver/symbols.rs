//! The device symbols of separately compiled files, and the check that runs before nvlink:
//! each symbol defined once (E0800) and each one a file uses defined by some input (E0801),
//! with labels in both files. nvlink would find the same problems, but it names only work
//! files and symbols, never a line.
//!
//! What a file defines and needs is read from its PTX, which is exactly what ptxas and nvlink
//! see (`.visible` and `.extern` declarations); where a symbol is declared comes from sema's
//! spans, mapped back through the source map.

use crate::diag::{Code, Diagnostic, Label, SourceFile, Span};
use crate::front::cdp::hir;
use crate::front::cdp::hir::GlobalSpace;
use crate::front::cdp::preprocess::SourceMap;
use crate::pipeline::itanium;
use std::collections::HashMap;
use std::sync::Arc;

/// The symbols of one PTX module that the linker resolves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxSymbols {
    /// `.visible` kernels, functions and variables, in order.
    pub defined: Vec<String>,
    /// `.extern` functions and variables (dynamic shared memory excluded), in order.
    pub undefined: Vec<String>,
}

/// Reads the `.visible` and `.extern` declarations of `ptx`.
pub fn ptx_symbols(ptx: &str) -> PtxSymbols {
    let mut symbols = PtxSymbols::default();
    for line in ptx.lines() {
        let line = line.trim_start();
        let (list, rest) = if let Some(rest) = line.strip_prefix(".visible") {
            (&mut symbols.defined, rest)
        } else if let Some(rest) = line.strip_prefix(".extern") {
            (&mut symbols.undefined, rest)
        } else {
            continue;
        };
        // `.extern .shared` is the dynamic shared memory: no symbol for the linker.
        if rest.trim_start().starts_with(".shared") {
            continue;
        }
        if let Some(name) = declared_name(rest) {
            list.push(name.to_string());
        }
    }
    symbols
}

/// The name in the rest of a `.visible`/`.extern` line: after the directives (`.func`,
/// `.global`, `.align 4`, `.u32`) and a function's return parameter `(.param ...)`.
pub(super) fn declared_name(rest: &str) -> Option<&str> {
    let mut rest = rest.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix('(') {
            rest = after.split_once(')')?.1.trim_start();
        } else if rest.starts_with('.') || rest.starts_with(|c: char| c.is_ascii_digit()) {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            rest = rest[end..].trim_start();
        } else {
            break;
        }
    }
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%'))).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Where each function and variable of a module was declared (the definition where there is
/// one), by symbol, in the files' own coordinates.
pub fn declaration_places(module: &hir::Module, map: Option<&SourceMap>) -> HashMap<String, Label> {
    let mut places = HashMap::new();
    // Each label's message is the name as written, for messages about a mangled symbol.
    let mut place = |symbol: String, name: &str, span: Span| {
        let mut d = Diagnostic::new(Code::UndefinedDeviceSymbol, span, "").with_primary_message(name);
        if let Some(map) = map {
            d = map.remap(d);
        }
        if let Some(label) = d.labels.into_iter().find(|l| l.primary) {
            places.insert(symbol, label);
        }
    };
    for f in &module.functions {
        place(f.symbol(module), &f.name, f.span);
    }
    for g in &module.globals {
        if matches!(g.space, GlobalSpace::Device | GlobalSpace::Constant) {
            place(g.symbol(module), &g.name, g.span);
        }
    }
    places
}

/// The source name a symbol was made from, for finding it in the source's text: the last
/// `<source-name>` of an Itanium symbol's name ([`itanium::last_source_name`]), `helper` for
/// `_Z6helperi`, `foo` for `_ZN1n3fooEv`, `sk` for nvcc's `__nv_static_<n>_<id>__Z2skPi`
/// ([`itanium::nv_static_parts`]), `counter` for `__nv_static_<n>_<id>_counter`; a symbol of
/// C's kind is its own name, and one whose name is not read is left as it is.
pub fn source_name(symbol: &str) -> &str {
    let inner = itanium::nv_static_parts(symbol).map_or(symbol, |(_, inner)| inner);
    if !itanium::is_mangled(inner) {
        return inner;
    }
    itanium::last_source_name(inner).unwrap_or(symbol)
}

/// [`declaration_places`] for a source no HIR describes (CUDA C++, compiled by Clang): each
/// symbol of `ptx` at the first whole-word mention of its source name in `text` on a line
/// that is not a comment, which is where C and C++ declare a name before using it.
pub fn text_places(ptx: &PtxSymbols, text: &str) -> HashMap<String, Label> {
    let mut places = HashMap::new();
    for symbol in ptx.defined.iter().chain(&ptx.undefined) {
        let name = source_name(symbol);
        if let Some(span) = first_mention(text, name) {
            places.insert(symbol.clone(), Label { span, message: name.to_string(), primary: true, file: None });
        }
    }
    places
}

pub(super) fn first_mention(text: &str, name: &str) -> Option<Span> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim_start().starts_with("//") {
            let mut from = 0;
            while let Some(at) = line[from..].find(name) {
                let (start, end) = (from + at, from + at + name.len());
                let before = line[..start].chars().next_back();
                let after = line[end..].chars().next();
                if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
                    return Some(Span::new(line_start + start, line_start + end));
                }
                from = end;
            }
        }
        line_start += line.len();
    }
    None
}

/// One separately compiled source, as the check sees it.
#[derive(Clone, Debug)]
pub struct Unit {
    /// The file, its name as shown and its text (labels without a file of their own are in it).
    pub file: Arc<SourceFile>,
    /// What its PTX defines and needs.
    pub symbols: PtxSymbols,
    /// Where its declarations are ([`declaration_places`]).
    pub places: HashMap<String, Label>,
}

impl Unit {
    /// `name` for a symbol that is its own name, `name` (symbol `_Z...`) for a mangled one.
    fn shown(&self, symbol: &str) -> String {
        match self.places.get(symbol).map(|l| l.message.as_str()) {
            Some(name) if !name.is_empty() && name != symbol => format!("`{name}` (symbol `{symbol}`)"),
            _ => format!("`{symbol}`"),
        }
    }

    fn label(&self, symbol: &str, message: String, primary: bool) -> Option<Label> {
        let place = self.places.get(symbol)?;
        Some(Label { span: place.span, message, primary, file: Some(place.file.clone().unwrap_or_else(|| self.file.clone())) })
    }
}

/// Checks the units against each other: a symbol defined by two of them is E0800 (labels at
/// both definitions); with `closed` (no other object or library takes part in the link), a
/// symbol one of them declares, uses and no unit defines is E0801. Symbols that no source
/// declares (the device runtime's), and the device's C library
/// ([`crate::target::DEVICE_LIBRARY`]: `malloc`, `free`, ..., which CUDA C++'s text names),
/// are left to nvlink, libcudadevrt and the driver.
pub fn check(units: &[Unit], closed: bool) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let mut first: HashMap<&str, &Unit> = HashMap::new();
    for unit in units {
        for symbol in &unit.symbols.defined {
            match first.get(symbol.as_str()) {
                None => {
                    first.insert(symbol, unit);
                }
                Some(earlier) => {
                    let (a, b) = (&earlier.file.name, &unit.file.name);
                    let mut d = duplicate(&unit.shown(symbol), a, b);
                    d.labels = [unit.label(symbol, format!("defined again in `{b}`"), true), earlier.label(symbol, format!("first defined in `{a}`"), false)].into_iter().flatten().collect();
                    diagnostics.push(d);
                }
            }
        }
    }
    if closed {
        for unit in units {
            for symbol in &unit.symbols.undefined {
                if first.contains_key(symbol.as_str()) || !unit.places.contains_key(symbol) || crate::target::DEVICE_LIBRARY.contains(&symbol.as_str()) {
                    continue;
                }
                let mut d = undefined(&unit.shown(symbol), &unit.file.name);
                d.labels = unit.label(symbol, "declared here, defined by no input".into(), true).into_iter().collect();
                diagnostics.push(d);
            }
        }
    }
    diagnostics
}

/// E0800 without labels: `symbol` (quoted) is defined in `first` and in `second`.
pub fn duplicate(symbol: &str, first: &str, second: &str) -> Diagnostic {
    let mut d = Diagnostic::new(Code::DuplicateDeviceSymbol, Span::default(), format!("device symbol {symbol} is defined in both `{first}` and `{second}`"))
        .with_note("a `__device__` function, variable or kernel may be defined in one file only; declare it `extern` (a variable) or by a prototype (a function) in the others");
    d.labels.clear();
    d
}

/// E0801 without labels: `user` needs `symbol` (quoted), which no input defines.
pub fn undefined(symbol: &str, user: &str) -> Diagnostic {
    let mut d = Diagnostic::new(Code::UndefinedDeviceSymbol, Span::default(), format!("device symbol {symbol}, used in `{user}`, is not defined by any input"))
        .with_note("add the file, object or library (`-l`) that defines it to the link");
    d.labels.clear();
    d
}

/// The device-runtime function whose C name or symbol is `symbol`, where CUDA 13.5's
/// libcudadevrt lacks it (`W0316`'s): its C name and its symbol.
fn runtime_function_missing(symbol: &str) -> Option<(&'static str, &'static str)> {
    use runtime_shim::entry_points::RuntimeFn;
    RuntimeFn::ALL
        .iter()
        .map(|f| f.entry_point())
        .zip(RuntimeFn::ALL)
        .find(|(e, f)| f.missing_from_libcudadevrt() && (e.c_name == symbol || e.ptx_symbol == symbol))
        .map(|(e, _)| (e.c_name, e.ptx_symbol))
}

/// The sources of a link as [`runtime_missing`] places its errors in them: each one's file
/// (`None`: the compilation's main file, whose labels name none) and its warnings.
pub type SourcesWarned<'a> = [(Option<Arc<SourceFile>>, &'a [Diagnostic])];

/// nvlink's undefined references in `stderr` to device-runtime functions that libcudadevrt
/// lacks, as `E0801` at each call their `W0316` warnings placed in `sources` (a label carrying
/// its source's file where `sources` names one); where no warning names the symbol (an
/// object's code: a `-dc` object holds no lines), with no place, the object named through
/// `names` as [`from_nvlink`] names it. Returns the diagnostics and the symbols they cover.
pub fn runtime_missing(stderr: &str, sources: &SourcesWarned<'_>, names: &[(String, String)]) -> (Vec<Diagnostic>, Vec<String>) {
    let mut found: Vec<Diagnostic> = Vec::new();
    let mut covered: Vec<String> = Vec::new();
    for line in stderr.lines().filter(|l| l.contains("Undefined reference to")) {
        let quoted: Vec<&str> = line.split('\'').skip(1).step_by(2).collect();
        let Some(&symbol) = quoted.first() else { continue };
        let Some((c_name, ptx_symbol)) = runtime_function_missing(symbol) else { continue };
        if covered.iter().any(|c| c == symbol) {
            continue;
        }
        covered.push(symbol.to_string());
        let named = format!("`{ptx_symbol}`");
        let mut labels: Vec<Label> = sources
            .iter()
            .flat_map(|(file, warnings)| {
                warnings.iter().filter(|w| w.code == Code::NotInDeviceRuntimeLibrary && w.message.contains(&named)).filter_map(move |w| {
                    let mut label = w.labels.iter().find(|l| l.primary)?.clone();
                    label.file = label.file.or_else(|| file.clone());
                    label.primary = false;
                    label.message = String::new();
                    Some(label)
                })
            })
            .collect();
        labels.dedup_by(|a, b| a.span == b.span && a.file == b.file);
        if let Some(first) = labels.first_mut() {
            first.primary = true;
            first.message = format!("`{c_name}` is declared by cuda_device_runtime_api.h, but libcudadevrt does not define it");
        }
        let mut d = Diagnostic::new(Code::UndefinedDeviceSymbol, Span::default(), format!("device-runtime function `{c_name}` (`{ptx_symbol}`) is not defined by libcudadevrt"))
            .with_note("CUDA 13.5's libcudadevrt.a has no such symbol, although the device runtime's header declares it: nvcc's link fails the same way; the call cannot be linked with this toolkit");
        if labels.is_empty() {
            let user = quoted.get(1).map(|path| names.iter().find(|(work, _)| path == work || path.ends_with(&format!("/{work}"))).map_or(path.to_string(), |(_, user)| user.clone()));
            if let Some(user) = user {
                d.message = format!("device-runtime function `{c_name}` (`{ptx_symbol}`), used in `{user}`, is not defined by libcudadevrt");
            }
            d = d.with_note("the call was warned about (W0316) where its source was compiled");
            d.labels.clear();
        } else {
            d.labels = labels;
        }
        found.push(d);
    }
    (found, covered)
}

/// `warnings` without the `W0316` warnings of the symbols in `covered` (an `E0801` of
/// [`runtime_missing`] at the same calls replaces them).
pub fn without_covered(warnings: &[Diagnostic], covered: &[String]) -> Vec<Diagnostic> {
    warnings
        .iter()
        .filter(|w| w.code != Code::NotInDeviceRuntimeLibrary || !covered.iter().any(|s| runtime_function_missing(s).is_some_and(|(_, ptx)| w.message.contains(&format!("`{ptx}`")))))
        .cloned()
        .collect()
}

/// Reads nvlink's messages about symbols (`Multiple definition of 'x' in 'b.o', first
/// defined in 'a.o'`, `Undefined reference to 'x' in 'a.o'`) as E0800 and E0801, with each
/// work file's name replaced by the input it stands for (`names`).
pub fn from_nvlink(stderr: &str, names: &[(String, String)]) -> Vec<Diagnostic> {
    let shown = |path: &str| names.iter().find(|(work, _)| path == work || path.ends_with(&format!("/{work}"))).map(|(_, user)| user.clone()).unwrap_or_else(|| path.to_string());
    let quoted = |text: &str| -> Vec<String> { text.split('\'').skip(1).step_by(2).map(str::to_string).collect() };
    let mut found = Vec::new();
    for line in stderr.lines() {
        let q = quoted(line);
        if line.contains("Multiple definition of") && q.len() >= 3 {
            found.push(duplicate(&format!("`{}`", q[0]), &shown(&q[2]), &shown(&q[1])));
        } else if line.contains("Undefined reference to") && q.len() >= 2 {
            found.push(undefined(&format!("`{}`", q[0]), &shown(&q[1])));
        }
    }
    found
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn source_names_of_symbols() {
        assert_eq!(source_name("_Z6helperi"), "helper");
        assert_eq!(source_name("_ZN1n3fooEv"), "foo");
        assert_eq!(source_name("_ZN3cfg5tableE"), "table");
        assert_eq!(source_name("__nv_static_24__14fcf5b7_5_nv_cu__Z1kPi__Z2skPi"), "sk");
        assert_eq!(source_name("counter"), "counter");
        // A `static` variable's name in nvcc 13.5's form, `__nv_static_<n>_<id>_<identifier>`,
        // with the module id of the kernel's name above: the identifier, not the `__Z` in the id.
        assert_eq!(source_name("__nv_static_24__14fcf5b7_5_nv_cu__Z1kPi_counter"), "counter");
        // c++filt: `kern(S)`, `A<int>::f()`, `sk(int*)`, `A::f() const`.
        assert_eq!(source_name("_Z4kern1S"), "kern");
        assert_eq!(source_name("_ZN1AIiE1fEv"), "f");
        assert_eq!(source_name("_ZL2skPi"), "sk");
        assert_eq!(source_name("_ZNK1A1fEv"), "f");
        // c++filt: `main::x`, a local name, which is not read.
        assert_eq!(source_name("_ZZ4mainE1x"), "_ZZ4mainE1x");
    }

    #[test]
    fn places_are_first_mentions_outside_comments() {
        let text = "// counter here is a comment\nextern __device__ int counters;\n__device__ int counter = 7;\n";
        let symbols = PtxSymbols { defined: vec!["counter".into()], undefined: vec![] };
        let places = text_places(&symbols, text);
        assert_eq!(&text[places["counter"].span.range()], "counter");
        assert_eq!(places["counter"].span.start as usize, text.find("int counter =").unwrap() + 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_declarations_give_defined_and_undefined_symbols() {
        let ptx = ".extern .func  (.param .b32 func_retval0) _Z6helperi\n(\n.param .b32 _Z6helperi_param_0\n);\n\
                   .extern .global .align 4 .u32 counter;\n.extern .shared .align 16 .b8 dyn[];\n\
                   .visible .global .align 4 .b8 table[16] = {1};\n.visible .entry parent(\n.visible .func k()\n\
                   .extern .func  (.param .b32 func_retval0) cudaGetParameterBufferV2\n";
        let s = ptx_symbols(ptx);
        assert_eq!(s.defined, ["table", "parent", "k"]);
        assert_eq!(s.undefined, ["_Z6helperi", "counter", "cudaGetParameterBufferV2"]);
    }

    #[test]
    fn nvlink_messages_name_the_users_files() {
        let names = vec![("/tmp/w/0.o".to_string(), "a.cu".to_string()), ("/tmp/w/1.o".to_string(), "b.cu".to_string())];
        let stderr = "nvlink error   : Multiple definition of 'counter' in '/tmp/w/1.o', first defined in '/tmp/w/0.o'\n\
                      nvlink error   : Undefined reference to '_Z6helperi' in '/tmp/w/0.o'\n";
        let d = from_nvlink(stderr, &names);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].code, Code::DuplicateDeviceSymbol);
        assert!(d[0].message.contains("`a.cu` and `b.cu`"), "{}", d[0].message);
        assert_eq!(d[1].code, Code::UndefinedDeviceSymbol);
        assert!(d[1].message.contains("used in `a.cu`"), "{}", d[1].message);
    }

    #[test]
    fn runtime_functions_libcudadevrt_lacks_are_placed_at_their_warned_calls() {
        let stderr = "nvlink error   : Undefined reference to '__cudaCDP2EventRecordWithFlags' in '/tmp/w/0.o'\n\
                      nvlink error   : Undefined reference to '_Z6helperi' in '/tmp/w/0.o'\n";
        let warned = Diagnostic::new(Code::NotInDeviceRuntimeLibrary, Span::new(40, 64), "libcudadevrt does not define `__cudaCDP2EventRecordWithFlags`");
        let other = Diagnostic::new(Code::MissingReturn, Span::new(1, 2), "x");
        let file = Arc::new(SourceFile { name: "a.cu".into(), text: "x".repeat(80) });
        let warnings = [warned.clone(), other.clone()];
        let names = [("/tmp/w/0.o".to_string(), "a.cu".to_string())];
        // Placed at the call, in the source's file; the user's own symbol is not this one's.
        let (d, covered) = runtime_missing(stderr, &[(Some(file.clone()), &warnings)], &names);
        assert_eq!(covered, ["__cudaCDP2EventRecordWithFlags"]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::UndefinedDeviceSymbol);
        assert_eq!(d[0].message, "device-runtime function `cudaEventRecordWithFlags` (`__cudaCDP2EventRecordWithFlags`) is not defined by libcudadevrt");
        assert_eq!((d[0].primary_span(), d[0].labels[0].file.as_ref()), (Span::new(40, 64), Some(&file)));
        assert_eq!(without_covered(&warnings, &covered), [other]);
        // An object's: no place, the object named.
        let (d, _) = runtime_missing(stderr, &[], &names);
        assert!(d[0].labels.is_empty());
        assert!(d[0].message.contains("used in `a.cu`"), "{}", d[0].message);
    }
}
