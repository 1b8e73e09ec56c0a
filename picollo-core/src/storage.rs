//! Counter types and the storage a histogram keeps its buckets in.

use crate::layout::BucketPos;
use crate::window::{Window, WindowError};

/// Sealing: only `u16`, `u32` and `u64` are counters.
mod sealed {
    pub trait Sealed {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// A bucket counter: `u16`, `u32` or `u64` (sealed).
///
/// `u16` is HdrHistogram's `ShortHistogram`: a quarter of the memory of `u64`, for
/// memory-tight firmware where no bucket sees more than 65,535 values between reads.
///
/// Overflow rule, chosen once for every width: **counters saturate** at [`Counter::MAX`].
/// A `u16` or `u32` bucket that would pass its maximum stays there (wrapping would silently
/// turn a hot bucket into a nearly empty one, which corrupts every percentile).
///
/// A `u64` bucket saturates at `2^63 - 1` in bulk adds ([`Counter::add`], `record_n`, adding
/// histograms), and its single-step [`Counter::increment`] is a plain add without a check: from
/// any reachable value it would take another 2^63 increments (centuries at one per nanosecond)
/// to wrap, and the check would cost the hot path two instructions.
pub trait Counter:
    sealed::Sealed + crate::storage::CellCount + Copy + Default + Eq + core::fmt::Debug + 'static
{
    /// Zero, for building storage in `const` context.
    const ZERO: Self;
    /// The largest count a bucket holds.
    const MAX: u64;
    /// Adds one (see the trait docs for the overflow rule).
    fn increment(&mut self);
    /// Adds `n`, saturating at [`Counter::MAX`].
    fn add(&mut self, n: u64);
    /// The count as `u64`.
    fn get(self) -> u64;
}

/// `u16` and `u32`: saturate at the type's maximum.
macro_rules! narrow_counter {
    ($t:ty) => {
        impl Counter for $t {
            const ZERO: Self = 0;
            const MAX: u64 = <$t>::MAX as u64;
            /// On 64-bit targets: wrap, then saturate if it wrapped. That is
            /// `inc [cell]; je cold` on x86_64 where `saturating_add` takes load, inc, cmov,
            /// store (17 -> 15 instructions per u32 record, benches/RESULTS.md). No reader sees
            /// the transient 0 (`&mut self`). On 32-bit microcontrollers `saturating_add` is
            /// already a load, add and conditional move in place, and the cold function would
            /// add code (`firmware/size-limits.txt`), so they keep it.
            #[inline(always)]
            fn increment(&mut self) {
                #[cfg(target_pointer_width = "64")]
                {
                    /// Restores the maximum after a wrap, out of line.
                    #[cold]
                    #[inline(never)]
                    fn saturate(cell: &mut $t) {
                        *cell = <$t>::MAX;
                    }
                    let next = self.wrapping_add(1);
                    *self = next;
                    if next == 0 {
                        saturate(self);
                    }
                }
                #[cfg(not(target_pointer_width = "64"))]
                {
                    *self = self.saturating_add(1);
                }
            }
            #[inline]
            fn add(&mut self, n: u64) {
                *self = (*self as u64).saturating_add(n).min(<$t>::MAX as u64) as $t;
            }
            #[inline(always)]
            fn get(self) -> u64 {
                self as u64
            }
        }
    };
}

narrow_counter!(u16);
narrow_counter!(u32);

impl Counter for u64 {
    const ZERO: Self = 0;
    const MAX: u64 = i64::MAX as u64;
    #[inline(always)]
    fn increment(&mut self) {
        *self = self.wrapping_add(1);
    }
    #[inline]
    fn add(&mut self, n: u64) {
        *self = self.saturating_add(n).min(<Self as Counter>::MAX);
    }
    #[inline(always)]
    fn get(self) -> u64 {
        self
    }
}

/// What every cell type tells a reader: its count (relaxed for atomic cells) and the
/// largest count it holds. Implemented for the plain counters (`u16`, `u32`, `u64`), the
/// atomic ones ([`crate::AtomicU16`], [`crate::AtomicU32`], `AtomicU64`) and
/// [`ScalableCell`](crate::scalable::ScalableCell), so the storage of every kind is read with
/// one set of methods ([`Cells`]).
pub trait CellCount {
    /// The largest count the cell holds (it saturates there).
    const MAX: u64;
    /// The count (a relaxed load for atomic cells).
    fn count(&self) -> u64;
}

macro_rules! plain_cell_count {
    ($($t:ty),*) => {$(
        impl CellCount for $t {
            const MAX: u64 = <$t as Counter>::MAX;
            #[inline(always)]
            fn count(&self) -> u64 {
                *self as u64
            }
        }
    )*};
}
plain_cell_count!(u16, u32, u64);

macro_rules! atomic_cell_count {
    ($($t:ty => $max:expr),*) => {$(
        impl CellCount for $t {
            const MAX: u64 = $max;
            #[inline(always)]
            fn count(&self) -> u64 {
                self.load(crate::cell::Ordering::Relaxed) as u64
            }
        }
    )*};
}
atomic_cell_count!(crate::cell::AtomicU16 => u16::MAX as u64, crate::cell::AtomicU32 => u32::MAX as u64);
#[cfg(target_has_atomic = "64")]
atomic_cell_count!(crate::cell::AtomicU64 => i64::MAX as u64);

impl CellCount for crate::scalable::ScalableCell {
    const MAX: u64 = crate::scalable::ScalableCell::MAX;
    #[inline(always)]
    fn count(&self) -> u64 {
        self.get()
    }
}

/// What a storage says about a bucket whose cell [`Cells::cell`] did not find.
#[derive(Debug)]
pub enum Absent<C> {
    /// The bucket is outside the storage: `slot` is `logical.wrapping_sub(first)`, below the
    /// window when [`Window::slot_is_below`](crate::Window::slot_is_below) says so, above it
    /// otherwise. The kind counts it as underflow or overflow.
    Outside(usize),
    /// The storage counted the occurrences itself (a sparse storage's table of cold buckets).
    Counted,
    /// The storage made the cell now (a sparse storage's new page): the kind adds the
    /// occurrences to it.
    Cell(C),
}

/// What [`Cells::cell`] found for a bucket: its cell, or none (then [`Cells::absent`] says
/// what to do).
///
/// Not an `Option`: an `Option` of a reference is the null pointer when empty, so a record
/// branching on it tests the cell for null, and where the compiler cannot prove the cell
/// non-null (sparse storage computes it from a biased page pointer) that test stays in every
/// record after the storage's own tests (three instructions more per record in
/// `benches/RESULTS.md`, `record-instructions`). `repr(u8)` gives the enum a tag of its own,
/// a constant on each of the storage's paths, so the record's branch folds into them.
#[repr(u8)]
#[derive(Debug)]
pub enum Lookup<C> {
    /// The bucket's cell.
    Found(C),
    /// No cell for the bucket.
    Missing,
}

impl<C> From<Option<C>> for Lookup<C> {
    #[inline(always)]
    fn from(cell: Option<C>) -> Self {
        match cell {
            Some(cell) => Lookup::Found(cell),
            None => Lookup::Missing,
        }
    }
}

/// The cells of a histogram as its kind records into them and reads them: the seam between
/// the kinds and their storage.
///
/// A record computes the bucket's [`BucketPos`] (block and offset, before the layout combines
/// them), asks [`Cells::cell`] for the cell (the hot path: inlined), and when there is none asks
/// [`Cells::absent`] what to do (the cold path). Dense storage (every cell of the window
/// present: arrays, slices, `picollo-alloc`'s `HeapStorage`) gets this trait from [`Storage`]
/// with the same instructions as before the seam existed; `picollo-alloc`'s sparse storage,
/// whose memory follows what was recorded, implements it directly (pages of cells per block,
/// installed on first touch, and a small table for buckets too cold to deserve a page).
///
/// Reads address buckets by storage index (`slot`: logical index minus the window's first),
/// like [`HistogramRead`](crate::HistogramRead), which the kinds implement with these methods.
///
/// # Safety of the record methods
///
/// [`Cells::cell`], [`Cells::absent`] and their `_mut` twins take a position on trust, so that
/// sparse storage can index a page with it without a bound check: `pos` must be the position
/// of a value ([`LayoutSpec::position`](crate::LayoutSpec::position) and its variants) under a
/// layout of block scale `k`, the layout the storage was checked against
/// ([`Cells::check_window`]). The kinds guarantee it: their layout is a sealed
/// [`LayoutSpec`](crate::LayoutSpec), checked when the histogram is made.
pub trait Cells {
    /// The cell type.
    type Item: CellCount;
    /// Whether the storage serves exactly `window` under `layout` (dense: its length; sparse:
    /// the layout and window it was made for).
    fn check_window(&self, layout: crate::Layout, window: Window) -> Result<(), WindowError>;
    /// The cell of the bucket at `pos` (layout block scale `k`, window starting at logical
    /// index `first`), when the storage holds one. Inlined into every record.
    ///
    /// # Safety
    ///
    /// `pos` is a position under block scale `k`, the storage's layout (see the trait docs).
    unsafe fn cell(&self, pos: BucketPos, k: u32, first: usize) -> Lookup<&Self::Item>;
    /// What to do with `n` occurrences at `pos` when [`Cells::cell`] found no cell. May be
    /// called by many threads at once (the shared kinds).
    ///
    /// # Safety
    ///
    /// As [`Cells::cell`].
    unsafe fn absent(&self, pos: BucketPos, k: u32, first: usize, n: u64) -> Absent<&Self::Item>;
    /// The count at storage index `slot`, 0 past the end.
    fn count_at(&self, slot: usize) -> u64;
    /// The sum of the counts at storage indices `start..end` (clamped), saturating.
    fn sum_range(&self, start: usize, end: usize) -> u64;
    /// The bulk read: [`HistogramRead::recorded_runs`](crate::HistogramRead::recorded_runs).
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64]));
    /// The bulk read from storage index `from` on, ending when `f` breaks:
    /// [`HistogramRead::recorded_runs_from`](crate::HistogramRead::recorded_runs_from). The
    /// default cuts [`Cells::recorded_runs`] at `from` and hands nothing on after `f` breaks
    /// (the pass itself still goes to the end); dense storage scans its cells from `from`
    /// ([`cell_runs_until`]), and sparse storage starts at `from`'s block; both end where `f`
    /// breaks.
    fn recorded_runs_from(
        &self,
        from: usize,
        f: &mut dyn FnMut(usize, &[u64]) -> core::ops::ControlFlow<()>,
    ) {
        let mut stopped = false;
        self.recorded_runs(&mut |start, counts| {
            let skip = from.saturating_sub(start);
            if !stopped && skip < counts.len() {
                stopped = f(start + skip, &counts[skip..]).is_break();
            }
        })
    }
    /// Whether a bucket's count costs a lookup ([`Cells::count_at`] through a page table and
    /// the cold tier's tables: sparse storage), so that walks over the buckets (percentiles,
    /// statistics) go through [`Cells::recorded_runs`] instead
    /// ([`HistogramRead::reads_in_bulk`](crate::HistogramRead::reads_in_bulk)). False for
    /// dense storage, whose walks sum slices of cells.
    const READS_IN_BULK: bool = false;
    /// Calls `clear` on every cell and zeroes every count the storage keeps elsewhere, with
    /// only atomic operations (a shared kind's reset, with recorders running).
    fn clear_shared(&self, clear: impl Fn(&Self::Item));
    /// Bytes of memory the storage holds now (the cells, and for sparse storage its pages,
    /// tables and directory), not counting the value itself.
    fn held_bytes(&self) -> usize;
}

