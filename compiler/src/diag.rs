//! Diagnostics as plain data.
//!
//! Every phase reports problems as [`Diagnostic`] values; nothing here knows how they are
//! printed. Rendering (codespan for people, JSON for machines) happens once, at the edge, in
//! [`crate::render`].

use std::fmt;
use std::sync::Arc;

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset just past the last byte.
    pub end: u32,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    /// The span as a range of byte offsets.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// The byte offset of `line`:`col` (1-based, the column in bytes, as Clang and LLVM count) in `text`, and the
/// end of the word that starts there (at least one character, never past the line).
pub fn span_at(text: &str, line: usize, col: usize) -> Span {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(nl) => start += nl + 1,
            None => return Span::new(text.len(), text.len()),
        }
    }
    let line_end = text[start..].find('\n').map_or(text.len(), |nl| start + nl);
    let mut at = (start + col.saturating_sub(1)).min(line_end);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let rest = &text[at..line_end];
    let word = rest.char_indices().find(|(_, c)| !(c.is_alphanumeric() || *c == '_')).map_or(rest.len(), |(i, _)| i);
    let len = if word > 0 { word } else { rest.chars().next().map_or(0, char::len_utf8) };
    Span::new(at, at + len)
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Information about an optimisation (`-Rpass=aggregate`); never stops compilation.
    Remark,
    /// Compilation goes on (unless the warning policy denies it).
    Warning,
    /// No output is produced.
    Error,
}

