//! [`ReadExt`]: percentiles, statistics and iterators for every [`HistogramRead`], written once
//! over it (blocking and wait-free variants).

use super::at_value::{at_or_below_of, count_between_of, share};
use super::buckets::{Bucket, BucketPercentiles, Buckets};
use super::consistent::{consistent, try_consistent, OnePass};
use super::error::{PercentileError, ResetInProgress};
use super::histogram_read::{sum_counts, HistogramRead};
use super::percentile::{
    f64_batch, f64_walk, fixed_batch, fixed_walk, EquivalentValue, FixedPercentile, Percentile,
};
use super::rank::Rank;
use super::stats::{
    int_stats_of, max_of, min_of, stats_of, total_with_outside_of, IntStats, Stats,
};
use crate::iter::IterationValue;

/// Percentiles, statistics and iterators for every [`HistogramRead`]; blanket-implemented.
///
/// # Progress: which reads may run in an interrupt handler
///
/// Records never make a read wait, and reads never make anything wait. Only a reset can: the
/// shared kinds ([`crate::AtomicHistogram`], [`crate::approx::ApproxHistogram`]) clear their
/// cells in place, so a read that overlaps a reset must not use what it saw.
///
/// - [`ReadExt::try_read`] is **wait-free**: any of the reads below, in a closure, at most 4
///   passes, and [`ResetInProgress`] when a reset is in progress or overlapped every pass
///   (`h.try_read(|r| r.total())`). This is the read for an interrupt handler: if it landed
///   inside a thread-mode reset, that reset cannot go on until the handler returns, so the
///   handler must not wait for it.
///   (On 32-bit targets the underflow and overflow counts are two halves, read again only if
///   the high half changed between two loads: nothing the interrupted context can do.)
/// - The other reads (`total`, `fixed_percentiles`, ...) are **blocking** while a reset is in
///   progress: they wait for it to end, then redo the read until no reset overlapped it
///   (lock-free otherwise). From a context that may have interrupted a reset of the same
///   histogram they wait forever: use [`ReadExt::try_read`] there.
///
/// On kinds that cannot be reset concurrently (the plain [`crate::Histogram`], behind `&mut`
/// or a lock, and snapshots) both are wait-free and `try_read` never fails for a reset.
/// The iterators ([`ReadExt::buckets`] and the others) read cell by cell and never wait.
pub trait ReadExt: HistogramRead {
    /// Values recorded inside the window (derived on read). Blocking while a reset is in
    /// progress; [`ReadExt::try_read`] never waits.
    fn total(&self) -> u64 {
        consistent(self, |h| sum_counts(h))
    }

    /// Values inside the window plus underflow and overflow. Blocking while a reset is in
    /// progress; [`ReadExt::try_read`] never waits.
    fn total_with_outside(&self) -> u64 {
        consistent(self, |h| total_with_outside_of(h))
    }

    /// Total, mean, standard deviation, min and max in one consistent pass pair. Blocking
    /// while a reset is in progress; [`ReadExt::try_read`] never waits.
    fn stats(&self) -> Stats {
        consistent(self, |h| stats_of(h))
    }

    /// Mean of the recorded values (bucket midpoints), 0 when empty.
    fn mean(&self) -> f64 {
        self.stats().mean
    }

    /// Population standard deviation (bucket midpoints), 0 when empty.
    fn stdev(&self) -> f64 {
        self.stats().stdev
    }

    /// Lowest value of the lowest non-empty bucket. Integer arithmetic only. Blocking while a
    /// reset is in progress; [`ReadExt::try_read`] never waits.
    fn min(&self) -> Option<u64> {
        consistent(self, |h| min_of(h))
    }

    /// Highest value of the highest non-empty bucket (HdrHistogram's `max`). Integer
    /// arithmetic only. Blocking while a reset is in progress; [`ReadExt::try_read`] never
    /// waits.
    fn max(&self) -> Option<u64> {
        consistent(self, |h| max_of(h))
    }

