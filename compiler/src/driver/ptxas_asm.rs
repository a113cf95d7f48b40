//! ptxas's errors in a program's own inline assembly (`asm("...")` of CUDA C++ and the kernel
//! language, `asm` calls of LLVM IR) as `E0968` at the `asm` statement, ptxas's message the
//! diagnostic's, in place of `ptxas failed` and its stderr about a line of a work file.
//!
//! ptxas names a line of the PTX it was given. The PTX line is mapped back to the source through
//! the line table `-lineinfo` writes (`.loc FILE LINE COLUMN` before each statement's
//! instructions, `.file FILE "path"` at the end): NVPTX writes an `asm` statement's text
//! between `// begin inline asm` and `// end inline asm`, after the `.loc` of the statement.
//! A compilation without `-lineinfo` has no such table (its debug locations are stripped
//! before the PTX is written, which must stay as it is), so a failure is compiled again, PTX
//! only, with line tables, and ptxas runs once more over that PTX: a second compilation on the
//! way to an error only, never on a successful one. Its errors are the ones reported; a line
//! outside every inline assembly block (PTX cdpc wrote, which ptxas should never refuse) leaves
//! the failure as the tool's error. An `asm` block without a `.loc` (IR without debug
//! locations) is still `E0968`, at the input's start, with the function, the block's PTX line,
//! and ptxas's command and stderr as notes.

use super::{build_options, CompileError, CompileOptions, Emit};
use crate::back::DebugLevel;
use crate::diag::{Code, Diagnostic, Span};
use crate::pipeline::SourceText;
use crate::toolchain::{ToolError, Toolchain};

/// One error line of ptxas: `ptxas FILE, line N; error   : MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PtxasError {
    /// The 1-based line of the PTX file.
    pub line: usize,
    /// ptxas's message.
    pub message: String,
}

/// The error lines of ptxas's stderr that name a line of its input (warnings and `fatal` lines
/// left out).
pub(crate) fn errors(stderr: &str) -> Vec<PtxasError> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("ptxas ")?;
            let (_, rest) = rest.rsplit_once(", line ")?;
            let (number, rest) = rest.split_once(';')?;
            let message = rest.trim_start().strip_prefix("error")?.trim_start().strip_prefix(':')?.trim();
            Some(PtxasError { line: number.trim().parse().ok()?, message: message.to_string() })
        })
        .collect()
}

/// Where in the PTX an inline assembly block holds a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AsmSite {
    /// The last `.loc` before the block in its function: file number, line, column.
    pub loc: Option<(u32, usize, usize)>,
    /// The function (`.entry` or `.func`) the block is in.
    pub function: Option<String>,
    /// The PTX line ptxas refused, as NVPTX wrote it (operands substituted).
    pub text: String,
}

/// The inline assembly block that holds the 1-based `line` of `ptx`, if one does.
pub(crate) fn asm_site(ptx: &str, line: usize) -> Option<AsmSite> {
    let lines: Vec<&str> = ptx.lines().collect();
    let at = line.checked_sub(1).filter(|&i| i < lines.len())?;
    let mut begin = None;
    for i in (0..=at).rev() {
        let l = lines[i].trim();
        if l == "// end inline asm" && i != at {
            return None;
        }
        if l == "// begin inline asm" {
            begin = Some(i);
            break;
        }
        if l.starts_with(".entry") || l.contains(" .entry ") || l.contains(" .func ") || l.starts_with(".func") {
            return None;
        }
    }
    let begin = begin?;
    let mut loc = None;
    let mut function = None;
    for l in lines[..begin].iter().rev().map(|l| l.trim()) {
        if loc.is_none() {
            if let Some(rest) = l.strip_prefix(".loc") {
                let n: Vec<usize> = rest.split_whitespace().take(3).filter_map(|w| w.parse().ok()).collect();
                if let [file, line, col] = n[..] {
                    loc = Some((file as u32, line, col));
                }
            }
        }
        if let Some(at) = [".entry ", ".func "].iter().find_map(|k| l.find(k).map(|p| p + k.len())) {
            // `.func (.param .b32 func_retval0) name(`: the name is the last word before `(`.
            let head = l[at..].trim_start();
            let head = if head.starts_with('(') { head.find(')').map_or(head, |c| head[c + 1..].trim_start()) } else { head };
            function = Some(head.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or_default().to_string()).filter(|f| !f.is_empty());
            break;
        }
    }
    Some(AsmSite { loc, function, text: lines[at].trim().to_string() })
}

