//! HdrHistogram's value iterations (linear, logarithmic, percentile ticks) over any
//! [`HistogramRead`], without allocation.
//!
//! Each yields [`IterationValue`]s. A step includes every bucket up to and including the one
//! holding the step's reporting level (HdrHistogram's rule), and iteration ends with the step
//! that holds the highest recorded value.

use crate::read::HistogramRead;
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

/// Linear iteration; see [`crate::ReadExt::linear`].
pub struct Linear<'a, H: ?Sized> {
    walk: Walk<'a, H>,
    step: u64,
    level: u64,
    done: bool,
}

impl<'a, H: HistogramRead + ?Sized> Linear<'a, H> {
    pub(crate) fn new(h: &'a H, step: u64) -> Option<Self> {
        if step == 0 {
            return None;
        }
        let walk = Walk::new(h);
        let done = walk.total == 0;
        Some(Linear {
            walk,
            step,
            level: step - 1,
            done,
        })
    }
}

impl<H: HistogramRead + ?Sized> Iterator for Linear<'_, H> {
    type Item = IterationValue;
    fn next(&mut self) -> Option<IterationValue> {
        if self.done {
            return None;
        }
        let level_index = self.walk.layout.index_of(self.level);
        self.walk.consume_through(level_index);
        let item = self.walk.report(self.level, None);
        match self.level.checked_add(self.step) {
            Some(next) if level_index < self.walk.last_recorded => self.level = next,
            _ => self.done = true,
        }
        Some(item)
    }
}

/// Logarithmic iteration; see [`crate::ReadExt::logarithmic`].
pub struct Logarithmic<'a, H: ?Sized> {
    walk: Walk<'a, H>,
    base: f64,
    /// Start of the next step, as a float so that fractional bases compound exactly.
    next_start: f64,
    level: u64,
    done: bool,
}

impl<'a, H: HistogramRead + ?Sized> Logarithmic<'a, H> {
    pub(crate) fn new(h: &'a H, first: u64, base: f64) -> Option<Self> {
        if first == 0 || !base.is_finite() || base <= 1.0 {
            return None;
        }
        let walk = Walk::new(h);
        let done = walk.total == 0;
        Some(Logarithmic {
            walk,
            base,
            next_start: first as f64 * base,
            level: first - 1,
            done,
        })
    }
}

impl<H: HistogramRead + ?Sized> Iterator for Logarithmic<'_, H> {
    type Item = IterationValue;
    fn next(&mut self) -> Option<IterationValue> {
        if self.done {
            return None;
        }
        let level_index = self.walk.layout.index_of(self.level);
        self.walk.consume_through(level_index);
        let item = self.walk.report(self.level, None);
        if level_index >= self.walk.last_recorded || self.level == u64::MAX {
            self.done = true;
        } else {
            let next = if self.next_start >= 18_446_744_073_709_551_615.0 {
                u64::MAX
            } else {
                (self.next_start as u64).saturating_sub(1).max(self.level + 1)
            };
            self.level = next;
            self.next_start *= self.base;
        }
        Some(item)
    }
}

/// Percentile iteration; see [`crate::ReadExt::percentile_ticks`].
///
/// Reports at levels that get denser towards 100%: `ticks_per_half_distance` levels between
/// 0% and 50%, as many between 50% and 75%, and so on, then a last report at 100%. Each report
/// gives the highest value of the bucket where the cumulative share first reaches the level.
pub struct PercentileTicks<'a, H: ?Sized> {
    walk: Walk<'a, H>,
    ticks: u64,
    level: f64,
    /// Storage index of the bucket currently reached (its count already consumed).
    current: Option<usize>,
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
            done,
        })
    }

    fn advance_level(&mut self) {
        if self.level >= 100.0 {
            self.done = true;
            return;
        }
        let remaining = 100.0 - self.level;
        // floor(log2(100 / remaining)) halvings so far.
        let mut halvings = 0u32;
        let mut r = 100.0;
        while r / 2.0 >= remaining && halvings < 62 {
            r /= 2.0;
            halvings += 1;
        }
        let ticks = self.ticks.saturating_mul(1u64 << (halvings + 1).min(63));
        let next = self.level + 100.0 / ticks as f64;
        // Once the increment is lost to rounding (or after 62 halvings), jump to 100%.
        self.level = if next <= self.level || halvings >= 62 || next >= 100.0 {
            100.0
        } else {
            next
        };
    }
}

impl<H: HistogramRead + ?Sized> Iterator for PercentileTicks<'_, H> {
    type Item = IterationValue;
    fn next(&mut self) -> Option<IterationValue> {
        if self.done {
            return None;
        }
        loop {
            if let Some(s) = self.current {
                let share = self.walk.cumulative as f64 / self.walk.total as f64 * 100.0;
                if share >= self.level || self.walk.cumulative >= self.walk.total {
                    let i = self.walk.window.first() + s;
                    let level = self.level;
                    let item = self.walk.report(self.walk.layout.highest(i), Some(level));
                    self.advance_level();
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
                // Counts shrank under us (a racing reset): stop rather than spin.
                self.done = true;
                return None;
            }
        }
    }
}
