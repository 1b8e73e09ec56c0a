//! The printed forms of summaries and diffs: `--format markdown|text|csv|json`.
//!
//! - `markdown` is the summary table of Picollo for .NET, printed by `picollo_alloc`'s
//!   [`Summary::table`] and [`Summary::diff`] unchanged.
//! - `text`, `csv` and `json` are built here from the [`Summary`] accessors, with the same
//!   values: bucket midpoints, half bucket widths, rank counts, mean and standard deviation.
//!
//! Every form ends with a newline; tables are separated by one blank line.

use core::fmt::Write as _;

use clap::ValueEnum;
use picollo_alloc::summary::format_change;
use picollo_alloc::Summary;
use picollo_core::fmt::{Grouped, GroupedFloat, Trimmed};
use picollo_ring::csv::write_csv_row;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::json::{self, Ordered};

/// How tables are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// The markdown summary tables of Picollo for .NET (the default).
    #[default]
    Markdown,
    /// Aligned plain-text columns, no markup.
    Text,
    /// Comma-separated values with a header row; one row per percentile.
    Csv,
    /// One JSON object.
    Json,
}

/// A summary with the title printed above it.
#[derive(Clone, Debug)]
pub(crate) struct Titled {
    /// What was measured: a counter, a file, a file's tag; with its unit in parentheses.
    pub(crate) title: String,
    /// The summary.
    pub(crate) summary: Summary,
}

/// Two summaries to compare under one title.
#[derive(Clone, Debug)]
pub(crate) struct Compared {
    /// What was measured.
    pub(crate) title: String,
    /// The `A` side (before).
    pub(crate) before: Summary,
    /// The `B` side (after).
    pub(crate) after: Summary,
}

/// Context printed with the tables: `(key, value)` pairs such as the command and run count.
/// Markdown and text print them as `key: value` lines before the tables, JSON as string
/// fields of the top-level object, CSV leaves them out (one schema per file).
pub(crate) type Context = Vec<(&'static str, String)>;

/// Prints summaries in `format`.
pub(crate) fn summaries(format: Format, context: &Context, tables: &[Titled]) -> String {
    let mut out = String::new();
    match format {
        Format::Markdown | Format::Text => {
            preamble(&mut out, format, context);
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                if format == Format::Markdown {
                    let _ = write!(out, "{}", t.summary.table(&t.title));
                } else {
                    text_table(&mut out, t);
                }
            }
        }
        Format::Csv => {
            let _ = write_csv_row(
                &mut out,
                [
                    "name",
                    "percentile",
                    "value",
                    "half_width",
                    "count",
                    "total",
                    "underflow",
                    "overflow",
                    "mean",
                    "stdev",
                ],
            );
            for t in tables {
                let s = &t.summary;
                for p in s.percentiles() {
                    let (value, half) = if s.is_empty() {
                        (String::new(), String::new())
                    } else {
                        (s.scaled(p.value).plain(), s.scaled(p.half_width()).plain())
                    };
                    let _ = write_csv_row(
                        &mut out,
                        [
                            t.title.clone(),
                            Trimmed(p.rank, 4).to_string(),
                            value,
                            half,
                            p.rank_count.to_string(),
                            s.total().to_string(),
                            s.underflow().to_string(),
                            s.overflow().to_string(),
                            plain_float(s.scaled_stat(s.mean()), s.is_empty()),
                            plain_float(s.scaled_stat(s.stdev()), s.is_empty()),
                        ],
                    );
                }
            }
        }
        Format::Json => {
            let doc = Tables {
                context: context_object(context),
                tables: tables
                    .iter()
                    .map(|t| SummaryDoc::new(&t.title, &t.summary))
                    .collect(),
            };
            out.push_str(&json::to_line(&doc));
            out.push('\n');
        }
    }
    out
}

/// Prints diffs in `format`, with `A`/`B` as the column labels.
pub(crate) fn diffs(format: Format, context: &Context, tables: &[Compared]) -> String {
    let mut out = String::new();
    match format {
        Format::Markdown | Format::Text => {
            preamble(&mut out, format, context);
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                if format == Format::Markdown {
                    let _ = write!(out, "{}", t.before.diff(&t.after, &t.title, "A", "B"));
                } else {
                    text_diff(&mut out, t);
                }
            }
        }
        Format::Csv => {
            let _ = write_csv_row(&mut out, ["name", "row", "a", "b", "delta_pct"]);
            for t in tables {
                for (row, a, b, d) in diff_rows(t) {
                    let _ = write_csv_row(&mut out, [t.title.as_str(), &row, &a, &b, &d]);
                }
            }
        }
        Format::Json => {
            let doc = Diffs {
                context: context_object(context),
                diffs: tables.iter().map(DiffDoc::new).collect(),
            };
            out.push_str(&json::to_line(&doc));
            out.push('\n');
        }
    }
    out
}

/// `key: value` lines and a blank line (markdown, text), nothing when `context` is empty.
fn preamble(out: &mut String, format: Format, context: &Context) {
    if context.is_empty() {
        return;
    }
    for (k, v) in context {
        match format {
            Format::Markdown => {
                let _ = writeln!(out, "- {k}: {v}");
            }
            _ => {
                let _ = writeln!(out, "{k}: {v}");
            }
        }
    }
    out.push('\n');
}

