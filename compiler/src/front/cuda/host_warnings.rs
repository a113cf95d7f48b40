//! Which of Clang's warnings nvcc's compilation makes an error under `-Werror`, so that a
//! program nvcc builds with `-Xcompiler -Werror` or `-Werror all-warnings` (CMake's
//! `COMPILE_WARNING_AS_ERROR`) builds with cdpc too.
//!
//! nvcc's front end (EDG, in cudafe++ and cicc) gives warnings of its own (`#177-D`, a variable
//! never referenced), then g++ compiles the host code cudafe++ writes out: expressions with
//! every parenthesis written, unused declarations gone. So g++ never sees much of what it would
//! warn about in the source, and gives the rest only at the levels its options ask for
//! (`-Wall`, `-Wextra`). Clang in cdpc reads the source itself and warns about more, many by
//! default. nvcc's `-Xcompiler -Werror` makes g++'s warnings errors, its `-Werror all-warnings`
//! both its own and g++'s. cdpc does the same with [`TABLE`], measured with nvcc 13.5 and g++
//! 12.2 on a probe of each warning in host code, a file each (`bench/werror/compare.py probes`
//! compiles them with both; `compiler/tests/host_warning_options.rs` checks six against nvcc):
//!
//! - under the host compiler's `-Werror`, a warning g++ would not give at the options' level
//!   stays a warning, and so does every warning inside device code ([`werror_promotes`]);
//! - a warning that neither g++ (at that level) nor nvcc's front end gives is `W1035`, which
//!   `-Werror` leaves a warning ([`as_nvcc`]); the others stay `W1001`.
//!
//! A warning not in the table is left as it was: an error under either `-Werror`.
//!
//! Measured on host code; device code takes the same verdicts, though g++ never sees it (a
//! warning in device code that g++ gives only under `-Wall`, such as `-Wformat`, is `W1001`
//! when the options have `-Wall`, where nvcc's device pass would not warn). Where one Clang
//! flag stands for several statements of which nvcc warns about some (`-Wparentheses`: EDG's
//! `#187-D` for `if (a = 3)`, nothing for `a & b == c`), the table says what nvcc does for
//! none of them, so that cdpc never fails where nvcc builds.

use super::CudaCxxOptions;
use crate::diag::{Code, Diagnostic};

/// The least of g++'s warning levels at which it gives a warning on nvcc's host pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Without options.
    Default,
    /// With `-Wall`.
    Wall,
    /// With `-Wextra` (`-W`) besides `-Wall`.
    Wextra,
}

/// One of Clang's warnings, as nvcc's compilation gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostWarning {
    /// Clang's flag, as its messages end (`[-Wformat]`), without `-W`.
    pub flag: &'static str,
    /// The level at which g++ gives it on nvcc's host pass; `None`: never (cudafe++'s output
    /// does not have it).
    pub gcc: Option<Level>,
    /// Whether nvcc's front end gives it (EDG's number).
    pub edg: Option<u32>,
}

const fn w(flag: &'static str, gcc: Option<Level>, edg: Option<u32>) -> HostWarning {
    HostWarning { flag, gcc, edg }
}

use Level::{Default as D, Wall, Wextra};

