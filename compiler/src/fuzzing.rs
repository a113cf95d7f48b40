//! Oracles for the fuzz targets (`fuzz/`) and the in-suite mutation test
//! (`compiler/tests/fuzz_smoke.rs`): each runs some phases on arbitrary text and panics when an
//! invariant is broken. Not a stable API.
//!
//! The invariants: no phase panics; every diagnostic has a code and a primary label whose span
//! lies inside the source on character boundaries; a failed phase reports at least one error;
//! both renderings (text and JSON) of the diagnostics succeed; code generation of a checked
//! program never fails except for a missing libdevice (the back end reports no user errors).
//!
//! IR input (`ir_input`) compiles or fails with coded diagnostics. `launch_module` generates
//! random valid IR modules with launches, which `ir_generated` checks.

use crate::back::{self, BackendError, CodegenOptions};
use crate::diag::Diagnostic;
use crate::driver::{self, CompileError, CompileOptions};
use crate::front::cdp::{hir, syntax};
use crate::render;

/// Panics unless every label of every diagnostic lies inside its file (`source`, or the header
/// the label names), on char boundaries.
pub fn assert_spans_valid(source: &str, diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        assert!(d.labels.iter().any(|l| l.primary), "{} has no primary label: {d:?}", d.code);
        for label in &d.labels {
            let source = label.file.as_deref().map_or(source, |f| f.text.as_str());
            let (start, end) = (label.span.start as usize, label.span.end as usize);
            assert!(start <= end && end <= source.len(), "{} span {start}..{end} outside a source of {} bytes", d.code, source.len());
            assert!(source.is_char_boundary(start) && source.is_char_boundary(end), "{} span {start}..{end} splits a character", d.code);
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
    let (tokens, diagnostics) = syntax::lex_only(source);
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
    let (tree, diagnostics) = syntax::parse(source);
    assert_spans_valid(source, &diagnostics);
    let has_error = diagnostics.iter().any(Diagnostic::is_error);
    assert_eq!(tree.is_some(), !has_error, "a tree must come back exactly when there is no error: {diagnostics:?}");
}

/// The preprocessor alone, reading no file (only the shipped headers): diagnostics inside
/// their files, a failure only with an error, output within the limit and free of directives
/// other than `#pragma`, every output range mapping inside a file, both renderings succeed.
pub fn preprocess(source: &str) {
    use crate::front::cdp::preprocess::{self as pp, FileAccess, PreprocessOptions};
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
    options.preprocess.files = crate::front::cdp::preprocess::FileAccess::ShippedOnly;
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

/// Parse, check and, when that passed, generate PTX at `opt_level` (no ptxas), through the
/// launch pipeline as the driver does. With
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
    if check_with(source, options).is_some() {
        // As the driver generates code: `back`, then the launch pipeline on its IR.
        let mut options = options.clone();
        options.preprocess.files = crate::front::cdp::preprocess::FileAccess::ShippedOnly;
        let Ok(checked) = driver::check(source, &options) else { panic!("a checked program checks again") };
        let codegen = CodegenOptions { opt_level: options.opt_level, libdevice: None, debug: None, fmad: options.fmad, math: options.float_math };
        match driver::on_large_stack(|| driver::generate_cdp(&checked, &options, &codegen, back::Outputs { llvm_ir: false, ptx: true })) {
            Ok((generated, _)) => assert!(generated.ptx.is_some_and(|ptx| ptx.contains(".target")), "PTX without a .target line"),
            // The pipeline's diagnostics (E0306 under the V1 ABI) are placed in the source.
            Err(CompileError::Diagnostics(diagnostics)) => {
                assert_spans_valid(source, &diagnostics);
                assert!(diagnostics.iter().any(Diagnostic::is_error), "code generation failed without an error");
            }
            // Math functions need libdevice, which the fuzz targets do not load.
            Err(CompileError::Backend(BackendError::Libdevice(_))) => {}
            Err(e) => panic!("code generation failed on a checked program: {e}"),
        }
    }
}

/// Clang's messages, as arbitrary text, read against `main_text`: no panic, every diagnostic
/// with a primary label inside its file, both renderings succeed.
pub fn clang_messages(stderr: &str, main_text: &str) {
    let main = std::path::Path::new("/nonexistent/fuzz.cu");
    let diagnostics = crate::front::cuda::diagnostics::parse(stderr, main, main_text);
    assert_spans_valid(main_text, &diagnostics);
    render_both(main_text, &diagnostics);
}

/// The messages of the Clang inside cdpc (data, not text: any file name, any line and column),
/// read against `main_text`: the same checks as [`clang_messages`].
pub fn clang_message_data(messages: &[crate::front::cuda::in_process::Message], main_text: &str) {
    let main = std::path::Path::new("/nonexistent/fuzz.cu");
    let diagnostics = crate::front::cuda::diagnostics::from_messages(messages, main, main_text);
    assert_spans_valid(main_text, &diagnostics);
    render_both(main_text, &diagnostics);
}

/// The launch pipeline on arbitrary LLVM IR, text or bitcode: what LLVM cannot parse is not the
/// pipeline's; what it can goes through the passes on Clang's IR (`atomicCAS`,
/// `pipeline::atomics`; the vtables' pure slots, `pipeline::cxx_abi`; the kernel qualifiers'
/// annotations, `pipeline::qualifiers`, which on a refusal leaves the module as it was), each
/// of which must leave a valid module and nothing for a second run, and every pass without a panic, with thresholding and
/// aggregation at warp, block and grid granularity off and on (with their remarks) and the device heap's pool off and on (no
/// runtime allocation call left outside its wrappers), and a module the pipeline accepts (no error
/// diagnostic) still verifies after the clean-up passes.
pub fn ir_pipeline(ir: &[u8]) {
    use crate::pipeline::aggregate::Granularity;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    for (round, (launch_threshold, aggregate)) in [(0, Granularity::Off), (128, Granularity::Warp), (0, Granularity::Block), (128, Granularity::Grid)].into_iter().enumerate() {
        let context = Context::create();
        let buffer = MemoryBuffer::create_from_memory_range_copy(ir, "fuzz");
        let Ok(module) = context.create_module_from_ir(buffer) else { return };
        if module.verify().is_err() {
            return;
        }
        // Clang's IR gets nvcc's `atomicCAS` first (driver/cuda.rs): a valid module after it,
        // and nothing left for a second run (its invariant).
        crate::pipeline::atomics::atomics_as_nvcc(&module);
        module.verify().unwrap_or_else(|e| panic!("the atomics pass left an invalid module: {e}"));
        assert_eq!(crate::pipeline::atomics::atomics_as_nvcc(&module), 0, "a sequentially consistent system-scope atomic left");
        crate::pipeline::cxx_abi::null_slots(&module);
        module.verify().unwrap_or_else(|e| panic!("the C++ ABI pass left an invalid module: {e}"));
        assert_eq!(crate::pipeline::cxx_abi::null_slots(&module), 0, "a placeholder left in a constant");
        let before = module.print_to_string().to_string();
        match crate::pipeline::qualifiers::apply(&module) {
            Ok(_) => {
                module.verify().unwrap_or_else(|e| panic!("the qualifiers pass left an invalid module: {e}"));
                assert_eq!(crate::pipeline::qualifiers::apply(&module), Ok(0), "a qualifier's annotation left");
            }
            Err(refused) => {
                assert!(!refused.is_empty());
                assert_eq!(module.print_to_string().to_string(), before, "a refusal changed the module");
            }
        }
        let target = crate::Target::default();
        let source = crate::pipeline::SourceText::default();
        // The device heap's pool: none, linked in, left to the link, a whole program's, a round each.
        use crate::pipeline::malloc_pool::{MallocPool, GIVE, TAKE};
        let malloc_pool = [MallocPool::Off, MallocPool::On, MallocPool::AtLink, MallocPool::Program][(round + round / 4) % 4];
        // A whole program's linkage every other pair of rounds.
        let whole_program = round % 4 >= 2;
        let options = crate::pipeline::PipelineOptions { target, launch_threshold, aggregate, pass_remarks: true, malloc_pool, whole_program, ..Default::default() };
        match crate::pipeline::run(&module, &options, &source) {
            Ok(warnings) => {
                assert!(!warnings.iter().any(Diagnostic::is_error));
                module.verify().unwrap_or_else(|e| panic!("the pipeline left an invalid module: {e}"));
                if malloc_pool == MallocPool::On && !warnings.iter().any(|w| w.code == crate::diag::Code::MallocPoolNotUsed) {
                    assert_eq!(crate::pipeline::malloc_pool::unpooled_uses(&module), 0, "a runtime allocation call left unpooled");
                }
                // Left to the link, or a whole program's: routed whole (the weak stand-ins or the
                // pool there) or untouched.
                if matches!(malloc_pool, MallocPool::AtLink | MallocPool::Program) && (module.get_function(GIVE).is_some() || module.get_function(TAKE).is_some()) {
                    assert_eq!(crate::pipeline::malloc_pool::unpooled_uses(&module), 0, "a runtime allocation call left outside the wrappers");
                }
                // The cleanup passes, the struct-copy expansion among them.
                let tm = crate::back::target_machine(&target, 3).expect("the NVPTX target machine");
                crate::pipeline::cleanup(&module, &tm, true).unwrap_or_else(|e| panic!("the cleanup failed: {e}"));
                module.verify().unwrap_or_else(|e| panic!("the cleanup left an invalid module: {e}"));
                // nvcc's single-precision options after optimisation (driver/cuda.rs's `lower`),
                // one set a round: a valid module, nothing for a second run.
                let math = [
                    crate::back::FloatMath::default(),
                    crate::back::FloatMath { prec_div: false, ftz: true, ..Default::default() },
                    crate::back::FloatMath::fast(),
                    crate::back::FloatMath { prec_sqrt: false, ..Default::default() },
                ][round];
                if math.ftz {
                    crate::back::precision::flush_denormals(&module);
                }
                crate::back::precision::divisions_as_nvcc(&module, math);
                module.verify().unwrap_or_else(|e| panic!("the divisions pass left an invalid module: {e}"));
                assert_eq!(crate::back::precision::divisions_as_nvcc(&module, math), 0, "a division left for a second run");
            }
            Err(errors) => assert!(errors.iter().any(Diagnostic::is_error), "a failed pipeline reports an error"),
        }
    }
}

/// LLVM IR or bitcode as input (`driver::compile_ir`, to PTX, which needs no NVIDIA tool), on
/// arbitrary bytes: no panic; a failure is coded diagnostics with at least one error, their
/// spans inside the text shown for the input (none for bitcode), both renderings succeed; LLVM
/// never fails on a module the contract accepted.
pub fn ir_input(bytes: &[u8]) {
    let options = CompileOptions { emit: driver::Emit::Ptx, ..CompileOptions::default() };
    let shown = crate::front::ir::shown_text(bytes);
    match driver::compile_ir(bytes, &options) {
        Ok(compiled) => {
            assert_spans_valid(&shown, &compiled.warnings);
            render_both(&shown, &compiled.warnings);
        }
        Err(CompileError::Diagnostics(d)) => {
            assert!(d.iter().any(Diagnostic::is_error), "a failed compilation reports an error");
            assert_spans_valid(&shown, &d);
            render_both(&shown, &d);
        }
        Err(other) => panic!("IR input failed without a diagnostic: {other}"),
    }
}

/// A module [`launch_module`] made from a fuzzer's bytes: its text, how many launches it
/// makes, and whether one of them writes its buffer after the launch (then it is `E1015`).
pub struct LaunchModule {
    /// The textual IR.
    pub ir: String,
    /// The launches the parent makes.
    pub launches: usize,
    /// Whether the last launch's buffer is written after the launch.
    pub late_write: bool,
}

/// The fuzzer's bytes as choices; 0 once they run out.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn next(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }

    fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }
}

