//! HdrHistogram's bucket geometry and a plain counts container in its index space.

use super::{HdrCounts, HdrError};

/// Highest `significant_digits` HdrHistogram accepts.
pub(crate) const MAX_SIGNIFICANT_DIGITS: u8 = 5;

/// HdrHistogram's bucket geometry for one `(lowest, highest, significant digits)` triple.
///
/// This mirrors `AbstractHistogram.init` in HdrHistogram (Java):
///
/// - `sub_bucket_count = 2^ceil(log2(2 * 10^d))` (d=2: 256, d=3: 2048), `sub_bucket_half_count`
///   is half of it;
/// - `unit_magnitude = floor(log2(lowest_discernible))`; values are indexed as `v >> unit_magnitude`
///   in bucket 0;
/// - bucket `b > 0` holds the upper half sub-buckets `[half, count)` with width `2^(b + unit)`;
/// - the counts array has `(bucket_count + 1) * sub_bucket_half_count` entries.
///
/// `unit_magnitude` is computed exactly (`63 - leading_zeros`); HdrHistogram computes it with a
/// floating-point `log(x)/log(2)`, which gives the same result for every practical value.
///
/// ```
/// use picollo_alloc::hdr::HdrGeometry;
///
/// let g = HdrGeometry::new(1, i64::MAX as u64, 3)?;
/// assert_eq!(g.sub_bucket_count(), 2048);
/// assert_eq!(g.counts_len(), 55296);
/// let i = g.index_of(100_000).unwrap();
/// assert_eq!(g.lowest_equivalent(i), Some(99_968));
/// assert_eq!(g.highest_equivalent(i), Some(100_031));
/// # Ok::<(), picollo_alloc::hdr::HdrError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HdrGeometry {
    lowest_discernible: u64,
    highest_trackable: u64,
    significant_digits: u8,
    unit_magnitude: u32,
    sub_bucket_count_magnitude: u32,
    sub_bucket_half_count_magnitude: u32,
    sub_bucket_mask: u64,
    leading_zero_count_base: u32,
    bucket_count: u32,
    counts_len: usize,
}

impl HdrGeometry {
    /// Builds the geometry, with HdrHistogram's own argument checks.
    ///
    /// # Errors
    /// [`HdrError::InvalidGeometry`] when `lowest_discernible < 1`,
    /// `lowest_discernible > i64::MAX / 2`, `highest_trackable < 2 * lowest_discernible`,
    /// `highest_trackable > i64::MAX`, `significant_digits > 5`, or when
    /// `log2(sub_bucket_count) + unit_magnitude > 62`.
    pub fn new(
        lowest_discernible: u64,
        highest_trackable: u64,
        significant_digits: u8,
    ) -> Result<Self, HdrError> {
        const I64_MAX: u64 = i64::MAX as u64;
        if lowest_discernible < 1 {
            return Err(HdrError::InvalidGeometry(
                "lowest discernible value must be >= 1",
            ));
        }
        if lowest_discernible > I64_MAX / 2 {
            return Err(HdrError::InvalidGeometry(
                "lowest discernible value must be <= i64::MAX / 2",
            ));
        }
        if highest_trackable < 2 * lowest_discernible {
            return Err(HdrError::InvalidGeometry(
                "highest trackable value must be >= 2 * lowest discernible value",
            ));
        }
        if highest_trackable > I64_MAX {
            return Err(HdrError::InvalidGeometry(
                "highest trackable value must be <= i64::MAX",
            ));
        }
        if significant_digits > MAX_SIGNIFICANT_DIGITS {
            return Err(HdrError::InvalidGeometry(
                "significant digits must be between 0 and 5",
            ));
        }
        let largest_single_unit = 2 * 10u64.pow(u32::from(significant_digits));
        // ceil(log2(x)) for x >= 2.
        let sub_bucket_count_magnitude = 64 - (largest_single_unit - 1).leading_zeros();
        let unit_magnitude = 63 - lowest_discernible.leading_zeros();
        if sub_bucket_count_magnitude + unit_magnitude > 62 {
            return Err(HdrError::InvalidGeometry(
                "significant digits cannot be represented beyond the lowest discernible value (log2(sub_bucket_count) + unit_magnitude > 62)",
            ));
        }
        let sub_bucket_half_count_magnitude = sub_bucket_count_magnitude - 1;
        let sub_bucket_count = 1u64 << sub_bucket_count_magnitude;
        let sub_bucket_mask = (sub_bucket_count - 1) << unit_magnitude;
        let leading_zero_count_base = 64 - unit_magnitude - sub_bucket_count_magnitude;

        // getBucketsNeededToCoverValue
        let mut smallest_untrackable = sub_bucket_count << unit_magnitude;
        let mut bucket_count = 1u32;
        while smallest_untrackable <= highest_trackable {
            if smallest_untrackable > I64_MAX / 2 {
                bucket_count += 1;
                break;
            }
            smallest_untrackable <<= 1;
            bucket_count += 1;
        }
        // bucket_count <= 64 and half count <= 2^17, so this cannot overflow.
        let counts_len = (bucket_count as usize + 1) << sub_bucket_half_count_magnitude;
        Ok(Self {
            lowest_discernible,
            highest_trackable,
            significant_digits,
            unit_magnitude,
            sub_bucket_count_magnitude,
            sub_bucket_half_count_magnitude,
            sub_bucket_mask,
            leading_zero_count_base,
            bucket_count,
            counts_len,
        })
    }

