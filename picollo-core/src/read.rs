//! The one read model: every histogram kind exposes its counts through [`HistogramRead`], and
//! percentiles, statistics and iterators are written once, in [`ReadExt`], over it.
//!
//! # Which percentile each path reports
//!
//! Every percentile path asks for a count with one rule, [`rank_count`]: `ceil(p/100 · total)`,
//! exactly, for the decimal `p` is written as (HdrHistogram Java's `getValueAtPercentile` and
//! the `hdrhistogram` crate's `value_at_quantile(p / 100)` with the decimal quantile get the
//! same counts; `tests/rank_rule.rs` and picollo-alloc's `tests/java_differential.rs` check
//! every total up to 100,000 at the standard ranks). The paths differ only in which value of
//! the bucket they report. Every read names the value it reports ([`EquivalentValue`]): there
//! is no process-wide default to change an answer behind a caller's back.
//!
//! | path | count asked for | value reported | same as HdrHistogram |
//! |---|---|---|---|
//! | `percentile(p, EquivalentValue::Midpoint)`, `percentiles` (`f64` ranks) | [`rank_count`] | the bucket midpoint | the bucket of `getValueAtPercentile`; the midpoint is its `medianEquivalentValue` |
//! | `percentile(p, EquivalentValue::Upper)` | [`rank_count`] | highest equivalent value, `hi - 1` | `getValueAtPercentile(p)`, `value_at_quantile(p / 100)` for `p > 0`; at `p = 0` HdrHistogram reports the lowest value, [`Percentile::lo`] |
//! | `percentile(p, EquivalentValue::Lower)` | [`rank_count`] | lowest equivalent value, `lo` | `lowestEquivalentValue` of that bucket |
//! | `fixed_percentile(s)` ([`Rank`], integers only) | [`Rank::count_of`]: the same counts | the selection passed, as `percentiles` | as `percentiles` |
//! | `picollo_alloc::hdr::HdrCounts::value_at_percentile` | [`rank_count`] | highest equivalent value; lowest at `p = 0` | `getValueAtPercentile`, value for value |
//! | `min()`, `max()` | none | lowest value of the lowest non-empty bucket, highest of the highest | `getMinValue`, `getMaxValue` |
//! | `picollo_alloc::Summary`, `picollo stat`, `report`, `diff` tables | [`rank_count`] | as `percentiles` (midpoint, with `±` half the bucket width) | the bucket of `getValueAtPercentile` |
//! | `percentile_ticks`, `.hgrm` output (`write_hgrm`, `stat --hgrm`) | the first bucket whose running share reaches each level | highest equivalent value | `outputPercentileDistribution`, row for row |
//! | `bucket_percentiles` | none: one report per bucket at `(below + count / 2) / total` | the chosen equivalent value | no counterpart (seed 000) |
//! | `.hgrm` input (`HgrmFile::to_counts`) | the file's steps | each step's value as printed | exact at the steps; between steps, the next step |
//! | `picollo-export` (Prometheus, OTLP) | none: buckets and counts are exported | the server computes quantiles (`histogram_quantile` interpolates within a bucket) | no counterpart |

use crate::fmt::{Grouped, GroupedWide, Trimmed};
use crate::{Layout, Window};
use core::fmt;

/// The small read interface every histogram kind implements.
///
/// Storage index `s` holds the bucket at logical index `window().first() + s`.
pub trait HistogramRead {
    /// The bucket layout.
    fn layout(&self) -> Layout;
    /// The stored window of logical buckets.
    fn window(&self) -> Window;
    /// The count at storage index `storage_index`; 0 past the end.
    fn count_at(&self, storage_index: usize) -> u64;
    /// Values recorded below the window.
    fn underflow(&self) -> u64;
    /// Values recorded above the window.
    fn overflow(&self) -> u64;

    /// The sum of the counts at storage indices `start..end` (clamped to the window), saturated
    /// at `u64::MAX`. The default adds [`HistogramRead::count_at`]; kinds with plain storage
    /// override it with a loop the compiler vectorizes, which is what makes percentile walks
    /// fast.
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let end = end.min(self.window().len());
        let mut total = 0u64;
        for s in start.min(end)..end {
            total = total.saturating_add(self.count_at(s));
        }
        total
    }

    /// Starts an optimistic read (seqlock, seed 000 "Optimistic retry"): returns a token to pass
    /// to [`HistogramRead::read_retry`]. Kinds that can be reset concurrently wait here while a
    /// reset is in progress (**blocking**: see [`HistogramRead::try_read_begin`] for contexts
    /// that may have interrupted the reset). The default, for kinds that cannot be, returns 0.
    #[inline]
    fn read_begin(&self) -> u64 {
        0
    }

    /// As [`HistogramRead::read_begin`], without waiting: `None` while a reset is in progress.
    /// The `try_` reads of [`ReadExt`] start here, which is what makes them safe in an
    /// interrupt handler that may have landed inside a reset. The default calls
    /// [`HistogramRead::read_begin`]: kinds whose `read_begin` can wait override both.
    #[inline]
    fn try_read_begin(&self) -> Option<u64> {
        Some(self.read_begin())
    }

    /// Whether a structural change (a reset) happened since `read_begin` returned `token`, so the
    /// read must be redone. The default never asks for a retry.
    #[inline]
    fn read_retry(&self, token: u64) -> bool {
        let _ = token;
        false
    }

    /// How many times the histogram was reset (seed 000's `ResetCount`). Kinds without a
    /// reset, such as snapshots, report 0. Wraps at 2^32 for the shared kinds on 32-bit
    /// targets.
    #[inline]
    fn reset_count(&self) -> u64 {
        0
    }
}

impl<H: HistogramRead + ?Sized> HistogramRead for &H {
    fn layout(&self) -> Layout {
        (**self).layout()
    }
    fn window(&self) -> Window {
        (**self).window()
    }
    fn count_at(&self, storage_index: usize) -> u64 {
        (**self).count_at(storage_index)
    }
    fn underflow(&self) -> u64 {
        (**self).underflow()
    }
    fn overflow(&self) -> u64 {
        (**self).overflow()
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        (**self).sum_range(start, end)
    }
    fn read_begin(&self) -> u64 {
        (**self).read_begin()
    }
    fn try_read_begin(&self) -> Option<u64> {
        (**self).try_read_begin()
    }
    fn read_retry(&self, token: u64) -> bool {
        (**self).read_retry(token)
    }
    fn reset_count(&self) -> u64 {
        (**self).reset_count()
    }
}

