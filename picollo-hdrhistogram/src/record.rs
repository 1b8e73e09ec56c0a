//! Recording, and keeping the recorded extremes.

use crate::{Counter, Histogram, RecordError};

impl<T: Counter> Histogram<T> {
    // --- Recording.

    /// Records one sample of `value`. Fails when `value` is above the range and auto-resize is
    /// off.
    #[inline]
    pub fn record(&mut self, value: u64) -> Result<(), RecordError> {
        self.record_one(value, false)
    }

    /// Records one sample of `value`, clamped into the range when it is outside.
    #[inline]
    pub fn saturating_record(&mut self, value: u64) {
        // Clamping records every value (see `saturating_record_n`).
        let _ = self.record_one(value, true);
    }

    /// Records `count` samples of `value`. Fails when `value` is above the range and
    /// auto-resize is off.
    #[inline]
    pub fn record_n(&mut self, value: u64, count: T) -> Result<(), RecordError> {
        self.record_n_inner(value, count, false)
    }

    /// Records `count` samples of `value`, clamped into the range when it is outside.
    #[inline]
    pub fn saturating_record_n(&mut self, value: u64, count: T) {
        // Clamping records every value; the only error left is a resize past `usize`, which a
        // clamped record never does.
        let _ = self.record_n_inner(value, count, true);
    }

    /// [`Histogram::record_n_inner`] of one sample, with the increments by one.
    #[inline(always)]
    pub(crate) fn record_one(&mut self, value: u64, clamp: bool) -> Result<(), RecordError> {
        let index = self.index_of(value);
        if index >= self.counts.len() {
            return self.record_outside(value, T::one(), clamp);
        }
        // The total by the add's carry (an increment and a branch on its flags): past
        // `u64::MAX` the fix-up puts it back, and the count saturates there.
        let (total, wrapped) = self.total_count.overflowing_add(1);
        self.total_count = total;
        if wrapped {
            self.record_one_saturating(index);
        } else if T::UNCHECKED_BELOW_TOTAL == u64::MAX {
            // `u64` counts: each is at most the total (see `Counter::UNCHECKED_BELOW_TOTAL`),
            // which did not wrap, so neither does this one.
            self.counts[index] = self.counts[index] + T::one();
        } else if self.counts[index].increment_wraps() {
            self.count_wrapped(index);
        }
        self.update_min_max(value);
        Ok(())
    }

    /// The total wrapped past `u64::MAX`: it saturates there, and the count saturates too.
    /// Out of line, so that the compiler keeps the record path's plain increments apart.
    #[cold]
    #[inline(never)]
    fn record_one_saturating(&mut self, index: usize) {
        self.total_count = u64::MAX;
        if let Some(slot) = self.counts.get_mut(index) {
            *slot = slot.saturating_add(T::one());
        }
    }

    /// The count at `index` wrapped past its maximum: it saturates there.
    #[cold]
    #[inline(never)]
    fn count_wrapped(&mut self, index: usize) {
        if let Some(slot) = self.counts.get_mut(index) {
            slot.unwrap_increment();
        }
    }

    #[inline(always)]
    pub(crate) fn record_n_inner(
        &mut self,
        value: u64,
        count: T,
        clamp: bool,
    ) -> Result<(), RecordError> {
        let index = self.index_of(value);
        match self.counts.get_mut(index) {
            Some(slot) => *slot = slot.saturating_add(count),
            None => return self.record_outside(value, count, clamp),
        }
        self.update_min_max(value);
        self.total_count = self.total_count.saturating_add(count.as_u64());
        Ok(())
    }

