//! The picker of [`Histogram::iter_linear`]: steps of a fixed number of values.

use crate::iterators::{pick_step, HistogramIterator, PickMetadata, PickyIterator};
use crate::{Counter, Histogram};

/// Picks once per step of `value_units_per_bucket` values.
pub struct Iter<'a, T: 'a + Counter> {
    hist: &'a Histogram<T>,
    value_units_per_bucket: u64,
    /// The current step: the lowest value of the bucket holding its highest value, and that
    /// highest value.
    step: (u64, u64),
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
        let highest = value_units_per_bucket - 1;
        HistogramIterator::new(
            hist,
            Iter {
                hist,
                value_units_per_bucket,
                step: (hist.lowest_equivalent(highest), highest),
            },
        )
    }
}

impl<'a, T: 'a + Counter> PickyIterator<T> for Iter<'a, T> {
    fn pick(&mut self, index: usize, _: u64, _: T) -> Option<PickMetadata> {
        // Saturating: where the next step's end would pass `u64::MAX`, `hdrhistogram` panics
        // (debug) or wraps to small values and walks on (release); here the walk ends there
        // (README, "Differences").
        let next = self.step.1.saturating_add(self.value_units_per_bucket);
        pick_step(self.hist, index, &mut self.step, || next)
    }

    fn more(&mut self, index_to_pick: usize) -> bool {
        // Go on while the next step ends before the next bucket: the walk stops once it is
        // past the last bucket with a count, not on reaching it.
        self.step.1 < self.hist.value_for(index_to_pick.saturating_add(1))
    }
}
