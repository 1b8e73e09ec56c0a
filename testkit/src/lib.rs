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

use std::sync::atomic::{AtomicBool, Ordering};

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
}
