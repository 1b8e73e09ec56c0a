//! `stat --plot out.svg` and `picollo plot run.json`: one panel per counter, each command's
//! distribution as its percentile curve (every run a point: the sorted values against their
//! percentile), the legend giving each command's ratio to the baseline with its interval.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::export::counter_names;
use super::human::{ratio, ratio_in, Scale};
use super::model::{Comparison, Kind, Saved, Verdict};
use super::stats;
use crate::error::{CliError, Result};
use crate::plot::COLORS;

/// The empirical percentile curve of `values`: the i-th smallest of n at 100·(i + ½)/n.
pub(crate) fn curve(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (100.0 * (i as f64 + 0.5) / n, x))
        .collect()
}

/// A legend entry: the command, and against the baseline its ratio with the interval.
fn legend(label: &str, c: Option<&Comparison>) -> String {
    let short: String = if label.chars().count() > 48 {
        format!("{}…", label.chars().take(47).collect::<String>())
    } else {
        label.to_string()
    };
    match c {
        None => format!("{short} (baseline)"),
        Some(c) => match c.ratio {
            Some(r) => format!(
                "{short}: {}× ({:.0}% CI {}–{}){}",
                ratio(r.ratio),
                stats::CONFIDENCE * 100.0,
                ratio_in(r.low, r.ratio),
                ratio_in(r.high, r.ratio),
                if c.verdict() == Verdict::Same {
                    ", no significant difference"
                } else {
                    ""
                }
            ),
            None => format!("{short}: not comparable"),
        },
    }
}

/// Renders the run as an SVG document.
///
/// # Errors
/// Nothing measured, or a drawing error.
pub(crate) fn render(saved: &Saved, comparisons: &[Comparison], title: &str) -> Result<String> {
    let names: Vec<String> = counter_names(saved)
        .into_iter()
        .filter(|n| {
            saved
                .benches
                .iter()
                .any(|b| b.series(n).is_some_and(|s| !s.counted().is_empty()))
        })
        .collect();
    if names.is_empty() {
        return Err(CliError::new("nothing to plot: no run has a value"));
    }
    let panel_h = 320u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 60 + panel_h * names.len() as u32))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        let root = root
            .titled(title, ("sans-serif", 22))
            .map_err(|e| draw_err(&e))?;
        let panels = root.split_evenly((names.len(), 1));
        for (name, area) in names.iter().zip(panels.iter()) {
            draw_panel(area, name, saved, comparisons)?;
        }
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(svg)
}

fn draw_err(e: &dyn std::fmt::Display) -> CliError {
    CliError::new(format!("cannot draw: {e}"))
}

/// The scale of counter `name`'s values (from the largest), and the value axis's range in
/// it: every value, with a margin.
fn y_axis(name: &str, saved: &Saved) -> (Scale, core::ops::Range<f64>) {
    let all: Vec<f64> = saved
        .benches
        .iter()
        .filter_map(|b| b.series(name))
        .flat_map(|s| s.counted())
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let sc = Scale::for_value(Kind::of(name), hi);
    let (lo, hi) = (lo / sc.divisor, hi / sc.divisor);
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-9);
    (sc, (lo - pad).max(0.0)..hi + pad)
}

/// One counter's panel: each command's percentile curve, in the counter's scale.
fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    name: &str,
    saved: &Saved,
    comparisons: &[Comparison],
) -> Result<()> {
    let (sc, y_range) = y_axis(name, saved);
    let y_desc = if sc.suffix.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", sc.suffix)
    };
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .margin_right(40)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..100f64, y_range)
        .map_err(|e| draw_err(&e))?;
    chart
        .configure_mesh()
        .x_desc("Percentile of runs")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}%"))
        .y_label_formatter(&|y| format!("{y:.*}", sc.decimals.min(2)))
        .light_line_style(BLACK.mix(0.04))
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| draw_err(&e))?;
    let baseline_here = comparisons.iter().any(|c| c.counter == name);
    for (i, b) in saved.benches.iter().enumerate() {
        let Some(s) = b.series(name) else { continue };
        let pts: Vec<(f64, f64)> = curve(&s.counted())
            .into_iter()
            .map(|(p, v)| (p, v / sc.divisor))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let color = COLORS[i % COLORS.len()];
        let c = comparisons
            .iter()
            .find(|c| c.command == i && c.counter == name);
        let label = if c.is_none() && !baseline_here {
            b.label()
        } else {
            legend(&b.label(), c)
        };
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(|e| draw_err(&e))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| draw_err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(|e| draw_err(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_put_each_run_at_its_percentile() {
        assert_eq!(curve(&[3.0, 1.0]), vec![(25.0, 1.0), (75.0, 3.0)]);
        assert!(curve(&[]).is_empty());
    }
}
