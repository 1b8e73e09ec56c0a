//! Storage whose memory follows what was recorded: [`SparseStorage`], for every heap kind
//! (plain, atomic, approximate, and the thread-local kind's shards).
//!
//! A dense histogram holds a cell for every bucket of its window: a full-range histogram at
//! the default 0.1 % layout is 28,672 cells (229 KB of `u64`), whatever was recorded. A server
//! with ten thousand label sets cannot pay that per series. Sparse storage keeps the same
//! layout, window, indices and reads (every percentile, codec and export works unchanged), and
//! holds memory only for the blocks that were recorded into:
//!
//! - **A directory of pages, indexed by block.** The layout computes a value's block
//!   `e = ilog2(v | B) - k` and offset `m = v >> e` ([`BucketPos`]); block `e` has one page of
//!   cells (`2B` for block 0, `B` for the others), whose pointer is stored biased so that the
//!   cell is `page + m`. A record into a page is the page load, a null test and the
//!   increment, with no bound check: the directory has an entry for every block a position
//!   can name at its block scale (`64 - k`), null past the window (`directory.rs`). The
//!   directory itself (8 bytes a block and 8 for its length: 464 bytes at block scale 7) is
//!   made with the first page, so a series that stays in the cold tier never holds one;
//!   before it, the storage points at a static directory whose entries are all null, which
//!   sends the record to the cold path.
//! - **A cold tier.** A page is `B` cells (1 KB of `u64` at the `metrics` recorder's block
//!   scale 7, 4 KB at the default 9): too much for a block that saw one value. A block without
//!   a page counts its buckets in small shared tables of 4-byte entries (`cold.rs`: an index
//!   and a count of up to 255). A bucket whose entry reaches [`HOT`] occurrences, a
//!   `record_n` of [`HOT`] or more, or a new bucket once the tables reached their limit
//!   ([`SparseStorage::cold_word_limit`]) gives its block a page; the old entries stay, and
//!   reads add them to the page's cells. A new series is a few hundred bytes: the histogram
//!   and a first table of 32 entries (128 bytes, 24 buckets).
//! - **Whole blocks.** The window is widened to whole blocks ([`widened`]): memory follows the
//!   data, so a wider window costs nothing, and the record needs no lower bound check. Blocks
//!   wholly below the window have no directory entry that can ever be set (their values are
//!   underflow), and blocks past the window's end are overflow (their entries stay null).
//! - **Lock-free installation** of pages and tables for the shared kinds (`install.rs`): a
//!   compare-and-swap from null, the loser frees its own allocation. Nothing is freed before
//!   the storage drops.
//!
//! Reads: [`Cells::count_at`] is the page cell plus the bucket's entries (saturating at the
//! cell's maximum); the bulk read ([`Cells::recorded_runs`]) walks the blocks in order, a
//! page's cells through [`picollo_core::storage::cell_runs`], the buckets of a block without a
//! page one run each, from the entries' words gathered and radix-sorted by index (lists
//! allocated per read: reads of sparse storage allocate, records allocate only the page or
//! table they install). Sums over ranges read the tables only where a block in the range ever
//! held entries. Percentiles and statistics walk the bulk read
//! ([`Cells::READS_IN_BULK`]), and the iterations read it from a position a batch at a time
//! ([`Cells::recorded_runs_from`]: from that block on, the cold entries gathered and sorted
//! once per walk and kept in the thread's scratch between its calls, `runs.rs`): they cost
//! about what was recorded, not the window.
//!
//! When to choose which: sparse for servers (many series, each touching a few octaves of a
//! wide range: the `Registry`, the `metrics` recorder and the tracing layer use it by default);
//! dense ([`HistogramBuilder::dense`](crate::HistogramBuilder::dense)) for a few hot histograms
//! whose every bucket may be touched, where the record must take the fewest instructions from
//! the first value on, and in firmware (`picollo-core` has no allocation: its `static`s are
//! dense). The approximate kind's scalable cells live in pages only (no cold tier): an entry
//! would need the scalable counter's update rule.
//!
//! ```
//! use picollo_alloc::sparse::SparseStorage;
//! use picollo_core::{Cells, Histogram, Layout, ReadExt, Window};
//!
//! let layout = Layout::from_block_scale(7).unwrap();
//! let storage = SparseStorage::<u64>::new(layout, Window::full(layout));
//! let window = storage.window();
//! let mut h = Histogram::with_storage(layout, storage, window).unwrap();
//! for v in [1_000u64, 20_000, 300_000] {
//!     h.record(v);
//! }
//! assert_eq!(h.total(), 3);
//! // Three buckets in the cold tier: no page and no directory yet, one table of 32 entries.
//! assert_eq!(h.storage().pages(), 0);
//! assert!(h.storage().held_bytes() < 200);
//! ```

