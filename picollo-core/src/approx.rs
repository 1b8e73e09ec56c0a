//! The approximate atomic histogram: an atomic histogram whose buckets count with the scalable
//! scheme of Scalable Approximate Counting (Ayers 2023), for hot shared histograms where contention dominates.
//!
//! # Error
//!
//! Each bucket is a [`ScalableCell`]: exact below `2^threshold` (8,192 with the defaults), and
//! above it an unbiased estimate with relative standard deviation at most 0.96 % (see
//! [`crate::scalable`]). Bucket errors are independent, so:
//!
//! - the total is unbiased, and its relative σ is at most that of the largest bucket;
//! - a percentile's *value* is still exact to the layout's relative error whenever the rank's
//!   target count falls inside one bucket with margin, and otherwise it may move to a
//!   neighbouring non-empty bucket: the *rank* it answers is off by at most about
//!   `0.96 % · (cumulative count below it)`, so p50 can be reported as roughly p49.5..p50.5 on
//!   heavily contended buckets. Tails (p99.9 and up) sit on small bucket counts, which are exact.
//!
//! Underflow and overflow stay exact (`fetch_add`, through the same `SharedState` as the
//! atomic kind): they are rare by construction.

use crate::atomic::SharedState;
use crate::cell::{AtomicWord, RmwAtomic, Word};
use crate::kind::Base;
use crate::layout::{BucketPos, LayoutSpec};
use crate::read::HistogramRead;
use crate::scalable::{RandomSource, ScalableCell, ScalableConfig};
use crate::storage::{Absent, Cells, Lookup};
use crate::window::{Window, WindowError, WindowSpec};
use crate::{Layout, Record};

/// A shared histogram with scalable approximate bucket counters. Same layout, window and read
/// trait as [`crate::Histogram`] and [`crate::AtomicHistogram`].
///
/// ```
/// use picollo_core::approx::ApproxHistogram;
/// use picollo_core::scalable::{ScalableCell, XorShift};
/// use picollo_core::{storage_len, Layout, ReadExt};
///
/// const L: Layout = Layout::DEFAULT;
/// static H: ApproxHistogram<[ScalableCell; storage_len(L, 0, 1 << 20)]> =
///     ApproxHistogram::new(L, 0, 1 << 20);
///
/// std::thread::scope(|s| {
///     for t in 0..2 {
///         s.spawn(move || {
///             let mut rng = XorShift::from_seed_and_thread(42, t);
///             for i in 0..50_000u64 {
///                 H.record(i % 100, &mut rng);
///             }
///         });
///     }
/// });
/// let total = H.total() as f64;
/// assert!((total - 100_000.0).abs() / 100_000.0 < 0.05);
/// ```
pub struct ApproxHistogram<S, L = Layout, W = Window> {
    base: Base<S, L, W, SharedState>,
    config: ScalableConfig,
}

impl<const N: usize> ApproxHistogram<[ScalableCell; N], Layout> {
    /// A histogram owning `N` cells with the default counter configuration (threshold 13),
    /// constructible in a `static`.
    ///
    /// # Panics
    ///
    /// If `N` is not [`crate::storage_len`]`(layout, min, max)` or `min > max` (a compile-time
    /// error in `const` context).
    pub const fn new(layout: Layout, min: u64, max: u64) -> Self {
        if layout.unit_magnitude() != 0 {
            panic!("a layout with a value unit records through UnitLayout (with_storage)");
        }
        match Window::new(layout, min, max) {
            Ok(window) if window.len() == N => ApproxHistogram {
                base: Base {
                    spec: layout,
                    window,
                    tallies: SharedState::new(),
                    storage: [const { ScalableCell::new() }; N],
                },
                config: ScalableConfig::new(),
            },
            Ok(_) => panic!("array length differs from storage_len(layout, min, max)"),
            Err(_) => panic!("min trackable value above max"),
        }
    }
}

