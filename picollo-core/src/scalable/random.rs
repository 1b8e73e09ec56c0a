//! The random sources a scalable counter draws from: the [`RandomSource`] trait and its two
//! generators, [`XorShift`] (xorshift64*, for 32-bit firmware) and [`WyRand`] (64-bit hosts),
//! both seeded through splitmix64.

/// A fast source of uniformly distributed random bits, one per thread.
///
/// The counter draws on most increments above its threshold, so the source should be cheap
/// and need no synchronisation: keep one per thread (or per interrupt priority) and pass it
/// by `&mut`. Streams of different threads must be independent; see
/// [`XorShift::from_seed_and_thread`].
///
/// The counter only uses the *high* bits of [`RandomSource::next_u32`], which are the best
/// bits of multiplicative generators such as [`XorShift`] (xorshift64*).
///
/// ```
/// use picollo_core::scalable::RandomSource;
///
/// /// A 32-bit Marsaglia xorshift, for targets where 64-bit arithmetic is slow.
/// struct XorShift32(u32);
///
/// impl RandomSource for XorShift32 {
///     fn next_u32(&mut self) -> u32 {
///         let mut x = self.0;
///         x ^= x << 13;
///         x ^= x >> 17;
///         x ^= x << 5;
///         self.0 = x;
///         x
///     }
/// }
///
/// let mut rng = XorShift32(2463534242);
/// assert_ne!(rng.next_u32(), rng.next_u32());
/// ```
pub trait RandomSource {
    /// Returns 32 uniformly distributed random bits.
    fn next_u32(&mut self) -> u32;

    /// Returns 64 uniformly distributed random bits. The default concatenates two
    /// [`RandomSource::next_u32`] draws; generators with a 64-bit output should override it.
    fn next_u64(&mut self) -> u64 {
        let hi = u64::from(self.next_u32());
        (hi << 32) | u64::from(self.next_u32())
    }
}

impl<R: RandomSource + ?Sized> RandomSource for &mut R {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        (**self).next_u32()
    }
    #[inline]
    fn next_u64(&mut self) -> u64 {
        (**self).next_u64()
    }
}

/// The golden-ratio increment of splitmix64.
pub(super) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of splitmix64 (Steele, Lea and Flood): a bijective mix of `x`, used to turn any
/// seed, including 0 and small consecutive integers, into a well-spread generator state.
pub(super) const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Marsaglia's xorshift64* generator (shifts 12, 25, 27; multiplier `0x2545F4914F6CDD1D`):
/// period `2^64 - 1`, one 64-bit state word, a handful of instructions per draw.
///
/// It is not cryptographic. Its statistical quality is far beyond what the counter needs.
///
/// # Seeding
///
/// Every constructor passes the seed through splitmix64, so `0`, `1`, `2`, ... give unrelated
/// streams, and the all-zero state (a fixed point of xorshift) is never used: the one seed that
/// would map to it gets a fixed non-zero state instead.
///
/// Give each thread its own stream with [`XorShift::from_seed_and_thread`]. With `std`, a
/// `thread_local!` works; on firmware, one generator per execution context (main loop, each
/// interrupt priority) does.
///
/// ```
/// use picollo_core::scalable::{RandomSource, ScalableCounter, XorShift};
///
/// static HITS: ScalableCounter = ScalableCounter::new();
///
/// std::thread::scope(|s| {
///     for thread in 0..2 {
///         s.spawn(move || {
///             let mut rng = XorShift::from_seed_and_thread(0x5eed, thread);
///             for _ in 0..10_000 {
///                 HITS.inc(&mut rng);
///             }
///         });
///     }
/// });
/// let estimate = HITS.get() as f64;
/// assert!((estimate - 20_000.0).abs() < 0.1 * 20_000.0);
///
/// // Distinct thread indices give distinct streams; a zero seed is fine.
/// let mut a = XorShift::from_seed_and_thread(0, 0);
/// let mut b = XorShift::from_seed_and_thread(0, 1);
/// assert_ne!(a.next_u64(), b.next_u64());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct XorShift {
    /// Never 0.
    pub(super) state: u64,
}

