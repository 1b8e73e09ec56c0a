//! The atomic histogram: many writers share one storage through `fetch_add(Relaxed)`, and
//! reads are protected from concurrent resets by a version (seqlock) with optimistic retry.
//!
//! Every write is lock-free on every target ([`crate::cell`]): the cells are native atomics,
//! the underflow and overflow counts are [`WideCounter`]s, and the version is a native
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

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

use crate::cell::{AtomicU16, AtomicU32, AtomicWord, Ordering, RmwAtomic, WideCounter, Word};
use crate::layout::{ConstLayout, LayoutSpec};
use crate::read::HistogramRead;
use crate::storage::Storage;
use crate::window::{ConstWindow, Window, WindowError, WindowSpec};
use crate::{Layout, Record};

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
pub trait AtomicCounter: sealed::Sealed + Sync + Send + 'static {
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

/// The version word of a seqlock: even when stable, odd while a writer (a reset) is inside.
///
/// Shared by every kind whose structural changes must not be seen half-done. It is a native
/// [`AtomicWord`]: on 32-bit targets it wraps after 2^31 structural changes, which only matters
/// to a reader that sleeps across exactly that many resets.
#[derive(Debug, Default)]
pub struct Version(AtomicWord);

impl Version {
    /// A new, stable version.
    pub const fn new() -> Self {
        Version(AtomicWord::new(0))
    }

    /// Enters the exclusive section (spins while another is inside); returns the odd version.
    ///
    /// Only resets (and the thread-local kind's folds) enter it, never a record, so an
    /// interrupt handler that records cannot wait on it.
    pub fn lock(&self) -> u64
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        loop {
            let v = self.0.load(Ordering::Relaxed);
            if v & 1 == 0
                && self
                    .0
                    .rmw_cas_weak(v, v.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // Order the section's stores after the odd version is visible.
                portable_atomic::fence(Ordering::Release);
                return v.wrapping_add(1) as u64;
            }
            core::hint::spin_loop();
        }
    }

    /// Leaves the exclusive section entered with `odd`.
    pub fn unlock(&self, odd: u64) {
        self.0
            .store((odd as Word).wrapping_add(1), Ordering::Release);
    }

    /// Starts an optimistic read: waits for an even version and returns it.
    pub fn read_begin(&self) -> u64 {
        loop {
            let v = self.0.load(Ordering::Acquire);
            if v & 1 == 0 {
                return v as u64;
            }
            core::hint::spin_loop();
        }
    }

    /// Whether the section was entered since `read_begin` returned `token`.
    pub fn read_retry(&self, token: u64) -> bool {
        // Order the data loads before the re-check of the version.
        portable_atomic::fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) as u64 != token
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Version {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Version({=u64})", self.0.load(Ordering::Relaxed) as u64)
    }
}

/// What every shared histogram kind keeps besides its cells: the seqlock version that
/// sequences resets against reads, exact underflow and overflow counters, and the number of
/// resets. The atomic and the approximate kinds both hold one, so the reset protocol and the
/// outside-value rule are written once. All zero when new, so a `static` holding one stays in
/// `.bss`.
#[derive(Debug, Default)]
pub struct SharedState {
    version: Version,
    underflow: WideCounter,
    overflow: WideCounter,
    resets: AtomicWord,
}

#[cfg(feature = "defmt")]
impl defmt::Format for SharedState {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "SharedState {{ version: {}, underflow: {=u64}, overflow: {=u64}, resets: {=u64} }}",
            self.version,
            self.underflow(),
            self.overflow(),
            self.reset_count()
        )
    }
}

impl SharedState {
    /// A stable version and zero outside counts.
    pub const fn new() -> Self {
        SharedState {
            version: Version::new(),
            underflow: WideCounter::new(),
            overflow: WideCounter::new(),
            resets: AtomicWord::new(0),
        }
    }

