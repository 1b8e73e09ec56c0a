//! Histogram summaries and their printed forms (seed 000, "Summary").
//!
//! A [`Summary`] holds the 16 fixed percentile ranks of seed 000 (each with the detail of its
//! bucket), the total, the values outside the window, the mean and standard deviation, the
//! precision, the trackable range and the time it was taken. It prints three ways:
//!
//! - [`Summary::table`]: the markdown table (`Percentile | Value | ± | Count`);
//! - [`Summary::one_line`]: one log line (`Name: Total=…, Overflow=…, Mean=…, P0=…, …`);
//! - [`Summary::diff`]: two summaries side by side with the change of every row and Cohen's d.
//!
//! Filling an existing summary with [`Summary::fill_from`] allocates nothing, so a monitoring
//! thread can reuse one instance forever. Printing allocates (it measures the columns first).
//!
//! Values have no units (seed 000, "Units and scopes"): the tables print plain integers.
//!
//! ```
//! use picollo_alloc::{HistogramBuilder, Summary};
//!
//! let mut h = HistogramBuilder::new().relative_error(0.01).plain().unwrap();
//! for v in 1..=100 {
//!     h.record(v);
//! }
//! let summary = Summary::from_histogram(&h);
//! assert_eq!(summary.total(), 100);
//! assert_eq!(summary.p50().value, 50); // exact: values below 128 have unit buckets at 1%
//! println!("{}", summary.table("Latency"));
//! println!("{}", summary.one_line("Latency"));
//! ```

use core::fmt;
use picollo_core::fmt::{Grouped, GroupedFloat, Trimmed};
use picollo_core::read::consistent;
use picollo_core::{EquivalentValue, HistogramRead, Layout, Percentile, ReadExt, Window};
use std::time::SystemTime;

/// The ranks of every summary, in order: seed 000's
/// `0, 1, 5, 10, 25, 50, 75, 90, 92.5, 95, 97.5, 99, 99.9, 99.99, 99.999, 100`.
pub const RANKS: [f64; 16] = [
    0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 92.5, 95.0, 97.5, 99.0, 99.9, 99.99, 99.999, 100.0,
];

/// The ranks printed by [`Summary::one_line`] (seed 000's monitoring line), as positions in
/// [`RANKS`] and labels.
const ONE_LINE: [(usize, &str); 8] = [
    (0, "P0"),
    (4, "P25"),
    (5, "P50"),
    (7, "P90"),
    (9, "P95"),
    (11, "P99"),
    (12, "P999"),
    (15, "P100"),
];