/// Which value of a bucket stands for the values in it: the selection every percentile read
/// takes.
///
/// A histogram keeps buckets, not values, so a percentile is a bucket, and the value reported
/// for it is one of the bucket's values. [`EquivalentValue::Midpoint`] (the [`Default`]) has
/// the smallest worst-case error; [`EquivalentValue::Upper`] is HdrHistogram's answer
/// (`getValueAtPercentile`, the `hdrhistogram` crate's `value_at_quantile`).
///
/// ```
/// use picollo_core::prelude::*;
///
/// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 100_000)]>::new(
///     Layout::DEFAULT, 0, 100_000);
/// h.record(50_000); // bucket [49,984, 50,047]
/// assert_eq!(h.percentile(50.0, EquivalentValue::Midpoint).unwrap().value, 50_016);
/// assert_eq!(h.percentile(50.0, EquivalentValue::Upper).unwrap().value, 50_047); // HdrHistogram's
/// assert_eq!(h.percentile(50.0, EquivalentValue::Lower).unwrap().value, 49_984);
/// assert_eq!(EquivalentValue::default(), EquivalentValue::Midpoint);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EquivalentValue {
    /// The midpoint `lo + width/2`: the smallest worst-case error (the default).
    #[default]
    Midpoint,
    /// The lowest value of the bucket, `lo`.
    Lower,
    /// The highest value of the bucket, `hi - 1`: what HdrHistogram reports.
    Upper,
}

impl EquivalentValue {
    /// The equivalent value of logical bucket `index`.
    #[inline]
    pub const fn of(self, layout: Layout, index: usize) -> u64 {
        match self {
            Self::Midpoint => layout.midpoint(index),
            Self::Lower => layout.lo(index),
            Self::Upper => layout.highest(index),
        }
    }
}

/// Why a percentile could not be computed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum PercentileError {
    /// The rank is NaN, negative or above 100.
    InvalidRank(f64),
    /// Nothing was recorded inside the window.
    Empty,
    /// The output slice is shorter than the ranks.
    OutputTooShort {
        /// Ranks requested.
        ranks: usize,
        /// Room in the output.
        room: usize,
    },
    /// A `try_` read found a reset in progress (see [`ResetInProgress`]); nothing was lost,
    /// ask again later.
    ResetInProgress,
}

impl fmt::Display for PercentileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRank(r) => write!(f, "percentile rank {r} is not a number in 0..=100"),
            Self::Empty => f.write_str("the histogram has no values inside its window"),
            Self::OutputTooShort { ranks, room } => {
                write!(f, "{ranks} ranks requested but the output holds {room}")
            }
            Self::ResetInProgress => ResetInProgress.fmt(f),
        }
    }
}

impl core::error::Error for PercentileError {}

impl From<ResetInProgress> for PercentileError {
    fn from(_: ResetInProgress) -> Self {
        PercentileError::ResetInProgress
    }
}

/// What a `try_` read of [`ReadExt`] returns instead of waiting: a reset of the histogram was
/// in progress when it started, or resets overlapped all its
/// [`TRY_READ_ATTEMPTS`] passes. Nothing was lost: the histogram is being cleared, and a
/// later read sees the result. An interrupt handler that gets it has landed inside a reset
/// it must not wait for (the reset cannot go on until the handler returns): it asks again at
/// its next interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ResetInProgress;

impl fmt::Display for ResetInProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a reset of the histogram is in progress: read again later")
    }
}

impl core::error::Error for ResetInProgress {}

/// Checks a percentile rank: finite and within `0..=100`.
#[inline]
pub fn check_rank(rank: f64) -> Result<f64, PercentileError> {
    if rank.is_nan() || !(0.0..=100.0).contains(&rank) {
        Err(PercentileError::InvalidRank(rank))
    } else {
        Ok(rank)
    }
}

/// The count a rank asks for among `total` values: Picollo's one rank rule, shared by every
/// percentile path (`f64` and fixed-point ranks, [`Rank::count_of`], `HdrCounts`, summaries,
/// `stat`, `report` and `diff`).
///
/// The rank is read as the decimal it was written as: the one with the fewest decimals (at
/// most 13) that parses back to the same `f64`, which is what `{}` prints (`99.9`, not the
/// binary `99.900000000000005684…`). The count is `ceil(decimal / 100 · total)` computed
/// exactly in integers, then kept within `1..=total` (1 when `total` is 0). No floating-point
/// product decides a count, so `p99.9` of 20,000 values asks for the 19,980th, as HdrHistogram
/// Java's `getValueAtPercentile(99.9)` and the `hdrhistogram` crate's
/// `value_at_quantile(0.999)` do. (The crate's `value_at_percentile(99.9)` computes
/// `99.9 / 100.0 · total` in `f64` and asks for the 19,981st.) A rank with no such decimal
/// (more than 13 decimals, as in `100 · (1 - 2^-40)`) is taken at its exact binary value.
/// `rank` must be within `0..=100` ([`check_rank`]); NaN asks for 1.
///
/// ```
/// use picollo_core::read::rank_count;
/// assert_eq!(rank_count(99.9, 20_000), 19_980);
/// assert_eq!(rank_count(50.0, 1001), 501);
/// assert_eq!(rank_count(0.0, 10), 1);
/// assert_eq!(rank_count(100.0, u64::MAX), u64::MAX);
/// assert_eq!(rank_count(99.999_999_999, 1_000_000_000_000), 999_999_999_990);
/// ```
#[inline]
pub fn rank_count(rank: f64, total: u64) -> u64 {
    if rank.is_nan() || rank <= 0.0 || total == 0 {
        return 1;
    }
    if rank >= 100.0 {
        return total;
    }
    let count = match written_decimal(rank) {
        // At most 7 decimals (every rank people write): a whole number of billionths, which
        // `Rank::count_of` computes in 32-bit operations (no 128-bit division helper).
        Some((parts, 7)) => return Rank(parts as u32).count_of(total),
        // n < 10^15 and total < 2^64: the product fits in u128.
        Some((n, decimals)) => (n as u128 * total as u128).div_ceil(10u128.pow(decimals + 2)),
        None => {
            // The exact binary value m · 2^-shift (rank is normal or subnormal, below 100).
            let bits = rank.to_bits();
            let exp = ((bits >> 52) & 0x7FF) as i32;
            let (m, shift) = if exp == 0 {
                (bits & ((1 << 52) - 1), 1074)
            } else {
                ((bits & ((1 << 52) - 1)) | (1 << 52), 1075 - exp)
            };
            // m < 2^53 and total < 2^64: the product is below 2^117 < 100 · 2^121.
            match u32::try_from(shift).ok().filter(|&s| s <= 120) {
                Some(s) => (m as u128 * total as u128).div_ceil(100u128 << s),
                None => 1,
            }
        }
    };
    count.clamp(1, total as u128) as u64
}

