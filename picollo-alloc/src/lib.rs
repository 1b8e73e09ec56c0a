//! # picollo-alloc
//!
//! The std/alloc half of Picollo: heap histograms built from a builder, thread-local
//! aggregation, snapshots, summaries with the pretty tables and diffs of seed 000, and
//! HdrHistogram interop (V2 encoding and `.hlog` interval logs).
#![forbid(unsafe_op_in_unsafe_fn)]
#![doc(test(attr(deny(warnings))))]

pub mod builder;
pub mod bulk;
pub mod clock;
pub mod hdr;
pub mod heap;
pub mod hgrm;
pub mod snapshot;
pub mod summary;
pub mod thread_local;

pub use builder::{
    default_histogram, BuildError, HeapApproxHistogram, HistogramBuilder, StorageWidth,
};
pub use heap::{HeapAtomicHistogram, HeapHistogram, HeapStorage};
pub use hgrm::{write_hgrm, Hgrm, HgrmError};
pub use snapshot::{Snapshot, SnapshotExt};
pub use summary::{Summary, SummaryDiff, SummaryExt, SummaryLine, SummaryTable};
pub use thread_local::{LocalCounter, ThreadLocalHistogram};