impl<S, L> ApproxHistogram<S, L, Window>
where
    S: Cells<Item = ScalableCell>,
    L: LayoutSpec,
{
    /// A histogram over caller-provided cells (borrowed or heap) for `window`, with the default
    /// counter configuration ([`ApproxHistogram::with_config`] changes it). They are cleared; a
    /// length other than `window.len()` is an error.
    pub fn with_storage(spec: L, storage: S, window: Window) -> Result<Self, WindowError> {
        storage.check_window(spec.layout(), window)?;
        if !crate::layout::records_its_layout(&spec) {
            return Err(WindowError::NeedsUnitLayout(spec.layout().unit_magnitude()));
        }
        let h = ApproxHistogram {
            base: Base {
                spec,
                window,
                tallies: SharedState::new(),
                storage,
            },
            config: ScalableConfig::new(),
        };
        h.base.storage.clear_shared(ScalableCell::reset);
        Ok(h)
    }
}

impl<S, L, W> ApproxHistogram<S, L, W> {
    /// The same histogram with counter configuration `config` instead of the default
    /// (threshold 13): chained onto [`ApproxHistogram::new`] (also in a `static`) or
    /// [`ApproxHistogram::with_storage`], before anything is recorded.
    ///
    /// ```
    /// use picollo_core::approx::ApproxHistogram;
    /// use picollo_core::scalable::{ScalableCell, ScalableConfig};
    /// use picollo_core::{storage_len, Layout};
    ///
    /// const L: Layout = Layout::DEFAULT;
    /// static H: ApproxHistogram<[ScalableCell; storage_len(L, 0, 1000)]> =
    ///     ApproxHistogram::new(L, 0, 1000).with_config(ScalableConfig::new().with_threshold(8));
    /// assert_eq!(H.config(), ScalableConfig::new().with_threshold(8));
    /// ```
    pub const fn with_config(mut self, config: ScalableConfig) -> Self {
        self.config = config;
        self
    }
}

impl<S, L, W> ApproxHistogram<S, L, W>
where
    S: Cells<Item = ScalableCell>,
    L: LayoutSpec,
    W: WindowSpec,
    for<'a> AtomicWord: RmwAtomic<Word>,
{
    /// Records one `value`, drawing from the caller's per-thread random source.
    #[inline]
    pub fn record<R: RandomSource + ?Sized>(&self, value: u64, rng: &mut R) {
        let pos = self.base.spec.position_native(value);
        match self.cell_or_outside(pos, 1) {
            Ok(cell) => cell.inc(self.config, rng),
            Err(Some(slot)) => self.base.tallies.add_outside(slot, 1),
            Err(None) => {}
        }
    }

    /// Records `count` occurrences of `value` (unbiased; see [`ScalableCell::add`]).
    #[inline]
    pub fn record_n<R: RandomSource + ?Sized>(&self, value: u64, count: u64, rng: &mut R) {
        let pos = self.base.spec.position_native(value);
        match self.cell_or_outside(pos, count) {
            Ok(cell) => cell.add(self.config, count, rng),
            Err(Some(slot)) => self.base.tallies.add_outside(slot, count),
            Err(None) => {}
        }
    }

    /// The cell of `pos` (made now by sparse storage, which keeps scalable cells in pages
    /// only), or the outside slot (`Err(Some)`), or `Err(None)` when the storage counted the
    /// occurrences itself (never for the storages this crate and `picollo-alloc` provide).
    #[inline(always)]
    fn cell_or_outside(&self, pos: BucketPos, n: u64) -> Result<&ScalableCell, Option<usize>> {
        let (k, first) = self.base.cell_origin();
        // SAFETY: `pos` comes from this histogram's sealed layout spec, which the storage was
        // checked against when the histogram was made (`Cells::check_window`).
        match unsafe { self.base.storage.cell(pos, k, first) } {
            Lookup::Found(cell) => Ok(cell),
            // SAFETY: as above.
            Lookup::Missing => match unsafe { self.base.storage.absent(pos, k, first, n) } {
                Absent::Outside(slot) => Err(Some(slot)),
                Absent::Cell(cell) => Ok(cell),
                Absent::Counted => Err(None),
            },
        }
    }

    /// Clears every bucket as one structural change (reads retry, or `try_read` reports
    /// `ResetInProgress`, as for the atomic kind). Counted in [`HistogramRead::reset_count`].
    ///
    /// **Lock-free**, like [`crate::AtomicHistogram::reset`]: safe from an interrupt handler,
    /// including one that landed inside a thread-mode reset or read of the same histogram.
    /// Progress of the other methods: `record` and `record_n` are wait-free, `try_read`
    /// wait-free, the other reads blocking while a reset is in progress (see
    /// [`crate::AtomicHistogram`]'s "Progress").
    pub fn reset(&self) {
        self.base
            .tallies
            .reset(|| self.base.storage.clear_shared(ScalableCell::reset));
    }
}

