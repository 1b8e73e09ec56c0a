//! The consuming side of spans: decoding span frames ([`SpanDecoder`]), aggregating them per
//! span name and per counter-event name ([`SpanAggregator`]), the per-phase and counter
//! tables ([`SpanTable`]), and a consumer that attaches to a live process
//! ([`SpanConsumer`]).
//!
//! The same decoder and aggregator serve a live process (`picollo attach`, `top`) and a
//! capture file (`picollo convert --spans`), so the tables are the same either way.

use core::fmt;
use std::collections::{BTreeMap, HashMap};

use picollo_alloc::heap::{self, HeapHistogram};
use picollo_core::fmt::{Grouped, GroupedFloat};
use picollo_core::ring::{
    ClockInfo, ClockKind, CounterStatus, CounterTable, Drained, FieldKind, Label, RequestStatus,
    RingInfo, MAX_COUNTERS,
};
use picollo_core::{EquivalentValue, Layout, ReadExt, Window};

use super::raw::AggregatedSpans;
use super::{clock_hz, COUNTERS_ENV, FIXED_WORDS, RING_PREFIX, SPAN_FIELDS, SPAN_FRAME};
use crate::caps::Capabilities;
use crate::shm::{list_rings, ShmError, ShmReader};

/// Why a counter the writer asked for could not be opened, from the errno in the ring
/// header: `ENOENT: not supported here (…)`.
pub fn unavailable_reason(errno: u32) -> String {
    let e = i32::try_from(errno).unwrap_or(i32::MAX);
    let (name, why) = match e {
        0 => return "reason not recorded".to_owned(),
        libc::ENOENT => (
            "ENOENT",
            "not supported here (no hardware PMU, or the CPU or VM does not expose this event)",
        ),
        libc::EOPNOTSUPP => ("EOPNOTSUPP", "not supported by this PMU"),
        libc::ENODEV => ("ENODEV", "no such PMU here"),
        libc::EACCES => (
            "EACCES",
            "permission denied (see /proc/sys/kernel/perf_event_paranoid)",
        ),
        libc::EPERM => (
            "EPERM",
            "not permitted (see /proc/sys/kernel/perf_event_paranoid)",
        ),
        libc::EINVAL => ("EINVAL", "not a counter name or setting this machine takes"),
        libc::EMFILE => ("EMFILE", "too many open files in the writer"),
        libc::EBUSY => ("EBUSY", "the PMU is busy (another tool holds it)"),
        _ => return format!("errno {e}: {}", std::io::Error::from_raw_os_error(e)),
    };
    format!("{name}: {why}")
}

/// The histogram layout of span statistics: block scale 7, 0.4% relative error.
fn layout() -> Layout {
    const SPAN_LAYOUT: Layout = Layout::from_block_scale(7).unwrap();
    SPAN_LAYOUT
}

pub(super) fn histogram() -> HeapHistogram {
    let l = layout();
    heap::plain(l, Window::full(l))
}

/// Per-counter totals of one span name.
struct CounterStats {
    sum: u128,
    deltas: HeapHistogram,
}

/// Everything recorded for one span name.
pub struct SpanStats {
    count: u64,
    ticks: u128,
    durations: HeapHistogram,
    counters: Vec<Option<CounterStats>>,
    ipc_micro: HeapHistogram,
}

impl fmt::Debug for SpanStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanStats")
            .field("count", &self.count)
            .field("ticks", &self.ticks)
            .finish_non_exhaustive()
    }
}

impl SpanStats {
    fn new() -> Self {
        Self {
            count: 0,
            ticks: 0,
            durations: histogram(),
            counters: Vec::new(),
            ipc_micro: heap::plain(Layout::DEFAULT, Window::full(Layout::DEFAULT)),
        }
    }

    /// Spans recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of durations, in clock ticks.
    pub fn total_ticks(&self) -> u128 {
        self.ticks
    }

    /// The histogram of durations, in clock ticks.
    pub fn durations(&self) -> &HeapHistogram {
        &self.durations
    }

    /// The histogram of deltas of counter `index` (see [`SpanAggregator::counters`]).
    pub fn counter_deltas(&self, index: usize) -> Option<&HeapHistogram> {
        self.counters.get(index)?.as_ref().map(|c| &c.deltas)
    }

    /// Sum of deltas of counter `index`.
    pub fn counter_sum(&self, index: usize) -> Option<u128> {
        self.counters.get(index)?.as_ref().map(|c| c.sum)
    }

    /// Spans that have a value of counter `index` (fewer than [`SpanStats::count`] when the
    /// counter was chosen or dropped while the spans ran).
    pub fn counter_count(&self, index: usize) -> u64 {
        self.counter_deltas(index).map_or(0, ReadExt::total)
    }

