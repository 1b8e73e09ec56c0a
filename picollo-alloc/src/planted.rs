//! This crate's bugs planted on purpose in loom builds (`RUSTFLAGS="--cfg loom"`), one at a
//! time, each a change a careless edit could make: the models of sparse storage's page and
//! cold-table installation, its walk cache beside records and clears, and the thread-local
//! kind's shard life (`tests/loom.rs`) must find the bug planted in the code they check.
//! `picollo_core::plant!` puts each in place; `picollo_core::planted::with` plants one for a
//! model run.

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
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
    /// Sparse storage's cold tier counts a new entry with a relaxed add, and reads the count
    /// relaxed (`picollo-alloc/src/sparse/cold.rs`): a walk may see the new count but not the
    /// entry's word, and keep positions without it under a stamp that still matches after
    /// the record, so later walks miss the bucket.
    ColdCountRelaxed,
    /// The cold tier's `clear_all` forgets its generation before emptying the tables (as it
    /// did before): a walk beside the clear takes a generation and keeps what it gathered
    /// mid-clear under the entry count from before, which the copied-back counts reach again,
    /// so the stamp still matches and later walks miss the buckets.
    ColdGenerationForgottenFirst,
}