impl<S, L, W> ApproxHistogram<S, L, W>
where
    L: LayoutSpec,
    W: WindowSpec,
{
    /// A recorder for one thread: the histogram plus that thread's random source, usable
    /// wherever a [`Record`] is expected (scopes, spans).
    pub fn recorder<R: RandomSource>(&self, rng: R) -> ApproxRecorder<'_, S, L, R, W> {
        ApproxRecorder {
            histogram: self,
            rng,
        }
    }

    /// The counter configuration of the buckets.
    pub fn config(&self) -> ScalableConfig {
        self.config
    }

    /// Whether a reset is in progress, so that `try_read` would report
    /// `ResetInProgress` now. Wait-free.
    pub fn reset_in_progress(&self) -> bool {
        self.base.tallies.reset_in_progress()
    }
}

impl<S, L, W> ApproxHistogram<S, L, W>
where
    S: Cells,
{
    /// The storage.
    pub fn storage(&self) -> &S {
        &self.base.storage
    }

    /// Bytes of memory this histogram holds: the value itself plus what its storage holds
    /// ([`Cells::held_bytes`]).
    pub fn footprint(&self) -> usize {
        self.base.footprint(core::mem::size_of_val(self))
    }
}

impl<S, L, W> HistogramRead for ApproxHistogram<S, L, W>
where
    S: Cells<Item = ScalableCell>,
    L: LayoutSpec,
    W: WindowSpec,
{
    crate::forward_histogram_read!(|h| h.base);
}

crate::fmt::histogram_formats!(ApproxHistogram, "ApproxHistogram", S: Cells<Item = ScalableCell>);

/// One thread's handle on an [`ApproxHistogram`]: it implements [`Record`], and
/// [`HistogramRead`] by reading the histogram.
pub struct ApproxRecorder<'a, S, L, R, W = Window> {
    histogram: &'a ApproxHistogram<S, L, W>,
    rng: R,
}

impl<S, L, R, W> Record for ApproxRecorder<'_, S, L, R, W>
where
    S: Cells<Item = ScalableCell>,
    L: LayoutSpec,
    W: WindowSpec,
    R: RandomSource,
    for<'a> AtomicWord: RmwAtomic<Word>,
{
    #[inline]
    fn record(&mut self, value: u64) {
        self.histogram.record(value, &mut self.rng)
    }
    #[inline]
    fn record_n(&mut self, value: u64, count: u64) {
        self.histogram.record_n(value, count, &mut self.rng)
    }
}

