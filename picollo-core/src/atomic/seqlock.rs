//! The seqlock every shared kind sequences its resets (and the thread-local kind its folds)
//! against reads with ([`Version`]), and the state the atomic and approximate kinds share
//! around it: the outside-value counters and the reset count ([`SharedState`]).

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

use crate::cell::{AtomicWord, Ordering, RmwAtomic, WideCounter, Word};
use crate::kind::Tallies;
use crate::window::Window;

/// Bits of the version word that count the sections in progress; the bits above count the
/// sections ended (the generation). 8 on targets whose [`Word`] is 32 bits (a generation wraps
/// after 2^24 sections), 16 where it is 64 bits.
const ACTIVE_BITS: u32 = if Word::BITS == 64 { 16 } else { 8 };
/// The in-progress count of a version word.
const ACTIVE_MASK: Word = (1 << ACTIVE_BITS) - 1;
/// One ended section, in the version word.
pub(super) const GENERATION: Word = 1 << ACTIVE_BITS;

/// One turn of a wait: the processor's spin hint, or loom's yield in model builds
/// (`RUSTFLAGS="--cfg loom"`: `picollo-alloc`'s models of the thread-local kind wait on a
/// version), so that a waiting model thread lets the others run.
#[inline(always)]
fn spin() {
    #[cfg(loom)]
    loom::hint::spin_loop();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

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
            spin();
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
            spin();
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
    pub(crate) fn in_progress(&self) -> bool {
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
            spin();
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
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
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
pub(crate) struct SharedState {
    version: Version,
    underflow: WideCounter,
    overflow: WideCounter,
    resets: AtomicWord,
}

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
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
    pub(crate) const fn new() -> Self {
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
    pub(crate) fn add_outside(&self, slot: usize, n: u64)
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
    pub(crate) fn reset(&self, clear_cells: impl FnOnce())
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

    /// Whether a reset is in progress, so that `try_read`
    /// ([`crate::ReadExt::try_read`]) would be refused now.
    pub(crate) fn reset_in_progress(&self) -> bool {
        self.version.in_progress()
    }
}

/// The shared kinds' tallies: read with atomic loads, bracketed by the version.
impl Tallies for SharedState {
    /// Values recorded below the window.
    fn underflow(&self) -> u64 {
        self.underflow.get()
    }

    /// Values recorded above the window.
    fn overflow(&self) -> u64 {
        self.overflow.get()
    }

    /// How many times [`SharedState::reset`] ran (wrapping at 2^32 on 32-bit targets).
    fn reset_count(&self) -> u64 {
        self.resets.load(Ordering::Relaxed) as u64
    }

    /// See [`Version::read_begin`].
    fn read_begin(&self) -> u64 {
        self.version.read_begin()
    }

    /// See [`Version::try_read_begin`].
    fn try_read_begin(&self) -> Option<u64> {
        self.version.try_read_begin()
    }

    /// See [`Version::read_retry`].
    fn read_retry(&self, token: u64) -> bool {
        self.version.read_retry(token)
    }
}
