//! `picollo plot`: the classic HdrHistogram percentile-distribution plot as SVG.
//!
//! Value against percentile, with the x axis `1/(1-p)` on a log scale so the tail gets the
//! room: the gridlines sit at 0%, 90%, 99%, 99.9%, … One line per file (and per tag), one
//! panel per unit (times and counts never share an axis), the value axis on a log scale where
//! a panel's values span two decades or more (`--y-scale` chooses).

use std::path::Path;

use picollo_alloc::hdr::HdrCounts;
use picollo_core::fmt::Grouped;
use plotters::prelude::*;

use crate::error::{CliError, Result};

/// One line of the plot.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    /// The legend entry.
    pub(crate) label: String,
    /// The value axis it is drawn against (`Value (ms)`, `page-faults`): series with the
    /// same description share a panel, others get their own.
    pub(crate) y_desc: String,
    /// `(log10(1/(1-p)), value)` points, `p` from 0 to the last recorded value.
    pub(crate) points: Vec<(f64, f64)>,
}

/// Line colors (matplotlib's tab10): distinct on white, none too light. `stat --plot` uses
/// them too.
pub(crate) const COLORS: [RGBColor; 10] = [
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
    pub(crate) fn from_counts(
        label: String,
        y_desc: String,
        counts: &HdrCounts,
        divisor: f64,
    ) -> Self {
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
        Series {
            label,
            y_desc,
            points,
        }
    }
}

/// The label of the gridline at `1/(1-p) = 10^k`: `0%`, `90%`, `99%`, `99.9%`, …
pub(crate) fn percentile_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

/// How the value axis is scaled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum YScale {
    /// Logarithmic where a panel's values span two decades or more (a 16 µs median stays
    /// visible under a 12 ms tail), else linear.
    #[default]
    Auto,
    /// Linear from 0.
    Linear,
    /// Logarithmic (base 10).
    Log,
}

/// One panel: the series that share a unit, on their own value axis.
struct Panel<'a> {
    y_desc: &'a str,
    series: Vec<&'a Series>,
}

/// Whether values from `lo` to `hi` (positive) span two decades or more.
fn spans_decades(lo: f64, hi: f64) -> bool {
    lo > 0.0 && hi / lo >= 100.0
}

/// Renders `series` as an SVG document: one panel per value axis (`Series::y_desc`), stacked,
/// in order of first appearance, so times and counts never share an axis.
///
/// # Errors
/// No series with points, or a drawing error.
pub(crate) fn render(series: &[Series], title: &str, y_scale: YScale) -> Result<String> {
    let mut panels: Vec<Panel<'_>> = Vec::new();
    for s in series.iter().filter(|s| !s.points.is_empty()) {
        match panels.iter_mut().find(|p| p.y_desc == s.y_desc) {
            Some(p) => p.series.push(s),
            None => panels.push(Panel {
                y_desc: &s.y_desc,
                series: vec![s],
            }),
        }
    }
    if panels.is_empty() {
        return Err(CliError::new(
            "nothing to plot: every selected histogram is empty; check the files and --tag",
        ));
    }
    let height = 600 + 400 * (panels.len() as u32 - 1);
    let mut svg = String::new();
    {
        let draw_err = |e: &dyn std::fmt::Display| CliError::new(format!("cannot draw: {e}"));
        let root = SVGBackend::with_string(&mut svg, (1000, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        let root = root
            .titled(title, ("sans-serif", 22))
            .map_err(|e| draw_err(&e))?;
        let areas = root.split_evenly((panels.len(), 1));
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(area, panel, y_scale).map_err(|e| draw_err(&e))?;
        }
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(svg)
}

type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// A panel's y axis: linear, or log scale drawn as `log10(value)` on a linear axis.
#[derive(Clone, Copy, Debug)]
struct YAxis {
    log: bool,
    /// Where zeros sit: on log scale, a decade below the smallest positive value.
    floor: f64,
    /// The axis range, in drawn units.
    lo: f64,
    top: f64,
}

impl YAxis {
    /// The axis for values from `y_min_pos` (the smallest positive) to `y_max`.
    fn new(y_scale: YScale, y_min_pos: f64, y_max: f64) -> Self {
        let log = match y_scale {
            YScale::Linear => false,
            YScale::Log => y_max > 0.0,
            YScale::Auto => spans_decades(y_min_pos, y_max),
        };
        let floor = if log { y_min_pos.log10().floor() } else { 0.0 };
        let (lo, top) = if log {
            (
                floor,
                y_max.log10() + 0.05 * (y_max.log10() - floor).max(1.0),
            )
        } else if y_max > 0.0 {
            (0.0, y_max * 1.05)
        } else {
            (0.0, 1.0)
        };
        Self {
            log,
            floor,
            lo,
            top,
        }
    }

    /// Where value `v` is drawn.
    fn map(self, v: f64) -> f64 {
        match (self.log, v > 0.0) {
            (true, true) => v.log10(),
            (true, false) => self.floor,
            (false, _) => v,
        }
    }

    /// The label at drawn position `y`: on log scale only 1, 2 and 5 times a power of ten
    /// get one, printed exactly.
    fn label(self, y: f64) -> String {
        if self.log {
            let k = y.floor();
            let mantissa = 10f64.powf(y - k);
            match [1.0, 2.0, 5.0, 10.0]
                .iter()
                .find(|m| (mantissa - **m).abs() < 0.02)
            {
                Some(&m) => decade_label(m, k as i32),
                None => String::new(),
            }
        } else if self.top >= 100.0 {
            Grouped(y.round() as u64).to_string()
        } else {
            format!("{y:.2}")
        }
    }
}

/// The label at percentile-axis position `x`: whole positions only.
fn percentile_tick(x: f64) -> String {
    let k = x.round();
    if (x - k).abs() < 1e-9 && k >= 0.0 {
        percentile_label(k as u32)
    } else {
        String::new()
    }
}

/// Draws one panel: log scale is drawn as `log10(value)` on a linear axis, labelled with the
/// values at whole decades (and 2× and 5× between them).
fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    panel: &Panel<'_>,
    y_scale: YScale,
) -> DrawResult {
    let points = || panel.series.iter().flat_map(|s| s.points.iter());
    let x_end = points().map(|p| p.0).fold(1.0f64, f64::max).ceil();
    let decades = x_end as u32;
    let y_max = points().map(|p| p.1).fold(0.0f64, f64::max);
    let y_min_pos = points()
        .map(|p| p.1)
        .filter(|&v| v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let y = YAxis::new(y_scale, y_min_pos, y_max);
    let y_desc = if y.log {
        format!("{} (log scale)", panel.y_desc)
    } else {
        panel.y_desc.to_string()
    };
    let mut chart = ChartBuilder::on(area)
        .margin(20)
        .margin_right(50)
        .x_label_area_size(50)
        .y_label_area_size(100)
        .build_cartesian_2d(0f64..x_end, y.lo..y.top)?;
    let (x_fmt, y_fmt) = (|x: &f64| percentile_tick(*x), |v: &f64| y.label(*v));
    chart
        .configure_mesh()
        .x_labels(decades as usize + 1)
        .y_labels(if y.log { 40 } else { 10 })
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .light_line_style(BLACK.mix(0.04))
        .x_desc("Percentile")
        .y_desc(y_desc)
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .draw()?;
    for (i, s) in panel.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().map(|&(x, v)| (x, y.map(v))),
                color.stroke_width(2),
            ))?
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
        .draw()?;
    Ok(())
}

