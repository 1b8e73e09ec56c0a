//! Reports: per-span statistics, the per-phase table, `.hlog` interval logs, and the table
//! at exit.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use picollo_alloc::hdr::interop::{export, ExportOptions};
use picollo_alloc::hdr::{LogError, LogWriter};
use picollo_alloc::{HistogramBuilder, Snapshot};
use picollo_core::fmt::Grouped;
use picollo_core::{HistogramRead, ReadExt};
use picollo_ring::{ClockInfo, ClockKind};
use picollo_spans::clock::ticks_to_ns;
use picollo_spans::{format_duration_ns, AggregatedSpans, SpanAggregator, SpanTable};

use crate::callsite::{CallsiteStats, Histograms, Outermost, SpanHistogram};
use crate::shared::{Finish, Shared};

/// The sum of the values of `h`, from bucket midpoints (each value within half its bucket's
/// width, 0.4%; exact below 256), plus the overflow counted at the window's top (a lower
/// bound for them).
fn midpoint_sum(h: &dyn HistogramRead) -> u128 {
    let inside: u128 = h
        .recorded_buckets()
        .map(|b| u128::from(b.midpoint()) * u128::from(b.count))
        .sum();
    let top = u128::from(h.window().max_value(h.layout()));
    inside + u128::from(h.overflow()) * top
}

/// What a layer could not time, by cause ([`Handle::untimed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Untimed {
    /// Exits that matched no enter on their thread: enters that happened before the layer
    /// was installed, or a span exited on another thread than it was entered on (their
    /// intervals are not timed).
    pub unmatched_exits: u64,
    /// Busy intervals that ended after their span was closed (with the `Registry`, a span is
    /// not closed while entered, so this stays 0).
    pub lost_intervals: u64,
    /// Spans that were not timed because the layer's tables of live spans were full (more
    /// than a million spans live at once; see the crate docs).
    pub untracked_spans: u64,
}

/// One counter of a [`SpanReport`].
#[derive(Clone, Debug)]
pub struct CounterReport {
    /// The counter, by the name it was configured with.
    pub name: String,
    /// Its delta over each span's busy time, for the spans that counted it in every busy
    /// interval.
    pub deltas: Snapshot,
    /// Spans that did not count it in some busy interval (no hardware PMU, a thread whose
    /// counters could not open, a multiplexed counter that never ran): never recorded as 0.
    pub not_counted: u64,
}

/// What the layer recorded for one span callsite (name and target), at one moment.
#[derive(Clone, Debug)]
pub struct SpanReport {
    /// The span's name.
    pub name: &'static str,
    /// The span's target (module path unless set).
    pub target: &'static str,
    /// Busy time per span (the sum of its enter → exit intervals), nanoseconds.
    pub busy_ns: Snapshot,
    /// Wall time per span (creation → close), nanoseconds.
    pub wall_ns: Snapshot,
    /// The counters, in the layer's order (empty: time only).
    pub counters: Vec<CounterReport>,
    /// Instructions per cycle × 10^6, per span, when cycles and instructions are counted.
    pub ipc_micro: Option<Snapshot>,
}

impl SpanReport {
    fn new(stats: &CallsiteStats, h: &Histograms, shared: &Shared) -> Self {
        Self {
            name: stats.name,
            target: stats.target,
            busy_ns: Snapshot::new(&h.busy),
            wall_ns: Snapshot::new(&h.wall),
            counters: shared
                .counters
                .iter()
                .zip(h.counters.iter().zip(h.not_counted.iter()))
                .map(|(spec, (h, nc))| CounterReport {
                    name: spec.name().to_owned(),
                    deltas: Snapshot::new(h),
                    not_counted: nc.load(Ordering::Relaxed),
                })
                .collect(),
            ipc_micro: h.ipc_micro.as_ref().map(Snapshot::new),
        }
    }

