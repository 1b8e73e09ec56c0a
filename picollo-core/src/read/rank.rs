//! The rank rule: which count a percentile rank asks for ([`rank_count`]), for `f64` ranks and
//! for the fixed-point [`Rank`] of targets without floating point.

use super::error::PercentileError;
use core::fmt;

/// Checks a percentile rank: finite and within `0..=100`.
#[inline]
pub fn check_rank(rank: f64) -> Result<f64, PercentileError> {
    if rank.is_nan() || !(0.0..=100.0).contains(&rank) {
        Err(PercentileError::InvalidRank(rank))
    } else {
        Ok(rank)
    }
}

/// The count a rank asks for among `total` values: Picollo's one rank rule, shared by every
/// percentile path (`f64` and fixed-point ranks, [`Rank::count_of`], `HdrCounts`, summaries,
/// `stat`, `report` and `diff`).
///
/// The rank is read as the decimal it was written as: the one with the fewest decimals (at
/// most 13) that parses back to the same `f64`, which is what `{}` prints (`99.9`, not the
/// binary `99.900000000000005684…`). The count is `ceil(decimal / 100 · total)` computed
/// exactly in integers, then kept within `1..=total` (1 when `total` is 0). No floating-point
/// product decides a count, so `p99.9` of 20,000 values asks for the 19,980th, as HdrHistogram
/// Java's `getValueAtPercentile(99.9)` and the `hdrhistogram` crate's
/// `value_at_quantile(0.999)` do. (The crate's `value_at_percentile(99.9)` computes
/// `99.9 / 100.0 · total` in `f64` and asks for the 19,981st.) A rank with no such decimal
/// (more than 13 decimals, as in `100 · (1 - 2^-40)`) is taken at its exact binary value.
/// `rank` must be within `0..=100` ([`check_rank`]); NaN asks for 1.
///
/// ```
/// use picollo_core::read::rank_count;
/// assert_eq!(rank_count(99.9, 20_000), 19_980);
/// assert_eq!(rank_count(50.0, 1001), 501);
/// assert_eq!(rank_count(0.0, 10), 1);
/// assert_eq!(rank_count(100.0, u64::MAX), u64::MAX);
/// assert_eq!(rank_count(99.999_999_999, 1_000_000_000_000), 999_999_999_990);
/// ```
#[inline]
pub fn rank_count(rank: f64, total: u64) -> u64 {
    if rank.is_nan() || rank <= 0.0 || total == 0 {
        return 1;
    }
    if rank >= 100.0 {
        return total;
    }
    let count = match written_decimal(rank) {
        // At most 7 decimals (every rank people write): a whole number of billionths, which
        // `Rank::count_of` computes in 32-bit operations (no 128-bit division helper).
        Some((parts, 7)) => return Rank(parts as u32).count_of(total),
        // n < 10^15 and total < 2^64: the product fits in u128.
        Some((n, decimals)) => (n as u128 * total as u128).div_ceil(10u128.pow(decimals + 2)),
        None => {
            // The exact binary value m · 2^-shift (rank is normal or subnormal, below 100).
            let bits = rank.to_bits();
            let exp = ((bits >> 52) & 0x7FF) as i32;
            let (m, shift) = if exp == 0 {
                (bits & ((1 << 52) - 1), 1074)
            } else {
                ((bits & ((1 << 52) - 1)) | (1 << 52), 1075 - exp)
            };
            // m < 2^53 and total < 2^64: the product is below 2^117 < 100 · 2^121.
            match u32::try_from(shift).ok().filter(|&s| s <= 120) {
                Some(s) => (m as u128 * total as u128).div_ceil(100u128 << s),
                None => 1,
            }
        }
    };
    count.clamp(1, total as u128) as u64
}

/// The decimal `n / 10^decimals` with the fewest decimals (at most 13) that reads back as
/// `rank` (finite, within `(0, 100)`), or `None`; with at most 7 decimals it is given as
/// `(billionths of 100 %, 7)`, trailing zeros kept.
///
/// Below 100 an `f64`'s rounding interval is narrower than 10^-13, so it holds at most one
/// multiple of 10^-k for each `k <= 13`: the first `k` found gives the shortest decimal, the
/// one `{}` prints. `n as f64 / 10^k` is correctly rounded (`n < 2^53`, `10^k` exact), so it
/// equals `rank` exactly when the decimal parses back to `rank`. Every rank people write has
/// at most 7 decimals, and is found with one multiplication and one division.
fn written_decimal(rank: f64) -> Option<(u64, u32)> {
    // A decimal of at most 7 decimals is m / 10^7, and rank · 10^7 (below 10^9) is within
    // 10^-6 of m.
    let n = (rank * 1e7 + 0.5) as u64;
    if n != 0 && n as f64 / 1e7 == rank {
        return Some((n, 7));
    }
    let mut scale = 1e8f64;
    for decimals in 8..=13u32 {
        let n = (rank * scale + 0.5) as u64;
        for candidate in [n, n.wrapping_sub(1), n + 1] {
            if candidate != 0 && candidate != u64::MAX && candidate as f64 / scale == rank {
                return Some((candidate, decimals));
            }
        }
        scale *= 10.0;
    }
    None
}

/// A percentile rank in fixed point: parts per billion of the values (`100 %` is
/// `1_000_000_000`), so ranks down to `0.0000001 %` steps are exact and no floating point is
/// needed to use them. `const`-constructible:
///
/// ```
/// use picollo_core::Rank;
/// const P50: Rank = Rank::percent(50);
/// const P999: Rank = Rank::parse("99.9").unwrap();
/// const P99999: Rank = Rank::per_billion(999_990_000).unwrap();
/// assert_eq!(P999.per_billion_value(), 999_000_000);
/// assert_eq!(P99999.to_string(), "99.999");
/// assert_eq!(P50.count_of(1001), 501); // ceil(0.5 · 1001)
/// assert!(Rank::parse("100.1").is_none() && Rank::parse("9x").is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rank(u32);

