//! # picollo-core
//!
//! `#![no_std]`, allocation-free building blocks of Picollo: the HDR bucket layout of seed 000,
//! histograms over any storage (owned arrays usable in a `static`, borrowed firmware buffers,
//! heap storage from `picollo-alloc`), one read model with percentiles, statistics and
//! iterators, counter sources and scopes.
//!
//! ```
//! use picollo_core::{storage_len, Histogram, Layout, ReadExt};
//!
//! const L: Layout = Layout::DEFAULT; // 0.0977% relative error
//! let mut h = Histogram::<[u64; storage_len(L, 1, 1 << 30)]>::new(L, 1, 1 << 30);
//! for v in 1..=10_000u64 {
//!     h.record(v * 1000);
//! }
//! let p = h.percentile(99.0).unwrap();
//! assert!(p.value.abs_diff(9_900_000) <= 9_900_000 / 1000);
//! ```
#![no_std]
#![doc(test(attr(deny(warnings))))]

pub mod approx;
pub mod atomic;
pub mod fmt;
pub mod histogram;
pub mod iter;
pub mod layout;
pub mod read;
pub mod ring;
pub mod scalable;
pub mod source;
pub mod storage;
pub mod window;
pub mod workload;

pub use atomic::{AtomicCounter, AtomicHistogram};
pub use histogram::{Histogram, OutOfRange, Rebucketing};
pub use layout::{ConstLayout, Layout, LayoutError, LayoutSpec};
pub use read::{
    Bucket, EquivalentValue, HistogramRead, Percentile, PercentileError, ReadExt, Stats,
};
pub use storage::{Counter, Storage, StorageMut};
pub use window::{storage_len, Window, WindowError};

/// Anything a value can be recorded into: every histogram kind implements it, so scopes,
/// spans and counter sessions are written once for all of them.
///
/// Plain histograms implement it for `Histogram` itself (single writer, `&mut`); shared kinds
/// (atomic, approximate) implement it for `&Kind`, so many threads can hold a recorder.
pub trait Record {
    /// Records one occurrence of `value`. Out-of-window values are counted as underflow or
    /// overflow, never dropped.
    fn record(&mut self, value: u64);
    /// Records `count` occurrences of `value`.
    fn record_n(&mut self, value: u64, count: u64);
}

impl<R: Record + ?Sized> Record for &mut R {
    #[inline(always)]
    fn record(&mut self, value: u64) {
        (**self).record(value)
    }
    #[inline(always)]
    fn record_n(&mut self, value: u64, count: u64) {
        (**self).record_n(value, count)
    }
}

/// The traits and types most code needs: `use picollo_core::prelude::*;`.
pub mod prelude {
    pub use crate::{
        storage_len, AtomicHistogram, ConstLayout, EquivalentValue, Histogram, HistogramRead,
        Layout, OutOfRange, Percentile, ReadExt, Record,
    };
}
