//! `cargo xtask plot-gpu [RESULTS.md]`: the launch-tree time of each sample from cdpc's cubins
//! over nvcc's, per cdpc configuration, read from the differential run's results file
//! (`results/gpu-diff.md`, written on the GPU machine by `cdpc-run diff`) and drawn to
//! `docs/gpu-ratios.png`.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use plotters::prelude::*;

use super::plot::{category_chart, font_available, CategoryFrame, FAMILY};
use crate::Result;

/// One row of the results table: sample, cdpc configuration, time ratio cdpc / nvcc.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    pub sample: String,
    pub label: String,
    pub ratio: f64,
}

/// The rows of `cdpc-run diff`'s markdown table that have a ratio.
pub fn parse_ratios(markdown: &str) -> Vec<Ratio> {
    markdown
        .lines()
        .filter(|l| l.starts_with("| "))
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let ratio = cells.get(7)?.parse::<f64>().ok()?;
            Some(Ratio { sample: cells[0].to_string(), label: cells[1].to_string(), ratio })
        })
        .collect()
}

pub fn plot_gpu(root: &Path, args: &[std::ffi::OsString]) -> Result<ExitCode> {
    let input = args.first().map(|a| root.join(a)).unwrap_or_else(|| root.join("results/gpu-diff.md"));
    let text = fs::read_to_string(&input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    // The plot compares code quality at equal work; aggregated builds do different work (their
    // speedups are a table in BENCHMARKS.md).
    let ratios: Vec<Ratio> = parse_ratios(&text).into_iter().filter(|r| !r.label.contains("-agg-")).collect();
    if ratios.is_empty() {
        return Err(format!("{} has no rows with a ratio", input.display()));
    }
    let out = root.join("docs/gpu-ratios.png");
    draw(&out, &ratios)?;
    println!("plot-gpu: {} ratios from {} drawn to {}", ratios.len(), input.display(), out.display());
    Ok(ExitCode::SUCCESS)
}

fn draw(path: &Path, ratios: &[Ratio]) -> Result<()> {
    let mut samples: Vec<&str> = ratios.iter().map(|r| r.sample.as_str()).collect();
    samples.dedup();
    let mut labels: Vec<&str> = ratios.iter().map(|r| r.label.as_str()).collect();
    labels.sort();
    labels.dedup();
    let y_min = ratios.iter().map(|r| r.ratio).fold(1.0, f64::min) / 1.3;
    let y_max = ratios.iter().map(|r| r.ratio).fold(1.0, f64::max) * 1.3;
    let e = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let text = font_available();
    let root = BitMapBackend::new(path, (1100, 600)).into_drawing_area();
    let frame = CategoryFrame { caption: "Launch-tree time on the GPU, cdpc / nvcc (below 1: cdpc faster)", caption_size: 22, y_desc: "cdpc ms / nvcc ms", rotate_names: true };
    let mut chart = category_chart(&root, &frame, &samples, y_min..y_max).map_err(|x| e(&x))?;
    for (k, label) in labels.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let offset = (k as f64 - (labels.len() as f64 - 1.0) / 2.0) * 0.18;
        let points: Vec<(f64, f64)> = ratios.iter().filter(|r| r.label == *label).filter_map(|r| samples.iter().position(|s| *s == r.sample).map(|i| (i as f64 + offset, r.ratio))).collect();
        let series = chart.draw_series(points.iter().map(|p| Circle::new(*p, 5, color.filled()))).map_err(|x| e(&x))?;
        if text {
            series.label(label.to_string()).legend(move |(x, y)| Circle::new((x, y), 5, color.filled()));
        }
    }
    if text {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).label_font((FAMILY, 14)).draw().map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ratio_rows_and_skips_the_rest() {
        let md = "| sample | compiler | a | b | identical | x ms | nvcc ms | ratio |\n|---|---|---|---|---|---:|---:|---:|\n\
                  | bfs | cdpc-v2 | ok | ok | yes | 0.176 | 0.170 | 1.03 |\n\
                  | bfs | cdpc-v1 | not built | ok | – | – | 0.170 | – |\n";
        assert_eq!(parse_ratios(md), vec![Ratio { sample: "bfs".into(), label: "cdpc-v2".into(), ratio: 1.03 }]);
    }
}
