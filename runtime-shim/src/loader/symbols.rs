//! Finding a kernel by the name it has in the source.
//!
//! Manifests and `cdpc run --kernel` name kernels as written (`child`). A kernel with
//! `extern "C"` has that symbol; any other has its Itanium C++ name (`_Z5childPii`), as nvcc
//! and cdpc both write it. [`kernel_symbol`] finds the symbol in the cubin's bytes (the ELF
//! string table holds every symbol, NUL-terminated), so neither the manifests nor the runner
//! need to know how a kernel's parameters are mangled.

/// The symbol of the kernel written `name`: `name` itself when the cubin has that symbol (or
/// when `name` is already mangled), else the one `_Z<len><name>...` symbol the cubin holds.
/// Several such symbols (overloads) or none leave `name` as it is, so that the driver's
/// "not found" names what was asked for.
pub fn kernel_symbol(cubin: &[u8], name: &str) -> String {
    let exact = [b"\0", name.as_bytes(), b"\0"].concat();
    if name.starts_with("_Z") || contains(cubin, &exact) {
        return name.to_string();
    }
    let prefix = format!("\0_Z{}{name}", name.len());
    let mut found: Vec<&[u8]> = Vec::new();
    let mut from = 0;
    while let Some(at) = find(&cubin[from..], prefix.as_bytes()) {
        let start = from + at + 1;
        let end = cubin[start..].iter().position(|b| *b == 0).map_or(cubin.len(), |n| start + n);
        let symbol = &cubin[start..end];
        // `.nv.info._Z...` section names and the like are not symbols; symbols end at NUL and
        // hold only identifier characters.
        if symbol.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') && !found.contains(&symbol) {
            found.push(symbol);
        }
        from = start;
    }
    // The passes name their state after the kernel (`_Z6parentPiS___agg_grid_ids`, the kernel's
    // symbol and `__` and a word): not another kernel of that name. No mangled parameter list
    // goes on with `__`, so an overload is never taken for such a name.
    let all = found.clone();
    found.retain(|s| !all.iter().any(|k| k.len() < s.len() && s.starts_with(k) && s[k.len()..].starts_with(b"__")));
    match found.as_slice() {
        [one] => String::from_utf8_lossy(one).into_owned(),
        _ => name.to_string(),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::kernel_symbol;

    // A string table as a cubin has it: symbols and section names, NUL-separated.
    const STRTAB: &[u8] = b"\0.shstrtab\0.nv.info._Z5childPii\0_Z5childPii\0parent\0_Z6child2Pi\0_Z6child2Pf\0";

    #[test]
    fn c_names_are_found_as_they_are() {
        assert_eq!(kernel_symbol(STRTAB, "parent"), "parent");
    }

    #[test]
    fn cxx_names_are_found_by_their_mangled_prefix() {
        assert_eq!(kernel_symbol(STRTAB, "child"), "_Z5childPii");
        assert_eq!(kernel_symbol(STRTAB, "_Z5childPii"), "_Z5childPii");
    }

    #[test]
    fn overloads_and_unknown_names_are_left_to_the_driver() {
        assert_eq!(kernel_symbol(STRTAB, "child2"), "child2");
        assert_eq!(kernel_symbol(STRTAB, "missing"), "missing");
        // `chil` is a prefix of `child`'s name but not a name: `_Z4chil` is not in the table.
        assert_eq!(kernel_symbol(STRTAB, "chil"), "chil");
    }

    #[test]
    fn the_passes_state_named_after_a_kernel_is_not_another_kernel() {
        // Grid aggregation's per-grid state of `parent` (a cubin of samples/null_stream_order.cdp
        // at -faggregate-launches=grid held both); overloads stay ambiguous.
        let table = b"\0_Z6parentPiS_\0_Z6parentPiS___agg_grid_ids\0_Z5childPi\0_Z5childPii\0";
        assert_eq!(kernel_symbol(table, "parent"), "_Z6parentPiS_");
        assert_eq!(kernel_symbol(table, "child"), "child");
    }
}