/// A histogram's percentiles at the 16 ranks of [`RANKS`] and its statistics, read in one
/// consistent pass pair (see [`Summary::fill_from`]).
///
/// # Range
///
/// A [`HistogramRead`] knows only the window of buckets it stores, which is precise to bucket
/// resolution: a histogram built for `10_000..=30_000` at 1% tracks `9_984..=30_207`. The
/// summary therefore keeps both:
///
/// - [`Summary::window_min`]/[`Summary::window_max`], the values the window really tracks,
///   always read from the histogram;
/// - a *requested* range, set with [`Summary::with_range`] or [`Summary::set_range`], which
///   is what the user asked the builder for. It survives [`Summary::fill_from`].
///
/// [`Summary::range_min`]/[`Summary::range_max`] (the `Range Min`/`Max` row of the table)
/// give the requested range when one is set, otherwise the window's.
///
/// # Empty histograms
///
/// With nothing recorded inside the window every percentile is zero (its `rank` still set),
/// the mean and standard deviation are zero, and the printed forms show `-` for them.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    percentiles: [Percentile; 16],
    total: u64,
    underflow: u64,
    overflow: u64,
    mean: f64,
    stdev: f64,
    layout: Layout,
    window: Window,
    requested: Option<(u64, u64)>,
    timestamp: SystemTime,
    /// What values are divided by when printed ([`Summary::in_unit`]); 1 prints them as
    /// recorded.
    divisor: u64,
}

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
    /// The ranks of every summary; the same as the module's [`RANKS`].
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
    /// All ranks and statistics come from one optimistic read: if a reset of `h` starts or
    /// ends while reading, everything is read again (seed 000, "Optimistic retry"). Values
    /// recorded concurrently (atomic or thread-local kinds) may land between the statistics
    /// pass and the percentile pass; take a snapshot first when that matters.
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
    /// use picollo_alloc::{default_histogram, SummaryExt};
    ///
    /// let mut h = default_histogram();
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

    /// What printed values are divided by (1 unless [`Summary::in_unit`] was called).
    pub fn unit_divisor(&self) -> u64 {
        self.divisor
    }

    /// `value` as printed: divided by [`Summary::unit_divisor`], digits grouped, with the
    /// decimals the divisor needs ([`Scaled`]).
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

    /// Sets or clears the requested trackable range (see the type's docs).
    pub fn set_range(&mut self, range: Option<(u64, u64)>) {
        self.requested = range;
    }

    /// The percentiles at [`RANKS`], in that order.
    #[inline]
    pub fn percentiles(&self) -> &[Percentile; 16] {
        &self.percentiles
    }

    /// The percentile at `rank` if it is one of [`RANKS`], else `None`; for any other rank
    /// ask the histogram (`h.percentile(99.95, EquivalentValue::Midpoint)`, [`crate::ReadExt`]), or use
    /// [`Summary::try_percentile`], whose error says so.
    pub fn percentile(&self, rank: f64) -> Option<&Percentile> {
        RANKS
            .iter()
            .position(|&r| r == rank)
            .map(|i| &self.percentiles[i])
    }

    /// The percentile at `rank`, or an error saying that a summary keeps only [`RANKS`] and
    /// that the histogram answers any rank:
    ///
    /// ```
    /// use picollo_alloc::{default_histogram, EquivalentValue, ReadExt, SummaryExt};
    ///
    /// let mut h = default_histogram();
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
    /// [`NotASummaryRank`] when `rank` is not one of [`RANKS`].
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

    /// The smallest value the window tracks.
    #[inline]
    pub fn window_min(&self) -> u64 {
        self.window.min_value(self.layout)
    }

    /// The largest value the window tracks.
    #[inline]
    pub fn window_max(&self) -> u64 {
        self.window.max_value(self.layout)
    }

    /// The requested trackable range, if one was set.
    #[inline]
    pub fn requested_range(&self) -> Option<(u64, u64)> {
        self.requested
    }

    /// The range minimum: the requested one if set, else [`Summary::window_min`].
    #[inline]
    pub fn range_min(&self) -> u64 {
        self.requested.map_or_else(|| self.window_min(), |r| r.0)
    }

    /// The range maximum: the requested one if set, else [`Summary::window_max`].
    #[inline]
    pub fn range_max(&self) -> u64 {
        self.requested.map_or_else(|| self.window_max(), |r| r.1)
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

    /// The markdown table of seed 000 under a `##### title` heading (no heading when `title`
    /// is empty). See [`SummaryTable`] for the layout.
    pub fn table<'a>(&'a self, title: &'a str) -> SummaryTable<'a> {
        SummaryTable {
            summary: self,
            title,
        }
    }

    /// The one-line form of seed 000's monitoring example. See [`SummaryLine`].
    pub fn one_line<'a>(&'a self, name: &'a str) -> SummaryLine<'a> {
        SummaryLine {
            summary: self,
            name,
        }
    }

    /// The side-by-side table of `self` (labelled `before`) and `after`, with the change of
    /// every row and Cohen's d. See [`SummaryDiff`].
    pub fn diff<'a>(
        &'a self,
        after: &'a Summary,
        title: &'a str,
        before_label: &'a str,
        after_label: &'a str,
    ) -> SummaryDiff<'a> {
        SummaryDiff {
            before: self,
            after,
            title,
            before_label,
            after_label,
        }
    }
}

impl fmt::Display for Summary {
    /// The markdown table titled `Histogram summary`, as seed 000's `PrettyPrint()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.table("Histogram summary").fmt(f)
    }
}

/// A rank asked of a [`Summary`] that is not one of its 16 [`RANKS`]
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

/// The markdown table of a [`Summary`]; from [`Summary::table`].
///
/// ```text
/// ##### Histogram Before
/// | Percentile | Value     | ±      | Count     |
/// | :--------- | --------: | :----- | --------: |
/// | 0          |    20,096 | ±128   |         1 |
/// …
/// | 100        |    25,472 | ±128   | 1,000,000 |
/// | Overflow   |           |        |         1 |
/// |            |           |        |           |
/// | Mean:      | 21,696.54 | StDev: |  1,482.39 |
/// | Precision: |   0.7813% | Total: | 1,000,000 |
/// | Range Min: |    10,000 | Max:   |    30,000 |
/// ```
///
/// - Columns are as wide as their widest cell (header included), left- or right-aligned as
///   the alignment row says; integers are grouped by thousands.
/// - `Value` is the bucket's equivalent value (the midpoint), `±` half the bucket width and
///   `Count` the count the rank asks for (`ceil(rank/100 · total)`).
/// - Mean and StDev have 2 decimals, Precision 4 decimals as a percentage.
/// - The `Underflow` row (before rank 0) and the `Overflow` row (after rank 100) appear only
///   when not zero; the `Range` row appears when any value fell outside the window (as in
///   every seed 000 table: the range explains the out-of-range rows).
/// - An empty histogram prints `-` for the values, the mean and the deviation.
/// - Every line, the last included, ends with `\n`: `println!` leaves a blank line after the
///   table, as seed 000 prints them.
#[derive(Clone, Copy, Debug)]
pub struct SummaryTable<'a> {
    summary: &'a Summary,
    title: &'a str,
}

