//! The layer: span hooks, per-span state and the per-thread stack of open intervals.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use picollo_core::ring::MAX_COUNTERS;
use picollo_linux::count::Reading;
use picollo_linux::event::{Event, HardwareEvent};
use picollo_linux::session::CounterSession;
use picollo_linux::span::{self, raw, SpanConfig};
use tracing_core::span::{Attributes, Id};
use tracing_core::subscriber::Interest;
use tracing_core::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::callsite::{CallsiteStats, Callsites};
use crate::report::{self, Handle};

/// Entries of the per-thread span cache (direct-mapped by span id).
const CACHE_SLOTS: usize = 64;
/// `slot_to_counter` value of a ring slot the layer does not count.
const NO_COUNTER: u8 = u8::MAX;

/// One counter the layer asked for.
#[derive(Clone, Debug)]
pub(crate) struct CounterSpec {
    /// The name as configured.
    pub(crate) name: String,
    /// The event, if the name parses.
    pub(crate) event: Option<Event>,
}

/// The state a layer shares with its [`Handle`]s.
pub(crate) struct Shared {
    /// Unique per layer (never 0): tags the per-thread state of this layer.
    pub(crate) id: u64,
    pub(crate) callsites: Callsites,
    /// The counters spans sample (empty: time only).
    pub(crate) counters: Vec<CounterSpec>,
    /// Indices of `cycles` and `instructions` in `counters`, when both are there.
    pub(crate) ipc: Option<(usize, usize)>,
    /// Bit `i` set: counter `i` was measured on at least one thread.
    pub(crate) measured_somewhere: AtomicU32,
    /// Why counters are missing, for the one-time messages and the table's notes: each
    /// distinct problem once.
    pub(crate) counter_problems: std::sync::Mutex<Vec<String>>,
    /// Exits that matched no enter of this layer on the thread (an enter before the layer
    /// was installed, or a span exited on another thread than it was entered on).
    pub(crate) unmatched_exits: AtomicU64,
    /// Intervals whose span was gone (closed) when they ended.
    pub(crate) lost_intervals: AtomicU64,
}

impl Shared {
    /// Prints `problem` on stderr, once per layer (never through `tracing`: this is the
    /// tracing subscriber). Rare: at most once per thread, when its counters open.
    fn warn_once(&self, problem: String) {
        let mut seen = self
            .counter_problems
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !seen.contains(&problem) {
            eprintln!("picollo-tracing: {problem}; span times are still recorded");
            seen.push(problem);
        }
    }

    fn all_counters_mask(&self) -> u32 {
        (1u32 << self.counters.len()) - 1
    }
}

/// The state of one span: created in `on_new_span`, kept in the span's extensions (and in
/// threads' span caches), read out in `on_close`.
pub(crate) struct SpanState {
    stats: *const CallsiteStats,
    /// Span clock at `on_new_span`.
    created: u64,
    /// Sum of the span's enter → exit intervals, span clock ticks.
    busy: AtomicU64,
    /// Set by `on_close`: a thread's cache entry naming this state is stale from then on.
    closed: AtomicBool,
    /// Set when an interval ended (counters mode).
    entered: AtomicBool,
    /// Bit `i`: counter `i` was counted in every interval so far.
    counted: AtomicU32,
    /// Per counter, the sum of its deltas over the intervals.
    sums: [AtomicU64; MAX_COUNTERS],
}

// SAFETY: `stats` points to statistics owned by the layer's `Callsites` (behind an `Arc`
// that lives until the layer drops) and is only dereferenced inside the layer's hooks, while
// the layer lives; `CallsiteStats` is `Sync`. Every other field is an atomic.
unsafe impl Send for SpanState {}
// SAFETY: as above.
unsafe impl Sync for SpanState {}

impl SpanState {
    /// The span's callsite statistics.
    ///
    /// # Safety
    /// Only while the layer that created this state lives (inside its hooks).
    unsafe fn stats(&self) -> &CallsiteStats {
        // SAFETY: the caller guarantees the layer, which owns the statistics, is alive.
        unsafe { &*self.stats }
    }
}

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

struct CacheEntry {
    layer: u64,
    id: u64,
    state: Arc<SpanState>,
}

