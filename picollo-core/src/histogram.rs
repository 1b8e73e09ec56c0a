//! The plain (single-writer) histogram over any storage.

use crate::kind::{Base, PlainTallies};
use crate::layout::{BucketPos, ConstLayout, LayoutSpec};
use crate::read::HistogramRead;
use crate::storage::{sum_cells, Absent, Cells, CellsMut, Counter, Lookup};
use crate::window::{ConstWindow, Window, WindowError, WindowSpec};
use crate::{storage_len, Layout, Record};

mod subtract;
pub use subtract::{check_subtract, for_each_landing, Landing, SubtractError};

/// A single-writer HDR histogram over storage `S` (an owned array, a borrowed slice, or heap
/// storage from `picollo-alloc`) with layout `L` (a runtime [`Layout`] or a compile-time
/// [`ConstLayout`]).
///
/// Recording is index math, a window subtract, a bounds check and one increment: no running
/// total, min or max is kept; those are derived on read through [`HistogramRead`] and
/// [`crate::ReadExt`].
///
/// # Concurrency: the reset "old+1" race
///
/// Picollo for .NET describes a race where a writer's `load, add, store` straddles a concurrent
/// `reset`, leaving one bucket at `old + 1` among zeros. In Rust that race cannot be written
/// with this type: `record` and `reset` both take `&mut self`, so the borrow checker forbids a
/// concurrent writer and resetter. To share a histogram between threads use the atomic kind
/// ([`crate::AtomicHistogram`]), whose reset is sequenced by a version counter, or the
/// thread-local kind of `picollo-alloc`. Wrapping a plain histogram in a mutex also works, at
/// the cost of the lock.
///
/// ```
/// use picollo_core::prelude::*;
///
/// const LAYOUT: Layout = Layout::DEFAULT;
/// const LEN: usize = picollo_core::storage_len(LAYOUT, 1, 1_000_000);
/// let mut h = Histogram::<[u32; LEN]>::new(LAYOUT, 1, 1_000_000);
/// for v in 1..=1000u64 {
///     h.record(v);
/// }
/// h.record(0); // below the window: underflow
/// h.record(5_000_000); // above: overflow
/// assert_eq!((h.total(), h.underflow(), h.overflow()), (1000, 1, 1));
/// assert_eq!(h.percentile(50.0, EquivalentValue::Midpoint).unwrap().value, 500);
/// ```
///
/// # In firmware: all zeros at rest
///
/// With the layout and the window carried by the type ([`ConstLayout`] and [`ConstWindow`]),
/// the header is all zeros, so a `static` lands in `.bss` and adds nothing to the flash image;
/// a storage length that does not match is a compile-time error, even inside a function. See
/// [`Histogram::empty`].
///
/// On 32-bit cores, [`Histogram::record_u32`] records in 32-bit arithmetic only, and
/// [`Histogram::record`] takes that path for every value below 2^32.
#[derive(Clone)]
pub struct Histogram<S, L = Layout, W = Window> {
    base: Base<S, L, W, PlainTallies>,
}

/// How an [`Histogram::add`] mapped the source buckets.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rebucketing {
    /// Same layout, or a target that is coarser (no more buckets per block, a value unit at
    /// least as wide): every source bucket lies inside one target bucket, so the result equals
    /// recording the original values directly.
    Exact,
    /// The target is finer than the source. Each source bucket's count went into the target
    /// bucket holding the source bucket's lowest value, so a value may now sit up to one source
    /// bucket width below its true place. Relative to the true value, the target's midpoint is
    /// off by at most `error_bound` = target error + 2 × source error (for values of at least
    /// `B · 2^u` on both sides, where a unit's coarse first buckets end).
    Approximate {
        /// The bound on the relative error of any value after the add.
        error_bound: f64,
    },
}

