//! `cdpc --cache-status`: where cdpc's cache folder is, what it holds against its bound, and the
//! fillers making headers in it now (`cdpc::front::cuda::cache`, `cdpc::front::cuda::filler`).

use cdpc::front::cuda::cache::{self, Cache, CacheEnv, Fill};
use cdpc::front::cuda::filler;
use std::fmt::Write;

/// The report, as printed: one line for the folder, one per kind of entry, the total, then the
/// running fillers (each with its process, how long it has run, what it makes and the command
/// line of the compilation it makes them for). `Err` with `E1005`'s text for a malformed bound.
pub(crate) fn status(env: &CacheEnv) -> Result<String, String> {
    let cache = Cache::from_env(env).map_err(|d| d.message.clone())?;
    let mut out = String::new();
    let Some(cache) = cache else {
        let set = |v: &Option<std::ffi::OsString>| v.as_ref().is_some_and(|v| !v.is_empty());
        // `Cache::from_env`'s reasons, in its order: a folder is found or not, then the bound.
        let why = if env.cache_dir.as_ref().is_some_and(|d| d.is_empty()) {
            "`CDPC_CACHE_DIR` is empty"
        } else if env.cache_dir.is_none() && !set(&env.xdg_cache_home) && !set(&env.home) {
            "no `CDPC_CACHE_DIR`, `XDG_CACHE_HOME` or `HOME`"
        } else {
            "`CDPC_CACHE_MAX_SIZE` is 0"
        };
        let _ = writeln!(out, "cache: none ({why})");
        return Ok(out);
    };
    let from = if env.cache_dir.is_some() {
        "CDPC_CACHE_DIR"
    } else if env.xdg_cache_home.as_ref().is_some_and(|d| !d.is_empty()) {
        "XDG_CACHE_HOME"
    } else {
        "HOME"
    };
    let exists = cache.dir.is_dir();
    let _ = writeln!(out, "cache: {} (from {from}){}", cache.dir.display(), if exists { "" } else { ", not made yet" });
    let usage = cache::usage(&cache);
    for (kind, current, other, bytes) in &usage.kinds {
        let _ = writeln!(out, "  {:<10}{current} headers of this cdpc, {other} of other versions, {}", format!("{kind}/"), size(*bytes));
    }
    let _ = writeln!(out, "  total     {} of {} (CDPC_CACHE_MAX_SIZE)", size(usage.total), size(cache.max_size));
    let running = if exists { filler::running(&cache.dir) } else { Vec::new() };
    let _ = writeln!(out, "fillers running: {}", running.len());
    for f in running {
        let making = match (f.making & Fill::WRAPPER != 0, f.making & Fill::PREAMBLE != 0) {
            (true, true) => "the CUDA wrapper's header and the file's preamble",
            (true, false) => "the CUDA wrapper's header",
            (false, true) => "the file's preamble",
            (false, false) => "nothing",
        };
        let _ = writeln!(out, "  pid {}, {:.1} s, making {making}: {}", f.pid, f.age.as_secs_f64(), f.command.join(" "));
    }
    Ok(out)
}

/// `bytes` in the largest binary unit that keeps a whole part: `512 B`, `9.6 MiB`, `2.0 GiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(10_066_329), "9.6 MiB");
        assert_eq!(size(2 << 30), "2.0 GiB");
    }

    #[test]
    fn a_folder_not_made_yet_and_no_cache() {
        let dir = tempfile::tempdir().unwrap();
        let env = CacheEnv { cache_dir: Some(dir.path().join("c").into()), ..CacheEnv::default() };
        let text = status(&env).unwrap();
        assert!(text.starts_with(&format!("cache: {} (from CDPC_CACHE_DIR), not made yet\n", dir.path().join("c").display())), "{text}");
        assert!(text.contains("  pch/      0 headers of this cdpc, 0 of other versions, 0 B\n"), "{text}");
        assert!(text.ends_with("fillers running: 0\n"), "{text}");
        let off = CacheEnv { cache_dir: Some("".into()), ..CacheEnv::default() };
        assert_eq!(status(&off).unwrap(), "cache: none (`CDPC_CACHE_DIR` is empty)\n");
        let homeless = CacheEnv { max_size: Some("5G".into()), ..CacheEnv::default() };
        assert_eq!(status(&homeless).unwrap(), "cache: none (no `CDPC_CACHE_DIR`, `XDG_CACHE_HOME` or `HOME`)\n");
        let nothing_kept = CacheEnv { cache_dir: Some(dir.path().into()), max_size: Some("0".into()), ..CacheEnv::default() };
        assert_eq!(status(&nothing_kept).unwrap(), "cache: none (`CDPC_CACHE_MAX_SIZE` is 0)\n");
        let bad = CacheEnv { cache_dir: Some(dir.path().into()), max_size: Some("lots".into()), ..CacheEnv::default() };
        assert!(status(&bad).unwrap_err().contains("CDPC_CACHE_MAX_SIZE=lots"));
    }
}