    /// Instructions per cycle, times 10^6, one value per span (empty without both counters).
    pub fn ipc_micro(&self) -> &HeapHistogram {
        &self.ipc_micro
    }
}

/// Everything recorded for one counter-event name ([`counter!`](crate::counter!)).
pub struct EventStats {
    count: u64,
    sum: i128,
    min: i64,
    max: i64,
    last: i64,
    /// The values at or above 0 (a histogram holds unsigned values).
    values: HeapHistogram,
}

impl fmt::Debug for EventStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStats")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl EventStats {
    fn new() -> Self {
        Self {
            count: 0,
            sum: 0,
            min: i64::MAX,
            max: i64::MIN,
            last: 0,
            values: histogram(),
        }
    }

    fn record(&mut self, value: i64) {
        self.count += 1;
        self.sum += i128::from(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.last = value;
        if let Ok(v) = u64::try_from(value) {
            self.values.record(v);
        }
    }

    /// Events recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The last value (in the order frames were read).
    pub fn last(&self) -> i64 {
        self.last
    }

    /// The smallest value.
    pub fn min(&self) -> i64 {
        self.min
    }

    /// The largest value.
    pub fn max(&self) -> i64 {
        self.max
    }

    /// The mean value.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at percentile `p` (0..=100, within the histogram's 0.4%); `None` when a
    /// value was negative (percentiles are kept for values of 0 and above only) or there is
    /// none.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.min < 0 || self.count == 0 {
            return None;
        }
        self.values
            .percentile(p, EquivalentValue::Midpoint)
            .ok()
            .map(|v| v.value)
    }
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

/// Aggregates span frames per span name (histograms of durations and counter deltas, IPC)
/// and counter events per name.
pub struct SpanAggregator {
    spans: HashMap<String, SpanStats>,
    events: HashMap<String, EventStats>,
    counters: Vec<String>,
    unavailable: BTreeMap<String, u32>,
    clock: Option<ClockInfo>,
    accepted: u64,
    lost: u64,
    /// Time before this clock reading is not counted in the `Time` of spans that started
    /// earlier (set by [`SpanAggregator::take_interval`]).
    since: Option<u64>,
    /// Ticks and cycles of the outermost spans (depth 1): the whole that `%` divides.
    outer_ticks: u128,
    outer_cycles: u128,
}

impl fmt::Debug for SpanAggregator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanAggregator")
            .field("spans", &self.spans.len())
            .field("events", &self.events.len())
            .field("counters", &self.counters)
            .field("unavailable", &self.unavailable)
            .field("accepted", &self.accepted)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

impl Default for SpanAggregator {
    fn default() -> Self {
        Self::new()
    }
}

fn is_cycles(name: &str) -> bool {
    matches!(name, "cycles" | "cpu-cycles")
}

impl SpanAggregator {
    /// Empty.
    pub fn new() -> Self {
        Self {
            spans: HashMap::new(),
            events: HashMap::new(),
            counters: Vec::new(),
            unavailable: BTreeMap::new(),
            clock: None,
            accepted: 0,
            lost: 0,
            since: None,
            outer_ticks: 0,
            outer_cycles: 0,
        }
    }

    /// Hands back what was aggregated so far and starts again from nothing, keeping the
    /// counter indices, the unavailable counters and the clock (for per-interval tables:
    /// [`SpanDecoder`]s keep working across the call).
    ///
    /// The new interval starts now: a span that began before and ends in it counts only its
    /// time from now in `Time` (its duration still goes whole into the percentiles), so no
    /// row's time exceeds the interval times the threads recording. (This needs the writer's
    /// span clock to be this machine's: the TSC, or `CLOCK_MONOTONIC`; otherwise spans count
    /// whole, as before.)
    pub fn take_interval(&mut self) -> SpanAggregator {
        let same_clock = self
            .clock
            .is_some_and(|c| c.kind == crate::span::clock_kind());
        let fresh = SpanAggregator {
            counters: self.counters.clone(),
            unavailable: self.unavailable.clone(),
            clock: self.clock,
            since: same_clock.then(crate::span::now),
            ..SpanAggregator::new()
        };
        core::mem::replace(self, fresh)
    }

    /// Counts span time from clock reading `ticks` on: a span that started earlier counts
    /// only `end - ticks` in `Time` ([`SpanAggregator::take_interval`] sets it to now).
    pub fn count_from(&mut self, ticks: u64) {
        self.since = Some(ticks);
    }

    /// The index of counter `name`, adding it.
    pub fn counter_index(&mut self, name: &str) -> usize {
        match self.counters.iter().position(|c| c == name) {
            Some(i) => i,
            None => {
                self.counters.push(name.to_owned());
                self.counters.len() - 1
            }
        }
    }

