//! How HdrHistogram geometries and Picollo layouts correspond: the layout of a geometry, the
//! significant digits of a layout, and [`BucketMapping`], the report of how the buckets of one
//! side landed in the other's (the rule and its error bound are in the `interop` module docs).

use picollo_core::layout::{MAX_BLOCK_SCALE, MIN_BLOCK_SCALE};
use picollo_core::Layout;

use crate::hdr::counts::{HdrGeometry, MAX_SIGNIFICANT_DIGITS};

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
/// finer; see the [module docs](super) for the bound.
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrGeometry};
///
/// let g = HdrGeometry::new(1, i64::MAX as u64, 3)?;
/// assert_eq!(interop::layout_for(&g).block_size(), 1024);
/// let jhiccup = HdrGeometry::new(20_000, 3_600_000_000_000, 2)?;
/// assert_eq!(interop::layout_for(&jhiccup).block_size(), 128);
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
/// range: unit magnitude 0 on both sides and `B = sub_bucket_count / 2`.
pub(crate) fn indexes_alike(geometry: &HdrGeometry, layout: Layout) -> bool {
    geometry.unit_magnitude() == 0
        && layout.unit_magnitude() == 0
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

/// A highest trackable value HdrHistogram accepts with lowest discernible value 1.
pub(super) fn clamp_highest(highest: u64) -> u64 {
    highest.clamp(2, i64::MAX as u64)
}

/// How the buckets of one side landed in the other's buckets (see the [module docs](super)).
///
/// Reports of several conversions combine with [`merge`](Self::merge).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketMapping {
    /// Both sides index values identically (`indexes_alike`): counts were copied index for
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
    pub(super) fn new(index_for_index: bool) -> Self {
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
    pub(super) fn note(&mut self, lo: u64, hi: u64, split: bool, half: u64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_magnitude_stops_indexes_being_alike() {
        let g = HdrGeometry::new(1, 3_600_000_000_000, 2).unwrap();
        assert!(indexes_alike(&g, layout_for(&g)));
        let jhiccup = HdrGeometry::new(20_000, 3_600_000_000_000, 2).unwrap();
        assert!(!indexes_alike(&jhiccup, layout_for(&jhiccup))); // unit magnitude 14
    }

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
}