    /// Counts `n` values outside the window, for a slot computed as
    /// `logical.wrapping_sub(first)` ([`Window::slot_is_below`] picks the side). Saturates like
    /// the `u64` bucket counters.
    #[inline(always)]
    pub fn add_outside(&self, slot: usize, n: u64)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        let counter = if Window::slot_is_below(slot) {
            &self.underflow
        } else {
            &self.overflow
        };
        counter.add(n);
    }

    /// Runs `clear_cells` and zeroes the outside counts as one structural change: concurrent
    /// reads retry instead of seeing a half-cleared histogram. Counts the reset (seed 000's
    /// `ResetCount`).
    pub fn reset(&self, clear_cells: impl FnOnce())
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        let odd = self.version.lock();
        clear_cells();
        self.underflow.clear();
        self.overflow.clear();
        // Resets are serialized by the version lock: a load and a store suffice.
        let resets = self.resets.load(Ordering::Relaxed);
        self.resets.store(resets.wrapping_add(1), Ordering::Relaxed);
        self.version.unlock(odd);
    }

    /// Values recorded below the window.
    pub fn underflow(&self) -> u64 {
        self.underflow.get()
    }

    /// Values recorded above the window.
    pub fn overflow(&self) -> u64 {
        self.overflow.get()
    }

    /// How many times [`SharedState::reset`] ran (wrapping at 2^32 on 32-bit targets).
    pub fn reset_count(&self) -> u64 {
        self.resets.load(Ordering::Relaxed) as u64
    }

    /// See [`Version::read_begin`].
    pub fn read_begin(&self) -> u64 {
        self.version.read_begin()
    }

    /// See [`Version::read_retry`].
    pub fn read_retry(&self, token: u64) -> bool {
        self.version.read_retry(token)
    }
}

/// A histogram shared by many writers: every bucket is an atomic counter and `record` is one
/// `fetch_add(Relaxed)`. Same layout, window and read trait as [`crate::Histogram`].
///
/// Recording is lock-free on every target, so thread mode and interrupt handlers may share
/// one `static` (see [`AtomicHistogram::empty`] for the all-zero, `.bss` form).
///
/// # Reset and the "old+1" race
///
/// `reset` clears the buckets inside a seqlock section. A racing `record` is an atomic RMW on
/// its bucket, so it lands either before the clearing store (and is reset) or after it (and is
/// counted): the plain kind's stale `old + 1` store cannot happen. Reads retry when a reset
/// overlapped them, so no read mixes pre- and post-reset buckets.
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
    spec: L,
    window: W,
    shared: SharedState,
    storage: S,
}

impl<A: AtomicCounter, const N: usize> AtomicHistogram<[A; N], Layout> {
    /// A histogram owning `[A; N]`, constructible in a `static`.
    ///
    /// # Panics
    ///
    /// If `N` is not [`crate::storage_len`]`(layout, min, max)` or `min > max`: a compile-time
    /// error in `const` context; at run time use [`AtomicHistogram::try_new`].
    pub const fn new(layout: Layout, min: u64, max: u64) -> Self {
        match Window::new(layout, min, max) {
            Ok(window) if window.len() == N => Self::from_window(layout, window),
            Ok(_) => panic!("array length differs from storage_len(layout, min, max)"),
            Err(_) => panic!("min trackable value above max"),
        }
    }

    const fn from_window(layout: Layout, window: Window) -> Self {
        AtomicHistogram {
            spec: layout,
            window,
            shared: SharedState::new(),
            storage: [const { A::ZERO }; N],
        }
    }

    /// As [`AtomicHistogram::new`], reporting errors.
    pub const fn try_new(layout: Layout, min: u64, max: u64) -> Result<Self, WindowError> {
        match Window::new(layout, min, max) {
            Ok(window) if window.len() == N => Ok(Self::from_window(layout, window)),
            Ok(window) => Err(WindowError::StorageLength {
                expected: window.len(),
                actual: N,
            }),
            Err(e) => Err(e),
        }
    }
}

impl<A: AtomicCounter, const N: usize, const K: u32> AtomicHistogram<[A; N], ConstLayout<K>> {
    /// A histogram with a compile-time block scale, owning `[A; N]`.
    ///
    /// # Panics
    ///
    /// As [`AtomicHistogram::new`].
    pub const fn new_const(min: u64, max: u64) -> Self {
        match Window::new(ConstLayout::<K>::get(), min, max) {
            Ok(window) if window.len() == N => AtomicHistogram {
                spec: ConstLayout::<K>::new(),
                window,
                shared: SharedState::new(),
                storage: [const { A::ZERO }; N],
            },
            Ok(_) => panic!("array length differs from storage_len(layout, min, max)"),
            Err(_) => panic!("min trackable value above max"),
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
            spec: ConstLayout::<K>::new(),
            window: ConstWindow::<MIN, MAX>::new(),
            shared: SharedState::new(),
            storage: [const { A::ZERO }; N],
        }
    }
}

