//! The part of an Itanium C++ symbol that names the entity, read far enough to tell nvcc's
//! linkage from Clang's.
//!
//! `_Z3visP1GN12_GLOBAL__N_11SE` is the function `vis` (its name, `3vis`) taking a `G *` and a
//! type of the file's anonymous namespace (its parameters, the rest). Clang gives such a
//! function internal linkage for its parameter's type; nvcc (EDG) gives it external linkage,
//! and makes internal only what is *named* inside an anonymous namespace, declared `static`
//! (Itanium's `L` before the unqualified name), or a template instance whose arguments name
//! one of those. [`entity`] reads the name (nested names, template arguments, substitutions,
//! types local to a function such as a lambda's) and reports where it ends and where its `L`
//! markers are; what it does not read (a local name as the entity itself, expressions in
//! template arguments, a few rare productions) is `None`, and the caller keeps Clang's reading.
//!
//! Clang 18 and later also write the Itanium ABI's newer template-parameter declarations in a
//! template instance's arguments where a parameter's type is deduced (`template <auto V>`:
//! `_Z2akITnDaLi5EEvPi`, the `TnDa` before the argument); nvcc (EDG) writes the older form
//! without them (`_Z2akILi5EEvPi`). [`edg_spelling`] removes them where that changes nothing
//! else in the symbol.
//!
//! The passes, the link check (`driver::symbols`) and the launch passes' messages ask this
//! reader what a symbol names rather than reading `_Z...` text themselves. Besides [`entity`]:
//!
//! - the parts of an entity's name as the source spells them ([`name_parts`]), its qualified
//!   name for messages ([`qualified_name`]: `ns::child` for `_ZN2ns5childEv`) and the
//!   identifier the source declares it by ([`last_source_name`]: `helper` for `_Z6helperi`);
//! - the identifier of a variable of file scope ([`file_scope_identifier`]: `counter` for
//!   `_Z7counter` and `_ZL7counter`), and a symbol without the `L` that Clang writes for a
//!   `static` name of file scope ([`without_static_marker`],
//!   [`local_without_static_marker`]), which nvcc does not write;
//! - a nested name moved into one more outermost namespace ([`in_outer_namespace`]) and a
//!   prefix taken off one of a symbol's source names ([`without_identifier_prefix`]);
//! - nvcc's name of an internal kernel or variable, `__nv_static_<n>_<module id>_<symbol>`,
//!   split into its module id and the symbol inside ([`nv_static_parts`]), and written
//!   ([`nv_static_symbol`], for the kernel language's `hir` and Clang's IR alike).

/// What [`entity`] read of a symbol.
#[derive(Debug, PartialEq, Eq)]
pub struct Entity {
    /// The byte offset where the entity's name ends (the function's parameter types, or
    /// nothing for a variable, follow).
    pub name_end: usize,
    /// The byte offsets of the `L` markers (internal linkage) in the name.
    pub internal_markers: Vec<usize>,
    /// Whether the name uses a substitution (`S_`, `S0_`, ...), whose numbering a new
    /// enclosing namespace would shift.
    pub substitutions: bool,
    /// The byte offsets of the source names of the anonymous namespace ([`ANONYMOUS_NAMESPACE`])
    /// in what was read: the name, and the types after it when `whole`.
    pub anonymous: Vec<usize>,
    /// Whether the types after the name (a function's) were read to the symbol's end.
    pub whole: bool,
    /// Whether the entity is a template's instance (its name ends in template arguments).
    pub instance: bool,
    /// The template-parameter declarations (`Tn <type>`, `Ty`) before template arguments, as
    /// byte ranges, each with whether its type is a substitution candidate (anything but a
    /// builtin type).
    pub param_decls: Vec<(std::ops::Range<usize>, bool)>,
    /// Whether any substitution (`S_`, `S0_`, ...) was read, in the name or after it.
    pub any_substitution: bool,
}

impl Entity {
    /// Whether the anonymous namespace is named in the entity's name (not only in its
    /// parameters' types).
    pub fn named_in_anonymous_namespace(&self) -> bool {
        self.anonymous.iter().any(|&at| at < self.name_end)
    }

    /// Whether nvcc makes the entity internal for its name: `static` (an `L` marker) or named
    /// in an anonymous namespace.
    pub fn named_internal(&self) -> bool {
        !self.internal_markers.is_empty() || self.named_in_anonymous_namespace()
    }
}

/// Clang's source name of the anonymous namespace (`12_GLOBAL__N_1`).
pub const ANONYMOUS_NAMESPACE: &str = "12_GLOBAL__N_1";

/// Reads the name of the Itanium symbol `symbol` (`_Z...`); `None` for a symbol that is not
/// mangled or holds what this reader does not read (module docs).
pub fn entity(symbol: &str) -> Option<Entity> {
    let mut p = Reader::new(symbol)?;
    p.name()?;
    let (name_end, internal_markers, substitutions, named) = (p.i, std::mem::take(&mut p.markers), p.substitutions, p.anonymous.len());
    // The name's own arguments end it, or its nested name's `E` right after them.
    let instance = p.own_args_end.is_some_and(|end| name_end - end <= 1);
    // A function's types (its return type first for a template's instance); a variable has none.
    let mut whole = true;
    while p.peek().is_some() {
        if p.ty().is_none() {
            whole = false;
            p.anonymous.truncate(named);
            break;
        }
    }
    Some(Entity { name_end, internal_markers, substitutions, anonymous: p.anonymous, whole, instance, param_decls: p.param_decls, any_substitution: p.substitutions })
}