impl<C: Counter, const N: usize> Histogram<[C; N], Layout> {
    /// A histogram owning a `[C; N]`, usable in a `static`.
    ///
    /// # Panics
    ///
    /// If `N` is not [`crate::storage_len`]`(layout, min, max)` or `min > max`. In a `static`
    /// or `const` this is a compile-time error; at run time, [`Histogram::with_storage`] reports
    /// them as errors.
    ///
    /// ```
    /// use picollo_core::{storage_len, Histogram, HistogramRead, Layout};
    /// const L: Layout = Layout::DEFAULT;
    /// static H: Histogram<[u64; storage_len(L, 0, 10_000)]> = Histogram::new(L, 0, 10_000);
    /// assert_eq!(H.window().first(), 0);
    /// ```
    pub const fn new(layout: Layout, min: u64, max: u64) -> Self {
        match Self::try_new(layout, min, max) {
            Ok(h) => h,
            Err(WindowError::MinAboveMax { .. }) => panic!("min trackable value above max"),
            Err(WindowError::NeedsUnitLayout(_)) => {
                panic!("a layout with a value unit records through UnitLayout (with_storage)")
            }
            Err(_) => panic!("array length differs from storage_len(layout, min, max)"),
        }
    }

    /// As [`Histogram::new`], reporting a bad length or range (or a layout with a value unit,
    /// which records through [`crate::UnitLayout`]) as an error: `new`'s checks, for `const`
    /// context (at run time `with_storage` is the fallible constructor).
    const fn try_new(layout: Layout, min: u64, max: u64) -> Result<Self, WindowError> {
        if layout.unit_magnitude() != 0 {
            return Err(WindowError::NeedsUnitLayout(layout.unit_magnitude()));
        }
        match Window::new(layout, min, max) {
            Ok(window) if window.len() == N => Ok(Histogram {
                base: Base {
                    spec: layout,
                    window,
                    tallies: PlainTallies::ZERO,
                    storage: [C::ZERO; N],
                },
            }),
            Ok(window) => Err(WindowError::StorageLength {
                expected: window.len(),
                actual: N,
            }),
            Err(e) => Err(e),
        }
    }
}

impl<C: Counter, const N: usize, const K: u32, const MIN: u64, const MAX: u64>
    Histogram<[C; N], ConstLayout<K>, ConstWindow<MIN, MAX>>
{
    /// An empty histogram whose layout and window are carried by its type: every byte of it
    /// is zero, so a `static` lands in `.bss` (no flash for its storage). `N` must be
    /// `storage_len(ConstLayout::<K>::LAYOUT, MIN, MAX)`: any other length, or `MIN > MAX`,
    /// fails to compile, in a `static` and inside a function alike.
    ///
    /// ```
    /// use picollo_core::{storage_len, ConstLayout, ConstWindow, Histogram, HistogramRead, ReadExt};
    ///
    /// const L: picollo_core::Layout = ConstLayout::<9>::LAYOUT;
    /// type Latency = Histogram<
    ///     [u32; storage_len(L, 1, 1_000_000)],
    ///     ConstLayout<9>,
    ///     ConstWindow<1, 1_000_000>,
    /// >;
    /// let mut h = Latency::empty();
    /// h.record_u32(1500);
    /// h.record(2_000_000); // overflow
    /// assert_eq!((h.total(), h.overflow()), (1, 1));
    /// ```
    ///
    /// ```compile_fail,E0080
    /// use picollo_core::{ConstLayout, ConstWindow, Histogram};
    /// // 100 cells, but the window needs more: a compile-time error.
    /// let h = Histogram::<[u32; 100], ConstLayout<9>, ConstWindow<1, 1_000_000>>::empty();
    /// ```
    pub const fn empty() -> Self {
        const {
            assert!(
                N == storage_len(ConstLayout::<K>::LAYOUT, MIN, MAX),
                "array length differs from storage_len(ConstLayout::<K>::LAYOUT, MIN, MAX)"
            )
        };
        Histogram {
            base: Base {
                spec: ConstLayout::<K>::new(),
                window: ConstWindow::<MIN, MAX>::new(),
                tallies: PlainTallies::ZERO,
                storage: [C::ZERO; N],
            },
        }
    }
}

