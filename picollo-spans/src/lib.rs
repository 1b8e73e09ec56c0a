//! # picollo-spans
//!
//! Spans, the platform-neutral half: what a span frame holds, the span clock, and (on the
//! reading side) turning frames into per-phase statistics and tables. The Linux half
//! (`picollo_linux::span`: the thread's shared-memory ring, its perf counters, attaching to
//! a live process) and `picollo-tracing` build on this crate, which builds on every
//! platform with `std`. Frames travel in `picollo-ring`'s rings; the statistics are
//! `picollo-alloc`'s heap histograms.
//!
//! - [`clock`]: the span clock ([`clock::now`]) and its conversion to nanoseconds.
//! - [`frame`]: the span frame codec, one definition for every writer and reader, with an
//!   explicit [`FrameKind`] (span or counter event).
//! - [`SpanDecoder`]: the frames of one ring into a [`SpanAggregator`], following the ring's
//!   counter table as it changes; the same decoder serves a live process and a capture file.
//! - [`SpanAggregator`]: per-name statistics of spans (durations, counter deltas,
//!   instructions per cycle) and counter events.
//! - The per-phase and counter-event tables: [`SpanTable`] (a Markdown table and its notes)
//!   over the rows [`PhaseRow`] and [`EventRow`], made by the aggregator
//!   ([`SpanAggregator::table`]).
//! - [`stack`]: the intervals open on a thread ([`stack::OpenStack`]) and which of a span
//!   layer's counters its counter slots hold ([`stack::SlotMap`]).
//!
//! Imports run one way: `frame` and `clock` are leaves, `aggregate` uses `clock`, `table`
//! renders `aggregate`, `decoder` feeds `aggregate` through `frame`; `stack` is a leaf.

#![forbid(unsafe_op_in_unsafe_fn)]
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod aggregate;
pub mod clock;
mod decoder;
pub mod frame;
pub mod stack;
mod table;

pub use aggregate::{AggregatedSpans, EventStats, SpanAggregator, SpanStats};
pub use decoder::SpanDecoder;
pub use frame::{FrameKind, LayoutError, SpanFrame, SpanName, SPAN_FRAME};
pub use table::{
    format_duration_ns, unavailable_reason, EventRow, PhaseCounter, PhaseRow, SpanTable,
};

/// The environment variable with the counters spans sample, by perf's names, comma-separated
/// (read by `picollo_linux::span`; the tables name it when no counter is configured).
pub const COUNTERS_ENV: &str = "PICOLLO_COUNTERS";

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub(crate) struct ReadmeDoctests;
