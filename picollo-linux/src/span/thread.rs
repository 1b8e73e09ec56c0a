//! The thread's span ring: opened on the first span, its counter groups, attach-time counter
//! requests, the fast "is anyone listening" check, and what happens at thread exit and fork.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use picollo_ring::{
    AtomicU64 as RingWord, CounterInfo, RingOptions, WordArray, MAX_COUNTERS, NAME_BYTES,
    REQUEST_BYTES,
};
use picollo_spans::frame;
use picollo_spans::frame::{span_head, store_counter_samples, NOT_COUNTED};
use picollo_spans::stack::{Ended, OpenStack, SlotMap, StartSamples};
use picollo_spans::SpanName;

use crate::count::Reading;
use crate::event::{split_list, Event, EventSpec, SoftwareEvent};
use crate::session::{CounterSession, OnUnsupported};
use crate::shm::{ShmError, ShmWriter};

use super::config::{config, counters_in_force, set_requested, SpanCounters, RING_PREFIX};
use super::error::SpanError;

// The methods a span layer calls (re-exported with the type by `span::raw`).
mod layer;
pub use layer::Samples;

// ---------------------------------------------------------------------------------------------
// The thread's ring
// ---------------------------------------------------------------------------------------------

pub(crate) struct ThreadRing {
    pub(crate) writer: ShmWriter,
    /// The counter groups, read in order; their counters fill the measured slots in order.
    pub(crate) sessions: Vec<CounterSession>,
    /// Measured counters: the first `measured` counter slots, in session order.
    pub(crate) measured: usize,
    /// Counter slots of each frame.
    pub(crate) slots: usize,
    /// Per measured slot, what reading the counters itself adds to a window between two
    /// samples (see [`ThreadRing::calibrate`]).
    pub(crate) read_cost: [u64; MAX_COUNTERS],
}

/// Back-to-back sample pairs of [`ThreadRing::calibrate`].
const CALIBRATION_PAIRS: usize = 16;

/// Whether `spec` is a clock event (`task-clock`, `cpu-clock`).
pub(crate) fn is_clock_event(spec: &EventSpec) -> bool {
    matches!(
        spec.event,
        Event::Software(SoftwareEvent::TaskClock | SoftwareEvent::CpuClock)
    )
}

/// `EINVAL`, the reason given for a name that is not a counter.
pub(crate) const NOT_A_COUNTER: u32 = libc::EINVAL as u32;

/// Opens `events` as one group, dropping what this machine cannot count; the events that
/// could not be opened are added to `unavailable` with the errno of the failure.
pub(crate) fn open_group(
    events: &[&EventSpec],
    unavailable: &mut Vec<(String, u32)>,
) -> Option<CounterSession> {
    if events.is_empty() {
        return None;
    }
    let mut builder = CounterSession::builder().on_unsupported(OnUnsupported::Drop);
    for e in events {
        builder = builder.event_spec((*e).clone());
    }
    let errno = |e: &crate::PerfError| e.errno().map_or(0, |e| e.unsigned_abs());
    match builder.build() {
        Ok(s) => {
            unavailable.extend(
                s.dropped()
                    .iter()
                    .map(|d| (d.event.to_string(), errno(&d.error))),
            );
            Some(s)
        }
        Err(crate::PerfError::AllEventsDropped(dropped)) => {
            unavailable.extend(
                dropped
                    .iter()
                    .map(|d| (d.event.to_string(), errno(&d.error))),
            );
            None
        }
        Err(e) => {
            let why = errno(&e);
            unavailable.extend(events.iter().map(|s| (s.to_string(), why)));
            None
        }
    }
}

/// Counters opened for this thread, and the header's description of them.
pub(crate) struct OpenedCounters {
    pub(crate) sessions: Vec<CounterSession>,
    /// The counter slots: measured first (in session order), then unavailable ones.
    pub(crate) table: Vec<(String, Option<u32>)>,
    pub(crate) measured: usize,
}

