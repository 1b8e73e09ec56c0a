//! # picollo-export
//!
//! Fleet export (work in progress).
#![doc(test(attr(deny(warnings))))]

pub mod error;
pub mod labels;
pub mod native;
pub mod proto;
pub mod schema;

pub use error::ExportError;
pub use labels::{check_label_name, check_metric_name, Labels};
pub use native::{Mapping, NativeHistogram};
pub use schema::{Schema, MAX_SCHEMA, MIN_SCHEMA};
