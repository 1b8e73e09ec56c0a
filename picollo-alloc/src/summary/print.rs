//! The printed forms of a [`Summary`]: the markdown table ([`SummaryTable`]), the one-line
//! log form ([`SummaryLine`]), the side-by-side diff ([`SummaryDiff`]), and the cell formats
//! they share ([`format_change`]).

use core::fmt;
use picollo_core::fmt::{Grouped, GroupedFloat, Trimmed};
use picollo_core::Percentile;

use super::Summary;

/// The ranks printed by [`Summary::one_line`] (the monitoring line of Picollo for .NET), as
/// positions in [`Summary::RANKS`] and labels.
const ONE_LINE: [(usize, &str); 8] = [
    (0, "P0"),
    (4, "P25"),
    (5, "P50"),
    (7, "P90"),
    (9, "P95"),
    (11, "P99"),
    (12, "P999"),
    (15, "P100"),
];

impl Summary {
    /// The markdown summary table (Picollo for .NET's `PrettyPrint`) under a `##### title` heading
    /// (no heading when `title` is empty). See [`SummaryTable`] for the layout.
    pub fn table<'a>(&'a self, title: &'a str) -> SummaryTable<'a> {
        SummaryTable {
            summary: self,
            title,
        }
    }

    /// The one-line form of Picollo for .NET's monitoring example. See [`SummaryLine`].
    pub fn one_line<'a>(&'a self, name: &'a str) -> SummaryLine<'a> {
        SummaryLine {
            summary: self,
            name,
        }
    }

    /// The side-by-side table of `self` (labelled `before`) and `after`, with the change of
    /// every row and Cohen's d. See [`SummaryDiff`].
    pub fn diff<'a>(
        &'a self,
        after: &'a Summary,
        title: &'a str,
        before_label: &'a str,
        after_label: &'a str,
    ) -> SummaryDiff<'a> {
        SummaryDiff {
            before: self,
            after,
            title,
            before_label,
            after_label,
        }
    }
}

impl fmt::Display for Summary {
    /// The markdown table titled `Histogram summary`, as Picollo for .NET's `PrettyPrint()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.table("Histogram summary").fmt(f)
    }
}

/// The markdown table of a [`Summary`]; from [`Summary::table`].
///
/// ```text
/// ##### Histogram Before
/// | Percentile | Value     | ±      | Count     |
/// | :--------- | --------: | :----- | --------: |
/// | 0          |    20,096 | ±128   |         1 |
/// …
/// | 100        |    25,472 | ±128   | 1,000,000 |
/// | Overflow   |           |        |         1 |
/// |            |           |        |           |
/// | Mean:      | 21,696.54 | StDev: |  1,482.39 |
/// | Precision: |   0.7813% | Total: | 1,000,000 |
/// | Range Min: |    10,000 | Max:   |    30,000 |
/// ```
///
/// - Columns are as wide as their widest cell (header included), left- or right-aligned as
///   the alignment row says; integers are grouped by thousands.
/// - `Value` is the bucket's equivalent value (the midpoint), `±` half the bucket width and
///   `Count` the count the rank asks for (`ceil(rank/100 · total)`).
/// - Mean and StDev have 2 decimals, Precision 4 decimals as a percentage.
/// - The `Underflow` row (before rank 0) and the `Overflow` row (after rank 100) appear only
///   when not zero; the `Range` row appears when any value fell outside the window (as in
///   every table Picollo for .NET prints: the range explains the out-of-range rows).
/// - An empty histogram prints `-` for the values, the mean and the deviation.
/// - Every line, the last included, ends with `\n`: `println!` leaves a blank line after the
///   table, as Picollo for .NET prints them.
#[derive(Clone, Copy, Debug)]
pub struct SummaryTable<'a> {
    summary: &'a Summary,
    title: &'a str,
}

impl fmt::Display for SummaryTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary;
        let empty = s.is_empty();
        let mut rows: Vec<[String; 4]> = Vec::with_capacity(22);
        if s.underflow != 0 {
            rows.push(cells([
                "Underflow",
                "",
                "",
                &Grouped(s.underflow).to_string(),
            ]));
        }
        for p in &s.percentiles {
            rows.push(if empty {
                cells([&rank(p), "-", "", "0"])
            } else {
                [
                    rank(p),
                    s.scaled(p.value).to_string(),
                    format!("±{}", s.scaled(p.half_width())),
                    Grouped(p.rank_count).to_string(),
                ]
            });
        }
        if s.overflow != 0 {
            rows.push(cells([
                "Overflow",
                "",
                "",
                &Grouped(s.overflow).to_string(),
            ]));
        }
        rows.push(Default::default());
        rows.push(cells([
            "Mean:",
            &stat(s.scaled_stat(s.mean), empty, s.stat_decimals()),
            "StDev:",
            &stat(s.scaled_stat(s.stdev), empty, s.stat_decimals()),
        ]));
        rows.push(cells([
            "Precision:",
            &percent(s.precision()),
            "Total:",
            &Grouped(s.total).to_string(),
        ]));
        if s.underflow != 0 || s.overflow != 0 {
            rows.push(cells([
                "Range Min:",
                &s.scaled(s.range().0).to_string(),
                "Max:",
                &s.scaled(s.range().1).to_string(),
            ]));
        }
        write_table(
            f,
            self.title,
            ["Percentile", "Value", "±", "Count"],
            [Align::Left, Align::Right, Align::Left, Align::Right],
            &rows,
        )
    }
}