/// The decimal `n / 10^decimals` with the fewest decimals (at most 13) that reads back as
/// `rank` (finite, within `(0, 100)`), or `None`; with at most 7 decimals it is given as
/// `(billionths of 100 %, 7)`, trailing zeros kept.
///
/// Below 100 an `f64`'s rounding interval is narrower than 10^-13, so it holds at most one
/// multiple of 10^-k for each `k <= 13`: the first `k` found gives the shortest decimal, the
/// one `{}` prints. `n as f64 / 10^k` is correctly rounded (`n < 2^53`, `10^k` exact), so it
/// equals `rank` exactly when the decimal parses back to `rank`. Every rank people write has
/// at most 7 decimals, and is found with one multiplication and one division.
fn written_decimal(rank: f64) -> Option<(u64, u32)> {
    // A decimal of at most 7 decimals is m / 10^7, and rank · 10^7 (below 10^9) is within
    // 10^-6 of m.
    let n = (rank * 1e7 + 0.5) as u64;
    if n != 0 && n as f64 / 1e7 == rank {
        return Some((n, 7));
    }
    let mut scale = 1e8f64;
    for decimals in 8..=13u32 {
        let n = (rank * scale + 0.5) as u64;
        for candidate in [n, n.wrapping_sub(1), n + 1] {
            if candidate != 0 && candidate != u64::MAX && candidate as f64 / scale == rank {
                return Some((candidate, decimals));
            }
        }
        scale *= 10.0;
    }
    None
}

/// Square root by Newton's method (core has no `f64::sqrt` without std).
pub(crate) fn sqrt(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 || x.is_infinite() {
        return x;
    }
    // Start from a power of two near the root: halve the exponent bits.
    let mut y = f64::from_bits((x.to_bits() >> 1) + (1023u64 << 51));
    for _ in 0..8 {
        y = 0.5 * (y + x / y);
    }
    y
}

/// A percentile with the detail of its bucket, as seed 000 prints it:
/// `P99=24,960 [83 / 609]: [24,832, 25,088) 14,190`
/// (rank, value, storage / logical index, bucket bounds, bucket count).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Percentile {
    /// The rank, 0..=100.
    pub rank: f64,
    /// The equivalent value selected for the bucket.
    pub value: u64,
    /// The bucket's logical index in the layout.
    pub logical_index: usize,
    /// The bucket's index in storage.
    pub storage_index: usize,
    /// The lowest value of the bucket.
    pub lo: u64,
    /// The highest value of the bucket (inclusive; the exclusive bound is [`Percentile::hi`]).
    pub highest: u64,
    /// Values in the bucket.
    pub count: u64,
    /// The count the rank asked for ([`rank_count`]: `ceil(rank/100 · total)`, exactly): the
    /// `Count` column of seed 000.
    pub rank_count: u64,
}

impl Percentile {
    /// The exclusive upper bound of the bucket.
    pub fn hi(&self) -> u128 {
        self.highest as u128 + 1
    }

    /// Half the bucket width: the `±` of seed 000's tables.
    pub fn half_width(&self) -> u64 {
        ((self.highest - self.lo) as u128 + 1) as u64 / 2
    }
}

impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_percentile(
            f,
            Trimmed(self.rank, 4),
            self.value,
            self.storage_index,
            self,
        )
    }
}

/// Seed 000's percentile line, shared by [`Percentile`] and [`FixedPercentile`]:
/// `P99=24,960 [83 / 609]: [24,832, 25,088) 14,190`.
fn write_percentile(
    f: &mut fmt::Formatter<'_>,
    rank: impl fmt::Display,
    value: u64,
    storage_index: usize,
    bucket: &impl WalkSlot,
) -> fmt::Result {
    let (logical_index, lo, highest, count) = bucket.bucket();
    write!(
        f,
        "P{rank}={} [{storage_index} / {logical_index}]: [{}, {}) {}",
        Grouped(value),
        Grouped(lo),
        GroupedWide(highest as u128 + 1),
        Grouped(count)
    )
}

/// A percentile rank in fixed point: parts per billion of the values (`100 %` is
/// `1_000_000_000`), so ranks down to `0.0000001 %` steps are exact and no floating point is
/// needed to use them. `const`-constructible:
///
/// ```
/// use picollo_core::Rank;
/// const P50: Rank = Rank::percent(50);
/// const P999: Rank = Rank::parse("99.9").unwrap();
/// const P99999: Rank = Rank::per_billion(999_990_000).unwrap();
/// assert_eq!(P999.per_billion_value(), 999_000_000);
/// assert_eq!(P99999.to_string(), "99.999");
/// assert_eq!(P50.count_of(1001), 501); // ceil(0.5 · 1001)
/// assert!(Rank::parse("100.1").is_none() && Rank::parse("9x").is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rank(u32);

impl Rank {
    /// The denominator: `100 %`.
    pub const SCALE: u32 = 1_000_000_000;
    /// `0 %`: the lowest recorded value.
    pub const MIN: Rank = Rank(0);
    /// `100 %`: the highest recorded value.
    pub const MAX: Rank = Rank(Self::SCALE);

    /// `percent %`, clamped to 100.
    pub const fn percent(percent: u32) -> Rank {
        if percent >= 100 {
            Self::MAX
        } else {
            Rank(percent * (Self::SCALE / 100))
        }
    }

    /// `parts` billionths of the values, or `None` above [`Rank::SCALE`].
    pub const fn per_billion(parts: u32) -> Option<Rank> {
        if parts > Self::SCALE {
            None
        } else {
            Some(Rank(parts))
        }
    }

    /// A decimal percentage such as `"99"`, `"99.9"` or `"99.9999999"` (at most 7 decimals),
    /// or `None` for anything else or above 100. A `const fn`, so ranks can be constants.
    pub const fn parse(text: &str) -> Option<Rank> {
        let bytes = text.as_bytes();
        let (mut i, mut value, mut decimals, mut seen_dot, mut digits) =
            (0, 0u64, 0u32, false, 0u32);
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'.' && !seen_dot {
                seen_dot = true;
            } else if b.is_ascii_digit() {
                if seen_dot {
                    decimals += 1;
                    if decimals > 7 {
                        return None;
                    }
                }
                digits += 1;
                value = value * 10 + (b - b'0') as u64;
                if value > 1_000_000_000 {
                    return None;
                }
            } else {
                return None;
            }
            i += 1;
        }
        if digits == 0 {
            return None;
        }
        while decimals < 7 {
            value *= 10;
            decimals += 1;
        }
        if value > Self::SCALE as u64 {
            None
        } else {
            Some(Rank(value as u32))
        }
    }

    /// The rank in billionths.
    pub const fn per_billion_value(self) -> u32 {
        self.0
    }

    /// The rank as an `f64` percentage (links floating point; the integer paths never call it).
    pub fn as_percent(self) -> f64 {
        self.0 as f64 / (Self::SCALE / 100) as f64
    }

    /// The count this rank asks for among `total` values: `ceil(rank · total)`, at least 1
    /// and at most `total` (HdrHistogram's rule, computed exactly in integers; the `f64`
    /// paths use the same rule, [`rank_count`]).
    pub const fn count_of(self, total: u64) -> u64 {
        let count = mul_div_ceil_billion(total, self.0);
        if count < 1 {
            1
        } else if count > total {
            total
        } else {
            count
        }
    }
}