impl Rank {
    /// The denominator: `100 %`.
    pub const SCALE: u32 = 1_000_000_000;
    /// `0 %`: the lowest recorded value.
    pub const MIN: Rank = Rank(0);
    /// `100 %`: the highest recorded value.
    pub const MAX: Rank = Rank(Self::SCALE);

    /// `percent %`, clamped to 100.
    pub const fn percent(percent: u32) -> Rank {
        if percent >= 100 {
            Self::MAX
        } else {
            Rank(percent * (Self::SCALE / 100))
        }
    }

    /// `parts` billionths of the values, or `None` above [`Rank::SCALE`].
    pub const fn per_billion(parts: u32) -> Option<Rank> {
        if parts > Self::SCALE {
            None
        } else {
            Some(Rank(parts))
        }
    }

    /// A decimal percentage such as `"99"`, `"99.9"` or `"99.9999999"` (at most 7 decimals),
    /// or `None` for anything else or above 100. A `const fn`, so ranks can be constants.
    pub const fn parse(text: &str) -> Option<Rank> {
        let bytes = text.as_bytes();
        let (mut i, mut value, mut decimals, mut seen_dot, mut digits) =
            (0, 0u64, 0u32, false, 0u32);
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'.' && !seen_dot {
                seen_dot = true;
            } else if b.is_ascii_digit() {
                if seen_dot {
                    decimals += 1;
                    if decimals > 7 {
                        return None;
                    }
                }
                digits += 1;
                value = value * 10 + (b - b'0') as u64;
                if value > 1_000_000_000 {
                    return None;
                }
            } else {
                return None;
            }
            i += 1;
        }
        if digits == 0 {
            return None;
        }
        while decimals < 7 {
            value *= 10;
            decimals += 1;
        }
        if value > Self::SCALE as u64 {
            None
        } else {
            Some(Rank(value as u32))
        }
    }

    /// The rank in billionths.
    pub const fn per_billion_value(self) -> u32 {
        self.0
    }

    /// The rank as an `f64` percentage (links floating point; the integer paths never call it).
    pub fn as_percent(self) -> f64 {
        self.0 as f64 / (Self::SCALE / 100) as f64
    }

    /// The count this rank asks for among `total` values: `ceil(rank · total)`, at least 1
    /// and at most `total` (HdrHistogram's rule, computed exactly in integers; the `f64`
    /// paths use the same rule, [`rank_count`]).
    pub const fn count_of(self, total: u64) -> u64 {
        let count = mul_div_ceil_billion(total, self.0);
        if count < 1 {
            1
        } else if count > total {
            total
        } else {
            count
        }
    }
}

/// `ceil(total · parts / 10^9)` for `parts <= 10^9`, with 32-bit operations only: no 64-bit
/// division, which on 32-bit cores is a call to `__aeabi_uldivmod` (and its stack frame).
///
/// The product is at most 94 bits, held in three 32-bit limbs. Dividing by
/// `10^9 = 2^9 · 1,953,125` is a 9-bit shift, then a long division by 1,953,125 (below 2^21)
/// in 11-bit digits, so every partial dividend fits 32 bits.
const fn mul_div_ceil_billion(total: u64, parts: u32) -> u64 {
    const ODD: u32 = 1_953_125; // 10^9 / 2^9
    let (t0, t1) = (total as u32, (total >> 32) as u32);
    let a = t0 as u64 * parts as u64;
    let b = t1 as u64 * parts as u64;
    let mid = (a >> 32) + (b as u32 as u64);
    // The product, plus 10^9 - 1 to round the quotient up.
    let mut limbs = [a as u32, mid as u32, ((b >> 32) + (mid >> 32)) as u32];
    let mut carry = 999_999_999u64;
    let mut i = 0;
    while i < 3 {
        let sum = limbs[i] as u64 + carry;
        limbs[i] = sum as u32;
        carry = sum >> 32;
        i += 1;
    }
    // Divide by 2^9.
    limbs = [
        (limbs[0] >> 9) | (limbs[1] << 23),
        (limbs[1] >> 9) | (limbs[2] << 23),
        limbs[2] >> 9,
    ];
    // Long division of the 85-bit value by ODD, 11 bits at a time from the top (bit 88 down).
    let (mut quotient, mut rem) = (0u64, 0u32);
    let mut low_bit = 77;
    loop {
        let (word, offset) = ((low_bit / 32) as usize, low_bit % 32);
        let mut digit = limbs[word] >> offset;
        if offset > 21 && word < 2 {
            digit |= limbs[word + 1] << (32 - offset);
        }
        let partial = (rem << 11) | (digit & 0x7FF);
        quotient = (quotient << 11) | (partial / ODD) as u64;
        rem = partial % ODD;
        if low_bit == 0 {
            return quotient;
        }
        low_bit -= 11;
    }
}

impl fmt::Display for Rank {
    /// The percentage with trailing zeros removed: `99.9`, `50`, `99.9999`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (int, mut frac) = (self.0 / 10_000_000, self.0 % 10_000_000);
        let mut width = 7;
        while width > 0 && frac % 10 == 0 && frac != 0 {
            frac /= 10;
            width -= 1;
        }
        if frac == 0 {
            write!(f, "{int}")
        } else {
            write!(f, "{int}.{frac:0width$}")
        }
    }
}