/// The rows of a diff in CSV/JSON form: `(row, a, b, Δ%)` with plain numbers, empty where
/// there is no value.
fn diff_rows(t: &Compared) -> Vec<(String, String, String, String)> {
    let (b, a) = (&t.before, &t.after);
    let either_empty = b.is_empty() || a.is_empty();
    let value = |s: &Summary, v: u64| {
        if s.is_empty() {
            String::new()
        } else {
            s.scaled(v).plain()
        }
    };
    let pct = |x: f64, y: f64| {
        if either_empty {
            String::new()
        } else {
            change_pct(x, y).map_or(String::new(), |c| format!("{c:.4}"))
        }
    };
    let mut rows = Vec::with_capacity(20);
    for (pb, pa) in b.percentiles().iter().zip(a.percentiles()) {
        rows.push((
            format!("p{}", Trimmed(pb.rank, 4)),
            value(b, pb.value),
            value(a, pa.value),
            pct(pb.value as f64, pa.value as f64),
        ));
    }
    rows.push((
        "mean".into(),
        plain_float(b.scaled_stat(b.mean()), b.is_empty()),
        plain_float(a.scaled_stat(a.mean()), a.is_empty()),
        pct(b.mean(), a.mean()),
    ));
    rows.push((
        "stdev".into(),
        plain_float(b.scaled_stat(b.stdev()), b.is_empty()),
        plain_float(a.scaled_stat(a.stdev()), a.is_empty()),
        pct(b.stdev(), a.stdev()),
    ));
    rows.push((
        "total".into(),
        b.total().to_string(),
        a.total().to_string(),
        change_pct(b.total() as f64, a.total() as f64).map_or(String::new(), |c| format!("{c:.4}")),
    ));
    let d = b
        .cohens_d(a)
        .filter(|d| d.is_finite())
        .map_or(String::new(), |d| format!("{d:.4}"));
    rows.push(("cohens_d".into(), String::new(), String::new(), d));
    rows
}

/// The relative change in percent, `None` when `before` is 0 and `after` is not (as the
/// markdown diff's `n/a`).
fn change_pct(before: f64, after: f64) -> Option<f64> {
    if before == after {
        return Some(0.0);
    }
    if before == 0.0 || !before.is_finite() || !after.is_finite() {
        return None;
    }
    Some((after - before) / before.abs() * 100.0)
}

/// Columns padded to their widest cell, separated by two spaces; the first column
/// left-aligned, the others right-aligned; every line indented by two spaces.
fn columns(out: &mut String, rows: &[Vec<String>]) {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; n];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in rows {
        let mut line = String::from(" ");
        for (i, (cell, &w)) in row.iter().zip(&widths).enumerate() {
            if i == 0 {
                let _ = write!(line, " {cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn text_table(out: &mut String, t: &Titled) {
    let s = &t.summary;
    let _ = writeln!(out, "{}", t.title);
    let mut rows: Vec<Vec<String>> = vec![vec![
        "percentile".into(),
        "value".into(),
        "±".into(),
        "count".into(),
    ]];
    for p in s.percentiles() {
        rows.push(if s.is_empty() {
            vec![
                Trimmed(p.rank, 4).to_string(),
                "-".into(),
                "".into(),
                "0".into(),
            ]
        } else {
            vec![
                Trimmed(p.rank, 4).to_string(),
                s.scaled(p.value).to_string(),
                s.scaled(p.half_width()).to_string(),
                Grouped(p.rank_count).to_string(),
            ]
        });
    }
    columns(out, &rows);
    let _ = write!(
        out,
        "  mean {}  stdev {}  total {}",
        stat_in(s, s.mean()),
        stat_in(s, s.stdev()),
        Grouped(s.total())
    );
    if s.underflow() != 0 {
        let _ = write!(out, "  underflow {}", Grouped(s.underflow()));
    }
    if s.overflow() != 0 {
        let _ = write!(out, "  overflow {}", Grouped(s.overflow()));
    }
    let _ = writeln!(
        out,
        "  precision {}%",
        GroupedFloat(s.precision() * 100.0, 4)
    );
}

fn text_diff(out: &mut String, t: &Compared) {
    let (b, a) = (&t.before, &t.after);
    let either_empty = b.is_empty() || a.is_empty();
    let value = |s: &Summary, v: u64| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.scaled(v).to_string()
        }
    };
    let change = |x: f64, y: f64| {
        if either_empty {
            "n/a".to_string()
        } else {
            format_change(x, y)
        }
    };
    let _ = writeln!(out, "{}", t.title);
    let mut rows: Vec<Vec<String>> = vec![vec![
        "percentile".into(),
        "A".into(),
        "B".into(),
        "Δ%".into(),
    ]];
    for (pb, pa) in b.percentiles().iter().zip(a.percentiles()) {
        rows.push(vec![
            Trimmed(pb.rank, 4).to_string(),
            value(b, pb.value),
            value(a, pa.value),
            change(pb.value as f64, pa.value as f64),
        ]);
    }
    rows.push(vec![
        "mean".into(),
        stat_in(b, b.mean()),
        stat_in(a, a.mean()),
        change(b.mean(), a.mean()),
    ]);
    rows.push(vec![
        "stdev".into(),
        stat_in(b, b.stdev()),
        stat_in(a, a.stdev()),
        change(b.stdev(), a.stdev()),
    ]);
    rows.push(vec![
        "total".into(),
        Grouped(b.total()).to_string(),
        Grouped(a.total()).to_string(),
        format_change(b.total() as f64, a.total() as f64),
    ]);
    let d = match b.cohens_d(a) {
        None => "n/a".to_string(),
        Some(d) if d.is_infinite() => (if d > 0.0 { "+inf" } else { "-inf" }).to_string(),
        Some(d) => GroupedFloat(d, 2).to_string(),
    };
    rows.push(vec!["cohen's d".into(), "".into(), "".into(), d]);
    columns(out, &rows);
}

/// A grouped statistic of `s` in its printed unit (2 decimals, more when the unit needs
/// them), `-` when empty.
fn stat_in(s: &Summary, v: f64) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        GroupedFloat(s.scaled_stat(v), s.stat_decimals()).to_string()
    }
}