/// A valid module in the IR contract made from `entropy`: 1 to 3 child kernels of 0 to 4
/// parameters (`i32`, `i64`, `ptr`, `float`, `double`, laid out at their natural alignment),
/// a parent that launches them 1 to 4 times through the documented names or the CDP2 ones,
/// `dim3` by value (the literal struct type or a named one) or as a `byval` pointer, with or without a null test of the buffer, into
/// the NULL stream, the per-thread one (`_ptsz`) or tail launch; and, when the bytes say so,
/// a store into the last buffer after its launch.
pub fn launch_module(entropy: &[u8]) -> LaunchModule {
    const TYPES: [(&str, u64, &str); 5] = [("i32", 4, "%x"), ("i64", 8, "-5"), ("ptr", 8, "%p"), ("float", 4, "1.5"), ("double", 8, "2.5")];
    let mut c = Choices(entropy);
    let cdp2 = c.next() & 1 == 1;
    let form = c.next() % 3;
    let (byval, named) = (form == 2, form == 1);
    let (get, launch) = if cdp2 { ("__cudaCDP2GetParameterBuffer", "__cudaCDP2LaunchDevice") } else { ("cudaGetParameterBuffer", "cudaLaunchDevice") };
    // By value, a dim3 is the literal struct type or the named `%dim3`; behind a pointer, the named one.
    let dim = if byval {
        "ptr byval(%dim3) align 4"
    } else if named {
        "%dim3"
    } else {
        "{ i32, i32, i32 }"
    };
    let mut ir = format!("target triple = \"nvptx64-nvidia-cuda\"\n%dim3 = type {{ i32, i32, i32 }}\ndeclare ptr @{get}(i64, i64)\n");
    for suffix in ["", "_ptsz"] {
        ir.push_str(&format!("declare i32 @{launch}{suffix}(ptr, ptr, {dim}, {dim}, i32, ptr)\n"));
    }
    let children: Vec<Vec<usize>> = (0..1 + c.below(3)).map(|_| (0..c.below(5)).map(|_| c.below(TYPES.len())).collect()).collect();
    for (k, params) in children.iter().enumerate() {
        let list: Vec<String> = params.iter().enumerate().map(|(i, t)| format!("{} %a{i}", TYPES[*t].0)).collect();
        ir.push_str(&format!("define ptx_kernel void @child{k}({}) {{\n  ret void\n}}\n", list.join(", ")));
    }
    ir.push_str("define ptx_kernel void @parent(ptr %p, i32 %x) {\nentry:\n");
    let launches = 1 + c.below(4);
    let late_write = c.next() % 8 == 0;
    let mut late = false;
    for n in 0..launches {
        let params = &children[c.below(children.len())];
        let kernel = children.iter().position(|p| std::ptr::eq(p, params)).unwrap_or(0);
        let (mut offset, mut align) = (0u64, 1u64);
        let mut stores = String::new();
        for (i, t) in params.iter().enumerate() {
            let (ty, size, value) = TYPES[*t];
            offset = offset.div_ceil(size) * size;
            align = align.max(size);
            stores.push_str(&format!("  %s{n}_{i} = getelementptr inbounds i8, ptr %b{n}, i64 {offset}\n  store {ty} {value}, ptr %s{n}_{i}, align {size}\n"));
            offset += size;
        }
        let size = offset.div_ceil(align) * align;
        let grid = format!("{{ i32 {}, i32 1, i32 1 }}", 1 + c.below(255));
        let block = format!("{{ i32 {}, i32 1, i32 1 }}", 1 + c.below(255));
        let (stream, suffix) = match c.below(3) {
            0 => ("ptr null", ""),
            1 => ("ptr null", "_ptsz"),
            _ => ("ptr inttoptr (i64 3 to ptr)", ""),
        };
        let (grid, block) = if byval {
            ir.push_str(&format!("  %g{n} = alloca %dim3, align 4\n  store %dim3 {grid}, ptr %g{n}, align 4\n  %k{n} = alloca %dim3, align 4\n  store %dim3 {block}, ptr %k{n}, align 4\n"));
            (format!("ptr byval(%dim3) align 4 %g{n}"), format!("ptr byval(%dim3) align 4 %k{n}"))
        } else {
            (format!("{dim} {grid}"), format!("{dim} {block}"))
        };
        if params.is_empty() {
            ir.push_str(&format!("  %st{n} = call i32 @{launch}{suffix}(ptr @child{kernel}, ptr null, {grid}, {block}, i32 0, {stream})\n"));
            continue;
        }
        ir.push_str(&format!("  %b{n} = call ptr @{get}(i64 {align}, i64 {size})\n"));
        let checked = c.next() & 1 == 1;
        if checked {
            ir.push_str(&format!("  %null{n} = icmp eq ptr %b{n}, null\n  br i1 %null{n}, label %skip{n}, label %fill{n}\nfill{n}:\n"));
        }
        ir.push_str(&stores);
        ir.push_str(&format!("  %st{n} = call i32 @{launch}{suffix}(ptr @child{kernel}, ptr %b{n}, {grid}, {block}, i32 0, {stream})\n"));
        if late_write && n + 1 == launches {
            ir.push_str(&format!("  store i8 0, ptr %b{n}, align 1\n"));
            late = true;
        }
        if checked {
            ir.push_str(&format!("  br label %skip{n}\nskip{n}:\n"));
        }
    }
    ir.push_str("  ret void\n}\n");
    LaunchModule { ir, launches, late_write: late }
}