/// `symbol` as nvcc (EDG) spells it, without Clang's template-parameter declarations (module
/// docs), if it has any and they can go: each is a builtin type (`TnDa`, `TnDc`, `TnLi`...) or
/// `Ty`, which no substitution counts, or the symbol was read whole and uses no substitution
/// that a removed type could have shifted. `None` otherwise, or where there is nothing to do.
pub fn edg_spelling(symbol: &str) -> Option<String> {
    let entity = entity(symbol)?;
    if entity.param_decls.is_empty() {
        return None;
    }
    let shifts = entity.param_decls.iter().any(|(_, substitutable)| *substitutable);
    if shifts && (!entity.whole || entity.any_substitution) {
        return None;
    }
    let mut out = String::with_capacity(symbol.len());
    let mut at = 0;
    for (range, _) in &entity.param_decls {
        out.push_str(&symbol[at..range.start]);
        at = range.end;
    }
    out.push_str(&symbol[at..]);
    Some(out)
}

/// Whether `symbol` is an Itanium C++ symbol (`_Z...`) rather than a name of C's kind.
pub fn is_mangled(symbol: &str) -> bool {
    symbol.starts_with("_Z")
}

/// The parts of the entity's name in `symbol` (`_Z...`), outermost first: the namespaces and
/// classes it is declared in, then its own name, each as its identifier where it is a source
/// name (`ns`, `child` of `_ZN2ns5childEv`, which c++filt reads `ns::child()`; `std` for the
/// abbreviation `St`) and `None` where it is not (a constructor, an operator, a closure type, a
/// substitution, a template parameter). Template arguments, ABI tags and `L` markers are no
/// parts. `None` for a symbol whose name this reader does not read ([`entity`]), except an
/// unscoped name whose template arguments it does not read, whose parts are known before them
/// (`pk` of `_Z2pkIXadL_Z2evEEEvv`).
pub fn name_parts(symbol: &str) -> Option<Vec<Option<&str>>> {
    let mut p = Reader::new(symbol)?;
    p.naming = true;
    let nested = p.peek() == Some(b'N');
    if p.name().is_none() && (nested || p.parts.is_empty()) {
        return None;
    }
    Some(
        p.parts
            .into_iter()
            .map(|part| match part {
                Part::Source(range) => symbol.get(range),
                Part::Std => Some("std"),
                Part::Other => None,
            })
            .collect(),
    )
}

/// The entity's name qualified as the source writes it, without template arguments, for
/// messages: `ns::child` for `_ZN2ns5childEv`, `child` for `_Z5childIiEvPT_` and `_ZL2skPi`;
/// `None` where a part is no source name ([`name_parts`]) or the name is not read.
pub fn qualified_name(symbol: &str) -> Option<String> {
    let parts: Option<Vec<&str>> = name_parts(symbol)?.into_iter().collect();
    parts.filter(|p| !p.is_empty()).map(|p| p.join("::"))
}

/// The last source name of the entity's name ([`name_parts`]): the identifier the source
/// declares it by (`helper` for `_Z6helperi`, `f` for `_ZN1AIiE1fEv`), or the class's where
/// the entity's own name is none (`V` for `V::operator[]`, `_ZN1VixEi`).
pub fn last_source_name(symbol: &str) -> Option<&str> {
    name_parts(symbol)?.into_iter().rev().flatten().next()
}

/// The identifier of a variable of file scope whose symbol is its name alone: `counter` for
/// `_Z7counter` and for `_ZL7counter` (declared `static`).
pub fn file_scope_identifier(symbol: &str) -> Option<&str> {
    let rest = symbol.strip_prefix("_Z")?;
    let rest = rest.strip_prefix('L').unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = rest[..digits].parse().ok()?;
    (digits.checked_add(len) == Some(rest.len())).then(|| &rest[digits..])
}

/// `symbol` without the `L` (internal linkage) of its unscoped name, which Clang writes for a
/// name of file scope declared `static` and nvcc does not: `_Z2skPi` for `_ZL2skPi`. `None`
/// where the name has no such marker.
pub fn without_static_marker(symbol: &str) -> Option<String> {
    symbol.strip_prefix("_ZL").map(|rest| format!("_Z{rest}"))
}

/// The symbol of a local entity (`_ZZ <function> E <name>`) of a function declared `static`,
/// without the function's `L`: `_ZZ2skPiE1c` for `_ZZL2skPiE1c` (`sk(int*)::c`). `None` for
/// any other symbol.
pub fn local_without_static_marker(symbol: &str) -> Option<String> {
    symbol.strip_prefix("_ZZL").map(|rest| format!("_ZZ{rest}"))
}

/// The symbol of the same entity of a nested name (`_ZN ... E`) declared inside one more
/// namespace, `namespace`, outside all of its own: `_ZN9_INTERNAL1n1tE` for `_ZN1n1tE` and
/// `_INTERNAL`. `None` for a name that is not nested. Substitutions (`S_`) are not renumbered:
/// the caller sees to it that the symbol has none ([`Entity::substitutions`]).
pub fn in_outer_namespace(symbol: &str, namespace: &str) -> Option<String> {
    let rest = symbol.strip_prefix("_ZN")?;
    Some(format!("_ZN{}{namespace}{rest}", namespace.len()))
}

