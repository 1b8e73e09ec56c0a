//! # picollo-alloc
//!
//! The std/alloc half of Picollo: heap histograms built from a builder, thread-local
//! aggregation, snapshots, summaries with the pretty tables and diffs of Picollo for .NET, and
//! HdrHistogram interop (V2 encoding and `.hlog` interval logs).
//!
//! # Modules
//!
//! - [`builder`]: the histogram builder and the default histogram; [`HeapStorage`]: dense
//!   heap storage for the core kinds; [`sparse`]: storage whose memory follows what was recorded
//!   (pages per block, a cold tier), the default of the builder.
//! - [`thread_local`](mod@thread_local): the thread-local histogram (one shard per thread, handed over on thread
//!   exit and fork).
//! - [`Snapshot`]: self-consistent copies of live histograms; [`bulk`]: the non-empty buckets
//!   of any kind into a list, through the core's bulk read.
//! - [`summary`]: summaries, their tables and diffs.
//! - [`hdr`]: HdrHistogram's V2 encoding and `.hlog` interval logs; [`hgrm`]: its `.hgrm`
//!   percentile text, written and read.
//! - [`clock`]: std clocks as counter sources, and the tick counter the span clock of
//!   `picollo-spans` reads.
#![forbid(unsafe_op_in_unsafe_fn)]
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod builder;
pub mod bulk;
pub mod clock;
pub mod hdr;
mod heap;
pub mod hgrm;
/// This crate's planted loom bugs (`picollo_core::plant!`): a `--cfg loom` build only, not part
/// of the API.
#[cfg(loom)]
#[doc(hidden)]
pub mod planted;
mod snapshot;
pub mod sparse;
mod storage_choice;
pub mod summary;
pub mod thread_local;

pub use builder::{
    BuildError, BuiltApproxHistogram, Dense, HistogramBuilder, Sparse, SparseAtomicHistogram,
    SparseHistogram, StorageChoice, StorageWidth,
};
pub use heap::{HeapAtomicHistogram, HeapHistogram, HeapStorage};
pub use hgrm::{Hgrm, HgrmError};
pub use snapshot::{Snapshot, SnapshotExt};
pub use sparse::SparseStorage;
pub use summary::{
    NotASummaryRank, Scaled, Summary, SummaryDiff, SummaryExt, SummaryLine, SummaryTable,
};
pub use thread_local::{LocalCounter, ThreadLocalHistogram};

// The common path from one crate: what reading, recording and formatting a histogram needs
// from `picollo-core`, so users of the heap and thread-local kinds need no second dependency.
// The whole core stays reachable as `picollo_alloc::picollo_core`.
pub use picollo_core;
pub use picollo_core::{
    duration_ns, Bucket, EquivalentValue, FixedPercentile, HistogramRead, IntStats, Layout,
    Percentile, PercentileError, Rank, ReadExt, Record, Stats, Window,
};

/// The traits and types most code needs: `use picollo_alloc::prelude::*;` (the histogram
/// kinds, the builder, the read and record traits, summaries and their extension traits).
pub mod prelude {
    pub use crate::{
        EquivalentValue, HeapHistogram, HistogramBuilder, HistogramRead, Layout, Percentile, Rank,
        ReadExt, Record, SnapshotExt, Summary, SummaryExt, ThreadLocalHistogram, Window,
    };
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub(crate) struct ReadmeDoctests;
