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
//!   layout is [`picollo_spans::frame`]'s, the one codec of every writer and reader.
//! - [`counter!`](crate::counter!) saves a user counter event into the same ring: its name,
//!   `kind` counter event, the time (start = end) and its `value`. Consumers show counter
//!   events in a table of their own next to the phase table.
//! - The clock is [`picollo_spans::clock`]'s: the TSC on x86 and x86_64 (the consumer
//!   calibrates it against `CLOCK_MONOTONIC` from a reference pair in the ring header),
//!   `cntvct_el0` on aarch64 (its rate is in the header), `CLOCK_MONOTONIC` nanoseconds
//!   elsewhere.
//!
//! # Counters
//!
//! `PICOLLO_COUNTERS=cycles,instructions,LLC-load-misses` selects counters by perf's names
//! (raw `r00c0` and `pmu/…/` events work too; see [`crate::event`]); [`configure`] does the
//! same from code, typed ([`SpanCounters`]), before the first span. A name that is not an
//! event is an error ([`env_error`], said once on stderr): spans then count time only. Each thread opens them as one group
//! ([`CounterSession`](crate::session::CounterSession)) and reads them with RDPMC when the kernel allows it, else with one
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
//!
//! # Where the parts live
//!
//! This module holds the span guard ([`Span`], [`span!`](crate::span!)) and counter events
//! ([`counter!`](crate::counter!)); `config` what spans sample ([`SpanConfig`],
//! [`SpanCounters`]); `thread` each thread's ring, its counter groups, attach-time requests
//! and fork; `live` the in-process consumer ([`SpanConsumer`]); [`raw`] the low-level frame
//! writes. The frame codec, the span clock and the decoder, aggregator and tables are
//! platform-neutral, in `picollo-spans` (`picollo_spans`), which users import themselves.

use core::fmt;
use core::marker::PhantomData;

use picollo_ring::{WordArray, MAX_COUNTERS};
use picollo_spans::clock::now;
use picollo_spans::frame::{event_head, store_counter_samples};
use picollo_spans::SpanName;

mod config;
mod error;
mod live;
mod thread;

pub use error::SpanError;
pub use live::{RequestOutcome, RingEvent, SpanConsumer};

pub mod raw;

pub use config::{
    config, configure, env_error, new_aggregator, SpanConfig, SpanCounters, DEFAULT_SLOTS,
};

pub(crate) use config::RING_PREFIX;

use thread::{listening, ThreadSpans};
pub use thread::{
    open_thread_ring, reset_thread, ring_failures, thread_counter_events, thread_counters,
};

/// A span guard: ends (and saves its frame) when dropped. Not `Send`: it belongs to the
/// thread's ring. Create it with [`span!`](crate::span!), [`Span::enter`] or
/// [`Span::enter_str`].
#[must_use = "a span ends when dropped: bind it with `let _s = ...`, not `let _ = ...`"]
pub struct Span {
    name: SpanName,
    /// The span clock at its start.
    start: u64,
    /// 0 when inactive; else the nesting depth (1 for the outermost span) in the low 32
    /// bits and the thread's ticket for its start samples in the high 32
    /// (`thread::Scope`): one word, so keeping the ticket costs the counter window
    /// nothing.
    scope: u64,
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Span")
            .field("name", &self.name)
            .field("active", &self.is_active())
            .field("depth", &thread::Scope(self.scope).depth())
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
        let (start, scope) = if listening() { Self::begin() } else { (0, 0) };
        Span {
            name,
            start,
            scope,
            _not_send: PhantomData,
        }
    }

    /// Begins a span whose name is known only at run time (cut to 24 bytes).
    #[inline]
    pub fn enter_str(name: &str) -> Span {
        Self::enter(SpanName::new(name))
    }

    /// The attached (or not yet opened) path of `enter`: the start and the scope (depth
    /// and ticket), or `(0, 0)` for an inactive span. The interval goes on the thread's
    /// stack (shared with span layers).
    #[inline(never)]
    fn begin() -> (u64, u64) {
        raw::with_thread(ThreadSpans::begin_guard).unwrap_or((0, 0))
    }

    /// Whether this span samples and saves (a consumer was attached when it began).
    pub fn is_active(&self) -> bool {
        self.scope != 0
    }

    /// Ends the span now.
    #[inline]
    pub fn end(mut self) {
        self.finish();
    }

    #[inline(always)]
    fn finish(&mut self) {
        if self.scope != 0 {
            self.finish_active();
        }
    }

    #[inline(never)]
    fn finish_active(&mut self) {
        let end = now();
        let scope = thread::Scope(core::mem::replace(&mut self.scope, 0));
        let (name, start) = (self.name, self.start);
        raw::with_thread(|st| st.end_guard(name, start, scope, end));
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
        $crate::span::Span::enter(const { $crate::__spans::SpanName::new($name) })
    };
    ($name:expr) => {
        $crate::span::Span::enter_str($name)
    };
}

/// Saves a user counter event (a name and a value: a queue length, bytes in flight, a
/// cache's size) into this thread's span ring, next to its spans: a frame of kind
/// [`FrameKind::CounterEvent`](picollo_spans::FrameKind::CounterEvent), the time at both ends of the interval, `value`, and 0 in the
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
    raw::with_thread(|st| {
        let Some(t) = st.ring.get() else {
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
            const { $crate::__spans::SpanName::new($name) },
            ($value) as i64,
        )
    };
    ($name:expr, $value:expr) => {
        $crate::span::counter_event($crate::__spans::SpanName::new($name), ($value) as i64)
    };
}

#[cfg(test)]
mod tests {
    use super::thread::header_name;
    use super::*;

    #[test]
    fn configurations() {
        assert_eq!(SpanConfig::new().with_slots(1000).slots(), 1024);
        assert_eq!(
            header_name("cpu/event=0x3c,umask=0x00/"),
            "cpu/event=0x3c,umask=0x0"
        );
        assert_eq!(SpanConfig::new().counter_slots(), 4);
        assert_eq!(SpanConfig::new().with_counter_slots(20).counter_slots(), 8);
        let six = SpanConfig::new().with_counters(
            SpanCounters::parse(
                "cycles,instructions,page-faults,task-clock,branches,branch-misses",
            )
            .unwrap(),
        );
        assert_eq!(six.counter_slots(), 6);
    }
}
