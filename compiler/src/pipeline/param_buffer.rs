//! The size of each device-side launch's parameter buffer, checked at the launch as the kernel
//! language's sema checks a `<<<>>>` ([`crate::layout::ParamLayout::check_size`], the one
//! rule): over the documented 4096 bytes, which runtimes before CUDA 12.1 refuse, is `W0305`
//! (an error with `--strict-param-limit`, the warning policy's); over what the target can
//! pass at all (32764 bytes on sm_70+ at 64 bits, else 4096), `E0304`. The words are sema's
//! ([`crate::diag::words`]), with the kernel's definition as a secondary label where its
//! debug information (or the IR's text) shows it. This is how CUDA C++ and LLVM IR get the
//! checks: their launches reach cdpc as the documented V1 sequence ([`super::launch`]), whose
//! `cudaGetParameterBuffer(align, size)` states the buffer's size.
//!
//! The same walk over the launches finds each pointer into the launching thread's local memory
//! (an `alloca`) or its block's shared memory (address space 3) stored into a launch's buffer,
//! which a child grid cannot see (the CUDA programming guide), at the launch, in the kernel
//! language's words. nvcc compiles such a launch with a warning for local memory ("A pointer
//! to local memory was stored into the parameter buffer ... Dereferencing this within the launch
//! is undefined") and says nothing of shared memory (nvcc 13.5, measured), so in CUDA C++ it is
//! the warning `W0317` (a program nvcc builds builds; `--deny W0317` refuses it); in LLVM IR it
//! is the kernel language's error, `E0307`.
//!
//! Invariant: the module is never changed; a `.cdp` program's launches (`!cdpc.span`), which
//! its sema has checked already, get no second diagnostic, and a launch that is not in the
//! documented shape is left to [`super::launch::lower`] (`E1010`).

use super::launch::Launch;
use super::SourceText;
use crate::diag::{words, Code, Diagnostic, Span};
use crate::layout::ParamLayout;
use crate::llvm::operand;
use crate::target::Target;
use inkwell::values::FunctionValue;

/// At each recognised launch with a parameter buffer: `W0305` or `E0304` where the buffer is
/// over the limits of `target`, `E0307` (`W0317` in nvcc's dialect) for each pointer to the
/// parent's local or shared memory stored into it (module docs).
pub fn check<'ctx>(module: &inkwell::module::Module<'ctx>, sites: &super::launch::Sites<'ctx>, target: &Target, source: &SourceText, nvcc_dialect: bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for l in sites.launches.iter().filter(|l| l.buffer.is_some() && !super::location::is_cdp_launch(l.call)) {
        out.extend(buffer_size(module, l, target, source));
        out.extend(child_pointers(l, source, if nvcc_dialect { Code::ParentMemoryToChild } else { Code::LocalPointerToChild }));
    }
    out
}

/// `W0305` or `E0304` where launch `l`'s buffer is over the limits of `target`.
fn buffer_size(module: &inkwell::module::Module<'_>, l: &Launch<'_>, target: &Target, source: &SourceText) -> Option<Diagnostic> {
    let layout = ParamLayout { offsets: Vec::new(), size: l.size, align: 1 };
    // The kernel, when the launch names one (not a pointer loaded at run time).
    let kernel = operand(l.call, 0).and_then(|k| module.get_function(&k.get_name().to_string_lossy()));
    let short = kernel.map(kernel_name);
    let name = short.as_deref().map_or_else(|| "the launched kernel".to_string(), |n| format!("`{n}`"));
    let d = match layout.check_size(target) {
        Ok(None) => return None,
        Ok(Some(over)) => {
            let [first, second] = words::OVER_4K_NOTES;
            Diagnostic::new(Code::ParamBufferOver4K, Span::new(0, 0), words::over_4k(&name, over.size)).with_note(first).with_note(second)
        }
        Err(e) => Diagnostic::new(Code::ParamBufferTooLarge, Span::new(0, 0), words::too_large(&name, e.size, e.limit)).with_note(words::too_large_note(
            &target.sm,
            target.address_size.pointer_bytes() as u32 * 8,
            e.limit,
        )),
    };
    let too_large = d.code == Code::ParamBufferTooLarge;
    let mut d = at_launch(d, l.call, l, source);
    // The name as its definition writes it: the last part of a qualified one, without
    // template arguments.
    let word = short.as_deref().map(|n| n.split('<').next().unwrap_or(n)).map(|n| n.rsplit("::").next().unwrap_or(n)).unwrap_or_default();
    if let Some(mut label) = kernel.and_then(|k| source.definition_label(k, word, words::OVER_4K_DECLARED)) {
        if too_large {
            // A kernel no launch can pass its parameters to is wrong where it is defined, as the
            // kernel language's sema and nvcc's ptxas ("Formal parameter space overflowed")
            // place it: the definition first, each launch beside it.
            label.primary = true;
            for launch in &mut d.labels {
                launch.primary = false;
                if launch.message.is_empty() {
                    launch.message = "launched here".to_string();
                }
            }
            d.labels.insert(0, label);
        } else {
            d.labels.push(label);
        }
    }
    Some(d)
}

