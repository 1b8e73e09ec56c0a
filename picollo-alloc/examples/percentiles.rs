//! `GettingStartedPercentiles` and `GettingStartedCustomPercentiles` of Picollo for .NET:
//! every non-empty bucket as a percentile with its bucket detail, then custom ranks through the
//! batch methods (one consistent read for all ranks) and the scalar ones (a batch of one per
//! call, so not faster, and each may see a different moment of a live histogram).
//!
//! ```text
//! cargo run --release -p picollo-alloc --example percentiles
//! ```

use picollo_alloc::HistogramBuilder;
use picollo_core::fmt::Grouped;
use picollo_core::{EquivalentValue, Percentile, ReadExt};

mod common;
use common::SplitMix64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .u32_storage()
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()?;

    let mut rng = SplitMix64(0);
    for _ in 0..1_000_000 {
        let noise = (0.5 - rng.next_f64()) * 1000.0 + rng.next_f64().powi(2) * 5000.0;
        h.record(20_000 + noise as u64);
    }

    // Iterators for detailed bucket information:
    // h.buckets()
    // h.recorded_buckets()
    // h.bucket_percentiles(EquivalentValue::Midpoint)
    // h.recorded_bucket_percentiles(EquivalentValue::Midpoint)
    println!("##### Bucket percentiles");
    for percentile in h.recorded_bucket_percentiles(EquivalentValue::Midpoint) {
        println!("{percentile}");
    }

    println!("\n##### Custom percentiles");
    let ranks = [90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0];
    let mut percentiles = [Percentile::default(); 9];

    // Batch: one consistent read for all ranks.
    h.percentiles(&ranks, EquivalentValue::Midpoint, &mut percentiles)?;
    for percentile in &percentiles {
        println!("{percentile}");
    }

    // Scalar: each call is a batch of one rank.
    for (rank, batch) in ranks.into_iter().zip(&percentiles) {
        let value = h.percentile(rank, EquivalentValue::Midpoint)?.value;
        assert_eq!(batch.value, value);
        println!("{rank}: {}", Grouped(value));
    }
    Ok(())
}
