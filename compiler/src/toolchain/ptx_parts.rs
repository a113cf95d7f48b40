//! A module's PTX cut into parts that ptxas assembles at the same time, for nvlink to link.
//!
//! ptxas assembles one module on one core, in time that grows with the module's lines (about
//! 25 to 50 µs a line on the development machine), and most of a large module's build is that
//! one run. The functions of a module are independent of each other for ptxas once each part
//! declares what it uses of the others (`.extern`), as the files of a `-rdc` program are: so
//! [`split`] cuts a module's PTX, as LLVM's NVPTX back end writes it, into parts of about the
//! same size, each with whole functions, and the build assembles the parts at once (`ptxas -c`
//! each) and joins them with nvlink: into the cubin, with libcudadevrt, as it links one
//! module anyway, or into one relocatable object (`nvlink -r`) for `-dc` and `--emit obj`.
//!
//! **What stays together.** Each function is whole in one part. A `.shared` variable, a managed
//! one (`.attribute`), a texture, surface or sampler, and any module-scope variable the parser
//! does not know, is in the part of every function that uses it (CUDA gives `extern
//! __shared__` to the dynamic shared array alone, and Clang refuses it for any other
//! `__shared__` variable, so no part declares another's); a variable whose initializer names a
//! function or variable of the module is in that one's part. Every other variable is in the
//! part of its first user and is `.extern` in the others.
//!
//! **Names.** A name of internal linkage (no `.visible`) that another part uses must become a
//! symbol the link resolves. In a linked cubin it becomes `.visible` under its own name: the
//! module's names are unique in it, and the only other code is libcudadevrt's. In a relocatable
//! object, which other modules join, an internal kernel or variable keeps its name and linkage
//! (host code names a `static` one: nvcc's `__nv_static_` kernels are registered by name), so it
//! stays in the part of every function that names it, as a `.shared` variable does; an internal
//! device function (`.func`) is made `.visible` with a suffix from a hash of the module's PTX
//! ([`suffix`]), so that it cannot meet another module's function of the same name. The
//! register-cap marks ([`super::register_cap`]) go with their kernels, under their new names.
//!
//! **What is not cut.** PTX with debug information (`.file`, `.loc`, `.section`), with a
//! statement the parser does not know, or with fewer than two groups of functions: [`split`]
//! returns `None` and the module is assembled whole, as before. A part the tools refuse makes
//! the build assemble the module whole, whose errors are the ones reported
//! ([`super::StartedBuild::finish`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use super::register_cap;

/// How a module may be cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    /// At most this many parts.
    pub most: usize,
    /// Each part at least this many lines of function bodies (0: any size, `--split-compile`).
    pub min_lines: usize,
}

/// The smallest part worth a ptxas run of its own when cdpc decides alone: 10 to 20 ms of
/// ptxas on the development machine, at least what starting another ptxas costs (about 10 ms
/// of a core), so that a build whose other cores are busy loses little and one with a free core
/// gains (over the samples on the 2-core development machine, 2026-12-01: 1.024x with one core
/// idle, 1.0x with it busy; 200 lines gained more idle, 1.037x, and lost up to 13% on small
/// files with the core busy; BENCHMARKS.md).
pub const MIN_LINES: usize = 400;

impl Parts {
    /// One part: the module whole.
    pub const WHOLE: Parts = Parts { most: 1, min_lines: 0 };

    /// cdpc's own choice: at most 4 parts, each of at least [`MIN_LINES`] lines. Not the
    /// machine's cores: the cubin is the same bytes on every machine (its functions' code
    /// depends on which of them share a part, through the calls between parts).
    pub const AUTO: Parts = Parts { most: 4, min_lines: MIN_LINES };

    /// nvcc's `--split-compile N`: at most `N` parts of any size, `0` as many as the machine
    /// has cores (then the cubin depends on the machine, as nvcc's does).
    pub fn at_most(n: usize) -> Parts {
        let most = if n == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { n };
        Parts { most, min_lines: 0 }
    }
}

