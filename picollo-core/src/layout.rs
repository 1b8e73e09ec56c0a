//! The HDR bucket layout (`HdrBuckets` of Picollo for .NET, the library this one ports): pure
//! `const fn` index math over all of `u64`.
//!
//! A layout has `B = 2^k` buckets per block (`k` is the *block scale*). Block 0 and block 1 hold
//! the values `0..2B` with unit width; every later block doubles the bucket width. A bucket's
//! relative error, measured from its midpoint, is at most `0.5 / B`.
//!
//! ```
//! use picollo_core::Layout;
//!
//! let layout = Layout::from_relative_error(0.01).unwrap();
//! assert_eq!(layout.block_size(), 64);
//! let i = layout.index_of(20_000);
//! assert_eq!((layout.lo(i), layout.highest(i)), (19_968, 20_223));
//! assert_eq!(layout.midpoint(i), 20_096);
//! ```

use core::fmt;

/// The smallest supported block scale: 2 buckets per block, 25% relative error.
pub const MIN_BLOCK_SCALE: u32 = 1;
/// The largest supported block scale: 2^20 buckets per block, about 4.8e-7 relative error.
///
/// Larger scales make storage of a full-range histogram exceed any practical memory.
pub const MAX_BLOCK_SCALE: u32 = 20;

/// Why a layout could not be built.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LayoutError {
    /// The relative error was NaN or infinite.
    NotFinite,
    /// The relative error was zero or negative.
    NotPositive,
    /// The requested precision needs a block scale outside
    /// [`MIN_BLOCK_SCALE`]`..=`[`MAX_BLOCK_SCALE`]; the value is the scale it would need.
    BlockScaleOutOfRange(u32),
    /// HdrHistogram's significant digits must be within `0..=5`; the value is the request.
    SignificantDigitsOutOfRange(u32),
    /// A lowest discernible value must be within `1..2^32` (a unit of at most 2^31); the value
    /// is the request.
    LowestDiscernibleOutOfRange(u64),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFinite => f.write_str("relative error must be a finite number"),
            Self::NotPositive => f.write_str("relative error must be greater than zero"),
            Self::BlockScaleOutOfRange(k) => write!(
                f,
                "block scale {k} is outside {MIN_BLOCK_SCALE}..={MAX_BLOCK_SCALE} \
                 (relative error between {:e} and 0.25)",
                0.5 / (1u64 << MAX_BLOCK_SCALE) as f64
            ),
            Self::SignificantDigitsOutOfRange(d) => write!(
                f,
                "{d} significant digits requested; HdrHistogram precision is 0 to 5 digits"
            ),
            Self::LowestDiscernibleOutOfRange(v) => write!(
                f,
                "lowest discernible value {v} is outside 1..=4294967295 (values are recorded in \
                 units of the largest power of two not above it, at most 2^31)"
            ),
        }
    }
}

impl core::error::Error for LayoutError {}

/// The logical bucket layout for one precision. Cheap to copy; all math is `const fn`.
///
/// # Value unit (HdrHistogram's lowest discernible value)
///
/// A layout may record in units of `2^u` ([`Layout::with_lowest_discernible`]): HdrHistogram's
/// `lowestDiscernibleValue` and its `unitMagnitude` `u = floor(log2(lowest))`. Its first two
/// blocks then hold `[0, 2B · 2^u)` in `2B` buckets `2^u` wide, and every bucket above is the
/// plain layout's: exactly HdrHistogram's buckets for the same digits and lowest value, so a
/// histogram ported from `new_with_bounds(1000, …, 3)` gives the same answers.
///
/// The logical indices of such a layout are the plain layout's from `u · B` on
/// ([`Layout::first_index`]; HdrHistogram's counts index `i` is logical index `i + u · B`):
/// the value 0 maps to `u · B`, and windows start there (the unit is only an OR mask wider
/// than `B` in the index: `ilog2(v | B << u)`).
///
/// Histograms record a layout with a unit through the [`UnitLayout`] spec (`Histogram<S,
/// UnitLayout>`, the builder's `lowest_discernible`): a `Layout` used as a record spec reads
/// only its block scale, so that histograms without a unit record with the instructions they
/// always did, and the constructors refuse a `Layout` spec that has a unit
/// ([`WindowError::NeedsUnitLayout`](crate::WindowError::NeedsUnitLayout)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Layout {
    /// `k | u << 8`: `B = 2^k` buckets per block, values recorded in units of `2^u`
    /// (HdrHistogram's `unitMagnitude`). One word, `k` itself without a unit: the plain record
    /// spec, which only sees layouts without one, reads it as the block scale, as it always did.
    scales: u32,
}

