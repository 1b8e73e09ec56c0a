//! [`Scaled`]: a recorded value divided by a unit's divisor, printed exactly. A leaf.

use core::fmt;
use picollo_core::fmt::Grouped;

/// A recorded value divided by a unit's divisor, exactly: the integer part with its digits
/// grouped, then as many decimals as the divisor has digits after the first (3 for 1,000),
/// so nothing is rounded when the divisor is a power of ten. `plain()` leaves the digits
/// ungrouped (CSV, JSON).
///
/// ```
/// use picollo_alloc::summary::Scaled;
/// assert_eq!(Scaled::new(16_384_512, 1_000).to_string(), "16,384.512");
/// assert_eq!(Scaled::new(16_384_512, 1_000).plain(), "16384.512");
/// assert_eq!(Scaled::new(7, 1_000_000).to_string(), "0.000007");
/// assert_eq!(Scaled::new(1_234, 1).to_string(), "1,234");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scaled {
    value: u64,
    divisor: u64,
}

impl Scaled {
    /// `value / divisor` (a divisor of 0 is taken as 1).
    pub const fn new(value: u64, divisor: u64) -> Self {
        Self {
            value,
            divisor: if divisor == 0 { 1 } else { divisor },
        }
    }

    /// The decimals printed for `divisor`: the digits of `divisor - 1` (3 for 1,000, 0 for 1).
    pub const fn decimals_of(divisor: u64) -> usize {
        let mut d = 0;
        let mut x = divisor.saturating_sub(1);
        while x > 0 {
            d += 1;
            x /= 10;
        }
        d
    }

    /// The whole part and the fraction's digits (rounded down when the divisor is not a
    /// power of ten).
    fn parts(&self) -> (u64, String) {
        let whole = self.value / self.divisor;
        let decimals = Self::decimals_of(self.divisor);
        if decimals == 0 {
            return (whole, String::new());
        }
        let rest = u128::from(self.value % self.divisor) * 10u128.pow(decimals as u32)
            / u128::from(self.divisor);
        (whole, format!("{rest:0decimals$}"))
    }

    /// Without digit grouping: `16384.512`.
    pub fn plain(&self) -> String {
        match self.parts() {
            (w, f) if f.is_empty() => w.to_string(),
            (w, f) => format!("{w}.{f}"),
        }
    }
}

impl fmt::Display for Scaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = self.parts();
        let text = if frac.is_empty() {
            Grouped(whole).to_string()
        } else {
            format!("{}.{frac}", Grouped(whole))
        };
        f.pad(&text)
    }
}
