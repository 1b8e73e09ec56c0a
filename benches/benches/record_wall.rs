//! Wall-clock comparison against `hdrhistogram`, in one run: best-of-N nanoseconds per record
//! on the seed's data, the ratio to the anchor, the 16-rank percentile batch, and the atomic
//! kind on one and two threads. Run: `cargo bench -p picollo-benches --bench record_wall`.

use picollo_benches::*;
use picollo_core::{AtomicHistogram, ReadExt};
use portable_atomic::AtomicU64;
use std::hint::black_box;
use std::time::Instant;

const REPS: usize = 25;

/// Best time of `REPS` runs of `f`, in nanoseconds per operation.
fn best_ns(ops: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_nanos() as f64 / ops as f64);
    }
    best
}

fn row(name: &str, ns: f64, anchor: f64) {
    println!("| {name:<44} | {ns:>8.3} | {:>7.2}x |", anchor / ns);
}

fn main() {
    let values = seed_values(SEED_COUNT);
    let n = values.len();
    println!("seed data: {n} values r^3 * {SEED_MAX}; best of {REPS} runs");
    println!("| case | ns/op | speed-up vs hdrhistogram |");
    println!("| :--- | ---: | ---: |");

    let mut hdr = hdr_histogram();
    let anchor = best_ns(n, || {
        for &v in &values {
            let _ = hdr.record(black_box(v));
        }
    });
    let mut rt = runtime_histogram();
    let runtime = best_ns(n, || {
        for &v in &values {
            rt.record(black_box(v));
        }
    });
    let mut ct = const_histogram();
    let constant = best_ns(n, || {
        for &v in &values {
            ct.record(black_box(v));
        }
    });
    let baseline = best_ns(n, || {
        let mut acc = 0u64;
        for &v in &values {
            acc = acc.wrapping_add(black_box(v));
        }
        black_box(acc);
    });
    row("hdrhistogram record", anchor, anchor);
    row("picollo plain record (runtime layout)", runtime, anchor);
    row("picollo plain record (const layout)", constant, anchor);
    row("loop reading values only (baseline)", baseline, anchor);
    assert_eq!(rt.total(), ct.total());

    let atomic: Box<AtomicHistogram<[AtomicU64; SEED_LEN]>> =
        Box::new(AtomicHistogram::new(LAYOUT, 0, SEED_MAX));
    let atomic_1 = best_ns(n, || {
        for &v in &values {
            atomic.record(black_box(v));
        }
    });
    row("picollo atomic record, 1 thread", atomic_1, anchor);
    println!(
        "atomic / plain (uncontended): {:.2}x (target: at most 3x)",
        atomic_1 / runtime
    );

    // Two threads, each recording the whole data set once per rep.
    let two = |f: &(dyn Fn() + Sync)| {
        best_ns(n, || {
            std::thread::scope(|s| {
                s.spawn(f);
                f();
            })
        })
    };
    let atomic_2 = two(&|| {
        for &v in &values {
            atomic.record(black_box(v));
        }
    });
    let plain_2 = two(&|| {
        let mut own = runtime_histogram();
        for &v in &values {
            own.record(black_box(v));
        }
        black_box(&own);
    });
    let mut sync = hdrhistogram::sync::SyncHistogram::from(hdr_histogram());
    let recorder = std::sync::Mutex::new(sync.recorder());
    let hdr_2 = two(&|| {
        let mut rec = recorder.lock().expect("not poisoned").clone();
        for &v in &values {
            let _ = rec.record(black_box(v));
        }
    });
    drop(recorder);
    sync.refresh();
    println!();
    println!("two threads, each recording all {n} values (ns per value per thread, wall):");
    println!("| case | ns/op | vs hdrhistogram SyncHistogram |");
    println!("| :--- | ---: | ---: |");
    row("hdrhistogram SyncHistogram recorders", hdr_2, hdr_2);
    row("picollo atomic, shared", atomic_2, hdr_2);
    row("picollo plain, one per thread", plain_2, hdr_2);

    // Percentile batch over a full-range histogram.
    let mut full = full_range_histogram();
    let mut hdr_full = hdrhistogram::Histogram::<u64>::new(3).expect("valid");
    for &v in &values {
        full.record(v);
        hdr_full.record(v).expect("auto-resize");
    }
    let mut out = [picollo_core::Percentile::default(); 16];
    let ours = best_ns(1, || {
        full.percentiles(black_box(&SUMMARY_RANKS), &mut out)
            .expect("not empty");
    });
    let theirs = best_ns(1, || {
        let q = black_box(SUMMARY_RANKS).map(|r| r / 100.0);
        black_box(hdr_full.value_at_quantiles(q).count());
    });
    println!();
    println!("16-rank percentile batch, full-range histograms (ns per batch):");
    println!("| case | ns/batch | speed-up vs hdrhistogram |");
    println!("| :--- | ---: | ---: |");
    row("hdrhistogram value_at_quantiles", theirs, theirs);
    row("picollo percentiles", ours, theirs);

    println!();
    println!("storage bytes (seed configurations):");
    println!("| max trackable | picollo u64 cells | picollo u32 cells | hdrhistogram u64 counts |");
    println!("| ---: | ---: | ---: | ---: |");
    for max in [30_000u64, 1_000_000_000, SEED_MAX, i64::MAX as u64] {
        let cells = picollo_core::storage_len(LAYOUT, 0, max);
        let hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, max, 3).expect("valid");
        println!(
            "| {max} | {} | {} | {} |",
            cells * 8,
            cells * 4,
            hdr.distinct_values() * 8
        );
    }
}
