//! The thread-local histogram: every thread records into its own shard with a relaxed load and
//! store (no shared read-modify-write), readers sum the shards and an accumulator.
//!
//! # Design
//!
//! - **Shards.** A shard is a heap array of atomic cells ([`LocalCounter::Cell`]) plus its own
//!   underflow and overflow. Only its owner thread writes them while the owner lives, with
//!   `load(Relaxed)` + `store(Relaxed)`: the cells are atomics only so that readers may load
//!   them concurrently without a data race.
//! - **Registry.** The histogram keeps an intrusive, append-only, lock-free list of shard
//!   nodes. Readers walk it without allocating or locking. A shard whose thread exited is
//!   folded into the accumulator, zeroed and marked free; the next new thread reuses it, so
//!   the list grows only to the largest number of threads that recorded at the same time.
//!   Nodes are freed when the histogram is dropped.
//! - **Per-thread lookup.** Rust's `thread_local!` is static, so each thread keeps a small
//!   list of `(histogram, shard)` entries, plus a direct-mapped cache of
//!   [`CACHE_SLOTS`] entries `(histogram, shard, cells)`. Each histogram gets its cache slot
//!   when it is made (round robin over the slots), so a thread that records into up to
//!   [`CACHE_SLOTS`] histograms made one after another (the busy and wall times of a span
//!   callsite, the series of a metrics recorder) hits the cache for every one of them. The
//!   hot path is one TLS compare at the histogram's slot, the index math and the cell's
//!   load + store; the slot, the layout and the window are copied into the handle, so that
//!   a loop of records keeps them in registers. A miss (first use on the thread, or two
//!   histograms sharing a slot) takes the cold path: find or claim the shard and refill the
//!   slot.
//! - **Accumulator.** A [`HeapAtomicHistogram`] (the core atomic kind on the heap) receives the
//!   counts of exiting threads and the records made where no shard can be used (below).
//! - **Bulk reads.** [`ThreadLocalHistogram::read_recorded`] reads every non-empty bucket in one
//!   pass over each shard (skipping runs of empty cells, and the accumulator while it never
//!   held a count), for exporters that serve many sparse histograms; the [`HistogramRead`]
//!   methods read bucket by bucket.
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
//! Zeroing a cell that its owner updates with load + store would bring back seed 000's
//! "old+1" race: the owner could store `old + 1` over the zero. So [`ThreadLocalHistogram::reset`]
//! never writes another thread's cells, and adds nothing to the record path. Inside the
//! version section it clears the accumulator and copies every shard's current counts into the
//! shard's *baseline* (allocated at the first reset). Readers report a shard's counts minus
//! its baseline. A shard's cells only grow while its owner lives (the owner is their only
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
//! overlapped (seed 000, "Optimistic retry"): a batch read through
//! [`picollo_core::read::consistent`] never mixes pre- and post-reset counts, and even a
//! single `count_at`, `underflow`, `overflow` or `sum_range` retries on its own, so it never
//! sees a fold half done. As with the atomic kind, a read that overlaps records sees each
//! bucket at some value it had during the read.
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
//! [`ThreadLocalHistogram`] frees the shards only once every such thread has exited or taken
//! its cold path again (which prunes entries of dropped histograms).

