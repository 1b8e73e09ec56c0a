//! The histogram builder (Picollo for .NET's `Factory`) and the default histogram.
//!
//! ```
//! use picollo_alloc::HistogramBuilder;
//! use picollo_core::{HistogramRead, ReadExt};
//!
//! let mut h = HistogramBuilder::new()
//!     .relative_error(0.01)
//!     .u32_storage()
//!     .min_trackable(10_000)
//!     .max_trackable(30_000)
//!     .plain()
//!     .unwrap();
//! h.record(20_000);
//! h.record(40_000); // above the window: overflow
//! assert_eq!((h.total(), h.overflow()), (1, 1));
//! ```
//!
//! # Sparse or dense storage
//!
//! The builder makes histograms over [sparse storage](crate::sparse) by default: memory that
//! follows what was recorded (pages of cells per block, installed on first touch, and a small
//! table for cold buckets), so a full-range histogram that holds a few values costs a few
//! hundred bytes instead of its whole window. That is the right choice for servers with many
//! series. [`HistogramBuilder::dense`] gives every bucket of the window a cell from the start:
//! the fewest instructions per record from the first value on, for a few hot histograms whose
//! buckets will all be touched, at the memory of the whole window.
//!
//! ```
//! use picollo_alloc::HistogramBuilder;
//!
//! let sparse = HistogramBuilder::new().atomic().unwrap(); // all of u64, 0.1 %
//! let dense = HistogramBuilder::new().dense().atomic().unwrap();
//! sparse.record(48_213);
//! dense.record(48_213);
//! assert!(sparse.footprint() < 1_000);
//! assert!(dense.footprint() > 200_000);
//! ```

use crate::heap::{HeapAtomicHistogram, HeapHistogram};
use crate::sparse::{PageCell, SparseStorage};
pub use crate::storage_choice::{Dense, Sparse, StorageChoice};
use crate::thread_local::{LocalCounter, ThreadLocalHistogram};
use core::fmt;
use core::marker::PhantomData;
use picollo_core::approx::ApproxHistogram;
use picollo_core::atomic::AtomicCounter;
use picollo_core::scalable::ScalableCell;
use picollo_core::{
    AtomicHistogram, Cells, Counter, Histogram, Layout, LayoutError, LayoutSpec, UnitLayout,
    Window, WindowError,
};
use portable_atomic::{AtomicU16, AtomicU32, AtomicU64};

/// A counter width the builder can store: `u16`, `u32` or `u64`, with its atomic twin.
pub trait StorageWidth: Counter + LocalCounter + PageCell {
    /// The atomic counter of the same width.
    type Atomic: AtomicCounter + PageCell;
}

impl StorageWidth for u16 {
    type Atomic = AtomicU16;
}

impl StorageWidth for u32 {
    type Atomic = AtomicU32;
}

impl StorageWidth for u64 {
    type Atomic = AtomicU64;
}

