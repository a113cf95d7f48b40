//! What nvcc's front end reads and Clang's lexer and parser do not, made Clang's on the way in.
//!
//! The shim passes every file the linked Clang reads through [`rewrite`] (a file system wrapped
//! around the real one, [`may_need_rewriting_c`], [`rewrite_c`]); a Clang program run as a
//! process (`--clang`) reads the files as they are. Each rule below is nvcc 13.5's behaviour as
//! measured (`nvcc -dc -arch=sm_90`, the tests below hold each case), and only text outside
//! comments, string and character literals is looked at:
//!
//! 1. **Spaced launch brackets**, `kernel<< <grid, block>> >(args)`, as Visual Studio's
//!    formatter writes them: nvcc takes `<<`, then blanks or a one-line `/* */` comment, then
//!    `<` (and the same for `>>` and `>`), but not across a line break, and not `< < <`;
//!    `operator<< <T>(...)` and `A<B<C<int>> >` stay what C++ makes them. The third bracket
//!    moves next to the other two. A spaced closer is rewritten only after an opener whose
//!    launch it closes: the first `>>`, blanks, `>` at the opener's bracket depth.
//! 2. **A literal touching a reserved name**, `extern "C"__global__ void k()`: C++11 lexes
//!    `"C"__global__` as one user-defined literal; nvcc preprocesses with its host compiler,
//!    which takes a suffix that names a macro as a separate token (`-Wliteral-suffix`). A blank
//!    is put between a string literal and a name right after it that starts with `__` or `_`
//!    and a capital: names reserved to the implementation, which no program's literal operator
//!    may have, and which are CUDA's qualifiers and the predefined macros (`__FILE__`).
//! 3. **`%` in inline assembly**, `asm("mov.u64 %0, %globaltimer;" : "=l"(t))`: nvcc passes a
//!    `%` followed by a name through to the PTX, where Clang accepts only operands (`%0`,
//!    `%[name]`, a modifier letter and an operand) and `%%` and says "invalid % escape". In an
//!    `asm` statement's template, `%` then a letter that is not a modifier of an operand (not
//!    followed by a digit or `[`) becomes `%%`. (nvcc refuses a modifier it does not know, `%r1`,
//!    as Clang does.)
//! 4. **Operands without a comma**, `asm(... :: "r"(v) "l"(p) : "memory")`: nvcc takes a list of
//!    `asm` operands whose commas are missing; a `,` is put after an operand's `)` that blanks
//!    and another operand's constraint string follow.
//!
//! 5. **A pragma in an object-like macro**, `#define PRAGMA_UNROLL #pragma unroll` and then
//!    `PRAGMA_UNROLL` alone on a line: nvcc preprocesses to text first, where the expansion
//!    stands at the start of its line and is read again as the directive; Clang expands it
//!    inside the compilation, as the tokens `# pragma unroll` ("expected expression"). The
//!    replacement becomes C99's operator, `#define PRAGMA_UNROLL _Pragma("unroll")`, which
//!    means the same wherever the macro is used alone on its line (where nvcc takes it).
//! 6. **The built-in variables redeclared with CUDA's types**, `extern const dim3 blockDim;`
//!    and `extern const uint3 threadIdx;` (as code bases write for their host pass): nvcc
//!    declares them so itself, Clang with types of its own ("redeclaration of 'blockDim' with a
//!    different type"). Such a declaration (`extern`, `const`, `__device__`, the type and the
//!    name alone) becomes blanks, so that Clang's own declaration stands (Clang's wrapper
//!    header makes the same declarations of `curand_mtgp32_kernel.h` its own types' instead).
//!
//! 7. **A braced list assigned to `__half2` or `__nv_bfloat162`** in device code, `x = {};` or
//!    `x = {a, b};`: the list converts as well to `operator=`'s `const __half2 &` as to its
//!    `const __half2 &&` and `const __half2_raw &` (each a user-defined conversion), which
//!    Clang calls ambiguous; nvcc's front end takes the copy assignment, and its host compiler
//!    refuses the same line in host and `__host__ __device__` code. After the declaration of
//!    the raw assignment in CUDA's `cuda_fp16.h` (`cuda_bf16.h`), on its line, comes a
//!    `__device__` assignment from a braced list, [`BRACED_LIST_ASSIGNMENTS`]: its parameter
//!    is a class whose constructors are the type's own from a list (none, or two halves), so the
//!    list converts to it exactly as well as to the others, and Clang's last rule between
//!    candidates otherwise equal, the caller's side first, takes it in device code and, in host
//!    code, cannot call it. It assigns what the type's constructor makes of the list: nvcc's
//!    copy assignment. Host and `__host__ __device__` code is refused as before (Clang's host
//!    side); any other argument (a value, `{raw}`, a list of one or of three) does not convert
//!    to the class and is assigned as before. The rule looks for the declaration's exact text, as
//!    CUDA 13 spells it, comments included.
//!
//! 8. **The include guards of the headers Clang's wrapper includes and nvcc's compilation does
//!    not** (`cuda.h`, `curand.h`, `curand_mtgp32.h`, `curand_mtgp32_kernel.h`:
//!    [`super::hidden_macros::NOT_NVCCS`] and what they include): with nvcc, a program's
//!    `#ifdef CURAND_H_` or `#ifdef __cuda_cuda_h__` is false unless the program included the
//!    header, and NVIDIA's samples' `helper_cuda.h` compiles a `static` function for each
//!    library's header it finds so (with Clang's, `-Wall -Werror` failed on the unused ones
//!    where nvcc builds). Each header's guard, [`WRAPPER_ONLY_GUARDS`], becomes a name of cdpc's
//!    (`__CDPC_GUARD_` and the name) and the guard's own name is defined at the end of the
//!    file; cdpc's additions, read after the wrapper, undefine it where the header was read so.
//!    A program that includes the header defines it again, without its declarations twice.
//!
//! Rules 1 and 6 keep the text's length; the others make it longer by the characters they put in
//! (Clang accepts a buffer longer than the file's size, never a shorter one). No rule moves a
//! line break, so Clang's lines, `__LINE__`, debug lines and a precompiled header's checks of
//! its inputs (the file's size and time) are the file's own; a column after a rewritten place
//! on its line may differ by what was moved or put in. A file with none of the patterns (no
//! `<<` or `>>` followed by blanks and the same bracket, no `"_`, no `asm`: [`may_need_rewriting`])
//! is Clang's buffer untouched, and so is any file holding a NUL byte (a precompiled header,
//! bitcode).

