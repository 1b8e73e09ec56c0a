//! The picker of [`Histogram::iter_log`]: steps that grow by a factor.

use crate::iterators::{pick_step, HistogramIterator, PickMetadata, PickyIterator};
use crate::{Counter, Histogram};

/// Picks once per step, each step `log_base` times as wide as the one before.
pub struct Iter<'a, T: 'a + Counter> {
    hist: &'a Histogram<T>,
    /// Where the next step ends (exclusive), as a float so that the factor compounds.
    next_level: f64,
    log_base: f64,
    /// The current step: the lowest value of the bucket holding its highest value, and that
    /// highest value.
    step: (u64, u64),
}

impl<'a, T: 'a + Counter> Iter<'a, T> {
    /// A walk over `hist` whose first step is `value_units_in_first_bucket` values wide and
    /// each next `log_base` times wider. Panics when the first width is 0 or `log_base` is at
    /// most 1.
    pub fn new(
        hist: &'a Histogram<T>,
        value_units_in_first_bucket: u64,
        log_base: f64,
    ) -> HistogramIterator<'a, T, Iter<'a, T>> {
        assert!(
            value_units_in_first_bucket > 0,
            "value_units_per_bucket must be > 0"
        );
        assert!(log_base > 1.0, "log_base must be > 1.0");
        let highest = value_units_in_first_bucket - 1;
        HistogramIterator::new(
            hist,
            Iter {
                hist,
                log_base,
                next_level: value_units_in_first_bucket as f64,
                step: (hist.lowest_equivalent(highest), highest),
            },
        )
    }
}

impl<'a, T: 'a + Counter> PickyIterator<T> for Iter<'a, T> {
    fn pick(&mut self, index: usize, _: u64, _: T) -> Option<PickMetadata> {
        let (next_level, log_base) = (&mut self.next_level, self.log_base);
        pick_step(self.hist, index, &mut self.step, || {
            *next_level *= log_base;
            // The level starts at 1 or more and only grows.
            (*next_level as u64).saturating_sub(1)
        })
    }

    fn more(&mut self, index_to_pick: usize) -> bool {
        self.hist.lowest_equivalent(self.next_level as u64) < self.hist.value_for(index_to_pick)
    }
}