use crate::bulk::{push_nonzero_run, RUN};
use crate::heap::{self, HeapAtomicHistogram, HeapStorage};
use core::fmt;
use core::marker::PhantomData;
use core::ptr;
use picollo_core::atomic::Version;
use picollo_core::read::for_each_nonempty_run;
use picollo_core::{Counter, HistogramRead, Layout, Window};
use portable_atomic::{AtomicU16, AtomicU32, AtomicU64};
use std::cell::{Cell, RefCell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// A counter type for the shards of a [`ThreadLocalHistogram`]: `u16`, `u32` or `u64`.
///
/// The shard cell is the matching atomic, written only by its owner thread with a relaxed
/// load and store, and saturating like the plain counter ([`Counter`]).
pub trait LocalCounter: Counter + Send + Sync {
    /// The shard cell: `portable_atomic::AtomicU16`, `AtomicU32` or `AtomicU64`.
    type Cell: Send + Sync + 'static;
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

/// The owner's `+1` on a `u16` or `u32` cell, saturating as [`Counter::increment`]: load,
/// add, a branch to an out-of-line store of the maximum when the add wrapped, store. Going
/// through `Counter::increment` on a local would pass the local's address to its cold
/// function: the local then lives on the stack and every record stores it there (five
/// instructions more per `u32` record than `u64`, against two now).
macro_rules! increment_narrow {
    ($cell:expr) => {{
        /// Restores the maximum after a wrap, out of line.
        #[cold]
        #[inline(never)]
        fn saturate<A: SaturateCell>(cell: &A) {
            cell.saturate();
        }
        let cell = $cell;
        let next = cell.load(Ordering::Relaxed).wrapping_add(1);
        if next == 0 {
            saturate(cell)
        } else {
            cell.store(next, Ordering::Relaxed)
        }
    }};
}

/// Stores the maximum count of a narrow cell.
trait SaturateCell {
    fn saturate(&self);
}

impl SaturateCell for AtomicU16 {
    fn saturate(&self) {
        self.store(u16::MAX, Ordering::Relaxed)
    }
}

impl SaturateCell for AtomicU32 {
    fn saturate(&self) {
        self.store(u32::MAX, Ordering::Relaxed)
    }
}

local_counter!(u16, AtomicU16, increment_narrow);
local_counter!(u32, AtomicU32, increment_narrow);
local_counter!(u64, AtomicU64, increment_wide);

/// Shard states.
const FREE: u8 = 0;
const OWNED: u8 = 1;

/// The counts of a shard at the last reset.
struct Baseline<C: LocalCounter> {
    cells: HeapStorage<C::Cell>,
    underflow: AtomicU64,
    overflow: AtomicU64,
}

/// One thread's counts. Its cells, underflow and overflow are written by its owner only
/// (and, under the version lock, zeroed by the fold of an exiting owner and by the fork
/// clean-up, when no owner can be writing). Its baseline is written under the version lock.
struct Shard<C: LocalCounter> {
    cells: HeapStorage<C::Cell>,
    underflow: AtomicU64,
    overflow: AtomicU64,
    /// The counts at the last reset; null until the first reset (all zero).
    base: AtomicPtr<Baseline<C>>,
    /// `FREE` or `OWNED`.
    state: AtomicU8,
    /// The owner's thread token (see `thread_token`).
    owner: AtomicU64,
    /// The next node; set before the node is published, never changed after.
    next: AtomicPtr<Shard<C>>,
}

impl<C: LocalCounter> Shard<C> {
    /// Records `count` occurrences of `value` for the owner thread.
    #[inline]
    fn record_n(&self, h: &ThreadLocalHistogram<C>, value: u64, count: u64) {
        let slot = h.slot(value);
        match self.cells.cells().get(slot) {
            Some(cell) => C::owner_add(cell, count),
            None => self.record_outside(slot, count),
        }
    }

    /// Records `count` values outside the window for the owner thread.
    #[cold]
    fn record_outside(&self, slot: usize, count: u64) {
        // A wrapped `logical - first` has its top bit set below the window, as in the core
        // histogram.
        let cell = if (slot as isize) < 0 {
            &self.underflow
        } else {
            &self.overflow
        };
        <u64 as LocalCounter>::owner_add(cell, count)
    }

    /// The baseline, if a reset made one.
    #[inline]
    fn baseline(&self) -> Option<&Baseline<C>> {
        // SAFETY: `base` is null or a `Box` installed once (release) by `take_baseline` and
        // freed only when the shard drops, so it is initialized and alive while `self` is.
        unsafe { self.base.load(Ordering::Acquire).as_ref() }
    }

    /// The count at storage index `i` since the last reset.
    #[inline]
    fn count_at(&self, i: usize) -> u64 {
        let Some(cell) = self.cells.cells().get(i) else {
            return 0;
        };
        let base = self
            .baseline()
            .and_then(|b| b.cells.cells().get(i))
            .map_or(0, C::load);
        C::load(cell).saturating_sub(base)
    }

    /// The sum of the counts at storage indices `start..end` since the last reset.
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let sum = |cells: &[C::Cell]| {
            let end = end.min(cells.len());
            cells[start.min(end)..end]
                .iter()
                .fold(0u64, |t, c| t.saturating_add(C::load(c)))
        };
        let base = self.baseline().map_or(0, |b| sum(b.cells.cells()));
        sum(self.cells.cells()).saturating_sub(base)
    }

    /// Underflow since the last reset.
    fn underflow(&self) -> u64 {
        let base = self
            .baseline()
            .map_or(0, |b| b.underflow.load(Ordering::Relaxed));
        self.underflow.load(Ordering::Relaxed).saturating_sub(base)
    }

    /// Overflow since the last reset.
    fn overflow(&self) -> u64 {
        let base = self
            .baseline()
            .map_or(0, |b| b.overflow.load(Ordering::Relaxed));
        self.overflow.load(Ordering::Relaxed).saturating_sub(base)
    }

    /// Copies the current counts into the baseline (allocated on first use). Only under the
    /// version lock.
    fn take_baseline(&self) {
        let base = match self.baseline() {
            Some(b) => b,
            None => {
                let b = Box::into_raw(Box::new(Baseline::<C> {
                    cells: HeapStorage::with_len(self.cells.cells().len(), C::new_cell),
                    underflow: AtomicU64::new(0),
                    overflow: AtomicU64::new(0),
                }));
                self.base.store(b, Ordering::Release);
                // SAFETY: just made from a `Box`; freed only when the shard drops.
                unsafe { &*b }
            }
        };
        for (b, c) in base.cells.cells().iter().zip(self.cells.cells()) {
            C::set(b, C::load(c));
        }
        let under = self.underflow.load(Ordering::Relaxed);
        base.underflow.store(under, Ordering::Relaxed);
        let over = self.overflow.load(Ordering::Relaxed);
        base.overflow.store(over, Ordering::Relaxed);
    }

    /// Zeroes the counts and the baseline. Only under the version lock, with no owner writing.
    fn clear(&self) {
        for cell in self.cells.cells() {
            C::set(cell, 0);
        }
        self.underflow.store(0, Ordering::Relaxed);
        self.overflow.store(0, Ordering::Relaxed);
        if let Some(b) = self.baseline() {
            for cell in b.cells.cells() {
                C::set(cell, 0);
            }
            b.underflow.store(0, Ordering::Relaxed);
            b.overflow.store(0, Ordering::Relaxed);
        }
    }
}

impl<C: LocalCounter> Drop for Shard<C> {
    fn drop(&mut self) {
        let b = *self.base.get_mut();
        if !b.is_null() {
            // SAFETY: a non-null `base` came from `Box::into_raw` in `take_baseline` and is
            // freed only here, once.
            drop(unsafe { Box::from_raw(b) });
        }
    }
}

/// The state shared by the histogram handle and the threads that recorded into it.
struct Inner<C: LocalCounter> {
    layout: Layout,
    window: Window,
    /// Seqlock around resets, folds and fork clean-ups.
    version: Version,
    /// Head of the shard list.
    head: AtomicPtr<Shard<C>>,
    /// Counts of exited threads and of records made without a shard.
    acc: HeapAtomicHistogram,
    /// Set before anything is added to `acc` (then kept): bulk reads skip an accumulator
    /// that never held a count, which is the rule while no recording thread has exited.
    acc_used: AtomicBool,
    /// The fork generation this histogram's shard set was last checked against.
    fork_gen: AtomicU64,
    /// Set when the handle is dropped: threads prune their entries for it.
    closed: AtomicBool,
    /// Shard nodes allocated.
    allocated: AtomicUsize,
    /// The list owns its nodes (for drop check).
    _nodes: PhantomData<Box<Shard<C>>>,
}

impl<C: LocalCounter> Inner<C> {
    /// The shard nodes, newest first.
    fn shards(&self) -> Shards<'_, C> {
        Shards {
            next: self.head.load(Ordering::Acquire),
            _inner: PhantomData,
        }
    }

    /// Cleans up after a fork, once per fork generation (see the module docs).
    #[inline]
    fn check_fork(&self) {
        let gen = fork::generation();
        if gen != self.fork_gen.load(Ordering::Relaxed) {
            self.after_fork(gen);
        }
    }

    #[cold]
    fn after_fork(&self, gen: u64) {
        let odd = self.version.lock();
        if self.fork_gen.load(Ordering::Relaxed) != gen {
            let forker = fork::forker();
            for shard in self.shards() {
                if shard.state.load(Ordering::Relaxed) == OWNED
                    && shard.owner.load(Ordering::Relaxed) != forker
                {
                    // The owner does not exist in this process: drop its counts.
                    shard.clear();
                    shard.state.store(FREE, Ordering::Release);
                }
            }
            self.fork_gen.store(gen, Ordering::Relaxed);
        }
        self.version.unlock(odd);
    }

    /// Claims a free shard for the thread `token`, or allocates one.
    fn claim(&self, token: u64) -> &Shard<C> {
        for shard in self.shards() {
            if shard.state.load(Ordering::Relaxed) == FREE
                && shard
                    .state
                    .compare_exchange(FREE, OWNED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // Freed shards are zero, baseline included (cleared before the release store
                // of `FREE`).
                shard.owner.store(token, Ordering::Relaxed);
                return shard;
            }
        }
        let node = Box::into_raw(Box::new(Shard::<C> {
            cells: HeapStorage::with_len(self.window.len(), C::new_cell),
            underflow: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
            base: AtomicPtr::new(ptr::null_mut()),
            state: AtomicU8::new(OWNED),
            owner: AtomicU64::new(token),
            next: AtomicPtr::new(ptr::null_mut()),
        }));
        self.allocated.fetch_add(1, Ordering::Relaxed);
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` came from `Box::into_raw` above and is not yet published, so
            // this thread has the only access.
            unsafe { (*node).next.store(head, Ordering::Relaxed) };
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        // SAFETY: the node is now in the list, which frees nodes only when `self` drops, so
        // it lives as long as the `&self` borrow.
        unsafe { &*node }
    }

    /// Folds an exiting owner's shard into the accumulator and frees it.
    fn fold(&self, shard: &Shard<C>, token: u64) {
        self.check_fork();
        let odd = self.version.lock();
        // The fork clean-up may have taken the shard away from a thread that no longer exists
        // in this process; only the owner folds.
        if shard.state.load(Ordering::Relaxed) == OWNED
            && shard.owner.load(Ordering::Relaxed) == token
        {
            self.acc_used.store(true, Ordering::Relaxed);
            let (layout, first) = (self.layout, self.window.first());
            for s in 0..self.window.len() {
                let n = shard.count_at(s);
                if n != 0 {
                    // The lowest value of a bucket maps back to that bucket.
                    self.acc.record_n(layout.lo(first + s), n);
                }
            }
            let under = shard.underflow();
            if under != 0 {
                // Underflow exists only when the window starts above 0.
                let below = self.window.min_value(layout).saturating_sub(1);
                self.acc.record_n(below, under);
            }
            let over = shard.overflow();
            if over != 0 {
                // Overflow exists only when the window ends below u64::MAX.
                let above = self.window.max_value(layout).saturating_add(1);
                self.acc.record_n(above, over);
            }
            shard.clear();
            shard.state.store(FREE, Ordering::Release);
        }
        self.version.unlock(odd);
    }
}

impl<C: LocalCounter> Drop for Inner<C> {
    fn drop(&mut self) {
        fork::deregister(&self.version);
        let mut p = *self.head.get_mut();
        while !p.is_null() {
            // SAFETY: every node was made by `Box::into_raw` in `claim` and linked once; with
            // `&mut self` nothing else can reach the list, and each node is freed once.
            let node = unsafe { Box::from_raw(p) };
            p = node.next.load(Ordering::Relaxed);
        }
    }
}

/// Iterator over the shard list.
struct Shards<'a, C: LocalCounter> {
    next: *mut Shard<C>,
    _inner: PhantomData<&'a Inner<C>>,
}

impl<'a, C: LocalCounter> Iterator for Shards<'a, C> {
    type Item = &'a Shard<C>;
    #[inline]
    fn next(&mut self) -> Option<&'a Shard<C>> {
        // SAFETY: `next` is null or a node of the list of the `Inner` borrowed for `'a`;
        // nodes are published with a release CAS (read with acquire) and freed only when the
        // `Inner` drops, so the node is initialized and alive for `'a`.
        let shard = unsafe { self.next.as_ref() }?;
        self.next = shard.next.load(Ordering::Acquire);
        Some(shard)
    }
}

