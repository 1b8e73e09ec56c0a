//! `GettingStarted` of Picollo for .NET: record two distributions into a 1% histogram over
//! `10_000..=30_000`, print a percentile with its bucket, the summary table of the first and
//! the diff of the two.
//!
//! ```text
//! cargo run --release -p picollo-alloc --example getting_started
//! ```
//!
//! The numbers differ a little from the article's, which come from .NET's `Random(0)`; this
//! example uses a fixed-seed SplitMix64, so its output is the same on every run.

use picollo_alloc::{HistogramBuilder, SummaryExt};

mod common;
use common::SplitMix64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (min, max) = (10_000, 30_000);
    let mut h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .u32_storage()
        .min_trackable(min)
        .max_trackable(max)
        .plain()?;

    let mut rng = SplitMix64(0);

    for _ in 0..1_000_000 {
        let noise = (0.5 - rng.next_f64()) * 1000.0 + rng.next_f64().powi(2) * 5000.0;
        // `as u64` saturates a negative offset at 0, as .NET's `(ulong)` cast does.
        h.record(20_000 + noise as u64);
    }

    h.record(40_000); // Outside the range: counted as overflow.

    // A summary has the percentiles at the ranks
    // [0, 1, 5, 10, 25, 50, 75, 90, 92.5, 95, 97.5, 99, 99.9, 99.99, 99.999, 100],
    // plus the total and overflow counts, mean, standard deviation and the trackable range.
    // Each percentile, such as `summary.p99()`, carries the detail of the bucket it falls in.
    let summary = h.summary().with_range(min, max);
    println!("P99: {}", summary.p99());

    h.reset();

    // A different distribution.
    for _ in 0..2_000_000 {
        let noise = (0.5 - rng.next_f64()) * 500.0 + rng.next_f64().powi(3) * 10_000.0;
        h.record(19_000 + noise as u64);
    }

    // `h.summary_into(&mut summary)` would refill an existing summary without allocating.
    let after = h.summary().with_range(min, max);

    println!("{}", summary.table("Histogram Before"));
    println!(
        "{}",
        summary.diff(&after, "Getting Started Diff", "Before", "After")
    );
    Ok(())
}
