//! The bridge between HdrHistogram data ([`HdrCounts`]) and Picollo histograms.
//!
//! # The mapping
//!
//! HdrHistogram with `d` significant digits has `sub_bucket_count = 2^ceil(log2(2·10^d))`
//! sub-buckets per bucket; with unit magnitude `m = floor(log2(lowest_discernible))` it indexes
//! `v >> m`. Its bucket `b > 0` holds the upper half sub-buckets `[H, 2H)` (`H` is half the
//! sub-bucket count) with width `2^(b+m)`, and bucket 0 holds `[0, 2H)` with width `2^m`.
//! Picollo's layout with block size `B = 2^k` has blocks 0 and 1 of unit width and block
//! `j >= 1` of width `2^(j-1)`. So:
//!
//! | `d` | `sub_bucket_count` | Picollo `B` (`k`) |
//! | --- | --- | --- |
//! | 0 | 2 | 1 (`k` = 0, unsupported: [`layout_for`] takes `k` = 1) |
//! | 1 | 32 | 16 (4) |
//! | 2 | 256 | 128 (7) |
//! | 3 | 2048 | 1024 (10) |
//! | 4 | 32768 | 16384 (14) |
//! | 5 | 262144 | 131072 (17) |
//!
//! - **Index for index.** With `m = 0` and `B = sub_bucket_count / 2`, HdrHistogram counts index
//!   `i` and Picollo logical index `i` are the same bucket (HdrHistogram bucket `b` is Picollo
//!   block `b + 1`). Conversion copies counts (or reads them in place: [`view`]).
//!   HdrHistogram's `getValueAtPercentile` is Picollo's percentile with
//!   [`EquivalentValue::Upper`](picollo_core::EquivalentValue::Upper) (both ask for the count
//!   `ceil(p/100 · total)`: Picollo exactly, for the decimal `p` is written as
//!   ([`rank_count`](picollo_core::read::rank_count)), Java in doubles after lowering `p` by one
//!   ulp, which gives the same counts up to 2^36 values and more), except at `p = 0`, where
//!   HdrHistogram reports the bucket's lowest value ([`Percentile::lo`](picollo_core::Percentile::lo));
//!   HdrHistogram's `getMaxValue` is [`ReadExt::max`](picollo_core::ReadExt::max).
//! - **Re-bucketing** (every other case: `m > 0` or another precision). Each
//!   non-empty source bucket's count goes into the target bucket holding the source bucket's
//!   *lowest* equivalent value. This is what HdrHistogram's own `add` does across geometries, and
//!   it reproduces the values Java's jHiccup tests assert (see `tests/hdr_interop.rs`).
//!
//! # The error bound of re-bucketing
//!
//! Both sides' buckets are *dyadic*: a bucket of width `2^e` starts at a multiple of `2^e`. Two
//! dyadic intervals are either nested or disjoint, so the target bucket `T` that holds the lowest
//! value of a source bucket `S = [lo, hi]` either contains all of `S`, or lies inside `S`:
//!
//! - `T ⊇ S`: the count sits exactly where recording the original values would have put it.
//!   When this holds for every non-empty source bucket the conversion is exact
//!   ([`BucketMapping::is_exact`]): the result equals recording the original values directly.
//! - `T ⊂ S` (the target is finer there): every value Picollo reports for the count (any
//!   [`EquivalentValue`](picollo_core::EquivalentValue)) still lies in `[lo, hi]`, so it is off
//!   the true value by at most `hi - lo`: **below the source bucket's width, the source's own
//!   resolution.** For an HdrHistogram source that is a relative error below
//!   `1 / sub_bucket_half_count <= 10^-d` for values at or above
//!   `sub_bucket_half_count · 2^m` (buckets at least `sub_bucket_half_count` widths above 0),
//!   and an absolute error below `2^m <= lowest_discernible` under it, where HdrHistogram's own
//!   resolution is absolute. For a Picollo source exported into finer HdrHistogram buckets it
//!   is a relative error below `1 / B` (Picollo's unit-width buckets never split).
//!   [`BucketMapping`] reports the bounds the data actually reached
//!   ([`max_abs_error`](BucketMapping::max_abs_error),
//!   [`max_relative_error`](BucketMapping::max_relative_error),
//!   [`max_linear_error`](BucketMapping::max_linear_error)).
//!
//! A Picollo layout at least as fine as the source (`k >= log2(sub_bucket_count / 2)`, which
//! [`layout_for`] always picks) never merges two source buckets, so the order of the buckets
//! and every percentile's bucket carry over one to one.
//!
//! # Exporting
//!
//! [`from_picollo`] is exact or fails: the layout must map to a significant-digit count
//! ([`significant_digits_for`]: `k` in 4, 7, 10, 14, 17), and nothing may lie outside what V2
//! can hold. The header gets `lowest_discernible = 1` (`m = 0`) and a highest trackable value
//! covering the window (capped at `i64::MAX`, HdrHistogram's limit). [`export`] with
//! [`ExportOptions`] re-buckets into any precision and can drop what V2 cannot represent —
//! the underflow and overflow counts, and buckets above the header's range — reporting the
//! dropped counts in [`HdrExport`]: out-of-range values are counted, never silently dropped.
//!
//! ```
//! use picollo_alloc::hdr::{interop, HdrCounts};
//! use picollo_core::{EquivalentValue, HistogramRead, ReadExt};
//!
//! let mut hdr = HdrCounts::new(1, i64::MAX as u64, 3)?;
//! for v in 0..100_000u64 {
//!     hdr.record(v, 1)?;
//! }
//! let h = interop::to_picollo(&hdr)?; // block scale 10, index for index
//! assert_eq!(h.layout().block_size(), 1024);
//! let p999 = h.percentile(99.9, EquivalentValue::Upper)?.value;
//! assert_eq!(Some(p999), hdr.value_at_percentile(99.9));
//!
//! let back = interop::from_picollo(&h)?; // exact: same counts, same bytes
//! assert_eq!(back.encode_v2()?, hdr.encode_v2()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;

use picollo_core::layout::{MAX_BLOCK_SCALE, MIN_BLOCK_SCALE};
use picollo_core::read::consistent;
use picollo_core::{HistogramRead, Layout, Record, Window};

use super::codec::{deflate_v2, encode_v2, CountsSource, PayloadWriter, V2Fields};
use super::{HdrCounts, HdrError, HdrGeometry, MAX_SIGNIFICANT_DIGITS};
use crate::heap::{self, HeapHistogram};