/// Type-erased access to an `Inner<C>` for the per-thread list.
trait Owner: Send + Sync {
    /// Folds and frees the calling thread's shard at thread exit.
    ///
    /// # Safety
    ///
    /// `shard` must be the shard this `Inner` gave the calling thread, which is `token`.
    unsafe fn retire(&self, shard: *const (), token: u64);
    /// Whether the histogram handle was dropped.
    fn is_closed(&self) -> bool;
}

impl<C: LocalCounter> Owner for Inner<C> {
    unsafe fn retire(&self, shard: *const (), token: u64) {
        // SAFETY: the caller passes a shard of this `Inner`, which is a `Shard<C>` node of
        // its list, alive while `self` is.
        let shard = unsafe { &*shard.cast::<Shard<C>>() };
        // A dropped histogram is not read again, but folding it costs little and keeps one
        // path.
        self.fold(shard, token);
    }
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// One histogram a thread recorded into.
struct Entry {
    /// The `Inner`'s address: unique among live histograms, and the entry keeps it alive.
    key: usize,
    owner: Arc<dyn Owner>,
    shard: *const (),
}

/// The per-thread list of entries; its destructor folds the thread's shards.
struct ThreadShards {
    entries: Vec<Entry>,
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
struct Cached {
    key: usize,
    cells: *const (),
    shard: *const (),
}

impl Cached {
    const EMPTY: Cached = Cached {
        key: 0,
        cells: ptr::null(),
        shard: ptr::null(),
    };
}

/// The cache: entry `s` serves the histograms whose slot is `s`.
type Cache = [Cell<Cached>; CACHE_SLOTS];

thread_local! {
    /// The cache. No destructor, so it can be read at any time, also while TLS is being
    /// destroyed.
    static CACHE: Cache = const { [const { Cell::new(Cached::EMPTY) }; CACHE_SLOTS] };
    /// This thread's token (0 until first needed).
    static TOKEN: Cell<u64> = const { Cell::new(0) };
    /// Every histogram this thread recorded into.
    static THREAD_SHARDS: RefCell<ThreadShards> =
        const { RefCell::new(ThreadShards { entries: Vec::new() }) };
}

/// The entry at byte offset `offset` of the cache.
///
/// # Safety
///
/// `offset` is `slot * size_of::<Cell<Cached>>()` for a `slot < CACHE_SLOTS`.
#[inline(always)]
unsafe fn cache_entry(cache: &Cache, offset: usize) -> &Cell<Cached> {
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
fn clear_cache() {
    let _ = CACHE.try_with(|cache| cache.iter().for_each(|c| c.set(Cached::EMPTY)));
}

/// A process-unique, non-zero token for the calling thread. Survives `fork` in the forking
/// thread (TLS is copied).
fn thread_token() -> u64 {
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

/// Fork handling: the generation counter, the forking thread's token, and the list of live
/// histograms whose version locks the fork handlers hold across `fork`.
mod fork {
    use super::*;

    static GENERATION: AtomicU64 = AtomicU64::new(0);
    static FORKER: AtomicU64 = AtomicU64::new(0);

    /// The number of forks this process descends from (since the first histogram).
    #[inline(always)]
    pub(super) fn generation() -> u64 {
        GENERATION.load(Ordering::Acquire)
    }

    /// The token of the thread that made the latest fork (in the child).
    pub(super) fn forker() -> u64 {
        FORKER.load(Ordering::Relaxed)
    }

    /// A live histogram's version lock, and the odd value it holds across a fork.
    struct LiveVersion {
        version: *const Version,
        /// Written and read only by the fork handlers.
        #[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
        odd: u64,
    }

    /// The live histograms, behind a spin lock that the fork handlers hold across `fork`.
    struct Live {
        locked: AtomicBool,
        list: UnsafeCell<Vec<LiveVersion>>,
    }

    // SAFETY: `list` is only touched with `locked` held (acquire/release), and its pointers
    // are to `Version`s (Sync) that stay alive while listed (`Inner` deregisters on drop).
    unsafe impl Sync for Live {}

    static LIVE: Live = Live {
        locked: AtomicBool::new(false),
        list: UnsafeCell::new(Vec::new()),
    };

    fn lock_live() {
        let mut spins = 0u32;
        while LIVE
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                core::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn unlock_live() {
        LIVE.locked.store(false, Ordering::Release);
    }

    /// Runs `f` on the list with the lock held.
    fn with_live<R>(f: impl FnOnce(&mut Vec<LiveVersion>) -> R) -> R {
        lock_live();
        // SAFETY: the spin lock is held, so this is the only access to the list.
        let r = f(unsafe { &mut *LIVE.list.get() });
        unlock_live();
        r
    }

    /// Lists a new histogram's version, and installs the fork handlers once.
    pub(super) fn register(version: &Version) {
        install();
        let version = version as *const Version;
        with_live(|list| list.push(LiveVersion { version, odd: 0 }));
    }

    /// Unlists a histogram about to be freed.
    pub(super) fn deregister(version: &Version) {
        let version = version as *const Version;
        with_live(|list| list.retain(|v| !ptr::eq(v.version, version)));
    }

    #[cfg(all(unix, not(miri)))]
    fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: the handlers are `extern "C"` functions that only touch atomics, the
            // live list under its lock and this thread's const TLS, which is valid in fork
            // handlers. A non-zero return (ENOMEM) leaves fork handling off; the histogram
            // still works, the child merely keeps the parent's other shards.
            let _ = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        });
    }

    #[cfg(not(all(unix, not(miri))))]
    fn install() {}

    /// Before `fork`: hold every histogram's version lock, so no reset or fold is half done
    /// in the child.
    #[cfg(all(unix, not(miri)))]
    unsafe extern "C" fn prepare() {
        lock_live();
        // SAFETY: the live lock is held (until `parent` or `child` releases it).
        let list = unsafe { &mut *LIVE.list.get() };
        for v in list.iter_mut() {
            // SAFETY: listed versions are alive: deregistering needs the live lock.
            v.odd = unsafe { &*v.version }.lock();
        }
    }

    /// Releases what `prepare` took.
    #[cfg(all(unix, not(miri)))]
    fn release() {
        // SAFETY: `prepare` holds the live lock for this thread.
        let list = unsafe { &mut *LIVE.list.get() };
        for v in list.iter() {
            // SAFETY: as in `prepare`.
            unsafe { &*v.version }.unlock(v.odd);
        }
        unlock_live();
    }

    /// After `fork`, in the parent.
    #[cfg(all(unix, not(miri)))]
    unsafe extern "C" fn parent() {
        release();
    }

    /// After `fork`, in the child: note the forking thread, bump the generation.
    #[cfg(all(unix, not(miri)))]
    unsafe extern "C" fn child() {
        FORKER.store(TOKEN.try_with(Cell::get).unwrap_or(0), Ordering::Relaxed);
        GENERATION.fetch_add(1, Ordering::Release);
        release();
    }
}

/// A histogram for many writer threads: each thread records into its own shard with a
/// relaxed load and store, and reads sum the shards and an accumulator (see the
/// [module docs](self) for the design, reset, thread-exit and fork guarantees).
///
/// `Send + Sync`; share it by reference, in an `Arc`, or in a `static` through
/// [`std::sync::LazyLock`]:
///
/// ```
/// use picollo_alloc::ThreadLocalHistogram;
/// use picollo_core::{Layout, ReadExt, Window};
/// use std::sync::LazyLock;
///
/// static LATENCY: LazyLock<ThreadLocalHistogram> = LazyLock::new(|| {
///     let layout = Layout::DEFAULT;
///     ThreadLocalHistogram::new(layout, Window::full(layout))
/// });
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
pub struct ThreadLocalHistogram<C: LocalCounter = u64> {
    inner: Arc<Inner<C>>,
    /// This histogram's key in the per-thread lists and the cache: `inner`'s address.
    key: usize,
    /// Byte offset of this histogram's entry in the per-thread cache ([`cache_entry`]).
    cache_offset: usize,
    /// Copies of `inner`'s layout and window: fields without interior mutability, which the
    /// compiler may keep in registers across a loop of records.
    layout: Layout,
    window: Window,
}

impl<C: LocalCounter> ThreadLocalHistogram<C> {
    /// An empty histogram over `window` (clamped to `layout`'s logical buckets).
    pub fn new(layout: Layout, window: Window) -> Self {
        let window = Window::from_indices(layout, window.first(), window.len());
        let inner = Arc::new(Inner {
            layout,
            window,
            version: Version::new(),
            head: AtomicPtr::new(ptr::null_mut()),
            acc: heap::atomic(layout, window),
            acc_used: AtomicBool::new(false),
            fork_gen: AtomicU64::new(fork::generation()),
            closed: AtomicBool::new(false),
            allocated: AtomicUsize::new(0),
            _nodes: PhantomData,
        });
        fork::register(&inner.version);
        // Round robin: histograms made one after another never share a slot.
        static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
        let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % CACHE_SLOTS;
        ThreadLocalHistogram {
            key: Arc::as_ptr(&inner) as usize,
            cache_offset: slot * core::mem::size_of::<Cell<Cached>>(),
            inner,
            layout,
            window,
        }
    }

