//! The one read model: every histogram kind exposes its counts through [`HistogramRead`], and
//! percentiles, statistics and iterators are written once, in [`ReadExt`], over it.
//!
//! # Which percentile each path reports
//!
//! Every `f64` percentile path asks for a count with one rule, [`rank_count`]: HdrHistogram
//! Java's `getValueAtPercentile` count, computed as Java computes it (the rank one ulp lower,
//! `ceil(p · total / 100)` in `f64`), so the same count for every `f64` rank and total (the
//! `hdrhistogram` crate's `value_at_quantile(p / 100)` with the decimal quantile gets the same
//! counts at the standard ranks; `tests/rank_rule.rs` and picollo-alloc's
//! `tests/java_differential.rs` check every total up to 100,000). The integer path,
//! [`Rank::count_of`], computes the exact ceiling, which is Java's count below a bound it
//! states. The paths differ only in which value of the bucket they report. Every read names the
//! value it reports ([`EquivalentValue`]): there is no process-wide default to change an answer
//! behind a caller's back.
//!
//! | path | count asked for | value reported | same as HdrHistogram |
//! |---|---|---|---|
//! | `percentile(p, EquivalentValue::Midpoint)`, `percentiles` (`f64` ranks) | [`rank_count`] | the bucket midpoint | the bucket of `getValueAtPercentile`; the midpoint is its `medianEquivalentValue` |
//! | `percentile(p, EquivalentValue::Upper)` | [`rank_count`] | highest equivalent value, `hi - 1` | `getValueAtPercentile(p)`, `value_at_quantile(p / 100)` for `p > 0`; at `p = 0` HdrHistogram reports the lowest value, [`Percentile::lo`] |
//! | `percentile(p, EquivalentValue::Lower)` | [`rank_count`] | lowest equivalent value, `lo` | `lowestEquivalentValue` of that bucket |
//! | `fixed_percentile(s)` ([`Rank`], integers only) | [`Rank::count_of`]: the exact ceiling, Java's count below its bound | the selection passed, as `percentiles` | as `percentiles` |
//! | `picollo_alloc::hdr::HdrCounts::value_at_percentile` | [`rank_count`] | highest equivalent value; lowest at `p = 0` | `getValueAtPercentile`, value for value |
//! | `min()`, `max()` | none | lowest value of the lowest non-empty bucket, highest of the highest | `getMinValue`, `getMaxValue` |
//! | `picollo_alloc::Summary`, `picollo stat`, `report`, `diff` tables | [`rank_count`] | as `percentiles` (midpoint, with `±` half the bucket width) | the bucket of `getValueAtPercentile` |
//! | `percentile_ticks`, `.hgrm` output (`Hgrm`, `stat --hgrm`) | the first bucket whose running share reaches each level | highest equivalent value | `outputPercentileDistribution`, row for row |
//! | `bucket_percentiles` | none: one report per bucket at `(below + count / 2) / total` | the chosen equivalent value | no counterpart (Picollo's own) |
//! | `.hgrm` input (`HgrmFile::to_counts`) | the file's steps | each step's value as printed | exact at the steps; between steps, the next step |
//! | `picollo-export` (Prometheus, OTLP) | none: buckets and counts are exported | the server computes quantiles (`histogram_quantile` interpolates within a bucket) | no counterpart |
//!
//! The counts at given values ([`ReadExt::count_between`], [`ReadExt::count_at_value`],
//! [`ReadExt::percentile_at_or_below`]) are HdrHistogram's `getCountBetweenValues`,
//! `getCountAtValue` and `getPercentileAtOrBelowValue`, over the values inside the window.

mod at_value;
mod buckets;
mod consistent;
mod error;
mod ext;
// The trait sits in a leaf module of its own, so `iter` (which `ReadExt` returns) imports it
// without a circle through this module.
pub(crate) mod histogram_read;
mod percentile;
mod rank;
mod stats;

pub use buckets::Bucket;

#[cfg(test)]
pub(crate) use consistent::try_consistent;
#[cfg(test)]
pub(crate) use consistent::TRY_READ_ATTEMPTS;
pub use consistent::{consistent, OnePass};
pub use error::{PercentileError, ResetInProgress};
pub use ext::ReadExt;
pub use histogram_read::{for_each_nonempty_run, HistogramRead};
pub use percentile::{EquivalentValue, FixedPercentile, Percentile};
pub use rank::{rank_count, Rank};
pub(crate) use stats::{for_each_recorded, RecordedAhead};
pub use stats::{IntStats, Stats};
