//! The read interface every histogram kind implements, [`HistogramRead`], and the bulk-scan
//! helper its readers share. A leaf: everything else in `read` (and `iter`) is built over it.

use core::ops::ControlFlow;

use crate::{Layout, Window};

/// The small read interface every histogram kind implements.
///
/// Storage index `s` holds the bucket at logical index `window().first() + s`.
pub trait HistogramRead {
    /// The bucket layout.
    fn layout(&self) -> Layout;
    /// The stored window of logical buckets.
    fn window(&self) -> Window;
    /// The count at storage index `storage_index`; 0 past the end.
    fn count_at(&self, storage_index: usize) -> u64;
    /// Values recorded below the window.
    fn underflow(&self) -> u64;
    /// Values recorded above the window.
    fn overflow(&self) -> u64;

    /// The sum of the counts at storage indices `start..end` (clamped to the window), saturated
    /// at `u64::MAX`. The default adds [`HistogramRead::count_at`]; kinds with plain storage
    /// override it with a loop the compiler vectorizes, which is what makes percentile walks
    /// fast.
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let end = end.min(self.window().len());
        let mut total = 0u64;
        for s in start.min(end)..end {
            total = total.saturating_add(self.count_at(s));
        }
        total
    }

    /// The bulk read every "list the non-empty buckets" path goes through (exporters, codecs,
    /// snapshots): calls `f(start, counts)` for runs of consecutive storage indices, in
    /// increasing order and without overlap, where `counts[i]` is the count at storage index
    /// `start + i`. Together the runs hold every non-empty bucket; a run may hold empty ones
    /// too (readers skip its zeros), and runs of empty buckets are left out, which is what
    /// makes a sparse full-range histogram (tens of thousands of cells) cheap to read.
    ///
    /// **What every kind guarantees**, whatever other threads do meanwhile (record, reset, exit):
    ///
    /// - `f` receives each bucket once: a kind that must read part of its pass again (below)
    ///   reads again only what it has not handed to `f` yet, so `f` never receives counts it
    ///   would have to take back.
    /// - Each count is one the bucket held during the call, as for
    ///   [`HistogramRead::count_at`]: no record is counted twice, and none is missed that
    ///   completed before the call began and was not cleared by a reset. (Where a bucket lives
    ///   in several places, as in sparse storage's page and cold entries, each place is read
    ///   once during the call and their sum lies between the bucket's counts at the call's
    ///   start and end, resets aside.) A histogram's own moves are never seen half done: the
    ///   thread-local kind's thread-exit fold (a thread's counts added to the accumulator, then
    ///   its shard cleared) and fork clean-up take its version lock, and its pass checks each
    ///   run against that lock before handing it on, reading again what one overlapped.
    ///
    /// What needs a bracket: the pass is not one instant across buckets. A reset that overlaps
    /// it may be seen by some buckets and not others, and the buckets are not read together
    /// with [`HistogramRead::underflow`] and [`HistogramRead::overflow`]: a reader that needs
    /// that brackets the call with [`HistogramRead::read_begin`] and
    /// [`HistogramRead::read_retry`] ([`consistent`](super::consistent)), which costs nothing
    /// when no reset overlapped. The plain kind and snapshots are read through `&self` while
    /// nothing can change them: their pass is exact.
    ///
    /// The default skips each run of 16 empty buckets with one [`HistogramRead::sum_range`]
    /// and reads the others with [`HistogramRead::count_at`]. Kinds whose cells are a slice
    /// override it with [`crate::storage::cell_runs`] (one vectorized OR per run of 8 empty
    /// cells, no branch per cell); the thread-local kind ORs its shards' cells.
    ///
    /// ```
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 1000)]>::new(
    ///     Layout::DEFAULT, 0, 1000);
    /// h.record(3);
    /// h.record_n(900, 2);
    /// let mut recorded = Vec::new();
    /// h.recorded_runs(&mut |start, counts| {
    ///     let nonzero = counts.iter().enumerate().filter(|&(_, &n)| n != 0);
    ///     recorded.extend(nonzero.map(|(i, &n)| (start + i, n)));
    /// });
    /// let at = |v| h.window().storage_index(h.layout().index_of(v)).unwrap();
    /// assert_eq!(recorded, [(at(3), 1), (at(900), 2)]);
    /// ```
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        runs_by_sums(
            self.window().len(),
            0,
            |start, end| self.sum_range(start, end),
            |s| self.count_at(s),
            &mut |start, counts| {
                f(start, counts);
                ControlFlow::Continue(())
            },
        )
    }

    /// The bulk read for walks that stop early: as [`HistogramRead::recorded_runs`] (the same
    /// guarantees), but only the buckets at storage index `from` or above (a run that starts
    /// below `from` is cut there), and ending as soon as `f` returns [`ControlFlow::Break`].
    /// The percentile iteration and the bucket iterators of kinds that read in bulk
    /// ([`HistogramRead::reads_in_bulk`]) read a few recorded buckets ahead at a time through
    /// it, so a walk costs about what was recorded, not a lookup per bucket.
    ///
    /// The default is the default [`HistogramRead::recorded_runs`] from `from` on (runs of 16
    /// buckets, the empty ones passed with one [`HistogramRead::sum_range`]); the kinds hand
    /// it to their storage ([`Cells::recorded_runs_from`](crate::Cells::recorded_runs_from)),
    /// where sparse storage starts at `from`'s block and sorts only the next cold entries.
    ///
    /// ```
    /// use core::ops::ControlFlow;
    /// use picollo_core::prelude::*;
    /// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 1000)]>::new(
    ///     Layout::DEFAULT, 0, 1000);
    /// for v in [3, 500, 900] {
    ///     h.record(v);
    /// }
    /// let at = |v| h.window().storage_index(h.layout().index_of(v)).unwrap();
    /// // The first recorded bucket after 3's.
    /// let mut found = None;
    /// h.recorded_runs_from(at(3) + 1, &mut |start, counts| {
    ///     match counts.iter().position(|&n| n != 0) {
    ///         Some(i) => {
    ///             found = Some(start + i);
    ///             ControlFlow::Break(())
    ///         }
    ///         None => ControlFlow::Continue(()),
    ///     }
    /// });
    /// assert_eq!(found, Some(at(500)));
    /// ```
    fn recorded_runs_from(&self, from: usize, f: &mut dyn FnMut(usize, &[u64]) -> ControlFlow<()>) {
        runs_by_sums(
            self.window().len(),
            from,
            |start, end| self.sum_range(start, end),
            |s| self.count_at(s),
            f,
        )
    }

    /// Whether walks over the buckets (percentiles, statistics) should read through
    /// [`HistogramRead::recorded_runs`] rather than bucket by bucket
    /// ([`HistogramRead::count_at`], [`HistogramRead::sum_range`]): true for kinds whose
    /// storage finds a count by a lookup (`picollo-alloc`'s sparse storage, see
    /// [`Cells::READS_IN_BULK`](crate::Cells::READS_IN_BULK)), whose bulk read costs about
    /// what was recorded, where reading a full-range window bucket by bucket costs a lookup
    /// per bucket. The default, false, suits cells in a slice (sums that vectorize).
    #[inline]
    fn reads_in_bulk(&self) -> bool {
        false
    }

    /// Starts an optimistic read (seqlock: optimistic read, retried after a reset): returns a token
    /// to pass to [`HistogramRead::read_retry`]. Kinds that can be reset concurrently wait here
    /// while a reset is in progress (**blocking**: see [`HistogramRead::try_read_begin`] for
    /// contexts that may have interrupted the reset). The default, for kinds that cannot be,
    /// returns 0.
    #[inline]
    fn read_begin(&self) -> u64 {
        0
    }

    /// As [`HistogramRead::read_begin`], without waiting: `None` while a reset is in progress.
    /// [`ReadExt::try_read`](super::ReadExt::try_read) starts here, which is what makes it safe
    /// in an interrupt handler that may have landed inside a reset. The default calls
    /// [`HistogramRead::read_begin`]: kinds whose `read_begin` can wait override both.
    #[inline]
    fn try_read_begin(&self) -> Option<u64> {
        Some(self.read_begin())
    }

    /// Whether a structural change (a reset) happened since `read_begin` returned `token`, so the
    /// read must be redone. The default never asks for a retry.
    #[inline]
    fn read_retry(&self, token: u64) -> bool {
        let _ = token;
        false
    }

    /// How many times the histogram was reset (`ResetCount` in Picollo for .NET). Kinds without a
    /// reset, such as snapshots, report 0. Wraps at 2^32 for the shared kinds on 32-bit
    /// targets.
    #[inline]
    fn reset_count(&self) -> u64 {
        0
    }
}