impl<S, L> AtomicHistogram<S, L, Window>
where
    S: Storage,
    S::Item: AtomicCounter,
    L: LayoutSpec,
{
    /// A histogram over caller-provided atomic storage (borrowed or heap). It is cleared.
    pub fn with_storage(spec: L, storage: S, min: u64, max: u64) -> Result<Self, WindowError> {
        let window = Window::new(spec.layout(), min, max)?;
        Self::with_window(spec, storage, window)
    }

    /// A histogram over caller-provided atomic storage for an explicit window. It is cleared.
    pub fn with_window(spec: L, storage: S, window: Window) -> Result<Self, WindowError> {
        window.check_storage_len(storage.as_slice().len())?;
        let h = AtomicHistogram {
            spec,
            window,
            shared: SharedState::new(),
            storage,
        };
        h.storage.as_slice().iter().for_each(AtomicCounter::clear);
        Ok(h)
    }
}

impl<S, L, W> AtomicHistogram<S, L, W>
where
    S: Storage,
    S::Item: AtomicCounter,
    L: LayoutSpec,
    W: WindowSpec,
    for<'a> AtomicWord: RmwAtomic<Word>,
{
    /// Records one `value`: one relaxed `fetch_add`. On 32-bit targets a value below 2^32
    /// takes the 32-bit path of [`AtomicHistogram::record_u32`].
    #[inline(always)]
    pub fn record(&self, value: u64) {
        self.record_logical(self.spec.index_of_native(value));
    }

    /// Records a duration in nanoseconds (whole nanoseconds, saturating at `u64::MAX`; see
    /// [`crate::duration_ns`]), from any thread or interrupt handler.
    #[inline(always)]
    pub fn record_duration(&self, duration: core::time::Duration) {
        self.record(crate::duration_ns(duration));
    }

    /// Records one `u32` value with 32-bit index arithmetic only.
    #[inline(always)]
    pub fn record_u32(&self, value: u32) {
        self.record_logical(self.spec.index_of_u32(value));
    }

    #[inline(always)]
    fn record_logical(&self, logical: usize) {
        let slot = logical.wrapping_sub(self.window().first());
        match self.storage.as_slice().get(slot) {
            Some(cell) => cell.increment(),
            None => self.shared.add_outside(slot, 1),
        }
    }

    /// Records `count` occurrences of `value` (saturating).
    #[inline]
    pub fn record_n(&self, value: u64, count: u64) {
        let slot = self
            .spec
            .index_of_native(value)
            .wrapping_sub(self.window().first());
        match self.storage.as_slice().get(slot) {
            Some(cell) => cell.add(count),
            None => self.shared.add_outside(slot, count),
        }
    }

    /// Coordinated-omission correction: see [`Record::record_corrected`], the one
    /// implementation every kind shares.
    pub fn record_corrected(&self, value: u64, expected_interval: u64) {
        let mut recorder = self;
        Record::record_corrected(&mut recorder, value, expected_interval)
    }

    /// Clears every bucket, underflow and overflow, as one structural change: concurrent reads
    /// through [`HistogramRead`] retry instead of seeing a half-cleared histogram. Counted in
    /// [`HistogramRead::reset_count`].
    pub fn reset(&self) {
        self.shared
            .reset(|| self.storage.as_slice().iter().for_each(|c| c.clear()));
    }
}

impl<S, L, W> AtomicHistogram<S, L, W>
where
    L: LayoutSpec,
    W: WindowSpec,
{
    /// The window of logical buckets.
    #[inline(always)]
    pub fn window(&self) -> Window {
        self.window.window(self.spec.layout())
    }
}

impl<S, L, W> HistogramRead for AtomicHistogram<S, L, W>
where
    S: Storage,
    S::Item: AtomicCounter,
    L: LayoutSpec,
    W: WindowSpec,
{
    fn layout(&self) -> Layout {
        self.spec.layout()
    }
    fn window(&self) -> Window {
        AtomicHistogram::window(self)
    }
    #[inline]
    fn count_at(&self, storage_index: usize) -> u64 {
        self.storage
            .as_slice()
            .get(storage_index)
            .map_or(0, |c| c.get())
    }
    fn underflow(&self) -> u64 {
        self.shared.underflow()
    }
    fn overflow(&self) -> u64 {
        self.shared.overflow()
    }
    fn read_begin(&self) -> u64 {
        self.shared.read_begin()
    }
    fn read_retry(&self, token: u64) -> bool {
        self.shared.read_retry(token)
    }
    fn reset_count(&self) -> u64 {
        self.shared.reset_count()
    }
}

impl<S, L, W> Record for &AtomicHistogram<S, L, W>
where
    S: Storage,
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

crate::fmt::histogram_formats!(AtomicHistogram, "AtomicHistogram", S: Storage, S::Item: AtomicCounter);
