//! The cold tier of sparse storage: buckets whose block has no page yet, each one packed
//! word `(logical index + 1) << 8 | count` of 32 bits in small open-addressed tables.
//!
//! - **Four bytes a bucket.** A bucket stays here only while it is cold: at [`super::HOT`]
//!   occurrences its block gets a page, so its count needs a few bits, and 8 leave room for
//!   racing records (an add that would pass 255 is refused, and the record takes the page).
//!   The other 24 bits are the key: windows whose logical indices reach 2^24 − 1 (block
//!   scales 19 and 20 over all of `u64`) have no cold tier ([`KEY_END`]).
//! - **Tables chain, never migrate.** When the newest table is three-quarters full, a table
//!   twice its size is installed in front of it ([`install::replace`]); older tables are kept
//!   and still read, and nothing moves between tables, so no count is ever in flight. A
//!   record looks only at the newest table: a bucket whose entry is in an older one gets a
//!   second entry in the newest, which is harmless because reads sum every entry of a bucket.
//! - **Lock-free.** An entry is inserted with a compare-and-swap on an empty word and
//!   incremented with a compare-and-swap that refuses to pass the count's bits, so any number
//!   of threads record at once; a reset clears the counts with `fetch_and`, keeping the
//!   indices (a word never goes back to empty while writers may be probing past it).
//! - **Bounded.** The tables stop growing at the storage's word limit; past it, and for
//!   buckets whose entry reaches the hot threshold, the storage gives the block a page
//!   (`super::SparseStorage`).

