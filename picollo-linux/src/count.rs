//! Counts, multiplexing and "not counted" ([`Count`], [`Reading`]).

use core::fmt;

/// One reading of a counter: the raw count since it was enabled, and its times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reading {
    /// The raw count (not scaled).
    pub value: u64,
    /// Nanoseconds the event was enabled.
    pub time_enabled: u64,
    /// Nanoseconds the event was on a counter.
    pub time_running: u64,
}

impl Reading {
    /// The count since the counter was enabled, scaled if multiplexed.
    pub fn count(&self) -> Count {
        Count::from_times(self.value, self.time_enabled, self.time_running)
    }

    /// The count between `earlier` and `self`: the raw difference scaled by the difference of
    /// the times (the interval's own multiplexing ratio), or [`Count::NotCounted`] if the event
    /// did not run during the interval.
    pub fn delta_since(&self, earlier: &Reading) -> Count {
        Count::from_times(
            self.value.wrapping_sub(earlier.value),
            self.time_enabled.wrapping_sub(earlier.time_enabled),
            self.time_running.wrapping_sub(earlier.time_running),
        )
    }
}

/// A counter's value over an interval (or since it was enabled).
///
/// When the PMU has fewer counters than requested events, the kernel time-shares them
/// (multiplexing): an event is enabled for `time_enabled` ns but on a counter only for
/// `time_running` ns. The estimate of the full count is `value * enabled / running` (computed in
/// `u128`). When `time_running == 0` the event never ran: that is [`Count::NotCounted`], never a
/// zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Count {
    /// The event ran the whole time: the value is exact.
    Exact(u64),
    /// The event was multiplexed: `value = raw * time_enabled / time_running` is an estimate.
    Scaled {
        /// The scaled estimate (saturated at `u64::MAX`).
        value: u64,
        /// What was actually counted.
        raw: u64,
        /// Nanoseconds enabled.
        time_enabled: u64,
        /// Nanoseconds running (below `time_enabled`, above 0).
        time_running: u64,
    },
    /// `time_running == 0`: the event never got a counter. There is no value.
    NotCounted,
}

impl Count {
    /// Classifies and scales a raw count: `NotCounted` when `running == 0`, `Exact` when
    /// `running >= enabled`, otherwise `Scaled` with `raw * enabled / running` in `u128`.
    pub(crate) fn from_times(raw: u64, enabled: u64, running: u64) -> Self {
        if running == 0 {
            Self::NotCounted
        } else if running >= enabled {
            Self::Exact(raw)
        } else {
            let scaled = u128::from(raw) * u128::from(enabled) / u128::from(running);
            Self::Scaled {
                value: u64::try_from(scaled).unwrap_or(u64::MAX),
                raw,
                time_enabled: enabled,
                time_running: running,
            }
        }
    }

    /// The (possibly scaled) value, or `None` when not counted.
    pub const fn value(self) -> Option<u64> {
        match self {
            Self::Exact(v) | Self::Scaled { value: v, .. } => Some(v),
            Self::NotCounted => None,
        }
    }

    /// Whether the value is an estimate from multiplexing.
    pub const fn is_scaled(self) -> bool {
        matches!(self, Self::Scaled { .. })
    }

    /// `time_running / time_enabled`: 1.0 when exact, 0.0 when not counted.
    pub fn running_fraction(self) -> f64 {
        match self {
            Self::Exact(_) => 1.0,
            Self::Scaled {
                time_enabled,
                time_running,
                ..
            } => time_running as f64 / time_enabled as f64,
            Self::NotCounted => 0.0,
        }
    }
}

impl fmt::Display for Count {
    /// `123`, `456 (scaled, 33.3% running)`, or `<not counted>` as perf prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(v) => write!(f, "{v}"),
            Self::Scaled { value, .. } => write!(
                f,
                "{value} (scaled, {:.1}% running)",
                self.running_fraction() * 100.0
            ),
            Self::NotCounted => f.write_str("<not counted>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling() {
        assert_eq!(Count::from_times(100, 10, 10), Count::Exact(100));
        assert_eq!(Count::from_times(0, 10, 10), Count::Exact(0));
        assert_eq!(Count::from_times(100, 0, 0), Count::NotCounted);
        assert_eq!(Count::from_times(100, 10, 0), Count::NotCounted);
        assert_eq!(Count::from_times(100, 10, 0).value(), None);
        // Clock skew can make running exceed enabled by a hair: exact.
        assert_eq!(Count::from_times(100, 10, 11), Count::Exact(100));
        let c = Count::from_times(100, 30, 10);
        assert_eq!(c.value(), Some(300));
        assert!(c.is_scaled());
        assert!((c.running_fraction() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(c.to_string(), "300 (scaled, 33.3% running)");
        assert_eq!(Count::NotCounted.to_string(), "<not counted>");
        // value * enabled overflows u64 but not u128.
        let big = Count::from_times(1_000_000_000_000, 1_000_000_000_000, 500_000_000_000);
        assert_eq!(big.value(), Some(2_000_000_000_000));
        // Saturates instead of wrapping.
        let huge = Count::from_times(u64::MAX, u64::MAX, 1);
        assert_eq!(huge.value(), Some(u64::MAX));
    }

    #[test]
    fn deltas_use_the_interval_ratio() {
        let a = Reading {
            value: 1_000,
            time_enabled: 100,
            time_running: 100,
        };
        let b = Reading {
            value: 1_500,
            time_enabled: 200,
            time_running: 150,
        };
        // 500 counted in 50 of 100 ns: 1000 estimated.
        assert_eq!(b.delta_since(&a).value(), Some(1_000));
        let c = Reading {
            value: 1_500,
            time_enabled: 300,
            time_running: 150,
        };
        assert_eq!(c.delta_since(&b), Count::NotCounted);
        assert_eq!(b.count().value(), Some(2_000));
    }
}
