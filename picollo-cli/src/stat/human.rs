//! The default output of `stat`: per command, one line per counter (mean ± σ, median,
//! min … max, and p90/p99 when the run count resolves them) in human units, then the
//! comparisons with their verdicts. Coloured on a terminal.

use core::fmt::Write as _;

use super::model::{BaselineRef, Bench, Comparison, Kind, Saved, Verdict};
use super::stats::{self, runs_for, Summary};

/// ANSI colours, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Style {
    /// Whether to emit escape codes.
    pub(crate) color: bool,
}

impl Style {
    fn paint(self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(self, s: &str) -> String {
        self.paint("1", s)
    }
    fn green(self, s: &str) -> String {
        self.paint("32", s)
    }
    fn red(self, s: &str) -> String {
        self.paint("31", s)
    }
    fn cyan(self, s: &str) -> String {
        self.paint("36", s)
    }
    fn magenta(self, s: &str) -> String {
        self.paint("35", s)
    }
    fn dim(self, s: &str) -> String {
        self.paint("2", s)
    }
}

/// A scale for one line: divisor, suffix, and decimals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scale {
    /// Values are divided by this.
    pub(crate) divisor: f64,
    /// Printed after the number (`ms`, `k`, or nothing).
    pub(crate) suffix: &'static str,
    /// Decimals after the point.
    pub(crate) decimals: usize,
}

impl Scale {
    /// The scale of a line whose typical value is `reference`: ns, µs, ms, s for times;
    /// plain, k, M, G, T for counts; three or four significant digits.
    pub(crate) fn for_value(kind: Kind, reference: f64) -> Scale {
        let r = reference.abs();
        let (divisor, suffix) = match kind {
            Kind::Time if r < 1e3 => (1.0, "ns"),
            Kind::Time if r < 1e6 => (1e3, "µs"),
            Kind::Time if r < 1e9 => (1e6, "ms"),
            Kind::Time => (1e9, "s"),
            Kind::Count if r < 1e4 => (1.0, ""),
            Kind::Count if r < 1e6 => (1e3, "k"),
            Kind::Count if r < 1e9 => (1e6, "M"),
            Kind::Count if r < 1e12 => (1e9, "G"),
            Kind::Count => (1e12, "T"),
        };
        let scaled = r / divisor;
        let decimals = if scaled >= 100.0 {
            1
        } else if scaled >= 10.0 {
            2
        } else {
            3
        };
        // Plain nanoseconds and plain counts of integers need no more than one decimal.
        let decimals = if divisor == 1.0 {
            decimals.min(1)
        } else {
            decimals
        };
        Scale {
            divisor,
            suffix,
            decimals,
        }
    }

    /// `v` in this scale, with the suffix.
    pub(crate) fn show(&self, v: f64) -> String {
        let n = format!("{:.*}", self.decimals, v / self.divisor);
        if self.suffix.is_empty() {
            n
        } else {
            format!("{n} {}", self.suffix)
        }
    }
}

/// `v` in its own best scale (for one-off figures such as user and system time).
pub(crate) fn show(kind: Kind, v: f64) -> String {
    Scale::for_value(kind, v).show(v)
}

/// Decimals for a ratio near `r`: three near 1 (1.003), two below 10, one below 100.
fn ratio_decimals(r: f64) -> usize {
    if (0.9..1.1).contains(&r) {
        3
    } else if r < 10.0 {
        2
    } else if r < 100.0 {
        1
    } else {
        0
    }
}

/// A ratio: `1.31`, `1.003`, `12.4`, `152`.
pub(crate) fn ratio(r: f64) -> String {
    ratio_in(r, r)
}

/// `v` with the decimals of the ratio `of` (an interval's bounds printed like its ratio).
pub(crate) fn ratio_in(v: f64, of: f64) -> String {
    if v.is_finite() {
        format!("{v:.*}", ratio_decimals(of))
    } else {
        "∞".into()
    }
}