/// Clang's warnings on host code and nvcc's answers (module docs): measured 2026-12-01 with
/// nvcc 13.5 (`-c -arch=sm_90`, without options, `-Xcompiler -Wall`, `-Xcompiler
/// -Wall,-Wextra`) and g++ 12.2, one probe a warning.
pub const TABLE: &[HostWarning] = &[
    // cudafe++'s output never has them for g++.
    w("unused-variable", None, Some(177)),
    w("unused-const-variable", None, Some(177)),
    w("unused-but-set-variable", None, Some(550)),
    w("parentheses", None, None),
    w("logical-op-parentheses", None, None),
    w("logical-not-parentheses", None, None),
    w("bitwise-op-parentheses", None, None),
    w("shift-op-parentheses", None, None),
    w("parentheses-equality", None, None),
    w("dangling-else", None, None),
    w("sometimes-uninitialized", None, None),
    w("empty-body", None, None),
    w("self-assign", None, None),
    w("self-move", None, None),
    w("unused-local-typedef", None, None),
    w("unused-private-field", None, None),
    w("unused-lambda-capture", None, None),
    w("unneeded-internal-declaration", None, None),
    w("reorder-ctor", None, None),
    w("literal-conversion", None, None),
    w("constant-logical-operand", None, None),
    w("string-plus-int", None, None),
    w("array-bounds", None, None),
    w("writable-strings", None, Some(2464)),
    w("inconsistent-missing-override", None, None),
    w("overloaded-virtual", None, Some(997)),
    w("format-security", None, None),
    w("for-loop-analysis", None, None),
    w("vla-cxx-extension", None, None),
    // g++ gives them under `-Wall`.
    w("unused-value", Some(Wall), Some(174)),
    w("unused-comparison", Some(Wall), Some(174)),
    w("unused-function", Some(Wall), Some(177)),
    w("unused-label", Some(Wall), Some(177)),
    w("uninitialized", Some(Wall), Some(549)),
    w("format", Some(Wall), None),
    w("format-insufficient-args", Some(Wall), Some(224)),
    w("format-extra-args", Some(Wall), Some(225)),
    w("format-invalid-specifier", Some(Wall), Some(226)),
    w("switch", Some(Wall), None),
    w("sizeof-pointer-div", Some(Wall), None),
    w("sizeof-pointer-memaccess", Some(Wall), None),
    w("tautological-compare", Some(Wall), None),
    w("comment", Some(Wall), None),
    w("mismatched-new-delete", Some(Wall), None),
    w("memset-transposed-args", Some(Wall), None),
    w("unsequenced", Some(Wall), None),
    w("char-subscripts", Some(Wall), None),
    w("delete-non-abstract-non-virtual-dtor", Some(Wall), None),
    w("int-in-bool-context", Some(Wall), None),
    w("pessimizing-move", Some(Wall), None),
    w("infinite-recursion", Some(Wall), None),
    w("bool-operation", Some(Wall), None),
    w("pointer-bool-conversion", Some(Wall), None),
    w("string-compare", Some(Wall), None),
    w("dynamic-class-memaccess", Some(Wall), None),
    w("range-loop-construct", Some(Wall), None),
    // In nvcc's preprocessing of the source by g++, before cudafe++.
    w("unknown-pragmas", Some(Wall), None),
    // g++ gives them under `-Wextra`.
    w("unused-parameter", Some(Wextra), None),
    w("unused-but-set-parameter", Some(Wextra), Some(550)),
    w("missing-field-initializers", Some(Wextra), None),
    w("deprecated-copy-with-user-provided-copy", Some(Wextra), None),
    w("redundant-move", Some(Wextra), None),
    w("tautological-constant-out-of-range-compare", Some(Wextra), None),
    // g++ gives them without options.
    w("return-type", Some(D), Some(940)),
    w("return-stack-address", Some(D), Some(1056)),
    w("unused-result", Some(D), Some(2809)),
    w("shift-count-overflow", Some(D), Some(63)),
    w("division-by-zero", Some(D), Some(39)),
    w("integer-overflow", Some(D), Some(61)),
    w("constant-conversion", Some(D), Some(69)),
    w("deprecated-declarations", Some(D), None),
    w("null-conversion", Some(D), None),
    w("null-arithmetic", Some(D), None),
    w("sizeof-array-argument", Some(D), None),
    w("enum-compare", Some(D), None),
];

/// The g++ warning level the host compiler's options ask for (`-Xcompiler -Wall,-Wextra`).
pub fn level(host_args: &[String]) -> Level {
    let has = |flag: &str| host_args.iter().any(|a| a == flag);
    match (has("-Wall"), has("-Wextra") || has("-W")) {
        (true, true) => Level::Wextra,
        (true, false) => Level::Wall,
        _ => Level::Default,
    }
}

/// Whether g++ gives `warning` at `level`.
fn gcc_gives(warning: &HostWarning, level: Level) -> bool {
    warning.gcc.is_some_and(|at| at <= level)
}

/// The host compiler's option that makes its warnings errors (`-Xcompiler -Werror`).
pub const WERROR: &str = "-Werror";

/// Whether `warning`, of the host side, is an error under the host compiler's `-Werror` among
/// `cxx`'s host options: a Clang warning (`W1001`) that g++ gives at the options' level, or
/// one the table does not know. Clang is not given the option itself, which would make errors
/// of the warnings inside device code too before cdpc drops them (nvcc's g++ never sees device
/// code: KLAP's kernels failed `-Xcompiler -Wall,-Wextra,-Werror` on `-Wsign-compare`).
pub fn werror_promotes(warning: &Diagnostic, cxx: &CudaCxxOptions) -> bool {
    if warning.code != Code::ClangWarning || warning.severity != crate::diag::Severity::Warning || !cxx.host_args.iter().any(|a| a == WERROR) {
        return false;
    }
    let level = level(&cxx.host_args);
    known(&warning.message).is_none_or(|w| gcc_gives(w, level))
}

