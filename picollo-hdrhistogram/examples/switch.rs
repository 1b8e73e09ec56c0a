//! A program written for the `hdrhistogram` crate, unchanged but for its `Cargo.toml` line:
//! `hdrhistogram = { package = "picollo-hdrhistogram", version = "0.1" }` (here the rename is
//! the `use` below, as an example of this crate cannot rename its own package). It records
//! request latencies from two threads through `SyncHistogram` recorders, prints percentiles,
//! and writes an interval log.
//!
//! Run: `cargo run -p picollo-hdrhistogram --example switch`.

use picollo_hdrhistogram as hdrhistogram;

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::sync::SyncHistogram;
use hdrhistogram::Histogram;
use std::time::{Duration, SystemTime};

fn main() {
    let mut latencies: SyncHistogram<u64> = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .expect("valid bounds")
        .into_sync();
    let workers: Vec<_> = (0..2u64)
        .map(|worker| {
            let mut recorder = latencies.recorder();
            std::thread::spawn(move || {
                // A pseudo-random latency per request: mostly fast, a slow tail.
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ worker;
                for _ in 0..50_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let ns =
                        20_000 + x % 80_000 + if x.is_multiple_of(100) { 5_000_000 } else { 0 };
                    recorder.record(ns).expect("within the bounds");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("the worker ran");
    }
    latencies.refresh();

    println!("{} requests", latencies.len());
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        println!(
            "p{:<6} {:>10} ns",
            q * 100.0,
            latencies.value_at_quantile(q)
        );
    }
    println!(
        "mean {:.0} ns, stdev {:.0} ns",
        latencies.mean(),
        latencies.stdev()
    );

    let mut log = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .with_base_time(SystemTime::UNIX_EPOCH)
        .begin_log_with(&mut log, &mut serializer)
        .expect("writes to memory");
    writer
        .write_histogram(
            &latencies,
            Duration::from_secs(0),
            Duration::from_secs(1),
            None,
        )
        .expect("writes to memory");
    drop(writer);
    println!("interval log: {} bytes", log.len());
    print!(
        "{}",
        String::from_utf8_lossy(&log)
            .lines()
            .last()
            .map_or(String::new(), |l| format!("{:.60}...\n", l))
    );
}
