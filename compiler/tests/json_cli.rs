//! `--error-format json` on the command line: one JSON object per line on stderr, nothing
//! else, and the warning policy (`-Werror`, `--deny`, `--allow`) applied as for text.

use crate::build_common::{cdpc, json_lines};

const WARNS: &str = "__device__ int f(int x) { if (x) return 1; }\n__global__ void k(int *p) { p[0] = f(p[1]); }\n";

#[test]
fn json_errors_and_warnings_follow_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("w.cdp"), WARNS).unwrap();
    std::fs::write(d.join("e.cdp"), "__global__ void k(int *p) {\n    p[0] = undefined_name;\n}\n").unwrap();
    let base = ["--emit", "ptx", "-o", "-", "--error-format", "json"];

    let out = cdpc(d, &[&["e.cdp"][..], &base].concat());
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "no summary line in JSON mode");
    let e = &lines[0];
    assert_eq!((e["code"].as_str(), e["severity"].as_str(), e["file"].as_str()), (Some("E0100"), Some("error"), Some("e.cdp")));
    let label = &e["labels"][0];
    assert_eq!(label["primary"], true);
    assert_eq!((label["line_start"].as_u64(), label["column_start"].as_u64()), (Some(2), Some(12)));
    assert_eq!((label["line_end"].as_u64(), label["column_end"].as_u64()), (Some(2), Some(26)));

    let warn = cdpc(d, &[&["w.cdp"][..], &base].concat());
    assert!(warn.status.success());
    let lines = json_lines(&warn);
    assert_eq!(lines.len(), 1);
    assert_eq!((lines[0]["code"].as_str(), lines[0]["severity"].as_str()), (Some("W0209"), Some("warning")));

    for policy in [&["-Werror"][..], &["--deny", "W0209"][..]] {
        let out = cdpc(d, &[&["w.cdp"][..], &base, policy].concat());
        assert_eq!(out.status.code(), Some(1), "{policy:?}");
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0]["code"].as_str(), lines[0]["severity"].as_str()), (Some("W0209"), Some("error")), "{policy:?}");
    }
    let out = cdpc(d, &[&["w.cdp"][..], &base, &["--allow", "W0209"]].concat());
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    // A file that cannot be read is a JSON line too, with its code (E0705).
    let out = cdpc(d, &[&["missing.cdp"][..], &base].concat());
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert!(lines[0]["code"] == "E0705" && lines[0]["message"].as_str().unwrap().contains("missing.cdp"), "{}", lines[0]);
}