impl fmt::Display for SummaryTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary;
        let empty = s.is_empty();
        let mut rows: Vec<[String; 4]> = Vec::with_capacity(22);
        if s.underflow != 0 {
            rows.push(cells([
                "Underflow",
                "",
                "",
                &Grouped(s.underflow).to_string(),
            ]));
        }
        for p in &s.percentiles {
            rows.push(if empty {
                cells([&rank(p), "-", "", "0"])
            } else {
                [
                    rank(p),
                    s.scaled(p.value).to_string(),
                    format!("±{}", s.scaled(p.half_width())),
                    Grouped(p.rank_count).to_string(),
                ]
            });
        }
        if s.overflow != 0 {
            rows.push(cells([
                "Overflow",
                "",
                "",
                &Grouped(s.overflow).to_string(),
            ]));
        }
        rows.push(Default::default());
        rows.push(cells([
            "Mean:",
            &stat(s.scaled_stat(s.mean), empty, s.stat_decimals()),
            "StDev:",
            &stat(s.scaled_stat(s.stdev), empty, s.stat_decimals()),
        ]));
        rows.push(cells([
            "Precision:",
            &percent(s.precision()),
            "Total:",
            &Grouped(s.total).to_string(),
        ]));
        if s.underflow != 0 || s.overflow != 0 {
            rows.push(cells([
                "Range Min:",
                &s.scaled(s.range_min()).to_string(),
                "Max:",
                &s.scaled(s.range_max()).to_string(),
            ]));
        }
        write_table(
            f,
            self.title,
            ["Percentile", "Value", "±", "Count"],
            [Align::Left, Align::Right, Align::Left, Align::Right],
            &rows,
        )
    }
}

/// The one-line form of a [`Summary`]; from [`Summary::one_line`].
///
/// `Name: Total=1,000,000, Overflow=1, Mean=21,696.5, P0=20,096, P25=20,352, P50=21,376,
/// P90=23,936, P95=24,448, P99=24,960, P999=25,472, P100=25,472` (one line), as seed 000's
/// monitoring example prints it: grouped integers, the mean with 1 decimal, bucket midpoints.
///
/// `, Underflow=…` follows `Overflow` only when not zero; the `Name: ` prefix is left out when
/// the name is empty; an empty histogram prints `-` for the mean and the percentiles. No
/// trailing newline.
#[derive(Clone, Copy, Debug)]
pub struct SummaryLine<'a> {
    summary: &'a Summary,
    name: &'a str,
}

impl fmt::Display for SummaryLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary;
        if !self.name.is_empty() {
            write!(f, "{}: ", self.name)?;
        }
        write!(
            f,
            "Total={}, Overflow={}",
            Grouped(s.total),
            Grouped(s.overflow)
        )?;
        if s.underflow != 0 {
            write!(f, ", Underflow={}", Grouped(s.underflow))?;
        }
        if s.is_empty() {
            f.write_str(", Mean=-")?;
            for (_, label) in ONE_LINE {
                write!(f, ", {label}=-")?;
            }
        } else {
            let decimals = if s.divisor > 1 { s.stat_decimals() } else { 1 };
            write!(
                f,
                ", Mean={}",
                GroupedFloat(s.scaled_stat(s.mean), decimals)
            )?;
            for (i, label) in ONE_LINE {
                write!(f, ", {label}={}", s.scaled(s.percentiles[i].value))?;
            }
        }
        Ok(())
    }
}