    /// The reports of callsites of one name and target, as one (`None` for none).
    fn merge(mut reports: Vec<SpanReport>) -> Option<SpanReport> {
        if reports.len() <= 1 {
            return reports.pop();
        }
        let merged = |of: &dyn Fn(&SpanReport) -> &Snapshot| {
            let first = of(&reports[0]);
            // The snapshots' own layout and window (no unit: the spans' histograms have none).
            let builder = HistogramBuilder::new()
                .layout(first.layout())
                .window(first.window());
            let mut sum = match builder.dense().plain() {
                Ok(sum) => sum,
                Err(e) => unreachable!("a snapshot's layout and window build: {e}"),
            };
            for r in &reports {
                sum.add(of(r));
            }
            Snapshot::new(&sum)
        };
        let counters = (0..reports[0].counters.len())
            .map(|i| CounterReport {
                name: reports[0].counters[i].name.clone(),
                deltas: merged(&|r| &r.counters[i].deltas),
                not_counted: reports.iter().map(|r| r.counters[i].not_counted).sum(),
            })
            .collect();
        let ipc_micro = reports
            .iter()
            .all(|r| r.ipc_micro.is_some())
            .then(|| merged(&|r| r.ipc_micro.as_ref().unwrap_or(&r.busy_ns)));
        Some(SpanReport {
            name: reports[0].name,
            target: reports[0].target,
            busy_ns: merged(&|r| &r.busy_ns),
            wall_ns: merged(&|r| &r.wall_ns),
            counters,
            ipc_micro,
        })
    }

    /// Spans closed.
    pub fn count(&self) -> u64 {
        self.busy_ns.total_with_outside()
    }

    /// The counter named `name`.
    pub fn counter(&self, name: &str) -> Option<&CounterReport> {
        self.counters.iter().find(|c| c.name == name)
    }
}

/// A handle on a layer's statistics; see [`PicolloLayer::handle`](crate::PicolloLayer::handle).
/// Cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("counters", &self.counters())
            .finish_non_exhaustive()
    }
}

impl Handle {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Registers the layer's work at shutdown, which [`Handle::finish`] runs.
    pub(crate) fn set_finisher(&self, finisher: Weak<dyn Finish>) {
        *self
            .shared
            .finisher
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(finisher);
    }

    /// Finishes the layer now, as at exit: writes the last interval of its periodic `.hlog`
    /// ([`Builder::hlog`](crate::Builder::hlog)) and prints its table when it reports at
    /// exit, once (exit then does nothing more); returns when that is done, also when
    /// another thread started it. For a program that handles `SIGTERM` itself (a graceful
    /// shutdown), at the end of its shutdown path, so that the spans closed during the
    /// shutdown are reported; `Builder::finish_on_sigterm` does it for programs that do not
    /// (and does nothing where the program handles the signal). Does nothing once the layer
    /// was dropped (the drop wrote the last interval).
    pub fn finish(&self) {
        if let Some(finisher) = self.shared.finisher() {
            finisher.finish();
        }
    }

    /// The counters the layer samples (empty: time only).
    pub fn counters(&self) -> Vec<String> {
        self.shared
            .counters
            .iter()
            .map(|c| c.name().to_owned())
            .collect()
    }

    /// Every span callsite (name and target) that closed a span, in registration order.
    pub fn spans(&self) -> Vec<SpanReport> {
        self.shared
            .callsites
            .all()
            .iter()
            .filter_map(|s| Some(SpanReport::new(s, s.recorded()?, &self.shared)))
            .collect()
    }

    /// The span callsite named `name` in the per-phase table, once a span of it closed: its
    /// row's name, the span's name or `module::name` where two targets have a span so named
    /// (see [`Handle::table`]); the callsites of one name and target (one row) together.
    /// Also found by the span's bare name (the first target's, when several targets have a
    /// span so named) and by `target::name` with the whole target.
    pub fn span(&self, name: &str) -> Option<SpanReport> {
        let all = self.shared.callsites.all();
        let closed: Vec<(&CallsiteStats, &Histograms)> = all
            .iter()
            .filter_map(|s| Some((&**s, s.recorded()?)))
            .collect();
        let labelled: Vec<_> = closed.iter().filter(|(s, _)| s.label() == name).collect();
        let (first, _) = match labelled.first() {
            Some(s) => **s,
            None => *closed.iter().find(|(s, _)| {
                s.name == name
                    || name
                        .strip_suffix(s.name)
                        .and_then(|t| t.strip_suffix("::"))
                        .is_some_and(|t| t == s.target)
            })?,
        };
        // Every callsite of that name and target: the table's row.
        let reports = closed
            .iter()
            .filter(|(s, _)| s.name == first.name && s.target == first.target)
            .map(|(s, h)| SpanReport::new(s, h, &self.shared))
            .collect();
        SpanReport::merge(reports)
    }