/// `ceil(total · parts / 10^9)` for `parts <= 10^9`, with 32-bit operations only: no 64-bit
/// division, which on 32-bit cores is a call to `__aeabi_uldivmod` (and its stack frame).
///
/// The product is at most 94 bits, held in three 32-bit limbs. Dividing by
/// `10^9 = 2^9 · 1,953,125` is a 9-bit shift, then a long division by 1,953,125 (below 2^21)
/// in 11-bit digits, so every partial dividend fits 32 bits.
const fn mul_div_ceil_billion(total: u64, parts: u32) -> u64 {
    const ODD: u32 = 1_953_125; // 10^9 / 2^9
    let (t0, t1) = (total as u32, (total >> 32) as u32);
    let a = t0 as u64 * parts as u64;
    let b = t1 as u64 * parts as u64;
    let mid = (a >> 32) + (b as u32 as u64);
    // The product, plus 10^9 - 1 to round the quotient up.
    let mut limbs = [a as u32, mid as u32, ((b >> 32) + (mid >> 32)) as u32];
    let mut carry = 999_999_999u64;
    let mut i = 0;
    while i < 3 {
        let sum = limbs[i] as u64 + carry;
        limbs[i] = sum as u32;
        carry = sum >> 32;
        i += 1;
    }
    // Divide by 2^9.
    limbs = [
        (limbs[0] >> 9) | (limbs[1] << 23),
        (limbs[1] >> 9) | (limbs[2] << 23),
        limbs[2] >> 9,
    ];
    // Long division of the 85-bit value by ODD, 11 bits at a time from the top (bit 88 down).
    let (mut quotient, mut rem) = (0u64, 0u32);
    let mut low_bit = 77;
    loop {
        let (word, offset) = ((low_bit / 32) as usize, low_bit % 32);
        let mut digit = limbs[word] >> offset;
        if offset > 21 && word < 2 {
            digit |= limbs[word + 1] << (32 - offset);
        }
        let partial = (rem << 11) | (digit & 0x7FF);
        quotient = (quotient << 11) | (partial / ODD) as u64;
        rem = partial % ODD;
        if low_bit == 0 {
            return quotient;
        }
        low_bit -= 11;
    }
}

impl fmt::Display for Rank {
    /// The percentage with trailing zeros removed: `99.9`, `50`, `99.9999`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (int, mut frac) = (self.0 / 10_000_000, self.0 % 10_000_000);
        let mut width = 7;
        while width > 0 && frac % 10 == 0 && frac != 0 {
            frac /= 10;
            width -= 1;
        }
        if frac == 0 {
            write!(f, "{int}")
        } else {
            write!(f, "{int}.{frac:0width$}")
        }
    }
}

/// A percentile computed in integer arithmetic ([`ReadExt::fixed_percentiles`]): the bucket
/// detail of [`Percentile`], with a fixed-point [`Rank`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FixedPercentile {
    /// The rank.
    pub rank: Rank,
    /// The equivalent value selected for the bucket.
    pub value: u64,
    /// The bucket's logical index in the layout.
    pub logical_index: usize,
    /// The bucket's index in storage.
    pub storage_index: usize,
    /// The lowest value of the bucket.
    pub lo: u64,
    /// The highest value of the bucket (inclusive).
    pub highest: u64,
    /// Values in the bucket.
    pub count: u64,
    /// The count the rank asked for ([`Rank::count_of`]).
    pub rank_count: u64,
}

impl fmt::Display for FixedPercentile {
    /// As [`Percentile`]'s: `P99.9=9,992 [2671 / 2672]: [9,984, 10,000) 16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_percentile(f, self.rank, self.value, self.storage_index, self)
    }
}

/// Totals, extremes and the mean in integer arithmetic ([`ReadExt::int_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IntStats {
    /// Values inside the window.
    pub total: u64,
    /// Values below the window.
    pub underflow: u64,
    /// Values above the window.
    pub overflow: u64,
    /// Lowest value of the lowest non-empty bucket (`None` when empty).
    pub min: Option<u64>,
    /// Highest value of the highest non-empty bucket (`None` when empty).
    pub max: Option<u64>,
    /// Mean of the bucket midpoints weighted by count, rounded to nearest (`None` when empty).
    pub mean: Option<u64>,
}

/// One stored bucket, as the bucket iterators yield it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bucket {
    /// Logical index in the layout.
    pub logical_index: usize,
    /// Index in storage.
    pub storage_index: usize,
    /// Lowest value.
    pub lo: u64,
    /// Highest value (inclusive).
    pub highest: u64,
    /// Values in this bucket.
    pub count: u64,
    /// Values in this bucket and all below it in the window.
    pub cumulative: u64,
}

impl Bucket {
    /// Exclusive upper bound.
    pub fn hi(&self) -> u128 {
        self.highest as u128 + 1
    }
    /// Midpoint.
    pub fn midpoint(&self) -> u64 {
        self.lo + (self.highest - self.lo).div_ceil(2)
    }
}

/// Mean and spread computed from bucket midpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Values inside the window.
    pub total: u64,
    /// Values below the window.
    pub underflow: u64,
    /// Values above the window.
    pub overflow: u64,
    /// Mean of bucket midpoints weighted by count (0 when empty).
    pub mean: f64,
    /// Population standard deviation of bucket midpoints (0 when empty).
    pub stdev: f64,
    /// Lowest value of the lowest non-empty bucket (`None` when empty).
    pub min: Option<u64>,
    /// Highest value of the highest non-empty bucket (`None` when empty).
    pub max: Option<u64>,
}

