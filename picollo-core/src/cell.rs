//! The atomic cells of the shared kinds: native-width words, the read-modify-write capability,
//! and 64-bit counts over 32-bit atomics. Everything here is lock-free on every target.
//!
//! # Native width, never a lock
//!
//! `portable-atomic` can emulate atomics wider than the target's (64-bit ones on a Cortex-M)
//! with a global spinlock. An interrupt handler that records while the code it interrupted
//! holds that lock spins forever: a firmware deadlock. So this crate never uses an atomic wider
//! than the target has. Each shared word is a [`Word`] (`u64` where the target has 64-bit
//! atomics, `u32` elsewhere), and a 64-bit count on a 32-bit target is a `WideCounter`: two
//! 32-bit halves with a carry. A compile-time assertion proves, for every atomic type a record
//! path touches, that `is_always_lock_free()` holds on the target being built (with the
//! `critical-section` feature, read-modify-writes run inside critical sections instead, which
//! an interrupt cannot enter either).
//!
//! # Targets without compare-and-swap
//!
//! `thumbv6m-none-eabi` and `riscv32imc-unknown-none-elf` have atomic loads and stores but no
//! read-modify-write instructions. The plain [`crate::Histogram`] needs none and builds there
//! with no cfg and no feature. The kinds that need them ([`crate::AtomicHistogram`],
//! [`crate::approx::ApproxHistogram`], [`crate::scalable::ScalableCounter`]) still compile,
//! but calling one of their writing methods without a way to make read-modify-writes atomic is
//! a compile error that names the options (see [`RmwAtomic`]):
//!
//! - `--cfg portable_atomic_unsafe_assume_single_core` or this crate's
//!   `unsafe-assume-single-core` feature: single-core chips, interrupts are disabled around each
//!   read-modify-write;
//! - this crate's `critical-section` feature, with a `critical-section` implementation for the
//!   platform: multi-core chips or any custom scheme.

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

pub use portable_atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU8, Ordering};

#[cfg(target_has_atomic = "64")]
pub use portable_atomic::AtomicU64;

/// The widest unsigned integer this target updates atomically without a lock: `u64` where the
/// target has 64-bit atomics, `u32` elsewhere (all 32-bit microcontrollers).
#[cfg(target_has_atomic = "64")]
pub type Word = u64;
/// The widest unsigned integer this target updates atomically without a lock: `u64` where the
/// target has 64-bit atomics, `u32` elsewhere (all 32-bit microcontrollers).
#[cfg(not(target_has_atomic = "64"))]
pub type Word = u32;

/// The atomic [`Word`]: the version words and scalable cells of the shared kinds.
#[cfg(target_has_atomic = "64")]
pub type AtomicWord = AtomicU64;
/// The atomic [`Word`]: the version words and scalable cells of the shared kinds.
#[cfg(not(target_has_atomic = "64"))]
pub type AtomicWord = AtomicU32;

// Every atomic type a record path touches is lock-free on the target being built: checked at
// compile time, so each target CI builds proves it. (With the `critical-section` feature the
// read-modify-writes are critical sections by the user's choice, and `portable-atomic` reports
// them as not lock-free.)
#[cfg(not(feature = "critical-section"))]
const _: () = {
    assert!(AtomicU8::is_always_lock_free());
    assert!(AtomicU16::is_always_lock_free());
    assert!(AtomicU32::is_always_lock_free());
    assert!(AtomicWord::is_always_lock_free());
};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::AtomicU16 {}
    impl Sealed for super::AtomicU32 {}
    #[cfg(target_has_atomic = "64")]
    impl Sealed for super::AtomicU64 {}
}

