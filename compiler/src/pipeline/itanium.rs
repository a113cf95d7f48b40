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
    let rest = symbol.strip_prefix("_Z")?;
    let mut p = Reader { s: symbol.as_bytes(), i: symbol.len() - rest.len(), markers: Vec::new(), substitutions: false, anonymous: Vec::new(), depth: 0, own_args_end: None, param_decls: Vec::new() };
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
}

/// How deep template arguments and types may nest before the reader gives up.
const MAX_DEPTH: u32 = 64;

impl Reader<'_> {
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

    /// `<source-name> ::= <length> <identifier>`
    fn source_name(&mut self) -> Option<()> {
        let start = self.i;
        let n = self.number()?;
        let end = self.i.checked_add(n).filter(|&end| n > 0 && end <= self.s.len())?;
        self.i = end;
        if &self.s[start..self.i] == ANONYMOUS_NAMESPACE.as_bytes() {
            self.anonymous.push(start);
        }
        Some(())
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
                self.template_args()
            }
            _ => {
                self.unqualified_name()?;
                self.optional_template_args()
            }
        }
    }

    /// `St <unqualified-name> [<template-args>]`, a name of namespace `std`.
    fn std_name(&mut self) -> Option<()> {
        self.i += 2;
        self.unqualified_name()?;
        self.optional_template_args()
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
                b'S' => self.substitution()?,
                b'T' => self.template_param()?,
                b'M' if components > 0 => self.i += 1,
                _ => self.unqualified_name()?,
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
    /// after it.
    fn unqualified_name(&mut self) -> Option<()> {
        if self.peek() == Some(b'L') {
            self.markers.push(self.i);
            self.i += 1;
        }
        match self.peek()? {
            b'0'..=b'9' => self.source_name()?,
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
        Some(())
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
                self.source_name()
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
}
