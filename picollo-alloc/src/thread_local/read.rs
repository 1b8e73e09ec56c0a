//! The reads of the thread-local kind: the bucket reads ([`HistogramRead`], summed over the
//! shards and the accumulator by [`ThreadLocalHistogram::sum_shards`]) and the bulk reads
//! ([`ThreadLocalHistogram::read_recorded`], [`ThreadLocalHistogram::for_each_recorded`],
//! [`HistogramRead::recorded_runs`]), every one checked against the histogram's version lock
//! and re-read where a reset, thread-exit fold or fork clean-up overlapped it.
//!
//! A fold moves an exiting thread's counts: it adds them to the accumulator, then clears the
//! shard. No order of reading the shard and the accumulator makes a single pass right against
//! it (shard first can see the counts in both places, accumulator first in neither), so every
//! read checks the version after reading and reads again when a fold (or reset, or fork
//! clean-up) started or ended meanwhile. The bulk reads that hand runs of buckets to a
//! callback check the version before handing on each run (`pass_checked`): a callback cannot
//! take back a run it was given, so a run is handed on only once everything read up to it is
//! known to be consistent, and after a change the pass resumes where the runs handed on end.
//! No buffer: a read of dense shards allocates nothing.

use super::shard::{Shard, OWNED};
use super::sync;
use super::{Accumulator, LocalCounter, ThreadLocalHistogram};
use crate::bulk::{push_nonzero_run, RUN};
use crate::storage_choice::StorageChoice;
use core::ops::ControlFlow;
use picollo_core::plant;
use picollo_core::read::for_each_nonempty_run;
use picollo_core::storage::cell_runs_until;
use picollo_core::{Cells, HistogramRead};
use std::sync::atomic::Ordering;

impl<C: LocalCounter, S: StorageChoice> ThreadLocalHistogram<C, S> {
    /// Reads every bucket that holds a count, in one pass over each shard's cells (and over
    /// the accumulator, once an exited thread or a record without a shard put counts there):
    /// `out` receives `(storage index, count)` for each non-empty bucket, in increasing
    /// order, and the underflow and overflow are returned.
    ///
    /// Runs of empty cells are skipped 8 at a time, so a sparse histogram (a full-range one
    /// holds tens of thousands of cells) costs about two instructions per cell. Recorders never
    /// wait; the read is retried (as a whole) when a reset, thread-exit fold or fork clean-up
    /// overlapped it, so it never mixes counts from both sides of one (a fold moves a thread's
    /// counts from its shard to the accumulator: a pass that overlapped it could see them in
    /// both, or in neither), and it sees each bucket at some value it had during the read (as
    /// every read of this kind).
    ///
    /// ```
    /// use picollo_alloc::HistogramBuilder;
    /// use picollo_core::HistogramRead;
    ///
    /// let h = HistogramBuilder::new().thread_local().expect("the default builds");
    /// let layout = h.layout();
    /// h.record_n(3, 2);
    /// std::thread::scope(|s| {
    ///     // Folded into the accumulator at thread exit: an explicit `join` waits for it (the
    ///     // end of the scope alone does not wait for the thread's TLS destructors).
    ///     s.spawn(|| h.record(1_000_000)).join().unwrap();
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
            // Unchecked: the whole read (runs and outside counts) is retried below.
            let _ = self.pass_once(0, Pass::Whole, |start, counts: &[u64]| {
                push_nonzero_run(out, start, counts.iter().copied());
                ControlFlow::Continue(())
            });
            let acc = inner.acc_used.load(Ordering::Relaxed).then_some(&inner.acc);
            sync::cells_read();
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

    /// Calls `f(storage index, count)` for each non-empty bucket, in increasing order, each
    /// bucket once, at a count it held during the call: the pass is checked against the
    /// version lock run by run, and what a reset, thread-exit fold or fork clean-up overlapped
    /// is read again before `f` sees it, so no count is seen twice or missed while a fold
    /// moves it (as [`HistogramRead::recorded_runs`]). Buckets handed on before a reset that
    /// overlapped the call hold their counts from before it, the others from after: bracket
    /// the call with [`HistogramRead::read_begin`] and [`HistogramRead::read_retry`]
    /// ([`picollo_core::read::consistent`]) for a read on one side of every reset, or use
    /// [`ThreadLocalHistogram::read_recorded`]. Allocates nothing for dense shards.
    pub fn for_each_recorded(&self, mut f: impl FnMut(usize, u64)) {
        self.inner.check_fork();
        self.pass_checked(0, Pass::Whole, |start, counts: &[u64]| {
            for (i, &n) in counts.iter().enumerate() {
                if n != 0 {
                    f(start + i, n);
                }
            }
            ControlFlow::Continue(())
        })
    }