mod cold;
mod directory;
mod install;
mod runs;
mod scratch;
mod sort;
#[cfg(test)]
mod tests;

use core::ops::ControlFlow;

use cold::ColdTier;
use directory::Directory;
use install::{AtomicUsize, Ordering};
use picollo_core::scalable::ScalableCell;
use picollo_core::{
    Absent, BucketPos, CellCount, Cells, CellsMut, Layout, Lookup, Window, WindowError,
};
use portable_atomic::{AtomicU16, AtomicU32, AtomicU64};

/// Occurrences of one bucket in the cold tier after which its block gets a page; a
/// `record_n` of this many or more goes to a page at once. Eight: a bucket hit that often is
/// likely to be hit again, and eight records through the cold path (a hash probe and an
/// atomic add, about 30 instructions) cost less than one page of a block that stays cold.
pub const HOT: u64 = 8;

/// Bytes of one word of the cold tier ([`SparseStorage::cold_words`]): a bucket's index and a
/// small count packed in 32 bits.
pub const COLD_WORD_BYTES: usize = 4;

/// A cell type sparse storage can keep in pages: all-zero bytes are an empty cell.
///
/// # Safety
///
/// An all-zero bit pattern must be a valid value of the type, meaning a count of zero (in a
/// loom model build, once `init_page` ran over it).
pub unsafe trait PageCell: CellCount + Send + Sync + 'static {
    /// Whether buckets may live in the cold tier (as entries with plain counts) before their
    /// block has a page. False for cells whose count has its own update rule (scalable cells).
    const COLD_TIER: bool = true;

    /// Loom model builds only (`tests/loom.rs`): makes the cells of a page just allocated
    /// zeroed, for a model's cell type that all-zero bytes are not (loom's atomics, whose
    /// creation loom tracks: a thread that may see the page before its cells were made is then
    /// caught). Nothing to do for the real cell types.
    ///
    /// # Safety
    ///
    /// `page` is `len` cells of zeroed memory that no other thread can reach yet.
    #[cfg(loom)]
    #[doc(hidden)]
    unsafe fn init_page(page: *mut Self, len: usize) {
        let _ = (page, len);
    }
}

// SAFETY: zero is the integer 0.
unsafe impl PageCell for u16 {}
// SAFETY: as above.
unsafe impl PageCell for u32 {}
// SAFETY: as above.
unsafe impl PageCell for u64 {}
// SAFETY: an atomic integer has the layout of its integer; zero is 0.
unsafe impl PageCell for AtomicU16 {}
// SAFETY: as above.
unsafe impl PageCell for AtomicU32 {}
// SAFETY: as above.
unsafe impl PageCell for AtomicU64 {}
// SAFETY: `ScalableCell` is a transparent atomic word; zero is `ScalableCell::new()` (count 0,
// not contended).
unsafe impl PageCell for ScalableCell {
    const COLD_TIER: bool = false;
}