/// Stable diagnostic codes. The string form (`E0100`) is what users search for and what
/// `-W`/`-Werror` options name, so a code never changes meaning once released. Each variant's
/// meaning is shown by its test file in `tests/ui` (named after the code).
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    // Lexing and parsing: E00xx
    InvalidToken,
    UnterminatedComment,
    UnterminatedLiteral,
    IntegerLiteralOutOfRange,
    InvalidEscape,
    SyntaxError,
    UnsupportedSyntax,
    InvalidUtf8,
    // Names and declarations: E01xx
    UnknownName,
    Redefinition,
    UnknownType,
    InvalidDeclaration,
    MissingDefinition,
    // Types and expressions: E02xx
    TypeMismatch,
    InvalidOperands,
    NotAnLvalue,
    CallArity,
    NotCallable,
    InvalidArraySize,
    NotConstant,
    AssignToConst,
    MisplacedStatement,
    MissingReturn,
    // C's jumps: `switch` and `goto` (E023x, `sema::jumps`)
    DuplicateCase,
    CaseNotConstant,
    CaseRange,
    JumpPastInitialization,
    UndefinedLabel,
    // Bit-fields and pointers to functions in the kernel language (E0235-E0239)
    InvalidBitField,
    BitFieldAddress,
    // E0237 (a kernel's address) and E0238 (a launch through a pointer) are retired: cdpc
    // accepts both. A retired code is never given another meaning.
    FunctionPointerFromHost,
    // Launches and the device runtime: E03xx / W03xx
    LaunchOfNonKernel,
    LaunchArity,
    LaunchArgumentType,
    LaunchConfigType,
    ParamBufferTooLarge,
    ParamBufferOver4K,
    StreamNeedsV2Abi,
    LocalPointerToChild,
    // The same in CUDA C++, a warning as nvcc's (`pipeline::param_buffer`): W0317
    ParentMemoryToChild,
    DeviceSynchronizeRemoved,
    MissingRequiredFlag,
    LaunchInHostDevice,
    KernelReturnType,
    KernelCalledDirectly,
    GraphStreamMisuse,
    GraphLaunchStream,
    NeedsNewerArch,
    NotInDeviceRuntimeLibrary,
    // Whole-program limits: E04xx
    NestingTooDeep,
    SourceTooLarge,
    // The preprocessor: E06xx / W06xx / R06xx
    UnknownDirective,
    MalformedDirective,
    IncludeNotFound,
    ErrorDirective,
    UnbalancedConditional,
    InvalidIfExpression,
    MacroArguments,
    InvalidPaste,
    PreprocessorLimit,
    MacroRedefined,
    WarningDirective,
    HostHeaderSkipped,
    // Optimisation remarks: R05xx
    AggregationRemark,
    AggregatedPerWarp,
    ThresholdRemark,
    AggregatedPerGrid,
    /// Whether the device link serves device-side allocations from the pool, and why
    /// (`-Rpass=malloc-pool`, `driver/pool.rs`).
    MallocPoolDecision,
    // The user's files and the tools' time, no source span: E07xx
    OutputIsInput,
    OutputNotCompilerOutput,
    ToolTimedOut,
    Interrupted,
    OutputNotWritable,
    InputNotReadable,
    WorkFileFailed,
    // The command line: an nvcc option cdpc does not have (E0707), an option cdpc cannot read
    // (E0708: unknown, or its value missing or wrong)
    OptionUnsupported,
    OptionInvalid,
    // An option whose request cannot be met here, and what is done instead (W0709: nvcc's
    // `-arch=native` on a machine without a GPU, `-dlto`).
    OptionFallback,
    // Separate compilation and the link step: E08xx
    DuplicateDeviceSymbol,
    UndefinedDeviceSymbol,
    LibraryNotFound,
    // A host link whose objects' device code no device link took in, or two took in.
    DeviceLinkMissing,
    // A host link cdpc did not run (cdpc as its launcher) that failed for a missing or doubled
    // device link or the static runtime's system libraries.
    ForeignLinkFailed,
    // E0805 (no libomp for a host side with OpenMP) is retired: such a host side is compiled
    // with its regions on one thread, W0807.
    OpenMpRuntimeMissing,
    // A program's host link that found no `main` (a file of kernels built as a program).
    ProgramWithoutMain,
    // W0800 (a kernel whose parameter's type C cannot name, so the host header has no launcher
    // for it) is retired: every kernel-language type has a C name.
    PtxOfLinkNotPacked,
    // Host OpenMP without LLVM's runtime: its parallel regions run on one thread (`driver::cuda`)
    OpenMpRegionsSerial,
    // C++ and CUDA as real programs write them: E09xx / W09xx
    HostCodeInDevice,
    NotCompiledForDevice,
    LegacyWarpIntrinsic,
    LegacyWarpIntrinsicRefused,
    // CUDA's vector types and device qualifiers: E091x / W091x
    HostConstantAddress,
    InvalidLaunchBounds,
    DeprecatedVectorType,
    // C++ in a `.cdp` file (E092x). E0920 (a C++ construct not supported yet), E0921 (no such
    // member function or constructor) and E0922 (a reference bound wrongly) are retired: classes,
    // references and namespaces are CUDA C++, `E0923` in a `.cdp` file.
    CudaCxxInKernelLanguage,
    // E0940-E0944 (function and class templates: instantiation depth, deduction, arguments, what
    // was not supported) and W0945 (an instance host code names that cdpc could not evaluate) are
    // retired: templates are CUDA C++ (E0923 in a `.cdp` file).
    // E0950 (a cooperative group cdpc did not have) and E0951 (a group misused) are retired:
    // cooperative groups are CUDA C++ (E0923 in a `.cdp` file, Clang's otherwise).
    // GCC-style inline PTX assembly: E096x
    AsmUnknownConstraint,
    AsmOperandOutOfRange,
    AsmOutputNotLvalue,
    AsmNotConstant,
    AsmOperandType,
    AsmConstraintModifier,
    AsmClobber,
    AsmTemplate,
    // ptxas refused the PTX of a program's own inline assembly (`driver::ptxas_asm`): E0968
    AsmRefusedByPtxas,
    // E0970-E0973 (overloading: no viable function, an ambiguous call, an overload defined
    // twice, overloads differing only in their return type) are retired: overloading is CUDA C++
    // (a second function of one name is `E0923` in a `.cdp` file), and E0974 (an
    // operator function's parameter count) with operator functions.
    // The CUDA C++ front end (Clang) and the launch pipeline on LLVM IR: E10xx / W10xx
    ClangError,
    ClangWarning,
    ClangNotFound,
    CudaHeadersNotFound,
    ClangCrashed,
    CacheSizeInvalid,
    LaunchNotRecognised,
    // LLVM IR and bitcode as input (`front::ir`): E1011-E1019
    IrUnreadable,
    IrInvalid,
    IrWrongTriple,
    IrWrongDataLayout,
    ParamBufferWrittenAfterLaunch,
    IrNoKernel,
    IrSymbolName,
    PtxNotText,
    IrFunctionData,
    // CUDA C++'s managed variables on the host side (`pipeline::managed`): E1020
    ManagedAddressInInitializer,
    // LLVM stopped on the module (a fatal error or a crash in its passes or code generation,
    // `back::safely`): E1023
    LlvmStopped,
    // An operation the target architecture has no instruction for, in either front end's IR
    // (`pipeline::wide_atomics`: 128-bit atomics below sm_90): E1024
    ArchitectureLacksOperation,
    // A kernel qualifier nvcc refuses (`pipeline::qualifiers`: `__maxnreg__` beside
    // `__launch_bounds__` or not positive, a `__block_size__` dimension not positive or its
    // second tuple beside `__cluster_dims__`): E1021
    KernelQualifierRefused,
    // `-fdevice-malloc-pool` left a module's allocations alone (`pipeline::malloc_pool`): a
    // function of a runtime allocation function's name that is not the runtime's: W1022
    MallocPoolNotUsed,
    // nvcc's dialect bridged in the CUDA C++ front end (`clang::shared_storage`): a `__shared__`
    // variable whose construction and destruction are left out, as nvcc leaves them: W1030
    SharedConstructionLeftOut,
    // Clang's refusals where nvcc's front end differs, recognised (`clang::diagnostics`): a
    // braced list assigned to `__half2` or `__nv_bfloat162` outside device code, which nvcc's
    // host compiler refuses too (E1031; device code takes nvcc's choice, `clang::nvcc_text`),
    // a `__device__` lambda whose captures' copy constructors are host-only copied in device
    // code (E1032), a name CUTLASS declares only where its SM100+ macros are, which it leaves
    // undefined under Clang (E1033)
    BracedAssignmentAmbiguous,
    LambdaCopyHostCapture,
    CutlassClangCuda,
    // A `#pragma message`'s text, a remark as nvcc's (`remark #20200-D`), shown without asking
    // and never made an error by `-Werror` (CUDA C++'s, where Clang warns; the kernel
    // language's preprocessor's): R1034
    PragmaMessage,
    // A warning of Clang's that nvcc's compilation does not give, neither its front end nor its
    // host compiler at the options' level (`front::cuda::host_warnings`): shown, and left a
    // warning by `-Werror` as nvcc's build has no error there (`--deny W1035` makes it one): W1035
    ClangOnlyWarning,
    // cdpc itself failed (a panic: a bug of cdpc's, never the input's fault), reported with a
    // reproducer (`driver::crash`): E1025
    InternalError,
}