impl<S, L> Histogram<S, L, Window>
where
    S: Cells,
    L: LayoutSpec,
{
    /// A histogram over storage that already holds counts, by storage cell of `window`: they
    /// are kept, not zeroed (nothing outside the window, no reset). What takes counts kept
    /// elsewhere in the same index space without copying them: a borrowed slice gives a
    /// read-only histogram (`Histogram<&[u64]>`), owned storage a recording one.
    /// `picollo-hdrhistogram` hands its counts over this way. The same checks as
    /// [`Histogram::with_storage`].
    ///
    /// ```
    /// use picollo_core::{Histogram, Layout, ReadExt, Window};
    /// let window = Window::new(Layout::DEFAULT, 0, 1_000).unwrap();
    /// let mut counts = vec![0u64; window.len()];
    /// counts[Layout::DEFAULT.index_of(700)] = 3;
    /// let h = Histogram::with_counts(Layout::DEFAULT, &counts[..], window).unwrap();
    /// assert_eq!((h.total(), h.max()), (3, Some(700)));
    /// ```
    pub fn with_counts(spec: L, storage: S, window: Window) -> Result<Self, WindowError> {
        storage.check_window(spec.layout(), window)?;
        if !crate::layout::records_its_layout(&spec) {
            return Err(WindowError::NeedsUnitLayout(spec.layout().unit_magnitude()));
        }
        Ok(Histogram {
            base: Base {
                spec,
                window,
                tallies: PlainTallies::ZERO,
                storage,
            },
        })
    }
}

impl<S, L> Histogram<S, L, Window>
where
    S: CellsMut,
    S::Item: Counter,
    L: LayoutSpec,
{
    /// A histogram over caller-provided storage for `window`: a borrowed buffer (firmware), heap
    /// storage (dense, or `picollo-alloc`'s sparse storage), or an owned array with any
    /// [`LayoutSpec`]. The storage is zeroed; a length other than `window.len()` (for sparse
    /// storage: a window other than the one it was made for) is an error, and so is a plain
    /// [`Layout`] spec with a value unit ([`crate::UnitLayout`] records one).
    ///
    /// ```
    /// use picollo_core::{storage_len, Histogram, Layout, ReadExt, Window};
    /// let mut buffer = [0u64; storage_len(Layout::DEFAULT, 100, 10_000)];
    /// let window = Window::new(Layout::DEFAULT, 100, 10_000).unwrap();
    /// let mut h = Histogram::with_storage(Layout::DEFAULT, &mut buffer[..], window).unwrap();
    /// h.record(150);
    /// assert_eq!(h.total(), 1);
    /// ```
    pub fn with_storage(spec: L, storage: S, window: Window) -> Result<Self, WindowError> {
        let mut h = Self::with_counts(spec, storage, window)?;
        h.clear();
        Ok(h)
    }
}