    /// Records a duration in nanoseconds into the calling thread's shard (whole nanoseconds,
    /// saturating at `u64::MAX`; see [`picollo_core::duration_ns`]):
    /// `h.record_duration(start.elapsed())`.
    #[inline]
    pub fn record_duration(&self, duration: std::time::Duration) {
        self.record(picollo_core::duration_ns(duration));
    }

    /// Records one `value` into the calling thread's shard: a relaxed load and store. Values
    /// outside the window are counted as underflow or overflow.
    #[inline]
    pub fn record(&self, value: u64) {
        let cached = self.cached();
        if cached.key == self.key {
            let slot = self.slot(value);
            if slot < self.window.len() {
                // SAFETY: the keys match (see `cache`), so `cells` points to the
                // `window.len()` cells of this thread's shard; `slot` is below that.
                C::owner_increment(unsafe { &*cached.cells.cast::<C::Cell>().add(slot) });
            } else {
                // SAFETY: as above, for the shard itself.
                unsafe { &*cached.shard.cast::<Shard<C>>() }.record_outside(slot, 1);
            }
        } else {
            self.record_slow(value, 1)
        }
    }

    /// Records `count` occurrences of `value` (saturating).
    #[inline]
    pub fn record_n(&self, value: u64, count: u64) {
        let cached = self.cached();
        if cached.key == self.key {
            // SAFETY: the keys match (see `cached`).
            unsafe { &*cached.shard.cast::<Shard<C>>() }.record_n(self, value, count)
        } else {
            self.record_slow(value, count)
        }
    }

