//! The recorder's histograms: the kinds it makes ([`Kinded`]), the handle `metrics` records
//! through ([`Handle`]), and the float-to-bucket map of its record path ([`FloatBuckets`]).

use std::sync::Arc;

use picollo_alloc::{
    BuildError, Dense, HeapAtomicHistogram, HistogramBuilder, Snapshot, Sparse,
    SparseAtomicHistogram, SparseStorage, StorageChoice, ThreadLocalHistogram,
};
use picollo_core::cell::AtomicU64;
use picollo_core::storage::Cells;
use picollo_core::{
    AtomicHistogram, BucketPos, HistogramRead, Layout, LayoutSpec, RecordAt, UnitLayout, Window,
};

use super::index::Keyed;
use super::{HistogramKind, RecorderBuilder, Series};
use crate::registry::{Counter, Gauge};
use crate::source::Exported;

/// One histogram of the recorder, of the kind it was built with: the handle `metrics` calls
/// holds the histogram itself (one indirection from the call to the cells), and the
/// registry serves the same `Arc`.
#[derive(Clone)]
pub(super) enum Kinded {
    ThreadLocal(Arc<Handle<ThreadLocalHistogram<u64, Dense>>>),
    SparseThreadLocal(Arc<Handle<ThreadLocalHistogram<u64>>>),
    Atomic(Arc<Handle<HeapAtomicHistogram>>),
    SparseAtomic(Arc<Handle<SparseAtomicHistogram>>),
    /// The atomic kind with a value unit (a layout with a lowest discernible value), dense
    /// storage.
    UnitAtomic(Arc<Handle<HeapAtomicHistogram<AtomicU64, UnitLayout>>>),
    /// The atomic kind with a value unit, sparse storage.
    SparseUnitAtomic(Arc<Handle<SparseAtomicHistogram<AtomicU64, UnitLayout>>>),
}

/// Applies `$body` to the handle of whichever kind `$kinded` is, bound as `$h`.
macro_rules! each_kind {
    ($kinded:expr, $h:ident => $body:expr) => {
        match $kinded {
            Kinded::ThreadLocal($h) => $body,
            Kinded::SparseThreadLocal($h) => $body,
            Kinded::Atomic($h) => $body,
            Kinded::SparseAtomic($h) => $body,
            Kinded::UnitAtomic($h) => $body,
            Kinded::SparseUnitAtomic($h) => $body,
        }
    };
}

impl Kinded {
    /// The builder of `config`'s histograms (before the kind and storage are chosen), and
    /// whether its layout has a value unit.
    fn builder(config: &RecorderBuilder) -> (HistogramBuilder, bool) {
        let builder = HistogramBuilder::new()
            .layout(config.layout)
            .max_trackable(config.max_trackable);
        (builder, config.layout.unit_magnitude() != 0)
    }

    /// The layout and window of `config`'s histograms, resolved by [`HistogramBuilder`]
    /// (so that a layout with a lowest discernible value is recorded with its unit, or
    /// refused for a kind that records none: never stripped). The recorder resolves them
    /// once, when it is built: [`Kinded::new`] then makes each atomic series from them
    /// without the builder's checks and arithmetic (133 of a new series' 2,608 instructions,
    /// with its first record; `benches/RESULTS.md`).
    ///
    /// # Errors
    /// The builder's: an invalid window, or a value unit with the thread-local kind.
    pub(super) fn resolve(config: &RecorderBuilder) -> Result<Resolved, BuildError> {
        let (builder, unit) = Self::builder(config);
        let (layout, window) = match (config.kind, unit) {
            (HistogramKind::ThreadLocal, true) => {
                builder.resolve()?;
                return Err(BuildError::NeedsUnitLayout {
                    unit: config.layout.unit(),
                });
            }
            (_, true) => builder.lowest_discernible(config.layout.unit()).resolve()?,
            (_, false) => builder.resolve()?,
        };
        Ok(Resolved { layout, window })
    }