/// What went wrong converting between HdrHistogram counts and a Picollo histogram.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InteropError {
    /// The HdrHistogram side is not valid: a geometry HdrHistogram refuses, a non-zero count
    /// beyond the geometry's counts array, or a count above `i64::MAX`.
    Hdr(HdrError),
    /// No significant-digit count `d` in `0..=5` has `2^ceil(log2(2·10^d)) / 2` equal to the
    /// layout's block size, so an exact (index for index) export is impossible. Export with
    /// [`ExportOptions::significant_digits`] to re-bucket instead.
    NoMatchingSignificantDigits {
        /// The Picollo layout's block scale `k` (`B = 2^k`).
        block_scale: u32,
        /// The smallest `d` whose buckets are at least as fine as the layout's: exporting with
        /// it keeps every count inside its Picollo bucket. `None` for `k > 17`.
        finer: Option<u8>,
    },
    /// The HdrHistogram geometry does not index values like any Picollo layout (unit magnitude
    /// above 0, or 0 significant digits), so it cannot be read in place ([`view`]); convert
    /// it with [`to_picollo`] instead.
    NotIndexForIndex {
        /// The geometry's significant digits.
        significant_digits: u8,
        /// The geometry's unit magnitude (`floor(log2(lowest_discernible))`).
        unit_magnitude: u32,
    },
    /// The histogram holds counts V2 cannot represent (its underflow and overflow, whose values
    /// are unknown, and buckets above the header's range), and the caller did not allow
    /// dropping them ([`ExportOptions::allow_dropping`]).
    OutsideCounts {
        /// Values below the Picollo window.
        underflow: u64,
        /// Values above the Picollo window or above the HdrHistogram range.
        overflow: u64,
    },
}

impl fmt::Display for InteropError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hdr(e) => write!(f, "{e}"),
            Self::NoMatchingSignificantDigits { block_scale, finer } => {
                write!(
                    f,
                    "no HdrHistogram significant-digit count matches block size 2^{block_scale} \
                     (exact export needs block scale 4, 7, 10, 14 or 17)"
                )?;
                match finer {
                    Some(d) => write!(
                        f,
                        "; export with ExportOptions::significant_digits({d}) to re-bucket \
                         within the Picollo buckets"
                    ),
                    None => f.write_str("; no HdrHistogram precision is as fine"),
                }
            }
            Self::NotIndexForIndex {
                significant_digits,
                unit_magnitude,
            } => write!(
                f,
                "an HdrHistogram with {significant_digits} significant digits and unit magnitude \
                 {unit_magnitude} does not index like a Picollo layout (needs 1 to 5 digits and \
                 lowest discernible value 1); convert it with to_picollo instead"
            ),
            Self::OutsideCounts {
                underflow,
                overflow,
            } => write!(
                f,
                "{underflow} values below and {overflow} above the representable range cannot be \
                 encoded in V2 (use ExportOptions::allow_dropping to export without them)"
            ),
        }
    }
}

impl std::error::Error for InteropError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Hdr(e) => Some(e),
            _ => None,
        }
    }
}

impl From<HdrError> for InteropError {
    fn from(e: HdrError) -> Self {
        Self::Hdr(e)
    }
}

/// `log2(sub_bucket_count / 2)` for `d` significant digits (`d <= 5`).
const fn half_count_magnitude(d: u8) -> u32 {
    let largest_single_unit = 2 * 10u64.pow(d as u32);
    // ceil(log2(x)) - 1 for x >= 2.
    64 - (largest_single_unit - 1).leading_zeros() - 1
}

/// The Picollo layout matching an HdrHistogram geometry: block scale
/// `log2(sub_bucket_count / 2)`, so `B = sub_bucket_count / 2` (d=2: 128, d=3: 1024).
///
/// With `unit_magnitude() == 0` this layout indexes values exactly as the geometry does. For
/// `d = 0` (block scale 0, which Picollo does not support) it returns block scale 1, which is
/// finer; see the [module docs](self) for the bound.
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrGeometry};
///
/// let g = HdrGeometry::new(1, i64::MAX as u64, 3)?;
/// assert_eq!(interop::layout_for(&g).block_size(), 1024);
/// assert!(interop::indexes_alike(&g, interop::layout_for(&g)));
/// let jhiccup = HdrGeometry::new(20_000, 3_600_000_000_000, 2)?;
/// assert_eq!(interop::layout_for(&jhiccup).block_size(), 128);
/// assert!(!interop::indexes_alike(&jhiccup, interop::layout_for(&jhiccup))); // m = 14
/// # Ok::<(), picollo_alloc::hdr::HdrError>(())
/// ```
pub fn layout_for(geometry: &HdrGeometry) -> Layout {
    let k = geometry
        .sub_bucket_half_count_magnitude()
        .clamp(MIN_BLOCK_SCALE, MAX_BLOCK_SCALE);
    // Clamped into the supported range, so this cannot fail.
    Layout::from_block_scale(k).unwrap_or(Layout::DEFAULT)
}

/// `true` when HdrHistogram counts index `i` and Picollo logical index `i` are the same value
/// range: unit magnitude 0 and `B = sub_bucket_count / 2`.
pub fn indexes_alike(geometry: &HdrGeometry, layout: Layout) -> bool {
    geometry.unit_magnitude() == 0
        && geometry.sub_bucket_half_count_magnitude() == layout.block_scale()
}

/// The smallest significant-digit count `d` (0 to 5) whose HdrHistogram layout is the Picollo
/// layout's, index for index: `2^ceil(log2(2·10^d)) = 2B`. `None` when there is none; only
/// block scales 4, 7, 10, 14 and 17 have one (`d` = 1 to 5).
///
/// ```
/// use picollo_alloc::hdr::interop::significant_digits_for;
/// use picollo_core::Layout;
///
/// assert_eq!(significant_digits_for(Layout::from_block_scale(10).unwrap()), Some(3));
/// assert_eq!(significant_digits_for(Layout::DEFAULT), None); // B = 512
/// ```
pub fn significant_digits_for(layout: Layout) -> Option<u8> {
    (0..=MAX_SIGNIFICANT_DIGITS).find(|&d| half_count_magnitude(d) == layout.block_scale())
}

/// The smallest significant-digit count whose buckets are at least as fine as the layout's
/// (`log2(sub_bucket_count / 2) >= k`): exporting with it keeps every count inside the Picollo
/// bucket it came from, and importing the result at `layout` gives the same counts back.
/// `None` for block scales above 17.
///
/// ```
/// use picollo_alloc::hdr::interop::finer_significant_digits;
/// use picollo_core::Layout;
///
/// assert_eq!(finer_significant_digits(Layout::DEFAULT), Some(3)); // B = 512 -> 1024
/// assert_eq!(finer_significant_digits(Layout::from_block_scale(20).unwrap()), None);
/// ```
pub fn finer_significant_digits(layout: Layout) -> Option<u8> {
    (0..=MAX_SIGNIFICANT_DIGITS).find(|&d| half_count_magnitude(d) >= layout.block_scale())
}

