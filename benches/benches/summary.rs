//! Wall-clock cost of reading a full-range histogram: `Summary::fill_from` (16 ranks, mean,
//! standard deviation, total, min and max in one consistent read) against `hdrhistogram`'s
//! batch `value_at_quantiles` for the same 16 ranks plus `mean()` and `stdev()`, and the cost
//! of `Snapshot::update` (deltas) for plain and thread-local sources.
//!
//! Data: seed 000's 1,000,000 values (`picollo_benches::seed_values`). Picollo: the default
//! histogram (u64 counts, 0.001 relative error, all of `u64`: 28,672 cells). `hdrhistogram`:
//! `Histogram::new(3)` (3 significant digits, auto-resizing to the data: it covers only up to
//! the largest value, about 7.7e9, so it walks fewer cells). The cases run interleaved,
//! round after round; each keeps its best round.
//!
//! Run: `cargo bench -p picollo-benches --bench summary`.

use picollo_alloc::summary::RANKS;
use picollo_alloc::{default_histogram, SnapshotExt, Summary, ThreadLocalHistogram};
use picollo_benches::seed_values;
use picollo_core::{Layout, ReadExt, Window};
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROUNDS: usize = 30;
/// Calls per round (the best round's mean is reported).
const CALLS: u32 = 20;

/// Best-of-`ROUNDS` per-call time, for several cases run interleaved.
struct Best(Vec<(&'static str, Duration)>);

impl Best {
    fn time(&mut self, case: usize, mut f: impl FnMut()) {
        let t = Instant::now();
        for _ in 0..CALLS {
            f();
        }
        let per_call = t.elapsed() / CALLS;
        if per_call < self.0[case].1 {
            self.0[case].1 = per_call;
        }
    }
}

fn main() {
    let values = seed_values(1_000_000);

    let mut plain = default_histogram();
    let mut hdr = hdrhistogram::Histogram::<u64>::new(3).expect("3 digits are valid");
    for &v in &values {
        plain.record(v);
        hdr.record(v).expect("auto-resizing");
    }
    let layout = Layout::DEFAULT;
    let local = ThreadLocalHistogram::<u64>::new(layout, Window::full(layout));
    // Two shards: this thread's and one from a thread that is still alive while we read.
    let (half_a, half_b) = values.split_at(values.len() / 2);
    half_a.iter().for_each(|&v| local.record(v));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let local = &local;
        s.spawn(move || {
            half_b.iter().for_each(|&v| local.record(v));
            let _ = ready_tx.send(());
            let _ = stop_rx.recv();
        });
        let _ = ready_rx.recv();
        assert_eq!(local.total(), plain.total());

        let quantiles: Vec<f64> = RANKS.iter().map(|r| r / 100.0).collect();
        let mut summary = Summary::new();
        let mut snap_plain = plain.snapshot();
        let mut snap_local = local.snapshot();
        let mut best = Best(vec![
            ("Summary::fill_from (plain, full range)", Duration::MAX),
            ("Summary::fill_from (thread-local, 2 shards)", Duration::MAX),
            (
                "hdrhistogram value_at_quantiles(16) + mean + stdev",
                Duration::MAX,
            ),
            ("hdrhistogram value_at_quantiles(16) only", Duration::MAX),
            ("Snapshot::update deltas (plain)", Duration::MAX),
            (
                "Snapshot::update deltas (thread-local, 2 shards)",
                Duration::MAX,
            ),
            ("Snapshot::update totals (plain)", Duration::MAX),
        ]);
        let mut sink = 0u64;
        for _ in 0..ROUNDS {
            best.time(0, || {
                summary.fill_from(black_box(&plain));
                sink ^= summary.p99().value;
            });
            best.time(1, || {
                summary.fill_from(black_box(&local));
                sink ^= summary.p99().value;
            });
            best.time(2, || {
                let h = black_box(&hdr);
                sink ^= h.value_at_quantiles(quantiles.iter().copied()).sum::<u64>();
                sink ^= (h.mean() + h.stdev()) as u64;
            });
            best.time(3, || {
                let h = black_box(&hdr);
                sink ^= h.value_at_quantiles(quantiles.iter().copied()).sum::<u64>();
            });
            best.time(4, || {
                snap_plain.update(black_box(&plain), true);
                sink ^= snap_plain.counts()[0];
            });
            best.time(5, || {
                snap_local.update(black_box(&local), true);
                sink ^= snap_local.counts()[0];
            });
            best.time(6, || {
                snap_plain.update(black_box(&plain), false);
                sink ^= snap_plain.counts()[0];
            });
        }
        let _ = stop_tx.send(());
        black_box(sink);

        // Both read the same percentiles (hdrhistogram at its own 3-digit precision).
        summary.fill_from(&plain);
        let theirs: Vec<u64> = hdr.value_at_quantiles(quantiles.iter().copied()).collect();
        println!(
            "cells: picollo {} (all of u64), hdrhistogram {} (auto-resized to {})",
            plain.window().len(),
            hdr.distinct_values(),
            hdr.high()
        );
        println!(
            "P50: picollo {} / hdrhistogram {}; P99.9: {} / {}",
            summary.p50().value,
            theirs[5],
            summary.percentiles()[12].value,
            theirs[12]
        );
        println!("| case | best µs per call |");
        println!("|---|---:|");
        for (name, d) in &best.0 {
            println!("| {name} | {:.1} |", d.as_secs_f64() * 1e6);
        }
    });
}