/// [`Cells`] with exclusive access, for the plain kind.
pub trait CellsMut: Cells {
    /// As [`Cells::cell`], mutably.
    ///
    /// # Safety
    ///
    /// As [`Cells::cell`].
    unsafe fn cell_mut(&mut self, pos: BucketPos, k: u32, first: usize) -> Lookup<&mut Self::Item>;
    /// As [`Cells::absent`], with exclusive access.
    ///
    /// # Safety
    ///
    /// As [`Cells::cell`].
    unsafe fn absent_mut(
        &mut self,
        pos: BucketPos,
        k: u32,
        first: usize,
        n: u64,
    ) -> Absent<&mut Self::Item>;
    /// Sets every count to zero.
    fn clear_mut(&mut self, zero: impl Fn(&mut Self::Item));
    /// Takes `n` away from the count at storage index `slot` (down to zero at most; nothing
    /// past the end): `set` stores a count into a cell. A histogram's `subtract`.
    fn take_at(&mut self, slot: usize, n: u64, set: impl Fn(&mut Self::Item, u64));
    /// Adds `counts[i]` into the count at storage index `start + i`, for every `i` (nothing
    /// past the end): `add` adds a count into a cell. A same-layout [`Histogram::add`]: dense
    /// storage adds slice into slice, with no bucket position computed; sparse storage lands
    /// each non-zero count as a record of it would (its page, or its cold tier).
    ///
    /// [`Histogram::add`]: crate::Histogram::add
    fn add_run(&mut self, start: usize, counts: &[u64], add: impl Fn(&mut Self::Item, u64));
}