/// Percentiles, statistics and iterators for every [`HistogramRead`]; blanket-implemented.
///
/// # Progress: which reads may run in an interrupt handler
///
/// Records never make a read wait, and reads never make anything wait. Only a reset can: the
/// shared kinds ([`crate::AtomicHistogram`], [`crate::approx::ApproxHistogram`]) clear their
/// cells in place, so a read that overlaps a reset must not use what it saw.
///
/// - The `try_` reads ([`ReadExt::try_total`], [`ReadExt::try_int_stats`],
///   [`ReadExt::try_fixed_percentiles`], ...) are **wait-free**: at most
///   [`TRY_READ_ATTEMPTS`] passes, and [`ResetInProgress`] (or
///   [`PercentileError::ResetInProgress`]) when a reset is in progress or overlapped every
///   pass. This is the read for an interrupt handler: if it landed inside a thread-mode reset,
///   that reset cannot go on until the handler returns, so the handler must not wait for it.
///   (On 32-bit targets the underflow and overflow counts are two halves, read again only if
///   the high half changed between two loads: nothing the interrupted context can do.)
/// - The other reads (`total`, `fixed_percentiles`, ...) are **blocking** while a reset is in
///   progress: they wait for it to end, then redo the read until no reset overlapped it
///   (lock-free otherwise). From a context that may have interrupted a reset of the same
///   histogram they wait forever: use the `try_` reads there.
///
/// On kinds that cannot be reset concurrently (the plain [`crate::Histogram`], behind `&mut`
/// or a lock, and snapshots) both are wait-free and the `try_` reads never fail for a reset.
/// The iterators ([`ReadExt::buckets`] and the others) read cell by cell and never wait.
pub trait ReadExt: HistogramRead {
    /// Values recorded inside the window (derived on read). Blocking while a reset is in
    /// progress; [`ReadExt::try_total`] never waits.
    fn total(&self) -> u64 {
        consistent(self, |h| sum_counts(h))
    }

    /// Values inside the window plus underflow and overflow. Blocking while a reset is in
    /// progress; [`ReadExt::try_total_with_outside`] never waits.
    fn total_with_outside(&self) -> u64 {
        consistent(self, |h| total_with_outside_of(h))
    }

    /// Total, mean, standard deviation, min and max in one consistent pass pair. Blocking
    /// while a reset is in progress; [`ReadExt::try_stats`] never waits.
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
    /// reset is in progress; [`ReadExt::try_min`] never waits.
    fn min(&self) -> Option<u64> {
        consistent(self, |h| min_of(h))
    }

    /// Highest value of the highest non-empty bucket (HdrHistogram's `max`). Integer
    /// arithmetic only. Blocking while a reset is in progress; [`ReadExt::try_max`] never
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
    /// Blocking while a reset is in progress; [`ReadExt::try_int_stats`] never waits.
    fn int_stats(&self) -> IntStats {
        consistent(self, |h| int_stats_of(h))
    }

    /// Many percentiles at once, mutually consistent (one total, one walk), each reported as
    /// the `selection` of its bucket ([`EquivalentValue::Midpoint`] for the smallest error,
    /// [`EquivalentValue::Upper`] for HdrHistogram's answer). `ranks` may come in any order;
    /// `out[k]` answers `ranks[k]`. Blocking while a reset is in progress;
    /// [`ReadExt::try_percentiles`] never waits.
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
    /// [`ReadExt::try_percentile`] never waits.
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
    /// firmware path (no `f64`, a small stack frame). Same walk, same rank rule ([`rank_count`])
    /// and same answers as [`ReadExt::percentiles`] given the same ranks and selection.
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
    /// Blocking while a reset is in progress; [`ReadExt::try_fixed_percentiles`] never waits.
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
    /// Blocking while a reset is in progress; [`ReadExt::try_fixed_percentile`] never waits.
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
    fn buckets(&self) -> Buckets<'_, Self> {
        Buckets::new(self, false)
    }

    /// The non-empty buckets, with cumulative counts.
    fn recorded_buckets(&self) -> Buckets<'_, Self> {
        Buckets::new(self, true)
    }

    /// Seed 000's bucket percentiles: for each stored bucket, the rank at the middle of the
    /// bucket's share of the values, `(before + count/2) / total · 100`, with its value.
    fn bucket_percentiles(&self, selection: EquivalentValue) -> BucketPercentiles<'_, Self> {
        BucketPercentiles::new(self, false, selection)
    }

    /// As [`ReadExt::bucket_percentiles`], non-empty buckets only.
    fn recorded_bucket_percentiles(
        &self,
        selection: EquivalentValue,
    ) -> BucketPercentiles<'_, Self> {
        BucketPercentiles::new(self, true, selection)
    }

    /// HdrHistogram's linear iteration: one step per `step` value units, until the step that
    /// holds the highest recorded value. `None` when `step` is 0.
    fn linear(&self, step: u64) -> Option<crate::iter::Linear<'_, Self>> {
        crate::iter::Linear::new(self, step)
    }

    /// HdrHistogram's logarithmic iteration: the first step ends at `first`, each later step is
    /// `base` times longer. `None` when `first` is 0 or `base` is not a finite number above 1.
    fn logarithmic(&self, first: u64, base: f64) -> Option<crate::iter::Logarithmic<'_, Self>> {
        crate::iter::Logarithmic::new(self, first, base)
    }

    /// HdrHistogram's percentile iteration with `ticks_per_half_distance` reports per halving of
    /// the distance to 100%. `None` when it is 0.
    fn percentile_ticks(
        &self,
        ticks_per_half_distance: u32,
    ) -> Option<crate::iter::PercentileTicks<'_, Self>> {
        crate::iter::PercentileTicks::new(self, ticks_per_half_distance)
    }

    /// As [`ReadExt::total`], **wait-free**: [`ResetInProgress`] instead of waiting for a
    /// reset. The read for an interrupt handler.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// use picollo_core::read::ResetInProgress;
    /// let h = AtomicHistogram::<[AtomicU32; storage_len(Layout::DEFAULT, 1, 1000)]>::new(
    ///     Layout::DEFAULT, 1, 1000);
    /// h.record(7);
    /// // No reset in progress: the same answer as `total()`.
    /// assert_eq!(h.try_total(), Ok(1));
    /// // In an interrupt handler: skip this tick's read if it landed inside a reset.
    /// match h.try_total() {
    ///     Ok(total) => assert_eq!(total, 1),
    ///     Err(ResetInProgress) => {} // read again at the next interrupt
    /// }
    /// ```
    fn try_total(&self) -> Result<u64, ResetInProgress> {
        try_consistent(self, |h| sum_counts(h))
    }

    /// As [`ReadExt::total_with_outside`], wait-free ([`ReadExt::try_total`]).
    fn try_total_with_outside(&self) -> Result<u64, ResetInProgress> {
        try_consistent(self, |h| total_with_outside_of(h))
    }

    /// As [`ReadExt::min`], wait-free ([`ReadExt::try_total`]).
    fn try_min(&self) -> Result<Option<u64>, ResetInProgress> {
        try_consistent(self, |h| min_of(h))
    }

    /// As [`ReadExt::max`], wait-free ([`ReadExt::try_total`]).
    fn try_max(&self) -> Result<Option<u64>, ResetInProgress> {
        try_consistent(self, |h| max_of(h))
    }

    /// As [`ReadExt::int_stats`], wait-free ([`ReadExt::try_total`]).
    fn try_int_stats(&self) -> Result<IntStats, ResetInProgress> {
        try_consistent(self, |h| int_stats_of(h))
    }

    /// As [`ReadExt::stats`], wait-free ([`ReadExt::try_total`]).
    fn try_stats(&self) -> Result<Stats, ResetInProgress> {
        try_consistent(self, |h| stats_of(h))
    }

    /// As [`ReadExt::fixed_percentiles`], **wait-free**:
    /// [`PercentileError::ResetInProgress`] instead of waiting for a reset (then `out` holds
    /// nothing to use). The percentile read for an interrupt handler.
    fn try_fixed_percentiles(
        &self,
        ranks: &[Rank],
        selection: EquivalentValue,
        out: &mut [FixedPercentile],
    ) -> Result<(), PercentileError> {
        let out = fixed_batch(ranks, out)?;
        try_consistent(self, |h| fixed_walk(h, out, selection))?
    }

    /// As [`ReadExt::fixed_percentile`], wait-free ([`ReadExt::try_fixed_percentiles`]).
    fn try_fixed_percentile(
        &self,
        rank: Rank,
        selection: EquivalentValue,
    ) -> Result<FixedPercentile, PercentileError> {
        let mut out = [FixedPercentile::default()];
        self.try_fixed_percentiles(&[rank], selection, &mut out)?;
        Ok(out[0])
    }

    /// As [`ReadExt::percentiles`], wait-free ([`ReadExt::try_fixed_percentiles`]).
    fn try_percentiles(
        &self,
        ranks: &[f64],
        selection: EquivalentValue,
        out: &mut [Percentile],
    ) -> Result<(), PercentileError> {
        let out = f64_batch(ranks, out)?;
        try_consistent(self, |h| f64_walk(h, out, selection))?
    }

    /// As [`ReadExt::percentile`], wait-free ([`ReadExt::try_fixed_percentiles`]).
    fn try_percentile(
        &self,
        rank: f64,
        selection: EquivalentValue,
    ) -> Result<Percentile, PercentileError> {
        let mut out = [Percentile::default()];
        self.try_percentiles(&[rank], selection, &mut out)?;
        Ok(out[0])
    }
}