/// A plain float with 4 decimals for CSV, empty when the summary is empty or not finite.
fn plain_float(v: f64, empty: bool) -> String {
    if empty || !v.is_finite() {
        String::new()
    } else {
        format!("{v:.4}")
    }
}

/// The context pairs as JSON string fields.
fn context_object(context: &Context) -> Ordered<&str> {
    Ordered::new(
        context
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_str()))
            .collect(),
    )
}

/// `{…context, "tables": […]}`: the summaries as JSON.
#[derive(Serialize)]
struct Tables<'a> {
    #[serde(flatten)]
    context: Ordered<&'a str>,
    tables: Vec<SummaryDoc<'a>>,
}

/// `{…context, "diffs": […]}`: the diffs as JSON.
#[derive(Serialize)]
struct Diffs<'a> {
    #[serde(flatten)]
    context: Ordered<&'a str>,
    diffs: Vec<DiffDoc<'a>>,
}

/// One summary as JSON: values in the printed unit, exactly.
#[derive(Serialize)]
struct SummaryDoc<'a> {
    name: &'a str,
    total: u64,
    underflow: u64,
    overflow: u64,
    mean: Option<Box<RawValue>>,
    stdev: Option<Box<RawValue>>,
    precision: Box<RawValue>,
    max: Option<Box<RawValue>>,
    percentiles: Vec<PercentileDoc>,
}

/// One row of a summary as JSON (`null` values when the summary is empty).
#[derive(Serialize)]
struct PercentileDoc {
    rank: Box<RawValue>,
    value: Option<Box<RawValue>>,
    half_width: Option<Box<RawValue>>,
    count: u64,
}

impl<'a> SummaryDoc<'a> {
    fn new(name: &'a str, s: &Summary) -> Self {
        let empty = s.is_empty();
        let stat = |v: f64| json::displayed((!empty).then_some(s.scaled_stat(v)));
        let value = |v: u64| (!empty).then(|| json::decimal(&s.scaled(v).plain()));
        SummaryDoc {
            name,
            total: s.total(),
            underflow: s.underflow(),
            overflow: s.overflow(),
            mean: stat(s.mean()),
            stdev: stat(s.stdev()),
            precision: json::decimal(&s.precision().to_string()),
            max: value(s.p100().highest),
            percentiles: s
                .percentiles()
                .iter()
                .map(|p| PercentileDoc {
                    rank: json::decimal(&p.rank.to_string()),
                    value: value(p.value),
                    half_width: value(p.half_width()),
                    count: if empty { 0 } else { p.rank_count },
                })
                .collect(),
        }
    }
}

/// One diff as JSON: both summaries, Δ% per row, and Cohen's d.
#[derive(Serialize)]
struct DiffDoc<'a> {
    name: &'a str,
    a: SummaryDoc<'a>,
    b: SummaryDoc<'a>,
    delta_pct: Ordered<Option<Box<RawValue>>>,
    cohens_d: Option<Box<RawValue>>,
}

impl<'a> DiffDoc<'a> {
    fn new(t: &'a Compared) -> Self {
        let delta_pct = diff_rows(t)
            .into_iter()
            .filter(|(row, ..)| row != "cohens_d")
            .map(|(row, _, _, d)| (row, (!d.is_empty()).then(|| json::decimal(&d))))
            .collect();
        DiffDoc {
            name: &t.title,
            a: SummaryDoc::new(&t.title, &t.before),
            b: SummaryDoc::new(&t.title, &t.after),
            delta_pct: Ordered::new(delta_pct),
            cohens_d: json::displayed(t.before.cohens_d(&t.after)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_titles_that_need_it() {
        let mut out = String::new();
        let _ = write_csv_row(&mut out, ["a,b", "a\"b", "ab"]);
        assert_eq!(out, "\"a,b\",\"a\"\"b\",ab\n");
    }
}