impl Code {
    /// The code as written in messages: `E0307`, `W0209`.
    pub fn as_str(self) -> &'static str {
        use Code::*;
        match self {
            InvalidToken => "E0001",
            UnterminatedComment => "E0002",
            UnterminatedLiteral => "E0003",
            IntegerLiteralOutOfRange => "E0004",
            InvalidEscape => "E0005",
            SyntaxError => "E0006",
            UnsupportedSyntax => "E0007",
            InvalidUtf8 => "E0008",
            UnknownName => "E0100",
            Redefinition => "E0101",
            UnknownType => "E0102",
            InvalidDeclaration => "E0103",
            MissingDefinition => "E0104",
            TypeMismatch => "E0200",
            InvalidOperands => "E0201",
            NotAnLvalue => "E0202",
            CallArity => "E0203",
            NotCallable => "E0204",
            InvalidArraySize => "E0205",
            NotConstant => "E0206",
            AssignToConst => "E0207",
            MisplacedStatement => "E0208",
            MissingReturn => "W0209",
            DuplicateCase => "E0230",
            CaseNotConstant => "E0231",
            CaseRange => "E0232",
            JumpPastInitialization => "E0233",
            UndefinedLabel => "E0234",
            InvalidBitField => "E0235",
            BitFieldAddress => "E0236",
            FunctionPointerFromHost => "E0239",
            LaunchOfNonKernel => "E0300",
            LaunchArity => "E0301",
            LaunchArgumentType => "E0302",
            LaunchConfigType => "E0303",
            ParamBufferTooLarge => "E0304",
            ParamBufferOver4K => "W0305",
            StreamNeedsV2Abi => "E0306",
            LocalPointerToChild => "E0307",
            DeviceSynchronizeRemoved => "E0308",
            MissingRequiredFlag => "E0309",
            LaunchInHostDevice => "E0310",
            KernelReturnType => "E0311",
            KernelCalledDirectly => "E0312",
            GraphStreamMisuse => "E0313",
            GraphLaunchStream => "E0314",
            NeedsNewerArch => "E0315",
            NotInDeviceRuntimeLibrary => "W0316",
            ParentMemoryToChild => "W0317",
            NestingTooDeep => "E0400",
            SourceTooLarge => "E0401",
            UnknownDirective => "E0600",
            MalformedDirective => "E0601",
            IncludeNotFound => "E0602",
            ErrorDirective => "E0603",
            UnbalancedConditional => "E0604",
            InvalidIfExpression => "E0605",
            MacroArguments => "E0606",
            InvalidPaste => "E0607",
            PreprocessorLimit => "E0608",
            MacroRedefined => "W0609",
            WarningDirective => "W0610",
            HostHeaderSkipped => "R0611",
            AggregationRemark => "R0500",
            AggregatedPerWarp => "R0501",
            ThresholdRemark => "R0502",
            AggregatedPerGrid => "R0503",
            MallocPoolDecision => "R0504",
            OutputIsInput => "E0700",
            OutputNotCompilerOutput => "E0701",
            ToolTimedOut => "E0702",
            Interrupted => "E0703",
            OutputNotWritable => "E0704",
            InputNotReadable => "E0705",
            WorkFileFailed => "E0706",
            OptionUnsupported => "E0707",
            OptionInvalid => "E0708",
            OptionFallback => "W0709",
            DuplicateDeviceSymbol => "E0800",
            UndefinedDeviceSymbol => "E0801",
            LibraryNotFound => "E0802",
            DeviceLinkMissing => "E0803",
            ForeignLinkFailed => "E0804",
            OpenMpRuntimeMissing => "E0805",
            ProgramWithoutMain => "E0806",
            PtxOfLinkNotPacked => "W0801",
            OpenMpRegionsSerial => "W0807",
            HostCodeInDevice => "E0900",
            NotCompiledForDevice => "E0901",
            LegacyWarpIntrinsic => "W0902",
            LegacyWarpIntrinsicRefused => "E0903",
            HostConstantAddress => "E0910",
            InvalidLaunchBounds => "E0911",
            DeprecatedVectorType => "W0910",
            CudaCxxInKernelLanguage => "E0923",
            AsmUnknownConstraint => "E0960",
            AsmOperandOutOfRange => "E0961",
            AsmOutputNotLvalue => "E0962",
            AsmNotConstant => "E0963",
            AsmOperandType => "E0964",
            AsmConstraintModifier => "E0965",
            AsmClobber => "E0966",
            AsmTemplate => "E0967",
            AsmRefusedByPtxas => "E0968",
            ClangError => "E1000",
            ClangWarning => "W1001",
            ClangNotFound => "E1002",
            CudaHeadersNotFound => "E1003",
            ClangCrashed => "E1004",
            CacheSizeInvalid => "E1005",
            LaunchNotRecognised => "E1010",
            IrUnreadable => "E1011",
            IrInvalid => "E1012",
            IrWrongTriple => "E1013",
            IrWrongDataLayout => "E1014",
            ParamBufferWrittenAfterLaunch => "E1015",
            IrNoKernel => "W1016",
            IrSymbolName => "E1017",
            PtxNotText => "E1018",
            IrFunctionData => "E1019",
            ManagedAddressInInitializer => "E1020",
            KernelQualifierRefused => "E1021",
            MallocPoolNotUsed => "W1022",
            LlvmStopped => "E1023",
            ArchitectureLacksOperation => "E1024",
            InternalError => "E1025",
            SharedConstructionLeftOut => "W1030",
            BracedAssignmentAmbiguous => "E1031",
            LambdaCopyHostCapture => "E1032",
            CutlassClangCuda => "E1033",
            PragmaMessage => "R1034",
            ClangOnlyWarning => "W1035",
        }
    }

    /// Warnings are the codes that start with `W`, remarks those with `R`; everything else
    /// stops compilation.
    pub fn default_severity(self) -> Severity {
        if self.as_str().starts_with('R') {
            Severity::Remark
        } else if self.as_str().starts_with('W') {
            Severity::Warning
        } else {
            Severity::Error
        }
    }

    /// Every code, in numeric order.
    pub const ALL: &'static [Code] = &[
        Code::InvalidToken,
        Code::UnterminatedComment,
        Code::UnterminatedLiteral,
        Code::IntegerLiteralOutOfRange,
        Code::InvalidEscape,
        Code::SyntaxError,
        Code::UnsupportedSyntax,
        Code::InvalidUtf8,
        Code::UnknownName,
        Code::Redefinition,
        Code::UnknownType,
        Code::InvalidDeclaration,
        Code::MissingDefinition,
        Code::TypeMismatch,
        Code::InvalidOperands,
        Code::NotAnLvalue,
        Code::CallArity,
        Code::NotCallable,
        Code::InvalidArraySize,
        Code::NotConstant,
        Code::AssignToConst,
        Code::MisplacedStatement,
        Code::MissingReturn,
        Code::DuplicateCase,
        Code::CaseNotConstant,
        Code::CaseRange,
        Code::JumpPastInitialization,
        Code::UndefinedLabel,
        Code::InvalidBitField,
        Code::BitFieldAddress,
        Code::FunctionPointerFromHost,
        Code::LaunchOfNonKernel,
        Code::LaunchArity,
        Code::LaunchArgumentType,
        Code::LaunchConfigType,
        Code::ParamBufferTooLarge,
        Code::ParamBufferOver4K,
        Code::StreamNeedsV2Abi,
        Code::LocalPointerToChild,
        Code::ParentMemoryToChild,
        Code::DeviceSynchronizeRemoved,
        Code::MissingRequiredFlag,
        Code::LaunchInHostDevice,
        Code::KernelReturnType,
        Code::KernelCalledDirectly,
        Code::GraphStreamMisuse,
        Code::GraphLaunchStream,
        Code::NeedsNewerArch,
        Code::NotInDeviceRuntimeLibrary,
        Code::NestingTooDeep,
        Code::SourceTooLarge,
        Code::AggregationRemark,
        Code::AggregatedPerWarp,
        Code::ThresholdRemark,
        Code::AggregatedPerGrid,
        Code::MallocPoolDecision,
        Code::UnknownDirective,
        Code::MalformedDirective,
        Code::IncludeNotFound,
        Code::ErrorDirective,
        Code::UnbalancedConditional,
        Code::InvalidIfExpression,
        Code::MacroArguments,
        Code::InvalidPaste,
        Code::PreprocessorLimit,
        Code::MacroRedefined,
        Code::WarningDirective,
        Code::HostHeaderSkipped,
        Code::OutputIsInput,
        Code::OutputNotCompilerOutput,
        Code::ToolTimedOut,
        Code::Interrupted,
        Code::OutputNotWritable,
        Code::InputNotReadable,
        Code::WorkFileFailed,
        Code::OptionUnsupported,
        Code::OptionInvalid,
        Code::OptionFallback,
        Code::DuplicateDeviceSymbol,
        Code::UndefinedDeviceSymbol,
        Code::LibraryNotFound,
        Code::DeviceLinkMissing,
        Code::ForeignLinkFailed,
        Code::OpenMpRuntimeMissing,
        Code::ProgramWithoutMain,
        Code::PtxOfLinkNotPacked,
        Code::OpenMpRegionsSerial,
        Code::HostCodeInDevice,
        Code::NotCompiledForDevice,
        Code::LegacyWarpIntrinsic,
        Code::LegacyWarpIntrinsicRefused,
        Code::HostConstantAddress,
        Code::InvalidLaunchBounds,
        Code::DeprecatedVectorType,
        Code::CudaCxxInKernelLanguage,
        Code::AsmUnknownConstraint,
        Code::AsmOperandOutOfRange,
        Code::AsmOutputNotLvalue,
        Code::AsmNotConstant,
        Code::AsmOperandType,
        Code::AsmConstraintModifier,
        Code::AsmClobber,
        Code::AsmTemplate,
        Code::AsmRefusedByPtxas,
        Code::ClangError,
        Code::ClangWarning,
        Code::ClangNotFound,
        Code::CudaHeadersNotFound,
        Code::ClangCrashed,
        Code::CacheSizeInvalid,
        Code::LaunchNotRecognised,
        Code::IrUnreadable,
        Code::IrInvalid,
        Code::IrWrongTriple,
        Code::IrWrongDataLayout,
        Code::ParamBufferWrittenAfterLaunch,
        Code::IrNoKernel,
        Code::IrSymbolName,
        Code::PtxNotText,
        Code::IrFunctionData,
        Code::ManagedAddressInInitializer,
        Code::KernelQualifierRefused,
        Code::MallocPoolNotUsed,
        Code::LlvmStopped,
        Code::ArchitectureLacksOperation,
        Code::SharedConstructionLeftOut,
        Code::BracedAssignmentAmbiguous,
        Code::LambdaCopyHostCapture,
        Code::CutlassClangCuda,
        Code::PragmaMessage,
        Code::ClangOnlyWarning,
        Code::InternalError,
    ];

    /// The code written as `E0100` (any case), if it exists.
    pub fn parse(s: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A span of the source with an explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What about it (may be empty).
    pub message: String,
    /// The primary label is where the problem is; secondary labels give context.
    pub primary: bool,
    /// The file the span is in when it is not the main file (a header, or a macro definition
    /// from the command line); `None` for the main file, the only file without a preprocessor.
    pub file: Option<Arc<SourceFile>>,
}

