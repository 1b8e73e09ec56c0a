//! `GettingStartedMonitoring` of Picollo for .NET: a writer thread records into a live thread-local
//! histogram as fast as it can, while a monitoring thread prints a one-line summary of the
//! last second every second, from snapshot deltas (no allocation in steady state apart from
//! the printed line). At the end it prints the aggregate table.
//!
//! ```text
//! cargo run --release -p picollo-alloc --example monitoring -- [seconds]   # default 3
//! ```
//!
//! As in the .NET example, the values drift with the time of day, so the distribution moves and may
//! overflow the `10_000..=30_000` range.

use picollo_alloc::{HistogramBuilder, SnapshotExt, Summary, SummaryExt};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

mod common;
use common::SplitMix64;

const NAME: &str = "GettingStartedMonitoring";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds = match std::env::args().nth(1) {
        None => 3.0,
        Some(arg) => match arg.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => s,
            _ => {
                eprintln!("usage: monitoring [seconds]  (a number of seconds in (0, 86400])");
                std::process::exit(2);
            }
        },
    };
    let run_for = Duration::from_secs_f64(seconds);

    let (min, max) = (10_000, 30_000);
    let (layout, window) = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .u64_storage()
        .min_trackable(min)
        .max_trackable(max)
        .resolve()?;
    let h = HistogramBuilder::new()
        .layout(layout)
        .window(window)
        .thread_local()
        .unwrap();
    let stop = AtomicBool::new(false);

    std::thread::scope(|s| {
        // The writer: records until told to stop.
        s.spawn(|| {
            let mut rng = SplitMix64(0);
            while !stop.load(Ordering::Relaxed) {
                let drift = (millis_of_day(SystemTime::now()) & 16383) as f64;
                // Reading the clock per record would dominate; draw a batch per clock read.
                for _ in 0..1024 {
                    let noise = (0.5 - rng.next_f64()) * 1000.0 + rng.next_f64().powi(2) * drift;
                    // `as u64` saturates a negative offset at 0, like .NET's `(ulong)`.
                    h.record(20_000 + noise as u64);
                }
            }
        });

        // The monitor: one line per second from snapshot deltas, reusing one summary.
        s.spawn(|| {
            let start = Instant::now();
            let mut snapshot = h.snapshot();
            let mut summary = Summary::new().with_range(min, max);
            let mut next = start;
            loop {
                next += Duration::from_secs(1);
                let end = (start + run_for).min(next);
                std::thread::sleep(end.saturating_duration_since(Instant::now()));
                // The counts recorded since the previous update; nothing allocates here.
                snapshot.update(&h, true);
                summary.fill_from(&snapshot);
                // Not `println!`: it panics when stdout is closed (`| head -3`), and a panic
                // here would leave the writer recording forever, with the scope waiting on it.
                let line = writeln!(
                    std::io::stdout(),
                    "{} | {}",
                    TimeOfDay(snapshot.timestamp()),
                    summary.one_line(NAME)
                );
                if line.is_err() || end >= start + run_for {
                    break;
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    });

    // The writer has exited: its shard was folded into the accumulator exactly.
    println!("{}", h.summary().with_range(min, max).table("Aggregate"));
    Ok(())
}

/// Milliseconds since midnight UTC.
fn millis_of_day(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| (d.as_millis() % 86_400_000) as u64)
}

/// `HH:MM:SS.mmm` (UTC), as the .NET example prints `TimestampUtc`.
struct TimeOfDay(SystemTime);

impl std::fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = millis_of_day(self.0);
        write!(
            f,
            "{:02}:{:02}:{:02}.{:03}",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        )
    }
}