    /// The pass of [`ThreadLocalHistogram::pass_once`] from storage index `from`, each run
    /// checked against the version before `run` receives it: `run` gets a run only when no
    /// reset, fold or fork clean-up started or ended since the pass began, so everything the
    /// pass read up to and including that run (the empty runs it skipped too) is consistent.
    /// After such a change the pass starts again, under a new version, and hands on only what
    /// lies past the runs already handed on. Every bucket from `from` on is handed on once, in
    /// increasing order, until `run` breaks.
    pub(super) fn pass_checked(
        &self,
        from: usize,
        pass: Pass,
        mut run: impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) {
        let version = &self.inner.version;
        // Storage indices below `from` were handed on (or are not asked for).
        let mut from = from;
        loop {
            let token = version.read_begin();
            let (mut reached, mut stale) = (from, false);
            let ended = self.pass_once(from, pass, |start: usize, counts: &[u64]| {
                let skip = from.saturating_sub(start);
                if skip >= counts.len() {
                    return ControlFlow::Continue(());
                }
                if plant!(LocalReadUnchecked, version.read_retry(token), false) {
                    stale = true;
                    return ControlFlow::Break(());
                }
                reached = start + counts.len();
                run(start + skip, &counts[skip..])
            });
            // Broken by `run` (not by a stale version): what it was handed was consistent.
            if ended.is_break() && !stale {
                return;
            }
            // The runs after the last one handed on may have looked empty only because a
            // fold cleared a shard meanwhile: checked once more at the end.
            if !stale && !plant!(LocalReadUnchecked, version.read_retry(token), false) {
                return;
            }
            from = reached;
            core::hint::spin_loop();
        }
    }

    /// One pass from storage index `from`, not checked (callers check it against the
    /// version: a fold that overlaps it can make it see a count twice or not at all): calls
    /// `run(start, counts)` with the counts of every run of [`RUN`] cells (the last may be
    /// shorter) that holds a count and ends past `from`, in increasing order, until `run`
    /// breaks. For each run, the OR of every owned shard's cells (and the accumulator's, once
    /// it held a count) says whether any is non-zero; only then are the counts summed (less
    /// the shards' baselines). A [`Pass::Walk`] reads [`STOP_RUNS`] runs at a time, so a break
    /// wastes at most those.
    fn pass_once(
        &self,
        from: usize,
        pass: Pass,
        mut run: impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
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
        if S::dense_cells(self.inner.acc.storage()).is_none() {
            return self.pass_once_sparse(from, pass, acc, run);
        }
        fn cells_of<C: LocalCounter, S: StorageChoice>(shard: &Shard<C, S>) -> &[C::Cell] {
            S::dense_cells(&shard.cells).unwrap_or(&[])
        }
        let mut direct: [&[C::Cell]; DIRECT] = [&[]; DIRECT];
        let mut count = 0;
        let mut general = acc.is_some();
        for shard in owned() {
            general |= count == DIRECT || shard.baseline().is_some();
            if let Some(slot) = direct.get_mut(count) {
                *slot = cells_of(shard);
                count += 1;
            }
        }
        let len = self.window.len();
        let runs = len.div_ceil(RUN);
        let range = |r: usize| r * RUN..((r + 1) * RUN).min(len);
        let or = |cells: &[C::Cell]| cells.iter().fold(0u64, |a, c| a | C::load(c));
        let first = from / RUN;
        let mut counts = [0u64; RUN];
        if !general {
            // Owned shards without baselines, nothing in the accumulator: the common case.
            return match &direct[..count] {
                [] => ControlFlow::Continue(()),
                [cells] => one_shard_runs::<C>(cells, first * RUN, pass, run),
                shards => nonempty_runs_until(
                    first..runs,
                    pass.stop_runs(),
                    |r| shards.iter().fold(0, |a, c| a | or(&c[range(r)])) != 0,
                    |r| {
                        for (n, i) in counts.iter_mut().zip(range(r)) {
                            *n = shards
                                .iter()
                                .fold(0u64, |n, c| n.saturating_add(C::load(&c[i])));
                        }
                        run(r * RUN, &counts[..range(r).len()])
                    },
                ),
            };
        }
        nonempty_runs_until(
            first..runs,
            pass.stop_runs(),
            |r| {
                let mut nonzero = owned().fold(0u64, |a, s| a | or(&cells_of(s)[range(r)]));
                if let Some(acc) = acc {
                    sync::cells_read();
                    nonzero |= range(r).fold(0u64, |a, i| a | acc.count_at(i));
                }
                nonzero != 0
            },
            |r| {
                for (n, i) in counts.iter_mut().zip(range(r)) {
                    sync::cells_read();
                    *n = owned().fold(acc.map_or(0, |a| a.count_at(i)), |n, s| {
                        n.saturating_add(s.count_at(i))
                    });
                }
                run(r * RUN, &counts[..range(r).len()])
            },
        )
    }

