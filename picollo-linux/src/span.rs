//! Spans with counters (the per-phase table of spans): span begin and end sample a timestamp and the configured
//! counters, and the span's frame goes into this thread's shared-memory ring. Another
//! process attaches ([`SpanConsumer`]) and turns the frames into a per-phase table:
//! N, time, %, cycles, IPC p5/p50/p95, misses per 1000 instructions.
//!
//! # Writing
//!
//! ```
//! use picollo_linux::span;
//!
//! fn parse(input: &str) -> usize {
//!     let _s = span!("parse"); // ends when `_s` drops
//!     input.split(',').count()
//! }
//! # assert_eq!(parse("a,b"), 2);
//! let g = span::Span::enter_str("dynamic name"); // names known only at run time
//! g.end();
//! ```
//!
//! - Each thread has its own ring, `/picollo-<pid>-span-<tid>`, and its own counters, both
//!   opened by the thread's first span (or [`open_thread_ring`]).
//! - With no consumer attached, a span is a thread-local access, one relaxed load and a
//!   branch at the start, and a branch at the end: no clock or counter is read.
//! - Attached, a span reads the counters and the clock at the start, the clock and the
//!   counters at the end (so reading counters is not timed), and saves one frame:
//!   `name` (24 bytes), `kind` (span), `time` (an interval), `value` (the nesting depth, 1
//!   for the outermost span) and `counters` (an interval of each counter slot). The frame
//!   layout is [`picollo_alloc::span::frame`]'s, the one codec of every writer and reader.
//! - [`counter!`](crate::counter!) saves a user counter event into the same ring: its name,
//!   `kind` counter event, the time (start = end) and its `value`. Consumers show counter
//!   events in a table of their own next to the phase table.
//! - The clock is [`picollo_alloc::span::clock`]'s: the TSC on x86 and x86_64 (the consumer
//!   calibrates it against `CLOCK_MONOTONIC` from a reference pair in the ring header),
//!   `cntvct_el0` on aarch64 (its rate is in the header), `CLOCK_MONOTONIC` nanoseconds
//!   elsewhere.
//!
//! # Counters
//!
//! `PICOLLO_COUNTERS=cycles,instructions,LLC-load-misses` selects counters by perf's names
//! (raw `r00c0` and `pmu/…/` events work too; see [`crate::event`]); [`configure`] does the
//! same from code, before the first span. Each thread opens them as one group
//! ([`CounterSession`]) and reads them with RDPMC when the kernel allows it, else with one
//! group `read()`; clock events (`task-clock`, `cpu-clock`) get a group each, because grouped
//! with other software events their members read 0 much of the time. With no counters (or
//! none that open) spans carry time only.
//!
//! Counters this machine cannot count (no hardware PMU in a VM, `perf_event_paranoid`) stay
//! in the ring header marked unavailable, with the errno the writer got: the consumer's
//! table says so instead of printing zeros. Up to 8 counters; names longer than 24 bytes are
//! cut in the header.
//!
//! # Counters chosen at attach time
//!
//! Each ring keeps [`SpanConfig::counter_slots`] counter slots (4 unless configured, or as
//! many as configured counters), used or not. A consumer asks a running writer for other
//! counters with [`SpanConsumer::request_counters`] (`picollo attach PID -e cycles,…`): the
//! request goes into the ring header's request area, and the writer thread, at its next
//! *outermost* span begin (never while spans are open, whose start samples came from the
//! old counters), closes its counters, opens the requested ones for itself, and publishes
//! the outcome as the ring's new counter table: each counter measured, or unavailable with
//! the errno (`ENOENT`: no such event here, no hardware PMU; `EACCES`: perf_event_paranoid;
//! `EINVAL`: not a counter name). Threads that open their ring later use the requested
//! counters too. A thread that never begins another span never applies the request (the
//! consumer reports it as pending). Checking for a request costs the attached path one
//! relaxed load per span begin; nothing when no consumer is attached.
//!
//! Counter values are raw counts: if the group is multiplexed (more events than the PMU has
//! counters) deltas undercount. Keep to what the PMU holds at once.
//!
//! # fork
//!
//! A child process inherits the forking thread's ring handle, which turns itself off at the
//! child's first attached span ([`crate::shm`]); call [`reset_thread`] in the child to give
//! that thread a ring of its own.

