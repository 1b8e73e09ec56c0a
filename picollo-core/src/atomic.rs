//! The atomic histogram: many writers share one storage through `fetch_add(Relaxed)`, and
//! reads are protected from concurrent resets by a version (seqlock) with optimistic retry.
//!
//! # Targets without compare-and-swap
//!
//! The atomics come from [`portable_atomic`], so this builds on `thumbv6m-none-eabi` and
//! `riscv32imc-unknown-none-elf`, which have no native read-modify-write instructions. On those
//! targets the final firmware binary must choose how `portable-atomic` makes RMWs atomic:
//!
//! - single-core chips: enable `portable-atomic`'s `unsafe-assume-single-core` feature (RMWs
//!   run with interrupts disabled), or build with
//!   `RUSTFLAGS="--cfg portable_atomic_unsafe_assume_single_core"`;
//! - multi-core chips: enable its `critical-section` feature and provide a
//!   `critical-section` implementation for the platform.
//!
//! A library (like this one) must not pick either; the CI builds the atomic histogram for both
//! targets with `--cfg portable_atomic_unsafe_assume_single_core`.

use crate::layout::{ConstLayout, LayoutSpec};
use crate::read::HistogramRead;
use crate::storage::Storage;
use crate::window::{Window, WindowError};
use crate::Layout;
use portable_atomic::{AtomicU32, AtomicU64, Ordering};

mod sealed {
    pub trait Sealed {}
    impl Sealed for portable_atomic::AtomicU32 {}
    impl Sealed for portable_atomic::AtomicU64 {}
}

/// An atomic bucket counter: `portable_atomic::AtomicU32` or `AtomicU64` (sealed).
///
/// Both saturate like the plain counters ([`crate::Counter`]): `AtomicU64` at `2^63 - 1` in
/// bulk adds, with single increments unchecked; `AtomicU32` at `u32::MAX`, restored when an
/// increment wraps (one predictable branch on the hot path).
pub trait AtomicCounter: sealed::Sealed + Sync + Send + 'static {
    /// A zero counter, for building storage in `const` context.
    const ZERO: Self;
    /// Adds `n` (relaxed), saturating.
    fn add(&self, n: u64);
    /// Adds one (relaxed).
    fn increment(&self);
    /// The current count (relaxed).
    fn get(&self) -> u64;
    /// Sets the count to zero (relaxed).
    fn clear(&self);
}

