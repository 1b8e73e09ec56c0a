//! The atomics of the shard life (the shard list, a shard's state and owner, whether the
//! accumulator was used) through one import, so that the loom model checker can
//! swap them in: a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`) names loom's, and
//! loom then runs every interleaving of a claim, records, a thread-exit fold and a reader over
//! the real code (the `model` module drives it: loom runs a model's threads on one OS thread,
//! so the per-thread list and cache, which are the standard library's thread-locals, stay out
//! of it). Normal builds name the standard library's (and `portable_atomic`'s `AtomicU64`, as
//! for the cells).
//!
//! The cells and the version word stay the real ones, invisible to loom: loom explores the
//! interleavings at the operations above, and the cells and version behave sequentially
//! consistently between them. So the models check the protocol (what is read, cleared and
//! released in which order, and that readers retry), not the memory orderings of the cells'
//! relaxed accesses. A model build also has the bugs the models must find planted here
//! ([`plant!`]).

#[cfg(loom)]
pub(super) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8};
#[cfg(not(loom))]
pub(super) use portable_atomic::AtomicU64;
#[cfg(not(loom))]
pub(super) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8};

/// The pointer in `p`, read through `&mut` (no other thread can reach it).
pub(super) fn owned_ptr<T>(p: &mut AtomicPtr<T>) -> *mut T {
    #[cfg(not(loom))]
    let ptr = *p.get_mut();
    #[cfg(loom)]
    let ptr = p.with_mut(|p| *p);
    ptr
}

// Model builds only: one loom atomic that stands for every cell of the histogram (the shards'
// and the accumulator's, which are invisible to loom). Loom reduces the interleavings it runs
// to those that reorder operations on a common loom object (partial-order reduction), so
// without it, it would never preempt a fold between adding a shard's counts and clearing them,
// where a reader's reads of the accumulator and of the shard can fall: the shard life's cell
// reads and writes each touch it ([`cells_read`], [`cells_written`]), which makes loom try
// every order of them.
#[cfg(loom)]
loom::lazy_static! {
    static ref CELLS: loom::sync::atomic::AtomicUsize = loom::sync::atomic::AtomicUsize::new(0);
}

/// Marks a read of cells (a shard's or the accumulator's) for loom; nothing in normal builds.
#[inline(always)]
pub(super) fn cells_read() {
    #[cfg(loom)]
    CELLS.load(std::sync::atomic::Ordering::Relaxed);
}

/// Marks a write of cells for loom; nothing in normal builds.
#[inline(always)]
pub(super) fn cells_written() {
    #[cfg(loom)]
    CELLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}