    /// Records one value into the bucket at storage index `slot` (the bucket
    /// `window().first() + slot`), for callers that map their values to buckets themselves
    /// (the `metrics` recorder of `picollo-export` maps an `f64` to its bucket from its bits).
    ///
    /// # Safety
    ///
    /// `slot < self.window().len()`.
    #[inline]
    pub unsafe fn record_slot_unchecked(&self, slot: usize) {
        debug_assert!(slot < self.window.len(), "slot {slot} outside the window");
        let cached = self.cached();
        if cached.key == self.key {
            // SAFETY: the keys match (see `cached`), so `cells` points to the `window.len()`
            // cells of this thread's shard; the caller guarantees `slot` is below that.
            C::owner_increment(unsafe { &*cached.cells.cast::<C::Cell>().add(slot) });
        } else {
            self.record_slot_slow(slot)
        }
    }

    #[cold]
    #[inline(never)]
    fn record_slot_slow(&self, slot: usize) {
        // The lowest value of a bucket maps back to that bucket.
        self.record_slow(self.layout.lo(self.window.first() + slot), 1)
    }

    /// The storage slot of `value`; at or past the window length when outside the window.
    #[inline(always)]
    fn slot(&self, value: u64) -> usize {
        self.layout
            .index_of(value)
            .wrapping_sub(self.window.first())
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
                    cells: shard.cells.cells().as_ptr().cast::<()>(),
                    shard: (shard as *const Shard<C>).cast::<()>(),
                });
                shard.record_n(self, value, count)
            }
            None => {
                self.inner.acc_used.store(true, Ordering::Relaxed);
                self.inner.acc.record_n(value, count)
            }
        }
    }

    /// The calling thread's shard through its entry list, claiming one on first use. `None`
    /// while TLS is destroyed or the list is borrowed (re-entrant recording).
    fn local_shard(&self) -> Option<&Shard<C>> {
        let key = self.key;
        let shard = THREAD_SHARDS
            .try_with(|list| {
                let mut list = list.try_borrow_mut().ok()?;
                if let Some(e) = list.entries.iter().find(|e| e.key == key) {
                    return Some(e.shard);
                }
                // Entries of dropped histograms go; the cache may name some of them.
                clear_cache();
                list.entries.retain(|e| !e.owner.is_closed());
                self.inner.check_fork();
                let token = thread_token();
                let shard = (self.inner.claim(token) as *const Shard<C>).cast::<()>();
                let owner: Arc<dyn Owner> = self.inner.clone();
                list.entries.push(Entry { key, owner, shard });
                Some(shard)
            })
            .ok()
            .flatten()?;
        // SAFETY: `shard` is a node of `self.inner`'s list, alive while `self` is.
        Some(unsafe { &*shard.cast::<Shard<C>>() })
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
                shard.take_baseline();
            }
        }
        inner.acc.reset();
        inner.version.unlock(odd);
    }

    /// The bucket layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The stored window of logical buckets.
    pub fn window(&self) -> Window {
        self.window
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

    /// Bytes of bucket storage: the shards, their baselines and the accumulator.
    pub fn footprint(&self) -> usize {
        let cells = self.window.len() * core::mem::size_of::<C::Cell>();
        let shards: usize = self
            .inner
            .shards()
            .map(|s| cells + s.baseline().map_or(0, |_| cells))
            .sum();
        shards + Self::accumulator_bytes(self.window.len())
    }

    /// [`ThreadLocalHistogram::footprint`] before building: the bucket storage of a histogram
    /// over `buckets` buckets once `threads` threads have recorded at the same time and it
    /// has been reset (a reset gives every shard a baseline of the same size; without resets
    /// the shards take half of the per-thread part).
    pub fn estimated_footprint(buckets: usize, threads: usize) -> usize {
        let cells = buckets * core::mem::size_of::<C::Cell>();
        threads * 2 * cells + Self::accumulator_bytes(buckets)
    }

    /// The accumulator: an atomic histogram with `u64` cells.
    fn accumulator_bytes(buckets: usize) -> usize {
        buckets * core::mem::size_of::<AtomicU64>()
    }

    /// Coordinated-omission correction into the calling thread's shard: see
    /// [`picollo_core::Record::record_corrected`], the one implementation every kind shares.
    pub fn record_corrected(&self, value: u64, expected_interval: u64) {
        let mut recorder = self;
        picollo_core::Record::record_corrected(&mut recorder, value, expected_interval)
    }

    /// Reads every bucket that holds a count, in one pass over each shard's cells (and over
    /// the accumulator, once an exited thread or a record without a shard put counts there):
    /// `out` receives `(storage index, count)` for each non-empty bucket, in increasing
    /// order, and the underflow and overflow are returned.
    ///
    /// Runs of empty cells are skipped 8 at a time, so a sparse histogram (a full-range one
    /// holds tens of thousands of cells) costs about two instructions per cell. Recorders never
    /// wait; the read is retried (as a whole) when a reset, thread-exit fold or fork clean-up
    /// overlapped it, so it never mixes counts from both sides of one, and it sees each bucket
    /// at some value it had during the read (as every read of this kind).
    ///
    /// ```
    /// use picollo_alloc::ThreadLocalHistogram;
    /// use picollo_core::{Layout, Window};
    ///
    /// let layout = Layout::DEFAULT;
    /// let h = ThreadLocalHistogram::<u64>::new(layout, Window::full(layout));
    /// h.record_n(3, 2);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| h.record(1_000_000)); // folded into the accumulator at thread exit
    /// });
    /// let mut buckets = Vec::new();
    /// let (underflow, overflow) = h.read_recorded(&mut buckets);
    /// assert_eq!(buckets, [(3, 2), (h.window().storage_index(layout.index_of(1_000_000)).unwrap(), 1)]);
    /// assert_eq!((underflow, overflow), (0, 0));
    /// ```
    pub fn read_recorded(&self, out: &mut Vec<(usize, u64)>) -> (u64, u64) {
        let inner = &*self.inner;
        inner.check_fork();
        loop {
            let token = inner.version.read_begin();
            out.clear();
            self.pass_recorded(|start, counts| {
                push_nonzero_run(out, start, counts.iter().copied())
            });
            let acc = inner.acc_used.load(Ordering::Relaxed).then_some(&inner.acc);
            let mut outside = acc.map_or((0, 0), |a| (a.underflow(), a.overflow()));
            for shard in inner.shards() {
                outside.0 = outside.0.saturating_add(shard.underflow());
                outside.1 = outside.1.saturating_add(shard.overflow());
            }
            if !inner.version.read_retry(token) {
                return outside;
            }
            core::hint::spin_loop();
        }
    }

    /// The pass of [`ThreadLocalHistogram::read_recorded`] without its retry: calls
    /// `f(storage index, count)` for each non-empty bucket, in increasing order. A reset,
    /// thread-exit fold or fork clean-up that overlaps the pass can make it see some counts
    /// twice or not at all: bracket it with [`HistogramRead::read_begin`] and
    /// [`HistogramRead::read_retry`] ([`picollo_core::read::consistent`]) and redo it when
    /// told to, as exporters that read underflow, overflow and buckets together do.
    pub fn for_each_recorded(&self, mut f: impl FnMut(usize, u64)) {
        self.inner.check_fork();
        self.pass_recorded(|start, counts| {
            for (i, &n) in counts.iter().enumerate() {
                if n != 0 {
                    f(start + i, n);
                }
            }
        })
    }

    /// Calls `run(start, counts)` with the counts of every run of [`RUN`] cells (the last
    /// may be shorter) that holds a count, in increasing order. For each run, the OR of
    /// every owned shard's cells (and the accumulator's, once it held a count) says whether
    /// any is non-zero; only then are the counts summed (less the shards' baselines).
    fn pass_recorded(&self, mut run: impl FnMut(usize, &[u64])) {
        /// Shards whose cells the common path reads from an array (more take the general
        /// path, which walks the shard list per run).
        const DIRECT: usize = 16;
        let acc = self
            .inner
            .acc_used
            .load(Ordering::Relaxed)
            .then_some(&self.inner.acc);
        let owned = || {
            self.inner
                .shards()
                .filter(|s| s.state.load(Ordering::Relaxed) == OWNED)
        };
        let mut direct: [&[C::Cell]; DIRECT] = [&[]; DIRECT];
        let mut count = 0;
        let mut general = acc.is_some();
        for shard in owned() {
            general |= count == DIRECT || shard.baseline().is_some();
            if let Some(slot) = direct.get_mut(count) {
                *slot = shard.cells.cells();
                count += 1;
            }
        }
        let len = self.window.len();
        let runs = len.div_ceil(RUN);
        let range = |r: usize| r * RUN..((r + 1) * RUN).min(len);
        let or = |cells: &[C::Cell]| cells.iter().fold(0u64, |a, c| a | C::load(c));
        let mut counts = [0u64; RUN];
        if !general {
            // Owned shards without baselines, nothing in the accumulator: the common case.
            match &direct[..count] {
                [] => {}
                // One recording thread: its cells alone, the scan of a slice of cells.
                [cells] => picollo_core::storage::cell_runs(cells, |c| C::load(c), &mut run),
                shards => for_each_nonempty_run(
                    runs,
                    |r| shards.iter().fold(0, |a, c| a | or(&c[range(r)])) != 0,
                    |r| {
                        for (n, i) in counts.iter_mut().zip(range(r)) {
                            *n = shards
                                .iter()
                                .fold(0u64, |n, c| n.saturating_add(C::load(&c[i])));
                        }
                        run(r * RUN, &counts[..range(r).len()]);
                    },
                ),
            }
            return;
        }
        for_each_nonempty_run(
            runs,
            |r| {
                let mut nonzero = owned().fold(0u64, |a, s| a | or(&s.cells.cells()[range(r)]));
                if let Some(acc) = acc {
                    nonzero |= range(r).fold(0u64, |a, i| a | acc.count_at(i));
                }
                nonzero != 0
            },
            |r| {
                for (n, i) in counts.iter_mut().zip(range(r)) {
                    *n = owned().fold(acc.map_or(0, |a| a.count_at(i)), |n, s| {
                        n.saturating_add(s.count_at(i))
                    });
                }
                run(r * RUN, &counts[..range(r).len()]);
            },
        );
    }

    /// Sums `acc(accumulator)` and `f` over the shards, retrying if a reset, fold or fork
    /// clean-up overlapped: so even one `count_at` outside a [`HistogramRead::read_begin`]
    /// bracket never sees a fold half done (counts in both the shard and the accumulator, or
    /// in neither) or a reset half done.
    #[inline]
    fn sum_shards(
        &self,
        mut acc: impl FnMut(&HeapAtomicHistogram) -> u64,
        mut f: impl FnMut(&Shard<C>) -> u64,
    ) -> u64 {
        let inner = &*self.inner;
        inner.check_fork();
        loop {
            let token = inner.version.read_begin();
            let sum = inner
                .shards()
                .fold(acc(&inner.acc), |sum, s| sum.saturating_add(f(s)));
            if !inner.version.read_retry(token) {
                return sum;
            }
            core::hint::spin_loop();
        }
    }
}