impl OpenedCounters {
    /// Opens `counters` (at most `slots` of them) for the calling thread; `invalid` are
    /// names a consumer asked for that are not events (recorded as unavailable, `EINVAL`).
    pub(crate) fn open(counters: &SpanCounters, invalid: &[&str], slots: usize) -> Self {
        let events: Vec<&EventSpec> = counters.events().iter().take(slots).collect();
        // Clock events (hrtimer-driven, each its own kernel PMU) go in groups of their own: in
        // one group with other software events, the members read 0 much of the time (seen
        // on Linux 6.x with task-clock and page-faults). Everything else is one group, read
        // with one `read()` or RDPMC.
        let (clocks, others): (Vec<&EventSpec>, Vec<&EventSpec>) =
            events.iter().partition(|e| is_clock_event(e));
        let mut unavailable: Vec<(String, u32)> = invalid
            .iter()
            .map(|n| ((*n).to_owned(), NOT_A_COUNTER))
            .collect();
        let mut sessions = Vec::new();
        for c in &clocks {
            sessions.extend(open_group(&[c], &mut unavailable));
        }
        sessions.extend(open_group(&others, &mut unavailable));
        let mut table: Vec<(String, Option<u32>)> = sessions
            .iter()
            .flat_map(|s| s.counters().iter().map(|c| (header_name(c.name()), None)))
            .take(slots)
            .collect();
        let measured = table.len();
        table.extend(
            unavailable
                .iter()
                .map(|(n, e)| (header_name(n), Some(*e)))
                .take(slots - measured),
        );
        Self {
            sessions,
            table,
            measured,
        }
    }

    /// The header's counter table: one entry per slot.
    pub(crate) fn infos(&self, slots: usize) -> Vec<CounterInfo<'_>> {
        let mut infos: Vec<CounterInfo<'_>> = self
            .table
            .iter()
            .map(|(n, errno)| match errno {
                None => CounterInfo::measured(n),
                Some(e) => CounterInfo::unavailable_because(n, *e),
            })
            .collect();
        infos.resize(slots, CounterInfo::unused());
        infos
    }
}

impl ThreadRing {
    pub(crate) fn open() -> Result<Self, ShmError> {
        let cfg = config();
        let counters = counters_in_force();
        let slots = cfg.counter_slots().max(counters.len()).min(MAX_COUNTERS);
        let opened = OpenedCounters::open(&counters, &[], slots);
        let counters = opened.infos(slots);
        let fields = frame::fields(slots);
        let schema = frame::schema(&fields);
        let options = RingOptions::new(cfg.slots())
            .with_clock(picollo_spans::clock::clock_info())
            .with_counters(&counters);
        let writer = ShmWriter::create(&format!("{RING_PREFIX}{}", gettid()), &schema, &options)?;
        Ok(Self {
            writer,
            measured: opened.measured,
            sessions: opened.sessions,
            slots,
            read_cost: [0; MAX_COUNTERS],
        })
        .map(|mut t| {
            t.calibrate();
            t
        })
    }

    /// Applies a consumer's counter request (between spans): closes this thread's counters,
    /// opens the requested ones and publishes the outcome as the ring's counter table.
    #[cold]
    #[inline(never)]
    pub(crate) fn apply_request(&mut self) {
        let mut buf = [0u8; REQUEST_BYTES];
        let Some(request) = self.writer.take_counter_request(&mut buf) else {
            return;
        };
        let seq = request.seq;
        // The request comes from another process: every name is checked here, by the one
        // parser of event lists; names that are not events are recorded as such (EINVAL).
        let (mut counters, mut invalid) = (SpanCounters::new(), Vec::new());
        for name in split_list(request.text) {
            match name.parse::<EventSpec>() {
                Ok(spec) => counters = counters.with_spec(spec),
                Err(_) => invalid.push(name),
            }
        }
        // Close the old counters first: the PMU may not hold both sets.
        self.sessions.clear();
        self.measured = 0;
        let opened = OpenedCounters::open(&counters, &invalid, self.slots);
        if self.writer.set_counters(&opened.infos(self.slots)).is_ok() {
            self.measured = opened.measured;
            self.sessions = opened.sessions;
            self.calibrate();
        } else {
            let _ = self.writer.set_counters(&[]);
        }
        self.writer.ack_counter_request(seq);
        set_requested(counters);
    }

