//! Wall-clock cost of a record, thread-local against atomic and plain, on one and two
//! threads, with `hdrhistogram`'s `SyncHistogram` + `Recorder` (its thread-local pattern) as
//! the anchor: nanoseconds per record per thread, on seed 000's data (max trackable
//! 7716549600, 0.001 relative error). The cases run interleaved, round after round, and each
//! keeps its best round, so that a noisy moment hurts every case alike.
//!
//! Run: `cargo bench -p picollo-benches --bench thread_local`.

use picollo_alloc::{heap, HeapHistogram, ThreadLocalHistogram};
use picollo_benches::*;
use picollo_core::{ReadExt, Window};
use portable_atomic::AtomicU64;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

const ROUNDS: usize = 30;

fn main() {
    let values = seed_values(SEED_COUNT);
    let n = values.len();
    let window = Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max");
    let cells = window.len();

    // Plain: one histogram per thread (the ideal: nothing shared), allocated up front and
    // moved into a local for the run, so the compiler keeps its fields in registers.
    let own: Vec<Mutex<Option<HeapHistogram>>> = (0..2)
        .map(|_| Mutex::new(Some(heap::plain::<u64>(LAYOUT, window))))
        .collect();
    let plain = |i: usize| {
        let mut slot = own[i].lock().expect("not poisoned");
        if let Some(mut h) = slot.take() {
            for &v in &values {
                h.record(black_box(v));
            }
            black_box(h.total());
            *slot = Some(h);
        }
    };
    let local = ThreadLocalHistogram::<u64>::new(LAYOUT, window);
    let thread_local = |_: usize| {
        for &v in &values {
            local.record(black_box(v));
        }
    };
    let atomic_h = heap::atomic::<AtomicU64>(LAYOUT, window);
    let atomic = |_: usize| {
        for &v in &values {
            atomic_h.record(black_box(v));
        }
    };
    let mut sync = hdrhistogram::sync::SyncHistogram::from(hdr_histogram());
    let recorder = Mutex::new(sync.recorder());
    let hdr = |_: usize| {
        let mut rec = recorder.lock().map(|r| r.clone()).expect("not poisoned");
        for &v in &values {
            let _ = rec.record(black_box(v));
        }
    };

    type Case<'a> = (&'a str, usize, usize, &'a (dyn Fn(usize) + Sync));
    let cases: [Case; 8] = [
        ("plain, 1 thread", 1, cells * 8, &plain),
        ("thread-local, 1 thread", 1, 2 * cells * 8, &thread_local),
        ("atomic, 1 thread", 1, cells * 8, &atomic),
        (
            "hdrhistogram SyncHistogram + Recorder, 1 thread",
            1,
            0,
            &hdr,
        ),
        ("plain, one per thread, 2 threads", 2, 2 * cells * 8, &plain),
        ("thread-local, 2 threads", 2, 3 * cells * 8, &thread_local),
        ("atomic, shared, 2 threads", 2, cells * 8, &atomic),
        (
            "hdrhistogram SyncHistogram + Recorder, 2 threads",
            2,
            0,
            &hdr,
        ),
    ];
    let mut best = [Duration::MAX; 8];
    for _ in 0..ROUNDS {
        for (b, &(_, threads, _, f)) in best.iter_mut().zip(&cases) {
            *b = (*b).min(run_threads(threads, f));
        }
    }

    println!(
        "seed data: {n} values r^3 * {SEED_MAX}; best of {ROUNDS} interleaved rounds; \
         ns per record per thread (wall)"
    );
    println!("| case | footprint (bytes) | ns/op | vs plain, same threads |");
    println!("| :--- | ---: | ---: | ---: |");
    let ns = |d: Duration| d.as_nanos() as f64 / n as f64;
    for ((name, threads, footprint, _), b) in cases.iter().zip(best) {
        let plain = ns(best[if *threads == 1 { 0 } else { 4 }]);
        println!(
            "| {name:<48} | {footprint:>9} | {:>7.3} | {:>6.2}x |",
            ns(b),
            ns(b) / plain
        );
    }
    drop(recorder);
    sync.refresh();
    // Every run recorded every value: the thread-local histogram lost nothing.
    let runs = (ROUNDS * 3) as u64;
    assert_eq!(local.total(), runs * n as u64, "thread-local lost counts");
    println!(
        "thread-local: {} shards for at most 2 threads at a time; hdrhistogram's footprint is \
         not comparable (each recorder has its own histogram, swapped on refresh)",
        local.shard_count()
    );
}
