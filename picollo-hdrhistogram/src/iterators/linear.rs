//! The picker of [`Histogram::iter_linear`]: steps of a fixed number of values.

use crate::iterators::{HistogramIterator, PickMetadata, PickyIterator};
use crate::{Counter, Histogram};

/// Picks once per step of `value_units_per_bucket` values.
pub struct Iter<'a, T: 'a + Counter> {
    hist: &'a Histogram<T>,
    value_units_per_bucket: u64,
    /// The highest value of the current step.
    step_highest: u64,
    /// The lowest value of the bucket holding `step_highest`.
    step_lowest: u64,
}

impl<'a, T: 'a + Counter> Iter<'a, T> {
    /// A walk over `hist` in steps of `value_units_per_bucket` values. Panics when it is 0.
    pub fn new(
        hist: &'a Histogram<T>,
        value_units_per_bucket: u64,
    ) -> HistogramIterator<'a, T, Iter<'a, T>> {
        assert!(
            value_units_per_bucket > 0,
            "value_units_per_bucket must be > 0"
        );
        HistogramIterator::new(
            hist,
            Iter {
                hist,
                value_units_per_bucket,
                step_highest: value_units_per_bucket - 1,
                step_lowest: hist.lowest_equivalent(value_units_per_bucket - 1),
            },
        )
    }
}

impl<'a, T: 'a + Counter> PickyIterator<T> for Iter<'a, T> {
    fn pick(&mut self, index: usize, _: u64, _: T) -> Option<PickMetadata> {
        let value = self.hist.value_for(index);
        if value < self.step_lowest && index != self.hist.last_index() {
            return None;
        }
        let metadata = PickMetadata::new(None, Some(self.step_highest));
        self.step_highest = self
            .step_highest
            .saturating_add(self.value_units_per_bucket);
        self.step_lowest = self.hist.lowest_equivalent(self.step_highest);
        Some(metadata)
    }

    fn more(&mut self, index_to_pick: usize) -> bool {
        // Go on while the next step ends before the next bucket: the walk stops once it is
        // past the last bucket with a count, not on reaching it.
        self.step_highest < self.hist.value_for(index_to_pick.saturating_add(1))
    }
}
