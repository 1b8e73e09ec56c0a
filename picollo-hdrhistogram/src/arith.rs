//! Copies, resets and arithmetic between histograms, with their operators.

use core::borrow::Borrow;
use core::ops::{Add, AddAssign, Sub, SubAssign};

use crate::{
    AdditionError, Counter, Histogram, RecordError, SubtractionError, ORIGINAL_MAX, ORIGINAL_MIN,
};

impl<T: Counter> Histogram<T> {
    // --- Copies, resets and arithmetic between histograms.

    /// A copy with each recorded value corrected for coordinated omission as by
    /// [`Histogram::record_correct`] with `interval`.
    pub fn clone_correct(&self, interval: u64) -> Histogram<T> {
        let mut h = Histogram::new_from(self);
        for v in self.iter_recorded() {
            // Same configuration: every value of `self` fits; an auto-resized copy grows.
            let _ = h.record_n_correct(v.value_iterated_to(), v.count_at_value(), interval);
        }
        h
    }

    /// Replaces the contents with `source`'s.
    pub fn set_to<B: Borrow<Histogram<T>>>(&mut self, source: B) -> Result<(), AdditionError> {
        self.reset();
        self.add(source.borrow())
    }

    /// Replaces the contents with `source`'s, corrected for coordinated omission with
    /// `interval` (see [`Histogram::record_correct`]).
    pub fn set_to_corrected<B: Borrow<Histogram<T>>>(
        &mut self,
        source: B,
        interval: u64,
    ) -> Result<(), RecordError> {
        self.reset();
        self.add_correct(source, interval)
    }