/// The HdrHistogram geometry that indexes like `layout`: lowest discernible value 1 (unit
/// magnitude 0), the significant digits of [`significant_digits_for`], and
/// `highest_trackable` (at least 2, at most `i64::MAX`).
///
/// ```
/// use picollo_alloc::hdr::interop::{hdr_geometry_for, InteropError};
/// use picollo_core::Layout;
///
/// let g = hdr_geometry_for(Layout::from_block_scale(7).unwrap(), 3_600_000_000_000)?;
/// assert_eq!((g.significant_digits(), g.lowest_discernible()), (2, 1));
/// assert!(matches!(
///     hdr_geometry_for(Layout::DEFAULT, 1 << 40),
///     Err(InteropError::NoMatchingSignificantDigits { block_scale: 9, finer: Some(3) })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NoMatchingSignificantDigits`] when the layout has no significant-digit
/// count.
pub fn hdr_geometry_for(
    layout: Layout,
    highest_trackable: u64,
) -> Result<HdrGeometry, InteropError> {
    let d = significant_digits_for(layout).ok_or(InteropError::NoMatchingSignificantDigits {
        block_scale: layout.block_scale(),
        finer: finer_significant_digits(layout),
    })?;
    Ok(HdrGeometry::new(1, clamp_highest(highest_trackable), d)?)
}

/// A highest trackable value HdrHistogram accepts with lowest discernible value 1.
fn clamp_highest(highest: u64) -> u64 {
    highest.clamp(2, i64::MAX as u64)
}

/// How the buckets of one side landed in the other's buckets (see the [module docs](self)).
///
/// Reports of several conversions combine with [`merge`](Self::merge).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketMapping {
    /// Both sides index values identically ([`indexes_alike`]): counts were copied index for
    /// index.
    pub index_for_index: bool,
    /// Non-empty source buckets.
    pub buckets: usize,
    /// Non-empty source buckets wider than the target bucket they went to (placed at their
    /// lowest equivalent value). 0 means exact.
    pub split_buckets: usize,
    /// Largest `hi - lo` among the split source buckets: no reported value of a mapped count is
    /// further than this from the true value. 0 when exact.
    pub max_abs_error: u64,
    /// Largest `(hi - lo) / lo` among the split source buckets in the source's logarithmic
    /// range, `lo >= width · H` (`H`: HdrHistogram's `sub_bucket_half_count`, Picollo's `B`),
    /// where the source's resolution is relative: always below `1 / H`. 0.0 when none.
    pub max_relative_error: f64,
    /// Largest `hi - lo` among the split source buckets below that range, where the source's
    /// resolution is absolute: HdrHistogram's bucket 0 with unit magnitude `m`, buckets `2^m`
    /// wide, so below `2^m <= lowest_discernible`. (Picollo's unit-width buckets there never
    /// split.) 0 when none.
    pub max_linear_error: u64,
}

impl Default for BucketMapping {
    /// The report of converting nothing: index for index, exact.
    fn default() -> Self {
        Self {
            index_for_index: true,
            buckets: 0,
            split_buckets: 0,
            max_abs_error: 0,
            max_relative_error: 0.0,
            max_linear_error: 0,
        }
    }
}

impl BucketMapping {
    fn new(index_for_index: bool) -> Self {
        Self {
            index_for_index,
            ..Self::default()
        }
    }

    /// `true` when every non-empty source bucket lies inside one target bucket: the result
    /// equals recording the original values directly.
    pub fn is_exact(&self) -> bool {
        self.split_buckets == 0
    }

    /// Combines the report of another conversion into this one.
    pub fn merge(&mut self, other: &BucketMapping) {
        self.index_for_index &= other.index_for_index;
        self.buckets = self.buckets.saturating_add(other.buckets);
        self.split_buckets = self.split_buckets.saturating_add(other.split_buckets);
        self.max_abs_error = self.max_abs_error.max(other.max_abs_error);
        self.max_relative_error = self.max_relative_error.max(other.max_relative_error);
        self.max_linear_error = self.max_linear_error.max(other.max_linear_error);
    }

    /// Records one non-empty source bucket `[lo, hi]`, `split` when it is wider than its
    /// target bucket; `half` is the source's half sub-bucket count (HdrHistogram) or block
    /// size (Picollo).
    fn note(&mut self, lo: u64, hi: u64, split: bool, half: u64) {
        self.buckets += 1;
        if split {
            self.split_buckets += 1;
            let abs = hi - lo;
            self.max_abs_error = self.max_abs_error.max(abs);
            // width * half can exceed u64 only far above any bucket's lo.
            let logarithmic = (abs as u128 + 1) * half as u128 <= lo as u128;
            if logarithmic {
                let rel = abs as f64 / lo as f64;
                self.max_relative_error = self.max_relative_error.max(rel);
            } else {
                self.max_linear_error = self.max_linear_error.max(abs);
            }
        }
    }
}

/// What [`add_hdr`] (and [`to_picollo_in`]) did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Import {
    /// Counts added (saturating), inside and outside the target window.
    pub total: u64,
    /// How the HdrHistogram buckets landed in the Picollo buckets.
    pub mapping: BucketMapping,
    /// Counts whose bucket fell below the target window: the target counted them as underflow.
    pub underflow: u64,
    /// Counts whose bucket fell above the target window: the target counted them as overflow.
    pub overflow: u64,
}

impl Import {
    /// `true` when the import was exact ([`BucketMapping::is_exact`]) and everything landed
    /// inside the target window.
    pub fn is_exact(&self) -> bool {
        self.mapping.is_exact() && self.underflow == 0 && self.overflow == 0
    }

    /// Combines the report of another import (for example the next interval of a log).
    pub fn merge(&mut self, other: &Import) {
        self.total = self.total.saturating_add(other.total);
        self.mapping.merge(&other.mapping);
        self.underflow = self.underflow.saturating_add(other.underflow);
        self.overflow = self.overflow.saturating_add(other.overflow);
    }
}

/// Checks `source` completely before anything is recorded, so a failed import changes nothing.
fn validated_geometry(source: &HdrCounts) -> Result<HdrGeometry, InteropError> {
    let g = source.geometry()?;
    if let Some(index) = source.max_index() {
        if index >= g.counts_len() {
            return Err(HdrError::IndexOutOfRange {
                index,
                counts_len: g.counts_len(),
            }
            .into());
        }
    }
    Ok(g)
}

