//! The locks of the registry and the `metrics` recorder: std's in every normal build, loom's
//! in a model build (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`), so the models run the real
//! registration and snapshot code under every interleaving loom explores.
//!
//! A model build also has planted bugs (this crate's list, `crate::planted`, each put in place
//! by `picollo_core::plant!`, the workspace's one switch): a model run with one must fail, which shows that it can fail at all. Normal builds contain
//! neither loom nor the plants.

#[cfg(not(loom))]
pub(crate) use std::sync::{atomic::AtomicUsize, Mutex, MutexGuard, RwLock};
// For the `metrics` recorder: its lock helpers' guards, and the flag a series is listed by.
#[cfg(all(not(loom), feature = "metrics"))]
pub(crate) use std::sync::{atomic::AtomicBool, RwLockReadGuard, RwLockWriteGuard};

#[cfg(all(loom, feature = "metrics"))]
pub(crate) use loom::sync::{atomic::AtomicBool, RwLockReadGuard, RwLockWriteGuard};
#[cfg(loom)]
pub(crate) use loom::sync::{atomic::AtomicUsize, Mutex, MutexGuard, RwLock};