    /// A new histogram of `config`'s kind for the series of `key` (which it keeps a copy
    /// of), over `resolved` (from [`Kinded::resolve`] of the same `config`): what
    /// [`HistogramBuilder`]'s `atomic()` would make of it (`made_as_the_builder_makes_them`
    /// checks every kind). The thread-local kind is made by the builder.
    ///
    /// # Errors
    /// The histogram's own check of its window (which `resolve` passed already).
    pub(super) fn new(
        config: &RecorderBuilder,
        resolved: Resolved,
        invalid: &Counter,
        key: &metrics::Key,
    ) -> Result<Kinded, BuildError> {
        let Resolved { layout, window } = resolved;
        let scale = config.scale;
        let unit = layout.unit_magnitude() != 0;
        // The thread-local kind has no constructor but the builder's.
        let builder = || Self::builder(config).0;
        Ok(match (config.kind, config.dense, unit) {
            (HistogramKind::ThreadLocal, true, _) => Kinded::ThreadLocal(Handle::shared(
                builder().dense().thread_local()?,
                scale,
                invalid,
                key,
            )),
            (HistogramKind::ThreadLocal, false, _) => Kinded::SparseThreadLocal(Handle::shared(
                builder().thread_local()?,
                scale,
                invalid,
                key,
            )),
            (HistogramKind::Atomic, true, false) => Kinded::Atomic(Handle::shared(
                atomic::<Dense, Layout>(layout, window)?,
                scale,
                invalid,
                key,
            )),
            (HistogramKind::Atomic, false, false) => Kinded::SparseAtomic(Handle::shared(
                atomic::<Sparse, Layout>(layout, window)?,
                scale,
                invalid,
                key,
            )),
            (HistogramKind::Atomic, true, true) => Kinded::UnitAtomic(Handle::shared(
                atomic::<Dense, UnitLayout>(layout, window)?,
                scale,
                invalid,
                key,
            )),
            (HistogramKind::Atomic, false, true) => Kinded::SparseUnitAtomic(Handle::shared(
                atomic::<Sparse, UnitLayout>(layout, window)?,
                scale,
                invalid,
                key,
            )),
        })
    }

    /// The bytes a new series of `config` holds (what [`Kinded::footprint`] reports right
    /// after [`Kinded::new`]), or the error `new` would return, found without making a
    /// histogram: a thread-local one registers with the fork handler, so checking or
    /// measuring a configuration must not make one (new sparse storage, which allocates
    /// nothing, is made and dropped to measure it).
    ///
    /// # Errors
    /// As [`Kinded::new`].
    pub(super) fn footprint_of(config: &RecorderBuilder) -> Result<usize, BuildError> {
        let Resolved { layout, window } = Self::resolve(config)?;
        let unit = layout.unit_magnitude() != 0;
        let sparse_bytes = SparseStorage::<AtomicU64>::new(layout, window).held_bytes();
        let dense_bytes = window.len() * size_of::<AtomicU64>();
        Ok(match (config.kind, config.dense, unit) {
            // The accumulator; shards come with the recording threads.
            (HistogramKind::ThreadLocal, true, _) => dense_bytes,
            (HistogramKind::ThreadLocal, false, _) => sparse_bytes,
            (HistogramKind::Atomic, true, false) => size_of::<HeapAtomicHistogram>() + dense_bytes,
            (HistogramKind::Atomic, false, false) => {
                size_of::<SparseAtomicHistogram>() + sparse_bytes
            }
            (HistogramKind::Atomic, true, true) => {
                size_of::<HeapAtomicHistogram<AtomicU64, UnitLayout>>() + dense_bytes
            }
            (HistogramKind::Atomic, false, true) => {
                size_of::<SparseAtomicHistogram<AtomicU64, UnitLayout>>() + sparse_bytes
            }
        })
    }

    pub(super) fn read(&self) -> &dyn HistogramRead {
        each_kind!(self, h => &h.histogram)
    }

    pub(super) fn exported(&self) -> Arc<dyn Exported> {
        each_kind!(self, h => h.clone())
    }

    /// The handle `metrics` calls: typed, so a record is the conversion plus the kind's own
    /// record, with no dynamic dispatch inside.
    pub(super) fn handle(&self) -> metrics::Histogram {
        each_kind!(self, h => metrics::Histogram::from_arc(h.clone()))
    }

    /// The series this histogram is of.
    pub(super) fn series(&self) -> &Series {
        each_kind!(self, h => &h.series)
    }

