//! [`ScalableCell`]: the one-word state of a scalable counter (the estimate and the
//! contended flag) and the update rule: `inc`, `add`, their exact, probabilistic and
//! saturating paths, reads and resets.

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

use super::{
    RandomSource, ScalableConfig, BITS, CONTENDED, FAST_DELTA_MAX, FAST_SHIFT_MAX, GUARD,
    VALUE_MASK,
};
use crate::cell::{AtomicWord, Ordering, RmwAtomic, Word};
use core::fmt;

/// The state of one scalable counter (one native atomic [`Word`]: 8 bytes, or 4 on targets
/// without 64-bit atomics), driven by a [`ScalableConfig`] passed to each call: the building block for arrays of counters that share one configuration (an
/// approximate histogram's buckets). [`ScalableCounter`](super::ScalableCounter) bundles a cell with its configuration.
///
/// Use one configuration per cell consistently; mixing configurations on one cell keeps the
/// estimate unbiased but makes [`ScalableConfig::predicted_variance`] meaningless.
///
/// ```
/// use picollo_core::scalable::{ScalableCell, ScalableConfig, XorShift};
///
/// const CFG: ScalableConfig = ScalableConfig::new().with_threshold(10);
/// static BUCKETS: [ScalableCell; 4] = [const { ScalableCell::new() }; 4];
///
/// let mut rng = XorShift::new(7);
/// for i in 0..1000u64 {
///     BUCKETS[(i % 4) as usize].inc(CFG, &mut rng);
/// }
/// assert!(BUCKETS.iter().all(|b| b.get() == 250)); // below 2^10: exact
/// ```
#[repr(transparent)]
#[derive(Default)]
pub struct ScalableCell {
    /// The top bit: contended flag. The other bits: the estimate.
    pub(super) word: AtomicWord,
}

impl ScalableCell {
    /// The largest estimate a cell holds: `2^63 - 1` with 64-bit atomics, `2^31 - 1` on
    /// targets without them (32-bit microcontrollers). It saturates there instead of wrapping.
    pub const MAX: u64 = VALUE_MASK as u64;

    /// A zero cell, not contended.
    pub const fn new() -> Self {
        Self {
            word: AtomicWord::new(0),
        }
    }