/// `symbol` (`_Z...`) with `prefix` taken off the front of one of its source names, at the
/// first place `prefix` appears: `<n><prefix><id>` becomes `<n - length of prefix><id>`. Of
/// the lengths the digits before `prefix` can be read as (a namespace's name may end in a
/// digit: `_ZN2v216__device_stub__kEPi`), the shortest whose identifier fits the symbol and is
/// one (ASCII letters, digits, `_`). `None` where `prefix` starts no such source name.
pub fn without_identifier_prefix(symbol: &str, prefix: &str) -> Option<String> {
    if !is_mangled(symbol) || prefix.is_empty() {
        return None;
    }
    let at = symbol.find(prefix)?;
    let digits = symbol[..at].bytes().rev().take_while(u8::is_ascii_digit).count();
    let after = &symbol[at + prefix.len()..];
    (1..=digits).find_map(|width| {
        let start = at - width;
        let text = &symbol[start..at];
        let n: usize = text.parse().ok().filter(|_| !text.starts_with('0'))?;
        let len = n.checked_sub(prefix.len()).filter(|&l| l > 0 && l <= after.len())?;
        let id = after.get(..len)?;
        id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_').then(|| format!("{}{len}{after}", &symbol[..start]))
    })
}

/// `__nv_static_<n>_<module id>_<name>`: nvcc's symbol of an internal kernel or variable whose
/// own symbol is `name`, in the file whose module id is `id`, `n` the id's length (measured
/// with nvcc 13.5).
pub fn nv_static_symbol(id: &str, name: &str) -> String {
    format!("__nv_static_{}_{id}_{name}", id.len())
}

/// The module id and the symbol inside nvcc's name of an internal kernel or variable,
/// `__nv_static_<n>_<module id>_<symbol>` with `<n>` the id's length:
/// `("_14fcf5b7_5_nv_cu__Z1kPi", "_Z2skPi")` for `__nv_static_24__14fcf5b7_5_nv_cu__Z1kPi__Z2skPi`.
/// `None` for any other name.
pub fn nv_static_parts(symbol: &str) -> Option<(&str, &str)> {
    let rest = symbol.strip_prefix("__nv_static_")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = rest[..digits].parse().ok()?;
    let id = rest[digits..].strip_prefix('_')?.get(..len)?;
    let inner = rest[digits + 1 + len..].strip_prefix('_')?;
    (!inner.is_empty()).then_some((id, inner))
}

/// A part of the entity's name ([`name_parts`]).
enum Part {
    /// A source name: its identifier's bytes.
    Source(std::ops::Range<usize>),
    /// `St`, the namespace `std`.
    Std,
    /// Anything else.
    Other,
}

/// A recursive-descent reader over the grammar's productions that can appear in a kernel's or
/// variable's name; each returns `None` where the text is not one it reads.
struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    markers: Vec<usize>,
    substitutions: bool,
    anonymous: Vec<usize>,
    depth: u32,
    /// Where the last template arguments of the entity's own name (not of a type in it) end.
    own_args_end: Option<usize>,
    /// [`Entity::param_decls`].
    param_decls: Vec<(std::ops::Range<usize>, bool)>,
    /// Whether the parts of the entity's name are kept ([`name_parts`]).
    naming: bool,
    /// The parts of the entity's name read so far, when `naming`.
    parts: Vec<Part>,
}

/// How deep template arguments and types may nest before the reader gives up.
const MAX_DEPTH: u32 = 64;

impl<'a> Reader<'a> {
    /// A reader of `symbol` after its `_Z`; `None` for a symbol without one.
    fn new(symbol: &'a str) -> Option<Self> {
        symbol.strip_prefix("_Z")?;
        Some(Reader {
            s: symbol.as_bytes(),
            i: 2,
            markers: Vec::new(),
            substitutions: false,
            anonymous: Vec::new(),
            depth: 0,
            own_args_end: None,
            param_decls: Vec::new(),
            naming: false,
            parts: Vec::new(),
        })
    }

    /// Keeps `part` when it is a part of the entity's own name: read by [`Self::name`] for
    /// [`name_parts`], not inside a template argument or a type.
    fn part(&mut self, part: Part) {
        if self.naming && self.depth == 0 {
            self.parts.push(part);
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.i += 1)
    }

