//! What debug information code generation emits, and the PTX of `-lineinfo`: `-lineinfo`
//! (line tables: `.file` and `.loc` in the PTX) and `-G` (full DWARF: also each function's
//! parameters and locals of scalar and pointer type). The kernel language's DWARF is built by
//! `front::cdp::codegen`'s `debug.rs`; Clang builds CUDA C++'s.
//!
//! Code generation sees spans of the preprocessed text only; [`DebugInfo::locate`], made by the
//! driver from the source map, turns one into a file and line of the user's files (a macro's
//! expansion is at the line that invokes it, as nvcc has it).

use crate::diag::Span;
use std::sync::Arc;

/// How much debug information to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugLevel {
    /// `-lineinfo`: line tables only; the code is optimised as usual.
    LineTables,
    /// `-G`: full DWARF (line tables, functions, variables); the driver compiles at -O0.
    Full,
}

/// A file, line and column (both 1-based) of the user's sources: an index into
/// [`DebugInfo::files`].
pub type Position = (usize, u32, u32);

/// What code generation needs to emit debug information.
#[derive(Clone)]
pub struct DebugInfo {
    /// Line tables only, or everything.
    pub level: DebugLevel,
    /// Each source file as (name, directory): the main file first, then headers.
    pub files: Vec<(String, String)>,
    /// Where a span of the preprocessed text starts in the files.
    pub locate: Arc<dyn Fn(Span) -> Position + Send + Sync>,
}

impl std::fmt::Debug for DebugInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugInfo").field("level", &self.level).field("files", &self.files).finish_non_exhaustive()
    }
}

/// The PTX of `-lineinfo` as nvcc writes it: `.file` and `.loc` directives only. LLVM's C API
/// offers line tables only with DWARF sections and `.target ..., debug`, which ptxas takes for
/// `-G` code ("Optimized debugging not supported"); this drops both (what clang's
/// `-gline-directives-only` does for NVPTX).
pub fn directives_only(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut in_section = false;
    for line in ptx.split_inclusive('\n') {
        let trimmed = line.trim();
        if in_section {
            in_section = trimmed != "}";
            continue;
        }
        if trimmed.starts_with(".section") && trimmed.contains(".debug_") {
            in_section = !trimmed.contains('}');
            continue;
        }
        if trimmed.starts_with(".target") {
            out.push_str(&line.replace(", debug", ""));
            continue;
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::directives_only;

    #[test]
    fn line_directives_stay_and_dwarf_sections_go() {
        let ptx = ".version 8.7\n.target sm_90, debug\n.entry k()\n{\n\t.loc\t1 2 0\n\tret;\n}\n\t.file\t1 \"/t/a.cu\"\n\
                   \t.section\t.debug_abbrev\n\t{\n.b8 1\n\t}\n\t.section\t.debug_macinfo\t{\t}\n";
        assert_eq!(directives_only(ptx), ".version 8.7\n.target sm_90\n.entry k()\n{\n\t.loc\t1 2 0\n\tret;\n}\n\t.file\t1 \"/t/a.cu\"\n");
    }
}
