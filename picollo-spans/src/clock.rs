//! The span clock: the one timestamp every span frame and every `picollo-tracing` interval
//! carries, and its conversion to nanoseconds.
//!
//! The span clock is [`Ticks`]: the TSC on x86 and x86_64, `cntvct_el0` on aarch64 (the
//! counter `CLOCK_MONOTONIC` itself reads there, without the system call's overhead), the
//! monotonic clock in nanoseconds elsewhere. Writers ([`now`]) and readers ([`clock_info`],
//! [`clock_hz`], [`ticks_to_ns`]) all use this one definition, so a span written by
//! `picollo_linux::span!`, by the tracing layer or read back by `picollo attach` is on the
//! same clock.

use picollo_ring::{ClockInfo, ClockKind};

use picollo_alloc::clock::{ticks_per_second, Ticks};

/// Whether [`now`] counts nanoseconds (no timestamp counter on this target).
const TICKS_ARE_NS: bool = cfg!(not(any(
    target_arch = "x86",
    target_arch = "x86_64",
    target_arch = "aarch64"
)));

/// The span clock now: [`Ticks::now`].
#[inline(always)]
pub fn now() -> u64 {
    Ticks::now()
}

/// What [`now`] reads, as the ring header says it: the TSC on x86 and x86_64, a counter of
/// known rate (`Other`, with `hz`) on aarch64, monotonic nanoseconds elsewhere.
pub const fn clock_kind() -> ClockKind {
    if cfg!(any(target_arch = "x86", target_arch = "x86_64")) {
        ClockKind::Tsc
    } else if cfg!(target_arch = "aarch64") {
        ClockKind::Other
    } else {
        ClockKind::MonotonicNs
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (on targets without it, the process's monotonic clock:
/// [`picollo_alloc::clock::now_nanos`]). The reference a reader in another process calibrates a TSC
/// against.
pub fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; `clock_gettime` writes nothing else.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let s = u64::try_from(ts.tv_sec).unwrap_or(0);
        let ns = u64::try_from(ts.tv_nsec).unwrap_or(0);
        s.saturating_mul(1_000_000_000).saturating_add(ns)
    }
    #[cfg(not(unix))]
    {
        picollo_alloc::clock::now_nanos()
    }
}

/// The ring header's description of the span clock: its kind, its rate where it is known
/// without measuring (`cntvct_el0`'s declared frequency, nanoseconds), and a reference pair
/// (a clock reading and `CLOCK_MONOTONIC` at the same moment) from which a reader on the
/// same machine calibrates a TSC ([`clock_hz`]).
pub fn clock_info() -> ClockInfo {
    if TICKS_ARE_NS {
        return ClockInfo::nanoseconds(clock_kind());
    }
    let a = now();
    let ns = monotonic_ns();
    let b = now();
    ClockInfo {
        kind: clock_kind(),
        // The TSC's rate is measured by the reader (it costs 20 ms); aarch64 declares it.
        hz: if cfg!(target_arch = "aarch64") {
            ticks_per_second()
        } else {
            0
        },
        ref_ticks: a / 2 + b / 2,
        ref_ns: ns,
    }
}

/// Ticks per second of a ring's clock: `hz` if the header says, else (a TSC) calibrated from
/// the header's reference pair against this process's clocks now (same machine). `None`
/// when neither works (less than a millisecond since the reference).
pub fn clock_hz(clock: &ClockInfo) -> Option<f64> {
    if clock.hz != 0 {
        return Some(clock.hz as f64);
    }
    if clock.kind == ClockKind::Tsc && clock.ref_ns != 0 && clock_kind() == ClockKind::Tsc {
        let ns = monotonic_ns().checked_sub(clock.ref_ns)?;
        let ticks = now().checked_sub(clock.ref_ticks)?;
        if ns >= 1_000_000 {
            return Some(ticks as f64 * 1e9 / ns as f64);
        }
    }
    None
}

/// Span clock ticks (differences of [`now`]) to nanoseconds, at this process's
/// [`ticks_per_second`] (calibrated once, on the first call).
///
/// A multiply and a shift (`ticks · ⌊10^9 · 2^32 / rate⌋ >> 32`), not a 128-bit division: at
/// rates up to 4 GHz the factor has at least 30 significant bits, so the result is within
/// 10^-9 (relative) of the exact conversion, far inside a histogram bucket. Where ticks are
/// nanoseconds, the identity.
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    if TICKS_ARE_NS {
        return ticks;
    }
    static FACTOR: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let factor = *FACTOR.get_or_init(|| {
        let rate = u128::from(ticks_per_second().max(1));
        u64::try_from((1_000_000_000u128 << 32) / rate).unwrap_or(u64::MAX)
    });
    u64::try_from((u128::from(ticks) * u128::from(factor)) >> 32).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_clock_agrees_with_the_writer() {
        let info = clock_info();
        assert_eq!(info.kind, clock_kind());
        if TICKS_ARE_NS {
            assert_eq!(info.hz, 1_000_000_000);
        } else {
            assert!(info.ref_ns > 0 && info.ref_ticks > 0);
        }
        let (a, b) = (now(), now());
        assert!(b >= a, "the span clock went back: {a} then {b}");
    }

    #[test]
    fn ticks_convert_at_the_calibrated_rate() {
        assert_eq!(ticks_to_ns(0), 0);
        let rate = ticks_per_second();
        let one_second = ticks_to_ns(rate);
        assert!(
            one_second.abs_diff(1_000_000_000) <= 1,
            "{rate} ticks read as {one_second} ns"
        );
    }

    #[test]
    fn a_reference_pair_calibrates_a_tsc() {
        let hz = 2_000_000_000;
        assert_eq!(
            clock_hz(&ClockInfo {
                kind: ClockKind::Other,
                hz,
                ref_ticks: 0,
                ref_ns: 0
            }),
            Some(hz as f64)
        );
        let none = ClockInfo {
            kind: ClockKind::Tsc,
            hz: 0,
            ref_ticks: 0,
            ref_ns: 0,
        };
        assert_eq!(clock_hz(&none), None);
        if clock_kind() == ClockKind::Tsc {
            let mut info = clock_info();
            // A reference taken 10 ms ago (in nanoseconds and in ticks).
            let rate = ticks_per_second();
            info.ref_ns -= 10_000_000;
            info.ref_ticks -= rate / 100;
            let hz = clock_hz(&info).expect("calibrated");
            assert!((hz / rate as f64 - 1.0).abs() < 0.05, "{hz} vs {rate}");
        }
    }
}