/// Adds HdrHistogram counts into any Picollo histogram (any layout, window and kind), with
/// the re-bucketing rule of the [module docs](self): each source bucket's count is recorded at
/// its lowest equivalent value. Counts landing outside the target's window are counted there
/// as underflow or overflow, and reported.
///
/// The source is checked completely first: on error, nothing was recorded. Values are
/// HdrHistogram's integer values: for a `DoubleHistogram`'s internal histogram
/// (`int_to_double_ratio != 1.0`) multiply by the ratio to get real values. The normalizing
/// offset plays no part (`counts` is in logical order).
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrCounts};
/// use picollo_alloc::heap;
/// use picollo_core::{Layout, ReadExt, Window};
///
/// let mut hdr = HdrCounts::new(20_000, 3_600_000_000_000, 2)?; // unit magnitude 14
/// hdr.record(2_768_895, 5)?;
/// let layout = Layout::from_block_scale(10).unwrap();
/// let mut h = heap::plain::<u64>(layout, Window::full(layout));
/// let import = interop::add_hdr(&mut h, &hdr)?;
/// assert_eq!(h.total(), 5);
/// assert!(!import.is_exact()); // a 16 384-wide source bucket, finer target buckets
/// assert_eq!(import.mapping.max_abs_error, 16_383);
/// assert_eq!(h.max(), Some(2_754_559)); // inside the source bucket [2 752 512, 2 768 895]
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::Hdr`] when `source` has an invalid geometry or a non-zero count beyond its
/// counts array.
pub fn add_hdr<H>(target: &mut H, source: &HdrCounts) -> Result<Import, InteropError>
where
    H: Record + HistogramRead + ?Sized,
{
    let g = validated_geometry(source)?;
    let layout = target.layout();
    let window = target.window();
    let half = g.sub_bucket_half_count();
    let mut import = Import {
        mapping: BucketMapping::new(indexes_alike(&g, layout)),
        ..Import::default()
    };
    let outside = |t: usize, count: u64, import: &mut Import| {
        if t < window.first() {
            import.underflow = import.underflow.saturating_add(count);
        } else if t > window.last() {
            import.overflow = import.overflow.saturating_add(count);
        }
    };
    if import.mapping.index_for_index {
        // Counts index `i` is Picollo logical index `i`: no bucket can split.
        for (index, &count) in source.counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            import.mapping.buckets += 1;
            import.total = import.total.saturating_add(count);
            outside(index, count, &mut import);
            target.record_n(layout.lo(index), count);
        }
        return Ok(import);
    }
    for (index, &count) in source.counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        // Validated above: every non-zero index is inside the counts array.
        let (Some(lo), Some(hi)) = (g.lowest_equivalent(index), g.highest_equivalent(index)) else {
            continue;
        };
        let t = layout.index_of(lo);
        import.mapping.note(lo, hi, layout.index_of(hi) != t, half);
        import.total = import.total.saturating_add(count);
        outside(t, count, &mut import);
        target.record_n(lo, count);
    }
    Ok(import)
}

/// The window [`to_picollo`] uses: `[0, highest_recordable]` under [`layout_for`], so every
/// count of the geometry lands inside it.
pub fn window_for(geometry: &HdrGeometry) -> Window {
    let layout = layout_for(geometry);
    Window::new(layout, 0, geometry.highest_recordable()).unwrap_or(Window::full(layout))
}

/// Converts HdrHistogram counts into a Picollo heap histogram at the matching layout
/// ([`layout_for`]) over [`window_for`]: index for index when the unit magnitude is 0,
/// otherwise re-bucketed with every reported value inside its HdrHistogram bucket (see the
/// [module docs](self)). Nothing lands outside the window.
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrCounts};
/// use picollo_core::{EquivalentValue, ReadExt};
///
/// let mut hdr = HdrCounts::new(1, 3_600_000_000_000, 2)?;
/// hdr.record(1_000, 3)?;
/// hdr.record(2_768_895, 1)?;
/// let h = interop::to_picollo(&hdr)?;
/// assert_eq!(h.total(), 4);
/// assert_eq!(h.max(), Some(hdr.max()));
/// assert_eq!(h.percentile(50.0, EquivalentValue::Upper)?.value, 1_003);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`add_hdr`].
pub fn to_picollo(source: &HdrCounts) -> Result<HeapHistogram<u64>, InteropError> {
    let g = validated_geometry(source)?;
    let (h, _) = to_picollo_in(source, layout_for(&g), window_for(&g))?;
    Ok(h)
}

/// Converts HdrHistogram counts into a new Picollo heap histogram with a caller-chosen layout
/// and window, returning what the conversion did ([`add_hdr`]).
///
/// # Errors
/// As [`add_hdr`].
pub fn to_picollo_in(
    source: &HdrCounts,
    layout: Layout,
    window: Window,
) -> Result<(HeapHistogram<u64>, Import), InteropError> {
    let g = validated_geometry(source)?;
    let mut h = heap::plain::<u64>(layout, window);
    let import = if indexes_alike(&g, layout) {
        // A straight copy, through the core's same-layout `add`.
        h.add(&HdrView {
            counts: &source.counts,
            layout,
        });
        import_alike(&source.counts, window)
    } else {
        add_hdr(&mut h, source)?
    };
    Ok((h, import))
}

/// The [`Import`] of counts copied index for index into `window`.
fn import_alike(counts: &[u64], window: Window) -> Import {
    let sum = |c: &[u64]| c.iter().fold(0u64, |a, &n| a.saturating_add(n));
    let below = window.first().min(counts.len());
    let above = window.last().saturating_add(1).clamp(below, counts.len());
    Import {
        total: sum(counts),
        mapping: BucketMapping {
            buckets: counts.iter().filter(|&&n| n != 0).count(),
            ..BucketMapping::new(true)
        },
        underflow: sum(&counts[..below]),
        overflow: sum(&counts[above..]),
    }
}

/// HdrHistogram counts read in place as a Picollo histogram, without copying: every
/// [`ReadExt`](picollo_core::ReadExt) percentile, statistic and iterator works on it. Only for
/// geometries that index like a Picollo layout ([`indexes_alike`]: lowest discernible value 1,
/// 1 to 5 significant digits); see [`view`].
#[derive(Debug, Clone, Copy)]
pub struct HdrView<'a> {
    counts: &'a [u64],
    layout: Layout,
}

/// Reads HdrHistogram counts in place as a Picollo histogram at [`layout_for`] its geometry.
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrCounts};
/// use picollo_core::{EquivalentValue, ReadExt};
///
/// let mut hdr = HdrCounts::new(1, 3_600_000_000_000, 3)?;
/// for v in 1..=1000u64 {
///     hdr.record(v * 1000, 1)?;
/// }
/// let view = interop::view(&hdr)?;
/// assert_eq!(view.total(), 1000);
/// assert_eq!(
///     Some(view.percentile(99.0, EquivalentValue::Upper)?.value),
///     hdr.value_at_percentile(99.0)
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NotIndexForIndex`] for a geometry that indexes differently, and
/// [`InteropError::Hdr`] for an invalid one or a non-zero count beyond its counts array.
pub fn view(counts: &HdrCounts) -> Result<HdrView<'_>, InteropError> {
    let g = validated_geometry(counts)?;
    let layout = layout_for(&g);
    if !indexes_alike(&g, layout) {
        return Err(InteropError::NotIndexForIndex {
            significant_digits: g.significant_digits(),
            unit_magnitude: g.unit_magnitude(),
        });
    }
    Ok(HdrView {
        counts: &counts.counts,
        layout,
    })
}

