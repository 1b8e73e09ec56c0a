//! HdrHistogram's value iterations (linear, logarithmic, percentile ticks) over any
//! [`HistogramRead`], without allocation.
//!
//! Each yields [`IterationValue`]s, step for step as HdrHistogram Java 2.1 and the
//! `hdrhistogram` crate iterate. A linear or logarithmic step includes every bucket up to and
//! including the one holding the step's reporting level; once the highest recorded value has
//! been reported, the iteration goes on while the next step's level stays inside the bucket
//! the last step ended in (a bucket wider than the step is visited several times, the later
//! visits adding nothing: 100,007 steps of 1,000 µs up to a value of 100 s at 3 digits, not
//! 100,000).
//!
//! The recorded-values and all-values iterations of HdrHistogram are
//! [`ReadExt::recorded_buckets`](crate::ReadExt::recorded_buckets) and
//! [`ReadExt::buckets`](crate::ReadExt::buckets) (one [`Bucket`](crate::Bucket) per bucket of
//! the window: `highest` is Java's `getValueIteratedTo`, `count` its
//! `getCountAtValueIteratedTo` and `getCountAddedInThisIterationStep`, `cumulative` its
//! `getTotalCountToThisValue`).

use crate::read::histogram_read::HistogramRead;
use crate::read::{for_each_recorded, RecordedAhead};
use crate::{Layout, Window};

/// One report of an HdrHistogram-style iteration.
///
/// The fields are HdrHistogram's `HistogramIterationValue`, with its meanings: where a name
/// is the peer's, so is the meaning. The running total is [`IterationValue::total_count_to_value`]
/// (Java's `getTotalCountToThisValue`); [`IterationValue::count_at_value`] is the count of one
/// bucket, as in both peers (Java's `getCountAtValueIteratedTo`, the `hdrhistogram` crate's
/// `count_at_value`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IterationValue {
    /// The value this step reports at: the step's reporting level (linear and logarithmic
    /// steps), or the highest value of the bucket reached (percentile steps). Java's
    /// `getValueIteratedTo`, the crate's `value_iterated_to`.
    pub value_iterated_to: u64,
    /// The value the previous step reported at, 0 for the first step (Java's
    /// `getValueIteratedFrom`).
    pub value_iterated_from: u64,
    /// The percentile level the step was asked for (percentile iteration); otherwise the same
    /// as [`IterationValue::percentile`]. Java's `getPercentileLevelIteratedTo`.
    pub percentile_level_iterated_to: f64,
    /// The share of values at or below this step, in percent, computed as Java computes it,
    /// `100 · total_count_to_value / total` in `f64` (so that `percentile(p)` of this share
    /// reads back to this step's bucket). Java's `getPercentile`.
    pub percentile: f64,
    /// Values at or below this step: the running total (Java's `getTotalCountToThisValue`).
    /// Saturates at `u64::MAX`.
    pub total_count_to_value: u64,
    /// The count of the one bucket the step ended in: the bucket holding the reporting level
    /// (linear and logarithmic steps; 0 when that bucket is outside the window, the window's
    /// last bucket when the level is past it, as Java's last counts index), or the bucket
    /// reached (percentile steps). Java's `getCountAtValueIteratedTo`, the crate's
    /// `count_at_value`; not a running total.
    pub count_at_value: u64,
    /// Values added since the previous report (Java's `getCountAddedInThisIterationStep`, the
    /// crate's `count_since_last_iteration`). Saturates at `u64::MAX`, apart from the running
    /// total: a step after the running total saturated still gets its own count.
    pub count_added_in_this_step: u64,
}

/// State shared by the iterations: a forward walk over the stored buckets.
struct Walk<'a, H: ?Sized> {
    h: &'a H,
    layout: Layout,
    window: Window,
    /// Next storage index to consume.
    next: usize,
    cumulative: u64,
    /// Values consumed since the last report (kept apart from `cumulative`, which may have
    /// saturated).
    added: u64,
    /// The value the last report was at.
    reported_value: u64,
    total: u64,
    /// Logical index of the highest non-empty bucket.
    last_recorded: usize,
}

impl<'a, H: HistogramRead + ?Sized> Walk<'a, H> {
    fn new(h: &'a H) -> Self {
        let window = h.window();
        let mut total = 0u64;
        let mut last_recorded = window.first();
        for_each_recorded(h, |s, n| {
            total = total.saturating_add(n);
            last_recorded = window.first() + s;
        });
        Walk {
            h,
            layout: h.layout(),
            window,
            next: 0,
            cumulative: 0,
            added: 0,
            reported_value: 0,
            total,
            last_recorded,
        }
    }

    /// Consumes the buckets up to and including logical index `upto`.
    fn consume_through(&mut self, upto: usize) {
        let Some(upto) = upto.checked_sub(self.window.first()) else {
            return;
        };
        let end = (upto + 1).min(self.window.len());
        if self.next < end {
            // One sum (saturating, as adding bucket by bucket would be).
            self.consume(self.h.sum_range(self.next, end));
            self.next = end;
        }
    }

