//! Judging a run: against its manifest, and byte for byte against another compiler's run.
//! Pure host code, tested without a GPU.

use super::cuda::CudaError;
use super::manifest::{Check, ElemType, Manifest, Num};

/// What one run of a sample produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// Each buffer's bytes after the run, in manifest order.
    pub buffers: Vec<(String, Vec<u8>)>,
    /// Each `[[global]]`'s bytes after the run, in manifest order.
    pub globals: Vec<(String, Vec<u8>)>,
    /// What the kernels printed (captured from fd 1 around launch and synchronisation).
    pub stdout: Vec<u8>,
    /// The CUDA error of the launch or the synchronisation, if any.
    pub error: Option<CudaError>,
    /// Launch-tree times of the timed runs, in milliseconds (empty when not timed).
    pub times_ms: Vec<f64>,
    /// Problems found while timing (a repeat that failed or gave other results).
    pub timing_problems: Vec<String>,
}

impl RunOutput {
    pub fn median_ms(&self) -> Option<f64> {
        median(&self.times_ms)
    }
}

pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

const MAX_REPORTED: usize = 5;

fn values_equal(ty: ElemType, got: Num, want: Num, tolerance: Option<f64>) -> bool {
    if ty.is_float() {
        let (g, w) = (got.as_f64(), want.as_f64());
        // compare as the element type sees the expected value
        let w = if ty == ElemType::F32 { w as f32 as f64 } else { w };
        match tolerance {
            Some(t) => (g - w).abs() <= t || (g.is_nan() && w.is_nan()),
            None => g == w || (g.is_nan() && w.is_nan()),
        }
    } else {
        match (got, want) {
            (Num::Int(g), Num::Int(w)) => g == w,
            (g, w) => g.as_f64() == w.as_f64(),
        }
    }
}

/// Every way `out` differs from what `manifest` says a correct run gives; empty means ok.
pub fn check_against_manifest(manifest: &Manifest, out: &RunOutput) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some(wanted) = &manifest.expect_error {
        match &out.error {
            Some(e) if e.matches(wanted) => {}
            Some(e) => reasons.push(format!("expected the CUDA error {wanted}, got {e}")),
            None => reasons.push(format!("expected the CUDA error {wanted}, but the run succeeded")),
        }
        return reasons;
    }
    if let Some(e) = &out.error {
        reasons.push(format!("CUDA error: {e}"));
        return reasons;
    }
    for buffer in &manifest.buffers {
        let Some((_, bytes)) = out.buffers.iter().find(|(n, _)| *n == buffer.name) else {
            reasons.push(format!("buffer `{}` was not read back", buffer.name));
            continue;
        };
        let elements = bytes.len() / buffer.ty.size();
        if elements != buffer.len || bytes.len() % buffer.ty.size() != 0 {
            reasons.push(format!("buffer `{}`: {} elements read back, {} expected", buffer.name, elements, buffer.len));
            continue;
        }
        if buffer.expect.is_none() && buffer.check.is_none() {
            continue; // a buffer the kernels write for others to read: nothing to check here
        }
        let got = buffer.ty.decode_all(bytes);
        match buffer.expected_values(&manifest.vars) {
            Err(e) => reasons.push(e.to_string()),
            Ok(want) => {
                let bad: Vec<usize> = (0..got.len()).filter(|&i| want[i].is_some_and(|w| !values_equal(buffer.ty, got[i], w, buffer.tolerance))).collect();
                for &i in bad.iter().take(MAX_REPORTED) {
                    reasons.push(format!("{}[{i}] = {}, expected {}", buffer.name, got[i], want[i].unwrap()));
                }
                if bad.len() > MAX_REPORTED {
                    reasons.push(format!("{}: {} wrong elements in all", buffer.name, bad.len()));
                }
            }
        }
        match buffer.check {
            None => {}
            Some(Check::Sorted) => {
                if let Some(i) = (1..got.len()).find(|&i| got[i].as_f64() < got[i - 1].as_f64()) {
                    reasons.push(format!("{} is not sorted: [{}] = {} > [{i}] = {}", buffer.name, i - 1, got[i - 1], got[i]));
                }
            }
            Some(Check::Nonzero) => {
                if let Some(i) = got.iter().position(|v| v.as_f64() == 0.0) {
                    reasons.push(format!("{}[{i}] is zero", buffer.name));
                }
            }
            Some(Check::Permutation) => match buffer.initial_bytes(&manifest.vars) {
                Err(e) => reasons.push(e.to_string()),
                Ok(initial) => {
                    let size = buffer.ty.size();
                    let mut a: Vec<&[u8]> = initial.chunks_exact(size).collect();
                    let mut b: Vec<&[u8]> = bytes.chunks_exact(size).collect();
                    a.sort_unstable();
                    b.sort_unstable();
                    if a != b {
                        reasons.push(format!("{} is not a permutation of its initial contents", buffer.name));
                    }
                }
            },
        }
    }
    for global in &manifest.globals {
        let Some((_, bytes)) = out.globals.iter().find(|(n, _)| *n == global.name) else {
            reasons.push(format!("global `{}` was not read back", global.name));
            continue;
        };
        if let Some(want) = global.expect {
            let got = global.ty.decode(bytes);
            if !values_equal(global.ty, got, want, None) {
                reasons.push(format!("{} = {got}, expected {want}", global.name));
            }
        }
    }
    if let Some(want) = &manifest.stdout {
        if out.stdout != want.as_bytes() {
            reasons.push(format!("stdout is {:?}, expected {:?}", String::from_utf8_lossy(&out.stdout), want));
        }
    }
    reasons.extend(out.timing_problems.iter().cloned());
    reasons
}