impl<S, L, W> Histogram<S, L, W>
where
    S: CellsMut,
    S::Item: Counter,
    L: LayoutSpec,
    W: WindowSpec,
{
    /// Records one `value`. Values outside the window are counted as underflow or overflow.
    ///
    /// On 32-bit targets a value below 2^32 takes [`Histogram::record_u32`]'s 32-bit path, and
    /// larger values a separate (cold) 64-bit path.
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        self.record_at(self.base.spec.position_native(value));
    }

    /// Records one `u32` value with 32-bit arithmetic only: on 32-bit cores no 64-bit shift
    /// and no compiler helper call (Cortex-M0 included).
    #[inline(always)]
    pub fn record_u32(&mut self, value: u32) {
        self.record_at(self.base.spec.position_u32(value));
    }

    #[inline(always)]
    fn record_at(&mut self, pos: BucketPos) {
        let (k, first) = self.base.cell_origin();
        // SAFETY: `pos` comes from this histogram's sealed layout spec (or its layout), which
        // the storage was checked against when the histogram was made (`Cells::check_window`).
        match unsafe { self.base.storage.cell_mut(pos, k, first) } {
            Lookup::Found(cell) => cell.increment(),
            // Inline rather than a call: a call in the loop would stop the compiler from
            // keeping the storage pointer and window in registers across records. (Dense
            // storage answers `Outside` inline; sparse storage calls its cold path here.)
            // SAFETY: as above.
            Lookup::Missing => match unsafe { self.base.storage.absent_mut(pos, k, first, 1) } {
                // One at a time, a u64 capped at 2^63 - 1 cannot wrap (see `Counter`).
                Absent::Outside(slot) => {
                    let outside = self.outside_counter(slot);
                    *outside = outside.wrapping_add(1);
                }
                Absent::Cell(cell) => cell.add(1),
                Absent::Counted => {}
            },
        }
    }

    /// Records `count` occurrences of `value` (saturating).
    #[inline]
    pub fn record_n(&mut self, value: u64, count: u64) {
        self.record_n_at(self.base.spec.position_native(value), count)
    }

    #[inline]
    fn record_n_at(&mut self, pos: BucketPos, count: u64) {
        let (k, first) = self.base.cell_origin();
        // SAFETY: `pos` comes from this histogram's layout, which the storage was checked
        // against when the histogram was made (`Cells::check_window`).
        match unsafe { self.base.storage.cell_mut(pos, k, first) } {
            Lookup::Found(cell) => cell.add(count),
            Lookup::Missing => {
                // SAFETY: as above.
                match unsafe { self.base.storage.absent_mut(pos, k, first, count) } {
                    Absent::Outside(slot) => self.outside_counter(slot).add(count),
                    Absent::Cell(cell) => cell.add(count),
                    Absent::Counted => {}
                }
            }
        }
    }

    /// The underflow or overflow counter for a slot outside the window
    /// ([`Window::slot_is_below`]).
    #[inline(always)]
    fn outside_counter(&mut self, slot: usize) -> &mut u64 {
        if Window::slot_is_below(slot) {
            &mut self.base.tallies.underflow
        } else {
            &mut self.base.tallies.overflow
        }
    }

    /// Clears every bucket and the underflow and overflow counts, and counts the reset (Picollo
    /// for .NET's `ResetCount`, see [`HistogramRead::reset_count`]).
    pub fn reset(&mut self) {
        self.clear();
        self.base.tallies.resets = self.base.tallies.resets.wrapping_add(1);
    }

    /// Zeroes the counts without counting a reset.
    fn clear(&mut self) {
        self.base.storage.clear_mut(|cell| *cell = Counter::ZERO);
        self.base.tallies.underflow = 0;
        self.base.tallies.overflow = 0;
    }

    /// Adds every count of `other` (any histogram kind, any layout or window) into `self`.
    ///
    /// The re-bucketing rule: a source bucket goes into the target bucket that holds the source
    /// bucket's lowest value; counts falling outside the target window go to its underflow or
    /// overflow, and the source's own underflow and overflow add to the target's. The returned
    /// [`Rebucketing`] states whether this is exact and, if not, its error bound. Counts
    /// saturate (see [`Counter`]).
    ///
    /// Reading a histogram that other threads are resetting is not retried here; add from a
    /// snapshot for a consistent result.
    pub fn add<R: HistogramRead + ?Sized>(&mut self, other: &R) -> Rebucketing {
        let target = self.base.spec.layout();
        let window = self.base.window.window(target);
        if other.layout() == target {
            self.add_alike(other, window);
            return Rebucketing::Exact;
        }
        for_each_landing(other, target, window, |landing, n| match landing {
            Landing::Slot(slot) => self.record_n_at(self.slot_position(slot), n),
            Landing::Underflow => self.base.tallies.underflow.add(n),
            Landing::Overflow => self.base.tallies.overflow.add(n),
        });
        rebucketing(other.layout(), target)
    }

    /// [`Histogram::add`] from a source of the same layout: a logical index is the same
    /// bucket on both sides, so each run of the source's bulk read is added into the cells
    /// slice into slice ([`CellsMut::add_run`]), with no landing worked out per bucket; the
    /// parts outside `window` (this histogram's) go to its underflow and overflow.
    fn add_alike<R: HistogramRead + ?Sized>(&mut self, other: &R, window: Window) {
        let source_first = other.window().first();
        let (first, last) = (window.first(), window.last());
        let (mut below, mut above) = (other.underflow(), other.overflow());
        let storage = &mut self.base.storage;
        other.recorded_runs(&mut |start, counts| {
            let logical = source_first + start;
            // counts[..inside.start] lie below the window, counts[inside.end..] above it.
            let inside_start = first.saturating_sub(logical).min(counts.len());
            let inside_end = last
                .saturating_add(1)
                .saturating_sub(logical)
                .clamp(inside_start, counts.len());
            let (rest, high) = counts.split_at(inside_end);
            let (low, inside) = rest.split_at(inside_start);
            below = below.saturating_add(sum_cells(low, 0, low.len()));
            above = above.saturating_add(sum_cells(high, 0, high.len()));
            if !inside.is_empty() {
                storage.add_run(logical + inside_start - first, inside, |cell, n| {
                    cell.add(n)
                });
            }
        });
        self.base.tallies.underflow.add(below);
        self.base.tallies.overflow.add(above);
    }
}