    /// Bytes the series' histogram holds now.
    pub(super) fn footprint(&self) -> usize {
        each_kind!(self, h => h.histogram.footprint())
    }
}

impl Keyed for Kinded {
    /// The series' key (its own copy, in the handle's allocation).
    fn key(&self) -> &metrics::Key {
        &self.series().key
    }
}

/// The layout and window every series of a recorder is made from ([`Kinded::resolve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Resolved {
    layout: Layout,
    window: Window,
}

/// An atomic histogram of storage `S` over a resolved layout and window: the body of
/// [`HistogramBuilder::atomic`] without its resolution.
#[inline(always)]
fn atomic<S: StorageChoice, L: LayoutSpec + From<Layout>>(
    layout: Layout,
    window: Window,
) -> Result<AtomicHistogram<S::Cells<AtomicU64>, L>, BuildError> {
    let (cells, window) = S::cells::<AtomicU64>(layout, window);
    Ok(AtomicHistogram::with_storage(
        L::from(layout),
        cells,
        window,
    )?)
}

/// A histogram kind the recorder can hand to `metrics`.
pub(super) trait RecorderHistogram: Send + Sync + 'static {
    fn record_value(&self, value: u64);
}

impl<S: picollo_alloc::StorageChoice> RecorderHistogram for ThreadLocalHistogram<u64, S> {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

impl RecorderHistogram for HeapAtomicHistogram {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

impl RecorderHistogram for SparseAtomicHistogram {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

impl RecorderHistogram for HeapAtomicHistogram<AtomicU64, UnitLayout> {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

impl RecorderHistogram for SparseAtomicHistogram<AtomicU64, UnitLayout> {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

/// The handle `metrics::histogram!` returns, holding the histogram: converts and records.
pub(super) struct Handle<H> {
    histogram: H,
    scale: f64,
    /// The bucket of a scaled value from its bits (the thread-local kind's fast path).
    buckets: FloatBuckets,
    invalid: Counter,
    /// The recorder's own state of the series (one allocation with the handle).
    series: Series,
}

impl<H: RecorderHistogram + HistogramRead> Handle<H> {
    /// A shared handle of `histogram`, the series of `key`, written into its allocation in
    /// place: the histogram, the key and the handle moved whole cost about 200 instructions
    /// of `memcpy` per series (callgrind, `benches/RESULTS.md`).
    #[inline(always)]
    fn shared(histogram: H, scale: f64, invalid: &Counter, key: &metrics::Key) -> Arc<Self> {
        let mut slot = Arc::<Self>::new_uninit();
        let Some(place) = Arc::get_mut(&mut slot) else {
            unreachable!("a new Arc is unique")
        };
        place.write(Handle {
            buckets: FloatBuckets::new(histogram.layout()),
            histogram,
            scale,
            invalid: invalid.clone(),
            series: Series::new(key.clone()),
        });
        // SAFETY: written just above.
        unsafe { slot.assume_init() }
    }
}

/// `2^63` as an `f64`: values below it convert with one signed conversion.
pub(super) const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// The [`BucketPos`] of a (scaled) `f64` value, read from its bits without converting it to
/// an integer first.
///
/// For a value `v >= 2^k` (`k` the layout's block scale, `B = 2^k`) with binary exponent `m`,
/// Picollo's bucket is block `m - k`, offset `B + j`, where `j` is the top `k` bits of the
/// mantissa below the leading one (`Layout::position`). An `f64`'s bits shifted right by
/// `52 - k` are `(m + 1023)·B + j`: less `(1023 + k)·B`, that is `(m - k)·B + j`. The bucket
/// of a real `v` is that of its integer part (bucket edges at and above `B` are integers),
/// which is what converting first would record. So one shift and one subtraction give the
/// position, and one unsigned comparison keeps the path to values in `[2^k, 2^64)`:
/// everything else (values below `B`, whose buckets are not spaced this way; negative;
/// infinite; NaN, whose bits all land far above the range) takes
/// [`Handle::record_converted`]. The histogram's storage sorts out what falls outside its
/// window (underflow, overflow), as for any position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FloatBuckets {
    shift: u32,
}

impl FloatBuckets {
    pub(super) fn new(layout: Layout) -> Self {
        FloatBuckets {
            shift: 52 - layout.block_scale(),
        }
    }

