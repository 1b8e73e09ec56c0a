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

use picollo_core::ring::{WordArray, MAX_COUNTERS};
use picollo_core::{HistogramRead, ReadExt};

use super::{listening, store_words, SpanName, FIXED_WORDS, THREAD};
use crate::count::Reading;

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
            let [n0, n1, n2] = name.words;
            let fixed = [n0, n1, n2, u64::from(depth), start, end, 0];
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
                fixed.store_into(data);
                if k > 0 {
                    store_words(data, FIXED_WORDS, &s[..k]);
                    store_words(data, FIXED_WORDS + slots, &e[..k]);
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

/// A duration in nanoseconds as the per-phase table writes it (`6.00 ms`, `812 ns`).
pub fn format_duration_ns(ns: f64) -> String {
    super::consumer::fmt_ticks(ns, Some(1e9))
}

/// Spans of one name already aggregated into histograms, for
/// [`SpanAggregator::record_histograms`](super::SpanAggregator::record_histograms).
#[derive(Clone, Copy)]
pub struct AggregatedSpans<'a> {
    /// The histogram of durations (in the aggregator's clock unit); its total (underflow and
    /// overflow included) is the number of spans.
    pub durations: &'a dyn HistogramRead,
    /// The sum of the durations.
    pub total: u128,
    /// `(counter index, sum of deltas, histogram of deltas)` per counter that was counted.
    pub counters: &'a [(usize, u128, &'a dyn HistogramRead)],
    /// Instructions per cycle times 10^6, one value per span, when both were counted.
    pub ipc_micro: Option<&'a dyn HistogramRead>,
}

impl core::fmt::Debug for AggregatedSpans<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AggregatedSpans")
            .field("spans", &self.durations.total_with_outside())
            .field("total", &self.total)
            .field("counters", &self.counters.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::ring::{ClockInfo, ClockKind};

    #[test]
    fn aggregated_spans_match_one_by_one() {
        use crate::span::SpanAggregator;
        let mut one = SpanAggregator::new();
        let mut merged = SpanAggregator::new();
        for a in [&mut one, &mut merged] {
            a.set_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
            assert_eq!(a.counter_index("page-faults"), 0);
        }
        let mut durations = crate::span::consumer::histogram();
        let mut faults = crate::span::consumer::histogram();
        let (mut total, mut sum) = (0u128, 0u128);
        for i in 1..=50u64 {
            one.record("parse", i * 1000, &[(0, i % 7)]);
            durations.record(i * 1000);
            faults.record(i % 7);
            total += u128::from(i * 1000);
            sum += u128::from(i % 7);
        }
        merged.record_histograms(
            "parse",
            AggregatedSpans {
                durations: &durations,
                total,
                counters: &[(0, sum, &faults)],
                ipc_micro: None,
            },
        );
        assert_eq!(one.table(), merged.table());
        assert_eq!(merged.span("parse").unwrap().count(), 50);
        assert_eq!(merged.span("parse").unwrap().counter_sum(0), Some(sum));
    }
}