    /// Notes a counter the writer asked for but could not measure (reason not known).
    pub fn note_unavailable(&mut self, name: &str) {
        self.note_unavailable_because(name, 0);
    }

    /// Notes a counter the writer could not measure, with the errno it got.
    pub fn note_unavailable_because(&mut self, name: &str, errno: u32) {
        let e = self.unavailable.entry(name.to_owned()).or_insert(errno);
        if *e == 0 {
            *e = errno;
        }
    }

    /// The counters the writer could not measure, with their errno (0 when not known).
    pub fn unavailable(&self) -> impl Iterator<Item = (&str, u32)> {
        self.unavailable.iter().map(|(n, e)| (n.as_str(), *e))
    }

    /// Uses `clock` to convert ticks (the first one given wins).
    pub fn set_clock(&mut self, clock: ClockInfo) {
        self.clock.get_or_insert(clock);
    }

    /// The clock of the spans' times, if known.
    pub fn clock(&self) -> Option<ClockInfo> {
        self.clock
    }

    /// Ticks per second of the spans' clock, when known (see [`clock_hz`]).
    pub fn clock_hz(&self) -> Option<f64> {
        self.clock.as_ref().and_then(clock_hz)
    }

    /// Counts frames read and lost (for the table's footer).
    pub fn add_counts(&mut self, d: Drained) {
        self.accepted += d.accepted;
        self.lost += d.lost;
    }

    /// Records one span: its name, duration in ticks, and `(counter index, delta)` pairs; an
    /// outermost span (see [`SpanAggregator::record_span`] for nested ones).
    pub fn record(&mut self, name: &str, ticks: u64, deltas: &[(usize, u64)]) {
        self.record_counted(name, 1, ticks, ticks, deltas);
    }

    /// Records one span as its frame gives it: its name, nesting depth (1 for the outermost),
    /// start and end clock readings, and `(counter index, delta)` pairs. Its duration goes
    /// into the percentiles; its `Time` is counted from [`SpanAggregator::count_from`] when it
    /// started earlier; outermost spans make the whole that `%` divides, so nested spans are
    /// a part of it rather than added to it.
    pub fn record_span(
        &mut self,
        name: &str,
        depth: u32,
        start: u64,
        end: u64,
        deltas: &[(usize, u64)],
    ) {
        let duration = end.wrapping_sub(start);
        let counted = match self.since {
            // Started before the interval (and ended after its start): the part inside.
            Some(since) if since.wrapping_sub(start) < duration => end.wrapping_sub(since),
            // Ended before the interval began (a frame read late): nothing of it is inside.
            Some(since) if since.wrapping_sub(start) <= u64::MAX / 2 => 0,
            _ => duration,
        };
        self.record_counted(name, depth, duration, counted, deltas);
    }

    fn record_counted(
        &mut self,
        name: &str,
        depth: u32,
        ticks: u64,
        counted: u64,
        deltas: &[(usize, u64)],
    ) {
        let stats = match self.spans.get_mut(name) {
            Some(s) => s,
            None => self
                .spans
                .entry(name.to_owned())
                .or_insert_with(SpanStats::new),
        };
        stats.count += 1;
        stats.ticks += u128::from(counted);
        stats.durations.record(ticks);
        if depth == 1 {
            self.outer_ticks += u128::from(counted);
        }
        let (mut cycles, mut instructions) = (None, None);
        for &(i, d) in deltas {
            if stats.counters.len() <= i {
                stats.counters.resize_with(i + 1, || None);
            }
            let c = stats.counters[i].get_or_insert_with(|| CounterStats {
                sum: 0,
                deltas: histogram(),
            });
            c.sum += u128::from(d);
            c.deltas.record(d);
            match self.counters.get(i).map(String::as_str) {
                Some(n) if is_cycles(n) => cycles = Some(d),
                Some("instructions") => instructions = Some(d),
                _ => {}
            }
        }
        if let (Some(c), 1) = (cycles, depth) {
            self.outer_cycles += u128::from(c);
        }
        if let (Some(c), Some(i)) = (cycles, instructions) {
            if c > 0 {
                let micro = u128::from(i) * 1_000_000 / u128::from(c);
                stats
                    .ipc_micro
                    .record(u64::try_from(micro).unwrap_or(u64::MAX));
            }
        }
    }

    /// Records one counter event ([`counter!`](crate::counter!)).
    pub fn record_event(&mut self, name: &str, value: i64) {
        match self.events.get_mut(name) {
            Some(e) => e.record(value),
            None => self
                .events
                .entry(name.to_owned())
                .or_insert_with(EventStats::new)
                .record(value),
        }
    }

