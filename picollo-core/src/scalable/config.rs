//! [`ScalableConfig`]: a counter's threshold, granularity cap and exact-while-uncontended
//! refinement, the shift a value calls for, the predicted variance, and the fields the hot
//! path of [`ScalableCell::inc`](super::ScalableCell::inc) reads, precomputed.

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

use super::{BITS, GUARD, GUARD_LOG2, VALUE_MASK};
use crate::cell::Word;

/// The parameters of a scalable counter: threshold, granularity cap and the exact-while-
/// uncontended refinement. `Copy`, 16 bytes, const-constructible.
///
/// Out-of-range values are clamped, never rejected: the threshold to
/// [`ScalableConfig::MAX_THRESHOLD`], the cap to [`ScalableConfig::MAX_MAX_SHIFT`].
///
/// ```
/// use picollo_core::scalable::ScalableConfig;
///
/// // The paper's original scheme: threshold 13, no cap, no CAS refinement.
/// const SEED: ScalableConfig = ScalableConfig::new()
///     .with_max_shift(ScalableConfig::MAX_MAX_SHIFT)
///     .with_exact_while_uncontended(false);
/// assert_ne!(SEED, ScalableConfig::new()); // the default caps the step at 2^10
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ScalableConfig {
    /// The value below which increments are a plain `fetch_add(1)`: `2^threshold`, or `GUARD`
    /// when `max_shift == 0` (nothing is ever probabilistic). Precomputed: the hot path
    /// compares the counter word with it directly.
    pub(super) exact_limit: Word,
    /// Counts exactly below `2^threshold`. At most `MAX_THRESHOLD`.
    pub(super) threshold: u8,
    /// The cap `c` on the shift `k`. At most `MAX_MAX_SHIFT`.
    pub(super) max_shift: u8,
    /// Try a CAS of `+1` first, until the first failure.
    pub(super) exact_while_uncontended: bool,
    /// The probabilistic band, as bit lengths of the value: `band_lo ..= BITS - 2`
    /// (`2^t <= value < GUARD`), `band_len` of them (0 when `max_shift == 0`). Precomputed
    /// for the hot path ([`ScalableCell::inc`]), as are the two below.
    pub(super) band_lo: u8,
    pub(super) band_len: u8,
    /// `t + c`: the bit length from which the shift is capped.
    pub(super) cap_bits: u8,
    /// `32 + t`: the draw's shift is `shift_base - min(bit_length, cap_bits)`, which is
    /// `32 - k`.
    pub(super) shift_base: u8,
}

impl ScalableConfig {
    /// The paper's threshold: exact below `2^13 = 8192`.
    pub const DEFAULT_THRESHOLD: u32 = 13;
    /// Default cap on the shift: no update rarer than 1/1024, the figure the note quotes.
    pub const DEFAULT_MAX_SHIFT: u32 = 10;
    /// Largest accepted threshold; larger ones are clamped.
    pub const MAX_THRESHOLD: u32 = GUARD_LOG2;
    /// Largest accepted cap: steps up to `2^32`, update probability down to `2^-32`.
    /// A cap this high means "uncapped" for any count a machine can reach.
    pub const MAX_MAX_SHIFT: u32 = 32;

    /// The default configuration: threshold 13, cap 10, exact while uncontended.
    pub const fn new() -> Self {
        Self::build(Self::DEFAULT_THRESHOLD, Self::DEFAULT_MAX_SHIFT, true)
    }

    pub(super) const fn build(
        threshold: u32,
        max_shift: u32,
        exact_while_uncontended: bool,
    ) -> Self {
        let threshold = if threshold > Self::MAX_THRESHOLD {
            Self::MAX_THRESHOLD
        } else {
            threshold
        };
        let max_shift = if max_shift > Self::MAX_MAX_SHIFT {
            Self::MAX_MAX_SHIFT
        } else {
            max_shift
        };
        let exact_limit = if max_shift == 0 {
            GUARD
        } else {
            1 << threshold
        };
        Self {
            exact_limit,
            threshold: threshold as u8,
            max_shift: max_shift as u8,
            exact_while_uncontended,
            band_lo: (threshold + 1) as u8,
            band_len: if max_shift == 0 {
                0
            } else {
                (GUARD_LOG2 - threshold) as u8
            },
            cap_bits: (threshold + max_shift) as u8,
            shift_base: (32 + threshold) as u8,
        }
    }

    /// This configuration with exact counting below `2^threshold` (clamped to
    /// [`ScalableConfig::MAX_THRESHOLD`]). Higher is more accurate and less scalable: see the
    /// [module documentation](crate::scalable) for the error as a function of the threshold.
    #[must_use]
    pub const fn with_threshold(self, threshold: u32) -> Self {
        Self::build(
            threshold,
            self.max_shift as u32,
            self.exact_while_uncontended,
        )
    }