    /// Samples the measured counters into `out[..n]`, in slot order, and returns `n` (the
    /// measured counters). A group whose read fails gives readings with zero times, which
    /// [`Reading::delta_since`] reports as not counted.
    #[inline]
    pub(crate) fn sample(&mut self, out: &mut [Reading; MAX_COUNTERS]) -> usize {
        let mut slots = out.iter_mut();
        let mut n = 0;
        for s in &mut self.sessions {
            let ok = s.read(false).is_ok();
            for c in s.counters() {
                let Some(o) = slots.next() else {
                    return n;
                };
                *o = match c.last_reading() {
                    Some(r) if ok => r,
                    _ => Reading::default(),
                };
                n += 1;
            }
        }
        n.min(self.measured)
    }

    /// Measures what reading the counters adds to a window: the smallest delta of each
    /// counter between two back-to-back samples (of [`CALIBRATION_PAIRS`]). A span's window
    /// holds one such read (the end of the first sample, the start of the second): with
    /// `read()` that is most of a system call, which `task-clock` counts (about a
    /// microsecond) and which would otherwise make a short span's task-clock exceed its busy
    /// time. Span layers subtract it from each delta; frames carry the raw samples. The
    /// smallest pair is taken so that nothing is subtracted that a window does not hold.
    #[cold]
    fn calibrate(&mut self) {
        let mut best = [u64::MAX; MAX_COUNTERS];
        let (mut a, mut b) = (
            [Reading::default(); MAX_COUNTERS],
            [Reading::default(); MAX_COUNTERS],
        );
        for _ in 0..CALIBRATION_PAIRS {
            let n = self.sample(&mut a).min(self.sample(&mut b));
            for i in 0..n {
                if let Some(d) = b[i].delta_since(&a[i]).value() {
                    best[i] = best[i].min(d);
                }
            }
        }
        self.read_cost = best.map(|v| if v == u64::MAX { 0 } else { v });
    }

    /// Points this thread's fast check at the ring's `attached` word.
    pub(crate) fn publish(&self) {
        let word = self.writer.attached_word();
        let _ = ATTACHED.try_with(|a| a.set(word));
    }
}

impl Drop for ThreadRing {
    fn drop(&mut self) {
        // The mapping goes away with the writer: stop the fast check from reading it.
        let _ = ATTACHED.try_with(|a| a.set(&raw const NEVER));
    }
}