/// The read-modify-write operations of an atomic cell; implemented (sealed) for
/// [`AtomicU16`], [`AtomicU32`] and, where native, [`AtomicU64`], on every target that can
/// make them atomic.
///
/// The methods that write a shared kind carry the bound
/// `for<'a> AtomicWord: RmwAtomic<Word>`. It
/// always holds on targets with compare-and-swap. On targets without it (thumbv6m,
/// riscv32imc) it holds only when the firmware chose how read-modify-writes become atomic, and
/// otherwise the call fails to compile with this trait's message, which names the choices. The
/// plain histogram never needs it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no read-modify-write operations on this target (no compare-and-swap)",
    label = "the atomic and approximate histograms and the scalable counter need read-modify-write atomics",
    note = "single-core chip: build with `--cfg portable_atomic_unsafe_assume_single_core` (or enable picollo-core's `unsafe-assume-single-core` feature)",
    note = "otherwise enable picollo-core's `critical-section` feature and provide a `critical-section` implementation",
    note = "the plain `Histogram` needs neither: share it through a critical section instead"
)]
pub trait RmwAtomic<T>: sealed::Sealed + Sync + Send + 'static {
    /// `fetch_add`, wrapping.
    fn rmw_add(&self, value: T, order: Ordering) -> T;
    /// `fetch_or`.
    fn rmw_or(&self, value: T, order: Ordering) -> T;
    /// `swap`.
    fn rmw_swap(&self, value: T, order: Ordering) -> T;
    /// `compare_exchange`.
    fn rmw_cas(&self, current: T, new: T, success: Ordering, failure: Ordering) -> Result<T, T>;
    /// `compare_exchange_weak`.
    fn rmw_cas_weak(
        &self,
        current: T,
        new: T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<T, T>;
}

macro_rules! rmw_atomic {
    ($atomic:ty, $value:ty) => {
        #[cfg(picollo_rmw)]
        impl RmwAtomic<$value> for $atomic {
            #[inline(always)]
            fn rmw_add(&self, value: $value, order: Ordering) -> $value {
                self.fetch_add(value, order)
            }
            #[inline(always)]
            fn rmw_or(&self, value: $value, order: Ordering) -> $value {
                self.fetch_or(value, order)
            }
            #[inline(always)]
            fn rmw_swap(&self, value: $value, order: Ordering) -> $value {
                self.swap(value, order)
            }
            #[inline(always)]
            fn rmw_cas(
                &self,
                current: $value,
                new: $value,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$value, $value> {
                self.compare_exchange(current, new, success, failure)
            }
            #[inline(always)]
            fn rmw_cas_weak(
                &self,
                current: $value,
                new: $value,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$value, $value> {
                self.compare_exchange_weak(current, new, success, failure)
            }
        }
    };
}

rmw_atomic!(AtomicU16, u16);
rmw_atomic!(AtomicU32, u32);
#[cfg(target_has_atomic = "64")]
rmw_atomic!(AtomicU64, u64);

/// A `u64` count that any number of writers (threads, interrupt handlers) add to, lock-free on
/// every target: the underflow and overflow counts of the shared kinds.
///
/// Where the target has 64-bit atomics it is one `AtomicU64`. Elsewhere it is two `AtomicU32`
/// halves: an add goes into the low half with `fetch_add`, and a carry out of it (or the high
/// half of a large add) goes into the high half with a second `fetch_add`. A read takes the
/// high half, the low half, then the high half again, and retries if the high half moved.
/// The one visible artefact: a read that falls between a carrying add's two steps (a few
/// instructions, once every 2^32 counts) sees the count 2^32 too low until the second step
/// lands. Counts are never lost.
///
/// Like the `u64` bucket counters ([`crate::Counter`]) it saturates at `2^63 - 1`.
#[derive(Default)]
pub(crate) struct WideCounter {
    #[cfg(target_has_atomic = "64")]
    value: AtomicU64,
    #[cfg(not(target_has_atomic = "64"))]
    halves: SplitCounter,
}

impl WideCounter {
    /// The largest count: `2^63 - 1`.
    pub(crate) const MAX: u64 = i64::MAX as u64;

    /// A zero count.
    pub(crate) const fn new() -> Self {
        WideCounter {
            #[cfg(target_has_atomic = "64")]
            value: AtomicU64::new(0),
            #[cfg(not(target_has_atomic = "64"))]
            halves: SplitCounter::new(),
        }
    }

    /// Adds `n` (relaxed), saturating at [`WideCounter::MAX`].
    #[inline]
    pub(crate) fn add(&self, n: u64)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        #[cfg(target_has_atomic = "64")]
        {
            let n = n.min(Self::MAX);
            let old = self.value.rmw_add(n, Ordering::Relaxed);
            if old.saturating_add(n) > Self::MAX {
                self.value.store(Self::MAX, Ordering::Relaxed);
            }
        }
        #[cfg(not(target_has_atomic = "64"))]
        self.halves.add(n);
    }

    /// The count (relaxed).
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        #[cfg(target_has_atomic = "64")]
        return self.value.load(Ordering::Relaxed);
        #[cfg(not(target_has_atomic = "64"))]
        return self.halves.get();
    }

    /// Sets the count to zero (relaxed stores; the shared kinds sequence this with their
    /// version, see [`crate::atomic::SharedState::reset`]).
    #[inline]
    pub(crate) fn clear(&self) {
        #[cfg(target_has_atomic = "64")]
        self.value.store(0, Ordering::Relaxed);
        #[cfg(not(target_has_atomic = "64"))]
        self.halves.clear();
    }
}