    /// Counts one event (see the [module documentation](crate::scalable) for the rule).
    #[inline]
    pub fn inc<R: RandomSource + ?Sized>(&self, config: ScalableConfig, rng: &mut R)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.inc_with(&config, rng)
    }

    /// [`ScalableCell::inc`] with the configuration by reference: each field is read where a
    /// path uses it, after the cell's load (a copy made at the call would load all of them
    /// first, on every increment of a loop, since the cold calls inside may write memory).
    #[inline]
    pub(super) fn inc_with<R: RandomSource + ?Sized>(&self, config: &ScalableConfig, rng: &mut R)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        let word = self.word.load(Ordering::Relaxed);
        // The hot path under contention: the value's bit length `b` from one bit scan (the
        // flag shifted out, a low one so the scan has a non-zero input), and one range check
        // of `b` for `2^t <= value < GUARD`, where `k = min(b - t, c)` and the draw is
        // shifted by `32 - k = (32 + t) - min(b, t + c)`. Taken when the cell is contended
        // (flag set) or the configuration has no CAS refinement; everything else is the
        // general path below, unchanged.
        let bits = ((word << 1) | 1).ilog2();
        if (word >= CONTENDED || !config.exact_while_uncontended)
            && bits.wrapping_sub(config.band_lo as u32) < config.band_len as u32
        {
            let capped = if bits > config.cap_bits as u32 {
                config.cap_bits as u32
            } else {
                bits
            };
            // 1 <= k <= c <= 32: the shift is in 0..=31.
            let shift = config.shift_base as u32 - capped;
            if rng.next_u32() >> shift == 0 {
                self.add_step(32 - shift);
            }
            return;
        }
        self.inc_general(word, config, rng)
    }

    /// [`ScalableCell::inc`] off its hot path: below the threshold, exact while uncontended,
    /// near saturation, and a flag that does not match the configuration (a cell used with
    /// two configurations).
    #[inline]
    pub(super) fn inc_general<R: RandomSource + ?Sized>(
        &self,
        word: Word,
        config: &ScalableConfig,
        rng: &mut R,
    ) where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        if word < config.exact_limit() {
            // Below the threshold, not contended (the flag is the top bit) and below GUARD.
            self.word.rmw_add(1, Ordering::Relaxed);
            return;
        }
        if word < CONTENDED && config.exact_while_uncontended {
            return self.inc_uncontended(word, config, rng);
        }
        if word & GUARD != 0 {
            // The value is at least 2^62 (it has 63 bits, so bit 62 says so).
            return self.inc_saturating(
                config.threshold,
                config.max_shift,
                config.exact_while_uncontended,
                rng.next_u32(),
            );
        }
        if word & VALUE_MASK < config.exact_limit() {
            // A flag set below the threshold (a reset raced with the flag's setting), or with
            // `max_shift == 0` (every increment exact): exact, and below GUARD.
            self.word.rmw_add(1, Ordering::Relaxed);
            return;
        }
        // Here 2^t <= value < GUARD, so 1 <= k <= c.
        let k = config.shift_above(word);
        if rng.next_u32() >> (32 - k) == 0 {
            self.add_step(k);
        }
    }

    /// Adds `2^k` to a cell last observed below `GUARD`: `fetch_add`, or the saturating loop
    /// for steps too large for the fast path (only 32-bit cells with shifts above 20; the test
    /// folds away on 64-bit cells, where `k <= 32`).
    #[inline(always)]
    fn add_step(&self, k: u32)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        if BITS == 64 || k <= FAST_SHIFT_MAX {
            self.word.rmw_add((1 as Word) << k, Ordering::Relaxed);
        } else {
            self.add_saturating(1 << k);
        }
    }

    /// Exact while uncontended: a CAS of `+1`; on failure, mark the cell contended and make
    /// this increment probabilistic, with `k` taken from the value the CAS saw.
    #[inline]
    pub(super) fn inc_uncontended<R: RandomSource + ?Sized>(
        &self,
        word: Word,
        config: &ScalableConfig,
        rng: &mut R,
    ) where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        if word >= GUARD {
            // Exact, near saturation.
            return self.add_saturating(1);
        }
        let Err(now) = self
            .word
            .rmw_cas(word, word + 1, Ordering::Relaxed, Ordering::Relaxed)
        else {
            return;
        };
        self.mark_contended();
        let value = now & VALUE_MASK;
        if value < config.exact_limit() {
            // A reset raced with this increment: below the threshold counts are exact.
            self.word.rmw_add(1, Ordering::Relaxed);
        } else if value >= GUARD {
            self.inc_saturating(
                config.threshold,
                config.max_shift,
                config.exact_while_uncontended,
                rng.next_u32(),
            );
        } else {
            let k = config.shift_above(value);
            if rng.next_u32() >> (32 - k) == 0 {
                self.add_step(k);
            }
        }
    }

    /// Values at or above `GUARD` (reachable only through huge `add`s): the same rule, applied
    /// with a saturating CAS loop. The caller draws `random`, so that the generator's state
    /// never escapes the hot loop into memory, and passes the configuration as scalars, so
    /// that the hot loop does not spill it to the stack for this call.
    #[cold]
    #[inline(never)]
    fn inc_saturating(&self, threshold: u8, max_shift: u8, exact: bool, random: u32)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        let config = ScalableConfig::build(threshold as u32, max_shift as u32, exact);
        let word = self.word.load(Ordering::Relaxed);
        if word < CONTENDED && config.exact_while_uncontended {
            return self.add_saturating(1);
        }
        let k = config.shift_for(word as u64);
        if k == 0 || random >> (32 - k) == 0 {
            self.add_saturating(1 << k);
        }
    }

    /// Counts `n` events at once, unbiased: exactly `n` below the threshold or while
    /// uncontended; otherwise `n` rounded down to a multiple of `2^k`, plus `2^k` with
    /// probability `(n mod 2^k) / 2^k`. At most one write.
    #[inline]
    pub fn add<R: RandomSource + ?Sized>(&self, config: ScalableConfig, n: u64, rng: &mut R)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        if n == 0 {
            return;
        }
        let mut word = self.word.load(Ordering::Relaxed);
        if word < config.exact_limit() {
            return self.apply(word, n);
        }
        if word < CONTENDED && config.exact_while_uncontended {
            if word >= GUARD || n > FAST_DELTA_MAX {
                // Exact, but near saturation or huge: a saturating CAS loop.
                return self.add_saturating(n);
            }
            // `n <= FAST_DELTA_MAX` fits a word.
            match self
                .word
                .rmw_cas(word, word + n as Word, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => {
                    self.mark_contended();
                    word = now;
                }
            }
        }
        let k = config.shift_for(word as u64);
        let mask = (1u64 << k) - 1;
        let remainder = n & mask;
        let mut delta = n & !mask;
        // `k >= 1` whenever `remainder != 0`, so the shift is in 0..=31.
        if remainder != 0 && u64::from(rng.next_u32() >> (32 - k)) < remainder {
            delta = delta.saturating_add(1 << k);
        }
        if delta != 0 {
            self.apply(word, delta);
        }
    }

    /// Adds `delta` to a cell last observed as `word`.
    #[inline]
    fn apply(&self, word: Word, delta: u64)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        if word & VALUE_MASK < GUARD && delta <= FAST_DELTA_MAX {
            // `delta <= FAST_DELTA_MAX` fits a word.
            self.word.rmw_add(delta as Word, Ordering::Relaxed);
        } else {
            self.add_saturating(delta);
        }
    }

    #[cold]
    #[inline(never)]
    fn add_saturating(&self, delta: u64)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            let value = ((w & VALUE_MASK) as u64)
                .saturating_add(delta)
                .min(VALUE_MASK as u64);
            let new = (w & CONTENDED) | value as Word;
            match self
                .word
                .rmw_cas_weak(w, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn mark_contended(&self)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.word.rmw_or(CONTENDED, Ordering::Relaxed);
    }

    /// The estimate: an unbiased estimate of the number of events counted since the last
    /// reset. One relaxed load.
    #[inline]
    pub fn get(&self) -> u64 {
        (self.word.load(Ordering::Relaxed) & VALUE_MASK) as u64
    }

    /// Whether an exact-while-uncontended CAS has failed since the last reset, so that
    /// increments at or above the threshold are probabilistic. Always `false` when the
    /// refinement is off.
    #[inline]
    pub fn is_contended(&self) -> bool {
        self.word.load(Ordering::Relaxed) & CONTENDED != 0
    }

    /// Sets the estimate to 0 and clears the contended flag. Increments racing with the reset
    /// land either before it (and are lost) or after it.
    pub fn reset(&self) {
        self.word.store(0, Ordering::Relaxed);
    }

    /// Returns the estimate and resets the cell in one atomic swap, so no increment is lost
    /// between reading and resetting.
    pub fn take(&self) -> u64
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        (self.word.rmw_swap(0, Ordering::Relaxed) & VALUE_MASK) as u64
    }
}

impl fmt::Debug for ScalableCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.word.load(Ordering::Relaxed);
        f.debug_struct("ScalableCell")
            .field("estimate", &(word & VALUE_MASK))
            .field("contended", &(word & CONTENDED != 0))
            .finish()
    }
}

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
impl defmt::Format for ScalableCell {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "ScalableCell {{ estimate: {=u64}, contended: {=bool} }}",
            self.get(),
            self.is_contended()
        )
    }
}