use super::install::{self, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
// `plant!(Bug, correct, planted)`: the bugs the loom models must find (`crate::planted`).
use picollo_core::plant;

/// The count bits of an entry word.
pub(super) const COUNT_BITS: u32 = 8;
/// The count bits of an entry word, as a mask.
pub(super) const COUNT_MASK: u32 = (1 << COUNT_BITS) - 1;
/// Keys (a logical index plus one) are below this: windows whose last logical index is
/// `KEY_END - 1` or more have no cold tier.
pub(super) const KEY_END: usize = 1 << (32 - COUNT_BITS);
/// Words in the first table (128 bytes): it holds 24 buckets.
#[cfg(not(loom))]
pub(super) const FIRST_WORDS: usize = 32;
/// Words in the first table in loom model builds (`tests/loom.rs`): 4, room for the models'
/// few buckets. Every word a clear or a walk touches is a point where loom tries the other
/// threads; at 32 words a model of a walk beside a clear did not finish in 10 minutes.
#[cfg(loom)]
pub(super) const FIRST_WORDS: usize = 4;
/// Bits of a word's index in an entry position ([`ColdTier::for_each_positioned`]): tables
/// hold fewer than 2^24 words (the word limit is a quarter of a window below 2^24 buckets).
const POSITION_BITS: u32 = 24;
/// Most tables a chain holds: sizes double from [`FIRST_WORDS`] up to a limit below 2^24
/// words, 20 tables at most.
const MAX_TABLES: usize = 24;

/// What adding to one table did.
enum Added {
    /// The entry's count afterwards.
    Count(u64),
    /// A new key, and the table is three-quarters full.
    Full,
    /// The count would pass [`COUNT_MASK`].
    Saturated,
}

/// One table: a power-of-two number of entry words, and the table it replaced. One
/// allocation holds the header and, after it, the words (a new series' first cold record
/// makes a table: one allocation, not two).
struct Table {
    /// The older table (null for the first); set before this one is published.
    prev: *mut Table,
    /// Entries inserted (the load factor's numerator).
    used: AtomicUsize,
    /// The words, right after this header in its allocation: a pointer taken from the
    /// allocation itself (not from a reference to the header, which covers only the header).
    words: *const AtomicU32,
    len: usize,
}

impl Table {
    /// The allocation of a table of `len` words, and where its words start in it.
    fn allocation(len: usize) -> (std::alloc::Layout, usize) {
        let words = std::alloc::Layout::array::<AtomicU32>(len);
        match words.and_then(|w| std::alloc::Layout::new::<Table>().extend(w)) {
            Ok((layout, offset)) => (layout, offset),
            // At most the storage's word limit: a quarter of a window's cells.
            Err(_) => unreachable!("cold table of {len} words"),
        }
    }

    fn new(len: usize, prev: *mut Table) -> *mut Table {
        let (layout, offset) = Self::allocation(len);
        // SAFETY: the layout has a nonzero size (the header).
        let base = unsafe { std::alloc::alloc(layout) };
        if base.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `base` is a fresh allocation of `layout`: the header at its start and `len`
        // words at `offset`, each aligned (`Layout::extend`), written once here before the
        // table is shared.
        unsafe {
            let words = base.add(offset).cast::<AtomicU32>();
            for i in 0..len {
                words.add(i).write(AtomicU32::new(0));
            }
            let table = base.cast::<Table>();
            table.write(Table {
                prev,
                used: AtomicUsize::new(0),
                words,
                len,
            });
            table
        }
    }

    /// Frees a table made by [`Table::new`] (not its `prev`).
    ///
    /// # Safety
    ///
    /// `table` came from [`Table::new`], is freed once, and nothing uses it after.
    unsafe fn free(table: *mut Table) {
        // SAFETY: the caller's guarantee: the header and the words were written by `new` in
        // an allocation of `allocation(len)`.
        unsafe {
            let len = (*table).len;
            let words = (*table).words.cast_mut();
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(words, len));
            core::ptr::drop_in_place(table);
            std::alloc::dealloc(table.cast::<u8>(), Self::allocation(len).0);
        }
    }

    /// The entry words.
    #[inline]
    fn words(&self) -> &[AtomicU32] {
        // SAFETY: `words` points at the `len` words `new` wrote after this header, in the
        // same allocation, alive while the table is (freed only by `free`).
        unsafe { core::slice::from_raw_parts(self.words, self.len) }
    }

    /// The first probe of `key`.
    #[inline]
    fn home(&self, key: u32) -> usize {
        let bits = self.len.trailing_zeros();
        (u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// Adds `n` to `key`'s entry, inserting it if absent.
    fn add(&self, key: u32, n: u64) -> Added {
        let mask = self.len - 1;
        let Some(n) = u32::try_from(n).ok().filter(|&n| n <= COUNT_MASK) else {
            return Added::Saturated;
        };
        let mut i = self.home(key);
        for _ in 0..self.len {
            let word = &self.words()[i];
            let mut w = word.load(Ordering::Relaxed);
            if w == 0 {
                if self.used.load(Ordering::Relaxed) * 4 >= self.len * 3 {
                    return Added::Full;
                }
                match word.compare_exchange(0, key | n, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => {
                        // Release: a read that sees the new count of entries (acquire, in
                        // `entries`) sees this word too, so a walk cache gathered after it
                        // holds the key its stamp counts (`ColdTier::stamp`).
                        self.used.fetch_add(
                            1,
                            plant!(ColdCountRelaxed, Ordering::Release, Ordering::Relaxed),
                        );
                        return Added::Count(n.into());
                    }
                    Err(now) => w = now,
                }
            }
            if w & !COUNT_MASK == key {
                // A word's key never changes while writers may probe (see the module docs):
                // only its count moves under this loop.
                loop {
                    let count = w & COUNT_MASK;
                    if count + n > COUNT_MASK {
                        return Added::Saturated;
                    }
                    match word.compare_exchange_weak(w, w + n, Ordering::Relaxed, Ordering::Relaxed)
                    {
                        Ok(_) => return Added::Count((count + n).into()),
                        Err(now) => w = now,
                    }
                }
            }
            i = (i + 1) & mask;
        }
        Added::Full
    }

    /// The word of `key`'s entry in this table.
    fn find(&self, key: u32) -> Option<&AtomicU32> {
        let mask = self.len - 1;
        let mut i = self.home(key);
        for _ in 0..self.len {
            let word = &self.words()[i];
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
    fn count(&self, key: u32) -> u64 {
        self.find(key)
            .map_or(0, |w| (w.load(Ordering::Relaxed) & COUNT_MASK).into())
    }
}

/// The chain of tables, newest first, and which blocks hold entries.
pub(super) struct ColdTier {
    newest: AtomicPtr<Table>,
    /// Bit `e`: block `e` received an entry (kept after a reset; a hint for reads).
    blocks: AtomicU64,
    /// Words in every table together (at most the storage's word limit, a quarter of a
    /// window whose indices fit the 24 key bits: 32 bits hold it).
    words: AtomicU32,
    /// This tier's generation: 0 from its making, a copy and every [`ColdTier::clear_all`]
    /// (the one change that takes keys out) until a read keeps entry positions
    /// ([`super::SparseStorage`]'s walk cache, [`ColdTier::stamp_to_keep`]), which takes a
    /// value no tier had before ([`next_generation`]). A read that kept positions checks it
    /// ([`ColdTier::stamp`]): a storage dropped and another made at its address, whose first
    /// table may take the freed one's address, is another generation. Taken by reads, not by
    /// records: a new series' first record does no read-modify-write on a counter shared by
    /// the process. Beside `words`, in the word a `usize` took before.
    generation: AtomicU32,
}

/// A generation no tier had before ([`ColdTier`]'s `generation`): from one counter for the
/// process, never 0. It wraps after 2^32 walks that found their tier without one (a stale
/// read then also needs the same address, newest table and entry count to be taken for
/// another's).
fn next_generation() -> u32 {
    /// The next generation. Not a loom atomic under the loom models: a counter outside the
    /// protocols they check.
    static NEXT: portable_atomic::AtomicU32 = portable_atomic::AtomicU32::new(1);
    loop {
        let generation = NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        if generation != 0 {
            return generation;
        }
    }
}

/// An entry's key: the logical index plus one, above the count bits (the storage keeps a
/// cold tier only where every logical index passes here below [`KEY_END`]).
#[inline]
fn key_of(logical: usize) -> u32 {
    debug_assert!(logical + 1 < KEY_END);
    ((logical + 1) as u32) << COUNT_BITS
}

impl ColdTier {
    pub(super) fn new() -> Self {
        ColdTier {
            newest: AtomicPtr::new(core::ptr::null_mut()),
            blocks: AtomicU64::new(0),
            words: AtomicU32::new(0),
            generation: AtomicU32::new(0),
        }
    }

    /// Adds `n` occurrences of `logical` (in block `block`): the bucket's count in the entry
    /// afterwards, or `None` when the tables would pass `max_words` to take a new bucket or
    /// the entry's count would pass [`COUNT_MASK`] (the record then takes a page).
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
            match unsafe { newest.as_ref() }.map(|t| t.add(key, n)) {
                Some(Added::Count(count)) => return Some(count),
                Some(Added::Saturated) => return None,
                Some(Added::Full) | None => self.grow(newest, max_words)?,
            }
        }
    }

    /// Installs a table twice the size of `newest` in front of it (the first table when it is
    /// null), unless another thread did; `None` when that would pass `max_words`.
    fn grow(&self, newest: *mut Table, max_words: usize) -> Option<()> {
        // SAFETY: as in `add`.
        let size = unsafe { newest.as_ref() }.map_or(FIRST_WORDS, |t| t.len * 2);
        if self.words() + size > max_words {
            // `words` counts a table another thread installed after `newest` was read: with
            // `newest` stale, that table may have room, so look again rather than give the
            // block a page early.
            return (self.newest.load(Ordering::Acquire) != newest).then_some(());
        }
        let table = Table::new(size, newest);
        let free = |t: *mut Table| {
            // SAFETY: `t` came from `Table::new` and was never published.
            unsafe { Table::free(t) }
        };
        if install::replace(&self.newest, newest, table, free) {
            // At most `max_words`, which fits (see the field).
            self.words.fetch_add(size as u32, Ordering::Relaxed);
        }
        Some(())
    }

    /// A copy of every table, word for word, chained in the same order (only with no writer
    /// on `self`: a clone of a plain histogram).
    pub(super) fn copy(&self) -> ColdTier {
        let mut chain: Vec<&Table> = self.tables().collect();
        chain.reverse();
        let mut newest = core::ptr::null_mut();
        for table in chain {
            let copy = Table::new(table.len, newest);
            // SAFETY: just made by `Table::new`, not yet shared.
            let to = unsafe { &*copy };
            for (t, w) in to.words().iter().zip(table.words().iter()) {
                t.store(w.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            to.used
                .store(table.used.load(Ordering::Relaxed), Ordering::Relaxed);
            newest = copy;
        }
        ColdTier {
            newest: AtomicPtr::new(newest),
            blocks: AtomicU64::new(self.blocks.load(Ordering::Relaxed)),
            words: AtomicU32::new(self.words.load(Ordering::Relaxed)),
            generation: AtomicU32::new(0),
        }
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
                let taken = (w & COUNT_MASK).min(u32::try_from(n).unwrap_or(u32::MAX));
                word.store(w - taken, Ordering::Relaxed);
                n -= u64::from(taken);
            }
        }
        n
    }

    /// Calls `f(logical, count)` for every entry with a count (a bucket may come twice).
    pub(super) fn for_each(&self, mut f: impl FnMut(usize, u64)) {
        self.for_each_word(|w| f((w >> COUNT_BITS) as usize - 1, (w & COUNT_MASK).into()))
    }

    /// Calls `f(word)` for every entry word with a count: `(logical + 1) << 8 | count`.
    pub(super) fn for_each_word(&self, mut f: impl FnMut(u32)) {
        for table in self.tables() {
            for word in table.words() {
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
        // Acquire: the words of the entries counted are seen (see `Table::add`).
        let order = plant!(ColdCountRelaxed, Ordering::Acquire, Ordering::Relaxed);
        self.tables().map(|t| t.used.load(order)).sum()
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
            for word in table.words() {
                word.fetch_and(!COUNT_MASK, Ordering::Relaxed);
            }
        }
    }

    /// Empties every table (only with no writer: the plain kind, a thread-local shard's
    /// baseline under the version lock), then forgets the generation ([`ColdTier::stamp`]).
    ///
    /// Forgotten after the tables are empty: a read beside this clear (one the version lock
    /// makes read again) may take a generation meanwhile and keep what it gathered mid-clear
    /// under the entry count from before the clear, a count the entries copied back in often
    /// reach again. That generation is overwritten here; a read that takes the next one (its
    /// acquire compare-and-swap reads this release) sees the tables emptied, never the count
    /// from before.
    pub(super) fn clear_all(&self) {
        let forget_first = plant!(ColdGenerationForgottenFirst, false, true);
        if forget_first {
            self.generation.store(0, Ordering::Relaxed);
        }
        for table in self.tables() {
            for word in table.words() {
                word.store(0, Ordering::Relaxed);
            }
            table.used.store(0, Ordering::Relaxed);
        }
        if !forget_first {
            // A swap, not a store: it reads the latest generation, so it comes after one a
            // read took meanwhile (under loom's model too, where a plain store that did not
            // see that generation could be read before it).
            self.generation.swap(0, Ordering::Release);
        }
    }

    /// Bytes the tables hold.
    pub(super) fn held_bytes(&self) -> usize {
        let tables = self.tables().count();
        self.words() * size_of::<u32>() + tables * size_of::<Table>()
    }

    /// Words in every table together.
    pub(super) fn words(&self) -> usize {
        self.words.load(Ordering::Relaxed) as usize
    }

    /// What a read that kept entry positions from an earlier call checks before using them:
    /// the newest table (a new table is new positions), the entries inserted (a new key), and
    /// the generation (another tier at this address, or keys taken out by
    /// [`ColdTier::clear_all`]; 0, none taken since, matches no kept positions). Counts may
    /// change under the same stamp; keys at kept positions may not.
    pub(super) fn stamp(&self) -> [usize; 3] {
        let generation = self.generation.load(Ordering::Relaxed) as usize;
        self.stamp_with(generation)
    }

    /// [`ColdTier::stamp`] for a read about to keep entry positions: takes a generation first
    /// if the tier has none.
    pub(super) fn stamp_to_keep(&self) -> [usize; 3] {
        let mut generation = self.generation.load(Ordering::Relaxed);
        if generation == 0 {
            let new = next_generation();
            // Acquire: a generation taken after a `clear_all` comes with its empty tables.
            let taken =
                self.generation
                    .compare_exchange(0, new, Ordering::Acquire, Ordering::Acquire);
            generation = taken.map_or_else(|now| now, |_| new);
        }
        self.stamp_with(generation as usize)
    }

    fn stamp_with(&self, generation: usize) -> [usize; 3] {
        [
            self.newest.load(Ordering::Acquire) as usize,
            self.entries(),
            generation,
        ]
    }

    /// The tables oldest first (at most [`MAX_TABLES`], all there are: sizes double from
    /// [`FIRST_WORDS`] up to a word limit below 2^24), as `out`'s first entries; how many.
    fn oldest_first<'a>(&'a self, out: &mut [Option<&'a Table>; MAX_TABLES]) -> usize {
        let mut n = 0;
        for table in self.tables() {
            if let Some(slot) = out.get_mut(n) {
                *slot = Some(table);
                n += 1;
            }
        }
        out[..n].reverse();
        n
    }

    /// Calls `f(word, position)` for every entry word with a key, its count zero or not (a
    /// reset keeps the key, and a record may count there again under the same stamp), where
    /// `position` is `table << 24 | index` with tables counted from the oldest (a chain only
    /// grows at its newest end, so a position stays the same word).
    pub(super) fn for_each_positioned(&self, mut f: impl FnMut(u32, u32)) {
        let mut tables = [None; MAX_TABLES];
        let n = self.oldest_first(&mut tables);
        for (t, table) in tables[..n].iter().flatten().enumerate() {
            for (i, word) in table.words().iter().enumerate() {
                let w = word.load(Ordering::Relaxed);
                if w != 0 {
                    f(w, (t as u32) << POSITION_BITS | i as u32);
                }
            }
        }
    }

    /// Pushes onto `out` the word now at each of `positions` (from
    /// [`ColdTier::for_each_positioned`], each with the key it held then, `(logical + 1) <<
    /// 32 | position`) whose count is not zero. False, with `out` cut back, if a position is
    /// past the tables or holds another key: the positions are stale.
    pub(super) fn read_positions(&self, positions: &[u64], out: &mut Vec<u32>) -> bool {
        let mut tables = [None; MAX_TABLES];
        let n = self.oldest_first(&mut tables);
        let start = out.len();
        for &p in positions {
            let (key, position) = ((p >> 32) as u32, p as u32);
            let (t, i) = (
                (position >> POSITION_BITS) as usize,
                (position & ((1 << POSITION_BITS) - 1)) as usize,
            );
            let word = tables[..n]
                .get(t)
                .copied()
                .flatten()
                .and_then(|table| table.words().get(i));
            match word.map(|w| w.load(Ordering::Relaxed)) {
                Some(w) if w >> COUNT_BITS == key => {
                    if w & COUNT_MASK != 0 {
                        out.push(w);
                    }
                }
                _ => {
                    out.truncate(start);
                    return false;
                }
            }
        }
        true
    }
}

impl Drop for ColdTier {
    fn drop(&mut self) {
        let mut next = self.newest.load(Ordering::Relaxed);
        while !next.is_null() {
            // SAFETY: every table of the chain came from `Table::new` and is linked once;
            // with `&mut self` nothing else reaches it, and each is freed once here.
            unsafe {
                let table = next;
                next = (*table).prev;
                Table::free(table);
            }
        }
    }
}

// SAFETY: the tables are reached only through atomics (`newest`) and immutable links set
// before publication; their words are atomics.
unsafe impl Send for ColdTier {}
// SAFETY: as above: every shared access is an atomic operation.
unsafe impl Sync for ColdTier {}