impl HistogramRead for HdrView<'_> {
    fn layout(&self) -> Layout {
        self.layout
    }

    /// Logical buckets `0..counts.len()` (at least one).
    fn window(&self) -> Window {
        Window::from_indices(self.layout, 0, self.counts.len())
    }

    fn count_at(&self, storage_index: usize) -> u64 {
        self.counts.get(storage_index).copied().unwrap_or(0)
    }

    /// Always 0: HdrHistogram has no underflow.
    fn underflow(&self) -> u64 {
        0
    }

    /// Always 0: HdrHistogram counts only what its counts array holds.
    fn overflow(&self) -> u64 {
        0
    }

    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let end = end.min(self.counts.len());
        // Low and high halves apart: no overflow below 2^32 cells, and the loop vectorizes.
        let (mut low, mut high) = (0u64, 0u64);
        for &c in &self.counts[start.min(end)..end] {
            low += c & 0xFFFF_FFFF;
            high += c >> 32;
        }
        let sum = ((high as u128) << 32) + low as u128;
        sum.min(u64::MAX as u128) as u64
    }
}

/// Options of [`export`]. The default is strict: the layout's own significant digits (exact),
/// a highest trackable value covering the window, and an error for anything V2 cannot hold.
///
/// ```
/// use picollo_alloc::hdr::interop::ExportOptions;
///
/// let lossy = ExportOptions::new().significant_digits(3).allow_dropping(true);
/// assert_eq!(lossy.significant_digits_or_exact(), Some(3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportOptions {
    significant_digits: Option<u8>,
    highest_trackable: Option<u64>,
    allow_dropping: bool,
}

impl ExportOptions {
    /// The strict defaults (see the type's docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// Exports with `d` significant digits (0 to 5), re-bucketing when `d` does not match the
    /// layout: each Picollo bucket's count goes into the HdrHistogram bucket holding the
    /// Picollo bucket's lowest value. With [`finer_significant_digits`] every count stays
    /// inside its Picollo bucket.
    pub fn significant_digits(mut self, d: u8) -> Self {
        self.significant_digits = Some(d);
        self
    }

    /// The significant digits set with [`significant_digits`](Self::significant_digits)
    /// (`None`: the layout's own, [`significant_digits_for`]).
    pub fn significant_digits_or_exact(&self) -> Option<u8> {
        self.significant_digits
    }

    /// Sets the header's highest trackable value (clamped to `2..=i64::MAX`) instead of the
    /// window's highest value. Buckets above the geometry's counts array count as overflow.
    pub fn highest_trackable(mut self, highest: u64) -> Self {
        self.highest_trackable = Some(highest);
        self
    }

    /// `true`: export without the counts V2 cannot represent, reporting them in
    /// [`HdrExport::dropped_underflow`] and [`HdrExport::dropped_overflow`]. `false` (the
    /// default): fail with [`InteropError::OutsideCounts`] when there are any.
    pub fn allow_dropping(mut self, allow: bool) -> Self {
        self.allow_dropping = allow;
        self
    }
}

/// The result of [`export`]: the counts and what could not be carried over.
#[derive(Debug, Clone, PartialEq)]
pub struct HdrExport {
    /// The HdrHistogram counts, ready for [`HdrCounts::encode_v2`] or a
    /// [`LogWriter`](super::LogWriter).
    pub counts: HdrCounts,
    /// How the Picollo buckets landed in the HdrHistogram buckets.
    pub mapping: BucketMapping,
    /// The Picollo histogram's underflow: values below its window, not in `counts`.
    pub dropped_underflow: u64,
    /// The Picollo histogram's overflow plus the counts of buckets above the HdrHistogram
    /// range: not in `counts`.
    pub dropped_overflow: u64,
}

impl HdrExport {
    /// `true` when every count was carried over, each in the bucket recording the original
    /// value would have chosen.
    pub fn is_exact(&self) -> bool {
        self.report().is_exact()
    }

    /// Everything but the counts: how the buckets landed and what was dropped.
    pub fn report(&self) -> ExportReport {
        ExportReport {
            mapping: self.mapping,
            dropped_underflow: self.dropped_underflow,
            dropped_overflow: self.dropped_overflow,
        }
    }
}

/// What [`export_v2_into`] and [`export_v2_deflate`] did: how the Picollo buckets landed in the
/// HdrHistogram buckets, and the counts V2 could not hold (the fields of [`HdrExport`] but the
/// counts, which went straight into the bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExportReport {
    /// How the Picollo buckets landed in the HdrHistogram buckets.
    pub mapping: BucketMapping,
    /// The Picollo histogram's underflow: values below its window, not encoded.
    pub dropped_underflow: u64,
    /// The Picollo histogram's overflow plus the counts of buckets above the HdrHistogram
    /// range: not encoded.
    pub dropped_overflow: u64,
}

impl ExportReport {
    /// `true` when every count was carried over, each in the bucket recording the original
    /// value would have chosen.
    pub fn is_exact(&self) -> bool {
        self.mapping.is_exact() && self.dropped_underflow == 0 && self.dropped_overflow == 0
    }
}

/// Converts a Picollo histogram into HdrHistogram counts, exactly: the layout must have
/// matching significant digits ([`significant_digits_for`]) and every count must be
/// representable. The header has lowest discernible value 1 and the highest trackable value
/// of the window (capped at `i64::MAX`); the counts are copied index for index, so
/// [`HdrCounts::encode_v2`] of the result is byte-identical to what HdrHistogram (Java) writes
/// for the same values. For anything else use [`export`].
///
/// ```
/// use picollo_alloc::hdr::interop::{from_picollo, InteropError};
/// use picollo_alloc::HistogramBuilder;
/// use picollo_core::Layout;
///
/// let mut h = HistogramBuilder::new().layout(Layout::from_block_scale(7).unwrap()).plain()?;
/// h.record(42);
/// let hdr = from_picollo(&h)?;
/// assert_eq!((hdr.significant_digits, hdr.lowest_discernible), (2, 1));
/// assert_eq!(hdr.highest_trackable, i64::MAX as u64);
/// assert_eq!(hdr.total_count(), 1);
///
/// let default = HistogramBuilder::new().plain()?; // B = 512: no HdrHistogram twin
/// assert!(matches!(from_picollo(&default), Err(InteropError::NoMatchingSignificantDigits { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NoMatchingSignificantDigits`]; [`InteropError::OutsideCounts`] when the
/// histogram has underflow, overflow or non-empty buckets above `i64::MAX`; and
/// [`InteropError::Hdr`] for a count above `i64::MAX`.
pub fn from_picollo<H: HistogramRead + ?Sized>(h: &H) -> Result<HdrCounts, InteropError> {
    export(h, &ExportOptions::default()).map(|e| e.counts)
}

