//! The workload of the thread-local tests (`thread_local.rs`, `thread_local_reads.rs`): how
//! many records each thread makes, and the values it records.
#![allow(dead_code)] // each test crate uses its own subset

/// `n` natively; a 2,000th of it (at least 8) under miri, which interprets every record.
pub fn scale(n: u64) -> u64 {
    if cfg!(miri) {
        (n / 2000).max(8)
    } else {
        n
    }
}

/// Thread `t`'s `i`-th value below `span`: a fixed pseudo-random spread (splitmix64's
/// finalizer over `t` and `i`).
pub fn value(t: u64, i: u64, span: u64) -> u64 {
    let mut z = (t << 32 | i).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % span
}