impl XorShift {
    /// A generator seeded from `seed` (mixed by splitmix64, so any value, 0 included, works).
    pub const fn new(seed: u64) -> Self {
        let state = splitmix64(seed);
        // splitmix64 is a bijection: exactly one seed maps to the stuck state 0.
        Self {
            state: if state == 0 { GOLDEN } else { state },
        }
    }

    /// A generator for thread number `thread_index` of a family sharing `seed`.
    ///
    /// The state is `splitmix64(seed ^ splitmix64(thread_index))`. Both steps are bijections,
    /// so for a fixed `seed` distinct thread indices give distinct states (apart from one
    /// index whose state would be 0 and is replaced, see [`XorShift::new`]), and nearby indices
    /// give unrelated streams. `thread_index` can be a loop counter, a core number, or any
    /// per-thread value such as the address of a thread-local.
    pub const fn from_seed_and_thread(seed: u64, thread_index: u64) -> Self {
        Self::new(seed ^ splitmix64(thread_index))
    }
}

impl RandomSource for XorShift {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        // The high half of the product is the strongest part of xorshift64*'s output.
        (self.next_u64() >> 32) as u32
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// wyrand (Wang Yi's generator): a Weyl sequence (`state += 0xA0761D6478BD642F`) whose output
/// is the folded 128-bit product of the state and a masked copy of it. Period `2^64`, one
/// 64-bit state word, passes BigCrush and PractRand.
///
/// # When to prefer it over [`XorShift`]
///
/// On 64-bit hosts. The only value carried from one draw to the next is the state, updated by
/// one add: a one-cycle dependency chain, against xorshift64*'s three serial shift-xor pairs
/// (about six cycles). In a loop of [`ScalableCounter::inc`](super::ScalableCounter::inc) most increments write nothing,
/// so that chain is what limits the loop; the multiply and the fold hang off it and overlap
/// with the next increment. On 32-bit microcontrollers the 64 × 64 → 128-bit multiply is a
/// library call of dozens of instructions (no 64-bit multiplier; `thumbv6m` has no 32 × 32 →
/// 64 either), so keep [`XorShift`] there (or the `XorShift32` of [`RandomSource`]).
///
/// It is not cryptographic. Seeding works as for [`XorShift`] (splitmix64 of the seed; every
/// state is valid, 0 included).
///
/// ```
/// use picollo_core::scalable::{RandomSource, ScalableCounter, WyRand};
///
/// static HITS: ScalableCounter = ScalableCounter::new();
///
/// std::thread::scope(|s| {
///     for thread in 0..2 {
///         s.spawn(move || {
///             let mut rng = WyRand::from_seed_and_thread(0x5eed, thread);
///             for _ in 0..10_000 {
///                 HITS.inc(&mut rng);
///             }
///         });
///     }
/// });
/// let estimate = HITS.get() as f64;
/// assert!((estimate - 20_000.0).abs() < 0.1 * 20_000.0);
///
/// let mut a = WyRand::from_seed_and_thread(0, 0);
/// let mut b = WyRand::from_seed_and_thread(0, 1);
/// assert_ne!(a.next_u64(), b.next_u64());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WyRand {
    state: u64,
}

/// wyrand's Weyl increment (odd: the state visits all `2^64` values).
const WY_ADD: u64 = 0xA076_1D64_78BD_642F;
/// wyrand's output mask.
const WY_XOR: u64 = 0xE703_7ED1_A0B4_28DB;

impl WyRand {
    /// A generator seeded from `seed` (mixed by splitmix64, so nearby seeds give unrelated
    /// streams).
    pub const fn new(seed: u64) -> Self {
        Self {
            state: splitmix64(seed),
        }
    }

    /// A generator for thread number `thread_index` of a family sharing `seed`: the state is
    /// `splitmix64(seed ^ splitmix64(thread_index))`, as for
    /// [`XorShift::from_seed_and_thread`]. All streams are windows of the one Weyl sequence;
    /// two windows of 2^40 draws from such well-spread starts overlap with probability about
    /// 2^-23.
    pub const fn from_seed_and_thread(seed: u64, thread_index: u64) -> Self {
        Self::new(seed ^ splitmix64(thread_index))
    }
}

impl RandomSource for WyRand {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(WY_ADD);
        let t = u128::from(self.state) * u128::from(self.state ^ WY_XOR);
        ((t >> 64) as u64) ^ (t as u64)
    }
}