/// The [`Rebucketing`] that adding a `source`-layout histogram into a `target` layout gives.
pub fn rebucketing(source: Layout, target: Layout) -> Rebucketing {
    // Exact when every source bucket lies inside one target bucket: the target has no more
    // buckets per block and a unit at least as wide.
    if target.block_scale() <= source.block_scale()
        && target.unit_magnitude() >= source.unit_magnitude()
    {
        Rebucketing::Exact
    } else {
        Rebucketing::Approximate {
            error_bound: target.relative_error() + 2.0 * source.relative_error(),
        }
    }
}

/// Coordinated-omission correction for any kind: the body of [`Record::record_corrected`].
///
/// Records `value`, then the synthetic values `value - k·interval` (`k >= 1`, all at or
/// above `interval`) bucket by bucket: each bucket of the window gets its share with one
/// `record_n`, the values below and above the window one `record_n` each. So the cost is
/// bounded by the window length, not by `value / interval`.
pub(crate) fn record_corrected<R>(recorder: &mut R, value: u64, interval: u64)
where
    R: Record + HistogramRead + ?Sized,
{
    record_corrected_n(recorder, value, 1, interval)
}

/// [`record_corrected`] for `count` occurrences of `value`: each value of the progression is
/// recorded `count` times (counts saturating).
fn record_corrected_n<R>(recorder: &mut R, value: u64, count: u64, interval: u64)
where
    R: Record + HistogramRead + ?Sized,
{
    if count == 1 {
        recorder.record(value);
    } else {
        recorder.record_n(value, count);
    }
    if interval == 0 || value / interval < 2 {
        return;
    }
    // Synthetic values m_k = value - k·interval for k in 1..=steps, all >= interval.
    let steps = value / interval - 1;
    let smallest = value - steps * interval;
    let largest = value - interval;
    let layout = recorder.layout();
    let window = recorder.window();
    let win_lo = window.min_value(layout);
    let win_hi = window.max_value(layout);
    if smallest < win_lo {
        // `win_lo > 0` here, so `win_lo - 1` is below the window: underflow.
        let n = progression_count(value, interval, steps, smallest, (win_lo - 1).min(largest));
        recorder.record_n(win_lo - 1, n.saturating_mul(count));
    }
    if largest > win_hi {
        // `win_hi < u64::MAX` here, so `win_hi + 1` is above the window: overflow.
        let n = progression_count(value, interval, steps, smallest.max(win_hi + 1), largest);
        recorder.record_n(win_hi + 1, n.saturating_mul(count));
    }
    if smallest.max(win_lo) > largest.min(win_hi) {
        return;
    }
    let first = layout.index_of(smallest.max(win_lo));
    let last = layout.index_of(largest.min(win_hi));
    for logical in first..=last {
        let lo = layout.lo(logical);
        let n = progression_count(value, interval, steps, lo, layout.highest(logical));
        if n != 0 {
            // A bucket's lowest value records into that bucket.
            recorder.record_n(lo, n.saturating_mul(count));
        }
    }
}

