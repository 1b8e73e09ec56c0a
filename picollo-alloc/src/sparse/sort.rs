//! The sort of cold-tier entries by key, for reads in bucket order.

use super::cold::COUNT_BITS;

/// What the radix sort orders: a key in the bits from [`RadixKey::SHIFT`] up.
pub(super) trait RadixKey: Copy {
    /// Where the key starts.
    const SHIFT: u32;
    /// The item's bits.
    fn bits(self) -> u64;
    /// The key.
    fn key(self) -> u64 {
        self.bits() >> Self::SHIFT
    }
}

/// An entry word, `(logical + 1) << 8 | count`.
impl RadixKey for u32 {
    const SHIFT: u32 = COUNT_BITS;
    fn bits(self) -> u64 {
        self.into()
    }
}

/// A walk cache's entry, `(logical + 1) << 32 | position`.
impl RadixKey for u64 {
    const SHIFT: u32 = 32;
    fn bits(self) -> u64 {
        self
    }
}

/// Sorts entries by their key, of which only the low `key_bits` may be set: least
/// significant byte first, a stable scatter per byte. The counts of every byte are taken in
/// one pass before the scatters (the digits of an entry do not change).
pub(super) fn radix_sort_by_key<T: RadixKey>(
    words: &mut Vec<T>,
    key_bits: u32,
    other: &mut Vec<T>,
) {
    /// Most passes: keys of up to 24 bits, all a word holds (a wider `key_bits`, which no
    /// storage passes, takes a comparison sort).
    const DIGITS: usize = 3;
    let len = words.len();
    let passes = (key_bits as usize).div_ceil(8);
    if len < 2 {
        return;
    }
    if passes > DIGITS || len > u32::MAX as usize {
        words.sort_unstable_by_key(|&w| w.key());
        return;
    }
    let digit = |w: T, pass: usize| ((w.key() >> (8 * pass)) & 0xFF) as usize;
    let mut starts = [[0u32; 256]; DIGITS];
    for &w in words.iter() {
        for (pass, counts) in starts.iter_mut().enumerate().take(passes) {
            counts[digit(w, pass)] += 1;
        }
    }
    other.clear();
    other.reserve(len);
    for (pass, counts) in starts.iter_mut().enumerate().take(passes) {
        // Exclusive prefix sums: where each digit's words start.
        let mut at = 0u32;
        for c in counts.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        other.clear();
        let spare = other.spare_capacity_mut();
        for &w in words.iter() {
            let d = &mut counts[digit(w, pass)];
            // SAFETY: `*d < len <= spare.len()`: the starts are the prefix sums of the counts
            // of these same `len` words, so each digit's positions stay below the next
            // digit's start, the last below `len`.
            unsafe { spare.get_unchecked_mut(*d as usize) }.write(w);
            *d += 1;
        }
        // SAFETY: the scatter wrote every index of `0..len` once (the positions it handed out
        // are a permutation of `0..len`).
        unsafe { other.set_len(len) };
        core::mem::swap(words, other);
    }
}