    /// The lowest discernible value this geometry was built from.
    pub fn lowest_discernible(&self) -> u64 {
        self.lowest_discernible
    }

    /// The highest trackable value this geometry was built from.
    pub fn highest_trackable(&self) -> u64 {
        self.highest_trackable
    }

    /// The number of significant decimal digits (0 to 5).
    pub fn significant_digits(&self) -> u8 {
        self.significant_digits
    }

    /// `floor(log2(lowest_discernible))`.
    pub fn unit_magnitude(&self) -> u32 {
        self.unit_magnitude
    }

    /// Sub-buckets per bucket: `2^ceil(log2(2 * 10^significant_digits))`.
    pub fn sub_bucket_count(&self) -> u64 {
        1 << self.sub_bucket_count_magnitude
    }

    /// Half of [`sub_bucket_count`](Self::sub_bucket_count): the number of counts entries each
    /// bucket above bucket 0 adds (Picollo's block size `B`).
    pub(crate) fn sub_bucket_half_count(&self) -> u64 {
        1 << self.sub_bucket_half_count_magnitude
    }

    /// `log2(sub_bucket_half_count)`.
    pub(crate) fn sub_bucket_half_count_magnitude(&self) -> u32 {
        self.sub_bucket_half_count_magnitude
    }

    /// Number of buckets needed to cover `highest_trackable`.
    pub fn bucket_count(&self) -> u32 {
        self.bucket_count
    }

    /// Length of HdrHistogram's counts array: `(bucket_count + 1) * sub_bucket_half_count`.
    pub fn counts_len(&self) -> usize {
        self.counts_len
    }

    /// Highest value whose index is inside the counts array (often above `highest_trackable`,
    /// as the last bucket is complete).
    pub(crate) fn highest_recordable(&self) -> u64 {
        // counts_len >= 2 * half, so the index is valid and the value exists.
        self.highest_equivalent(self.counts_len - 1)
            .unwrap_or(u64::MAX)
    }

    /// Counts index of `value` (HdrHistogram `countsArrayIndex`), or `None` when the value is
    /// beyond the counts array.
    pub fn index_of(&self, value: u64) -> Option<usize> {
        let bucket = self.leading_zero_count_base - (value | self.sub_bucket_mask).leading_zeros();
        let sub_bucket = value >> (bucket + self.unit_magnitude);
        // bucket <= 64 and sub_bucket < sub_bucket_count <= 2^18.
        let base = (u64::from(bucket) + 1) << self.sub_bucket_half_count_magnitude;
        let index = base + sub_bucket - (1 << self.sub_bucket_half_count_magnitude);
        let index = usize::try_from(index).ok()?;
        (index < self.counts_len).then_some(index)
    }

