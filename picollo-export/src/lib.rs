//! # picollo-export
//!
//! Picollo histograms for fleets: every histogram kind exported to the engines that aggregate
//! latency across machines, exactly where the bucket math allows and within a stated bound
//! elsewhere, tested against a real Prometheus server.
//!
//! - **Prometheus native histograms** (protobuf exposition, [`Registry::encode_protobuf`]),
//!   schema −4..=8, sparse spans and delta-encoded counts, zero bucket, count and sum.
//! - **Classic histograms** (`_bucket{le}`, `_sum`, `_count`) in Prometheus text 0.0.4 and
//!   OpenMetrics ([`Registry::encode_text`], [`text::TextEncoder`]), with derived or chosen
//!   boundaries ([`ClassicBuckets`]).
//! - **OpenTelemetry exponential histograms** over OTLP/HTTP protobuf, or OTLP/JSON, with delta
//!   or cumulative temporality ([`otlp`]).
//! - A **`/metrics` endpoint** that negotiates protobuf or text as Prometheus' client libraries
//!   do ([`server`], feature `server`, on by default, Unix), hardened against hostile
//!   clients and free of any async runtime, serving thread-local, atomic,
//!   approximate and locked plain histograms without stalling their recorders ([`source`]).
//! - A **`metrics::Recorder`** (feature `metrics`) whose histograms are Picollo histograms
//!   (module `recorder`).
//!
//! # Modules
//!
//! - [`Registry`]: named, labelled histograms, counters and gauges, encoded for a scrape;
//!   [`source`]: what a registry serves (every histogram kind, read without stalling
//!   recorders); [`Labels`]: names and label sets checked against Prometheus' rules.
//! - [`schema`]: the exponential bucket math shared by Prometheus and OpenTelemetry;
//!   [`native`]: Picollo buckets mapped onto it, filled through the core's bulk read.
//! - Encoders: [`proto`] (protobuf messages), [`ClassicHistogram`] (`_bucket{le}`
//!   histograms), [`text`] (Prometheus text and OpenMetrics), [`otlp`] (OpenTelemetry).
//! - `server` (feature `server`): the hardened `/metrics` endpoint; `recorder` (feature
//!   `metrics`): the `metrics` facade's recorder.
//! - [`ExportError`]: the exporter's errors.
//!
//! ```
//! use std::sync::Arc;
//! use picollo_alloc::HistogramBuilder;
//! use picollo_export::{Labels, Registry};
//!
//! let registry = Arc::new(Registry::new());
//! let latency = Arc::new(HistogramBuilder::new().thread_local().unwrap()); // 0.1%, all of u64
//! registry.register("rpc_latency_nanoseconds", "RPC latency", &Labels::empty(), latency.clone())?;
//! latency.record(48_000); // from any thread, about a nanosecond
//! // Serve it to local scrapers (see `server` to expose it):
//! // picollo_export::server::MetricsServer::bind("127.0.0.1:9464", registry.clone())?;
//! # Ok::<(), picollo_export::ExportError>(())
//! ```
//!
//! # The mapping
//!
//! A Picollo layout with block scale `k` has `B = 2^k` buckets per power of two; bucket `b`
//! holds the integers `[lo, hi)`, spaced linearly inside each power of two. A native schema
//! `n` has `2^n` buckets per power of two, spaced logarithmically: bucket `i` holds
//! `(2^((i-1)/2^n), 2^(i/2^n)]`, upper edge inclusive. OpenTelemetry's scale is the schema and
//! its bucket index is `i - 1`.
//!
//! **Schema.** By default the finest schema that is not finer than the layout, `min(k, 8)`
//! ([`Mapping::for_layout`]); [`ExportOptions::schema`] overrides it with any schema −4..=8
//! (coarser schemas give fewer buckets; the bound below holds for every pair).
//!
//! **Rule.** A Picollo bucket goes, whole, to the native bucket holding its highest value
//! `hi - 1` ([`Mapping::native_index`]). The value 0 (Picollo bucket 0) goes to the zero bucket
//! (half-width [`ZERO_THRESHOLD`] = 2^-128 in Prometheus expositions, 0 in OTLP: both hold
//! exactly the zeros of integer data).
//!
//! **Bound.** Every value `v` counted in native bucket `(L, U]` satisfies `v <= U` and
//! `L < v · (1 + 2^-k)`: at most a factor `1 + 2^-k` below the bucket, never above it. (The
//! highest value `hi - 1` lies in `(L, U]`, and `hi <= lo · (1 + 2^-k) <= v · (1 + 2^-k)`
//! because a bucket of width `w >= 2` starts at `lo >= B · w`.) A quantile that Prometheus
//! interpolates inside a native bucket is therefore within a factor `2^(2^-n) · (1 + 2^-k)` of
//! Picollo's own percentile; `tests/prometheus.rs` asserts exactly that against the server.
//!
//! **Exact cases.** Where a Picollo bucket lies inside one native bucket ([`Mapping::is_exact`])
//! each of its values is counted in its own native bucket, exactly as a native histogram
//! recording the raw values would count it:
//!
//! - buckets that hold a single integer (every value below `2B`) are always exact;
//! - schemas `n <= 0` have edges only at powers of two, which start Picollo buckets, so the
//!   only straddling buckets are those *starting* at an edge `2^m` and holding more than one
//!   integer; of those, only the value `2^m` itself (which belongs to the bucket below, the
//!   upper edge being inclusive) is counted one native bucket too high. Every other value is
//!   exact.
//! - [`NativeHistogram::straddling_count`] reports how many values the rule placed instead.
//!
//! `tests/mapping.rs` proves the rule, the bound and the exact cases with proptest over all of
//! `u64`, every block scale 1..=20 and every schema −4..=8, against an exact big-integer
//! oracle; [`schema::Schema::index_of`] itself is exact for every `u64` (no floating point).
//!
//! **Count, sum, outside values.** The count is exact: zero bucket plus buckets plus the
//! source's underflow and overflow. Nothing is dropped: underflow goes to the native bucket
//! holding the window's lowest value, overflow to the one holding its highest value (so an
//! out-of-range value is reported at the window's edge). The sum is exact when every
//! non-empty bucket holds a single integer and nothing is outside the window; otherwise it is
//! the sum of bucket midpoints, within `0.5 / B` of the true sum (relative) for values inside
//! the window. The plain kind can keep an exact sum ([`Summed`], one extra add per record);
//! sums are computed in 128-bit integers and rounded once to `f64`, so they are never NaN or
//! infinite.
//!
//! ## Worked example
//!
//! Block scale 3 (`B = 8`), schema 3. The value 20 is recorded into the Picollo bucket
//! `[20, 22)`. The native edges around it are `2^(35/8) = 20.75` and `2^(36/8) = 22.63`:
//! 20 belongs to native bucket 35, `(19.03, 20.75]`, but 21 to bucket 36, `(20.75, 22.63]`. The
//! Picollo bucket straddles the edge, so the rule counts it in bucket 36, the bucket of its
//! highest value 21. The bound holds: `L = 20.75 < 20 · (1 + 1/8) = 22.5`.
//!
//! ```
//! use picollo_core::Layout;
//! use picollo_export::{Mapping, Schema};
//!
//! let layout = Layout::from_block_scale(3).unwrap();
//! let schema = Schema::new(3).unwrap();
//! let b = layout.index_of(20);
//! assert_eq!((layout.lo(b), layout.highest(b)), (20, 21));
//! assert_eq!((schema.index_of(20), schema.index_of(21)), (Some(35), Some(36)));
//!
//! let m = Mapping::new(layout, schema);
//! assert_eq!(m.native_index(b), Some(36)); // the bucket of the highest value
//! assert!(!m.is_exact(b));
//! let lower = schema.lower_bound(36);
//! assert!(lower < 20.0 * m.relative_bound_factor()); // 20.75 < 22.5
//! assert!(m.is_exact(layout.index_of(18))); // [18, 20) lies in (17.45, 19.03]
//! ```
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod classic;
mod error;
mod labels;
pub mod native;
pub mod otlp;
/// This crate's planted loom bugs (`picollo_core::plant!`): a `--cfg loom` build only, not part
/// of the API.
#[cfg(loom)]
#[doc(hidden)]
pub mod planted;
pub mod proto;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod recorder;
mod registry;
pub mod schema;
#[cfg(all(feature = "server", unix))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "server", unix))))]
pub mod server;
pub mod source;
mod sync;
pub mod text;

pub use classic::{ClassicBuckets, ClassicHistogram};
pub use error::ExportError;
pub use labels::{check_metric_name, Labels};
pub use native::{Mapping, NativeHistogram};
pub use registry::{Counter, ExportOptions, Gauge, Registry, ZERO_THRESHOLD};
pub use schema::{Schema, MAX_SCHEMA, MIN_SCHEMA};
pub use source::{Exported, Readable, Summed};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub(crate) struct ReadmeDoctests;
