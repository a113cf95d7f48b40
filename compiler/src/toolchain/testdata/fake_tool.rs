//! A stand-in for ptxas and nvlink in cdpc's toolchain tests, compiled by the tests with rustc
//! (no shell scripts). It reads what to do from the file beside it named like itself with the
//! extension `.mode` (`bin/ptxas.mode`), one step a line:
//!
//! ```text
//! write          write the file named after `-o`: "FAKE <tool> <args>"
//! stdout N       print N bytes of numbered lines to stdout
//! stderr N       print N bytes of numbered lines to stderr, then "LAST LINE"
//! exit N         exit with status N
//! abort          die of SIGABRT
//! sleep N        sleep N seconds (a tool that hangs)
//! ```
//!
//! No `.mode` file means `write`.

use std::io::Write;

fn lines(out: &mut dyn Write, bytes: usize) {
    let mut written = 0;
    let mut i = 0u64;
    while written < bytes {
        let line = format!("{i:0>99}\n");
        out.write_all(line.as_bytes()).unwrap();
        written += line.len();
        i += 1;
    }
}

fn main() {
    let exe = std::env::current_exe().unwrap();
    let tool = exe.file_name().unwrap().to_string_lossy().into_owned();
    let mode = std::fs::read_to_string(exe.with_extension("mode")).unwrap_or_else(|_| "write".into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    for step in mode.lines() {
        let (what, n) = step.split_once(' ').unwrap_or((step, "0"));
        let n: usize = n.trim().parse().unwrap_or(0);
        match what {
            "write" => {
                let out = args.iter().position(|a| a == "-o").and_then(|i| args.get(i + 1)).expect("-o");
                std::fs::write(out, format!("FAKE {tool} {}\n", args.join(" "))).unwrap();
            }
            "stdout" => lines(&mut std::io::stdout().lock(), n),
            "stderr" => {
                let mut err = std::io::stderr().lock();
                lines(&mut err, n);
                err.write_all(b"LAST LINE\n").unwrap();
            }
            "exit" => std::process::exit(n as i32),
            "abort" => std::process::abort(),
            "sleep" => std::thread::sleep(std::time::Duration::from_secs(n as u64)),
            "" => {}
            other => panic!("unknown step `{other}`"),
        }
    }
}
