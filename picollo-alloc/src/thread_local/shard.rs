//! The shards and the shared state: one thread's cells ([`Shard`], with its reset baseline),
//! the histogram's shard list, accumulator, version lock and fork generation ([`Inner`]):
//! claiming a shard, folding an exiting owner's shard, the fork clean-up of a histogram.

use super::cache::Owner;
use super::sync::{self, AtomicBool, AtomicPtr, AtomicU8};
use super::{fork, Accumulator, LocalCounter, ThreadLocalHistogram};
use crate::storage_choice::StorageChoice;
use core::marker::PhantomData;
use core::ptr;
use picollo_core::atomic::Version;
use picollo_core::plant;
use picollo_core::{Absent, BucketPos, Cells, Layout, LayoutSpec, Lookup, Window};
use portable_atomic::AtomicU64;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Shard states.
pub(super) const FREE: u8 = 0;
pub(super) const OWNED: u8 = 1;

/// The counts of a shard at the last reset.
pub(super) struct Baseline<C: LocalCounter, S: StorageChoice> {
    pub(super) cells: S::Cells<C::Cell>,
    pub(super) underflow: AtomicU64,
    pub(super) overflow: AtomicU64,
}

/// One thread's counts. Its cells, underflow and overflow are written by its owner only
/// (and, under the version lock, zeroed by the fold of an exiting owner and by the fork
/// clean-up, when no owner can be writing). Its baseline is written under the version lock.
pub(super) struct Shard<C: LocalCounter, S: StorageChoice> {
    pub(super) cells: S::Cells<C::Cell>,
    pub(super) underflow: AtomicU64,
    pub(super) overflow: AtomicU64,
    /// The counts at the last reset; null until the first reset (all zero). Installed under
    /// the version lock by a reset, which the loom models leave out: the standard library's
    /// atomic in every build (loom would try the other threads at each of its loads, on every
    /// shard read, for nothing the models check).
    pub(super) base: std::sync::atomic::AtomicPtr<Baseline<C, S>>,
    /// `FREE` or `OWNED`.
    pub(super) state: AtomicU8,
    /// The owner's thread token (see `thread_token`).
    pub(super) owner: sync::AtomicU64,
    /// The next node; set before the node is published, never changed after.
    pub(super) next: AtomicPtr<Shard<C, S>>,
}

impl<C: LocalCounter, S: StorageChoice> Shard<C, S> {
    /// Records `count` occurrences of `value` for the owner thread.
    #[inline]
    pub(super) fn record_n(&self, h: &ThreadLocalHistogram<C, S>, value: u64, count: u64) {
        let pos = LayoutSpec::position(&h.layout, value);
        let (k, first) = (h.layout.block_scale(), h.window.first());
        // SAFETY: `pos` is a position under the histogram's layout, the one the shard's
        // storage was made for.
        match unsafe { self.cells.cell(pos, k, first) } {
            Lookup::Found(cell) => C::owner_add(cell, count),
            Lookup::Missing => self.record_absent(h, pos, count),
        }
    }

    /// Records `count` occurrences at `pos` for the owner thread, where the record path found
    /// no cell: outside the window, or (sparse storage) a block without a page yet.
    #[cold]
    pub(super) fn record_absent(&self, h: &ThreadLocalHistogram<C, S>, pos: BucketPos, count: u64) {
        let (k, first) = (h.layout.block_scale(), h.window.first());
        // SAFETY: as in `record_n`.
        match unsafe { self.cells.absent(pos, k, first, count) } {
            Absent::Outside(slot) => self.record_outside(slot, count),
            Absent::Cell(cell) => {
                C::owner_add(cell, count);
                // The cell may be in the storage's first page, which came with its directory.
                h.refresh_cached(self);
            }
            Absent::Counted => {}
        }
    }