/// A p-value: `p = 0.012`, `p < 0.001`.
pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// The sentence for one comparison, without colour: "`B` is 1.31× faster than `A` (95% CI
/// 1.22–1.40, p = 0.002)", "no significant difference (1.02×, …)".
pub(crate) fn sentence(c: &Comparison, command: &str, kind: Kind, st: Style) -> String {
    let (Some(r), Some(t)) = (c.ratio, c.test) else {
        return format!(
            "`{command}`: not comparable with `{}` (a side has no values, or the baseline's \
             mean is 0)",
            c.baseline_label
        );
    };
    let ci = (stats::CONFIDENCE * 100.0).round();
    match c.verdict() {
        Verdict::Lower | Verdict::Higher => {
            let lower = c.verdict() == Verdict::Lower;
            let (x, lo, hi) = if lower {
                (1.0 / r.ratio, 1.0 / r.high, 1.0 / r.low)
            } else {
                (r.ratio, r.low, r.high)
            };
            let (word, what) = match (kind, lower) {
                (Kind::Time, true) => ("faster", String::new()),
                (Kind::Time, false) => ("slower", String::new()),
                (Kind::Count, true) => ("fewer", format!(" {}", c.counter)),
                (Kind::Count, false) => ("more", format!(" {}", c.counter)),
            };
            let verb = if kind == Kind::Time { "is" } else { "counts" };
            let head = format!("{}× {word}", ratio(x));
            let head = if lower {
                st.green(&head)
            } else {
                st.red(&head)
            };
            format!(
                "`{command}` {verb} {head}{what} than `{}` ({ci:.0}% CI {}–{}, {})",
                c.baseline_label,
                ratio_in(lo, x),
                ratio_in(hi, x),
                p_value(t.p)
            )
        }
        _ => format!(
            "{} between `{command}` and `{}` ({}×, {ci:.0}% CI {}–{}, {}{})",
            st.dim("no significant difference"),
            c.baseline_label,
            ratio(r.ratio),
            ratio_in(r.low, r.ratio),
            ratio_in(r.high, r.ratio),
            p_value(t.p),
            if c.too_few_runs() {
                "; too few runs to tell: use -r 4 or more"
            } else {
                ""
            }
        ),
    }
}

/// Pads `s` to `w` display columns (counting characters, not bytes, and skipping escapes).
fn pad(s: &str, w: usize, right: bool) -> String {
    let len = visible_len(s);
    let fill = " ".repeat(w.saturating_sub(len));
    if right {
        format!("{fill}{s}")
    } else {
        format!("{s}{fill}")
    }
}

fn visible_len(s: &str) -> usize {
    let mut n = 0;
    let mut esc = false;
    for c in s.chars() {
        if esc {
            esc = c != 'm';
        } else if c == '\x1b' {
            esc = true;
        } else {
            n += 1;
        }
    }
    n
}

/// The human report of `saved` with its comparisons.
pub(crate) fn render(saved: &Saved, comparisons: &[Comparison], st: Style) -> String {
    let mut out = String::new();
    let mut hidden: Vec<&str> = Vec::new();
    for (i, b) in saved.benches.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "{} {}",
            st.bold(&format!("Benchmark {}:", i + 1)),
            st.bold(&b.label())
        );
        hidden.extend(bench_table(&mut out, b, st));
        let _ = writeln!(out, "  {}", st.dim(&facts(b, saved.warmup).join("; ")));
    }
    hidden.sort_unstable();
    hidden.dedup();
    if !hidden.is_empty() {
        let need: Vec<String> = hidden
            .iter()
            .map(|p| {
                let v: f64 = p[1..].parse().unwrap_or(0.0);
                format!("{p} needs {} runs", runs_for(v))
            })
            .collect();
        let _ = writeln!(
            out,
            "\n{}",
            st.dim(&format!(
                "Not shown: {} (-r); --table prints every rank.",
                need.join(", ")
            ))
        );
    }
    comparison_lines(&mut out, saved, comparisons, st);
    out
}

