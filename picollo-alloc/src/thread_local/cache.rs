//! The per-thread side: each thread's list of the histograms it recorded into (whose TLS
//! destructor folds its shards at thread exit), the direct-mapped cache the record path reads,
//! and the thread's token.

use portable_atomic::AtomicU64;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Type-erased access to a histogram's shared state (`shard::Inner<C, S>`) for the
/// per-thread list: what a thread's exit does with each histogram it recorded into.
pub(super) trait Owner: Send + Sync {
    /// Folds and frees the calling thread's shard at thread exit.
    ///
    /// # Safety
    ///
    /// `shard` must be the shard this `Inner` gave the calling thread, which is `token`.
    unsafe fn retire(&self, shard: *const (), token: u64);
    /// Whether the histogram handle was dropped.
    fn is_closed(&self) -> bool;
}

/// One histogram a thread recorded into.
pub(super) struct Entry {
    /// The entry keeps the histogram's `Inner` alive (so its address, the entry's key in
    /// [`ThreadShards`], stays unique among live histograms).
    pub(super) owner: Arc<dyn Owner>,
    pub(super) shard: *const (),
}

/// The per-thread entries, by the address of the histogram's `Inner`: found by hash, since
/// a thread may record into thousands of histograms (one per series of a metrics recorder),
/// more than its cache holds. Its destructor folds the thread's shards.
pub(super) struct ThreadShards {
    pub(super) entries: HashMap<usize, Entry, BuildHasherDefault<AddressHash>>,
    /// [`CLOSED`] when the entries of dropped histograms were last pruned.
    pruned: u64,
}

/// Hashes an address (the entries' key) with one multiply: SipHash's resistance to chosen
/// keys buys nothing for addresses of this process's own allocations, and its rounds are
/// most of a lookup. The 128-bit product folded to 64 bits spreads the address's low bits (zero
/// from alignment) and high bits (equal for neighbours) over the whole hash, where the map
/// takes its bucket from the low bits and its tag from the high ones.
#[derive(Default)]
pub(super) struct AddressHash(u64);

impl Hasher for AddressHash {
    #[inline]
    fn finish(&self) -> u64 {
        let product = u128::from(self.0) * 0x9E37_79B9_7F4A_7C15;
        (product as u64) ^ ((product >> 64) as u64)
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used for `usize` keys; fold anything else in rather than ignore it.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 ^= n as u64;
    }
}

/// Histograms dropped in this process so far that some thread took a shard of (only those can
/// be in a thread's entries): a thread prunes its entries when this moved since it last did,
/// rather than look at every entry each time it claims a shard.
pub(super) static CLOSED: AtomicU64 = AtomicU64::new(0);

impl ThreadShards {
    /// Drops the entries of histograms dropped since the last prune (their `Inner`s are freed
    /// with the last entry that holds them). Clears the cache first: it may name them.
    pub(super) fn prune(&mut self) {
        // Acquire: pairs with the release increment after a histogram's `closed` store, so
        // every histogram counted in `closed` reads as closed below.
        let closed = CLOSED.load(Ordering::Acquire);
        if closed != self.pruned {
            clear_cache();
            self.entries.retain(|_, e| !e.owner.is_closed());
            self.pruned = closed;
        }
    }
}

impl Drop for ThreadShards {
    fn drop(&mut self) {
        // Records from later TLS destructors must not hit a shard that is about to be freed.
        clear_cache();
        let token = thread_token();
        for (_, e) in self.entries.drain() {
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
        const {
            RefCell::new(ThreadShards {
                entries: HashMap::with_hasher(BuildHasherDefault::new()),
                pruned: 0,
            })
        };
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
