//! The picker of [`Histogram::iter_recorded`]: every index with a count, once.

use crate::iterators::{HistogramIterator, PickMetadata, PickyIterator};
use crate::{Counter, Histogram};

/// Picks every index with a non-zero count once.
pub struct Iter {
    visited: Option<usize>,
}

impl Iter {
    /// A walk over the recorded buckets of `hist`.
    pub fn new<T: Counter>(hist: &Histogram<T>) -> HistogramIterator<'_, T, Iter> {
        HistogramIterator::new(hist, Iter { visited: None })
    }
}

impl<T: Counter> PickyIterator<T> for Iter {
    fn pick(&mut self, index: usize, _: u64, count_at_index: T) -> Option<PickMetadata> {
        if count_at_index == T::zero() || self.visited == Some(index) {
            return None;
        }
        self.visited = Some(index);
        Some(PickMetadata::new(None, None))
    }

    fn more(&mut self, _: usize) -> bool {
        // Past the last count there is nothing recorded left.
        false
    }
}
