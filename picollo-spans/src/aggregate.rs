//! Per-name span statistics: [`SpanAggregator`] takes decoded spans (one at a time, or
//! already aggregated into histograms: [`AggregatedSpans`]) and counter events, and keeps per
//! span name the histograms of durations, counter deltas and instructions per cycle, and per
//! counter-event name the values. Its `table` and `event_table` (in `aggregate/view.rs`) turn
//! them into the tables of [`super::table`].

use core::fmt;
use std::collections::{BTreeMap, HashMap};

use picollo_core::{EquivalentValue, HistogramRead, Layout, ReadExt};
use picollo_ring::{ClockInfo, Drained};

use super::clock::{clock_hz, clock_kind, now};
use picollo_alloc::{HeapHistogram, HistogramBuilder};

// The per-phase and counter-event tables: the aggregator's methods that make them.
mod view;

/// The histogram layout of span statistics: block scale 7, 0.4% relative error.
fn layout() -> Layout {
    const SPAN_LAYOUT: Layout = Layout::from_block_scale(7).unwrap();
    SPAN_LAYOUT
}

pub(crate) fn histogram() -> HeapHistogram {
    full_range(layout())
}

/// A dense histogram of `layout` over all of `u64`.
fn full_range(layout: Layout) -> HeapHistogram {
    match HistogramBuilder::new().layout(layout).dense().plain() {
        Ok(h) => h,
        // The layouts here are constants without a value unit, over the full range.
        Err(e) => unreachable!("a span histogram builds: {e}"),
    }
}

/// Per-counter totals of one span name.
pub(super) struct CounterStats {
    pub(super) sum: u128,
    pub(super) deltas: HeapHistogram,
}

