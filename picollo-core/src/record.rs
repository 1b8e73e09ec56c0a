//! The recording vocabulary every kind shares: [`Record`] (a value, `n` of them, a duration,
//! a value corrected for coordinated omission) and [`RecordAt`], the one seam for callers
//! that compute a value's bucket position themselves.
//!
//! Each kind's inherent methods are `record` and `record_n` (and `record_u32` on the two core
//! kinds, the firmware path), with its natural receiver: `&mut` for the plain kind, `&` for the
//! shared ones. The rest goes through the trait: `h.record_duration(d)` on a plain histogram,
//! `(&h).record_duration(d)` on a shared one (its `Record` is implemented for `&Kind`, so many
//! threads can hold a recorder).

use crate::{duration_ns, histogram, BucketPos, HistogramRead};

/// Anything a value can be recorded into: every histogram kind implements it, so scopes,
/// spans and counter sessions are written once for all of them.
///
/// Plain histograms implement it for `Histogram` itself (single writer, `&mut`); shared kinds
/// (atomic, approximate) implement it for `&Kind`, so many threads can hold a recorder.
pub trait Record {
    /// Records one occurrence of `value`. Out-of-window values are counted as underflow or
    /// overflow, never dropped.
    fn record(&mut self, value: u64);
    /// Records `count` occurrences of `value`.
    fn record_n(&mut self, value: u64, count: u64);

    /// Records a duration in nanoseconds ([`duration_ns`]: whole nanoseconds, saturating).
    #[inline(always)]
    fn record_duration(&mut self, duration: core::time::Duration) {
        self.record(duration_ns(duration));
    }

    /// Coordinated-omission correction at record time (HdrHistogram's
    /// `recordValueWithExpectedInterval`): records `value`, then, if `value` exceeds
    /// `expected_interval`, the values `value - k·interval` for every `k >= 1` that stays at
    /// or above the interval, as if the samples a stalled measurement missed had been taken.
    ///
    /// One implementation serves every kind (plain, atomic, thread-local, approximate): the
    /// synthetic values are added bucket by bucket with arithmetic, one
    /// [`Record::record_n`] per bucket of the window they cover, so the cost is bounded by the
    /// window length, not by `value / expected_interval` (a hostile pair such as
    /// `(u64::MAX, 1)` finishes quickly). An interval of 0 records `value` alone.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// use picollo_core::cell::AtomicU32;
    ///
    /// const L: Layout = Layout::DEFAULT;
    /// let h = AtomicHistogram::<[AtomicU32; storage_len(L, 1, 10_000)]>::new(L, 1, 10_000);
    /// // A 1,000 µs stall while sampling every 100 µs: 1000, 900, ..., 100.
    /// (&h).record_corrected(1000, 100);
    /// assert_eq!(h.total(), 10);
    /// assert_eq!(h.percentile(50.0, EquivalentValue::Midpoint).unwrap().value, 500);
    /// ```
    fn record_corrected(&mut self, value: u64, expected_interval: u64)
    where
        Self: HistogramRead + Sized,
    {
        histogram::record_corrected(self, value, expected_interval)
    }
}

impl<R: Record + ?Sized> Record for &mut R {
    #[inline(always)]
    fn record(&mut self, value: u64) {
        (**self).record(value)
    }
    #[inline(always)]
    fn record_n(&mut self, value: u64, count: u64) {
        (**self).record_n(value, count)
    }
}

/// Records a value at a [`BucketPos`] the caller computed (from an `f64`'s bits, as the
/// `metrics` recorder of `picollo-export` does, or once for many records): the shared kinds
/// implement it (`AtomicHistogram`, `picollo-alloc`'s `ThreadLocalHistogram`).
///
/// # Safety
///
/// An implementation records `pos` into the bucket it names under the histogram's layout:
/// callers rely on that to count where they computed.
pub unsafe trait RecordAt {
    /// Records one value at `pos`.
    ///
    /// # Safety
    ///
    /// `pos` is the position of a value under this histogram's layout
    /// ([`LayoutSpec::position`](crate::LayoutSpec::position) of its spec): a position
    /// computed under another layout may name a cell past the storage.
    unsafe fn record_at(&self, pos: BucketPos);
}
