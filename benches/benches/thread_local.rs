//! Wall-clock cost of a record on one and two threads: Picollo's plain (one histogram per
//! thread), thread-local and shared atomic kinds against `hdrhistogram`'s `SyncHistogram` with
//! one `Recorder` per thread (its per-thread pattern, the like-for-like peer of the
//! thread-local kind): nanoseconds per record per thread, every thread recording all of seed
//! 000's data (max trackable 7716549600, 0.001 relative error).
//!
//! Fair to the peer: its recorders are created before the timing and kept by their threads
//! across rounds (as a server keeps one per worker), with the seed's fixed maximum, `u64` and
//! `u32` counts; this binary holds the only call of `record` for each count type, so it is
//! inlined. The cases run interleaved, round after round; each keeps its best and median
//! round, and a round's time is its slowest thread's.
//!
//! Run: `cargo bench -p picollo-benches --bench thread_local`.

use hdrhistogram::sync::{Recorder, SyncHistogram};
use picollo_alloc::{heap, HeapHistogram, ThreadLocalHistogram};
use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, Timing};
use picollo_benches::*;
use picollo_core::{ReadExt, Window};
use portable_atomic::AtomicU64;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 31;
/// Most threads a case runs on.
const MAX_THREADS: usize = 2;

/// `MAX_THREADS` recorders of `sync`, one per thread index, made before any timing.
fn recorders<C: hdrhistogram::Counter>(sync: &SyncHistogram<C>) -> Vec<Mutex<Recorder<C>>> {
    (0..MAX_THREADS)
        .map(|_| Mutex::new(sync.recorder()))
        .collect()
}

fn main() {
    let values = seed_values(SEED_COUNT);
    let n = values.len();
    let window = Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max");
    let cells = window.len();

    // Plain: one histogram per thread (the ideal: nothing shared), allocated up front and
    // moved into a local for the run, so the compiler keeps its fields in registers.
    let own: Vec<Mutex<Option<HeapHistogram>>> = (0..MAX_THREADS)
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
    let mut sync = SyncHistogram::from(hdr_histogram());
    let hdr_recorders = recorders(&sync);
    let hdr = |i: usize| {
        let mut rec = hdr_recorders[i].lock().expect("not poisoned");
        for &v in &values {
            let _ = rec.record(black_box(v));
        }
    };
    let mut sync_u32 = SyncHistogram::from(hdr_histogram_with::<u32>());
    let hdr_u32_recorders = recorders(&sync_u32);
    let hdr_u32 = |i: usize| {
        let mut rec = hdr_u32_recorders[i].lock().expect("not poisoned");
        for &v in &values {
            let _ = rec.record(black_box(v));
        }
    };

    type Case<'a> = (&'static str, usize, usize, &'a (dyn Fn(usize) + Sync));
    let cases: [Case; 10] = [
        ("plain, 1 thread", 1, cells * 8, &plain),
        ("thread-local, 1 thread", 1, 2 * cells * 8, &thread_local),
        ("atomic, 1 thread", 1, cells * 8, &atomic),
        ("`hdrhistogram` `Recorder`, u64, 1 thread", 1, 0, &hdr),
        ("`hdrhistogram` `Recorder`, u32, 1 thread", 1, 0, &hdr_u32),
        ("plain, one per thread, 2 threads", 2, 2 * cells * 8, &plain),
        ("thread-local, 2 threads", 2, 3 * cells * 8, &thread_local),
        ("atomic, shared, 2 threads", 2, cells * 8, &atomic),
        ("`hdrhistogram` `Recorder`s, u64, 2 threads", 2, 0, &hdr),
        ("`hdrhistogram` `Recorder`s, u32, 2 threads", 2, 0, &hdr_u32),
    ];
    let mut timed: Vec<_> = cases
        .iter()
        .map(|&(_, threads, _, f)| move || run_threads(threads, f))
        .collect();
    let mut runs: Vec<&mut dyn FnMut() -> Duration> = timed
        .iter_mut()
        .map(|c| c as &mut dyn FnMut() -> Duration)
        .collect();
    let t = interleaved(ROUNDS, &mut runs);
    let labels: Vec<(&'static str, usize, usize)> = cases.iter().map(|c| (c.0, c.1, c.2)).collect();

    // Each thread-local run recorded every value: nothing lost.
    let runs = (ROUNDS as u64 + 1) * 3;
    assert_eq!(local.total(), runs * n as u64, "thread-local lost counts");
    drop(hdr_recorders);
    drop(hdr_u32_recorders);
    sync.refresh();
    sync_u32.refresh();
    assert_eq!(sync.len(), runs * n as u64, "hdrhistogram lost counts");
    assert_eq!(sync_u32.len(), runs * n as u64, "hdrhistogram lost counts");

    let _block = Block::begin("thread-local");
    println!(
        "Seed data: {n} values per thread per round; {ROUNDS} interleaved rounds; ns per record \
         per thread (the slowest thread's wall time ÷ {n}); speed-up = the faster \
         `hdrhistogram` configuration's time on as many threads ÷ this case's."
    );
    println!();
    header(&[
        "case",
        "footprint (bytes)",
        "best ns",
        "median ns",
        "vs plain, same threads (best)",
        "speed-up vs `hdrhistogram` (best)",
        "speed-up (median)",
    ]);
    let ns = |t: &Timing| (t.best_ns(n), t.median_ns(n));
    for ((name, threads, footprint), timing) in labels.iter().zip(&t) {
        // Cases 0-4 run on one thread, 5-9 on two, in the same order.
        let first = if *threads == 1 { 0 } else { 5 };
        let plain = ns(&t[first]).0;
        let (peer_best, peer_median) = {
            let (a, b) = (ns(&t[first + 3]), ns(&t[first + 4]));
            (a.0.min(b.0), a.1.min(b.1))
        };
        let (best, median) = ns(timing);
        let footprint = if *footprint == 0 {
            "—".to_string()
        } else {
            footprint.to_string()
        };
        println!(
            "| {name} | {footprint} | {best:.3} | {median:.3} | {:.2}× | {:.2}× | {:.2}× |",
            best / plain,
            peer_best / best,
            peer_median / median
        );
    }
    println!();
    println!(
        "Thread-local: {} shards for at most {MAX_THREADS} threads at a time. \
         `hdrhistogram`'s footprint is not comparable: each recorder has its own histogram, \
         swapped on refresh.",
        local.shard_count()
    );
}