/// `m × 10^k` as printed on a log axis: whole numbers grouped (`1,000`), fractions with just
/// the decimals they need (`0.05`).
fn decade_label(m: f64, k: i32) -> String {
    let (m, k) = if m >= 10.0 { (1.0, k + 1) } else { (m, k) };
    if k >= 0 {
        Grouped(m as u64 * 10u64.saturating_pow(k as u32)).to_string()
    } else {
        format!("{:.*}", (-k) as usize, m * 10f64.powi(k))
    }
}

/// What `picollo plot` can write: SVG only. A `.png` (or any other image name) is refused
/// with the way to get one, rather than SVG bytes under a PNG name.
///
/// # Errors
/// An output name whose extension is not `.svg` (no extension is accepted: SVG).
pub(crate) fn check_output(path: &Path) -> Result<()> {
    match path.extension().and_then(|e| e.to_str()) {
        None => Ok(()),
        Some(e) if e.eq_ignore_ascii_case("svg") => Ok(()),
        Some(e) => Err(CliError::new(format!(
            "{}: plot writes SVG only, not .{e}; name the output .svg (a PNG then comes from \
             any SVG rasterizer: rsvg-convert -o plot.png plot.svg, or inkscape, or a browser)",
            path.display()
        ))),
    }
}

/// Writes `svg` to `path`.
///
/// # Errors
/// The file cannot be written.
pub(crate) fn write(path: &Path, svg: &str) -> Result<()> {
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
    fn log_axis_labels() {
        assert_eq!(decade_label(1.0, 0), "1");
        assert_eq!(decade_label(2.0, 3), "2,000");
        assert_eq!(decade_label(10.0, 2), "1,000");
        assert_eq!(decade_label(5.0, -2), "0.05");
        assert_eq!(decade_label(1.0, -1), "0.1");
        assert!(spans_decades(16.0, 12_000.0));
        assert!(!spans_decades(50.0, 4_000.0));
        assert!(!spans_decades(0.0, 4_000.0));
    }

    #[test]
    fn only_svg_is_written() {
        assert!(check_output(Path::new("x.svg")).is_ok());
        assert!(check_output(Path::new("dir/X.SVG")).is_ok());
        assert!(check_output(Path::new("plot")).is_ok());
        let e = check_output(Path::new("x.png")).unwrap_err().to_string();
        assert!(e.contains("SVG only") && e.contains(".png"), "{e}");
        assert!(check_output(Path::new("x.pdf")).is_err());
    }

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
        let s = Series::from_counts("x".into(), "Value".into(), &h, 1.0);
        let last = *s.points.last().unwrap();
        assert!((last.0 - 3.0).abs() < 1e-12);
        assert_eq!(last.1, h.max() as f64);
        assert_eq!(s.points[0].1, 1.0);
        assert!(s.points.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