impl<H: HistogramRead + ?Sized> HistogramRead for &H {
    crate::forward_histogram_read!(|h| **h);
}

/// Implements every [`HistogramRead`] method of a wrapper by forwarding it to the histogram
/// the wrapper holds: the one mechanism for wrappers (`&H`, recorder handles, sum-keeping
/// wrappers), so that a method added to the trait reaches every wrapper at once and none
/// silently falls back to a default (a wrapper that forgot `recorded_runs` would read cell by
/// cell; one that forgot `reset_count` would report 0).
///
/// Written inside an `impl HistogramRead for …` block: `forward_histogram_read!(|w| w.inner)`
/// forwards all methods to the place `w.inner` (`w` names `self`);
/// `forward_histogram_read!(unbracketed: |w| w.inner)` all but the seqlock bracket
/// (`read_begin`, `try_read_begin`, `read_retry`), left at the defaults that never wait and
/// never retry (`read::OnePass`, read inside a bracket of its own). The three core kinds
/// forward to the one read they share (`kind::Base`'s). A macro rather than a blanket impl
/// over an "inner histogram" accessor trait: such a blanket impl would overlap the kinds' own
/// impls (and `&H`'s) under coherence.
///
/// ```
/// use picollo_core::prelude::*;
///
/// /// A histogram with a name.
/// struct Named<H> { name: &'static str, histogram: H }
///
/// impl<H: HistogramRead> HistogramRead for Named<H> {
///     picollo_core::forward_histogram_read!(|n| n.histogram);
/// }
///
/// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 100)]>::new(Layout::DEFAULT, 0, 100);
/// h.record(7);
/// let named = Named { name: "x", histogram: h };
/// assert_eq!((named.name, named.total()), ("x", 1));
/// ```
#[macro_export]
macro_rules! forward_histogram_read {
    (|$w:ident| $inner:expr) => {
        $crate::forward_histogram_read!(unbracketed: |$w| $inner);
        fn read_begin(&self) -> u64 {
            let $w = self;
            $crate::HistogramRead::read_begin(&$inner)
        }
        fn try_read_begin(&self) -> Option<u64> {
            let $w = self;
            $crate::HistogramRead::try_read_begin(&$inner)
        }
        fn read_retry(&self, token: u64) -> bool {
            let $w = self;
            $crate::HistogramRead::read_retry(&$inner, token)
        }
    };
    (unbracketed: |$w:ident| $inner:expr) => {
        fn layout(&self) -> $crate::Layout {
            let $w = self;
            $crate::HistogramRead::layout(&$inner)
        }
        fn window(&self) -> $crate::Window {
            let $w = self;
            $crate::HistogramRead::window(&$inner)
        }
        fn count_at(&self, storage_index: usize) -> u64 {
            let $w = self;
            $crate::HistogramRead::count_at(&$inner, storage_index)
        }
        fn sum_range(&self, start: usize, end: usize) -> u64 {
            let $w = self;
            $crate::HistogramRead::sum_range(&$inner, start, end)
        }
        fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
            let $w = self;
            $crate::HistogramRead::recorded_runs(&$inner, f)
        }
        fn recorded_runs_from(
            &self,
            from: usize,
            f: &mut dyn FnMut(usize, &[u64]) -> ::core::ops::ControlFlow<()>,
        ) {
            let $w = self;
            $crate::HistogramRead::recorded_runs_from(&$inner, from, f)
        }
        fn reads_in_bulk(&self) -> bool {
            let $w = self;
            $crate::HistogramRead::reads_in_bulk(&$inner)
        }
        fn underflow(&self) -> u64 {
            let $w = self;
            $crate::HistogramRead::underflow(&$inner)
        }
        fn overflow(&self) -> u64 {
            let $w = self;
            $crate::HistogramRead::overflow(&$inner)
        }
        fn reset_count(&self) -> u64 {
            let $w = self;
            $crate::HistogramRead::reset_count(&$inner)
        }
    };
}

