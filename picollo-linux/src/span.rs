//! Spans with counters (seed 004): span begin and end sample a timestamp and the configured
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
//!   `name` (24 bytes), `depth` (nesting, 1 for the outermost span), `time` (an interval) and
//!   `counters` (an interval of every measured counter).
//! - The clock is the TSC on x86_64 (the consumer calibrates it against `CLOCK_MONOTONIC`
//!   from a reference pair in the ring header), `CLOCK_MONOTONIC` nanoseconds elsewhere.
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
//! in the ring header marked unavailable: the consumer's table says so instead of printing
//! zeros. Up to 8 counters; names longer than 24 bytes are cut in the header.
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
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use picollo_alloc::heap::{self, HeapHistogram};
use picollo_core::ring::{
    AtomicU64 as RingWord, ClockInfo, ClockKind, CounterInfo, CounterStatus, Drained, Field,
    FieldKind, Label, RingOptions, Schema, MAX_COUNTERS, NAME_BYTES,
};
use picollo_core::{Layout, ReadExt, Window};

use crate::caps::Capabilities;
use crate::event::{Event, SoftwareEvent};
use crate::session::{CounterSession, OnUnsupported};
use crate::shm::{list_rings, ShmError, ShmReader, ShmWriter};

pub mod raw;

/// The environment variable with the counters spans sample, by perf's names, comma-separated.
pub const COUNTERS_ENV: &str = "PICOLLO_COUNTERS";
/// The frame name of span rings.
pub const SPAN_FRAME: &str = "span";
/// Span rings are named `span-<tid>`.
pub const RING_PREFIX: &str = "span-";
/// Slots of a thread's span ring unless configured (16,384 frames, 1.5 MiB with 8 counters).
pub const DEFAULT_SLOTS: u32 = 1 << 14;

/// Payload words before the counters: name (3), depth, time start, time end.
const FIXED_WORDS: usize = 6;

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// What spans sample and how large their rings are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanConfig {
    counters: Vec<String>,
    slots: u32,
}