/// Two summaries side by side; from [`Summary::diff`].
///
/// ```text
/// ##### Getting Started Diff
/// | Percentile | Before    | After     | Δ%      |
/// | :--------- | --------: | --------: | ------: |
/// | 0          |    20,096 |    19,072 |   -5.1% |
/// …
/// |            |           |           |         |
/// | Mean:      | 21,696.54 | 21,518.53 |   -0.8% |
/// | StDev:     |  1,482.39 |  2,822.16 |  +90.4% |
/// | Precision: |   0.7813% |   0.7813% |    0.0% |
/// | Total:     | 1,000,000 | 2,000,000 | +100.0% |
/// | D-value:   |           |           |   -0.07 |
/// ```
///
/// - `Δ%` is `(after − before) / before · 100` with 1 decimal, signed: `+1.1%`, `-5.1%`, and
///   `0.0%` when it rounds to zero. It is `n/a` when `before` is 0 and `after` is not, or when
///   either side is empty (the empty side's values print as `-`).
/// - `D-value` is Cohen's d with 2 decimals ([`Summary::cohens_d`]): `n/a` when either side
///   is empty, `-inf`/`+inf` when both sides have zero deviation and different means.
/// - Out-of-window counts are not compared (as in seed 000); print each summary's
///   [`Summary::table`] to see them.
/// - Columns, alignment and the trailing newline are as in [`SummaryTable`].
#[derive(Clone, Copy, Debug)]
pub struct SummaryDiff<'a> {
    before: &'a Summary,
    after: &'a Summary,
    title: &'a str,
    before_label: &'a str,
    after_label: &'a str,
}

impl fmt::Display for SummaryDiff<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, a) = (self.before, self.after);
        let either_empty = b.is_empty() || a.is_empty();
        let value = |s: &Summary, v: u64| {
            if s.is_empty() {
                "-".to_string()
            } else {
                s.scaled(v).to_string()
            }
        };
        let change = |before: f64, after: f64| {
            if either_empty {
                "n/a".to_string()
            } else {
                format_change(before, after)
            }
        };
        let st = |s: &Summary, v: f64| stat(s.scaled_stat(v), s.is_empty(), s.stat_decimals());
        let mut rows: Vec<[String; 4]> = Vec::with_capacity(22);
        for (pb, pa) in b.percentiles.iter().zip(a.percentiles.iter()) {
            rows.push([
                rank(pb),
                value(b, pb.value),
                value(a, pa.value),
                change(pb.value as f64, pa.value as f64),
            ]);
        }
        rows.push(Default::default());
        rows.push([
            "Mean:".to_string(),
            st(b, b.mean),
            st(a, a.mean),
            change(b.mean, a.mean),
        ]);
        rows.push([
            "StDev:".to_string(),
            st(b, b.stdev),
            st(a, a.stdev),
            change(b.stdev, a.stdev),
        ]);
        rows.push([
            "Precision:".to_string(),
            percent(b.precision()),
            percent(a.precision()),
            format_change(b.precision(), a.precision()),
        ]);
        rows.push([
            "Total:".to_string(),
            Grouped(b.total).to_string(),
            Grouped(a.total).to_string(),
            format_change(b.total as f64, a.total as f64),
        ]);
        let d = match b.cohens_d(a) {
            None => "n/a".to_string(),
            Some(d) if d.is_infinite() => (if d > 0.0 { "+inf" } else { "-inf" }).to_string(),
            Some(d) => GroupedFloat(d, 2).to_string(),
        };
        rows.push(cells(["D-value:", "", "", &d]));
        write_table(
            f,
            self.title,
            ["Percentile", self.before_label, self.after_label, "Δ%"],
            [Align::Left, Align::Right, Align::Right, Align::Right],
            &rows,
        )
    }
}

#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

fn cells(c: [&str; 4]) -> [String; 4] {
    c.map(str::to_string)
}

fn rank(p: &Percentile) -> String {
    Trimmed(p.rank, 4).to_string()
}

/// A recorded value divided by a unit's divisor, exactly: the integer part with its digits
/// grouped, then as many decimals as the divisor has digits after the first (3 for 1,000),
/// so nothing is rounded when the divisor is a power of ten. `plain()` leaves the digits
/// ungrouped (CSV, JSON).
///
/// ```
/// use picollo_alloc::summary::Scaled;
/// assert_eq!(Scaled::new(16_384_512, 1_000).to_string(), "16,384.512");
/// assert_eq!(Scaled::new(16_384_512, 1_000).plain(), "16384.512");
/// assert_eq!(Scaled::new(7, 1_000_000).to_string(), "0.000007");
/// assert_eq!(Scaled::new(1_234, 1).to_string(), "1,234");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scaled {
    value: u64,
    divisor: u64,
}

impl Scaled {
    /// `value / divisor` (a divisor of 0 is taken as 1).
    pub const fn new(value: u64, divisor: u64) -> Self {
        Self {
            value,
            divisor: if divisor == 0 { 1 } else { divisor },
        }
    }

    /// The decimals printed for `divisor`: the digits of `divisor - 1` (3 for 1,000, 0 for 1).
    pub const fn decimals_of(divisor: u64) -> usize {
        let mut d = 0;
        let mut x = divisor.saturating_sub(1);
        while x > 0 {
            d += 1;
            x /= 10;
        }
        d
    }

