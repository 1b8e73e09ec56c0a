//! The sort of cold-tier entry words by key, for reads in bucket order.

/// Sorts entry words by their key (the high 32 bits), of which only the low `key_bits` may be
/// set: least significant byte first, a stable scatter per byte. The counts of every byte are
/// taken in one pass before the scatters (the digits of a word do not change).
pub(super) fn radix_sort_by_key(words: &mut Vec<u64>, key_bits: u32, other: &mut Vec<u64>) {
    /// Most passes: keys of up to 24 bits (windows of up to 2^24 buckets; wider ones, of
    /// layouts finer than any server uses, take a comparison sort).
    const DIGITS: usize = 3;
    let len = words.len();
    let passes = (key_bits as usize).div_ceil(8);
    if len < 2 {
        return;
    }
    if passes > DIGITS || len > u32::MAX as usize {
        words.sort_unstable_by_key(|&w| w >> 32);
        return;
    }
    let digit = |w: u64, pass: usize| ((w >> (32 + 8 * pass)) & 0xFF) as usize;
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
