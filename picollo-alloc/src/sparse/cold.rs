//! The cold tier of sparse storage: buckets whose block has no page yet, each one packed
//! word `(logical index + 1) << 32 | count` in small open-addressed tables.
//!
//! - **Tables chain, never migrate.** When the newest table is three-quarters full, a table
//!   twice its size is installed in front of it ([`install::replace`]); older tables are kept
//!   and still read, and nothing moves between tables, so no count is ever in flight. A
//!   record looks only at the newest table: a bucket whose entry is in an older one gets a
//!   second entry in the newest, which is harmless because reads sum every entry of a bucket.
//! - **Lock-free.** An entry is inserted with a compare-and-swap on an empty word and
//!   incremented with `fetch_add`, so any number of threads record at once; a reset clears
//!   the counts with `fetch_and`, keeping the indices (a word never goes back to empty while
//!   writers may be probing past it).
//! - **Bounded.** The tables stop growing at the storage's word limit; past it, and for
//!   buckets whose entry reaches the hot threshold, the storage gives the block a page
//!   (`super::SparseStorage`).

use super::install::{self, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// The count bits of an entry word.
pub(super) const COUNT_MASK: u64 = 0xFFFF_FFFF;
/// Words in the first table (256 bytes): it holds 24 buckets.
pub(super) const FIRST_WORDS: usize = 32;

/// One table: a power-of-two number of entry words, and the table it replaced.
struct Table {
    /// The older table (null for the first); set before this one is published.
    prev: *mut Table,
    /// Entries inserted (the load factor's numerator).
    used: AtomicUsize,
    words: Box<[AtomicU64]>,
}

impl Table {
    fn new(words: usize, prev: *mut Table) -> *mut Table {
        Box::into_raw(Box::new(Table {
            prev,
            used: AtomicUsize::new(0),
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }))
    }

    /// The first probe of `key`.
    #[inline]
    fn home(&self, key: u64) -> usize {
        let bits = self.words.len().trailing_zeros();
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// Adds `n` to `key`'s entry, inserting it if absent: its count afterwards, or `None`
    /// when the key is new and the table is three-quarters full.
    fn add(&self, key: u64, n: u64) -> Option<u64> {
        let mask = self.words.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.words.len() {
            let word = &self.words[i];
            let mut w = word.load(Ordering::Relaxed);
            if w == 0 {
                if self.used.load(Ordering::Relaxed) * 4 >= self.words.len() * 3 {
                    return None;
                }
                match word.compare_exchange(0, key | n, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => {
                        self.used.fetch_add(1, Ordering::Relaxed);
                        return Some(n);
                    }
                    Err(now) => w = now,
                }
            }
            if w & !COUNT_MASK == key {
                let old = word.fetch_add(n, Ordering::Relaxed);
                return Some((old & COUNT_MASK) + n);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The word of `key`'s entry in this table.
    fn find(&self, key: u64) -> Option<&AtomicU64> {
        let mask = self.words.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.words.len() {
            let word = &self.words[i];
            let w = word.load(Ordering::Relaxed);
            if w == 0 {
                return None;
            }
            if w & !COUNT_MASK == key {
                return Some(word);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The count of `key` in this table.
    fn count(&self, key: u64) -> u64 {
        self.find(key)
            .map_or(0, |w| w.load(Ordering::Relaxed) & COUNT_MASK)
    }
}

/// The chain of tables, newest first, and which blocks hold entries.
pub(super) struct ColdTier {
    newest: AtomicPtr<Table>,
    /// Bit `e`: block `e` received an entry (kept after a reset; a hint for reads).
    blocks: AtomicU64,
    /// Words in every table together.
    words: AtomicUsize,
}

/// An entry's key: the logical index plus one, in the high half.
#[inline]
fn key_of(logical: usize) -> u64 {
    (logical as u64 + 1) << 32
}

impl ColdTier {
    pub(super) fn new() -> Self {
        ColdTier {
            newest: AtomicPtr::new(core::ptr::null_mut()),
            blocks: AtomicU64::new(0),
            words: AtomicUsize::new(0),
        }
    }

    /// Adds `n` occurrences of `logical` (in block `block`): the bucket's count in the entry
    /// afterwards, or `None` when the tables would pass `max_words` to take a new bucket.
    pub(super) fn add(
        &self,
        logical: usize,
        block: usize,
        n: u64,
        max_words: usize,
    ) -> Option<u64> {
        let key = key_of(logical);
        let bit = 1 << (block % 64);
        // A load first: the bit is set on all but a block's first cold record, and a locked
        // `fetch_or` on this one word would bounce its cache line between every recording
        // core.
        if self.blocks.load(Ordering::Relaxed) & bit == 0 {
            self.blocks.fetch_or(bit, Ordering::Relaxed);
        }
        loop {
            let newest = self.newest.load(Ordering::Acquire);
            // SAFETY: `newest` is null or a table published by `grow` (release CAS, read with
            // acquire), freed only when the tier drops.
            if let Some(count) = unsafe { newest.as_ref() }.and_then(|t| t.add(key, n)) {
                return Some(count);
            }
            self.grow(newest, max_words)?;
        }
    }

    /// Installs a table twice the size of `newest` in front of it (the first table when it is
    /// null), unless another thread did; `None` when that would pass `max_words`.
    fn grow(&self, newest: *mut Table, max_words: usize) -> Option<()> {
        // SAFETY: as in `add`.
        let size = unsafe { newest.as_ref() }.map_or(FIRST_WORDS, |t| t.words.len() * 2);
        if self.words.load(Ordering::Relaxed) + size > max_words {
            // `words` counts a table another thread installed after `newest` was read: with
            // `newest` stale, that table may have room, so look again rather than give the
            // block a page early.
            return (self.newest.load(Ordering::Acquire) != newest).then_some(());
        }
        let table = Table::new(size, newest);
        let free = |t: *mut Table| {
            // SAFETY: `t` came from `Table::new` and was never published.
            drop(unsafe { Box::from_raw(t) })
        };
        if install::replace(&self.newest, newest, table, free) {
            self.words.fetch_add(size, Ordering::Relaxed);
        }
        Some(())
    }

    /// Whether block `block` ever received an entry.
    #[inline]
    pub(super) fn has_block(&self, block: usize) -> bool {
        self.blocks.load(Ordering::Relaxed) & (1 << (block % 64)) != 0
    }

    /// Whether any block in `first..=last` ever received an entry.
    pub(super) fn has_blocks(&self, first: usize, last: usize) -> bool {
        (first..=last).any(|b| self.has_block(b))
    }

    /// The tables, newest first.
    fn tables(&self) -> impl Iterator<Item = &Table> {
        let mut next = self.newest.load(Ordering::Acquire);
        core::iter::from_fn(move || {
            // SAFETY: every table of the chain was published with a release CAS (its `prev`
            // set before) and is freed only when the tier drops.
            let table = unsafe { next.as_ref() }?;
            next = table.prev;
            Some(table)
        })
    }

    /// The count of `logical` over every table.
    pub(super) fn count(&self, logical: usize) -> u64 {
        let key = key_of(logical);
        self.tables()
            .fold(0u64, |n, t| n.saturating_add(t.count(key)))
    }

    /// Takes up to `n` from the entries of `logical` (only with no writer: a plain histogram's
    /// `subtract`): what is left to take.
    pub(super) fn take(&self, logical: usize, mut n: u64) -> u64 {
        let key = key_of(logical);
        for table in self.tables() {
            if let Some(word) = table.find(key) {
                let w = word.load(Ordering::Relaxed);
                let taken = (w & COUNT_MASK).min(n);
                word.store(w - taken, Ordering::Relaxed);
                n -= taken;
            }
        }
        n
    }

    /// Calls `f(logical, count)` for every entry with a count (a bucket may come twice).
    pub(super) fn for_each(&self, mut f: impl FnMut(usize, u64)) {
        self.for_each_word(|w| f((w >> 32) as usize - 1, w & COUNT_MASK))
    }

    /// Calls `f(word)` for every entry word with a count: `(logical + 1) << 32 | count`.
    pub(super) fn for_each_word(&self, mut f: impl FnMut(u64)) {
        for table in self.tables() {
            for word in table.words.iter() {
                let w = word.load(Ordering::Relaxed);
                if w & COUNT_MASK != 0 {
                    f(w);
                }
            }
        }
    }

    /// Entries inserted in every table together (a bucket may have one in several): what
    /// [`ColdTier::for_each`] calls `f` with at most, unless records insert more meanwhile.
    pub(super) fn entries(&self) -> usize {
        self.tables().map(|t| t.used.load(Ordering::Relaxed)).sum()
    }

    /// The sum of the counts of the logical indices in `lo..hi`.
    pub(super) fn sum_in(&self, lo: usize, hi: usize) -> u64 {
        let mut sum = 0u64;
        self.for_each(|logical, n| {
            if (lo..hi).contains(&logical) {
                sum = sum.saturating_add(n);
            }
        });
        sum
    }

    /// Zeroes every count, keeping the keys (writers may be probing: see the module docs).
    pub(super) fn clear_counts(&self) {
        for table in self.tables() {
            for word in table.words.iter() {
                word.fetch_and(!COUNT_MASK, Ordering::Relaxed);
            }
        }
    }

    /// Empties every table (only with no writer: the plain kind, a thread-local shard whose
    /// owner is gone).
    pub(super) fn clear_all(&self) {
        for table in self.tables() {
            for word in table.words.iter() {
                word.store(0, Ordering::Relaxed);
            }
            table.used.store(0, Ordering::Relaxed);
        }
    }

    /// Bytes the tables hold.
    pub(super) fn held_bytes(&self) -> usize {
        let tables = self.tables().count();
        self.words.load(Ordering::Relaxed) * size_of::<u64>() + tables * size_of::<Table>()
    }

    /// Words in every table together.
    pub(super) fn words(&self) -> usize {
        self.words.load(Ordering::Relaxed)
    }
}

impl Drop for ColdTier {
    fn drop(&mut self) {
        let mut next = self.newest.load(Ordering::Relaxed);
        while !next.is_null() {
            // SAFETY: every table of the chain came from `Table::new` and is linked once;
            // with `&mut self` nothing else reaches it.
            let table = unsafe { Box::from_raw(next) };
            next = table.prev;
        }
    }
}

// SAFETY: the tables are reached only through atomics (`newest`) and immutable links set
// before publication; their words are atomics.
unsafe impl Send for ColdTier {}
// SAFETY: as above: every shared access is an atomic operation.
unsafe impl Sync for ColdTier {}
