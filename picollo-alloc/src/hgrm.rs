//! HdrHistogram's percentile distribution text, the `.hgrm` format, over any
//! [`HistogramRead`].
//!
//! The output is what Java's `AbstractHistogram.outputPercentileDistribution` prints:
//!
//! ```text
//!        Value     Percentile TotalCount 1/(1-Percentile)
//!
//!       20.095 0.000000000000          1           1.00
//!      ...
//!       25.471 1.000000000000    1000000
//! #[Mean    =       21.696, StdDeviation   =        1.482]
//! #[Max     =       25.471, Total count    =      1000000]
//! #[Buckets =            6, SubBuckets     =         2048]
//! ```
//!
//! - The header is `%12s %14s %10s %14s` followed by an empty line.
//! - One line per step of the percentile iteration
//!   ([`ReadExt::percentile_ticks`]), formatted
//!   `%12.{d}f %2.12f %10d %14.2f`: the step's value (the highest value of its bucket, as
//!   HdrHistogram reports it) divided by the output scaling ratio, the percentile level as a
//!   fraction, the count at or below the value, and `1/(1-level)`. The last line, at 100%,
//!   has no fourth column.
//! - The footer gives the mean and standard deviation (bucket midpoints, HdrHistogram's
//!   `medianEquivalentValue`), the max (highest value of the highest non-empty bucket) and
//!   the total, all scaled like the values, and the HdrHistogram geometry (below).
//!
//! [`parse_hgrm`] reads such a text back (see [`HgrmFile`]).
//!
//! Numbers are rounded as Java's `Formatter` rounds them: half up, on the shortest decimal
//! representation of the double (so `20.095` prints as `20.10` with two decimals, where
//! Rust's `{:.2}` gives `20.09`).
//!
//! # Geometry (`Buckets`, `SubBuckets`) and decimals
//!
//! A Picollo layout with `B = 2^k` buckets per block is HdrHistogram's geometry with
//! `subBucketCount = 2B` and `unitMagnitude = 0`: Picollo's blocks 0 and 1 (unit width,
//! `0..2B`) are HdrHistogram's bucket 0, and each later Picollo block is the upper half of
//! the next HdrHistogram bucket. So:
//!
//! - `SubBuckets` = `2B` (`hdr_sub_bucket_count`);
//! - `Buckets` = the number of HdrHistogram buckets needed to cover the window's highest
//!   trackable value, HdrHistogram's `getBucketsNeededToCoverValue`.
//!   Picollo's window minimum does not change it: HdrHistogram buckets always start at 0.
//! - The value columns use HdrHistogram's `numberOfSignificantValueDigits` decimals: the
//!   largest `d` with `2·10^d <= 2B` ([`significant_digits`]); a 3-significant-digit
//!   HdrHistogram is block scale 10 (`B = 1024`, 2048 sub-buckets), the default layout
//!   (`B = 512`) is 2 digits. [`Hgrm::decimals`] overrides it.
//!
//! # Outside the window, live histograms
//!
//! Values counted as underflow or overflow are not in the distribution (HdrHistogram has no
//! such counts): the percentiles and the total are those of the window. The text is built
//! inside the optimistic read retry, so a concurrent reset is never seen half done; values
//! recorded concurrently may still land between the footer's pass and the percentile walk,
//! so write from a [`Snapshot`](crate::Snapshot) for a self-consistent file of a live
//! histogram.
//!
//! # Examples
//!
//! ```
//! use picollo_alloc::hgrm::Hgrm;
//! use picollo_alloc::HistogramBuilder;
//! use picollo_core::Layout;
//!
//! // Block scale 10 is HdrHistogram's 3 significant digits.
//! let layout = Layout::from_block_scale(10).unwrap();
//! let mut h = HistogramBuilder::new().layout(layout).max_trackable(3_600_000_000).plain()?;
//! for v in 1..=1000u64 {
//!     h.record(v * 1000); // microseconds
//! }
//! // Values in milliseconds, 5 reports per halving of the distance to 100%.
//! let hgrm = Hgrm::new(&h, 5, 1000.0)?;
//! let text = hgrm.to_string();
//! assert!(text.starts_with("       Value     Percentile TotalCount 1/(1-Percentile)\n\n"));
//! assert!(text.contains("#[Buckets =           22, SubBuckets     =         2048]"));
//!
//! // To a file (any `io::Write`): the text is rendered first, then written in one call.
//! let mut file = Vec::new();
//! std::io::Write::write_all(&mut file, hgrm.render().as_bytes())?;
//! assert_eq!(file, text.as_bytes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt::{self, Write as _};
use picollo_core::read::consistent;