/// Coordinated-omission correction after recording (HdrHistogram's
/// `addWhileCorrectingForCoordinatedOmission`, and with an empty `target` its
/// `copyCorrectedForCoordinatedOmission`): adds every recorded bucket of `source` to `target`
/// as `count` values of the bucket's highest value (Java's `getValueIteratedTo`), each with
/// the synthetic values [`Record::record_corrected`] adds for it. For every kind: `target` is
/// anything that records (`&mut Histogram`, `&AtomicHistogram`, `&ThreadLocalHistogram`, ...).
/// `source`'s underflow and overflow are recorded uncorrected (their values are unknown), just
/// below and just above its window: `target`'s underflow and overflow when both share a window.
///
/// The counterpart of correcting while recording; use one or the other on a data set, not
/// both. As in HdrHistogram, the two give slightly different counts: this one starts each
/// progression from the bucket's highest value, not the value recorded.
///
/// ```
/// use picollo_core::histogram::add_corrected;
/// use picollo_core::prelude::*;
///
/// const L: Layout = Layout::DEFAULT;
/// let mut raw = Histogram::<[u32; storage_len(L, 0, 100_000)]>::new(L, 0, 100_000);
/// raw.record_n(1_000, 100);
/// raw.record(10_000); // a stall of ten expected intervals
/// let mut corrected = Histogram::<[u32; storage_len(L, 0, 100_000)]>::new(L, 0, 100_000);
/// add_corrected(&mut corrected, &raw, 1_000);
/// assert_eq!(corrected.total(), 101 + 9); // 9,000, 8,000, ..., 1,000 added
/// ```
pub fn add_corrected<T, S>(target: &mut T, source: &S, expected_interval: u64)
where
    T: Record + HistogramRead + ?Sized,
    S: HistogramRead + ?Sized,
{
    let (layout, window) = (source.layout(), source.window());
    source.recorded_runs(&mut |start, counts| {
        for (i, &n) in counts.iter().enumerate() {
            if n != 0 {
                let value = layout.highest(window.first() + start + i);
                record_corrected_n(target, value, n, expected_interval);
            }
        }
    });
    let (under, over) = (source.underflow(), source.overflow());
    if under != 0 {
        // Underflow exists only for a window that starts above 0.
        target.record_n(window.min_value(layout).saturating_sub(1), under);
    }
    if over != 0 {
        target.record_n(window.max_value(layout).saturating_add(1), over);
    }
}

/// How many `k` in `1..=steps` put `value - k·interval` inside `[a, b]`.
fn progression_count(value: u64, interval: u64, steps: u64, a: u64, b: u64) -> u64 {
    if a > b || b < value.saturating_sub(steps.saturating_mul(interval)) {
        return 0;
    }
    // value - k·i <= b  <=>  k >= (value - b) / i, rounded up.
    let k_min = value.saturating_sub(b).div_ceil(interval).max(1);
    // value - k·i >= a  <=>  k <= (value - a) / i.
    let k_max = (value.saturating_sub(a) / interval).min(steps);
    k_max.saturating_sub(k_min) + (k_max >= k_min) as u64
}

impl<S, L, W> Histogram<S, L, W>
where
    S: Cells,
    S::Item: Counter,
    L: LayoutSpec,
    W: WindowSpec,
{
    /// The position of storage index `slot` (inside the window).
    #[inline]
    fn slot_position(&self, slot: usize) -> BucketPos {
        let (k, first) = self.base.cell_origin();
        BucketPos::of_logical(first + slot, k)
    }

    /// The storage cells.
    #[inline]
    pub fn storage(&self) -> &S {
        &self.base.storage
    }

    /// Gives the storage back.
    pub fn into_storage(self) -> S {
        self.base.storage
    }

    /// Bytes of memory this histogram holds: the value itself plus what its storage holds
    /// ([`Cells::held_bytes`]: the cells; for sparse storage its directory, pages and tables).
    pub fn footprint(&self) -> usize {
        self.base.footprint(core::mem::size_of_val(self))
    }
}

impl<S, L, W> HistogramRead for Histogram<S, L, W>
where
    S: Cells,
    S::Item: Counter,
    L: LayoutSpec,
    W: WindowSpec,
{
    crate::forward_histogram_read!(|h| h.base);
}

impl<S, L, W> Record for Histogram<S, L, W>
where
    S: CellsMut,
    S::Item: Counter,
    L: LayoutSpec,
    W: WindowSpec,
{
    #[inline(always)]
    fn record(&mut self, value: u64) {
        Histogram::record(self, value)
    }
    #[inline]
    fn record_n(&mut self, value: u64, count: u64) {
        Histogram::record_n(self, value, count)
    }
}

