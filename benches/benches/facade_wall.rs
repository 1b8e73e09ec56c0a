//! `picollo-hdrhistogram` beside the real `hdrhistogram`, wall clock, one thread, one run
//! (issue 45): nanoseconds per `record` (u64 and u32 counts), per `value_at_quantile` at the 16
//! summary ranks, per `value_at_percentiles` pass over them, per `iter_recorded` pass, and the
//! bytes each histogram holds.
//!
//! Fair to the peer: both `new_with_bounds(1, 7716549600, 3)` (auto-resize off), both through
//! `record`, one call site of each record path in this binary (inlined into its loop; the
//! filled histograms of the read cases are copies of the recording cases', made by `add`,
//! which for equal layouts copies the counts without recording). The cases run interleaved,
//! round after round; each keeps its best and median round; ratios are taken within this run.
//!
//! Run: `cargo bench -p picollo-benches --bench facade_wall`.

use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, time};
use picollo_benches::*;
use std::hint::black_box;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 51;

type Peer<C> = hdrhistogram::Histogram<C>;
type Facade<C> = picollo_hdrhistogram::Histogram<C>;

fn main() {
    let values = seed_values(SEED_COUNT);
    let n = values.len();
    let mut peer: Peer<u64> = Peer::new_with_bounds(1, SEED_MAX, 3).expect("valid");
    let mut peer_u32: Peer<u32> = Peer::new_with_bounds(1, SEED_MAX, 3).expect("valid");
    let mut facade: Facade<u64> = Facade::new_with_bounds(1, SEED_MAX, 3).expect("valid");
    let mut facade_u32: Facade<u32> = Facade::new_with_bounds(1, SEED_MAX, 3).expect("valid");

    let records = interleaved(
        ROUNDS,
        &mut [
            &mut || {
                time(|| {
                    black_box(read_loop(&values));
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = peer.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = facade.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = peer_u32.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = facade_u32.record(black_box(v));
                    }
                })
            },
        ],
    );
    // `sync`: one thread recording through a `Recorder` (its record path: the local histogram
    // plus the hand-over check), each side's.
    let mut peer_sync: hdrhistogram::sync::SyncHistogram<u64> =
        Peer::<u64>::new_with_bounds(1, SEED_MAX, 3)
            .expect("valid")
            .into_sync();
    let mut facade_sync: picollo_hdrhistogram::sync::SyncHistogram<u64> =
        Facade::<u64>::new_with_bounds(1, SEED_MAX, 3)
            .expect("valid")
            .into_sync();
    let mut peer_recorder = peer_sync.recorder();
    let mut facade_recorder = facade_sync.recorder();
    let recorders = interleaved(
        ROUNDS,
        &mut [
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = peer_recorder.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = facade_recorder.record(black_box(v));
                    }
                })
            },
        ],
    );
    drop((peer_recorder, facade_recorder));
    peer_sync.refresh();
    facade_sync.refresh();
    assert_eq!(peer_sync.len(), facade_sync.len());

    let recorded = (ROUNDS as u64 + 1) * n as u64;
    assert_eq!((peer.len(), facade.len()), (recorded, recorded));
    assert_eq!((peer_u32.len(), facade_u32.len()), (recorded, recorded));
    // The same answers from both.
    for &p in &SUMMARY_RANKS {
        assert_eq!(
            peer.value_at_percentile(p),
            facade.value_at_percentile(p),
            "at {p}"
        );
    }

    assert!(peer
        .value_at_percentiles(SUMMARY_RANKS)
        .eq(facade.value_at_percentiles(SUMMARY_RANKS)));

    // Reads: 16 ranks per batch, 200 batches per round (a call each, then the 16 in one pass
    // of `value_at_percentiles`); one pass of `iter_recorded` per call, 20 calls per round.
    const BATCHES: u32 = 200;
    const PASSES: u32 = 20;
    let reads = interleaved(
        ROUNDS,
        &mut [
            &mut || {
                time(|| {
                    for _ in 0..BATCHES {
                        for &p in &SUMMARY_RANKS {
                            black_box(peer.value_at_percentile(black_box(p)));
                        }
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..BATCHES {
                        for &p in &SUMMARY_RANKS {
                            black_box(facade.value_at_percentile(black_box(p)));
                        }
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..BATCHES {
                        black_box(
                            peer.value_at_percentiles(black_box(SUMMARY_RANKS))
                                .sum::<u64>(),
                        );
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..BATCHES {
                        black_box(
                            facade
                                .value_at_percentiles(black_box(SUMMARY_RANKS))
                                .sum::<u64>(),
                        );
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..PASSES {
                        black_box(
                            peer.iter_recorded()
                                .map(|v| v.value_iterated_to().wrapping_mul(v.count_at_value()))
                                .sum::<u64>(),
                        );
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..PASSES {
                        black_box(
                            facade
                                .iter_recorded()
                                .map(|v| v.value_iterated_to().wrapping_mul(v.count_at_value()))
                                .sum::<u64>(),
                        );
                    }
                })
            },
        ],
    );

    let _block = Block::begin("facade-wall");
    println!(
        "`picollo-hdrhistogram` and `hdrhistogram` 7.6.0, both `new_with_bounds(1, {SEED_MAX}, 3)`; \
         seed data: {n} values `r^3 · {SEED_MAX}`; {ROUNDS} interleaved rounds; speed-up = the \
         peer's time ÷ the facade's (best with best, median with median); record times net of \
         the loop alone."
    );
    println!();
    header(&[
        "operation",
        "peer best ns",
        "facade best ns",
        "speed-up (best)",
        "peer median ns",
        "facade median ns",
        "speed-up (median)",
    ]);
    let loop_best = records[0].best_ns(n);
    let loop_median = records[0].median_ns(n);
    let row = |label: &str, p: (f64, f64), f: (f64, f64)| {
        println!(
            "| {label} | {:.3} | {:.3} | {:.2}× | {:.3} | {:.3} | {:.2}× |",
            p.0,
            f.0,
            p.0 / f.0,
            p.1,
            f.1,
            p.1 / f.1
        );
    };
    let net = |t: &picollo_benches::timing::Timing| {
        (t.best_ns(n) - loop_best, t.median_ns(n) - loop_median)
    };
    row(
        "`record`, u64 counts (ns per record)",
        net(&records[1]),
        net(&records[2]),
    );
    row(
        "`record`, u32 counts (ns per record)",
        net(&records[3]),
        net(&records[4]),
    );
    row(
        "`sync::Recorder::record`, u64 counts (ns per record)",
        net(&recorders[0]),
        net(&recorders[1]),
    );
    let per = |t: &picollo_benches::timing::Timing, ops: usize| (t.best_ns(ops), t.median_ns(ops));
    let q = BATCHES as usize * SUMMARY_RANKS.len();
    row(
        "`value_at_percentile` (ns per call)",
        per(&reads[0], q),
        per(&reads[1], q),
    );
    row(
        "`value_at_percentiles`, the 16 ranks in one pass (ns per pass)",
        per(&reads[2], BATCHES as usize),
        per(&reads[3], BATCHES as usize),
    );
    row(
        "`iter_recorded` (ns per pass)",
        per(&reads[4], PASSES as usize),
        per(&reads[5], PASSES as usize),
    );
    println!();
    // Memory: the counts arrays (both allocate `distinct_values()` counts) plus the struct.
    let bytes = |len: usize, count: usize, header: usize| len * count + header;
    println!(
        "Memory for these bounds: peer {} B (u64) / {} B (u32), facade {} B / {} B ({} counts each; \
         struct {} B peer, {} B facade).",
        bytes(peer.distinct_values(), 8, std::mem::size_of::<Peer<u64>>()),
        bytes(peer_u32.distinct_values(), 4, std::mem::size_of::<Peer<u32>>()),
        bytes(facade.distinct_values(), 8, std::mem::size_of::<Facade<u64>>()),
        bytes(facade_u32.distinct_values(), 4, std::mem::size_of::<Facade<u32>>()),
        facade.distinct_values(),
        std::mem::size_of::<Peer<u64>>(),
        std::mem::size_of::<Facade<u64>>(),
    );
}