/// The window `window` widened to whole blocks of `layout` (what [`SparseStorage`] serves).
///
/// ```
/// use picollo_alloc::sparse::widened;
/// use picollo_core::{Layout, Window};
/// let l = Layout::from_block_scale(7).unwrap();
/// let w = widened(l, Window::new(l, 1_000, 5_000).unwrap());
/// assert_eq!((w.min_value(l), w.max_value(l)), (512, 8191));
/// ```
pub fn widened(layout: Layout, window: Window) -> Window {
    let (k, base) = (layout.block_scale(), layout.first_index());
    // Blocks of positions (the indices less the layout's `first_index`, see `BucketPos`).
    let first_block = BucketPos::of_logical(window.first() - base, k).block;
    let last_block = BucketPos::of_logical(window.last() - base, k).block;
    let first = block_start(first_block, k);
    let end = block_start(last_block, k) + page_len(last_block, k);
    Window::from_indices(layout, base + first, end - first)
}

/// The logical index of block `e`'s first bucket.
#[inline]
fn block_start(e: usize, k: u32) -> usize {
    if e == 0 {
        0
    } else {
        (e + 1) << k
    }
}

/// Cells in block `e`'s page: `2B` for block 0, `B` for the others.
#[inline]
fn page_len(e: usize, k: u32) -> usize {
    (1 << k) << usize::from(e == 0)
}

/// The offset of block `e`'s first cell: a page pointer is stored this many cells before its
/// allocation, so that the cell of offset `m` is `page + m`.
#[inline]
fn bias(e: usize, k: u32) -> usize {
    if e == 0 {
        0
    } else {
        1 << k
    }
}

/// Cells in pages allocated per block, behind a directory, plus a cold tier of packed
/// entries: see the [module docs](self).
pub struct SparseStorage<T> {
    /// Block `e`'s page, biased by [`bias`]: null until installed (forever for blocks below
    /// the window). The directory itself comes with the first page (`directory.rs`): a
    /// series that never leaves the cold tier holds none.
    dir: Directory<T>,
    k: u32,
    /// The layout and the window served (whole blocks).
    layout: Layout,
    window: Window,
    /// The index of the window's first bucket among the positions' indices
    /// ([`BucketPos::logical`]: the logical index less the layout's `first_index`, which a
    /// value unit makes non-zero). The cold tier's entries are keyed by these indices.
    first: usize,
    /// The block of the window's first bucket.
    first_block: usize,
    cold: ColdTier,
    /// Most words the cold tier's tables may hold: 0 where the window's indices do not fit an
    /// entry's key (no cold tier).
    cold_limit: usize,
    /// Bytes of installed pages.
    page_bytes: AtomicUsize,
}

impl<T: PageCell> SparseStorage<T> {
    /// Empty storage for `window` under `layout`, widened to whole blocks ([`widened`]; use
    /// [`SparseStorage::window`] as the histogram's window). Allocates nothing: the cold
    /// tier's first table comes with the first record, the directory with the first page.
    pub fn new(layout: Layout, window: Window) -> Self {
        let window = widened(layout, window);
        let k = layout.block_scale();
        let first = window.first() - layout.first_index();
        let first_block = BucketPos::of_logical(first, k).block;
        let last_block = BucketPos::of_logical(first + window.len() - 1, k).block;
        let blocks = last_block - first_block + 1;
        let cold_limit = if first + window.len() < cold::KEY_END {
            Self::cold_word_limit(blocks, k)
        } else {
            0
        };
        SparseStorage {
            dir: Directory::new(last_block + 1),
            k,
            layout,
            window,
            first,
            first_block,
            cold: ColdTier::new(),
            cold_limit,
            page_bytes: AtomicUsize::new(0),
        }
    }

    /// The most words ([`COLD_WORD_BYTES`] each) the cold tier of a storage of `blocks` blocks
    /// at block scale `k` holds: a quarter as many as the dense window has cells (an eighth of
    /// its bytes at 8-byte cells), and at least one table. Past it, a new bucket gives its
    /// block a page. At the `metrics` recorder's layout (full range, `k = 7`) that is 1,856
    /// words: tables of 32 to 512 words (3.9 KB, 744 buckets); at the default layout (`k = 9`)
    /// 7,168 words: tables up to 2,048 words (16 KB, 3,048 buckets).
    pub fn cold_word_limit(blocks: usize, k: u32) -> usize {
        ((blocks << k) / 4).max(cold::FIRST_WORDS)
    }