    /// Adds spans of `name` that were aggregated elsewhere (the same statistics as
    /// [`SpanAggregator::record`] one span at a time, merged bucket by bucket).
    pub fn record_histograms(&mut self, name: &str, spans: AggregatedSpans<'_>) {
        let stats = self
            .spans
            .entry(name.to_owned())
            .or_insert_with(SpanStats::new);
        stats.count += spans.durations.total_with_outside();
        stats.ticks += spans.total;
        stats.durations.add(spans.durations);
        for &(i, sum, deltas) in spans.counters {
            if stats.counters.len() <= i {
                stats.counters.resize_with(i + 1, || None);
            }
            let c = stats.counters[i].get_or_insert_with(|| CounterStats {
                sum: 0,
                deltas: histogram(),
            });
            c.sum += sum;
            c.deltas.add(deltas);
        }
        if let Some(ipc) = spans.ipc_micro {
            stats.ipc_micro.add(ipc);
        }
    }

    /// The counters seen, by index.
    pub fn counters(&self) -> &[String] {
        &self.counters
    }

    /// The statistics of span `name`.
    pub fn span(&self, name: &str) -> Option<&SpanStats> {
        self.spans.get(name)
    }

    /// The statistics of counter event `name`.
    pub fn event(&self, name: &str) -> Option<&EventStats> {
        self.events.get(name)
    }

