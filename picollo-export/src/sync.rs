//! The locks of the registry and the `metrics` recorder: std's in every normal build, loom's
//! in a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`), so the models run the real
//! registration and snapshot code under every interleaving loom explores.
//!
//! A model build also has planted bugs ([`planted`]): a model run with one must fail, which
//! shows that it can fail at all. Normal builds contain neither loom nor the plants.

#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, RwLock};
// The guards name the `metrics` recorder's lock helpers.
#[cfg(all(not(loom), feature = "metrics"))]
pub(crate) use std::sync::{RwLockReadGuard, RwLockWriteGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, RwLock};
#[cfg(all(loom, feature = "metrics"))]
pub(crate) use loom::sync::{RwLockReadGuard, RwLockWriteGuard};

/// `is_planted!(Bug)`: whether `planted::Bug::Bug` is planted; always `false` outside a loom
/// build (so the planted branch compiles away).
macro_rules! is_planted {
    ($bug:ident) => {{
        #[cfg(not(loom))]
        let planted = false;
        #[cfg(loom)]
        let planted = $crate::sync::planted::is($crate::sync::planted::Bug::$bug);
        planted
    }};
}
pub(crate) use is_planted;

/// Bugs planted on purpose in loom builds, one at a time, each a change a careless edit could
/// make: the models of `tests/loom.rs` must find each.
#[cfg(loom)]
#[doc(hidden)]
pub mod planted {
    use std::cell::Cell;

    /// A planted bug.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Bug {
        /// The recorder inserts a new key's histogram without looking again under the shard's
        /// lock: two threads that race to create a key both register, the loser is refused by
        /// the registry (a duplicate series), and its records are lost.
        RecorderNoRecheck,
        /// A scrape stores the snapshot it copied after releasing the families' lock: a series
        /// registered in between is missing from every later scrape until the next change.
        RegistryStaleSnapshot,
    }

    std::thread_local! {
        /// Per test thread: loom runs a model's threads as coroutines on the thread that
        /// called it, so parallel tests do not see each other's plants.
        static PLANTED: Cell<Option<Bug>> = const { Cell::new(None) };
    }

    /// Runs `f` (a loom model) with `bug` planted.
    pub fn with<R>(bug: Bug, f: impl FnOnce() -> R) -> R {
        struct Unplant;
        impl Drop for Unplant {
            fn drop(&mut self) {
                PLANTED.with(|p| p.set(None));
            }
        }
        PLANTED.with(|p| p.set(Some(bug)));
        let _unplant = Unplant;
        f()
    }

    /// Whether `bug` is planted on this thread.
    pub fn is(bug: Bug) -> bool {
        PLANTED.with(|p| p.get()) == Some(bug)
    }
}