/// `text` with nvcc's forms made Clang's (module docs), or `None` when nothing changes.
pub fn rewrite(text: &[u8]) -> Option<Vec<u8>> {
    if !may_need_rewriting(text) {
        return None;
    }
    let mut out = text.to_vec();
    let mut moved = launch_brackets(&mut out);
    let replaced = directive_and_declaration_edits(&out);
    if !replaced.is_empty() {
        let mut new = Vec::with_capacity(out.len() + 32 * replaced.len());
        let mut from = 0;
        for (range, with) in replaced {
            new.extend_from_slice(&out[from..range.start]);
            new.extend_from_slice(&with);
            from = range.end;
        }
        new.extend_from_slice(&out[from..]);
        out = new;
        moved = true;
    }
    if let Some(guarded) = private_guards(&out) {
        out = guarded;
        moved = true;
    }
    if let Some(with_lists) = braced_list_assignments(&out) {
        out = with_lists;
        moved = true;
    }
    let inserted = insertions(&out);
    if inserted.is_empty() {
        return moved.then_some(out);
    }
    let mut grown = Vec::with_capacity(out.len() + inserted.len());
    let mut from = 0;
    for (at, byte) in inserted {
        grown.extend_from_slice(&out[from..at]);
        grown.push(byte);
        from = at;
    }
    grown.extend_from_slice(&out[from..]);
    Some(grown)
}

/// Rule 8 (module docs): the guard lines of each header that Clang's CUDA wrapper includes and
/// nvcc's compilation does not, as CUDA 13 writes them, and the guard's name.
pub const WRAPPER_ONLY_GUARDS: [(&str, &str); 4] = [
    ("#ifndef __cuda_cuda_h__\n#define __cuda_cuda_h__\n", "__cuda_cuda_h__"),
    ("#if !defined(CURAND_H_)\n#define CURAND_H_\n", "CURAND_H_"),
    ("#ifndef CURAND_MTGP32_H\n#define CURAND_MTGP32_H\n", "CURAND_MTGP32_H"),
    ("#if !defined CURAND_MTGP32_KERNEL_H\n#define CURAND_MTGP32_KERNEL_H\n", "CURAND_MTGP32_KERNEL_H"),
];

/// The name rule 8 guards a header with in place of its own `guard`.
pub fn private_guard(guard: &str) -> String {
    format!("__CDPC_GUARD_{guard}")
}

/// Rule 8 (module docs): `text` guarded by cdpc's name and defining its own guard at its end,
/// or `None` where it has none of [`WRAPPER_ONLY_GUARDS`] at a line's start.
fn private_guards(text: &[u8]) -> Option<Vec<u8>> {
    let (at, lines, guard) = WRAPPER_ONLY_GUARDS.iter().find_map(|(lines, guard)| {
        let at = text.windows(lines.len()).position(|w| w == lines.as_bytes())?;
        line_start(text, at).then_some((at, lines, guard))
    })?;
    let private = private_guard(guard);
    let mut out = Vec::with_capacity(text.len() + 2 * private.len() + guard.len() + 16);
    out.extend_from_slice(&text[..at]);
    out.extend_from_slice(format!("#ifndef {private}\n#define {private}\n").as_bytes());
    out.extend_from_slice(&text[at + lines.len()..]);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(format!("#define {guard}\n").as_bytes());
    Some(out)
}

/// Rule 7 (module docs): each declaration of CUDA's raw assignment (the type, its half, the
/// declaration as `cuda_fp16.h` and `cuda_bf16.h` spell it) and what follows it on its line.
pub const BRACED_LIST_ASSIGNMENTS: [(&str, &str, &str); 2] = [
    ("__half2", "__half", "__CUDA_HOSTDEVICE__ __half2 &operator=(const __half2_raw &h2r);"),
    ("__nv_bfloat162", "__nv_bfloat16", "__CUDA_HOSTDEVICE__ __nv_bfloat162 &operator=(const __nv_bfloat162_raw &h2r);"),
];

/// The device-side assignment from a braced list that rule 7 puts after `ty`'s raw assignment:
/// one line's text, no line break.
pub(crate) fn braced_list_assignment(ty: &str, half: &str) -> String {
    format!(
        " struct __cdpc_braced_list {{ {half} x, y; __device__ __cdpc_braced_list() : x(), y() {{}} \
         __device__ __cdpc_braced_list(const {half} &__a, const {half} &__b) : x(__a), y(__b) {{}} }}; \
         __device__ {ty} &operator=(__cdpc_braced_list &&__l) {{ this->x = __l.x; this->y = __l.y; return *this; }}"
    )
}