/// [`launch_module`]'s module through [`ir_input`]'s oracle, and more: it compiles with no
/// error and its parent makes each launch through the V2 entry points, or it is `E1015` when
/// it writes a buffer after its launch.
pub fn ir_generated(entropy: &[u8]) {
    let made = launch_module(entropy);
    ir_input(made.ir.as_bytes());
    let options = CompileOptions { emit: driver::Emit::Ptx, ..CompileOptions::default() };
    match driver::compile_ir(made.ir.as_bytes(), &options) {
        Ok(compiled) if !made.late_write => {
            let ptx = String::from_utf8(compiled.output).expect("PTX is text");
            let launches = ptx.lines().filter(|l| l.trim_start().starts_with("call") && l.contains("__cudaCDP2LaunchDeviceV2")).count();
            assert_eq!(launches, made.launches, "launches lost or added:\n{}\n{ptx}", made.ir);
        }
        Err(CompileError::Diagnostics(d)) if made.late_write => {
            assert!(d.iter().any(|d| d.code == crate::diag::Code::ParamBufferWrittenAfterLaunch), "{d:?}\n{}", made.ir);
        }
        Ok(_) => panic!("a buffer written after its launch was accepted:\n{}", made.ir),
        Err(e) => panic!("a module in the contract was refused: {e}\n{}", made.ir),
    }
}

