//! What a [`Summary`] holds and how it is filled: the 16 [`Summary::RANKS`], the statistics, the
//! window and requested range, read in one consistent pass pair; [`SummaryExt`] for any
//! histogram, and Cohen's d between two summaries.

use core::fmt;
use picollo_core::read::consistent;
use picollo_core::{EquivalentValue, HistogramRead, Layout, Percentile, ReadExt, Window};
use std::time::SystemTime;

use super::scaled::Scaled;
use super::Summary;

/// The ranks of every summary, in order (those of Picollo for .NET's summaries):
/// `0, 1, 5, 10, 25, 50, 75, 90, 92.5, 95, 97.5, 99, 99.9, 99.99, 99.999, 100`.
pub(crate) const RANKS: [f64; 16] = [
    0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 92.5, 95.0, 97.5, 99.0, 99.9, 99.99, 99.999, 100.0,
];

impl Default for Summary {
    /// An empty summary of an empty full-range histogram with the default layout, stamped at
    /// the Unix epoch.
    fn default() -> Self {
        let mut percentiles = [Percentile::default(); 16];
        for (p, &rank) in percentiles.iter_mut().zip(RANKS.iter()) {
            p.rank = rank;
        }
        Summary {
            percentiles,
            total: 0,
            underflow: 0,
            overflow: 0,
            mean: 0.0,
            stdev: 0.0,
            layout: Layout::DEFAULT,
            window: Window::full(Layout::DEFAULT),
            requested: None,
            timestamp: SystemTime::UNIX_EPOCH,
            divisor: 1,
        }
    }
}

macro_rules! rank_accessors {
    ($($(#[$doc:meta])* $name:ident = $i:expr;)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub fn $name(&self) -> &Percentile {
                &self.percentiles[$i]
            }
        )*
    };
}

impl Summary {
    /// The ranks of every summary, in order (those of Picollo for .NET's summaries):
    /// `0, 1, 5, 10, 25, 50, 75, 90, 92.5, 95, 97.5, 99, 99.9, 99.99, 99.999, 100`.
    pub const RANKS: [f64; 16] = RANKS;

    /// An empty summary; the same as [`Summary::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The summary of `h`, taken now. Allocates nothing.
    pub fn from_histogram<H: HistogramRead + ?Sized>(h: &H) -> Self {
        let mut s = Self::default();
        s.fill_from(h);
        s
    }

    /// Refills this summary from `h` in place, allocating nothing; the requested range (if
    /// any) is kept.
    ///
    /// All ranks and statistics come from one optimistic read: if a reset of `h` starts or ends
    /// while reading, everything is read again (the optimistic retry of Picollo for .NET). Values
    /// recorded concurrently (atomic or thread-local kinds) may land between the statistics pass
    /// and the percentile pass; take a snapshot first when that matters.
    pub fn fill_from<H: HistogramRead + ?Sized>(&mut self, h: &H) {
        let percentiles = &mut self.percentiles;
        let (stats, recorded) = consistent(h, |h| {
            let stats = h.stats();
            (
                stats,
                h.percentiles(&RANKS, EquivalentValue::Midpoint, percentiles)
                    .is_ok(),
            )
        });
        if !recorded {
            // The only error left for valid ranks and a 16-slot output is "empty".
            for (p, &rank) in self.percentiles.iter_mut().zip(RANKS.iter()) {
                *p = Percentile {
                    rank,
                    ..Percentile::default()
                };
            }
        }
        self.total = stats.total;
        self.underflow = stats.underflow;
        self.overflow = stats.overflow;
        self.mean = stats.mean;
        self.stdev = stats.stdev;
        self.layout = h.layout();
        self.window = h.window();
        self.timestamp = SystemTime::now();
    }

    /// Prints values divided by `divisor` (1,000 for nanoseconds as microseconds), with the
    /// decimals that keep them exact: `16,384.512` rather than a rounded `16,385`. The
    /// percentiles, `±`, mean, standard deviation and range are divided; counts and the
    /// precision are not; the recorded values stay as they are. A divisor of 0 is taken as 1.
    ///
    /// ```
    /// use picollo_alloc::{HistogramBuilder, SummaryExt};
    ///
    /// let mut h = HistogramBuilder::new().dense().plain().unwrap();
    /// h.record(16_384_512); // ns
    /// let s = h.summary().in_unit(1_000_000); // ms
    /// assert_eq!(s.scaled(16_384_512).to_string(), "16.384512");
    /// // The table prints the bucket's midpoint in ms, with the decimals that keep it exact.
    /// let mid = s.p50().value;
    /// assert!(s.table("t (ms)").to_string().contains(&format!(" {} ", s.scaled(mid))));
    /// assert!(s.scaled(mid).to_string().starts_with("16.3"));
    /// ```
    pub fn in_unit(mut self, divisor: u64) -> Self {
        self.divisor = divisor.max(1);
        self
    }