    /// Span names seen.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.spans.keys().map(String::as_str)
    }

    /// Frames read.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Frames lost (overwritten before they were read).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    fn cycles_index(&self) -> Option<usize> {
        self.counters.iter().position(|c| is_cycles(c))
    }

    fn instructions_index(&self) -> Option<usize> {
        self.counters.iter().position(|c| c == "instructions")
    }

    /// The rows of the per-phase table as numbers: by total cycles (or time), largest first.
    pub fn phases(&self) -> Vec<PhaseRow> {
        let hz = self.clock_hz().filter(|h| *h > 0.0);
        let ns = |ticks: f64| hz.map(|hz| ticks * 1e9 / hz);
        let cycles = self.cycles_index();
        let instructions = self.instructions_index();
        // `%` divides by the outermost spans' time (or cycles): nested spans are part of
        // their parents', not added to them. Spans added without a depth
        // (`record_histograms`) make the whole when no outermost span was seen.
        let total_ticks: u128 = if self.outer_ticks > 0 {
            self.outer_ticks
        } else {
            self.spans.values().map(|s| s.ticks).sum()
        };
        let total_cycles: u128 = if self.outer_cycles > 0 {
            self.outer_cycles
        } else {
            cycles
                .map(|c| self.spans.values().filter_map(|s| s.counter_sum(c)).sum())
                .unwrap_or(0)
        };
        let mut names: Vec<&String> = self.spans.keys().collect();
        names.sort_by(|a, b| {
            let key = |n: &String| {
                let s = &self.spans[n];
                cycles.and_then(|c| s.counter_sum(c)).unwrap_or(s.ticks)
            };
            key(b).cmp(&key(a)).then(a.cmp(b))
        });
        names
            .into_iter()
            .map(|name| {
                let s = &self.spans[name];
                let share = match cycles {
                    Some(c) if total_cycles > 0 => {
                        s.counter_sum(c).unwrap_or(0) as f64 / total_cycles as f64
                    }
                    _ if total_ticks > 0 => s.ticks as f64 / total_ticks as f64,
                    _ => 0.0,
                };
                let p50 = s
                    .durations
                    .percentile(50.0, EquivalentValue::Midpoint)
                    .ok()
                    .map(|p| p.value);
                let ipc = (s.ipc_micro.total() > 0).then(|| {
                    [5.0, 50.0, 95.0].map(|p| {
                        s.ipc_micro
                            .percentile(p, EquivalentValue::Midpoint)
                            .map_or(0.0, |v| v.value as f64 / 1e6)
                    })
                });
                let instr = instructions.and_then(|j| s.counter_sum(j));
                let counters = (0..self.counters.len())
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
                    .collect();
                PhaseRow {
                    name: name.clone(),
                    count: s.count,
                    ticks: s.ticks,
                    time_ns: ns(s.ticks as f64),
                    share,
                    p50_ticks: p50,
                    p50_ns: p50.and_then(|p| ns(p as f64)),
                    cycles: cycles.and_then(|c| s.counter_sum(c)),
                    instructions: instr,
                    ipc,
                    counters,
                }
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

    /// What the columns mean and what could not be measured: the notes under the tables.
    pub fn notes(&self) -> Vec<String> {
        let hz = self.clock_hz();
        let cycles = self.cycles_index();
        let instructions = self.instructions_index();
        let requested_ipc = cycles.is_some()
            || instructions.is_some()
            || self
                .unavailable
                .keys()
                .any(|n| is_cycles(n) || n == "instructions");
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
            notes.push(format!(
                "not measured (n/a): {} — the writer could not count {} on its machine; this \
                 machine's PMU: {}",
                list.join(", "),
                if list.len() == 1 { "it" } else { "them" },
                Capabilities::detect().pmu
            ));
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
        notes.push(format!(
            "frames: {} read, {} lost",
            group_digits(self.accepted),
            group_digits(self.lost)
        ));
        notes
    }

    /// The per-phase table (seed 004), with what this machine can and cannot measure.
    pub fn table(&self) -> SpanTable {
        let hz = self.clock_hz();
        let cycles = self.cycles_index();
        let instructions = self.instructions_index();
        let requested_ipc = cycles.is_some()
            || instructions.is_some()
            || self
                .unavailable
                .keys()
                .any(|n| is_cycles(n) || n == "instructions");
        let others: Vec<&String> = self
            .counters
            .iter()
            .enumerate()
            .filter(|&(i, _)| Some(i) != cycles && Some(i) != instructions)
            .map(|(_, n)| n)
            .collect();
        let show_cycles = cycles.is_some() || self.unavailable.keys().any(|n| is_cycles(n));
        let show_instructions =
            instructions.is_some() || self.unavailable.contains_key("instructions");
        let mut columns: Vec<String> = ["Phase", "N", "Time", "%", "p50"]
            .map(str::to_owned)
            .to_vec();
        if show_cycles {
            columns.push("Cycles".to_owned());
        }
        if show_instructions {
            columns.push("Instructions".to_owned());
        }
        if requested_ipc {
            columns.extend(["IPC p5", "IPC p50", "IPC p95"].map(str::to_owned));
        }
        let unit = if instructions.is_some() {
            "/ki"
        } else {
            "/span"
        };
        for n in &others {
            columns.push(format!("{n}{unit}"));
        }
        let unavailable_others: Vec<&String> = self
            .unavailable
            .keys()
            .filter(|n| !is_cycles(n) && *n != "instructions" && !self.counters.contains(n))
            .collect();
        for n in &unavailable_others {
            columns.push((*n).clone());
        }

        let na = || "n/a".to_owned();
        let rows = self
            .phases()
            .into_iter()
            .map(|p| {
                let mut row = vec![p.name.clone(), group_digits(p.count)];
                row.push(fmt_ticks(p.ticks as f64, hz));
                row.push(format!("{:.1}%", p.share * 100.0));
                row.push(p.p50_ticks.map_or_else(na, |t| fmt_ticks(t as f64, hz)));
                if show_cycles {
                    row.push(p.cycles.map_or_else(na, |c| fmt_si(c as f64)));
                }
                if show_instructions {
                    row.push(p.instructions.map_or_else(na, |c| fmt_si(c as f64)));
                }
                if requested_ipc {
                    match p.ipc {
                        Some(ipc) => row.extend(ipc.map(|v| format!("{v:.3}"))),
                        None => row.extend([na(), na(), na()]),
                    }
                }
                for n in &others {
                    let cell = p.counters.iter().find(|c| &&c.name == n);
                    row.push(match cell {
                        Some(c) if instructions.is_some() => c
                            .per_kilo_instruction
                            .map_or_else(na, |v| format!("{v:.1}")),
                        Some(c) if c.spans > 0 => fmt_per_span(c.per_span),
                        _ => na(),
                    });
                }
                row.extend(unavailable_others.iter().map(|_| na()));
                row
            })
            .collect();
        SpanTable {
            columns,
            rows,
            notes: self.notes(),
        }
    }

    /// The counter-event table (one row per [`counter!`](crate::counter!) name): N, last,
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

/// `4.91B`, `288M`, `85K`, `512` (seed 004's cycle column).
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

fn fmt_per_span(v: f64) -> String {
    if v >= 1e5 {
        fmt_si(v)
    } else {
        format!("{v:.1}")
    }
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

/// Decodes the frames of one span ring into a [`SpanAggregator`], following the ring's
/// counter table as it changes (counters chosen at attach time).
#[derive(Clone, Debug)]
pub struct SpanDecoder {
    /// Counter slots of each frame.
    slots: usize,
    /// The table epoch the slot map was built for.
    epoch: Option<u64>,
    /// Per slot, the aggregator's counter index when the slot is measured.
    map: [Option<usize>; MAX_COUNTERS],
}

impl SpanDecoder {
    /// A decoder for frames described by `info`, or why they are not span frames.
    pub fn new(info: &RingInfo) -> Result<Self, String> {
        if info.frame_name() != SPAN_FRAME {
            return Err("not a span ring".to_owned());
        }
        let kinds: Vec<(&str, FieldKind)> = info.fields().map(|f| (f.name, f.kind)).collect();
        let known = kinds.len() >= SPAN_FIELDS.len()
            && SPAN_FIELDS
                .iter()
                .zip(&kinds)
                .all(|((n, k), (m, j))| n == m && k == j);
        if !known {
            return Err("span ring with an unknown layout".to_owned());
        }
        let slots = match kinds.get(SPAN_FIELDS.len()) {
            None => 0,
            Some(&("counters", FieldKind::CounterInterval { count })) => usize::from(count),
            Some(_) => return Err("span ring with an unknown layout".to_owned()),
        };
        if kinds.len() > SPAN_FIELDS.len() + 1 || info.counter_table().len() != slots {
            return Err("span ring with an unknown layout".to_owned());
        }
        Ok(Self {
            slots,
            epoch: None,
            map: [None; MAX_COUNTERS],
        })
    }

    /// Counter slots of each frame.
    pub fn counter_slots(&self) -> usize {
        self.slots
    }

    fn rebuild(&mut self, agg: &mut SpanAggregator, table: &CounterTable, epoch: u64) {
        self.map = [None; MAX_COUNTERS];
        for (slot, c) in table.iter().enumerate().take(self.slots) {
            match c.status {
                CounterStatus::Measured => self.map[slot] = Some(agg.counter_index(c.name)),
                CounterStatus::Unavailable => agg.note_unavailable_because(c.name, c.errno),
                _ => {}
            }
        }
        self.epoch = Some(epoch);
    }

    /// Records frame `words` (its payload, decoded by `info`, the header that describes
    /// it): a span into the phase statistics, a counter event into the event statistics.
    pub fn record(&mut self, agg: &mut SpanAggregator, info: &RingInfo, words: &[u64]) {
        if self.epoch != Some(info.counters_epoch()) {
            agg.set_clock(info.clock());
            self.rebuild(agg, info.counter_table(), info.counters_epoch());
        }
        let Some(&[n0, n1, n2, depth, start, end, value]) = words
            .get(..FIXED_WORDS)
            .and_then(|w| <&[u64; FIXED_WORDS]>::try_from(w).ok())
        else {
            return;
        };
        let name = Label::from_words([n0, n1, n2]);
        if depth == 0 {
            agg.record_event(name.as_str(), value as i64);
            return;
        }
        let mut deltas = [(0usize, 0u64); MAX_COUNTERS];
        let mut n = 0;
        for (slot, index) in self.map.iter().enumerate().take(self.slots) {
            let (Some(index), Some(&s), Some(&e)) = (
                index,
                words.get(FIXED_WORDS + slot),
                words.get(FIXED_WORDS + self.slots + slot),
            ) else {
                continue;
            };
            deltas[n] = (*index, e.wrapping_sub(s));
            n += 1;
        }
        let depth = u32::try_from(depth).unwrap_or(u32::MAX);
        agg.record_span(name.as_str(), depth, start, end, &deltas[..n]);
    }
}

/// One attached span ring.
struct SpanRing {
    reader: ShmReader,
    decoder: SpanDecoder,
}

/// Attaches to the span rings of a process and aggregates their frames.
pub struct SpanConsumer {
    pid: i32,
    rings: Vec<SpanRing>,
    skipped: Vec<(String, String)>,
    /// Inodes of the rings skipped (listed or not), so they are not tried again.
    skipped_inodes: Vec<u64>,
    agg: SpanAggregator,
}

impl fmt::Debug for SpanConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanConsumer")
            .field("pid", &self.pid)
            .field("rings", &self.rings.len())
            .field("skipped", &self.skipped)
            .field("aggregator", &self.agg)
            .finish()
    }
}

/// Counter requests sent to the rings of a process ([`SpanConsumer::request_counters`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterRequests {
    /// Per ring: its segment, its inode and the request's sequence number.
    seqs: Vec<(String, u64, u64)>,
}

impl CounterRequests {
    /// Rings asked.
    pub fn rings(&self) -> usize {
        self.seqs.len()
    }
}

/// What became of a counter request on one ring ([`SpanConsumer::request_outcomes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestOutcome {
    /// The ring's segment.
    pub segment: String,
    /// Whether the writer thread applied it (it does at its next outermost span).
    pub status: RequestStatus,
    /// The ring's counter slots now: `(name, status, errno)`.
    pub counters: Vec<(String, CounterStatus, u32)>,
}