/// Clang's host-side IR given nvcc's managed variables ([`crate::pipeline::managed::host`]) and
/// names ([`crate::pipeline::host_names`]) on arbitrary IR: no panic; on success a valid module
/// with no global left in the managed marker's section, in which no external function keeps
/// Clang's stub name.
pub fn host_ir(ir: &str) {
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "fuzz");
    let Ok(module) = context.create_module_from_ir(buffer) else { return };
    if module.verify().is_err() {
        return;
    }
    if crate::pipeline::managed::host(&module).is_err() {
        return;
    }
    module.verify().unwrap_or_else(|e| panic!("managed::host left an invalid module: {e}"));
    let marked = module.get_globals().find(|g| g.get_section().is_some_and(|s| s.to_bytes() == crate::pipeline::managed::MARKER.as_bytes()));
    assert!(marked.is_none(), "managed::host left {marked:?} in the marker section");
    if crate::pipeline::host_names::nvcc_host_names(&module, "_fuzz_4_f_cu_cdpc").is_ok() {
        module.verify().unwrap_or_else(|e| panic!("host_names left an invalid module: {e}"));
        for f in module.get_functions() {
            let name = f.get_name().to_string_lossy().into_owned();
            let renamable = crate::pipeline::host_names::stub_symbol(&name).is_some_and(|n| module.get_function(&n).is_none());
            assert!(f.get_linkage() == inkwell::module::Linkage::Internal || !renamable, "`{name}` keeps Clang's stub name");
        }
    }
}