mod read;
use picollo_core::{HistogramRead, Layout, ReadExt, Window};
pub use read::{looks_like_hgrm, parse_hgrm, HgrmFile, HgrmParseError, HgrmStep};
use std::io;

use crate::hdr::java_fmt::java_fixed;

/// Why an `.hgrm` text could not be produced.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum HgrmError {
    /// `ticks_per_half_distance` was 0.
    ZeroTicks,
    /// The output value unit scaling ratio was not a finite number above 0.
    InvalidScalingRatio(f64),
}

impl fmt::Display for HgrmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroTicks => f.write_str("percentile ticks per half distance must be at least 1"),
            Self::InvalidScalingRatio(r) => write!(
                f,
                "output value unit scaling ratio {r} is not a finite number above 0"
            ),
        }
    }
}

impl std::error::Error for HgrmError {}

impl From<HgrmError> for io::Error {
    fn from(e: HgrmError) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, e)
    }
}

/// HdrHistogram's `subBucketCount` for `layout`: `2B`.
pub(crate) fn hdr_sub_bucket_count(layout: Layout) -> u64 {
    2 * layout.block_size()
}

/// HdrHistogram's `bucketCount` for a histogram whose highest trackable value is `max`:
/// the buckets of `subBucketCount = 2B` (unit magnitude 0) needed to cover `max`, as
/// `getBucketsNeededToCoverValue` counts them. `u64::MAX` gives `block_count - 1`.
pub(crate) fn hdr_bucket_count(layout: Layout, max: u64) -> u32 {
    let mut smallest_untrackable = u128::from(hdr_sub_bucket_count(layout));
    let mut buckets = 1;
    while smallest_untrackable <= u128::from(max) {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    buckets
}

/// HdrHistogram's `numberOfSignificantValueDigits` that gives `layout`'s sub-bucket count:
/// the largest `d` with `2·10^d <= 2B`, i.e. `floor(log10(B))` (0 for `B < 10`).
pub fn significant_digits(layout: Layout) -> usize {
    let mut digits = 0;
    let mut p = 10u64;
    while p <= layout.block_size() {
        digits += 1;
        p *= 10;
    }
    digits
}

/// The `.hgrm` text of a histogram as a [`Display`](fmt::Display) value; see the
/// [module docs](self).
#[derive(Clone, Copy, Debug)]
pub struct Hgrm<'a, H: ?Sized> {
    h: &'a H,
    ticks: u32,
    ratio: f64,
    decimals: usize,
}

impl<'a, H: HistogramRead + ?Sized> Hgrm<'a, H> {
    /// The distribution of `h` with `ticks_per_half_distance` reports per halving of the
    /// distance to 100% and values divided by `output_value_unit_scaling_ratio`. The value
    /// decimals are [`significant_digits`] of `h`'s layout.
    pub fn new(
        h: &'a H,
        ticks_per_half_distance: u32,
        output_value_unit_scaling_ratio: f64,
    ) -> Result<Self, HgrmError> {
        if ticks_per_half_distance == 0 {
            return Err(HgrmError::ZeroTicks);
        }
        if !output_value_unit_scaling_ratio.is_finite() || output_value_unit_scaling_ratio <= 0.0 {
            return Err(HgrmError::InvalidScalingRatio(
                output_value_unit_scaling_ratio,
            ));
        }
        Ok(Hgrm {
            h,
            ticks: ticks_per_half_distance,
            ratio: output_value_unit_scaling_ratio,
            decimals: significant_digits(h.layout()),
        })
    }

    /// Prints the value, mean, deviation and max columns with `decimals` decimals (at most
    /// 20) instead of the layout's significant digits.
    pub fn decimals(mut self, decimals: usize) -> Self {
        self.decimals = decimals.min(20);
        self
    }

    /// The whole text, read inside the optimistic retry (a racing reset restarts it).
    pub fn render(&self) -> String {
        consistent(self.h, |h| {
            let mut s = String::new();
            // Writing to a `String` cannot fail.
            let _ = render_into(h, self.ticks, self.ratio, self.decimals, &mut s);
            s
        })
    }
}

