//! The workload of the thread-local tests (`thread_local.rs`, `thread_local_reads.rs`): the
//! layout and window of their histograms, how many records each thread makes, and the values
//! it records.
#![allow(dead_code)] // each test crate uses its own subset

use picollo_core::{Layout, Window};

/// The lowest value of the tests' window.
pub const MIN: u64 = 100;
/// The highest value of the tests' window.
pub const MAX: u64 = 50_000;
/// Values are drawn from `0..SPAN`: some fall below `MIN`, some above `MAX`.
pub const SPAN: u64 = 60_000;

/// A small layout under miri (few buckets), the default otherwise.
pub fn layout() -> Layout {
    if cfg!(miri) {
        Layout::from_block_scale(2).unwrap()
    } else {
        Layout::DEFAULT
    }
}

/// The window of the tests' histograms: `MIN..=MAX` widened to whole blocks, the window the
/// default (sparse) storage serves, so that dense expectations share it.
pub fn window() -> Window {
    picollo_alloc::sparse::widened(layout(), Window::new(layout(), MIN, MAX).unwrap())
}

/// `n` natively; a 2,000th of it (at least 8) under miri, which interprets every record.
pub fn scale(n: u64) -> u64 {
    if cfg!(miri) {
        (n / 2000).max(8)
    } else {
        n
    }
}

/// Thread `t`'s `i`-th value: a fixed pseudo-random spread over `0..SPAN` (splitmix64's
/// finalizer over `t` and `i`).
pub fn value(t: u64, i: u64) -> u64 {
    let mut z = (t << 32 | i).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % SPAN
}