impl<C: LocalCounter> Drop for ThreadLocalHistogram<C> {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Relaxed);
    }
}

impl<C: LocalCounter> HistogramRead for ThreadLocalHistogram<C> {
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
    /// One pass over the shards' cells ([`ThreadLocalHistogram::for_each_recorded`]).
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        self.inner.check_fork();
        self.pass_recorded(f)
    }
    fn read_begin(&self) -> u64 {
        self.inner.check_fork();
        self.inner.version.read_begin()
    }
    /// `None` while a reset or a fold is in progress. The `try_` reads stop there; but each
    /// cell read ([`HistogramRead::count_at`], [`HistogramRead::sum_range`]) still redoes its
    /// own pass over the shards, waiting for a fold that starts meanwhile: this kind is read
    /// from threads, where the fold's thread goes on, not from signal handlers.
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

impl<C: LocalCounter> picollo_core::Record for &ThreadLocalHistogram<C> {
    #[inline]
    fn record(&mut self, value: u64) {
        ThreadLocalHistogram::record(self, value)
    }
    #[inline]
    fn record_n(&mut self, value: u64, count: u64) {
        ThreadLocalHistogram::record_n(self, value, count)
    }
}

impl<C: LocalCounter> fmt::Debug for ThreadLocalHistogram<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadLocalHistogram")
            .field("layout", &self.layout)
            .field("window", &self.window)
            .field("shards", &self.shard_count())
            .finish_non_exhaustive()
    }
}