impl<S> Cells for S
where
    S: Storage + ?Sized,
    S::Item: CellCount,
{
    type Item = S::Item;
    #[inline]
    fn check_window(&self, _layout: crate::Layout, window: Window) -> Result<(), WindowError> {
        window.check_storage_len(self.as_slice().len())
    }
    /// Bound-checked: safe for any `pos`.
    #[inline(always)]
    unsafe fn cell(&self, pos: BucketPos, k: u32, first: usize) -> Lookup<&S::Item> {
        self.as_slice()
            .get(pos.logical(k).wrapping_sub(first))
            .into()
    }
    #[inline(always)]
    unsafe fn absent(&self, pos: BucketPos, k: u32, first: usize, _n: u64) -> Absent<&S::Item> {
        Absent::Outside(pos.logical(k).wrapping_sub(first))
    }
    #[inline]
    fn count_at(&self, slot: usize) -> u64 {
        self.as_slice().get(slot).map_or(0, CellCount::count)
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        sum_cells(self.as_slice(), start, end)
    }
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        cell_runs(self.as_slice(), CellCount::count, f)
    }
    fn recorded_runs_from(
        &self,
        from: usize,
        f: &mut dyn FnMut(usize, &[u64]) -> core::ops::ControlFlow<()>,
    ) {
        let cells = self.as_slice().get(from..).unwrap_or(&[]);
        // 128 cells a chunk: a walk's batch of recorded buckets usually ends well inside it.
        let _ = cell_runs_until(cells, CellCount::count, 16 * CELL_RUN, &mut |s, counts| {
            f(from + s, counts)
        });
    }
    fn clear_shared(&self, clear: impl Fn(&S::Item)) {
        self.as_slice().iter().for_each(clear)
    }
    fn held_bytes(&self) -> usize {
        core::mem::size_of_val(self.as_slice())
    }
}