/// A file other than the main one that a [`Label`] points into, with its text, so that
/// renderers can show its lines without reading anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown in diagnostics (`kernels.cuh`, `<cdpc>/cuda_runtime.h`, `<command line>`).
    pub name: String,
    /// The whole text.
    pub text: String,
}

/// One problem found in the source: a stable code, a severity, a message, labelled spans and
/// notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The stable code (`E0307`).
    pub code: Code,
    /// Error or warning, after the warning policy.
    pub severity: Severity,
    /// The headline.
    pub message: String,
    /// Spans with their explanations; one is primary.
    pub labels: Vec<Label>,
    /// Explanations without a span (`= note:` lines).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic of `code`'s default severity whose primary label points at `span`.
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { code, severity: code.default_severity(), message: message.into(), labels: vec![Label { span, message: String::new(), primary: true, file: None }], notes: Vec::new() }
    }

    /// Sets the text shown under the primary label.
    pub fn with_primary_message(mut self, message: impl Into<String>) -> Diagnostic {
        if let Some(label) = self.labels.iter_mut().find(|l| l.primary) {
            label.message = message.into();
        }
        self
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { span, message: message.into(), primary: false, file: None });
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// The span of the primary label.
    pub fn primary_span(&self) -> Span {
        self.labels.iter().find(|l| l.primary).map(|l| l.span).unwrap_or_default()
    }

    /// Whether the severity is [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// How many diagnostics one phase (lexing, parsing, sema) keeps; the rest are counted in a
