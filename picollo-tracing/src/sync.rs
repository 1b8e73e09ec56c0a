//! The atomics and the lock of the live-span table (`spans`): std's in every normal build,
//! loom's in a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`), so the model runs the
//! real claim, publish, find and listing code under every interleaving loom explores.
//!
//! A model build also has planted bugs ([`planted`], this crate's own list and switch): a
//! model run with one must fail, which shows that it can fail at all. Normal builds contain
//! neither loom nor the plants: [`plant!`] is the correct expression there.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;

/// The pointer in `p`, read through `&mut` (no other thread can reach it).
pub(crate) fn ptr_mut<T>(p: &mut AtomicPtr<T>) -> *mut T {
    #[cfg(not(loom))]
    let value = *p.get_mut();
    #[cfg(loom)]
    let value = p.with_mut(|v| *v);
    value
}

/// `plant!(Bug, correct, planted)`: `correct`, except in a loom build while the model runs with
/// `planted::Bug::Bug` planted (`planted::with`), where it is `planted`. Normal builds compile
/// `correct` alone.
macro_rules! plant {
    ($bug:ident, $correct:expr, $planted:expr) => {{
        #[cfg(not(loom))]
        let value = $correct;
        #[cfg(loom)]
        let value = if $crate::sync::planted::is($crate::sync::planted::Bug::$bug) {
            $planted
        } else {
            $correct
        };
        value
    }};
}
pub(crate) use plant;

/// Bugs planted on purpose in loom builds, one at a time, each a change a careless edit could
/// make: the model must find the bug planted in the code it checks. This crate's own list
/// (the workspace's other crates plant theirs through `picollo_core::planted`).
#[cfg(loom)]
pub mod planted {
    use std::cell::Cell;

    /// A planted bug.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Bug {
        /// A span's start leaves out the release fence between claiming a state and storing
        /// its fields (`spans::LiveSpan::start`): a listing of the live spans that read the
        /// state's previous span's id may read the new span's fields, find the id unchanged
        /// on its second look, and count the old span with the new one's values.
        SpansNoClaimFence,
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
        PLANTED.with(Cell::get) == Some(bug)
    }
}