/// Everything recorded for one span name.
pub struct SpanStats {
    pub(super) count: u64,
    pub(super) ticks: u128,
    pub(super) durations: HeapHistogram,
    pub(super) counters: Vec<Option<CounterStats>>,
    pub(super) ipc_micro: HeapHistogram,
    /// Wall time per span (creation → close), when the source knows it (a span layer);
    /// frames carry busy intervals only.
    pub(super) wall: Option<HeapHistogram>,
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
            ipc_micro: full_range(Layout::DEFAULT),
            wall: None,
        }
    }

    /// Spans recorded.
    pub fn count(&self) -> u64 {
        self.count
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

/// Everything recorded for one counter-event name (`picollo_linux::counter!`).
pub struct EventStats {
    pub(super) count: u64,
    pub(super) sum: i128,
    pub(super) min: i64,
    pub(super) max: i64,
    pub(super) last: i64,
    /// The values at or above 0 (a histogram holds unsigned values).
    pub(super) values: HeapHistogram,
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

/// Aggregates span frames per span name (histograms of durations and counter deltas, IPC)
/// and counter events per name.
pub struct SpanAggregator {
    pub(super) spans: HashMap<String, SpanStats>,
    pub(super) events: HashMap<String, EventStats>,
    pub(super) counters: Vec<String>,
    pub(super) unavailable: BTreeMap<String, u32>,
    pub(super) clock: Option<ClockInfo>,
    pub(super) accepted: u64,
    pub(super) lost: u64,
    /// Frames of no kind the codec knows (counted, never guessed at).
    pub(super) unreadable: u64,
    /// This machine's PMU, for the note on counters the writer could not count (set by
    /// the platform that knows it: `picollo_linux::span::new_aggregator`).
    pub(super) pmu: Option<String>,
    /// Time before this clock reading is not counted in the `Time` of spans that started
    /// earlier (set by [`SpanAggregator::take_interval`]).
    pub(super) since: Option<u64>,
    /// Ticks and cycles of the outermost spans (depth 1): the whole that `%` divides.
    pub(super) outer_ticks: u128,
    pub(super) outer_cycles: u128,
    /// Frames were read into this aggregator (the table then says how many).
    pub(super) from_frames: bool,
    /// What the source says about counters it could not measure, in place of the note on
    /// the writer's machine ([`SpanAggregator::explain_unavailable`]).
    pub(super) unavailable_note: Option<String>,
    /// Notes of the source, after the table's own ([`SpanAggregator::add_note`]).
    pub(super) extra_notes: Vec<String>,
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
            .field("unreadable", &self.unreadable)
            .finish_non_exhaustive()
    }
}

impl Default for SpanAggregator {
    fn default() -> Self {
        Self::new()
    }
}

pub(super) fn is_cycles(name: &str) -> bool {
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
            unreadable: 0,
            pmu: None,
            since: None,
            outer_ticks: 0,
            outer_cycles: 0,
            from_frames: false,
            unavailable_note: None,
            extra_notes: Vec::new(),
        }
    }

    /// Hands back what was aggregated so far and starts again from nothing, keeping the
    /// counter indices, the unavailable counters and the clock (for per-interval tables:
    /// [`SpanDecoder`](super::SpanDecoder)s keep working across the call).
    ///
    /// The new interval starts now: a span that began before and ends in it counts only its
    /// time from now in `Time` (its duration still goes whole into the percentiles), so no
    /// row's time exceeds the interval times the threads recording. (This needs the writer's
    /// span clock to be this machine's: the TSC, or `CLOCK_MONOTONIC`; otherwise spans count
    /// whole, as before.)
    pub fn take_interval(&mut self) -> SpanAggregator {
        let same_clock = self.clock.is_some_and(|c| c.kind == clock_kind());
        let fresh = SpanAggregator {
            counters: self.counters.clone(),
            unavailable: self.unavailable.clone(),
            clock: self.clock,
            pmu: self.pmu.clone(),
            since: same_clock.then(now),
            from_frames: self.from_frames,
            ..SpanAggregator::new()
        };
        core::mem::replace(self, fresh)
    }

    #[cfg(test)]
    /// Counts span time from clock reading `ticks` on: a span that started earlier counts
    /// only `end - ticks` in `Time` ([`SpanAggregator::take_interval`] sets it to now).
    pub(crate) fn count_from(&mut self, ticks: u64) {
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
    pub(crate) fn note_unavailable_because(&mut self, name: &str, errno: u32) {
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

    /// Ticks per second of the spans' clock, when known (see [`super::clock::clock_hz`]).
    pub fn clock_hz(&self) -> Option<f64> {
        self.clock.as_ref().and_then(clock_hz)
    }

    /// Counts frames read and lost (for the table's footer).
    pub fn add_counts(&mut self, d: Drained) {
        self.accepted += d.accepted;
        self.lost += d.lost;
        self.from_frames = true;
    }

    /// Says why the counters noted unavailable were not measured, in the source's own words
    /// (a span layer knows the error that kept them from opening), instead of the note
    /// about the writer's machine.
    pub fn explain_unavailable(&mut self, why: impl Into<String>) {
        self.unavailable_note = Some(why.into());
    }

    /// Adds a note under the per-phase table, after the table's own.
    pub fn add_note(&mut self, note: impl Into<String>) {
        self.extra_notes.push(note.into());
    }

    /// Records one span: its name, duration in ticks, and `(counter index, delta)` pairs; an
    /// outermost span (see `SpanAggregator::record_span` for nested ones).
    pub fn record(&mut self, name: &str, ticks: u64, deltas: &[(usize, u64)]) {
        self.record_counted(name, 1, ticks, ticks, deltas);
    }

    /// Records one span as its frame gives it: its name, nesting depth (1 for the outermost),
    /// start and end clock readings, and `(counter index, delta)` pairs. Its duration goes
    /// into the percentiles; its `Time` is counted from the interval's start
    /// ([`SpanAggregator::take_interval`]) when it started earlier; outermost spans make the
    /// whole that `%` divides, so nested spans are a part of it rather than added to it.
    pub(crate) fn record_span(
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

    /// Records one counter event (`picollo_linux::counter!`).
    pub(crate) fn record_event(&mut self, name: &str, value: i64) {
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
        self.outer_ticks += spans.outermost;
        self.outer_cycles += spans.outermost_cycles.unwrap_or(0);
        if let Some(wall) = spans.wall {
            stats.wall.get_or_insert_with(histogram).add(wall);
        }
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

    /// Frames read whose kind is none the span frame codec knows: counted here and in the
    /// table's notes, never recorded as a span or an event.
    pub fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// Describes this machine's PMU (`Capabilities::detect().pmu` on Linux) for the table's
    /// note on counters the writer could not count.
    pub fn set_pmu_description(&mut self, pmu: impl Into<String>) {
        self.pmu = Some(pmu.into());
    }

    /// Counts one frame of no known kind ([`SpanAggregator::unreadable`]).
    pub(crate) fn count_unreadable(&mut self) {
        self.unreadable += 1;
    }

    pub(super) fn cycles_index(&self) -> Option<usize> {
        self.counters.iter().position(|c| is_cycles(c))
    }

    pub(super) fn instructions_index(&self) -> Option<usize> {
        self.counters.iter().position(|c| c == "instructions")
    }
}

/// Spans of one name already aggregated into histograms, for
/// [`SpanAggregator::record_histograms`](super::SpanAggregator::record_histograms).
#[derive(Clone, Copy)]
pub struct AggregatedSpans<'a> {
    /// The histogram of durations (in the aggregator's clock unit); its total (underflow and
    /// overflow included) is the number of spans.
    pub durations: &'a dyn HistogramRead,
    /// The sum of the durations.
    pub total: u128,
    /// The part of `total` spent in intervals that were outermost on their thread (nothing
    /// else open there): with the other names', the whole that `%` divides, so that nested
    /// spans are a part of it rather than added to it.
    pub outermost: u128,
    /// The cycles of those outermost intervals, when cycles were counted.
    pub outermost_cycles: Option<u128>,
    /// Wall time per span (creation → close, in the aggregator's clock unit), when known: the
    /// table's `wall p50` column.
    pub wall: Option<&'a dyn HistogramRead>,
    /// `(counter index, sum of deltas, histogram of deltas)` per counter that was counted.
    pub counters: &'a [(usize, u128, &'a dyn HistogramRead)],
    /// Instructions per cycle times 10^6, one value per span, when both were counted.
    pub ipc_micro: Option<&'a dyn HistogramRead>,
}

