//! Bucket arithmetic: the counts-array index of a value, the values of an index, the
//! equivalence functions, and sizing the counts array.

use crate::{Counter, Histogram, UsizeTypeTooSmall, ORIGINAL_MAX, ORIGINAL_MIN};

impl<T: Counter> Histogram<T> {
    // --- Index arithmetic.

    /// The bucket of `value`: how many powers of two it is above bucket 0's range.
    #[inline(always)]
    pub(crate) fn bucket_for(&self, value: u64) -> u32 {
        // `value | mask` has at least the bits of bucket 0, so the leading zeros are at most
        // those of bucket 0's largest value: the difference is the bucket.
        (64 - self.unit_magnitude - self.sub_bucket_half_count_magnitude - 1)
            - (self.sub_bucket_mask | value).leading_zeros()
    }

    /// The counts-array index of `value` (any `u64` has one; it may be past the array's end).
    ///
    /// Picollo's layout formula (`picollo_core::Layout::index_of`): with `w = value >> u` and
    /// `B = 2^k`, `e = ilog2(w | B) - k` and `index = e·B + (w >> e)`, equal to HdrHistogram's
    /// `(bucket + 1) << k + sub_bucket - B`. Computed as `s = ilog2(value | mask) - k` (which
    /// is `e + u`), `index = (s - u)·B + (value >> s)`.
    #[inline(always)]
    pub(crate) fn index_of(&self, value: u64) -> usize {
        // `ilog2(v | mask) - k = e + u`: the shift that takes `value` to its sub-bucket, with
        // no shift by `u` first. `e << k` as `e · B`: x86 shifts by a variable only through
        // `cl`, which the other shift holds; a multiply by the field is one instruction.
        let shift = (self.sub_bucket_mask | value).ilog2() - self.sub_bucket_half_count_magnitude;
        let e = shift - self.unit_magnitude;
        (e as usize) * (self.sub_bucket_half_count.get() as usize) + (value >> shift) as usize
    }

    /// The counts-array index of `value` (every value has one).
    pub(crate) fn index_for(&self, value: u64) -> Option<usize> {
        Some(self.index_of(value))
    }

    /// The index of `value`, or the last index when it is past the counts array.
    pub(crate) fn index_for_or_last(&self, value: u64) -> usize {
        self.index_of(value).min(self.last_index())
    }

    /// The last index of the counts array.
    pub(crate) fn last_index(&self) -> usize {
        // The array has at least one bucket's worth of entries (`resize` sets at least 2·2^k).
        self.counts.len().saturating_sub(1)
    }

    /// The lowest value of the bucket at counts-array `index`.
    pub(crate) fn value_for(&self, index: usize) -> u64 {
        let (bucket, sub_bucket) = self.bucket_of_index(index);
        // Past the last bucket the shift may lose bits (as in `hdrhistogram`, whose pickers
        // look one index past the end); never a panic.
        (sub_bucket as u64).wrapping_shl(bucket as u32 + self.unit_magnitude)
    }

    /// The bucket and sub-bucket of counts-array `index`: bucket 0 holds the indices below
    /// 2·2^k, bucket b > 0 the upper half (2^k ..< 2·2^k) of its sub-buckets.
    #[inline]
    fn bucket_of_index(&self, index: usize) -> (usize, usize) {
        let k = self.sub_bucket_half_count_magnitude;
        let bucket = (index >> k).saturating_sub(1);
        (bucket, index - (bucket << k))
    }

    /// `highest_equivalent(value_for(index))`, the value an iteration reports for a bucket,
    /// worked out from the index alone: the bucket `b` and sub-bucket `s` give the bucket's
    /// values `s << (b + u) ..= ((s + 1) << (b + u)) - 1`, where going through the value
    /// would find its bucket again from its leading zeros. Where the next bucket's lowest value
    /// would not fit in a `u64` (the top bucket, and past the array's end, where `value_for`
    /// loses bits), the two steps answer, so the result is theirs at every index.
    #[inline]
    pub(crate) fn highest_at_index(&self, index: usize) -> u64 {
        let (bucket, sub_bucket) = self.bucket_of_index(index);
        let sub_bucket = sub_bucket as u64 + 1;
        // At most 64 + 63: a shift past 63 fails the test below (`sub_bucket` is at least 1,
        // so it has at most 63 leading zeros), which also keeps the shift's bits.
        let shift = bucket.min(64) as u32 + self.unit_magnitude;
        if sub_bucket.leading_zeros() >= shift {
            (sub_bucket << shift) - 1
        } else {
            self.highest_equivalent(self.value_for(index))
        }
    }

    /// The count at counts-array `index`.
    pub(crate) fn count_at_index(&self, index: usize) -> Option<T> {
        self.counts.get(index).copied()
    }

    /// Sets the count at counts-array `index` (totals and extremes are left to `restat`).
    #[allow(dead_code)]
    pub(crate) fn set_count_at_index(&mut self, index: usize, count: T) -> Result<(), ()> {
        let slot = self.counts.get_mut(index).ok_or(())?;
        *slot = count;
        Ok(())
    }