/// Which layer counters this thread's ring slots hold.
#[derive(Clone, Copy)]
struct ThreadCounters {
    /// The layer this mapping was made for (0: none yet).
    layer: u64,
    /// Ring slots (counters the thread samples).
    slots: usize,
    slot_to_counter: [u8; MAX_COUNTERS],
    /// Bit `i`: layer counter `i` is one of this thread's slots.
    mask: u32,
}

/// The per-thread state of every layer.
struct Local {
    stack: Vec<Open>,
    /// `samples[i]`: the counter samples at the start of `stack[i]`, when it has them.
    samples: Vec<[Reading; MAX_COUNTERS]>,
    cache: [Option<CacheEntry>; CACHE_SLOTS],
    counters: ThreadCounters,
}

impl Local {
    const fn new() -> Self {
        Self {
            stack: Vec::new(),
            samples: Vec::new(),
            cache: [const { None }; CACHE_SLOTS],
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

    #[inline(always)]
    fn cache_slot(id: u64) -> usize {
        // Registry ids are slab indices plus one: the low bits vary between live spans.
        (id as usize) % CACHE_SLOTS
    }

    /// The state of span `id` of layer `layer`, if this thread has it cached and the span
    /// has not closed.
    #[inline(always)]
    fn cached(&self, layer: u64, id: u64) -> Option<&Arc<SpanState>> {
        match &self.cache[Self::cache_slot(id)] {
            Some(e)
                if e.id == id && e.layer == layer && !e.state.closed.load(Ordering::Acquire) =>
            {
                Some(&e.state)
            }
            _ => None,
        }
    }

    fn cache_insert(&mut self, layer: u64, id: u64, state: Arc<SpanState>) {
        self.cache[Self::cache_slot(id)] = Some(CacheEntry { layer, id, state });
    }

    /// Takes span `id` of `layer` out of the cache, if there.
    fn cache_take(&mut self, layer: u64, id: u64) -> Option<Arc<SpanState>> {
        let slot = &mut self.cache[Self::cache_slot(id)];
        if slot
            .as_ref()
            .is_some_and(|e| e.id == id && e.layer == layer)
        {
            return slot.take().map(|e| e.state);
        }
        None
    }

    /// This thread's counter mapping for `shared`, made on first use (which opens the
    /// thread's span ring and counters).
    fn counters_for(&mut self, shared: &Shared) -> ThreadCounters {
        if self.counters.layer != shared.id {
            self.counters = map_thread_counters(shared);
        }
        self.counters
    }
}

/// Maps this thread's ring slots to the layer's counters, and reports counters that are
/// not measured here.
#[cold]
fn map_thread_counters(shared: &Shared) -> ThreadCounters {
    let mut tc = ThreadCounters {
        layer: shared.id,
        slots: 0,
        slot_to_counter: [NO_COUNTER; MAX_COUNTERS],
        mask: 0,
    };
    match span::thread_counters() {
        Ok(names) => {
            tc.slots = names.len().min(MAX_COUNTERS);
            for (slot, name) in names.iter().take(MAX_COUNTERS).enumerate() {
                let event = name.parse::<Event>().ok();
                let found = shared
                    .counters
                    .iter()
                    .position(|c| c.name == *name || (c.event.is_some() && c.event == event));
                if let Some(i) = found {
                    tc.slot_to_counter[slot] = i as u8;
                    tc.mask |= 1 << i;
                }
            }
            if tc.mask != shared.all_counters_mask() {
                let missing: Vec<&str> = shared
                    .counters
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| tc.mask & (1 << i) == 0)
                    .map(|(_, c)| c.name.as_str())
                    .collect();
                shared.warn_once(format!(
                    "counters not counted here: {} ({}); their columns read n/a",
                    missing.join(", "),
                    why_not_counted(missing.first().copied().unwrap_or_default())
                ));
            }
        }
        Err(e) => {
            tc.slots = 0;
            shared.warn_once(format!(
                "this thread's counters and span ring could not be opened ({e}); its spans are \
                 not counted"
            ));
        }
    }
    shared
        .measured_somewhere
        .fetch_or(tc.mask, Ordering::Relaxed);
    tc
}

/// Why `name` does not count on this thread: the error of opening it alone (which says
/// what to do about it), or the PMU's state.
#[cold]
fn why_not_counted(name: &str) -> String {
    let opened = CounterSession::builder()
        .event_name(name)
        .and_then(|b| b.build());
    match opened {
        Err(e) => e.to_string(),
        Ok(_) => format!(
            "it opens alone but not in the group; {}",
            picollo_linux::Capabilities::detect().pmu
        ),
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
    counters: Option<Vec<String>>,
    time_only: bool,
    no_rings: bool,
    report_at_exit: bool,
}

impl Builder {
    /// Counters to sample at span boundaries, by perf's names (`cycles`, `instructions`,
    /// `LLC-load-misses`, `page-faults`, raw `r00c0`, …; at most 8). They are the
    /// process's span counters ([`picollo_linux::span::configure`]), shared with the span
    /// rings; when something configured them already (an earlier layer, a span, or
    /// `PICOLLO_COUNTERS` read by one), the counters in force are used and a message says so.
    /// Without this call: the counters of `PICOLLO_COUNTERS`, if set.
    pub fn counters<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.counters = Some(names.into_iter().map(|s| s.as_ref().to_owned()).collect());
        self.time_only = false;
        self
    }

    /// Time only: no counters, whatever `PICOLLO_COUNTERS` says.
    pub fn time_only(mut self) -> Self {
        self.time_only = true;
        self.counters = None;
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
        let mut problem = None;
        let names: Vec<String> = if self.time_only {
            Vec::new()
        } else {
            if let Some(wanted) = &self.counters {
                let wanted = wanted.clone();
                if let Err(cfg) = span::configure(SpanConfig::from_env().with_counters(&wanted)) {
                    let in_force = span::config().counters();
                    if in_force != cfg.counters() {
                        problem = Some(format!(
                            "span counters were configured before this layer as {in_force:?}; \
                             counting those instead of {wanted:?}"
                        ));
                    }
                }
            }
            span::config().counters().to_vec()
        };
        if names.len() > MAX_COUNTERS {
            problem = Some(format!(
                "at most {MAX_COUNTERS} counters; counting the first {MAX_COUNTERS} of {names:?}"
            ));
        }
        let counters: Vec<CounterSpec> = names
            .into_iter()
            .take(MAX_COUNTERS)
            .map(|name| CounterSpec {
                event: name.parse::<Event>().ok(),
                name,
            })
            .collect();
        let find = |e: HardwareEvent| {
            counters
                .iter()
                .position(|c| c.event == Some(Event::Hardware(e)))
        };
        let ipc = find(HardwareEvent::Cycles).zip(find(HardwareEvent::Instructions));
        // Calibrate the tick rate now rather than in the first span's close.
        let _ = report::ticks_to_ns(1);
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            callsites: Callsites::new(),
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
        self.shared
            .counters
            .iter()
            .map(|c| c.name.as_str())
            .collect()
    }

    /// The state of span `id` for an exit on this thread: from the thread's cache, else from
    /// the span's extensions (then cached). `None` when the span is gone.
    #[inline(always)]
    fn state<'l, S>(&self, l: &'l mut Local, id: &Id, ctx: &Context<'_, S>) -> Option<&'l SpanState>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let (layer, raw_id) = (self.shared.id, id.into_u64());
        if l.cached(layer, raw_id).is_none() && self.state_slow(l, id, ctx).is_none() {
            self.shared.lost_intervals.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        l.cached(layer, raw_id).map(|s| &**s)
    }

    /// Ends an interval whose start has counter samples (at `samples[index]`): samples the
    /// end, adds the deltas.
    #[inline(never)]
    fn end_sampled<S>(
        &self,
        l: &mut Local,
        id: &Id,
        ctx: &Context<'_, S>,
        open: Open,
        index: usize,
        end: u64,
    ) where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let Some(&start) = l.samples.get(index) else {
            return;
        };
        let mut end_samples = [Reading::default(); MAX_COUNTERS];
        let n = raw::sample_thread_counters(&mut end_samples);
        let samples = Some((&start[..n], &end_samples[..n]));
        self.end_interval(l, id, ctx, open, index + 1, end, samples);
    }

