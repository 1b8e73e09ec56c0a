//! The thread-local histogram: every thread records into its own shard with a relaxed load and
//! store (no shared read-modify-write), readers sum the shards and an accumulator.
//!
//! # Design
//!
//! - **Shards.** A shard is a storage of atomic cells ([`LocalCounter::Cell`]) plus its own
//!   underflow and overflow: [sparse storage](crate::sparse) by default (pages of cells per
//!   block installed on first touch, a cold tier of packed entries: a thread that recorded a
//!   few values into a full-range histogram holds a few hundred bytes), or dense heap cells
//!   (`ThreadLocalHistogram<C, Dense>`, the whole window per thread). Only its owner thread
//!   writes the cells while the owner lives, with `load(Relaxed)` + `store(Relaxed)`: the
//!   cells are atomics only so that readers may load them concurrently without a data race.
//!   The owner installs its shard's pages and tables with the storage's lock-free protocol
//!   (release on install, readers acquire), and never frees them while the histogram lives.
//! - **Registry.** The histogram keeps an intrusive, append-only, lock-free list of shard
//!   nodes. Readers walk it without allocating or locking. A shard whose thread exited is
//!   folded into the accumulator, zeroed and marked free; the next new thread reuses it, so
//!   the list grows only to the largest number of threads that recorded at the same time.
//!   Nodes are freed when the histogram is dropped.
//! - **Per-thread lookup.** Rust's `thread_local!` is static, so each thread keeps a hash
//!   table of `(histogram, shard)` entries, plus a direct-mapped cache of
//!   [`CACHE_SLOTS`] entries `(histogram, shard, cells)`. Each histogram gets its cache slot
//!   when it is made (round robin over the slots), so a thread that records into up to
//!   [`CACHE_SLOTS`] histograms made one after another (the busy and wall times of a span
//!   callsite, the series of a metrics recorder) hits the cache for every one of them. The
//!   hot path is one TLS compare at the histogram's slot, the index math and the cell's
//!   load + store (through the shard's directory of pages for sparse storage: one more load
//!   and a null test, and a null test of the directory, which the shard's first page makes
//!   and the cold path then caches); the slot, the layout and the window are copied into the handle, so
//!   that a loop of records keeps them in registers. A miss (first use on the thread, or two
//!   histograms sharing a slot) takes the cold path: find or claim the shard and refill the
//!   slot.
//! - **Accumulator.** An atomic histogram (the core atomic kind, over the same storage as the
//!   shards) receives the counts of exiting threads and the records made where no shard can
//!   be used (below).
//! - **Bulk reads.** [`ThreadLocalHistogram::read_recorded`] reads every non-empty bucket in one
//!   pass over each shard (skipping runs of empty cells, and the accumulator while it never
//!   held a count), for exporters that serve many sparse histograms; the other
//!   [`HistogramRead`] methods read bucket by bucket. Every read, bulk or not, retries under
//!   the version lock (below), so none sees a thread's counts twice or not at all while its
//!   exit moves them from its shard to the accumulator.
//!
//! # Thread exit, and recording after TLS destruction
//!
//! The per-thread list has a TLS destructor. It first clears the cache, then, for
//! each histogram the thread recorded into, folds the thread's shard into the accumulator and
//! frees the shard, inside the histogram's version section (readers retry, so no read sees the
//! counts in both places or in neither). The fold is exact: cell by cell, with no record
//! racing it, because only the exiting thread writes that shard.
//!
//! A record that finds no usable shard goes into the accumulator with an atomic add, and is
//! never dropped. That happens when the thread's TLS is being or has been destroyed (another
//! TLS destructor records; `LocalKey::try_with` fails), and when the per-thread list is
//! already borrowed (a global allocator that records into this histogram while the cold path
//! allocates).
//!
//! # Reset: per-shard baselines instead of zeroing other threads' cells
//!
//! Zeroing a cell that its owner updates with load + store would bring back Picollo for .NET's
//! "old+1" race: the owner could store `old + 1` over the zero. So [`ThreadLocalHistogram::reset`]
//! never writes another thread's cells, and adds nothing to the record path. Inside the
//! version section it clears the accumulator and copies every shard's current counts into the
//! shard's *baseline* (allocated at the first reset, over the shard's own kind of storage: a
//! sparse shard's baseline gets a page for each of the shard's pages and a copy of its cold
//! entries, never the whole window). Readers report a shard's counts minus its baseline. A shard's cells only grow while its owner lives (the owner is their only
//! writer), so a cell is never below its baseline.
//!
//! **Guarantee.** The reset reads each cell once, under the version lock. A record into a
//! shard counts after the reset exactly when its store follows, in the cell's modification
//! order, the value the reset copied; otherwise it was in the baseline. A record into the
//! accumulator counts after the reset exactly when its atomic add follows the reset's clearing
//! store of that cell. So every record is counted in exactly one interval between resets:
//! resets lose nothing that follows them and count nothing twice. In happens-before terms:
//!
//! - a record that happens before `reset` is called (say, its thread then set a flag that
//!   the resetting thread read with acquire) is in the baseline: never counted after;
//! - a record that happens after `reset` returned is counted;
//! - a record concurrent with the reset lands on either side, cell by cell (as with the
//!   atomic kind, whose reset clears cell after cell): the reset is not one instant across
//!   buckets for writers that do not synchronize with it.
//!
//! A thread exit folds `cells - baseline` and zeroes both; folds, resets and fork clean-ups
//! are serialized by the version lock. Reads through [`HistogramRead`] retry when one of them
//! overlapped (Picollo for .NET, "Optimistic retry"): a batch read through
//! [`picollo_core::read::consistent`] never mixes pre- and post-reset counts, and even a
//! single `count_at`, `underflow`, `overflow`, `sum_range` or bulk read
//! ([`HistogramRead::recorded_runs`], [`ThreadLocalHistogram::read_recorded`],
//! [`ThreadLocalHistogram::for_each_recorded`]) retries on its own, so it never sees a fold
//! half done (the bulk reads that hand runs to a callback check each run before handing it
//! on, and read again only what they have not handed on yet). As with the atomic kind, a read
//! that overlaps records sees each bucket at some value it had during the read.
//!
//! # Fork
//!
//! After `fork` only the forking thread exists in the child, but the memory of the parent's
//! other threads' shards is copied. On Unix, `pthread_atfork` handlers (registered once, by
//! the first histogram) do two things:
//!
//! - before the fork, they take every live histogram's version lock, and release them in the
//!   parent and the child afterwards, so the child never inherits a lock held by a thread
//!   that does not exist there (a reset or fold in progress completes before the fork);
//! - in the child, they record the forking thread's identity and bump a fork generation.
//!
//! The first read, reset or shard claim of a histogram in the child sees the new generation
//! and, under the version lock, discards every shard not owned by the forking thread (cells
//! and baseline). The child keeps the forking thread's shard and the accumulator (the counts
//! of threads that had exited before the fork). The discarded threads' per-thread lists never
//! run their destructors in the child, so their references to the histogram leak there
//! (memory only).
//!
//! # Dropping the histogram
//!
//! Threads that recorded hold a reference to the histogram's shared state, so dropping the
//! [`ThreadLocalHistogram`] frees the shards only once every such thread has exited or claimed
//! a shard of another histogram (which prunes the entries of histograms dropped since the
//! thread last pruned).

