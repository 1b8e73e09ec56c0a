//! # picollo-tracing
//!
//! A [`tracing_subscriber::Layer`] that times every span into Picollo histograms, per span
//! callsite (name and target):
//!
//! - **busy time**: the sum of the span's enter → exit intervals, so an async span entered
//!   at every poll, across `.await` points and threads, counts only the time it ran;
//! - **wall time**: creation → close;
//! - optionally **counter deltas over the busy time** (cycles, instructions, cache and
//!   branch misses, page faults, … by perf's names, as `PICOLLO_COUNTERS` takes them), read
//!   through the rdpmc fast path where the kernel allows it and one group `read()` otherwise,
//!   and the instructions per cycle of each span.
//!
//! It reports the per-phase table ([`Handle::table`]: N, time, %, p50, cycles, IPC
//! p5/p50/p95, misses per 1,000 instructions), on demand or at exit, `.hlog` interval logs per
//! span ([`Handle::hlog`]), and writes each busy interval as a frame into the thread's
//! shared-memory span ring, so `picollo attach --spans PID` and `picollo top PID` work on a
//! program whose only change is installing the layer.
//!
//! ```
//! use picollo_tracing::PicolloLayer;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let layer = PicolloLayer::builder().time_only().rings(false).build();
//! let handle = layer.handle();
//! let subscriber = tracing_subscriber::registry().with(layer);
//! tracing::subscriber::with_default(subscriber, || {
//!     for _ in 0..3 {
//!         let _s = tracing::info_span!("parse").entered();
//!     }
//! });
//! assert_eq!(handle.span("parse").unwrap().count(), 3);
//! println!("{}", handle.table());
//! ```
//!
//! In a program: `tracing_subscriber::registry().with(PicolloLayer::builder()
//! .report_at_exit(true).build()).init()`, and `PICOLLO_COUNTERS=cycles,instructions` to
//! add counters (or, typed, `Builder::counters(SpanCounters::new().with(HardwareEvent::Cycles))`
//! with `picollo_linux::event::HardwareEvent`).
//!
//! # Platforms
//!
//! Counters and span rings need Linux (`picollo-linux`, the default-on `counters` feature).
//! On macOS, Windows, or with `default-features = false`, the layer builds and records busy
//! and wall times, the per-phase table and `.hlog` logs the same way, with no counters and
//! no rings (CI checks the Windows and macOS builds). The span clock is
//! `picollo_spans::clock` on every platform.
//!
//! # What is measured, exactly
//!
//! - Each `on_enter` pushes the span's id, the span clock (the TSC on x86_64, converted to
//!   nanoseconds at the calibrated rate of [`picollo_alloc::clock::ticks_per_second`]) and,
//!   with counters, the thread's counter samples on a per-thread stack; the matching
//!   `on_exit` on the same thread pops it and adds the interval to the span's busy time (one
//!   relaxed `fetch_add`). Counters are read before the clock at enter and after it at exit,
//!   so reading them is not timed. An exit out of order (spans need not exit in LIFO order)
//!   is matched by id.
//! - The span's state lives in the layer's own lock-free table of live spans, not in the
//!   span's `tracing-subscriber` extensions (whose lookup, lock, hash-map insert and two
//!   allocations per span cost more than the rest of the layer): `on_new_span` claims a state
//!   at the span id's hash with one compare-and-swap, exits and the close find it there from
//!   any thread, and the close frees it for reuse. The table grows (rarely, under a lock)
//!   when it crowds; states are never freed while the layer lives, so a lookup never reads
//!   freed memory. A callsite's statistics are found in `on_new_span` in a lock-free table
//!   indexed by the callsite's `Metadata` address, filled in `register_callsite`.
//! - At close, the busy and wall times (and the counter sums) are recorded once per span
//!   into the callsite's [`picollo_alloc::ThreadLocalHistogram`]s: each thread records into
//!   its own shard (each histogram has its own entry in the thread's cache of shards, so
//!   recording busy then wall costs two cache hits); a thread that exits has its shard folded
//!   into the histogram, so nothing is lost.
//! - Histograms have 128 buckets per power of two (0.4% relative error, HdrHistogram's 2
//!   significant digits, so `.hlog` export is exact); times up to 9.8 hours, counter deltas up
//!   to 2^48 per span; beyond, values count as overflow. The table's totals are sums of bucket
//!   midpoints (within 0.4%; exact below 256).
//! - Memory: a callsite's histograms are made when its first span closes (applications
//!   register many span callsites, their libraries' included, that never close a span). A
//!   time histogram's window has 4,993 buckets: 40 KB for the accumulator of exited threads
//!   and 20 KB (`u32` cells) per thread that closes spans of that callsite; busy and wall make
//!   80 KB plus 40 KB per thread, and each counter adds about 43 KB plus 21 KB per thread.
//!
//! # Counters and threads
//!
//! Counters count per thread: each busy interval starts and ends on one thread (tracing
//! guarantees an enter and its exit happen on the same thread), and its counter deltas are
//! that thread's. A span that migrates between threads (a tokio task moved by work stealing)
//! reports the sum over all its intervals, on whichever threads they ran: exact, not an
//! estimate. A counter that was **not counted** in some interval of a span (the thread's
//! counters could not open, the machine has no hardware PMU, a multiplexed counter that did
//! not run) makes that span's value for that counter *not counted*: it is left out of the
//! histogram and counted in [`CounterReport::not_counted`], never recorded as 0. Time between
//! intervals (a span waiting at an `.await`) is in the wall time only, and counters do not
//! run on it.
//!
//! When `perf_event_open` is not available (no PMU, `perf_event_paranoid`, a seccomp
//! filter), the layer prints one clear message on stderr, the table marks the counters `n/a`,
//! and times are recorded as before.
//!
//! # The span rings
//!
//! Each thread's first span opens its ring, a sealed memfd `picollo-span-<tid>` that
//! `picollo attach` finds in `/proc/<pid>/fd` (and its counters), shared with `picollo_linux::span!` spans. While no consumer is attached, a
//! span's exit costs one more thread-local load and branch for the ring. With `picollo
//! attach --spans PID` or `picollo top PID` attached, each busy interval is one frame (name,
//! nesting depth on the thread, start and end clock, counter samples): those tools count
//! intervals (polls, for async spans), while the layer's own table counts spans.
//!
//! A callsite has one name in the table, the `.hlog` tags and the frames: its span's name,
//! or, where another target has a span of the same name, the name qualified by the fewest
//! last parts of the target that tell them apart (`get::apply`, `set::apply`). `tracing`
//! registers a callsite when it first runs, so the qualified names start then: frames
//! written before carry the short name (`.hlog` lines and tables taken before, too).
//!
//! Counters asked for at attach time (`picollo attach PID -e page-faults`, or
//! `SpanConsumer::request_counters`) are applied by the thread at its next outermost span
//! (when none of its spans is open, so no interval mixes two counter sets): a time-only
//! program's frames then carry those counters. With counters configured, the layer's own
//! histograms keep the configured counters that are still measured; the others are *not
//! counted* from then on.
//!
//! # Modules (private; the public items are re-exported here)
//!
//! - `layer`: the span hooks, per-span state and each thread's stack of open intervals.
//! - `spans`: the lock-free table of live spans (span id → state); `callsite`: per-callsite
//!   statistics and the lock-free table that finds them.
//! - `counters`: counters and span rings through `picollo-linux` (feature `counters`, Linux):
//!   the thread's span state (`picollo_linux::span::raw::ThreadSpans`: its open intervals,
//!   ring, counters and slot mapping), borrowed once per hook; or its time-only stand-in
//!   elsewhere.
//! - `shared`: the state a layer shares with its [`Handle`]s (a leaf, so layer and report import
//!   one way); `report`: per-span statistics, the per-phase table and `.hlog` logs;
//!   `shutdown`: the last `.hlog` interval and the table when the program stops (exit,
//!   `SIGTERM`, [`Handle::finish`]) and the periodic `.hlog` writer; `sync`: the live-span
//!   table's atomics (loom's in a model build, `tests/loom.rs`) and the crate's planted loom
//!   bugs.
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod callsite;
#[cfg(all(feature = "counters", target_os = "linux"))]
mod counters;
#[cfg(not(all(feature = "counters", target_os = "linux")))]
#[path = "time_only.rs"]
mod counters;
mod layer;
/// This crate's planted loom bugs (`picollo_core::plant!`): a `--cfg loom` build only, not part
/// of the API.
#[cfg(loom)]
#[doc(hidden)]
pub mod planted;
mod report;
mod shared;
mod shutdown;
mod spans;
mod sync;

/// The loom model's way in (`tests/loom.rs`): the live-span table over a fixed pair of
/// callsites. Only in a model build
/// (`RUSTFLAGS="--cfg loom"`), not part of the API.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model;

#[cfg(all(feature = "counters", target_os = "linux"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "counters", target_os = "linux"))))]
pub use counters::SpanCounters;
pub use layer::{Builder, PicolloLayer};
pub use report::{CounterReport, Handle, SpanLog, SpanReport, Untimed};
pub use shutdown::DEFAULT_SIGTERM_GRACE;