use core::fmt;
use core::marker::PhantomData;
use std::cell::{Cell, RefCell};
use std::sync::{Mutex, OnceLock};

use picollo_alloc::span::frame::{self, event_head, span_head, store_counter_samples};
use picollo_core::ring::{
    AtomicU64 as RingWord, CounterInfo, RingOptions, WordArray, MAX_COUNTERS, NAME_BYTES,
    REQUEST_BYTES,
};

use crate::event::{Event, EventSpec, ParseEventError, SoftwareEvent};
use crate::session::{CounterSession, OnUnsupported};
use crate::shm::{ShmError, ShmWriter};

mod live;

pub use live::{CounterRequests, RequestOutcome, SpanConsumer};
pub use picollo_alloc::span::{
    unavailable_reason, EventRow, EventStats, PhaseCounter, PhaseRow, SpanAggregator, SpanDecoder,
    SpanStats, SpanTable, COUNTERS_ENV,
};

pub mod raw;

pub use picollo_alloc::span::clock::{clock_hz, clock_kind, monotonic_ns, now};
pub use picollo_alloc::span::{FrameKind, SpanName, SPAN_FRAME};

/// Span rings are named `span-<tid>`.
pub const RING_PREFIX: &str = "span-";
/// Slots of a thread's span ring unless configured (16,384 frames, 1.9 MiB with 4 counter
/// slots).
pub const DEFAULT_SLOTS: u32 = 1 << 14;
/// Counter slots of a span ring unless configured (or more counters are configured): room
/// for counters chosen at attach time.
pub const DEFAULT_COUNTER_SLOTS: usize = 4;

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// What spans sample and how large their rings are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanConfig {
    counters: Vec<String>,
    slots: u32,
    counter_slots: usize,
}

impl Default for SpanConfig {
    fn default() -> Self {
        Self {
            counters: Vec::new(),
            slots: DEFAULT_SLOTS,
            counter_slots: DEFAULT_COUNTER_SLOTS,
        }
    }
}

impl SpanConfig {
    /// Time only, [`DEFAULT_SLOTS`] slots.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counters named in [`COUNTERS_ENV`] (none when unset).
    pub fn from_env() -> Self {
        let counters = std::env::var(COUNTERS_ENV)
            .map(|v| Self::parse_counters(&v))
            .unwrap_or_default();
        Self {
            counters,
            ..Self::default()
        }
    }

    /// Splits `cycles, instructions,LLC-load-misses` into names (commas inside `pmu/…/`
    /// events are kept: `cpu/event=0x3c,umask=0x00/`).
    pub fn parse_counters(list: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut in_pmu = false;
        for c in list.chars() {
            match c {
                '/' => {
                    in_pmu = !in_pmu;
                    cur.push(c);
                }
                ',' if !in_pmu => {
                    if !cur.trim().is_empty() {
                        out.push(cur.trim().to_owned());
                    }
                    cur.clear();
                }
                _ => cur.push(c),
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur.trim().to_owned());
        }
        out
    }

    /// With these counters (typed).
    pub fn with_span_counters(self, counters: &SpanCounters) -> Self {
        self.with_counters(counters.names())
    }

    /// With these counters (perf names).
    pub fn with_counters<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.counters = names.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self
    }

    /// With `slots` slots per thread ring (rounded up to a power of two, at least 2).
    pub fn with_slots(mut self, slots: u32) -> Self {
        self.slots = slots.max(2).checked_next_power_of_two().unwrap_or(1 << 31);
        self
    }

    /// The counter names.
    pub fn counters(&self) -> &[String] {
        &self.counters
    }

    /// Slots per thread ring.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// With `n` counter slots per frame (at most [`MAX_COUNTERS`]; 0 makes frames time-only
    /// and refuses counters chosen at attach time). Each slot costs two words per frame.
    pub fn with_counter_slots(mut self, n: usize) -> Self {
        self.counter_slots = n.min(MAX_COUNTERS);
        self
    }

    /// Counter slots per frame: the configured number, or more if more counters are
    /// configured (at most [`MAX_COUNTERS`]).
    pub fn counter_slots(&self) -> usize {
        self.counter_slots
            .max(self.counters.len())
            .min(MAX_COUNTERS)
    }
}

