//! The atomics of the ring's lock-free protocol (the writer's publish, the reader's validate),
//! which the loom model checker explores: `portable_atomic`'s in every normal build, loom's in
//! a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`), so the models run the real code.
//! The bugs a model build plants are this crate's list (`crate::planted`), each put in place
//! by `picollo_core::plant!`.

#[cfg(not(loom))]
pub(crate) use core::hint::spin_loop;
#[cfg(not(loom))]
pub use portable_atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use portable_atomic::{fence, Ordering};

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(loom)]
pub use loom::sync::atomic::AtomicU64;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, Ordering};
