//! Where an instruction came from, as a diagnostic's label: its debug location (file, line,
//! column) turned into a span of the main file or of another file.

use crate::diag::span_at;
use crate::diag::{Diagnostic, Label, SourceFile, Span};
use crate::llvm::operand;
use inkwell::llvm_sys::core::LLVMIsAInstruction;
use inkwell::llvm_sys::debuginfo::{
    LLVMDIFileGetDirectory, LLVMDIFileGetFilename, LLVMDILocationGetColumn, LLVMDILocationGetInlinedAt, LLVMDILocationGetLine, LLVMDILocationGetScope, LLVMDIScopeGetFile, LLVMDISubprogramGetLine,
    LLVMGetSubprogram, LLVMInstructionGetDebugLoc,
};
use inkwell::llvm_sys::prelude::{LLVMMetadataRef, LLVMValueRef};
use inkwell::values::{AnyValue, AsValueRef, FunctionValue, InstructionValue};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The metadata kind of a launch call's source span in `.cdp` code: two integers, the span's
/// start and end in the preprocessed text, written by the kernel language's code generation
/// (`front::cdp::codegen`'s `launch.rs`).
pub const SPAN_METADATA: &str = "cdpc.span";

/// The metadata kind that marks a `.cdp` program's own call of a device-runtime entry point
/// (`cudaGetParameterBuffer`, `cudaLaunchDevice`, ... called by name, a buffer filled by
/// hand): no `<<<>>>`, so the launch pipeline leaves it as written. Removed with the spans.
pub const OWN_METADATA: &str = "cdpc.own";

/// The main file of a compilation, to place diagnostics in.
#[derive(Clone, Debug, Default)]
pub struct SourceText {
    /// The path the front end compiled (as its debug information names it).
    pub path: Option<PathBuf>,
    /// Its text.
    pub text: String,
}

/// The file of the debug location `loc`'s scope, empty when it names none. A file named
/// relative to the compilation's folder (Clang writes the main file's scope so) is that
/// folder's, not the current one's.
///
/// # Safety
/// `loc` is a live debug location (`DILocation`).
unsafe fn scope_file(loc: LLVMMetadataRef) -> String {
    file_of_scope(LLVMDILocationGetScope(loc))
}

/// The file of the debug-information scope `scope` (a subprogram, a lexical block), as
/// [`scope_file`].
///
/// # Safety
/// `scope` is a live `DIScope`.
unsafe fn file_of_scope(scope: LLVMMetadataRef) -> String {
    let file = LLVMDIScopeGetFile(scope);
    let text = |f: unsafe extern "C" fn(_, *mut std::ffi::c_uint) -> *const std::ffi::c_char| {
        let mut len = 0;
        let p = if file.is_null() { std::ptr::null() } else { f(file, &mut len) };
        if p.is_null() {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len as usize)).into_owned()
        }
    };
    let (name, dir) = (text(LLVMDIFileGetFilename), text(LLVMDIFileGetDirectory));
    if name.is_empty() || Path::new(&name).is_absolute() || dir.is_empty() {
        name
    } else {
        Path::new(&dir).join(&name).display().to_string()
    }
}

/// The file of the function whose body holds the instruction `inst` before inlining (its debug
/// location's innermost scope), when `inst` is an instruction with a debug location whose scope
/// names a file.
pub(crate) fn innermost_file(inst: LLVMValueRef) -> Option<String> {
    // SAFETY: plain queries of a live value's kind and debug location; `scope_file` of a
    // location that is there.
    unsafe {
        if LLVMIsAInstruction(inst).is_null() {
            return None;
        }
        let loc = LLVMInstructionGetDebugLoc(inst);
        if loc.is_null() {
            return None;
        }
        Some(scope_file(loc)).filter(|f| !f.is_empty())
    }
}

impl SourceText {
    /// A span and, outside the main file, the file: where `inst` came from, when known. A
    /// `.cdp` launch's span ([`SPAN_METADATA`], in the text of `self`) comes first;
    /// else the debug location.
    pub(crate) fn locate(&self, inst: InstructionValue<'_>) -> Option<Label> {
        if let Some(span) = cdp_span(inst) {
            return Some(Label { span, message: String::new(), primary: true, file: None });
        }
        // SAFETY: plain queries of a live instruction's debug location and its scope's file.
        let (file, line, col) = unsafe {
            let mut loc = LLVMInstructionGetDebugLoc(inst.as_value_ref());
            if loc.is_null() {
                return None;
            }
            // Code inlined from a header is reported where the user's code called it.
            loop {
                let outer = LLVMDILocationGetInlinedAt(loc);
                if outer.is_null() {
                    break;
                }
                loc = outer;
            }
            let line = LLVMDILocationGetLine(loc) as usize;
            let col = LLVMDILocationGetColumn(loc) as usize;
            (scope_file(loc), line, col.max(1))
        };
        if line == 0 {
            return None;
        }
        self.label_in(file, |text| span_at(text, line, col))
    }

