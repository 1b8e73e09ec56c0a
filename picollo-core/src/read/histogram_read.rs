//! The read interface every histogram kind implements, [`HistogramRead`], and the bulk-scan
//! helper its readers share. A leaf: everything else in `read` (and `iter`) is built over it.

use crate::{Layout, Window};

/// The small read interface every histogram kind implements.
///
/// Storage index `s` holds the bucket at logical index `window().first() + s`.
pub trait HistogramRead {
    /// The bucket layout.
    fn layout(&self) -> Layout;
    /// The stored window of logical buckets.
    fn window(&self) -> Window;
    /// The count at storage index `storage_index`; 0 past the end.
    fn count_at(&self, storage_index: usize) -> u64;
    /// Values recorded below the window.
    fn underflow(&self) -> u64;
    /// Values recorded above the window.
    fn overflow(&self) -> u64;

    /// The sum of the counts at storage indices `start..end` (clamped to the window), saturated
    /// at `u64::MAX`. The default adds [`HistogramRead::count_at`]; kinds with plain storage
    /// override it with a loop the compiler vectorizes, which is what makes percentile walks
    /// fast.
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let end = end.min(self.window().len());
        let mut total = 0u64;
        for s in start.min(end)..end {
            total = total.saturating_add(self.count_at(s));
        }
        total
    }

    /// Starts an optimistic read (seqlock: optimistic read, retried after a reset): returns a token
    /// to pass to [`HistogramRead::read_retry`]. Kinds that can be reset concurrently wait here
    /// while a reset is in progress (**blocking**: see [`HistogramRead::try_read_begin`] for
    /// contexts that may have interrupted the reset). The default, for kinds that cannot be,
    /// returns 0.
    #[inline]
    fn read_begin(&self) -> u64 {
        0
    }

    /// As [`HistogramRead::read_begin`], without waiting: `None` while a reset is in progress. The
    /// `try_` reads of [`ReadExt`](super::ReadExt) start here, which is what makes them safe in an
    /// interrupt handler that may have landed inside a reset. The default calls
    /// [`HistogramRead::read_begin`]: kinds whose `read_begin` can wait override both.
    #[inline]
    fn try_read_begin(&self) -> Option<u64> {
        Some(self.read_begin())
    }

    /// Whether a structural change (a reset) happened since `read_begin` returned `token`, so the
    /// read must be redone. The default never asks for a retry.
    #[inline]
    fn read_retry(&self, token: u64) -> bool {
        let _ = token;
        false
    }

    /// How many times the histogram was reset (`ResetCount` in Picollo for .NET). Kinds without a
    /// reset, such as snapshots, report 0. Wraps at 2^32 for the shared kinds on 32-bit
    /// targets.
    #[inline]
    fn reset_count(&self) -> u64 {
        0
    }
}

impl<H: HistogramRead + ?Sized> HistogramRead for &H {
    fn layout(&self) -> Layout {
        (**self).layout()
    }
    fn window(&self) -> Window {
        (**self).window()
    }
    fn count_at(&self, storage_index: usize) -> u64 {
        (**self).count_at(storage_index)
    }
    fn underflow(&self) -> u64 {
        (**self).underflow()
    }
    fn overflow(&self) -> u64 {
        (**self).overflow()
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        (**self).sum_range(start, end)
    }
    fn read_begin(&self) -> u64 {
        (**self).read_begin()
    }
    fn try_read_begin(&self) -> Option<u64> {
        (**self).try_read_begin()
    }
    fn read_retry(&self, token: u64) -> bool {
        (**self).read_retry(token)
    }
    fn reset_count(&self) -> u64 {
        (**self).reset_count()
    }
}

/// Calls `take(r)` for each run `r < runs` for which `any(r)` holds, in increasing order:
/// the scan bulk readers use to skip runs of empty cells.
///
/// Two passes per 64 runs: first `any` over them into a mask, without a branch (whether a
/// run is empty depends on the data: a branch on it would mispredict about once per recorded
/// bucket of a sparse histogram), then the mask's runs, found with trailing-zero counts
/// (their cells, just read, are still in cache).
///
/// ```
/// let cells = [0u64, 0, 3, 0, 0, 0, 7, 1];
/// let mut seen = Vec::new();
/// picollo_core::read::for_each_nonempty_run(4, |r| cells[2 * r] | cells[2 * r + 1] != 0, |r| {
///     seen.push(r)
/// });
/// assert_eq!(seen, [1, 3]);
/// ```
#[inline(always)]
pub fn for_each_nonempty_run(
    runs: usize,
    any: impl Fn(usize) -> bool,
    mut take: impl FnMut(usize),
) {
    for word in (0..runs).step_by(64) {
        let mut mask = 0u64;
        for r in 0..64.min(runs - word) {
            mask |= u64::from(any(word + r)) << r;
        }
        while mask != 0 {
            take(word + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
    }
}

pub(super) fn sum_counts<H: HistogramRead + ?Sized>(h: &H) -> u64 {
    h.sum_range(0, h.window().len())
}
