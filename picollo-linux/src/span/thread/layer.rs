//! The methods of [`ThreadSpans`] a span layer calls through [`raw`](crate::span::raw) (the
//! thread's span state as `picollo-tracing` uses it): here, in the thread state's own module
//! tree, beside the state they work on; `raw` re-exports the type and says how to use it.

use picollo_ring::{WordArray, MAX_COUNTERS};
use picollo_spans::clock::now;
use picollo_spans::frame::{span_head, store_counter_samples, HEAD_WORDS};
use picollo_spans::stack::{Open, SlotMap};
use picollo_spans::SpanName;

use super::{listening, Interval, RingState, ThreadRing, ThreadSpans};
use crate::count::Reading;
use crate::event::Event;
use crate::span::SpanError;

/// Counter samples of one interval end: one per counter slot.
pub type Samples = [Reading; MAX_COUNTERS];

impl ThreadSpans {
    /// Intervals open on this thread (`span!` guards and layers' spans): 0 between spans.
    #[inline(always)]
    pub fn depth(&self) -> u32 {
        self.open.depth()
    }

    /// Whether a consumer is attached to this thread's ring, opening the ring on first use:
    /// the fast check of `span!` (the ring's attached word, through a thread-local pointer
    /// to it) and a branch once the ring is open.
    #[inline(always)]
    pub fn attached(&mut self) -> bool {
        // The word is the open ring's `attached` word, or a constant: not 0 before the ring
        // opens, 0 when it could not.
        listening() && (matches!(self.ring, RingState::Open(_)) || self.attached_slow())
    }

    /// [`ThreadSpans::attached`] before the ring is open: opens it.
    #[cold]
    #[inline(never)]
    fn attached_slow(&mut self) -> bool {
        self.ring.get().is_some_and(|t| t.writer.is_attached())
    }

    /// Applies a consumer's pending counter request (see
    /// [`crate::span::SpanConsumer::request_counters`]): closes the thread's counters, opens the
    /// requested ones and publishes the new counter table; the [`ThreadSpans::slot_map`] is
    /// then stale. Call it only when no interval is open ([`ThreadSpans::depth`] 0), whose
    /// start samples came from the old counters. Returns whether a request was applied; one
    /// relaxed load when none is pending.
    #[inline]
    pub fn apply_counter_request(&mut self) -> bool {
        let RingState::Open(t) = &mut self.ring else {
            return false;
        };
        if !t.writer.has_counter_request() {
            return false;
        }
        t.apply_request();
        self.slot_map = SlotMap::NONE;
        true
    }

    /// The event of each counter slot the thread measures, in slot order (opening its ring
    /// and counters first), or the error that kept the ring from opening.
    #[cold]
    pub fn counter_events(&mut self) -> Result<Vec<Event>, SpanError> {
        self.measured_counters(|c| c.event().clone())
    }

    /// A span layer's mapping of the thread's counter slots to its counters (see
    /// [`SlotMap`]): [`SlotMap::NONE`] until the layer sets it, and again whenever the
    /// thread's counters change.
    #[inline(always)]
    pub fn slot_map(&self) -> &SlotMap {
        &self.slot_map
    }

    /// What reading the counters adds to a window, per counter slot: the smallest delta
    /// between two back-to-back samples, measured when the thread's counters open (a
    /// calibrated correction; 0 without counters). Subtract it from a delta so that a short
    /// span's `task-clock` does not exceed its busy time.
    #[inline(always)]
    pub fn read_costs(&self) -> &[u64; MAX_COUNTERS] {
        const NONE: [u64; MAX_COUNTERS] = [0; MAX_COUNTERS];
        match &self.ring {
            RingState::Open(t) => &t.read_cost,
            _ => &NONE,
        }
    }

    /// Sets the mapping of [`ThreadSpans::slot_map`].
    pub fn set_slot_map(&mut self, map: SlotMap) {
        self.slot_map = map;
    }