impl SpanConsumer {
    /// Attaches to every span ring of process `pid` (its threads that have begun a span).
    /// Rings that are not span rings, or that fail their checks, are listed in
    /// [`SpanConsumer::skipped`].
    pub fn attach(pid: i32) -> Result<Self, ShmError> {
        let mut c = Self {
            pid,
            rings: Vec::new(),
            skipped: Vec::new(),
            skipped_inodes: Vec::new(),
            agg: SpanAggregator::new(),
        };
        c.refresh()?;
        Ok(c)
    }

    /// Attaches to span rings created since (threads that began their first span).
    /// Returns how many were added.
    pub fn refresh(&mut self) -> Result<usize, ShmError> {
        let entries = list_rings(Some(self.pid)).map_err(|e| ShmError::Io {
            op: "listing rings",
            kind: e.kind(),
            message: e.to_string(),
        })?;
        let mut added = 0;
        for e in entries {
            if !e.name.starts_with(RING_PREFIX)
                || self.rings.iter().any(|r| r.reader.inode() == e.inode)
                || self.skipped_inodes.contains(&e.inode)
            {
                continue;
            }
            match ShmReader::attach_entry(&e) {
                Ok(reader) => match SpanDecoder::new(reader.info()) {
                    Ok(decoder) => {
                        self.rings.push(SpanRing { reader, decoder });
                        added += 1;
                    }
                    Err(why) => {
                        self.skipped_inodes.push(e.inode);
                        self.skipped.push((e.segment, why));
                    }
                },
                // The thread exited between listing and attaching.
                Err(ShmError::NotFound(_)) => {}
                // A ring the process inherited from its parent (forked, not exec'd yet).
                Err(ShmError::WrongWriter { .. }) => self.skipped_inodes.push(e.inode),
                Err(err) => {
                    self.skipped_inodes.push(e.inode);
                    self.skipped.push((e.segment, err.to_string()));
                }
            }
        }
        Ok(added)
    }