use crate::sparse::PageCell;
use crate::storage_choice::{BuiltAtomicHistogram, Sparse, StorageChoice};
use core::fmt;
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::ptr;
use picollo_core::atomic::Version;
use picollo_core::{
    AtomicHistogram, BucketPos, Cells, Counter, HistogramRead, Layout, LayoutSpec, Lookup, Window,
    WindowError,
};
use portable_atomic::{AtomicU16, AtomicU32, AtomicU64};
use std::cell::Cell;
use std::collections::hash_map;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A counter type for the shards of a [`ThreadLocalHistogram`]: `u16`, `u32` or `u64`.
///
/// The shard cell is the matching atomic, written only by its owner thread with a relaxed
/// load and store, and saturating like the plain counter ([`Counter`]).
pub trait LocalCounter: Counter + Send + Sync {
    /// The shard cell: `portable_atomic::AtomicU16`, `AtomicU32` or `AtomicU64`.
    type Cell: PageCell;
    /// A zero cell.
    #[doc(hidden)]
    fn new_cell() -> Self::Cell;
    /// The count in `cell` (relaxed).
    #[doc(hidden)]
    fn load(cell: &Self::Cell) -> u64;
    /// Adds one: relaxed load plus store. Only the owner may call it.
    #[doc(hidden)]
    fn owner_increment(cell: &Self::Cell);
    /// Adds `n`, saturating: relaxed load plus store. Only the owner may call it.
    #[doc(hidden)]
    fn owner_add(cell: &Self::Cell, n: u64);
    /// Stores `n`, a count loaded from a cell of this type (relaxed).
    #[doc(hidden)]
    fn set(cell: &Self::Cell, n: u64);
}