    /// Begins an interval of `owner`'s span `id` (an owner is a layer's id, never 0): with
    /// `sample`, samples the thread's counters (opening its ring on first use), then reads
    /// the clock. Returns the interval's depth (1 for the outermost).
    #[inline(always)]
    pub fn begin(&mut self, owner: u64, id: u64, sample: bool) -> u32 {
        let sampled = sample && self.sample_into_next();
        self.open.push(Open::new(owner, id, now(), sampled))
    }

    /// Samples the thread's counters into the start samples of the next interval; whether
    /// it could (not without a ring).
    #[inline(never)]
    fn sample_into_next(&mut self) -> bool {
        match self.ring.get() {
            Some(t) => {
                t.sample(self.open.next_samples());
                true
            }
            None => false,
        }
    }

    /// Ends the interval of `owner`'s span `id` whose clock reading at the end the caller
    /// took (`now()` before this call); when its start was sampled, samples the counters at
    /// the end too ([`ThreadSpans::counters`]). `None` when the span has no interval open on
    /// this thread (entered before the layer was installed, or on another thread).
    #[inline(always)]
    pub fn end(&mut self, owner: u64, id: u64) -> Option<Interval> {
        let (ring, ends) = (&mut self.ring, &mut self.ends);
        let mut n = 0;
        // The counters are sampled before the interval leaves the stack, so the counter
        // window holds as little of this bookkeeping as possible.
        let e = self.open.take(owner, id, |sampled| {
            if sampled {
                n = sample_ends(ring, ends);
            }
        })?;
        Some(Interval::new(e.start, e.depth, e.starts, n))
    }

    /// The counter samples at both ends of `interval`, the one [`ThreadSpans::end`] just
    /// returned, in slot order, when its start was sampled.
    #[inline(always)]
    pub fn counters(&self, interval: &Interval) -> Option<(&[Reading], &[Reading])> {
        let starts = self.open.samples_of(&interval.ended())?;
        let n = usize::from(interval.n);
        Some((&starts[..n], &self.ends[..n]))
    }

    /// Saves the frame of `interval` (the one [`ThreadSpans::end`] just returned) into the
    /// thread's ring if a consumer is attached: `name`, its depth, the span clock at its
    /// start and at `end`, and its counter samples. Returns whether a frame was saved: not
    /// when nobody is attached, and not when the ring measures counters but the interval has
    /// no samples of them (a frame never carries made-up counter values).
    #[inline]
    pub fn save_frame(&mut self, name: SpanName, interval: &Interval, end: u64) -> bool {
        let RingState::Open(t) = &mut self.ring else {
            return false;
        };
        let k = t.measured.min(t.slots);
        let saved = if k == 0 {
            let head = span_head(name, interval.depth, interval.start, end);
            t.writer.save_with(|data| head.store_into(data))
        } else {
            match self.open.samples_of(&interval.ended()) {
                Some(starts) if usize::from(interval.n) >= k => {
                    let head = span_head(name, interval.depth, interval.start, end);
                    save_with_counters(t, &head, &starts[..k], &self.ends[..k])
                }
                _ => return false,
            }
        };
        if t.writer.is_disabled() {
            // A child after fork: its writer turned itself off; stop taking this path.
            t.publish();
        }
        saved
    }
}

/// Samples the thread's counters into `ends`; returns how many (0 without counters or
/// ring).
#[inline(never)]
fn sample_ends(ring: &mut RingState, ends: &mut Samples) -> usize {
    match ring {
        RingState::Open(t) => t.sample(ends),
        _ => 0,
    }
}

/// Saves a frame with `head` and the counter samples at both ends (their values).
#[inline(never)]
fn save_with_counters(
    t: &mut ThreadRing,
    head: &[u64; HEAD_WORDS],
    starts: &[Reading],
    ends: &[Reading],
) -> bool {
    let k = starts.len().min(ends.len()).min(MAX_COUNTERS);
    let (mut s, mut e) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
    for i in 0..k {
        s[i] = starts[i].value;
        e[i] = ends[i].value;
    }
    let slots = t.slots;
    t.writer.save_with(|data| {
        head.store_into(data);
        store_counter_samples(data, slots, &s[..k], &e[..k]);
    })
}
