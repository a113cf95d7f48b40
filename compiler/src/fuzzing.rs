//! Oracles for the fuzz targets (`fuzz/`) and the in-suite mutation test
//! (`compiler/tests/fuzz_smoke.rs`): each runs some phases on arbitrary text and panics when an
//! invariant is broken. Not a stable API.
//!
//! The invariants: no phase panics; every diagnostic has a code and a primary label whose span
//! lies inside the source on character boundaries; a failed phase reports at least one error;
//! both renderings (text and JSON) of the diagnostics succeed; code generation of a checked
//! program never fails except for a missing libdevice (the back end reports no user errors).

use crate::back::{self, BackendError, CodegenOptions};
use crate::diag::Diagnostic;
use crate::driver::{self, CompileError, CompileOptions};
use crate::{front, hir, render};

/// Panics unless every label of every diagnostic lies inside its file (`source`, or the header
/// the label names), on char boundaries.
pub fn assert_spans_valid(source: &str, diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        assert!(d.labels.iter().any(|l| l.primary), "{} has no primary label: {d:?}", d.code);
        for label in &d.labels {
            let source = label.file.as_deref().map_or(source, |f| f.text.as_str());
            let (start, end) = (label.span.start as usize, label.span.end as usize);
            assert!(start <= end && end <= source.len(), "{} span {start}..{end} outside a source of {} bytes", d.code, source.len());
            assert!(
                source.is_char_boundary(start) && source.is_char_boundary(end),
                "{} span {start}..{end} splits a character",
                d.code
            );
        }
    }
}

fn render_both(source: &str, diagnostics: &[Diagnostic]) {
    let text = render::human(diagnostics, "fuzz.cdp", source, render::Color::Never);
    assert!(diagnostics.is_empty() || !text.is_empty());
    let json = render::json(diagnostics, "fuzz.cdp", source);
    assert_eq!(json.lines().count(), diagnostics.len());
}

/// The lexer alone: tokens in order, inside the source, on char boundaries.
pub fn lex(source: &str) {
    let (tokens, diagnostics) = front::lex_only(source);
    let mut previous_end = 0;
    for t in &tokens {
        assert!(previous_end <= t.start && t.start < t.end && t.end <= source.len(), "token {t:?} out of order or bounds");
        assert!(source.is_char_boundary(t.start) && source.is_char_boundary(t.end), "token {t:?} splits a character");
        previous_end = t.end;
    }
    assert_spans_valid(source, &diagnostics);
}

/// Lexer and parser: a tree exactly when there is no error.
pub fn parse(source: &str) {
    let (tree, diagnostics) = front::parse(source);
    assert_spans_valid(source, &diagnostics);
    let has_error = diagnostics.iter().any(Diagnostic::is_error);
    assert_eq!(tree.is_some(), !has_error, "a tree must come back exactly when there is no error: {diagnostics:?}");
}

/// The preprocessor alone, reading no file (only the shipped headers): diagnostics inside
/// their files, a failure only with an error, output within the limit and free of directives
/// other than `#pragma`, every output range mapping inside a file, both renderings succeed.
pub fn preprocess(source: &str) {
    use crate::preprocess::{self as pp, FileAccess, PreprocessOptions};
    let options = PreprocessOptions { files: FileAccess::ShippedOnly, ..Default::default() };
    let result = driver::on_large_stack(|| pp::preprocess(source, &options, &Default::default()));
    assert_spans_valid(source, &result.diagnostics);
    render_both(source, &result.diagnostics);
    assert!(result.text.len() <= pp::MAX_OUTPUT_BYTES);
    if result.text.is_empty() {
        return;
    }
    let step = (result.text.len() / 64).max(1);
    for start in (0..result.text.len()).step_by(step) {
        let end = (start + 7).min(result.text.len());
        let loc = result.map.map_span(crate::diag::Span::new(start, end));
        let file = &result.map.files[loc.file as usize].file.text;
        assert!(loc.start <= loc.end && loc.end as usize <= file.len(), "output {start}..{end} maps outside its file: {loc:?}");
    }
}