    /// Bucket number and sub-bucket number of a counts index (HdrHistogram `valueFromIndex`).
    fn split_index(&self, index: usize) -> (u32, u64) {
        let half_mag = self.sub_bucket_half_count_magnitude;
        let half = 1u64 << half_mag;
        let index = index as u64;
        let bucket = index >> half_mag;
        let sub = (index & (half - 1)) + half;
        if bucket == 0 {
            (0, sub - half)
        } else {
            // index < counts_len, so bucket - 1 < bucket_count <= 64.
            ((bucket - 1) as u32, sub)
        }
    }

    /// Lowest value that maps to counts index `index` (HdrHistogram `valueFromIndex`), or `None`
    /// when `index >= counts_len()`.
    pub fn lowest_equivalent(&self, index: usize) -> Option<u64> {
        if index >= self.counts_len {
            return None;
        }
        let (bucket, sub) = self.split_index(index);
        Some(sub << (bucket + self.unit_magnitude))
    }

    /// Width of the value range of counts index `index` (`2^(bucket + unit_magnitude)`), or
    /// `None` when `index >= counts_len()`.
    pub(crate) fn bucket_width(&self, index: usize) -> Option<u64> {
        if index >= self.counts_len {
            return None;
        }
        let (bucket, _) = self.split_index(index);
        Some(1 << (bucket + self.unit_magnitude))
    }

    /// Highest value that maps to counts index `index` (HdrHistogram
    /// `highestEquivalentValue(valueFromIndex(index))`), or `None` when `index >= counts_len()`.
    pub fn highest_equivalent(&self, index: usize) -> Option<u64> {
        let lo = self.lowest_equivalent(index)?;
        let width = self.bucket_width(index)?;
        Some(lo + (width - 1))
    }

    /// `true` when two geometries index values identically (same sub-bucket count and unit
    /// magnitude); they may still differ in `counts_len`.
    pub(crate) fn same_indexing(&self, other: &Self) -> bool {
        self.sub_bucket_count_magnitude == other.sub_bucket_count_magnitude
            && self.unit_magnitude == other.unit_magnitude
    }
}

/// The counts index of `source` entry `index` in `target`, by the rule of
/// [`HdrCounts::add`] and [`HdrCounts::subtract`]: the same index when the geometries index
/// alike (`alike`), else the target index of the entry's lowest value.
fn landing(
    target: &HdrGeometry,
    source: &HdrGeometry,
    alike: bool,
    index: usize,
) -> Result<usize, HdrError> {
    if alike {
        return if index < target.counts_len() {
            Ok(index)
        } else {
            Err(HdrError::ValueOutOfRange {
                value: source.lowest_equivalent(index).unwrap_or(u64::MAX),
                highest: target.highest_recordable(),
            })
        };
    }
    let value = source
        .lowest_equivalent(index)
        .ok_or(HdrError::IndexOutOfRange {
            index,
            counts_len: source.counts_len(),
        })?;
    target.index_of(value).ok_or(HdrError::ValueOutOfRange {
        value,
        highest: target.highest_recordable(),
    })
}

/// One non-zero counts entry, as yielded by [`HdrCounts::iter_recorded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HdrBucket {
    /// Counts-array index.
    pub index: usize,
    /// Lowest value of the entry's range (HdrHistogram `valueFromIndex`).
    pub lowest: u64,
    /// Highest value of the entry's range (HdrHistogram `highestEquivalentValue`).
    pub highest: u64,
    /// The count.
    pub count: u64,
}

impl HdrCounts {
    /// An empty histogram with a validated geometry, `normalizing_offset` 0 and ratio 1.0.
    ///
    /// # Errors
    /// See [`HdrGeometry::new`].
    pub fn new(
        lowest_discernible: u64,
        highest_trackable: u64,
        significant_digits: u8,
    ) -> Result<Self, HdrError> {
        HdrGeometry::new(lowest_discernible, highest_trackable, significant_digits)?;
        Ok(Self {
            lowest_discernible,
            highest_trackable,
            significant_digits,
            normalizing_offset: 0,
            int_to_double_ratio: 1.0,
            counts: Vec::new(),
        })
    }