    /// Empty storage of cells `U` for the window this one serves: what [`SparseStorage::new`]
    /// makes for it, without working the blocks out again (a thread-local histogram's every
    /// new shard: about 100 instructions, callgrind).
    pub(crate) fn empty_like<U: PageCell>(&self) -> SparseStorage<U> {
        SparseStorage {
            dir: Directory::new(self.dir.len()),
            k: self.k,
            layout: self.layout,
            window: self.window,
            first: self.first,
            first_block: self.first_block,
            cold: ColdTier::new(),
            cold_limit: self.cold_limit,
            page_bytes: AtomicUsize::new(0),
        }
    }

    /// The window this storage serves: the one it was made for, widened to whole blocks.
    pub fn window(&self) -> Window {
        self.window
    }

    /// The directory's head, for a record path that caches it (the thread-local kind's
    /// per-thread cache): an empty directory until the first page (see `directory.rs`).
    pub(crate) fn dir_ptr(&self) -> *const usize {
        self.dir.head()
    }

    /// Bytes of the directory once the first page installs it: its length word and an entry
    /// for every block a position can name at this block scale (not only the window's).
    pub(crate) fn directory_bytes(&self) -> usize {
        directory::bytes::<T>(directory::capacity(self.k))
    }

    /// The window's blocks: `0..dir_len()` (past it: overflow; the directory's entries go
    /// on, null, to every block a position names).
    pub(crate) fn dir_len(&self) -> usize {
        self.dir.len()
    }

    /// The cell of `pos` through a cached directory head: the thread-local kind's hot path
    /// ([`SparseStorage::cell`](Cells::cell) without the storage at hand).
    ///
    /// # Safety
    ///
    /// `head` is [`SparseStorage::dir_ptr`] of a live storage, and `pos` a position under its
    /// block scale.
    #[inline(always)]
    pub(crate) unsafe fn cached_cell<'a>(head: *const usize, pos: BucketPos) -> Lookup<&'a T> {
        // SAFETY: a live storage's directory head, and a position under its block scale (the
        // caller's guarantee), whose block the directory has an entry for. The owner thread
        // installs its shard's pages and reads them back: program order.
        let page = unsafe { directory::page_at::<T>(head, pos.block) };
        if page.is_null() {
            return Lookup::Missing;
        }
        // SAFETY: as in `Cells::cell`.
        Lookup::Found(unsafe { &*page.wrapping_add(pos.offset) })
    }

    /// Makes this storage's counts those of `from` (same layout and window), bucket for bucket:
    /// every page of `from` gets one here with its cells' counts (`set` stores a count), and
    /// the cold tier is copied entry for entry. Only with no other writer (a thread-local
    /// shard's baseline, under the histogram's version lock); readers that overlap must retry.
    pub(crate) fn copy_counts_from(&self, from: &Self, set: impl Fn(&T, u64)) {
        // Every block: one with a page here but none in `from` is set to zero.
        for e in self.first_block..self.dir.len() {
            if let Some(cells) = from.page(e) {
                self.install(e);
                if let Some(to) = self.page(e) {
                    for (t, c) in to.iter().zip(cells) {
                        set(t, c.count());
                    }
                }
            } else if let Some(to) = self.page(e) {
                to.iter().for_each(|t| set(t, 0));
            }
        }
        self.cold.clear_all();
        from.cold.for_each(|logical, n| {
            let pos = BucketPos::of_logical(logical, self.k);
            // No limit: the copy holds what `from` holds, in entries where they fit; a
            // bucket whose entries together pass an entry's count goes to its page.
            if self.cold.add(logical, pos.block, n, usize::MAX).is_none() {
                let cell = self.install(pos.block).wrapping_add(pos.offset);
                // SAFETY: a cell of the page just installed (see `Cells::cell`).
                let cell = unsafe { &*cell };
                set(cell, cell.count().saturating_add(n).min(T::MAX));
            }
        });
    }