/// Why the builder could not build.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum BuildError {
    /// The relative error or block scale is not acceptable.
    Layout(LayoutError),
    /// The min and max trackable values do not form a window.
    Window(WindowError),
    /// The layout given to [`HistogramBuilder::layout`] has a value unit (a lowest discernible
    /// value above 1), and this builder makes kinds that record none: a unit is set with
    /// [`HistogramBuilder::lowest_discernible`], whose builder makes the plain and atomic kinds
    /// that record it (the thread-local and approximate kinds record no unit, and do not exist
    /// there). Nothing drops a unit silently.
    NeedsUnitLayout {
        /// The layout's unit: values are recorded in multiples of it.
        unit: u64,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Layout(e) => write!(f, "histogram layout: {e}"),
            Self::Window(e) => write!(f, "histogram window: {e}"),
            Self::NeedsUnitLayout { unit } => write!(
                f,
                "the layout records values in units of {unit} (a lowest discernible value), and \
                 this builder makes kinds without one: set it with .lowest_discernible({unit}) \
                 (plain and atomic histograms), or give a layout without a unit"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<LayoutError> for BuildError {
    fn from(e: LayoutError) -> Self {
        Self::Layout(e)
    }
}

impl From<WindowError> for BuildError {
    fn from(e: WindowError) -> Self {
        match e {
            WindowError::NeedsUnitLayout(magnitude) => Self::NeedsUnitLayout {
                unit: 1u64 << magnitude.min(63),
            },
            e => Self::Window(e),
        }
    }
}

/// Configures a histogram: precision, counter width, trackable range, storage, then the kind.
/// Every histogram on the heap is built here.
///
/// Defaults: relative error 0.001 (block size 512), `u64` counters, the full `u64` range,
/// sparse storage (see the [module docs](self) for sparse or dense).
/// Invalid settings are reported by the final `plain`/`atomic`/… call, not silently clamped.
///
/// The type follows the choices: `C` the counter width, `S` the storage, and `L` the layout
/// spec the histograms record through: [`Layout`], or [`UnitLayout`] once
/// [`HistogramBuilder::lowest_discernible`] set a value unit. Only the plain and atomic kinds
/// record a unit, so a unit builder has no `thread_local` or `approximate`: asking for one is
/// a compile error, not a unit dropped at run time.
///
/// ```compile_fail,E0599
/// use picollo_alloc::HistogramBuilder;
/// // The thread-local kind records no value unit.
/// let h = HistogramBuilder::new().lowest_discernible(1000).thread_local();
/// ```
///
/// HdrHistogram users can give the precision as significant digits, and see what a
/// configuration costs before building it:
///
/// ```
/// use picollo_alloc::HistogramBuilder;
///
/// let b = HistogramBuilder::new().sigfig(3).max_trackable(3_600_000_000);
/// let f = b.footprint().unwrap();
/// assert_eq!(f.block_size, 1024); // HdrHistogram's 2048 sub-buckets for 3 digits
/// assert_eq!(f.plain_bytes, f.buckets * 8 + f.header_bytes);
/// let small = b.u16_storage().footprint().unwrap();
/// assert_eq!(small.buckets, f.buckets);
/// assert!(small.plain_bytes < f.plain_bytes / 3);
/// // Sparse storage, before anything is recorded: the histogram's own fields, no allocation.
/// assert!(f.sparse_empty_bytes < 300);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct HistogramBuilder<C = u64, S = Sparse, L = Layout> {
    layout: Result<Layout, LayoutError>,
    lowest_discernible: u64,
    bounds: Bounds,
    width: PhantomData<C>,
    storage: PhantomData<S>,
    spec: PhantomData<L>,
}

/// The trackable range: values, or a window of the builder's layout.
#[derive(Clone, Copy, Debug)]
enum Bounds {
    Values { min: u64, max: u64 },
    Window(Window),
}

/// A builder with the defaults of [`HistogramBuilder::new`] but the counter width and storage
/// of its type: what code generic over them starts from,
/// `HistogramBuilder::<C, S>::default()`.
impl<C: StorageWidth, S: StorageChoice> Default for HistogramBuilder<C, S> {
    fn default() -> Self {
        HistogramBuilder::new().with::<C, S, Layout>()
    }
}

impl HistogramBuilder<u64, Sparse> {
    /// A builder with the defaults.
    pub fn new() -> Self {
        HistogramBuilder {
            layout: Ok(Layout::DEFAULT),
            lowest_discernible: 1,
            bounds: Bounds::Values {
                min: 0,
                max: u64::MAX,
            },
            width: PhantomData,
            storage: PhantomData,
            spec: PhantomData,
        }
    }
}

/// An approximate histogram over the storage a builder chose ([`HistogramBuilder::approximate`]).
pub type BuiltApproxHistogram<S = Sparse> =
    ApproxHistogram<<S as StorageChoice>::Cells<ScalableCell>, Layout>;

impl<C: StorageWidth, S: StorageChoice, L: LayoutSpec + From<Layout>> HistogramBuilder<C, S, L> {
    /// The largest acceptable relative error (see [`Layout::try_from_relative_error`]).
    pub fn relative_error(mut self, relative_error: f64) -> Self {
        self.layout = Layout::try_from_relative_error(relative_error);
        self
    }

    /// An explicit layout. A layout with a value unit ([`Layout::with_lowest_discernible`])
    /// keeps it, as if [`HistogramBuilder::lowest_discernible`] had been set to its unit: a
    /// unit builder records it, the others refuse it ([`BuildError::NeedsUnitLayout`]); it is
    /// never dropped.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Ok(layout);
        if layout.unit_magnitude() != 0 {
            self.lowest_discernible = layout.unit();
        }
        self
    }

    /// HdrHistogram's precision in significant decimal digits (`0..=5`), mapped to the
    /// coarsest layout with at least that precision ([`Layout::from_significant_digits`]):
    /// `sigfig(3)` is block size 1024, index-for-index HdrHistogram's layout for 3 digits,
    /// so V2 logs convert exactly.
    pub fn sigfig(mut self, digits: u32) -> Self {
        self.layout = Layout::try_from_significant_digits(digits);
        self
    }

    /// `u16` bucket counters (HdrHistogram's `ShortHistogram`): a quarter of the memory of
    /// `u64`; a bucket saturates at 65,535.
    pub fn u16_storage(self) -> HistogramBuilder<u16, S, L> {
        self.with::<u16, S, L>()
    }

    /// `u32` bucket counters: half the memory; a bucket saturates at `u32::MAX`.
    pub fn u32_storage(self) -> HistogramBuilder<u32, S, L> {
        self.with::<u32, S, L>()
    }

    /// `u64` bucket counters (the default).
    pub fn u64_storage(self) -> HistogramBuilder<u64, S, L> {
        self.with::<u64, S, L>()
    }

    /// Sparse storage (the default): memory follows what was recorded. The window is widened
    /// to whole blocks of the layout (values in them are counted in buckets rather than as
    /// underflow or overflow); see [`crate::sparse`].
    pub fn sparse(self) -> HistogramBuilder<C, Sparse, L> {
        self.with::<C, Sparse, L>()
    }

    /// Dense storage: a cell for every bucket of the window from the start, for the hottest
    /// histograms (the fewest instructions per record from the first value on).
    pub fn dense(self) -> HistogramBuilder<C, Dense, L> {
        self.with::<C, Dense, L>()
    }

    fn with<D, T, M>(self) -> HistogramBuilder<D, T, M> {
        HistogramBuilder {
            layout: self.layout,
            lowest_discernible: self.lowest_discernible,
            bounds: self.bounds,
            width: PhantomData,
            storage: PhantomData,
            spec: PhantomData,
        }
    }

    /// HdrHistogram's lowest discernible value: values are recorded in units of the largest
    /// power of two not above it ([`Layout::with_lowest_discernible`]), so a histogram ported
    /// from `new_with_bounds(1000, highest, 3)` is `.lowest_discernible(1000)
    /// .max_trackable(highest).sigfig(3).plain()` (or `.atomic()`) and gives its answers. Not
    /// a minimum: smaller values are still counted, in the first bucket (see
    /// [`HistogramBuilder::min_trackable`] for that). Within `1..2^32` (1 is no unit), checked
    /// when the histogram is built.
    ///
    /// The builder it returns records through [`UnitLayout`]: its `plain()` and `atomic()`
    /// record the unit, and it has no `thread_local()` or `approximate()`, kinds that record
    /// no unit.
    ///
    /// ```
    /// use picollo_alloc::HistogramBuilder;
    /// use picollo_core::{EquivalentValue, HistogramRead, ReadExt};
    ///
    /// let mut h = HistogramBuilder::new().lowest_discernible(1000).sigfig(3).plain()?;
    /// h.record(10_007 * 1024);
    /// let p = h.percentile(50.0, EquivalentValue::Upper)?;
    /// assert_eq!(p.value, 10_007 * 1024 + 1023); // HdrHistogram's highestEquivalentValue
    /// assert_eq!(h.layout().unit(), 512);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lowest_discernible(mut self, lowest: u64) -> HistogramBuilder<C, S, UnitLayout> {
        self.lowest_discernible = lowest;
        self.with::<C, S, UnitLayout>()
    }

    /// The smallest value stored in buckets; smaller values count as underflow.
    pub fn min_trackable(mut self, min: u64) -> Self {
        let (_, max) = self.value_bounds();
        self.bounds = Bounds::Values { min, max };
        self
    }

    /// The largest value stored in buckets; larger values count as overflow.
    pub fn max_trackable(mut self, max: u64) -> Self {
        let (min, _) = self.value_bounds();
        self.bounds = Bounds::Values { min, max };
        self
    }

    /// The window of the builder's layout to store, as another histogram's
    /// [`window()`](picollo_core::HistogramRead::window): a copy of its shape without a
    /// detour through values. A window is a range of the layout's buckets, read under the
    /// builder's layout when it builds: give it the layout the window was made for.
    ///
    /// ```
    /// use picollo_alloc::HistogramBuilder;
    /// use picollo_core::{HistogramRead, Layout, Window};
    ///
    /// let window = Window::new(Layout::DEFAULT, 100, 10_000)?;
    /// let h = HistogramBuilder::new().window(window).dense().plain()?;
    /// assert_eq!(h.window(), window);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window(mut self, window: Window) -> Self {
        self.bounds = Bounds::Window(window);
        self
    }

    /// The trackable values, for a builder whose bounds are a window: those it covers.
    fn value_bounds(&self) -> (u64, u64) {
        match (self.bounds, self.layout) {
            (Bounds::Values { min, max }, _) => (min, max),
            (Bounds::Window(w), Ok(layout)) => (w.min_value(layout), w.max_value(layout)),
            (Bounds::Window(_), Err(_)) => (0, u64::MAX),
        }
    }

    /// The layout and window this builder describes (before sparse storage widens the window
    /// to whole blocks).
    pub fn resolve(&self) -> Result<(Layout, Window), BuildError> {
        let layout = self
            .layout?
            .with_lowest_discernible(self.lowest_discernible)?;
        let window = match self.bounds {
            Bounds::Values { min, max } => Window::new(layout, min, max)?,
            Bounds::Window(w) => Window::new(layout, w.min_value(layout), w.max_value(layout))?,
        };
        Ok((layout, window))
    }

    /// What each kind of this configuration costs in memory, before building it (or the
    /// configuration error the build would report).
    pub fn footprint(&self) -> Result<Footprint, BuildError> {
        let (layout, window) = self.resolve()?;
        let buckets = window.len();
        let header_bytes = size_of::<HeapHistogram<C>>();
        let sparse = SparseStorage::<C>::new(layout, window);
        let blocks = sparse.window().len() >> layout.block_scale();
        let limit = SparseStorage::<C>::cold_word_limit(blocks, layout.block_scale());
        Ok(Footprint {
            block_size: layout.block_size(),
            buckets,
            header_bytes,
            plain_bytes: header_bytes + buckets * size_of::<C>(),
            atomic_bytes: size_of::<HeapAtomicHistogram<C::Atomic>>()
                + buckets * size_of::<C::Atomic>(),
            approximate_bytes: size_of::<BuiltApproxHistogram<Dense>>()
                + buckets * size_of::<ScalableCell>(),
            thread_local_bytes_per_thread: ThreadLocalHistogram::<C>::estimated_footprint(
                buckets, 1,
            ) - ThreadLocalHistogram::<C>::estimated_footprint(
                buckets, 0,
            ),
            thread_local_base_bytes: ThreadLocalHistogram::<C>::estimated_footprint(buckets, 0),
            sparse_empty_bytes: size_of::<SparseHistogram<C>>() + sparse.held_bytes(),
            sparse_max_bytes: size_of::<SparseHistogram<C>>()
                + sparse.held_bytes()
                + sparse.directory_bytes()
                + sparse.window().len() * size_of::<C>()
                + limit * crate::sparse::COLD_WORD_BYTES,
        })
    }

    /// A plain, single-writer histogram (recording the value unit of a unit builder).
    pub fn plain(self) -> Result<Histogram<S::Cells<C>, L>, BuildError> {
        let (layout, window) = self.resolve()?;
        let (cells, window) = S::cells::<C>(layout, window);
        Ok(Histogram::with_storage(L::from(layout), cells, window)?)
    }

    /// An atomic histogram: many writers, one `fetch_add` per record (recording the value unit
    /// of a unit builder).
    pub fn atomic(self) -> Result<AtomicHistogram<S::Cells<C::Atomic>, L>, BuildError> {
        let (layout, window) = self.resolve()?;
        let (cells, window) = S::cells::<C::Atomic>(layout, window);
        Ok(AtomicHistogram::with_storage(
            L::from(layout),
            cells,
            window,
        )?)
    }
}

