//! HdrHistogram's value iterations (linear, logarithmic, percentile ticks) over any
//! [`HistogramRead`], without allocation.
//!
//! Each yields [`IterationValue`]s. A step includes every bucket up to and including the one
//! holding the step's reporting level (HdrHistogram's rule), and iteration ends with the step
//! that holds the highest recorded value.

use crate::read::histogram_read::HistogramRead;
use crate::{Layout, Window};

/// One report of an HdrHistogram-style iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IterationValue {
    /// The value this step reports at (its highest value).
    pub value_iterated_to: u64,
    /// The percentile level the step was asked for (percentile iteration); otherwise the same
    /// as [`IterationValue::percentile`].
    pub percentile_level_iterated_to: f64,
    /// The share of values at or below this step, in percent.
    pub percentile: f64,
    /// Values at or below this step.
    pub count_at_value: u64,
    /// Values added since the previous report.
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
    reported: u64,
    total: u64,
    /// Logical index of the highest non-empty bucket.
    last_recorded: usize,
}

impl<'a, H: HistogramRead + ?Sized> Walk<'a, H> {
    fn new(h: &'a H) -> Self {
        let window = h.window();
        let mut total = 0u64;
        let mut last_recorded = window.first();
        for s in 0..window.len() {
            let n = h.count_at(s);
            if n != 0 {
                total = total.saturating_add(n);
                last_recorded = window.first() + s;
            }
        }
        Walk {
            h,
            layout: h.layout(),
            window,
            next: 0,
            cumulative: 0,
            reported: 0,
            total,
            last_recorded,
        }
    }

    /// Consumes the buckets up to and including logical index `upto`.
    fn consume_through(&mut self, upto: usize) {
        while self.next < self.window.len() && self.window.first() + self.next <= upto {
            self.cumulative = self.cumulative.saturating_add(self.h.count_at(self.next));
            self.next += 1;
        }
    }

    fn report(&mut self, value: u64, level: Option<f64>) -> IterationValue {
        let percentile = if self.total == 0 {
            0.0
        } else {
            (self.cumulative as f64 / self.total as f64 * 100.0).min(100.0)
        };
        let added = self.cumulative - self.reported;
        self.reported = self.cumulative;
        IterationValue {
            value_iterated_to: value,
            percentile_level_iterated_to: level.unwrap_or(percentile),
            percentile,
            count_at_value: self.cumulative,
            count_added_in_this_step: added,
        }
    }
}

/// How a value iteration moves from one reporting level to the next: linear steps or
/// logarithmic ones. Everything else about the two iterations is shared ([`ValueSteps`]).
pub trait StepRule {
    /// The level after `level`, or `None` when no higher level exists.
    fn next_level(&mut self, level: u64) -> Option<u64>;
}

/// Equal steps of a fixed number of value units.
#[derive(Clone, Copy, Debug)]
pub struct LinearRule {
    step: u64,
}

impl StepRule for LinearRule {
    fn next_level(&mut self, level: u64) -> Option<u64> {
        level.checked_add(self.step)
    }
}

/// Steps that grow by a constant factor.
#[derive(Clone, Copy, Debug)]
pub struct LogarithmicRule {
    base: f64,
    /// Start of the next step, as a float so that fractional bases compound exactly.
    next_start: f64,
}

impl StepRule for LogarithmicRule {
    fn next_level(&mut self, level: u64) -> Option<u64> {
        if level == u64::MAX {
            return None;
        }
        let next = if self.next_start >= 18_446_744_073_709_551_615.0 {
            u64::MAX
        } else {
            (self.next_start as u64).saturating_sub(1).max(level + 1)
        };
        self.next_start *= self.base;
        Some(next)
    }
}

/// A value iteration: reports at a sequence of value levels chosen by the rule `R`, each step
/// holding the buckets up to the one containing its level, until the step that holds the
/// highest recorded value.
pub struct ValueSteps<'a, H: ?Sized, R> {
    walk: Walk<'a, H>,
    rule: R,
    level: u64,
    done: bool,
}

/// Linear iteration; see [`crate::ReadExt::linear`].
pub type Linear<'a, H> = ValueSteps<'a, H, LinearRule>;

/// Logarithmic iteration; see [`crate::ReadExt::logarithmic`].
pub type Logarithmic<'a, H> = ValueSteps<'a, H, LogarithmicRule>;

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
        let item = self.walk.report(self.level, None);
        match self.rule.next_level(self.level) {
            Some(next) if level_index < self.walk.last_recorded => self.level = next,
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
pub struct PercentileTicks<'a, H: ?Sized> {
    walk: Walk<'a, H>,
    ticks: u64,
    /// The level in percent, `0..=100`.
    level: f64,
    /// Storage index of the bucket currently reached (its count already consumed).
    current: Option<usize>,
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

    fn emit(&mut self, s: usize) -> IterationValue {
        let i = self.walk.window.first() + s;
        self.walk
            .report(self.walk.layout.highest(i), Some(self.level))
    }
}

impl<H: HistogramRead + ?Sized> Iterator for PercentileTicks<'_, H> {
    type Item = IterationValue;
    fn next(&mut self) -> Option<IterationValue> {
        loop {
            if self.done {
                return None;
            }
            if let Some(s) = self.current {
                let share = (100.0 * self.walk.cumulative as f64) / self.walk.total as f64;
                if share >= self.level && !self.reached_end {
                    let item = self.emit(s);
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
            let mut moved = false;
            while self.walk.next < self.walk.window.len() {
                let s = self.walk.next;
                let n = self.walk.h.count_at(s);
                self.walk.next += 1;
                if n != 0 {
                    self.walk.cumulative = self.walk.cumulative.saturating_add(n);
                    self.current = Some(s);
                    moved = true;
                    break;
                }
            }
            if !moved {
                self.done = true;
                // Past the last non-empty bucket without having reported 100%: report it once.
                return match self.current {
                    Some(s) if !self.reached_end => {
                        self.level = 100.0;
                        self.reached_end = true;
                        Some(self.emit(s))
                    }
                    _ => None,
                };
            }
        }
    }
}