impl core::fmt::Debug for AggregatedSpans<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AggregatedSpans")
            .field("spans", &self.durations.total_with_outside())
            .field("total", &self.total)
            .field("counters", &self.counters.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::PhaseRow;
    use picollo_ring::ClockKind;

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
        a.set_clock(ClockInfo::nanoseconds(clock_kind()));
        let before = now();
        let _ = a.take_interval();
        let since = a.since.unwrap();
        assert!(since >= before && since <= now());
    }

    #[test]
    fn aggregated_spans_match_one_by_one() {
        let mut one = SpanAggregator::new();
        let mut merged = SpanAggregator::new();
        for a in [&mut one, &mut merged] {
            a.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
            assert_eq!(a.counter_index("page-faults"), 0);
        }
        let mut durations = histogram();
        let mut faults = histogram();
        let (mut total, mut sum) = (0u128, 0u128);
        for i in 1..=50u64 {
            one.record("parse", i * 1000, &[(0, i % 7)]);
            durations.record(i * 1000);
            faults.record(i % 7);
            total += u128::from(i * 1000);
            sum += u128::from(i % 7);
        }
        merged.record_histograms(
            "parse",
            AggregatedSpans {
                durations: &durations,
                total,
                outermost: total,
                outermost_cycles: None,
                counters: &[(0, sum, &faults)],
                ipc_micro: None,
                wall: None,
            },
        );
        merged.add_counts(Drained::default());
        one.add_counts(Drained::default());
        assert_eq!(one.table(), merged.table());
        assert_eq!(merged.span("parse").unwrap().count(), 50);
        assert_eq!(merged.span("parse").unwrap().counter_sum(0), Some(sum));
    }
}
