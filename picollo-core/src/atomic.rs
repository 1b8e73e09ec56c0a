//! The atomic histogram: many writers share one storage through `fetch_add(Relaxed)`, and
//! reads are protected from concurrent resets by a version (seqlock) with optimistic retry.
//!
//! Every write is lock-free on every target ([`crate::cell`]): the cells are native atomics,
//! the underflow and overflow counts are `WideCounter`s, and the version is a native
//! [`AtomicWord`]. So thread mode and interrupt handlers can record into one `static`
//! histogram without a lock.
//!
//! # Targets without compare-and-swap
//!
//! On `thumbv6m-none-eabi` and `riscv32imc-unknown-none-elf` the writing methods need the
//! firmware to say how read-modify-writes become atomic (`--cfg
//! portable_atomic_unsafe_assume_single_core`, or the `critical-section` or
//! `unsafe-assume-single-core` feature); without that, calling them is a compile error that
//! names these options ([`RmwAtomic`]). The plain [`crate::Histogram`] needs none of them.
//!
//! The module's rooms: this file owns the atomic counters ([`AtomicCounter`]) and the histogram;
//! `seqlock` the version that sequences resets against reads, and the state the atomic and
//! approximate kinds share around it ([`Version`], `SharedState`); `tests` their tests.

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

use crate::cell::{AtomicU16, AtomicU32, AtomicWord, RmwAtomic, Word};
// Only the read-modify-write impls below order anything (`picollo_rmw`, set by build.rs).
#[cfg(picollo_rmw)]
use crate::cell::Ordering;
use crate::kind::Base;
use crate::layout::{BucketPos, ConstLayout, LayoutSpec};
use crate::read::HistogramRead;
use crate::storage::{Absent, Cells, Lookup};
use crate::window::{ConstWindow, Window, WindowError, WindowSpec};
use crate::{Layout, Record, RecordAt};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::AtomicU16 {}
    impl Sealed for super::AtomicU32 {}
    #[cfg(target_has_atomic = "64")]
    impl Sealed for crate::cell::AtomicU64 {}
}

/// An atomic bucket counter: [`AtomicU16`], [`AtomicU32`] or, on targets with native 64-bit
/// atomics, `AtomicU64` (sealed; re-exported in [`crate::cell`], so firmware need not depend
/// on `portable-atomic`).
///
/// All saturate like the plain counters ([`crate::Counter`]): `AtomicU16` and `AtomicU32` at
/// their maximum, restored when an increment wraps (one predictable branch on the hot path);
/// `AtomicU64` at `2^63 - 1` in bulk adds, with single increments unchecked.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an atomic bucket counter on this target",
    label = "the atomic histogram's cells must be `AtomicU16`, `AtomicU32` or (with native 64-bit atomics) `AtomicU64`",
    note = "on targets without compare-and-swap (thumbv6m, riscv32imc) the atomic counters need read-modify-write support: build with `--cfg portable_atomic_unsafe_assume_single_core` (single-core chips) or enable picollo-core's `critical-section` feature (or its `unsafe-assume-single-core` feature)",
    note = "the plain `Histogram` needs neither"
)]
pub trait AtomicCounter:
    sealed::Sealed + crate::storage::CellCount + Sync + Send + 'static
{
    /// A zero counter, for building storage in `const` context.
    const ZERO: Self;
    /// The largest count a cell holds.
    const MAX: u64;
    /// Adds `n` (relaxed), saturating at [`AtomicCounter::MAX`].
    fn add(&self, n: u64);
    /// Adds one (relaxed).
    fn increment(&self);
    /// The current count (relaxed).
    fn get(&self) -> u64;
    /// Sets the count to zero (relaxed).
    fn clear(&self);
}

/// `AtomicU16` and `AtomicU32`: saturate at the type's maximum.
macro_rules! narrow_atomic_counter {
    ($atomic:ty, $value:ty) => {
        #[cfg(picollo_rmw)]
        impl AtomicCounter for $atomic {
            #[allow(clippy::declare_interior_mutable_const)] // used only as an array initializer
            const ZERO: Self = <$atomic>::new(0);
            const MAX: u64 = <$value>::MAX as u64;
            #[inline]
            fn add(&self, n: u64) {
                let n = n.min(<$value>::MAX as u64) as $value;
                let old = self.rmw_add(n, Ordering::Relaxed);
                if old.checked_add(n).is_none() {
                    self.store(<$value>::MAX, Ordering::Relaxed);
                }
            }
            #[inline(always)]
            fn increment(&self) {
                if self.rmw_add(1, Ordering::Relaxed) == <$value>::MAX {
                    self.store(<$value>::MAX, Ordering::Relaxed);
                }
            }
            #[inline]
            fn get(&self) -> u64 {
                self.load(Ordering::Relaxed) as u64
            }
            #[inline]
            fn clear(&self) {
                self.store(0, Ordering::Relaxed);
            }
        }
    };
}

