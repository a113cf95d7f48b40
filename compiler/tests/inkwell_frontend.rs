//! The inkwell front-end example: its PTX has the nvcc launch sequence for both launches, and
//! its cubin links when the NVIDIA tools are there.

#[path = "../examples/inkwell_frontend.rs"]
mod example;

use cdpc::Target;

fn body<'a>(ptx: &'a str, kernel: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {kernel}(")).unwrap_or_else(|| panic!("no kernel {kernel}:\n{ptx}"));
    let rest = &ptx[start..];
    &rest[..rest.find("\n}").unwrap_or(rest.len())]
}

fn in_order(text: &str, needles: &[&str]) {
    let mut at = 0;
    for n in needles {
        match text[at..].find(n) {
            Some(i) => at += i + n.len(),
            None => panic!("`{n}` missing or out of order in:\n{text}"),
        }
    }
}

#[test]
fn ptx_has_both_launches_in_the_v2_sequence() {
    let ptx = example::build_ptx(&Target::default()).unwrap();
    assert!(ptx.contains(".entry child(") && ptx.contains(".entry twice("), "{ptx}");
    assert!(ptx.contains(".extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2"), "{ptx}");
    let parent = body(&ptx, "parent");
    in_order(
        parent,
        &[
            "__cudaCDP2GetParameterBufferV2",
            "setp.eq",
            "+8], 7;", // the int 7 at offset 8, after the pointer
            "__cudaCDP2LaunchDeviceV2",
            "__cudaCDP2GetParameterBufferV2",
            "__cudaCDP2LaunchDeviceV2",
        ],
    );
    // The tail-launch stream handle (cudaStreamTailLaunch = 3).
    assert!(parent.contains("], 3;"), "{parent}");
}

#[test]
fn cubin_links_when_the_tools_exist() {
    let ptx = example::build_ptx(&Target::default()).unwrap();
    match example::build_cubin(&ptx, &Target::default()) {
        Ok(cubin) => {
            assert_eq!(&cubin[..4], b"\x7fELF");
            let has = |needle: &[u8]| cubin.windows(needle.len()).any(|w| w == needle);
            assert!(has(b"parent") && has(b"child") && has(b"twice"));
        }
        Err(cdpc::toolchain::ToolError::NotFound { .. }) => eprintln!("SKIPPED: NVIDIA tools not found"),
        Err(e) => panic!("{e}"),
    }
}