    /// Records `count` values outside the window for the owner thread.
    #[cold]
    pub(super) fn record_outside(&self, slot: usize, count: u64) {
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
    pub(super) fn baseline(&self) -> Option<&Baseline<C, S>> {
        // SAFETY: `base` is null or a `Box` installed once (release) by `take_baseline` and
        // freed only when the shard drops, so it is initialized and alive while `self` is.
        unsafe { self.base.load(Ordering::Acquire).as_ref() }
    }

    /// The count at storage index `i` since the last reset.
    #[inline]
    pub(super) fn count_at(&self, i: usize) -> u64 {
        sync::cells_read();
        let base = self.baseline().map_or(0, |b| b.cells.count_at(i));
        self.cells.count_at(i).saturating_sub(base)
    }

    /// The sum of the counts at storage indices `start..end` since the last reset.
    pub(super) fn sum_range(&self, start: usize, end: usize) -> u64 {
        sync::cells_read();
        let base = self.baseline().map_or(0, |b| b.cells.sum_range(start, end));
        self.cells.sum_range(start, end).saturating_sub(base)
    }

    /// Calls `f(storage index, count since the last reset)` for every bucket with a count.
    pub(super) fn for_each_count(&self, mut f: impl FnMut(usize, u64)) {
        sync::cells_read();
        let base = self.baseline();
        self.cells.recorded_runs(&mut |start, counts| {
            for (slot, &n) in (start..).zip(counts) {
                if n != 0 {
                    let n = n.saturating_sub(base.map_or(0, |b| b.cells.count_at(slot)));
                    if n != 0 {
                        f(slot, n);
                    }
                }
            }
        });
    }

    /// Underflow since the last reset.
    pub(super) fn underflow(&self) -> u64 {
        sync::cells_read();
        let base = self
            .baseline()
            .map_or(0, |b| b.underflow.load(Ordering::Relaxed));
        self.underflow.load(Ordering::Relaxed).saturating_sub(base)
    }

    /// Overflow since the last reset.
    pub(super) fn overflow(&self) -> u64 {
        sync::cells_read();
        let base = self
            .baseline()
            .map_or(0, |b| b.overflow.load(Ordering::Relaxed));
        self.overflow.load(Ordering::Relaxed).saturating_sub(base)
    }

    /// Copies the current counts into the baseline (allocated on first use). Only under the
    /// version lock.
    pub(super) fn take_baseline(&self, layout: Layout, window: Window) {
        let base = match self.baseline() {
            Some(b) => b,
            None => {
                let b = Box::into_raw(Box::new(Baseline::<C, S> {
                    cells: S::cells::<C::Cell>(layout, window).0,
                    underflow: AtomicU64::new(0),
                    overflow: AtomicU64::new(0),
                }));
                self.base.store(b, Ordering::Release);
                // SAFETY: just made from a `Box`; freed only when the shard drops.
                unsafe { &*b }
            }
        };
        S::copy_counts(&base.cells, &self.cells, C::set);
        let under = self.underflow.load(Ordering::Relaxed);
        base.underflow.store(under, Ordering::Relaxed);
        let over = self.overflow.load(Ordering::Relaxed);
        base.overflow.store(over, Ordering::Relaxed);
    }

    /// Zeroes the counts and the baseline. Only under the version lock, with no owner writing.
    pub(super) fn clear(&self) {
        self.cells.clear_shared(|c| C::set(c, 0));
        self.underflow.store(0, Ordering::Relaxed);
        self.overflow.store(0, Ordering::Relaxed);
        if let Some(b) = self.baseline() {
            b.cells.clear_shared(|c| C::set(c, 0));
            b.underflow.store(0, Ordering::Relaxed);
            b.overflow.store(0, Ordering::Relaxed);
        }
    }

    /// Bytes of the shard's storage and its baseline's.
    pub(super) fn held_bytes(&self) -> usize {
        self.cells.held_bytes() + self.baseline().map_or(0, |b| b.cells.held_bytes())
    }
}

impl<C: LocalCounter, S: StorageChoice> Drop for Shard<C, S> {
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
pub(super) struct Inner<C: LocalCounter, S: StorageChoice> {
    pub(super) layout: Layout,
    pub(super) window: Window,
    /// Seqlock around resets, folds and fork clean-ups.
    pub(super) version: Version,
    /// Head of the shard list.
    pub(super) head: AtomicPtr<Shard<C, S>>,
    /// Counts of exited threads and of records made without a shard.
    pub(super) acc: Accumulator<S>,
    /// Set before anything is added to `acc` (then kept): bulk reads skip an accumulator
    /// that never held a count, which is the rule while no recording thread has exited.
    pub(super) acc_used: AtomicBool,
    /// The fork generation this histogram's shard set was last checked against.
    pub(super) fork_gen: AtomicU64,
    /// Set when the handle is dropped: threads prune their entries for it.
    pub(super) closed: AtomicBool,
    /// Shard nodes allocated.
    pub(super) allocated: AtomicUsize,
    /// The list owns its nodes (for drop check).
    pub(super) _nodes: PhantomData<Box<Shard<C, S>>>,
}

impl<C: LocalCounter, S: StorageChoice> Inner<C, S> {
    /// The shard nodes, newest first.
    pub(super) fn shards(&self) -> Shards<'_, C, S> {
        Shards {
            next: self.head.load(Ordering::Acquire),
            _inner: PhantomData,
        }
    }

