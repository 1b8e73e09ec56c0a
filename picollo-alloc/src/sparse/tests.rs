//! Sparse storage's private helpers: the cold tier's sort.

use super::*;

/// The radix sort orders entry words by key, keeps the words of a key together, and
/// hands keys wider than its passes to the comparison sort: against `sort` for keys of 1
/// to 32 bits (one to three passes, and past them).
#[test]
fn radix_sort_orders_words_by_key() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for key_bits in [1u32, 7, 8, 9, 15, 16, 17, 24, 25, 32] {
        for len in [0usize, 1, 2, 3, 100, 1000] {
            let mask = if key_bits == 32 {
                u32::MAX as u64
            } else {
                (1u64 << key_bits) - 1
            };
            let mut words: Vec<u64> = (0..len)
                .map(|_| {
                    let w = next();
                    (((w >> 32) & mask) << 32) | (w & 0xFF)
                })
                .collect();
            let mut expected = words.clone();
            expected.sort_by_key(|&w| w >> 32);
            radix_sort_by_key(&mut words, key_bits, &mut Vec::new());
            let keys = |v: &[u64]| v.iter().map(|&w| w >> 32).collect::<Vec<_>>();
            assert_eq!(
                keys(&words),
                keys(&expected),
                "{key_bits} bits, {len} words"
            );
            let (mut a, mut b) = (words.clone(), expected.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "the same words");
        }
    }
}