/// Rule 7 (module docs): `text` with the assignments from a braced list put in, or `None`
/// where it declares no raw assignment of CUDA's.
fn braced_list_assignments(text: &[u8]) -> Option<Vec<u8>> {
    let mut inserted: Vec<(usize, String)> = Vec::new();
    for (ty, half, declaration) in BRACED_LIST_ASSIGNMENTS {
        let mut from = 0;
        let assignment = braced_list_assignment(ty, half);
        while let Some(p) = text[from..].windows(declaration.len()).position(|w| w == declaration.as_bytes()) {
            let end = from + p + declaration.len();
            // A text rewritten already keeps its assignment.
            if !text[end..].starts_with(assignment.as_bytes()) {
                inserted.push((end, assignment.clone()));
            }
            from = end;
        }
    }
    if inserted.is_empty() {
        return None;
    }
    inserted.sort_by_key(|(at, _)| *at);
    let mut out = Vec::with_capacity(text.len() + inserted.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (at, with) in inserted {
        out.extend_from_slice(&text[from..at]);
        out.extend_from_slice(with.as_bytes());
        from = at;
    }
    out.extend_from_slice(&text[from..]);
    Some(out)
}

/// Rule 1 (module docs), in place; whether anything changed.
fn launch_brackets(text: &mut [u8]) -> bool {
    let mut changed = false;
    let mut next = 0;
    // The positions of `<<` that open a launch whose closer is still to come, with the
    // bracket depth at the opener.
    let mut open: Option<(usize, i32)> = None;
    let mut depth = 0i32;
    let mut last_word_is_operator = false;
    while let Some(token) = next_token(text, &mut next) {
        // Literals are no code; comments never come.
        let Token::Code(at) = token else { continue };
        let c = text[at];
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        if c == b'<' && text.get(at + 1) == Some(&b'<') {
            let after = at + 2;
            if text.get(after) == Some(&b'<') {
                // `<<<` as Clang lexes it; a launch whose closer may be spaced.
                if !last_word_is_operator {
                    open = Some((at, depth));
                }
                next = after + 1;
                last_word_is_operator = false;
                continue;
            }
            if text.get(after) != Some(&b'=') && !last_word_is_operator {
                if let Some(third) = blanks_then(text, after, b'<') {
                    text.copy_within(after..third, after + 1);
                    text[after] = b'<';
                    changed = true;
                    open = Some((at, depth));
                    next = third + 1;
                    last_word_is_operator = false;
                    continue;
                }
            }
            next = after;
            last_word_is_operator = false;
            continue;
        }
        if c == b'>' && text.get(at + 1) == Some(&b'>') {
            let after = at + 2;
            if matches!(open, Some((_, d)) if d == depth) {
                if text.get(after) == Some(&b'>') {
                    open = None;
                    next = after + 1;
                    continue;
                }
                if let Some(third) = blanks_then(text, after, b'>') {
                    text.copy_within(after..third, after + 1);
                    text[after] = b'>';
                    changed = true;
                    open = None;
                    next = third + 1;
                    continue;
                }
            }
            next = after;
            continue;
        }
        if c == b';' {
            // A launch ends at its statement's end at the latest.
            open = None;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let end = word_end(text, at);
            last_word_is_operator = &text[at..end] == b"operator";
            next = end;
            continue;
        }
        if !c.is_ascii_whitespace() {
            last_word_is_operator = false;
        }
    }
    changed
}

/// The `asm` statement being read: the bracket depth at its `(` and how many `:` have been read
/// at its own level.
struct Asm {
    depth: i32,
    colons: u32,
}

/// Rules 2 to 4 (module docs): where to put which byte, in increasing order of position.
fn insertions(text: &[u8]) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    let mut next = 0;
    let mut depth = 0i32;
    let mut asm: Option<Asm> = None;
    // After `asm` and its qualifiers, before its `(`.
    let mut asm_keyword = false;
    while let Some(token) = next_token(text, &mut next) {
        let at = match token {
            Token::Code(at) => at,
            Token::Str { start, end, raw } => {
                if let Some(a) = &asm {
                    if !raw && a.colons == 0 && depth == a.depth + 1 {
                        percent_escapes(text, start + 1, end.saturating_sub(1).max(start + 1), &mut out);
                    }
                }
                if end > start + 1 && text[end - 1] == b'"' && reserved_name_at(text, end) {
                    out.push((end, b' '));
                }
                asm_keyword = false;
                continue;
            }
            Token::Other => {
                asm_keyword = false;
                continue;
            }
        };
        let c = text[at];
        match c {
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = word_end(text, at);
                let word = &text[at..end];
                if matches!(word, b"asm" | b"__asm__" | b"__asm") {
                    asm_keyword = asm.is_none();
                } else if !(asm_keyword && matches!(word, b"volatile" | b"__volatile__" | b"__volatile" | b"goto" | b"inline")) {
                    asm_keyword = false;
                }
                next = end;
                continue;
            }
            b'(' => {
                if asm_keyword {
                    asm = Some(Asm { depth, colons: 0 });
                }
                depth += 1;
            }
            b')' | b']' | b'}' => {
                depth -= 1;
                if let Some(a) = &asm {
                    if depth <= a.depth {
                        asm = None;
                    } else if c == b')' && depth == a.depth + 1 && a.colons > 0 {
                        // An operand's `)`: another operand's constraint after blanks.
                        let mut j = at + 1;
                        while j < text.len() && matches!(text[j], b' ' | b'\t') {
                            j += 1;
                        }
                        if text.get(j) == Some(&b'"') {
                            out.push((at + 1, b','));
                        }
                    }
                }
            }
            b'[' | b'{' => depth += 1,
            b':' => {
                if let Some(a) = &mut asm {
                    if depth == a.depth + 1 {
                        a.colons += 1;
                    }
                }
            }
            b';' => asm = None,
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            asm_keyword = false;
        }
    }
    out
}