/// Converts a Picollo histogram into HdrHistogram counts with [`ExportOptions`]: re-bucketing
/// into any precision and, when allowed, dropping (and reporting) what V2 cannot hold.
///
/// The read is consistent: if the histogram is reset while being read, it is read again.
///
/// ```
/// use picollo_alloc::hdr::interop::{export, ExportOptions};
/// use picollo_alloc::HistogramBuilder;
///
/// let mut h = HistogramBuilder::new().max_trackable(1_000_000).plain()?; // B = 512
/// h.record(20_000);
/// h.record(5_000_000); // overflow
/// let e = export(&h, &ExportOptions::new().significant_digits(3).allow_dropping(true))?;
/// assert_eq!(e.counts.total_count(), 1);
/// assert_eq!(e.dropped_overflow, 1);
/// // Split into finer HdrHistogram buckets: still inside the Picollo bucket [20 000, 20 031].
/// assert_eq!(e.mapping.max_abs_error, 31);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NoMatchingSignificantDigits`] without
/// [`ExportOptions::significant_digits`] for a layout without a match;
/// [`InteropError::Hdr`] for significant digits above 5 or a count above `i64::MAX`;
/// [`InteropError::OutsideCounts`] when counts would be dropped and that is not allowed.
pub fn export<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
) -> Result<HdrExport, InteropError> {
    let g = export_geometry(h, options)?;
    let alike = indexes_alike(&g, h.layout());

    let (counts, mapping, underflow, overflow) = consistent(h, |h| {
        let (counts, mapping, beyond) = if alike {
            export_alike(h, &g)
        } else {
            export_rebucketed(h, &g)
        };
        (
            counts,
            mapping,
            h.underflow(),
            h.overflow().saturating_add(beyond),
        )
    });

    check_dropping(options, underflow, overflow)?;
    if let Some((index, &count)) = counts
        .iter()
        .enumerate()
        .find(|&(_, &c)| c > i64::MAX as u64)
    {
        return Err(HdrError::CountTooLarge { index, count }.into());
    }
    Ok(HdrExport {
        counts: HdrCounts {
            lowest_discernible: g.lowest_discernible(),
            highest_trackable: g.highest_trackable(),
            significant_digits: g.significant_digits(),
            normalizing_offset: 0,
            int_to_double_ratio: 1.0,
            counts,
        },
        mapping,
        dropped_underflow: underflow,
        dropped_overflow: overflow,
    })
}

/// The HdrHistogram geometry [`export`] writes `h` into: lowest discernible value 1, the
/// significant digits of `options` (or the layout's own), and the highest trackable value of
/// `options` (or the window's highest value).
fn export_geometry<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
) -> Result<HdrGeometry, InteropError> {
    let layout = h.layout();
    let d = match options.significant_digits {
        Some(d) => d,
        None => {
            significant_digits_for(layout).ok_or(InteropError::NoMatchingSignificantDigits {
                block_scale: layout.block_scale(),
                finer: finer_significant_digits(layout),
            })?
        }
    };
    let highest = options
        .highest_trackable
        .unwrap_or_else(|| h.window().max_value(layout));
    Ok(HdrGeometry::new(1, clamp_highest(highest), d)?)
}

/// The error for counts V2 cannot hold, unless `options` allows dropping them.
fn check_dropping(
    options: &ExportOptions,
    underflow: u64,
    overflow: u64,
) -> Result<(), InteropError> {
    if !options.allow_dropping && (underflow != 0 || overflow != 0) {
        return Err(InteropError::OutsideCounts {
            underflow,
            overflow,
        });
    }
    Ok(())
}

/// Storage indices of `h` whose logical index is inside `g`'s counts array (a prefix of the
/// window, when Picollo logical index `i` is HdrHistogram counts index `i`), and the sum of
/// the counts beyond it.
fn alike_prefix<H: HistogramRead + ?Sized>(h: &H, g: &HdrGeometry) -> (usize, u64) {
    let window = h.window();
    let inside = g
        .counts_len()
        .saturating_sub(window.first())
        .min(window.len());
    (inside, h.sum_range(inside, window.len()))
}

/// Encodes a Picollo histogram as HdrHistogram V2, appending to `out`: the same bytes as
/// [`export`] followed by [`HdrCounts::encode_v2_into`], without the intermediate counts
/// array when the layouts index alike (the common case, [`significant_digits_for`]): the
/// encoder reads the histogram's counts in place. Other precisions go through [`export`].
///
/// The read is consistent: if the histogram is reset while being read, it is read again. On
/// error `out` is left as it was.
///
/// ```
/// use picollo_alloc::hdr::interop::{export, export_v2_into, ExportOptions};
/// use picollo_alloc::hdr::HdrCounts;
/// use picollo_alloc::HistogramBuilder;
/// use picollo_core::Layout;
///
/// let mut h = HistogramBuilder::new().layout(Layout::from_block_scale(10).unwrap()).plain()?;
/// for v in 1..=10_000u64 {
///     h.record(v * v);
/// }
/// let options = ExportOptions::new();
/// let mut bytes = Vec::new();
/// let report = export_v2_into(&h, &options, &mut bytes)?;
/// assert!(report.is_exact());
/// assert_eq!(bytes, export(&h, &options)?.counts.encode_v2()?);
/// assert_eq!(HdrCounts::decode(&bytes)?.total_count(), 10_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`export`].
pub fn export_v2_into<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
    out: &mut Vec<u8>,
) -> Result<ExportReport, InteropError> {
    let g = export_geometry(h, options)?;
    if !indexes_alike(&g, h.layout()) {
        let e = export(h, options)?;
        e.counts.encode_v2_into(out)?;
        return Ok(e.report());
    }
    let fields = V2Fields {
        normalizing_offset: 0,
        significant_digits: g.significant_digits(),
        lowest_discernible: g.lowest_discernible(),
        highest_trackable: g.highest_trackable(),
        int_to_double_ratio: 1.0,
    };
    consistent(h, |h| {
        let (inside, beyond) = alike_prefix(h, &g);
        let underflow = h.underflow();
        let overflow = h.overflow().saturating_add(beyond);
        check_dropping(options, underflow, overflow)?;
        // Counts index i is logical index i: the window's first index is a run of zeros.
        let (leading, len) = match (0..inside).rev().find(|&s| h.count_at(s) != 0) {
            Some(last) => (h.window().first(), last + 1),
            None => (0, 0),
        };
        let source = StorageSource { h, leading, len };
        let buckets = encode_v2(&fields, &source, out)?;
        Ok(ExportReport {
            mapping: BucketMapping {
                buckets,
                ..BucketMapping::new(true)
            },
            dropped_underflow: underflow,
            dropped_overflow: overflow,
        })
    })
}