/// The kinds that record no value unit: the plain layout spec refuses one
/// ([`BuildError::NeedsUnitLayout`]), and a unit builder has neither.
impl<C: StorageWidth, S: StorageChoice> HistogramBuilder<C, S, Layout> {
    /// A thread-local histogram: each thread writes its own shard, readers sum them. It
    /// records no value unit (a unit builder has no `thread_local`).
    pub fn thread_local(self) -> Result<ThreadLocalHistogram<C, S>, BuildError> {
        let (layout, window) = self.resolve()?;
        Ok(ThreadLocalHistogram::new(layout, window)?)
    }

    /// An approximate histogram: shared buckets that count with the scalable scheme of "Scalable
    /// Approximate Counting" (Andy Ayers, 2023; default threshold 13), for hot shared histograms
    /// where contention dominates. The counter width does not apply (scalable cells are 64-bit).
    /// Over sparse storage its cells live in pages only (no cold tier). It records no value
    /// unit (a unit builder has no `approximate`).
    pub fn approximate(self) -> Result<BuiltApproxHistogram<S>, BuildError> {
        let (layout, window) = self.resolve()?;
        let (cells, window) = S::cells::<ScalableCell>(layout, window);
        Ok(ApproxHistogram::with_storage(layout, cells, window)?)
    }
}

