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

// The summary is defined here, its methods in the parts, each importing only those before it:
// `scaled` (a leaf), `values` (what the summary holds and how it is filled), `print` (its
// printed forms).
mod print;
mod scaled;
mod values;

pub use print::{format_change, SummaryDiff, SummaryLine, SummaryTable};
pub use scaled::Scaled;
pub use values::{NotASummaryRank, SummaryExt};

use picollo_core::{Layout, Percentile, Window};
use std::time::SystemTime;

/// A histogram's percentiles at the 16 ranks of [`Summary::RANKS`] and its statistics, read in one
/// consistent pass pair (see [`Summary::fill_from`]).
///
/// # Range
///
/// A [`HistogramRead`](picollo_core::HistogramRead) knows only the window of buckets it stores, which is precise to bucket
/// resolution: a histogram built for `10_000..=30_000` at 1% tracks `9_984..=30_207`. The
/// summary therefore keeps both:
///
/// - [`Summary::window_range`], the values the window really tracks, always read from the
///   histogram;
/// - a *requested* range, set with [`Summary::with_range`], which
///   is what the user asked the builder for. It survives [`Summary::fill_from`].
///
/// [`Summary::range`] (the `Range Min`/`Max` row of the table) gives the requested range when
/// one is set, otherwise the window's.
///
/// # Empty histograms
///
/// With nothing recorded inside the window every percentile is zero (its `rank` still set),
/// the mean and standard deviation are zero, and the printed forms show `-` for them.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    // Private: the parts (`values`, `print`) are child modules, which read and fill them.
    percentiles: [Percentile; 16],
    total: u64,
    underflow: u64,
    overflow: u64,
    mean: f64,
    stdev: f64,
    layout: Layout,
    window: Window,
    requested: Option<(u64, u64)>,
    timestamp: SystemTime,
    /// What values are divided by when printed ([`Summary::in_unit`]); 1 prints them as
    /// recorded.
    divisor: u64,
}