/// Calls `take(r)` for each run `r < runs` for which `any(r)` holds, in increasing order:
/// the scan bulk readers use to skip runs of empty cells.
///
/// Two passes per 64 runs: first `any` over them into a mask, without a branch (whether a
/// run is empty depends on the data: a branch on it would mispredict about once per recorded
/// bucket of a sparse histogram), then the mask's runs, found with trailing-zero counts
/// (their cells, just read, are still in cache).
///
/// ```
/// let cells = [0u64, 0, 3, 0, 0, 0, 7, 1];
/// let mut seen = Vec::new();
/// picollo_core::read::for_each_nonempty_run(4, |r| cells[2 * r] | cells[2 * r + 1] != 0, |r| {
///     seen.push(r)
/// });
/// assert_eq!(seen, [1, 3]);
/// ```
#[inline(always)]
pub fn for_each_nonempty_run(
    runs: usize,
    any: impl Fn(usize) -> bool,
    mut take: impl FnMut(usize),
) {
    for word in (0..runs).step_by(64) {
        let mut mask = 0u64;
        for r in 0..64.min(runs - word) {
            mask |= u64::from(any(word + r)) << r;
        }
        while mask != 0 {
            take(word + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
    }
}

/// The bulk read by sums, the default of [`HistogramRead::recorded_runs`] and its `_from`
/// variants: from storage index `from` to `len`, in runs that end at multiples of 16 (the
/// first starts at `from`), each passed over when `sum(start, end)` is 0 and otherwise read
/// with `count` and handed to `f`, until `f` breaks.
pub(crate) fn runs_by_sums(
    len: usize,
    from: usize,
    sum: impl Fn(usize, usize) -> u64,
    count: impl Fn(usize) -> u64,
    f: &mut dyn FnMut(usize, &[u64]) -> ControlFlow<()>,
) {
    const CHUNK: usize = 16;
    let mut counts = [0u64; CHUNK];
    let mut start = from;
    while start < len {
        let end = ((start / CHUNK + 1) * CHUNK).min(len);
        if sum(start, end) != 0 {
            let run = &mut counts[..end - start];
            for (n, s) in run.iter_mut().zip(start..end) {
                *n = count(s);
            }
            if f(start, run).is_break() {
                return;
            }
        }
        start = end;
    }
}

pub(super) fn sum_counts<H: HistogramRead + ?Sized>(h: &H) -> u64 {
    h.sum_range(0, h.window().len())
}