/// nvcc's forms made Clang's ([`crate::front::cuda::nvcc_text::rewrite`]) on arbitrary bytes: no
/// panic; the text keeps its line breaks and grows only by bytes put in, each a blank, `,` or
/// `%` (or a half pair's assignment from a braced list after CUDA's declaration, rule 7), with
/// the brackets of a launch moved; a second rewrite changes nothing; text without a candidate
/// pattern is left alone.
pub fn nvcc_text(data: &[u8]) {
    use crate::front::cuda::nvcc_text::{may_need_rewriting, rewrite};
    let Some(text) = rewrite(data) else { return };
    assert!(may_need_rewriting(data), "a change where the cheap test saw nothing");
    assert!(!data.contains(&0), "a binary file (a NUL byte) changed");
    assert_ne!(text, data, "`Some` means a change");
    assert!(text.len() >= data.len());
    let lines = |t: &[u8]| t.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(lines(&text), lines(data), "a line break moved or was made");
    let count = |t: &[u8], keep: fn(u8) -> bool| t.iter().filter(|&&b| keep(b)).count();
    let ordinary = |b: u8| !matches!(b, b' ' | b'\t' | b',' | b'%' | b'<' | b'>');
    // Rule 7's text, put in after a declaration of CUDA's: counted apart.
    let put_in: usize = crate::front::cuda::nvcc_text::BRACED_LIST_ASSIGNMENTS
        .iter()
        .map(|(ty, half, _)| {
            let with = crate::front::cuda::nvcc_text::braced_list_assignment(ty, half);
            let occurrences = |t: &[u8]| t.windows(with.len()).filter(|w| *w == with.as_bytes()).count();
            occurrences(&text).saturating_sub(occurrences(data)) * count(with.as_bytes(), ordinary)
        })
        .sum();
    assert_eq!(count(&text, ordinary), count(data, ordinary) + put_in, "bytes other than those put in or moved changed");
    assert!(rewrite(&text).is_none(), "a second rewrite changed {:?}", String::from_utf8_lossy(&text));
}

