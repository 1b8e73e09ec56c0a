//! The per-phase and counter-event tables of a [`SpanAggregator`]: its rows as numbers
//! ([`PhaseRow`], [`EventRow`]) and as text ([`SpanTable`]). The aggregator's own methods, in
//! its module tree; the table's types and formatting live in [`crate::table`], which knows
//! nothing of the aggregator.

use picollo_core::fmt::GroupedFloat;
use picollo_core::{EquivalentValue, ReadExt};
use picollo_ring::ClockKind;

use super::{is_cycles, SpanAggregator, SpanStats};
use crate::table::{
    fmt_per_span, fmt_si, fmt_ticks, group_digits, unavailable_reason, EventRow, PhaseCounter,
    PhaseRow, SpanTable,
};
use crate::COUNTERS_ENV;

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
            cycles_spans: cycles.map_or(0, |c| s.counter_count(c)),
            instructions: instr,
            instructions_spans: instructions.map_or(0, |j| s.counter_count(j)),
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
    use crate::table::errno;
    use picollo_ring::ClockInfo;

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
        assert_eq!(p[0].instructions_spans, 3);
        assert_eq!(p[0].cycles, None);
        assert_eq!(p[0].cycles_spans, 0);
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
    fn counter_columns_say_which_spans_they_cover() {
        // `picollo attach -e instructions PID` attaches, then asks for the counter: a span
        // the program saved in between has no instructions. Seen once on the arm64 guest
        // (1,432 spans, instructions summed over 1,431): the row's `count` alone made the
        // sum look one span short, so each counter column says how many spans it covers.
        let mut a = SpanAggregator::new();
        a.record("chain", 1000, &[]);
        let (ins, cyc) = (a.counter_index("instructions"), a.counter_index("cycles"));
        for _ in 0..4 {
            a.record("chain", 1000, &[(ins, 258_278)]);
        }
        a.record("chain", 1000, &[(ins, 258_278), (cyc, 300_000)]);
        let p = &a.phases()[0];
        assert_eq!(p.count, 6);
        assert_eq!(
            (p.instructions, p.instructions_spans),
            (Some(5 * 258_278), 5)
        );
        assert_eq!((p.cycles, p.cycles_spans), (Some(300_000), 1));
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