/// The soak's checks of one process's runs of a cubin (`cdpc-run soak`): every run is checked
/// against the manifest as [`check_against_manifest`] checks it, and a deterministic sample's
/// runs must also equal the process's first byte for byte. A deterministic sample's run that
/// equals the first has the first's verdict without checking again: the checks are a function
/// of the output, and evaluating a manifest's formulas element by element takes a fifth of a
/// second for some samples (small_children), more than the run itself.
pub struct SoakChecks<'m> {
    manifest: &'m Manifest,
    first: Option<(RunOutput, Vec<String>)>,
}

impl<'m> SoakChecks<'m> {
    pub fn new(manifest: &'m Manifest) -> SoakChecks<'m> {
        SoakChecks { manifest, first: None }
    }

    /// Why `output` (the next run) fails; empty when it passes.
    pub fn check(&mut self, output: &RunOutput) -> Vec<String> {
        let m = self.manifest;
        match &self.first {
            None => {
                let reasons = check_against_manifest(m, output);
                self.first = Some((output.clone(), reasons.clone()));
                reasons
            }
            Some((first, first_reasons)) => {
                let comparable = m.deterministic && first.error.is_none() && output.error.is_none();
                let differences = if comparable { compare_outputs(m, first, output) } else { Vec::new() };
                if comparable && differences.is_empty() {
                    return first_reasons.clone();
                }
                let mut reasons = check_against_manifest(m, output);
                if reasons.is_empty() {
                    reasons.extend(differences.into_iter().map(|d| format!("not this process's first run's output: {d}")));
                }
                reasons
            }
        }
    }
}

/// Where two runs' outputs differ, byte for byte (buffers, globals, stdout); empty means
/// identical. Element positions are reported in the manifest's element type.
pub fn compare_outputs(manifest: &Manifest, a: &RunOutput, b: &RunOutput) -> Vec<String> {
    let mut diffs = Vec::new();
    let compare = |kind: &str, name: &str, ty: Option<ElemType>, x: &[u8], y: &[u8]| -> Option<String> {
        if x == y {
            return None;
        }
        if x.len() != y.len() {
            return Some(format!("{kind} `{name}`: {} bytes against {} bytes", x.len(), y.len()));
        }
        let size = ty.map_or(1, ElemType::size);
        let differing: Vec<usize> = (0..x.len() / size).filter(|&i| x[i * size..(i + 1) * size] != y[i * size..(i + 1) * size]).collect();
        let Some(&first) = differing.first() else {
            return Some(format!("{kind} `{name}`: the bytes differ"));
        };
        let show = |bytes: &[u8]| match ty {
            Some(t) => t.decode(&bytes[first * size..(first + 1) * size]).to_string(),
            None => format!("{:#04x}", bytes[first]),
        };
        Some(format!("{kind} `{name}`: {} element(s) differ, first [{first}]: {} against {}", differing.len(), show(x), show(y)))
    };
    let ty_of_buffer = |n: &str| manifest.buffer(n).map(|b| b.ty);
    for (name, x) in &a.buffers {
        match b.buffers.iter().find(|(m, _)| m == name) {
            Some((_, y)) => diffs.extend(compare("buffer", name, ty_of_buffer(name), x, y)),
            None => diffs.push(format!("buffer `{name}` missing from the second run")),
        }
    }
    for (name, x) in &a.globals {
        let ty = manifest.globals.iter().find(|g| &g.name == name).map(|g| g.ty);
        match b.globals.iter().find(|(m, _)| m == name) {
            Some((_, y)) => diffs.extend(compare("global", name, ty, x, y)),
            None => diffs.push(format!("global `{name}` missing from the second run")),
        }
    }
    if a.stdout != b.stdout {
        diffs.push(format!("stdout: {:?} against {:?}", String::from_utf8_lossy(&a.stdout), String::from_utf8_lossy(&b.stdout)));
    }
    match (&a.error, &b.error) {
        (None, None) => {}
        (x, y) if x.as_ref().map(|e| e.code) == y.as_ref().map(|e| e.code) => {}
        (x, y) => diffs.push(format!("error: {} against {}", x.as_ref().map_or("none".to_string(), |e| e.to_string()), y.as_ref().map_or("none".to_string(), |e| e.to_string()))),
    }
    diffs
}
