//! The layer: span hooks, per-span state and the per-thread stack of open intervals.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use picollo_spans::clock::{now, ticks_to_ns};
use picollo_spans::stack::{SlotMap, NO_COUNTER};
use tracing_core::span::{Attributes, Id};
use tracing_core::subscriber::Interest;
use tracing_core::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::callsite::{Callsites, MIXED, NESTED, OUTER};
#[cfg(all(feature = "counters", target_os = "linux"))]
use crate::counters::SpanCounters;
use crate::counters::{self as raw, Interval, ThreadSpans};
use crate::report::Handle;
use crate::shared::Shared;
use crate::shutdown::{LogOut, Registration, DEFAULT_SIGTERM_GRACE};
use crate::spans::{LiveSpan, LiveSpans};

/// A `tracing_subscriber::Layer` that times spans into Picollo histograms per callsite (name
/// and target): busy time, wall time and, optionally, counter deltas over the busy time; and
/// saves each busy interval as a frame into this thread's shared-memory span ring. See the
/// [crate docs](crate).
///
/// Dropping the layer (a subscriber set with `tracing::subscriber::with_default` that goes
/// out of scope) writes the last interval of its [`Builder::hlog`] and closes the sink, stops
/// its periodic writer, and takes it off the work done at exit and on `SIGTERM`: nothing is
/// printed for it afterwards, and when it was the last layer with
/// [`Builder::finish_on_sigterm`], a `SIGTERM` ends the process as if no layer had been
/// installed. Its statistics are freed with the last of its [`Handle`]s.
pub struct PicolloLayer {
    shared: Arc<Shared>,
    /// `ticks_to_ns`'s factor, read once at build: a close converts its two times with a
    /// multiply and a shift each, without the calibration's once-check.
    ns_per_tick: NsPerTick,
    /// `shared.id`, the owner of this layer's intervals on the threads' stacks (here to
    /// spare the hooks a load).
    id: u64,
    counters: bool,
    rings: bool,
    /// The layer's place among the finishers at exit and on `SIGTERM`, given up when the
    /// layer drops (it then prints nothing more). Boxed: the layer lives by value inside the
    /// subscriber, and its 32 more bytes cost 6 instructions per span on the hot path
    /// (`tracing_iai`'s whole span, fat LTO: 466 against 460 boxed, as before the field).
    _shutdown: Box<Registration>,
}

impl std::fmt::Debug for PicolloLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PicolloLayer")
            .field("counters", &self.shared.counters)
            .field("rings", &self.rings)
            .finish_non_exhaustive()
    }
}

/// Builds a [`PicolloLayer`].
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Builder {
    #[cfg(all(feature = "counters", target_os = "linux"))]
    counters: Option<SpanCounters>,
    time_only: bool,
    no_rings: bool,
    report_at_exit: bool,
    hlog: Option<HlogEvery>,
    finish_on_sigterm: bool,
    sigterm_grace: Option<Duration>,
}

/// A `.hlog` the layer writes on its own ([`Builder::hlog`]).
struct HlogEvery {
    out: Mutex<Option<LogOut>>,
    period: Duration,
}

impl Clone for HlogEvery {
    /// A builder clone does not write the log: the destination is moved, not copied.
    fn clone(&self) -> Self {
        Self {
            out: Mutex::new(None),
            period: self.period,
        }
    }
}