impl<S> CellsMut for S
where
    S: StorageMut + ?Sized,
    S::Item: CellCount,
{
    /// Bound-checked: safe for any `pos`.
    #[inline(always)]
    unsafe fn cell_mut(&mut self, pos: BucketPos, k: u32, first: usize) -> Lookup<&mut S::Item> {
        self.as_mut_slice()
            .get_mut(pos.logical(k).wrapping_sub(first))
            .into()
    }
    #[inline(always)]
    unsafe fn absent_mut(
        &mut self,
        pos: BucketPos,
        k: u32,
        first: usize,
        _n: u64,
    ) -> Absent<&mut S::Item> {
        Absent::Outside(pos.logical(k).wrapping_sub(first))
    }
    fn clear_mut(&mut self, zero: impl Fn(&mut S::Item)) {
        self.as_mut_slice().iter_mut().for_each(zero)
    }
    fn take_at(&mut self, slot: usize, n: u64, set: impl Fn(&mut S::Item, u64)) {
        if let Some(cell) = self.as_mut_slice().get_mut(slot) {
            let left = cell.count().saturating_sub(n);
            set(cell, left);
        }
    }
    /// Branch-free: adding a zero count leaves a cell as it was, and a test per count would
    /// mispredict on data-dependent zeros.
    #[inline]
    fn add_run(&mut self, start: usize, counts: &[u64], add: impl Fn(&mut S::Item, u64)) {
        let cells = self.as_mut_slice().get_mut(start..).unwrap_or(&mut []);
        for (cell, &n) in cells.iter_mut().zip(counts) {
            add(cell, n);
        }
    }
}

/// The sum of the counts of `cells[start..end]` (the range clamped), saturating at
/// `u64::MAX`: the low and high 32-bit halves apart, so that neither can overflow below
/// 2^32 cells and the branch-free loop vectorizes for plain counters.
#[inline]
pub fn sum_cells<T: CellCount>(cells: &[T], start: usize, end: usize) -> u64 {
    let end = end.min(cells.len());
    let (mut low, mut high) = (0u64, 0u64);
    for c in &cells[start.min(end)..end] {
        let v = c.count();
        low += v & 0xFFFF_FFFF;
        high += v >> 32;
    }
    let sum = ((high as u128) << 32) + low as u128;
    sum.min(u64::MAX as u128) as u64
}

/// Read access to a contiguous run of bucket cells.
///
/// Implemented for owned arrays, borrowed slices and (in `picollo-alloc`) heap buffers, so one
/// histogram implementation serves firmware statics and servers alike.
pub trait Storage {
    /// The cell type: a [`Counter`], or an atomic counter for shared kinds.
    type Item;
    /// The cells.
    fn as_slice(&self) -> &[Self::Item];
}