macro_rules! local_counter {
    ($t:ty, $cell:ty, $increment:ident) => {
        impl LocalCounter for $t {
            type Cell = $cell;
            #[inline]
            fn new_cell() -> $cell {
                <$cell>::new(0)
            }
            #[inline(always)]
            fn load(cell: &$cell) -> u64 {
                sync::cells_read();
                cell.load(Ordering::Relaxed) as u64
            }
            #[inline(always)]
            fn owner_increment(cell: &$cell) {
                $increment!(cell)
            }
            #[inline]
            fn owner_add(cell: &$cell, n: u64) {
                let mut c = cell.load(Ordering::Relaxed);
                Counter::add(&mut c, n);
                cell.store(c, Ordering::Relaxed);
            }
            #[inline]
            fn set(cell: &$cell, n: u64) {
                cell.store(n.min(<$t>::MAX as u64) as $t, Ordering::Relaxed);
            }
        }
    };
}

/// The owner's `+1` on a `u64` cell: a plain add, as [`Counter::increment`] (x86-64 folds
/// the relaxed load and store into one `inc` on the cell).
macro_rules! increment_wide {
    ($cell:expr) => {{
        let cell = $cell;
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        )
    }};
}

/// The owner's `+1` on a `u16` or `u32` cell, saturating as [`Counter::increment`]
/// ([`NarrowCell::owner_increment_saturating`]).
macro_rules! increment_narrow {
    ($cell:expr) => {
        NarrowCell::owner_increment_saturating($cell)
    };
}

/// A `u16` or `u32` shard cell.
trait NarrowCell {
    /// Adds one unless the cell holds its maximum. Only the owner may call it.
    fn owner_increment_saturating(&self);
}