/// One top-level statement of the PTX.
#[derive(Debug)]
struct Statement<'a> {
    /// Its lines, each with its line end.
    lines: Vec<&'a str>,
    kind: Kind,
    /// The module-scope name it defines or declares.
    name: Option<&'a str>,
    /// The names its text mentions (identifiers outside comments).
    mentions: BTreeSet<&'a str>,
    /// It has no linkage word (`.visible`, `.weak`, `.extern`): the name is the module's own.
    internal: bool,
    /// A kernel (`.entry`).
    entry: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Comment lines and blank lines.
    Trivia,
    /// `.version`, `.target`, `.address_size`.
    Preamble,
    /// `.extern .func` or `.extern .entry`, or a variable's `.extern` declaration.
    Extern,
    /// A function declared ahead of its definition, without `.extern`.
    Forward,
    /// A function with its body.
    Function,
    /// A module-scope variable that any part may name (`.global`, `.const`).
    Variable,
    /// A module-scope variable that stays with its users (`.shared`, managed, `.tex`, ...).
    Bound,
}

/// The module's parts, each whole PTX, or `None` where it is not cut (module docs). For a
/// relocatable object (`relocatable`: the parts joined by `nvlink -r`, then linked with other
/// modules), each internal device function gets a suffix from a hash of the PTX ([`suffix`]),
/// so that it cannot meet another module's function of the same name, and each internal
/// kernel and variable stays, under its own name, with the functions that name it.
pub fn split(ptx: &str, parts: Parts, relocatable: bool) -> Option<Vec<String>> {
    // Two parts of `min_lines` each need at least twice that many lines: most modules are
    // smaller, and are not parsed.
    if parts.most < 2 || ptx.lines().count() < 2 * parts.min_lines.max(1) {
        return None;
    }
    let statements = parse(ptx)?;
    let functions: Vec<usize> = (0..statements.len()).filter(|&i| statements[i].kind == Kind::Function).collect();
    if functions.len() < 2 {
        return None;
    }
    // The statement that defines each name of the module.
    let mut defined: HashMap<&str, usize> = HashMap::new();
    for (i, s) in statements.iter().enumerate() {
        if let (Some(name), Kind::Function | Kind::Variable | Kind::Bound) = (s.name, s.kind) {
            if defined.insert(name, i).is_some() {
                return None;
            }
        }
    }
    // A relocatable module's internal kernels and variables keep their names and linkage (host
    // code may name them: a `static` kernel's launch, a `static __device__` variable's copy),
    // so they stay with every function that names them.
    let kept: HashSet<&str> = if relocatable {
        statements.iter().filter(|s| s.internal && (matches!(s.kind, Kind::Variable | Kind::Bound) || (s.kind == Kind::Function && s.entry))).filter_map(|s| s.name).collect()
    } else {
        HashSet::new()
    };
    let mut groups = UnionFind::new(statements.len());
    for (i, s) in statements.iter().enumerate() {
        if s.name.is_some_and(|n| kept.contains(n)) && s.kind != Kind::Forward {
            let name = s.name?;
            for &f in &functions {
                if f != i && statements[f].mentions.contains(name) {
                    groups.join(i, f);
                }
            }
        }
        match s.kind {
            Kind::Bound => {
                for &f in &functions {
                    if statements[f].mentions.contains(s.name?) {
                        groups.join(i, f);
                    }
                }
            }
            Kind::Variable => {
                for name in &s.mentions {
                    if let Some(&j) = defined.get(name).filter(|&&j| j != i) {
                        groups.join(i, j);
                    }
                }
            }
            _ => {}
        }
    }
    // A variable free to go anywhere goes with its first user (or the first function).
    let mut home: Vec<usize> = (0..statements.len()).collect();
    for (i, s) in statements.iter().enumerate() {
        if s.kind == Kind::Variable && groups.alone(i) {
            let name = s.name?;
            home[i] = functions.iter().copied().find(|&f| statements[f].mentions.contains(name)).unwrap_or(functions[0]);
        }
    }
    // Each group's weight: its functions' lines.
    let mut weight: HashMap<usize, usize> = HashMap::new();
    for &f in &functions {
        *weight.entry(groups.find(f)).or_default() += statements[f].lines.len();
    }
    let mut order: Vec<(usize, usize)> = weight.into_iter().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // The most parts whose smallest (largest group first into the lightest part) is big enough.
    let (count, part_of) = (2..=parts.most.min(order.len())).rev().find_map(|n| {
        let mut load = vec![0usize; n];
        let mut part_of: HashMap<usize, usize> = HashMap::new();
        for &(group, w) in &order {
            let lightest = (0..n).min_by_key(|&p| (load[p], p)).expect("at least two parts");
            load[lightest] += w;
            part_of.insert(group, lightest);
        }
        (load.iter().min().copied().unwrap_or(0) >= parts.min_lines.max(1)).then_some((n, part_of))
    })?;
    let roots: Vec<usize> = (0..statements.len()).map(|i| groups.find(i)).collect();
    let owners: Vec<Option<usize>> = (0..statements.len())
        .map(|i| match statements[i].kind {
            Kind::Function | Kind::Variable | Kind::Bound => Some(part_of.get(&roots[home[i]]).copied().unwrap_or(0)),
            _ => None,
        })
        .collect();
    let renamed: HashMap<&str, String> = if relocatable {
        let suffix = suffix(ptx);
        statements.iter().filter(|s| s.internal && matches!(s.kind, Kind::Function | Kind::Forward)).filter_map(|s| s.name).filter(|n| !kept.contains(n)).map(|n| (n, format!("{n}{suffix}"))).collect()
    } else {
        HashMap::new()
    };
    let function_owner: HashMap<&str, usize> = statements.iter().enumerate().filter(|(_, s)| s.kind == Kind::Function).filter_map(|(i, s)| Some((s.name?, owners[i]?))).collect();
    Some((0..count).map(|p| rename(&write_part(&statements, &owners, &function_owner, &kept, p), &renamed)).collect())
}