/// The file a `.file N "path"` line of `ptx` names for `number`.
fn file_named(ptx: &str, number: u32) -> Option<String> {
    ptx.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(".file")?.trim_start();
        let (n, rest) = rest.split_once(char::is_whitespace)?;
        (n.parse::<u32>().ok()? == number).then(|| rest.trim().split('"').nth(1).map(str::to_string)).flatten()
    })
}

/// The span of the `asm` statement whose first word `text[at..]` starts: from `asm` (or
/// `__asm__`, `__asm`) to the `)` that closes its operands, string literals skipped; the word
/// at `at` where no such statement starts there.
pub(crate) fn asm_statement(text: &str, at: Span) -> Span {
    let start = at.start as usize;
    let rest = &text[start.min(text.len())..];
    if !["asm", "__asm"].iter().any(|k| rest.starts_with(k)) {
        return at;
    }
    let Some(open) = rest.find('(') else { return at };
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in rest[open..].char_indices().take(16 * 1024) {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_string = false,
            (true, _) => {}
            (false, '"') => in_string = true,
            (false, '(') => depth += 1,
            (false, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Span::new(start, start + open + i + 1);
                }
            }
            (false, ';') => break,
            _ => {}
        }
    }
    at
}

/// `E0968` for each of ptxas's errors in an inline assembly block of `ptx` (the PTX ptxas was
/// given, its errors `stderr`), placed through `ptx`'s line table in `shown` (the main file) or
/// the header it names. Empty when no error is in an inline assembly block.
pub(crate) fn diagnostics(ptx: &str, stderr: &str, command: &str, shown: &SourceText) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    let all = errors(stderr);
    // ptxas often says two things of one line (`Unknown modifier`, `Not a name of any known
    // instruction`): one diagnostic a line, its first message the text, the others notes.
    let mut lines: Vec<usize> = all.iter().map(|e| e.line).collect();
    lines.sort_unstable();
    lines.dedup();
    for line in lines {
        let Some(site) = asm_site(ptx, line) else { continue };
        let mut messages = all.iter().filter(|e| e.line == line).map(|e| e.message.as_str());
        let mut d = Diagnostic::new(Code::AsmRefusedByPtxas, Span::default(), messages.next().unwrap_or_default()).with_primary_message("ptxas refused this inline assembly");
        for more in messages {
            d = d.with_note(format!("ptxas also says: {more}"));
        }
        d = d.with_note(format!("the PTX ptxas read: `{}`", site.text));
        let label = site.loc.and_then(|(file, line, col)| {
            // A file gone since is the work folder's copy of a source compiled from memory.
            let path = file_named(ptx, file).filter(|p| std::path::Path::new(p).exists()).unwrap_or_default();
            shown.label_in(path, |text| asm_statement(text, crate::diag::span_at(text, line, col.max(1))))
        });
        match label {
            Some(mut label) => {
                label.message = std::mem::take(&mut d.labels[0].message);
                d.labels[0] = label;
            }
            None => {
                let place = site.function.as_deref().map_or_else(|| "an inline assembly block".to_string(), |f| format!("an inline assembly block in function `{f}`"));
                d = d
                    .with_note(format!("{place}: the input has no debug location for it"))
                    .with_note(format!("ptxas's command: {command}\n  ptxas's messages:\n{}", stderr.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")));
            }
        }
        if !out.iter().any(|o| o.message == d.message && o.labels == d.labels) {
            out.push(d);
        }
    }
    out
}

/// `error` as `E0968` diagnostics where it is ptxas's failure over inline assembly of the
/// program `shown` compiled with `options` (ptxas's command names the architecture it
/// assembled for: a fat binary's other targets are compiled for it); else `error` as it is.
/// `again` compiles the program to PTX with the options it is given (line tables on).
pub(crate) fn placed(error: CompileError, options: &CompileOptions, shown: &SourceText, again: impl FnOnce(&CompileOptions) -> Result<String, CompileError>) -> CompileError {
    let CompileError::Tool(ToolError::Failed { tool, command, stderr, .. }) = &error else { return error };
    if tool != "ptxas" {
        return error;
    }
    // LLVM IR from another front end: PTX outside its inline assembly that ptxas refuses is
    // NVPTX's work on an operation of the input, the input's error (`E1023`), not the tool's.
    let foreign = (super::Language::of(options) == super::Language::Ir).then(|| refused_ptx(stderr, command)).flatten();
    let refused = |error: CompileError| foreign.map_or(error, |d| CompileError::Diagnostics(vec![d]));
    if errors(stderr).is_empty() {
        return refused(error);
    }
    let mut options = CompileOptions { emit: Emit::Ptx, debug: Some(options.debug.unwrap_or(DebugLevel::LineTables)), list_headers: Default::default(), ..options.clone() };
    if let Some(sm) = command.split_whitespace().find_map(|w| w.trim_matches('\'').strip_prefix("-arch=")).and_then(|s| s.parse().ok()) {
        options.target.sm = sm;
    }
    let Ok(ptx) = again(&options) else { return error };
    let Ok(tools) = Toolchain::discover(&options.tools) else { return error };
    match tools.assemble(&ptx, &build_options(&options)) {
        Err(ToolError::Failed { tool, command, stderr, .. }) if tool == "ptxas" => {
            let found = diagnostics(&ptx, &stderr, &command, shown);
            if found.is_empty() {
                refused(error)
            } else {
                CompileError::Diagnostics(found)
            }
        }
        _ => error,
    }
}

/// `E1023` for ptxas's refusal of the PTX NVPTX wrote, when its stderr names a line of it (an
/// `error` or a `fatal` one): ptxas's first message the diagnostic's, the others and its
/// command notes. `None` for a failure that names no line (a crash of ptxas, a signal).
fn refused_ptx(stderr: &str, command: &str) -> Option<Diagnostic> {
    let named: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ptxas ") && l.contains(", line ") && l.split_once(';').is_some_and(|(_, rest)| matches!(rest.trim_start().split([' ', ':']).next(), Some("error" | "fatal"))))
        .collect();
    let first = named.first()?;
    let message = first.split_once(';').map_or(*first, |(_, rest)| rest.trim_start()).trim_start_matches(|c: char| c.is_ascii_alphabetic()).trim_start().trim_start_matches(':').trim();
    let d = Diagnostic::new(Code::LlvmStopped, Span::default(), format!("ptxas refused the PTX made of this input: {message}"))
        .with_primary_message("in code made from this input")
        .with_note("NVPTX's PTX of an operation of the module, or its own `module asm`, is PTX ptxas cannot assemble")
        .with_note(format!("ptxas's command: {command}\n  ptxas's messages:\n{}", stderr.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")));
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".visible .entry _Z1kPi(\n\t.param .u64 _Z1kPi_param_0\n)\n{\n\t.loc\t1 3 13\n\tld.global.b32 \t%r1, [%rd2];\n\t.loc\t1 4 5\n\t// begin inline asm\n\tbogus.instr.u32 %r1, %r1;\n\t// end inline asm\n\tret;\n}\n\t.file\t1 \"/tmp/x.cu\"\n";

    /// ptxas's refusal of PTX outside inline assembly: its message, `error` or `fatal`, the
    /// diagnostic's; a failure naming no line of the PTX is none.
    #[test]
    fn a_refusal_of_nvptxs_ptx_is_e1023_with_ptxass_message() {
        let stderr = "ptxas /tmp/w/module.ptx, line 10; fatal   : Parsing error near '.nvvm': syntax error\nptxas fatal   : Ptx assembly aborted due to errors\n";
        let d = refused_ptx(stderr, "ptxas -arch=sm_90 -c module.ptx").unwrap();
        assert_eq!(d.code, Code::LlvmStopped);
        assert_eq!(d.message, "ptxas refused the PTX made of this input: Parsing error near '.nvvm': syntax error");
        assert!(d.notes.iter().any(|n| n.contains("ptxas -arch=sm_90 -c module.ptx") && n.contains("Ptx assembly aborted")), "{:?}", d.notes);
        let typed = "ptxas /tmp/w/module.ptx, line 27; error   : Type of argument does not match formal parameter 'bar_param_0'\n";
        assert_eq!(refused_ptx(typed, "ptxas").unwrap().message, "ptxas refused the PTX made of this input: Type of argument does not match formal parameter 'bar_param_0'");
        assert!(refused_ptx("ptxas fatal   : Ptx assembly aborted due to errors\n", "ptxas").is_none());
        assert!(refused_ptx("ptxas /tmp/m.ptx, line 3; warning : something\n", "ptxas").is_none());
        assert!(refused_ptx("", "ptxas").is_none());
    }

    #[test]
    fn ptxas_error_lines_are_read() {
        let stderr = "ptxas /tmp/cdpc-work-1-a/module.ptx, line 9; error   : Unknown modifier '.instr'\nptxas /tmp/w, x/module.ptx, line 9; error   : Not a name of any known instruction: 'bogus'\nptxas fatal   : Ptx assembly aborted due to errors\nptxas /tmp/m.ptx, line 3; warning : something\n";
        assert_eq!(errors(stderr), [PtxasError { line: 9, message: "Unknown modifier '.instr'".into() }, PtxasError { line: 9, message: "Not a name of any known instruction: 'bogus'".into() }]);
    }

    #[test]
    fn a_line_in_an_asm_block_has_its_statements_loc_and_function() {
        let site = asm_site(PTX, 9).unwrap();
        assert_eq!(site, AsmSite { loc: Some((1, 4, 5)), function: Some("_Z1kPi".into()), text: "bogus.instr.u32 %r1, %r1;".into() });
        assert_eq!(asm_site(PTX, 6), None, "outside the block");
        assert_eq!(asm_site(PTX, 11), None, "after the block");
        assert_eq!(asm_site(PTX, 99), None);
        assert_eq!(file_named(PTX, 1).as_deref(), Some("/tmp/x.cu"));
    }

    #[test]
    fn the_asm_statement_spans_its_operands() {
        let text = "  asm volatile(\"mov.u32 %0, 1; // )\" : \"=r\"(x));\n";
        let at = Span::new(2, 5);
        assert_eq!(&text[asm_statement(text, at).range()], "asm volatile(\"mov.u32 %0, 1; // )\" : \"=r\"(x))");
        assert_eq!(asm_statement("x = 1;", Span::new(0, 1)), Span::new(0, 1));
    }

    #[test]
    fn a_block_without_a_line_is_placed_at_the_start_with_notes() {
        let ptx = PTX.replace("\t.loc\t1 4 5\n", "").replace("\t.loc\t1 3 13\n", "");
        let d = diagnostics(&ptx, "ptxas m.ptx, line 7; error   : Unknown modifier '.instr'\n", "ptxas -c m.ptx", &SourceText::default());
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::AsmRefusedByPtxas);
        assert_eq!(d[0].message, "Unknown modifier '.instr'");
        assert_eq!(d[0].primary_span(), Span::default());
        assert!(d[0].notes.iter().any(|n| n.contains("function `_Z1kPi`")), "{:?}", d[0].notes);
        assert!(d[0].notes.iter().any(|n| n.contains("ptxas -c m.ptx")), "{:?}", d[0].notes);
    }
}