/// [`NarrowCell`] for `$cell` (an atomic of `$t`; `$width` is its operand size in x86
/// assembly).
///
/// On x86-64 the increment is two instructions on the cell in memory: `cmp [cell], -1` sets
/// the carry flag exactly when the cell is below its maximum, and `adc [cell], 0` adds that
/// carry. A count never wraps, not even for an instant, and no instruction loads the cell
/// into a register. Written in Rust (a relaxed load into a register, an add, a branch to an
/// out-of-line store of the maximum, a store), the same increment ran 1.7-2.8× the plain
/// `u32` record in a loop that kept the handle in registers (`h: &ThreadLocalHistogram<u32>`
/// passed to a function), in every one of 8 copies of that loop at different code addresses,
/// at every stack offset and with every data set tried, on AMD EPYC (Zen 3), while the `u64`
/// kind (one `inc` on the cell) ran 1.1×. So did every other form that loads the cell into a
/// register (a branch-free select, store-then-check, check-then-`inc`), though the same four
/// instructions ran at 1.1× in another build of that loop (other registers, one more stack
/// load): a hazard of the sequence in some binaries, which the forms with the cell only as a
/// memory operand avoided in every binary tried (1.0-1.2×). The bench `thread_local_alone`
/// times it in several layouts. Elsewhere (and under Miri, which runs no assembly) the Rust
/// form.
macro_rules! narrow_cell {
    ($cell:ty, $t:ty, $width:literal) => {
        impl NarrowCell for $cell {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            #[inline(always)]
            fn owner_increment_saturating(&self) {
                // SAFETY: `as_ptr` points to the cell, aligned and alive while `self` is, and
                // the cell is an atomic (an `UnsafeCell`), so writing through it from a shared
                // reference is allowed. Only the owner thread writes the cell (the caller's
                // contract). Each instruction is one aligned access of the cell's size, which
                // x86-64 performs atomically: a concurrent reader's relaxed load sees the
                // count before or after, as with the relaxed load and store of the Rust form.
                // The block uses no stack and clobbers only the flags (`asm!`'s default).
                unsafe {
                    core::arch::asm!(
                        concat!("cmp ", $width, " ptr [{cell}], -1"),
                        concat!("adc ", $width, " ptr [{cell}], 0"),
                        cell = in(reg) self.as_ptr(),
                        options(nostack),
                    )
                }
            }

            #[cfg(not(all(target_arch = "x86_64", not(miri))))]
            #[inline(always)]
            fn owner_increment_saturating(&self) {
                /// Restores the maximum after a wrap, out of line.
                #[cold]
                #[inline(never)]
                fn saturate(cell: &$cell) {
                    cell.store(<$t>::MAX, Ordering::Relaxed)
                }
                let next = self.load(Ordering::Relaxed).wrapping_add(1);
                if next == 0 {
                    saturate(self)
                } else {
                    self.store(next, Ordering::Relaxed)
                }
            }
        }
    };
}

narrow_cell!(AtomicU16, u16, "word");
narrow_cell!(AtomicU32, u32, "dword");

local_counter!(u16, AtomicU16, increment_narrow);
local_counter!(u32, AtomicU32, increment_narrow);
local_counter!(u64, AtomicU64, increment_wide);

mod cache;
mod fork;
#[cfg(loom)]
#[doc(hidden)]
pub mod model;
mod read;
mod shard;
mod sync;

use cache::Owner;
pub use cache::CACHE_SLOTS;
use cache::{cache_entry, thread_token, Cached, Entry, CACHE, CLOSED, THREAD_SHARDS};
use read::Pass;
use shard::{Inner, Shard, OWNED};

/// The accumulator of a thread-local histogram over storage `S`: the atomic kind.
type Accumulator<S> = BuiltAtomicHistogram<AtomicU64, S>;

/// A histogram for many writer threads: each thread records into its own shard with a
/// relaxed load and store, and reads sum the shards and an accumulator (see the
/// [module docs](self) for the design, reset, thread-exit and fork guarantees).
///
/// `Send + Sync`; share it by reference, in an `Arc`, or in a `static` through
/// [`std::sync::LazyLock`]:
///
/// ```
/// use picollo_alloc::{HistogramBuilder, ThreadLocalHistogram};
/// use picollo_core::ReadExt;
/// use std::sync::LazyLock;
///
/// static LATENCY: LazyLock<ThreadLocalHistogram> =
///     LazyLock::new(|| HistogramBuilder::new().thread_local().expect("the default builds"));
///
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         s.spawn(move || (0..1000).for_each(|i| LATENCY.record(i * 10 + t)));
///     }
/// });
/// assert_eq!(LATENCY.total(), 4000); // exited threads were folded exactly
/// LATENCY.reset();
/// assert_eq!(LATENCY.total(), 0);
/// ```
pub struct ThreadLocalHistogram<C: LocalCounter = u64, S: StorageChoice = Sparse> {
    inner: Arc<Inner<C, S>>,
    /// The bound the record path checks against the cached pointer: cells, the same for
    /// every shard (dense storage; sparse storage's directory holds its own bound).
    hot_len: usize,
    /// This histogram's key in the per-thread lists and the cache: `inner`'s address.
    key: usize,
    /// Byte offset of this histogram's entry in the per-thread cache ([`cache_entry`]).
    cache_offset: usize,
    /// Copies of `inner`'s layout and window: fields without interior mutability, which the
    /// compiler may keep in registers across a loop of records.
    layout: Layout,
    window: Window,
}