impl Default for SpanConfig {
    fn default() -> Self {
        Self {
            counters: Vec::new(),
            slots: DEFAULT_SLOTS,
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

// ---------------------------------------------------------------------------------------------
// Clocks
// ---------------------------------------------------------------------------------------------

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let s = u64::try_from(ts.tv_sec).unwrap_or(0);
    let ns = u64::try_from(ts.tv_nsec).unwrap_or(0);
    s.saturating_mul(1_000_000_000).saturating_add(ns)
}

/// The span clock: the TSC on x86_64, `CLOCK_MONOTONIC` nanoseconds elsewhere.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        picollo_core::source::Rdtsc::new().read()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// The ring header's description of the span clock, with a reference pair for calibration.
fn clock_info() -> ClockInfo {
    #[cfg(target_arch = "x86_64")]
    {
        let a = now();
        let ns = monotonic_ns();
        let b = now();
        ClockInfo {
            kind: ClockKind::Tsc,
            hz: 0,
            ref_ticks: a / 2 + b / 2,
            ref_ns: ns,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        ClockInfo::nanoseconds(ClockKind::MonotonicNs)
    }
}

/// Ticks per second of a ring's clock: `hz` if the header says, else (a TSC) calibrated from
/// the header's reference pair against this process's clocks now (same machine). `None`
/// when neither works (less than a millisecond since the reference).
pub fn clock_hz(clock: &ClockInfo) -> Option<f64> {
    if clock.hz != 0 {
        return Some(clock.hz as f64);
    }
    if clock.kind == ClockKind::Tsc && clock.ref_ns != 0 {
        let ns = monotonic_ns().checked_sub(clock.ref_ns)?;
        let ticks = now().checked_sub(clock.ref_ticks)?;
        if ns >= 1_000_000 {
            return Some(ticks as f64 * 1e9 / ns as f64);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// The thread's ring
// ---------------------------------------------------------------------------------------------

/// A span name: up to 24 bytes, encoded once (at compile time with [`span!`](crate::span!)).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanName {
    words: [u64; 3],
}

impl SpanName {
    /// The name `s`, cut to 24 bytes at a character boundary.
    pub const fn new(s: &str) -> Self {
        Self {
            words: Label::new(s).to_words(),
        }
    }

    /// The name as a label.
    pub fn label(&self) -> Label {
        Label::from_words(self.words)
    }
}

impl fmt::Debug for SpanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.label(), f)
    }
}

/// Nesting depth up to which spans keep their own start samples (deeper spans share the
/// last slot, so their counter deltas are wrong, but never out of bounds).
const MAX_DEPTH: usize = 64;

struct ThreadRing {
    writer: ShmWriter,
    /// The counter groups, read in order; their counters fill the measured slots in order.
    sessions: Vec<CounterSession>,
    /// Measured counters: the first `measured` header counters, in session order.
    measured: usize,
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

/// Opens `names` as one group, dropping what this machine cannot count; the names that could
/// not be opened are added to `unavailable`.
fn open_group(names: &[&str], unavailable: &mut Vec<String>) -> Option<CounterSession> {
    let mut builder = CounterSession::builder().on_unsupported(OnUnsupported::Drop);
    let mut any = false;
    for n in names {
        match builder.clone().event_name(n) {
            Ok(b) => {
                builder = b;
                any = true;
            }
            Err(_) => unavailable.push((*n).to_owned()),
        }
    }
    if !any {
        return None;
    }
    match builder.build() {
        Ok(s) => {
            unavailable.extend(s.dropped().iter().map(|d| d.event.to_string()));
            Some(s)
        }
        Err(_) => {
            unavailable.extend(names.iter().map(|s| (*s).to_owned()));
            None
        }
    }
}

impl ThreadRing {
    fn open() -> Result<Self, ShmError> {
        let cfg = config();
        let mut names: Vec<&str> = cfg.counters.iter().map(String::as_str).collect();
        names.truncate(MAX_COUNTERS);
        // Clock events (hrtimer-driven, each its own kernel PMU) go in groups of their own: in
        // one group with other software events, the members read 0 much of the time (seen
        // on Linux 6.x with task-clock and page-faults). Everything else is one group, read
        // with one `read()` or RDPMC.
        let (clocks, others): (Vec<&str>, Vec<&str>) =
            names.iter().partition(|n| is_clock_event(n));
        let mut unavailable: Vec<String> = Vec::new();
        let mut sessions = Vec::new();
        for c in &clocks {
            sessions.extend(open_group(&[c], &mut unavailable));
        }
        if !others.is_empty() {
            sessions.extend(open_group(&others, &mut unavailable));
        }
        let measured_names: Vec<String> = sessions
            .iter()
            .flat_map(|s| s.counters().iter().map(|c| c.name().to_owned()))
            .take(MAX_COUNTERS)
            .collect();
        let measured = measured_names.len();
        let header_names: Vec<String> = measured_names
            .iter()
            .chain(&unavailable)
            .take(MAX_COUNTERS)
            .map(|n| header_name(n))
            .collect();
        let counters: Vec<CounterInfo<'_>> = header_names
            .iter()
            .enumerate()
            .map(|(i, n)| CounterInfo {
                name: n,
                status: if i < measured {
                    CounterStatus::Measured
                } else {
                    CounterStatus::Unavailable
                },
            })
            .collect();
        let mut fields = vec![
            Field::new("name", FieldKind::Str { words: 3 }),
            Field::new("depth", FieldKind::U32),
            Field::new("time", FieldKind::TimeInterval),
        ];
        if measured > 0 {
            fields.push(Field::new(
                "counters",
                FieldKind::CounterInterval {
                    count: measured as u8,
                },
            ));
        }
        let schema = Schema::new(SPAN_FRAME, &fields);
        let options = RingOptions::new(cfg.slots)
            .with_clock(clock_info())
            .with_counters(&counters);
        let writer = ShmWriter::create(&format!("{RING_PREFIX}{}", gettid()), &schema, &options)?;
        Ok(Self {
            writer,
            sessions,
            measured,
            depth: 0,
            starts: [[0; MAX_COUNTERS]; MAX_DEPTH],
        })
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

/// Opens this thread's span ring now (spans do it on first use) and returns its segment name,
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

/// Closes this thread's span ring (unlinking its segment); the next span opens a new one.
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
            let k = t.measured.min(MAX_COUNTERS);
            let mut words = [0u64; FIXED_WORDS + 2 * MAX_COUNTERS];
            let [n0, n1, n2] = self.name.words;
            words[0] = n0;
            words[1] = n1;
            words[2] = n2;
            words[3] = u64::from(depth);
            words[4] = self.start;
            words[5] = end;
            if k > 0 {
                let mut end_counters = [0u64; MAX_COUNTERS];
                ThreadRing::sample(&mut t.sessions, &mut end_counters);
                let slot = (depth as usize).saturating_sub(1).min(MAX_DEPTH - 1);
                let start = t.starts.get(slot).copied().unwrap_or_default();
                for i in 0..k {
                    words[FIXED_WORDS + i] = start[i];
                    words[FIXED_WORDS + k + i] = end_counters[i];
                }
            }
            t.writer.save_words(&words[..FIXED_WORDS + 2 * k]);
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

// ---------------------------------------------------------------------------------------------
// Consumer
// ---------------------------------------------------------------------------------------------

/// The histogram layout of span statistics: block scale 7, 0.4% relative error.
fn layout() -> Layout {
    const SPAN_LAYOUT: Layout = Layout::from_block_scale(7).unwrap();
    SPAN_LAYOUT
}

fn histogram() -> HeapHistogram {
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

    /// Instructions per cycle, times 10^6, one value per span (empty without both counters).
    pub fn ipc_micro(&self) -> &HeapHistogram {
        &self.ipc_micro
    }
}

/// Aggregates span frames per span name: histograms of durations and counter deltas, IPC.
pub struct SpanAggregator {
    spans: HashMap<String, SpanStats>,
    counters: Vec<String>,
    unavailable: BTreeSet<String>,
    clock: Option<ClockInfo>,
    accepted: u64,
    lost: u64,
}

impl fmt::Debug for SpanAggregator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanAggregator")
            .field("spans", &self.spans.len())
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
            counters: Vec::new(),
            unavailable: BTreeSet::new(),
            clock: None,
            accepted: 0,
            lost: 0,
        }
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

    /// Notes a counter the writer asked for but could not measure.
    pub fn note_unavailable(&mut self, name: &str) {
        self.unavailable.insert(name.to_owned());
    }

    /// Uses `clock` to convert ticks (the first one given wins).
    pub fn set_clock(&mut self, clock: ClockInfo) {
        self.clock.get_or_insert(clock);
    }

    /// Counts frames read and lost (for the table's footer).
    pub fn add_counts(&mut self, d: Drained) {
        self.accepted += d.accepted;
        self.lost += d.lost;
    }

    /// Records one span: its name, duration in ticks, and `(counter index, delta)` pairs.
    pub fn record(&mut self, name: &str, ticks: u64, deltas: &[(usize, u64)]) {
        let stats = match self.spans.get_mut(name) {
            Some(s) => s,
            None => self
                .spans
                .entry(name.to_owned())
                .or_insert_with(SpanStats::new),
        };
        stats.count += 1;
        stats.ticks += u128::from(ticks);
        stats.durations.record(ticks);
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
        if let (Some(c), Some(i)) = (cycles, instructions) {
            if c > 0 {
                let micro = u128::from(i) * 1_000_000 / u128::from(c);
                stats
                    .ipc_micro
                    .record(u64::try_from(micro).unwrap_or(u64::MAX));
            }
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

    /// The per-phase table (seed 004), with what this machine can and cannot measure.
    pub fn table(&self) -> SpanTable {
        let hz = self.clock.as_ref().and_then(clock_hz);
        let cycles = self.counters.iter().position(|c| is_cycles(c));
        let instructions = self.counters.iter().position(|c| c == "instructions");
        let requested_ipc = cycles.is_some()
            || instructions.is_some()
            || self
                .unavailable
                .iter()
                .any(|n| is_cycles(n) || n == "instructions");
        let others: Vec<usize> = (0..self.counters.len())
            .filter(|&i| Some(i) != cycles && Some(i) != instructions)
            .collect();
        let total_ticks: u128 = self.spans.values().map(|s| s.ticks).sum();
        let total_cycles: u128 = cycles
            .map(|c| self.spans.values().filter_map(|s| s.counter_sum(c)).sum())
            .unwrap_or(0);

        let mut columns = vec![
            "Phase".to_owned(),
            "N".to_owned(),
            "Time".to_owned(),
            "%".to_owned(),
            "p50".to_owned(),
        ];
        if cycles.is_some() || self.unavailable.iter().any(|n| is_cycles(n)) {
            columns.push("Cycles".to_owned());
        }
        if requested_ipc {
            columns.extend(["IPC p5", "IPC p50", "IPC p95"].map(str::to_owned));
        }
        for &i in &others {
            let unit = if instructions.is_some() {
                "/ki"
            } else {
                "/span"
            };
            columns.push(format!("{}{unit}", self.counters[i]));
        }
        for n in &self.unavailable {
            if !is_cycles(n) && n != "instructions" {
                columns.push(n.clone());
            }
        }

        let mut names: Vec<&String> = self.spans.keys().collect();
        names.sort_by(|a, b| {
            let key = |n: &String| {
                let s = &self.spans[n];
                cycles.and_then(|c| s.counter_sum(c)).unwrap_or(s.ticks)
            };
            key(b).cmp(&key(a)).then(a.cmp(b))
        });
        let na = || "n/a".to_owned();
        let mut rows = Vec::new();
        for name in names {
            let s = &self.spans[name];
            let mut row = vec![name.clone(), group_digits(s.count)];
            row.push(fmt_ticks(s.ticks as f64, hz));
            let share = match cycles {
                Some(c) if total_cycles > 0 => {
                    s.counter_sum(c).unwrap_or(0) as f64 / total_cycles as f64
                }
                _ if total_ticks > 0 => s.ticks as f64 / total_ticks as f64,
                _ => 0.0,
            };
            row.push(format!("{:.1}%", share * 100.0));
            row.push(
                s.durations
                    .percentile(50.0)
                    .map_or_else(|_| na(), |p| fmt_ticks(p.value as f64, hz)),
            );
            if columns.iter().any(|c| c == "Cycles") {
                row.push(match cycles.and_then(|c| s.counter_sum(c)) {
                    Some(v) => fmt_si(v as f64),
                    None => na(),
                });
            }
            if requested_ipc {
                for p in [5.0, 50.0, 95.0] {
                    row.push(if s.ipc_micro.total() == 0 {
                        na()
                    } else {
                        s.ipc_micro
                            .percentile(p)
                            .map_or_else(|_| na(), |v| format!("{:.3}", v.value as f64 / 1e6))
                    });
                }
            }
            for &i in &others {
                let sum = s.counter_sum(i);
                row.push(match (sum, instructions.and_then(|j| s.counter_sum(j))) {
                    (Some(v), Some(instr)) if instr > 0 => {
                        format!("{:.1}", v as f64 * 1000.0 / instr as f64)
                    }
                    (Some(v), None) if instructions.is_none() && s.count > 0 => {
                        fmt_per_span(v as f64 / s.count as f64)
                    }
                    _ => na(),
                });
            }
            for n in &self.unavailable {
                if !is_cycles(n) && n != "instructions" {
                    row.push(na());
                }
            }
            rows.push(row);
        }

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
                "%: share of all spans' cycles (a nested span counts in its parent too)"
            } else {
                "%: share of all spans' time (a nested span counts in its parent too)"
            }
            .to_owned(),
        );
        if !self.unavailable.is_empty() {
            let names: Vec<&str> = self.unavailable.iter().map(String::as_str).collect();
            notes.push(format!(
                "not measured (n/a): {} — the writer could not count {} on its machine; this \
                 machine's PMU: {}",
                names.join(", "),
                if names.len() == 1 { "it" } else { "them" },
                Capabilities::detect().pmu
            ));
        }
        if requested_ipc && (cycles.is_none() || instructions.is_none()) {
            notes.push("IPC: n/a, it needs both cycles and instructions".to_owned());
        }
        if self.counters.is_empty() && self.unavailable.is_empty() {
            notes.push(format!(
                "no counters configured: time only (set {COUNTERS_ENV}=cycles,instructions,…)"
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
        SpanTable {
            columns,
            rows,
            notes,
        }
    }
}

/// `10,728`.
fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
fn fmt_ticks(ticks: f64, hz: Option<f64>) -> String {
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

/// The per-phase table: a Markdown table and notes on what could not be measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanTable {
    /// Column titles.
    pub columns: Vec<String>,
    /// One row per span name, by total cycles (or time), largest first; `n/a` where a value
    /// cannot be measured.
    pub rows: Vec<Vec<String>>,
    /// What the columns mean and what is missing.
    pub notes: Vec<String>,
}

impl SpanTable {
    /// The cell of `column` in the row of span `name`.
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

/// Where the fields of one span ring's frames are, and its counters' aggregator indices.
struct SpanRing {
    reader: ShmReader,
    counters: usize,
    slots: Vec<usize>,
}

/// Attaches to the span rings of a process and aggregates their frames.
pub struct SpanConsumer {
    pid: i32,
    rings: Vec<SpanRing>,
    skipped: Vec<(String, String)>,
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

impl SpanConsumer {
    /// Attaches to every span ring of process `pid` (its threads that have begun a span).
    /// Rings that are not span rings, or that fail their checks, are listed in
    /// [`SpanConsumer::skipped`].
    pub fn attach(pid: i32) -> Result<Self, ShmError> {
        let mut c = Self {
            pid,
            rings: Vec::new(),
            skipped: Vec::new(),
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
                || self.rings.iter().any(|r| r.reader.segment() == e.segment)
                || self.skipped.iter().any(|(s, _)| *s == e.segment)
            {
                continue;
            }
            match ShmReader::attach_segment(&e.segment) {
                Ok(reader) => match self.layout(reader) {
                    Ok(ring) => {
                        self.rings.push(ring);
                        added += 1;
                    }
                    Err((segment, why)) => self.skipped.push((segment, why)),
                },
                // The thread exited between listing and attaching.
                Err(ShmError::NotFound(_)) => {}
                Err(err) => self.skipped.push((e.segment, err.to_string())),
            }
        }
        Ok(added)
    }

    fn layout(&mut self, reader: ShmReader) -> Result<SpanRing, (String, String)> {
        let info = reader.info();
        let fail = |why: &str| (reader.segment().to_owned(), why.to_owned());
        if info.frame_name() != SPAN_FRAME {
            return Err(fail("not a span ring"));
        }
        let kinds: Vec<(String, FieldKind)> =
            info.fields().map(|f| (f.name.to_owned(), f.kind)).collect();
        let expect = [
            ("name", FieldKind::Str { words: 3 }),
            ("depth", FieldKind::U32),
            ("time", FieldKind::TimeInterval),
        ];
        let known = kinds.len() >= 3
            && expect
                .iter()
                .zip(&kinds)
                .all(|((n, k), (m, j))| n == m && k == j);
        if !known {
            return Err(fail("span ring with an unknown layout"));
        }
        let counters = match kinds.get(3) {
            None => 0,
            Some((n, FieldKind::CounterInterval { count })) if n == "counters" => {
                usize::from(*count)
            }
            Some(_) => return Err(fail("span ring with an unknown layout")),
        };
        let measured: Vec<String> = info
            .counters()
            .filter(|c| c.status == CounterStatus::Measured)
            .map(|c| c.name.to_owned())
            .collect();
        let unavailable: Vec<String> = info
            .counters()
            .filter(|c| c.status == CounterStatus::Unavailable)
            .map(|c| c.name.to_owned())
            .collect();
        if measured.len() < counters {
            return Err(fail(
                "span ring with more counter slots than measured counters",
            ));
        }
        self.agg.set_clock(info.clock());
        let slots = measured
            .iter()
            .take(counters)
            .map(|n| self.agg.counter_index(n))
            .collect();
        for n in &unavailable {
            self.agg.note_unavailable(n);
        }
        Ok(SpanRing {
            reader,
            counters,
            slots,
        })
    }

    /// Drains every ring into the aggregator.
    pub fn poll(&mut self) -> Result<Drained, ShmError> {
        let mut total = Drained::default();
        let mut deltas: Vec<(usize, u64)> = Vec::with_capacity(MAX_COUNTERS);
        for ring in &mut self.rings {
            let SpanRing {
                reader,
                counters,
                slots,
            } = ring;
            let k = *counters;
            let agg = &mut self.agg;
            let d = reader.drain(|f| {
                let w = f.words();
                let Some(name_words) = w.get(..3) else { return };
                let label = Label::from_words([name_words[0], name_words[1], name_words[2]]);
                let (Some(&start), Some(&end)) = (w.get(4), w.get(5)) else {
                    return;
                };
                deltas.clear();
                for (i, &slot) in slots.iter().enumerate() {
                    if let (Some(&s), Some(&e)) =
                        (w.get(FIXED_WORDS + i), w.get(FIXED_WORDS + k + i))
                    {
                        deltas.push((slot, e.wrapping_sub(s)));
                    }
                }
                agg.record(label.as_str(), end.wrapping_sub(start), &deltas);
            })?;
            agg.add_counts(d);
            total.accepted += d.accepted;
            total.lost += d.lost;
        }
        Ok(total)
    }

    /// The aggregated statistics.
    pub fn aggregator(&self) -> &SpanAggregator {
        &self.agg
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

        // A VM: cycles and instructions unavailable, software counters measured.
        let mut v = SpanAggregator::new();
        v.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
        v.note_unavailable("cycles");
        v.note_unavailable("instructions");
        let pf = v.counter_index("page-faults");
        v.record("parse", 2_000_000, &[(pf, 4)]);
        v.record("parse", 4_000_000, &[(pf, 6)]);
        let t = v.table();
        assert_eq!(t.cell("parse", "Cycles"), Some("n/a"));
        assert_eq!(t.cell("parse", "IPC p50"), Some("n/a"));
        assert_eq!(t.cell("parse", "page-faults/span"), Some("5.0"));
        assert_eq!(t.cell("parse", "Time"), Some("6.00 ms"));
        let shown = t.to_string();
        assert!(
            shown.contains("not measured (n/a): cycles, instructions"),
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
    }
}
