//! This crate's bugs planted on purpose in loom builds (`RUSTFLAGS="--cfg loom"`), one at a
//! time, each a change a careless edit could make: the model of the live-span table's
//! publication order (`tests/loom.rs`) must find the bug planted in the code it checks.
//! `picollo_core::plant!` puts each in place; `picollo_core::planted::with` plants one for a
//! model run.

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// A span's start leaves out the release fence between claiming a state and storing
    /// its fields (`spans::LiveSpan::start`): a listing of the live spans that read the
    /// state's previous span's id may read the new span's fields, find the id unchanged
    /// on its second look, and count the old span with the new one's values.
    SpansNoClaimFence,
}
