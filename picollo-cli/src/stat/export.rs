//! The exported forms of a `stat` run besides its JSON ([`schema`](super::schema)):
//! hyperfine-style Markdown tables and CSV rows, and where they are written.

use core::fmt::Write as _;

use picollo_ring::csv::write_csv_row;

use super::human::{ratio, ratio_in, Scale};
use super::model::{BaselineRef, Comparison, Kind, Saved, Series, Verdict};
use super::stats;
use crate::error::{CliError, Result};
use crate::json;

/// The counters of a run, in order of first appearance (wall time first).
pub(crate) fn counter_names(saved: &Saved) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for b in &saved.benches {
        for s in &b.series {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    names
}

fn find<'a>(cs: &'a [Comparison], command: usize, counter: &str) -> Option<&'a Comparison> {
    cs.iter()
        .find(|c| c.command == command && c.counter == counter)
}

/// Markdown: per counter, hyperfine's table (`Command | Mean | Min | Max | Relative`), with
/// the ratio's interval in Relative.
pub(crate) fn to_markdown(saved: &Saved, comparisons: &[Comparison]) -> String {
    let mut out = String::new();
    for (n, name) in counter_names(saved).iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        markdown_table(&mut out, saved, comparisons, name);
    }
    if !comparisons.is_empty() {
        let _ =
            writeln!(
            out,
            "\nRelative: ratio of means to the baseline (the first command{}), with its bootstrap \
             {:.0}% CI; * marks a significant difference (Mann–Whitney U, α = {}).",
            if comparisons.iter().any(|c| matches!(c.baseline, BaselineRef::File(..))) {
                " of the saved baseline"
            } else {
                ""
            },
            stats::CONFIDENCE * 100.0,
            stats::ALPHA
        );
    }
    out
}

/// One counter's Markdown table, in the scale of the smallest mean.
fn markdown_table(out: &mut String, saved: &Saved, comparisons: &[Comparison], name: &str) {
    let reference = saved
        .benches
        .iter()
        .filter_map(|b| b.series(name)?.summary().map(|s| s.mean))
        .fold(f64::INFINITY, f64::min);
    let sc = Scale::for_value(
        Kind::of(name),
        if reference.is_finite() {
            reference
        } else {
            0.0
        },
    );
    let unit = if sc.suffix.is_empty() {
        String::new()
    } else {
        format!(" [{}]", sc.suffix)
    };
    let _ = writeln!(out, "#### {name}\n");
    let _ = writeln!(
        out,
        "| Command | Mean{unit} | Min{unit} | Max{unit} | Relative |"
    );
    out.push_str("|:---|---:|---:|---:|---:|\n");
    let num = |v: f64| {
        if sc.divisor == 1.0 && v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{:.*}", sc.decimals, v / sc.divisor)
        }
    };
    for (i, b) in saved.benches.iter().enumerate() {
        let Some(s) = b.series(name).and_then(Series::summary) else {
            let _ = writeln!(out, "| `{}` | not counted | | | |", md_code(&b.label()));
            continue;
        };
        let _ = writeln!(
            out,
            "| `{}` | {} ± {} | {} | {} | {} |",
            md_code(&b.label()),
            num(s.mean),
            num(s.stddev),
            num(s.min as f64),
            num(s.max as f64),
            relative(find(comparisons, i, name))
        );
    }
}

/// The Relative cell: `1.00` for the baseline, else the ratio with its interval and `*` when
/// significant.
fn relative(c: Option<&Comparison>) -> String {
    let Some(c) = c else {
        return "1.00".into();
    };
    match c.ratio {
        Some(r) => format!(
            "{} ({}–{}){}",
            ratio(r.ratio),
            ratio_in(r.low, r.ratio),
            ratio_in(r.high, r.ratio),
            if c.verdict() == Verdict::Same {
                ""
            } else {
                " *"
            }
        ),
        None => "n/a".into(),
    }
}

fn md_code(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

/// CSV: one row per command and counter, values in the counter's unit, then the comparison
/// with the baseline and hyperfine's `parameter_<name>` columns.
pub(crate) fn to_csv(saved: &Saved, comparisons: &[Comparison]) -> String {
    let mut params: Vec<&str> = Vec::new();
    for b in &saved.benches {
        for (k, _) in &b.parameters {
            if !params.contains(&k.as_str()) {
                params.push(k);
            }
        }
    }
    let mut out = String::new();
    let header = "command,counter,unit,runs,mean,stddev,median,min,max,p90,p99,ratio,ci_low,\
                  ci_high,p_value,verdict";
    let header = header
        .split(',')
        .map(String::from)
        .chain(params.iter().map(|p| format!("parameter_{p}")));
    let _ = write_csv_row(&mut out, header);
    // Non-finite figures (an unbounded interval) are written as JSON writes them.
    let f = |v: Option<f64>| {
        v.map_or_else(String::new, |v| {
            if v.is_finite() {
                json::float_text(v)
            } else {
                "null".into()
            }
        })
    };
    let int = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
    for (i, b) in saved.benches.iter().enumerate() {
        for s in &b.series {
            let sum = s.summary();
            let sum = sum.as_ref();
            let c = find(comparisons, i, &s.name);
            let cells = [
                b.label(),
                s.name.clone(),
                s.kind().unit().to_string(),
                sum.map_or(0, |s| s.n).to_string(),
                f(sum.map(|s| s.mean)),
                f(sum.map(|s| s.stddev)),
                int(sum.map(|s| s.median)),
                int(sum.map(|s| s.min)),
                int(sum.map(|s| s.max)),
                int(sum.and_then(|s| s.p90)),
                int(sum.and_then(|s| s.p99)),
                f(c.and_then(|c| c.ratio.map(|r| r.ratio))),
                f(c.and_then(|c| c.ratio.map(|r| r.low))),
                f(c.and_then(|c| c.ratio.map(|r| r.high))),
                f(c.and_then(|c| c.test.map(|t| t.p))),
                c.map_or("", |c| c.verdict().name(s.kind())).to_string(),
            ];
            let values = params.iter().map(|p| {
                b.parameters
                    .iter()
                    .find(|(k, _)| k == p)
                    .map_or(String::new(), |(_, v)| v.clone())
            });
            let _ = write_csv_row(&mut out, cells.into_iter().chain(values));
        }
    }
    out
}

/// Writes `text` to `path` (`-`: standard output, returned to the caller instead).
///
/// # Errors
/// The file cannot be written.
pub(crate) fn write(path: &std::path::Path, text: &str, flag: &str) -> Result<Option<String>> {
    if path.as_os_str() == "-" {
        return Ok(Some(text.to_string()));
    }
    std::fs::write(path, text).map_err(|e| {
        CliError::new(format!(
            "{flag}: cannot write {}: {e}; check the directory exists and is writable",
            path.display()
        ))
    })?;
    eprintln!("picollo: wrote {}", path.display());
    Ok(None)
}
