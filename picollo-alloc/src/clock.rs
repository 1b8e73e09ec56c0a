//! std clocks as counter sources, for the nano/micro/milli/tick scopes of Picollo for .NET
//! (its "Units and scopes"). Values are raw integers: the histogram has no units, the source
//! picks them.
//!
//! - [`Nanos`], [`Micros`], [`Millis`]: the monotonic clock (`Instant`) in whole units.
//! - [`Ticks`]: the CPU's timestamp counter where the core has a source for it (`rdtsc` on
//!   x86 and x86_64, `cntvct_el0` on aarch64), elsewhere the monotonic clock in nanoseconds.
//!   [`ticks_per_second`] gives its rate and [`ticks_to_nanos`] converts exactly.
//! - [`nano_scope`], [`micro_scope`], [`milli_scope`], [`tick_scope`]: Picollo for
//!   .NET's `GetNanoScope()` and friends, for any recorder: `&mut` a plain histogram, `&` an atomic
//!   or thread-local one.
//! - Nanoseconds since an `Instant`, as an integer, without the 100 ns rounding of .NET's
//!   `TimeSpan` that Picollo for .NET warns about: [`duration_ns`](picollo_core::duration_ns)
//!   `(start.elapsed())`, what every `record_duration` records.
//!
//! ```
//! use picollo_alloc::clock::{nano_scope, Nanos};
//! use picollo_alloc::HistogramBuilder;
//! use picollo_core::{source::scope, EquivalentValue, ReadExt};
//!
//! let mut h = HistogramBuilder::new().dense().plain().unwrap();
//! {
//!     let _s = scope(&mut h, Nanos); // or: nano_scope(&mut h)
//!     std::thread::sleep(std::time::Duration::from_millis(1));
//! }
//! {
//!     let _s = nano_scope(&mut h);
//!     std::thread::sleep(std::time::Duration::from_millis(1));
//! }
//! assert!(h.percentile(50.0, EquivalentValue::Midpoint).unwrap().value >= 1_000_000);
//! ```

use picollo_core::source::{CounterSource, Scope, SourceError};
use picollo_core::Record;
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

/// The CPU timestamp counter: `rdtsc` on x86 and x86_64 ([`picollo_core::source::Rdtsc`]),
/// `cntvct_el0` on aarch64 (`picollo_core::source::CntVct`); on other targets the monotonic
/// clock in nanoseconds ([`now_nanos`]).
///
/// Ticks are the finest and cheapest time unit the process can read (Picollo for .NET's
/// `GetTickScope()`). Record them raw and convert when reporting, with [`ticks_to_nanos`] or
/// an `.hgrm` scaling ratio of `ticks_per_second() / 1e9`.
///
/// On x86 the TSC is *invariant* on every CPU of the last fifteen years (constant rate,
/// shared by all cores); on older CPUs or some virtual machines it may not be, and ticks are
/// then not time. On aarch64 the counter is a timer, often much coarser than the core clock
/// (24 MHz on Apple silicon, 1 GHz on Armv8.6 and later).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ticks;

impl Ticks {
    /// Reads the counter.
    #[inline]
    pub fn now() -> u64 {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        {
            picollo_core::source::Rdtsc::new().read()
        }
        #[cfg(target_arch = "aarch64")]
        {
            picollo_core::source::CntVct::new().read()
        }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
        {
            now_nanos()
        }
    }

    /// What the counter is, for reports: `"rdtsc"`, `"cntvct_el0"` or `"monotonic ns"`.
    pub const fn source_name() -> &'static str {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        {
            "rdtsc"
        }
        #[cfg(target_arch = "aarch64")]
        {
            "cntvct_el0"
        }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
        {
            "monotonic ns"
        }
    }
}

impl CounterSource for Ticks {
    fn values(&self) -> usize {
        1
    }
    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
        let slot = out.first_mut().ok_or(SourceError::BufferTooShort)?;
        *slot = Ticks::now();
        Ok(())
    }
    #[inline]
    fn sample_first(&mut self) -> Result<u64, SourceError> {
        Ok(Ticks::now())
    }
}

