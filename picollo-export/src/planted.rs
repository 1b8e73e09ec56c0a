//! This crate's bugs planted on purpose in loom builds (`RUSTFLAGS="--cfg loom"`), one at a
//! time, each a change a careless edit could make: the models of the `metrics` recorder's registration and the registry's
//! copy-on-write snapshot (`tests/loom.rs`) must find the bug planted in the code they check. `picollo_core::plant!` puts
//! each in place; `picollo_core::planted::with` plants one for a model run.

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// `picollo-export`'s `metrics` recorder inserts a new key's histogram without looking
    /// again under the shard's lock: two threads that race to create a key both register,
    /// the loser is refused by the registry (a duplicate series), and its records are lost.
    RecorderNoRecheck,
    /// `picollo-export`'s `metrics` recorder hands a thread the series another thread put in
    /// the index without listing it when that thread has not yet: a scrape right after the
    /// first thread's `histogram!` and record may miss the series.
    RecorderUnlistedHandOut,
    /// `picollo-export`'s `metrics` recorder counts a refused counter or gauge in every
    /// thread that made it: threads racing for one refused key count it more than once.
    RecorderRefusalPerRacer,
    /// A `picollo-export` scrape stores the snapshot it copied after releasing the
    /// families' lock: a series registered in between is missing from every later scrape
    /// until the next change.
    RegistryStaleSnapshot,
    /// A `picollo-export` scrape lets go of the flush lock before the deferred sources have
    /// registered what it took from them: a scrape that starts meanwhile finds nothing
    /// pending, reads the families without the series, and misses a series whose
    /// `histogram!` returned before it started.
    RegistryUnlockedFlush,
    /// A `picollo-export` scrape drops its references to the deferred sources while it still
    /// holds the flush lock: when a recorder was dropped meanwhile, the scrape's reference is
    /// the last, and the recorder's drop, which registers what it held under that lock,
    /// waits for it forever.
    RegistrySourceDroppedLocked,
}