    /// The geometry of the header fields.
    ///
    /// # Errors
    /// [`HdrError::InvalidGeometry`] if the (public) fields were set to values HdrHistogram
    /// refuses.
    pub fn geometry(&self) -> Result<HdrGeometry, HdrError> {
        HdrGeometry::new(
            self.lowest_discernible,
            self.highest_trackable,
            self.significant_digits,
        )
    }

    /// Adds `count` at the counts index of `value`.
    ///
    /// # Errors
    /// [`HdrError::ValueOutOfRange`] when the value is beyond the counts array,
    /// [`HdrError::CountOverflow`] when the count overflows, or an invalid geometry.
    pub fn record(&mut self, value: u64, count: u64) -> Result<(), HdrError> {
        let g = self.geometry()?;
        let index = g.index_of(value).ok_or(HdrError::ValueOutOfRange {
            value,
            highest: g.highest_recordable(),
        })?;
        self.add_at_index(index, count)
    }

    fn add_at_index(&mut self, index: usize, count: u64) -> Result<(), HdrError> {
        if count == 0 {
            return Ok(());
        }
        if self.counts.len() <= index {
            self.counts.resize(index + 1, 0);
        }
        let slot = &mut self.counts[index];
        *slot = slot
            .checked_add(count)
            .ok_or(HdrError::CountOverflow { index })?;
        Ok(())
    }

    /// Adds another histogram's counts, as HdrHistogram's `AbstractHistogram.add` does.
    ///
    /// When both geometries index identically (`HdrGeometry::same_indexing`) the counts are
    /// added index for index. Otherwise each non-zero source entry is recorded at the target
    /// index of its *lowest* equivalent value (`valueFromIndex`): exact when the target is
    /// coarser; when the target is finer, each source entry lands in the target entry holding
    /// its lower bound, so values move down by less than one source bucket width. This is the
    /// rule that reproduces HdrHistogram's own results (e.g. its jHiccup log test vectors).
    /// `self`'s header fields (ratio, offset) are kept. On error, `self` may hold a partial sum.
    ///
    /// # Errors
    /// [`HdrError::ValueOutOfRange`] when a source entry is beyond this histogram's counts
    /// array, [`HdrError::CountOverflow`], or an invalid geometry on either side.
    pub fn add(&mut self, other: &HdrCounts) -> Result<(), HdrError> {
        let target = self.geometry()?;
        let source = other.geometry()?;
        let alike = target.same_indexing(&source);
        for (index, &count) in other.counts.iter().enumerate() {
            if count != 0 {
                let to = landing(&target, &source, alike, index)?;
                self.add_at_index(to, count)?;
            }
        }
        Ok(())
    }