    /// What the layer could not time, by cause (all 0 in a program whose spans enter and exit
    /// on one thread after the layer was installed, with fewer than a million live at once).
    /// The table's notes print each that is not 0.
    pub fn untimed(&self) -> Untimed {
        Untimed {
            unmatched_exits: self.shared.unmatched_exits.load(Ordering::Relaxed),
            lost_intervals: self.shared.lost_intervals.load(Ordering::Relaxed),
            untracked_spans: self.shared.spans.untracked(),
        }
    }

    /// Why some counters are not counted, if they are not (the one-time messages, joined).
    pub fn counter_problem(&self) -> Option<String> {
        let problems = self
            .shared
            .counter_problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (!problems.is_empty()).then(|| problems.join("; "))
    }

    /// The per-phase table of the closed spans: N, busy time, % of the outermost spans' busy
    /// time (or cycles: nested spans are a part of it, not added to it), p50, wall p50, and
    /// with counters the cycles, IPC p5/p50/p95 and the other counters per 1,000
    /// instructions (per span without instructions). Counters this machine does not count
    /// read `n/a`, never 0. Rows are named by span name, or `module::name` where two targets
    /// share a name (the fewest last parts of the target that tell them apart: the name
    /// `picollo attach` and `top` show too). With no span closed, the notes say why (spans a
    /// filter ahead of the layer disabled, and which).
    ///
    /// At any moment, spans open included: the whole that `%` divides is the outermost busy
    /// time of the closed spans and of the open ones so far (their intervals that exited), so
    /// the requests that closed inside a server's open connection spans are a part of them,
    /// never above 100 %; a note names the open spans and their busy time so far. An interval
    /// still in progress counts when it exits: a span with no closed span and no interval
    /// ended yet (a `main` span around the whole program) is named in the note as such.
    pub fn table(&self) -> SpanTable {
        let shared = &*self.shared;
        let mut agg = crate::counters::new_aggregator();
        agg.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
        let slots = self.counter_slots(&mut agg);
        let mut not_counted = 0u64;
        let callsites = shared.callsites.all();
        let mut open = OpenSpans::now(shared, &callsites);
        for stats in &callsites {
            if let Some(h) = stats.recorded() {
                not_counted += add_callsite(&mut agg, shared, stats, h, &slots, &mut open);
            }
        }
        self.add_notes(&mut agg, &open, not_counted);
        agg.table()
    }