    /// A primary label in `file` (the main file when it is that or empty, else read from disk)
    /// at the span `at` finds in its text.
    pub(crate) fn label_in(&self, file: String, at: impl FnOnce(&str) -> Span) -> Option<Label> {
        let same = |a: &Path, b: &Path| a == b || a.canonicalize().ok().zip(b.canonicalize().ok()).is_some_and(|(a, b)| a == b);
        match &self.path {
            Some(main) if same(Path::new(&file), main) || file.is_empty() => Some(Label { span: at(&self.text), message: String::new(), primary: true, file: None }),
            _ => {
                let text = std::fs::read_to_string(&file).ok()?;
                let span = at(&text);
                Some(Label { span, message: String::new(), primary: true, file: Some(Arc::new(SourceFile { name: file, text })) })
            }
        }
    }

    /// Where `function` is defined, as a secondary label with `message`: the line its debug
    /// information gives (`DISubprogram`), at `name` and its parameters on that line where it
    /// is there (else the line); without debug information, in textual IR, its `define` line. `None` for a
    /// function defined elsewhere, or a place that cannot be shown.
    pub(crate) fn definition_label(&self, function: FunctionValue<'_>, name: &str, message: &str) -> Option<Label> {
        // SAFETY: plain queries of a live function's subprogram, its line and its file.
        let found = unsafe {
            let sp = LLVMGetSubprogram(function.as_value_ref());
            if sp.is_null() {
                None
            } else {
                Some((file_of_scope(sp), LLVMDISubprogramGetLine(sp) as usize))
            }
        };
        let mut label = match found {
            Some((file, line)) if line > 0 => self.label_in(file, |text| word_on_line(text, line, name))?,
            Some(_) => return None,
            None if function.count_basic_blocks() > 0 => {
                let span = define_line(&self.text, &function.get_name().to_string_lossy())?;
                Label { span, message: String::new(), primary: true, file: None }
            }
            None => return None,
        };
        label.primary = false;
        label.message = message.to_string();
        Some(label)
    }

    /// Where `inst` is: its debug location when it has one, else, in textual IR, the
    /// instruction's text in the function's body (as LLVM prints it, or up to its alignment or
    /// metadata, which a front end may leave out), else that function's `define` line.
    pub(crate) fn label_at(&self, inst: InstructionValue<'_>, function: &str) -> Option<Label> {
        if let Some(label) = self.locate(inst) {
            return Some(label);
        }
        let text = &self.text;
        let start = define_line(text, function)?.start as usize;
        let end = text[start..].find("\n}").map_or(text.len(), |e| start + e);
        let printed = inst.print_to_string().to_string();
        let printed = printed.trim();
        let candidates = [printed, printed.split(", align").next().unwrap_or(printed), printed.split(", !").next().unwrap_or(printed)];
        let span = match candidates.iter().find_map(|c| text[start..end].find(c).map(|at| (start + at, c.len()))) {
            Some((at, len)) => Span::new(at, at + len),
            None => define_line(text, function)?,
        };
        Some(Label { span, message: String::new(), primary: true, file: None })
    }

    /// `d` with its primary label at `inst` ([`Self::label_at`]; the label's message kept).
    /// Without debug locations a note names the function and the instruction (`in function
    /// `@k`, the call to `cudaLaunchDevice``), the only place there is where the input shows
    /// none (bitcode, or source text that is not the IR).
    pub(crate) fn place(&self, mut d: Diagnostic, inst: InstructionValue<'_>, function: &str) -> Diagnostic {
        if let Some(mut label) = self.locate(inst) {
            label.message = std::mem::take(&mut d.labels[0].message);
            d.labels[0] = label;
            return d;
        }
        let place = format!("in function `@{function}`, {}", described(inst));
        match self.label_at(inst, function) {
            Some(mut label) => {
                label.message = std::mem::take(&mut d.labels[0].message);
                d.labels[0] = label;
                d.with_note(place)
            }
            // Every diagnostic keeps a primary label (an invariant of diag.rs): at the input's
            // start, which for bitcode is all there is to show; the note says where.
            None => {
                d.labels[0].span = Span::new(0, 0);
                d.with_note(format!("{place}: the input has no debug location for it"))
            }
        }
    }
}