/// The one-line form of a [`Summary`]; from [`Summary::one_line`].
///
/// `Name: Total=1,000,000, Overflow=1, Mean=21,696.5, P0=20,096, P25=20,352, P50=21,376,
/// P90=23,936, P95=24,448, P99=24,960, P999=25,472, P100=25,472` (one line), as Picollo for .NET's
/// monitoring example prints it: grouped integers, the mean with 1 decimal, bucket midpoints.
///
/// `, Underflow=…` follows `Overflow` only when not zero; the `Name: ` prefix is left out when
/// the name is empty; an empty histogram prints `-` for the mean and the percentiles. No
/// trailing newline.
#[derive(Clone, Copy, Debug)]
pub struct SummaryLine<'a> {
    summary: &'a Summary,
    name: &'a str,
}

impl fmt::Display for SummaryLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary;
        if !self.name.is_empty() {
            write!(f, "{}: ", self.name)?;
        }
        write!(
            f,
            "Total={}, Overflow={}",
            Grouped(s.total),
            Grouped(s.overflow)
        )?;
        if s.underflow != 0 {
            write!(f, ", Underflow={}", Grouped(s.underflow))?;
        }
        if s.is_empty() {
            f.write_str(", Mean=-")?;
            for (_, label) in ONE_LINE {
                write!(f, ", {label}=-")?;
            }
        } else {
            let decimals = if s.divisor > 1 { s.stat_decimals() } else { 1 };
            write!(
                f,
                ", Mean={}",
                GroupedFloat(s.scaled_stat(s.mean), decimals)
            )?;
            for (i, label) in ONE_LINE {
                write!(f, ", {label}={}", s.scaled(s.percentiles[i].value))?;
            }
        }
        Ok(())
    }
}

/// Two summaries side by side; from [`Summary::diff`].
///
/// ```text
/// ##### Getting Started Diff
/// | Percentile | Before    | After     | Δ%      |
/// | :--------- | --------: | --------: | ------: |
/// | 0          |    20,096 |    19,072 |   -5.1% |
/// …
/// |            |           |           |         |
/// | Mean:      | 21,696.54 | 21,518.53 |   -0.8% |
/// | StDev:     |  1,482.39 |  2,822.16 |  +90.4% |
/// | Precision: |   0.7813% |   0.7813% |    0.0% |
/// | Total:     | 1,000,000 | 2,000,000 | +100.0% |
/// | D-value:   |           |           |   -0.07 |
/// ```
///
/// - `Δ%` is `(after − before) / before · 100` with 1 decimal, signed: `+1.1%`, `-5.1%`, and
///   `0.0%` when it rounds to zero. It is `n/a` when `before` is 0 and `after` is not, or when
///   either side is empty (the empty side's values print as `-`).
/// - `D-value` is Cohen's d with 2 decimals ([`Summary::cohens_d`]): `n/a` when either side
///   is empty, `-inf`/`+inf` when both sides have zero deviation and different means.
/// - Out-of-window counts are not compared (as in Picollo for .NET); print each summary's
///   [`Summary::table`] to see them.
/// - Columns, alignment and the trailing newline are as in [`SummaryTable`].
#[derive(Clone, Copy, Debug)]
pub struct SummaryDiff<'a> {
    before: &'a Summary,
    after: &'a Summary,
    title: &'a str,
    before_label: &'a str,
    after_label: &'a str,
}