    /// [`ThreadLocalHistogram::pass_once`] over sparse storage: every owned shard's counts
    /// since the last reset (their bulk reads, less their baselines), and the accumulator's,
    /// merged by storage index and handed over in runs of [`RUN`] cells aligned like the dense
    /// scan's, from `from`'s run on.
    fn pass_once_sparse(
        &self,
        from: usize,
        pass: Pass,
        acc: Option<&Accumulator<S>>,
        mut run: impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut owned = self
            .inner
            .shards()
            .filter(|s| s.state.load(Ordering::Relaxed) == OWNED);
        if let (Some(only), None, None) = (owned.next(), owned.next(), acc) {
            if only.baseline().is_none() {
                // One recording thread, never reset: its storage's own bulk read (from the
                // position, through the storage's walk cache, for a walk).
                return match pass {
                    Pass::Whole => {
                        let mut stopped = false;
                        only.cells.recorded_runs(&mut |start, counts| {
                            if !stopped {
                                stopped = run(start, counts).is_break();
                            }
                        });
                        if stopped {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    }
                    Pass::Walk => {
                        let mut ended = ControlFlow::Continue(());
                        only.cells.recorded_runs_from(from, &mut |start, counts| {
                            ended = run(start, counts);
                            ended
                        });
                        ended
                    }
                };
            }
        }
        // Several sources: their counts merged by storage index, a chunk of the window at a
        // time for a walk (so a walk that stops after a few buckets reads a chunk, not every
        // count of every shard), the whole window at once otherwise. Each source's read
        // from a chunk also finds its first count past it: the next chunk starts at the
        // least of those, so empty stretches cost nothing.
        let len = self.window.len();
        let chunk = pass.stop_runs().saturating_mul(RUN);
        let mut pairs: Vec<(usize, u64)> = Vec::new();
        let mut lo = from;
        while lo < len {
            // Chunks end at multiples of RUN, so no run of the replay straddles two.
            let hi = (lo / RUN * RUN).saturating_add(chunk);
            pairs.clear();
            let next = self.gather_sources(lo..hi, acc, &mut pairs);
            // Each source's pairs are sorted: a stable sort finds those runs and merges them.
            pairs.sort_by_key(|&(slot, _)| slot);
            replay_runs(&pairs, len, &mut run)?;
            lo = next;
        }
        ControlFlow::Continue(())
    }

    /// [`gather_chunk`] over every source of a sparse pass: each owned shard's counts since
    /// the last reset, and the accumulator's (`acc`, once it held counts). Returns the first
    /// storage index past `chunk` where any source holds a count (`usize::MAX` when none).
    fn gather_sources(
        &self,
        chunk: core::ops::Range<usize>,
        acc: Option<&Accumulator<S>>,
        pairs: &mut Vec<(usize, u64)>,
    ) -> usize {
        let mut next = usize::MAX;
        for shard in self.inner.shards() {
            if shard.state.load(Ordering::Relaxed) == OWNED {
                sync::cells_read();
                let base = shard.baseline();
                let at = gather_chunk(
                    |at, f| shard.cells.recorded_runs_from(at, f),
                    chunk.clone(),
                    |slot| base.map_or(0, |b| b.cells.count_at(slot)),
                    pairs,
                );
                next = next.min(at);
            }
        }
        if let Some(acc) = acc {
            sync::cells_read();
            let at = gather_chunk(|at, f| acc.recorded_runs_from(at, f), chunk, |_| 0, pairs);
            next = next.min(at);
        }
        next
    }

    /// Sums `acc(accumulator)` and `f` over the shards, retrying if a reset, fold or fork
    /// clean-up overlapped: so even one `count_at` outside a [`HistogramRead::read_begin`]
    /// bracket never sees a fold half done (counts in both the shard and the accumulator, or
    /// in neither) or a reset half done.
    #[inline]
    pub(super) fn sum_shards(
        &self,
        mut acc: impl FnMut(&Accumulator<S>) -> u64,
        mut f: impl FnMut(&Shard<C, S>) -> u64,
    ) -> u64 {
        let inner = &*self.inner;
        inner.check_fork();
        loop {
            let token = inner.version.read_begin();
            sync::cells_read();
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

/// Shards whose cells the common path of a dense pass reads from an array (more take the
/// general path, which walks the shard list per run).
const DIRECT: usize = 16;

/// How a pass reads: the whole window in one go, or as a walk that may break after any run
/// (a batch of an iteration), which reads [`Pass::stop_runs`] runs at a time.
#[derive(Clone, Copy)]
pub(super) enum Pass {
    /// Every run to the end ([`HistogramRead::recorded_runs`] and the whole reads).
    Whole,
    /// From a position until the caller breaks ([`HistogramRead::recorded_runs_from`]).
    Walk,
}

/// Runs of [`RUN`] cells a walk's pass reads between checks for a break: 512 cells, as sparse
/// storage's walk reads its pages.
const STOP_RUNS: usize = 64;

impl Pass {
    /// Runs read between checks for a break.
    fn stop_runs(self) -> usize {
        match self {
            Pass::Whole => usize::MAX,
            Pass::Walk => STOP_RUNS,
        }
    }
}

/// One recording thread's dense cells from `start` (a multiple of [`RUN`]): its cells
/// alone, the scan of a slice of cells, until `run` breaks.
fn one_shard_runs<C: LocalCounter>(
    cells: &[C::Cell],
    start: usize,
    pass: Pass,
    mut run: impl FnMut(usize, &[u64]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let chunk = pass.stop_runs().saturating_mul(RUN);
    let start = start.min(cells.len());
    cell_runs_until(&cells[start..], |c| C::load(c), chunk, &mut |s, c| {
        run(start + s, c)
    })
}

/// [`for_each_nonempty_run`] over the runs `runs`, `stop` of them at a time (each run tested
/// with `any`, the non-empty ones handed to `take`), until `take` breaks.
#[inline(always)]
fn nonempty_runs_until(
    runs: core::ops::Range<usize>,
    stop: usize,
    any: impl Fn(usize) -> bool,
    mut take: impl FnMut(usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut r = runs.start;
    while r < runs.end {
        let n = (runs.end - r).min(stop);
        let mut ended = ControlFlow::Continue(());
        for_each_nonempty_run(
            n,
            |i| any(r + i),
            |i| {
                if ended.is_continue() {
                    ended = take(r + i);
                }
            },
        );
        ended?;
        r += n;
    }
    ControlFlow::Continue(())
}

/// Appends `(storage index, count less base(index))` for the non-zero counts a source's
/// bulk read from `chunk.start` (`read_from`: a storage's or the accumulator's
/// `recorded_runs_from`) finds below `chunk.end`, and returns the storage index of the first
/// count it finds at or past `chunk.end` (`usize::MAX` when none): the source holds nothing
/// between the chunk's end and that index.
fn gather_chunk(
    read_from: impl FnOnce(usize, &mut dyn FnMut(usize, &[u64]) -> ControlFlow<()>),
    chunk: core::ops::Range<usize>,
    base: impl Fn(usize) -> u64,
    pairs: &mut Vec<(usize, u64)>,
) -> usize {
    let mut next = usize::MAX;
    read_from(chunk.start, &mut |start, counts| {
        for (slot, &n) in (start..).zip(counts) {
            if n == 0 || slot < chunk.start {
                continue;
            }
            if slot >= chunk.end {
                next = slot;
                return ControlFlow::Break(());
            }
            let n = n.saturating_sub(base(slot));
            if n != 0 {
                pairs.push((slot, n));
            }
        }
        ControlFlow::Continue(())
    });
    next
}

/// Hands `pairs` (`(storage index, count)`, sorted by index; a repeated index is summed) to
/// `run` as runs of [`RUN`] cells aligned like the dense scan's, the last one cut at `len`,
/// until `run` breaks.
fn replay_runs(
    pairs: &[(usize, u64)],
    len: usize,
    mut run: impl FnMut(usize, &[u64]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut i = 0;
    while let Some(&(slot, _)) = pairs.get(i) {
        let start = slot / RUN * RUN;
        let stop = (start + RUN).min(len);
        let mut counts = [0u64; RUN];
        while let Some(&(s, n)) = pairs.get(i).filter(|&&(s, _)| s < stop) {
            counts[s - start] = counts[s - start].saturating_add(n);
            i += 1;
        }
        run(start, &counts[..stop - start])?;
    }
    ControlFlow::Continue(())
}