/// Write access to the cells of a [`Storage`].
pub trait StorageMut: Storage {
    /// The cells, mutably.
    fn as_mut_slice(&mut self) -> &mut [Self::Item];
}

impl<T, const N: usize> Storage for [T; N] {
    type Item = T;
    #[inline(always)]
    fn as_slice(&self) -> &[T] {
        self
    }
}

impl<T, const N: usize> StorageMut for [T; N] {
    #[inline(always)]
    fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}

impl<T> Storage for &mut [T] {
    type Item = T;
    #[inline(always)]
    fn as_slice(&self) -> &[T] {
        self
    }
}

impl<T> StorageMut for &mut [T] {
    #[inline(always)]
    fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}

impl<T> Storage for &[T] {
    type Item = T;
    #[inline(always)]
    fn as_slice(&self) -> &[T] {
        self
    }
}

/// Cells per run of [`cell_runs`]: a run of empty cells is skipped with one test.
pub const CELL_RUN: usize = 8;

/// Bit `i` set for each non-zero `run[i]`, computed without a branch per count (whether a count
/// is zero depends on the data: a branch on it would mispredict about once per count). The
/// test of the bulk readers' branch-free steps.
///
/// ```
/// assert_eq!(picollo_core::storage::nonzero_mask(&[0, 5, 0, 0, 2, 0, 0, 1]), 0b1001_0010);
/// ```
#[inline(always)]
pub fn nonzero_mask(run: &[u64; CELL_RUN]) -> u32 {
    run.iter()
        .enumerate()
        .fold(0, |mask, (i, &n)| mask | u32::from(n != 0) << i)
}

/// How many blocks (of 64 runs) ahead [`cell_runs`] asks for cache lines: two measured best
/// on a scrape of full-range histograms (`benches/RESULTS.md`, block `export-encode`).
pub(crate) const PREFETCH_BLOCKS: usize = 2;

/// Asks the CPU to load the cache lines of `cells` (a hint: nothing is read, nothing can
/// fault). A no-op off x86-64 and under Miri.
#[inline(always)]
fn prefetch_lines<T>(cells: &[T]) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let line = (64 / core::mem::size_of::<T>().max(1)).max(1);
        let start = cells.as_ptr();
        for at in (0..cells.len()).step_by(line) {
            // SAFETY: `prefetcht0` (SSE, part of the x86-64 baseline) only hints the cache:
            // it reads nothing into the program and never faults; `at < cells.len()`, so the
            // address is inside the slice anyway.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(at).cast::<i8>(),
                )
            };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = cells;
}

/// The [`HistogramRead::recorded_runs`](crate::HistogramRead::recorded_runs) of a kind whose
/// cells are a slice, `get` reading one cell: runs of [`CELL_RUN`] cells, each tested with
/// one OR of its cells (they unroll and vectorize for integers), the non-empty ones copied
/// out and passed to `f`.
///
/// Blocks of 64 runs: first the test of each run into a mask, without a branch (whether a
/// run is empty depends on the data: a branch on it would mispredict about once per recorded
/// bucket of a sparse histogram) and without bounds checks (exact chunks), then the mask's
/// runs, found with trailing-zero counts (their cells, just read, are still in cache). A
/// sparse full-range histogram costs about two instructions per cell. On x86-64 each block
/// first asks for the cache lines of the block `PREFETCH_BLOCKS` ahead: a block of `u64`
/// cells is a 4 KB page, where the hardware's own prefetch stops, and what `f` does with a
/// run would otherwise wait for memory at every page.
///
/// ```
/// let cells = [0u32, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2];
/// let mut runs = Vec::new();
/// picollo_core::storage::cell_runs(&cells, |&c| c.into(), &mut |start, counts| {
///     runs.push((start, counts.to_vec()))
/// });
/// assert_eq!(runs, [(8, vec![0, 5, 0, 0, 0, 0, 0, 0]), (16, vec![0, 2])]);
/// ```
#[inline(always)]
pub fn cell_runs<T>(cells: &[T], get: impl Fn(&T) -> u64, f: &mut dyn FnMut(usize, &[u64])) {
    let mut counts = [0u64; CELL_RUN];
    nonempty_runs(cells, &get, |start, run| {
        for (n, c) in counts.iter_mut().zip(run) {
            *n = get(c);
        }
        f(start, counts.get(..run.len()).unwrap_or(&counts));
    });
}