    /// `value` as printed: divided by the unit's divisor ([`Summary::in_unit`]), digits
    /// grouped, with the decimals the divisor needs ([`Scaled`]).
    pub fn scaled(&self, value: u64) -> Scaled {
        Scaled::new(value, self.divisor)
    }

    /// A statistic (mean, deviation) in the printed unit.
    pub fn scaled_stat(&self, v: f64) -> f64 {
        v / self.divisor as f64
    }

    /// Decimals for a statistic in the printed unit: 2, or the divisor's when more.
    pub fn stat_decimals(&self) -> usize {
        Scaled::decimals_of(self.divisor).max(2)
    }

    /// Sets the requested trackable range printed in the `Range` row (see the type's docs).
    pub fn with_range(mut self, min: u64, max: u64) -> Self {
        self.requested = Some((min, max));
        self
    }

    /// The percentiles at [`Summary::RANKS`], in that order.
    #[inline]
    pub fn percentiles(&self) -> &[Percentile; 16] {
        &self.percentiles
    }

    /// The percentile at `rank` if it is one of [`Summary::RANKS`], else `None`; for any other rank
    /// ask the histogram (`h.percentile(99.95, EquivalentValue::Midpoint)`, [`crate::ReadExt`]), or use
    /// [`Summary::try_percentile`], whose error says so.
    pub fn percentile(&self, rank: f64) -> Option<&Percentile> {
        RANKS
            .iter()
            .position(|&r| r == rank)
            .map(|i| &self.percentiles[i])
    }

    /// The percentile at `rank`, or an error saying that a summary keeps only
    /// [`Summary::RANKS`] and that the histogram answers any rank:
    ///
    /// ```
    /// use picollo_alloc::{HistogramBuilder, EquivalentValue, ReadExt, SummaryExt};
    ///
    /// let mut h = HistogramBuilder::new().dense().plain().unwrap();
    /// (1..=10_000).for_each(|v| h.record(v));
    /// let s = h.summary();
    /// assert_eq!(s.try_percentile(99.9)?.value, s.p99_9().value);
    /// let e = s.try_percentile(99.95).unwrap_err();
    /// assert!(e.to_string().contains("h.percentile(99.95, EquivalentValue::Midpoint)"));
    /// // Any rank, from the histogram the summary was taken of:
    /// let p = h.percentile(99.95, EquivalentValue::Midpoint)?;
    /// assert!(p.lo <= 9_995 && 9_995 <= p.highest);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`NotASummaryRank`] when `rank` is not one of [`Summary::RANKS`].
    pub fn try_percentile(&self, rank: f64) -> Result<&Percentile, NotASummaryRank> {
        self.percentile(rank).ok_or(NotASummaryRank { rank })
    }

    rank_accessors! {
        /// The 0th percentile: the lowest recorded bucket.
        p0 = 0;
        /// The 1st percentile.
        p1 = 1;
        /// The 5th percentile.
        p5 = 2;
        /// The 10th percentile.
        p10 = 3;
        /// The 25th percentile.
        p25 = 4;
        /// The 50th percentile, the median.
        p50 = 5;
        /// The 75th percentile.
        p75 = 6;
        /// The 90th percentile.
        p90 = 7;
        /// The 92.5th percentile.
        p92_5 = 8;
        /// The 95th percentile.
        p95 = 9;
        /// The 97.5th percentile.
        p97_5 = 10;
        /// The 99th percentile.
        p99 = 11;
        /// The 99.9th percentile.
        p99_9 = 12;
        /// The 99.99th percentile.
        p99_99 = 13;
        /// The 99.999th percentile.
        p99_999 = 14;
        /// The 100th percentile: the highest recorded bucket.
        p100 = 15;
    }

    /// Values recorded inside the window (the `Total` row; out-of-window values excluded).
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether nothing was recorded inside the window.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Values recorded below the window.
    #[inline]
    pub fn underflow(&self) -> u64 {
        self.underflow
    }

    /// Values recorded above the window.
    #[inline]
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Mean of the bucket midpoints weighted by count; 0 when empty.
    #[inline]
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Population standard deviation of the bucket midpoints; 0 when empty.
    #[inline]
    pub fn stdev(&self) -> f64 {
        self.stdev
    }

    /// The largest relative error of a value against its bucket midpoint,
    /// [`Layout::relative_error`] (printed as a percentage: `0.7813%` for a block of 64).
    #[inline]
    pub fn precision(&self) -> f64 {
        self.layout.relative_error()
    }