    /// A value past the counts array: clamped, refused or recorded after a resize.
    #[cold]
    #[inline(never)]
    pub(crate) fn record_outside(
        &mut self,
        value: u64,
        count: T,
        clamp: bool,
    ) -> Result<(), RecordError> {
        let value = if clamp {
            // Past the array means above the highest trackable value.
            let clamped = if value > self.highest_trackable_value {
                self.highest_trackable_value
            } else {
                self.lowest_discernible_value
            };
            let index = self.index_for_or_last(clamped);
            self.counts[index] = self.counts[index].saturating_add(count);
            clamped
        } else if !self.auto_resize {
            return Err(RecordError::ValueOutOfRangeResizeDisabled);
        } else {
            self.resize(value)
                .map_err(|_| RecordError::ResizeFailedUsizeTypeTooSmall)?;
            self.highest_trackable_value =
                self.highest_equivalent(self.value_for(self.last_index()));
            let index = self.index_of(value);
            let slot = self
                .counts
                .get_mut(index)
                .ok_or(RecordError::ResizeFailedUsizeTypeTooSmall)?;
            *slot = slot.saturating_add(count);
            value
        };
        self.update_min_max(value);
        self.total_count = self.total_count.saturating_add(count.as_u64());
        Ok(())
    }

    /// Records `value`, and for coordinated omission: when `value` is above `interval` (the
    /// expected interval between samples), also `value - interval`, `value - 2·interval`, ...
    /// down to `interval`. An `interval` of 0 records `value` alone.
    pub fn record_correct(&mut self, value: u64, interval: u64) -> Result<(), RecordError> {
        self.record_n_correct(value, T::one(), interval)
    }

    /// [`Histogram::record_correct`] with `count` samples of each value.
    pub fn record_n_correct(
        &mut self,
        value: u64,
        count: T,
        interval: u64,
    ) -> Result<(), RecordError> {
        self.record_n(value, count)?;
        if interval == 0 {
            return Ok(());
        }
        if value > interval {
            let mut missing = value - interval;
            while missing >= interval {
                self.record_n_inner(missing, count, false)?;
                missing -= interval;
            }
        }
        Ok(())
    }

    /// `2^u - 1`: the bits of a value within its unit.
    pub(crate) fn unit_magnitude_mask(&self) -> u64 {
        (1u64 << self.unit_magnitude) - 1
    }

    /// `hdrhistogram`'s `max_value`: the largest value recorded, its low `u` bits set.
    pub(crate) fn max_value(&self) -> u64 {
        self.min_non_zero_value.wrapping_add(self.extremes_span)
    }

    pub(crate) fn set_max_value(&mut self, max: u64) {
        self.extremes_span = max.wrapping_sub(self.min_non_zero_value);
    }

    pub(crate) fn set_min_non_zero_value(&mut self, min: u64) {
        let max = self.max_value();
        self.min_non_zero_value = min;
        self.set_max_value(max);
    }

    pub(crate) fn update_max(&mut self, value: u64) {
        let internal = value | self.unit_magnitude_mask();
        if internal > self.max_value() {
            self.set_max_value(internal);
        }
    }

    pub(crate) fn update_min(&mut self, value: u64) {
        let mask = self.unit_magnitude_mask();
        if value <= mask {
            // In the first unit: equivalent to 0, not a non-zero minimum.
            return;
        }
        let internal = value & !mask;
        if internal < self.min_non_zero_value {
            self.set_min_non_zero_value(internal);
        }
    }

    #[inline(always)]
    pub(crate) fn update_min_max(&mut self, value: u64) {
        // Within `[min_non_zero_value, max_value]` nothing changes; below it (0 included, which
        // wraps) or above, the out-of-line update decides. Before the first value the span is
        // `0 - u64::MAX = 1`, so every value but 0 goes there.
        if value.wrapping_sub(self.min_non_zero_value) > self.extremes_span {
            self.update_extremes(value);
        }
    }

    /// `hdrhistogram`'s update of the extremes, for a value outside them.
    #[cold]
    #[inline(never)]
    pub(crate) fn update_extremes(&mut self, value: u64) {
        if value > self.max_value() {
            self.update_max(value);
        }
        if value < self.min_non_zero_value && value != 0 {
            self.update_min(value);
        }
    }

    pub(crate) fn reset_max(&mut self, max: u64) {
        self.set_max_value(max | self.unit_magnitude_mask());
    }

    pub(crate) fn reset_min(&mut self, min: u64) {
        let min = if min == u64::MAX {
            min
        } else {
            min & !self.unit_magnitude_mask()
        };
        self.set_min_non_zero_value(min);
    }
}
