//! The per-phase table (N, time, %, p50, cycles, IPC p5/p50/p95, misses per 1,000
//! instructions) and the counter-event table of a [`SpanAggregator`], as numbers
//! ([`PhaseRow`], [`EventRow`]) and as text ([`SpanTable`]: a Markdown table and its notes).

use core::fmt;

use picollo_core::fmt::{Grouped, GroupedFloat};
use picollo_core::{EquivalentValue, ReadExt};
use picollo_ring::ClockKind;

use super::aggregate::{is_cycles, SpanAggregator, SpanStats};
use super::COUNTERS_ENV;

/// Linux errno values, as a span ring's header records them (the writer is a Linux
/// process, whatever machine reads the ring).
mod errno {
    pub(super) const EPERM: i32 = 1;
    pub(super) const ENOENT: i32 = 2;
    pub(super) const EBUSY: i32 = 16;
    pub(super) const ENODEV: i32 = 19;
    pub(super) const EINVAL: i32 = 22;
    pub(super) const EMFILE: i32 = 24;
    pub(super) const EACCES: i32 = 13;
    pub(super) const EOPNOTSUPP: i32 = 95;
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
    /// Total instructions, when instructions were counted.
    pub instructions: Option<u128>,
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

impl SpanAggregator {
    /// The rows of the per-phase table as numbers: by total cycles (or time), largest first.
    pub fn phases(&self) -> Vec<PhaseRow> {
        let cycles = self.cycles_index();
        let mut names: Vec<&String> = self.spans.keys().collect();
        names.sort_by(|a, b| {
            let key = |n: &String| {
                let s = &self.spans[n];
                cycles.and_then(|c| s.counter_sum(c)).unwrap_or(s.ticks)
            };
            key(b).cmp(&key(a)).then(a.cmp(b))
        });
        let whole = self.whole();
        names
            .into_iter()
            .map(|name| self.phase_row(name, &self.spans[name], whole))
            .collect()
    }

    /// What `%` divides by: the outermost spans' time and cycles (nested spans are part of
    /// their parents', not added to them). Spans added without a depth
    /// (`record_histograms`) make the whole when no outermost span was seen.
    fn whole(&self) -> (u128, u128) {
        let ticks = if self.outer_ticks > 0 {
            self.outer_ticks
        } else {
            self.spans.values().map(|s| s.ticks).sum()
        };
        let cycles = if self.outer_cycles > 0 {
            self.outer_cycles
        } else {
            self.cycles_index()
                .map(|c| self.spans.values().filter_map(|s| s.counter_sum(c)).sum())
                .unwrap_or(0)
        };
        (ticks, cycles)
    }

    /// The row of span `name`, whose statistics are `s`; `whole` from
    /// [`SpanAggregator::whole`].
    fn phase_row(&self, name: &str, s: &SpanStats, whole: (u128, u128)) -> PhaseRow {
        let hz = self.clock_hz().filter(|h| *h > 0.0);
        let ns = |ticks: f64| hz.map(|hz| ticks * 1e9 / hz);
        let (cycles, instructions) = (self.cycles_index(), self.instructions_index());
        let (total_ticks, total_cycles) = whole;
        let share = match cycles {
            Some(c) if total_cycles > 0 => {
                s.counter_sum(c).unwrap_or(0) as f64 / total_cycles as f64
            }
            _ if total_ticks > 0 => s.ticks as f64 / total_ticks as f64,
            _ => 0.0,
        };
        let median = |h: &picollo_alloc::HeapHistogram| {
            h.percentile(50.0, EquivalentValue::Midpoint)
                .ok()
                .map(|p| p.value)
        };
        let p50 = median(&s.durations);
        let ipc = (s.ipc_micro.total() > 0).then(|| {
            [5.0, 50.0, 95.0].map(|p| {
                s.ipc_micro
                    .percentile(p, EquivalentValue::Midpoint)
                    .map_or(0.0, |v| v.value as f64 / 1e6)
            })
        });
        let instr = instructions.and_then(|j| s.counter_sum(j));
        PhaseRow {
            name: name.to_owned(),
            count: s.count,
            ticks: s.ticks,
            time_ns: ns(s.ticks as f64),
            share,
            p50_ticks: p50,
            p50_ns: p50.and_then(|p| ns(p as f64)),
            wall_p50_ticks: s.wall.as_ref().and_then(median),
            cycles: cycles.and_then(|c| s.counter_sum(c)),
            instructions: instr,
            ipc,
            counters: self.phase_counters(s, instr),
        }
    }