/// [`cell_runs`] for cells that are plain `u64` counts (a snapshot's, HdrHistogram's counts
/// array): nothing is copied, and neighbouring non-empty runs go to `f` as one slice, so a
/// dense histogram is one call, not one per [`CELL_RUN`] cells. A reader that adds the runs
/// somewhere (a same-layout [`Histogram::add`](crate::Histogram::add)) then works on long
/// slices.
///
/// ```
/// let counts = [0u64, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
/// let mut runs = Vec::new();
/// picollo_core::storage::count_runs(&counts, &mut |start, counts| {
///     runs.push((start, counts.to_vec()))
/// });
/// assert_eq!(runs, [(8, vec![0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0])]);
/// ```
#[inline(always)]
pub fn count_runs(counts: &[u64], f: &mut dyn FnMut(usize, &[u64])) {
    let mut pending = 0..0;
    nonempty_runs(
        counts,
        |&n| n,
        |start, run| {
            if start != pending.end {
                if !pending.is_empty() {
                    f(pending.start, counts.get(pending.clone()).unwrap_or(&[]));
                }
                pending.start = start;
            }
            pending.end = start + run.len();
        },
    );
    if !pending.is_empty() {
        f(pending.start, counts.get(pending.clone()).unwrap_or(&[]));
    }
}

/// The scan of [`cell_runs`] and [`count_runs`]: calls `at(start, run)` for each run of
/// [`CELL_RUN`] cells (the last one shorter) with a non-zero count, in order.
#[inline(always)]
fn nonempty_runs<T>(cells: &[T], get: impl Fn(&T) -> u64, mut at: impl FnMut(usize, &[T])) {
    const BLOCK: usize = 64 * CELL_RUN;
    let or = |run: &[T]| run.iter().fold(0, |a, c| a | get(c));
    let blocks = cells.chunks_exact(BLOCK);
    let rest = blocks.remainder();
    for (b, block) in blocks.enumerate() {
        if let Some(ahead) = cells.get((b + PREFETCH_BLOCKS) * BLOCK..) {
            prefetch_lines(ahead.get(..BLOCK).unwrap_or(ahead));
        }
        let mut mask = 0u64;
        for (r, run) in block.chunks_exact(CELL_RUN).enumerate() {
            mask |= u64::from(or(run) != 0) << r;
        }
        while mask != 0 {
            let r = mask.trailing_zeros() as usize;
            if let Some(run) = block.get(r * CELL_RUN..(r + 1) * CELL_RUN) {
                at(b * BLOCK + r * CELL_RUN, run);
            }
            mask &= mask - 1;
        }
    }
    let base = cells.len() - rest.len();
    for (r, run) in rest.chunks(CELL_RUN).enumerate() {
        if or(run) != 0 {
            at(base + r * CELL_RUN, run);
        }
    }
}

/// [`cell_runs`] until `f` breaks: the cells `chunk` at a time (at least one), with a check
/// for a break between chunks, so a break wastes at most one chunk's scan. Walks that stop
/// read with it ([`Cells::recorded_runs_from`]).
///
/// ```
/// use core::ops::ControlFlow;
/// let cells = [0u32, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2];
/// let mut runs = Vec::new();
/// let ended = picollo_core::storage::cell_runs_until(&cells, |&c| c.into(), 8, &mut |start, counts| {
///     runs.push((start, counts.to_vec()));
///     ControlFlow::Break(())
/// });
/// assert_eq!((ended, runs), (ControlFlow::Break(()), vec![(8, vec![0, 5, 0, 0, 0, 0, 0, 0])]));
/// ```
#[inline(always)]
pub fn cell_runs_until<T>(
    cells: &[T],
    get: impl Fn(&T) -> u64 + Copy,
    chunk: usize,
    f: &mut dyn FnMut(usize, &[u64]) -> core::ops::ControlFlow<()>,
) -> core::ops::ControlFlow<()> {
    let chunk = chunk.max(1);
    for (c, part) in cells.chunks(chunk).enumerate() {
        let start = c * chunk;
        let mut stopped = false;
        cell_runs(part, get, &mut |s, counts| {
            if !stopped {
                stopped = f(start + s, counts).is_break();
            }
        });
        if stopped {
            return core::ops::ControlFlow::Break(());
        }
    }
    core::ops::ControlFlow::Continue(())
}