/// note on the last one kept. Without a bound, a file of a million bad tokens would take
/// gigabytes of memory and minutes of rendering.
pub const MAX_DIAGNOSTICS: usize = 200;

/// Keeps the first [`MAX_DIAGNOSTICS`] of `list` (plus `dropped` already left out) and says on
/// the last one kept how many were left out.
pub fn cap(list: &mut Vec<Diagnostic>, dropped: usize) {
    let dropped = dropped + list.len().saturating_sub(MAX_DIAGNOSTICS);
    list.truncate(MAX_DIAGNOSTICS);
    if dropped > 0 {
        if let Some(last) = list.last_mut() {
            last.notes.push(format!("{dropped} more diagnostic{} not shown (at most {MAX_DIAGNOSTICS} are reported)", if dropped == 1 { " is" } else { "s are" }));
        }
    }
}

/// Collects diagnostics so a phase can report many problems and keep going. Keeps at most
/// [`MAX_DIAGNOSTICS`], counting the rest.
#[derive(Debug, Default)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
    dropped: usize,
    has_errors: bool,
}

impl Diagnostics {
    /// Adds one.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.has_errors |= diagnostic.is_error();
        if self.list.len() < MAX_DIAGNOSTICS {
            self.list.push(diagnostic);
        } else {
            self.dropped += 1;
        }
    }

    /// Whether any is an error.
    pub fn has_errors(&self) -> bool {
        self.has_errors
    }

    /// All of them, in the order reported.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        let mut list = self.list;
        cap(&mut list, self.dropped);
        list
    }

    /// Adds several.
    pub fn extend(&mut self, more: impl IntoIterator<Item = Diagnostic>) {
        more.into_iter().for_each(|d| self.push(d));
    }

    /// The diagnostics so far.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter()
    }

    /// How many are kept so far.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Where the list stands now, for [`Diagnostics::restore`].
    pub fn checkpoint(&self) -> (usize, usize, bool) {
        (self.list.len(), self.dropped, self.has_errors)
    }

    /// Forgets what was reported since `checkpoint` (a quiet attempt, such as trying an
    /// overload's template argument deduction, that is not taken).
    pub fn restore(&mut self, checkpoint: (usize, usize, bool)) {
        let (len, dropped, has_errors) = checkpoint;
        self.list.truncate(len);
        self.dropped = dropped;
        self.has_errors = has_errors;
    }

    /// The ones kept since there were `from` (to add context to them, such as the template
    /// instantiation they were found in).
    pub fn since_mut(&mut self, from: usize) -> &mut [Diagnostic] {
        let from = from.min(self.list.len());
        &mut self.list[from..]
    }
}