/// Storage indices `0..len` of a histogram whose window starts at counts index `leading`, for
/// the encoder: copied a chunk at a time into a buffer on the stack (the encoder then runs on a
/// slice, with nothing it writes able to alias what it reads).
struct StorageSource<'h, H: ?Sized> {
    h: &'h H,
    leading: usize,
    len: usize,
}

/// Counts copied per chunk: 2 KiB of stack, well inside L1.
const ENCODE_CHUNK: usize = 256;

impl<H: HistogramRead + ?Sized> CountsSource for StorageSource<'_, H> {
    fn leading(&self) -> usize {
        self.leading
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, index: usize) -> u64 {
        self.h.count_at(index)
    }

    fn write_to(&self, writer: &mut PayloadWriter<'_>) {
        let mut chunk = [0u64; ENCODE_CHUNK];
        let mut start = 0;
        while start < self.len {
            let n = (self.len - start).min(ENCODE_CHUNK);
            for (i, cell) in chunk[..n].iter_mut().enumerate() {
                *cell = self.h.count_at(start + i);
            }
            writer.counts(&chunk[..n]);
            start += n;
        }
    }
}

/// [`export_v2_into`], then compressed as V2+deflate at `level` (0 to 10; see
/// [`BEST_COMPRESSION`](super::BEST_COMPRESSION) and
/// [`DEFAULT_COMPRESSION`](super::DEFAULT_COMPRESSION)): the bytes
/// [`HdrCounts::encode_v2_deflate`] writes for the exported counts.
///
/// # Errors
/// As [`export`].
pub fn export_v2_deflate<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
    level: u8,
) -> Result<(Vec<u8>, ExportReport), InteropError> {
    let mut plain = Vec::new();
    let report = export_v2_into(h, options, &mut plain)?;
    Ok((deflate_v2(&plain, level), report))
}

/// Export when Picollo logical index `i` is HdrHistogram counts index `i`: a copy. Returns the
/// counts, the mapping and the count of buckets beyond the geometry's counts array.
fn export_alike<H: HistogramRead + ?Sized>(
    h: &H,
    g: &HdrGeometry,
) -> (Vec<u64>, BucketMapping, u64) {
    let first = h.window().first();
    let (inside, beyond) = alike_prefix(h, g);
    let mut mapping = BucketMapping::new(true);
    let Some(last) = (0..inside).rev().find(|&s| h.count_at(s) != 0) else {
        return (Vec::new(), mapping, beyond);
    };
    let mut counts = vec![0u64; first + last + 1];
    for (s, cell) in counts[first..].iter_mut().enumerate() {
        let n = h.count_at(s);
        mapping.buckets += usize::from(n != 0);
        *cell = n;
    }
    (counts, mapping, beyond)
}

