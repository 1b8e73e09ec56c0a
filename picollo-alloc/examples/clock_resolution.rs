//! `GettingStartedClockResolution` of Picollo for .NET: the smallest increment that can actually be
//! observed, for the monotonic clock (`Instant`, `clock_gettime(CLOCK_MONOTONIC)` on Linux)
//! and for the CPU timestamp counter ([`Ticks`]). Each probe spins until the clock changes,
//! records the change, and does so 1,000,000 times.
//!
//! ```text
//! cargo run --release -p picollo-alloc --example clock_resolution
//! ```
//!
//! As Picollo for .NET's article explains, the observable increment is bounded by the cost of
//! reading the clock, not only by its advertised frequency.

use picollo_alloc::clock::{now_nanos, ticks_per_second, ticks_to_nanos, Ticks};
use picollo_alloc::{HistogramBuilder, Summary, SummaryExt};
use picollo_core::fmt::Grouped;

const SAMPLES: u64 = 1_000_000;

/// Records `SAMPLES` smallest observable increments of `read`.
fn probe(read: impl Fn() -> u64) -> Summary {
    let mut h = HistogramBuilder::new().dense().plain().unwrap();
    let mut last = read();
    for _ in 0..SAMPLES {
        let mut now = read();
        while now == last {
            now = read();
        }
        h.record(now.wrapping_sub(last));
        last = now;
    }
    h.summary()
}

fn print(summary: &Summary) {
    println!("{}", summary.p0());
    println!("{}", summary.p50());
    println!("{}", summary.p99());
}

fn main() {
    println!("##### Instant (monotonic clock, nanoseconds)");
    let summary = probe(now_nanos);
    println!("Frequency: {}", Grouped(1_000_000_000));
    print(&summary);
    println!("P50 measurable nanos: {}", summary.p50().value);

    println!();
    println!("##### Ticks ({})", Ticks::source_name());
    let rate = ticks_per_second();
    let summary = probe(Ticks::now);
    println!("Frequency: {} (calibrated)", Grouped(rate));
    print(&summary);
    println!(
        "P50 measurable nanos: {}",
        summary.p50().value as f64 * 1e9 / rate as f64
    );
    println!(
        "P50 as exact integer nanos (ticks_to_nanos): {}",
        ticks_to_nanos(summary.p50().value)
    );
}