impl<H: HistogramRead + ?Sized> ReadExt for H {}

/// Checks a fixed-point batch's output room and writes the ranks into it.
fn fixed_batch<'o>(
    ranks: &[Rank],
    out: &'o mut [FixedPercentile],
) -> Result<&'o mut [FixedPercentile], PercentileError> {
    if out.len() < ranks.len() {
        return Err(PercentileError::OutputTooShort {
            ranks: ranks.len(),
            room: out.len(),
        });
    }
    let out = &mut out[..ranks.len()];
    for (o, &rank) in out.iter_mut().zip(ranks) {
        o.rank = rank;
    }
    Ok(out)
}

/// One pass of a fixed-point batch.
fn fixed_walk<H: HistogramRead + ?Sized>(
    h: &H,
    out: &mut [FixedPercentile],
    selection: EquivalentValue,
) -> Result<(), PercentileError> {
    walk::<_, _, FIXED_SECTIONS>(h, out, selection, |o, total| o.rank.count_of(total))
}

/// Checks an `f64` batch's ranks and output room and writes the ranks into it.
fn f64_batch<'o>(
    ranks: &[f64],
    out: &'o mut [Percentile],
) -> Result<&'o mut [Percentile], PercentileError> {
    if out.len() < ranks.len() {
        return Err(PercentileError::OutputTooShort {
            ranks: ranks.len(),
            room: out.len(),
        });
    }
    for &r in ranks {
        check_rank(r)?;
    }
    let out = &mut out[..ranks.len()];
    for (o, &rank) in out.iter_mut().zip(ranks) {
        o.rank = rank;
    }
    Ok(out)
}

/// One pass of an `f64` batch.
fn f64_walk<H: HistogramRead + ?Sized>(
    h: &H,
    out: &mut [Percentile],
    selection: EquivalentValue,
) -> Result<(), PercentileError> {
    walk::<_, _, SECTIONS>(h, out, selection, |o, total| rank_count(o.rank, total))
}

fn total_with_outside_of<H: HistogramRead + ?Sized>(h: &H) -> u64 {
    sum_counts(h)
        .saturating_add(h.underflow())
        .saturating_add(h.overflow())
}

fn min_of<H: HistogramRead + ?Sized>(h: &H) -> Option<u64> {
    let layout = h.layout();
    let window = h.window();
    (0..window.len())
        .find(|&s| h.count_at(s) != 0)
        .map(|s| layout.lo(window.first() + s))
}

fn max_of<H: HistogramRead + ?Sized>(h: &H) -> Option<u64> {
    let layout = h.layout();
    let window = h.window();
    (0..window.len())
        .rev()
        .find(|&s| h.count_at(s) != 0)
        .map(|s| layout.highest(window.first() + s))
}