/// `d` placed at instruction `at` of launch `l`: in CUDA C++ the launch's line and column are
/// its kernel's name, and the label covers the whole `<<<>>>`, as sema's span does.
fn at_launch(d: Diagnostic, at: inkwell::values::InstructionValue<'_>, l: &Launch<'_>, source: &SourceText) -> Diagnostic {
    let mut d = source.place(d, at, &l.function.get_name().to_string_lossy());
    if let Some(primary) = d.labels.first_mut() {
        let text = primary.file.as_ref().map_or(source.text.as_str(), |f| f.text.as_str());
        primary.span = launch_extent(text, primary.span);
    }
    d
}

/// `code` (`E0307`, or `W0317` in nvcc's dialect) for each value stored into launch `l`'s
/// buffer that points into the launching thread's local memory or its block's shared memory.
fn child_pointers(l: &Launch<'_>, source: &SourceText, code: Code) -> Vec<Diagnostic> {
    use inkwell::values::{AsValueRef, InstructionOpcode, InstructionValue};
    let Some(buffer) = l.buffer else { return Vec::new() };
    // The stores into the buffer, at its start or at a constant offset from it.
    let mut places = vec![buffer.as_value_ref()];
    let mut stored = Vec::new();
    while let Some(place) = places.pop() {
        // SAFETY: the users of a live value of a valid module are instructions of it.
        for user in super::clone::users(place).instructions.into_iter().map(|u| unsafe { InstructionValue::new(u) }) {
            match user.get_opcode() {
                InstructionOpcode::GetElementPtr => places.push(user.as_value_ref()),
                InstructionOpcode::Store if operand(user, 1).is_some_and(|p| p.as_value_ref() == place) => {
                    if let Some(value) = operand(user, 0) {
                        stored.push((user, value.as_value_ref()));
                    }
                }
                _ => {}
            }
        }
    }
    // In the order of the arguments as the function writes them.
    let order: std::collections::HashMap<_, usize> = l.function.get_basic_blocks().iter().flat_map(|b| b.get_instructions()).enumerate().map(|(i, inst)| (inst.as_value_ref(), i)).collect();
    stored.sort_by_key(|(store, _)| order.get(&store.as_value_ref()).copied().unwrap_or(usize::MAX));
    let mut out = Vec::new();
    for (store, value) in stored {
        let Some(space) = memory_of(value) else { continue };
        let d = Diagnostic::new(code, Span::new(0, 0), format!("a pointer to {space} is passed to a child kernel"))
            .with_primary_message(format!("this points into the parent's {space}"))
            .with_note("child grids cannot access their parent's local or shared memory")
            .with_note("use global memory: a `__device__` variable, or memory from `cudaMalloc`");
        out.push(at_launch(d, if store.get_debug_location().is_some() { store } else { l.call }, l, source));
    }
    out
}

/// "local memory" or "shared memory" where `value` (a stored argument) points into the
/// launching thread's stack or its block's shared memory: through address computations and
/// casts, to an `alloca` or an object of address space 5 (local) or 3 (shared).
fn memory_of(value: inkwell::llvm_sys::prelude::LLVMValueRef) -> Option<&'static str> {
    use inkwell::llvm_sys::core::*;
    use inkwell::llvm_sys::LLVMOpcode;
    use inkwell::llvm_sys::LLVMTypeKind;
    let mut v = value;
    // SAFETY: `v` is a live value of a valid module; only read.
    unsafe {
        if LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMTypeKind::LLVMPointerTypeKind {
            return None;
        }
        for _ in 0..64 {
            match LLVMGetPointerAddressSpace(LLVMTypeOf(v)) {
                3 => return Some("shared memory"),
                5 => return Some("local memory"),
                _ => {}
            }
            if !LLVMIsAAllocaInst(v).is_null() {
                return Some("local memory");
            }
            let op = if !LLVMIsAInstruction(v).is_null() {
                LLVMGetInstructionOpcode(v)
            } else if !LLVMIsAConstantExpr(v).is_null() {
                LLVMGetConstOpcode(v)
            } else {
                return None;
            };
            match op {
                LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast => v = LLVMGetOperand(v, 0),
                _ => return None,
            }
        }
    }
    None
}

/// A kernel as messages name it: its namespaces from its symbol and its name as its debug
/// information spells it (`ns::kern<1100>` for `_ZN2ns4kernILi1100EEEvNS_4BlobIXT_EEEPi`),
/// either where the other is missing, the symbol where both are (a C name).
fn kernel_name(kernel: FunctionValue<'_>) -> String {
    let symbol = kernel.get_name().to_string_lossy().into_owned();
    let mut parts = symbol_parts(&symbol);
    match (super::location::subprogram_name(kernel), parts.last_mut()) {
        (Some(spelled), Some(last)) if spelled.starts_with(last.as_str()) => *last = spelled,
        (Some(spelled), None) => return spelled,
        _ => {}
    }
    if parts.is_empty() {
        symbol
    } else {
        parts.join("::")
    }
}

