//! Bucket iterators: every stored bucket with cumulative counts ([`Buckets`]) and each bucket's
//! own percentile ([`BucketPercentiles`]).

use super::histogram_read::{sum_counts, HistogramRead};
use super::percentile::{EquivalentValue, Percentile};
use crate::{Layout, Window};

/// One stored bucket, as the bucket iterators yield it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bucket {
    /// Logical index in the layout.
    pub logical_index: usize,
    /// Index in storage.
    pub storage_index: usize,
    /// Lowest value.
    pub lo: u64,
    /// Highest value (inclusive).
    pub highest: u64,
    /// Values in this bucket.
    pub count: u64,
    /// Values in this bucket and all below it in the window.
    pub cumulative: u64,
}

impl Bucket {
    /// Exclusive upper bound.
    pub fn hi(&self) -> u128 {
        self.highest as u128 + 1
    }
    /// Midpoint.
    pub fn midpoint(&self) -> u64 {
        self.lo + (self.highest - self.lo).div_ceil(2)
    }
}

/// Iterator over stored buckets; see [`ReadExt::buckets`](super::ReadExt::buckets).
pub(crate) struct Buckets<'a, H: ?Sized> {
    h: &'a H,
    layout: Layout,
    window: Window,
    next: usize,
    cumulative: u64,
    only_recorded: bool,
    /// The recorded buckets ahead of `next`, read in batches: the recorded walk jumps to the
    /// next, and the walk over every bucket reports the empty ones before it without a
    /// lookup.
    ahead: super::RecordedAhead,
}

impl<'a, H: HistogramRead + ?Sized> Buckets<'a, H> {
    pub(super) fn new(h: &'a H, only_recorded: bool) -> Self {
        Buckets {
            h,
            layout: h.layout(),
            window: h.window(),
            next: 0,
            cumulative: 0,
            only_recorded,
            ahead: super::RecordedAhead::new(),
        }
    }
}

impl<H: HistogramRead + ?Sized> Buckets<'_, H> {
    /// The first non-empty bucket at or after `next` (the window's length and 0 when none).
    fn ahead(&mut self) -> (usize, u64) {
        self.ahead
            .next_from(self.h, self.next)
            .unwrap_or((self.window.len(), 0))
    }
}

impl<H: HistogramRead + ?Sized> Iterator for Buckets<'_, H> {
    type Item = Bucket;
    fn next(&mut self) -> Option<Bucket> {
        if self.next >= self.window.len() {
            return None;
        }
        // Only the recorded buckets: jump to the next. Every bucket of a walk in batches: the
        // empty ones before the next recorded need no lookup. Others: a lookup each.
        if !self.only_recorded && !super::stats::batches(self.h) {
            let (s, count) = (self.next, self.h.count_at(self.next));
            return Some(self.bucket(s, count));
        }
        let (i, n) = self.ahead();
        let (s, count) = if self.only_recorded {
            if i >= self.window.len() {
                self.next = i;
                return None;
            }
            (i, n)
        } else if i == self.next {
            (i, n)
        } else {
            (self.next, 0)
        };
        Some(self.bucket(s, count))
    }
}

impl<H: HistogramRead + ?Sized> Buckets<'_, H> {
    /// The bucket at storage index `s`, whose count is `count`, as the walk's next.
    fn bucket(&mut self, s: usize, count: u64) -> Bucket {
        self.next = s + 1;
        self.cumulative = self.cumulative.saturating_add(count);
        let i = self.window.first() + s;
        Bucket {
            logical_index: i,
            storage_index: s,
            lo: self.layout.lo(i),
            highest: self.layout.highest(i),
            count,
            cumulative: self.cumulative,
        }
    }
}

/// Iterator over bucket percentiles; see
/// [`ReadExt::bucket_percentiles`](super::ReadExt::bucket_percentiles).
pub(crate) struct BucketPercentiles<'a, H: ?Sized> {
    buckets: Buckets<'a, H>,
    total: u64,
    selection: EquivalentValue,
}

impl<'a, H: HistogramRead + ?Sized> BucketPercentiles<'a, H> {
    pub(super) fn new(h: &'a H, only_recorded: bool, selection: EquivalentValue) -> Self {
        BucketPercentiles {
            buckets: Buckets::new(h, only_recorded),
            total: sum_counts(h),
            selection,
        }
    }
}

impl<H: HistogramRead + ?Sized> Iterator for BucketPercentiles<'_, H> {
    type Item = Percentile;
    fn next(&mut self) -> Option<Percentile> {
        let b = self.buckets.next()?;
        let before = b.cumulative - b.count;
        let rank = if self.total == 0 {
            0.0
        } else {
            ((before as f64 + b.count as f64 / 2.0) / self.total as f64 * 100.0).min(100.0)
        };
        Some(Percentile {
            rank,
            value: self.selection.of(self.buckets.layout, b.logical_index),
            logical_index: b.logical_index,
            storage_index: b.storage_index,
            lo: b.lo,
            highest: b.highest,
            count: b.count,
            rank_count: b.cumulative,
        })
    }
}