impl<C: LocalCounter, S: StorageChoice> ThreadLocalHistogram<C, S> {
    /// An empty histogram over `window` (clamped to `layout`'s logical buckets; widened to
    /// whole blocks for sparse storage, the default: see [`crate::sparse`]), for
    /// [`HistogramBuilder::thread_local`](crate::HistogramBuilder::thread_local). A layout
    /// with a value unit is refused ([`WindowError::NeedsUnitLayout`]): the thread-local kind
    /// records through the plain layout spec, so that no record pays for units.
    pub(crate) fn new(layout: Layout, window: Window) -> Result<Self, WindowError> {
        let window = Window::from_indices(layout, window.first(), window.len());
        let (cells, window) = S::cells::<AtomicU64>(layout, window);
        let hot_len = S::hot_len(&cells);
        // The accumulator's plain layout spec refuses a unit, as every shard's does.
        let acc = AtomicHistogram::with_storage(layout, cells, window)?;
        let inner = Arc::new(Inner {
            layout,
            window,
            version: Version::new(),
            head: sync::AtomicPtr::new(ptr::null_mut()),
            acc,
            acc_used: sync::AtomicBool::new(false),
            fork_gen: AtomicU64::new(fork::generation()),
            closed: sync::AtomicBool::new(false),
            allocated: AtomicUsize::new(0),
            _nodes: PhantomData,
        });
        fork::register(&inner.version);
        // Round robin: histograms made one after another never share a slot.
        static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
        let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % CACHE_SLOTS;
        Ok(ThreadLocalHistogram {
            key: Arc::as_ptr(&inner) as usize,
            cache_offset: slot * core::mem::size_of::<Cell<Cached>>(),
            inner,
            hot_len,
            layout,
            window,
        })
    }

    /// Records one `value` into the calling thread's shard: a relaxed load and store. Values
    /// outside the window are counted as underflow or overflow.
    #[inline]
    pub fn record(&self, value: u64) {
        let cached = self.cached();
        if cached.key == self.key {
            // The plain record spec (the layout has no unit, see `new`).
            self.record_cached(cached, LayoutSpec::position(&self.layout, value));
        } else {
            self.record_slow(value, 1)
        }
    }

    /// The hot path behind a cache hit: the cell through the cached pointer (the shard's
    /// cells, or its directory of pages), else the shard's cold path.
    #[inline(always)]
    fn record_cached(&self, cached: Cached, pos: BucketPos) {
        let (k, first) = (self.layout.block_scale(), self.window.first());
        // SAFETY: the keys match (see `cached`), so `cells` is the hot pointer of this
        // thread's shard (`StorageChoice::hot_ptr`), whose storage was made for this layout
        // and window, with `hot_len` its bound; `pos` is a position under the layout.
        match unsafe { S::hot_cell::<C::Cell>(cached.cells, self.hot_len, pos, k, first) } {
            Lookup::Found(cell) => C::owner_increment(cell),
            Lookup::Missing => {
                // SAFETY: as above, for the shard itself.
                unsafe { &*cached.shard.cast::<Shard<C, S>>() }.record_absent(self, pos, 1)
            }
        }
    }

    /// Points this thread's cache entry, if it is this histogram's, at `shard`'s hot pointer
    /// when that moved on: sparse storage makes its directory with its first page, and from
    /// then on the cache must name it, or every record would take the shard's cold path.
    fn refresh_cached(&self, shard: &Shard<C, S>) {
        let cached = self.cached();
        let cells = S::hot_ptr(&shard.cells);
        if cached.key == self.key && cells != cached.cells {
            self.set_cached(Cached { cells, ..cached });
        }
    }

