//! The atomics and the lock of the live-span table (`spans`): std's in every normal build,
//! loom's in a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`), so the model runs the
//! real claim, publish, find and listing code under every interleaving loom explores.
//!
//! A model build also has planted bugs (this crate's own list, `crate::planted`, put in place
//! by `picollo_core::plant!`): a model run with one must fail, which shows that it can fail at
//! all. Normal builds contain neither loom nor the plants.

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
