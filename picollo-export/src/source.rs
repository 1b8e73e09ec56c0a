//! What a registry can serve: every Picollo histogram kind, read without stalling recorders.
//!
//! | kind | registered as | a scrape… | sum |
//! |---|---|---|---|
//! | thread-local | `Arc<ThreadLocalHistogram>` | sums the shards with relaxed loads (seqlock retry around resets and thread exits only): recorders never wait | estimated |
//! | atomic | `Arc<HeapAtomicHistogram>` | relaxed loads | estimated |
//! | approximate | `Arc<BuiltApproxHistogram>` | relaxed loads | estimated |
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
    AtomicHistogram, Cells, CellsMut, Counter, Histogram, HistogramRead, LayoutSpec, Record,
};

use crate::{ClassicBuckets, ClassicHistogram, Mapping, NativeHistogram, Schema};

/// A histogram a [`crate::Registry`] serves: it fills the exporter's forms from itself in one
/// consistent read (with its exact sum, when it keeps one).
///
/// Implemented for every Picollo kind (see the [module docs](self)), each with code
/// specialized to the kind (no dynamic dispatch per bucket). For another [`HistogramRead`]
/// type, register it wrapped in [`Readable`].
pub trait Exported: Send + Sync {
    /// Fills `out` at `schema` (`None`: the layout's own, [`Mapping::for_layout`]).
    fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>);
    /// Fills `out` with `buckets`.
    fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets);
    /// Updates `snapshot` from the histogram ([`Snapshot::update`]) and returns the exact sum
    /// read with it, if the kind keeps one.
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128>;
}

/// The mapping for `h` at an optional schema.
fn mapping_for<H: HistogramRead + ?Sized>(h: &H, schema: Option<Schema>) -> Mapping {
    let layout = h.layout();
    schema.map_or(Mapping::for_layout(layout), |s| Mapping::new(layout, s))
}

/// Implements [`Exported`] for a kind that is itself a [`HistogramRead`] keeping no sum: its
/// buckets are read with its own bulk read ([`HistogramRead::recorded_runs`]).
macro_rules! exported_by_reading {
    () => {
        fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>) {
            out.fill_from(self, mapping_for(self, schema));
        }
        fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets) {
            out.fill_from(self, buckets);
        }
        fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
            snapshot.update(self, deltas);
            None
        }
    };
}

impl<C: LocalCounter, S: picollo_alloc::StorageChoice> Exported for ThreadLocalHistogram<C, S> {
    exported_by_reading!();
}

impl<S, L> Exported for AtomicHistogram<S, L>
where
    S: Cells + Send + Sync,
    S::Item: AtomicCounter,
    L: LayoutSpec + Send + Sync,
{
    exported_by_reading!();
}

impl<S, L> Exported for ApproxHistogram<S, L>
where
    S: Cells<Item = ScalableCell> + Send + Sync,
    L: LayoutSpec + Send + Sync,
{
    exported_by_reading!();
}

impl<S, L> Exported for Histogram<S, L>
where
    S: Cells + Send + Sync,
    S::Item: Counter,
    L: LayoutSpec + Send + Sync,
{
    exported_by_reading!();
}

impl Exported for Snapshot {
    exported_by_reading!();
}

/// Any other [`HistogramRead`] type, served by reading it (no exact sum).
///
/// ```
/// use std::sync::Arc;
/// use picollo_alloc::{HistogramBuilder, SnapshotExt};
/// use picollo_export::{Labels, Readable, Registry};
///
/// let h = HistogramBuilder::new().plain().unwrap();
/// let registry = Registry::new();
/// registry.register("x", "", &Labels::empty(), Arc::new(Readable(h.snapshot())))?;
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Readable<H>(pub H);

impl<H: HistogramRead + Send + Sync> Exported for Readable<H> {
    fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>) {
        out.fill_from(&self.0, mapping_for(&self.0, schema));
    }
    fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets) {
        out.fill_from(&self.0, buckets);
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        snapshot.update(&self.0, deltas);
        None
    }
}

impl<H: HistogramRead + Send + Sync> Exported for Summed<H> {
    fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>) {
        out.fill_from(&self.histogram, mapping_for(&self.histogram, schema));
        out.set_exact_sum(self.sum);
    }
    fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets) {
        out.fill_from(&self.histogram, buckets);
        out.set_exact_sum(self.sum);
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        snapshot.update(&self.histogram, deltas);
        Some(self.sum)
    }
}

/// A plain (single-writer) kind behind a lock: the scrape holds the lock for one pass.
impl<T: Exported + Send> Exported for Mutex<T> {
    fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>) {
        // A writer that panicked left whole counts behind: still serve them.
        self.lock()
            .unwrap_or_else(|e| e.into_inner())
            .fill_native(out, schema)
    }
    fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets) {
        self.lock()
            .unwrap_or_else(|e| e.into_inner())
            .fill_classic(out, buckets)
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        self.lock()
            .unwrap_or_else(|e| e.into_inner())
            .fill_snapshot(snapshot, deltas)
    }
}

/// As for [`Mutex`], with a read lock.
impl<T: Exported + Send> Exported for RwLock<T> {
    fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>) {
        self.read()
            .unwrap_or_else(|e| e.into_inner())
            .fill_native(out, schema)
    }
    fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets) {
        self.read()
            .unwrap_or_else(|e| e.into_inner())
            .fill_classic(out, buckets)
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        self.read()
            .unwrap_or_else(|e| e.into_inner())
            .fill_snapshot(snapshot, deltas)
    }
}

/// A histogram plus the exact sum of the values recorded through it (one `u128` add per
/// record), for the plain single-writer kind. Exporters then report the exact sum instead of
/// the bucket-midpoint estimate.
///
/// ```
/// use picollo_alloc::{HistogramBuilder, Record};
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
}

/// Records into the histogram and adds each value to the exact sum.
impl<H: Record> Record for Summed<H> {
    #[inline]
    fn record(&mut self, value: u64) {
        self.histogram.record(value);
        self.sum = self.sum.saturating_add(value as u128);
    }

    #[inline]
    fn record_n(&mut self, value: u64, count: u64) {
        self.histogram.record_n(value, count);
        self.sum = self.sum.saturating_add(value as u128 * count as u128);
    }
}

impl<S, L> Summed<Histogram<S, L>>
where
    S: CellsMut,
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
    picollo_core::forward_histogram_read!(|s| s.histogram);
}