    /// Records `count` occurrences of `value` (saturating).
    #[inline]
    pub fn record_n(&self, value: u64, count: u64) {
        let cached = self.cached();
        if cached.key == self.key {
            // SAFETY: the keys match (see `cached`).
            unsafe { &*cached.shard.cast::<Shard<C, S>>() }.record_n(self, value, count)
        } else {
            self.record_slow(value, count)
        }
    }

    #[cold]
    #[inline(never)]
    fn record_position_slow(&self, pos: BucketPos) {
        // The lowest value of a bucket maps back to that bucket.
        self.record_slow(self.layout.lo(pos.logical(self.layout.block_scale())), 1)
    }

    /// The calling thread's cache entry at this histogram's slot.
    ///
    /// When its key is `self.key`, its shard and cells may be dereferenced: this thread fills
    /// its cache only from its own entry (in `THREAD_SHARDS`) for the `Inner` at that
    /// address, and the entry's `Arc` keeps that `Inner` alive until the entry is removed,
    /// which happens only after the whole cache is cleared (pruning, thread exit). So while a
    /// cache entry names an address, no other `Inner` can live there: it is `self.inner`,
    /// and the shard is this thread's node of its list, alive while `self` is. (After a fork,
    /// the cache of a thread that does not exist in the child is never read again.)
    #[inline(always)]
    fn cached(&self) -> Cached {
        CACHE
            // SAFETY: `cache_offset` was made from a slot below `CACHE_SLOTS` in `new`.
            .try_with(|cache| unsafe { cache_entry(cache, self.cache_offset) }.get())
            .unwrap_or(Cached::EMPTY)
    }

    /// Fills this histogram's cache entry.
    fn set_cached(&self, cached: Cached) {
        let _ = CACHE.try_with(|cache| {
            // SAFETY: as in `cached`.
            unsafe { cache_entry(cache, self.cache_offset) }.set(cached)
        });
    }

    /// Finds or claims this thread's shard and fills the cache, or records into the
    /// accumulator when there is no shard to use.
    #[cold]
    #[inline(never)]
    fn record_slow(&self, value: u64, count: u64) {
        match self.local_shard() {
            Some(shard) => {
                self.set_cached(Cached {
                    key: self.key,
                    cells: S::hot_ptr(&shard.cells),
                    shard: (shard as *const Shard<C, S>).cast::<()>(),
                });
                shard.record_n(self, value, count)
            }
            None => {
                self.inner.acc_used.store(true, Ordering::Relaxed);
                self.inner.acc.record_n(value, count)
            }
        }
    }

    /// The calling thread's shard through its entries, claiming one on first use. `None`
    /// while TLS is destroyed or the list is borrowed (re-entrant recording).
    fn local_shard(&self) -> Option<&Shard<C, S>> {
        let key = self.key;
        let shard = THREAD_SHARDS
            .try_with(|list| {
                let mut list = list.try_borrow_mut().ok()?;
                // One lookup for a hit and a first use alike.
                let shard = match list.entries.entry(key) {
                    hash_map::Entry::Occupied(entry) => return Some(entry.get().shard),
                    hash_map::Entry::Vacant(entry) => {
                        self.inner.check_fork();
                        let token = thread_token();
                        let shard = (self.inner.claim(token) as *const Shard<C, S>).cast::<()>();
                        let owner: Arc<dyn Owner> = self.inner.clone();
                        entry.insert(Entry { owner, shard });
                        shard
                    }
                };
                // A claim prunes the entries of histograms dropped since the last one (never
                // the entry just made: its histogram, `self`, is alive).
                list.prune();
                Some(shard)
            })
            .ok()
            .flatten()?;
        // SAFETY: `shard` is a node of `self.inner`'s list, alive while `self` is.
        Some(unsafe { &*shard.cast::<Shard<C, S>>() })
    }

