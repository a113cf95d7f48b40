//! The `.extern` declarations cdpc writes for the device runtime have the documented forms
//! (the programming guide's "Device-side Launch from PTX", transcribed in runtime-shim and
//! tested against the guide's text there): same order, types and alignments of parameters;
//! only the parameter names may be LLVM's.

use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::pipeline::aggregate::Granularity;
use cdpc::{AddressSize, LaunchAbi};
use runtime_shim::entry_points::{EntryPoint, GET_PARAMETER_BUFFER, GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE, LAUNCH_DEVICE_V2};

const PROGRAM: &str = r#"
extern "C" __global__ void child(int *data, double x) { data[threadIdx.x] += (int)x; }
extern "C" __global__ void parent(int *data) { child<<<2, 64>>>(data + 128 * threadIdx.x, 1.5); }
"#;

fn ptx(abi: LaunchAbi, address_size: AddressSize) -> String {
    ptx_aggregated(abi, address_size, Granularity::Off)
}

fn ptx_aggregated(abi: LaunchAbi, address_size: AddressSize, aggregate: Granularity) -> String {
    let mut options = CompileOptions { emit: Emit::Ptx, aggregate, ..CompileOptions::default() };
    options.target.launch_abi = abi;
    options.target.address_size = address_size;
    let compiled = driver::compile(PROGRAM, &options).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8(compiled.output).unwrap()
}

/// A declaration with whitespace removed and parameter names replaced by their position, so
/// that LLVM's names (`cudaLaunchDevice_param_0`) and the guide's (`func`) compare equal.
fn normalize(declaration: &str, symbol: &str) -> String {
    let compact: String = declaration.split_whitespace().collect::<Vec<_>>().join(" ");
    let (head, params) = compact.split_once(symbol).expect("the declaration names its symbol");
    let params = params.trim().trim_start_matches('(').trim_end_matches(';').trim().trim_end_matches(')');
    let params: Vec<String> = params
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .enumerate()
        .map(|(i, p)| {
            let words: Vec<&str> = p.split_whitespace().collect();
            let (name, ty) = words.split_last().expect("a parameter has a name");
            let array = name.find('[').map(|at| &name[at..]).unwrap_or("");
            format!("{} p{i}{array}", ty.join(" "))
        })
        .collect();
    let head = head.replace(' ', "").replace("(.param.b32func_retval0)", "(.param .b32 ret)").replace("(.param.b64func_retval0)", "(.param .b64 ret)");
    format!("{head} {symbol} ({})", params.join(", "))
}

fn declaration_in<'a>(ptx: &'a str, symbol: &str) -> &'a str {
    let start = ptx.find(&format!(") {symbol}\n")).or_else(|| ptx.find(&format!(") {symbol}("))).unwrap_or_else(|| panic!("no declaration of {symbol}:\n{ptx}"));
    let start = ptx[..start].rfind(".extern").expect("declaration starts with .extern");
    let end = start + ptx[start..].find(';').expect("declaration ends with ;");
    &ptx[start..=end]
}

fn check(abi: LaunchAbi, address_size: AddressSize, entry_points: &[EntryPoint]) {
    check_ptx(&ptx(abi, address_size), address_size, entry_points);
}

fn check_ptx(ptx: &str, address_size: AddressSize, entry_points: &[EntryPoint]) {
    let bits = if address_size == AddressSize::Bits64 { 64 } else { 32 };
    assert!(ptx.contains(&format!(".address_size {bits}")), "{ptx}");
    for ep in entry_points {
        let ours = normalize(declaration_in(ptx, ep.ptx_symbol), ep.ptx_symbol);
        let documented = normalize(&ep.ptx_extern_declaration(bits), ep.ptx_symbol);
        assert_eq!(ours, documented, "{} at {bits} bits", ep.ptx_symbol);
    }
}

#[test]
fn v1_declarations_at_64_bits() {
    check(LaunchAbi::V1, AddressSize::Bits64, &[GET_PARAMETER_BUFFER, LAUNCH_DEVICE]);
}

#[test]
fn v1_declarations_at_32_bits() {
    check(LaunchAbi::V1, AddressSize::Bits32, &[GET_PARAMETER_BUFFER, LAUNCH_DEVICE]);
}

#[test]
fn v2_declarations_at_64_bits() {
    check(LaunchAbi::V2, AddressSize::Bits64, &[GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE_V2]);
}

#[test]
fn v2_declarations_at_32_bits() {
    check(LaunchAbi::V2, AddressSize::Bits32, &[GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE_V2]);
}

/// Warp aggregation at V2 makes its launches through V1 (docs/AGGREGATION.md: the warp's
/// aggregated launch and the threads' own where the group falls back): the module, whose every
/// launch is aggregated, declares the V1 pair once each in its documented form and no V2 entry
/// point. Aggregation is done at the 64-bit address size only (ptxas assembles no 32-bit code
/// for sm_90): at 32 bits the launch stays as it is, declared in its 32-bit V2 form.
#[test]
fn v2_with_warp_aggregation_declares_the_v1_pair() {
    let ptx = ptx_aggregated(LaunchAbi::V2, AddressSize::Bits64, Granularity::Warp);
    check_ptx(&ptx, AddressSize::Bits64, &[GET_PARAMETER_BUFFER, LAUNCH_DEVICE]);
    for symbol in ["cudaGetParameterBuffer", "cudaLaunchDevice"] {
        assert_eq!(ptx.matches(&format!(") {symbol}\n")).count(), 1, "{symbol} declared once:\n{ptx}");
    }
    assert!(!ptx.contains("V2"), "{ptx}");
    let narrow = ptx_aggregated(LaunchAbi::V2, AddressSize::Bits32, Granularity::Warp);
    check_ptx(&narrow, AddressSize::Bits32, &[GET_PARAMETER_BUFFER_V2, LAUNCH_DEVICE_V2]);
    assert!(!narrow.contains("__agg") && !narrow.contains(") cudaLaunchDevice\n"), "{narrow}");
}

#[test]
fn normalization_keeps_types_and_drops_names() {
    let a = ".extern .func (.param .b32 func_retval0) cudaLaunchDevice\n(\n .param .b64 func,\n .param .align 4 .b8 grid[12]\n)\n;";
    let b = ".extern .func  (.param .b32 func_retval0) cudaLaunchDevice(.param .b64 x_param_0, .param .align 4 .b8 x_param_1[12]);";
    assert_eq!(normalize(a, "cudaLaunchDevice"), normalize(b, "cudaLaunchDevice"));
    let c = ".extern .func (.param .b32 func_retval0) cudaLaunchDevice(.param .b32 x, .param .align 4 .b8 y[12]);";
    assert_ne!(normalize(a, "cudaLaunchDevice"), normalize(c, "cudaLaunchDevice"));
}
