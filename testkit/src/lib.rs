//! Test support shared by the workspace's tests and benches (not published; a path
//! dev-dependency, which `cargo package` leaves out of the published crates).
//!
//! [`miri_size`]: how large a test runs, natively, in CI's miri step, or in the full-size miri
//! runs of `.ci/miri-full`.
//!
//! [`StopFlag`]: a test that starts a looping thread stops it however the test ends. Inside
//! `std::thread::scope`, an assertion that fails in the scope's closure unwinds the closure,
//! and the scope then waits for every thread it spawned: a thread that loops until a flag is
//! set, and a flag set only on the closure's normal path, turn a failed assertion into a hang.
//! [`StopFlag::raise_on_drop`] sets the flag on every path, and [`StopFlag::wait_until`] lets
//! a thread that waits for another's progress give up when the test is ending.
//!
//! [`Barrier`]: `std::sync::Barrier` waits forever for a party that panicked before it
//! arrived, so a failed assertion (or a panic in the code under test) in one thread of a test
//! hangs the others at the next barrier. A party that holds [`Barrier::break_on_panic`]'s guard
//! breaks the barrier when it unwinds: every party waiting, or arriving later, panics in turn,
//! and the test fails with the first panic's message instead of hanging.
//!
//! [`child::Watched`]: a child process read with a deadline; one that hangs fails the test
//! with what it printed so far, and is killed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

pub mod child;

/// Whether this is a full-size miri run: under miri with `PICOLLO_MIRI_FULL=1` (miri sees the
/// environment with `-Zmiri-disable-isolation`, as `.ci/miri-full` runs it).
pub fn miri_full() -> bool {
    cfg!(miri) && std::env::var_os("PICOLLO_MIRI_FULL").is_some_and(|v| v == "1")
}

/// A test's size: `native` natively; under miri `full` in a full-size run (`.ci/miri-full`:
/// the sizes CI's miri step had before its files were shrunk to fit its time), `ci` otherwise.
///
/// `cfg!(miri)` is this crate's, which is the test's: a miri build interprets every crate.
pub fn miri_size<T>(native: T, full: T, ci: T) -> T {
    if !cfg!(miri) {
        native
    } else if miri_full() {
        full
    } else {
        ci
    }
}

/// A flag that tells a test's looping threads to stop.
///
/// ```
/// use picollo_testkit::StopFlag;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let stop = StopFlag::new();
/// let spins = AtomicU64::new(0);
/// std::thread::scope(|s| {
///     // Raised when the closure ends, normally or by a failed assertion.
///     let _stop = stop.raise_on_drop();
///     s.spawn(|| {
///         while !stop.is_raised() {
///             spins.fetch_add(1, Ordering::Relaxed);
///         }
///     });
///     assert!(stop.wait_until(|| spins.load(Ordering::Relaxed) > 10));
/// });
/// ```
#[derive(Debug, Default)]
pub struct StopFlag(AtomicBool);

impl StopFlag {
    /// A flag not raised yet.
    pub const fn new() -> Self {
        StopFlag(AtomicBool::new(false))
    }

    /// Whether the flag is raised. Acquire: what the raising thread did before is visible.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Raises the flag (release).
    pub fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// A guard that raises the flag when it is dropped: at the end of its scope, and while a
    /// panic unwinds through it. Hold one in the scope closure, and in any spawned thread whose
    /// failure must stop the others.
    #[must_use = "the flag is raised when the guard is dropped: bind it to a variable"]
    pub fn raise_on_drop(&self) -> RaiseOnDrop<'_> {
        RaiseOnDrop(self)
    }

    /// Waits (yielding) until `condition` holds or the flag is raised; `true` when the
    /// condition held. For a thread that waits on another's progress: if that other thread
    /// failed, the flag is raised and this one stops waiting.
    pub fn wait_until(&self, mut condition: impl FnMut() -> bool) -> bool {
        loop {
            if condition() {
                return true;
            }
            if self.is_raised() {
                return false;
            }
            std::thread::yield_now();
        }
    }
}

/// Raises its [`StopFlag`] when dropped (see [`StopFlag::raise_on_drop`]).
#[derive(Debug)]
pub struct RaiseOnDrop<'a>(&'a StopFlag);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.raise();
    }
}

