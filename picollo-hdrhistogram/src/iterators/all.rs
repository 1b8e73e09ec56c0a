//! The picker of [`Histogram::iter_all`]: every index once.

use crate::iterators::{HistogramIterator, PickMetadata, PickyIterator};
use crate::{Counter, Histogram};

/// Picks every index once, with a count or not.
pub struct Iter {
    visited: Option<usize>,
}

impl Iter {
    /// A walk over every bucket of `hist`.
    pub fn new<T: Counter>(hist: &Histogram<T>) -> HistogramIterator<'_, T, Iter> {
        HistogramIterator::new(hist, Iter { visited: None })
    }
}

impl<T: Counter> PickyIterator<T> for Iter {
    fn pick(&mut self, index: usize, _: u64, _: T) -> Option<PickMetadata> {
        if self.visited == Some(index) {
            return None;
        }
        self.visited = Some(index);
        Some(PickMetadata::new(None, None))
    }

    fn more(&mut self, _: usize) -> bool {
        true
    }
}