/// The suffix of a relocatable module's internal names: `__cdpc_part_` and 16 hex digits of
/// the FNV-1a hash of its PTX (the same module, the same names).
pub fn suffix(ptx: &str) -> String {
    let hash = ptx.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("__cdpc_part_{hash:016x}")
}

/// `ptx` with each name of `renamed` (an identifier outside comments, not a register or a
/// directive) written as its new name.
fn rename(ptx: &str, renamed: &HashMap<&str, String>) -> String {
    if renamed.is_empty() {
        return ptx.to_string();
    }
    let mut out = String::with_capacity(ptx.len() + ptx.len() / 8);
    for line in ptx.split_inclusive('\n') {
        // A register cap's mark names its kernel in a comment.
        if let Some(rest) = line.trim_start().strip_prefix(register_cap::MARK) {
            let mut words: Vec<&str> = rest.split_whitespace().collect();
            if let Some(new) = words.last().and_then(|k| renamed.get(k)) {
                words.pop();
                out.push_str(&format!("{} {} {new}\n", register_cap::MARK, words.join(" ")));
                continue;
            }
        }
        let mut copied = 0;
        for name in names(without_comment(line)) {
            if let Some(new) = renamed.get(&line[name.clone()]) {
                out.push_str(&line[copied..name.start]);
                out.push_str(new);
                copied = name.end;
            }
        }
        out.push_str(&line[copied..]);
    }
    out
}

