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
    /// The cold entries of the last reads from a position, one per storage, kept for each
    /// walk's next call.
    pub(super) walks: Walks,
}

/// The walk caches of a thread: one per storage that a walk read lately, so walks that take
/// turns (the thread-local kind's walk reads each shard's storage and the accumulator's for
/// every batch) each keep theirs; with one cache, each turn gathered and sorted its storage's
/// cold entries anew, and a walk over several storages cost their entries on every call.
#[derive(Default)]
pub(super) struct Walks {
    caches: Vec<WalkCache>,
    /// The cache the next storage without one takes once all [`WALKS`] are in use.
    evict: usize,
}

/// Storages whose walks a thread keeps cached at once: more than a walk over a thread-local
/// histogram reads in turn unless more than 31 threads recorded into it (then its walk gathers
/// anew per call, as every walk did with one cache).
const WALKS: usize = 32;

impl Walks {
    /// The cache of the storage at `address`: the one it used last if still here, else a new
    /// one, or once there are [`WALKS`] the next in turn (its tag no longer matches, so it is
    /// gathered anew).
    pub(super) fn for_storage(&mut self, address: usize) -> &mut WalkCache {
        let at = match self.caches.iter().position(|c| c.tag[0] == address) {
            Some(at) => at,
            None if self.caches.len() < WALKS => {
                self.caches.push(WalkCache::default());
                self.caches.len() - 1
            }
            None => {
                self.evict = (self.evict + 1) % WALKS;
                self.evict
            }
        };
        &mut self.caches[at]
    }
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
            walks: Walks { caches: Vec::new(), evict: 0 },
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
