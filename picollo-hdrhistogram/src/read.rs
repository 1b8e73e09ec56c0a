//! Reads: statistics, quantiles, counts, and the iterators.

use crate::iterators::{self, HistogramIterator};
use crate::{math, Counter, Histogram, ORIGINAL_MAX, ORIGINAL_MIN};

impl<T: Counter> Histogram<T> {
    // --- Iterators.

    /// The values at quantiles that halve the distance to 100% in steps, with
    /// `ticks_per_half_distance` steps per half distance (`hdrhistogram`'s percentile
    /// iteration). Panics when `ticks_per_half_distance` is 0.
    pub fn iter_quantiles(
        &self,
        ticks_per_half_distance: u32,
    ) -> HistogramIterator<'_, T, iterators::quantile::Iter<'_, T>> {
        iterators::quantile::Iter::new(self, ticks_per_half_distance)
    }

    /// Steps of `step` values each, up to the last recorded value. Panics when `step` is 0.
    pub fn iter_linear(
        &self,
        step: u64,
    ) -> HistogramIterator<'_, T, iterators::linear::Iter<'_, T>> {
        iterators::linear::Iter::new(self, step)
    }

    /// Steps growing by the factor `exp`, the first `start` values wide. Panics when `start`
    /// is 0 or `exp` is at most 1.
    pub fn iter_log(
        &self,
        start: u64,
        exp: f64,
    ) -> HistogramIterator<'_, T, iterators::log::Iter<'_, T>> {
        iterators::log::Iter::new(self, start, exp)
    }

    /// Every bucket with a non-zero count, in value order.
    pub fn iter_recorded(&self) -> HistogramIterator<'_, T, iterators::recorded::Iter> {
        iterators::recorded::Iter::new(self)
    }

    /// Every bucket, with a count or not, in value order.
    pub fn iter_all(&self) -> HistogramIterator<'_, T, iterators::all::Iter> {
        iterators::all::Iter::new(self)
    }

    // --- Statistics.

    /// The lowest recorded value (its bucket's lowest value), 0 when empty.
    pub fn min(&self) -> u64 {
        if self.total_count == 0 || self.counts.first().is_some_and(|&c| c != T::zero()) {
            0
        } else {
            self.min_nz()
        }
    }

    /// The highest recorded value (its bucket's highest value), 0 when empty.
    pub fn max(&self) -> u64 {
        let max_value = self.max_value();
        if max_value == ORIGINAL_MAX {
            ORIGINAL_MAX
        } else {
            self.highest_equivalent(max_value)
        }
    }

    /// The lowest recorded value above the first unit (its bucket's lowest value), `u64::MAX`
    /// when there is none.
    pub fn min_nz(&self) -> u64 {
        if self.min_non_zero_value == ORIGINAL_MIN {
            ORIGINAL_MIN
        } else {
            self.lowest_equivalent(self.min_non_zero_value)
        }
    }

    /// Whether two values fall into the same bucket.
    pub fn equivalent(&self, value1: u64, value2: u64) -> bool {
        self.lowest_equivalent(value1) == self.lowest_equivalent(value2)
    }

    /// The mean of the recorded values, each taken at its bucket's middle; 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.total_count == 0 {
            return 0.0;
        }
        let total = self.total_count as f64;
        self.nonzero().fold(0.0_f64, |sum, (index, count)| {
            sum + self.median_equivalent(self.value_for(index)) as f64 * count.as_f64() / total
        })
    }

    /// The standard deviation of the recorded values, each taken at its bucket's middle; 0
    /// when empty.
    pub fn stdev(&self) -> f64 {
        if self.total_count == 0 {
            return 0.0;
        }
        let mean = self.mean();
        let sum = self.nonzero().fold(0.0_f64, |sum, (index, count)| {
            let deviation = self.median_equivalent(self.value_for(index)) as f64 - mean;
            sum + deviation * deviation * count.as_u64() as f64
        });
        math::sqrt(sum / self.total_count as f64)
    }

    /// The non-zero counts with their indexes, in index order.
    pub(crate) fn nonzero(&self) -> impl Iterator<Item = (usize, T)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c != T::zero())
            .map(|(i, &c)| (i, c))
    }

    /// The value at `percentile` (0 to 100): [`Histogram::value_at_quantile`] of
    /// `percentile / 100`.
    pub fn value_at_percentile(&self, percentile: f64) -> u64 {
        self.value_at_quantile(percentile / 100.0)
    }

    /// The value at `quantile` (0 to 1, above 1 taken as 1): the highest value of the first
    /// bucket where the running count reaches `ceil(quantile · len)` (at least 1), or at
    /// quantile 0 that bucket's lowest value; 0 when empty.
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        let quantile = if quantile > 1.0 { 1.0 } else { quantile };
        let target = (math::ceil(quantile * self.total_count as f64) as u64).max(1);
        match self.reaching().index_reaching(target) {
            Some(index) => self.quantile_value(index, quantile),
            None => 0,
        }
    }

    /// The values at `quantiles`, in one pass over the counts; the quantiles must come in
    /// ascending order (the iterator ends at the first that does not).
    pub fn value_at_quantiles<'a, I>(
        &'a self,
        quantiles: I,
    ) -> impl Iterator<Item = u64> + use<'a, I, T>
    where
        I: IntoIterator<Item = f64>,
    {
        let mut quantiles = quantiles.into_iter();
        let mut reaching = self.reaching();
        let mut previous: Option<f64> = None;
        core::iter::from_fn(move || {
            let quantile = quantiles.next()?;
            if previous.is_some_and(|p| p > quantile) {
                return None;
            }
            let target =
                (math::ceil(quantile.clamp(0.0, 1.0) * self.total_count as f64) as u64).max(1);
            // The target is at most the total, so only an empty histogram, or one whose
            // saturated counts sum to less than its total, runs out: the value there is 0,
            // and, as in `hdrhistogram`, such a quantile is not the previous one for the order
            // check.
            Some(match reaching.index_reaching(target) {
                Some(index) => {
                    previous = Some(quantile);
                    self.quantile_value(index, quantile)
                }
                None => 0,
            })
        })
    }

    /// A walk from the first count toward running-count targets.
    fn reaching(&self) -> Reaching<'_, T> {
        Reaching {
            counts: &self.counts,
            start: 0,
            before: 0,
            // The counts sum to at most the total, so below a saturated total no sum overflows.
            saturated: self.total_count == u64::MAX,
        }
    }

    /// The value reported for `quantile` when its count is reached at `index`: the bucket's
    /// highest value, or its lowest at quantile 0.
    fn quantile_value(&self, index: usize, quantile: f64) -> u64 {
        let value = self.value_for(index);
        if quantile == 0.0 {
            self.lowest_equivalent(value)
        } else {
            self.highest_equivalent(value)
        }
    }

    /// The values at `percentiles` (0 to 100, ascending): [`Histogram::value_at_quantiles`].
    pub fn value_at_percentiles<'a, I>(
        &'a self,
        percentiles: I,
    ) -> impl Iterator<Item = u64> + use<'a, I, T>
    where
        I: IntoIterator<Item = f64>,
    {
        self.value_at_quantiles(percentiles.into_iter().map(|p| p / 100.0))
    }

    /// The percentage of samples at or below `value`'s bucket (100 when empty).
    pub fn percentile_below(&self, value: u64) -> f64 {
        self.quantile_below(value) * 100.0
    }

    /// The fraction of samples at or below `value`'s bucket (1 when empty).
    pub fn quantile_below(&self, value: u64) -> f64 {
        if self.total_count == 0 {
            return 1.0;
        }
        let target = self.index_for_or_last(value);
        let end = target + 1;
        // Sum the shorter side.
        let (slice, lower) = if target < self.counts.len() / 2 {
            (&self.counts[..end], true)
        } else {
            (&self.counts[end..], false)
        };
        let counts = slice.iter().map(Counter::as_u64);
        let sum = if self.total_count < u64::MAX {
            counts.sum::<u64>()
        } else {
            counts.fold(0u64, u64::saturating_add)
        };
        let below = if lower { sum } else { self.total_count - sum };
        below as f64 / self.total_count as f64
    }

    /// The number of samples in the buckets from `low`'s to `high`'s, both included.
    pub fn count_between(&self, low: u64, high: u64) -> u64 {
        let low = self.index_for_or_last(low);
        let high = self.index_for_or_last(high);
        self.counts
            .get(low..=high)
            .unwrap_or(&[])
            .iter()
            .fold(0u64, |sum, c| sum.saturating_add(c.as_u64()))
    }

    /// The count of `value`'s bucket (the last bucket's for values past the range).
    pub fn count_at(&self, value: u64) -> T {
        self.counts[self.index_for_or_last(value)]
    }
}