    /// Total, underflow, overflow, min, max and the rounded mean in one consistent pass, in
    /// integer arithmetic only: no floating point is linked in (on a Cortex-M4F, whose FPU is
    /// single precision, `f64` is software emulation). [`ReadExt::stats`] adds the standard
    /// deviation, in `f64`.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 1000)]>::new(
    ///     Layout::DEFAULT, 0, 1000);
    /// for v in [10, 20, 30, 2000] {
    ///     h.record(v);
    /// }
    /// let s = h.int_stats();
    /// assert_eq!((s.total, s.overflow, s.min, s.max, s.mean), (3, 1, Some(10), Some(30), Some(20)));
    /// ```
    ///
    /// Blocking while a reset is in progress; [`ReadExt::try_read`] never waits.
    fn int_stats(&self) -> IntStats {
        consistent(self, |h| int_stats_of(h))
    }

    /// Many percentiles at once, mutually consistent (one total, one walk), each reported as
    /// the `selection` of its bucket ([`EquivalentValue::Midpoint`] for the smallest error,
    /// [`EquivalentValue::Upper`] for HdrHistogram's answer). `ranks` may come in any order;
    /// `out[k]` answers `ranks[k]`. Blocking while a reset is in progress;
    /// [`ReadExt::try_read`] never waits.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 1, 100_000)]>::new(
    ///     Layout::DEFAULT, 1, 100_000);
    /// for v in 1..=10_000u32 {
    ///     h.record_u32(v);
    /// }
    /// let mut out = [Percentile::default(); 3];
    /// h.percentiles(&[50.0, 99.9, 100.0], EquivalentValue::Midpoint, &mut out).unwrap();
    /// assert_eq!(out.map(|p| p.rank_count), [5000, 9990, 10_000]);
    /// assert_eq!(out[1].value, 9_992);
    /// ```
    fn percentiles(
        &self,
        ranks: &[f64],
        selection: EquivalentValue,
        out: &mut [Percentile],
    ) -> Result<(), PercentileError> {
        let out = f64_batch(ranks, out)?;
        consistent(self, |h| f64_walk(h, out, selection))
    }

    /// One percentile (a batch of one of [`ReadExt::percentiles`]): `h.percentile(99.9,
    /// EquivalentValue::Midpoint)?.value`. Blocking while a reset is in progress;
    /// [`ReadExt::try_read`] never waits.
    fn percentile(
        &self,
        rank: f64,
        selection: EquivalentValue,
    ) -> Result<Percentile, PercentileError> {
        let mut out = [Percentile::default()];
        self.percentiles(&[rank], selection, &mut out)?;
        Ok(out[0])
    }

    /// Many percentiles at once with fixed-point [`Rank`]s, in integer arithmetic only: the
    /// firmware path (no `f64`, a small stack frame). Same walk as [`ReadExt::percentiles`], and
    /// the same answers given the same ranks and selection at every total below the bound of
    /// [`Rank::count_of`] (1.8 million values at 7 decimals, more with fewer); above it this path
    /// asks for the exact ceiling where Java's `f64` rule ([`rank_count`](super::rank_count))
    /// can ask for one value fewer.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 1, 100_000)]>::new(
    ///     Layout::DEFAULT, 1, 100_000);
    /// for v in 1..=10_000u32 {
    ///     h.record_u32(v);
    /// }
    /// const RANKS: [Rank; 3] = [Rank::percent(50), Rank::parse("99.9").unwrap(), Rank::MAX];
    /// let mut out = [FixedPercentile::default(); 3];
    /// h.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut out).unwrap();
    /// assert_eq!(out.map(|p| p.rank_count), [5000, 9990, 10_000]);
    /// assert_eq!(out[1].to_string(), "P99.9=9,992 [2671 / 2672]: [9,984, 10,000) 16");
    /// ```
    ///
    /// Blocking while a reset is in progress; [`ReadExt::try_read`] never waits.
    fn fixed_percentiles(
        &self,
        ranks: &[Rank],
        selection: EquivalentValue,
        out: &mut [FixedPercentile],
    ) -> Result<(), PercentileError> {
        let out = fixed_batch(ranks, out)?;
        consistent(self, |h| fixed_walk(h, out, selection))
    }

