//! # picollo-core
//!
//! `#![no_std]`, allocation-free building blocks of Picollo: the HDR bucket layout of Picollo for
//! .NET, histograms over any storage (owned arrays usable in a `static`, borrowed firmware buffers,
//! heap storage from `picollo-alloc`), one read model with percentiles, statistics and iterators,
//! counter sources and scopes.
//!
//! # Modules
//!
//! - [`layout`]: the bucket layout (value ↔ index, `lo`/`hi` of a bucket), runtime or
//!   const-generic; [`Window`]: the stored window of logical buckets, from min and max
//!   trackable values.
//! - [`storage`]: counter types and the storage traits; [`cell`]: the atomic cells of the
//!   shared kinds.
//! - The kinds: [`histogram`] (plain, single writer), [`atomic`] (`fetch_add`, many writers),
//!   [`approx`] (buckets that count with [`scalable`] counters).
//! - [`read`]: the one read model, [`HistogramRead`] (with its bulk read `recorded_runs`), the
//!   rank rule and every percentile and statistic, written once over it; [`iter`]:
//!   HdrHistogram's value iterations over the same trait.
//! - [`scalable`]: scalable approximate counters for contended shared counting.
//! - [`source`]: counter sources (clocks, cycle counters, PMU groups) and scopes.
//! - [`fmt`]: allocation-free number formatting shared by every printer.
//! - `workload` (feature `testing`): calibrated workloads for checking counters.
//!
//! ```
//! use picollo_core::{storage_len, EquivalentValue, Histogram, Layout, ReadExt};
//!
//! const L: Layout = Layout::DEFAULT; // 0.0977% relative error
//! let mut h = Histogram::<[u64; storage_len(L, 1, 1 << 30)]>::new(L, 1, 1 << 30);
//! for v in 1..=10_000u64 {
//!     h.record(v * 1000);
//! }
//! let p = h.percentile(99.0, EquivalentValue::Midpoint).unwrap();
//! assert!(p.value.abs_diff(9_900_000) <= 9_900_000 / 1000);
//! ```
#![no_std]
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]
// The docs name `AtomicU64`, which targets without 64-bit atomics (thumbv7em, riscv32imc) do
// not have: there those links are plain text, not a broken page.
#![cfg_attr(not(target_has_atomic = "64"), allow(rustdoc::broken_intra_doc_links))]

pub mod approx;
pub mod atomic;
pub mod cell;
pub mod fmt;
pub mod histogram;
pub mod iter;
mod kind;
pub mod layout;
pub mod read;
pub mod record;
pub mod scalable;
pub mod source;
pub mod storage;
// The planted-bug switch of the loom models (`plant!`, `planted`).
#[cfg(target_has_atomic = "64")]
mod sync;
mod window;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod workload;

pub use atomic::{AtomicCounter, AtomicHistogram};
#[cfg(target_has_atomic = "64")]
pub use cell::AtomicU64;
pub use cell::{AtomicU16, AtomicU32};
pub use histogram::{Histogram, Rebucketing, SubtractError};
pub use layout::{BucketPos, ConstLayout, Layout, LayoutError, LayoutSpec, UnitLayout};
pub use read::{
    Bucket, EquivalentValue, FixedPercentile, HistogramRead, IntStats, Percentile, PercentileError,
    Rank, ReadExt, ResetInProgress, Stats,
};
pub use record::{Record, RecordAt};
pub use storage::{Absent, CellCount, Cells, CellsMut, Counter, Lookup, Storage, StorageMut};
/// The switch of the bugs planted in loom builds for the models to find (each crate lists its
/// own: `picollo-ring`'s, `picollo-alloc`'s, `picollo-export`'s and `picollo-tracing`'s
/// `tests/loom.rs`).
#[cfg(loom)]
#[doc(hidden)]
pub use sync::planted;
pub use window::{storage_len, ConstWindow, Window, WindowError, WindowSpec};

/// A duration as the value a histogram records: whole nanoseconds, saturating at `u64::MAX`
/// (about 584 years). What every `record_duration` records.
///
/// ```
/// use core::time::Duration;
/// assert_eq!(picollo_core::duration_ns(Duration::from_micros(16)), 16_000);
/// assert_eq!(picollo_core::duration_ns(Duration::MAX), u64::MAX);
/// ```
#[inline(always)]
pub const fn duration_ns(d: core::time::Duration) -> u64 {
    let ns = d.as_nanos();
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// The traits and types most code needs: `use picollo_core::prelude::*;`.
pub mod prelude {
    pub use crate::{
        storage_len, AtomicHistogram, AtomicU16, AtomicU32, ConstLayout, ConstWindow,
        EquivalentValue, FixedPercentile, Histogram, HistogramRead, Layout, Percentile, Rank,
        ReadExt, Record,
    };
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub(crate) struct ReadmeDoctests;
