//! Counts and shares at given values (HdrHistogram's `getCountBetweenValues`,
//! `getCountAtValue` and `getPercentileAtOrBelowValue`), written once over [`HistogramRead`].
//!
//! A value stands for its bucket, as in HdrHistogram: the range `lo..=hi` is widened to
//! `lowest_equivalent(lo)..=highest_equivalent(hi)`. Like every percentile, these count the
//! values inside the window ([`ReadExt::total`](super::ReadExt::total)): underflow and overflow
//! are left out, since where their values lie is not known.

use super::histogram_read::HistogramRead;

/// The storage range `start..end` of the buckets holding `lo..=hi`, clamped to the window
/// (empty when the range misses it or `lo > hi`).
fn storage_range<H: HistogramRead + ?Sized>(h: &H, lo: u64, hi: u64) -> (usize, usize) {
    let (layout, window) = (h.layout(), h.window());
    if lo > hi {
        return (0, 0);
    }
    let first = layout.index_of(lo).max(window.first());
    let last = layout.index_of(hi).min(window.last());
    if first > last {
        return (0, 0);
    }
    (first - window.first(), last - window.first() + 1)
}

/// Values whose bucket lies within `lowest_equivalent(lo)..=highest_equivalent(hi)`.
pub(super) fn count_between_of<H: HistogramRead + ?Sized>(h: &H, lo: u64, hi: u64) -> u64 {
    let (start, end) = storage_range(h, lo, hi);
    h.sum_range(start, end)
}

/// The in-window values at or below `value`'s bucket, and the in-window total.
pub(super) fn at_or_below_of<H: HistogramRead + ?Sized>(h: &H, value: u64) -> (u64, u64) {
    let (_, end) = storage_range(h, 0, value);
    let below = h.sum_range(0, end);
    let total = below.saturating_add(h.sum_range(end, h.window().len()));
    (below, total)
}

/// Java's `getPercentileAtOrBelowValue` share from a count and a total: `100 · count / total`
/// in `f64` (the product first), 100 when empty.
pub(super) fn share(count: u64, total: u64) -> f64 {
    if total == 0 {
        100.0
    } else {
        (100.0 * count as f64) / total as f64
    }
}