    /// Adds one bucket's count.
    fn consume(&mut self, n: u64) {
        self.cumulative = self.cumulative.saturating_add(n);
        self.added = self.added.saturating_add(n);
    }

    /// The count of logical bucket `logical`, 0 outside the window.
    fn count_of(&self, logical: usize) -> u64 {
        self.window
            .storage_index(logical)
            .map_or(0, |s| self.h.count_at(s))
    }

    fn report(&mut self, value: u64, level: Option<f64>, bucket_count: u64) -> IterationValue {
        // Java's `(100.0 * totalCountToCurrentIndex) / arrayTotalCount`: the product first, so
        // 11,000 of 20,000 is exactly 55 (a share computed as `cumulative / total · 100` is
        // 55.00000000000001, whose `percentile()` lands one bucket higher).
        let percentile = if self.total == 0 {
            0.0
        } else {
            ((100.0 * self.cumulative as f64) / self.total as f64).min(100.0)
        };
        let item = IterationValue {
            value_iterated_to: value,
            value_iterated_from: self.reported_value,
            percentile_level_iterated_to: level.unwrap_or(percentile),
            percentile,
            total_count_to_value: self.cumulative,
            count_at_value: bucket_count,
            count_added_in_this_step: self.added,
        };
        self.added = 0;
        self.reported_value = value;
        item
    }
}

/// How a value iteration moves from one reporting level to the next: linear steps or
/// logarithmic ones. Everything else about the two iterations is shared ([`ValueSteps`]).
pub(crate) trait StepRule {
    /// The level after `level`, or `None` when no higher level exists.
    fn next_level(&mut self, level: u64) -> Option<u64>;

    /// Once every recorded value has been reported: whether the iteration still takes the step
    /// to `next`, given the highest value of the bucket the last step ended in. HdrHistogram
    /// keeps stepping while the next step stays inside that bucket ("until we are no longer
    /// on a value that has a count"); the default is its linear rule, `next <= highest`.
    fn continues_in_bucket(&self, next: u64, highest: u64) -> bool {
        next <= highest
    }
}

/// Equal steps of a fixed number of value units.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinearRule {
    step: u64,
}

impl StepRule for LinearRule {
    fn next_level(&mut self, level: u64) -> Option<u64> {
        level.checked_add(self.step)
    }
}

/// Steps that grow by a constant factor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogarithmicRule {
    base: f64,
    /// Start of the next step, as a float so that fractional bases compound exactly.
    next_start: f64,
}

impl StepRule for LogarithmicRule {
    /// Java's `LogarithmicIterator`: the start of each step is the previous one times the
    /// base, in `f64`, and the level is one below it, truncated. A base close to 1 can give
    /// the same level twice (Java reports it twice too, the second step adding nothing).
    fn next_level(&mut self, level: u64) -> Option<u64> {
        if level == u64::MAX {
            return None;
        }
        let next = if self.next_start >= 18_446_744_073_709_551_615.0 {
            u64::MAX
        } else {
            (self.next_start as u64).saturating_sub(1)
        };
        self.next_start *= self.base;
        Some(next)
    }

    /// Java's logarithmic rule looks at the start of the next step, one above its level.
    fn continues_in_bucket(&self, next: u64, highest: u64) -> bool {
        next < highest
    }
}

/// A value iteration: reports at a sequence of value levels chosen by the rule `R`, each step
/// holding the buckets up to the one containing its level, until the step that holds the
/// highest recorded value.
pub(crate) struct ValueSteps<'a, H: ?Sized, R> {
    walk: Walk<'a, H>,
    rule: R,
    level: u64,
    done: bool,
}

/// Linear iteration; see [`crate::ReadExt::linear`].
pub(crate) type Linear<'a, H> = ValueSteps<'a, H, LinearRule>;

/// Logarithmic iteration; see [`crate::ReadExt::logarithmic`].
pub(crate) type Logarithmic<'a, H> = ValueSteps<'a, H, LogarithmicRule>;

impl<'a, H: HistogramRead + ?Sized, R> ValueSteps<'a, H, R> {
    fn start(h: &'a H, rule: R, first_level: u64) -> Self {
        let walk = Walk::new(h);
        let done = walk.total == 0;
        ValueSteps {
            walk,
            rule,
            level: first_level,
            done,
        }
    }
}

impl<'a, H: HistogramRead + ?Sized> ValueSteps<'a, H, LinearRule> {
    pub(crate) fn new(h: &'a H, step: u64) -> Option<Self> {
        (step != 0).then(|| Self::start(h, LinearRule { step }, step - 1))
    }
}

impl<'a, H: HistogramRead + ?Sized> ValueSteps<'a, H, LogarithmicRule> {
    pub(crate) fn new(h: &'a H, first: u64, base: f64) -> Option<Self> {
        if first == 0 || !base.is_finite() || base <= 1.0 {
            return None;
        }
        let rule = LogarithmicRule {
            base,
            next_start: first as f64 * base,
        };
        Some(Self::start(h, rule, first - 1))
    }
}

