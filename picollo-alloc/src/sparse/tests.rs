//! Sparse storage's private helpers: the cold tier's sort.

use super::sort::radix_sort_by_key;
use super::*;

/// The radix sort orders entry words and walk-cache entries by key, keeps the entries of a key
/// together (in their order: stable), and hands keys wider than its passes to the
/// comparison sort: against `sort` for keys of 1 to 24 bits (one to three passes), and a
/// `key_bits` past them.
#[test]
fn radix_sort_orders_words_by_key() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for key_bits in [1u32, 7, 8, 9, 15, 16, 17, 23, 24, 25] {
        for len in [0usize, 1, 2, 3, 100, 1000] {
            let mask = (1u64 << key_bits.min(24)) - 1;
            let mut words: Vec<u32> = (0..len)
                .map(|_| {
                    let w = next();
                    ((((w >> 32) & mask) << 8) | (w & 0xFF)) as u32
                })
                .collect();
            let mut expected = words.clone();
            expected.sort_by_key(|&w| w >> 8);
            radix_sort_by_key(&mut words, key_bits, &mut Vec::new());
            let keys = |v: &[u32]| v.iter().map(|&w| w >> 8).collect::<Vec<_>>();
            assert_eq!(
                keys(&words),
                keys(&expected),
                "{key_bits} bits, {len} words"
            );
            let (mut a, mut b) = (words.clone(), expected.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "the same words");
            // A walk cache's entries, `key << 32 | position`, the same keys.
            let mut entries: Vec<u64> = (0..len)
                .map(|i| u64::from(words[i] >> 8) << 32 | (next() & 0xFF_FFFF))
                .collect();
            let mut sorted = entries.clone();
            sorted.sort_by_key(|&e| e >> 32);
            radix_sort_by_key(&mut entries, key_bits, &mut Vec::new());
            if key_bits <= 24 {
                assert_eq!(entries, sorted, "{key_bits} bits, {len} entries: stable");
            } else {
                // The comparison sort: by key, not stable.
                let keys = |v: &[u64]| v.iter().map(|&e| e >> 32).collect::<Vec<_>>();
                assert_eq!(
                    keys(&entries),
                    keys(&sorted),
                    "{key_bits} bits, {len} entries"
                );
            }
        }
    }
}

/// An entry's count stops at its 8 bits: an add that would pass 255 is refused (the record
/// then takes its block's page), and the entry keeps what it had.
#[test]
fn cold_entries_refuse_to_pass_their_count_bits() {
    let cold = cold::ColdTier::new();
    assert_eq!(cold.add(1_000, 3, 200, usize::MAX), Some(200));
    assert_eq!(cold.add(1_000, 3, 100, usize::MAX), None);
    assert_eq!(cold.add(1_000, 3, 256, usize::MAX), None);
    assert_eq!(cold.count(1_000), 200);
    assert_eq!(cold.add(1_000, 3, 55, usize::MAX), Some(255));
    assert_eq!(cold.add(1_000, 3, 1, usize::MAX), None);
    let mut seen = Vec::new();
    cold.for_each(|logical, n| seen.push((logical, n)));
    assert_eq!(seen, [(1_000, 255)]);
}

/// A window whose indices do not fit an entry's 24-bit key (block scale 19 over all of
/// `u64`) has no cold tier: every record takes a page, and reads count it there.
#[test]
fn windows_past_the_key_bits_record_into_pages() {
    let layout = Layout::from_block_scale(19).unwrap();
    let storage = SparseStorage::<u64>::new(layout, Window::full(layout));
    assert!(storage.first + storage.window.len() >= cold::KEY_END);
    let window = storage.window();
    let mut h = picollo_core::Histogram::with_storage(layout, storage, window).unwrap();
    h.record(12_345);
    assert_eq!(h.storage().cold_words(), 0);
    assert_eq!(h.storage().pages(), 1);
    // One bucket read, not the bulk read: a page here is 2^19 cells, slow to walk under miri.
    let slot = window.storage_index(layout.index_of(12_345)).unwrap();
    assert_eq!(h.storage().count_at(slot), 1);
}