/// One command's table: a row per counter (mean ± σ, median, min … max, p90, p99), the
/// percentile columns only where some counter resolves them. Returns the columns left out.
fn bench_table(out: &mut String, b: &Bench, st: Style) -> Vec<&'static str> {
    let mut rows: Vec<[String; 6]> = vec![[
        String::new(),
        "mean ± σ".into(),
        "median".into(),
        "min … max".into(),
        "p90".into(),
        "p99".into(),
    ]];
    let mut numeric = Vec::new();
    for s in &b.series {
        let Some(sum) = s.summary() else {
            let mut r: [String; 6] = Default::default();
            r[0].clone_from(&s.name);
            r[1] = "not counted".into();
            rows.push(r);
            continue;
        };
        rows.push(row(&s.name, s.kind(), &sum, st));
        numeric.push(sum);
    }
    let show_p90 = numeric.iter().any(|s| s.p90.is_some());
    let show_p99 = numeric.iter().any(|s| s.p99.is_some());
    let keep = |c: usize| c < 4 || (c == 4 && show_p90) || (c == 5 && show_p99);
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| visible_len(&r[c])).max().unwrap_or(0))
        .collect();
    for (ri, r) in rows.iter().enumerate() {
        let cells: Vec<String> = (0..6)
            .filter(|&c| keep(c))
            .map(|c| {
                let cell = if ri == 0 { st.dim(&r[c]) } else { r[c].clone() };
                pad(&cell, widths[c], c > 0)
            })
            .collect();
        let _ = writeln!(out, "  {}", cells.join("   ").trim_end());
    }
    [("p90", show_p90), ("p99", show_p99)]
        .into_iter()
        .filter(|(_, shown)| !shown)
        .map(|(p, _)| p)
        .collect()
}

/// The facts under a command's table: runs, warm-up, CPU times, failures, multiplexed and
/// missed counters.
fn facts(b: &Bench, warmup: u32) -> Vec<String> {
    let runs = b.runs();
    let mut facts = vec![format!("{runs} run{}", if runs == 1 { "" } else { "s" })];
    if warmup > 0 {
        facts.push(format!("{warmup} warm-up"));
    }
    if !b.user_ns.is_empty() {
        let m = |v: &[u64]| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        facts.push(format!(
            "user {}, system {} per run",
            show(Kind::Time, m(&b.user_ns)),
            show(Kind::Time, m(&b.system_ns))
        ));
    }
    let failed = b.exit_codes.iter().filter(|c| **c != Some(0)).count();
    if failed > 0 {
        facts.push(format!("{failed} failed (ignored)"));
    }
    for s in &b.series {
        if s.scaled_runs > 0 {
            facts.push(format!(
                "{} multiplexed in {} runs (scaled estimates)",
                s.name, s.scaled_runs
            ));
        }
        let missed = s.missed();
        if missed > 0 && missed < s.values.len() {
            facts.push(format!(
                "{} not counted in {missed} run{}",
                s.name,
                if missed == 1 { "" } else { "s" }
            ));
        }
    }
    facts
}

/// The comparisons: a heading naming the baseline, then a sentence per command and counter
/// (grouped under each command when there are several).
fn comparison_lines(out: &mut String, saved: &Saved, comparisons: &[Comparison], st: Style) {
    let Some(first) = comparisons.first() else {
        return;
    };
    let base = match &first.baseline {
        BaselineRef::Here(_) => format!("`{}`", first.baseline_label),
        BaselineRef::File(f, _) => format!("the saved run {f}"),
    };
    let _ = writeln!(
        out,
        "\n{} {}",
        st.bold(&format!("Comparison with {base}")),
        st.dim(&format!(
            "(ratio of means, bootstrap {:.0}% CI; Mann–Whitney U test, α = {})",
            stats::CONFIDENCE * 100.0,
            stats::ALPHA
        ))
    );
    let width = comparisons
        .iter()
        .map(|c| c.counter.chars().count())
        .max()
        .unwrap_or(0);
    let grouped = comparisons.iter().any(|c| c.command != first.command);
    let mut last = usize::MAX;
    for c in comparisons {
        let b = &saved.benches[c.command];
        if c.command != last && grouped {
            let _ = writeln!(out, "  {}", st.bold(&b.label()));
        }
        last = c.command;
        let _ = writeln!(
            out,
            "{}{}  {}",
            if grouped { "    " } else { "  " },
            pad(&format!("{}:", c.counter), width + 1, false),
            sentence(c, &b.label(), Kind::of(&c.counter), st)
        );
    }
}