    /// Adds the interval `open.start..end` to the span's busy time and, with `samples` (the
    /// thread's counters at both ends), its counter deltas; saves the interval's frame when a
    /// consumer is attached.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn end_interval<S>(
        &self,
        l: &mut Local,
        id: &Id,
        ctx: &Context<'_, S>,
        open: Open,
        depth: usize,
        end: u64,
        samples: Option<(&[Reading], &[Reading])>,
    ) where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let tc = l.counters;
        let Some(state) = self.state(l, id, ctx) else {
            return;
        };
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
                    match e.delta_since(s).value() {
                        Some(v) => {
                            state.sums[usize::from(c)].fetch_add(v, Ordering::Relaxed);
                        }
                        None => counted &= !(1 << c),
                    }
                }
            }
            state.counted.fetch_and(counted, Ordering::Relaxed);
            state.entered.store(true, Ordering::Relaxed);
        }
        if self.rings && raw::thread_listening() {
            // SAFETY: inside a hook of the layer that owns the statistics.
            let name = unsafe { state.stats() }.frame_name;
            let counters = samples.filter(|(s, _)| !s.is_empty());
            raw::save_frame(name, frame_depth(depth), open.start, end, counters);
        }
    }

    #[cold]
    #[inline(never)]
    fn state_slow<S>(&self, local: &mut Local, id: &Id, ctx: &Context<'_, S>) -> Option<()>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let span = ctx.span(id)?;
        let state = span.extensions().get::<Arc<SpanState>>()?.clone();
        if state.closed.load(Ordering::Acquire) {
            return None;
        }
        local.cache_insert(self.shared.id, id.into_u64(), state);
        Some(())
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

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let stats = match self.shared.callsites.get(meta) {
            Some(s) => s,
            None => self.shared.callsites.register(
                meta,
                self.shared.counters.len(),
                self.shared.ipc.is_some(),
            ),
        };
        let state = Arc::new(SpanState {
            stats: stats as *const CallsiteStats,
            created: span::now(),
            busy: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            entered: AtomicBool::new(false),
            counted: AtomicU32::new(self.shared.all_counters_mask()),
            sums: [const { AtomicU64::new(0) }; MAX_COUNTERS],
        });
        let Some(span) = ctx.span(id) else {
            return;
        };
        span.extensions_mut().insert(state.clone());
        let _ = LOCAL.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                l.cache_insert(self.shared.id, id.into_u64(), state);
            }
        });
    }

    #[inline]
    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        let _ = LOCAL.try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return;
            };
            let l = &mut *l;
            let index = l.stack.len();
            let sample = (self.counters && l.counters_for(&self.shared).slots > 0)
                || (self.rings && raw::thread_listening());
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
                start: span::now(),
                sampled: sample,
            });
        });
    }

    #[inline]
    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        // The clock first, then the counters: reading counters is not timed.
        let end = span::now();
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
                self.end_sampled(l, id, &ctx, open, index, end);
            } else {
                // Time only, or no counters on this thread.
                self.end_interval(l, id, &ctx, open, index + 1, end, None);
            }
            if index < l.stack.len() {
                l.forget_samples(index);
            }
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let end = span::now();
        // The span's state: from this thread's cache when it has it (a span closed where it
        // was created or last exited, the common case), else from the span's extensions.
        let cached = LOCAL
            .try_with(|l| {
                l.try_borrow_mut()
                    .ok()
                    .and_then(|mut l| l.cache_take(self.shared.id, id.into_u64()))
            })
            .ok()
            .flatten();
        let state = match cached {
            Some(s) => s,
            None => {
                let Some(span) = ctx.span(&id) else {
                    return;
                };
                let Some(state) = span.extensions().get::<Arc<SpanState>>().cloned() else {
                    return;
                };
                state
            }
        };
        state.closed.store(true, Ordering::Release);
        // SAFETY: inside a hook of the layer that owns the statistics.
        let stats = unsafe { state.stats() };
        let busy = report::ticks_to_ns(state.busy.load(Ordering::Relaxed));
        let wall = report::ticks_to_ns(end.wrapping_sub(state.created));
        let hists = stats.histograms();
        hists.busy.record(busy);
        hists.wall.record(wall);
        if self.counters {
            let counted = if state.entered.load(Ordering::Relaxed) {
                state.counted.load(Ordering::Relaxed)
            } else {
                0
            };
            let value =
                |i: usize| (counted & (1 << i) != 0).then(|| state.sums[i].load(Ordering::Relaxed));
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
    }
}