    /// The other counters of a row (all but cycles and instructions), with `instr` the span's
    /// instructions when counted.
    fn phase_counters(&self, s: &SpanStats, instr: Option<u128>) -> Vec<PhaseCounter> {
        let (cycles, instructions) = (self.cycles_index(), self.instructions_index());
        (0..self.counters.len())
            .filter(|&i| Some(i) != cycles && Some(i) != instructions)
            .filter_map(|i| {
                let sum = s.counter_sum(i)?;
                let spans = s.counter_count(i);
                Some(PhaseCounter {
                    name: self.counters[i].clone(),
                    sum,
                    spans,
                    per_kilo_instruction: instr
                        .filter(|n| *n > 0)
                        .map(|n| sum as f64 * 1000.0 / n as f64),
                    per_span: if spans == 0 {
                        0.0
                    } else {
                        sum as f64 / spans as f64
                    },
                })
            })
            .collect()
    }

    /// The rows of the counter-event table as numbers, by name.
    pub fn events(&self) -> Vec<EventRow> {
        let mut names: Vec<&String> = self.events.keys().collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let e = &self.events[n];
                EventRow {
                    name: n.clone(),
                    count: e.count,
                    last: e.last,
                    min: e.min,
                    mean: e.mean(),
                    max: e.max,
                    p50: e.percentile(50.0),
                    p99: e.percentile(99.0),
                }
            })
            .collect()
    }

    /// Whether cycles or instructions were asked for (measured or not): the IPC column and
    /// its note then appear.
    fn requested_ipc(&self) -> bool {
        self.cycles_index().is_some()
            || self.instructions_index().is_some()
            || self
                .unavailable
                .keys()
                .any(|n| is_cycles(n) || n == "instructions")
    }

    /// What the columns mean and what could not be measured: the notes under the tables.
    pub fn notes(&self) -> Vec<String> {
        let hz = self.clock_hz();
        let cycles = self.cycles_index();
        let instructions = self.instructions_index();
        let requested_ipc = self.requested_ipc();
        let mut notes = Vec::new();
        notes.push(match (self.clock.map(|c| c.kind), hz) {
            (Some(ClockKind::Tsc), Some(hz)) => {
                format!(
                    "time: TSC at {:.3} GHz (calibrated against CLOCK_MONOTONIC)",
                    hz / 1e9
                )
            }
            (_, Some(_)) => "time: nanoseconds".to_owned(),
            (_, None) => "time: clock ticks (the clock rate is not known yet)".to_owned(),
        });
        notes.push(
            if cycles.is_some() {
                "%: share of the outermost spans' cycles (outermost rows add up to 100 %; a \
                 nested span's row is the part of them spent in it)"
            } else {
                "%: share of the outermost spans' time (outermost rows add up to 100 %; a \
                 nested span's row is the part of them spent in it)"
            }
            .to_owned(),
        );
        if !self.unavailable.is_empty() {
            let list: Vec<String> = self
                .unavailable
                .iter()
                .map(|(n, e)| format!("{n} ({})", unavailable_reason(*e)))
                .collect();
            let pmu = self
                .pmu
                .as_ref()
                .map_or_else(String::new, |p| format!("; this machine's PMU: {p}"));
            notes.push(match &self.unavailable_note {
                Some(why) => format!("not measured (n/a): {why}"),
                None => format!(
                    "not measured (n/a): {} — the writer could not count {} on its machine{pmu}",
                    list.join(", "),
                    if list.len() == 1 { "it" } else { "them" },
                ),
            });
        }
        if requested_ipc && (cycles.is_none() || instructions.is_none()) {
            notes.push("IPC: n/a, it needs both cycles and instructions".to_owned());
        }
        if self.counters.is_empty() && self.unavailable.is_empty() {
            notes.push(format!(
                "no counters configured: time only (set {COUNTERS_ENV}=cycles,instructions,…, \
                 or attach with -e)"
            ));
        } else if !self.counters.is_empty() && instructions.is_none() {
            notes.push(
                "counter columns are means per span (per 1000 instructions needs instructions)"
                    .to_owned(),
            );
        }
        if self.from_frames {
            notes.push(format!(
                "frames: {} read, {} lost",
                group_digits(self.accepted),
                group_digits(self.lost)
            ));
        }
        if self.unreadable > 0 {
            notes.push(format!(
                "frames of no known kind (not counted as spans or events): {}",
                group_digits(self.unreadable)
            ));
        }
        notes.extend(self.extra_notes.iter().cloned());
        notes
    }

    /// The per-phase table, with what this machine can and cannot measure.
    pub fn table(&self) -> SpanTable {
        let shown = Shown::of(self);
        SpanTable {
            columns: shown.columns(),
            rows: self.phases().iter().map(|p| shown.row(p)).collect(),
            notes: self.notes(),
        }
    }

    /// The counter-event table (one row per `picollo_linux::counter!` name): N, last,
    /// min, mean, max, p50, p99; `None` when there were no counter events.
    pub fn event_table(&self) -> Option<SpanTable> {
        if self.events.is_empty() {
            return None;
        }
        let signed = |v: i64| {
            if v < 0 {
                format!("-{}", group_digits(v.unsigned_abs()))
            } else {
                group_digits(v.unsigned_abs())
            }
        };
        let rows = self
            .events()
            .into_iter()
            .map(|e| {
                vec![
                    e.name,
                    group_digits(e.count),
                    signed(e.last),
                    signed(e.min),
                    GroupedFloat(e.mean, 1).to_string(),
                    signed(e.max),
                    e.p50.map_or_else(|| "n/a".to_owned(), group_digits),
                    e.p99.map_or_else(|| "n/a".to_owned(), group_digits),
                ]
            })
            .collect();
        Some(SpanTable {
            columns: ["Counter", "N", "Last", "Min", "Mean", "Max", "p50", "p99"]
                .map(str::to_owned)
                .to_vec(),
            rows,
            notes: vec![
                "counter events (counter!): values as recorded; p50/p99 within 0.4%, n/a when \
                 a value was negative"
                    .to_owned(),
            ],
        })
    }
}