impl std::fmt::Debug for HlogEvery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HlogEvery")
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Counters to sample at span boundaries, typed (at most 8):
    /// `SpanCounters::new().with(HardwareEvent::Cycles)`, or
    /// `SpanCounters::parse("cycles,instructions,LLC-load-misses")?` for perf's names. They
    /// are the process's span counters ([`picollo_linux::span::configure`]), shared with the
    /// span rings; when something configured them already (an earlier layer, a span, or
    /// `PICOLLO_COUNTERS` read by one), the counters in force are used and a message says so.
    /// The layer knows each counter by its event. Without this call: the counters of
    /// `PICOLLO_COUNTERS`, if set. Linux only (the `counters` feature, on by default).
    #[cfg(all(feature = "counters", target_os = "linux"))]
    #[cfg_attr(docsrs, doc(cfg(all(feature = "counters", target_os = "linux"))))]
    pub fn counters(mut self, counters: SpanCounters) -> Self {
        self.counters = Some(counters);
        self.time_only = false;
        self
    }

    /// Time only: no counters, whatever `PICOLLO_COUNTERS` says.
    pub fn time_only(mut self) -> Self {
        self.time_only = true;
        #[cfg(all(feature = "counters", target_os = "linux"))]
        {
            self.counters = None;
        }
        self
    }

    /// Whether busy intervals go into the threads' shared-memory span rings for
    /// `picollo attach --spans` and `picollo top` (default true). Without rings no frame is
    /// written, and in time-only mode a thread opens neither a ring nor a counter (with
    /// counters, the thread's ring still holds them).
    pub fn rings(mut self, rings: bool) -> Self {
        self.no_rings = !rings;
        self
    }

    /// Prints the per-phase table on stderr when the process exits normally (returning from
    /// `main` or `std::process::exit`), on `SIGTERM` with [`Builder::finish_on_sigterm`], or
    /// at [`Handle::finish`]. Nothing is printed when no span closed, unless a filter kept
    /// the spans from the layer (then one line says which, and why).
    pub fn report_at_exit(mut self, on: bool) -> Self {
        self.report_at_exit = on;
        self
    }

    /// Writes an `.hlog` interval log of the spans into `out` (see
    /// [`SpanLog`](crate::SpanLog)): one interval every `period` from a thread of the layer's, and a
    /// last one when the program stops (as [`Builder::report_at_exit`] prints the table:
    /// normal exit, `SIGTERM` with [`Builder::finish_on_sigterm`], or [`Handle::finish`]).
    /// A write error is said once on stderr and stops the log.
    pub fn hlog(mut self, out: impl std::io::Write + Send + 'static, period: Duration) -> Self {
        self.hlog = Some(HlogEvery {
            out: Mutex::new(Some(Box::new(out))),
            period: period.max(Duration::from_millis(1)),
        });
        self
    }

    /// On `SIGTERM` (how systemd, docker and `kill` stop a server; it runs no `atexit`
    /// handler), writes the last `.hlog` interval and prints the table as at exit, then lets
    /// the signal end the process as it would have (killed by `SIGTERM`). Signal-safe: the
    /// handler only writes a byte into a pipe, which a thread of the layer's reads.
    ///
    /// Only for programs that do not handle `SIGTERM` themselves; one that does keeps its
    /// shutdown exactly as it was. When the layer is built, nothing is installed if `SIGTERM`
    /// already has a handler, is ignored, or is blocked (`sigwait`, a signalfd); when the
    /// program installs its handler after the layer (`tokio::signal`, `signal-hook`, which
    /// call the handler they replaced), the layer's thread sees at the signal that the
    /// handler is no longer its own and does nothing. Such a program calls
    /// [`Handle::finish`] at the end of its shutdown (or returns from `main`), so that the
    /// spans closed during the shutdown are in the table and the last interval.
    ///
    /// A finish that blocks (an `.hlog` sink that does not return, a full stderr pipe)
    /// does not keep the signal from ending the process: it is waited for at most
    /// [`Builder::sigterm_grace`] ([`DEFAULT_SIGTERM_GRACE`], 3 s, by default), then a line
    /// on stderr says that the finish was cut short and what it did not write (the table is
    /// printed then if the finish had not started printing it; all of it best effort, as
    /// stderr may be what blocks), and the signal ends the process.
    ///
    /// A layer that is dropped stops: when no layer that asked for this is left, a `SIGTERM`
    /// ends the process as if none had been installed (see [`PicolloLayer`]'s `Drop`).
    ///
    /// On Linux and macOS; elsewhere (Windows, where no `SIGTERM` is sent) a no-op, so the
    /// same builder compiles everywhere.
    pub fn finish_on_sigterm(mut self, on: bool) -> Self {
        self.finish_on_sigterm = on;
        self
    }

    /// How long a `SIGTERM` waits for the layers to finish (the last `.hlog` interval, the
    /// table) before it ends the process anyway, with [`Builder::finish_on_sigterm`]:
    /// [`DEFAULT_SIGTERM_GRACE`] (3 s) unless set. With several layers, the longest grace
    /// of those in use. A no-op where `finish_on_sigterm` is.
    pub fn sigterm_grace(mut self, grace: Duration) -> Self {
        self.sigterm_grace = Some(grace);
        self
    }

    /// The layer.
    pub fn build(self) -> PicolloLayer {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let (counters, problem) = if self.time_only {
            (Vec::new(), None)
        } else {
            #[cfg(all(feature = "counters", target_os = "linux"))]
            let configured = raw::configure(self.counters.as_ref());
            #[cfg(not(all(feature = "counters", target_os = "linux")))]
            let configured = raw::configure();
            configured
        };
        let ipc = raw::ipc_pair(&counters);
        let cycles = raw::cycles_index(&counters);
        // Calibrate the tick rate now rather than in the first span's close.
        let ns_per_tick = NsPerTick::calibrated();
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            callsites: Callsites::new(),
            spans: LiveSpans::new(counters.len()),
            counters,
            ipc,
            cycles,
            measured_somewhere: AtomicU32::new(0),
            counter_problems: std::sync::Mutex::new(Vec::new()),
            unmatched_exits: AtomicU64::new(0),
            lost_intervals: AtomicU64::new(0),
            finisher: std::sync::Mutex::new(None),
        });
        if let Some(p) = problem {
            shared.warn_once(p);
        }
        let log = self.hlog.and_then(|h| {
            let out = h
                .out
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()?;
            match Handle::new(shared.clone()).hlog(out) {
                Ok(log) => Some((log, h.period)),
                Err(e) => {
                    eprintln!("picollo-tracing: the .hlog could not be started: {e}");
                    None
                }
            }
        });
        let mut shutdown = Registration::default();
        if self.report_at_exit || log.is_some() {
            shutdown.finish(Handle::new(shared.clone()), self.report_at_exit, log);
        }
        if self.finish_on_sigterm {
            let grace = self.sigterm_grace.unwrap_or(DEFAULT_SIGTERM_GRACE);
            if let Err(e) = shutdown.finish_on_sigterm(shared.id, grace) {
                eprintln!("picollo-tracing: SIGTERM will not flush the table and log: {e}");
            }
        }
        PicolloLayer {
            ns_per_tick,
            id: shared.id,
            counters: !shared.counters.is_empty(),
            rings: !self.no_rings,
            shared,
            _shutdown: Box::new(shutdown),
        }
    }
}