    /// Runs `f` one level deeper, refusing past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.depth += 1;
        let out = if self.depth > MAX_DEPTH { None } else { f(self) };
        self.depth -= 1;
        out
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).ok()?.parse().ok()
    }

    /// `<source-name> ::= <length> <identifier>`; returns where the identifier is.
    fn source_name(&mut self) -> Option<std::ops::Range<usize>> {
        let start = self.i;
        let n = self.number()?;
        let end = self.i.checked_add(n).filter(|&end| n > 0 && end <= self.s.len())?;
        let identifier = self.i..end;
        self.i = end;
        if &self.s[start..self.i] == ANONYMOUS_NAMESPACE.as_bytes() {
            self.anonymous.push(start);
        }
        Some(identifier)
    }

    /// `<name>`: nested, `St`-scoped, unscoped, or an unscoped template's; a local name is
    /// not read.
    fn name(&mut self) -> Option<()> {
        match self.peek()? {
            b'N' => self.nested_name(),
            b'Z' => None,
            b'S' if self.peek_at(1) == Some(b't') => self.std_name(),
            b'S' => {
                self.substitution()?;
                self.part(Part::Other);
                self.template_args()
            }
            _ => {
                self.named_part()?;
                self.optional_template_args()
            }
        }
    }

    /// `St <unqualified-name> [<template-args>]`, a name of namespace `std`.
    fn std_name(&mut self) -> Option<()> {
        self.i += 2;
        self.part(Part::Std);
        self.named_part()?;
        self.optional_template_args()
    }

    /// An `<unqualified-name>`, kept as a part of the entity's name ([`Self::part`]).
    fn named_part(&mut self) -> Option<()> {
        let identifier = self.unqualified_name()?;
        self.part(identifier.map_or(Part::Other, Part::Source));
        Some(())
    }

    /// `N [<CV-qualifiers>] [<ref-qualifier>] <prefix> <unqualified-name> E`
    fn nested_name(&mut self) -> Option<()> {
        self.eat(b'N')?;
        while matches!(self.peek(), Some(b'r' | b'V' | b'K')) {
            self.i += 1;
        }
        if matches!(self.peek(), Some(b'R' | b'O')) {
            self.i += 1;
        }
        let mut components = 0;
        loop {
            match self.peek()? {
                b'E' if components > 0 => {
                    self.i += 1;
                    return Some(());
                }
                b'I' if components > 0 => self.template_args()?,
                b'S' => {
                    let std = self.peek_at(1) == Some(b't');
                    self.substitution()?;
                    self.part(if std { Part::Std } else { Part::Other });
                }
                b'T' => {
                    self.template_param()?;
                    self.part(Part::Other);
                }
                b'M' if components > 0 => self.i += 1,
                _ => self.named_part()?,
            }
            components += 1;
        }
    }

    /// `Z <function encoding> E <entity> [<discriminator>]`: a type local to a function, a
    /// lambda's closure type among them (`Z4hostPiEUliE_`), as a template argument or a
    /// parameter's type.
    fn local_name(&mut self) -> Option<()> {
        self.eat(b'Z')?;
        self.name()?;
        while self.peek()? != b'E' {
            self.nested(Self::ty)?;
        }
        self.i += 1;
        self.unqualified_name()?;
        // `_<digit>` or `__<number>_`
        if self.peek() == Some(b'_') {
            if self.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
                self.i += 2;
            } else if self.peek_at(1) == Some(b'_') {
                self.i += 2;
                self.number()?;
                self.eat(b'_')?;
            }
        }
        Some(())
    }

    /// `<unqualified-name>` with an optional `L` (internal linkage) before it and ABI tags
    /// after it; returns where its identifier is when it is a source name.
    fn unqualified_name(&mut self) -> Option<Option<std::ops::Range<usize>>> {
        if self.peek() == Some(b'L') {
            self.markers.push(self.i);
            self.i += 1;
        }
        let mut identifier = None;
        match self.peek()? {
            b'0'..=b'9' => identifier = Some(self.source_name()?),
            b'C' if matches!(self.peek_at(1), Some(b'1'..=b'5')) => self.i += 2,
            b'D' if matches!(self.peek_at(1), Some(b'0'..=b'5')) => self.i += 2,
            b'U' if self.peek_at(1) == Some(b't') => {
                self.i += 2;
                self.number();
                self.eat(b'_')?;
            }
            b'U' if self.peek_at(1) == Some(b'l') => {
                // A closure type: its call operator's parameter types, then a number.
                self.i += 2;
                while self.peek()? != b'E' {
                    self.nested(Self::ty)?;
                }
                self.i += 1;
                self.number();
                self.eat(b'_')?;
            }
            b'c' if self.peek_at(1) == Some(b'v') => {
                self.i += 2;
                self.nested(Self::ty)?;
            }
            b'l' if self.peek_at(1) == Some(b'i') => {
                self.i += 2;
                self.source_name()?;
            }
            b'a'..=b'z' if self.peek_at(1).is_some_and(|b| b.is_ascii_lowercase()) => self.i += 2,
            _ => return None,
        }
        while self.peek() == Some(b'B') {
            self.i += 1;
            self.source_name()?;
        }
        Some(identifier)
    }

    /// `S_`, `S<seq-id>_` and the abbreviations `St`, `Sa`, `Sb`, `Ss`, `Si`, `So`, `Sd`.
    fn substitution(&mut self) -> Option<()> {
        self.eat(b'S')?;
        match self.peek()? {
            b't' | b'a' | b'b' | b's' | b'i' | b'o' | b'd' => {
                self.i += 1;
                Some(())
            }
            _ => {
                while self.peek().is_some_and(|b| b.is_ascii_digit() || b.is_ascii_uppercase()) {
                    self.i += 1;
                }
                self.eat(b'_')?;
                self.substitutions = true;
                Some(())
            }
        }
    }

    /// `T_` or `T<n>_`.
    fn template_param(&mut self) -> Option<()> {
        self.eat(b'T')?;
        while self.peek().is_some_and(|b| b.is_ascii_digit() || b.is_ascii_uppercase()) {
            self.i += 1;
        }
        self.eat(b'_')
    }

    fn optional_template_args(&mut self) -> Option<()> {
        if self.peek() == Some(b'I') {
            self.template_args()?;
        }
        Some(())
    }

    /// `I <template-arg>+ E`
    fn template_args(&mut self) -> Option<()> {
        self.eat(b'I')?;
        while self.peek()? != b'E' {
            self.nested(Self::template_arg)?;
        }
        if self.depth == 0 {
            self.own_args_end = Some(self.i + 1);
        }
        self.i += 1;
        Some(())
    }

    /// A type, a literal (`Li3E`), or a pack (`J ... E`), after a template-parameter
    /// declaration (`Tn <type>`, `Ty`) or not; an expression (`X ... E`), an entity's address
    /// (`L_Z ... E`) or another declaration (`Tk`, `Tt`, `Tp`) is not read.
    fn template_arg(&mut self) -> Option<()> {
        match (self.peek()?, self.peek_at(1)) {
            (b'T', Some(b'n')) => {
                let start = self.i;
                self.i += 2;
                self.nested(Self::ty)?;
                let ty = &self.s[start + 2..self.i];
                let builtin = ty.len() == 1 || (ty.len() == 2 && ty[0] == b'D' && ty[1].is_ascii_lowercase());
                self.param_decls.push((start..self.i, !builtin));
                return self.nested(Self::template_arg);
            }
            (b'T', Some(b'y')) => {
                self.param_decls.push((self.i..self.i + 2, false));
                self.i += 2;
                return self.nested(Self::template_arg);
            }
            (b'T', Some(b'k' | b't' | b'p')) => return None,
            _ => {}
        }
        match self.peek()? {
            b'L' => {
                if self.peek_at(1) == Some(b'_') {
                    return None;
                }
                self.i += 1;
                self.nested(Self::ty)?;
                while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() && b != b'E') {
                    self.i += 1;
                }
                self.eat(b'E')
            }
            b'J' => {
                self.i += 1;
                while self.peek()? != b'E' {
                    self.nested(Self::template_arg)?;
                }
                self.i += 1;
                Some(())
            }
            b'X' => None,
            _ => self.ty(),
        }
    }

    /// `<type>`
    fn ty(&mut self) -> Option<()> {
        match self.peek()? {
            b'v' | b'w' | b'b' | b'c' | b'a' | b'h' | b's' | b't' | b'i' | b'j' | b'l' | b'm' | b'x' | b'y' | b'n' | b'o' | b'f' | b'd' | b'e' | b'g' | b'z' => {
                self.i += 1;
                Some(())
            }
            b'u' => {
                self.i += 1;
                self.source_name().map(drop)
            }
            b'D' => {
                let next = self.peek_at(1)?;
                self.i += 2;
                match next {
                    b'a' | b'c' | b'd' | b'e' | b'f' | b'h' | b'i' | b'n' | b's' | b'u' => Some(()),
                    b'p' => self.nested(Self::ty),
                    b'v' => {
                        self.number()?;
                        self.eat(b'_')?;
                        self.nested(Self::ty)
                    }
                    b'F' => {
                        self.number()?;
                        self.eat(b'_')?;
                        self.eat(b'x');
                        Some(())
                    }
                    _ => None,
                }
            }
            b'r' | b'V' | b'K' | b'P' | b'R' | b'O' | b'C' | b'G' => {
                self.i += 1;
                self.nested(Self::ty)
            }
            b'F' => {
                self.i += 1;
                self.eat(b'Y');
                loop {
                    match self.peek()? {
                        b'E' => break,
                        b'R' | b'O' if self.peek_at(1) == Some(b'E') => self.i += 1,
                        _ => self.nested(Self::ty)?,
                    }
                }
                self.i += 1;
                Some(())
            }
            b'A' => {
                self.i += 1;
                if self.peek()?.is_ascii_digit() {
                    self.number()?;
                }
                self.eat(b'_')?;
                self.nested(Self::ty)
            }
            b'M' => {
                self.i += 1;
                self.nested(Self::ty)?;
                self.nested(Self::ty)
            }
            b'T' => {
                self.template_param()?;
                self.optional_template_args()
            }
            b'S' if self.peek_at(1) == Some(b't') => self.std_name(),
            b'S' => {
                self.substitution()?;
                self.optional_template_args()
            }
            b'N' => self.nested(Self::nested_name),
            b'Z' => self.nested(Self::local_name),
            b'0'..=b'9' => {
                self.source_name()?;
                self.optional_template_args()
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name ends where the parameters begin.
    fn name(symbol: &str) -> &str {
        &symbol[..entity(symbol).unwrap().name_end]
    }

    #[test]
    fn the_name_is_told_from_the_parameters() {
        assert_eq!(name("_Z3visP1GN12_GLOBAL__N_11SE"), "_Z3vis");
        assert_eq!(name("_ZN12_GLOBAL__N_12k1EPi"), "_ZN12_GLOBAL__N_12k1E");
        assert_eq!(name("_ZN1a12_GLOBAL__N_12k2EN12_GLOBAL__N_11SEPi"), "_ZN1a12_GLOBAL__N_12k2E");
        assert_eq!(name("_Z2gkIN12_GLOBAL__N_11SEEvT_"), "_Z2gkIN12_GLOBAL__N_11SEE");
        assert_eq!(name("_ZN12_GLOBAL__N_12tkINS_1SEEEvPT_"), "_ZN12_GLOBAL__N_12tkINS_1SEEE");
        assert_eq!(name("_Z2nkILi3EEvPi"), "_Z2nkILi3EE");
        assert_eq!(name("_ZN5outer5inner6tchildIfEEvPT_S2_"), "_ZN5outer5inner6tchildIfEE");
        assert_eq!(name("_ZN6thrust8cuda_cub4core13_kernel_agentINS_7complexIfEEEEvT_"), "_ZN6thrust8cuda_cub4core13_kernel_agentINS_7complexIfEEEE");
        assert_eq!(name("_Z4fillIJifEEvDpT_"), "_Z4fillIJifEE");
        assert_eq!(name("_ZN1n1eE"), "_ZN1n1eE");
        // A lambda's closure type as the template argument (`apply<lambda in host(int *)>`).
        assert_eq!(name("_Z5applyIZ4hostPiEUliE_EvS0_T_"), "_Z5applyIZ4hostPiEUliE_E");
        assert_eq!(name("_Z5applyIZ6parentPiEUliE0_EvS0_T_"), "_Z5applyIZ6parentPiEUliE0_E");
        assert_eq!(name("_ZNSt3__14swapB8ne190000IiEEvRT_S2_"), "_ZNSt3__14swapB8ne190000IiEE");
    }

    #[test]
    fn static_markers_are_found() {
        assert_eq!(entity("_ZL2skPi").unwrap().internal_markers, [2]);
        assert_eq!(entity("_ZN1nL2skEPi").unwrap().internal_markers, [5]);
        assert_eq!(entity("_ZL2sv").unwrap().internal_markers, [2]);
        assert!(entity("_Z6parentPi").unwrap().internal_markers.is_empty());
        // A literal's `L` in the parameters or template arguments is no marker.
        assert!(entity("_Z2nkILi3EEvPi").unwrap().internal_markers.is_empty());
    }

    #[test]
    fn template_instances_are_told() {
        for (symbol, instance) in [
            ("_Z5applyIZ4hostPiEUliE_EvS0_T_", true),
            ("_ZN12_GLOBAL__N_12tkINS_1SEEEvPT_", true),
            ("_Z2nkILi3EEvPi", true),
            ("_Z3visP1GN12_GLOBAL__N_11SE", false),
            ("_ZN1a1bIiE1cEv", false),
            // A parameter of a template type does not make an instance.
            ("_Z1fN1a1bIiEE", false),
        ] {
            assert_eq!(entity(symbol).unwrap().instance, instance, "{symbol}");
        }
    }

    /// nvcc 13.5's symbols of the same kernels (`nvcc -rdc=true -ptx`; Clang 22's on the left).
    #[test]
    fn template_parameter_declarations_are_spelled_as_nvcc_spells_them() {
        for (clang, nvcc) in [
            ("_Z2akITnDaL5Color1EEvPi", Some("_Z2akIL5Color1EEvPi")),
            ("_Z2akITnDaLi5EEvPi", Some("_Z2akILi5EEvPi")),
            ("_Z2dkITnDcLi4EEvPi", Some("_Z2dkILi4EEvPi")),
            ("_Z2ekITnDaLc99EEvP1PS1_", Some("_Z2ekILc99EEvP1PS1_")),
            // An address as the argument is not read (nvcc: `_Z2fkIXadL_Z1gEEEvPi`): left.
            ("_Z2fkITnPDaXadL_Z1gEEEvPi", None),
            // `T_` of the declaration is a substitution the parameters count (`S0_`): left.
            ("_Z2tkIiTnT_Li3EEvPS0_S1_", None),
            ("_Z6parentPi", None),
            ("_Z2nkILi3EEvPi", None),
        ] {
            assert_eq!(edg_spelling(clang).as_deref(), nvcc, "{clang}");
        }
    }

    #[test]
    fn substitutions_are_noticed() {
        assert!(entity("_ZN12_GLOBAL__N_12tkINS_1SEEEvPT_").unwrap().substitutions);
        assert!(!entity("_ZN12_GLOBAL__N_15inner1wE").unwrap().substitutions);
    }

    #[test]
    fn what_is_not_read_is_none() {
        for symbol in ["gs", "_Z", "_ZN", "_ZNE", "_Z2pkIXadL_Z2evEEEvv", "_Z2pkIXadL_ZL2svEEEvv", "_ZZ4mainE1x", "_Z99x", "_ZN1aIiE", "_Z5applyIZ4hostPiEEvv"] {
            assert_eq!(entity(symbol), None, "{symbol}");
        }
        // Deep nesting is refused, not recursed into without bound.
        let deep = format!("_Z1f{}{}", "I".repeat(500), "E".repeat(500));
        assert_eq!(entity(&deep), None);
    }

    /// Symbols cut, spliced and mixed with other bytes (any IR's names reach the reader): no
    /// panic, and what is read ends inside the symbol.
    #[test]
    fn any_text_is_read_or_refused_without_panicking() {
        let seeds = [
            "_Z3visP1GN12_GLOBAL__N_11SE",
            "_ZN12_GLOBAL__N_12tkINS_1SEEEvPT_",
            "_ZNSt3__14swapB8ne190000IiEEvRT_S2_",
            "_Z4fillIJifEEvDpT_",
            "_ZN1nL2skEPi",
            "_ZZ4mainE1x",
            "_Z2akITnDaL5Color1EEvPi",
            "_Z2tkIiTnT_Li3EEvPS0_S1_",
            "_ZN2v216__device_stub__kEPi",
            "__nv_static_24__14fcf5b7_5_nv_cu__Z1kPi__Z2skPi",
        ];
        let alphabet: Vec<char> = "_ZNLEISTJXDFAMPKRVOvifnyc0123456789ab\u{e9}\u{1F600}".chars().collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for round in 0..20_000 {
            let seed: Vec<char> = seeds[round % seeds.len()].chars().collect();
            let mut text: Vec<char> = seed[..next(seed.len() + 1)].to_vec();
            for _ in 0..next(4) {
                let at = next(text.len() + 1);
                text.insert(at, alphabet[next(alphabet.len())]);
            }
            if next(3) == 0 {
                let digits = ["9", "99999999999999999999999", "18446744073709551615", "12"][next(4)];
                let at = next(text.len() + 1);
                text.splice(at..at, digits.chars());
            }
            let text: String = text.into_iter().collect();
            if let Some(e) = entity(&text) {
                assert!(
                    e.name_end <= text.len() && e.internal_markers.iter().chain(&e.anonymous).all(|&at| at < text.len()) && e.param_decls.iter().all(|(r, _)| r.start < r.end && r.end <= text.len()),
                    "{text}"
                );
            }
            if let Some(edg) = edg_spelling(&text) {
                assert!(edg.len() < text.len(), "{text} -> {edg}");
            }
            if let Some(parts) = name_parts(&text) {
                assert!(parts.iter().flatten().all(|p| !p.is_empty() && (*p == "std" || text.contains(p))), "{text}");
            }
            let _ = (qualified_name(&text), last_source_name(&text), file_scope_identifier(&text), nv_static_parts(&text));
            let _ = (without_identifier_prefix(&text, "__device_stub__"), without_identifier_prefix(&text, "1"));
            let _ = crate::pipeline::names::nvcc_symbol(&text, crate::pipeline::names::Kind::Kernel, "_ab_1_x_cu_cdpc");
            let _ = crate::pipeline::names::nvcc_symbol(&text, crate::pipeline::names::Kind::Variable, "_ab_1_x_cu_cdpc");
        }
    }

    #[test]
    fn the_anonymous_namespace_is_found_as_a_source_name() {
        let e = entity("_ZN12_GLOBAL__N_12k1EPi").unwrap();
        assert_eq!((e.anonymous, e.whole), (vec![3], true));
        // In the parameters only: named there, not in the name.
        let e = entity("_Z3visP1GN12_GLOBAL__N_11SE").unwrap();
        assert_eq!(e.anonymous, [10]);
        assert!(!e.named_in_anonymous_namespace());
        // After a namespace whose name ends in a digit (`2v2`).
        assert_eq!(entity("_ZN2v212_GLOBAL__N_11kEv").unwrap().anonymous, [6]);
        // An identifier of 112 characters that begins like it is no such name.
        let long = format!("_Z112_GLOBAL__N_1{}v", "x".repeat(100));
        assert!(entity(&long).unwrap().anonymous.is_empty());
        // Types that are not read: the name's part alone, and not whole.
        let e = entity("_ZN12_GLOBAL__N_12k1EXadL_Z1xEE").unwrap();
        assert_eq!((e.anonymous, e.whole), (vec![3], false));
    }

    /// The parts of names as c++filt (GNU binutils) reads them, written after each symbol.
    #[test]
    fn name_parts_are_the_source_names_cxxfilt_reads() {
        for (symbol, parts) in [
            // ns::child()
            ("_ZN2ns5childEv", vec![Some("ns"), Some("child")]),
            // void child<int>(int*)
            ("_Z5childIiEvPT_", vec![Some("child")]),
            // void ns::k<int>(int*)
            ("_ZN2ns1kIiEEvPT_", vec![Some("ns"), Some("k")]),
            // child(int*, char, S, double): a parameter's class is no part
            ("_Z5childPic1Sd", vec![Some("child")]),
            // kern(S)
            ("_Z4kern1S", vec![Some("kern")]),
            // sk(int*), n::sk(int*): `static`, the `L` is no part
            ("_ZL2skPi", vec![Some("sk")]),
            ("_ZN1nL2skEPi", vec![Some("n"), Some("sk")]),
            // A<int>::f(), A::f() const
            ("_ZN1AIiE1fEv", vec![Some("A"), Some("f")]),
            ("_ZNK1A1fEv", vec![Some("A"), Some("f")]),
            // V::operator[](int), A::B::B()
            ("_ZN1VixEi", vec![Some("V"), None]),
            ("_ZN1A1BC2Ev", vec![Some("A"), Some("B"), None]),
            // void std::swap<int>(int&, int&), void std::__1::swap[abi:ne190000]<int>(int&, int&)
            ("_ZSt4swapIiEvRT_S1_", vec![Some("std"), Some("swap")]),
            ("_ZNSt3__14swapB8ne190000IiEEvRT_S2_", vec![Some("std"), Some("__1"), Some("swap")]),
            // (anonymous namespace)::inner::k4(int*)
            ("_ZN12_GLOBAL__N_15inner2k4EPi", vec![Some("_GLOBAL__N_1"), Some("inner"), Some("k4")]),
            // void thrust::cuda_cub::core::_kernel_agent<thrust::complex<float> >(thrust::complex<float>)
            ("_ZN6thrust8cuda_cub4core13_kernel_agentINS_7complexIfEEEEvT_", vec![Some("thrust"), Some("cuda_cub"), Some("core"), Some("_kernel_agent")]),
            // void apply<host(int*)::{lambda(int)#1}>(int*, host(int*)::{lambda(int)#1})
            ("_Z5applyIZ4hostPiEUliE_EvS0_T_", vec![Some("apply")]),
            // cfg::table, counter
            ("_ZN3cfg5tableE", vec![Some("cfg"), Some("table")]),
            ("_ZL7counter", vec![Some("counter")]),
            // void pk<&ev>(): the argument is not read, the name before it is
            ("_Z2pkIXadL_Z2evEEEvv", vec![Some("pk")]),
        ] {
            assert_eq!(name_parts(symbol), Some(parts), "{symbol}");
        }
        // main::x, a local name; a nested name whose arguments are not read; C names; cut ones.
        for symbol in ["_ZZ4mainE1x", "_ZN2ns2pkIXadL_Z2evEEE1fEv", "counter", "_Z", "_Z99x", "_ZN2ns"] {
            assert_eq!(name_parts(symbol), None, "{symbol}");
        }
    }

    #[test]
    fn qualified_and_last_source_names() {
        assert_eq!(qualified_name("_ZN2ns5childEv").as_deref(), Some("ns::child"));
        assert_eq!(qualified_name("_Z5childPi").as_deref(), Some("child"));
        assert_eq!(qualified_name("_ZN5outer5inner6tchildIfEEvPT_S2_").as_deref(), Some("outer::inner::tchild"));
        assert_eq!(qualified_name("_ZN1VixEi"), None);
        assert_eq!(qualified_name("child"), None);
        assert_eq!(last_source_name("_Z6helperi"), Some("helper"));
        assert_eq!(last_source_name("_ZN1n3fooEv"), Some("foo"));
        assert_eq!(last_source_name("_ZN1AIiE1fEv"), Some("f"));
        assert_eq!(last_source_name("_ZN1VixEi"), Some("V"));
        assert_eq!(last_source_name("_ZZ4mainE1x"), None);
    }

    /// c++filt: `_Z7counter` and `_ZL7counter` are `counter`; `_ZZL2skPiE1c` and `_ZZ2skPiE1c`
    /// both `sk(int*)::c`; `_ZN9_INTERNAL1n1tE` is `_INTERNAL::n::t`.
    #[test]
    fn markers_and_namespaces_of_file_scope_names() {
        assert_eq!(file_scope_identifier("_Z7counter"), Some("counter"));
        assert_eq!(file_scope_identifier("_ZL7counter"), Some("counter"));
        for symbol in ["_ZL7counterX", "_ZN1n5tableE", "_Z2skPi", "counter", "_Z"] {
            assert_eq!(file_scope_identifier(symbol), None, "{symbol}");
        }
        assert_eq!(without_static_marker("_ZL2skPi").as_deref(), Some("_Z2skPi"));
        assert_eq!(without_static_marker("_ZN1nL2skEPi"), None);
        assert_eq!(local_without_static_marker("_ZZL2skPiE1c").as_deref(), Some("_ZZ2skPiE1c"));
        assert_eq!(local_without_static_marker("_ZZ2skPiE1c"), None);
        assert_eq!(in_outer_namespace("_ZN1n1tE", "_INTERNAL").as_deref(), Some("_ZN9_INTERNAL1n1tE"));
        assert_eq!(in_outer_namespace("_Z1tv", "_INTERNAL"), None);
    }

    /// c++filt: `_ZN2v216__device_stub__kEPi` is `v2::__device_stub__k(int*)`, `_ZN2v21kEPi`
    /// `v2::k(int*)`.
    #[test]
    fn a_prefix_is_taken_off_a_source_name() {
        let prefix = "__device_stub__";
        assert_eq!(without_identifier_prefix("_ZN2v216__device_stub__kEPi", prefix).as_deref(), Some("_ZN2v21kEPi"));
        assert_eq!(without_identifier_prefix("_Z20__device_stub__childPi", prefix).as_deref(), Some("_Z5childPi"));
        for symbol in ["_Z5childPi", "_Z15__device_stub__", "__device_stub__k", "_Z5__device_stub__k"] {
            assert_eq!(without_identifier_prefix(symbol, prefix), None, "{symbol}");
        }
    }

    /// nvcc 13.5's names of internal kernels and variables (`nvcc -rdc=true -ptx`; the second
    /// from NVIDIA's `cdpAdvancedQuicksort` sample), and the names [`nv_static_symbol`] writes.
    #[test]
    fn nvcc_static_names_are_split() {
        assert_eq!(nv_static_parts("__nv_static_24__14fcf5b7_5_nv_cu__Z1kPi__Z2skPi"), Some(("_14fcf5b7_5_nv_cu__Z1kPi", "_Z2skPi")));
        assert_eq!(
            nv_static_parts("__nv_static_45__22b94195_23_cdpAdvancedQuicksort_cu_1c7c59e6__ZN54_INTERNAL_22b94195_23_cdpAdvancedQuicksort_cu_1c7c59e66thrust23THRUST_300001_SM_900_NS3seqE"),
            Some(("_22b94195_23_cdpAdvancedQuicksort_cu_1c7c59e6", "_ZN54_INTERNAL_22b94195_23_cdpAdvancedQuicksort_cu_1c7c59e66thrust23THRUST_300001_SM_900_NS3seqE"))
        );
        for (id, name) in [("_ab12_6_x_cu_cdpc", "_Z4stepPi"), ("_ab12_6_x_cu_cdpc", "bias")] {
            assert_eq!(nv_static_parts(&nv_static_symbol(id, name)), Some((id, name)));
        }
        for symbol in ["_Z2skPi", "__nv_static_", "__nv_static_99__x__Z1kv", "__nv_static_3__ab_", "__nv_static_x_abc__Z1kv"] {
            assert_eq!(nv_static_parts(symbol), None, "{symbol}");
        }
    }
}