/// The counters spans sample, as typed perf events: what a span layer's builder takes
/// (`picollo_tracing::Builder::counters`), so that the layer knows each counter by its event
/// rather than matching names back.
///
/// ```
/// use picollo_linux::event::{HardwareEvent, SoftwareEvent};
/// use picollo_linux::span::SpanCounters;
///
/// let typed = SpanCounters::new()
///     .with(HardwareEvent::Cycles)
///     .with(SoftwareEvent::PageFaults);
/// let parsed = SpanCounters::parse("cycles, page-faults").unwrap();
/// assert_eq!(typed, parsed);
/// assert_eq!(typed.names(), ["cycles", "page-faults"]);
/// assert!(SpanCounters::parse("cycles,no-such-counter").is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanCounters {
    events: Vec<EventSpec>,
}

impl SpanCounters {
    /// No counters: time only.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `event` too (counted as the session's exclusions say).
    pub fn with(self, event: impl Into<Event>) -> Self {
        self.with_spec(EventSpec::from(event.into()))
    }

    /// With `spec` too (an event with its own modifiers, `page-faults:u`).
    pub fn with_spec(mut self, spec: EventSpec) -> Self {
        self.events.push(spec);
        self
    }

    /// The counters of a comma-separated list of perf names (`cycles,instructions`, raw
    /// `r00c0`, `pmu/…/` events, modifiers: the names [`COUNTERS_ENV`] takes); the first
    /// name that is not an event is the error.
    pub fn parse(list: &str) -> Result<Self, ParseEventError> {
        let events = SpanConfig::parse_counters(list)
            .iter()
            .map(|n| n.parse::<EventSpec>())
            .collect::<Result<_, _>>()?;
        Ok(Self { events })
    }

    /// The counters named in [`COUNTERS_ENV`] (none when unset).
    pub fn from_env() -> Result<Self, ParseEventError> {
        std::env::var(COUNTERS_ENV).map_or_else(|_| Ok(Self::new()), |v| Self::parse(&v))
    }

    /// The events, in order.
    pub fn events(&self) -> &[EventSpec] {
        &self.events
    }

