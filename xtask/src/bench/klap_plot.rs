//! `cargo xtask plot-klap [RESULTS.md]`: KLAP's programs on the GPU, the speed-up of each cdpc
//! build over nvcc's plain build with its 95% interval, per program and variant (plain,
//! `=warp`, `=block`, `=grid`), read from `samples/harness/corpus-timing.py`'s results
//! (`results/corpus-timing.md`) and drawn to `docs/klap-speedups.png`.
//!
//! That file keeps its runs newest first; each program is taken from the first table that has
//! it, so a program re-timed later replaces its older numbers.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use plotters::prelude::*;

use super::plot::{category_chart, font_available, CategoryFrame, FAMILY};
use crate::Result;

/// One timed cdpc variant of one program: its time over nvcc's (median / median) and the
/// ratio's 95% interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    pub program: String,
    pub variant: String,
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// The rows with a ratio of corpus-timing.py's tables (`| program | variant | runs | output |
/// median | min | max | ratio | [lo, hi] | verdict |`), each (program, variant) from the first
/// (newest) table that has it, and only where every run of it succeeded (as many runs as nvcc's
/// row): a variant whose runs failed has no speed-up to show, and an older table's row of it
/// is not shown either.
pub fn parse_timings(markdown: &str) -> Vec<Timed> {
    let mut out: Vec<Timed> = Vec::new();
    // The (program, variant) rows of the tables already read, shown or not: an older table
    // adds none of them.
    let mut seen: Vec<(String, String)> = Vec::new();
    // nvcc's runs of each program in this table
    let mut nvcc_runs: Vec<(String, String)> = Vec::new();
    for line in markdown.lines() {
        if !line.starts_with("| ") {
            nvcc_runs.clear();
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.get(1) == Some(&"nvcc") {
            nvcc_runs.push((cells[0].to_string(), cells.get(2).unwrap_or(&"").to_string()));
        }
        let key = (cells[0].to_string(), cells.get(1).unwrap_or(&"").to_string());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let all_runs = nvcc_runs.iter().any(|(p, runs)| p == cells[0] && cells.get(2) == Some(&runs.as_str()));
        let (Some(ratio), Some(interval)) = (cells.get(7).and_then(|c| c.parse::<f64>().ok()), cells.get(8)) else { continue };
        let Some((low, high)) = interval.trim_matches(['[', ']']).split_once(',') else { continue };
        let (Ok(low), Ok(high)) = (low.trim().parse::<f64>(), high.trim().parse::<f64>()) else { continue };
        if all_runs {
            out.push(Timed { program: cells[0].to_string(), variant: cells[1].to_string(), ratio, low, high });
        }
    }
    out
}

pub fn plot_klap(root: &Path, args: &[std::ffi::OsString]) -> Result<ExitCode> {
    let input = args.first().map(|a| root.join(a)).unwrap_or_else(|| root.join("results/corpus-timing.md"));
    let text = fs::read_to_string(&input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    let timed = parse_timings(&text);
    if timed.is_empty() {
        return Err(format!("{} has no rows with a ratio and an interval", input.display()));
    }
    let out = root.join("docs/klap-speedups.png");
    draw(&out, &timed)?;
    println!("plot-klap: {} variants of {} programs from {} drawn to {}", timed.len(), programs(&timed).len(), input.display(), out.display());
    Ok(ExitCode::SUCCESS)
}

fn programs(timed: &[Timed]) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for t in timed {
        if !v.contains(&t.program.as_str()) {
            v.push(&t.program);
        }
    }
    v
}

/// KLAP's reported geometric mean over its seven programs (MICRO 2016), drawn for reference.
const KLAP_GEOMEAN: f64 = 6.58;

fn draw(path: &Path, timed: &[Timed]) -> Result<()> {
    let programs = programs(timed);
    let variants = ["cdpc", "cdpc-warp", "cdpc-block", "cdpc-grid", "cdpc-t128-warp", "cdpc-t128-grid"];
    // Speed-up = nvcc's time / cdpc's: the interval of the ratio, inverted.
    let speedup = |t: &Timed| (1.0 / t.ratio, 1.0 / t.high, 1.0 / t.low);
    let y_min = timed.iter().map(|t| speedup(t).1).fold(1.0, f64::min) / 1.3;
    let y_max = timed.iter().map(|t| speedup(t).2).fold(KLAP_GEOMEAN, f64::max) * 1.3;
    let e = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let text = font_available();
    let root = BitMapBackend::new(path, (1100, 600)).into_drawing_area();
    let frame = CategoryFrame {
        caption: "KLAP's programs on an H100: nvcc's time / cdpc's (above 1: cdpc faster), 95% intervals",
        caption_size: 20,
        y_desc: "speed-up over nvcc's plain build",
        rotate_names: false,
    };
    let mut chart = category_chart(&root, &frame, &programs, y_min..y_max).map_err(|x| e(&x))?;
    let n = programs.len() as f64;
    let klap = chart.draw_series(DashedLineSeries::new([(-0.5, KLAP_GEOMEAN), (n - 0.5, KLAP_GEOMEAN)], 6, 4, RED.stroke_width(1))).map_err(|x| e(&x))?;
    if text {
        klap.label(format!("KLAP's geometric mean ({KLAP_GEOMEAN}x)")).legend(|(x, y)| PathElement::new([(x - 8, y), (x + 8, y)], RED));
    }
    for (k, variant) in variants.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let offset = (k as f64 - (variants.len() as f64 - 1.0) / 2.0) * 0.13;
        let points: Vec<(f64, (f64, f64, f64))> =
            timed.iter().filter(|t| t.variant == *variant).filter_map(|t| programs.iter().position(|p| *p == t.program).map(|i| (i as f64 + offset, speedup(t)))).collect();
        chart.draw_series(points.iter().map(|&(x, (_, lo, hi))| PathElement::new([(x, lo), (x, hi)], color.stroke_width(2)))).map_err(|x| e(&x))?;
        let series = chart.draw_series(points.iter().map(|&(x, (s, _, _))| Circle::new((x, s), 5, color.filled()))).map_err(|x| e(&x))?;
        if text {
            series.label(variant.to_string()).legend(move |(x, y)| Circle::new((x, y), 5, color.filled()));
        }
    }
    if text {
        chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.8)).border_style(BLACK).label_font((FAMILY, 14)).draw().map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_each_variant_from_the_first_table_that_has_it_where_every_run_succeeded() {
        let md = "## Run E\n\n| program | variant | runs | output = nvcc's | median ms | min | max | ratio to nvcc | 95% interval | verdict |\n\
                  |---|---|---|---|---|---|---|---|---|---|\n\
                  | MST | nvcc | 20 | yes | 7.877 | 7.468 | 8.220 | - | - | - |\n\
                  | MST | cdpc-warp | 20 | yes | 1.528 | 1.454 | 1.609 | 0.194 | [0.190, 0.197] | faster |\n\
                  \n## Run C\n\n| program | variant | runs | output = nvcc's | median ms | min | max | ratio to nvcc | 95% interval | verdict |\n\
                  |---|---|---|---|---|---|---|---|---|---|\n\
                  | MST | nvcc | 6 | yes | 8.0 | 7.9 | 8.1 | - | - | - |\n\
                  | MST | cdpc-warp | 6 | yes | 2.0 | 1.9 | 2.1 | 0.250 | [0.240, 0.260] | faster |\n\
                  | MST | cdpc-grid | 6 | yes | 5.6 | 5.5 | 5.7 | 0.70 | [0.69, 0.71] | faster |\n\
                  | BT | nvcc | 6 | yes | 16.0 | 15.8 | 16.3 | - | - | - |\n\
                  | BT | cdpc-grid | 6 | yes | 5.6 | 5.5 | 5.7 | 0.35 | [0.34, 0.35] | faster |\n\
                  | BT | cdpc-block | 4 | NO | 900.0 | 800.0 | 990.0 | 56.2 | [50.0, 61.9] | slower |\n\
                  | BT | cdpc | 6 | NO | - | - | - | - | - | - |\n";
        assert_eq!(
            parse_timings(md),
            vec![
                Timed { program: "MST".into(), variant: "cdpc-warp".into(), ratio: 0.194, low: 0.190, high: 0.197 },
                Timed { program: "MST".into(), variant: "cdpc-grid".into(), ratio: 0.70, low: 0.69, high: 0.71 },
                Timed { program: "BT".into(), variant: "cdpc-grid".into(), ratio: 0.35, low: 0.34, high: 0.35 },
            ]
        );
    }
}
