//! What the three core kinds ([`Histogram`](crate::Histogram),
//! [`AtomicHistogram`](crate::AtomicHistogram), [`ApproxHistogram`](crate::ApproxHistogram))
//! share, as HdrHistogram Java's `AbstractHistogram` holds what its subclasses share: the
//! layout spec, the window, the counts outside the window with the read bracket
//! ([`Tallies`]), and the storage, read through one [`HistogramRead`] impl ([`Base`]'s). A
//! kind adds only what differs: the cell type its `record` writes and how it resets.
//!
//! Each kind's `HistogramRead` forwards to its base (`forward_histogram_read!(|h| h.base)`),
//! so a read method added to the trait is written here once, not three times.

use crate::layout::{Layout, LayoutSpec};
use crate::read::HistogramRead;
use crate::storage::Cells;
use crate::window::{Window, WindowSpec};

/// A kind's state but its configuration: `spec` says the layout, `window` which logical
/// buckets `storage` holds, `tallies` what fell outside them and how reads are bracketed.
#[derive(Clone)]
pub(crate) struct Base<S, L, W, T> {
    pub(crate) spec: L,
    pub(crate) window: W,
    pub(crate) tallies: T,
    pub(crate) storage: S,
}

/// The counts beside the cells, and the bracket a read takes against resets: the plain kind's
/// [`PlainTallies`] (no concurrent reset, so no bracket) and the shared kinds' seqlock state.
pub(crate) trait Tallies {
    /// Values recorded below the window.
    fn underflow(&self) -> u64;
    /// Values recorded above the window.
    fn overflow(&self) -> u64;
    /// Resets so far.
    fn reset_count(&self) -> u64;
    /// [`HistogramRead::read_begin`].
    fn read_begin(&self) -> u64;
    /// [`HistogramRead::try_read_begin`].
    fn try_read_begin(&self) -> Option<u64>;
    /// [`HistogramRead::read_retry`].
    fn read_retry(&self, token: u64) -> bool;
}

/// The plain kind's tallies: written through `&mut` by its single writer, so a read through
/// `&self` sees them still and never needs a bracket.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PlainTallies {
    pub(crate) underflow: u64,
    pub(crate) overflow: u64,
    pub(crate) resets: u64,
}

impl PlainTallies {
    /// No value outside the window, no reset.
    pub(crate) const ZERO: PlainTallies = PlainTallies {
        underflow: 0,
        overflow: 0,
        resets: 0,
    };
}

impl Tallies for PlainTallies {
    #[inline]
    fn underflow(&self) -> u64 {
        self.underflow
    }
    #[inline]
    fn overflow(&self) -> u64 {
        self.overflow
    }
    #[inline]
    fn reset_count(&self) -> u64 {
        self.resets
    }
    #[inline]
    fn read_begin(&self) -> u64 {
        0
    }
    #[inline]
    fn try_read_begin(&self) -> Option<u64> {
        Some(0)
    }
    #[inline]
    fn read_retry(&self, _token: u64) -> bool {
        false
    }
}

impl<S, L: LayoutSpec, W: WindowSpec, T> Base<S, L, W, T> {
    /// The window of logical buckets `storage` holds.
    #[inline(always)]
    pub(crate) fn window(&self) -> Window {
        self.window.window(self.spec.layout())
    }

    /// What the storage's lookups take besides a position, for every kind's record path: the
    /// layout's block scale, and where storage cell 0 sits among the positions' indices
    /// ([`BucketPos::logical`](crate::BucketPos::logical)): the window's first logical index,
    /// less the layout's [`LayoutSpec::first_index`] (a constant 0 for the specs without a
    /// unit).
    #[inline(always)]
    pub(crate) fn cell_origin(&self) -> (u32, usize) {
        let first = self.window().first() - self.spec.first_index();
        (self.spec.layout().block_scale(), first)
    }
}

impl<S: Cells, L, W, T> Base<S, L, W, T> {
    /// Bytes of memory a kind of `outer` bytes holds: itself plus what its storage holds
    /// ([`Cells::held_bytes`]: the cells; for sparse storage its directory, pages and tables).
    #[inline]
    pub(crate) fn footprint(&self, outer: usize) -> usize {
        outer + self.storage.held_bytes()
    }
}

impl<S, L, W, T> HistogramRead for Base<S, L, W, T>
where
    S: Cells,
    L: LayoutSpec,
    W: WindowSpec,
    T: Tallies,
{
    #[inline]
    fn layout(&self) -> Layout {
        self.spec.layout()
    }
    #[inline]
    fn window(&self) -> Window {
        Base::window(self)
    }
    #[inline]
    fn count_at(&self, storage_index: usize) -> u64 {
        self.storage.count_at(storage_index)
    }
    /// The storage's sum ([`crate::storage::sum_cells`] for dense storage: a loop the
    /// compiler vectorizes).
    #[inline]
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        self.storage.sum_range(start, end)
    }
    /// The storage's bulk read ([`crate::storage::cell_runs`] for dense storage; relaxed loads
    /// for atomic cells).
    #[inline]
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        self.storage.recorded_runs(f)
    }
    /// The storage's bulk read from `from` ([`Cells::recorded_runs_from`]).
    #[inline]
    fn recorded_runs_from(
        &self,
        from: usize,
        f: &mut dyn FnMut(usize, &[u64]) -> core::ops::ControlFlow<()>,
    ) {
        self.storage.recorded_runs_from(from, f)
    }
    #[inline]
    fn reads_in_bulk(&self) -> bool {
        S::READS_IN_BULK
    }
    #[inline]
    fn underflow(&self) -> u64 {
        self.tallies.underflow()
    }
    #[inline]
    fn overflow(&self) -> u64 {
        self.tallies.overflow()
    }
    #[inline]
    fn read_begin(&self) -> u64 {
        self.tallies.read_begin()
    }
    #[inline]
    fn try_read_begin(&self) -> Option<u64> {
        self.tallies.try_read_begin()
    }
    #[inline]
    fn read_retry(&self, token: u64) -> bool {
        self.tallies.read_retry(token)
    }
    #[inline]
    fn reset_count(&self) -> u64 {
        self.tallies.reset_count()
    }
}