impl fmt::Display for SummaryDiff<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, a) = (self.before, self.after);
        let either_empty = b.is_empty() || a.is_empty();
        let value = |s: &Summary, v: u64| {
            if s.is_empty() {
                "-".to_string()
            } else {
                s.scaled(v).to_string()
            }
        };
        let change = |before: f64, after: f64| {
            if either_empty {
                "n/a".to_string()
            } else {
                format_change(before, after)
            }
        };
        let st = |s: &Summary, v: f64| stat(s.scaled_stat(v), s.is_empty(), s.stat_decimals());
        let mut rows: Vec<[String; 4]> = Vec::with_capacity(22);
        for (pb, pa) in b.percentiles.iter().zip(a.percentiles.iter()) {
            rows.push([
                rank(pb),
                value(b, pb.value),
                value(a, pa.value),
                change(pb.value as f64, pa.value as f64),
            ]);
        }
        rows.push(Default::default());
        rows.push([
            "Mean:".to_string(),
            st(b, b.mean),
            st(a, a.mean),
            change(b.mean, a.mean),
        ]);
        rows.push([
            "StDev:".to_string(),
            st(b, b.stdev),
            st(a, a.stdev),
            change(b.stdev, a.stdev),
        ]);
        rows.push([
            "Precision:".to_string(),
            percent(b.precision()),
            percent(a.precision()),
            format_change(b.precision(), a.precision()),
        ]);
        rows.push([
            "Total:".to_string(),
            Grouped(b.total).to_string(),
            Grouped(a.total).to_string(),
            format_change(b.total as f64, a.total as f64),
        ]);
        let d = match b.cohens_d(a) {
            None => "n/a".to_string(),
            Some(d) if d.is_infinite() => (if d > 0.0 { "+inf" } else { "-inf" }).to_string(),
            Some(d) => GroupedFloat(d, 2).to_string(),
        };
        rows.push(cells(["D-value:", "", "", &d]));
        write_table(
            f,
            self.title,
            ["Percentile", self.before_label, self.after_label, "Δ%"],
            [Align::Left, Align::Right, Align::Right, Align::Right],
            &rows,
        )
    }
}

#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

fn cells(c: [&str; 4]) -> [String; 4] {
    c.map(str::to_string)
}

fn rank(p: &Percentile) -> String {
    Trimmed(p.rank, 4).to_string()
}

/// A statistic with `decimals` decimals, or `-` for an empty histogram.
fn stat(v: f64, empty: bool, decimals: usize) -> String {
    if empty {
        "-".to_string()
    } else {
        GroupedFloat(v, decimals).to_string()
    }
}

/// A ratio as a percentage with 4 decimals: `0.0078125` is `0.7813%`.
fn percent(ratio: f64) -> String {
    format!("{}%", GroupedFloat(ratio * 100.0, 4))
}

/// The signed relative change in percent with 1 decimal: `+1.1%`, `-5.1%`, `0.0%`, or `n/a`
/// when `before` is 0 and `after` is not.
/// The `Δ%` cell of a diff row: `+1.1%`, `-5.1%`, `0.0%` for a change that rounds to zero,
/// `n/a` when `before` is 0 or either side is not finite. Shared by every diff printer.
pub fn format_change(before: f64, after: f64) -> String {
    if before == after {
        return "0.0%".to_string();
    }
    if before == 0.0 || !before.is_finite() || !after.is_finite() {
        return "n/a".to_string();
    }
    let pct = (after - before) / before.abs() * 100.0;
    // GroupedFloat rounds half away from zero; a change that rounds to 0.0 gets no sign.
    if (pct.abs() * 10.0 + 0.5) < 1.0 {
        return "0.0%".to_string();
    }
    let sign = if pct > 0.0 { "+" } else { "-" };
    format!("{sign}{}%", GroupedFloat(pct.abs(), 1))
}

/// Writes `##### title` (unless empty), the header, the alignment row and `rows`, every
/// column padded to its widest cell (counted in characters).
fn write_table(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    header: [&str; 4],
    align: [Align; 4],
    rows: &[[String; 4]],
) -> fmt::Result {
    let mut widths = header.map(|h| h.chars().count().max(3));
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    if !title.is_empty() {
        writeln!(f, "##### {title}")?;
    }
    let line = |f: &mut fmt::Formatter<'_>, row: [&str; 4]| -> fmt::Result {
        for ((cell, &w), a) in row.iter().zip(widths.iter()).zip(align.iter()) {
            match a {
                Align::Left => write!(f, "| {cell:<w$} ")?,
                Align::Right => write!(f, "| {cell:>w$} ")?,
            }
        }
        f.write_str("|\n")
    };
    line(f, header)?;
    for (&w, a) in widths.iter().zip(align.iter()) {
        let dashes = "-".repeat(w - 1);
        match a {
            Align::Left => write!(f, "| :{dashes} ")?,
            Align::Right => write!(f, "| {dashes}: ")?,
        }
    }
    f.write_str("|\n")?;
    for row in rows {
        line(f, [&row[0], &row[1], &row[2], &row[3]])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_formatting() {
        assert_eq!(format_change(20_096.0, 19_072.0), "-5.1%");
        assert_eq!(format_change(22_912.0, 23_168.0), "+1.1%");
        assert_eq!(format_change(5.0, 5.0), "0.0%");
        assert_eq!(format_change(100_000.0, 100_001.0), "0.0%");
        assert_eq!(format_change(100_000.0, 99_999.0), "0.0%");
        assert_eq!(format_change(1.0, 0.0), "-100.0%");
        assert_eq!(format_change(0.0, 3.0), "n/a");
        assert_eq!(format_change(1.0, 1_000.0), "+99,900.0%");
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(percent(0.5 / 64.0), "0.7813%");
        assert_eq!(percent(0.5 / 512.0), "0.0977%");
    }
}