/// The PTX of part `p`.
fn write_part(statements: &[Statement<'_>], owners: &[Option<usize>], function_owner: &HashMap<&str, usize>, kept: &HashSet<&str>, p: usize) -> String {
    // What the part's own statements name.
    let mut named: HashSet<&str> = HashSet::new();
    for (i, s) in statements.iter().enumerate() {
        if owners[i] == Some(p) {
            named.extend(s.mentions.iter().copied());
        }
    }
    let mut out = String::new();
    let mut declared: HashSet<&str> = HashSet::new();
    for (i, s) in statements.iter().enumerate() {
        if let Some(name) = s.name.filter(|n| kept.contains(n)) {
            // Internal and with all its users here, or not in this part at all.
            let here = match s.kind {
                Kind::Forward => function_owner.get(name) == Some(&p),
                _ => owners[i] == Some(p),
            };
            if here {
                s.lines.iter().for_each(|l| out.push_str(l));
            }
            continue;
        }
        match s.kind {
            Kind::Preamble | Kind::Extern => s.lines.iter().for_each(|l| out.push_str(l)),
            Kind::Trivia => {
                for line in &s.lines {
                    // A register cap's mark goes with its kernel.
                    let kernel = line.trim().strip_prefix(register_cap::MARK).and_then(|rest| rest.split_whitespace().nth(1));
                    if kernel.is_none_or(|k| function_owner.get(k).is_none_or(|&o| o == p)) {
                        out.push_str(line);
                    }
                }
            }
            Kind::Forward => {
                let name = s.name.unwrap_or_default();
                match function_owner.get(name) {
                    Some(&o) if o == p => push_visible(&mut out, &s.lines),
                    Some(_) if named.contains(name) && declared.insert(name) => push_extern(&mut out, &s.lines, false),
                    Some(_) => {}
                    None => s.lines.iter().for_each(|l| out.push_str(l)),
                }
            }
            Kind::Function => {
                let name = s.name.unwrap_or_default();
                if owners[i] == Some(p) {
                    push_visible(&mut out, &s.lines);
                } else if named.contains(name) && declared.insert(name) {
                    push_extern(&mut out, header(&s.lines), false);
                }
            }
            Kind::Variable | Kind::Bound => {
                if owners[i] == Some(p) {
                    push_visible(&mut out, &s.lines);
                } else if s.name.is_some_and(|n| named.contains(n)) {
                    push_extern(&mut out, &s.lines, true);
                }
            }
        }
    }
    out
}

/// The leading linkage words a statement may have.
const LINKAGE: [&str; 4] = [".visible", ".extern", ".weak", ".common"];

/// `lines` with internal linkage made `.visible` (a `.weak` or `.visible` statement as it is).
fn push_visible(out: &mut String, lines: &[&str]) {
    let first = lines[0];
    let text = first.trim_start();
    if LINKAGE.iter().any(|l| starts_with_word(text, l)) {
        out.push_str(first);
    } else {
        out.push_str(".visible ");
        out.push_str(text);
    }
    lines[1..].iter().for_each(|l| out.push_str(l));
}

/// `lines` as an `.extern` declaration: its linkage words replaced, a variable's initializer
/// left out, ended by `;`.
fn push_extern(out: &mut String, lines: &[&str], variable: bool) {
    let mut text: String = lines.concat();
    let mut rest = text.trim_start();
    while let Some(word) = LINKAGE.iter().find(|l| starts_with_word(rest, l)) {
        rest = rest[word.len()..].trim_start();
    }
    text = format!(".extern {rest}");
    if variable {
        if let Some(at) = text.find('=') {
            text.truncate(at);
        }
        let trimmed = text.trim_end().trim_end_matches(';').trim_end().to_string();
        out.push_str(&trimmed);
        out.push_str(";\n");
        return;
    }
    let trimmed = text.trim_end();
    out.push_str(trimmed);
    if !trimmed.ends_with(';') {
        out.push_str("\n;");
    }
    out.push('\n');
}

/// A function definition's lines before its body and its performance directives: from its
/// first line to the line that closes its parameter list (`.noreturn` kept).
fn header<'l, 'a>(lines: &'l [&'a str]) -> &'l [&'a str] {
    let mut depth = 0i64;
    let mut opened = false;
    for (n, line) in lines.iter().enumerate() {
        let code = without_comment(line);
        if code.trim_start().starts_with('{') {
            return &lines[..n];
        }
        for c in code.chars() {
            match c {
                '(' => {
                    depth += 1;
                    opened = true;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        if opened && depth == 0 && !lines.get(n + 1).is_some_and(|next| next.trim_start().starts_with('(') || next.trim() == ".noreturn") {
            return &lines[..=n];
        }
    }
    lines
}

fn starts_with_word(text: &str, word: &str) -> bool {
    text.strip_prefix(word).is_some_and(|rest| rest.starts_with(|c: char| c.is_whitespace()))
}

fn without_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// The top-level statements of `ptx`, or `None` for PTX this module does not cut.
fn parse(ptx: &str) -> Option<Vec<Statement<'_>>> {
    let mut statements = Vec::new();
    let mut lines = ptx.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let text = line.trim();
        if text.is_empty() || text.starts_with("//") {
            statements.push(Statement { lines: vec![line], kind: Kind::Trivia, name: None, mentions: BTreeSet::new(), internal: false, entry: false });
            continue;
        }
        if [".version", ".target", ".address_size"].iter().any(|d| starts_with_word(text, d)) {
            statements.push(Statement { lines: vec![line], kind: Kind::Preamble, name: None, mentions: BTreeSet::new(), internal: false, entry: false });
            continue;
        }
        // A statement: to a line that ends with `;` outside braces, or to the `}` that closes
        // its body.
        let mut body = vec![line];
        let mut depth = braces(line);
        let mut has_body = depth > 0;
        let mut done = depth == 0 && without_comment(line).trim_end().ends_with(';');
        while !done {
            let next = lines.next()?;
            body.push(next);
            let change = braces(next);
            has_body |= change > 0;
            depth += change;
            done = if has_body { depth == 0 } else { without_comment(next).trim_end().ends_with(';') };
            if depth < 0 {
                return None;
            }
        }
        statements.push(classify(body, has_body)?);
    }
    Some(statements)
}

/// `{` less `}` on `line` outside its comment.
fn braces(line: &str) -> i64 {
    let code = without_comment(line);
    code.matches('{').count() as i64 - code.matches('}').count() as i64
}

/// What a statement is, or `None` for one this module does not know.
fn classify(lines: Vec<&str>, has_body: bool) -> Option<Statement<'_>> {
    let first = lines[0].trim();
    let mut words = first.split_whitespace().peekable();
    let mut linkage = None;
    while let Some(word) = words.peek().filter(|w| LINKAGE.contains(w)) {
        linkage = Some(*word);
        words.next();
    }
    let kind_word = *words.peek()?;
    let mentions = mentions(&lines);
    if kind_word == ".entry" || kind_word == ".func" {
        let after = &first[first.find(kind_word)? + kind_word.len()..];
        let name = function_name(after)?;
        let kind = match (has_body, linkage) {
            (true, Some(".extern")) => return None,
            (true, _) => Kind::Function,
            (false, Some(".extern")) => Kind::Extern,
            (false, _) => Kind::Forward,
        };
        return Some(Statement { lines, kind, name: Some(name), mentions, internal: linkage.is_none(), entry: kind_word == ".entry" });
    }
    if has_body || lines.len() != 1 {
        return None;
    }
    let state = kind_word;
    let name = variable_name(first)?;
    let kind = match (linkage, state) {
        (Some(".extern"), _) => Kind::Extern,
        (Some(".common"), _) => return None,
        (_, ".global" | ".const") if !first.contains(".attribute") => Kind::Variable,
        (_, ".global" | ".const" | ".shared" | ".tex" | ".surfref" | ".texref" | ".samplerref") => Kind::Bound,
        _ => return None,
    };
    Some(Statement { lines, kind, name: Some(name), mentions, internal: linkage.is_none(), entry: false })
}