/// Rules 5 and 6 (module docs): the ranges of `text` to replace, in order, with their new text.
fn directive_and_declaration_edits(text: &[u8]) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut next = 0;
    // The words of the current declaration (since the last `;`, `{` or `}`), and whether
    // anything else (punctuation, a literal) was in it.
    let mut words: Vec<std::ops::Range<usize>> = Vec::new();
    let mut other = false;
    while let Some(token) = next_token(text, &mut next) {
        let at = match token {
            Token::Code(at) => at,
            Token::Str { .. } | Token::Other => {
                other = true;
                continue;
            }
        };
        let c = text[at];
        if c.is_ascii_alphabetic() || c == b'_' {
            let end = word_end(text, at);
            words.push(at..end);
            next = end;
            continue;
        }
        match c {
            b'#' if line_start(text, at) => {
                if let Some(replacement) = pragma_macro(text, at) {
                    out.push(replacement);
                }
                // A directive is no part of a declaration; its line is skipped.
                next = line_end(text, at);
                continue;
            }
            b';' => {
                if !other {
                    if let Some(replacement) = builtin_redeclaration(text, &words, at) {
                        out.push(replacement);
                    }
                }
            }
            c if c.is_ascii_whitespace() => continue,
            b'{' | b'}' => {}
            _ => {
                other = true;
                continue;
            }
        }
        words.clear();
        other = false;
    }
    out
}

/// Whether only blanks stand between the line's start and `at`.
fn line_start(text: &[u8], at: usize) -> bool {
    text[..at].iter().rev().take_while(|&&c| c != b'\n').all(|&c| c == b' ' || c == b'\t')
}

/// Rule 5 at the directive whose `#` is at `at`: `#define NAME #pragma TEXT` (an object-like
/// macro, on one line) gives the range of `#pragma TEXT` and `_Pragma("TEXT")`.
fn pragma_macro(text: &[u8], at: usize) -> Option<(std::ops::Range<usize>, Vec<u8>)> {
    let end = text[at..].iter().position(|&c| c == b'\n').map_or(text.len(), |p| at + p);
    let mut line = &text[at..end];
    if let Some(without) = line.strip_suffix(b"\r") {
        line = without;
    }
    if line.ends_with(b"\\") {
        return None; // continued on the next line
    }
    let blanks = |i: usize| i + line[i..].iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    let mut i = blanks(1);
    i = line[i..].starts_with(b"define").then_some(i + 6)?;
    let name_at = blanks(i);
    if name_at == i {
        return None;
    }
    let name_end = word_end(line, name_at);
    if name_end == name_at || line.get(name_end) == Some(&b'(') {
        return None; // no name, or a function-like macro
    }
    let hash = blanks(name_end);
    if hash == name_end || line.get(hash) != Some(&b'#') {
        return None;
    }
    let pragma = blanks(hash + 1);
    if !line[pragma..].starts_with(b"pragma") || word_end(line, pragma) != pragma + 6 {
        return None;
    }
    let body = String::from_utf8_lossy(&line[pragma + 6..]).trim().to_string();
    if body.is_empty() || body.contains("//") || body.contains("/*") {
        return None;
    }
    let escaped = body.replace('\\', "\\\\").replace('"', "\\\"");
    Some((at + hash..at + line.len(), format!("_Pragma(\"{escaped}\")").into_bytes()))
}

/// Rule 6 for the declaration whose words are `words`, ended by the `;` at `end`: when it
/// redeclares a built-in variable with CUDA's type, its range and as many blanks (line breaks
/// kept), so that Clang's own declaration stands. Blanks keep the text's length: Clang's `-E`
/// garbles the end of a file whose buffer is longer than the file (measured on
/// `curand_mtgp32_kernel.h`, which every compilation reads and which declares these so).
fn builtin_redeclaration(text: &[u8], words: &[std::ops::Range<usize>], end: usize) -> Option<(std::ops::Range<usize>, Vec<u8>)> {
    let word = |r: &std::ops::Range<usize>| &text[r.clone()];
    let (name, rest) = words.split_last()?;
    let (ty, qualifiers) = rest.split_last()?;
    if !matches!((word(ty), word(name)), (b"uint3", b"threadIdx" | b"blockIdx") | (b"dim3", b"blockDim" | b"gridDim")) {
        return None;
    }
    let quals: Vec<&[u8]> = qualifiers.iter().map(word).collect();
    let allowed = |q: &&[u8]| matches!(*q, b"extern" | b"const" | b"__device__");
    let start = words.first()?.start;
    let blanks = text[start..=end].iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }).collect();
    (quals.contains(&&b"extern"[..]) && quals.contains(&&b"const"[..]) && quals.iter().all(allowed)).then_some((start..end + 1, blanks))
}