    /// The whole part and the fraction's digits (rounded down when the divisor is not a
    /// power of ten).
    fn parts(&self) -> (u64, String) {
        let whole = self.value / self.divisor;
        let decimals = Self::decimals_of(self.divisor);
        if decimals == 0 {
            return (whole, String::new());
        }
        let rest = u128::from(self.value % self.divisor) * 10u128.pow(decimals as u32)
            / u128::from(self.divisor);
        (whole, format!("{rest:0decimals$}"))
    }

    /// Without digit grouping: `16384.512`.
    pub fn plain(&self) -> String {
        match self.parts() {
            (w, f) if f.is_empty() => w.to_string(),
            (w, f) => format!("{w}.{f}"),
        }
    }
}

impl fmt::Display for Scaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = self.parts();
        let text = if frac.is_empty() {
            Grouped(whole).to_string()
        } else {
            format!("{}.{frac}", Grouped(whole))
        };
        f.pad(&text)
    }
}

/// A statistic with `decimals` decimals, or `-` for an empty histogram.
fn stat(v: f64, empty: bool, decimals: usize) -> String {
    if empty {
        "-".to_string()
    } else {
        GroupedFloat(v, decimals).to_string()
    }
}

/// A ratio as a percentage with 4 decimals: `0.0078125` is `0.7813%`.
fn percent(ratio: f64) -> String {
    format!("{}%", GroupedFloat(ratio * 100.0, 4))
}

/// The signed relative change in percent with 1 decimal: `+1.1%`, `-5.1%`, `0.0%`, or `n/a`
/// when `before` is 0 and `after` is not.
/// The `Δ%` cell of a diff row: `+1.1%`, `-5.1%`, `0.0%` for a change that rounds to zero,
/// `n/a` when `before` is 0 or either side is not finite. Shared by every diff printer.
pub fn format_change(before: f64, after: f64) -> String {
    if before == after {
        return "0.0%".to_string();
    }
    if before == 0.0 || !before.is_finite() || !after.is_finite() {
        return "n/a".to_string();
    }
    let pct = (after - before) / before.abs() * 100.0;
    // GroupedFloat rounds half away from zero; a change that rounds to 0.0 gets no sign.
    if (pct.abs() * 10.0 + 0.5) < 1.0 {
        return "0.0%".to_string();
    }
    let sign = if pct > 0.0 { "+" } else { "-" };
    format!("{sign}{}%", GroupedFloat(pct.abs(), 1))
}

/// Writes `##### title` (unless empty), the header, the alignment row and `rows`, every
/// column padded to its widest cell (counted in characters).
fn write_table(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    header: [&str; 4],
    align: [Align; 4],
    rows: &[[String; 4]],
) -> fmt::Result {
    let mut widths = header.map(|h| h.chars().count().max(3));
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    if !title.is_empty() {
        writeln!(f, "##### {title}")?;
    }
    let line = |f: &mut fmt::Formatter<'_>, row: [&str; 4]| -> fmt::Result {
        for ((cell, &w), a) in row.iter().zip(widths.iter()).zip(align.iter()) {
            match a {
                Align::Left => write!(f, "| {cell:<w$} ")?,
                Align::Right => write!(f, "| {cell:>w$} ")?,
            }
        }
        f.write_str("|\n")
    };
    line(f, header)?;
    for (&w, a) in widths.iter().zip(align.iter()) {
        let dashes = "-".repeat(w - 1);
        match a {
            Align::Left => write!(f, "| :{dashes} ")?,
            Align::Right => write!(f, "| {dashes}: ")?,
        }
    }
    f.write_str("|\n")?;
    for row in rows {
        line(f, [&row[0], &row[1], &row[2], &row[3]])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_formatting() {
        assert_eq!(format_change(20_096.0, 19_072.0), "-5.1%");
        assert_eq!(format_change(22_912.0, 23_168.0), "+1.1%");
        assert_eq!(format_change(5.0, 5.0), "0.0%");
        assert_eq!(format_change(100_000.0, 100_001.0), "0.0%");
        assert_eq!(format_change(100_000.0, 99_999.0), "0.0%");
        assert_eq!(format_change(1.0, 0.0), "-100.0%");
        assert_eq!(format_change(0.0, 3.0), "n/a");
        assert_eq!(format_change(1.0, 1_000.0), "+99,900.0%");
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(percent(0.5 / 64.0), "0.7813%");
        assert_eq!(percent(0.5 / 512.0), "0.0977%");
    }

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