/// `data` with `inserted` applied ([`crate::front::cuda::mend`]'s invariants, asserted): insertions in
/// order, none with a line break, the text before the first unchanged, and every input byte
/// kept, in order (the input is a subsequence of the output).
fn inserted_only(data: &[u8], inserted: &[(usize, String)]) -> Vec<u8> {
    assert!(inserted.windows(2).all(|w| w[0].0 <= w[1].0), "insertions in order");
    assert!(!inserted.iter().any(|(_, s)| s.contains('\n')), "a line break made");
    let text = crate::front::cuda::mend::apply(data, inserted);
    let first = inserted.first().map_or(data.len(), |(at, _)| *at);
    assert_eq!(&text[..first], &data[..first], "text before the first insertion changed");
    let mut rest = data.iter().peekable();
    for b in &text {
        if rest.peek() == Some(&b) {
            rest.next();
        }
    }
    assert!(rest.next().is_none(), "an input byte dropped");
    text
}

/// `__shared__` declarations made raw storage ([`crate::front::cuda::shared_storage`]) on arbitrary
/// bytes, at every place a name starts (the places Clang would give): no panic; where the
/// declarations are read, only text is put in (every byte of the input kept, in order), no line
/// break is made, the input's text up to the first insertion is unchanged, and each rewritten
/// name is declared again as a reference.
pub fn shared_storage(data: &[u8]) {
    use crate::front::cuda::shared_storage::insertions;
    let names: Vec<usize> = (0..data.len()).filter(|&i| (data[i].is_ascii_alphabetic() || data[i] == b'_') && (i == 0 || !(data[i - 1].is_ascii_alphanumeric() || data[i - 1] == b'_'))).collect();
    for &at in names.iter().take(64) {
        let Some(inserted) = insertions(data, &[at]) else { continue };
        let text = inserted_only(data, &inserted);
        let name_end = (at..data.len()).find(|&i| !(data[i].is_ascii_alphanumeric() || data[i] == b'_')).unwrap_or(data.len());
        let name = String::from_utf8_lossy(&data[at..name_end]).into_owned();
        assert!(String::from_utf8_lossy(&text).contains(&format!(" auto &{name} = __cdpc_shared_ref(__cdpc_shared_{name});")), "the reference declared");
    }
}

/// Initialised variable-length arrays filled by a second declarator
/// ([`crate::front::cuda::vla_init`]) on arbitrary bytes, with every byte's offset as Clang's place of
/// a bound: no panic; where the declaration is read, only text is put in (every byte of the
/// input kept, in order), no line break is made, the text before the first insertion is
/// unchanged, and the filler is called with the array's own name.
pub fn vla_init(data: &[u8]) {
    use crate::front::cuda::vla_init::insertions;
    for at in (0..data.len()).take(64) {
        let Some(inserted) = insertions(data, &[at]) else { continue };
        assert_eq!(inserted.len(), 3, "three insertions per declaration");
        let text = inserted_only(data, &inserted);
        // The name before the insertions' `[`, declared again as the filler's pointer.
        let name = inserted[0].1.trim_start_matches(", *__cdpc_vla_").split(' ').next().unwrap_or_default().to_string();
        assert!(!name.is_empty() && String::from_utf8_lossy(&text).contains(&format!("(::__cdpc_vla_init({name}, sizeof {name} / sizeof *{name})(")), "the filler names the array");
    }
}