    /// Their perf names, in order (as the span rings' headers list them).
    pub fn names(&self) -> Vec<String> {
        self.events.iter().map(ToString::to_string).collect()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are none (time only).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

static CONFIG: OnceLock<SpanConfig> = OnceLock::new();

/// Sets the process's span configuration; only before the first span opens a ring (else the
/// configuration given is handed back as the error, and [`config`] says what is in force).
/// Without it, [`SpanConfig::from_env`].
pub fn configure(config: SpanConfig) -> Result<(), SpanConfig> {
    CONFIG.set(config)?;
    Ok(())
}

/// The configuration in force.
pub fn config() -> &'static SpanConfig {
    CONFIG.get_or_init(SpanConfig::from_env)
}

/// An empty [`SpanAggregator`] whose table notes describe this machine's PMU (what
/// `SpanAggregator::new` cannot know off Linux): use it for tables read on this machine.
pub fn new_aggregator() -> SpanAggregator {
    let mut agg = SpanAggregator::new();
    agg.set_pmu_description(crate::Capabilities::detect().pmu.to_string());
    agg
}

// ---------------------------------------------------------------------------------------------
// The thread's ring
// ---------------------------------------------------------------------------------------------

/// Nesting depth up to which spans keep their own start samples (deeper spans share the
/// last slot, so their counter deltas are wrong, but never out of bounds).
const MAX_DEPTH: usize = 64;

/// The counters asked for at attach time (the latest request a thread applied), for the
/// threads that open their ring later.
static REQUESTED: Mutex<Option<Vec<String>>> = Mutex::new(None);

/// The counters a ring opened now samples: the latest request, else the configuration.
fn wanted_counters() -> Vec<String> {
    let requested = REQUESTED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    requested.unwrap_or_else(|| config().counters.clone())
}

struct ThreadRing {
    writer: ShmWriter,
    /// The counter groups, read in order; their counters fill the measured slots in order.
    sessions: Vec<CounterSession>,
    /// Measured counters: the first `measured` counter slots, in session order.
    measured: usize,
    /// Counter slots of each frame.
    slots: usize,
    depth: u32,
    /// The counter samples at the start of the open spans, by depth.
    starts: [[u64; MAX_COUNTERS]; MAX_DEPTH],
}

/// Whether `name` is a clock event (`task-clock`, `cpu-clock`).
fn is_clock_event(name: &str) -> bool {
    matches!(
        name.parse::<Event>(),
        Ok(Event::Software(
            SoftwareEvent::TaskClock | SoftwareEvent::CpuClock
        ))
    )
}

/// `EINVAL`, the reason given for a name that is not a counter.
const NOT_A_COUNTER: u32 = libc::EINVAL as u32;

/// Opens `names` as one group, dropping what this machine cannot count; the names that could
/// not be opened are added to `unavailable` with the errno of the failure.
fn open_group(names: &[&str], unavailable: &mut Vec<(String, u32)>) -> Option<CounterSession> {
    let mut builder = CounterSession::builder().on_unsupported(OnUnsupported::Drop);
    let mut any = false;
    for n in names {
        match builder.clone().event_name(n) {
            Ok(b) => {
                builder = b;
                any = true;
            }
            Err(_) => unavailable.push(((*n).to_owned(), NOT_A_COUNTER)),
        }
    }
    if !any {
        return None;
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
            unavailable.extend(names.iter().map(|s| ((*s).to_owned(), why)));
            None
        }
    }
}

/// Counters opened for this thread, and the header's description of them.
struct OpenedCounters {
    sessions: Vec<CounterSession>,
    /// The counter slots: measured first (in session order), then unavailable ones.
    table: Vec<(String, Option<u32>)>,
    measured: usize,
}