    /// One fixed-point percentile (a batch of one of [`ReadExt::fixed_percentiles`]).
    /// Blocking while a reset is in progress; [`ReadExt::try_read`] never waits.
    fn fixed_percentile(
        &self,
        rank: Rank,
        selection: EquivalentValue,
    ) -> Result<FixedPercentile, PercentileError> {
        let mut out = [FixedPercentile::default()];
        self.fixed_percentiles(&[rank], selection, &mut out)?;
        Ok(out[0])
    }

    /// Every stored bucket, empty ones included, with cumulative counts.
    fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        Buckets::new(self, false)
    }

    /// The non-empty buckets, with cumulative counts.
    fn recorded_buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        Buckets::new(self, true)
    }

    /// Bucket percentiles (as Picollo for .NET prints them): for each stored bucket, the rank at
    /// the middle of the bucket's share of the values, `(before + count/2) / total · 100`, with its
    /// value.
    fn bucket_percentiles(
        &self,
        selection: EquivalentValue,
    ) -> impl Iterator<Item = Percentile> + '_ {
        BucketPercentiles::new(self, false, selection)
    }

    /// As [`ReadExt::bucket_percentiles`], non-empty buckets only.
    fn recorded_bucket_percentiles(
        &self,
        selection: EquivalentValue,
    ) -> impl Iterator<Item = Percentile> + '_ {
        BucketPercentiles::new(self, true, selection)
    }

    /// HdrHistogram's linear iteration: one step per `step` value units, through the step that
    /// holds the highest recorded value and on while the next step stays in the bucket the last
    /// one ended in (HdrHistogram's rule, step for step). `None` when `step` is 0.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 10_000)]>::new(
    ///     Layout::DEFAULT, 0, 10_000);
    /// h.record(1);
    /// h.record(4100); // bucket [4096, 4103]
    /// let steps: Vec<_> = h.linear(1000).unwrap().collect();
    /// // 999, 1999, ..., 4999: the step to 4999 holds 4100.
    /// assert_eq!(steps.len(), 5);
    /// assert_eq!(steps[0].count_added_in_this_step, 1);
    /// assert_eq!(steps[4].count_added_in_this_step, 1);
    /// assert_eq!(steps[4].total_count_to_value, 2);
    /// ```
    fn linear(&self, step: u64) -> Option<impl Iterator<Item = IterationValue> + '_> {
        crate::iter::Linear::new(self, step)
    }

    /// HdrHistogram's logarithmic iteration: the first step ends at `first`, each later step is
    /// `base` times longer; it ends as [`ReadExt::linear`] does. `None` when `first` is 0 or
    /// `base` is not a finite number above 1.
    fn logarithmic(
        &self,
        first: u64,
        base: f64,
    ) -> Option<impl Iterator<Item = IterationValue> + '_> {
        crate::iter::Logarithmic::new(self, first, base)
    }

    /// HdrHistogram's percentile iteration with `ticks_per_half_distance` reports per halving of
    /// the distance to 100%. `None` when it is 0.
    fn percentile_ticks(
        &self,
        ticks_per_half_distance: u32,
    ) -> Option<impl Iterator<Item = IterationValue> + '_> {
        crate::iter::PercentileTicks::new(self, ticks_per_half_distance)
    }

    /// Values whose bucket lies within `lowest_equivalent(lo)..=highest_equivalent(hi)`:
    /// HdrHistogram's `getCountBetweenValues(lo, hi)`, the `hdrhistogram` crate's
    /// `count_between`. Counts the values inside the window, as percentiles do (underflow and
    /// overflow are left out); 0 when `lo > hi`. Blocking while a reset is in progress.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 1_000_000)]>::new(
    ///     Layout::DEFAULT, 0, 1_000_000);
    /// for ms in [1, 2, 5, 120, 180, 450] {
    ///     h.record(ms * 1000); // µs
    /// }
    /// // Requests between 100 and 200 ms:
    /// assert_eq!(h.count_between(100_000, 200_000), 2);
    /// // 180,000 is in the bucket [179,968, 180,223]: asking from 180,100 still counts it.
    /// assert_eq!(h.count_between(180_100, 200_000), 1);
    /// ```
    fn count_between(&self, lo: u64, hi: u64) -> u64 {
        consistent(self, |h| count_between_of(h, lo, hi))
    }

    /// Values in the bucket holding `value`: HdrHistogram's `getCountAtValue(value)`, the
    /// crate's `count_at(value)` (here [`HistogramRead::count_at`] takes a storage index).
    /// 0 for a value outside the window (Java clamps it to its last bucket). Blocking while a
    /// reset is in progress.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 100_000)]>::new(
    ///     Layout::DEFAULT, 0, 100_000);
    /// h.record_n(10_007, 3); // bucket [10,000, 10,015]
    /// assert_eq!((h.count_at_value(10_000), h.count_at_value(10_016)), (3, 0));
    /// ```
    fn count_at_value(&self, value: u64) -> u64 {
        self.count_between(value, value)
    }

    /// Values at or below `value`'s bucket (up to `highest_equivalent(value)`), inside the
    /// window. The count behind [`ReadExt::percentile_at_or_below`]. Blocking while a reset is
    /// in progress.
    fn count_at_or_below(&self, value: u64) -> u64 {
        consistent(self, |h| at_or_below_of(h, value).0)
    }

    /// The percentile rank of `value`: the share of the values, in percent, at or below
    /// `value`'s bucket. HdrHistogram's `getPercentileAtOrBelowValue(value)`, computed as Java
    /// computes it, `100 · count / total` in `f64` (the crate's `percentile_below` computes
    /// `count / total · 100`, which can differ in the last bit); 100 when empty, as in both
    /// peers. Shares of the values inside the window, as percentiles are. Blocking while a
    /// reset is in progress.
    ///
    /// "What share of requests finished within our 200 ms SLO?"
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 10_000_000)]>::new(
    ///     Layout::DEFAULT, 0, 10_000_000);
    /// for ms in 1..=1000u64 {
    ///     h.record(ms * 1000); // µs
    /// }
    /// assert_eq!(h.percentile_at_or_below(200_000), 20.0);
    /// assert_eq!(h.count_at_or_below(200_000), 200);
    /// ```
    fn percentile_at_or_below(&self, value: u64) -> f64 {
        let (count, total) = consistent(self, |h| at_or_below_of(h, value));
        share(count, total)
    }

    /// Reads without waiting (**wait-free**): runs `read` on a one-pass view of this histogram
    /// ([`OnePass`]), on which every read here makes one pass and waits for nothing, and
    /// returns what `read` returned, or [`ResetInProgress`] when a reset was in progress as it
    /// started or overlapped each of its 4 passes (at most 4 calls of `read`; a pass is redone
    /// only when a reset started or ended during it). Everything `read` reads comes from one
    /// pass that no reset overlapped: `total` and percentiles of the same counts. The read for
    /// an interrupt handler: one that landed inside a thread-mode reset gets
    /// [`ResetInProgress`] and reads again at its next interrupt.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// use picollo_core::read::{PercentileError, ResetInProgress};
    /// let h = AtomicHistogram::<[AtomicU32; storage_len(Layout::DEFAULT, 1, 1000)]>::new(
    ///     Layout::DEFAULT, 1, 1000);
    /// h.record(7);
    /// // No reset in progress: the same answers as the blocking reads.
    /// assert_eq!(h.try_read(|r| r.total()), Ok(1));
    /// let (total, p50) = h.try_read(|r| (r.total(), r.percentile(50.0, EquivalentValue::Lower)))?;
    /// assert_eq!((total, p50?.value), (1, 7));
    /// // In an interrupt handler: skip this tick's read if it landed inside a reset.
    /// match h.try_read(|r| r.int_stats()) {
    ///     Ok(stats) => assert_eq!(stats.total, 1),
    ///     Err(ResetInProgress) => {} // read again at the next interrupt
    /// }
    /// # Ok::<(), PercentileError>(())
    /// ```
    fn try_read<R>(
        &self,
        mut read: impl FnMut(&OnePass<'_, Self>) -> R,
    ) -> Result<R, ResetInProgress> {
        try_consistent(self, |h| read(&OnePass::new(h)))
    }
}

impl<H: HistogramRead + ?Sized> ReadExt for H {}
