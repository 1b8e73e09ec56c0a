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
            out.push_str(
                "name,percentile,value,half_width,count,total,underflow,overflow,mean,stdev\n",
            );
            for t in tables {
                let s = &t.summary;
                for p in s.percentiles() {
                    let (value, half) = if s.is_empty() {
                        (String::new(), String::new())
                    } else {
                        (s.scaled(p.value).plain(), s.scaled(p.half_width()).plain())
                    };
                    let _ = writeln!(
                        out,
                        "{},{},{value},{half},{},{},{},{},{},{}",
                        csv_field(&t.title),
                        Trimmed(p.rank, 4),
                        p.rank_count,
                        s.total(),
                        s.underflow(),
                        s.overflow(),
                        plain_float(s.scaled_stat(s.mean()), s.is_empty()),
                        plain_float(s.scaled_stat(s.stdev()), s.is_empty()),
                    );
                }
            }
        }
        Format::Json => {
            out.push('{');
            json_context(&mut out, context);
            out.push_str("\"tables\":[");
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_summary(&mut out, &t.title, &t.summary);
            }
            out.push_str("]}\n");
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
            out.push_str("name,row,a,b,delta_pct\n");
            for t in tables {
                for (row, a, b, d) in diff_rows(t) {
                    let _ = writeln!(out, "{},{row},{a},{b},{d}", csv_field(&t.title));
                }
            }
        }
        Format::Json => {
            out.push('{');
            json_context(&mut out, context);
            out.push_str("\"diffs\":[");
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{{\"name\":{},\"a\":", json_string(&t.title));
                json_summary(&mut out, &t.title, &t.before);
                out.push_str(",\"b\":");
                json_summary(&mut out, &t.title, &t.after);
                out.push_str(",\"delta_pct\":{");
                for (j, (row, _, _, d)) in diff_rows(t).iter().enumerate() {
                    if row == "cohens_d" {
                        continue;
                    }
                    if j > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{}:{}", json_string(row), or_null(d));
                }
                let d = t.before.cohens_d(&t.after);
                let _ = write!(out, "}},\"cohens_d\":{}}}", json_number(d));
            }
            out.push_str("]}\n");
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

/// Quotes a CSV field when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number, `null` for none or a non-finite value.
fn json_number(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

/// An already formatted number, `null` when empty.
fn or_null(s: &str) -> &str {
    if s.is_empty() {
        "null"
    } else {
        s
    }
}

fn json_context(out: &mut String, context: &Context) {
    for (k, v) in context {
        let _ = write!(out, "{}:{},", json_string(k), json_string(v));
    }
}

fn json_summary(out: &mut String, name: &str, s: &Summary) {
    let empty = s.is_empty();
    let stat = |v: f64| json_number((!empty).then_some(s.scaled_stat(v)));
    let _ = write!(
        out,
        "{{\"name\":{},\"total\":{},\"underflow\":{},\"overflow\":{},\"mean\":{},\"stdev\":{},\
         \"precision\":{},\"max\":{},\"percentiles\":[",
        json_string(name),
        s.total(),
        s.underflow(),
        s.overflow(),
        stat(s.mean()),
        stat(s.stdev()),
        s.precision(),
        if empty {
            "null".to_string()
        } else {
            s.scaled(s.p100().highest).plain()
        },
    );
    for (i, p) in s.percentiles().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if empty {
            let _ = write!(
                out,
                "{{\"rank\":{},\"value\":null,\"half_width\":null,\"count\":0}}",
                p.rank
            );
        } else {
            let _ = write!(
                out,
                "{{\"rank\":{},\"value\":{},\"half_width\":{},\"count\":{}}}",
                p.rank,
                s.scaled(p.value).plain(),
                s.scaled(p.half_width()).plain(),
                p.rank_count
            );
        }
    }
    out.push_str("]}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("a\"b"), "\"a\"\"b\"");
        assert_eq!(csv_field("ab"), "ab");
    }
}