/// The name `function`'s debug information gives it (`DISubprogram`'s `name:`, as the
/// source spells it, a template instance's arguments included: `kern<1100>`, without its
/// namespaces), if it has one.
pub(crate) fn subprogram_name(function: FunctionValue<'_>) -> Option<String> {
    use inkwell::context::AsContextRef;
    use inkwell::llvm_sys::core::{LLVMGetMDNodeNumOperands, LLVMGetMDNodeOperands, LLVMGetMDString, LLVMMetadataAsValue};
    // SAFETY: the subprogram of a live function, as a value, and its operands: a
    // `DISubprogram`'s third is its name (an `MDString`, or null).
    unsafe {
        let sp = LLVMGetSubprogram(function.as_value_ref());
        if sp.is_null() {
            return None;
        }
        let node = LLVMMetadataAsValue(function.get_type().get_context().as_ctx_ref(), sp);
        let count = LLVMGetMDNodeNumOperands(node) as usize;
        if count < 3 {
            return None;
        }
        let mut operands = vec![std::ptr::null_mut(); count];
        LLVMGetMDNodeOperands(node, operands.as_mut_ptr());
        if operands[2].is_null() {
            return None;
        }
        let mut len = 0;
        let p = LLVMGetMDString(operands[2], &mut len);
        (!p.is_null() && len > 0).then(|| String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len as usize)).into_owned())
    }
}

/// The span of `word` (as a whole identifier) on the 1-based `line` of `text`, with the
/// parenthesised list that follows it (a function's parameters) when one does, or of the line
/// without its indentation where the word is not there.
fn word_on_line(text: &str, line: usize, word: &str) -> Span {
    let start = span_at(text, line, 1).start as usize;
    let end = text[start..].find('\n').map_or(text.len(), |nl| start + nl);
    let this = &text[start..end];
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let found = (!word.is_empty()).then(|| this.match_indices(word).map(|(at, _)| at).find(|&at| !this[..at].ends_with(ident) && !this[at + word.len()..].starts_with(ident))).flatten();
    match found {
        // A function's name with its parameters, where they follow it.
        Some(at) => {
            let (from, mut end) = (start + at, start + at + word.len());
            let after = text[end..].trim_start();
            if after.starts_with('(') {
                let open = text.len() - after.len();
                let mut depth = 0usize;
                for (i, c) in text[open..].char_indices() {
                    match c {
                        // Parameters over several lines: to the end of the name's.
                        '\n' => {
                            end = start + this.trim_end().len();
                            break;
                        }
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + i + 1;
                                break;
                            }
                        }
                        ';' | '{' | '}' => break,
                        _ => {}
                    }
                }
            }
            Span::new(from, end)
        }
        None => {
            let indent = this.len() - this.trim_start().len();
            Span::new(start + indent, start + this.trim_end().len())
        }
    }
}

/// The `define` line of `function` in textual IR (`@name(` or `@"name"(` on it), from the
/// keyword to the line's end.
pub(crate) fn define_line(text: &str, function: &str) -> Option<Span> {
    keyword_line(text, "define ", function)
}

/// The `declare` line of `function` in textual IR, as [`define_line`].
pub(crate) fn declare_line(text: &str, function: &str) -> Option<Span> {
    keyword_line(text, "declare ", function)
}

fn keyword_line(text: &str, keyword: &str, function: &str) -> Option<Span> {
    let heads = [format!("@{function}("), format!("@\"{function}\"(")];
    let start = text.match_indices(keyword).map(|(at, _)| at).find(|&at| text[at..].lines().next().is_some_and(|l| heads.iter().any(|h| l.contains(h.as_str()))))?;
    Some(Span::new(start, start + text[start..].find('\n').unwrap_or(text.len() - start)))
}

/// The span a `.cdp` launch call carries ([`SPAN_METADATA`]).
fn cdp_span(inst: InstructionValue<'_>) -> Option<Span> {
    let kind = inst.get_parent()?.get_context().get_kind_id(SPAN_METADATA);
    let node = inst.get_metadata(kind)?;
    let ints: Vec<u64> = node
        .get_node_values()?
        .into_iter()
        .filter_map(|v| match v {
            inkwell::values::BasicMetadataValueEnum::IntValue(i) => i.get_zero_extended_constant(),
            _ => None,
        })
        .collect();
    match ints[..] {
        [start, end] => Some(Span::new(usize::try_from(start).ok()?, usize::try_from(end).ok()?)),
        _ => None,
    }
}

/// Gives `to` the `.cdp` launch span `from` has, if any ([`SPAN_METADATA`]): a
/// call that stands for a launch (a pass's helper) is placed where the launch was.
pub(crate) fn copy_cdp_span(from: InstructionValue<'_>, to: InstructionValue<'_>) {
    let Some(block) = from.get_parent() else { return };
    let kind = block.get_context().get_kind_id(SPAN_METADATA);
    if let Some(node) = from.get_metadata(kind) {
        // Only a non-instruction value refuses metadata.
        let _ = to.set_metadata(node, kind);
    }
}

