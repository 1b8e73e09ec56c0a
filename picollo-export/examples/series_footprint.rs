//! Memory per series of the `metrics` recorder, as a service with many label sets sees it:
//! `SERIES` label sets of `rpc_latency_seconds`, each recorded `n` values spread over 1 µs .. 1 s
//! (log-uniform), for `n` = 20, 200 and 2,000, by `threads` threads each, with the recorder's
//! default (atomic histograms over sparse storage) and with the thread-local kind. Prints the
//! bytes the histograms hold per series (`PicolloRecorder::histogram_footprint`: cells, pages,
//! tables, shards; not the registry's names and labels), and the time to create and
//! first-record every series.
//!
//! Run: `cargo run --release -p picollo-export --features metrics --example series_footprint`.

use std::sync::Arc;
use std::time::Instant;

use picollo_export::recorder::{HistogramKind, RecorderBuilder};
use picollo_export::Registry;

const SERIES: usize = 1_000;

/// `n` values in seconds, log-uniform over 1 µs .. 1 s, from a fixed seed per series.
fn values(series: usize, n: usize) -> Vec<f64> {
    let mut s = (series as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let r = (s >> 11) as f64 / (1u64 << 53) as f64;
            1e-6 * 1e6f64.powf(r)
        })
        .collect()
}

fn main() {
    println!("| kind | threads | values per series (per thread) | bytes per series | create + first record, µs per series |");
    println!("| :--- | ---: | ---: | ---: | ---: |");
    for (kind, name) in [
        (HistogramKind::Atomic, "atomic, sparse (default)"),
        (HistogramKind::ThreadLocal, "thread-local, sparse shards"),
    ] {
        for threads in [1usize, 2] {
            for n in [20usize, 200, 2_000] {
                let recorder = RecorderBuilder::new()
                    .kind(kind)
                    .scale(1e9)
                    .build(Arc::new(Registry::new()))
                    .expect("a configuration the builder accepts");
                let series: Vec<Vec<f64>> = (0..SERIES).map(|i| values(i, n)).collect();
                let start = Instant::now();
                metrics::with_local_recorder(&recorder, || {
                    for (i, v) in series.iter().enumerate() {
                        metrics::histogram!("rpc_latency_seconds", "route" => i.to_string())
                            .record(v[0]);
                    }
                });
                let create = start.elapsed();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        let (recorder, series) = (&recorder, &series);
                        s.spawn(move || {
                            metrics::with_local_recorder(recorder, || {
                                for (i, v) in series.iter().enumerate() {
                                    let h = metrics::histogram!("rpc_latency_seconds", "route" => i.to_string());
                                    v.iter().for_each(|&x| h.record(x));
                                }
                            })
                        });
                    }
                });
                let (bytes, count) = recorder.histogram_footprint();
                println!(
                    "| {name} | {threads} | {n} | {} | {:.2} |",
                    bytes / count,
                    create.as_secs_f64() * 1e6 / SERIES as f64
                );
            }
        }
    }
}