/// The name after `.entry` or `.func` (and a function's return parameters).
fn function_name(after: &str) -> Option<&str> {
    let mut rest = after.trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let end = rest.find(|c: char| c == '(' || c.is_whitespace()).unwrap_or(rest.len());
    let name = &rest[..end];
    is_identifier(name).then_some(name)
}

/// The name a one-line variable statement defines: the last word before its initializer,
/// without its array sizes.
fn variable_name(line: &str) -> Option<&str> {
    let declaration = line.split('=').next()?.trim().trim_end_matches(';').trim_end();
    let mut word = declaration.split_whitespace().last()?;
    while let Some(at) = word.find('[') {
        word = &word[..at];
    }
    is_identifier(word).then_some(word)
}

fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The identifiers of `lines` outside comments (register names, `%r1`, are not).
fn mentions<'a>(lines: &[&'a str]) -> BTreeSet<&'a str> {
    lines
        .iter()
        .flat_map(|line| {
            let code = without_comment(line);
            names(code).map(move |name| &code[name])
        })
        .collect()
}

/// Where the names of `code` (a line without its comment) lie: identifiers (`[A-Za-z_$]`, then
/// those and digits) that are not a register (`%r1`) or a directive (`.reg`); a number's
/// letters (`0f3F800000`, `1.5e3`) are no name.
fn names(code: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = code.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let c = bytes[i];
            let start = i;
            if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
                while i < bytes.len() && word(bytes[i]) {
                    i += 1;
                }
                if start == 0 || !matches!(bytes[start - 1], b'%' | b'.') {
                    return Some(start..i);
                }
            } else if c.is_ascii_digit() {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.') {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

/// Groups of statements, joined.
struct UnionFind {
    parent: Vec<usize>,
    size: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        UnionFind { parent: (0..n).collect(), size: vec![1; n] }
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            let (big, small) = if self.size[a] >= self.size[b] { (a, b) } else { (b, a) };
            self.parent[small] = big;
            self.size[big] += self.size[small];
        }
    }

    fn alone(&mut self, i: usize) -> bool {
        let root = self.find(i);
        self.size[root] == 1
    }
}

#[cfg(test)]
mod tests;
