//! The picker of [`Histogram::iter_quantiles`]: quantile steps that halve toward 100%.

use crate::iterators::{HistogramIterator, PickMetadata, PickyIterator};
use crate::{math, Counter, Histogram};

/// Picks at quantile steps: `ticks_per_half_distance` steps from 0 to 50%, as many from 50%
/// to 75%, from 75% to 87.5%, and so on, then once at 100%.
pub struct Iter<'a, T: 'a + Counter> {
    hist: &'a Histogram<T>,
    ticks_per_half_distance: u32,
    quantile_to_iterate_to: f64,
    reached_end: bool,
}

impl<'a, T: 'a + Counter> Iter<'a, T> {
    /// A walk over `hist` at quantile steps. Panics when `ticks_per_half_distance` is 0.
    pub fn new(
        hist: &'a Histogram<T>,
        ticks_per_half_distance: u32,
    ) -> HistogramIterator<'a, T, Iter<'a, T>> {
        assert!(
            ticks_per_half_distance > 0,
            "Ticks per half distance must be > 0"
        );
        HistogramIterator::new(
            hist,
            Iter {
                hist,
                ticks_per_half_distance,
                quantile_to_iterate_to: 0.0,
                reached_end: false,
            },
        )
    }
}

impl<'a, T: 'a + Counter> PickyIterator<T> for Iter<'a, T> {
    #[allow(clippy::float_cmp)]
    fn pick(&mut self, _: usize, running_total: u64, count_at_index: T) -> Option<PickMetadata> {
        if count_at_index == T::zero() {
            return None;
        }
        let value_quantile = running_total as f64 / self.hist.len() as f64;
        if value_quantile < self.quantile_to_iterate_to || self.reached_end {
            // Not there yet, or 100% was yielded (a saturated total can reach it before the
            // last bucket, where `more` would stop the walk).
            return None;
        }
        if self.quantile_to_iterate_to == 1.0 {
            // The last pick, at 100%.
            self.reached_end = true;
            return Some(PickMetadata::new(Some(1.0), None));
        }
        // Ticks of a fixed size within each half of the remaining distance to 100%: after `h`
        // halvings the whole range holds `ticks · 2^(h+1)` ticks.
        let halvings = math::log2(1.0 / (1.0 - self.quantile_to_iterate_to)) as u32;
        let total_ticks = 1u64
            .checked_shl(halvings + 1)
            .and_then(|slices| u64::from(self.ticks_per_half_distance).checked_mul(slices));
        let metadata = PickMetadata::new(Some(self.quantile_to_iterate_to), None);
        let next = match total_ticks {
            Some(ticks) => self.quantile_to_iterate_to + 1.0 / ticks as f64,
            // Ticks past `u64`: steps too small to count; go to 100%.
            None => 1.0,
        };
        // A step too small to move the quantile below 1.0 also goes to 100%.
        self.quantile_to_iterate_to = if next == self.quantile_to_iterate_to {
            1.0
        } else {
            next
        };
        Some(metadata)
    }

    fn more(&mut self, _: usize) -> bool {
        if self.reached_end {
            return false;
        }
        // The last bucket was reached below 100% of the iteration: one more pick, at 100%.
        self.quantile_to_iterate_to = 1.0;
        true
    }
}
