//! This crate's bugs planted on purpose in loom builds (`RUSTFLAGS="--cfg loom"`), one at a
//! time, each a change a careless edit could make: the models of the frame ring's publish/validate handshake
//! (`tests/loom.rs`) must find the bug planted in the code they check. `picollo_core::plant!` puts
//! each in place; `picollo_core::planted::with` plants one for a model run.

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
}
