//! Heap-backed and std-only parts of Picollo: builder, thread-local histograms, snapshots,
//! summaries, tables and HdrHistogram interop.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod hdr;