/// Calls `take(r)` for each run `r < runs` for which `any(r)` holds, in increasing order:
/// the scan bulk readers use to skip runs of empty cells.
///
/// Two passes per 64 runs: first `any` over them into a mask, without a branch (whether a
/// run is empty depends on the data: a branch on it would mispredict about once per recorded
/// bucket of a sparse histogram), then the mask's runs, found with trailing-zero counts
/// (their cells, just read, are still in cache).
///
/// ```
/// let cells = [0u64, 0, 3, 0, 0, 0, 7, 1];
/// let mut seen = Vec::new();
/// picollo_core::read::for_each_nonempty_run(4, |r| cells[2 * r] | cells[2 * r + 1] != 0, |r| {
///     seen.push(r)
/// });
/// assert_eq!(seen, [1, 3]);
/// ```
#[inline(always)]
pub fn for_each_nonempty_run(
    runs: usize,
    any: impl Fn(usize) -> bool,
    mut take: impl FnMut(usize),
) {
    for word in (0..runs).step_by(64) {
        let mut mask = 0u64;
        for r in 0..64.min(runs - word) {
            mask |= u64::from(any(word + r)) << r;
        }
        while mask != 0 {
            take(word + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
    }
}

/// Runs `f` until it completes without a concurrent structural change (seqlock retry).
/// **Blocking** while a reset is in progress (see [`ReadExt`]'s "Progress");
/// [`try_consistent`] never waits.
pub fn consistent<H: HistogramRead + ?Sized, R>(h: &H, mut f: impl FnMut(&H) -> R) -> R {
    loop {
        let token = h.read_begin();
        let r = f(h);
        if !h.read_retry(token) {
            return r;
        }
        core::hint::spin_loop();
    }
}

/// Passes a `try_` read makes before it reports [`ResetInProgress`]: a pass is redone only
/// when a reset started or ended during it, so four passes fail only when resets keep
/// overlapping the read (a resetting thread in a loop, or an interrupt that resets at every
/// tick while the read runs in thread mode).
pub const TRY_READ_ATTEMPTS: usize = 4;

/// Runs `f` without waiting: [`ResetInProgress`] when a reset is in progress as it starts, or
/// when resets overlapped each of [`TRY_READ_ATTEMPTS`] passes (seqlock, optimistic retry,
/// bounded). **Wait-free**: at most that many calls of `f`. What the `try_` reads of
/// [`ReadExt`] are built on; use it for a consistent read of your own.
///
/// ```
/// use picollo_core::prelude::*;
/// use picollo_core::read::try_consistent;
/// let h = AtomicHistogram::<[AtomicU32; storage_len(Layout::DEFAULT, 1, 1000)]>::new(
///     Layout::DEFAULT, 1, 1000);
/// h.record(7);
/// h.record(2000);
/// let both = try_consistent(&h, |h| (h.count_at(0), h.overflow()));
/// assert_eq!(both, Ok((0, 1)));
/// ```
pub fn try_consistent<H: HistogramRead + ?Sized, R>(
    h: &H,
    mut f: impl FnMut(&H) -> R,
) -> Result<R, ResetInProgress> {
    for _ in 0..TRY_READ_ATTEMPTS {
        let token = h.try_read_begin().ok_or(ResetInProgress)?;
        let r = f(h);
        if !h.read_retry(token) {
            return Ok(r);
        }
    }
    Err(ResetInProgress)
}

fn sum_counts<H: HistogramRead + ?Sized>(h: &H) -> u64 {
    h.sum_range(0, h.window().len())
}

/// Cells summed at once when a percentile walk skips ahead.
const SKIP_CHUNK: usize = 16;
/// Sections of the window whose sums the `f64` percentile batch keeps on the stack (512 bytes:
/// big windows on servers).
const SECTIONS: usize = 64;
/// Sections for the fixed-point (firmware) batch: 32 bytes of stack, which keeps the whole
/// batch within 256 bytes of stack on a Cortex-M4 (measured under QEMU by `firmware/run.sh`).
const FIXED_SECTIONS: usize = 4;

fn int_stats_of<H: HistogramRead + ?Sized>(h: &H) -> IntStats {
    let layout = h.layout();
    let window = h.window();
    let (mut total, mut sum, mut min, mut max) = (0u64, 0u128, None, None);
    for s in 0..window.len() {
        let n = h.count_at(s);
        if n == 0 {
            continue;
        }
        let i = window.first() + s;
        total = total.saturating_add(n);
        sum += mul_u64(n, layout.midpoint(i));
        min.get_or_insert(layout.lo(i));
        max = Some(layout.highest(i));
    }
    IntStats {
        total,
        underflow: h.underflow(),
        overflow: h.overflow(),
        min,
        max,
        // Rounded to nearest; the quotient is at most the largest midpoint, so it fits.
        mean: (total != 0).then(|| div_u128_u64(sum + (total / 2) as u128, total)),
    }
}

/// `a · b` as `u128`, from 32-bit halves: four 32×32→64 multiplies, which 32-bit cores do in
/// one instruction each (a plain `u128` product calls the `__multi3` helper there).
#[inline]
fn mul_u64(a: u64, b: u64) -> u128 {
    let (a_lo, a_hi) = (a & 0xFFFF_FFFF, a >> 32);
    let (b_lo, b_hi) = (b & 0xFFFF_FFFF, b >> 32);
    let low = (a_lo * b_lo) as u128;
    let mid = (a_lo * b_hi) as u128 + (a_hi * b_lo) as u128;
    let high = (a_hi * b_hi) as u128;
    low + (mid << 32) + (high << 64)
}

/// `n / d` for a quotient known to fit `u64` (`n < d · 2^64`, `d > 0`), by shift-and-subtract:
/// small code and no `__udivti3` helper on 32-bit cores.
fn div_u128_u64(n: u128, d: u64) -> u64 {
    let d = d as u128;
    let mut rem = n >> 64;
    let mut quotient = 0u64;
    for bit in (0..64).rev() {
        rem = (rem << 1) | ((n >> bit) & 1);
        quotient <<= 1;
        if rem >= d {
            rem -= d;
            quotient |= 1;
        }
    }
    quotient
}

fn stats_of<H: HistogramRead + ?Sized>(h: &H) -> Stats {
    let layout = h.layout();
    let window = h.window();
    let (mut total, mut sum, mut min, mut max) = (0u64, 0f64, None, None);
    for s in 0..window.len() {
        let n = h.count_at(s);
        if n == 0 {
            continue;
        }
        let i = window.first() + s;
        total = total.saturating_add(n);
        sum += n as f64 * layout.midpoint(i) as f64;
        min.get_or_insert(layout.lo(i));
        max = Some(layout.highest(i));
    }
    let mean = if total == 0 { 0.0 } else { sum / total as f64 };
    // Second pass around the mean: numerically stable for tight distributions of big values.
    let mut squares = 0f64;
    if total > 0 {
        for s in 0..window.len() {
            let n = h.count_at(s);
            if n != 0 {
                let d = layout.midpoint(window.first() + s) as f64 - mean;
                squares += n as f64 * d * d;
            }
        }
    }
    Stats {
        total,
        underflow: h.underflow(),
        overflow: h.overflow(),
        mean,
        stdev: if total == 0 {
            0.0
        } else {
            sqrt(squares / total as f64)
        },
        min,
        max,
    }
}

/// What a percentile walk fills in: the `f64` [`Percentile`] and the fixed-point
/// [`FixedPercentile`] share the walk through this.
trait WalkSlot {
    /// The count this slot's rank asks for.
    fn target(&self) -> u64;
    /// Sets the count this slot's rank asks for.
    fn set_target(&mut self, target: u64);
    /// Records the bucket found.
    fn set_bucket(&mut self, value: u64, logical: usize, storage: usize, layout: Layout, n: u64);
    /// The bucket found: logical index, lowest and highest value, count.
    fn bucket(&self) -> (usize, u64, u64, u64);
}

macro_rules! walk_slot {
    ($t:ty) => {
        impl WalkSlot for $t {
            #[inline]
            fn target(&self) -> u64 {
                self.rank_count
            }
            #[inline]
            fn set_target(&mut self, target: u64) {
                self.rank_count = target;
            }
            #[inline]
            fn set_bucket(
                &mut self,
                value: u64,
                logical: usize,
                storage: usize,
                layout: Layout,
                n: u64,
            ) {
                self.value = value;
                self.logical_index = logical;
                self.storage_index = storage;
                self.lo = layout.lo(logical);
                self.highest = layout.highest(logical);
                self.count = n;
            }
            #[inline]
            fn bucket(&self) -> (usize, u64, u64, u64) {
                (self.logical_index, self.lo, self.highest, self.count)
            }
        }
    };
}

walk_slot!(Percentile);
walk_slot!(FixedPercentile);

/// One percentile batch: the total (kept as `SECTIONS` section sums), each slot's target count
/// from `target(slot, total)`, then one forward walk that fills every slot.
fn walk<H, P, const SECTIONS: usize>(
    h: &H,
    out: &mut [P],
    selection: EquivalentValue,
    target: impl Fn(&P, u64) -> u64,
) -> Result<(), PercentileError>
where
    H: HistogramRead + ?Sized,
    P: WalkSlot,
{
    let layout = h.layout();
    let window = h.window();
    // First pass: the total, kept as per-section sums so that each rank's walk can start at
    // the section holding its bucket instead of re-reading everything below it.
    let section = window.len().div_ceil(SECTIONS).next_multiple_of(SKIP_CHUNK);
    let mut sums = [0u64; SECTIONS];
    let mut total = 0u64;
    for (k, sum) in sums.iter_mut().enumerate() {
        let start = k * section;
        if start >= window.len() {
            break;
        }
        *sum = h.sum_range(start, start + section);
        total = total.saturating_add(*sum);
    }
    if total == 0 {
        return Err(PercentileError::Empty);
    }
    for o in out.iter_mut() {
        let t = target(o, total);
        o.set_target(t);
    }
    // One forward walk answers all ranks: they are taken in order of their target count (an
    // O(ranks²) selection, which needs no allocation and is tiny next to the walk). Counts
    // below the walk position are never re-read and the total is fixed for the batch, so the
    // answers are monotone in rank even while other threads record (counts only grow between
    // resets, and resets make the caller retry).
    let (mut s, mut below, mut last_nonzero) = (0usize, 0u64, None);
    let mut last_chunk: Option<usize> = None;
    let (mut sec, mut sec_below) = (0usize, 0u64);
    let mut previous: Option<(u64, usize)> = None;
    for _ in 0..out.len() {
        let mut next: Option<(u64, usize)> = None;
        for (j, p) in out.iter().enumerate() {
            let key = (p.target(), j);
            if previous.is_none_or(|prev| key > prev) && next.is_none_or(|best| key < best) {
                next = Some(key);
            }
        }
        let Some((target, j)) = next else { break };
        previous = next;
        // Jump (forward only) to the section where the cumulative count reaches the target.
        while sec + 1 < SECTIONS
            && (sec + 1) * section < window.len()
            && sec_below.saturating_add(sums[sec]) < target
        {
            sec_below = sec_below.saturating_add(sums[sec]);
            sec += 1;
        }
        if s < sec * section {
            s = sec * section;
            below = sec_below;
        }
        let mut found = None;
        while s < window.len() {
            // Skip whole chunks that stay below the target with one (vectorized) sum.
            if s % SKIP_CHUNK == 0 && s + SKIP_CHUNK <= window.len() {
                let chunk = h.sum_range(s, s + SKIP_CHUNK);
                if below.saturating_add(chunk) < target {
                    below = below.saturating_add(chunk);
                    if chunk != 0 {
                        last_nonzero = None;
                        last_chunk = Some(s);
                    }
                    s += SKIP_CHUNK;
                    continue;
                }
            }
            let n = h.count_at(s);
            if n != 0 {
                last_nonzero = Some((s, n));
                if below.saturating_add(n) >= target {
                    found = Some((s, n));
                    break;
                }
            }
            below = below.saturating_add(n);
            s += 1;
        }
        // Counts that vanished mid-walk (only with a racing reset, which the caller retries)
        // leave nothing found: answer with the last non-empty bucket seen.
        let fallback = || {
            last_nonzero.or_else(|| {
                let c = last_chunk?;
                (c..c + SKIP_CHUNK)
                    .rev()
                    .map(|i| (i, h.count_at(i)))
                    .find(|&(_, n)| n != 0)
            })
        };
        let (s_found, n) = found.or_else(fallback).unwrap_or((0, 0));
        let i = window.first() + s_found;
        out[j].set_bucket(selection.of(layout, i), i, s_found, layout, n);
    }
    Ok(())
}

/// Iterator over stored buckets; see [`ReadExt::buckets`].
pub struct Buckets<'a, H: ?Sized> {
    h: &'a H,
    layout: Layout,
    window: Window,
    next: usize,
    cumulative: u64,
    only_recorded: bool,
}

impl<'a, H: HistogramRead + ?Sized> Buckets<'a, H> {
    fn new(h: &'a H, only_recorded: bool) -> Self {
        Buckets {
            h,
            layout: h.layout(),
            window: h.window(),
            next: 0,
            cumulative: 0,
            only_recorded,
        }
    }
}

impl<H: HistogramRead + ?Sized> Iterator for Buckets<'_, H> {
    type Item = Bucket;
    fn next(&mut self) -> Option<Bucket> {
        while self.next < self.window.len() {
            let s = self.next;
            self.next += 1;
            let count = self.h.count_at(s);
            if count == 0 && self.only_recorded {
                continue;
            }
            self.cumulative = self.cumulative.saturating_add(count);
            let i = self.window.first() + s;
            return Some(Bucket {
                logical_index: i,
                storage_index: s,
                lo: self.layout.lo(i),
                highest: self.layout.highest(i),
                count,
                cumulative: self.cumulative,
            });
        }
        None
    }
}