crate::fmt::histogram_formats!(Histogram, "Histogram", S: Cells, S::Item: Counter);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{storage_len, ReadExt};

    const L: Layout = Layout::DEFAULT;

    #[test]
    fn progression_count_matches_brute_force() {
        // Integer arithmetic only: a small corner under miri (the full grid takes half a
        // minute of CI's miri step interpreted).
        let (values, starts, span): (&[u64], u64, u64) = if cfg!(miri) {
            (&[100], 8, 4)
        } else {
            (&[0, 1, 5, 17, 100, 1000], 40, 30)
        };
        for &value in values {
            for interval in 1..12u64 {
                if value / interval < 2 {
                    continue;
                }
                let steps = value / interval - 1;
                for a in 0..starts {
                    for b in a..a + span {
                        let brute = (1..=steps)
                            .filter(|k| (a..=b).contains(&(value - k * interval)))
                            .count() as u64;
                        assert_eq!(progression_count(value, interval, steps, a, b), brute);
                    }
                }
            }
        }
    }

    #[test]
    fn corrected_record_matches_brute_force() {
        const LEN: usize = storage_len(Layout::DEFAULT, 50, 5000);
        let mut fast = Histogram::<[u64; LEN]>::new(L, 50, 5000);
        let mut slow = Histogram::<[u64; LEN]>::new(L, 50, 5000);
        for (value, interval) in [(10_000u64, 7u64), (3000, 1), (99, 100), (200, 100), (5, 0)] {
            fast.record_corrected(value, interval);
            slow.record(value);
            if interval > 0 {
                let mut m = value.saturating_sub(interval);
                while m >= interval && interval > 0 {
                    slow.record(m);
                    m -= interval;
                }
            }
        }
        assert_eq!(fast.underflow(), slow.underflow());
        assert_eq!(fast.overflow(), slow.overflow());
        assert_eq!(fast.storage(), slow.storage());
    }

    #[test]
    fn corrected_record_hostile_is_bounded() {
        // Under miri the window ends at 2^12, not 2^20 (2,048 cells, not 6,144: the synthetic
        // values are counted bucket by bucket, 11 s there over the larger window).
        const HI: u64 = if cfg!(miri) { 1 << 12 } else { 1 << 20 };
        const LEN: usize = storage_len(Layout::DEFAULT, 1, HI);
        let mut h = Histogram::<[u32; LEN]>::new(L, 1, HI);
        h.record_corrected(u64::MAX, 1);
        // u64::MAX itself plus the synthetic values 1..u64::MAX: every one counted somewhere,
        // the overflow saturating at 2^63 - 1 (see `Counter`).
        let win_hi = h.window().max_value(L);
        assert_eq!(h.underflow(), 0);
        assert_eq!(h.total(), win_hi);
        assert_eq!(h.overflow(), i64::MAX as u64);
    }

    #[test]
    fn u32_saturates() {
        const LEN: usize = storage_len(Layout::DEFAULT, 0, 10);
        let mut h = Histogram::<[u32; LEN]>::new(L, 0, 10);
        h.record_n(3, u32::MAX as u64 - 1);
        h.record(3);
        h.record(3);
        h.record_n(3, 1000);
        assert_eq!(h.count_at(3), u32::MAX as u64);
    }

    #[test]
    fn u64_bulk_adds_saturate_below_wrap() {
        const LEN: usize = storage_len(Layout::DEFAULT, 10, 20);
        let mut h = Histogram::<[u64; LEN]>::new(L, 10, 20);
        for v in [15, 0, 99] {
            h.record_n(v, u64::MAX);
            h.record_n(v, 5);
            h.record(v);
        }
        // Bulk adds stop at 2^63 - 1; a single increment after that cannot wrap to 0.
        let cap = i64::MAX as u64;
        assert_eq!(
            h.count_at(h.window().storage_index(L.index_of(15)).unwrap()),
            cap + 1
        );
        assert_eq!((h.underflow(), h.overflow()), (cap + 1, cap + 1));
    }

    #[test]
    fn wrong_length_is_an_error() {
        assert!(matches!(
            Histogram::<[u64; 3]>::try_new(L, 0, 10),
            Err(WindowError::StorageLength { .. })
        ));
        assert!(matches!(
            Histogram::<[u64; 3]>::try_new(L, 10, 0),
            Err(WindowError::MinAboveMax { .. })
        ));
        let mut buffer = [7u64; 5];
        let window = Window::new(L, 0, 10).unwrap();
        assert!(matches!(
            Histogram::with_storage(L, &mut buffer[..], window),
            Err(WindowError::StorageLength { actual: 5, .. })
        ));
    }
}
