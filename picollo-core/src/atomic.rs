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

/// Bits of the version word that count the sections in progress; the bits above count the
/// sections ended (the generation). 8 on targets whose [`Word`] is 32 bits (a generation wraps
/// after 2^24 sections), 16 where it is 64 bits.
const ACTIVE_BITS: u32 = if Word::BITS == 64 { 16 } else { 8 };
/// The in-progress count of a version word.
const ACTIVE_MASK: Word = (1 << ACTIVE_BITS) - 1;
/// One ended section, in the version word.
const GENERATION: Word = 1 << ACTIVE_BITS;

/// The version word of a seqlock: how many sections (resets, folds) are in progress, in its low
/// bits, and how many have ended (the generation), above them. Stable when none is in
/// progress; every section that starts or ends changes it, which is what makes an optimistic
/// read retry.
///
/// A version is used in one of two modes, never both:
///
/// - **shared** ([`Version::enter`] / [`Version::leave`]): sections may overlap and nest, and
///   none waits for another. The atomic and approximate kinds' resets use it: a reset clears
///   cells, so two overlapping resets are two resets, in either order; and a reset from an
///   interrupt handler that landed inside a thread-mode reset must not wait for it (the
///   interrupted reset cannot run until the handler returns).
/// - **exclusive** ([`Version::lock`] / [`Version::unlock`]): one section at a time, the
///   others wait (blocking). For sections that move counts rather than clear them, such as
///   the thread-local kind's folds, which run on threads, never in interrupt handlers.
///
/// Readers never make a section wait. They either wait for the sections in progress to end
/// ([`Version::read_begin`], blocking) or are told that one is ([`Version::try_read_begin`],
/// wait-free): a reader in an interrupt handler must use the second, since the section it
/// waits for may be the one it interrupted.
///
/// The word is a native [`AtomicWord`]: on 32-bit targets the generation wraps after 2^24
/// sections, which only matters to a reader that is suspended across exactly a multiple of
/// that many resets.
#[derive(Debug, Default)]
pub struct Version(AtomicWord);

impl Version {
    /// A new, stable version.
    pub const fn new() -> Self {
        Version(AtomicWord::new(0))
    }