    /// Loom model builds only (`tests/loom.rs`): [`SparseStorage::copy_counts_from`], the
    /// thread-local kind's baseline copy, for a model of a walk beside it.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn model_copy_counts_from(&self, from: &Self, set: impl Fn(&T, u64)) {
        self.copy_counts_from(from, set)
    }

    /// Pages installed.
    pub fn pages(&self) -> usize {
        self.dir.entries().map_or(0, |dir| {
            dir[self.first_block..]
                .iter()
                .filter(|page| !page.load(Ordering::Relaxed).is_null())
                .count()
        })
    }

    /// Words in the cold tier's tables.
    pub fn cold_words(&self) -> usize {
        self.cold.words()
    }

    /// Installs a page for every block of the window (the storage then holds as much as dense
    /// storage, and every record takes the page path).
    pub fn install_all(&self) {
        for e in self.first_block..self.dir.len() {
            self.install(e);
        }
    }

    /// Block `e`'s page (biased), installed now if it had none.
    fn install(&self, e: usize) -> *mut T {
        let (k, len) = (self.k, page_len(e, self.k));
        let layout = page_layout::<T>(len);
        let make = || {
            // SAFETY: `layout` has a non-zero size (`len >= 2` cells of a non-zero-sized
            // type).
            let page = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
            if page.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            // All-zero cells are empty cells (`PageCell`).
            #[cfg(loom)]
            // SAFETY: `len` cells of zeroed memory, not yet published.
            unsafe {
                T::init_page(page, len)
            };
            page.wrapping_sub(bias(e, k))
        };
        let free = |page: *mut T| {
            // SAFETY: `page` is the biased pointer `make` returned, never published: undoing
            // the bias gives the allocation made with `layout`.
            unsafe { std::alloc::dealloc(page.wrapping_add(bias(e, k)).cast(), layout) }
        };
        let entries = self.dir.installed(directory::capacity(self.k));
        let (page, ours) = install::install(&entries[e], make, free);
        if ours {
            self.page_bytes.fetch_add(layout.size(), Ordering::Relaxed);
        }
        page
    }

    /// The cold path of a record of `n` at `pos` whose block had no page: outside the window,
    /// a page installed meanwhile or now (the cell returned), or counted in the cold tier.
    ///
    /// # Safety
    ///
    /// `pos` is a position under this storage's block scale (see [`Cells`]): the returned
    /// cell is then inside its page.
    #[cold]
    #[inline(never)]
    unsafe fn record_cold(&self, pos: BucketPos, n: u64) -> Absent<*mut T> {
        let e = pos.block;
        if e < self.first_block {
            // Top bit set: below the window (`Window::slot_is_below`).
            return Absent::Outside(usize::MAX);
        }
        if e >= self.dir.len() {
            return Absent::Outside(self.window.len());
        }
        // SAFETY: `pos` is a position under this storage's block scale (the caller's
        // guarantee). Past the window's bound, checked above, is overflow.
        if let Some(page) = unsafe { self.record_page(pos) } {
            return Absent::Cell(page.wrapping_add(pos.offset));
        }
        if n == 0 {
            return Absent::Counted;
        }
        if T::COLD_TIER && n < HOT && self.cold_limit != 0 {
            let logical = pos.logical(self.k);
            if let Some(count) = self.cold.add(logical, e, n, self.cold_limit) {
                if count >= HOT {
                    self.install(e);
                }
                return Absent::Counted;
            }
        }
        Absent::Cell(self.install(e).wrapping_add(pos.offset))
    }

    /// Block `e`'s page pointer (biased), if installed (none past the window).
    #[inline(always)]
    fn page_ptr(&self, e: usize) -> Option<*mut T> {
        let page = self.dir.page(e);
        (!page.is_null()).then_some(page)
    }

    /// The record path's [`SparseStorage::page_ptr`], without the window's bound: a block past
    /// it has no page either.
    ///
    /// # Safety
    ///
    /// `pos` is a position under this storage's block scale.
    #[inline(always)]
    unsafe fn record_page(&self, pos: BucketPos) -> Option<*mut T> {
        // SAFETY: the caller's guarantee.
        let page = unsafe { self.dir.page_unchecked(pos.block) };
        (!page.is_null()).then_some(page)
    }

    /// The blocks that may have a page: none before the directory is installed (a new
    /// storage's walks over its pages, such as the clear every constructor makes, then cost
    /// nothing), else the window's blocks.
    fn paged_blocks(&self) -> core::ops::Range<usize> {
        match self.dir.entries() {
            Some(_) => self.first_block..self.dir.len(),
            None => 0..0,
        }
    }

    /// The page of block `e` as a slice of its cells, if installed.
    fn page(&self, e: usize) -> Option<&[T]> {
        let page = self.page_ptr(e)?;
        let start = page.wrapping_add(bias(e, self.k));
        // SAFETY: a non-null entry is an installed page (published with release, loaded with
        // acquire), `page_len` zero-initialized cells from `start`, freed only on drop.
        Some(unsafe { core::slice::from_raw_parts(start, page_len(e, self.k)) })
    }

    /// The page of block `e` as a slice of its cells, if installed, exclusively.
    fn page_mut(&mut self, e: usize) -> Option<&mut [T]> {
        let page = self.page_ptr(e)?;
        let start = page.wrapping_add(bias(e, self.k));
        // SAFETY: an installed page (see `page`), borrowed exclusively with `self`.
        Some(unsafe { core::slice::from_raw_parts_mut(start, page_len(e, self.k)) })
    }

    /// The storage index of block `e`'s first cell.
    fn slot_of_block(&self, e: usize) -> usize {
        block_start(e, self.k) - self.first
    }

    /// The storage index of an entry word.
    #[inline]
    fn slot_of_word(&self, w: u32) -> usize {
        (w >> cold::COUNT_BITS) as usize - 1 - self.first
    }
}

