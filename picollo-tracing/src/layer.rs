//! The layer: span hooks, per-span state and the per-thread stack of open intervals.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use picollo_alloc::span::clock::{now, ticks_to_ns};
use picollo_core::ring::MAX_COUNTERS;
use tracing_core::span::{Attributes, Id};
use tracing_core::subscriber::Interest;
use tracing_core::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::callsite::Callsites;
#[cfg(all(feature = "counters", target_os = "linux"))]
use crate::counters::SpanCounters;
use crate::counters::{self as raw, Reading};
use crate::report::{self, Handle};
use crate::shared::Shared;
use crate::slots::{ThreadCounters, NO_COUNTER};
use crate::spans::{Span, SpanTable};

/// An enter that has not exited yet, on this thread.
#[derive(Clone, Copy)]
struct Open {
    layer: u64,
    id: u64,
    start: u64,
    /// Counter samples were taken at the start (they are in `Local::samples` at the same
    /// index).
    sampled: bool,
}

/// The per-thread state of every layer.
struct Local {
    stack: Vec<Open>,
    /// `samples[i]`: the counter samples at the start of `stack[i]`, when it has them.
    samples: Vec<[Reading; MAX_COUNTERS]>,
    counters: ThreadCounters,
    /// The thread's counters were switched at a consumer's request: the next mapping does
    /// not warn about the layer's counters that the consumer did not ask for.
    switched: bool,
}

impl Local {
    const fn new() -> Self {
        Self {
            stack: Vec::new(),
            samples: Vec::new(),
            switched: false,
            counters: ThreadCounters {
                layer: 0,
                slots: 0,
                slot_to_counter: [NO_COUNTER; MAX_COUNTERS],
                mask: 0,
            },
        }
    }

    /// Removes the open interval of span `id` of `layer` (the innermost one: the top of the
    /// stack unless spans exit out of order); returns it and its index in the stack. Its
    /// start samples stay at `samples[index]` until [`Local::forget_samples`].
    #[inline(always)]
    fn take_open(&mut self, layer: u64, id: u64) -> Option<(Open, usize)> {
        let top = self.stack.len().checked_sub(1)?;
        let o = self.stack[top];
        if o.id == id && o.layer == layer {
            self.stack.pop();
            return Some((o, top));
        }
        let pos = self
            .stack
            .iter()
            .rposition(|o| o.id == id && o.layer == layer)?;
        Some((self.stack.remove(pos), pos))
    }

    /// After an exit out of order (`index` below the top): moves the samples of the later
    /// enters down with them.
    #[cold]
    fn forget_samples(&mut self, index: usize) {
        let above = (self.stack.len() + 1).min(self.samples.len());
        if index + 1 < above {
            self.samples[index..above].rotate_left(1);
        }
    }

    /// This thread's counter mapping for `shared`, made on first use (which opens the
    /// thread's span ring and counters).
    fn counters_for(&mut self, shared: &Shared) -> ThreadCounters {
        if self.counters.layer != shared.id {
            let (tc, problem) =
                raw::map_thread_counters(shared.id, &shared.counters, !self.switched);
            if let Some(p) = problem {
                shared.warn_once(p);
            }
            shared
                .measured_somewhere
                .fetch_or(tc.mask, Ordering::Relaxed);
            self.counters = tc;
            self.switched = false;
        }
        self.counters
    }

    /// Applies the counters a consumer asked for at attach time (`picollo attach PID -e
    /// page-faults`), if a request is pending: called when no span is open on this thread,
    /// so no open interval has start samples of the old counters. The layer's counters are
    /// then mapped anew to the thread's slots.
    #[inline(never)]
    fn apply_counter_request(&mut self) {
        if raw::apply_counter_request() {
            self.counters.layer = 0;
            self.switched = true;
        }
    }
}

/// A frame's depth field.
fn frame_depth(depth: usize) -> u32 {
    u32::try_from(depth).unwrap_or(u32::MAX)
}

thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(Local::new()) };
}