/// The words of the diagnostics that more than one front end gives (dynamic parallelism's, a
/// `#pragma message`'s): the kernel language's sema and preprocessor, Clang's messages for
/// CUDA C++ ([`crate::front::cuda::diagnostics`]) and the launch pipeline on LLVM IR
/// ([`crate::pipeline::param_buffer`]), so that one program says the same thing whichever way
/// it is compiled.
pub(crate) mod words {
    /// `R1034`'s headline for a `#pragma message` whose literal reads `text`, as nvcc words it.
    pub fn pragma_message(text: &str) -> String {
        format!("#pragma message: \"{text}\"")
    }

    /// `E0308`'s headline.
    pub const DEVICE_SYNCHRONIZE: &str = "`cudaDeviceSynchronize` cannot be called from device code";
    /// `E0308`'s primary label.
    pub const DEVICE_SYNCHRONIZE_LABEL: &str = "removed from the device runtime in CUDA 12 (CDP2)";
    /// `E0308`'s note.
    pub const DEVICE_SYNCHRONIZE_NOTE: &str = "to use a child grid's results, launch the work that needs them into `cudaStreamTailLaunch`: it runs after the parent grid and all its children finish";

    /// `W0305`'s headline; `name` is how the launched kernel is named (`` `child` ``).
    pub fn over_4k(name: &str, size: u64) -> String {
        format!("the parameters of {name} need {size} bytes, more than 4096")
    }
    /// `W0305`'s secondary label, at the kernel's parameters.
    pub const OVER_4K_DECLARED: &str = "parameters declared here";
    /// `W0305`'s notes.
    pub const OVER_4K_NOTES: [&str; 2] = ["CUDA 12.1 and newer accept up to 32764 bytes on sm_70+, but older runtimes refuse buffers over 4 KB", "`--strict-param-limit` makes this an error"];