/// The allocation layout of a page of `len` cells.
fn page_layout<T>(len: usize) -> std::alloc::Layout {
    match std::alloc::Layout::array::<T>(len) {
        Ok(layout) => layout,
        // A page is at most 2^21 cells of at most 8 bytes.
        Err(_) => unreachable!("page of {len} cells"),
    }
}

impl<T: PageCell> Cells for SparseStorage<T> {
    type Item = T;
    const READS_IN_BULK: bool = true;

    fn check_window(&self, layout: Layout, window: Window) -> Result<(), WindowError> {
        if window == self.window && layout == self.layout {
            Ok(())
        } else {
            Err(WindowError::StorageLength {
                expected: self.window.len(),
                actual: window.len(),
            })
        }
    }

    #[inline(always)]
    unsafe fn cell(&self, pos: BucketPos, _k: u32, _first: usize) -> Lookup<&T> {
        // SAFETY: the caller's guarantee (below).
        let Some(page) = (unsafe { self.record_page(pos) }) else {
            return Lookup::Missing;
        };
        // SAFETY: by the caller's guarantee `pos` is a position under this storage's block
        // scale, so its offset is one of its block's (`0..2B` for block 0, `B..2B` otherwise,
        // which the bias maps onto the page's cells): the cell is inside the page; the page is
        // alive until drop.
        Lookup::Found(unsafe { &*page.wrapping_add(pos.offset) })
    }

    #[inline]
    unsafe fn absent(&self, pos: BucketPos, _k: u32, _first: usize, n: u64) -> Absent<&T> {
        // SAFETY: the caller's guarantee is `record_cold`'s.
        match unsafe { self.record_cold(pos, n) } {
            Absent::Outside(slot) => Absent::Outside(slot),
            Absent::Counted => Absent::Counted,
            // SAFETY: a cell of an installed page, as in `cell`.
            Absent::Cell(cell) => Absent::Cell(unsafe { &*cell }),
        }
    }