    /// The aggregator's counter index of each of the layer's counters measured somewhere
    /// (`None` for a counter measured nowhere, noted in `agg` as unavailable).
    fn counter_slots(&self, agg: &mut SpanAggregator) -> Vec<Option<usize>> {
        let measured = self.shared.measured_somewhere.load(Ordering::Relaxed);
        self.shared
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let canonical = c.canonical();
                if measured & (1 << i) != 0 {
                    Some(agg.counter_index(&canonical))
                } else {
                    agg.note_unavailable(&canonical);
                    None
                }
            })
            .collect()
    }

    /// The table's notes: what the times mean, the open spans, counters not counted, and
    /// every interval or span the layer could not time.
    fn add_notes(&self, agg: &mut SpanAggregator, open: &OpenSpans, not_counted: u64) {
        agg.add_note(
            "Time: busy time (enter → exit, summed over re-entries); wall: creation → close",
        );
        if let Some(note) = open.note() {
            agg.add_note(note);
        }
        if let Some(p) = self.counter_problem() {
            // The layer's own message names the counters and the error that kept them from
            // opening here: more precise than the aggregator's note about the PMU.
            agg.explain_unavailable(p);
        }
        if not_counted > 0 {
            agg.add_note(format!(
                "{not_counted} span·counter values not counted (an interval without that \
                 counter): left out, not recorded as 0"
            ));
        }
        let untimed = self.untimed();
        let untimed = [
            (
                untimed.unmatched_exits,
                "exits matched no enter on their thread (not timed)",
            ),
            (
                untimed.lost_intervals,
                "intervals ended after their span closed (not timed)",
            ),
            (
                untimed.untracked_spans,
                "spans were not timed: too many spans live at once",
            ),
        ];
        for (n, what) in untimed {
            if n > 0 {
                agg.add_note(format!("{n} {what}"));
            }
        }
        if let Some(why) = self.why_empty() {
            agg.add_note(why);
        }
    }

    /// Why no span closed, when none did: the span callsites that reached the layer but were
    /// never enabled (a filter ahead of it disabled them), or the subscriber's maximum level,
    /// which disables spans before any layer sees them. `None` when a span closed, or when
    /// nothing suggests a filter (the program made no span yet).
    pub fn why_empty(&self) -> Option<String> {
        let callsites = self.shared.callsites.all();
        if callsites.iter().any(|s| s.recorded().is_some()) {
            return None;
        }
        let disabled: Vec<String> = callsites
            .iter()
            .filter(|s| !s.seen())
            .map(|s| format!("{} ({}, {})", s.name, s.level, s.target))
            .collect();
        let max = tracing_core::LevelFilter::current();
        let advice = "a filter on the whole subscriber (such as `.with(EnvFilter…)`) applies to \
                      every layer: give it to the layer it is for, \
                      `fmt::layer().with_filter(EnvFilter::from_default_env())`, and add \
                      PicolloLayer without one (picollo-tracing's README)";
        if !disabled.is_empty() {
            return Some(format!(
                "no span closed: these span callsites reached the layer but were disabled by a \
                 filter ahead of it: {}; {advice}",
                disabled.join(", ")
            ));
        }
        if callsites.iter().any(|s| s.seen()) {
            return Some("no span closed yet: spans were created but none has closed".to_owned());
        }
        (max < tracing_core::LevelFilter::INFO).then(|| {
            format!(
                "no span reached the layer: the subscriber's maximum level is {max}, so INFO, \
                 DEBUG and TRACE spans are disabled before any layer sees them; {advice}"
            )
        })
    }

    /// Prints the per-phase table on stderr, as at exit: nothing when no span closed and
    /// nothing suggests why (a program that stopped at `--help` or a usage error), one line
    /// saying why when a filter kept the spans from the layer.
    pub(crate) fn print_report(&self) {
        let text = self.report_text();
        if !text.is_empty() {
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
    }

    /// What [`Handle::print_report`] prints (empty: nothing).
    pub(crate) fn report_text(&self) -> String {
        let table = self.table();
        if table.rows.is_empty() {
            return self
                .why_empty()
                .map(|why| format!("picollo-tracing: {why}\n"))
                .unwrap_or_default();
        }
        format!("\npicollo-tracing spans:\n{table}\n")
    }

    /// An `.hlog` interval log of the spans into `out` (see [`SpanLog`]).
    ///
    /// # Errors
    /// An I/O error writing the header.
    pub fn hlog<W: Write>(&self, out: W) -> Result<SpanLog<W>, LogError> {
        SpanLog::new(self.clone(), out)
    }
}

/// Adds callsite `stats` (its histograms `h`) to the table's aggregator: its busy times,
/// its part of the whole (closed outermost spans, and `open`'s part for its open ones), and
/// its counters through `slots`. Returns its span·counter values not counted.
fn add_callsite(
    agg: &mut SpanAggregator,
    shared: &Shared,
    stats: &CallsiteStats,
    h: &Histograms,
    slots: &[Option<usize>],
    open: &mut OpenSpans,
) -> u64 {
    let (open_ns, open_cycles) = open.take_whole_part(stats);
    let r = SpanReport::new(stats, h, shared);
    let mut not_counted = 0;
    let mut counters: Vec<(usize, u128, &dyn HistogramRead)> = Vec::new();
    for (c, slot) in r.counters.iter().zip(slots) {
        if let Some(slot) = slot {
            // Counters measured nowhere are noted as such; these were measured on some
            // threads but not in every interval of these spans.
            not_counted += c.not_counted;
            if c.deltas.total_with_outside() > 0 {
                counters.push((*slot, midpoint_sum(&c.deltas), &c.deltas));
            }
        }
    }
    let closed = match h.outermost() {
        Outermost::All => midpoint_sum(&r.busy_ns),
        Outermost::None => 0,
        Outermost::Recorded(o) => o.map_or(0, |o| midpoint_sum(&Snapshot::new(o))),
    };
    agg.record_histograms(
        &stats.label(),
        AggregatedSpans {
            durations: &r.busy_ns,
            total: midpoint_sum(&r.busy_ns),
            outermost: open_ns + closed,
            outermost_cycles: shared
                .cycles
                .map(|_| u128::from(h.outer_cycles.load(Ordering::Relaxed)) + open_cycles),
            counters: &counters,
            ipc_micro: r.ipc_micro.as_ref().map(|h| h as &dyn HistogramRead),
            wall: Some(&r.wall_ns),
        },
    );
    not_counted
}