    /// Adds the counts of `source`. Fails when `source` holds values above this histogram's
    /// range and auto-resize is off.
    pub fn add<B: Borrow<Histogram<T>>>(&mut self, source: B) -> Result<(), AdditionError> {
        let source = source.borrow();
        if source.is_empty() {
            return Ok(());
        }
        let top = self.highest_equivalent(self.value_for(self.last_index()));
        if top < source.max() {
            if !self.auto_resize {
                return Err(AdditionError::OtherAddendValueExceedsRange);
            }
            self.resize(source.max())
                .map_err(|_| AdditionError::ResizeFailedUsizeTypeTooSmall)?;
        }
        let same_buckets = self.bucket_count == source.bucket_count
            && self.sub_bucket_half_count_magnitude == source.sub_bucket_half_count_magnitude
            && self.unit_magnitude == source.unit_magnitude;
        if same_buckets && self.is_empty() {
            // The same index space and nothing here yet: a copy.
            self.counts.copy_from_slice(&source.counts);
            self.total_count = source.total_count;
            self.min_non_zero_value = source.min_non_zero_value;
            self.extremes_span = source.extremes_span;
        } else if same_buckets {
            let mut added: u64 = 0;
            for (mine, &theirs) in self.counts.iter_mut().zip(&source.counts) {
                if theirs != T::zero() {
                    *mine = mine.saturating_add(theirs);
                    added = added.saturating_add(theirs.as_u64());
                }
            }
            self.total_count = self.total_count.saturating_add(added);
            let max = source.max();
            if max > self.max() {
                self.update_max(max);
            }
            let min = source.min_nz();
            if min < self.min_nz() {
                self.update_min(min);
            }
        } else {
            // Other buckets: each count goes in at its bucket's lowest value, the maximum's
            // bucket first, even with a zero count (its value sets the maximum, as in
            // `hdrhistogram`, whose maximum can stand above the last count after
            // `record_n(v, 0)`), then the others.
            let max_index = source.index_of(source.max());
            let max_count = source.count_at_index(max_index).unwrap_or_else(T::zero);
            self.record_n(source.value_for(max_index), max_count)
                .map_err(|_| AdditionError::OtherAddendValueExceedsRange)?;
            for index in 0..max_index.min(source.counts.len()) {
                match source.count_at_index(index) {
                    Some(c) if c != T::zero() => self
                        .record_n(source.value_for(index), c)
                        .map_err(|_| AdditionError::OtherAddendValueExceedsRange)?,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Adds the counts of `source`, each value corrected for coordinated omission with
    /// `interval` (see [`Histogram::record_correct`]).
    pub fn add_correct<B: Borrow<Histogram<T>>>(
        &mut self,
        source: B,
        interval: u64,
    ) -> Result<(), RecordError> {
        for v in source.borrow().iter_recorded() {
            self.record_n_correct(v.value_iterated_to(), v.count_at_value(), interval)?;
        }
        Ok(())
    }

    /// Subtracts the counts of `subtrahend`. Fails, changing nothing it had not changed yet,
    /// when `subtrahend` has values above this histogram's range or a count above this one's.
    pub fn subtract<B: Borrow<Histogram<T>>>(
        &mut self,
        subtrahend: B,
    ) -> Result<(), SubtractionError> {
        let subtrahend = subtrahend.borrow();
        if subtrahend.is_empty() {
            return Ok(());
        }
        let top = self.highest_equivalent(self.value_for(self.last_index()));
        if top < self.highest_equivalent(subtrahend.max()) {
            return Err(SubtractionError::SubtrahendValueExceedsMinuendRange);
        }
        let old_min_highest_equivalent = self.highest_equivalent(self.min());
        let old_max_lowest_equivalent = self.lowest_equivalent(self.max());
        // A saturated total cannot be decremented: recount it.
        let mut needs_restat = self.total_count == u64::MAX;
        for (index, &theirs) in subtrahend.counts.iter().enumerate() {
            if theirs == T::zero() {
                continue;
            }
            let value = subtrahend.value_for(index);
            let mine = self.index_of(value);
            let slot = self
                .counts
                .get_mut(mine)
                .ok_or(SubtractionError::SubtrahendValueExceedsMinuendRange)?;
            *slot = slot
                .checked_sub(&theirs)
                .ok_or(SubtractionError::SubtrahendCountExceedsMinuendCount)?;
            // The minimum's or the maximum's bucket may have emptied.
            if value <= old_min_highest_equivalent || value >= old_max_lowest_equivalent {
                needs_restat = true;
            }
            if !needs_restat {
                self.total_count = self.total_count.saturating_sub(theirs.as_u64());
            }
        }
        if needs_restat {
            self.restat(self.counts.len());
        }
        Ok(())
    }

    /// Sets every count to zero (the total too). The minimum and maximum stay as they were;
    /// [`Histogram::reset`] clears them as well.
    pub fn clear(&mut self) {
        self.counts.fill(T::zero());
        self.total_count = 0;
    }

    /// Empties the histogram: counts, total, minimum and maximum.
    pub fn reset(&mut self) {
        self.clear();
        self.reset_max(ORIGINAL_MAX);
        self.reset_min(ORIGINAL_MIN);
    }

    /// Turns auto-resize on or off.
    pub fn auto(&mut self, enabled: bool) {
        self.auto_resize = enabled;
    }
}

impl<T: Counter> AddAssign<&Histogram<T>> for Histogram<T> {
    /// [`Histogram::add`]; panics where it fails.
    fn add_assign(&mut self, source: &Histogram<T>) {
        self.add(source).unwrap();
    }
}

impl<T: Counter> AddAssign<Histogram<T>> for Histogram<T> {
    /// [`Histogram::add`]; panics where it fails.
    fn add_assign(&mut self, source: Histogram<T>) {
        self.add(&source).unwrap();
    }
}

impl<T: Counter> Add<Histogram<T>> for Histogram<T> {
    type Output = Histogram<T>;
    /// [`Histogram::add`]; panics where it fails.
    fn add(mut self, rhs: Histogram<T>) -> Self::Output {
        self += rhs;
        self
    }
}

impl<T: Counter> Add<&Histogram<T>> for Histogram<T> {
    type Output = Histogram<T>;
    /// [`Histogram::add`]; panics where it fails.
    fn add(mut self, rhs: &Histogram<T>) -> Self::Output {
        self += rhs;
        self
    }
}

impl<T: Counter> core::iter::Sum for Histogram<T> {
    /// The sum of the histograms (an empty auto-resizing 3-digit histogram for none); panics
    /// where [`Histogram::add`] fails.
    fn sum<I: Iterator<Item = Self>>(mut iter: I) -> Self {
        match iter.next() {
            Some(mut first) => {
                for h in iter {
                    first += h;
                }
                first
            }
            None => Histogram::new(3).expect("3 significant digits are always valid"),
        }
    }
}

impl<T: Counter> SubAssign<&Histogram<T>> for Histogram<T> {
    /// [`Histogram::subtract`]; panics where it fails.
    fn sub_assign(&mut self, other: &Histogram<T>) {
        self.subtract(other).unwrap();
    }
}

impl<T: Counter> SubAssign<Histogram<T>> for Histogram<T> {
    /// [`Histogram::subtract`]; panics where it fails.
    fn sub_assign(&mut self, other: Histogram<T>) {
        self.subtract(&other).unwrap();
    }
}

impl<T: Counter> Sub<Histogram<T>> for Histogram<T> {
    type Output = Histogram<T>;
    /// [`Histogram::subtract`]; panics where it fails.
    fn sub(mut self, rhs: Histogram<T>) -> Self::Output {
        self -= rhs;
        self
    }
}

impl<T: Counter> Sub<&Histogram<T>> for Histogram<T> {
    type Output = Histogram<T>;
    /// [`Histogram::subtract`]; panics where it fails.
    fn sub(mut self, rhs: &Histogram<T>) -> Self::Output {
        self -= rhs;
        self
    }
}

impl<T: Counter> AddAssign<u64> for Histogram<T> {
    /// [`Histogram::record`]; panics where it fails.
    fn add_assign(&mut self, value: u64) {
        self.record(value).unwrap();
    }
}

impl<T: Counter, F: Counter> PartialEq<Histogram<F>> for Histogram<T>
where
    T: PartialEq<F>,
{
    /// The same lowest discernible value and precision, total, extremes and counts (a longer
    /// `other` with zeros past this one's end is equal).
    fn eq(&self, other: &Histogram<F>) -> bool {
        self.lowest_discernible_value == other.lowest_discernible_value
            && self.significant_value_digits == other.significant_value_digits
            && self.total_count == other.total_count
            && self.max() == other.max()
            && self.min_nz() == other.min_nz()
            && self.counts.len() <= other.counts.len()
            && self.counts.iter().zip(&other.counts).all(|(a, b)| a == b)
    }
}