    fn count_at(&self, slot: usize) -> u64 {
        if slot >= self.window.len() {
            return 0;
        }
        let logical = self.first + slot;
        let pos = BucketPos::of_logical(logical, self.k);
        let page = self
            .page(pos.block)
            .and_then(|cells| cells.get(pos.offset - bias(pos.block, self.k)))
            .map_or(0, CellCount::count);
        let cold = if self.cold.has_block(pos.block) {
            self.cold.count(logical)
        } else {
            0
        };
        page.saturating_add(cold).min(T::MAX)
    }

    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let end = end.min(self.window.len());
        if start >= end {
            return 0;
        }
        let (lo, hi) = (self.first + start, self.first + end);
        let first_block = BucketPos::of_logical(lo, self.k).block;
        let last_block = BucketPos::of_logical(hi - 1, self.k).block;
        let mut sum = 0u64;
        for e in first_block..=last_block {
            if let Some(cells) = self.page(e) {
                let base = block_start(e, self.k);
                let from = lo.max(base) - base;
                let to = hi.min(base + cells.len()) - base;
                sum = sum.saturating_add(picollo_core::storage::sum_cells(cells, from, to));
            }
        }
        if self.cold.has_blocks(first_block, last_block) {
            sum = sum.saturating_add(self.cold.sum_in(lo, hi));
        }
        sum
    }

    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        let mut f = |start: usize, counts: &[u64]| {
            f(start, counts);
            ControlFlow::Continue(())
        };
        scratch::with(|scratch| self.runs_from(scratch, 0, false, &mut f));
    }

    /// From `from`'s block on, in rounds of up to 512 cold entries from the walk cache
    /// (gathered by a walk's first call and kept for its later ones), ending where `f`
    /// breaks.
    fn recorded_runs_from(&self, from: usize, f: &mut dyn FnMut(usize, &[u64]) -> ControlFlow<()>) {
        scratch::with(|scratch| self.runs_from(scratch, from, true, &mut |s, c| f(s, c)));
    }

    fn clear_shared(&self, clear: impl Fn(&T)) {
        for e in self.paged_blocks() {
            if let Some(cells) = self.page(e) {
                cells.iter().for_each(&clear);
            }
        }
        self.cold.clear_counts();
    }

    fn held_bytes(&self) -> usize {
        self.dir.held_bytes() + self.page_bytes.load(Ordering::Relaxed) + self.cold.held_bytes()
    }
}

impl<T: PageCell> CellsMut for SparseStorage<T> {
    #[inline(always)]
    unsafe fn cell_mut(&mut self, pos: BucketPos, _k: u32, _first: usize) -> Lookup<&mut T> {
        // SAFETY: the caller's guarantee (below).
        let Some(page) = (unsafe { self.record_page(pos) }) else {
            return Lookup::Missing;
        };
        // SAFETY: as in `cell`; `&mut self` makes the access exclusive.
        Lookup::Found(unsafe { &mut *page.wrapping_add(pos.offset) })
    }

    #[inline]
    unsafe fn absent_mut(
        &mut self,
        pos: BucketPos,
        _k: u32,
        _first: usize,
        n: u64,
    ) -> Absent<&mut T> {
        // SAFETY: the caller's guarantee is `record_cold`'s.
        match unsafe { self.record_cold(pos, n) } {
            Absent::Outside(slot) => Absent::Outside(slot),
            Absent::Counted => Absent::Counted,
            // SAFETY: as in `cell_mut`.
            Absent::Cell(cell) => Absent::Cell(unsafe { &mut *cell }),
        }
    }

    fn clear_mut(&mut self, zero: impl Fn(&mut T)) {
        for e in self.paged_blocks() {
            if let Some(cells) = self.page_mut(e) {
                cells.iter_mut().for_each(&zero);
            }
        }
        self.cold.clear_all();
    }

