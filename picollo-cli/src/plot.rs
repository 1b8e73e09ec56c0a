//! `picollo plot`: the classic HdrHistogram percentile-distribution plot as SVG.
//!
//! Value against percentile, with the x axis `1/(1-p)` on a log scale so the tail gets the
//! room: the gridlines sit at 0%, 90%, 99%, 99.9%, … One line per file (and per tag).

use std::path::Path;

use picollo_alloc::hdr::HdrCounts;
use picollo_core::fmt::Grouped;
use plotters::prelude::*;

use crate::error::{CliError, Result};

/// One line of the plot.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend entry.
    pub label: String,
    /// `(log10(1/(1-p)), value)` points, `p` from 0 to the last recorded value.
    pub points: Vec<(f64, f64)>,
}

/// Line colors (matplotlib's tab10): distinct on white, none too light.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Points per decade of `1/(1-p)`.
const POINTS_PER_DECADE: usize = 100;

impl Series {
    /// The percentile curve of `counts`, values divided by `divisor`: `p` runs from 0 to
    /// `1 - 1/total` (the rank of the last value), with the maximum as the last point.
    pub fn from_counts(label: String, counts: &HdrCounts, divisor: f64) -> Self {
        let total = counts.total_count();
        let mut points = Vec::new();
        if total > 0 {
            let end = (total as f64).log10();
            let n = ((end * POINTS_PER_DECADE as f64).ceil() as usize).max(1);
            for i in 0..=n {
                let t = end * i as f64 / n as f64;
                let p = 100.0 * (1.0 - 10f64.powf(-t));
                if let Some(v) = counts.value_at_percentile(p.clamp(0.0, 100.0)) {
                    points.push((t, v as f64 / divisor));
                }
            }
            points.push((end, counts.max() as f64 / divisor));
        }
        Series { label, points }
    }
}

/// The label of the gridline at `1/(1-p) = 10^k`: `0%`, `90%`, `99%`, `99.9%`, …
pub fn percentile_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

/// Renders `series` as an SVG document.
///
/// # Errors
/// No series with points, or a drawing error.
pub fn render(series: &[Series], title: &str, y_desc: &str) -> Result<String> {
    let series: Vec<&Series> = series.iter().filter(|s| !s.points.is_empty()).collect();
    if series.is_empty() {
        return Err(CliError::new(
            "nothing to plot: every selected histogram is empty; check the files and --tag",
        ));
    }
    let x_end = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max)
        .ceil();
    let decades = x_end as u32;
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let y_top = if y_max > 0.0 { y_max * 1.05 } else { 1.0 };
    let mut svg = String::new();
    {
        let draw_err = |e: &dyn std::fmt::Display| CliError::new(format!("cannot draw: {e}"));
        let root = SVGBackend::with_string(&mut svg, (1000, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(20)
            .margin_right(50)
            .x_label_area_size(50)
            .y_label_area_size(100)
            .build_cartesian_2d(0f64..x_end, 0f64..y_top)
            .map_err(|e| draw_err(&e))?;
        let x_fmt = |x: &f64| {
            let k = x.round();
            if (x - k).abs() < 1e-9 && k >= 0.0 {
                percentile_label(k as u32)
            } else {
                String::new()
            }
        };
        let y_fmt = |y: &f64| {
            if y_top >= 100.0 {
                Grouped(y.round() as u64).to_string()
            } else {
                format!("{y:.2}")
            }
        };
        chart
            .configure_mesh()
            .x_labels(decades as usize + 1)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .light_line_style(BLACK.mix(0.04))
            .x_desc("Percentile")
            .y_desc(y_desc)
            .axis_desc_style(("sans-serif", 16))
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|e| draw_err(&e))?;
        for (i, s) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| draw_err(&e))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(svg)
}

/// Writes `svg` to `path`.
///
/// # Errors
/// The file cannot be written.
pub fn write(path: &Path, svg: &str) -> Result<()> {
    std::fs::write(path, svg).map_err(|e| {
        CliError::new(format!(
            "cannot write {}: {e}; check the directory exists and is writable",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(percentile_label(0), "0%");
        assert_eq!(percentile_label(1), "90%");
        assert_eq!(percentile_label(2), "99%");
        assert_eq!(percentile_label(4), "99.99%");
    }

    #[test]
    fn curve_ends_at_the_max() {
        let mut h = HdrCounts::new(1, 1 << 40, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v, 1).unwrap();
        }
        let s = Series::from_counts("x".into(), &h, 1.0);
        let last = *s.points.last().unwrap();
        assert!((last.0 - 3.0).abs() < 1e-12);
        assert_eq!(last.1, h.max() as f64);
        assert_eq!(s.points[0].1, 1.0);
        assert!(s.points.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
