//! std clocks as counter sources, for the nano/micro/milli scopes of seed 000 ("Units and
//! scopes"). Values are raw integers: the histogram has no units, the source picks them.
//!
//! ```
//! use picollo_alloc::{clock::Nanos, default_histogram};
//! use picollo_core::{source::scope, ReadExt};
//!
//! let mut h = default_histogram();
//! {
//!     let _s = scope(&mut h, Nanos);
//!     std::thread::sleep(std::time::Duration::from_millis(1));
//! }
//! assert!(h.percentile_value(50.0).unwrap() >= 1_000_000);
//! ```

use picollo_core::source::{CounterSource, SourceError};
use std::sync::OnceLock;
use std::time::Instant;

/// The process-wide origin all clock sources count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the process-wide origin, from the monotonic clock (`Instant`).
pub fn now_nanos() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

macro_rules! clock_source {
    ($(#[$doc:meta])* $name:ident, $divisor:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;

        impl CounterSource for $name {
            fn values(&self) -> usize {
                1
            }
            fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
                let slot = out.first_mut().ok_or(SourceError::BufferTooShort)?;
                *slot = self.sample_first()?;
                Ok(())
            }
            #[inline]
            fn sample_first(&mut self) -> Result<u64, SourceError> {
                Ok(now_nanos() / $divisor)
            }
        }
    };
}

clock_source!(
    /// Monotonic nanoseconds: record durations with `scope(&mut h, Nanos)`.
    Nanos,
    1
);
clock_source!(
    /// Monotonic microseconds (whole microseconds: sub-microsecond parts are truncated per
    /// sample, so a delta can be off by one).
    Micros,
    1_000
);
clock_source!(
    /// Monotonic milliseconds (whole milliseconds, as [`Micros`]).
    Millis,
    1_000_000
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_agree() {
        let (mut n, mut u, mut m) = (Nanos, Micros, Millis);
        let (n0, u0, m0) = (
            n.sample_first().unwrap(),
            u.sample_first().unwrap(),
            m.sample_first().unwrap(),
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        let dn = n.sample_first().unwrap() - n0;
        let du = u.sample_first().unwrap() - u0;
        let dm = m.sample_first().unwrap() - m0;
        assert!(
            dn >= 20_000_000 && du >= 19_999 && dm >= 19,
            "{dn} {du} {dm}"
        );
        assert!(dn / 1000 >= du.saturating_sub(1) && du / 1000 + 1 >= dm);
        let mut buf = [0u64; 0];
        assert_eq!(n.sample_into(&mut buf), Err(SourceError::BufferTooShort));
    }
}
