//! **Where names are mangled**: the symbols of functions, as nvcc writes them.
//!
//! A function without `extern "C"` is a C++ function, and nvcc gives it its Itanium C++ ABI
//! name (<https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling>): `_Z`, the name's
//! length and the name, then the parameter types (`v` for none). Host code written for nvcc's
//! cubins finds kernels by these names (`_Z5childPii`), so cdpc writes the same ones. The
//! oracle is nvcc itself (`tests/mangling_oracle.rs`).
//!
//! What this covers is what the language has: the builtin types, pointers with `const`
//! pointees, structs (by their name, as classes), arrays, and CUDA's types as its headers
//! declare them (`dim3` is a struct, `cudaStream_t` is `CUstream_st *`, `cudaEvent_t` is
//! `CUevent_st *`, `cudaError_t` is `enum cudaError`), with the ABI's substitutions (`S_`,
//! `S0_`, ...) for repeated components.
//!
//! Variables at file scope are not mangled in C++ (a global `int x` is the symbol `x`).
//! Static functions get the same name as if they were not static: nvcc's names for them
//! contain a hash of the file that no other compiler reproduces, and no host code can look
//! them up.
//!
//! A leaf below `hir`: names and types in, a symbol out, with nothing but `crate::types`
//! imported (`hir::Function::symbol` asks it), so that `hir` and its mangling form no import
//! cycle (`compiler/tests/layers.rs`).

use crate::types::{FloatKind, IntKind, Quals, StructLayouts, Type};

/// `<length><name>`, a name as the ABI writes it.
fn source_name(name: &str) -> String {
    format!("{}{name}", name.len())
}

/// `_Z<length><name><parameter types>`, the Itanium name of a function at global scope.
pub fn mangle_function(name: &str, params: &[&Type], structs: &dyn StructLayouts) -> String {
    let mut m = Mangler { out: format!("_Z{}", source_name(name)), substitutions: Vec::new(), structs };
    if params.is_empty() {
        m.out.push('v');
    }
    for ty in params {
        m.ty(ty, Quals::NONE);
    }
    m.out
}

struct Mangler<'a> {
    out: String,
    /// The components seen so far, in the order the ABI numbers them, each as its full
    /// unsubstituted mangling.
    substitutions: Vec<String>,
    structs: &'a dyn StructLayouts,
}

impl Mangler<'_> {
    /// Writes `ty` qualified by `quals`, substituting repeated components. A qualified type is
    /// one component, whatever its qualifiers (`VKi`), and its unqualified type another.
    fn ty(&mut self, ty: &Type, quals: Quals) {
        if let Some(code) = builtin(ty) {
            if quals != Quals::NONE {
                self.component(format!("{}{code}", cv(quals)), |m| {
                    m.out.push_str(cv(quals));
                    m.out.push_str(code);
                });
            } else {
                self.out.push_str(code);
            }
            return;
        }
        let key = self.plain(ty, quals);
        if let Some(index) = self.substitutions.iter().position(|s| *s == key) {
            self.out.push_str(&substitution(index));
            return;
        }
        if quals != Quals::NONE {
            self.out.push_str(cv(quals));
            self.ty(ty, Quals::NONE);
        } else {
            match ty {
                Type::Pointer { pointee, .. } => {
                    self.out.push('P');
                    self.ty(pointee, ty.pointee_quals());
                }
                Type::Array { elem, len } => {
                    self.out.push_str(&format!("A{len}_"));
                    self.ty(elem, Quals::NONE);
                }
                Type::Stream | Type::Event => {
                    self.out.push('P');
                    let name = if *ty == Type::Stream { "CUstream_st" } else { "CUevent_st" };
                    self.class_name(name);
                }
                // `int (*)(int)` is `PFiiE`; the function type `FiiE` is a component too.
                Type::FnPtr(sig) => {
                    self.out.push('P');
                    let key = self.plain(ty, Quals::NONE)[1..].to_string();
                    self.component(key, |m| {
                        m.out.push('F');
                        m.ty(&sig.ret, Quals::NONE);
                        sig.params.iter().for_each(|p| m.ty(p, Quals::NONE));
                        if sig.params.is_empty() {
                            m.out.push('v');
                        }
                        m.out.push('E');
                    });
                }
                other => {
                    let name = self.class_of(other);
                    self.out.push_str(&source_name(&name));
                }
            }
        }
        self.substitutions.push(key);
    }

    /// A class or enum name that is a component of its own (`CUstream_st` in `P11CUstream_st`).
    fn class_name(&mut self, name: &str) {
        let key = format!("{}{name}", name.len());
        self.component(key.clone(), |m| m.out.push_str(&key));
    }

    /// Writes a substitutable component through `write`, or its substitution if seen before.
    fn component(&mut self, key: String, write: impl FnOnce(&mut Self)) {
        match self.substitutions.iter().position(|s| *s == key) {
            Some(index) => self.out.push_str(&substitution(index)),
            None => {
                write(self);
                self.substitutions.push(key);
            }
        }
    }

    /// The name a struct-like type is mangled by.
    fn class_of(&self, ty: &Type) -> String {
        match ty {
            Type::Struct(id) => self.structs.struct_name(*id).to_string(),
            Type::Dim3 => "dim3".into(),
            Type::CudaError => "cudaError".into(),
            Type::Enum { id, .. } => self.structs.enum_name(*id).to_string(),
            other => format!("{other:?}"),
        }
    }

    /// The mangling of `ty` without substitutions: the key substitutions are looked up by.
    fn plain(&self, ty: &Type, quals: Quals) -> String {
        let inner = match builtin(ty) {
            Some(code) => code.to_string(),
            None => match ty {
                Type::Pointer { pointee, .. } => format!("P{}", self.plain(pointee, ty.pointee_quals())),
                Type::Array { elem, len } => format!("A{len}_{}", self.plain(elem, Quals::NONE)),
                Type::Stream => "P11CUstream_st".into(),
                Type::Event => "P10CUevent_st".into(),
                Type::FnPtr(sig) => {
                    let params: String = sig.params.iter().map(|p| self.plain(p, Quals::NONE)).collect();
                    format!("PF{}{}E", self.plain(&sig.ret, Quals::NONE), if params.is_empty() { "v" } else { &params })
                }
                other => source_name(&self.class_of(other)),
            },
        };
        format!("{}{inner}", cv(quals))
    }
}