impl<H: HistogramRead + ?Sized> fmt::Display for Hgrm<'_, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Mean and deviation as HdrHistogram computes them (`getMean`, `getStdDeviation`): over
/// recorded buckets in ascending order, with bucket midpoints.
fn hdr_stats<H: HistogramRead + ?Sized>(h: &H) -> (u64, f64, f64, u64) {
    let layout = h.layout();
    let window = h.window();
    // Two passes through the kind's bulk read (recorded buckets in ascending order, as the
    // sums need): a lookup per bucket of the window would cost sparse storage a page-table
    // walk per empty bucket.
    let recorded = |f: &mut dyn FnMut(usize, u64)| {
        h.recorded_runs(&mut |start, run| {
            for (s, &n) in (start..).zip(run) {
                if n != 0 {
                    f(window.first() + s, n);
                }
            }
        });
    };
    let (mut total, mut sum, mut max) = (0u64, 0f64, 0u64);
    recorded(&mut |i, n| {
        total = total.saturating_add(n);
        sum += layout.midpoint(i) as f64 * n as f64;
        max = layout.highest(i);
    });
    if total == 0 {
        return (0, 0.0, 0.0, 0);
    }
    let mean = sum / total as f64;
    let mut squares = 0f64;
    recorded(&mut |i, n| {
        let d = layout.midpoint(i) as f64 - mean;
        squares += (d * d) * n as f64;
    });
    (total, mean, (squares / total as f64).sqrt(), max)
}

fn render_into<H: HistogramRead + ?Sized>(
    h: &H,
    ticks: u32,
    ratio: f64,
    decimals: usize,
    out: &mut String,
) -> fmt::Result {
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let (total, mean, stdev, max) = hdr_stats(h);
    if let Some(steps) = h.percentile_ticks(ticks) {
        for step in steps {
            let level = step.percentile_level_iterated_to / 100.0;
            java_fixed(out, step.value_iterated_to as f64 / ratio, 12, decimals);
            out.push(' ');
            java_fixed(out, level, 2, 12);
            write!(out, " {:>10}", step.total_count_to_value)?;
            if step.percentile_level_iterated_to != 100.0 {
                out.push(' ');
                java_fixed(out, 1.0 / (1.0 - level), 14, 2);
            }
            out.push('\n');
        }
    }
    out.push_str("#[Mean    = ");
    java_fixed(out, mean / ratio, 12, decimals);
    out.push_str(", StdDeviation   = ");
    java_fixed(out, stdev / ratio, 12, decimals);
    out.push_str("]\n#[Max     = ");
    java_fixed(out, max as f64 / ratio, 12, decimals);
    writeln!(out, ", Total count    = {total:>12}]")?;
    let window: Window = h.window();
    writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        hdr_bucket_count(h.layout(), window.max_value(h.layout())),
        hdr_sub_bucket_count(h.layout())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HistogramBuilder;

    #[test]
    fn geometry() {
        let l10 = Layout::from_block_scale(10).unwrap();
        assert_eq!(hdr_sub_bucket_count(l10), 2048);
        assert_eq!(significant_digits(l10), 3);
        assert_eq!(significant_digits(Layout::DEFAULT), 2);
        assert_eq!(significant_digits(Layout::from_block_scale(7).unwrap()), 2);
        assert_eq!(significant_digits(Layout::from_block_scale(4).unwrap()), 1);
        assert_eq!(significant_digits(Layout::from_block_scale(3).unwrap()), 0);
        assert_eq!(significant_digits(Layout::from_block_scale(14).unwrap()), 4);
        assert_eq!(significant_digits(Layout::from_block_scale(17).unwrap()), 5);
        // HdrHistogram (1, 3_600_000_000, 3) has 22 buckets.
        assert_eq!(hdr_bucket_count(l10, 3_600_000_000), 22);
        assert_eq!(hdr_bucket_count(l10, 2047), 1);
        assert_eq!(hdr_bucket_count(l10, 2048), 2);
        for k in 1..=20 {
            let l = Layout::from_block_scale(k).unwrap();
            assert_eq!(hdr_bucket_count(l, u64::MAX), l.block_count() - 1);
        }
    }

    #[test]
    fn bad_parameters() {
        let h = HistogramBuilder::new().dense().plain().unwrap();
        assert_eq!(Hgrm::new(&h, 0, 1.0).err(), Some(HgrmError::ZeroTicks));
        assert!(Hgrm::new(&h, 5, 0.0).is_err());
        assert!(Hgrm::new(&h, 5, f64::NAN).is_err());
    }

    #[test]
    fn empty_histogram() {
        let h = HistogramBuilder::new().dense().plain().unwrap();
        let text = Hgrm::new(&h, 5, 1.0).unwrap().to_string();
        assert_eq!(
            text,
            "       Value     Percentile TotalCount 1/(1-Percentile)\n\n\
             #[Mean    =         0.00, StdDeviation   =         0.00]\n\
             #[Max     =         0.00, Total count    =            0]\n\
             #[Buckets =           55, SubBuckets     =         1024]\n"
        );
    }
}