    /// Enters an exclusive section, waiting (spinning) while any section is in progress;
    /// returns the token [`Version::unlock`] takes. **Blocking**: never call it from a context
    /// that may have interrupted a section of the same version.
    ///
    /// Only the thread-local kind's resets and folds enter it, never a record, so an
    /// interrupt handler that records cannot wait on it.
    pub fn lock(&self) -> u64
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        loop {
            let v = self.0.load(Ordering::Relaxed);
            if v & ACTIVE_MASK == 0
                && self
                    .0
                    .rmw_cas_weak(v, v.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // Order the section's stores after the changed version is visible.
                portable_atomic::fence(Ordering::Release);
                return v.wrapping_add(1) as u64;
            }
            core::hint::spin_loop();
        }
    }

    /// Leaves the exclusive section entered with the token `locked` (one store).
    pub fn unlock(&self, locked: u64) {
        // Alone in the section: the word is `locked`; one section in progress becomes one
        // more ended.
        let ended = (locked as Word).wrapping_sub(1).wrapping_add(GENERATION);
        self.0.store(ended, Ordering::Release);
    }

    /// Enters a shared section. **Lock-free**: it never waits for another section, only
    /// retries its compare-and-swap when another context changed the word in between. (It
    /// waits only when 255 sections are already in progress at once, 65,535 with a 64-bit
    /// word: more contexts than any firmware has.) Pair it with [`Version::leave`].
    pub fn enter(&self)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        loop {
            let v = self.0.load(Ordering::Relaxed);
            if v & ACTIVE_MASK != ACTIVE_MASK
                && self
                    .0
                    .rmw_cas_weak(v, v.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // Order the section's stores after the changed version is visible.
                portable_atomic::fence(Ordering::Release);
                return;
            }
            core::hint::spin_loop();
        }
    }

    /// Leaves a shared section entered with [`Version::enter`]. Wait-free (one `fetch_add`).
    pub fn leave(&self)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.0
            .rmw_add(GENERATION.wrapping_sub(1), Ordering::Release);
    }

    /// Whether a section is in progress: what makes [`Version::try_read_begin`] refuse.
    pub fn in_progress(&self) -> bool {
        self.0.load(Ordering::Relaxed) & ACTIVE_MASK != 0
    }

    /// Starts an optimistic read: waits (spins) until no section is in progress and returns
    /// the version. **Blocking** while a section is in progress: never call it from a context
    /// that may have interrupted one (use [`Version::try_read_begin`]).
    pub fn read_begin(&self) -> u64 {
        loop {
            if let Some(token) = self.try_read_begin() {
                return token;
            }
            core::hint::spin_loop();
        }
    }

    /// Starts an optimistic read without waiting: the version, or `None` while a section is in
    /// progress. Wait-free (one load).
    #[inline]
    pub fn try_read_begin(&self) -> Option<u64> {
        let v = self.0.load(Ordering::Acquire);
        (v & ACTIVE_MASK == 0).then_some(v as u64)
    }

    /// Whether a section started or ended since `read_begin` (or `try_read_begin`) returned
    /// `token`, so that what was read in between must be read again. Wait-free.
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
    /// reads retry, or are told a reset is in progress, instead of seeing a half-cleared
    /// histogram. Counts the reset (Picollo for .NET's `ResetCount`).
    ///
    /// **Lock-free**: it waits for no reset and no read. A reset that starts while another is
    /// in progress (an interrupt handler's reset inside thread mode's, or a reset on another
    /// core) clears the cells itself and ends without waiting for the other: the two are two
    /// resets, both counted, and records that race with either land before it (cleared) or
    /// after it (kept).
    pub fn reset(&self, clear_cells: impl FnOnce())
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.version.enter();
        clear_cells();
        self.underflow.clear();
        self.overflow.clear();
        self.resets.rmw_add(1, Ordering::Relaxed);
        self.version.leave();
    }

    /// Whether a reset is in progress, so that a `try_` read
    /// ([`crate::ReadExt::try_total`] and the others) would be refused now.
    pub fn reset_in_progress(&self) -> bool {
        self.version.in_progress()
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

    /// See [`Version::try_read_begin`].
    pub fn try_read_begin(&self) -> Option<u64> {
        self.version.try_read_begin()
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
/// # Progress: what may run in an interrupt handler
///
/// - `record`, `record_u32`, `record_n`: **wait-free** (one atomic add; on the targets without
///   compare-and-swap, the few instructions the chosen read-modify-write route masks).
/// - [`AtomicHistogram::reset`]: **lock-free**; it never waits for a read or another reset,
///   so an interrupt handler may reset while thread mode resets or reads.
/// - the `try_` reads of [`ReadExt`](crate::ReadExt) (`try_total`, `try_int_stats`,
///   `try_fixed_percentiles`, ...): **wait-free**: at most
///   [`TRY_READ_ATTEMPTS`](crate::read::TRY_READ_ATTEMPTS) passes over the cells, and
///   `ResetInProgress` instead of waiting when a reset is in progress (from an interrupt
///   handler that landed inside a thread-mode reset: ask again at the next interrupt).
/// - the other reads (`total`, `fixed_percentiles`, ...): **blocking** while a reset is in
///   progress (they wait for it to end, then read a consistent histogram). Call them from
///   thread mode or from contexts that cannot interrupt a reset of the same histogram;
///   an interrupt handler that reads a histogram thread mode resets must use the `try_` reads.
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
    /// A histogram over caller-provided atomic storage for `window` (borrowed, heap, or an
    /// owned array with any [`LayoutSpec`]). It is cleared; a length other than
    /// `window.len()` is an error.
    pub fn with_storage(spec: L, storage: S, window: Window) -> Result<Self, WindowError> {
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
    /// through [`HistogramRead`] retry (or, the `try_` ones, report `ResetInProgress`) instead
    /// of seeing a half-cleared histogram. Counted in [`HistogramRead::reset_count`].
    ///
    /// **Lock-free** (see [`SharedState::reset`]): safe from an interrupt handler, including
    /// one that landed inside a thread-mode reset or read of the same histogram.
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

    /// Whether a reset is in progress (in another thread or core, or in the context this
    /// interrupt handler interrupted), so that the `try_` reads would report
    /// `ResetInProgress` now. Wait-free.
    pub fn reset_in_progress(&self) -> bool {
        self.shared.reset_in_progress()
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
    /// Relaxed loads of the cells as a slice ([`crate::storage::cell_runs`]).
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        crate::storage::cell_runs(self.storage.as_slice(), |c| c.get(), f)
    }
    crate::forward_histogram_read!(shared: |h| h.shared);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{try_consistent, ResetInProgress, TRY_READ_ATTEMPTS};
    use crate::{storage_len, EquivalentValue, FixedPercentile, PercentileError, Rank, ReadExt};
    use core::cell::Cell;

    // 16 buckets per block: a small window, so that miri runs these in seconds.
    const L: Layout = Layout::from_block_scale(4).unwrap();
    const LEN: usize = storage_len(L, 1, 1 << 12);
    type H = AtomicHistogram<[AtomicU32; LEN]>;

    fn filled() -> H {
        let h = H::new(L, 1, 1 << 12);
        for v in 1..=100u32 {
            h.record_u32(v);
        }
        h.record(1 << 20);
        h
    }

    #[test]
    fn version_sections_nest_and_change_the_word() {
        let v = Version::new();
        let t0 = v.try_read_begin().unwrap();
        v.enter();
        assert!(v.in_progress());
        assert_eq!(v.try_read_begin(), None);
        // A second shared section inside the first (an interrupt's reset) does not wait.
        v.enter();
        v.leave();
        assert!(v.in_progress(), "the outer section is still in progress");
        assert_eq!(v.try_read_begin(), None);
        v.leave();
        let t1 = v.try_read_begin().unwrap();
        assert_ne!(t0, t1);
        assert!(v.read_retry(t0));
        assert!(!v.read_retry(t1));
        assert_eq!(v.read_begin(), t1);
        // Exclusive sections: the same word, the same readers.
        let locked = v.lock();
        assert_eq!(v.try_read_begin(), None);
        v.unlock(locked);
        let t2 = v.try_read_begin().unwrap();
        assert!(t2 != t1 && v.read_retry(t1) && !v.read_retry(t2));
        // Two sections ended in the generation, none in progress.
        assert_eq!(t1 - t0, GENERATION as u64 * 2);
        assert_eq!(t2 - t1, GENERATION as u64);
    }

    #[test]
    fn an_interrupt_inside_a_reset_never_waits() {
        let h = filled();
        let ranks = [Rank::percent(50), Rank::MAX];
        let mut out = [FixedPercentile::default(); 2];
        // What an interrupt handler sees when it lands in the middle of thread mode's reset:
        // the clearing closure stops halfway and runs the handler.
        h.shared.reset(|| {
            let cells = h.storage.as_slice();
            cells[..LEN / 2].iter().for_each(AtomicCounter::clear);
            assert!(h.reset_in_progress());
            assert_eq!(h.try_total(), Err(ResetInProgress));
            assert_eq!(h.try_total_with_outside(), Err(ResetInProgress));
            assert_eq!(h.try_min(), Err(ResetInProgress));
            assert_eq!(h.try_max(), Err(ResetInProgress));
            assert_eq!(h.try_int_stats(), Err(ResetInProgress));
            assert!(h.try_stats().is_err());
            assert_eq!(
                h.try_fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut out),
                Err(PercentileError::ResetInProgress)
            );
            assert_eq!(
                h.try_fixed_percentile(Rank::MAX, EquivalentValue::Midpoint),
                Err(PercentileError::ResetInProgress)
            );
            assert_eq!(
                h.try_percentile(99.0, EquivalentValue::Midpoint),
                Err(PercentileError::ResetInProgress)
            );
            // The handler resets too: it clears everything and returns, without waiting.
            h.reset();
            assert_eq!(h.reset_count(), 1);
            assert!(
                h.reset_in_progress(),
                "thread mode's reset is still in progress"
            );
            // Records keep working inside a reset.
            h.record_u32(7);
            cells[LEN / 2..].iter().for_each(AtomicCounter::clear);
        });
        assert!(!h.reset_in_progress());
        assert_eq!(h.reset_count(), 2);
        // The record landed in a cell thread mode had already cleared: it stays.
        assert_eq!((h.total(), h.try_total()), (1, Ok(1)));
        assert_eq!(h.try_min(), Ok(Some(7)));
        h.try_fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut out)
            .unwrap();
        assert_eq!(out.map(|p| p.value), [7, 7]);
    }

    /// A reader whose passes a reset overlaps: `resets` of them, from "an interrupt" that
    /// fires during the read.
    struct Overlapped<'a> {
        h: &'a H,
        resets: Cell<usize>,
    }

    impl HistogramRead for Overlapped<'_> {
        fn layout(&self) -> Layout {
            self.h.layout()
        }
        fn window(&self) -> Window {
            HistogramRead::window(self.h)
        }
        fn count_at(&self, s: usize) -> u64 {
            if s == 0 && self.resets.get() > 0 {
                self.resets.set(self.resets.get() - 1);
                self.h.reset();
                self.h.record_u32(3);
            }
            self.h.count_at(s)
        }
        fn underflow(&self) -> u64 {
            self.h.underflow()
        }
        fn overflow(&self) -> u64 {
            self.h.overflow()
        }
        fn read_begin(&self) -> u64 {
            self.h.read_begin()
        }
        fn try_read_begin(&self) -> Option<u64> {
            self.h.try_read_begin()
        }
        fn read_retry(&self, token: u64) -> bool {
            self.h.read_retry(token)
        }
    }

    #[test]
    fn try_reads_redo_overlapped_passes_a_bounded_number_of_times() {
        let h = filled();
        // One reset overlaps the first pass: the second pass sees the reset histogram.
        let r = Overlapped {
            h: &h,
            resets: Cell::new(1),
        };
        assert_eq!(r.try_total(), Ok(1));
        assert_eq!(r.try_min(), Ok(Some(3)));
        // Resets overlapping every pass: a bounded number of passes, then the error.
        let r = Overlapped {
            h: &h,
            resets: Cell::new(usize::MAX),
        };
        let passes = Cell::new(0);
        let got = try_consistent(&r, |r| {
            passes.set(passes.get() + 1);
            r.count_at(0)
        });
        assert_eq!(got, Err(ResetInProgress));
        assert_eq!(passes.get(), TRY_READ_ATTEMPTS);
        // The blocking read in thread mode, reset by "an interrupt" during its first pass,
        // completes with the histogram after the reset.
        let r = Overlapped {
            h: &h,
            resets: Cell::new(1),
        };
        assert_eq!((r.total(), r.max()), (1, Some(3)));
    }

    #[test]
    fn try_reads_equal_the_blocking_reads_without_resets() {
        let h = filled();
        assert_eq!(h.try_total(), Ok(h.total()));
        assert_eq!(h.try_total_with_outside(), Ok(h.total_with_outside()));
        assert_eq!(h.try_min(), Ok(h.min()));
        assert_eq!(h.try_max(), Ok(h.max()));
        assert_eq!(h.try_int_stats(), Ok(h.int_stats()));
        assert_eq!(h.try_stats(), Ok(h.stats()));
        let ranks = [Rank::MIN, Rank::percent(50), Rank::parse("99.9").unwrap()];
        let (mut a, mut b) = (
            [FixedPercentile::default(); 3],
            [FixedPercentile::default(); 3],
        );
        h.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut a)
            .unwrap();
        h.try_fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut b)
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(
            h.try_percentile(90.0, EquivalentValue::Midpoint),
            h.percentile(90.0, EquivalentValue::Midpoint)
        );
        // The batch's own errors come first, as for the blocking read.
        assert_eq!(
            h.try_fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut a[..1]),
            Err(PercentileError::OutputTooShort { ranks: 3, room: 1 })
        );
        assert!(matches!(
            h.try_percentile(f64::NAN, EquivalentValue::Midpoint),
            Err(PercentileError::InvalidRank(_))
        ));
        let empty = H::new(L, 1, 1 << 12);
        assert_eq!(
            empty.try_fixed_percentile(Rank::MAX, EquivalentValue::Midpoint),
            Err(PercentileError::Empty)
        );
    }
}