    /// Clears the histogram (see the module docs for the exact guarantee): copies every
    /// shard's counts into its baseline and clears the accumulator, as one structural change
    /// that concurrent reads retry around. Other threads' cells are never written, so the
    /// "old+1" race cannot happen, and recording costs nothing more for it. The first reset
    /// allocates a baseline per shard; later ones allocate only for new shards.
    pub fn reset(&self) {
        let inner = &*self.inner;
        inner.check_fork();
        let odd = inner.version.lock();
        for shard in inner.shards() {
            if shard.state.load(Ordering::Relaxed) == OWNED {
                shard.take_baseline(inner.layout, inner.window);
            }
        }
        inner.acc.reset();
        inner.version.unlock(odd);
    }

    /// Whether a thread's entries may hold this histogram: some thread took a shard of it
    /// (each claim counts a new node in `allocated` before the thread makes its entry, and a
    /// reused node was counted when it was made).
    fn may_be_in_thread_entries(&self) -> bool {
        self.inner.allocated.load(Ordering::Relaxed) != 0
    }

    /// Shard nodes allocated so far (each thread that recorded at the same time as others
    /// needs one; shards of exited threads are reused).
    pub fn shard_count(&self) -> usize {
        self.inner.allocated.load(Ordering::Relaxed)
    }

    /// Shards currently owned by a live thread.
    pub fn live_shard_count(&self) -> usize {
        self.inner.check_fork();
        self.inner
            .shards()
            .filter(|s| s.state.load(Ordering::Relaxed) == OWNED)
            .count()
    }

    /// Bytes of bucket storage: the shards, their baselines and the accumulator (for sparse
    /// storage, their directories, pages and tables: the memory really held).
    pub fn footprint(&self) -> usize {
        let shards: usize = self.inner.shards().map(Shard::held_bytes).sum();
        shards + self.inner.acc.storage().held_bytes()
    }

    /// [`ThreadLocalHistogram::footprint`] before building, for dense storage: the bucket
    /// storage of a histogram over `buckets` buckets once `threads` threads have recorded at
    /// the same time and it has been reset (a reset gives every shard a baseline of the same size; without resets
    /// the shards take half of the per-thread part).
    pub(crate) fn estimated_footprint(buckets: usize, threads: usize) -> usize {
        let cells = buckets * core::mem::size_of::<C::Cell>();
        threads * 2 * cells + Self::accumulator_bytes(buckets)
    }

    /// The accumulator: an atomic histogram with `u64` cells.
    fn accumulator_bytes(buckets: usize) -> usize {
        buckets * core::mem::size_of::<AtomicU64>()
    }
}

// SAFETY: `record_at` counts `pos` in the bucket it names: through the shard's cell lookup for
// this layout and window (the same as `record`'s), or the slow path's value in that bucket.
unsafe impl<C: LocalCounter, S: StorageChoice> picollo_core::RecordAt
    for ThreadLocalHistogram<C, S>
{
    /// Into the calling thread's shard, as [`ThreadLocalHistogram::record`] after its position.
    #[inline]
    unsafe fn record_at(&self, pos: BucketPos) {
        let cached = self.cached();
        if cached.key == self.key {
            self.record_cached(cached, pos);
        } else {
            self.record_position_slow(pos)
        }
    }
}

impl<C: LocalCounter, S: StorageChoice> Drop for ThreadLocalHistogram<C, S> {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        // Only a histogram that some thread took a shard of is in a thread's entries (every
        // claim happened before this drop, which owns the handle). One that never handed out a
        // shard (a metrics recorder's racer that lost the key to another thread's histogram)
        // moves nothing: counted, it made every recording thread scan all its entries at its
        // next claim, once per lost race (10,000 series: 3.6 µs per series where 1.6).
        if self.may_be_in_thread_entries() {
            // Release: a thread that sees the count sees `closed` (`ThreadShards::prune`).
            CLOSED.fetch_add(1, Ordering::Release);
        }
    }
}