/// The two-halves `u64` count of [`WideCounter`] on targets without 64-bit atomics (and in
/// the host tests, which check it directly).
#[cfg(any(test, not(target_has_atomic = "64")))]
#[derive(Default)]
pub(crate) struct SplitCounter {
    low: AtomicU32,
    high: AtomicU32,
}

#[cfg(any(test, not(target_has_atomic = "64")))]
impl SplitCounter {
    /// The high half's cap: with the low half full, the count is `2^63 - 1`.
    const HIGH_MAX: u32 = (WideCounter::MAX >> 32) as u32;

    pub(crate) const fn new() -> Self {
        SplitCounter {
            low: AtomicU32::new(0),
            high: AtomicU32::new(0),
        }
    }

    #[inline]
    pub(crate) fn add(&self, n: u64)
    where
        for<'a> AtomicU32: RmwAtomic<u32>,
    {
        let n = n.min(WideCounter::MAX);
        let (low, high) = (n as u32, (n >> 32) as u32);
        let old_low = self.low.rmw_add(low, Ordering::Relaxed);
        // A carry out of the low half; `high` is below 2^31, so this cannot wrap.
        let high = high + old_low.checked_add(low).is_none() as u32;
        if high != 0 {
            let old_high = self.high.rmw_add(high, Ordering::Relaxed);
            if old_high.saturating_add(high) > Self::HIGH_MAX {
                self.saturate();
            }
        }
    }

    #[cold]
    fn saturate(&self) {
        self.high.store(Self::HIGH_MAX, Ordering::Relaxed);
        self.low.store(u32::MAX, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn get(&self) -> u64 {
        loop {
            let high = self.high.load(Ordering::Acquire);
            let low = self.low.load(Ordering::Acquire);
            if self.high.load(Ordering::Acquire) == high {
                return ((high as u64) << 32) | low as u64;
            }
            core::hint::spin_loop();
        }
    }

    #[inline]
    pub(crate) fn clear(&self) {
        self.high.store(0, Ordering::Relaxed);
        self.low.store(0, Ordering::Relaxed);
    }
}

impl core::fmt::Debug for WideCounter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("WideCounter").field(&self.get()).finish()
    }
}

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
impl defmt::Format for WideCounter {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=u64}", self.get())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn split_counter_carries_into_the_high_half() {
        let c = SplitCounter::new();
        c.add(u32::MAX as u64);
        assert_eq!(c.get(), u32::MAX as u64);
        c.add(1);
        assert_eq!(c.get(), 1 << 32);
        c.add(3 << 32 | 5);
        assert_eq!(c.get(), (4 << 32) + 5);
        c.add(u32::MAX as u64); // carry with a non-zero low half
        assert_eq!(c.get(), (5 << 32) + 4);
        c.clear();
        assert_eq!(c.get(), 0);
    }

    #[test]
    fn split_counter_saturates_like_u64_counters() {
        let c = SplitCounter::new();
        c.add(u64::MAX);
        assert_eq!(c.get(), WideCounter::MAX);
        c.add(1 << 40);
        assert_eq!(c.get(), WideCounter::MAX);
        let d = SplitCounter::new();
        d.add(WideCounter::MAX - 1);
        d.add(1);
        assert_eq!(d.get(), WideCounter::MAX);
    }

    #[test]
    fn split_counter_loses_nothing_under_two_writers() {
        let c = SplitCounter::new();
        // Each step carries often: 2^31 + 3 crosses the low half every other add.
        let (step, per_thread) = ((1u64 << 31) + 3, if cfg!(miri) { 50 } else { 200_000 });
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| (0..per_thread).for_each(|_| c.add(step)));
            }
        });
        assert_eq!(c.get(), 2 * per_thread * step);
    }

    #[test]
    fn wide_counter_counts_and_clears() {
        let c = WideCounter::new();
        c.add(7);
        c.add(1 << 33);
        assert_eq!(c.get(), (1 << 33) + 7);
        c.add(u64::MAX);
        assert_eq!(c.get(), WideCounter::MAX);
        c.clear();
        assert_eq!(c.get(), 0);
    }
}
