//! The switch for bugs planted in loom model builds (`RUSTFLAGS="--cfg loom"`): the lock-free
//! protocols of the other crates (`picollo-ring`'s publish/validate handshake, `picollo-alloc`'s
//! sparse storage and thread-local shards, `picollo-export`'s registry) swap in loom's atomics
//! themselves and plant their bugs through this one list.
//!
//! A model build has planted bugs ([`planted`]): a model run with one must fail, which shows
//! that the model can fail at all. Normal builds contain neither loom nor the plants:
//! [`plant!`](crate::plant) is the correct expression there.

/// `plant!(Bug, correct, planted)`: `correct`, except in a loom build while the model runs with
/// `planted::Bug::Bug` planted (`planted::with`), where it is `planted`. Normal builds compile
/// `correct` alone. Exported (hidden) for the other crates' lock-free code: one switch and one
/// list of bugs for every model in the workspace.
#[doc(hidden)]
#[macro_export]
macro_rules! plant {
    ($bug:ident, $correct:expr, $planted:expr) => {{
        #[cfg(not(loom))]
        let value = $correct;
        #[cfg(loom)]
        let value = if $crate::planted::is($crate::planted::Bug::$bug) {
            $planted
        } else {
            $correct
        };
        value
    }};
}

/// Bugs planted on purpose in loom builds, one at a time, each a change a careless edit could
/// make: every model must find the bug planted in the code it checks.
#[cfg(loom)]
pub mod planted {
    extern crate std;
    use core::cell::Cell;

    /// A planted bug.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Bug {
        /// The ring writer publishes a frame (its even sequence word, then `head`) with relaxed
        /// stores instead of release stores: a reader may accept the slot's old payload as the
        /// new frame. (Either release store alone is enough: a reader reads frame `j` only
        /// after seeing `head > j` with acquire, and checks the sequence word with acquire.)
        RingRelaxedPublish,
        /// The ring writer leaves out the release fence between marking a slot odd and storing
        /// the payload: a reader copying the slot's previous frame may see the new payload
        /// and still the old even sequence word.
        RingNoWriterFence,
        /// The ring reader skips the sequence word's second load, after the copy: it accepts
        /// a copy the writer overwrote while it was being taken.
        RingNoRecheck,
        /// Sparse storage installs a page (or a cold table) with a relaxed compare-and-swap
        /// (`picollo-alloc/src/sparse/install.rs`): a thread that loads the pointer with
        /// acquire may still see the page's cells before they were made.
        SparseInstallRelaxed,
        /// Sparse storage installs with a plain store instead of a compare-and-swap: two
        /// threads that race on a page both think they won, and the counts recorded into the
        /// page that was overwritten are lost (and the page leaks).
        SparseInstallStore,
        /// The loser of a race to install a page does not free its own page: a leak.
        SparseLoserLeaks,
        /// The thread-local kind's bulk read hands its runs on without checking them against
        /// the version lock (`picollo-alloc/src/thread_local/read.rs`), as it did before issue
        /// 40: a thread-exit fold that lands in the pass is counted twice.
        LocalReadUnchecked,
        /// A thread-exit fold clears the shard before adding its counts to the accumulator
        /// (`thread_local/shard.rs`): the thread's counts are lost.
        LocalClearBeforeAdd,
        /// A thread-exit fold frees the shard before clearing it: a thread that claims it in
        /// between records into cells that are then cleared, and its counts are lost.
        LocalReleaseBeforeClear,
        /// `picollo-export`'s `metrics` recorder inserts a new key's histogram without looking
        /// again under the shard's lock: two threads that race to create a key both register,
        /// the loser is refused by the registry (a duplicate series), and its records are lost.
        RecorderNoRecheck,
        /// A `picollo-export` scrape stores the snapshot it copied after releasing the
        /// families' lock: a series registered in between is missing from every later scrape
        /// until the next change.
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
