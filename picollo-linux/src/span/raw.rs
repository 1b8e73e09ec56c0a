//! The thread's span state for span layers that keep span state of their own (the
//! `picollo-tracing` layer, whose spans are entered and exited many times, on several
//! threads, and are not guards of this module): [`with_thread`] borrows it once, and a hook
//! does everything through the [`ThreadSpans`] it gets.
//!
//! - [`ThreadSpans::attached`]: a consumer is attached to the thread's ring (opening the
//!   ring on first use).
//! - [`ThreadSpans::begin`] and [`ThreadSpans::end`]: an interval of one span, on the
//!   thread's stack of open intervals, which counts [`Span`](super::Span) guards too (so
//!   the depth in frames counts both), with the thread's counter samples at both ends when
//!   asked, in the ring's slot order, with their enabled and running times so that the
//!   caller can tell "not counted" from zero
//!   ([`Reading::delta_since`](crate::Reading::delta_since)). Counters are read before the
//!   clock at the start and after it at the end, so reading them is not timed.
//! - [`ThreadSpans::save_frame`]: saves one span frame with explicit samples.
//! - [`ThreadSpans::apply_counter_request`]: switches the thread's counters to what a
//!   consumer asked for at attach time ([`super::SpanConsumer::request_counters`]);
//!   [`super::Span`] does it at each outermost span begin, a layer when the thread has no
//!   interval open.
//! - [`ThreadSpans::slot_map`]: the layer's mapping of the thread's counter slots to its own
//!   counters, kept here and marked stale whenever the thread's counters change.
//! - [`SpanAggregator::record_histograms`](picollo_spans::SpanAggregator::record_histograms)
//!   (in `picollo-spans`): adds spans already aggregated into histograms to the per-phase
//!   table; [`format_duration_ns`](picollo_spans::format_duration_ns) writes a duration as
//!   that table does.
//!
//! The ring, its counters and its clock ([`picollo_spans::clock::now`]) are the ones [`super::Span`]
//! uses, so a consumer sees both kinds of spans alike.

use super::thread::THREAD;

pub use super::thread::{Interval, Samples, ThreadSpans};

/// Runs `f` with this thread's span state, borrowed once; `None` while the thread exits (its
/// thread-locals are gone) or when `f` would borrow it again from inside.
#[inline(always)]
pub fn with_thread<R>(f: impl FnOnce(&mut ThreadSpans) -> R) -> Option<R> {
    THREAD
        .try_with(|cell| cell.try_borrow_mut().ok().map(|mut t| f(&mut t)))
        .ok()
        .flatten()
}
