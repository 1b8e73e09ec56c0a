//! The per-phase table (N, time, %, p50, cycles, IPC p5/p50/p95, misses per 1,000
//! instructions) and the counter-event table of a
//! [`SpanAggregator`](crate::aggregate::SpanAggregator), as numbers ([`PhaseRow`],
//! [`EventRow`]) and as text ([`SpanTable`]: a Markdown table and its notes). The rows are
//! made by the aggregator's methods ([`SpanAggregator::table`](crate::aggregate::SpanAggregator::table)
//! and the others, in `aggregate/view.rs`); this module holds their types and how numbers
//! are written, and knows nothing of the aggregator.

use core::fmt;

use picollo_core::fmt::{Grouped, GroupedFloat};

/// Linux errno values, as a span ring's header records them (the writer is a Linux
/// process, whatever machine reads the ring).
pub(crate) mod errno {
    pub(crate) const EPERM: i32 = 1;
    pub(crate) const ENOENT: i32 = 2;
    pub(crate) const EBUSY: i32 = 16;
    pub(crate) const ENODEV: i32 = 19;
    pub(crate) const EINVAL: i32 = 22;
    pub(crate) const EMFILE: i32 = 24;
    pub(crate) const EACCES: i32 = 13;
    pub(crate) const EOPNOTSUPP: i32 = 95;
}

/// Why a counter the writer asked for could not be opened, from the errno in the ring
/// header: `ENOENT: not supported here (…)`.
pub fn unavailable_reason(errno: u32) -> String {
    let e = i32::try_from(errno).unwrap_or(i32::MAX);
    let (name, why) = match e {
        0 => return "reason not recorded".to_owned(),
        errno::ENOENT => (
            "ENOENT",
            "not supported here (no hardware PMU, or the CPU or VM does not expose this event)",
        ),
        errno::EOPNOTSUPP => ("EOPNOTSUPP", "not supported by this PMU"),
        errno::ENODEV => ("ENODEV", "no such PMU here"),
        errno::EACCES => (
            "EACCES",
            "permission denied (see /proc/sys/kernel/perf_event_paranoid)",
        ),
        errno::EPERM => (
            "EPERM",
            "not permitted (see /proc/sys/kernel/perf_event_paranoid)",
        ),
        errno::EINVAL => ("EINVAL", "not a counter name or setting this machine takes"),
        errno::EMFILE => ("EMFILE", "too many open files in the writer"),
        errno::EBUSY => ("EBUSY", "the PMU is busy (another tool holds it)"),
        _ => return format!("errno {e}: {}", std::io::Error::from_raw_os_error(e)),
    };
    format!("{name}: {why}")
}

/// One counter column of a [`PhaseRow`].
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseCounter {
    /// The counter's name.
    pub name: String,
    /// Sum of its deltas over the phase's spans.
    pub sum: u128,
    /// Spans with a value.
    pub spans: u64,
    /// Per 1000 instructions, when instructions were counted too.
    pub per_kilo_instruction: Option<f64>,
    /// Mean per span.
    pub per_span: f64,
}

/// One row of the per-phase table, as numbers (the table and the JSON output print these).
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseRow {
    /// The span name.
    pub name: String,
    /// Spans.
    pub count: u64,
    /// Total time in clock ticks.
    pub ticks: u128,
    /// Total time in nanoseconds, when the clock rate is known.
    pub time_ns: Option<f64>,
    /// Share of the outermost spans' cycles (or time without cycles), 0..=1: the outermost
    /// rows add up to 1, a nested row is the part of them spent in it.
    pub share: f64,
    /// Median duration in ticks.
    pub p50_ticks: Option<u64>,
    /// Median duration in nanoseconds, when the clock rate is known.
    pub p50_ns: Option<f64>,
    /// Median wall time (creation → close) in ticks, when the source knows wall times (a
    /// span layer; frames carry busy intervals only).
    pub wall_p50_ticks: Option<u64>,
    /// Total cycles, when cycles were counted.
    pub cycles: Option<u128>,
    /// Spans that [`PhaseRow::cycles`] covers: fewer than [`PhaseRow::count`] when the
    /// counters were chosen while the spans ran (`picollo attach -e` asks for them after it
    /// attaches, so the first spans it sees may count something else).
    pub cycles_spans: u64,
    /// Total instructions, when instructions were counted.
    pub instructions: Option<u128>,
    /// Spans that [`PhaseRow::instructions`] covers (see [`PhaseRow::cycles_spans`]).
    pub instructions_spans: u64,
    /// Instructions per cycle at the 5th, 50th and 95th percentiles of spans, when both
    /// cycles and instructions were counted.
    pub ipc: Option<[f64; 3]>,
    /// The other counters.
    pub counters: Vec<PhaseCounter>,
}