/// A `tracing_subscriber::Layer` that times spans into Picollo histograms per callsite (name
/// and target): busy time, wall time and, optionally, counter deltas over the busy time; and
/// saves each busy interval as a frame into this thread's shared-memory span ring. See the
/// [crate docs](crate).
pub struct PicolloLayer {
    shared: Arc<Shared>,
    counters: bool,
    rings: bool,
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
    /// `main` or `std::process::exit`).
    pub fn report_at_exit(mut self, on: bool) -> Self {
        self.report_at_exit = on;
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
        // Calibrate the tick rate now rather than in the first span's close.
        let _ = ticks_to_ns(1);
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            callsites: Callsites::new(),
            spans: SpanTable::new(counters.len()),
            counters,
            ipc,
            measured_somewhere: AtomicU32::new(0),
            counter_problems: std::sync::Mutex::new(Vec::new()),
            unmatched_exits: AtomicU64::new(0),
            lost_intervals: AtomicU64::new(0),
        });
        if let Some(p) = problem {
            shared.warn_once(p);
        }
        let layer = PicolloLayer {
            counters: !shared.counters.is_empty(),
            rings: !self.no_rings,
            shared,
        };
        if self.report_at_exit {
            report::print_at_exit(layer.handle());
        }
        layer
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
    fn span(&self, id: &Id) -> Option<Span<'_>> {
        let span = self.shared.spans.find(id.into_u64());
        if span.is_none() {
            self.shared.lost_intervals.fetch_add(1, Ordering::Relaxed);
        }
        span
    }

    /// Ends an interval whose start has counter samples (at `samples[index]`): samples the
    /// end, adds the deltas.
    #[inline(never)]
    fn end_sampled(&self, l: &mut Local, id: &Id, open: Open, index: usize, end: u64) {
        let Some(&start) = l.samples.get(index) else {
            return;
        };
        let mut end_samples = [Reading::default(); MAX_COUNTERS];
        let n = raw::sample_thread_counters(&mut end_samples);
        let samples = Some((&start[..n], &end_samples[..n]));
        self.end_interval(l, id, open, index + 1, end, samples);
    }

    /// Adds the interval `open.start..end` to the span's busy time and, with `samples` (the
    /// thread's counters at both ends), its counter deltas; saves the interval's frame when a
    /// consumer is attached.
    #[inline(always)]
    fn end_interval(
        &self,
        l: &Local,
        id: &Id,
        open: Open,
        depth: usize,
        end: u64,
        samples: Option<(&[Reading], &[Reading])>,
    ) {
        let tc = l.counters;
        let Some(span) = self.span(id) else {
            return;
        };
        let state = span.state();
        state
            .busy
            .fetch_add(end.wrapping_sub(open.start), Ordering::Relaxed);
        if self.counters {
            // Without samples of this thread's counters (or with another thread's mapping),
            // this interval counted nothing, so neither does the span.
            let mut counted = 0;
            if let Some((start, end)) = samples.filter(|(s, _)| s.len() == tc.slots) {
                counted = if tc.layer == self.shared.id {
                    tc.mask
                } else {
                    0
                };
                for (slot, (s, e)) in start.iter().zip(end).enumerate() {
                    let c = tc.slot_to_counter[slot];
                    if c == NO_COUNTER || counted & (1 << c) == 0 {
                        continue;
                    }
                    match raw::delta(e, s) {
                        Some(v) => {
                            span.sums()[usize::from(c)].fetch_add(v, Ordering::Relaxed);
                        }
                        None => counted &= !(1 << c),
                    }
                }
            }
            state.counted.fetch_and(counted, Ordering::Relaxed);
            state.entered.store(true, Ordering::Relaxed);
        }
        if self.rings && raw::thread_listening() {
            let name = state.stats().frame_name;
            let counters = samples.filter(|(s, _)| !s.is_empty());
            raw::save_frame(name, frame_depth(depth), open.start, end, counters);
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
        let created = now();
        let _ = shared
            .spans
            .start(id.into_u64(), stats, created, shared.all_counters_mask());
    }

    #[inline]
    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        let _ = LOCAL.try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return;
            };
            let l = &mut *l;
            let index = l.stack.len();
            let listening = self.rings && raw::thread_listening();
            if listening && index == 0 {
                // Between spans, with a consumer attached: the moment to switch counters.
                l.apply_counter_request();
            }
            let sample = (self.counters && l.counters_for(&self.shared).slots > 0) || listening;
            if sample {
                if l.samples.len() <= index {
                    l.samples
                        .resize(index + 1, [Reading::default(); MAX_COUNTERS]);
                }
                raw::sample_thread_counters(&mut l.samples[index]);
            }
            // Counters first, then the clock: reading counters is not timed.
            l.stack.push(Open {
                layer: self.shared.id,
                id: id.into_u64(),
                start: now(),
                sampled: sample,
            });
        });
    }

    #[inline]
    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        // The clock first, then the counters: reading counters is not timed.
        let end = now();
        let _ = LOCAL.try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return;
            };
            let l = &mut *l;
            let Some((open, index)) = l.take_open(self.shared.id, id.into_u64()) else {
                self.shared.unmatched_exits.fetch_add(1, Ordering::Relaxed);
                return;
            };
            if open.sampled {
                self.end_sampled(l, id, open, index, end);
            } else {
                // Time only, or no counters on this thread.
                self.end_interval(l, id, open, index + 1, end, None);
            }
            if index < l.stack.len() {
                l.forget_samples(index);
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
        let busy = ticks_to_ns(state.busy.load(Ordering::Relaxed));
        let wall = ticks_to_ns(end.wrapping_sub(state.created.load(Ordering::Relaxed)));
        let hists = stats.histograms();
        hists.busy.record(busy);
        hists.wall.record(wall);
        if self.counters {
            let counted = if state.entered.load(Ordering::Relaxed) {
                state.counted.load(Ordering::Relaxed)
            } else {
                0
            };
            let value = |i: usize| {
                (counted & (1 << i) != 0).then(|| span.sums()[i].load(Ordering::Relaxed))
            };
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