/// `10,728`.
fn group_digits(n: u64) -> String {
    Grouped(n).to_string()
}

/// `4.91B`, `288M`, `85K`, `512` (the per-phase table's cycle column).
fn fmt_si(v: f64) -> String {
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
fn fmt_per_span(counter: &str, v: f64) -> String {
    if is_clock_event(counter) {
        format_duration_ns(v)
    } else {
        GroupedFloat(v, 1).to_string()
    }
}

/// Whether `counter` (a perf name, modifiers included) counts nanoseconds.
fn is_clock_event(counter: &str) -> bool {
    let event = counter.split(':').next().unwrap_or(counter);
    matches!(event, "task-clock" | "cpu-clock")
}

/// A duration of `ticks`: in seconds to nanoseconds when `hz` is known, else in ticks.
pub(super) fn fmt_ticks(ticks: f64, hz: Option<f64>) -> String {
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

/// The columns of a per-phase table: which are shown, and how their cells are written.
struct Shown<'a> {
    hz: Option<f64>,
    wall: bool,
    cycles: bool,
    instructions: bool,
    /// Counted instructions: the other counters are shown per 1000 of them, not per span.
    per_kilo: bool,
    ipc: bool,
    /// The other counters measured, and those asked for but unavailable.
    others: Vec<&'a String>,
    unavailable: Vec<&'a String>,
}

impl<'a> Shown<'a> {
    fn of(agg: &'a SpanAggregator) -> Self {
        let (cycles, instructions) = (agg.cycles_index(), agg.instructions_index());
        Self {
            hz: agg.clock_hz(),
            wall: agg.spans.values().any(|s| s.wall.is_some()),
            cycles: cycles.is_some() || agg.unavailable.keys().any(|n| is_cycles(n)),
            instructions: instructions.is_some() || agg.unavailable.contains_key("instructions"),
            per_kilo: instructions.is_some(),
            ipc: agg.requested_ipc(),
            others: agg
                .counters
                .iter()
                .enumerate()
                .filter(|&(i, _)| Some(i) != cycles && Some(i) != instructions)
                .map(|(_, n)| n)
                .collect(),
            unavailable: agg
                .unavailable
                .keys()
                .filter(|n| !is_cycles(n) && *n != "instructions" && !agg.counters.contains(n))
                .collect(),
        }
    }

    fn columns(&self) -> Vec<String> {
        let mut columns: Vec<String> = ["Phase", "N", "Time", "%", "p50"]
            .map(str::to_owned)
            .to_vec();
        let optional = [
            (self.wall, "wall p50"),
            (self.cycles, "Cycles"),
            (self.instructions, "Instructions"),
        ];
        columns.extend(optional.iter().filter(|c| c.0).map(|c| c.1.to_owned()));
        if self.ipc {
            columns.extend(["IPC p5", "IPC p50", "IPC p95"].map(str::to_owned));
        }
        let unit = if self.per_kilo { "/ki" } else { "/span" };
        columns.extend(self.others.iter().map(|n| format!("{n}{unit}")));
        columns.extend(self.unavailable.iter().map(|n| (*n).clone()));
        columns
    }

    fn row(&self, p: &PhaseRow) -> Vec<String> {
        let na = || "n/a".to_owned();
        let ticks = |t: u64| fmt_ticks(t as f64, self.hz);
        let mut row = vec![p.name.clone(), group_digits(p.count)];
        row.push(fmt_ticks(p.ticks as f64, self.hz));
        row.push(format!("{:.1}%", p.share * 100.0));
        row.push(p.p50_ticks.map_or_else(na, ticks));
        if self.wall {
            row.push(p.wall_p50_ticks.map_or_else(na, ticks));
        }
        if self.cycles {
            row.push(p.cycles.map_or_else(na, |c| fmt_si(c as f64)));
        }
        if self.instructions {
            row.push(p.instructions.map_or_else(na, |c| fmt_si(c as f64)));
        }
        if self.ipc {
            match p.ipc {
                Some(ipc) => row.extend(ipc.map(|v| format!("{v:.3}"))),
                None => row.extend([na(), na(), na()]),
            }
        }
        for n in &self.others {
            let cell = p.counters.iter().find(|c| &&c.name == n);
            row.push(match cell {
                Some(c) if self.per_kilo => c
                    .per_kilo_instruction
                    .map_or_else(na, |v| format!("{v:.1}")),
                Some(c) if c.spans > 0 => fmt_per_span(&c.name, c.per_span),
                _ => na(),
            });
        }
        row.extend(self.unavailable.iter().map(|_| na()));
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_ring::ClockInfo;

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

    #[test]
    fn aggregator_table_with_and_without_pmu() {
        // Synthetic frames: a machine with cycles and instructions.
        let mut a = SpanAggregator::new();
        a.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
        let cyc = a.counter_index("cycles");
        let ins = a.counter_index("instructions");
        let llc = a.counter_index("LLC-load-misses");
        for i in 1..=100u64 {
            a.record("major", 1000, &[(cyc, 1000), (ins, 20 * i), (llc, 2)]);
        }
        a.record("minor", 3000, &[(cyc, 3000), (ins, 3000), (llc, 30)]);
        let t = a.table();
        assert_eq!(t.cell("major", "N"), Some("100"));
        assert_eq!(t.cell("major", "Cycles"), Some("100K"));
        assert_eq!(t.cell("major", "%"), Some("97.1%"));
        // IPC per span 0.02 .. 2.0: p50 near 1.0.
        let p50: f64 = t.cell("major", "IPC p50").unwrap().parse().unwrap();
        assert!((p50 - 1.0).abs() < 0.03, "{p50}");
        // 200 misses over 101,000 instructions.
        assert_eq!(t.cell("major", "LLC-load-misses/ki"), Some("2.0"));
        assert_eq!(t.cell("minor", "IPC p5"), Some("1.000"));
        assert_eq!(t.rows[0][0], "major", "largest cycles first");
        let rows = a.phases();
        assert_eq!(rows[0].cycles, Some(100_000));
        assert_eq!(rows[0].time_ns, Some(100_000.0));
        let ipc = rows[1].ipc.unwrap();
        assert!(ipc.iter().all(|v| (v - 1.0).abs() < 0.001), "{ipc:?}");
        assert_eq!(rows[0].counters[0].sum, 200);

        // A VM: cycles and instructions unavailable, software counters measured.
        let mut v = SpanAggregator::new();
        v.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
        v.note_unavailable_because("cycles", errno::ENOENT as u32);
        v.note_unavailable("instructions");
        let pf = v.counter_index("page-faults");
        v.record("parse", 2_000_000, &[(pf, 4)]);
        v.record("parse", 4_000_000, &[(pf, 6)]);
        // A span from before the counters were chosen: time only.
        v.record("parse", 3_000_000, &[]);
        let t = v.table();
        assert_eq!(t.cell("parse", "Cycles"), Some("n/a"));
        assert_eq!(t.cell("parse", "IPC p50"), Some("n/a"));
        assert_eq!(t.cell("parse", "page-faults/span"), Some("5.0"));
        assert_eq!(fmt_per_span("page-faults", 3137.3), "3,137.3");
        assert_eq!(fmt_per_span("page-faults", 26.2e6), "26,200,000.0");
        assert_eq!(fmt_per_span("task-clock", 26.2e6), "26.20 ms");
        assert_eq!(fmt_per_span("task-clock:u", 1320.0), "1.32 µs");
        assert_eq!(t.cell("parse", "Time"), Some("9.00 ms"));
        let shown = t.to_string();
        assert!(
            shown.contains("not measured (n/a): cycles (ENOENT: not supported here"),
            "{shown}"
        );
        assert!(
            shown.contains("instructions (reason not recorded)"),
            "{shown}"
        );
        assert!(shown.contains("IPC: n/a"), "{shown}");
        assert!(
            !shown.contains("| 0 |"),
            "no zeros for unmeasured columns: {shown}"
        );

        // Time only.
        let mut o = SpanAggregator::new();
        o.record("x", 10, &[]);
        let t = o.table();
        assert_eq!(t.columns, ["Phase", "N", "Time", "%", "p50"]);
        assert!(t.to_string().contains("time only"));
        assert!(o.event_table().is_none());
    }

    #[test]
    fn instructions_alone_are_shown() {
        // `picollo attach -e instructions PID`: found on the arm64 guest (guest/run.sh), where
        // the table and the JSON showed nothing of the only counter asked for, because the
        // instructions column existed only as the denominator of IPC and of misses per
        // 1,000 instructions.
        let mut a = SpanAggregator::new();
        a.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
        let ins = a.counter_index("instructions");
        for _ in 0..3 {
            a.record("chain", 1000, &[(ins, 258_235)]);
        }
        let p = a.phases();
        assert_eq!(p[0].instructions, Some(3 * 258_235));
        assert_eq!(p[0].cycles, None);
        let t = a.table();
        assert_eq!(t.cell("chain", "Instructions"), Some("775K"));
        assert_eq!(t.cell("chain", "IPC p50"), Some("n/a"));
        assert!(!t.columns.iter().any(|c| c == "Cycles"), "{:?}", t.columns);
        // Asked for but unavailable: the column says so.
        let mut b = SpanAggregator::new();
        b.note_unavailable_because("instructions", errno::ENOENT as u32);
        b.record("chain", 1000, &[]);
        assert_eq!(b.table().cell("chain", "Instructions"), Some("n/a"));
    }

    #[test]
    fn counter_events_table() {
        let mut a = SpanAggregator::new();
        for v in 1..=100 {
            a.record_event("queue", v);
        }
        a.record_event("delta", -5);
        a.record_event("delta", 1_000_000);
        let t = a.event_table().unwrap();
        assert_eq!(t.cell("queue", "N"), Some("100"));
        assert_eq!(t.cell("queue", "Last"), Some("100"));
        assert_eq!(t.cell("queue", "Min"), Some("1"));
        assert_eq!(t.cell("queue", "Mean"), Some("50.5"));
        assert_eq!(t.cell("queue", "Max"), Some("100"));
        assert_eq!(t.cell("queue", "p50"), Some("50"));
        assert_eq!(t.cell("delta", "Min"), Some("-5"));
        assert_eq!(t.cell("delta", "Max"), Some("1,000,000"));
        assert_eq!(t.cell("delta", "p50"), Some("n/a"));
        assert_eq!(t.rows[0][0], "delta", "by name");
        // Intervals start from nothing but keep counter indices.
        let cyc = a.counter_index("cycles");
        let old = a.take_interval();
        assert_eq!(old.event("queue").unwrap().count(), 100);
        assert!(a.event_table().is_none());
        assert_eq!(a.counter_index("cycles"), cyc);
    }
}