    /// Cleans up after a fork, once per fork generation (see the module docs).
    #[inline]
    pub(super) fn check_fork(&self) {
        let gen = fork::generation();
        if gen != self.fork_gen.load(Ordering::Relaxed) {
            self.after_fork(gen);
        }
    }

    #[cold]
    pub(super) fn after_fork(&self, gen: u64) {
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
    pub(super) fn claim(&self, token: u64) -> &Shard<C, S> {
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
        // Written into its allocation: a shard moved whole is a `memcpy` call (callgrind).
        let node = Box::into_raw(Box::write(
            Box::new_uninit(),
            Shard::<C, S> {
                cells: S::cells_like(self.acc.storage()),
                underflow: AtomicU64::new(0),
                overflow: AtomicU64::new(0),
                base: std::sync::atomic::AtomicPtr::new(ptr::null_mut()),
                state: AtomicU8::new(OWNED),
                owner: sync::AtomicU64::new(token),
                next: AtomicPtr::new(ptr::null_mut()),
            },
        ));
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
    pub(super) fn fold(&self, shard: &Shard<C, S>, token: u64) {
        self.check_fork();
        let odd = self.version.lock();
        // The fork clean-up may have taken the shard away from a thread that no longer exists
        // in this process; only the owner folds.
        if shard.state.load(Ordering::Relaxed) == OWNED
            && shard.owner.load(Ordering::Relaxed) == token
        {
            self.acc_used.store(true, Ordering::Relaxed);
            if plant!(LocalClearBeforeAdd, false, true) {
                sync::cells_written();
                shard.clear();
            }
            let (layout, first) = (self.layout, self.window.first());
            sync::cells_written();
            // The shard's bulk read: only the buckets it holds.
            shard.for_each_count(|slot, n| {
                // The lowest value of a bucket maps back to that bucket.
                self.acc.record_n(layout.lo(first + slot), n);
            });
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
            // Cleared, then released: a thread that claims the shard (acquire) finds it zero.
            let release_first = plant!(LocalReleaseBeforeClear, false, true);
            if release_first {
                shard.state.store(FREE, Ordering::Release);
            }
            sync::cells_written();
            shard.clear();
            if !release_first {
                shard.state.store(FREE, Ordering::Release);
            }
        }
        self.version.unlock(odd);
    }
}

impl<C: LocalCounter, S: StorageChoice> Drop for Inner<C, S> {
    fn drop(&mut self) {
        fork::deregister(&self.version);
        let mut p = sync::owned_ptr(&mut self.head);
        while !p.is_null() {
            // SAFETY: every node was made by `Box::into_raw` in `claim` and linked once; with
            // `&mut self` nothing else can reach the list, and each node is freed once.
            let node = unsafe { Box::from_raw(p) };
            p = node.next.load(Ordering::Relaxed);
        }
    }
}

/// Iterator over the shard list.
pub(super) struct Shards<'a, C: LocalCounter, S: StorageChoice> {
    pub(super) next: *mut Shard<C, S>,
    pub(super) _inner: PhantomData<&'a Inner<C, S>>,
}

impl<'a, C: LocalCounter, S: StorageChoice> Iterator for Shards<'a, C, S> {
    type Item = &'a Shard<C, S>;
    #[inline]
    fn next(&mut self) -> Option<&'a Shard<C, S>> {
        // SAFETY: `next` is null or a node of the list of the `Inner` borrowed for `'a`;
        // nodes are published with a release CAS (read with acquire) and freed only when the
        // `Inner` drops, so the node is initialized and alive for `'a`.
        let shard = unsafe { self.next.as_ref() }?;
        self.next = shard.next.load(Ordering::Acquire);
        Some(shard)
    }
}

impl<C: LocalCounter, S: StorageChoice> Owner for Inner<C, S> {
    unsafe fn retire(&self, shard: *const (), token: u64) {
        // SAFETY: the caller passes a shard of this `Inner`, which is a `Shard<C, S>` node of
        // its list, alive while `self` is.
        let shard = unsafe { &*shard.cast::<Shard<C, S>>() };
        // A dropped histogram is not read again, but folding it costs little and keeps one
        // path.
        self.fold(shard, token);
    }
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}