    /// Takes another histogram's counts away, as HdrHistogram's `AbstractHistogram.subtract`
    /// does: each non-zero entry of `other` at the counts index of its lowest value
    /// (`valueFromIndex`), index for index when both geometries index alike, the rule of
    /// [`HdrCounts::add`]. The values between two cumulative histograms.
    ///
    /// Refused when `other` holds values beyond this histogram's range
    /// ([`HdrError::ValueOutOfRange`], Java's "values that do not fit in this histogram's
    /// range") or more values at an entry than this histogram
    /// ([`HdrError::SubtrahendTooLarge`], Java's "otherHistogram count ... is larger than this
    /// one's"). Unlike Java, which has subtracted the entries before the refused one, a
    /// refusal changes nothing.
    ///
    /// ```
    /// use picollo_alloc::hdr::{HdrCounts, HdrError};
    ///
    /// let mut now = HdrCounts::new(1, 3_600_000_000, 3)?;
    /// now.record(4, 3)?;
    /// now.record(4_000, 2)?;
    /// let mut before = HdrCounts::new(1, 3_600_000_000, 3)?;
    /// before.record(4, 1)?;
    /// now.subtract(&before)?;
    /// assert_eq!(now.total_count(), 4);
    /// before.record(4, 10)?;
    /// assert!(matches!(now.subtract(&before), Err(HdrError::SubtrahendTooLarge { have: 2, subtract: 11, .. })));
    /// assert_eq!(now.total_count(), 4); // unchanged
    /// # Ok::<(), HdrError>(())
    /// ```
    ///
    /// # Errors
    /// As above, or an invalid geometry on either side.
    pub fn subtract(&mut self, other: &HdrCounts) -> Result<(), HdrError> {
        let target = self.geometry()?;
        let source = other.geometry()?;
        // Java's range check: the highest value of the subtrahend must fit.
        if let Some(top) = other.max_index() {
            let highest = source.highest_equivalent(top).unwrap_or(u64::MAX);
            if highest > target.highest_recordable() {
                return Err(HdrError::ValueOutOfRange {
                    value: highest,
                    highest: target.highest_recordable(),
                });
            }
        }
        // Where each entry lands, consecutive entries with one target merged (the mapping is
        // monotone), checked in full before anything changes.
        let alike = target.same_indexing(&source);
        let mut landed: Vec<(usize, u64)> = Vec::new();
        for (index, &count) in other.counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let to = landing(&target, &source, alike, index)?;
            match landed.last_mut() {
                Some((at, sum)) if *at == to => *sum = sum.saturating_add(count),
                _ => landed.push((to, count)),
            }
        }
        for &(index, subtract) in &landed {
            let have = self.counts.get(index).copied().unwrap_or(0);
            if have < subtract {
                return Err(HdrError::SubtrahendTooLarge {
                    value: target.lowest_equivalent(index).unwrap_or(0),
                    have,
                    subtract,
                });
            }
        }
        for (index, subtract) in landed {
            if let Some(c) = self.counts.get_mut(index) {
                *c -= subtract;
            }
        }
        Ok(())
    }

    /// Sum of all counts (saturating at `u64::MAX`).
    pub fn total_count(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// Index of the last non-zero count.
    pub(crate) fn max_index(&self) -> Option<usize> {
        self.counts.iter().rposition(|&c| c != 0)
    }

    /// The maximum as HdrHistogram reports it (`getMaxValue`): the highest equivalent value of
    /// the last non-zero entry; 0 for an empty histogram or an invalid geometry.
    pub fn max(&self) -> u64 {
        match (self.max_index(), self.geometry()) {
            (Some(i), Ok(g)) => g.highest_equivalent(i).unwrap_or(0),
            _ => 0,
        }
    }

    /// The minimum as HdrHistogram reports it (`getMinValue`): 0 if index 0 has counts or the
    /// histogram is empty, otherwise the lowest equivalent value of the first non-zero entry.
    pub fn min(&self) -> u64 {
        let first = self.counts.iter().position(|&c| c != 0);
        match (first, self.geometry()) {
            (Some(i), Ok(g)) if i > 0 => g.lowest_equivalent(i).unwrap_or(0),
            _ => 0,
        }
    }

    /// `max()` as a double, in real units: `max() * int_to_double_ratio` (HdrHistogram
    /// `getMaxValueAsDouble`). This is what the interval-log `Interval_Max` column shows,
    /// divided by the log's unit ratio.
    pub(crate) fn max_as_f64(&self) -> f64 {
        self.max() as f64 * self.int_to_double_ratio
    }

    /// The value at `percentile` (0 to 100) as HdrHistogram's `getValueAtPercentile` reports
    /// it.
    ///
    /// The percentile is clamped to `[0, 100]`; the target count is Picollo's one rank rule,
    /// [`picollo_core::read::rank_count`]: Java's count, `ceil(p · total / 100)` in doubles after
    /// lowering `p` by one ulp, at least 1 (`getValueAtPercentile(50.00000000000001)` of {1, 2}
    /// is 1, as in Java). The result is the
    /// highest equivalent value of the first entry where the running count reaches the target
    /// (the lowest equivalent value when `percentile == 0`). `None` for a NaN percentile, an
    /// empty histogram or an invalid geometry.
    pub fn value_at_percentile(&self, percentile: f64) -> Option<u64> {
        if percentile.is_nan() {
            return None;
        }
        let g = self.geometry().ok()?;
        let total = self.total_count();
        if total == 0 {
            return None;
        }
        let target = picollo_core::read::rank_count(percentile.clamp(0.0, 100.0), total);
        let mut running = 0u64;
        for (index, &count) in self.counts.iter().enumerate() {
            running = running.saturating_add(count);
            if running >= target {
                return if percentile == 0.0 {
                    g.lowest_equivalent(index)
                } else {
                    g.highest_equivalent(index)
                };
            }
        }
        None
    }

    /// Non-zero entries with their value ranges, lowest index first. Empty for an invalid
    /// geometry.
    pub fn iter_recorded(&self) -> impl Iterator<Item = HdrBucket> + '_ {
        let g = self.geometry().ok();
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c != 0)
            .filter_map(move |(index, &count)| {
                let g = g.as_ref()?;
                Some(HdrBucket {
                    index,
                    lowest: g.lowest_equivalent(index)?,
                    highest: g.highest_equivalent(index)?,
                    count,
                })
            })
    }

    /// `true` when both hold the same header fields and the same counts, ignoring trailing
    /// zero entries.
    pub fn same_content(&self, other: &HdrCounts) -> bool {
        fn trimmed(c: &[u64]) -> &[u64] {
            let end = c.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
            &c[..end]
        }
        self.lowest_discernible == other.lowest_discernible
            && self.highest_trackable == other.highest_trackable
            && self.significant_digits == other.significant_digits
            && self.normalizing_offset == other.normalizing_offset
            && self.int_to_double_ratio.to_bits() == other.int_to_double_ratio.to_bits()
            && trimmed(&self.counts) == trimmed(&other.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_matches_hdrhistogram() {
        let g = HdrGeometry::new(1, i64::MAX as u64, 3).unwrap();
        assert_eq!(g.sub_bucket_count(), 2048);
        assert_eq!(g.sub_bucket_half_count(), 1024);
        assert_eq!(g.bucket_count(), 53);
        assert_eq!(g.counts_len(), 55296);
        assert_eq!(g.highest_recordable(), i64::MAX as u64);

        let g = HdrGeometry::new(20_000, 3_600_000_000_000, 2).unwrap();
        assert_eq!(g.unit_magnitude(), 14);
        assert_eq!(g.sub_bucket_count(), 256);

        let g = HdrGeometry::new(1, i64::MAX as u64, 5).unwrap();
        assert_eq!(g.counts_len(), 6_160_384);
        let g = HdrGeometry::new(1, 2, 0).unwrap();
        assert_eq!(g.sub_bucket_count(), 2);
    }

    #[test]
    fn index_round_trip_every_geometry_edge() {
        for d in 0..=5u8 {
            for lowest in [1u64, 2, 3, 1000, 1 << 20] {
                let Ok(g) = HdrGeometry::new(lowest, i64::MAX as u64, d) else {
                    continue;
                };
                for i in (0..g.counts_len()).step_by(97).chain([g.counts_len() - 1]) {
                    let lo = g.lowest_equivalent(i).unwrap();
                    let hi = g.highest_equivalent(i).unwrap();
                    assert!(lo <= hi);
                    if i >= (g.sub_bucket_half_count() as usize) || lowest == 1 {
                        assert_eq!(g.index_of(lo), Some(i), "d={d} lowest={lowest} i={i}");
                        assert_eq!(g.index_of(hi), Some(i), "d={d} lowest={lowest} i={i}");
                    }
                }
                assert_eq!(g.index_of(u64::MAX), None);
            }
        }
    }

    #[test]
    fn invalid_geometries() {
        assert!(HdrGeometry::new(0, 10, 3).is_err());
        assert!(HdrGeometry::new(10, 19, 3).is_err());
        assert!(HdrGeometry::new(1, 100, 6).is_err());
        assert!(HdrGeometry::new(1 << 60, u64::MAX, 3).is_err());
        assert!(HdrGeometry::new(1 << 52, i64::MAX as u64, 3).is_err());
    }

    #[test]
    fn percentile_rule() {
        let mut h = HdrCounts::new(1, 1 << 40, 3).unwrap();
        for v in 1..=100u64 {
            h.record(v, 1).unwrap();
        }
        assert_eq!(h.value_at_percentile(50.0), Some(50));
        assert_eq!(h.value_at_percentile(0.0), Some(1));
        assert_eq!(h.value_at_percentile(100.0), Some(100));
        assert_eq!(h.value_at_percentile(f64::NAN), None);
        assert_eq!(h.value_at_percentile(250.0), Some(100));
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100);
    }
}