impl Default for Layout {
    /// 0.001 relative error target: `B = 512`, about 0.098% actual relative error.
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Layout {
    /// The default layout: block scale 9 (`B = 512`), relative error 0.0977%.
    pub const DEFAULT: Layout = Layout::new_unchecked(9, 0);

    /// The layout of block scale `k` and unit magnitude `u` (checked by the callers:
    /// `k` within the supported scales, `u <= 31`).
    const fn new_unchecked(k: u32, u: u32) -> Layout {
        Layout { scales: k | u << 8 }
    }

    /// A layout with `2^block_scale` buckets per block, or `None` outside
    /// [`MIN_BLOCK_SCALE`]`..=`[`MAX_BLOCK_SCALE`].
    ///
    /// A `const fn` returning `Option`, so `.unwrap()` and `.expect()` work in `const` and
    /// `static` items (`Result::unwrap` is not `const`):
    ///
    /// ```
    /// use picollo_core::Layout;
    /// const L: Layout = Layout::from_block_scale(7).unwrap();
    /// assert_eq!(L.block_size(), 128);
    /// assert!(Layout::from_block_scale(21).is_none());
    /// ```
    pub const fn from_block_scale(block_scale: u32) -> Option<Layout> {
        if block_scale < MIN_BLOCK_SCALE || block_scale > MAX_BLOCK_SCALE {
            None
        } else {
            Some(Layout::new_unchecked(block_scale, 0))
        }
    }

    /// This layout recording in units of HdrHistogram's lowest discernible value `lowest`:
    /// `2^u` with `u = floor(log2(lowest))` (HdrHistogram's `unitMagnitude`, computed exactly;
    /// Java's `log(x) / log(2)` gives the same for every practical value). Every value below
    /// `2B · 2^u` is counted in a bucket `2^u` wide; the buckets above are this layout's.
    /// `lowest` must be within `1..2^32` ([`LayoutError::LowestDiscernibleOutOfRange`]); 1
    /// gives the layout back. A `const fn`.
    ///
    /// Not a minimum: values below `lowest` are still counted (in the first bucket, `[0, 2^u)`),
    /// as in HdrHistogram. The window's min and max trackable values are what bound the stored
    /// range.
    ///
    /// ```
    /// use picollo_core::Layout;
    ///
    /// // HdrHistogram's `new Histogram(1000, 3_600_000_000L * 512, 3)`: 3 digits (B = 1024),
    /// // values in units of 512.
    /// let l = Layout::from_significant_digits(3).unwrap().with_lowest_discernible(1000)?;
    /// assert_eq!((l.unit_magnitude(), l.unit()), (9, 512));
    /// assert_eq!(l.lowest_equivalent(10_007 * 1024), 10_000 * 1024);
    /// assert_eq!(l.highest_equivalent(8_180 * 1024), 8_183 * 1024 + 1023);
    /// assert_eq!(l.width(l.index_of(1)), 512); // [0, 512): values below the unit count too
    /// assert_eq!(l.index_of(0), l.first_index());
    /// # Ok::<(), picollo_core::LayoutError>(())
    /// ```
    pub const fn with_lowest_discernible(self, lowest: u64) -> Result<Layout, LayoutError> {
        if lowest == 0 || lowest > u32::MAX as u64 {
            return Err(LayoutError::LowestDiscernibleOutOfRange(lowest));
        }
        Ok(Layout::new_unchecked(self.block_scale(), lowest.ilog2()))
    }

    /// `u`: values are recorded in units of `2^u` (HdrHistogram's `unitMagnitude`; 0 for
    /// layouts without a unit).
    #[inline(always)]
    pub const fn unit_magnitude(self) -> u32 {
        self.scales >> 8
    }

    /// `2^u`: the width of the narrowest buckets (HdrHistogram's smallest
    /// `sizeOfEquivalentValueRange`); 1 without a unit.
    #[inline(always)]
    pub const fn unit(self) -> u64 {
        1 << self.unit_magnitude()
    }

    /// The logical index of the value 0: `u · B`, where windows start (0 without a unit).
    #[inline(always)]
    pub const fn first_index(self) -> usize {
        (self.unit_magnitude() as usize) << self.block_scale()
    }

    /// The coarsest layout whose relative error is at most `relative_error`:
    /// `B = next_power_of_two(ceil(0.5 / relative_error))`, or `None` for NaN, infinite, zero
    /// or negative inputs and for precisions outside the supported block scales.
    /// [`Layout::try_from_relative_error`] says which.
    ///
    /// ```
    /// use picollo_core::Layout;
    /// const L: Layout = Layout::from_relative_error(0.01).unwrap();
    /// static S: Layout = Layout::from_relative_error(0.001).expect("a supported precision");
    /// assert_eq!((L.block_size(), S.block_size()), (64, 512));
    /// ```
    pub const fn from_relative_error(relative_error: f64) -> Option<Layout> {
        match Self::try_from_relative_error(relative_error) {
            Ok(layout) => Some(layout),
            Err(_) => None,
        }
    }

    /// As [`Layout::from_relative_error`], saying why an input is refused.
    ///
    /// ```
    /// use picollo_core::{Layout, LayoutError};
    /// assert_eq!(Layout::try_from_relative_error(0.0), Err(LayoutError::NotPositive));
    /// const L: Layout = match Layout::try_from_relative_error(0.001) {
    ///     Ok(l) => l,
    ///     Err(_) => panic!("unsupported precision"),
    /// };
    /// assert_eq!(L, Layout::DEFAULT);
    /// ```
    pub const fn try_from_relative_error(relative_error: f64) -> Result<Layout, LayoutError> {
        if !relative_error.is_finite() {
            return Err(LayoutError::NotFinite);
        }
        if relative_error <= 0.0 {
            return Err(LayoutError::NotPositive);
        }
        let ideal = 0.5 / relative_error;
        if ideal > (1u64 << MAX_BLOCK_SCALE) as f64 {
            // Report the scale it would need, saturating far beyond the range.
            let mut k = MAX_BLOCK_SCALE + 1;
            while k < 63 && ((1u64 << k) as f64) < ideal {
                k += 1;
            }
            return Err(LayoutError::BlockScaleOutOfRange(k));
        }
        // `ideal` is in (0, 2^20]: the loop ends within 20 doublings.
        let mut block = 1u64;
        let mut k = 0;
        while (block as f64) < ideal {
            block <<= 1;
            k += 1;
        }
        Ok(Layout::new_unchecked(
            if k < MIN_BLOCK_SCALE {
                MIN_BLOCK_SCALE
            } else {
                k
            },
            0,
        ))
    }

    /// The coarsest layout with at least HdrHistogram's precision for `digits` significant
    /// decimal digits (`0..=5`), or `None` outside that range. HdrHistogram keeps
    /// `2^ceil(log2(2·10^d))` sub-buckets per magnitude, which is this layout with
    /// `B = 2^ceil(log2(2·10^d)) / 2` (DESIGN.md, "HdrHistogram equivalence"): 3 digits give
    /// `B = 1024`, 2 give 128, 1 gives 16. Zero digits would need `B = 1`, below the smallest
    /// block scale; it gets `B = 2`, which is more precise.
    ///
    /// ```
    /// use picollo_core::Layout;
    /// const THREE: Layout = Layout::from_significant_digits(3).unwrap();
    /// assert_eq!(THREE.block_size(), 1024);
    /// assert!(THREE.relative_error() <= 0.5e-3);
    /// assert!(Layout::from_significant_digits(6).is_none());
    /// ```
    pub const fn from_significant_digits(digits: u32) -> Option<Layout> {
        match Self::try_from_significant_digits(digits) {
            Ok(layout) => Some(layout),
            Err(_) => None,
        }
    }

    /// As [`Layout::from_significant_digits`], saying why an input is refused.
    pub const fn try_from_significant_digits(digits: u32) -> Result<Layout, LayoutError> {
        if digits > 5 {
            return Err(LayoutError::SignificantDigitsOutOfRange(digits));
        }
        // The smallest n with 2^n >= 2·10^d: HdrHistogram's sub-bucket count is 2^n = 2B.
        let target = 2 * 10u64.pow(digits);
        let mut n = 0;
        while (1u64 << n) < target {
            n += 1;
        }
        let k = if n - 1 < MIN_BLOCK_SCALE {
            MIN_BLOCK_SCALE
        } else {
            n - 1
        };
        Ok(Layout::new_unchecked(k, 0))
    }

    #[cfg(test)]
    /// The constructor of Picollo for .NET: never fails. A non-positive or NaN error means the
    /// default 0.001; the rest is clamped into `[0.000001, 0.1]` before rounding to a power of two.
    pub(crate) const fn from_relative_error_clamped(relative_error: f64) -> Layout {
        let e = if relative_error.is_nan() || relative_error <= 0.0 {
            0.001
        } else {
            relative_error.clamp(0.000_001, 0.1)
        };
        match Self::try_from_relative_error(e) {
            Ok(layout) => layout,
            // Unreachable for the clamped range; keep the default rather than panic.
            Err(_) => Self::DEFAULT,
        }
    }

    /// `k`: the block holds `2^k` buckets.
    #[inline(always)]
    pub const fn block_scale(self) -> u32 {
        self.scales & 0xFF
    }

    /// `B = 2^k`, buckets per block.
    #[inline(always)]
    pub const fn block_size(self) -> u64 {
        1 << self.block_scale()
    }

    /// Number of blocks covering all of `u64`: `65 - k` (block 0 plus one per bit above `k`).
    #[inline(always)]
    pub const fn block_count(self) -> u32 {
        65 - self.block_scale()
    }

    /// One past the last logical index: `(65 - k) * B`. All of `u64` is covered by the indices
    /// from [`Layout::first_index`] (0 without a unit) up to this.
    #[inline(always)]
    pub const fn logical_len(self) -> usize {
        (self.block_count() as usize) << self.block_scale()
    }

    /// The largest relative distance of a value from its bucket midpoint: `0.5 / B` (with a
    /// unit, for values of at least `B · 2^u`; below, buckets are `2^u` wide).
    #[inline]
    pub const fn relative_error(self) -> f64 {
        0.5 / self.block_size() as f64
    }

    /// The logical index of `value`. Defined for every `u64`: 0 maps to
    /// [`Layout::first_index`] (0 without a unit), `u64::MAX` to `logical_len() - 1`.
    ///
    /// This is the cheaper equivalent of the .NET library's formula (DESIGN.md, "Bucket layout"):
    /// `e = ilog2(v | B) - k`, `index = (e << k) + (v >> e)`.
    #[inline(always)]
    pub const fn index_of(self, value: u64) -> usize {
        index_of_masked(self.block_scale(), self.unit_magnitude(), value)
    }

    /// The logical index of a `u32` value, computed in 32-bit arithmetic: equal to
    /// `index_of(value as u64)`, and on 32-bit cores free of 64-bit shifts and helper calls.
    ///
    /// ```
    /// use picollo_core::Layout;
    /// let l = Layout::DEFAULT;
    /// assert_eq!(l.index_of_u32(123_456), l.index_of(123_456));
    /// assert_eq!(l.index_of_u32(u32::MAX), l.index_of(u32::MAX as u64));
    /// ```
    #[inline(always)]
    pub const fn index_of_u32(self, value: u32) -> usize {
        let (k, u) = (self.block_scale(), self.unit_magnitude());
        // `B << u` when it fits 32 bits; otherwise every `u32` is in the first two blocks
        // (exponent `u`), which `2^31` and the offset `31 - u` give.
        let (mask, shift) = if k + u <= 31 {
            (1 << (k + u), k)
        } else {
            (1 << 31, 31 - u)
        };
        index_of_u32_masked(k, mask, shift, value)
    }

    /// The [`BucketPos`] of `value`: its block and offset before [`Layout::index_of`] combines
    /// them. With a value unit, the position of `value >> u` in the layout without the unit:
    /// `index_of(v) == position(v).logical(k) + first_index()`.
    ///
    /// ```
    /// use picollo_core::Layout;
    /// let l = Layout::from_block_scale(7).unwrap().with_lowest_discernible(1000)?;
    /// let pos = l.position(2_000_000);
    /// assert_eq!(pos.logical(7) + l.first_index(), l.index_of(2_000_000));
    /// # Ok::<(), picollo_core::LayoutError>(())
    /// ```
    #[inline(always)]
    pub const fn position(self, value: u64) -> BucketPos {
        position_of_scale(self.block_scale(), value >> self.unit_magnitude())
    }

    /// [`Layout::position`] of a `u32` value, in 32-bit arithmetic (see
    /// [`Layout::index_of_u32`]).
    #[inline(always)]
    pub(crate) const fn position_u32(self, value: u32) -> BucketPos {
        position_u32_scale(self.block_scale(), value >> self.unit_magnitude())
    }

    /// The lowest value of the bucket at logical `index` (exact: it is a member of the bucket).
    ///
    /// Indices at or past [`Layout::logical_len`] are clamped to the last bucket.
    #[inline]
    pub const fn lo(self, index: usize) -> u64 {
        let (q, e) = self.mantissa_exponent(index);
        q << e
    }

    /// The width of the bucket at logical `index`: `2^e`, 1 in the first two blocks.
    #[inline]
    pub const fn width(self, index: usize) -> u64 {
        1 << self.mantissa_exponent(index).1
    }

    /// The highest value of the bucket at logical `index`, inclusive: `hi - 1`.
    ///
    /// The exclusive bound `hi` of the last bucket is `2^64`, which `u64` cannot hold; the
    /// inclusive form can.
    #[inline]
    pub const fn highest(self, index: usize) -> u64 {
        self.lo(index) + (self.width(index) - 1)
    }

    /// The exclusive upper bound `hi` of the bucket at logical `index`, as `u128` so that the
    /// last bucket's `2^64` is representable.
    #[inline]
    pub const fn hi(self, index: usize) -> u128 {
        self.lo(index) as u128 + self.width(index) as u128
    }

    /// The midpoint `lo + width / 2`: the bucket's equivalent value (exact for unit buckets).
    #[inline]
    pub const fn midpoint(self, index: usize) -> u64 {
        self.lo(index) + self.width(index) / 2
    }

    /// Half the bucket width: the `±` that Picollo's tables print next to a value.
    #[inline]
    pub const fn half_width(self, index: usize) -> u64 {
        self.width(index) / 2
    }

    /// The lowest value equivalent to `value` (same bucket).
    #[inline]
    pub const fn lowest_equivalent(self, value: u64) -> u64 {
        self.lo(self.index_of(value))
    }

    /// The highest value equivalent to `value` (same bucket), inclusive.
    #[inline]
    pub const fn highest_equivalent(self, value: u64) -> u64 {
        self.highest(self.index_of(value))
    }

    /// The midpoint of the bucket holding `value`.
    #[inline]
    pub const fn median_equivalent(self, value: u64) -> u64 {
        self.midpoint(self.index_of(value))
    }

    /// The smallest value in the next bucket, or `None` when `value` is in the last bucket.
    #[inline]
    pub const fn next_non_equivalent(self, value: u64) -> Option<u64> {
        self.highest_equivalent(value).checked_add(1)
    }

    /// Whether `a` and `b` fall into the same bucket.
    #[inline]
    pub const fn equivalent(self, a: u64, b: u64) -> bool {
        self.index_of(a) == self.index_of(b)
    }

    /// `(q, e)` with `lo = q << e`, `width = 1 << e`.
    #[inline(always)]
    const fn mantissa_exponent(self, index: usize) -> (u64, u32) {
        let index = if index >= self.logical_len() {
            self.logical_len() - 1
        } else if index < self.first_index() {
            self.first_index()
        } else {
            index
        };
        let (k, u) = (self.block_scale(), self.unit_magnitude());
        // Blocks counted from the unit's first block: that one and the next have width
        // `2^u`; block `b >= 1` above it has width `2^(u + b - 1)`.
        let blk = (index >> k) as u32 - u;
        let e = u + blk - (blk != 0) as u32;
        let q = (index as u64 & (self.block_size() - 1)) | (((blk != 0) as u64) << k);
        (q, e)
    }
}

/// Where a value's bucket sits in the layout, as the index math computes it before combining
/// the two parts: `block` is `e = ilog2(v | B) - k` and `offset` is `v >> e`, so the logical
/// index is `(block << k) + offset` ([`BucketPos::logical`]).
///
/// Block 0 holds the values `0..2B` (`offset = v`, unit buckets); every later block `e`
/// holds `B` buckets, `offset` in `B..2B`. Storage whose memory follows the data keeps one
/// page of cells per block and finds a cell from these two parts without recombining them;
/// dense storage recombines them into the logical index (the same instructions as
/// [`Layout::index_of`]).
///
/// A layout with a value unit `2^u` ([`Layout::with_lowest_discernible`]) positions the value
/// in units, `v >> u`, in the layout without the unit ([`Layout::position`]): its logical
/// index is then `pos.logical(k) + layout.first_index()`, and block 0 is the unit's first
/// block. Storage sees the same shape of positions either way.
///
/// ```
/// use picollo_core::{BucketPos, Layout};
/// let l = Layout::from_block_scale(7).unwrap();
/// let pos = l.position(20_000);
/// assert_eq!(pos.logical(7), l.index_of(20_000));
/// assert_eq!(BucketPos::of_logical(pos.logical(7), 7), pos);
/// assert_eq!(l.position(200), BucketPos { block: 0, offset: 200 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BucketPos {
    /// `e = ilog2(v | B) - k`: 0 for the values `0..2B`, one more per doubling above.
    pub block: usize,
    /// `v >> e`: in `0..2B` in block 0, in `B..2B` in every later block.
    pub offset: usize,
}

impl BucketPos {
    /// The logical index `(block << block_scale) + offset`.
    #[inline(always)]
    pub const fn logical(self, block_scale: u32) -> usize {
        (self.block << block_scale) + self.offset
    }

    /// The position of logical index `index` (the inverse of [`BucketPos::logical`]): block
    /// `max(index >> k, 1) - 1`, the rest the offset.
    #[inline]
    pub const fn of_logical(index: usize, block_scale: u32) -> BucketPos {
        let block = (index >> block_scale).saturating_sub(1);
        BucketPos {
            block,
            offset: index - (block << block_scale),
        }
    }
}

mod index;
mod spec;

use index::{index_of_masked, index_of_u32_masked, position_of_scale, position_u32_scale};
#[cfg(test)]
mod tests;

pub use spec::{ConstLayout, LayoutSpec, UnitLayout};

pub(crate) use spec::records_its_layout;
