//! The histogram's iterators: one walk over the counts array ([`HistogramIterator`]) that asks
//! a picker ([`PickyIterator`]) at each index whether to yield a value there.
//!
//! The pickers of [`Histogram`]'s `iter_*` methods are in the submodules. A picker of one's
//! own implements [`PickyIterator`] and is walked by [`HistogramIterator::new`] (both public
//! here, unlike in `hdrhistogram`, where [`PickMetadata`] could not be built outside the
//! crate):
//!
//! ```
//! use picollo_hdrhistogram::iterators::{HistogramIterator, PickMetadata, PickyIterator};
//! use picollo_hdrhistogram::{Counter, Histogram};
//!
//! /// Every bucket whose count is at least `min` (the walk offers an index again after a
//! /// pick, so the picker remembers the last one it took).
//! struct AtLeast {
//!     min: u64,
//!     last: Option<usize>,
//! }
//!
//! impl<T: Counter> PickyIterator<T> for AtLeast {
//!     fn pick(&mut self, index: usize, _: u64, count: T) -> Option<PickMetadata> {
//!         if count.as_u64() < self.min || self.last == Some(index) {
//!             return None;
//!         }
//!         self.last = Some(index);
//!         Some(PickMetadata::new(None, None))
//!     }
//!     fn more(&mut self, _: usize) -> bool {
//!         false
//!     }
//! }
//!
//! let mut h = Histogram::<u64>::new(3).unwrap();
//! h.record_n(10, 5).unwrap();
//! h.record_n(20, 1).unwrap();
//! let busy: Vec<u64> =
//!     HistogramIterator::new(&h, AtLeast { min: 2, last: None }).map(|v| v.value_iterated_to()).collect();
//! assert_eq!(busy, [10]);
//! ```

use crate::{Counter, Histogram};

pub mod all;
pub mod linear;
pub mod log;
pub mod quantile;
pub mod recorded;

/// What a picker says about a value it picks: the quantile and the value iterated to, where
/// they are not the index's own (`None` takes the index's running quantile and its bucket's
/// highest value).
pub struct PickMetadata {
    quantile_iterated_to: Option<f64>,
    value_iterated_to: Option<u64>,
}

impl PickMetadata {
    /// The metadata of a pick: the quantile and value iterated to, or `None` for the index's
    /// own.
    pub fn new(quantile_iterated_to: Option<f64>, value_iterated_to: Option<u64>) -> PickMetadata {
        PickMetadata {
            quantile_iterated_to,
            value_iterated_to,
        }
    }
}

/// The picking rule the linear and logarithmic pickers share: pick at `index` once its bucket
/// reaches the current step's lowest bucket (or at the last index), reporting the step's
/// highest value; `next_step_highest` then gives the next step's highest value.
fn pick_step<T: Counter>(
    hist: &Histogram<T>,
    index: usize,
    step: &mut (u64, u64),
    next_step_highest: impl FnOnce() -> u64,
) -> Option<PickMetadata> {
    let (lowest, highest) = *step;
    if hist.value_for(index) < lowest && index != hist.last_index() {
        return None;
    }
    let next = next_step_highest();
    *step = (hist.lowest_equivalent(next), next);
    Some(PickMetadata::new(None, Some(highest)))
}

/// Decides where a [`HistogramIterator`] yields.
pub trait PickyIterator<T: Counter> {
    /// Called at each index, again after each pick at the same index (so a picker may yield
    /// several values from one bucket); `Some` yields a value.
    fn pick(
        &mut self,
        index: usize,
        total_count_to_index: u64,
        count_at_index: T,
    ) -> Option<PickMetadata>;

    /// Called past the last non-zero count: whether to go on walking (empty) indexes.
    fn more(&mut self, index_to_pick: usize) -> bool;
}

/// A walk over a histogram's counts, yielding where its picker `P` picks.
pub struct HistogramIterator<'a, T: 'a + Counter, P: PickyIterator<T>> {
    hist: &'a Histogram<T>,
    total_count_to_index: u64,
    count_since_last_iteration: u64,
    count_at_index: T,
    current_index: usize,
    last_picked_index: Option<usize>,
    max_value_index: usize,
    /// Whether the count at `current_index` is still to be added to the running totals.
    fresh: bool,
    ended: bool,
    picker: P,
}

