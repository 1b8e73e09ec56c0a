//! Lock-free installation of memory behind a pointer: the one place where sparse storage
//! publishes what it allocates (pages of cells, the tables of cold buckets) to concurrent
//! readers and writers.
//!
//! The protocol, for a slot that starts null (or another value that means empty) and is set
//! at most once:
//!
//! 1. allocate the new memory, fully initialized (zeroed cells, an empty table);
//! 2. compare-and-swap the slot from empty to it, with release ordering on success, so that a
//!    reader that loads the pointer with acquire ordering sees the initialized memory;
//! 3. the loser of a race frees its own allocation (it was never published, so nothing was
//!    recorded into it and no reader can hold it) and uses the winner's.
//!
//! Nothing installed is freed before the storage itself is dropped: readers and recorders may
//! hold pointers into it at any time.
//!
//! Every atomic type comes through the one import below, so that the loom model checker can
//! swap them in: a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`) names
//! `loom::sync::atomic`, normal builds the standard library's. A model build also has the bugs
//! the models must find planted here ([`plant!`]).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

// `plant!(Bug, correct, planted)`: picollo-core's switch over this crate's bugs
// (`crate::planted`), `correct` in every normal build.
use picollo_core::plant;

/// Installs the memory `make` allocates into `slot`, unless another thread installed some
/// first; returns the installed pointer (ours or the winner's) and whether ours won.
///
/// `make` is called only when the slot is null; `free` receives our allocation when another
/// thread won the race.
pub(crate) fn install<T>(
    slot: &AtomicPtr<T>,
    make: impl FnOnce() -> *mut T,
    free: impl FnOnce(*mut T),
) -> (*mut T, bool) {
    install_over(slot, core::ptr::null_mut(), make, free)
}

/// [`install`] for a slot whose empty value is `empty` rather than null (a sentinel that
/// readers can follow, such as the storage's empty directory).
pub(crate) fn install_over<T>(
    slot: &AtomicPtr<T>,
    empty: *mut T,
    make: impl FnOnce() -> *mut T,
    free: impl FnOnce(*mut T),
) -> (*mut T, bool) {
    let current = slot.load(Ordering::Acquire);
    if current != empty {
        return (current, false);
    }
    let ours = make();
    if plant!(SparseInstallStore, false, true) {
        slot.store(ours, Ordering::Release);
        return (ours, true);
    }
    match slot.compare_exchange(
        empty,
        ours,
        plant!(SparseInstallRelaxed, Ordering::AcqRel, Ordering::Relaxed),
        plant!(SparseInstallRelaxed, Ordering::Acquire, Ordering::Relaxed),
    ) {
        Ok(_) => (ours, true),
        Err(winner) => {
            if plant!(SparseLoserLeaks, true, false) {
                free(ours);
            }
            (winner, false)
        }
    }
}

/// Replaces `expected` in `slot` by `new` (which must not be published yet), or frees `new`
/// when another thread replaced it first; returns whether ours won. For chains whose head
/// moves on (each new table links to the one it replaces).
pub(crate) fn replace<T>(
    slot: &AtomicPtr<T>,
    expected: *mut T,
    new: *mut T,
    free: impl FnOnce(*mut T),
) -> bool {
    match slot.compare_exchange(
        expected,
        new,
        plant!(SparseInstallRelaxed, Ordering::AcqRel, Ordering::Relaxed),
        plant!(SparseInstallRelaxed, Ordering::Acquire, Ordering::Relaxed),
    ) {
        Ok(_) => true,
        Err(_) => {
            free(new);
            false
        }
    }
}