/// The memory a histogram configuration costs, per kind ([`HistogramBuilder::footprint`]).
///
/// Bytes of the histogram value plus its bucket storage on the heap; the thread-local kind
/// also allocates a small node per shard, not counted here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Footprint {
    /// Buckets per block (`B`); the relative error is `0.5 / B`.
    pub block_size: u64,
    /// Buckets in the window.
    pub buckets: usize,
    /// The plain histogram's fixed part (layout, window, outside and reset counts, storage
    /// pointer).
    pub header_bytes: usize,
    /// A plain histogram ([`HistogramBuilder::plain`]).
    pub plain_bytes: usize,
    /// An atomic histogram ([`HistogramBuilder::atomic`]).
    pub atomic_bytes: usize,
    /// An approximate histogram ([`HistogramBuilder::approximate`]); its cells are 64-bit.
    pub approximate_bytes: usize,
    /// A thread-local histogram ([`HistogramBuilder::thread_local`]): the accumulator.
    pub thread_local_base_bytes: usize,
    /// A thread-local histogram: each thread that records at the same time as others adds
    /// a shard, and after the first reset a baseline of the same size.
    pub thread_local_bytes_per_thread: usize,
    /// A plain histogram over sparse storage before anything is recorded: the value itself
    /// (the directory of pages and the cold tier's tables come with the first records).
    pub sparse_empty_bytes: usize,
    /// A plain histogram over sparse storage at most: the directory, every page installed and
    /// the cold tier at its limit (its tables' headers aside).
    pub sparse_max_bytes: usize,
}