/// One value a [`HistogramIterator`] yields.
#[derive(Debug, PartialEq)]
pub struct IterationValue<T: Counter> {
    value_iterated_to: u64,
    quantile: f64,
    quantile_iterated_to: f64,
    count_at_value: T,
    count_since_last_iteration: u64,
}

impl<T: Counter> IterationValue<T> {
    /// A value as an iterator yields it.
    pub fn new(
        value_iterated_to: u64,
        quantile: f64,
        quantile_iterated_to: f64,
        count_at_value: T,
        count_since_last_iteration: u64,
    ) -> IterationValue<T> {
        IterationValue {
            value_iterated_to,
            quantile,
            quantile_iterated_to,
            count_at_value,
            count_since_last_iteration,
        }
    }

    /// The value the iteration reached: for most pickers the highest value of the bucket.
    pub fn value_iterated_to(&self) -> u64 {
        self.value_iterated_to
    }

    /// [`IterationValue::quantile`] in percent.
    pub fn percentile(&self) -> f64 {
        self.quantile * 100.0
    }

    /// The fraction of all samples at or below this bucket.
    pub fn quantile(&self) -> f64 {
        self.quantile
    }

    /// The quantile the iteration reached (the quantile iterator's step; otherwise
    /// [`IterationValue::quantile`]).
    pub fn quantile_iterated_to(&self) -> f64 {
        self.quantile_iterated_to
    }

    /// The count of this bucket.
    pub fn count_at_value(&self) -> T {
        self.count_at_value
    }

    /// The samples counted since the value yielded before this one.
    pub fn count_since_last_iteration(&self) -> u64 {
        self.count_since_last_iteration
    }
}

impl<'a, T: Counter, P: PickyIterator<T>> HistogramIterator<'a, T, P> {
    /// A walk over `h` yielding where `picker` picks.
    pub fn new(h: &'a Histogram<T>, picker: P) -> HistogramIterator<'a, T, P> {
        HistogramIterator {
            hist: h,
            total_count_to_index: 0,
            count_since_last_iteration: 0,
            count_at_index: T::zero(),
            current_index: 0,
            last_picked_index: None,
            max_value_index: h.index_for(h.max()).unwrap_or(0),
            fresh: true,
            ended: false,
            picker,
        }
    }
}

impl<'a, T: Counter, P: PickyIterator<T>> Iterator for HistogramIterator<'a, T, P> {
    type Item = IterationValue<T>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // Walk the indexes up to the last non-zero count, then on while the picker wants
        // `more`; at each index, the picker may pick several times before the walk moves on.
        while !self.ended {
            if self.current_index == self.hist.distinct_values() {
                self.ended = true;
                return None;
            }
            if self.last_picked_index >= Some(self.max_value_index) {
                if !self.picker.more(self.current_index) {
                    self.ended = true;
                    return None;
                }
            } else if self.fresh {
                self.count_at_index = self
                    .hist
                    .count_at_index(self.current_index)
                    .unwrap_or_else(T::zero);
                let count = self.count_at_index.as_u64();
                self.total_count_to_index = self.total_count_to_index.saturating_add(count);
                self.count_since_last_iteration =
                    self.count_since_last_iteration.saturating_add(count);
                self.fresh = false;
            }
            if let Some(metadata) = self.picker.pick(
                self.current_index,
                self.total_count_to_index,
                self.count_at_index,
            ) {
                let quantile = self.total_count_to_index as f64 / self.hist.len() as f64;
                let value = IterationValue {
                    value_iterated_to: metadata
                        .value_iterated_to
                        .unwrap_or_else(|| self.hist.highest_at_index(self.current_index)),
                    quantile,
                    quantile_iterated_to: metadata.quantile_iterated_to.unwrap_or(quantile),
                    // Read again: past the last recorded index the walk does not update
                    // `count_at_index`.
                    count_at_value: self
                        .hist
                        .count_at_index(self.current_index)
                        .unwrap_or_else(T::zero),
                    count_since_last_iteration: self.count_since_last_iteration,
                };
                // The index stays: the picker sees it again and may pick once more.
                self.count_since_last_iteration = 0;
                self.last_picked_index = Some(self.current_index);
                return Some(value);
            }
            self.current_index += 1;
            self.fresh = true;
        }
        None
    }
}