narrow_atomic_counter!(AtomicU16, u16);
narrow_atomic_counter!(AtomicU32, u32);

#[cfg(all(picollo_rmw, target_has_atomic = "64"))]
impl AtomicCounter for crate::cell::AtomicU64 {
    #[allow(clippy::declare_interior_mutable_const)] // used only as an array initializer
    const ZERO: Self = crate::cell::AtomicU64::new(0);
    const MAX: u64 = i64::MAX as u64;
    #[inline]
    fn add(&self, n: u64) {
        // Saturate at 2^63 - 1 like the plain `u64` counter, leaving single increments room.
        let n = n.min(Self::MAX);
        let old = self.rmw_add(n, Ordering::Relaxed);
        if old.saturating_add(n) > Self::MAX {
            self.store(Self::MAX, Ordering::Relaxed);
        }
    }
    #[inline(always)]
    fn increment(&self) {
        self.rmw_add(1, Ordering::Relaxed);
    }
    #[inline]
    fn get(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
    #[inline]
    fn clear(&self) {
        self.store(0, Ordering::Relaxed);
    }
}

mod seqlock;
#[cfg(test)]
mod tests;

pub use seqlock::Version;

pub(crate) use seqlock::SharedState;

/// A histogram shared by many writers: every bucket is an atomic counter and `record` is one
/// `fetch_add(Relaxed)`. Same layout, window and read trait as [`crate::Histogram`].
///
/// Recording is lock-free on every target, so thread mode and interrupt handlers may share
/// one `static` (see [`AtomicHistogram::empty`] for the all-zero, `.bss` form).
///
/// The locked add is the price of sharing: 2 to 7 ns per record on x86-64 even when no other
/// thread records (`benches/RESULTS.md`, `record-wall`), against about 1.3 ns for the plain
/// kind. A histogram one thread records alone is a plain [`crate::Histogram`]; many threads
/// on a hot path do better with `picollo-alloc`'s thread-local kind (per-thread shards, plain
/// adds).
///
/// # Reset and the "old+1" race
///
/// `reset` clears the buckets inside a seqlock section. A racing `record` is an atomic RMW on
/// its bucket, so it lands either before the clearing store (and is reset) or after it (and is
/// counted): the plain kind's stale `old + 1` store cannot happen. Reads retry when a reset
/// overlapped them, so no read mixes pre- and post-reset buckets.
///
/// # Progress: what may run in an interrupt handler
///
/// - `record`, `record_u32`, `record_n`: **wait-free** (one atomic add; on the targets without
///   compare-and-swap, the few instructions the chosen read-modify-write route masks).
/// - [`AtomicHistogram::reset`]: **lock-free**; it never waits for a read or another reset,
///   so an interrupt handler may reset while thread mode resets or reads.
/// - [`ReadExt::try_read`](crate::ReadExt::try_read) (`h.try_read(|r| r.total())`, any read in
///   the closure): **wait-free**: at most 4 passes over the cells, and `ResetInProgress`
///   instead of waiting when a reset is in progress (from an interrupt handler that landed
///   inside a thread-mode reset: ask again at the next interrupt).
/// - the other reads (`total`, `fixed_percentiles`, ...): **blocking** while a reset is in
///   progress (they wait for it to end, then read a consistent histogram). Call them from
///   thread mode or from contexts that cannot interrupt a reset of the same histogram;
///   an interrupt handler that reads a histogram thread mode resets must use `try_read`.
///
/// ```
/// use picollo_core::cell::AtomicU64;
/// use picollo_core::{storage_len, AtomicHistogram, Layout, ReadExt};
///
/// const L: Layout = Layout::DEFAULT;
/// static H: AtomicHistogram<[AtomicU64; storage_len(L, 0, 1 << 20)]> =
///     AtomicHistogram::new(L, 0, 1 << 20);
///
/// std::thread::scope(|s| {
///     for t in 0..2u64 {
///         s.spawn(move || (0..1000).for_each(|i| H.record(i * 2 + t)));
///     }
/// });
/// assert_eq!(H.total(), 2000);
/// ```
pub struct AtomicHistogram<S, L = Layout, W = Window> {
    base: Base<S, L, W, SharedState>,
}

impl<A: AtomicCounter, const N: usize> AtomicHistogram<[A; N], Layout> {
    /// A histogram owning `[A; N]`, constructible in a `static`.
    ///
    /// # Panics
    ///
    /// If `N` is not [`crate::storage_len`]`(layout, min, max)` or `min > max`: a compile-time
    /// error in `const` context; at run time, [`AtomicHistogram::with_storage`] reports them
    /// as errors.
    pub const fn new(layout: Layout, min: u64, max: u64) -> Self {
        if layout.unit_magnitude() != 0 {
            panic!("a layout with a value unit records through UnitLayout (with_storage)");
        }
        match Window::new(layout, min, max) {
            Ok(window) if window.len() == N => Self::from_window(layout, window),
            Ok(_) => panic!("array length differs from storage_len(layout, min, max)"),
            Err(_) => panic!("min trackable value above max"),
        }
    }