impl<H: HistogramRead + ?Sized, R: StepRule> Iterator for ValueSteps<'_, H, R> {
    type Item = IterationValue;
    fn next(&mut self) -> Option<IterationValue> {
        if self.done {
            return None;
        }
        let level_index = self.walk.layout.index_of(self.level);
        self.walk.consume_through(level_index);
        // The bucket the step ended in: the level's, or the window's last when the level is
        // past the window (Java's walk stops at the last index of its counts array).
        let current = level_index.min(self.walk.window.last());
        let bucket_count = self.walk.count_of(current);
        let item = self.walk.report(self.level, None, bucket_count);
        let highest = self.walk.layout.highest(current);
        match self.rule.next_level(self.level) {
            // Values left to report, or (Java's rule) the next step is still inside the bucket
            // the last one ended in.
            Some(next)
                if level_index < self.walk.last_recorded
                    || self.rule.continues_in_bucket(next, highest) =>
            {
                self.level = next
            }
            _ => self.done = true,
        }
        Some(item)
    }
}

/// Percentile iteration; see [`crate::ReadExt::percentile_ticks`].
///
/// Reports at levels that get denser towards 100%: `ticks_per_half_distance` levels between
/// 0% and 50%, as many between 50% and 75%, and so on. Each report gives the highest value of
/// the bucket where the cumulative share first reaches the level. Once the last non-empty
/// bucket is reached, one more report at 100% ends the iteration (HdrHistogram's rule). Levels
/// and shares are computed in percent, in the same `f64` operations as HdrHistogram Java's
/// `PercentileIterator` (`level += 100 / ticks`, share `100 · cumulative / total`), so both
/// visit the same levels and stop at the same buckets, ties included: a share of exactly 75%
/// reaches the 75% level (`tests/java_differential.rs` in picollo-alloc compares the rows).
pub(crate) struct PercentileTicks<'a, H: ?Sized> {
    walk: Walk<'a, H>,
    ticks: u64,
    /// The level in percent, `0..=100`.
    level: f64,
    /// Storage index and count of the bucket currently reached (its count already consumed).
    current: Option<(usize, u64)>,
    /// The recorded buckets ahead of the walk.
    ahead: RecordedAhead,
    reached_end: bool,
    done: bool,
}

impl<'a, H: HistogramRead + ?Sized> PercentileTicks<'a, H> {
    pub(crate) fn new(h: &'a H, ticks_per_half_distance: u32) -> Option<Self> {
        if ticks_per_half_distance == 0 {
            return None;
        }
        let walk = Walk::new(h);
        let done = walk.total == 0;
        Some(PercentileTicks {
            walk,
            ticks: ticks_per_half_distance as u64,
            level: 0.0,
            current: None,
            ahead: RecordedAhead::new(),
            reached_end: false,
            done,
        })
    }

    fn advance_level(&mut self) {
        // floor(log2(100 / (100 - level))): the halvings of the distance to 100% so far, read
        // from the float's exponent (exact, and available without std; Java's
        // `log(x) / log(2)` floors to the same count, powers of two included).
        let x = 100.0 / (100.0 - self.level);
        let halvings = (((x.to_bits() >> 52) & 0x7ff) as i64 - 1023).clamp(0, 61) as u32;
        let ticks = self.ticks.saturating_mul(1u64 << (halvings + 1));
        let next = self.level + 100.0 / ticks as f64;
        // Once the increment is lost to rounding, jump to 100%.
        self.level = if next == self.level || next >= 100.0 {
            100.0
        } else {
            next
        };
    }

    /// The report at bucket `s`, whose count is `count` (as consumed).
    fn emit(&mut self, (s, count): (usize, u64)) -> IterationValue {
        let i = self.walk.window.first() + s;
        self.walk
            .report(self.walk.layout.highest(i), Some(self.level), count)
    }
}

impl<H: HistogramRead + ?Sized> Iterator for PercentileTicks<'_, H> {
    type Item = IterationValue;
    fn next(&mut self) -> Option<IterationValue> {
        loop {
            if self.done {
                return None;
            }
            if let Some(current @ (s, _)) = self.current {
                let share = (100.0 * self.walk.cumulative as f64) / self.walk.total as f64;
                if share >= self.level && !self.reached_end {
                    let item = self.emit(current);
                    if self.level == 100.0 {
                        self.reached_end = true;
                    } else if self.walk.window.first() + s >= self.walk.last_recorded {
                        // At the last non-empty bucket the intermediate levels would all
                        // report the same value: go straight to 100%.
                        self.level = 100.0;
                    } else {
                        self.advance_level();
                    }
                    return Some(item);
                }
            }
            // Move to the next non-empty bucket.
            let recorded = self.ahead.next_from(self.walk.h, self.walk.next);
            if let Some((s, n)) = recorded {
                self.walk.next = s + 1;
                self.walk.consume(n);
                self.current = Some((s, n));
            } else {
                self.walk.next = self.walk.window.len();
                self.done = true;
                // Past the last non-empty bucket without having reported 100%: report it once.
                return match self.current {
                    Some(current) if !self.reached_end => {
                        self.level = 100.0;
                        self.reached_end = true;
                        Some(self.emit(current))
                    }
                    _ => None,
                };
            }
        }
    }
}