    /// `E0304`'s headline; `name` as for [`over_4k`].
    pub fn too_large(name: &str, size: u64, limit: u64) -> String {
        format!("the parameters of {name} need {size} bytes, more than the {limit} a launch can pass")
    }
    /// `E0304`'s note for the target `sm` (`sm_90`) at `bits`-bit addresses (a target's
    /// parts, since `diag` sits below `target`'s users and imports nothing of the crate).
    pub fn too_large_note(sm: &dyn std::fmt::Display, bits: u32, limit: u64) -> String {
        format!("the limit for {sm} at {bits}-bit addresses is {limit} bytes; pass large data through a pointer to global memory")
    }
}

/// How warnings are treated: `-Werror`, `--deny CODE`, `--allow CODE`.
#[derive(Clone, Debug, Default)]
pub struct WarningPolicy {
    /// Every warning becomes an error, but `W1035` (a warning of Clang's that nvcc's build
    /// does not give: it makes none an error).
    pub deny_all: bool,
    /// These warnings become errors.
    pub deny: Vec<Code>,
    /// These warnings are not reported.
    pub allow: Vec<Code>,
    /// No warning is reported (nvcc's `-w`); errors and remarks asked for are.
    pub silence_all: bool,
}

impl WarningPolicy {
    /// Applies the policy: silenced warnings disappear, denied ones become errors.
    pub fn apply(&self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Error || !(self.allow.contains(&d.code) || self.silence_all && d.severity == Severity::Warning))
            .map(|mut d| {
                // `-Werror` leaves what nvcc's build gives no error for (W1035).
                let by_all = self.deny_all && d.code != Code::ClangOnlyWarning;
                if d.severity == Severity::Warning && (by_all || self.deny.contains(&d.code)) {
                    d.severity = Severity::Error;
                }
                d
            })
            .collect()
    }
}
