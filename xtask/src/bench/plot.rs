//! `docs/compile-time.png`: median compile time against program size, both compilers, log-log.
//!
//! plotters with the bitmap back end and ab_glyph: text is drawn from DejaVu Sans read at run
//! time, so no fontconfig or freetype is needed. Without the font the plot has no text.

use std::fs;
use std::path::Path;

use plotters::prelude::*;

use super::{stats, Measured};
use crate::Result;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
pub const FAMILY: &str = "sans-serif";

/// Registers the font once; false when it is absent or unreadable.
pub fn font_available() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| match fs::read(FONT) {
        Ok(bytes) => {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok()
        }
        Err(_) => false,
    })
}

pub fn draw(path: &Path, results: &[Measured]) -> Result<()> {
    let ok: Vec<&Measured> = results.iter().filter(|m| m.error.is_none()).collect();
    let series = |generated: bool, pick: fn(&Measured) -> &Vec<f64>| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = ok.iter().filter(|m| m.generated == generated && !m.corpus).map(|m| (m.kernels as f64, stats::median(pick(m)))).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let gen_cdpc = series(true, |m| &m.cdpc);
    let gen_nvcc = series(true, |m| &m.nvcc_total);
    let smp_cdpc = series(false, |m| &m.cdpc);
    let smp_nvcc = series(false, |m| &m.nvcc_total);
    let all: Vec<(f64, f64)> = [&gen_cdpc, &gen_nvcc, &smp_cdpc, &smp_nvcc].iter().flat_map(|s| s.iter().copied()).collect();
    if all.is_empty() {
        return Err("no measurements to plot".into());
    }
    let x_max = all.iter().map(|p| p.0).fold(1.0, f64::max) * 1.5;
    let y_min = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min) / 1.5;
    let y_max = all.iter().map(|p| p.1).fold(0.0, f64::max) * 1.5;
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let text = font_available();
    let e = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());

    let root = BitMapBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20);
    if text {
        builder.caption("Compile time, .cdp to linked sm_90 cubin (median)", (FAMILY, 22)).x_label_area_size(45).y_label_area_size(65);
    }
    let mut chart = builder.build_cartesian_2d((0.7f64..x_max).log_scale(), (y_min..y_max).log_scale()).map_err(|x| e(&x))?;
    if text {
        chart
            .configure_mesh()
            .x_desc("kernels in the program")
            .y_desc("seconds")
            .label_style((FAMILY, 14))
            .axis_desc_style((FAMILY, 16))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .map_err(|x| e(&x))?;
    }
    let cdpc_color = RGBColor(0x1f, 0x77, 0xb4);
    let nvcc_color = RGBColor(0x2c, 0xa0, 0x2c);
    for (points, color, label) in [(&gen_cdpc, cdpc_color, "cdpc (generated chains)"), (&gen_nvcc, nvcc_color, "nvcc + nvlink (generated chains)")] {
        let s = chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2))).map_err(|x| e(&x))?;
        if text {
            s.label(label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(|x| e(&x))?;
    }
    for (points, color, label) in [(&smp_cdpc, cdpc_color, "cdpc (samples)"), (&smp_nvcc, nvcc_color, "nvcc + nvlink (samples)")] {
        let s = chart.draw_series(points.iter().map(|&p| Cross::new(p, 5, color.stroke_width(2)))).map_err(|x| e(&x))?;
        if text {
            s.label(label).legend(move |(x, y)| Cross::new((x + 10, y), 5, color.stroke_width(2)));
        }
    }
    if text {
        chart.configure_series_labels().position(SeriesLabelPosition::UpperLeft).background_style(WHITE.mix(0.85)).border_style(BLACK).label_font((FAMILY, 14)).draw().map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// How [`category_chart`] draws its frame.
pub struct CategoryFrame<'a> {
    pub caption: &'a str,
    pub caption_size: u32,
    pub y_desc: &'a str,
    /// The names under the x axis, turned upright (many long names) or not.
    pub rotate_names: bool,
}

/// A chart of one point column per name along x (at 0, 1, ...) over a logarithmic y range,
/// with its frame, captions and axes drawn when the font is there (`plot-gpu`, `plot-klap`).
pub fn category_chart<'a, 'b>(
    root: &'a DrawingArea<BitMapBackend<'b>, plotters::coord::Shift>,
    frame: &CategoryFrame,
    names: &[&str],
    y: std::ops::Range<f64>,
) -> Result<ChartContext<'a, BitMapBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::combinators::LogCoord<f64>>>> {
    let e = |e: &dyn std::fmt::Display| format!("drawing: {e}");
    let text = font_available();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut builder = ChartBuilder::on(root);
    builder.margin(20);
    if text {
        builder.caption(frame.caption, (FAMILY, frame.caption_size)).x_label_area_size(if frame.rotate_names { 110 } else { 60 }).y_label_area_size(60);
    }
    let n = names.len() as f64;
    let mut chart = builder.build_cartesian_2d(-0.5f64..n - 0.5, y.log_scale()).map_err(|x| e(&x))?;
    if text {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let formatter = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(names.len()).x_label_formatter(&formatter).label_style((FAMILY, 14)).y_label_formatter(&|y| format!("{y:.2}")).disable_x_mesh().light_line_style(WHITE).y_desc(frame.y_desc);
        if frame.rotate_names {
            mesh.x_label_style((FAMILY, 13).into_font().transform(FontTransform::Rotate90));
        }
        mesh.draw().map_err(|x| e(&x))?;
    }
    chart.draw_series(LineSeries::new([(-0.5, 1.0), (n - 0.5, 1.0)], BLACK.stroke_width(1))).map_err(|x| e(&x))?;
    Ok(chart)
}