/// The rate of [`Ticks`] in ticks per second, determined once per process (later calls read
/// a cached value).
///
/// - aarch64: `cntfrq_el0`, the frequency the firmware declares: exact, no measurement.
/// - other targets without a counter: 1,000,000,000 (ticks are nanoseconds).
/// - x86: measured against `Instant` over about 20 ms on the first call (which therefore
///   takes that long). Each end of the interval reads the TSC on both sides of
///   `Instant::now()` and keeps the tightest of 16 tries, so each end is known to within a
///   few tens of nanoseconds: the rate is typically within 10 ppm (0.001%) of the true one,
///   and a preemption during the measurement can make it worse, up to about 0.1%. That is
///   far below the histogram's bucket widths, but not a frequency standard: for long
///   absolute times use `Instant`.
///
/// Never returns 0.
pub fn ticks_per_second() -> u64 {
    static RATE: OnceLock<u64> = OnceLock::new();
    *RATE.get_or_init(calibrate)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn calibrate() -> u64 {
    /// One `(ticks, instant)` pair, read as close together as possible.
    fn pair() -> (u64, Instant) {
        let mut best: Option<(u64, u64, Instant)> = None;
        for _ in 0..16 {
            let a = Ticks::now();
            let t = Instant::now();
            let b = Ticks::now();
            let spread = b.wrapping_sub(a);
            if best.is_none_or(|(s, _, _)| spread < s) {
                best = Some((spread, a + spread / 2, t));
            }
        }
        match best {
            Some((_, ticks, t)) => (ticks, t),
            None => (Ticks::now(), Instant::now()),
        }
    }
    let (t0, i0) = pair();
    let deadline = i0 + std::time::Duration::from_millis(20);
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
    let (t1, i1) = pair();
    let nanos = i1.duration_since(i0).as_nanos();
    let ticks = u128::from(t1.wrapping_sub(t0));
    match u64::try_from(ticks * 1_000_000_000 / nanos.max(1)) {
        Ok(rate) if rate > 0 => rate,
        _ => 1_000_000_000,
    }
}

#[cfg(target_arch = "aarch64")]
fn calibrate() -> u64 {
    match picollo_core::source::CntVct::new().frequency() {
        0 => 1_000_000_000,
        f => f,
    }
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
fn calibrate() -> u64 {
    1_000_000_000
}

/// Converts [`Ticks`] to nanoseconds at [`ticks_per_second`]: `ticks · 10^9 / rate`, in
/// 128-bit integers, rounded down (saturated at `u64::MAX`). No intermediate float or coarse
/// unit: a 1-tick difference stays visible whenever a tick is at least a nanosecond.
#[inline]
pub fn ticks_to_nanos(ticks: u64) -> u64 {
    ticks_to_nanos_at(ticks, ticks_per_second())
}

#[cfg(test)]
/// Converts nanoseconds to [`Ticks`] at [`ticks_per_second`], rounded up (saturated).
#[inline]
pub(crate) fn nanos_to_ticks(nanos: u64) -> u64 {
    nanos_to_ticks_at(nanos, ticks_per_second())
}

/// `ticks · 10^9 / ticks_per_second`, rounded down, in 128-bit integers; saturated at
/// `u64::MAX`. A rate of 0 is treated as 1.
///
/// For rates of at least 1 GHz, `ticks_to_nanos_at(nanos_to_ticks_at(n, r), r) == n`; for
/// rates up to 1 GHz, `nanos_to_ticks_at(ticks_to_nanos_at(t, r), r) == t`.
#[inline]
pub(crate) const fn ticks_to_nanos_at(ticks: u64, ticks_per_second: u64) -> u64 {
    let rate = if ticks_per_second == 0 {
        1
    } else {
        ticks_per_second
    };
    let n = ticks as u128 * 1_000_000_000 / rate as u128;
    if n > u64::MAX as u128 {
        u64::MAX
    } else {
        n as u64
    }
}

#[cfg(test)]
/// `nanos · ticks_per_second / 10^9`, rounded up, in 128-bit integers; saturated at
/// `u64::MAX`.
#[inline]
pub(crate) const fn nanos_to_ticks_at(nanos: u64, ticks_per_second: u64) -> u64 {
    let t = (nanos as u128 * ticks_per_second as u128).div_ceil(1_000_000_000);
    if t > u64::MAX as u128 {
        u64::MAX
    } else {
        t as u64
    }
}

/// A scope that records the nanoseconds it lasts into `recorder` when dropped (Picollo for
/// .NET's `GetNanoScope()`). `recorder` is `&mut h` for a plain histogram, `&h` for an atomic or
/// thread-local one. See [`Scope`] for `finish` and `cancel`.
#[inline]
pub fn nano_scope<R: Record>(recorder: R) -> Scope<R, Nanos> {
    Scope::new(recorder, Nanos)
}

/// A scope that records the whole microseconds it lasts (see [`nano_scope`]).
#[inline]
pub fn micro_scope<R: Record>(recorder: R) -> Scope<R, Micros> {
    Scope::new(recorder, Micros)
}

/// A scope that records the whole milliseconds it lasts (see [`nano_scope`]).
#[inline]
pub fn milli_scope<R: Record>(recorder: R) -> Scope<R, Millis> {
    Scope::new(recorder, Millis)
}

/// A scope that records the [`Ticks`] it lasts (see [`nano_scope`]): the cheapest scope.
#[inline]
pub fn tick_scope<R: Record>(recorder: R) -> Scope<R, Ticks> {
    Scope::new(recorder, Ticks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::duration_ns;
    use std::time::Duration;

    #[test]
    fn units_agree() {
        let (mut n, mut u, mut m) = (Nanos, Micros, Millis);
        let (n0, u0, m0) = (
            n.sample_first().unwrap(),
            u.sample_first().unwrap(),
            m.sample_first().unwrap(),
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        // Read back in the reverse order, so that each coarser interval lies
        // inside the finer one: a preemption between two reads (CI runs at
        // high load) then lengthens the outer interval, never the inner one.
        let dm = m.sample_first().unwrap() - m0;
        let du = u.sample_first().unwrap() - u0;
        let dn = n.sample_first().unwrap() - n0;
        assert!(
            dn >= 20_000_000 && du >= 19_999 && dm >= 19,
            "{dn} {du} {dm}"
        );
        // Whole units truncate at both ends, so a coarser count may exceed
        // the finer one, scaled down, by one unit, plus one for the
        // truncated finer count.
        assert!(dn / 1000 + 1 >= du && du / 1000 + 2 >= dm, "{dn} {du} {dm}");
        let mut buf = [0u64; 0];
        assert_eq!(n.sample_into(&mut buf), Err(SourceError::BufferTooShort));
    }

    #[test]
    fn conversions_round_trip() {
        for rate in [
            1_000_000_000u64,
            2_399_987_654,
            3_000_000_000,
            5_123_456_789,
        ] {
            for n in [0u64, 1, 2, 3, 999, 1_000_000_007, 1 << 40, u64::MAX / 8] {
                assert_eq!(
                    ticks_to_nanos_at(nanos_to_ticks_at(n, rate), rate),
                    n,
                    "{rate} {n}"
                );
            }
        }
        for rate in [24_000_000u64, 19_200_000, 100_000_000, 1_000_000_000] {
            for t in [0u64, 1, 2, 3, 999, 1_000_000_007, 1 << 50] {
                assert_eq!(
                    nanos_to_ticks_at(ticks_to_nanos_at(t, rate), rate),
                    t,
                    "{rate} {t}"
                );
            }
        }
        // Exact: no 100 ns (or any other) rounding step.
        assert_eq!(ticks_to_nanos_at(3, 3_000_000_000), 1);
        assert_eq!(ticks_to_nanos_at(10_000_001, 10_000_000), 1_000_000_100);
        assert_eq!(ticks_to_nanos_at(u64::MAX, 1), u64::MAX);
        assert_eq!(ticks_to_nanos_at(5, 0), 5_000_000_000);
        assert_eq!(nanos_to_ticks_at(u64::MAX, u64::MAX), u64::MAX);
        let rate = ticks_per_second();
        let t = nanos_to_ticks(123_456_789);
        assert!(ticks_to_nanos(t).abs_diff(123_456_789) <= 1 + 1_000_000_000 / rate);
    }

    #[test]
    fn calibration_sanity() {
        let rate = ticks_per_second();
        assert!((1_000_000..=20_000_000_000).contains(&rate), "{rate}");
        assert_eq!(rate, ticks_per_second()); // cached
                                              // Ticks track the monotonic clock at that rate over 50 ms, within 2 %. Each tick read
                                              // is bracketed by two `Instant`s, so a preemption between a tick read and a clock read
                                              // (CI runs at high load) widens the outer interval or narrows the inner one, and the
                                              // ticks must lie between the two.
        let outer0 = Instant::now();
        let t0 = Ticks::now();
        let inner0 = Instant::now();
        std::thread::sleep(Duration::from_millis(50));
        let inner = duration_ns(inner0.elapsed());
        let t1 = Ticks::now();
        let outer = duration_ns(outer0.elapsed());
        let measured = ticks_to_nanos(t1 - t0);
        assert!(
            measured as f64 >= inner as f64 * 0.98 && measured as f64 <= outer as f64 * 1.02,
            "ticks say {measured} ns, Instant says {inner} to {outer} ns"
        );
        assert!(!Ticks::source_name().is_empty());
    }

    #[test]
    fn elapsed_is_exact_and_saturates() {
        assert_eq!(duration_ns(Duration::from_nanos(123)), 123);
        assert_eq!(duration_ns(Duration::MAX), u64::MAX);
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(1));
        assert!(duration_ns(start.elapsed()) >= 1_000_000);
    }

    #[test]
    fn scopes_for_every_kind() {
        use crate::{HistogramBuilder, ThreadLocalHistogram};
        use picollo_core::ReadExt;
        let builder = || HistogramBuilder::new().max_trackable(10_000_000_000);
        let pause = || std::thread::sleep(Duration::from_millis(2));

        let mut plain = builder().plain().unwrap();
        {
            let _s = nano_scope(&mut plain);
            pause();
        }
        {
            let _s = micro_scope(&mut plain);
            pause();
        }
        {
            let _s = milli_scope(&mut plain);
            pause();
        }
        {
            let _s = tick_scope(&mut plain);
            pause();
        }
        assert_eq!(plain.total(), 4);
        assert!(plain.min().unwrap() >= 1); // milliseconds: at least 1 (2 ms, truncated)
        assert!(plain.max().unwrap() >= 2_000_000); // nanoseconds or ticks

        let atomic = builder().atomic().unwrap();
        {
            let _s = nano_scope(&atomic);
            pause();
        }
        let us = micro_scope(&atomic).finish().unwrap();
        assert!(us < 1_000_000);
        assert_eq!(atomic.total(), 2);
        assert!(atomic.max().unwrap() >= 2_000_000);

        let local: ThreadLocalHistogram = builder().thread_local().unwrap();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let _s = tick_scope(&local);
                    pause();
                });
            }
        });
        {
            let _s = milli_scope(&local);
            pause();
        }
        tick_scope(&local).cancel();
        assert_eq!(local.total(), 3);
        let ticks_2ms = nanos_to_ticks(2_000_000);
        assert!(local.max().unwrap() >= ticks_2ms - ticks_2ms / 50);
    }
}