/// The spans open when a table is taken, per callsite: their outermost busy time so far
/// goes into the whole that `%` divides (not into their rows, which hold closed spans), so
/// a nested span that closed inside an open connection span is a part of it, never above
/// 100 %.
struct OpenSpans {
    /// Per callsite (by address): open spans, their outermost busy time in ns and cycles.
    by_callsite: HashMap<usize, (u64, u128, u128)>,
    /// For the note, in callsite order: each callsite with open outermost time (its name,
    /// open spans, that time in ns), and each callsite with no closed span whose open spans
    /// have ended no interval yet (a `main` span still in its first interval: its time is in
    /// no row and not yet in the whole).
    names: Vec<(String, u64, u128)>,
    not_ended: Vec<(String, u64)>,
    /// Added to the whole through the first row (callsites with open spans and no row).
    rowless: Option<(u128, u128)>,
}

impl OpenSpans {
    fn now(shared: &Shared, callsites: &[Arc<CallsiteStats>]) -> Self {
        let mut by_callsite: HashMap<usize, (u64, u128, u128)> = HashMap::new();
        let mut not_ended_by: HashMap<usize, u64> = HashMap::new();
        shared.spans.for_each_live(|stats, outer, nested, cycles| {
            let key = stats as *const CallsiteStats as usize;
            let e = by_callsite.entry(key).or_default();
            e.0 += 1;
            e.1 += u128::from(ticks_to_ns(outer));
            e.2 += u128::from(cycles);
            if outer == 0 && nested == 0 {
                *not_ended_by.entry(key).or_default() += 1;
            }
        });
        let not_ended = callsites
            .iter()
            .filter(|s| s.recorded().is_none())
            .filter_map(|s| {
                let n = not_ended_by.get(&(Arc::as_ptr(s) as usize))?;
                Some((s.label(), *n))
            })
            .collect();
        let mut names = Vec::new();
        let mut rowless = (0, 0);
        for stats in callsites {
            let key = Arc::as_ptr(stats) as usize;
            let Some(&(n, ns, cycles)) = by_callsite.get(&key) else {
                continue;
            };
            if ns > 0 {
                names.push((stats.label(), n, ns));
            }
            if stats.recorded().is_none() {
                rowless.0 += ns;
                rowless.1 += cycles;
                // Counted here once: a first span that closes before the table reaches the
                // callsite gives it a row, which must not carry the same time again.
                by_callsite.remove(&key);
            }
        }
        Self {
            by_callsite,
            names,
            not_ended,
            rowless: Some(rowless),
        }
    }

    /// The part of the whole that `stats`'s row carries: its open spans' outermost time and
    /// cycles, plus, for the first row, those of callsites that have no row.
    fn take_whole_part(&mut self, stats: &CallsiteStats) -> (u128, u128) {
        let (_, mut ns, mut cycles) = self
            .by_callsite
            .get(&(stats as *const CallsiteStats as usize))
            .copied()
            .unwrap_or_default();
        if let Some((n, c)) = self.rowless.take() {
            ns += n;
            cycles += c;
        }
        (ns, cycles)
    }