    /// The [`BucketPos`] of `v` for `v` in `[B, 2^64)`.
    #[inline(always)]
    pub(super) fn position(&self, v: f64) -> Option<BucketPos> {
        let k = 52 - self.shift;
        let u = (v.to_bits() >> self.shift).wrapping_sub((1023 + u64::from(k)) << k);
        (u < (64 - u64::from(k)) << k).then(|| BucketPos {
            block: (u >> k) as usize,
            offset: ((1u64 << k) | (u & ((1u64 << k) - 1))) as usize,
        })
    }
}

impl metrics::HistogramFn for Handle<ThreadLocalHistogram<u64>> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        match self.buckets.position(v) {
            // SAFETY: `FloatBuckets::position` returns positions of values under this
            // histogram's layout (the buckets were made from it).
            Some(pos) => unsafe { self.histogram.record_at(pos) },
            None => self.record_converted(v),
        }
    }
}

impl metrics::HistogramFn for Handle<ThreadLocalHistogram<u64, Dense>> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        match self.buckets.position(v) {
            // SAFETY: as for the sparse thread-local kind above.
            Some(pos) => unsafe { self.histogram.record_at(pos) },
            None => self.record_converted(v),
        }
    }
}

impl metrics::HistogramFn for Handle<HeapAtomicHistogram> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        // The range check also turns away NaN (every comparison with it is false).
        if (0.0..TWO_63).contains(&v) {
            // SAFETY: `v` is finite and in [0, 2^63), so truncating it fits an i64.
            self.histogram
                .record_value(unsafe { v.to_int_unchecked::<i64>() } as u64);
        } else {
            self.record_converted(v);
        }
    }
}

impl metrics::HistogramFn for Handle<SparseAtomicHistogram> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        match self.buckets.position(v) {
            // SAFETY: `FloatBuckets::position` returns positions of values under this
            // histogram's layout (the buckets were made from it).
            Some(pos) => unsafe { self.histogram.record_at(pos) },
            None => self.record_converted(v),
        }
    }
}

/// The unit kinds record through the conversion: their buckets are the unit's, which the
/// float map does not follow.
impl metrics::HistogramFn for Handle<HeapAtomicHistogram<AtomicU64, UnitLayout>> {
    #[inline]
    fn record(&self, value: f64) {
        self.record_any(value * self.scale)
    }
}

impl metrics::HistogramFn for Handle<SparseAtomicHistogram<AtomicU64, UnitLayout>> {
    #[inline]
    fn record(&self, value: f64) {
        self.record_any(value * self.scale)
    }
}

impl<H: RecorderHistogram> Handle<H> {
    /// [`Handle::record_converted`] on the record path (the unit kinds').
    #[inline]
    fn record_any(&self, v: f64) {
        if v.is_nan() {
            self.invalid.inc();
        } else {
            self.histogram.record_value(v as u64);
        }
    }

    /// Converts and records: NaN counts as invalid; negative values as 0; `2^64` and above
    /// saturate at `u64::MAX`.
    #[cold]
    #[inline(never)]
    fn record_converted(&self, v: f64) {
        if v.is_nan() {
            self.invalid.inc();
        } else {
            self.histogram.record_value(v as u64);
        }
    }
}

impl<H: Exported> Exported for Handle<H> {
    fn fill_native(&self, out: &mut crate::NativeHistogram, schema: Option<crate::Schema>) {
        self.histogram.fill_native(out, schema)
    }
    fn fill_classic(&self, out: &mut crate::ClassicHistogram, buckets: &crate::ClassicBuckets) {
        self.histogram.fill_classic(out, buckets)
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        self.histogram.fill_snapshot(snapshot, deltas)
    }
}

impl metrics::CounterFn for Counter {
    fn increment(&self, value: u64) {
        self.add(value);
    }
    fn absolute(&self, value: u64) {
        self.set(value.max(self.get()));
    }
}

impl metrics::GaugeFn for Gauge {
    fn increment(&self, value: f64) {
        self.add(value);
    }
    fn decrement(&self, value: f64) {
        self.add(-value);
    }
    fn set(&self, value: f64) {
        Gauge::set(self, value);
    }
}