/// Whether `call` is a `.cdp` program's launch ([`SPAN_METADATA`]), which its
/// sema has checked already.
pub(crate) fn is_cdp_launch(call: InstructionValue<'_>) -> bool {
    cdp_span(call).is_some()
}

/// Whether `call` is a `.cdp` program's own call of a device-runtime entry point
/// ([`OWN_METADATA`]), not a launch.
pub(crate) fn is_own_call(call: InstructionValue<'_>) -> bool {
    call.get_parent().is_some_and(|b| call.get_metadata(b.get_context().get_kind_id(OWN_METADATA)).is_some())
}

/// Removes every `.cdp` launch span and own-call mark ([`SPAN_METADATA`],
/// [`OWN_METADATA`]) from `module`, once the passes that read them have run: the
/// IR and PTX are then as without them.
pub fn strip_cdp_spans(module: &inkwell::module::Module<'_>) {
    use inkwell::llvm_sys::core::LLVMSetMetadata;
    let kinds = [SPAN_METADATA, OWN_METADATA].map(|k| module.get_context().get_kind_id(k));
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            for inst in block.get_instructions() {
                if inst.get_opcode() == inkwell::values::InstructionOpcode::Call && inst.has_metadata() {
                    for kind in kinds {
                        // SAFETY: removing one metadata kind of a live instruction.
                        unsafe { LLVMSetMetadata(inst.as_value_ref(), kind, std::ptr::null_mut()) };
                    }
                }
            }
        }
    }
}

/// An instruction in words: the call to `f` (`%st`), the store to `%p`, the `icmp` instruction
/// (`%c`).
pub(crate) fn described(inst: InstructionValue<'_>) -> String {
    use inkwell::values::InstructionOpcode;
    let name = inst.get_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty());
    let named = |s: String| match &name {
        Some(n) => format!("{s} (`%{n}`)"),
        None => s,
    };
    match inst.get_opcode() {
        InstructionOpcode::Call => {
            let callee = operand(inst, inst.get_num_operands().saturating_sub(1)).map(|v| v.get_name().to_string_lossy().into_owned()).filter(|n| !n.is_empty());
            named(match callee {
                Some(f) => format!("the call to `{f}`"),
                None => "an indirect call".to_string(),
            })
        }
        InstructionOpcode::Store => match operand(inst, 1).map(|v| v.get_name().to_string_lossy().into_owned()).filter(|n| !n.is_empty()) {
            Some(to) => format!("the store to `%{to}`"),
            None => "a store".to_string(),
        },
        other => named(format!("the `{}` instruction", format!("{other:?}").to_lowercase())),
    }
}

/// Whether a file is one of Clang's own CUDA headers (its resource folder's
/// `__clang_cuda_*.h`) or the device runtime's launch wrappers, whose lines mean nothing to
/// the user: nvcc's line tables have none of them.
fn is_wrapper_file(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.starts_with("__clang_cuda_") || base == "cuda_device_runtime_api.h"
}

/// Moves each instruction inlined from Clang's CUDA wrapper headers to the user's line that
/// called the wrapper (its outermost inlined-at location), so that `-lineinfo`'s tables
/// name the user's lines where nvcc's do.
pub fn collapse_wrapper_lines(module: &inkwell::module::Module<'_>) {
    use inkwell::llvm_sys::debuginfo::LLVMInstructionSetDebugLoc;
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            for inst in block.get_instructions() {
                // SAFETY: queries and an update of a live instruction's debug location.
                unsafe {
                    let loc = LLVMInstructionGetDebugLoc(inst.as_value_ref());
                    if loc.is_null() || LLVMDILocationGetInlinedAt(loc).is_null() {
                        continue;
                    }
                    let file = LLVMDIScopeGetFile(LLVMDILocationGetScope(loc));
                    if file.is_null() {
                        continue;
                    }
                    let mut len = 0;
                    let name = LLVMDIFileGetFilename(file, &mut len);
                    let name = String::from_utf8_lossy(std::slice::from_raw_parts(name.cast::<u8>(), len as usize)).into_owned();
                    if !is_wrapper_file(&name) {
                        continue;
                    }
                    let mut outer = LLVMDILocationGetInlinedAt(loc);
                    while !LLVMDILocationGetInlinedAt(outer).is_null() {
                        outer = LLVMDILocationGetInlinedAt(outer);
                    }
                    LLVMInstructionSetDebugLoc(inst.as_value_ref(), outer);
                }
            }
        }
    }
}