impl AtomicCounter for AtomicU32 {
    #[allow(clippy::declare_interior_mutable_const)] // used only as an array initializer
    const ZERO: Self = AtomicU32::new(0);
    #[inline]
    fn add(&self, n: u64) {
        let n = n.min(u32::MAX as u64) as u32;
        let old = self.fetch_add(n, Ordering::Relaxed);
        if old.checked_add(n).is_none() {
            self.store(u32::MAX, Ordering::Relaxed);
        }
    }
    #[inline(always)]
    fn increment(&self) {
        if self.fetch_add(1, Ordering::Relaxed) == u32::MAX {
            self.store(u32::MAX, Ordering::Relaxed);
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

impl AtomicCounter for AtomicU64 {
    #[allow(clippy::declare_interior_mutable_const)] // used only as an array initializer
    const ZERO: Self = AtomicU64::new(0);
    #[inline]
    fn add(&self, n: u64) {
        // Saturate at 2^63 - 1 like the plain `u64` counter, leaving single increments room.
        const MAX: u64 = i64::MAX as u64;
        let n = n.min(MAX);
        let old = self.fetch_add(n, Ordering::Relaxed);
        if old.saturating_add(n) > MAX {
            self.store(MAX, Ordering::Relaxed);
        }
    }
    #[inline(always)]
    fn increment(&self) {
        self.fetch_add(1, Ordering::Relaxed);
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
/// Shared by every kind whose structural changes must not be seen half-done.
#[derive(Debug, Default)]
pub struct Version(AtomicU64);

impl Version {
    /// A new, stable version.
    pub const fn new() -> Self {
        Version(AtomicU64::new(0))
    }

    /// Enters the exclusive section (spins while another is inside); returns the odd version.
    pub fn lock(&self) -> u64 {
        loop {
            let v = self.0.load(Ordering::Relaxed);
            if v & 1 == 0
                && self
                    .0
                    .compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // Order the section's stores after the odd version is visible.
                portable_atomic::fence(Ordering::Release);
                return v + 1;
            }
            core::hint::spin_loop();
        }
    }

    /// Leaves the exclusive section entered with `odd`.
    pub fn unlock(&self, odd: u64) {
        self.0.store(odd.wrapping_add(1), Ordering::Release);
    }

    /// Starts an optimistic read: waits for an even version and returns it.
    pub fn read_begin(&self) -> u64 {
        loop {
            let v = self.0.load(Ordering::Acquire);
            if v & 1 == 0 {
                return v;
            }
            core::hint::spin_loop();
        }
    }

    /// Whether the section was entered since `read_begin` returned `token`.
    pub fn read_retry(&self, token: u64) -> bool {
        // Order the data loads before the re-check of the version.
        portable_atomic::fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) != token
    }
}

/// What every shared histogram kind keeps besides its cells: the seqlock version that
/// sequences resets against reads, and exact underflow and overflow counters. The atomic and
/// the approximate kinds both hold one, so the reset protocol and the outside-value rule are
/// written once.
#[derive(Debug, Default)]
pub struct SharedState {
    version: Version,
    underflow: AtomicU64,
    overflow: AtomicU64,
}

impl SharedState {
    /// A stable version and zero outside counts.
    pub const fn new() -> Self {
        SharedState {
            version: Version::new(),
            underflow: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
        }
    }

    /// Counts `n` values outside the window, for a slot computed as
    /// `logical.wrapping_sub(first)` ([`Window::slot_is_below`] picks the side). Saturates like
    /// the `u64` bucket counters.
    #[inline(always)]
    pub fn add_outside(&self, slot: usize, n: u64) {
        let counter = if Window::slot_is_below(slot) {
            &self.underflow
        } else {
            &self.overflow
        };
        AtomicCounter::add(counter, n);
    }

    /// Runs `clear_cells` and zeroes the outside counts as one structural change: concurrent
    /// reads retry instead of seeing a half-cleared histogram.
    pub fn reset(&self, clear_cells: impl FnOnce()) {
        let odd = self.version.lock();
        clear_cells();
        self.underflow.store(0, Ordering::Relaxed);
        self.overflow.store(0, Ordering::Relaxed);
        self.version.unlock(odd);
    }

    /// Values recorded below the window.
    pub fn underflow(&self) -> u64 {
        self.underflow.load(Ordering::Relaxed)
    }

    /// Values recorded above the window.
    pub fn overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
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
/// # Reset and the "old+1" race
///
/// `reset` clears the buckets inside a seqlock section. A racing `record` is an atomic RMW on
/// its bucket, so it lands either before the clearing store (and is reset) or after it (and is
/// counted): the plain kind's stale `old + 1` store cannot happen. Reads retry when a reset
/// overlapped them, so no read mixes pre- and post-reset buckets.
///
/// ```
/// use picollo_core::{storage_len, AtomicHistogram, Layout, ReadExt};
/// use portable_atomic::AtomicU64;
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
pub struct AtomicHistogram<S, L = Layout> {
    spec: L,
    window: Window,
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

impl<S, L> AtomicHistogram<S, L>
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
        h.reset();
        Ok(h)
    }

    /// Records one `value`: one relaxed `fetch_add`.
    #[inline(always)]
    pub fn record(&self, value: u64) {
        let slot = self.spec.index_of(value).wrapping_sub(self.window.first());
        match self.storage.as_slice().get(slot) {
            Some(cell) => cell.increment(),
            None => self.shared.add_outside(slot, 1),
        }
    }

    /// Records `count` occurrences of `value` (saturating).
    #[inline]
    pub fn record_n(&self, value: u64, count: u64) {
        let slot = self.spec.index_of(value).wrapping_sub(self.window.first());
        match self.storage.as_slice().get(slot) {
            Some(cell) => cell.add(count),
            None => self.shared.add_outside(slot, count),
        }
    }

    /// Clears every bucket, underflow and overflow, as one structural change: concurrent reads
    /// through [`HistogramRead`] retry instead of seeing a half-cleared histogram.
    pub fn reset(&self) {
        self.shared
            .reset(|| self.storage.as_slice().iter().for_each(|c| c.clear()));
    }

    /// The window of logical buckets.
    pub fn window(&self) -> Window {
        self.window
    }
}

impl<S, L> HistogramRead for AtomicHistogram<S, L>
where
    S: Storage,
    S::Item: AtomicCounter,
    L: LayoutSpec,
{
    fn layout(&self) -> Layout {
        self.spec.layout()
    }
    fn window(&self) -> Window {
        self.window
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
}

impl<S, L> crate::Record for &AtomicHistogram<S, L>
where
    S: Storage,
    S::Item: AtomicCounter,
    L: LayoutSpec,
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