    /// This configuration with the shift capped at `max_shift` (clamped to
    /// [`ScalableConfig::MAX_MAX_SHIFT`]): no update adds more than `2^max_shift`.
    /// `0` disables probabilistic counting altogether (every increment is exact).
    #[must_use]
    pub const fn with_max_shift(self, max_shift: u32) -> Self {
        Self::build(
            self.threshold as u32,
            max_shift,
            self.exact_while_uncontended,
        )
    }

    /// This configuration with the exact-while-uncontended refinement on or off.
    ///
    /// On (the default), a single writer counts exactly, at the cost of one CAS per increment
    /// until the first collision. Off, every increment above the threshold is probabilistic,
    /// which is cheapest for a single writer too.
    #[must_use]
    pub const fn with_exact_while_uncontended(self, on: bool) -> Self {
        Self::build(self.threshold as u32, self.max_shift as u32, on)
    }

    /// The threshold `t`: counts are exact below `2^t`.
    pub const fn threshold(self) -> u32 {
        self.threshold as u32
    }

    /// The cap `c` on the shift: no update adds more than `2^c`.
    pub const fn max_shift(self) -> u32 {
        self.max_shift as u32
    }

    /// The shift `k` a probabilistic update uses when it observes `value`: it adds `2^k` with
    /// probability `2^-k`. `0` means an exact `+1`.
    ///
    /// `k = 0` below `2^t`, then `min(bit_length(value) - t, c)`: 1 on `[2^t, 2^(t+1))`,
    /// 2 on the next octave, and so on up to the cap `c`.
    pub(crate) const fn shift_for(self, value: u64) -> u32 {
        // Below 2^t the bit length is at most t, so k = 0 there without a separate test.
        let bit_length = 64 - (value & VALUE_MASK as u64).leading_zeros();
        let k = bit_length.saturating_sub(self.threshold as u32);
        if k > self.max_shift as u32 {
            self.max_shift as u32
        } else {
            k
        }
    }

    /// The predicted variance of the estimate after `n` increments, when every increment at or
    /// above the threshold is probabilistic (the contended case; exact increments only lower
    /// it). `sqrt(predicted_variance(n)) / n` is the relative standard deviation.
    ///
    /// It sums `2^k - 1` per increment, taking the `2^m` increments of octave `[2^m, 2^(m+1))`
    /// to run at that octave's shift. This first-order model matched the measured variance of
    /// this module's accuracy tests within their sampling error.
    ///
    /// ```
    /// use picollo_core::scalable::ScalableConfig;
    ///
    /// let cfg = ScalableConfig::new();
    /// assert_eq!(cfg.predicted_variance(8192), 0.0); // exact below the threshold
    /// let n = 20_000_000.0;
    /// let sigma_rel = cfg.predicted_variance(20_000_000).sqrt() / n;
    /// assert!(sigma_rel > 0.006 && sigma_rel < 0.007);
    /// ```
    pub fn predicted_variance(self, n: u64) -> f64 {
        let n = n.min(VALUE_MASK as u64);
        let mut variance = 0.0;
        let mut octave = self.exact_limit.trailing_zeros();
        while octave < 63 {
            let lo = 1u64 << octave;
            if n <= lo {
                break;
            }
            let next = 1u64 << (octave + 1);
            let hi = if n < next { n } else { next };
            let k = self.shift_for(lo);
            let per_increment = ((1u64 << k) - 1) as f64;
            variance += (hi - lo) as f64 * per_increment;
            octave += 1;
        }
        variance
    }

    /// [`ScalableConfig::shift_for`] for a word whose value is known to be at least
    /// `2^threshold` (so `bit_length - t >= 1`), without the saturating subtraction.
    #[inline]
    pub(super) const fn shift_above(self, word: Word) -> u32 {
        // bit_length - t = (BITS - 1 - lzcnt) + 1 - t.
        let log2 = (BITS - 1).wrapping_sub((word & VALUE_MASK).leading_zeros());
        let k = log2.wrapping_add(1).wrapping_sub(self.threshold as u32);
        if k > self.max_shift as u32 {
            self.max_shift as u32
        } else {
            k
        }
    }

    /// The value below which an increment is a plain `fetch_add(1)`.
    #[inline]
    pub(super) const fn exact_limit(self) -> Word {
        self.exact_limit
    }
}

impl Default for ScalableConfig {
    fn default() -> Self {
        Self::new()
    }
}