/// The source names an Itanium symbol's name starts with (`_ZN2ns4kernI...` is `ns`, `kern`),
/// up to the first part that is no source name ([`super::itanium::name_parts`]); empty for a
/// symbol that is not one (a C name) or that the reader does not read.
fn symbol_parts(symbol: &str) -> Vec<String> {
    super::itanium::name_parts(symbol).unwrap_or_default().into_iter().map_while(|part| part.map(str::to_string)).collect()
}

/// The launch expression that starts with the name at `name` in `text`
/// (`child<int><<<grid, block>>>(args)`): through the `<<<...>>>` and the balanced parentheses
/// of the arguments after the name (qualified, with template arguments). The name alone where
/// no `<<<` follows it (a launch written through a macro's argument), `name` itself where it is
/// no name.
fn launch_extent(text: &str, name: crate::diag::Span) -> crate::diag::Span {
    let bytes = text.as_bytes();
    let Some(mut at) = (name.start < name.end).then_some(name.end as usize).filter(|&e| e <= bytes.len()) else { return name };
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    // Text from `open` balanced up to its `close`, or `None`.
    let balanced = |from: usize, open: u8, close: u8| {
        let mut depth = 0usize;
        for (i, &b) in bytes.iter().enumerate().skip(from) {
            if b == open {
                depth += 1;
            } else if b == close {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            } else if b == b';' || b == b'{' || b == b'}' {
                return None;
            }
        }
        None
    };
    // The rest of a qualified name and its template arguments (`ns::kern<1100>`; Clang's
    // column is the first part's).
    loop {
        let next = skip_space(at);
        if let Some(after) = text[next..].strip_prefix("::") {
            let ident = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
            if ident == 0 {
                break;
            }
            at = next + 2 + ident;
        } else if !text[next..].starts_with("<<<") && text[next..].starts_with('<') {
            let Some(end) = balanced(next, b'<', b'>') else { break };
            at = end;
        } else {
            break;
        }
    }
    let callee = crate::diag::Span::new(name.start as usize, at);
    at = skip_space(at);
    if !text[at..].starts_with("<<<") {
        return callee;
    }
    let Some(close) = text[at..].find(">>>").filter(|&c| !text[at..at + c].contains(';')) else { return callee };
    at = skip_space(at + close + 3);
    if bytes.get(at) != Some(&b'(') {
        return callee;
    }
    match balanced(at, b'(', b')') {
        Some(end) => crate::diag::Span::new(name.start as usize, end),
        None => callee,
    }
}

#[cfg(test)]
mod tests {
    use super::{launch_extent, symbol_parts};
    use crate::diag::Span;

    #[test]
    fn a_launchs_label_covers_the_launch_expression() {
        let text = "    child<<<1, 1>>>(table, f(out));\n    tmpl<int, 2><<<g, b, 0, s>>>(x);\n    child(x);\n";
        // The name's span, as Clang's column gives it.
        let name = |start: usize, word: &str| Span::new(start, start + word.len());
        let child = name(text.find("child").unwrap(), "child");
        assert_eq!(&text[launch_extent(text, child).range()], "child<<<1, 1>>>(table, f(out))");
        let tmpl = name(text.find("tmpl").unwrap(), "tmpl");
        assert_eq!(&text[launch_extent(text, tmpl).range()], "tmpl<int, 2><<<g, b, 0, s>>>(x)");
        let text2 = "    ns::kern<1100><<<1, 1>>>(b, out);\n    LAUNCH(ns::kern<1100>, b, out);\n";
        let ns = name(text2.find("ns").unwrap(), "ns");
        assert_eq!(&text2[launch_extent(text2, ns).range()], "ns::kern<1100><<<1, 1>>>(b, out)");
        let in_macro = name(text2.rfind("ns").unwrap(), "ns");
        assert_eq!(&text2[launch_extent(text2, in_macro).range()], "ns::kern<1100>");
        // A call that is no launch keeps the name.
        let plain = name(text.rfind("child").unwrap(), "child");
        assert_eq!(launch_extent(text, plain), plain);
    }

    #[test]
    fn kernels_are_named_from_their_symbols() {
        assert_eq!(symbol_parts("_Z5child5TablePi"), ["child"]);
        assert_eq!(symbol_parts("_ZN2ns4kernILi1100EEEvNS_4BlobIXT_EEEPi"), ["ns", "kern"]);
        assert_eq!(symbol_parts("_ZL6staticPi"), ["static"]);
        assert!(symbol_parts("child").is_empty());
    }
}