    /// What the table says about open spans, when some have outermost time or have ended no
    /// interval yet (and have no row).
    fn note(&self) -> Option<String> {
        if self.names.is_empty() && self.not_ended.is_empty() {
            return None;
        }
        let list: Vec<String> = self
            .names
            .iter()
            .map(|(name, n, ns)| {
                format!(
                    "{name} ×{} ({} busy so far)",
                    Grouped(*n),
                    format_duration_ns(*ns as f64)
                )
            })
            .chain(
                self.not_ended
                    .iter()
                    .map(|(name, n)| format!("{name} ×{} (no interval ended yet)", Grouped(*n))),
            )
            .collect();
        Some(format!(
            "open spans: {}: their outermost busy time so far is in the whole that % divides, \
             their rows hold closed spans only; an interval still in progress counts when it \
             exits",
            list.join(", ")
        ))
    }
}

/// An HdrHistogram interval log (`.hlog`) of a layer's spans: each
/// [`write_interval`](SpanLog::write_interval) writes, for every span callsite with spans
/// closed since the previous call, one line per statistic, tagged `<name>.busy`,
/// `<name>.wall` and `<name>.<counter>` (`<module>::<name>` where two targets have a span so
/// named, as the table's rows; spaces and commas in names become `_`), times in
/// nanoseconds. `picollo report` and HdrHistogram's tools read it.
pub struct SpanLog<W: Write> {
    handle: Handle,
    writer: LogWriter<W>,
    start: Instant,
    last_sec: f64,
    /// The snapshot of each callsite statistic at the previous interval.
    previous: HashMap<(usize, usize), Snapshot>,
}

impl<W: Write> std::fmt::Debug for SpanLog<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanLog")
            .field("last_sec", &self.last_sec)
            .finish_non_exhaustive()
    }
}

fn tag_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == ',' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

impl<W: Write> SpanLog<W> {
    /// Writes the log's header (a comment, the format version, the start time, the legend).
    ///
    /// # Errors
    /// An I/O error.
    pub fn new(handle: Handle, out: W) -> Result<Self, LogError> {
        let mut writer = LogWriter::new(out);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        writer.write_comment("picollo-tracing span log: busy and wall time in ns, counters")?;
        writer.write_log_format_version()?;
        writer.write_start_time(now_ms)?;
        writer.write_legend()?;
        Ok(Self {
            handle,
            writer,
            start: Instant::now(),
            last_sec: 0.0,
            previous: HashMap::new(),
        })
    }

    /// Writes one interval (since the previous call, or the log's start) and returns the
    /// number of lines written. Values outside a histogram's window (spans over 9.8 hours)
    /// are left out of the line and named in a comment.
    ///
    /// # Errors
    /// An I/O or encoding error.
    pub fn write_interval(&mut self) -> Result<usize, LogError> {
        let now = self.start.elapsed().as_secs_f64();
        let shared = &self.handle.shared;
        let mut lines = 0;
        for stats in shared.callsites.all() {
            let key = Arc::as_ptr(&stats) as usize;
            let Some(hists) = stats.recorded() else {
                continue;
            };
            let mut metrics: Vec<(String, &SpanHistogram)> = vec![
                ("busy".to_owned(), &hists.busy),
                ("wall".to_owned(), &hists.wall),
            ];
            for (spec, h) in shared.counters.iter().zip(hists.counters.iter()) {
                metrics.push((tag_part(spec.name()), h));
            }
            if let Some(h) = &hists.ipc_micro {
                metrics.push(("ipc_micro".to_owned(), h));
            }
            for (m, (metric, h)) in metrics.into_iter().enumerate() {
                let snap = self
                    .previous
                    .entry((key, m))
                    .or_insert_with(|| Snapshot::empty(h.layout(), h.window()));
                snap.update(h, true);
                if snap.total_with_outside() == 0 {
                    continue;
                }
                let ex = export(&*snap, &ExportOptions::new().allow_dropping(true))
                    .map_err(|e| LogError::Io(std::io::Error::other(e.to_string())))?;
                let tag = format!("{}.{metric}", tag_part(&stats.label()));
                if ex.dropped_overflow > 0 || ex.dropped_underflow > 0 {
                    self.writer.write_comment(&format!(
                        "{tag}: {} values above the histogram's range not in the next line",
                        ex.dropped_overflow + ex.dropped_underflow
                    ))?;
                }
                self.writer
                    .write_interval(Some(&tag), self.last_sec, now, &ex.counts)?;
                lines += 1;
            }
        }
        self.last_sec = now;
        self.writer.flush()?;
        Ok(lines)
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.writer.into_inner()
    }
}
