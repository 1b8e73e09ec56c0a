//! `GettingStartedSnapshot` of Picollo for .NET: the same output as `getting_started`, but the
//! second distribution is read as a snapshot delta instead of after a reset, so the histogram keeps
//! its totals (useful to monitor live and still have the totals of a day).
//!
//! ```text
//! cargo run --release -p picollo-alloc --example snapshot
//! ```
//!
//! With the same fixed-seed generator as `getting_started`, both examples print the same
//! tables.

use picollo_alloc::{HistogramBuilder, SnapshotExt, SummaryExt};
use picollo_core::{HistogramRead, ReadExt};

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

    let mut snapshot = h.snapshot();
    let summary = snapshot.summary().with_range(min, max);
    println!("P99: {}", summary.p99());

    // No reset: h.reset();

    for _ in 0..2_000_000 {
        let noise = (0.5 - rng.next_f64()) * 500.0 + rng.next_f64().powi(3) * 10_000.0;
        h.record(19_000 + noise as u64);
    }

    // The snapshot now holds the deltas since the previous update (no allocation: same shape).
    snapshot.update(&h, true);
    let after = snapshot.summary().with_range(min, max);

    println!("{}", summary.table("Histogram Before"));
    println!(
        "{}",
        summary.diff(&after, "Getting Started Diff", "Before", "After")
    );
    // The histogram itself still has everything.
    println!(
        "Histogram totals: {} inside the range, {} outside",
        h.total(),
        h.overflow() + h.underflow()
    );
    Ok(())
}
