//! The rank rule: which count a percentile rank asks for ([`rank_count`], HdrHistogram Java's
//! count for `f64` ranks), and the fixed-point [`Rank`] of targets without floating point.

use super::error::PercentileError;
use core::fmt;

/// Checks a percentile rank: finite and within `0..=100`.
#[inline]
pub(crate) fn check_rank(rank: f64) -> Result<f64, PercentileError> {
    if rank.is_nan() || !(0.0..=100.0).contains(&rank) {
        Err(PercentileError::InvalidRank(rank))
    } else {
        Ok(rank)
    }
}

/// The count a rank asks for among `total` values: Picollo's one rank rule for `f64` ranks,
/// shared by every `f64` percentile path (`percentile`, `percentiles`, `HdrCounts`, summaries,
/// `stat`, `report` and `diff`).
///
/// It is HdrHistogram Java's `getValueAtPercentile` count (2.1.10 and later), computed the way
/// Java computes it, so that it is Java's count for every `f64` rank and every total: the rank
/// lowered by one ulp (Java's `Math.nextAfter(p, -∞)`, so that the binary value of a decimal
/// such as `99.9`, `99.900000000000005684…`, does not ask for one value more than the decimal
/// does), clamped to `0..=100`, then `ceil(p · total / 100)` in `f64` (the product first, then
/// the division, as Java writes it), at least 1. So `p99.9` of 20,000 values asks for the
/// 19,980th, as Java's `getValueAtPercentile(99.9)` and the `hdrhistogram` crate's
/// `value_at_quantile(0.999)` do (the crate's `value_at_percentile(99.9)` computes
/// `99.9 / 100.0 · total` and asks for the 19,981st), and `p50.00000000000001` of two values
/// asks for the first, as in Java.
///
/// Where this differs from Java, and why: above 2^53 values Java's `f64` total is rounded, so
/// its count can pass the total (Java then walks off its counts array and reports 0) or miss
/// the last value at 100 %; Picollo keeps the count within `1..=total` (1 when `total` is 0)
/// and asks for the last value at 100 % and above. NaN asks for 1, as in Java. The
/// integer path ([`Rank::count_of`]) computes the exact ceiling instead, which is this count
/// wherever Java's `f64` rounding is exact enough (see there).
///
/// ```
/// use picollo_core::read::rank_count;
/// assert_eq!(rank_count(99.9, 20_000), 19_980);
/// assert_eq!(rank_count(50.0, 1001), 501);
/// assert_eq!(rank_count(0.0, 10), 1);
/// assert_eq!(rank_count(50.000_000_000_000_01, 2), 1); // Java's getValueAtPercentile: 1
/// assert_eq!(rank_count(50.000_000_000_000_1, 2), 2); // and 2
/// assert_eq!(rank_count(100.0, u64::MAX), u64::MAX);
/// assert_eq!(rank_count(99.999_999_999, 1_000_000_000_000), 999_999_999_990);
/// ```
#[inline]
pub fn rank_count(rank: f64, total: u64) -> u64 {
    if rank >= 100.0 {
        // Java's count for every total it can count exactly (below 2^53); past that its `f64`
        // total is rounded, and 100 % stays the last value here.
        return total.max(1);
    }
    // Java: min(max(nextAfter(p, -inf), 0), 100); NaN stays NaN and asks for 1 below.
    let lowered = next_down(rank);
    let requested = if lowered.is_nan() {
        lowered
    } else {
        lowered.clamp(0.0, 100.0)
    };
    let fractional = (requested * total as f64) / 100.0;
    ceil_to_u64(fractional).clamp(1, total.max(1))
}

/// The next `f64` below `x` (Java's `Math.nextAfter(x, Double.NEGATIVE_INFINITY)`): NaN for
/// NaN, the smallest negative subnormal for either zero. (`f64::next_down` is newer than this
/// crate's minimum Rust.)
#[inline]
fn next_down(x: f64) -> f64 {
    let bits = x.to_bits();
    if x.is_nan() || x == f64::NEG_INFINITY {
        x
    } else if x == 0.0 {
        -f64::from_bits(1)
    } else if bits >> 63 == 0 {
        f64::from_bits(bits - 1)
    } else {
        f64::from_bits(bits + 1)
    }
}

/// `ceil(x)` as `u64`, as Java's `(long) Math.ceil(x)` for the values a count can take: 0 for
/// NaN and below 1, saturating at `u64::MAX` (`core` has no `f64::ceil` without std).
#[inline]
fn ceil_to_u64(x: f64) -> u64 {
    // `as` truncates towards zero and saturates (NaN gives 0); from 2^52 on every f64 is whole.
    let whole = x as u64;
    if (whole as f64) < x && x < 4_503_599_627_370_496.0 {
        whole + 1
    } else {
        whole
    }
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
/// assert_eq!(P999, Rank::per_billion(999_000_000).unwrap());
/// assert_eq!(P99999.to_string(), "99.999");
/// assert_eq!(P50.count_of(1001), 501); // ceil(0.5 · 1001)
/// assert!(Rank::parse("100.1").is_none() && Rank::parse("9x").is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rank(u32);

impl Rank {
    /// The denominator: `100 %`.
    pub(crate) const SCALE: u32 = 1_000_000_000;
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

    /// `parts` billionths of the values, or `None` above 10^9.
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

    /// The rank as an `f64` percentage (links floating point; the integer paths never call it).
    pub fn as_percent(self) -> f64 {
        self.0 as f64 / (Self::SCALE / 100) as f64
    }

    /// The count this rank asks for among `total` values: `ceil(rank · total)`, at least 1
    /// and at most `total`, computed exactly in integers (no floating point on this path).
    ///
    /// The `f64` paths ask for HdrHistogram Java's count ([`rank_count`], `f64` arithmetic).
    /// For a rank of `d` decimals the two are equal at every total below
    /// `2^53 / (5 · 10^(d + 2))`: 1.8 million at 7 decimals, 1.8 billion at `99.9999`,
    /// 1.8 × 10^12 at `99.9` (Java's three roundings and its one-ulp lowering move its product
    /// by less than `5 · 2^-53` of itself, and the exact product's distance from the next whole
    /// count is at least `10^-(d + 2)`). Above that bound Java's rounding can, rarely, ask
    /// for one value fewer than the exact ceiling (rank 73.013697 of 779,004,953,713 values:
    /// Java asks for the 568,780,316,519th, this for the 568,780,316,520th); this path keeps
    /// the exact count. `tests/rank_rule.rs` checks the equality below the bound.
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