    const fn from_window(layout: Layout, window: Window) -> Self {
        AtomicHistogram {
            base: Base {
                spec: layout,
                window,
                tallies: SharedState::new(),
                storage: [const { A::ZERO }; N],
            },
        }
    }
}

impl<A: AtomicCounter, const N: usize, const K: u32, const MIN: u64, const MAX: u64>
    AtomicHistogram<[A; N], ConstLayout<K>, ConstWindow<MIN, MAX>>
{
    /// An empty histogram whose layout and window are carried by its type: all zeros, so a
    /// `static` lands in `.bss`. `N` must be `storage_len(ConstLayout::<K>::LAYOUT, MIN, MAX)`;
    /// any other length, or `MIN > MAX`, fails to compile.
    ///
    /// This is the firmware pattern for a histogram shared by thread mode and interrupt
    /// handlers: `record` takes `&self` and is lock-free, so no `static mut` and no lock.
    ///
    /// ```
    /// use picollo_core::cell::AtomicU32;
    /// use picollo_core::{storage_len, AtomicHistogram, ConstLayout, ConstWindow, ReadExt};
    ///
    /// type Latency = AtomicHistogram<
    ///     [AtomicU32; storage_len(ConstLayout::<9>::LAYOUT, 1, 1_000_000)],
    ///     ConstLayout<9>,
    ///     ConstWindow<1, 1_000_000>,
    /// >;
    /// static LATENCY: Latency = AtomicHistogram::empty();
    ///
    /// LATENCY.record_u32(1500); // from thread mode, or from an interrupt handler
    /// assert_eq!(LATENCY.total(), 1);
    /// ```
    pub const fn empty() -> Self {
        const {
            assert!(
                N == crate::storage_len(ConstLayout::<K>::LAYOUT, MIN, MAX),
                "array length differs from storage_len(ConstLayout::<K>::LAYOUT, MIN, MAX)"
            )
        };
        AtomicHistogram {
            base: Base {
                spec: ConstLayout::<K>::new(),
                window: ConstWindow::<MIN, MAX>::new(),
                tallies: SharedState::new(),
                storage: [const { A::ZERO }; N],
            },
        }
    }
}

impl<S, L> AtomicHistogram<S, L, Window>
where
    S: Cells,
    S::Item: AtomicCounter,
    L: LayoutSpec,
{
    /// A histogram over caller-provided atomic storage for `window` (borrowed, heap — dense,
    /// or `picollo-alloc`'s sparse storage — or an owned array with any [`LayoutSpec`]). It is
    /// cleared; a length other than `window.len()` is an error.
    #[inline(always)]
    pub fn with_storage(spec: L, storage: S, window: Window) -> Result<Self, WindowError> {
        storage.check_window(spec.layout(), window)?;
        if !crate::layout::records_its_layout(&spec) {
            return Err(WindowError::NeedsUnitLayout(spec.layout().unit_magnitude()));
        }
        let h = AtomicHistogram {
            base: Base {
                spec,
                window,
                tallies: SharedState::new(),
                storage,
            },
        };
        h.base.storage.clear_shared(AtomicCounter::clear);
        Ok(h)
    }
}

impl<S, L, W> AtomicHistogram<S, L, W>
where
    S: Cells,
    S::Item: AtomicCounter,
    L: LayoutSpec,
    W: WindowSpec,
    for<'a> AtomicWord: RmwAtomic<Word>,
{
    /// Records one `value`: one relaxed `fetch_add`. On 32-bit targets a value below 2^32
    /// takes the 32-bit path of [`AtomicHistogram::record_u32`].
    #[inline(always)]
    pub fn record(&self, value: u64) {
        self.record_at(self.base.spec.position_native(value));
    }

    /// Records one `u32` value with 32-bit index arithmetic only.
    #[inline(always)]
    pub fn record_u32(&self, value: u32) {
        self.record_at(self.base.spec.position_u32(value));
    }

    #[inline(always)]
    fn record_at(&self, pos: BucketPos) {
        let (k, first) = self.base.cell_origin();
        // SAFETY: `pos` comes from this histogram's sealed layout spec, which the storage was
        // checked against when the histogram was made (`Cells::check_window`).
        match unsafe { self.base.storage.cell(pos, k, first) } {
            Lookup::Found(cell) => cell.increment(),
            // SAFETY: as above.
            Lookup::Missing => match unsafe { self.base.storage.absent(pos, k, first, 1) } {
                Absent::Outside(slot) => self.base.tallies.add_outside(slot, 1),
                Absent::Cell(cell) => cell.add(1),
                Absent::Counted => {}
            },
        }
    }

    /// Records `count` occurrences of `value` (saturating).
    #[inline]
    pub fn record_n(&self, value: u64, count: u64) {
        let pos = self.base.spec.position_native(value);
        let (k, first) = self.base.cell_origin();
        // SAFETY: as in `record_at`.
        match unsafe { self.base.storage.cell(pos, k, first) } {
            Lookup::Found(cell) => cell.add(count),
            // SAFETY: as above.
            Lookup::Missing => match unsafe { self.base.storage.absent(pos, k, first, count) } {
                Absent::Outside(slot) => self.base.tallies.add_outside(slot, count),
                Absent::Cell(cell) => cell.add(count),
                Absent::Counted => {}
            },
        }
    }

    /// Clears every bucket, underflow and overflow, as one structural change: concurrent reads
    /// through [`HistogramRead`] retry (or `try_read` reports `ResetInProgress`) instead
    /// of seeing a half-cleared histogram. Counted in [`HistogramRead::reset_count`].
    ///
    /// **Lock-free** (see `SharedState::reset`): safe from an interrupt handler, including
    /// one that landed inside a thread-mode reset or read of the same histogram.
    pub fn reset(&self) {
        self.base
            .tallies
            .reset(|| self.base.storage.clear_shared(AtomicCounter::clear));
    }
}

impl<S, L, W> AtomicHistogram<S, L, W>
where
    L: LayoutSpec,
    W: WindowSpec,
{
    /// Whether a reset is in progress (in another thread or core, or in the context this
    /// interrupt handler interrupted), so that `try_read` would report
    /// `ResetInProgress` now. Wait-free.
    pub fn reset_in_progress(&self) -> bool {
        self.base.tallies.reset_in_progress()
    }
}

impl<S, L, W> AtomicHistogram<S, L, W>
where
    S: Cells,
{
    /// The storage.
    pub fn storage(&self) -> &S {
        &self.base.storage
    }

    /// Bytes of memory this histogram holds: the value itself plus what its storage holds
    /// ([`Cells::held_bytes`]: the cells; for sparse storage its directory, pages and tables).
    pub fn footprint(&self) -> usize {
        self.base.footprint(core::mem::size_of_val(self))
    }
}

impl<S, L, W> HistogramRead for AtomicHistogram<S, L, W>
where
    S: Cells,
    S::Item: AtomicCounter,
    L: LayoutSpec,
    W: WindowSpec,
{
    crate::forward_histogram_read!(|h| h.base);
}

impl<S, L, W> Record for &AtomicHistogram<S, L, W>
where
    S: Cells,
    S::Item: AtomicCounter,
    L: LayoutSpec,
    W: WindowSpec,
    for<'a> AtomicWord: RmwAtomic<Word>,
{
    #[inline(always)]
    fn record(&mut self, value: u64) {
        AtomicHistogram::record(self, value)
    }
    #[inline]
    fn record_n(&mut self, value: u64, count: u64) {
        AtomicHistogram::record_n(self, value, count)
    }
}

// SAFETY: `record_at` counts `pos` in the bucket it names, through the same cell lookup as
// `record`.
unsafe impl<S, L, W> RecordAt for AtomicHistogram<S, L, W>
where
    S: Cells,
    S::Item: AtomicCounter,
    L: LayoutSpec,
    W: WindowSpec,
    for<'a> AtomicWord: RmwAtomic<Word>,
{
    /// One relaxed `fetch_add`, as [`AtomicHistogram::record`] after its position.
    #[inline(always)]
    unsafe fn record_at(&self, pos: BucketPos) {
        AtomicHistogram::record_at(self, pos)
    }
}

crate::fmt::histogram_formats!(AtomicHistogram, "AtomicHistogram", S: Cells, S::Item: AtomicCounter);