    /// The counts by counts-array index.
    #[allow(dead_code)]
    pub(crate) fn counts(&self) -> &[T] {
        &self.counts
    }

    // --- Bucket arithmetic.

    /// The lowest value of `value`'s bucket.
    pub fn lowest_equivalent(&self, value: u64) -> u64 {
        let shift = self.bucket_for(value) + self.unit_magnitude;
        (value >> shift) << shift
    }

    /// The highest value of `value`'s bucket.
    pub fn highest_equivalent(&self, value: u64) -> u64 {
        if value == u64::MAX {
            u64::MAX
        } else {
            self.next_non_equivalent(value) - 1
        }
    }

    /// The middle of `value`'s bucket.
    pub fn median_equivalent(&self, value: u64) -> u64 {
        // The half range fits above the bucket's lowest value.
        self.lowest_equivalent(value) + (self.equivalent_range(value) >> 1)
    }

    /// The lowest value of the next bucket (`u64::MAX` at the last).
    pub fn next_non_equivalent(&self, value: u64) -> u64 {
        self.lowest_equivalent(value)
            .saturating_add(self.equivalent_range(value))
    }

    /// The width of `value`'s bucket.
    pub fn equivalent_range(&self, value: u64) -> u64 {
        1u64 << (self.unit_magnitude + self.bucket_for(value))
    }

    /// This histogram made shareable between recording threads (see [`crate::sync`]).
    #[cfg(feature = "sync")]
    pub fn into_sync(self) -> crate::SyncHistogram<T> {
        crate::SyncHistogram::from(self)
    }

    // --- Internals.

    /// Buckets needed for values up to `value`.
    pub(crate) fn buckets_to_cover(&self, value: u64) -> u8 {
        let mut smallest_untrackable =
            (1u64 << (self.sub_bucket_half_count_magnitude + 1)) << self.unit_magnitude;
        let mut needed = 1;
        while smallest_untrackable <= value {
            if smallest_untrackable > u64::MAX / 2 {
                // The next bucket reaches past `u64::MAX`: the last.
                return needed + 1;
            }
            smallest_untrackable <<= 1;
            needed += 1;
        }
        needed
    }

    /// Grows the counts to cover `high` and makes it the highest trackable value.
    pub(crate) fn resize(&mut self, high: u64) -> Result<(), UsizeTypeTooSmall> {
        let buckets = self.buckets_to_cover(high);
        let len = (u32::from(buckets) + 1)
            .checked_mul(1u32 << self.sub_bucket_half_count_magnitude)
            .and_then(|len| usize::try_from(len).ok())
            .ok_or(UsizeTypeTooSmall)?;
        self.bucket_count = buckets;
        self.highest_trackable_value = high;
        self.counts.resize(len, T::zero());
        Ok(())
    }

    /// Recomputes the total, minimum and maximum from the first `length_to_scan` counts.
    pub(crate) fn restat(&mut self, length_to_scan: usize) {
        self.reset_max(ORIGINAL_MAX);
        self.reset_min(ORIGINAL_MIN);
        let scan = length_to_scan.min(self.counts.len());
        let mut total: u64 = 0;
        let mut max_index = None;
        let mut min_index = None;
        for (index, &count) in self.counts[..scan].iter().enumerate() {
            if count != T::zero() {
                total = total.saturating_add(count.as_u64());
                max_index = Some(index);
                if min_index.is_none() && index != 0 {
                    min_index = Some(index);
                }
            }
        }
        if let Some(index) = max_index {
            let max = self.highest_equivalent(self.value_for(index));
            self.update_max(max);
        }
        if let Some(index) = min_index {
            let min = self.value_for(index);
            self.update_min(min);
        }
        self.total_count = total;
    }
}

#[cfg(test)]
mod tests {
    use crate::Histogram;

    #[test]
    fn highest_at_index_is_highest_equivalent_of_value_for() {
        // Every index of the counts array and a few past its end, over units and ranges up
        // to all of `u64` (where the top bucket's next value does not fit), at every precision
        // (under miri up to 2 digits: the arrays of 3 or more hold tens of thousands).
        let digits = if cfg!(miri) { 0..=2 } else { 0..=5 };
        for sigfig in digits {
            for (low, high) in [
                (1, 2),
                (1, 3_600_000_000_000),
                (1, u64::MAX),
                (1000, u64::MAX),
            ]
            .into_iter()
            .chain([(1 << 20, 1 << 50), (3, u64::MAX / 2), (1 << 40, u64::MAX)])
            {
                let h = Histogram::<u64>::new_with_bounds(low, high.max(2 * low), sigfig)
                    .expect("valid bounds");
                for index in 0..h.distinct_values() + 3 {
                    assert_eq!(
                        h.highest_at_index(index),
                        h.highest_equivalent(h.value_for(index)),
                        "{low}..{high} at {sigfig} digits, index {index}"
                    );
                }
            }
        }
    }
}