/// Iterator over seed 000's bucket percentiles; see [`ReadExt::bucket_percentiles`].
pub struct BucketPercentiles<'a, H: ?Sized> {
    buckets: Buckets<'a, H>,
    total: u64,
    selection: EquivalentValue,
}

impl<'a, H: HistogramRead + ?Sized> BucketPercentiles<'a, H> {
    fn new(h: &'a H, only_recorded: bool, selection: EquivalentValue) -> Self {
        BucketPercentiles {
            buckets: Buckets::new(h, only_recorded),
            total: sum_counts(h),
            selection,
        }
    }
}

impl<H: HistogramRead + ?Sized> Iterator for BucketPercentiles<'_, H> {
    type Item = Percentile;
    fn next(&mut self) -> Option<Percentile> {
        let b = self.buckets.next()?;
        let before = b.cumulative - b.count;
        let rank = if self.total == 0 {
            0.0
        } else {
            ((before as f64 + b.count as f64 / 2.0) / self.total as f64 * 100.0).min(100.0)
        };
        Some(Percentile {
            rank,
            value: self.selection.of(self.buckets.layout, b.logical_index),
            logical_index: b.logical_index,
            storage_index: b.storage_index,
            lo: b.lo,
            highest: b.highest,
            count: b.count,
            rank_count: b.cumulative,
        })
    }
}