/// The `<CV-qualifiers>` of the ABI, in its order: `V` (volatile) before `K` (const).
fn cv(quals: Quals) -> &'static str {
    match (quals.is_volatile, quals.is_const) {
        (false, false) => "",
        (false, true) => "K",
        (true, false) => "V",
        (true, true) => "VK",
    }
}

/// The one-letter codes of the builtin types, which are never substituted.
fn builtin(ty: &Type) -> Option<&'static str> {
    Some(match ty {
        Type::Void => "v",
        Type::Int(kind) => match kind {
            IntKind::Bool => "b",
            IntKind::Char => "c",
            IntKind::SChar => "a",
            IntKind::UChar => "h",
            IntKind::Short => "s",
            IntKind::UShort => "t",
            IntKind::Int => "i",
            IntKind::UInt => "j",
            IntKind::Long => "l",
            IntKind::ULong => "m",
            IntKind::LongLong => "x",
            IntKind::ULongLong => "y",
        },
        Type::Float(FloatKind::Float) => "f",
        Type::Float(FloatKind::Double) => "d",
        _ => return None,
    })
}

/// `S_` for the first component, then `S0_`, `S1_`, ... in base 36 (digits, then capitals).
fn substitution(index: usize) -> String {
    if index == 0 {
        return "S_".into();
    }
    let mut n = index - 1;
    let mut digits = Vec::new();
    loop {
        let d = (n % 36) as u8;
        digits.push(if d < 10 { b'0' + d } else { b'A' + d - 10 });
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    format!("S{}_", String::from_utf8(digits).expect("ASCII digits"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StructId;

    struct Names;
    impl StructLayouts for Names {
        fn struct_size_align(&self, _: StructId) -> (u64, u64) {
            (8, 4)
        }
        fn struct_name(&self, _: StructId) -> &str {
            "Pair"
        }
    }

    fn mangle(name: &str, params: &[Type]) -> String {
        mangle_function(name, &params.iter().collect::<Vec<_>>(), &Names)
    }

    fn ptr(t: Type) -> Type {
        Type::pointer_to(t)
    }

    fn cptr(t: Type) -> Type {
        Type::const_pointer_to(t)
    }

    // Expected names are nvcc 13.5's (`nvcc -arch=sm_90 -rdc=true -ptx`); tests/mangling_oracle.rs
    // asks nvcc itself for many more.
    #[test]
    fn names_nvcc_gives() {
        let pair = Type::Struct(StructId(0));
        assert_eq!(mangle("k0", &[]), "_Z2k0v");
        assert_eq!(mangle("k1", &[ptr(Type::INT), Type::INT]), "_Z2k1Pii");
        assert_eq!(mangle("k2", &[cptr(Type::INT), cptr(Type::INT), ptr(pair.clone()), ptr(pair.clone()), pair.clone()]), "_Z2k2PKiS0_P4PairS2_S1_");
        assert_eq!(mangle("k4", &[Type::Dim3, Type::Stream, Type::Event, Type::CudaError, Type::size_t(), Type::Stream]), "_Z2k44dim3P11CUstream_stP10CUevent_st9cudaErrormS1_");
        assert_eq!(
            mangle("k5", &[ptr(ptr(Type::INT)), ptr(cptr(Type::INT)), cptr(ptr(Type::INT)), cptr(pair.clone()), cptr(pair), ptr(Type::Void), cptr(Type::Void)]),
            "_Z2k5PPiPPKiPKS_PK4PairS8_PvPKv"
        );
    }

    #[test]
    fn substitution_numbers_are_base_36() {
        assert_eq!(substitution(0), "S_");
        assert_eq!(substitution(1), "S0_");
        assert_eq!(substitution(10), "S9_");
        assert_eq!(substitution(11), "SA_");
        assert_eq!(substitution(36), "SZ_");
        assert_eq!(substitution(37), "S10_");
    }
}