    /// The bucket's cold entries first, then its page cell.
    fn take_at(&mut self, slot: usize, n: u64, set: impl Fn(&mut T, u64)) {
        if slot >= self.window.len() {
            return;
        }
        let logical = self.first + slot;
        let pos = BucketPos::of_logical(logical, self.k);
        let n = if self.cold.has_block(pos.block) {
            self.cold.take(logical, n)
        } else {
            n
        };
        let offset = pos.offset - bias(pos.block, self.k);
        if let Some(cell) = self.page_mut(pos.block).and_then(|c| c.get_mut(offset)) {
            let left = cell.count().saturating_sub(n);
            set(cell, left);
        }
    }

    /// Each non-zero count lands as a record of it would: its page's cell, or the cold tier
    /// (which installs the page when the bucket turns hot), so the memory still follows what
    /// was recorded.
    fn add_run(&mut self, start: usize, counts: &[u64], add: impl Fn(&mut T, u64)) {
        let end = start.saturating_add(counts.len()).min(self.window.len());
        let counts = counts.get(..end.saturating_sub(start)).unwrap_or(&[]);
        for (i, &n) in counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let pos = BucketPos::of_logical(self.first + start + i, self.k);
            // SAFETY: `start + i` is a storage index inside the window (cut above), so `pos`
            // is the position of a value of the window under this storage's block scale.
            match unsafe { self.cell_mut(pos, self.k, self.first) } {
                Lookup::Found(cell) => add(cell, n),
                // SAFETY: as above.
                Lookup::Missing => match unsafe { self.absent_mut(pos, self.k, self.first, n) } {
                    Absent::Cell(cell) => add(cell, n),
                    Absent::Counted => {}
                    // Only for positions outside the window, which were cut above.
                    Absent::Outside(_) => debug_assert!(false, "a slot inside the window"),
                },
            }
        }
    }
}

impl<T: PageCell + Copy> Clone for SparseStorage<T> {
    fn clone(&self) -> Self {
        let mut copy = self.empty_like::<T>();
        copy.cold = self.cold.copy();
        for e in self.paged_blocks() {
            if let Some(cells) = self.page(e) {
                let page = copy.install(e).wrapping_add(bias(e, self.k));
                // SAFETY: just installed: `cells.len()` cells, not yet shared.
                unsafe { core::ptr::copy_nonoverlapping(cells.as_ptr(), page, cells.len()) };
            }
        }
        copy
    }
}

impl<T> Drop for SparseStorage<T> {
    fn drop(&mut self) {
        let Some(dir) = self.dir.entries() else {
            return;
        };
        for (e, slot) in dir.iter().enumerate() {
            let page = slot.load(Ordering::Relaxed);
            if !page.is_null() {
                let layout = page_layout::<T>(page_len(e, self.k));
                // SAFETY: a non-null entry is a page `install` allocated with this layout and
                // biased by `bias(e)`; with `&mut self` no one else holds it, and it is freed
                // once (the directory itself is freed when the field drops, after this).
                unsafe { std::alloc::dealloc(page.wrapping_add(bias(e, self.k)).cast(), layout) };
            }
        }
    }
}

// SAFETY: the pages are owned by the storage (freed only on drop) and reached through atomic
// pointers; the cells are `Send + Sync` (`PageCell`).
unsafe impl<T: Send + Sync> Send for SparseStorage<T> {}
// SAFETY: shared access reads cells through `&T` (`T: Sync`) and installs pages and tables
// with atomic compare-and-swap; writes through `&mut T` need `&mut self`.
unsafe impl<T: Send + Sync> Sync for SparseStorage<T> {}

impl<T> core::fmt::Debug for SparseStorage<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SparseStorage")
            .field("window", &self.window)
            .field("blocks", &(self.dir.len() - self.first_block))
            .field("cold_words", &self.cold.words())
            .finish_non_exhaustive()
    }
}