/// Counts summed at a time by [`Reaching`]: 64 (vector adds: 2.4x fewer instructions than 8
/// at a time, `benches/RESULTS.md`, block `facade-iai`).
const CHUNK: usize = 64;

/// A walk over the counts toward ascending running-count targets (`value_at_quantile`'s one,
/// `value_at_quantiles`' several in one pass): whole chunks of [`CHUNK`] counts summed at a
/// time, then count by count in the chunk that reaches the target.
struct Reaching<'a, T> {
    counts: &'a [T],
    /// The index where the next search starts: the start of the chunk where the last target
    /// was reached (the next target, at least as high, is reached there or later).
    start: usize,
    /// The sum of the counts before `start`.
    before: u64,
    /// The histogram's total saturated: the counts' sum may pass `u64::MAX`, so the walk
    /// sums saturating, count by count (a chunk's sum could overflow).
    saturated: bool,
}

impl<T: Counter> Reaching<'_, T> {
    /// The first index where the running count reaches `target`; `None` when all the counts
    /// sum to less. Targets must not decrease between calls.
    fn index_reaching(&mut self, target: u64) -> Option<usize> {
        if self.saturated {
            return self.index_reaching_saturating(target);
        }
        let rest = &self.counts[self.start..];
        let (chunks, tail) = rest.as_chunks::<CHUNK>();
        for chunk in chunks {
            let sum: u64 = chunk.iter().map(Counter::as_u64).sum();
            if self.before + sum >= target {
                return Some(self.start + position_reaching(chunk, self.before, target));
            }
            self.before += sum;
            self.start += CHUNK;
        }
        let sum: u64 = tail.iter().map(Counter::as_u64).sum();
        if self.before + sum >= target {
            return Some(self.start + position_reaching(tail, self.before, target));
        }
        None
    }

    /// [`Reaching::index_reaching`] with saturating sums, count by count.
    fn index_reaching_saturating(&mut self, target: u64) -> Option<usize> {
        for (index, count) in self.counts.iter().enumerate().skip(self.start) {
            let running = self.before.saturating_add(count.as_u64());
            if running >= target {
                return Some(index);
            }
            self.before = running;
            self.start = index + 1;
        }
        None
    }
}

/// The position in `chunk` where `running` plus the counts up to it reaches `target` (the
/// caller knows it does within the chunk). Out of line: inlined, its loads of the counts
/// would be shared with the chunk's sum and keep that sum from becoming vector adds.
#[inline(never)]
fn position_reaching<T: Counter>(chunk: &[T], mut running: u64, target: u64) -> usize {
    for (j, count) in chunk.iter().enumerate() {
        running += count.as_u64();
        if running >= target {
            return j;
        }
    }
    chunk.len().saturating_sub(1)
}