impl OpenedCounters {
    /// Opens `names` (at most `slots` of them) for the calling thread.
    fn open(names: &[String], slots: usize) -> Self {
        let names: Vec<&str> = names.iter().map(String::as_str).take(slots).collect();
        // Clock events (hrtimer-driven, each its own kernel PMU) go in groups of their own: in
        // one group with other software events, the members read 0 much of the time (seen
        // on Linux 6.x with task-clock and page-faults). Everything else is one group, read
        // with one `read()` or RDPMC.
        let (clocks, others): (Vec<&str>, Vec<&str>) =
            names.iter().partition(|n| is_clock_event(n));
        let mut unavailable: Vec<(String, u32)> = Vec::new();
        let mut sessions = Vec::new();
        for c in &clocks {
            sessions.extend(open_group(&[c], &mut unavailable));
        }
        if !others.is_empty() {
            sessions.extend(open_group(&others, &mut unavailable));
        }
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
    fn infos(&self, slots: usize) -> Vec<CounterInfo<'_>> {
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
    fn open() -> Result<Self, ShmError> {
        let cfg = config();
        let names = wanted_counters();
        let slots = cfg.counter_slots().max(names.len()).min(MAX_COUNTERS);
        let opened = OpenedCounters::open(&names, slots);
        let counters = opened.infos(slots);
        let fields = frame::fields(slots);
        let schema = frame::schema(&fields);
        let options = RingOptions::new(cfg.slots)
            .with_clock(picollo_alloc::span::clock::clock_info())
            .with_counters(&counters);
        let writer = ShmWriter::create(&format!("{RING_PREFIX}{}", gettid()), &schema, &options)?;
        Ok(Self {
            writer,
            measured: opened.measured,
            sessions: opened.sessions,
            slots,
            depth: 0,
            starts: [[0; MAX_COUNTERS]; MAX_DEPTH],
        })
    }

    /// Applies a consumer's counter request (between spans): closes this thread's counters,
    /// opens the requested ones and publishes the outcome as the ring's counter table.
    #[cold]
    #[inline(never)]
    fn apply_request(&mut self) {
        let mut buf = [0u8; REQUEST_BYTES];
        let Some(request) = self.writer.take_counter_request(&mut buf) else {
            return;
        };
        let seq = request.seq;
        let names = SpanConfig::parse_counters(request.text);
        // Close the old counters first: the PMU may not hold both sets.
        self.sessions.clear();
        self.measured = 0;
        let opened = OpenedCounters::open(&names, self.slots);
        if self.writer.set_counters(&opened.infos(self.slots)).is_ok() {
            self.measured = opened.measured;
            self.sessions = opened.sessions;
        } else {
            let _ = self.writer.set_counters(&[]);
        }
        self.writer.ack_counter_request(seq);
        *REQUESTED.lock().unwrap_or_else(|p| p.into_inner()) = Some(names);
    }

    /// Samples the measured counters into `out[..measured]`, group by group (zeros for a
    /// group whose read fails).
    #[inline]
    fn sample(sessions: &mut [CounterSession], out: &mut [u64; MAX_COUNTERS]) {
        let mut slots = out.iter_mut();
        for s in sessions {
            let ok = s.read(false).is_ok();
            for c in s.counters() {
                if let Some(o) = slots.next() {
                    *o = if ok {
                        c.last_reading().map_or(0, |r| r.value)
                    } else {
                        0
                    };
                }
            }
        }
    }

    /// Points this thread's fast check at the ring's `attached` word.
    fn publish(&self) {
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
fn header_name(name: &str) -> String {
    let mut end = name.len().min(NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end]
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn gettid() -> i64 {
    // SAFETY: `gettid` takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

enum ThreadState {
    Unopened,
    Open(Box<ThreadRing>),
    Failed(ShmError),
}

impl ThreadState {
    #[inline]
    fn ring(&mut self) -> Option<&mut ThreadRing> {
        if let Self::Open(t) = self {
            return Some(t);
        }
        self.open_slow()
    }

    #[cold]
    fn open_slow(&mut self) -> Option<&mut ThreadRing> {
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

/// Threads whose span ring could not be created.
static RING_FAILURES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
/// The first such failure.
static FIRST_RING_FAILURE: OnceLock<ShmError> = OnceLock::new();

/// Counts a thread whose ring could not be created and, the first time in this process, says
/// so on stderr (once: a program with a thousand threads gets one line, not a thousand).
#[cold]
fn report_ring_failure(e: &ShmError) {
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
static UNOPENED: RingWord = RingWord::new(1);
/// What the fast check reads when this thread has no ring (it failed to open, the thread is
/// exiting, or the ring belongs to the parent of a forked child): always 0.
static NEVER: RingWord = RingWord::new(0);

thread_local! {
    static THREAD: RefCell<ThreadState> = const { RefCell::new(ThreadState::Unopened) };
    /// This thread's ring's `attached` word, or `UNOPENED` / `NEVER`. A `const`, drop-free
    /// thread-local: reading it is one `%fs`-relative load.
    static ATTACHED: Cell<*const RingWord> = const { Cell::new(&raw const UNOPENED) };
}

/// Whether this thread's ring has a consumer (or is not open yet): the whole cost of a span
/// when nobody listens.
#[inline(always)]
fn listening() -> bool {
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
pub fn open_thread_ring() -> Result<String, ShmError> {
    THREAD
        .try_with(|cell| {
            let mut st = cell
                .try_borrow_mut()
                .map_err(|_| ShmError::BadName("span ring in use".to_owned()))?;
            match st.ring() {
                Some(t) => Ok(t.writer.segment().to_owned()),
                None => match &*st {
                    ThreadState::Failed(e) => Err(e.clone()),
                    _ => Err(ShmError::BadName("span ring".to_owned())),
                },
            }
        })
        .unwrap_or_else(|_| Err(ShmError::BadName("thread is exiting".to_owned())))
}

/// Closes this thread's span ring (the kernel frees its segment once no reader holds it); the
/// next span opens a new one.
/// Call it in a child after `fork` to give the thread a ring of its own.
pub fn reset_thread() {
    let _ = THREAD.try_with(|cell| {
        if let Ok(mut st) = cell.try_borrow_mut() {
            *st = ThreadState::Unopened;
            let _ = ATTACHED.try_with(|a| a.set(&raw const UNOPENED));
        }
    });
}

/// What this thread's ring samples: the measured counter names (in slot order), or the error
/// that kept the ring from opening.
pub fn thread_counters() -> Result<Vec<String>, ShmError> {
    open_thread_ring()?;
    THREAD
        .try_with(|cell| {
            let st = cell.borrow();
            match &*st {
                ThreadState::Open(t) => t
                    .sessions
                    .iter()
                    .flat_map(|s| s.counters().iter().map(|c| c.name().to_owned()))
                    .collect(),
                _ => Vec::new(),
            }
        })
        .map_err(|_| ShmError::BadName("thread is exiting".to_owned()))
}

/// What this thread's ring samples, typed: the event of each measured counter slot (in slot
/// order), or the error that kept the ring from opening. What a span layer matches its
/// configured [`SpanCounters`] against.
pub fn thread_counter_events() -> Result<Vec<Event>, ShmError> {
    open_thread_ring()?;
    THREAD
        .try_with(|cell| {
            let st = cell.borrow();
            match &*st {
                ThreadState::Open(t) => t
                    .sessions
                    .iter()
                    .flat_map(|s| s.counters().iter().map(|c| c.event().clone()))
                    .collect(),
                _ => Vec::new(),
            }
        })
        .map_err(|_| ShmError::BadName("thread is exiting".to_owned()))
}

/// A span guard: ends (and saves its frame) when dropped. Not `Send`: it belongs to the
/// thread's ring. Create it with [`span!`](crate::span!), [`Span::enter`] or
/// [`Span::enter_str`].
#[must_use = "a span ends when dropped: bind it with `let _s = ...`, not `let _ = ...`"]
pub struct Span {
    name: SpanName,
    start: u64,
    /// 0 when inactive; else the nesting depth (1 for the outermost span).
    depth: u32,
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Span")
            .field("name", &self.name)
            .field("active", &self.is_active())
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl Span {
    /// Begins a span. Inactive (nothing sampled, nothing saved) unless a consumer is attached
    /// to this thread's ring; then this is a thread-local load, a load and a branch.
    #[inline(always)]
    pub fn enter(name: SpanName) -> Span {
        // `begin` returns its values rather than writing into the guard, so the guard can
        // stay in registers on the path where nobody listens.
        let (start, depth) = if listening() { Self::begin() } else { (0, 0) };
        Span {
            name,
            start,
            depth,
            _not_send: PhantomData,
        }
    }

    /// Begins a span whose name is known only at run time (cut to 24 bytes).
    #[inline]
    pub fn enter_str(name: &str) -> Span {
        Self::enter(SpanName::new(name))
    }

    /// The attached (or not yet opened) path of `enter`: the start time and the depth, or
    /// `(0, 0)` for an inactive span.
    #[inline(never)]
    fn begin() -> (u64, u32) {
        THREAD
            .try_with(|cell| {
                let Ok(mut st) = cell.try_borrow_mut() else {
                    return (0, 0);
                };
                let Some(t) = st.ring() else {
                    return (0, 0);
                };
                if !t.writer.is_attached() {
                    return (0, 0);
                }
                if t.depth == 0 && t.writer.has_counter_request() {
                    t.apply_request();
                }
                t.depth = t.depth.saturating_add(1);
                let slot = (t.depth as usize - 1).min(MAX_DEPTH - 1);
                if t.measured > 0 {
                    if let Some(start) = t.starts.get_mut(slot) {
                        ThreadRing::sample(&mut t.sessions, start);
                    }
                }
                (now(), t.depth)
            })
            .unwrap_or((0, 0))
    }

    /// Whether this span samples and saves (a consumer was attached when it began).
    pub fn is_active(&self) -> bool {
        self.depth != 0
    }

    /// Ends the span now.
    #[inline]
    pub fn end(mut self) {
        self.finish();
    }

    #[inline(always)]
    fn finish(&mut self) {
        if self.depth != 0 {
            self.finish_active();
        }
    }

    #[inline(never)]
    fn finish_active(&mut self) {
        let end = now();
        let depth = core::mem::replace(&mut self.depth, 0);
        let _ = THREAD.try_with(|cell| {
            let Ok(mut st) = cell.try_borrow_mut() else {
                return;
            };
            let ThreadState::Open(t) = &mut *st else {
                return;
            };
            t.depth = t.depth.saturating_sub(1);
            let k = t.measured.min(t.slots);
            let head = span_head(self.name, depth, self.start, end);
            if k == 0 {
                t.writer.save_with(|data| head.store_into(data));
            } else {
                let mut ends = [0u64; MAX_COUNTERS];
                ThreadRing::sample(&mut t.sessions, &mut ends);
                let slot = (depth as usize).saturating_sub(1).min(MAX_DEPTH - 1);
                let starts = t.starts.get(slot).map_or(&[][..], |s| &s[..k]);
                let slots = t.slots;
                // Only the measured slots are stored: the header marks the others unused
                // or unavailable, so their stale words are never read as counts.
                t.writer.save_with(|data| {
                    head.store_into(data);
                    store_counter_samples(data, slots, starts, &ends[..k]);
                });
            }
            if t.writer.is_disabled() {
                // A child after fork: its writer turned itself off; stop taking this path.
                t.publish();
            }
        });
    }
}

impl Drop for Span {
    #[inline]
    fn drop(&mut self) {
        self.finish();
    }
}

/// Begins a span that ends when the returned guard drops: `let _s = span!("parse");`.
///
/// A string literal is encoded at compile time; any other `&str` expression at run time.
#[macro_export]
macro_rules! span {
    ($name:literal) => {
        $crate::span::Span::enter(const { $crate::span::SpanName::new($name) })
    };
    ($name:expr) => {
        $crate::span::Span::enter_str($name)
    };
}

/// Saves a user counter event (a name and a value: a queue length, bytes in flight, a
/// cache's size) into this thread's span ring, next to its spans: a frame of kind
/// [`FrameKind::CounterEvent`], the time at both ends of the interval, `value`, and 0 in the
/// measured counter slots (an event reads no counters). A no-op (one thread-local load and a branch) when
/// no consumer is attached. Use [`counter!`](crate::counter!).
#[inline(always)]
pub fn counter_event(name: SpanName, value: i64) {
    if listening() {
        save_counter_event(name, value);
    }
}

#[inline(never)]
fn save_counter_event(name: SpanName, value: i64) {
    let _ = THREAD.try_with(|cell| {
        let Ok(mut st) = cell.try_borrow_mut() else {
            return;
        };
        let Some(t) = st.ring() else {
            return;
        };
        let at = now();
        let head = event_head(name, at, value);
        let (k, slots) = (t.measured.min(t.slots), t.slots);
        // No counter samples: the measured slots read 0 (not a previous frame's values).
        const ZEROS: [u64; MAX_COUNTERS] = [0; MAX_COUNTERS];
        t.writer.save_with(|data| {
            head.store_into(data);
            if k > 0 {
                store_counter_samples(data, slots, &ZEROS[..k], &ZEROS[..k]);
            }
        });
        if t.writer.is_disabled() {
            t.publish();
        }
    });
}

/// Saves a user counter event, `counter!("queue-depth", len)`: a name (a string literal is
/// encoded at compile time, any other `&str` at run time) and an `i64` value (anything that
/// converts with `as i64`). Consumers (`picollo attach --spans`, `top`, `convert --spans`)
/// show each name's count, last value, minimum, mean, maximum and percentiles next to the
/// phase table; CSV rows have `kind` 2 (a counter event) and the value in `value`.
///
/// ```
/// let queue: Vec<u32> = vec![1, 2, 3];
/// picollo_linux::counter!("queue-depth", queue.len());
/// ```
#[macro_export]
macro_rules! counter {
    ($name:literal, $value:expr) => {
        $crate::span::counter_event(
            const { $crate::span::SpanName::new($name) },
            ($value) as i64,
        )
    };
    ($name:expr, $value:expr) => {
        $crate::span::counter_event($crate::span::SpanName::new($name), ($value) as i64)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