impl<S, L, R, W> HistogramRead for ApproxRecorder<'_, S, L, R, W>
where
    S: Cells<Item = ScalableCell>,
    L: LayoutSpec,
    W: WindowSpec,
{
    crate::forward_histogram_read!(|r| *r.histogram);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::scalable::XorShift;
    use crate::{storage_len, EquivalentValue, ReadExt};

    const L: Layout = Layout::DEFAULT;
    const LEN: usize = storage_len(L, 0, 1 << 12);

    #[test]
    fn exact_below_threshold_and_outside() {
        let h: ApproxHistogram<[ScalableCell; LEN]> = ApproxHistogram::new(L, 0, 1 << 12);
        let mut rng = XorShift::new(1);
        // Fewer values under miri, where calls on the default layout's large storage are slow
        // (the test below uses a small layout for the same reason).
        let n: u64 = if cfg!(miri) { 100 } else { 1000 };
        for v in 0..n {
            h.record(v, &mut rng);
        }
        h.record(1 << 20, &mut rng);
        h.record_n(1 << 30, 5, &mut rng);
        assert_eq!((h.total(), h.overflow(), h.underflow()), (n, 6, 0));
        assert_eq!(
            h.percentile(50.0, EquivalentValue::Midpoint).unwrap().value,
            n / 2 - 1
        );
        h.reset();
        assert_eq!(h.total_with_outside(), 0);
    }

    #[test]
    fn an_interrupt_inside_a_reset_never_waits() {
        use crate::read::ResetInProgress;
        use crate::{FixedPercentile, PercentileError, Rank};
        // 16 buckets per block: a small window, so that miri runs this in seconds.
        const SMALL: Layout = Layout::from_block_scale(4).unwrap();
        const LEN: usize = storage_len(SMALL, 0, 1 << 12);
        let h: ApproxHistogram<[ScalableCell; LEN]> = ApproxHistogram::new(SMALL, 0, 1 << 12);
        let mut rng = XorShift::new(3);
        for v in 0..1000u64 {
            h.record(v, &mut rng);
        }
        let mut out = [FixedPercentile::default(); 1];
        // An interrupt handler landing halfway through thread mode's reset.
        h.base.tallies.reset(|| {
            let cells = h.base.storage.as_slice();
            cells[..LEN / 2].iter().for_each(ScalableCell::reset);
            assert!(h.reset_in_progress());
            assert_eq!(h.try_read(|r| r.total()), Err(ResetInProgress));
            assert_eq!(h.try_read(|r| r.int_stats()), Err(ResetInProgress));
            assert_eq!(
                h.try_read(|r| r.fixed_percentiles(
                    &[Rank::MAX],
                    EquivalentValue::Midpoint,
                    &mut out
                ))
                .map_err(PercentileError::from)
                .and_then(|p| p),
                Err(PercentileError::ResetInProgress)
            );
            let mut r = h.recorder(XorShift::new(4));
            assert_eq!(r.try_read(|r| r.total()), Err(ResetInProgress));
            // The handler's own reset and record: no wait.
            h.reset();
            r.record(5);
            cells[LEN / 2..].iter().for_each(ScalableCell::reset);
        });
        assert_eq!(h.reset_count(), 2);
        assert_eq!((h.try_read(|r| r.total()), h.total()), (Ok(1), 1));
        h.try_read(|r| r.fixed_percentiles(&[Rank::MAX], EquivalentValue::Midpoint, &mut out))
            .map_err(PercentileError::from)
            .and_then(|p| p)
            .unwrap();
        assert_eq!(out[0].value, 5);
    }

    #[test]
    // The cells' atomics are checked under miri by the scalable tests; this two-thread run did
    // not finish under miri's scheduler in 5 minutes even at 30 records.
    #[cfg_attr(miri, ignore = "two threads racing on one cell: too slow under miri")]
    fn hot_bucket_is_close_under_two_threads() {
        let n = 400_000;
        let h: ApproxHistogram<[ScalableCell; LEN]> = ApproxHistogram::new(L, 0, 1 << 12);
        std::thread::scope(|s| {
            for t in 0..2 {
                let h = &h;
                s.spawn(move || {
                    let mut r = h.recorder(XorShift::from_seed_and_thread(7, t));
                    for i in 0..n {
                        r.record(if i % 10 == 0 { 3000 } else { 7 });
                    }
                });
            }
        });
        let total = h.total() as f64;
        let expected = 2.0 * n as f64;
        // σ ≤ 0.96 % per bucket: 5 σ is a bound no fixed seed comes near.
        assert!((total - expected).abs() / expected < 0.05, "{total}");
        // The rare bucket (2·n/10 records) keeps its value exactly.
        assert_eq!(
            h.percentile(100.0, EquivalentValue::Midpoint)
                .unwrap()
                .value,
            L.midpoint(L.index_of(3000))
        );
    }
}