/// The whole front half (preprocessor, parse and sema) with `options`, reading no header from
/// disk; the checked module when it passed.
pub fn check_with(source: &str, options: &CompileOptions) -> Option<hir::Module> {
    let mut options = options.clone();
    options.preprocess.files = crate::preprocess::FileAccess::ShippedOnly;
    let options = &options;
    match driver::check(source, options) {
        Ok(checked) => {
            assert_spans_valid(source, &checked.warnings);
            assert!(!checked.warnings.iter().any(Diagnostic::is_error));
            render_both(source, &checked.warnings);
            Some(checked.module)
        }
        Err(CompileError::Diagnostics(diagnostics)) => {
            assert_spans_valid(source, &diagnostics);
            assert!(diagnostics.iter().any(Diagnostic::is_error), "check failed without an error: {diagnostics:?}");
            render_both(source, &diagnostics);
            None
        }
        Err(other) => panic!("check returned a non-diagnostic error: {other}"),
    }
}

/// [`check_with`] with the default options (sm_90, 64-bit, launch ABI v2).
pub fn check(source: &str) -> Option<hir::Module> {
    check_with(source, &CompileOptions::default())
}

/// Parse, check and, when that passed, generate PTX at `opt_level` (no ptxas). With
/// `options.debug` (`-lineinfo`, `-G`), through the driver, which maps lines through the
/// source map; `options.separate` (`-dc`) leaves undefined declarations to a link.
pub fn codegen(source: &str, options: &CompileOptions) {
    if options.debug.is_some() {
        let options = CompileOptions { emit: driver::Emit::Ptx, ..options.clone() };
        match driver::compile(source, &options) {
            Ok(out) => {
                let ptx = String::from_utf8(out.output).expect("PTX is text");
                assert!(ptx.contains(".target"), "PTX without a .target line");
            }
            Err(CompileError::Diagnostics(diagnostics)) => {
                assert_spans_valid(source, &diagnostics);
                assert!(diagnostics.iter().any(Diagnostic::is_error), "compile failed without an error");
            }
            Err(CompileError::Backend(BackendError::Libdevice(_))) => {}
            Err(other) => panic!("compile with debug information failed on a checked program: {other}"),
        }
        return;
    }
    if let Some(module) = check_with(source, options) {
        let codegen = CodegenOptions { opt_level: options.opt_level, libdevice: None, debug: None, fmad: options.fmad };
        match driver::on_large_stack(|| back::emit_ptx(&module, &codegen)) {
            Ok(ptx) => assert!(ptx.contains(".target"), "PTX without a .target line"),
            // Math functions need libdevice, which the fuzz targets do not load.
            Err(BackendError::Libdevice(_)) => {}
            Err(e) => panic!("code generation failed on a checked program: {e}"),
        }
    }
}

/// Clang's messages, as arbitrary text, read against `main_text`: no panic, every diagnostic
/// with a primary label inside its file, both renderings succeed.
pub fn clang_messages(stderr: &str, main_text: &str) {
    let main = std::path::Path::new("/nonexistent/fuzz.cu");
    let diagnostics = crate::clang::diagnostics::parse(stderr, main, main_text);
    assert_spans_valid(main_text, &diagnostics);
    render_both(main_text, &diagnostics);
}

/// The launch pipeline on arbitrary LLVM IR text: what LLVM cannot parse is not the
/// pipeline's; what it can goes through every pass without a panic, with thresholding and warp
/// aggregation off and on (with their remarks), and a module the pipeline accepts (no error
/// diagnostic) still verifies after the clean-up passes.
pub fn ir_pipeline(ir: &str) {
    use crate::aggregate::Granularity;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    for (launch_threshold, aggregate) in [(0, Granularity::Off), (128, Granularity::Warp), (0, Granularity::Block)] {
        let context = Context::create();
        let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "fuzz");
        let Ok(module) = context.create_module_from_ir(buffer) else { return };
        if module.verify().is_err() {
            return;
        }
        let target = crate::Target::default();
        let source = crate::pipeline::SourceText::default();
        let options = crate::pipeline::PipelineOptions { target, nv_module_id: None, launch_threshold, aggregate, pass_remarks: true };
        match crate::pipeline::run(&module, &options, &source) {
            Ok(warnings) => {
                assert!(!warnings.iter().any(Diagnostic::is_error));
                module.verify().unwrap_or_else(|e| panic!("the pipeline left an invalid module: {e}"));
            }
            Err(errors) => assert!(errors.iter().any(Diagnostic::is_error), "a failed pipeline reports an error"),
        }
    }
}