impl<C: LocalCounter, S: StorageChoice> HistogramRead for ThreadLocalHistogram<C, S> {
    fn layout(&self) -> Layout {
        self.layout
    }
    fn window(&self) -> Window {
        self.window
    }
    fn count_at(&self, storage_index: usize) -> u64 {
        self.sum_shards(
            |acc| acc.count_at(storage_index),
            |s| s.count_at(storage_index),
        )
    }
    fn underflow(&self) -> u64 {
        self.sum_shards(HistogramRead::underflow, Shard::underflow)
    }
    fn overflow(&self) -> u64 {
        self.sum_shards(HistogramRead::overflow, Shard::overflow)
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        self.sum_shards(|acc| acc.sum_range(start, end), |s| s.sum_range(start, end))
    }
    /// One pass over the shards' cells, each run checked against the version lock before `f`
    /// receives it and read again where a reset, thread-exit fold or fork clean-up overlapped
    /// it ([`ThreadLocalHistogram::for_each_recorded`]), so no count is seen twice or missed
    /// while a fold moves it.
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        self.inner.check_fork();
        self.pass_checked(0, Pass::Whole, |start, counts: &[u64]| {
            f(start, counts);
            ControlFlow::Continue(())
        })
    }
    /// As [`HistogramRead::recorded_runs`], from `from` on and a few runs at a time until `f`
    /// breaks (a thread's sparse shard alone: its storage's own read from a position).
    fn recorded_runs_from(&self, from: usize, f: &mut dyn FnMut(usize, &[u64]) -> ControlFlow<()>) {
        self.inner.check_fork();
        self.pass_checked(from, Pass::Walk, f)
    }
    fn reads_in_bulk(&self) -> bool {
        <S::Cells<AtomicU64> as Cells>::READS_IN_BULK
    }
    fn read_begin(&self) -> u64 {
        self.inner.check_fork();
        self.inner.version.read_begin()
    }
    /// `None` while a reset or a fold is in progress. `try_read` stops there; but each
    /// cell read ([`HistogramRead::count_at`], [`HistogramRead::sum_range`]) and bulk read
    /// ([`HistogramRead::recorded_runs`]) still checks its own pass against the version,
    /// waiting for a fold that starts meanwhile before it reads again: this kind is read from
    /// threads, where the fold's thread goes on, not from signal handlers.
    fn try_read_begin(&self) -> Option<u64> {
        self.inner.check_fork();
        self.inner.version.try_read_begin()
    }
    fn read_retry(&self, token: u64) -> bool {
        self.inner.version.read_retry(token)
    }
    /// Resets of this histogram: each one clears the accumulator once, which counts it.
    fn reset_count(&self) -> u64 {
        self.inner.acc.reset_count()
    }
}

impl<C: LocalCounter, S: StorageChoice> picollo_core::Record for &ThreadLocalHistogram<C, S> {
    #[inline]
    fn record(&mut self, value: u64) {
        ThreadLocalHistogram::record(self, value)
    }
    #[inline]
    fn record_n(&mut self, value: u64, count: u64) {
        ThreadLocalHistogram::record_n(self, value, count)
    }
}

impl<C: LocalCounter, S: StorageChoice> fmt::Debug for ThreadLocalHistogram<C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadLocalHistogram")
            .field("layout", &self.layout)
            .field("window", &self.window)
            .field("shards", &self.shard_count())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use crate::HistogramBuilder;
    use picollo_core::ReadExt;

    /// A histogram's drop makes the recording threads prune their entries only when one may
    /// hold it: not for one nobody recorded into (a metrics recorder's racer that lost), which
    /// would cost every thread a scan of all its entries.
    #[test]
    fn only_a_histogram_a_thread_took_a_shard_of_is_pruned_for() {
        let make = || HistogramBuilder::new().thread_local().expect("valid");
        let unrecorded = make();
        assert!(!unrecorded.may_be_in_thread_entries());
        let here = make();
        here.record(5);
        assert!(here.may_be_in_thread_entries());
        let elsewhere = make();
        std::thread::scope(|s| {
            s.spawn(|| elsewhere.record(7));
        });
        // The recording thread exited and gave its shard back; the node stays counted.
        assert!(elsewhere.may_be_in_thread_entries());
        assert_eq!(elsewhere.total(), 1);
    }
}