/// A barrier that a panicking party breaks instead of leaving the others waiting forever.
///
/// ```
/// use picollo_testkit::Barrier;
///
/// let barrier = Barrier::new(2);
/// let outcome = std::panic::catch_unwind(|| {
///     std::thread::scope(|s| {
///         s.spawn(|| {
///             let _broken = barrier.break_on_panic();
///             panic!("this party fails before it arrives");
///         });
///         // Would wait forever on `std::sync::Barrier`; panics here instead.
///         barrier.wait();
///     })
/// });
/// assert!(outcome.is_err());
/// ```
#[derive(Debug)]
pub struct Barrier {
    parties: usize,
    state: Mutex<BarrierState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct BarrierState {
    arrived: usize,
    generation: u64,
    broken: bool,
}

impl Barrier {
    /// A barrier for `parties` threads (at least one), reusable as `std::sync::Barrier` is.
    pub fn new(parties: usize) -> Self {
        Barrier {
            parties: parties.max(1),
            state: Mutex::default(),
            changed: Condvar::new(),
        }
    }

    /// Waits until every party arrived. Panics if the barrier is broken (a party that held
    /// [`Barrier::break_on_panic`]'s guard panicked), before or while waiting.
    pub fn wait(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = state.generation;
        assert!(!state.broken, "{BROKEN}");
        state.arrived += 1;
        if state.arrived == self.parties {
            state.arrived = 0;
            state.generation += 1;
            self.changed.notify_all();
            return;
        }
        while state.generation == generation {
            assert!(!state.broken, "{BROKEN}");
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A guard that breaks the barrier if it is dropped while its thread panics. Hold one in
    /// every party (the scope's closure too) for as long as it may still arrive.
    #[must_use = "the barrier breaks when the guard is dropped during a panic: bind it to a variable"]
    pub fn break_on_panic(&self) -> BreakOnPanic<'_> {
        BreakOnPanic(self)
    }

    fn set_broken(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.broken = true;
        self.changed.notify_all();
    }
}

const BROKEN: &str = "another party of this barrier panicked (its failure is reported above)";

/// Breaks its [`Barrier`] when dropped during a panic (see [`Barrier::break_on_panic`]).
#[derive(Debug)]
pub struct BreakOnPanic<'a>(&'a Barrier);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.set_broken();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StopFlag;

    #[test]
    fn a_failed_assertion_in_a_scope_stops_its_looping_thread() {
        let stop = StopFlag::new();
        // Without the guard this would hang: the scope joins a thread that loops until `stop`.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                let _stop = stop.raise_on_drop();
                s.spawn(|| {
                    while !stop.is_raised() {
                        std::hint::spin_loop();
                    }
                });
                panic!("an assertion failed");
            })
        }));
        assert!(outcome.is_err());
        assert!(stop.is_raised());
    }

    #[test]
    fn wait_until_gives_up_when_the_flag_is_raised() {
        let stop = StopFlag::new();
        std::thread::scope(|s| {
            s.spawn(|| stop.raise());
            assert!(!stop.wait_until(|| false));
        });
        assert!(StopFlag::new().wait_until(|| true));
    }

    #[test]
    fn a_barrier_passes_when_every_party_arrives_and_breaks_when_one_panics() {
        let barrier = super::Barrier::new(3);
        let passed = std::sync::atomic::AtomicUsize::new(0);
        // Reused across rounds, as `std::sync::Barrier`.
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..4 {
                        barrier.wait();
                        passed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(passed.into_inner(), 12);

        let barrier = super::Barrier::new(3);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                let waiter = s.spawn(|| {
                    let _broken = barrier.break_on_panic();
                    barrier.wait();
                });
                s.spawn(|| {
                    let _broken = barrier.break_on_panic();
                    panic!("a party fails before it arrives");
                });
                let _broken = barrier.break_on_panic();
                let waited =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| barrier.wait()));
                assert!(waited.is_err(), "the scope's own wait saw the break");
                assert!(
                    waiter.join().is_err(),
                    "the other waiting party saw the break"
                );
            })
        }));
        assert!(outcome.is_err(), "the scope reports the failed party");
    }
}