/// One row of the counter-event table, as numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    /// The event name.
    pub name: String,
    /// Events.
    pub count: u64,
    /// The last value.
    pub last: i64,
    /// The smallest value.
    pub min: i64,
    /// The mean.
    pub mean: f64,
    /// The largest value.
    pub max: i64,
    /// The median (values of 0 and above only).
    pub p50: Option<u64>,
    /// The 99th percentile (values of 0 and above only).
    pub p99: Option<u64>,
}

/// `10,728`.
pub(crate) fn group_digits(n: u64) -> String {
    Grouped(n).to_string()
}

/// `4.91B`, `288M`, `85K`, `512` (the per-phase table's cycle column).
pub(crate) fn fmt_si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}B", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// A counter's mean per span in its unit: a duration for the clock events (`task-clock`,
/// `cpu-clock` count nanoseconds), else a count with one decimal (`3,137.3`), so that one
/// column never mixes `26M` with `3137.3`.
pub(crate) fn fmt_per_span(counter: &str, v: f64) -> String {
    if is_clock_event(counter) {
        format_duration_ns(v)
    } else {
        GroupedFloat(v, 1).to_string()
    }
}

/// Whether `counter` (a perf name, modifiers included) counts nanoseconds.
pub(crate) fn is_clock_event(counter: &str) -> bool {
    let event = counter.split(':').next().unwrap_or(counter);
    matches!(event, "task-clock" | "cpu-clock")
}

/// A duration of `ticks`: in seconds to nanoseconds when `hz` is known, else in ticks.
pub(crate) fn fmt_ticks(ticks: f64, hz: Option<f64>) -> String {
    let Some(hz) = hz.filter(|h| *h > 0.0) else {
        return format!("{} ticks", fmt_si(ticks));
    };
    let ns = ticks * 1e9 / hz;
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A table of the span consumer: the per-phase table or the counter-event table, printed as
/// a Markdown table followed by notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanTable {
    /// Column titles.
    pub columns: Vec<String>,
    /// One row per name; `n/a` where a value cannot be measured.
    pub rows: Vec<Vec<String>>,
    /// What the columns mean and what is missing.
    pub notes: Vec<String>,
}

impl SpanTable {
    /// The cell of `column` in the row of `name`.
    pub fn cell(&self, name: &str, column: &str) -> Option<&str> {
        let c = self.columns.iter().position(|t| t == column)?;
        let row = self
            .rows
            .iter()
            .find(|r| r.first().map(String::as_str) == Some(name))?;
        row.get(c).map(String::as_str)
    }
}

impl fmt::Display for SpanTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .chain(self.columns.get(i))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |f: &mut fmt::Formatter<'_>, cells: &[String]| -> fmt::Result {
            f.write_str("|")?;
            for (i, w) in widths.iter().enumerate() {
                let c = cells.get(i).map_or("", String::as_str);
                if i == 0 {
                    write!(f, " {c:<w$} |")?;
                } else {
                    write!(f, " {c:>w$} |")?;
                }
            }
            writeln!(f)
        };
        line(f, &self.columns)?;
        f.write_str("|")?;
        for (i, w) in widths.iter().enumerate() {
            let dashes = "-".repeat(*w);
            if i == 0 {
                write!(f, ":{dashes}-|")?;
            } else {
                write!(f, "-{dashes}:|")?;
            }
        }
        writeln!(f)?;
        for r in &self.rows {
            line(f, r)?;
        }
        for n in &self.notes {
            writeln!(f, "{n}")?;
        }
        Ok(())
    }
}

/// A duration in nanoseconds as the per-phase table writes it (`6.00 ms`, `812 ns`).
pub fn format_duration_ns(ns: f64) -> String {
    fmt_ticks(ns, Some(1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(group_digits(10728), "10,728");
        assert_eq!(group_digits(7), "7");
        assert_eq!(group_digits(1_000_000), "1,000,000");
        assert_eq!(fmt_si(4.91e9), "4.91B");
        assert_eq!(fmt_si(288e6), "288M");
        assert_eq!(fmt_ticks(1.5e6, Some(1e9)), "1.50 ms");
        assert_eq!(fmt_ticks(1500.0, None), "2K ticks");
        assert_eq!(
            unavailable_reason(errno::ENOENT as u32),
            "ENOENT: not supported here (no hardware PMU, or the CPU or VM does not expose \
             this event)"
        );
        assert_eq!(unavailable_reason(0), "reason not recorded");
        assert!(unavailable_reason(errno::EACCES as u32).contains("perf_event_paranoid"));
        assert!(unavailable_reason(9999).starts_with("errno 9999: "));
    }
}
