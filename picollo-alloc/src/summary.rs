//! Histogram summaries and their printed forms (as Picollo for .NET prints them).
//!
//! A [`Summary`] holds the 16 fixed percentile ranks of Picollo for .NET's summaries (each with the
//! detail of its bucket), the total, the values outside the window, the mean and standard
//! deviation, the precision, the trackable range and the time it was taken. It prints three ways:
//!
//! - [`Summary::table`]: the markdown table (`Percentile | Value | ± | Count`);
//! - [`Summary::one_line`]: one log line (`Name: Total=…, Overflow=…, Mean=…, P0=…, …`);
//! - [`Summary::diff`]: two summaries side by side with the change of every row and Cohen's d.
//!
//! Filling an existing summary with [`Summary::fill_from`] allocates nothing, so a monitoring
//! thread can reuse one instance forever. Printing allocates (it measures the columns first).
//!
//! Values have no units (as in Picollo for .NET): the tables print plain integers.
//!
//! ```
//! use picollo_alloc::{HistogramBuilder, Summary};
//!
//! let mut h = HistogramBuilder::new().relative_error(0.01).plain().unwrap();
//! for v in 1..=100 {
//!     h.record(v);
//! }
//! let summary = Summary::from_histogram(&h);
//! assert_eq!(summary.total(), 100);
//! assert_eq!(summary.p50().value, 50); // exact: values below 128 have unit buckets at 1%
//! println!("{}", summary.table("Latency"));
//! println!("{}", summary.one_line("Latency"));
//! ```

// The parts, each importing only those before it: `scaled` (a leaf), `values` (the summary
// and its filling), `print` (its printed forms).
mod print;
mod scaled;
mod values;

pub use print::{format_change, SummaryDiff, SummaryLine, SummaryTable};
pub use scaled::Scaled;
pub use values::{NotASummaryRank, Summary, SummaryExt, RANKS};