    /// Drains every ring into the aggregator.
    pub fn poll(&mut self) -> Result<Drained, ShmError> {
        let mut total = Drained::default();
        for ring in &mut self.rings {
            let agg = &mut self.agg;
            let decoder = &mut ring.decoder;
            let d = ring
                .reader
                .drain(|f| decoder.record(agg, f.info(), f.words()))?;
            agg.add_counts(d);
            total.accepted += d.accepted;
            total.lost += d.lost;
        }
        Ok(total)
    }

    /// Asks every attached ring's writer thread to count `counters` (comma-separated perf
    /// names) instead of what it counts now; [`SpanConsumer::request_outcomes`] waits for
    /// the threads to apply it (each does at its next outermost span) and says what became
    /// of it. Refused (before anything is asked) when a ring has fewer counter slots than
    /// counters asked for.
    pub fn request_counters(&mut self, counters: &str) -> Result<CounterRequests, ShmError> {
        let names = super::SpanConfig::parse_counters(counters);
        for ring in &self.rings {
            if names.len() > ring.decoder.counter_slots() {
                return Err(ShmError::Ring {
                    segment: ring.reader.segment().to_owned(),
                    error: picollo_core::ring::RingError::BadHeader {
                        field: "counter slots (fewer than the counters asked for)",
                        value: ring.decoder.counter_slots() as u64,
                    },
                });
            }
        }
        let mut seqs = Vec::with_capacity(self.rings.len());
        for ring in &self.rings {
            seqs.push((
                ring.reader.segment().to_owned(),
                ring.reader.inode(),
                ring.reader.request_counters(counters)?,
            ));
        }
        Ok(CounterRequests { seqs })
    }