/// [`ticks_to_ns`] as a factor kept by the layer: `ticks · factor >> 32`, the same
/// conversion (`ticks_to_ns(2^32)` is the factor itself).
#[derive(Clone, Copy, Debug)]
struct NsPerTick(u64);

impl NsPerTick {
    fn calibrated() -> Self {
        Self(ticks_to_ns(1 << 32))
    }

    /// `ticks` in nanoseconds, as `ticks_to_ns(ticks)`.
    #[inline(always)]
    fn of(self, ticks: u64) -> u64 {
        u64::try_from((u128::from(ticks) * u128::from(self.0)) >> 32).unwrap_or(u64::MAX)
    }
}

impl Default for PicolloLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl PicolloLayer {
    /// The layer with the defaults: counters from `PICOLLO_COUNTERS` (time only when unset),
    /// span rings on.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A handle for reports (the per-phase table, `.hlog` logs, per-span statistics), usable
    /// from any thread while and after the layer runs.
    pub fn handle(&self) -> Handle {
        Handle::new(self.shared.clone())
    }

    /// The counters spans sample, by name (empty: time only).
    pub fn counters(&self) -> Vec<&str> {
        self.shared.counters.iter().map(|c| c.name()).collect()
    }

    /// The live span `id`, for an interval that ends. `None` when the span is gone (or
    /// untracked).
    #[inline(always)]
    fn span(&self, id: &Id) -> Option<LiveSpan<'_>> {
        let span = self.shared.spans.find(id.into_u64());
        if span.is_none() {
            self.shared.lost_intervals.fetch_add(1, Ordering::Relaxed);
        }
        span
    }

    /// Counter slots this thread samples for the layer: its mapping of the thread's counter
    /// slots to the layer's counters is made on first use (which opens the thread's ring
    /// and counters) and after the thread's counters changed.
    #[inline(always)]
    fn counter_slots(&self, t: &mut ThreadSpans) -> usize {
        let map = t.slot_map();
        if map.owner == self.id {
            return map.slots;
        }
        self.map_slots(t, true).slots
    }

    /// Maps the thread's counter slots to the layer's counters by event and, with `warn`,
    /// says once which of them are not measured here, and why.
    #[cold]
    #[inline(never)]
    fn map_slots(&self, t: &mut ThreadSpans, warn: bool) -> SlotMap {
        let shared = &*self.shared;
        let (map, problem) = raw::map_thread_counters(t, shared.id, &shared.counters, warn);
        if let Some(p) = problem {
            shared.warn_once(p);
        }
        shared
            .measured_somewhere
            .fetch_or(map.mask, Ordering::Relaxed);
        t.set_slot_map(map);
        map
    }

    /// Adds `interval` (ending at `end`) to the span's busy time and, when it was sampled,
    /// its counter deltas; saves its frame when a consumer is attached.
    #[inline(always)]
    fn end_interval(&self, t: &mut ThreadSpans, id: &Id, interval: Interval, end: u64) {
        let Some(span) = self.span(id) else {
            return;
        };
        let state = span.state();
        let ticks = end.wrapping_sub(interval.start);
        // One word per interval: the outermost and the nested parts of the busy time.
        if interval.depth == 1 {
            state.outer.fetch_add(ticks, Ordering::Relaxed);
        } else {
            state.nested.fetch_add(ticks, Ordering::Relaxed);
        }
        if self.counters {
            self.add_deltas(t, span, interval);
        }
        if self.rings && t.attached() {
            t.save_frame(state.stats().frame_name(), &interval, end);
        }
    }

    /// Adds an interval's counter deltas to the span's sums; a counter not counted in it
    /// (no samples, another mapping, a group that did not run) is not counted for the span.
    #[inline(never)]
    fn add_deltas(&self, t: &ThreadSpans, span: LiveSpan<'_>, interval: Interval) {
        let state = span.state();
        let map = t.slot_map();
        let mut counted = 0;
        if let Some((start, end)) = t.counters(&interval).filter(|(s, _)| s.len() == map.slots) {
            if map.owner == self.id {
                counted = map.mask;
            }
            let (sums, costs) = (span.sums(), t.read_costs());
            let outer_cycles = match self.shared.cycles {
                Some(c) if interval.depth == 1 => c,
                _ => usize::MAX,
            };
            for (slot, (s, e)) in start.iter().zip(end).enumerate() {
                let c = map.slot_to_counter[slot];
                if c == NO_COUNTER || counted & (1 << c) == 0 {
                    continue;
                }
                match raw::delta(e, s, costs[slot]) {
                    Some(v) => {
                        let c = usize::from(c);
                        sums[c].fetch_add(v, Ordering::Relaxed);
                        if c == outer_cycles {
                            state.outer_cycles.fetch_add(v, Ordering::Relaxed);
                        }
                    }
                    None => counted &= !(1 << c),
                }
            }
        }
        // Bits are only cleared (and NOT_ENTERED with the first interval): a span whose
        // intervals all count the same counters writes the word once.
        if state.counted.load(Ordering::Relaxed) & !counted != 0 {
            state.counted.fetch_and(counted, Ordering::Relaxed);
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for PicolloLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.is_span() {
            self.shared.callsites.register(
                metadata,
                self.shared.counters.len(),
                self.shared.ipc.is_some(),
            );
        }
        // Never `never`: that would turn the callsite off for every other layer too.
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let shared = &*self.shared;
        let stats = match shared.callsites.get(meta) {
            Some(s) => s,
            None => shared
                .callsites
                .register(meta, shared.counters.len(), shared.ipc.is_some()),
        };
        stats.note_seen();
        let created = now();
        let _ = shared
            .spans
            .start(id.into_u64(), stats, created, shared.all_counters_mask());
    }

    #[inline]
    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        raw::with_thread(|t| {
            let attached = self.rings && t.attached();
            if attached && t.depth() == 0 && t.apply_counter_request() {
                // Between spans, with a consumer attached: the moment to switch counters,
                // which the consumer asked for (so no warning about the layer's others).
                self.map_slots(t, false);
            }
            // The slot mapping first: it is made here, on the thread's first span, whether or
            // not a consumer is attached (else an attached consumer would leave the layer's
            // own sums without a mapping, and every span not counted).
            let sample = (self.counters && self.counter_slots(t) > 0) || attached;
            // Counters first, then the clock: reading counters is not timed.
            t.begin(self.id, id.into_u64(), sample);
        });
    }

    #[inline]
    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        // The clock first, then the counters: reading counters is not timed.
        let end = now();
        raw::with_thread(|t| match t.end(self.id, id.into_u64()) {
            Some(interval) => self.end_interval(t, id, interval, end),
            None => {
                self.shared.unmatched_exits.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let end = now();
        let Some(span) = self.shared.spans.find(id.into_u64()) else {
            return;
        };
        let state = span.state();
        let stats = state.stats();
        let (outer, nested) = (
            state.outer.load(Ordering::Relaxed),
            state.nested.load(Ordering::Relaxed),
        );
        let to_ns = self.ns_per_tick;
        let busy = to_ns.of(outer.wrapping_add(nested));
        let wall = to_ns.of(end.wrapping_sub(state.created.load(Ordering::Relaxed)));
        let hists = stats.histograms();
        hists.busy.record(busy);
        hists.wall.record(wall);
        if nested == 0 {
            hists.note_outer(OUTER, busy);
        } else if outer == 0 {
            hists.note_outer(NESTED, 0);
        } else {
            hists.note_outer(MIXED, to_ns.of(outer));
        }
        if self.counters {
            if self.shared.cycles.is_some() {
                let cycles = state.outer_cycles.load(Ordering::Relaxed);
                hists.outer_cycles.fetch_add(cycles, Ordering::Relaxed);
            }
            let (counted, sums) = (state.counted(), span.sums());
            let value =
                |i: usize| (counted & (1 << i) != 0).then(|| sums[i].load(Ordering::Relaxed));
            for (i, h) in hists.counters.iter().enumerate() {
                match value(i) {
                    Some(v) => h.record(v),
                    None => {
                        hists.not_counted[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if let (Some((c, n)), Some(ipc)) = (self.shared.ipc, &hists.ipc_micro) {
                if let (Some(cycles), Some(instructions)) = (value(c), value(n)) {
                    if cycles > 0 {
                        let micro = u128::from(instructions) * 1_000_000 / u128::from(cycles);
                        ipc.record(u64::try_from(micro).unwrap_or(u64::MAX));
                    }
                }
            }
        }
        span.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layer's kept factor converts exactly as `ticks_to_ns` does, over the whole range
    /// of span times (and past it).
    #[test]
    #[cfg_attr(
        miri,
        ignore = "calibrates the span clock against the TSC: no rdtsc under miri"
    )]
    fn kept_factor_converts_as_ticks_to_ns() {
        let to_ns = NsPerTick::calibrated();
        let mut t = 0u64;
        while t < u64::MAX / 3 {
            for v in [t, t + 1, t.wrapping_mul(3) / 2] {
                assert_eq!(to_ns.of(v), ticks_to_ns(v), "{v} ticks");
            }
            t = t * 2 + 7;
        }
        assert_eq!(to_ns.of(u64::MAX), ticks_to_ns(u64::MAX));
    }
}