    /// The histogram's layout.
    #[inline]
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The histogram's window.
    #[inline]
    pub fn window(&self) -> Window {
        self.window
    }

    /// The smallest and largest values the window tracks.
    #[inline]
    pub fn window_range(&self) -> (u64, u64) {
        (
            self.window.min_value(self.layout),
            self.window.max_value(self.layout),
        )
    }

    /// The requested trackable range, if one was set.
    #[inline]
    pub fn requested_range(&self) -> Option<(u64, u64)> {
        self.requested
    }

    /// The range the table's `Range Min`/`Max` row prints: the requested one if set, else
    /// [`Summary::window_range`].
    #[inline]
    pub fn range(&self) -> (u64, u64) {
        self.requested.unwrap_or_else(|| self.window_range())
    }

    /// When the summary was filled ([`SystemTime::UNIX_EPOCH`] for a default one).
    #[inline]
    pub fn timestamp(&self) -> SystemTime {
        self.timestamp
    }

    /// Cohen's d of the change from `self` (before) to `after`: the difference of the means
    /// over the pooled standard deviation,
    ///
    /// `d = (mean_after − mean_before) / s`, with
    /// `s = sqrt(((n_b − 1)·sd_b² + (n_a − 1)·sd_a²) / (n_b + n_a − 2))`,
    ///
    /// where `n` are the totals and `sd` the printed (population) standard deviations.
    /// Negative when the values went down.
    ///
    /// `None` when either summary is empty. When the pooled deviation is zero (both sides are
    /// single buckets), `d` is `0.0` for equal means and `±∞` otherwise, never NaN.
    pub fn cohens_d(&self, after: &Summary) -> Option<f64> {
        if self.is_empty() || after.is_empty() {
            return None;
        }
        let (nb, na) = (self.total as f64, after.total as f64);
        let dof = nb + na - 2.0;
        let pooled = if dof > 0.0 {
            (((nb - 1.0) * self.stdev * self.stdev + (na - 1.0) * after.stdev * after.stdev) / dof)
                .sqrt()
        } else {
            0.0
        };
        let delta = after.mean - self.mean;
        if pooled > 0.0 && pooled.is_finite() {
            Some(delta / pooled)
        } else if delta == 0.0 {
            Some(0.0)
        } else {
            Some(f64::INFINITY.copysign(delta))
        }
    }
}

/// A rank asked of a [`Summary`] that is not one of its 16 [`Summary::RANKS`]
/// ([`Summary::try_percentile`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NotASummaryRank {
    /// The rank asked for.
    pub rank: f64,
}

impl fmt::Display for NotASummaryRank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} is not one of a summary's ranks (", self.rank)?;
        for (i, r) in RANKS.iter().enumerate() {
            write!(f, "{}{r}", if i > 0 { ", " } else { "" })?;
        }
        write!(
            f,
            "); ask the histogram for any rank: h.percentile({}, EquivalentValue::Midpoint) (picollo_alloc::ReadExt)",
            self.rank
        )
    }
}

impl std::error::Error for NotASummaryRank {}

/// Summaries of any histogram: `h.summary()` and `h.summary_into(&mut reused)`.
pub trait SummaryExt: HistogramRead {
    /// The summary of this histogram, taken now (see [`Summary::from_histogram`]).
    fn summary(&self) -> Summary {
        Summary::from_histogram(self)
    }

    /// Refills `out` in place without allocating (see [`Summary::fill_from`]).
    fn summary_into(&self, out: &mut Summary) {
        out.fill_from(self)
    }
}

impl<H: HistogramRead + ?Sized> SummaryExt for H {}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::fmt::GroupedFloat;

    #[test]
    fn cohens_d_edges() {
        let mut b = Summary::default();
        let mut a = Summary::default();
        assert_eq!(b.cohens_d(&a), None);
        (b.total, b.mean, b.stdev) = (1, 10.0, 0.0);
        (a.total, a.mean, a.stdev) = (1, 10.0, 0.0);
        assert_eq!(b.cohens_d(&a), Some(0.0));
        a.mean = 5.0;
        assert_eq!(b.cohens_d(&a), Some(f64::NEG_INFINITY));
        (b.total, b.mean, b.stdev) = (1_000, 17_179_303.94, 1_241_956.59);
        (a.total, a.mean, a.stdev) = (1_000, 8_927_461.38, 438_585.23);
        let d = b.cohens_d(&a).unwrap();
        assert_eq!(GroupedFloat(d, 2).to_string(), "-8.86");
    }
}