    /// Waits up to `wait` for every ring's writer to apply `requests` (draining frames into
    /// the aggregator meanwhile), then says per ring whether it did and what its counter
    /// slots are now.
    pub fn request_outcomes(
        &mut self,
        requests: &CounterRequests,
        wait: std::time::Duration,
    ) -> Result<Vec<RequestOutcome>, ShmError> {
        let until = std::time::Instant::now() + wait;
        let status = |rings: &[SpanRing], inode: u64, seq: u64| {
            rings
                .iter()
                .find(|r| r.reader.inode() == inode)
                .map(|r| r.reader.request_status(seq))
        };
        loop {
            self.poll()?;
            let pending = requests
                .seqs
                .iter()
                .any(|(_, i, q)| status(&self.rings, *i, *q) == Some(RequestStatus::Pending));
            if !pending || std::time::Instant::now() >= until {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut out = Vec::with_capacity(requests.seqs.len());
        for (segment, inode, seq) in &requests.seqs {
            let Some(ring) = self.rings.iter_mut().find(|r| r.reader.inode() == *inode) else {
                continue;
            };
            let status = ring.reader.request_status(*seq);
            let table = ring.reader.latest_counters()?;
            out.push(RequestOutcome {
                segment: segment.clone(),
                status,
                counters: table
                    .iter()
                    .map(|c| (c.name.to_owned(), c.status, c.errno))
                    .collect(),
            });
        }
        Ok(out)
    }

    /// The aggregated statistics.
    pub fn aggregator(&self) -> &SpanAggregator {
        &self.agg
    }

    /// The aggregated statistics so far, starting a new interval (see
    /// [`SpanAggregator::take_interval`]).
    pub fn take_interval(&mut self) -> SpanAggregator {
        self.agg.take_interval()
    }

    /// The per-phase table so far.
    pub fn table(&self) -> SpanTable {
        self.agg.table()
    }

    /// Rings attached.
    pub fn rings(&self) -> usize {
        self.rings.len()
    }

    /// Rings of the process that were not attached, with the reason.
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::super::{header_name, SpanConfig};
    use super::*;

    fn row<'a>(rows: &'a [PhaseRow], name: &str) -> &'a PhaseRow {
        rows.iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn nested_spans_are_a_part_of_the_whole_not_added_to_it() {
        let mut a = SpanAggregator::new();
        // Two outermost `work` spans of 100 ticks, each with a nested `step` of 60, and one
        // outermost `idle` of 200.
        for t in [0u64, 1_000] {
            a.record_span("step", 2, t + 10, t + 70, &[]);
            a.record_span("work", 1, t, t + 100, &[]);
        }
        a.record_span("idle", 1, 5_000, 5_200, &[]);
        let rows = a.phases();
        let share = |n| row(&rows, n).share;
        assert!((share("work") - 0.5).abs() < 1e-12, "{}", share("work"));
        assert!((share("idle") - 0.5).abs() < 1e-12);
        assert!(
            (share("step") - 0.3).abs() < 1e-12,
            "60 of every 200 outermost ticks"
        );
        assert_eq!(row(&rows, "step").ticks, 120);
        // `record` (no depth) is an outermost span.
        let mut b = SpanAggregator::new();
        b.record("x", 30, &[]);
        b.record("y", 10, &[]);
        assert!((row(&b.phases(), "x").share - 0.75).abs() < 1e-12);
    }

    #[test]
    fn time_is_counted_from_the_interval_start() {
        let mut a = SpanAggregator::new();
        a.count_from(1_000);
        a.record_span("long", 1, 200, 1_500, &[]); // began before: 500 of its 1,300 ticks
        a.record_span("inside", 1, 1_100, 1_400, &[]);
        a.record_span("stale", 1, 100, 900, &[]); // ended before: none of it
        let rows = a.phases();
        assert_eq!(row(&rows, "long").ticks, 500);
        assert_eq!(row(&rows, "inside").ticks, 300);
        assert_eq!(row(&rows, "stale").ticks, 0);
        // The durations keep the whole spans.
        let p50 = row(&rows, "long").p50_ticks.unwrap();
        assert!(p50.abs_diff(1_300) <= 2, "{p50}");
        assert_eq!(row(&rows, "long").count, 1);
        // take_interval starts the next interval at this machine's clock, now.
        a.set_clock(ClockInfo::nanoseconds(crate::span::clock_kind()));
        let before = crate::span::now();
        let _ = a.take_interval();
        let since = a.since.unwrap();
        assert!(since >= before && since <= crate::span::now());
    }

    #[test]
    fn counter_lists() {
        assert_eq!(
            SpanConfig::parse_counters(" cycles,instructions, ,LLC-load-misses "),
            ["cycles", "instructions", "LLC-load-misses"]
        );
        assert_eq!(
            SpanConfig::parse_counters("cpu/event=0x3c,umask=0x00/,r00c0"),
            ["cpu/event=0x3c,umask=0x00/", "r00c0"]
        );
        assert!(SpanConfig::parse_counters("").is_empty());
        assert_eq!(SpanConfig::new().with_slots(1000).slots(), 1024);
        assert_eq!(
            header_name("cpu/event=0x3c,umask=0x00/"),
            "cpu/event=0x3c,umask=0x0"
        );
        assert_eq!(SpanConfig::new().counter_slots(), 4);
        assert_eq!(SpanConfig::new().with_counter_slots(20).counter_slots(), 8);
        let six = SpanConfig::new().with_counters(["a", "b", "c", "d", "e", "f"]);
        assert_eq!(six.counter_slots(), 6);
    }

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
            unavailable_reason(libc::ENOENT as u32),
            "ENOENT: not supported here (no hardware PMU, or the CPU or VM does not expose \
             this event)"
        );
        assert_eq!(unavailable_reason(0), "reason not recorded");
        assert!(unavailable_reason(libc::EACCES as u32).contains("perf_event_paranoid"));
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
        v.note_unavailable_because("cycles", libc::ENOENT as u32);
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
        b.note_unavailable_because("instructions", libc::ENOENT as u32);
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
