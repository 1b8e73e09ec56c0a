//! Raw access to this thread's span ring, for span layers that keep span state of their own
//! (the `picollo-tracing` layer, whose spans are entered and exited many times, on several
//! threads, and are not guards of this module).
//!
//! - [`thread_listening`]: the fast check of [`Span::enter`](super::Span::enter) (a consumer
//!   is attached, or the thread's ring is not open yet).
//! - [`sample_thread_counters`]: reads this thread's counters, the same sessions and slot
//!   order as the ring's frames, with their enabled and running times so that the caller can
//!   tell "not counted" from zero ([`Reading::delta_since`]).
//! - [`save_frame`]: saves one span frame with explicit start and end samples.
//! - [`apply_counter_request`]: switches this thread's counters to what a consumer asked
//!   for at attach time ([`super::SpanConsumer::request_counters`]); [`super::Span`]
//!   does it at each outermost span begin, a layer with spans of its own calls it when the
//!   thread has none open.
//! - [`SpanAggregator::record_histograms`](super::SpanAggregator::record_histograms): adds spans already aggregated into histograms
//!   (rather than one frame at a time) to the per-phase table; [`format_duration_ns`] writes
//!   a duration as that table does.
//!
//! The ring, its counters and its clock ([`now`](super::now)) are the ones [`super::Span`]
//! uses, so a consumer sees both kinds of spans alike.

use picollo_alloc::span::frame::{span_head, store_counter_samples};
use picollo_core::ring::{WordArray, MAX_COUNTERS};

use super::thread::{listening, THREAD};
use super::SpanName;
use crate::count::Reading;

pub use picollo_alloc::span::{format_duration_ns, AggregatedSpans};

/// Whether this thread's ring wants frames: a consumer is attached, or the ring is not open
/// yet (then [`save_frame`] or [`sample_thread_counters`] opens it). One thread-local load, a
/// load and a branch.
#[inline(always)]
pub fn thread_listening() -> bool {
    listening()
}

/// Samples this thread's span counters (opening the thread's ring and counters on first use)
/// into `out[..n]`, in the ring's slot order (the names of [`super::thread_counters`]), and
/// returns `n`: 0 without counters, or when the ring cannot open. A group whose read fails
/// gives readings with zero times, which [`Reading::delta_since`] reports as not counted.
pub fn sample_thread_counters(out: &mut [Reading; MAX_COUNTERS]) -> usize {
    THREAD
        .try_with(|cell| {
            let Ok(mut st) = cell.try_borrow_mut() else {
                return 0;
            };
            let Some(t) = st.ring() else {
                return 0;
            };
            let mut slots = out.iter_mut();
            let mut n = 0;
            for s in &mut t.sessions {
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
            n.min(t.measured)
        })
        .unwrap_or(0)
}

/// Saves one span frame into this thread's ring (opening it on first use) if a consumer is
/// attached: `name`, nesting `depth`, the span clock at `start` and `end`, and the counter
/// samples at both ends (from [`sample_thread_counters`] on this thread). Returns whether a
/// frame was saved: not when nobody is attached, and not when the ring measures counters but
/// `counters` is `None` or holds another number of them (a frame never carries made-up
/// counter values).
pub fn save_frame(
    name: SpanName,
    depth: u32,
    start: u64,
    end: u64,
    counters: Option<(&[Reading], &[Reading])>,
) -> bool {
    THREAD
        .try_with(|cell| {
            let Ok(mut st) = cell.try_borrow_mut() else {
                return false;
            };
            let Some(t) = st.ring() else {
                return false;
            };
            if !t.writer.is_attached() {
                return false;
            }
            let k = t.measured.min(t.slots);
            let head = span_head(name, depth, start, end);
            let (mut s, mut e) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
            if k > 0 {
                let Some((cs, ce)) = counters.filter(|(s, e)| s.len() == k && e.len() == k) else {
                    return false;
                };
                for i in 0..k {
                    s[i] = cs[i].value;
                    e[i] = ce[i].value;
                }
            }
            let slots = t.slots;
            let saved = t.writer.save_with(|data| {
                head.store_into(data);
                if k > 0 {
                    store_counter_samples(data, slots, &s[..k], &e[..k]);
                }
            });
            if t.writer.is_disabled() {
                // A child after fork: its writer turned itself off; stop taking this path.
                t.publish();
            }
            saved
        })
        .unwrap_or(false)
}

/// Applies a consumer's pending counter request to this thread (see
/// [`super::SpanConsumer::request_counters`]): closes its counters, opens the requested
/// ones and publishes the new counter table. Call it only when no span that sampled the old
/// counters is open on this thread (their end samples would come from other counters).
/// Returns whether a request was applied; one relaxed load when none is pending.
pub fn apply_counter_request() -> bool {
    THREAD
        .try_with(|cell| {
            let Ok(mut st) = cell.try_borrow_mut() else {
                return false;
            };
            let Some(t) = st.ring() else {
                return false;
            };
            if !t.writer.has_counter_request() {
                return false;
            }
            t.apply_request();
            true
        })
        .unwrap_or(false)
}