/// Rule 3 in an `asm` template's text `text[from..to]`: a `%` before a letter that is no
/// operand's modifier gets a second `%`.
fn percent_escapes(text: &[u8], from: usize, to: usize, out: &mut Vec<(usize, u8)>) {
    let mut i = from;
    while i < to {
        match text[i] {
            b'\\' => i += 2,
            b'%' if i + 1 < to && text[i + 1] == b'%' => i += 2,
            b'%' if i + 1 < to && text[i + 1].is_ascii_alphabetic() => {
                let after = text.get(i + 2).copied().filter(|_| i + 2 < to);
                if !after.is_some_and(|a| a.is_ascii_digit() || a == b'[') {
                    out.push((i, b'%'));
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
}

/// Whether a name reserved to the implementation (`__x`, `_X`) starts at `at`.
fn reserved_name_at(text: &[u8], at: usize) -> bool {
    text.get(at) == Some(&b'_') && text.get(at + 1).is_some_and(|&c| c == b'_' || c.is_ascii_uppercase())
}

/// Whether `text` may hold one of the module's patterns (in code or not): a spaced bracket, a
/// string literal's `"` before `_`, or `asm`; the cheap test that most files fail, so that only
/// the others are lexed. Never for a text with a NUL byte: a precompiled header or bitcode,
/// which Clang reads through the same file system.
pub fn may_need_rewriting(text: &[u8]) -> bool {
    // Clang reads its precompiled headers and bitcode (libdevice) through the same file system:
    // binary files, which hold NUL bytes and must never change; no source holds one.
    if text.contains(&0) {
        return false;
    }
    if text.windows(2).any(|w| w == b"\"_") || text.windows(3).any(|w| w == b"asm") {
        return true;
    }
    // Rule 8: the headers only Clang's wrapper includes.
    if WRAPPER_ONLY_GUARDS.iter().any(|(lines, _)| text.windows(lines.len()).any(|w| w == lines.as_bytes())) {
        return true;
    }
    // Rule 7: CUDA's headers of half types (which hold `asm` as well).
    if BRACED_LIST_ASSIGNMENTS.iter().any(|(_, _, d)| text.windows(d.len()).any(|w| w == d.as_bytes())) {
        return true;
    }
    // Rules 5 and 6: `pragma` on a line with `define`; `dim3` or `uint3` on a line with `extern`.
    let on_a_line_with = |word: &[u8], with: &[u8]| {
        let mut from = 0;
        while let Some(p) = text[from..].windows(word.len()).position(|w| w == word) {
            let at = from + p;
            let start = text[..at].iter().rposition(|&c| c == b'\n').map_or(0, |n| n + 1);
            if text[start..at].windows(with.len()).any(|w| w == with) {
                return true;
            }
            from = at + 1;
        }
        false
    };
    if on_a_line_with(b"pragma", b"define") || on_a_line_with(b"dim3", b"extern") || on_a_line_with(b"uint3", b"extern") {
        return true;
    }
    let mut at = 0;
    while let Some(p) = text[at..].windows(2).position(|w| (w[0] == b'<' || w[0] == b'>') && w[1] == w[0]) {
        let after = at + p + 2;
        if blanks_then(text, after, text[at + p]).is_some() {
            return true;
        }
        at = at + p + 1;
    }
    false
}

/// Where `want` is after blanks and one-line block comments from `at` (at least one of them),
/// on the same line.
fn blanks_then(text: &[u8], mut at: usize, want: u8) -> Option<usize> {
    let start = at;
    loop {
        match text.get(at)? {
            b' ' | b'\t' | b'\x0b' | b'\x0c' => at += 1,
            b'/' if text.get(at + 1) == Some(&b'*') => {
                let close = text[at + 2..].windows(2).position(|w| w == b"*/")? + at + 2;
                if text[at..close].contains(&b'\n') {
                    return None;
                }
                at = close + 2;
            }
            &c if c == want && at > start => return Some(at),
            _ => return None,
        }
    }
}

fn word_end(text: &[u8], mut at: usize) -> usize {
    while at < text.len() && (text[at].is_ascii_alphanumeric() || text[at] == b'_') {
        at += 1;
    }
    at
}

/// What [`next_token`] finds in a C++ source.
pub(super) enum Token {
    /// One byte of code (not in a comment or a literal), at this position.
    Code(usize),
    /// A string literal from `start` (its `"`) to `end` (after its closing `"`); `raw` for
    /// `R"delim(...)delim"`.
    Str { start: usize, end: usize, raw: bool },
    /// A character literal or a number (with its digit separators and suffixes).
    Other,
}

/// The token of `text` at `*at`, comments skipped, `*at` then standing after it; `None` at the
/// end. The one walk over a source that both rules' passes take.
pub(super) fn next_token(text: &[u8], at: &mut usize) -> Option<Token> {
    loop {
        let start = *at;
        let c = *text.get(start)?;
        let next = text.get(start + 1).copied();
        match c {
            b'/' if next == Some(b'/') => *at = line_end(text, start),
            b'/' if next == Some(b'*') => {
                *at = text[start + 2..].windows(2).position(|w| w == b"*/").map_or(text.len(), |p| start + 2 + p + 2);
            }
            b'"' => {
                let raw = raw_string_prefix(text, start);
                *at = if raw { raw_string_end(text, start) } else { quoted_end(text, start, b'"') };
                return Some(Token::Str { start, end: *at, raw });
            }
            b'\'' if !digit_separator(text, start) => {
                *at = quoted_end(text, start, b'\'');
                return Some(Token::Other);
            }
            b'0'..=b'9' => {
                let mut end = start + 1;
                while end < text.len()
                    && (text[end].is_ascii_alphanumeric() || text[end] == b'.' || text[end] == b'_' || (text[end] == b'\'' && end + 1 < text.len() && text[end + 1].is_ascii_alphanumeric()))
                {
                    end += 1;
                }
                *at = end;
                return Some(Token::Other);
            }
            _ => {
                *at = start + 1;
                return Some(Token::Code(start));
            }
        }
    }
}

/// The end of a `//` comment: its newline, unless a backslash continues it.
fn line_end(text: &[u8], mut at: usize) -> usize {
    while at < text.len() {
        if text[at] == b'\n' {
            let mut back = at;
            if back > 0 && text[back - 1] == b'\r' {
                back -= 1;
            }
            if back == 0 || text[back - 1] != b'\\' {
                return at;
            }
        }
        at += 1;
    }
    text.len()
}

/// The position after a literal opened by `quote` at `at` (its end of line if unclosed).
fn quoted_end(text: &[u8], at: usize, quote: u8) -> usize {
    let mut i = at + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// Whether the `'` at `at` separates digits (`1'000`): it follows a digit or a number's letter.
fn digit_separator(text: &[u8], at: usize) -> bool {
    if at == 0 || !text[at - 1].is_ascii_alphanumeric() {
        return false;
    }
    // Walk back over the word: a number starts with a digit; `u8'c'` or `L'c'` is a literal.
    let mut start = at;
    while start > 0 && (text[start - 1].is_ascii_alphanumeric() || text[start - 1] == b'_' || text[start - 1] == b'\'') {
        start -= 1;
    }
    text[start].is_ascii_digit()
}

/// Whether the `"` at `at` opens a raw string (`R"`, `u8R"`, `LR"`, ...).
fn raw_string_prefix(text: &[u8], at: usize) -> bool {
    if at == 0 || text[at - 1] != b'R' {
        return false;
    }
    let start = word_start(text, at - 1);
    matches!(&text[start..at], b"R" | b"u8R" | b"uR" | b"UR" | b"LR")
}

fn word_start(text: &[u8], mut at: usize) -> usize {
    while at > 0 && (text[at - 1].is_ascii_alphanumeric() || text[at - 1] == b'_') {
        at -= 1;
    }
    at
}

/// The position after the raw string opened at `at` (`"delim( ... )delim"`).
fn raw_string_end(text: &[u8], at: usize) -> usize {
    let Some(open) = text[at + 1..].iter().take(17).position(|&c| c == b'(') else {
        return quoted_end(text, at, b'"');
    };
    let delim = &text[at + 1..at + 1 + open];
    let mut close = Vec::with_capacity(delim.len() + 2);
    close.push(b')');
    close.extend_from_slice(delim);
    close.push(b'"');
    let body = at + 1 + open + 1;
    text[body..].windows(close.len()).position(|w| w == close.as_slice()).map_or(text.len(), |p| body + p + close.len())
}

/// Whole texts this thread's Clang runs read in place of a file's own, found by the file's
/// bytes ([`replace_texts`]): CUDA's headers named by path in Clang's CUDA wrapper
/// ([`super::wrapper_includes`]), and a run after an error cdpc mends by rewriting the source
/// ([`super::shared_storage`]). Each replacement holds this module's rules already.
#[derive(Clone, Debug, Default)]
pub struct Replacements {
    /// By the original's length and hash: the replacement.
    texts: std::collections::HashMap<(usize, u64), Vec<u8>>,
}

impl Replacements {
    /// `original`'s bytes are read as `replacement`.
    pub fn insert(&mut self, original: &[u8], replacement: Vec<u8>) {
        self.texts.insert((original.len(), text_key(original)), replacement);
    }

    /// Every replacement of `other` too.
    pub fn extend(&mut self, other: &Replacements) {
        self.texts.extend(other.texts.iter().map(|(k, v)| (*k, v.clone())));
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The replacement of `text`; a text of no replaced length is not hashed.
    fn get(&self, text: &[u8]) -> Option<&Vec<u8>> {
        if !self.texts.keys().any(|(len, _)| *len == text.len()) {
            return None;
        }
        self.texts.get(&(text.len(), text_key(text)))
    }
}

thread_local! {
    static REPLACED: std::cell::RefCell<Option<std::sync::Arc<Replacements>>> = const { std::cell::RefCell::new(None) };
}

fn text_key(text: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// This thread's replacements (`in_process::compile` hands them to Clang's thread).
pub fn replacements() -> Option<std::sync::Arc<Replacements>> {
    REPLACED.with(|r| r.borrow().clone())
}

/// Sets this thread's replacements until the guard is dropped (the previous ones back then).
pub fn replace_texts(with: Option<std::sync::Arc<Replacements>>) -> ReplacedGuard {
    ReplacedGuard(REPLACED.with(|r| r.replace(with)))
}

/// Puts the previous replacements back when dropped ([`replace_texts`]).
pub struct ReplacedGuard(Option<std::sync::Arc<Replacements>>);

impl Drop for ReplacedGuard {
    fn drop(&mut self) {
        let previous = self.0.take();
        REPLACED.with(|r| *r.borrow_mut() = previous);
    }
}

/// The replacement of `text` on this thread, if any.
fn replaced(text: &[u8]) -> Option<Vec<u8>> {
    REPLACED.with(|r| r.borrow().as_ref().and_then(|m| m.get(text).cloned()))
}

/// The shim's test before copying a file: [`may_need_rewriting`] of the `len` bytes at `text`.
///
/// # Safety
/// `text` points at `len` readable bytes.
pub unsafe extern "C" fn may_need_rewriting_c(text: *const u8, len: usize) -> std::ffi::c_int {
    if text.is_null() || len == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    std::panic::catch_unwind(|| may_need_rewriting(bytes) || replaced(bytes).is_some()).unwrap_or(false) as std::ffi::c_int
}

/// Receives [`rewrite_c`]'s text: `user`, the bytes and their length, valid during the call.
pub type TakeFn = unsafe extern "C" fn(*mut std::ffi::c_void, *const u8, usize);

/// The shim's rewrite of a file: [`rewrite`] of the `len` bytes at `text`; when anything
/// changes, `take(user, new_text, new_len)` is called once, and 1 returned; else 0.
///
/// # Safety
/// `text` points at `len` readable bytes; `take` may be called with `user`.
pub unsafe extern "C" fn rewrite_c(text: *const u8, len: usize, take: TakeFn, user: *mut std::ffi::c_void) -> std::ffi::c_int {
    if text.is_null() || len == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    match std::panic::catch_unwind(|| replaced(bytes).or_else(|| rewrite(bytes))) {
        Ok(Some(new)) => {
            // SAFETY: the caller's contract; `new` outlives the call.
            unsafe { take(user, new.as_ptr(), new.len()) };
            1
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    fn after(source: &str) -> String {
        String::from_utf8(rewrite(source.as_bytes()).unwrap_or_else(|| source.as_bytes().to_vec())).unwrap()
    }

    /// Rule 8: a header only Clang's wrapper includes is guarded by cdpc's name, its lines where
    /// they were, and defines its own guard at its end; its guard elsewhere than at a line's
    /// start, or in another spelling, is left alone.
    #[test]
    fn wrapper_only_headers_are_guarded_by_cdpcs_name() {
        let header = "/* curand */\n#if !defined(CURAND_H_)\n#define CURAND_H_\ntypedef int curandStatus_t;\n#endif /* !defined(CURAND_H_) */\n";
        let out = after(header);
        assert_eq!(out, "/* curand */\n#ifndef __CDPC_GUARD_CURAND_H_\n#define __CDPC_GUARD_CURAND_H_\ntypedef int curandStatus_t;\n#endif /* !defined(CURAND_H_) */\n#define CURAND_H_\n");
        // Read again (a program's own `#include`): nothing more changes.
        assert_eq!(after(&out), out);
        for (lines, guard) in super::WRAPPER_ONLY_GUARDS {
            let text = format!("{lines}int x;\n#endif");
            assert_eq!(after(&text), format!("#ifndef __CDPC_GUARD_{guard}\n#define __CDPC_GUARD_{guard}\nint x;\n#endif\n#define {guard}\n"));
        }
        for unchanged in ["int a; #if !defined(CURAND_H_)\n#define CURAND_H_\n#endif\n", "#ifndef CURAND_H_\n#define CURAND_H_\n#endif\n"] {
            assert_eq!(after(unchanged), unchanged);
        }
    }

    /// Rule 7: after CUDA's declaration of `__half2`'s (`__nv_bfloat162`'s) raw assignment, on
    /// its line, the device-side assignment from a braced list; nothing else changes, no line
    /// moves, and a text without the declaration (another spelling of it) is left alone.
    #[test]
    fn half_pairs_get_a_device_assignment_from_a_braced_list() {
        for (ty, half, declaration) in super::BRACED_LIST_ASSIGNMENTS {
            let source = format!("struct {ty} {{\n    {declaration}\n    int z;\n}};\n");
            let out = after(&source);
            assert_eq!(out.lines().count(), source.lines().count(), "{out}");
            let line = out.lines().nth(1).unwrap();
            assert!(line.starts_with(&format!("    {declaration} struct __cdpc_braced_list {{ {half} x, y;")), "{line}");
            assert!(line.ends_with(&format!("__device__ {ty} &operator=(__cdpc_braced_list &&__l) {{ this->x = __l.x; this->y = __l.y; return *this; }}")), "{line}");
            assert!(out.ends_with("\n    int z;\n};\n"), "{out}");
            assert_eq!(rewrite(out.as_bytes()), None, "a second rewrite changes nothing");
            let other = source.replace("&h2r", "&raw");
            assert_eq!(rewrite(other.as_bytes()), None);
        }
    }

    #[test]
    fn spaced_brackets_that_nvcc_takes_become_three_in_a_row() {
        // Each accepted by `nvcc -dc -arch=sm_90` 13.5.
        assert_eq!(after("k<< <1, 1>> >(p);"), "k<<< 1, 1>>> (p);");
        assert_eq!(after("k<<<1, 1>> >(p);"), "k<<<1, 1>>> (p);");
        assert_eq!(after("k<< <1, 1>>>(p);"), "k<<< 1, 1>>>(p);");
        assert_eq!(after("k<< /*c*/ <1, 1>> >(p);"), "k<<< /*c*/ 1, 1>>> (p);");
        assert_eq!(after("k<< <1, (4>>1)>> >(p);"), "k<<< 1, (4>>1)>>> (p);");
        assert_eq!(after("kt<1><< <g, b>>  >(p);"), "kt<1><<< g, b>>>  (p);");
        assert_eq!(after("s << <GRID_SIZE, TB_SIZE >> > (d_v, d_v_r);"), "s <<< GRID_SIZE, TB_SIZE >>>  (d_v, d_v_r);");
    }

    #[test]
    fn what_nvcc_refuses_or_cpp_means_stays() {
        // nvcc refuses these two ("expected an expression").
        assert_eq!(after("k< < <1, 1> > >(p);"), "k< < <1, 1> > >(p);");
        assert_eq!(after("k<<\n<1, 1>>\n>(p);"), "k<<\n<1, 1>>\n>(p);");
        // C++ that nvcc compiles as C++.
        assert_eq!(after("operator<< <S>(o, S());"), "operator<< <S>(o, S());");
        assert_eq!(after("A<A<A<int>> > x; a << b;"), "A<A<A<int>> > x; a << b;");
        assert_eq!(after("x <<= 1; y << 2 << (3 >> 1) > z;"), "x <<= 1; y << 2 << (3 >> 1) > z;");
        // A closer with no opener before it.
        assert_eq!(after("f(a << b); A<B<int>> > c;"), "f(a << b); A<B<int>> > c;");
    }

    #[test]
    fn a_pragma_in_an_object_like_macro_becomes_the_operator() {
        // Each accepted by `nvcc -c -arch=sm_90` 13.5 with the macro alone on its line.
        assert_eq!(after("#define PRAGMA_UNROLL #pragma unroll\n"), "#define PRAGMA_UNROLL _Pragma(\"unroll\")\n");
        assert_eq!(after("  # define U4  # pragma unroll 4\r\nU4\n"), "  # define U4  _Pragma(\"unroll 4\")\r\nU4\n");
        assert_eq!(after("#define M #pragma message(\"a\\\\b\")\n"), "#define M _Pragma(\"message(\\\"a\\\\\\\\b\\\")\")\n");
        // A function-like macro, a continued line, a comment, and what is no directive stay.
        for same in ["#define F(x) #pragma unroll\n", "#define C #pragma \\\n unroll\n", "#define D #pragma unroll // four\n", "/*\n#define P #pragma unroll\n*/", "x = 1; #define Q #pragma unroll\n"]
        {
            assert_eq!(after(same), same);
        }
    }

    #[test]
    fn built_in_variables_redeclared_with_cudas_types_get_clangs() {
        // Blanked, the text's length and lines kept: Clang's own declarations stand.
        let source = "extern const dim3 blockDim;\nextern const uint3 threadIdx;\nconst extern __device__ uint3 blockIdx;\nextern const\n  dim3 gridDim ; int x;";
        let blank = |s: &str| s.chars().map(|c| if c == '\n' { c } else { ' ' }).collect::<String>();
        assert_eq!(after(source), format!("{} int x;", blank(&source[..source.len() - " int x;".len()])));
        // Other declarations of these names, or with other types, are the program's own.
        for same in ["extern const uint3 blockDim;", "extern dim3 blockDim;", "const dim3 blockDim = dim3(1);", "extern const dim3 blockDim, gridDim;", "void f(extern const dim3 blockDim);"] {
            assert_eq!(after(same), same);
        }
    }

    #[test]
    fn comments_and_literals_are_not_code() {
        let source = "// k<< <1, 1>> >(p);\n/* k<< <1,1>> >() */ \"k<< <1>> >\" 'a' R\"x(<< <)x\" 1'000 << 2;";
        assert_eq!(after(source), source);
        assert_eq!(after("s = \"<< <\"; k<< <1, 1>> >(p);"), "s = \"<< <\"; k<<< 1, 1>>> (p);");
    }

    #[test]
    fn a_template_closed_with_a_blank_inside_the_launch_is_left_as_written() {
        // The closer is the first `>> >` at the opener's bracket depth.
        assert_eq!(after("k<< <f(A<B<int>> >()), 1>> >(p);"), "k<<< f(A<B<int>> >()), 1>>> (p);");
    }

    #[test]
    fn arbitrary_bytes_keep_the_rewrites_invariants() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let len = (state % 64) as usize;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push(b"<> /*\"'\nR(x)1;_%a:"[(state % 18) as usize]);
            }
            crate::fuzzing::nvcc_text(&bytes);
        }
    }
    #[test]
    fn a_literal_touching_a_reserved_name_is_two_tokens() {
        // nvcc (its host compiler's preprocessor, -Wliteral-suffix) compiles each.
        assert_eq!(after("extern \"C\"__global__ void k() {}"), "extern \"C\" __global__ void k() {}");
        assert_eq!(after("const char *s = \"a\"__FILE__;"), "const char *s = \"a\" __FILE__;");
        // A literal operator's own suffix, and text in comments, stay.
        assert_eq!(after("auto x = \"abc\"_s; // \"C\"__global__"), "auto x = \"abc\"_s; // \"C\"__global__");
    }

    #[test]
    fn a_percent_before_a_name_in_an_asm_template_is_literal() {
        let nvcc = "asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t));";
        assert_eq!(after(nvcc), "asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));");
        let pred = "__asm__ __volatile__(\"{ .reg .pred %p; setp.ne.u32 %p, %1, 0; }\" :: \"r\"(a));";
        assert_eq!(after(pred), "__asm__ __volatile__(\"{ .reg .pred %%p; setp.ne.u32 %%p, %1, 0; }\" :: \"r\"(a));");
        // Operands, modifiers, `%%` and the operands' own strings stay; so does printf.
        let kept = "asm(\"mov.u32 %0, %%laneid; %c1 %l[x]\" : \"=r\"(a) : \"n\"(3)); printf(\"%s %d\", s, d);";
        assert_eq!(after(kept), kept);
    }

    #[test]
    fn asm_operands_without_a_comma_get_one() {
        let nvcc = "asm volatile(\"st.release.sys.global.u8 [%1], %0;\" ::\"r\"(v) \"l\"(p) : \"memory\");";
        assert_eq!(after(nvcc), "asm volatile(\"st.release.sys.global.u8 [%1], %0;\" ::\"r\"(v), \"l\"(p) : \"memory\");");
        let kept = "asm(\"add.u32 %0, %1, %2;\" : \"=r\"(a) : \"r\"((int)b), \"r\"(f(c)));";
        assert_eq!(after(kept), kept);
    }
    #[test]
    fn binary_files_are_never_rewritten() {
        // A precompiled header's bytes that look like a literal touching a name, or `asm`.
        let pch = b"CPCH\0\x01\"__x asm(\"%g\") k<< <1>> >\0";
        assert!(!super::may_need_rewriting(pch));
        assert_eq!(rewrite(pch), None);
    }
}
