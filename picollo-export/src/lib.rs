//! # picollo-export
//!
//! Fleet export (work in progress).
#![doc(test(attr(deny(warnings))))]

pub mod classic;
pub mod error;
pub mod labels;
pub mod native;
pub mod otlp;
pub mod proto;
#[cfg(feature = "metrics")]
pub mod recorder;
pub mod registry;
pub mod schema;
#[cfg(feature = "server")]
pub mod server;
pub mod source;
pub mod text;

pub use classic::{ClassicBuckets, ClassicHistogram};
pub use error::ExportError;
pub use labels::{check_label_name, check_metric_name, Labels};
pub use native::{Mapping, NativeHistogram};
pub use registry::{Counter, ExportOptions, Gauge, Registry, ZERO_THRESHOLD};
pub use schema::{Schema, MAX_SCHEMA, MIN_SCHEMA};
pub use source::{Exported, Readable, Summed};
