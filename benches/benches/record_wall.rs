//! Wall-clock comparison against `hdrhistogram` on one thread, in one run: nanoseconds per
//! record on the benchmark data, the ratio to the peer's fastest configuration, and the storage
//! each side needs for the benchmark's configurations.
//!
//! Fair to the peer: `hdrhistogram` with the benchmark's fixed maximum (auto-resize off), `u64` and
//! `u32` counts, through `record` (its fastest API, see `peer_record_iai`); this binary holds
//! the only call of its `record` for each count type, so LLVM inlines the crate's record path
//! into the loop as it would in a program that records in one place. (The two-thread cases,
//! whose `SyncHistogram` recorders call `record` too, are in `thread_local`; the percentile
//! batch is in `summary`.) The cases run interleaved, round after round, and each keeps its
//! best and median round; the speed-up is taken within this run.
//!
//! Run: `cargo bench -p picollo-benches --bench record_wall`.

use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, time, Timing};
use picollo_benches::*;
use picollo_core::{AtomicHistogram, Histogram, ReadExt};
use portable_atomic::AtomicU64;
use std::hint::black_box;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 51;

fn main() {
    let values = seed_values(SEED_COUNT);
    let n = values.len();

    let mut hdr = hdr_histogram();
    let mut hdr_u32 = hdr_histogram_with::<u32>();
    let mut rt = runtime_histogram();
    let mut ct = const_histogram();
    let mut rt_u32: Box<Histogram<[u32; SEED_LEN]>> = Box::new(Histogram::new(LAYOUT, 0, SEED_MAX));
    let atomic: Box<AtomicHistogram<[AtomicU64; SEED_LEN]>> =
        Box::new(AtomicHistogram::new(LAYOUT, 0, SEED_MAX));
    // The builder's default since issue 30: sparse storage (pages installed by the warm-up).
    let mut sparse = picollo_alloc::HistogramBuilder::new()
        .max_trackable(SEED_MAX)
        .plain()
        .expect("valid");

    let t = interleaved(
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
                        let _ = hdr.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        let _ = hdr_u32.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        rt.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        ct.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        rt_u32.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        atomic.record(black_box(v));
                    }
                })
            },
            &mut || {
                time(|| {
                    for &v in &values {
                        sparse.record(black_box(v));
                    }
                })
            },
        ],
    );
    // Every case recorded every value in every round (and the warm-up).
    let recorded = (ROUNDS as u64 + 1) * n as u64;
    assert_eq!(
        (rt.total(), ct.total(), rt_u32.total()),
        (recorded, recorded, recorded)
    );
    assert_eq!(
        (hdr.len(), hdr_u32.len(), atomic.total(), sparse.total()),
        (recorded, recorded, recorded, recorded)
    );

    let [baseline, hdr_u64, hdr_u32, runtime, constant, runtime_u32, atomic_1, sparse_1] =
        t[..].try_into().expect("one timing per case");
    // The peer at its best: whichever count type was faster in this run.
    let peer = |pick: &dyn Fn(&Timing) -> f64| pick(&hdr_u64).min(pick(&hdr_u32));
    let (peer_best, peer_median) = (peer(&|t| t.best_ns(n)), peer(&|t| t.median_ns(n)));

    let block = Block::begin("record-wall");
    println!(
        "Seed data: {n} values `r^3 · {SEED_MAX}`; {ROUNDS} interleaved rounds; ns per record; \
         speed-up = the faster `hdrhistogram` configuration's time ÷ this case's (best with \
         best, median with median)."
    );
    println!();
    header(&[
        "case",
        "best ns",
        "median ns",
        "speed-up (best)",
        "speed-up (median)",
    ]);
    let row = |name: &str, t: &Timing| {
        let (best, median) = (t.best_ns(n), t.median_ns(n));
        println!(
            "| {name} | {best:.3} | {median:.3} | {:.2}× | {:.2}× |",
            peer_best / best,
            peer_median / median
        );
    };
    row("`hdrhistogram` `record`, u64 counts", &hdr_u64);
    row("`hdrhistogram` `record`, u32 counts", &hdr_u32);
    row("Picollo plain, runtime layout, u64", &runtime);
    row("Picollo plain, const layout, u64", &constant);
    row("Picollo plain, runtime layout, u32", &runtime_u32);
    row("Picollo atomic, 1 thread (uncontended)", &atomic_1);
    row(
        "Picollo plain, sparse storage (builder default), runtime layout, u64",
        &sparse_1,
    );
    row("loop reading values only (baseline)", &baseline);
    println!();
    println!(
        "Atomic ÷ plain (runtime layout, uncontended): {:.2}× best, {:.2}× median (target: at \
         most 3×).",
        atomic_1.best_ns(n) / runtime.best_ns(n),
        atomic_1.median_ns(n) / runtime.median_ns(n)
    );
    drop(block);

    let _block = Block::begin("storage-bytes");
    println!(
        "Picollo at `B = 512` (relative error 0.098%) against `hdrhistogram` at 3 digits (2048 \
         sub-buckets, relative error 0.049%, Picollo for .NET's legacy comparison)."
    );
    println!();
    header(&[
        "max trackable",
        "Picollo u64 cells",
        "Picollo u32 cells",
        "`hdrhistogram` u64 counts",
        "`hdrhistogram` u32 counts",
    ]);
    for max in [30_000u64, 1_000_000_000, SEED_MAX, i64::MAX as u64] {
        let cells = picollo_core::storage_len(LAYOUT, 0, max);
        let hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, max, 3).expect("valid");
        println!(
            "| {max} | {} | {} | {} | {} |",
            cells * 8,
            cells * 4,
            hdr.distinct_values() * 8,
            hdr.distinct_values() * 4
        );
    }
}