/// Cuts a counter name to the header's 24 bytes at a character boundary.
pub(crate) fn header_name(name: &str) -> String {
    let mut end = name.len().min(NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end]
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

pub(crate) fn gettid() -> i64 {
    // SAFETY: `gettid` takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

/// The thread's ring: not opened yet, open, or failed to open (once: the thread's spans are
/// then not recorded, and cost nothing more).
pub(crate) enum RingState {
    Unopened,
    Open(Box<ThreadRing>),
    Failed(ShmError),
}

impl RingState {
    /// The ring, opened on first use.
    #[inline]
    pub(crate) fn get(&mut self) -> Option<&mut ThreadRing> {
        if let Self::Open(t) = self {
            return Some(t);
        }
        self.open_slow()
    }

    #[cold]
    pub(crate) fn open_slow(&mut self) -> Option<&mut ThreadRing> {
        if matches!(self, Self::Unopened) {
            *self = match ThreadRing::open() {
                Ok(t) => {
                    t.publish();
                    Self::Open(Box::new(t))
                }
                Err(e) => {
                    let _ = ATTACHED.try_with(|a| a.set(&raw const NEVER));
                    report_ring_failure(&e);
                    Self::Failed(e)
                }
            };
        }
        match self {
            Self::Open(t) => Some(t),
            _ => None,
        }
    }
}

/// Everything of spans on one thread, in one thread-local: the ring and its
/// counters, the intervals open (of `span!` guards and span layers alike, so a frame's depth
/// counts both), and a span layer's mapping of the counter slots. A span layer borrows it
/// once per hook through [`super::raw::with_thread`].
pub struct ThreadSpans {
    pub(crate) ring: RingState,
    pub(crate) open: OpenStack<[Reading; MAX_COUNTERS]>,
    /// The counter samples at the end of the interval that ended last.
    pub(crate) ends: [Reading; MAX_COUNTERS],
    pub(crate) slot_map: SlotMap,
}

impl ThreadSpans {
    const fn new() -> Self {
        Self {
            ring: RingState::Unopened,
            open: OpenStack::new(),
            ends: [Reading {
                value: 0,
                time_enabled: 0,
                time_running: 0,
            }; MAX_COUNTERS],
            slot_map: SlotMap::NONE,
        }
    }
}

impl ThreadSpans {
    /// Begins a `span!` guard's interval, a scoped one (see [`OpenStack`]), when
    /// [`listening`] said yes: a consumer is attached, or the ring is not open yet (then it
    /// opens, and its spans begin once a consumer attaches). Between spans, applies a
    /// consumer's pending counter request first; samples the counters when the ring
    /// measures any, then reads the clock. Returns the start and the depth, or `(0, 0)` when
    /// nobody is attached.
    #[inline(always)]
    pub(crate) fn begin_guard(&mut self) -> (u64, u64) {
        let t = match &mut self.ring {
            // `listening` read this ring's attached word: a consumer is attached.
            RingState::Open(t) => t,
            ring => match ring.open_slow() {
                Some(t) if t.writer.is_attached() => t,
                _ => return (0, 0),
            },
        };
        if self.open.depth() == 0 && t.writer.has_counter_request() {
            t.apply_request();
            self.slot_map = SlotMap::NONE;
        }
        let depth = self.open.push_scoped();
        // Only a sampled guard takes a ticket: the time-only path stays as it was.
        let mut scope = Scope::new(depth, 0);
        if t.measured > 0 {
            let (samples, ticket) = self.open.scoped_samples(depth);
            scope = Scope::new(depth, ticket);
            t.sample(samples);
        }
        (super::now(), scope.0)
    }

    /// Ends a `span!` guard's interval (its `start` and `scope` from
    /// [`ThreadSpans::begin_guard`]) whose clock reading at the end the caller took: samples
    /// the counters when the ring measures any, and saves the frame `name`. A guard that
    /// ended after its outer guard (out of order) may have lost its start samples to a later
    /// span: its frame then says its counters were not counted.
    #[inline(always)]
    pub(crate) fn end_guard(&mut self, name: super::SpanName, start: u64, scope: Scope, end: u64) {
        let RingState::Open(t) = &mut self.ring else {
            self.open.pop_scoped();
            return;
        };
        let sampled = t.measured > 0;
        let n = if sampled { t.sample(&mut self.ends) } else { 0 };
        self.open.pop_scoped();
        // Unpacked and checked after the end sample: outside the counter window.
        let depth = scope.depth();
        if sampled && self.open.scoped_samples_of(depth, scope.ticket()).is_none() {
            self.save_frame_uncounted(name, depth, start, end);
            return;
        }
        let interval = Interval::new(
            start,
            depth,
            if sampled {
                StartSamples::Scoped
            } else {
                StartSamples::None
            },
            n,
        );
        self.save_frame(name, &interval, end);
    }
}

/// An interval that ended ([`ThreadSpans::end`](super::raw)): 16 bytes, so the hot path moves no
/// samples (they stay in the thread's state: `ThreadSpans::counters`) and the interval
/// stays in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The span clock at its start.
    pub start: u64,
    /// Its nesting depth on the thread (1 for the outermost).
    pub depth: u32,
    starts: StartSamples,
    /// Counter slots sampled at its end (0 when its start was not sampled).
    pub(crate) n: u8,
}

impl Interval {
    /// An interval from its start, depth, start samples and end samples (`n` slots).
    #[inline(always)]
    pub(crate) fn new(start: u64, depth: u32, starts: StartSamples, n: usize) -> Self {
        Self {
            start,
            depth,
            starts,
            // At most MAX_COUNTERS (8).
            n: n as u8,
        }
    }

    pub(crate) fn ended(&self) -> Ended {
        Ended {
            start: self.start,
            depth: self.depth,
            starts: self.starts,
        }
    }
}

impl ThreadSpans {
    /// Saves the frame of an interval whose start samples are lost (a `span!` guard ended
    /// out of order): its times, and every measured counter slot marked
    /// [`NOT_COUNTED`] rather than another span's values. Returns whether a frame was saved.
    #[cold]
    #[inline(never)]
    pub(crate) fn save_frame_uncounted(
        &mut self,
        name: SpanName,
        depth: u32,
        start: u64,
        end: u64,
    ) -> bool {
        let RingState::Open(t) = &mut self.ring else {
            return false;
        };
        let k = t.measured.min(t.slots);
        let head = span_head(name, depth, start, end);
        const NONE: [u64; MAX_COUNTERS] = [NOT_COUNTED; MAX_COUNTERS];
        let slots = t.slots;
        let saved = t.writer.save_with(|data| {
            head.store_into(data);
            store_counter_samples(data, slots, &NONE[..k], &NONE[..k]);
        });
        if t.writer.is_disabled() {
            t.publish();
        }
        saved
    }
}

/// A `span!` guard's place on the thread: its depth (low 32 bits, 0 for an inactive guard)
/// and the ticket of its start samples (high 32 bits; see `OpenStack::push_scoped`),
/// packed in one word that the guard keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scope(pub(crate) u64);

impl Scope {
    #[inline(always)]
    pub(crate) fn new(depth: u32, ticket: u32) -> Self {
        Self(u64::from(depth) | u64::from(ticket) << 32)
    }

    /// The nesting depth (1 for the outermost), 0 for an inactive guard.
    #[inline(always)]
    pub(crate) fn depth(self) -> u32 {
        self.0 as u32
    }

    /// The ticket of the guard's start samples.
    #[inline(always)]
    pub(crate) fn ticket(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// Threads whose span ring could not be created.
pub(crate) static RING_FAILURES: core::sync::atomic::AtomicU64 =
    core::sync::atomic::AtomicU64::new(0);
/// The first such failure.
pub(crate) static FIRST_RING_FAILURE: OnceLock<ShmError> = OnceLock::new();

/// Counts a thread whose ring could not be created and, the first time in this process, says
/// so on stderr (once: a program with a thousand threads gets one line, not a thousand).
#[cold]
pub(crate) fn report_ring_failure(e: &ShmError) {
    RING_FAILURES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    if FIRST_RING_FAILURE.set(e.clone()).is_ok() {
        eprintln!(
            "picollo: thread {} could not create its span ring: {e}; its spans are not \
             recorded (reported once; see picollo_linux::span::ring_failures)",
            gettid()
        );
    }
}

/// How many threads of this process could not create their span ring (their spans cost
/// nothing and are not recorded), and the first such error. The first failure is also
/// printed on stderr, once per process.
pub fn ring_failures() -> (u64, Option<ShmError>) {
    (
        RING_FAILURES.load(core::sync::atomic::Ordering::Relaxed),
        FIRST_RING_FAILURE.get().cloned(),
    )
}

/// What the fast check reads before the thread's ring is open: not 0, so the first span takes
/// the slow path, which opens the ring.
pub(crate) static UNOPENED: RingWord = RingWord::new(1);
/// What the fast check reads when this thread has no ring (it failed to open, the thread is
/// exiting, or the ring belongs to the parent of a forked child): always 0.
pub(crate) static NEVER: RingWord = RingWord::new(0);

thread_local! {
    pub(crate) static THREAD: RefCell<ThreadSpans> = const { RefCell::new(ThreadSpans::new()) };
    /// This thread's ring's `attached` word, or `UNOPENED` / `NEVER`. A `const`, drop-free
    /// thread-local: reading it is one `%fs`-relative load.
    pub(crate) static ATTACHED: Cell<*const RingWord> = const { Cell::new(&raw const UNOPENED) };
}

/// Whether this thread's ring has a consumer (or is not open yet): the whole cost of a span
/// when nobody listens.
#[inline(always)]
pub(crate) fn listening() -> bool {
    ATTACHED
        .try_with(|a| {
            let word = a.get();
            // SAFETY: `word` points to `UNOPENED` or `NEVER` (statics), or to the `attached`
            // word of this thread's open ring, whose mapping lives until the `ThreadRing`
            // drops, and its `Drop` points `ATTACHED` back to `NEVER` first. Only this thread
            // reads or writes its `ATTACHED`, so the pointer never outlives its target.
            unsafe { (*word).load(core::sync::atomic::Ordering::Relaxed) != 0 }
        })
        .unwrap_or(false)
}

/// Opens this thread's span ring now (spans do it on first use) and returns its segment path,
/// so a consumer can attach before the first span.
pub fn open_thread_ring() -> Result<String, SpanError> {
    with_thread_state(ThreadSpans::ring_path)
}

/// Runs `f` with this thread's span state: [`SpanError::RingBusy`] when it is borrowed
/// already (a call from inside a span hook), [`SpanError::ThreadExiting`] once the thread's
/// thread-locals are gone.
fn with_thread_state<T>(
    f: impl FnOnce(&mut ThreadSpans) -> Result<T, SpanError>,
) -> Result<T, SpanError> {
    THREAD
        .try_with(|cell| {
            let mut st = cell.try_borrow_mut().map_err(|_| SpanError::RingBusy)?;
            f(&mut st)
        })
        .unwrap_or(Err(SpanError::ThreadExiting))
}

/// Closes this thread's span ring (the kernel frees its segment once no reader holds it); the
/// next span opens a new one.
/// Call it in a child after `fork` to give the thread a ring of its own.
pub fn reset_thread() {
    let _ = THREAD.try_with(|cell| {
        if let Ok(mut st) = cell.try_borrow_mut() {
            st.ring = RingState::Unopened;
            st.slot_map = SlotMap::NONE;
            let _ = ATTACHED.try_with(|a| a.set(&raw const UNOPENED));
        }
    });
}

/// What this thread's ring samples: the measured counter names (in slot order), or the error
/// that kept the ring from opening.
pub fn thread_counters() -> Result<Vec<String>, SpanError> {
    measured_counters(|c| c.name().to_owned())
}

/// What this thread's ring samples, typed: the event of each measured counter slot (in slot
/// order), or the error that kept the ring from opening. What a span layer matches its
/// configured [`SpanCounters`](super::SpanCounters) against.
pub fn thread_counter_events() -> Result<Vec<Event>, SpanError> {
    measured_counters(|c| c.event().clone())
}

/// `what` of each measured counter of this thread's ring, in slot order (opening the ring
/// first), or the error that kept the ring from opening.
fn measured_counters<T>(what: impl Fn(&crate::session::Counter) -> T) -> Result<Vec<T>, SpanError> {
    with_thread_state(|st| st.measured_counters(what))
}

impl ThreadSpans {
    /// The ring's segment path (opening it first), or why it could not open.
    pub(crate) fn ring_path(&mut self) -> Result<String, SpanError> {
        self.ring.get();
        match &self.ring {
            RingState::Open(t) => Ok(t.writer.segment().to_owned()),
            RingState::Failed(e) => Err(SpanError::Ring(e.clone())),
            // `get` leaves the ring open or failed, never unopened.
            RingState::Unopened => unreachable!("RingState::get opens the ring"),
        }
    }

    /// `what` of each measured counter of the ring, in slot order (opening it first).
    pub(crate) fn measured_counters<T>(
        &mut self,
        what: impl Fn(&crate::session::Counter) -> T,
    ) -> Result<Vec<T>, SpanError> {
        self.ring_path()?;
        Ok(match &self.ring {
            RingState::Open(t) => t
                .sessions
                .iter()
                .flat_map(|s| s.counters().iter().map(&what))
                .collect(),
            _ => Vec::new(),
        })
    }
}
