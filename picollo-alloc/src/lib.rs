//! # picollo-alloc
//!
//! The std/alloc half of Picollo: heap histograms built from a builder, thread-local
//! aggregation, snapshots, summaries with the pretty tables and diffs of seed 000, and
//! HdrHistogram interop (V2 encoding and `.hlog` interval logs).
#![forbid(unsafe_op_in_unsafe_fn)]
#![doc(test(attr(deny(warnings))))]

pub mod builder;
pub mod clock;
pub mod hdr;
pub mod heap;
pub mod summary;

pub use builder::{default_histogram, BuildError, HistogramBuilder, StorageWidth};
pub use heap::{HeapAtomicHistogram, HeapHistogram, HeapStorage};
pub use summary::{Summary, SummaryDiff, SummaryExt, SummaryLine, SummaryTable};