/// Export into another precision: each Picollo bucket's count goes into the HdrHistogram
/// bucket holding the Picollo bucket's lowest value.
fn export_rebucketed<H: HistogramRead + ?Sized>(
    h: &H,
    g: &HdrGeometry,
) -> (Vec<u64>, BucketMapping, u64) {
    let layout = h.layout();
    let window = h.window();
    let mut counts: Vec<u64> = Vec::new();
    let mut mapping = BucketMapping::new(false);
    let mut beyond = 0u64;
    for s in 0..window.len() {
        let n = h.count_at(s);
        if n == 0 {
            continue;
        }
        let i = window.first() + s;
        let (lo, hi) = (layout.lo(i), layout.highest(i));
        let Some(j) = g.index_of(lo) else {
            beyond = beyond.saturating_add(n);
            continue;
        };
        mapping.note(lo, hi, g.index_of(hi) != Some(j), layout.block_size());
        // `j` never decreases along the window, so `counts` grows to the last index used.
        if counts.len() <= j {
            counts.resize(j + 1, 0);
        }
        counts[j] = counts[j].saturating_add(n);
    }
    (counts, mapping, beyond)
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::{EquivalentValue, ReadExt};

    #[test]
    fn digits_and_block_scales() {
        let scales: Vec<u32> = (0..=5).map(half_count_magnitude).collect();
        assert_eq!(scales, [0, 4, 7, 10, 14, 17]);
        for d in 0..=5u8 {
            let g = HdrGeometry::new(1, i64::MAX as u64, d).unwrap();
            assert_eq!(g.sub_bucket_half_count_magnitude(), half_count_magnitude(d));
            let l = layout_for(&g);
            assert_eq!(indexes_alike(&g, l), d > 0);
            if d > 0 {
                assert_eq!(significant_digits_for(l), Some(d));
            }
        }
        for k in MIN_BLOCK_SCALE..=MAX_BLOCK_SCALE {
            let l = Layout::from_block_scale(k).unwrap();
            let exact = significant_digits_for(l);
            assert_eq!(exact.is_some(), [4, 7, 10, 14, 17].contains(&k), "k={k}");
            if let Some(d) = finer_significant_digits(l) {
                assert!(half_count_magnitude(d) >= k);
                assert!(d == 0 || half_count_magnitude(d - 1) < k);
            } else {
                assert!(k > 17);
            }
        }
    }

    /// Index for index really is the same value range, for every index of every geometry.
    #[test]
    fn index_for_index_is_the_same_bucket() {
        for d in 1..=5u8 {
            let g = HdrGeometry::new(1, i64::MAX as u64, d).unwrap();
            let l = layout_for(&g);
            assert!(g.counts_len() <= l.logical_len());
            let step = if cfg!(miri) { 4099 } else { 7 << (2 * d) };
            for i in (0..g.counts_len())
                .step_by(step)
                .chain([g.counts_len() - 1])
            {
                assert_eq!(g.lowest_equivalent(i), Some(l.lo(i)), "d={d} i={i}");
                assert_eq!(g.highest_equivalent(i), Some(l.highest(i)), "d={d} i={i}");
            }
        }
    }

    #[test]
    fn invalid_sources_change_nothing() {
        let layout = Layout::from_block_scale(10).unwrap();
        let mut h = heap::plain::<u64>(layout, Window::full(layout));
        let mut bad = HdrCounts::new(1, 1000, 3).unwrap();
        bad.counts = vec![1; 5000]; // beyond the 3072-entry counts array
        assert!(matches!(
            add_hdr(&mut h, &bad),
            Err(InteropError::Hdr(HdrError::IndexOutOfRange { .. }))
        ));
        bad.counts.clear();
        bad.significant_digits = 9;
        assert!(matches!(
            add_hdr(&mut h, &bad),
            Err(InteropError::Hdr(HdrError::InvalidGeometry(_)))
        ));
        assert_eq!(h.total_with_outside(), 0);
    }

    /// The copying path of `to_picollo_in` reports and counts exactly what `add_hdr` does.
    #[test]
    fn copy_and_record_paths_agree() {
        let mut hdr = HdrCounts::new(1, 1 << 40, 2).unwrap();
        for v in [0u64, 3, 99, 1000, 5000, 70_000, 1 << 39] {
            hdr.record(v, v % 7 + 1).unwrap();
        }
        let layout = Layout::from_block_scale(7).unwrap();
        for (min, max) in [
            (0, u64::MAX),
            (50, 60_000),
            (2000, 3000),
            (1 << 41, 1 << 42),
        ] {
            let window = Window::new(layout, min, max).unwrap();
            let (copied, import) = to_picollo_in(&hdr, layout, window).unwrap();
            let mut recorded = heap::plain::<u64>(layout, window);
            let expected = add_hdr(&mut recorded, &hdr).unwrap();
            assert_eq!(import, expected, "[{min}, {max}]");
            assert_eq!(copied.storage(), recorded.storage());
            assert_eq!(
                (copied.underflow(), copied.overflow()),
                (import.underflow, import.overflow)
            );
            assert_eq!(import.total, hdr.total_count());
        }
    }

    #[test]
    fn view_reads_in_place() {
        let mut hdr = HdrCounts::new(1, 1 << 40, 3).unwrap();
        for v in (0..1_000_000u64).step_by(37) {
            hdr.record(v, 2).unwrap();
        }
        let v = view(&hdr).unwrap();
        let h = to_picollo(&hdr).unwrap();
        assert_eq!(v.total(), h.total());
        assert_eq!(v.stats(), h.stats());
        for rank in [0.0, 50.0, 99.0, 99.99, 100.0] {
            assert_eq!(
                v.percentile(rank, EquivalentValue::Midpoint),
                h.percentile(rank, EquivalentValue::Midpoint)
            );
        }
        let coarse = HdrCounts::new(1000, 1 << 40, 3).unwrap();
        assert!(matches!(
            view(&coarse),
            Err(InteropError::NotIndexForIndex {
                significant_digits: 3,
                unit_magnitude: 9
            })
        ));
        let zero_digits = HdrCounts::new(1, 1 << 40, 0).unwrap();
        assert!(view(&zero_digits).is_err());
    }

    #[test]
    fn export_refuses_or_reports_outside_counts() {
        let layout = Layout::from_block_scale(10).unwrap();
        let mut h = heap::plain::<u64>(layout, Window::new(layout, 100, 10_000).unwrap());
        h.record(5);
        h.record(500);
        h.record(50_000);
        h.record(50_000);
        assert_eq!(
            from_picollo(&h),
            Err(InteropError::OutsideCounts {
                underflow: 1,
                overflow: 2
            })
        );
        let e = export(&h, &ExportOptions::new().allow_dropping(true)).unwrap();
        assert_eq!((e.dropped_underflow, e.dropped_overflow), (1, 2));
        assert_eq!(e.counts.total_count(), 1);
        assert!(!e.is_exact());
        assert!(e.mapping.is_exact());

        // Buckets above i64::MAX are beyond any HdrHistogram.
        let mut full = heap::plain::<u64>(layout, Window::full(layout));
        full.record(u64::MAX);
        full.record(7);
        assert_eq!(
            from_picollo(&full),
            Err(InteropError::OutsideCounts {
                underflow: 0,
                overflow: 1
            })
        );
        // A caller-chosen highest trackable value moves the limit.
        let e = export(
            &full,
            &ExportOptions::new()
                .highest_trackable(2_000)
                .allow_dropping(true),
        )
        .unwrap();
        assert_eq!(e.counts.highest_trackable, 2_000);
        assert_eq!((e.counts.total_count(), e.dropped_overflow), (1, 1));
    }

    #[test]
    fn export_rejects_bad_digits_and_huge_counts() {
        let layout = Layout::from_block_scale(4).unwrap();
        let mut h = heap::plain::<u64>(layout, Window::new(layout, 0, 1000).unwrap());
        h.record(3);
        assert!(matches!(
            export(&h, &ExportOptions::new().significant_digits(6)),
            Err(InteropError::Hdr(HdrError::InvalidGeometry(_)))
        ));
        // Two saturated Picollo buckets merging into one coarse HdrHistogram bucket.
        h.record_n(600, u64::MAX);
        h.record_n(700, u64::MAX);
        assert!(matches!(
            export(&h, &ExportOptions::new().significant_digits(0)),
            Err(InteropError::Hdr(HdrError::CountTooLarge { .. }))
        ));
    }

    /// The fused encoder reads any kind in place (here the atomic one) and, on error, leaves
    /// what `out` already held.
    #[test]
    fn export_v2_into_reads_any_kind() {
        let layout = Layout::from_block_scale(7).unwrap();
        let window = Window::new(layout, 300, 1 << 30).unwrap();
        let atomic = heap::atomic::<portable_atomic::AtomicU64>(layout, window);
        let mut plain = heap::plain::<u64>(layout, window);
        for v in (300..1_000_000u64).step_by(997) {
            atomic.record(v);
            plain.record(v);
        }
        let options = ExportOptions::new();
        let mut bytes = vec![7u8];
        let report = export_v2_into(&atomic, &options, &mut bytes).unwrap();
        assert!(report.is_exact());
        assert_eq!(
            report.mapping.buckets,
            export(&plain, &options).unwrap().mapping.buckets
        );
        assert_eq!(bytes[0], 7);
        assert_eq!(
            bytes[1..],
            from_picollo(&plain).unwrap().encode_v2().unwrap()
        );

        atomic.record(5); // underflow: refused without allow_dropping
        let mut kept = vec![1u8, 2, 3];
        assert_eq!(
            export_v2_into(&atomic, &options, &mut kept),
            Err(InteropError::OutsideCounts {
                underflow: 1,
                overflow: 0
            })
        );
        assert_eq!(kept, [1, 2, 3]);

        // Nothing recorded: one zero word, like the codec's empty histogram.
        let empty = heap::plain::<u64>(layout, window);
        let mut bytes = Vec::new();
        export_v2_into(&empty, &options, &mut bytes).unwrap();
        assert_eq!(bytes, from_picollo(&empty).unwrap().encode_v2().unwrap());
        assert_eq!(bytes.len(), 41);
    }

    #[test]
    fn errors_display() {
        let e = InteropError::NoMatchingSignificantDigits {
            block_scale: 9,
            finer: Some(3),
        };
        assert!(e.to_string().contains("significant_digits(3)"), "{e}");
        let e = InteropError::OutsideCounts {
            underflow: 1,
            overflow: 2,
        };
        assert!(e.to_string().contains("allow_dropping"), "{e}");
    }
}
