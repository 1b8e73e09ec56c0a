//! Buffers a thread reuses across the bulk reads of sparse storages: a scrape reads thousands
//! of series one after the other, and each read sorts its cold entries; with buffers of its
//! own per read, a scrape's allocations grew with the number of series.

use std::cell::Cell;

/// The buffers of one bulk read ([`super::SparseStorage`]'s `recorded_runs`).
#[derive(Default)]
pub(super) struct Scratch {
    /// The cold entries' words, sorted.
    pub(super) words: Vec<u32>,
    /// The radix sort's second buffer.
    pub(super) other: Vec<u32>,
    /// A page's counts with its block's cold entries added.
    pub(super) merged: Vec<u64>,
    /// The cold entries of the last read from a position, kept for the walk's next call.
    pub(super) walk: WalkCache,
}

/// The cold tier's entries as a walk from a position found them (the percentile and bucket
/// iterations read a batch of buckets per call): sorted by key with where each sits, so the
/// walk's next calls find theirs by a binary search and read their counts there, instead of
/// a pass over every table per call.
#[derive(Default)]
pub(super) struct WalkCache {
    /// The storage's address and its cold tier's stamp when the entries were gathered: the
    /// entries serve only that storage while the stamp holds.
    pub(super) tag: [usize; 4],
    /// The storage index the entries start at: they serve calls from there on.
    pub(super) from: usize,
    /// `key << 32 | position` of every entry with a key at `from` or above, sorted.
    pub(super) entries: Vec<u64>,
    /// The radix sort's second buffer for `entries`.
    pub(super) other: Vec<u64>,
}

thread_local! {
    /// This thread's buffers (as large as the largest read so far needed), moved out while
    /// a read uses them.
    static SCRATCH: Cell<Scratch> = const {
        Cell::new(Scratch {
            words: Vec::new(),
            other: Vec::new(),
            merged: Vec::new(),
            walk: WalkCache { tag: [0; 4], from: 0, entries: Vec::new(), other: Vec::new() },
        })
    };
}

/// Runs `f` with this thread's buffers: moved out for the call and back after it, so a read
/// nested in another's callback gets empty buffers of its own, and a read during thread exit
/// (the buffers gone) new ones.
pub(super) fn with<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut scratch = SCRATCH.try_with(Cell::take).unwrap_or_default();
    let out = f(&mut scratch);
    let _ = SCRATCH.try_with(|cell| cell.set(scratch));
    out
}
