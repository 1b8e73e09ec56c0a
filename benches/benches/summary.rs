//! Wall-clock cost of reading a full-range histogram (block `summary`): `Summary::fill_from`
//! (16 ranks, mean, standard deviation, total, min and max in one consistent read) against
//! `hdrhistogram`'s batch `value_at_quantiles` for the same 16 ranks plus `mean()` and
//! `stdev()`, and the cost of `Snapshot::update` (deltas and totals) for plain and thread-local
//! sources. The 16 quantiles alone are in `percentile_wall`.
//!
//! Data: the 1,000,000 benchmark values of Picollo for .NET (`picollo_benches::seed_values`). Picollo: the default
//! histogram (u64 counts, 0.001 relative error, all of `u64`). `hdrhistogram`: 3 significant
//! digits with the benchmark's fixed maximum (the counts array `Histogram::new(3)` auto-resizes to
//! for this data: it covers only up to the largest value, about 7.7e9, so it walks fewer cells).
//! Its batch API has one call site in this binary, so LLVM inlines it. The cases run
//! interleaved, round after round; each keeps its best and median round (`CALLS` calls each).
//!
//! Run: `cargo bench -p picollo-benches --bench summary`.

use picollo_alloc::{HistogramBuilder, SnapshotExt, Summary};
use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, repeat};
use picollo_benches::{hdr_histogram, seed_values, SEED_COUNT};
use picollo_core::{HistogramRead, Layout, ReadExt};
use std::hint::black_box;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 31;
/// Calls per round (the figures are per call).
const CALLS: u32 = 20;

fn main() {
    let values = seed_values(SEED_COUNT);

    let mut plain = HistogramBuilder::new().dense().plain().unwrap();
    let mut hdr = hdr_histogram();
    for &v in &values {
        plain.record(v);
        hdr.record(v).expect("within the fixed maximum");
    }
    let quantiles: Vec<f64> = Summary::RANKS.iter().map(|r| r / 100.0).collect();

    // Both read the same percentiles (hdrhistogram at its own 3-digit precision). Through
    // `value_at_quantile`: the batch API keeps its one call site (below), so LLVM inlines it.
    let mut summary = Summary::new();
    summary.fill_from(&plain);
    let theirs: Vec<u64> = quantiles
        .iter()
        .map(|&q| hdr.value_at_quantile(q))
        .collect();

    let layout = Layout::DEFAULT;
    let local = HistogramBuilder::new()
        .layout(layout)
        .thread_local()
        .unwrap();
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

        let mut snap_plain = plain.snapshot();
        let mut snap_local = local.snapshot();
        let names = [
            "`Summary::fill_from`, plain, full range (16 ranks, mean, stdev, totals)",
            "`Summary::fill_from`, thread-local (2 live shards)",
            "`hdrhistogram` `value_at_quantiles(16)` + `mean()` + `stdev()`",
            "`Snapshot::update` with deltas, plain",
            "`Snapshot::update` with deltas, thread-local (2 shards)",
            "`Snapshot::update` with totals, plain",
        ];
        let mut summary_local = Summary::new();
        let mut snap_totals = plain.snapshot();
        let t = interleaved(
            ROUNDS,
            &mut [
                &mut || {
                    repeat(CALLS, || {
                        summary.fill_from(black_box(&plain));
                        black_box(summary.p99().value);
                    })
                },
                &mut || {
                    repeat(CALLS, || {
                        summary_local.fill_from(black_box(&local));
                        black_box(summary_local.p99().value);
                    })
                },
                &mut || {
                    repeat(CALLS, || {
                        let h = black_box(&hdr);
                        black_box(h.value_at_quantiles(quantiles.iter().copied()).sum::<u64>());
                        black_box((h.mean() + h.stdev()) as u64);
                    })
                },
                &mut || {
                    repeat(CALLS, || {
                        snap_plain.update(black_box(&plain), true);
                        black_box(snap_plain.counts()[0]);
                    })
                },
                &mut || {
                    repeat(CALLS, || {
                        snap_local.update(black_box(&local), true);
                        black_box(snap_local.counts()[0]);
                    })
                },
                &mut || {
                    repeat(CALLS, || {
                        snap_totals.update(black_box(&plain), false);
                        black_box(snap_totals.counts()[0]);
                    })
                },
            ],
        );
        let _ = stop_tx.send(());

        let _block = Block::begin("summary");
        println!(
            "Cells: Picollo {} (all of u64), `hdrhistogram` {} (fixed maximum {}). P50: Picollo \
             {} / `hdrhistogram` {}; P99.9: {} / {}. {ROUNDS} interleaved rounds of {CALLS} \
             calls.",
            plain.window().len(),
            hdr.distinct_values(),
            hdr.high(),
            summary.p50().value,
            theirs[5],
            summary.percentiles()[12].value,
            theirs[12]
        );
        println!();
        header(&["case", "best µs per call", "median µs per call"]);
        for (name, t) in names.iter().zip(&t) {
            let (best, median) = t.us_per(CALLS);
            println!("| {name} | {best:.1} | {median:.1} |");
        }
        let (full, _) = t[0].us_per(CALLS);
        let (peer, _) = t[2].us_per(CALLS);
        println!();
        println!(
            "A full summary (plain) against `hdrhistogram`'s quantiles + mean + stdev: {:.2}× \
             faster (best rounds).",
            peer / full
        );
    });
}