/// What a `W1035` says of itself.
const NOTE: &str = "nvcc's build gives no warning here (neither its front end nor its host compiler with these options), so `-Werror` leaves this one a warning; `--deny W1035` makes it an error";

/// Clang's flag at the end of a warning's message (`... [-Wformat]`).
fn flag_of(message: &str) -> Option<&str> {
    message.strip_suffix(']')?.rsplit_once(" [-W").map(|(_, flag)| flag)
}

/// The table's entry for the Clang warning whose message is `message`, by its flag.
fn known(message: &str) -> Option<&'static HostWarning> {
    let flag = flag_of(message)?;
    TABLE.iter().find(|w| w.flag == flag)
}

/// `diagnostics` with each Clang warning nvcc would not give at all (neither its front end nor
/// g++ at the level of `cxx`'s host options) as `W1035`, which `-Werror` leaves a warning.
pub fn as_nvcc(mut diagnostics: Vec<Diagnostic>, cxx: &CudaCxxOptions) -> Vec<Diagnostic> {
    let level = level(&cxx.host_args);
    for d in &mut diagnostics {
        if d.code != Code::ClangWarning {
            continue;
        }
        if known(&d.message).is_some_and(|w| w.edg.is_none() && !gcc_gives(w, level)) {
            d.code = Code::ClangOnlyWarning;
            d.notes.push(NOTE.to_string());
        }
    }
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_flag_once() {
        let mut flags: Vec<&str> = TABLE.iter().map(|w| w.flag).collect();
        flags.sort_unstable();
        let before = flags.len();
        flags.dedup();
        assert_eq!(flags.len(), before);
    }

    #[test]
    fn the_level_is_what_the_host_options_ask_for() {
        assert_eq!(level(&args(&[])), Level::Default);
        assert_eq!(level(&args(&["-fPIC", "-Wall"])), Level::Wall);
        assert_eq!(level(&args(&["-Wall", "-Wextra"])), Level::Wextra);
        assert_eq!(level(&args(&["-Wextra"])), Level::Default);
    }

    #[test]
    fn only_the_host_compilers_werror_makes_errors_and_only_of_what_g_plus_plus_gives() {
        let warning = |m: &str| Diagnostic::new(Code::ClangWarning, Span::new(0, 0), m);
        let cxx = |a: &[&str]| CudaCxxOptions { host_args: args(a), ..Default::default() };
        let format = warning("format specifies type 'char *' but the argument has type 'int' [-Wformat]");
        let unused = warning("unused variable 'x' [-Wunused-variable]");
        let returns = warning("non-void function does not return a value [-Wreturn-type]");
        let unknown = warning("something new [-Wnew-in-clang-23]");
        assert!(!werror_promotes(&returns, &cxx(&["-Wall"])));
        assert!(werror_promotes(&returns, &cxx(&["-Werror"])) && werror_promotes(&unknown, &cxx(&["-Werror"])));
        assert!(!werror_promotes(&format, &cxx(&["-Werror"])) && werror_promotes(&format, &cxx(&["-Wall", "-Werror"])));
        assert!(!werror_promotes(&unused, &cxx(&["-Wall", "-Wextra", "-Werror"])));
        let w1035 = Diagnostic::new(Code::ClangOnlyWarning, Span::new(0, 0), "x [-Wdangling-else]");
        assert!(!werror_promotes(&w1035, &cxx(&["-Werror"])));
    }

    #[test]
    fn warnings_nvcc_lacks_become_w1035() {
        let warning = |m: &str| Diagnostic::new(Code::ClangWarning, Span::new(0, 0), m);
        let said = vec![
            warning("format specifies type 'char *' but the argument has type 'int' [-Wformat]"),
            warning("expression result unused [-Wunused-value]"),
            warning("add explicit braces to avoid dangling else [-Wdangling-else]"),
            warning("something new [-Wnew-in-clang-23]"),
            Diagnostic::new(Code::ClangError, Span::new(0, 0), "x [-Wformat]"),
        ];
        let codes = |cxx: &CudaCxxOptions| as_nvcc(said.clone(), cxx).iter().map(|d| d.code).collect::<Vec<_>>();
        let plain = CudaCxxOptions::default();
        assert_eq!(codes(&plain), [Code::ClangOnlyWarning, Code::ClangWarning, Code::ClangOnlyWarning, Code::ClangWarning, Code::ClangError]);
        let wall = CudaCxxOptions { host_args: args(&["-Wall"]), ..Default::default() };
        assert_eq!(codes(&wall), [Code::ClangWarning, Code::ClangWarning, Code::ClangOnlyWarning, Code::ClangWarning, Code::ClangError]);
    }
}
