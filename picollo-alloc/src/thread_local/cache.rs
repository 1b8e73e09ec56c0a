//! The per-thread side: each thread's list of the histograms it recorded into (whose TLS
//! destructor folds its shards at thread exit), the direct-mapped cache the record path reads,
//! and the thread's token.

use super::*;

/// One histogram a thread recorded into.
pub(super) struct Entry {
    /// The `Inner`'s address: unique among live histograms, and the entry keeps it alive.
    pub(super) key: usize,
    pub(super) owner: Arc<dyn Owner>,
    pub(super) shard: *const (),
}

/// The per-thread list of entries; its destructor folds the thread's shards.
pub(super) struct ThreadShards {
    pub(super) entries: Vec<Entry>,
}

impl Drop for ThreadShards {
    fn drop(&mut self) {
        // Records from later TLS destructors must not hit a shard that is about to be freed.
        clear_cache();
        let token = thread_token();
        for e in self.entries.drain(..) {
            // SAFETY: `e.shard` is the shard `e.owner` gave this thread, whose token is
            // `token`, and the entry's `Arc` keeps the owner alive.
            unsafe { e.owner.retire(e.shard, token) };
        }
    }
}

/// Entries of the per-thread cache of shards (direct-mapped: each histogram has one slot).
/// 64 entries of 24 bytes: 1.5 KB of TLS per thread.
pub const CACHE_SLOTS: usize = 64;

/// One entry of the per-thread cache: a histogram (its `Inner`'s address, 0 for none) this
/// thread recorded into, its shard there and that shard's cells (so that the hot path loads
/// nothing from the shard itself).
#[derive(Clone, Copy)]
pub(super) struct Cached {
    pub(super) key: usize,
    pub(super) cells: *const (),
    pub(super) shard: *const (),
}

impl Cached {
    pub(super) const EMPTY: Cached = Cached {
        key: 0,
        cells: ptr::null(),
        shard: ptr::null(),
    };
}

/// The cache: entry `s` serves the histograms whose slot is `s`.
pub(super) type Cache = [Cell<Cached>; CACHE_SLOTS];

thread_local! {
    /// The cache. No destructor, so it can be read at any time, also while TLS is being
    /// destroyed.
    pub(super) static CACHE: Cache = const { [const { Cell::new(Cached::EMPTY) }; CACHE_SLOTS] };
    /// This thread's token (0 until first needed).
    pub(super) static TOKEN: Cell<u64> = const { Cell::new(0) };
    /// Every histogram this thread recorded into.
    pub(super) static THREAD_SHARDS: RefCell<ThreadShards> =
        const { RefCell::new(ThreadShards { entries: Vec::new() }) };
}

/// The entry at byte offset `offset` of the cache.
///
/// # Safety
///
/// `offset` is `slot * size_of::<Cell<Cached>>()` for a `slot < CACHE_SLOTS`.
#[inline(always)]
pub(super) unsafe fn cache_entry(cache: &Cache, offset: usize) -> &Cell<Cached> {
    debug_assert!(offset < core::mem::size_of::<Cache>());
    debug_assert_eq!(offset % core::mem::size_of::<Cell<Cached>>(), 0);
    // SAFETY: by the caller's guarantee the offset lands on the start of an element of the
    // array (a byte offset rather than an index: the handle stores it pre-scaled, so the hot
    // path needs no multiply).
    unsafe {
        &*cache
            .as_ptr()
            .cast::<u8>()
            .add(offset)
            .cast::<Cell<Cached>>()
    }
}

/// Empties every entry of this thread's cache.
pub(super) fn clear_cache() {
    let _ = CACHE.try_with(|cache| cache.iter().for_each(|c| c.set(Cached::EMPTY)));
}

/// A process-unique, non-zero token for the calling thread. Survives `fork` in the forking
/// thread (TLS is copied).
pub(super) fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    TOKEN
        .try_with(|t| {
            let mut token = t.get();
            if token == 0 {
                token = NEXT.fetch_add(1, Ordering::Relaxed);
                t.set(token);
            }
            token
        })
        .unwrap_or(0)
}