impl Footprint {
    #[cfg(test)]
    /// The thread-local kind's bucket storage with `threads` concurrent recording threads,
    /// after a reset.
    pub(crate) fn thread_local_bytes(&self, threads: usize) -> usize {
        self.thread_local_base_bytes + threads * self.thread_local_bytes_per_thread
    }
}

/// A plain histogram over sparse storage (the builder's default); `L` is [`UnitLayout`] for
/// one that records a value unit.
pub type SparseHistogram<C = u64, L = Layout> = Histogram<SparseStorage<C>, L>;
/// An atomic histogram over sparse storage (the builder's default); `L` as for
/// [`SparseHistogram`].
pub type SparseAtomicHistogram<A = AtomicU64, L = Layout> = AtomicHistogram<SparseStorage<A>, L>;

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::{EquivalentValue, HistogramRead, ReadExt, Record};

    #[test]
    fn errors_are_reported_not_clamped() {
        let e = HistogramBuilder::new().relative_error(f64::NAN).plain();
        assert!(matches!(e, Err(BuildError::Layout(LayoutError::NotFinite))));
        let e = HistogramBuilder::new().relative_error(-1.0).atomic();
        assert!(matches!(
            e,
            Err(BuildError::Layout(LayoutError::NotPositive))
        ));
        let e = HistogramBuilder::new()
            .min_trackable(10)
            .max_trackable(5)
            .plain();
        assert!(matches!(e, Err(BuildError::Window(_))));
        assert!(e.unwrap_err().to_string().contains("above max"));
    }

    #[test]
    fn sigfig_maps_to_hdrhistogram_layouts() {
        for (digits, block) in [
            (1u32, 16u64),
            (2, 128),
            (3, 1024),
            (4, 16_384),
            (5, 131_072),
        ] {
            let h = HistogramBuilder::new()
                .sigfig(digits)
                .max_trackable(1 << 20)
                .plain()
                .unwrap();
            assert_eq!(h.layout().block_size(), block);
            // The same bucket boundaries as HdrHistogram with these digits.
            let hdr =
                hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 20, digits as u8).unwrap();
            for v in [1u64, 1000, 4097, 123_456, 1 << 20] {
                assert_eq!(
                    h.layout().highest_equivalent(v),
                    hdr.highest_equivalent(v),
                    "{digits} digits, {v}"
                );
            }
        }
        let e = HistogramBuilder::new().sigfig(6).plain();
        assert!(matches!(
            e,
            Err(BuildError::Layout(
                LayoutError::SignificantDigitsOutOfRange(6)
            ))
        ));
        assert!(e.unwrap_err().to_string().contains("0 to 5 digits"));
    }

    #[test]
    fn footprint_matches_what_is_built() {
        let b = HistogramBuilder::new()
            .sigfig(2)
            .min_trackable(1000)
            .max_trackable(1 << 30);
        let f64b = b.footprint().unwrap();
        let f16 = b.u16_storage().footprint().unwrap();
        let buckets = b.resolve().unwrap().1.len();
        assert_eq!(
            (f64b.buckets, f16.buckets, f64b.block_size),
            (buckets, buckets, 128)
        );
        assert_eq!(f64b.plain_bytes - f64b.header_bytes, buckets * 8);
        assert_eq!(f16.plain_bytes - f16.header_bytes, buckets * 2);
        assert_eq!(
            f16.atomic_bytes - size_of::<HeapAtomicHistogram<AtomicU16>>(),
            buckets * 2
        );
        assert_eq!(
            f64b.approximate_bytes - size_of::<BuiltApproxHistogram<Dense>>(),
            buckets * 8
        );
        // The thread-local estimate (dense shards) is what `footprint()` reports once built,
        // used by 3 threads at once, and reset.
        let t = b.dense().u16_storage().thread_local().unwrap();
        // Broken by a party that panics, so the others fail instead of waiting forever.
        let barrier = picollo_testkit::Barrier::new(3);
        std::thread::scope(|s| {
            for i in 0..3u64 {
                let (t, barrier) = (&t, &barrier);
                s.spawn(move || {
                    let _broken = barrier.break_on_panic();
                    t.record(5000 + i);
                    barrier.wait();
                    t.reset();
                    barrier.wait();
                });
            }
        });
        assert_eq!(t.shard_count(), 3);
        assert_eq!(f16.thread_local_bytes(3), t.footprint());
        // Sparse shards (the default) hold what was recorded: a fraction of it.
        let sparse = b.u16_storage().thread_local().unwrap();
        sparse.record(5000);
        sparse.reset();
        assert!(sparse.footprint() < f16.thread_local_bytes(1) / 4);
        assert!(b.relative_error(0.0).footprint().is_err());
    }

    #[test]
    fn u16_storage_in_every_kind_saturates() {
        let b = HistogramBuilder::new().max_trackable(1000).u16_storage();
        let mut plain = b.plain().unwrap();
        let atomic = b.atomic().unwrap();
        let local = b.thread_local().unwrap();
        for _ in 0..70_000 {
            plain.record(7);
            atomic.record(7);
            local.record(7);
        }
        plain.record(5000);
        for h in [&plain as &dyn HistogramRead, &atomic, &local] {
            assert_eq!(h.count_at(7), 65_535);
        }
        assert_eq!(plain.overflow(), 1);
    }

    #[test]
    fn reset_counts_and_corrected_records_on_heap_kinds() {
        // Dense: the exact window (sparse storage widens it to whole blocks, so that 16,000
        // would not overflow).
        let b = HistogramBuilder::new()
            .dense()
            .min_trackable(100)
            .max_trackable(10_000);
        let mut plain = b.plain().unwrap();
        let atomic = b.atomic().unwrap();
        let local = b.thread_local().unwrap();
        let approx = b.approximate().unwrap();
        // 20,000 with an expected interval of 1,000: 20,000, 19,000, ..., 1,000 (through
        // `Record`: `&Kind` for the shared kinds, a recorder for the approximate one).
        plain.record_corrected(20_000, 1000);
        (&atomic).record_corrected(20_000, 1000);
        (&local).record_corrected(20_000, 1000);
        let rng = picollo_core::scalable::XorShift::new(5);
        approx.recorder(rng).record_corrected(20_000, 1000);
        for h in [&plain as &dyn HistogramRead, &atomic, &local, &approx] {
            assert_eq!((h.total(), h.overflow(), h.underflow()), (10, 10, 0));
            assert_eq!(
                h.percentile(0.0, EquivalentValue::Midpoint).unwrap().value,
                plain.layout().median_equivalent(1000)
            );
            assert_eq!(h.reset_count(), 0);
        }
        plain.reset();
        atomic.reset();
        local.reset();
        local.reset();
        approx.reset();
        let counts = [
            plain.reset_count(),
            atomic.reset_count(),
            local.reset_count(),
            approx.reset_count(),
        ];
        assert_eq!(counts, [1, 1, 2, 1]);
        assert_eq!(local.total_with_outside(), 0);
    }

    #[test]
    fn kinds_and_widths() {
        let b = HistogramBuilder::new()
            .relative_error(0.01)
            .min_trackable(10_000)
            .max_trackable(30_000);
        let mut p32 = b.u32_storage().plain().unwrap();
        let a64 = b.atomic().unwrap();
        let a32 = b.u32_storage().atomic().unwrap();
        let t32 = b.u32_storage().thread_local().unwrap();
        let approx = b.approximate().unwrap();
        let mut rng = picollo_core::scalable::XorShift::new(3);
        for v in [5, 20_000, 20_001, 50_000] {
            p32.record(v);
            a64.record(v);
            a32.record(v);
            t32.record(v);
            approx.record(v, &mut rng);
        }
        for h in [&p32 as &dyn HistogramRead, &a64, &a32, &t32, &approx] {
            assert_eq!((h.total(), h.underflow(), h.overflow()), (2, 1, 1));
            assert_eq!(h.layout().block_size(), 64);
        }
        let d = HistogramBuilder::new().dense().plain().unwrap();
        assert_eq!(d.window().len(), Layout::DEFAULT.logical_len());
        assert_eq!(d.layout().relative_error(), 0.5 / 512.0);
    }
}
