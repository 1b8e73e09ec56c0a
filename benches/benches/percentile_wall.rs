//! Wall-clock cost of the 16-rank percentile batch of Picollo for .NET's summary (block
//! `percentile-wall`): Picollo's `percentiles` against both of `hdrhistogram`'s multi-quantile
//! APIs, the one-pass `value_at_quantiles` iterator and a loop of `value_at_quantile` (which
//! sums eight counts at a time but walks the counts once per rank); the faster one is the
//! anchor.
//!
//! Data: the 1,000,000 benchmark values of Picollo for .NET. Picollo: the full-range histogram (all of `u64` at
//! `B = 512`) and the benchmark window `[0, 7716549600]`. `hdrhistogram`: 3 digits with the benchmark's
//! fixed maximum (the counts array `Histogram::new(3)` auto-resizes to for this data). Each of
//! the peer's APIs has one call site in this binary, so LLVM inlines it (with more call sites,
//! the iterator's `next` stays out of line and keeps its state in memory: about 1.5× slower).
//! The cases run interleaved, round after round; each keeps its best and median round.
//!
//! Block `ticks-wall`: the percentile iteration at 5 ticks per half distance (the `.hgrm`
//! default) over 10,000 latencies log-uniform over 1 µs … 1 s in nanoseconds, at 3 significant
//! digits: Picollo's `percentile_ticks` on the builder's default (sparse) and dense plain
//! histograms, full range, against the `hdrhistogram` crate's `iter_quantiles` on
//! `Histogram::new(3)` (auto-resized to the data). The `read_iai` group `ticks` counts the
//! same walks' instructions.
//!
//! Run: `cargo bench -p picollo-benches --bench percentile_wall`.

use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, repeat};
use picollo_benches::*;
use picollo_core::{EquivalentValue, HistogramRead, Percentile, ReadExt};
use std::hint::black_box;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 31;
/// Batches per round (the figures are per batch).
const CALLS: u32 = 20;

fn main() {
    let values = seed_values(SEED_COUNT);
    let mut full = full_range_histogram();
    let mut seed_window = runtime_histogram();
    let mut hdr = hdr_histogram();
    for &v in &values {
        full.record(v);
        seed_window.record(v);
        hdr.record(v).expect("within the fixed maximum");
    }
    let quantiles = SUMMARY_RANKS.map(|r| r / 100.0);

    let t = interleaved(
        ROUNDS,
        &mut [
            &mut || {
                repeat(CALLS, || {
                    let h = black_box(&hdr);
                    black_box(h.value_at_quantiles(black_box(quantiles)).sum::<u64>());
                })
            },
            &mut || {
                repeat(CALLS, || {
                    let h = black_box(&hdr);
                    let q = black_box(quantiles);
                    black_box(q.iter().map(|&q| h.value_at_quantile(q)).sum::<u64>());
                })
            },
            &mut || {
                repeat(CALLS, || {
                    let mut out = [Percentile::default(); 16];
                    full.percentiles(
                        black_box(&SUMMARY_RANKS),
                        EquivalentValue::Midpoint,
                        &mut out,
                    )
                    .expect("not empty");
                    black_box(out);
                })
            },
            &mut || {
                repeat(CALLS, || {
                    let mut out = [Percentile::default(); 16];
                    seed_window
                        .percentiles(
                            black_box(&SUMMARY_RANKS),
                            EquivalentValue::Midpoint,
                            &mut out,
                        )
                        .expect("not empty");
                    black_box(out);
                })
            },
        ],
    );
    let (iter, looped) = (t[0].us_per(CALLS), t[1].us_per(CALLS));
    let peer = (iter.0.min(looped.0), iter.1.min(looped.1));

    let _block = Block::begin("percentile-wall");
    println!(
        "16 ranks of Picollo for .NET's summary per batch; cells: Picollo full range {}, seed window \
         {SEED_LEN}, `hdrhistogram` {}; {ROUNDS} interleaved rounds of {CALLS} batches; \
         speed-up = the faster `hdrhistogram` API's time ÷ this case's.",
        full.window().len(),
        hdr.distinct_values()
    );
    println!();
    speed_up_rows(
        &[
            "`hdrhistogram` `value_at_quantiles` (one-pass iterator)",
            "`hdrhistogram` `value_at_quantile` × 16",
            "Picollo `percentiles`, full range",
            "Picollo `percentiles`, seed window",
        ],
        &t,
        peer,
    );
    drop(_block);
    ticks();
}

/// Block `ticks-wall` (see the module docs).
fn ticks() {
    const TICKS: u32 = 5;
    let values: Vec<u64> = latency::log_uniform(10_000, 7)
        .into_iter()
        .map(|s| (s * 1e9) as u64)
        .collect();
    let builder = picollo_alloc::HistogramBuilder::new().sigfig(3);
    let mut sparse = builder.plain().expect("3 digits, full range");
    let mut dense = builder.dense().plain().expect("3 digits, full range");
    let mut hdr = hdrhistogram::Histogram::<u64>::new(3).expect("3 digits");
    for &v in &values {
        sparse.record(v);
        dense.record(v);
        hdr.record(v).expect("auto-resized");
    }
    fn picollo<H: HistogramRead>(h: &H) -> u64 {
        h.percentile_ticks(black_box(TICKS))
            .expect("ticks above 0")
            .fold(0u64, |sum, step| sum.wrapping_add(step.value_iterated_to))
    }
    let t = interleaved(
        ROUNDS,
        &mut [
            &mut || {
                repeat(CALLS, || {
                    let h = black_box(&hdr);
                    black_box(
                        h.iter_quantiles(black_box(TICKS))
                            .fold(0u64, |sum, step| sum.wrapping_add(step.value_iterated_to())),
                    );
                })
            },
            &mut || {
                repeat(CALLS, || {
                    black_box(picollo(black_box(&sparse)));
                })
            },
            &mut || {
                repeat(CALLS, || {
                    black_box(picollo(black_box(&dense)));
                })
            },
        ],
    );
    let peer = t[0].us_per(CALLS);
    let _block = Block::begin("ticks-wall");
    println!(
        "The percentile iteration at {TICKS} ticks per half distance over 10,000 log-uniform \
         latencies (1 µs … 1 s, in ns) at 3 digits; the sparse histogram holds {} pages and {} \
         cold-tier words; {ROUNDS} interleaved rounds of {CALLS} iterations; speed-up = \
         `hdrhistogram`'s time ÷ this case's.",
        sparse.storage().pages(),
        sparse.storage().cold_words()
    );
    println!();
    speed_up_rows(
        &[
            "`hdrhistogram` `iter_quantiles`",
            "Picollo `percentile_ticks`, sparse (the builder's default)",
            "Picollo `percentile_ticks`, dense",
        ],
        &t,
        peer,
    );
}

/// The table of cases `names` timed in `t`, each with its speed-up over `peer` (best and
/// median µs).
fn speed_up_rows(names: &[&str], t: &[picollo_benches::timing::Timing], peer: (f64, f64)) {
    header(&[
        "case",
        "best µs",
        "median µs",
        "speed-up (best)",
        "speed-up (median)",
    ]);
    for (name, t) in names.iter().zip(t) {
        let (best, median) = t.us_per(CALLS);
        println!(
            "| {name} | {best:.2} | {median:.2} | {:.2}× | {:.2}× |",
            peer.0 / best,
            peer.1 / median
        );
    }
}
