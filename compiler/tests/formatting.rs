//! The checkout is formatted as `cargo fmt --all` formats it (rustfmt.toml: the code's
//! long-line style), so that a contributor's `cargo fmt` changes only what they wrote.
//!
//! rustfmt's output can change between its releases, and CI installs whichever Rust is current:
//! the check runs only with the rustfmt the checkout was last formatted with ([`FORMATTED_WITH`]),
//! and otherwise prints why not. After formatting with a newer rustfmt, update the constant.

use std::process::Command;

/// `rustfmt --version`'s first two words where the checkout was last formatted.
const FORMATTED_WITH: &str = "rustfmt 1.9.0-stable";

#[test]
fn the_checkout_is_formatted_as_cargo_fmt_formats_it() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let version = Command::new(&cargo).current_dir(&root).args(["fmt", "--version"]).output();
    let version = match version {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).split_whitespace().take(2).collect::<Vec<_>>().join(" "),
        _ => {
            println!("skipped: no rustfmt (`rustup component add rustfmt`)");
            return;
        }
    };
    if version != FORMATTED_WITH {
        println!("skipped: {version} may format otherwise than {FORMATTED_WITH}, which formatted the checkout");
        return;
    }
    let out = Command::new(&cargo).current_dir(&root).args(["fmt", "--all", "--", "--check", "-l"]).output().expect("cargo fmt runs");
    let files = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "run `cargo fmt --all`; these files are not formatted:\n{files}{}", String::from_utf8_lossy(&out.stderr));
}