/// One counter's cells.
fn row(name: &str, kind: Kind, s: &Summary, st: Style) -> [String; 6] {
    let sc = Scale::for_value(kind, s.mean);
    let plain = |v: f64| {
        if sc.divisor == 1.0 && v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            sc.show(v)
        }
    };
    let mean_sd = if sc.suffix.is_empty() {
        format!(
            "{} ± {}",
            st.green(&format!("{:.*}", sc.decimals, s.mean)),
            st.green(&format!("{:.*}", sc.decimals, s.stddev))
        )
    } else {
        format!(
            "{} ± {}",
            st.green(&sc.show(s.mean)),
            st.green(&sc.show(s.stddev))
        )
    };
    [
        name.to_string(),
        mean_sd,
        plain(s.median as f64),
        format!(
            "{} … {}",
            st.cyan(&plain(s.min as f64)),
            st.magenta(&plain(s.max as f64))
        ),
        s.p90.map_or_else(String::new, |v| plain(v as f64)),
        s.p99.map_or_else(String::new, |v| plain(v as f64)),
    ]
}

/// Warnings about statistical outliers, hyperfine's way: one line per command, which runs
/// of which counters, and the likely cause.
pub(crate) fn outlier_warnings(saved: &Saved) -> Vec<String> {
    let mut out = Vec::new();
    for b in &saved.benches {
        let mut parts = Vec::new();
        let mut first_run = false;
        for s in &b.series {
            let o = s.outliers();
            let Some(sum) = s.summary() else { continue };
            if o.is_empty() {
                continue;
            }
            first_run |= o.first() == Some(&0);
            let list: Vec<String> = o
                .iter()
                .take(4)
                .map(|&i| {
                    format!(
                        "run {} at {}",
                        i + 1,
                        show(s.kind(), s.values[i].unwrap_or(0) as f64)
                    )
                })
                .collect();
            parts.push(format!(
                "{} of {} runs in {} (median {}: {}{})",
                o.len(),
                s.values.len(),
                s.name,
                show(s.kind(), sum.median as f64),
                list.join(", "),
                if o.len() > 4 { ", …" } else { "" }
            ));
        }
        if parts.is_empty() {
            continue;
        }
        let hint = if first_run {
            "the first run stands out: a cold cache? Try more --warmup, or --prepare"
        } else {
            "other programs may have interfered; re-run on a quiet system"
        };
        out.push(format!(
            "warning: `{}`: statistical outliers (modified Z-score > {}): {}; {hint}",
            b.label(),
            stats::OUTLIER_Z,
            parts.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales() {
        let s = Scale::for_value(Kind::Time, 52_512_345.0);
        assert_eq!(s.show(52_512_345.0), "52.51 ms");
        assert_eq!(s.show(1_234_567.0), "1.23 ms");
        assert_eq!(
            Scale::for_value(Kind::Time, 848_384.0).show(848_384.0),
            "848.4 µs"
        );
        assert_eq!(Scale::for_value(Kind::Time, 1.5e9).show(1.5e9), "1.500 s");
        assert_eq!(Scale::for_value(Kind::Time, 512.0).show(512.0), "512.0 ns");
        assert_eq!(Scale::for_value(Kind::Count, 70.4).show(70.4), "70.4");
        assert_eq!(
            Scale::for_value(Kind::Count, 1.234e9).show(1.234e9),
            "1.234 G"
        );
        assert_eq!(ratio(1.3149), "1.31");
        assert_eq!(ratio(1.0033), "1.003");
        assert_eq!(ratio(12.34), "12.3");
        assert_eq!(p_value(0.0123), "p = 0.012");
        assert_eq!(p_value(1e-5), "p < 0.001");
        assert_eq!(visible_len("\x1b[32mab\x1b[0m…"), 3);
    }
}
