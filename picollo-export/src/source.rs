//! What a registry can serve: every Picollo histogram kind, read without stalling recorders.
//!
//! | kind | registered as | a scrape… | sum |
//! |---|---|---|---|
//! | thread-local | `Arc<ThreadLocalHistogram>` | sums the shards with relaxed loads (seqlock retry around resets and thread exits only): recorders never wait | estimated |
//! | atomic | `Arc<HeapAtomicHistogram>` | relaxed loads | estimated |
//! | approximate | `Arc<HeapApproxHistogram>` | relaxed loads | estimated |
//! | plain behind a lock | `Arc<Mutex<Summed<HeapHistogram>>>` (or without [`Summed`]) | holds the lock for one pass over the buckets | exact with [`Summed`] |
//! | snapshot, finished histogram | `Arc<Snapshot>`, `Arc<HeapHistogram>` | reads it | estimated |
//!
//! No kind needs a recorder to act before a scrape sees its counts (the failure of
//! hdrhistogram's `SyncHistogram::refresh`, which waits for every recorder).
//!
//! "Estimated" sums are computed from bucket midpoints (exact while every value has its own
//! bucket, otherwise within `0.5 / B` relative): an exact sum costs an extra add per record,
//! which the plain kind affords ([`Summed`]) but a shared kind would pay as one more shared
//! read-modify-write per record, the cost the thread-local kind exists to avoid.

use std::sync::{Mutex, RwLock};

use picollo_alloc::thread_local::LocalCounter;
use picollo_alloc::{Snapshot, ThreadLocalHistogram};
use picollo_core::approx::ApproxHistogram;
use picollo_core::atomic::AtomicCounter;
use picollo_core::scalable::ScalableCell;
use picollo_core::{
    AtomicHistogram, Counter, Histogram, HistogramRead, Layout, LayoutSpec, Record, Storage,
    StorageMut, Window,
};

/// A histogram a [`crate::Registry`] serves: it hands a consistent-read view of itself, and its
/// exact sum when it keeps one, to a closure.
///
/// Implemented for every Picollo kind (see the [module docs](self)); implement it for your
/// own [`HistogramRead`] type with `f(self, None)`.
pub trait Exported: Send + Sync {
    /// Calls `f` with the histogram to read and its exact sum, if known.
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>));
}

impl<C: LocalCounter> Exported for ThreadLocalHistogram<C> {
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        f(self, None)
    }
}

impl<S, L> Exported for AtomicHistogram<S, L>
where
    S: Storage + Send + Sync,
    S::Item: AtomicCounter,
    L: LayoutSpec + Send + Sync,
{
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        f(self, None)
    }
}

impl<S, L> Exported for ApproxHistogram<S, L>
where
    S: Storage<Item = ScalableCell> + Send + Sync,
    L: LayoutSpec + Send + Sync,
{
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        f(self, None)
    }
}

impl<S, L> Exported for Histogram<S, L>
where
    S: Storage + Send + Sync,
    S::Item: Counter,
    L: LayoutSpec + Send + Sync,
{
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        f(self, None)
    }
}

impl Exported for Snapshot {
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        f(self, None)
    }
}

impl<H: HistogramRead + Send + Sync> Exported for Summed<H> {
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        f(&self.histogram, Some(self.sum))
    }
}

/// A plain (single-writer) kind behind a lock: the scrape holds the lock for one pass.
impl<T: Exported + Send> Exported for Mutex<T> {
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        // A writer that panicked left whole counts behind: still serve them.
        let guard = self.lock().unwrap_or_else(|e| e.into_inner());
        guard.with_read(f)
    }
}

/// As for [`Mutex`], with a read lock.
impl<T: Exported + Send> Exported for RwLock<T> {
    fn with_read(&self, f: &mut dyn FnMut(&dyn HistogramRead, Option<u128>)) {
        let guard = self.read().unwrap_or_else(|e| e.into_inner());
        guard.with_read(f)
    }
}

/// A histogram plus the exact sum of the values recorded through it (one `u128` add per
/// record), for the plain single-writer kind. Exporters then report the exact sum instead of
/// the bucket-midpoint estimate.
///
/// ```
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::{NativeHistogram, Summed};
///
/// let mut h = Summed::new(HistogramBuilder::new().relative_error(0.01).plain().unwrap());
/// h.record(5_000);
/// h.record(u64::MAX); // the u128 sum does not wrap
/// assert_eq!(h.sum(), 5_000 + u64::MAX as u128);
/// let mut n = NativeHistogram::from_histogram(h.get_ref());
/// assert!(!n.sum_is_exact());
/// n.set_exact_sum(h.sum());
/// assert!(n.sum_is_exact());
/// ```
#[derive(Clone, Debug)]
pub struct Summed<H> {
    histogram: H,
    sum: u128,
}

impl<H> Summed<H> {
    /// Wraps `histogram`; the sum starts at 0 (values already in it are not summed).
    pub fn new(histogram: H) -> Self {
        Summed { histogram, sum: 0 }
    }

    /// The exact sum of the values recorded through this wrapper (saturating at `u128::MAX`).
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The histogram.
    pub fn get_ref(&self) -> &H {
        &self.histogram
    }

    /// The histogram and the sum.
    pub fn into_parts(self) -> (H, u128) {
        (self.histogram, self.sum)
    }
}

impl<H: Record> Summed<H> {
    /// Records `value` and adds it to the sum.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.histogram.record(value);
        self.sum = self.sum.saturating_add(value as u128);
    }

    /// Records `count` occurrences of `value`.
    #[inline]
    pub fn record_n(&mut self, value: u64, count: u64) {
        self.histogram.record_n(value, count);
        self.sum = self.sum.saturating_add(value as u128 * count as u128);
    }
}

impl<S, L> Summed<Histogram<S, L>>
where
    S: StorageMut,
    S::Item: Counter,
    L: LayoutSpec,
{
    /// Clears the histogram and the sum.
    pub fn reset(&mut self) {
        self.histogram.reset();
        self.sum = 0;
    }
}

impl<H: HistogramRead> HistogramRead for Summed<H> {
    fn layout(&self) -> Layout {
        self.histogram.layout()
    }
    fn window(&self) -> Window {
        self.histogram.window()
    }
    fn count_at(&self, storage_index: usize) -> u64 {
        self.histogram.count_at(storage_index)
    }
    fn underflow(&self) -> u64 {
        self.histogram.underflow()
    }
    fn overflow(&self) -> u64 {
        self.histogram.overflow()
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        self.histogram.sum_range(start, end)
    }
    fn read_begin(&self) -> u64 {
        self.histogram.read_begin()
    }
    fn read_retry(&self, token: u64) -> bool {
        self.histogram.read_retry(token)
    }
}
