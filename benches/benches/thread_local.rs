//! Wall-clock cost of a record on one and two threads: Picollo's plain (one histogram per
//! thread), thread-local and shared atomic kinds against `hdrhistogram`'s `SyncHistogram` with
//! one `Recorder` per thread (its per-thread pattern, the like-for-like peer of the
//! thread-local kind): nanoseconds per record per thread, every thread recording all of Picollo
//! for .NET's data (max trackable 7716549600, 0.001 relative error). The thread-local kind with
//! `u32` and `u16` cells (the builder's `.u32_storage().thread_local()`) is compared with the
//! plain kind of the same width.
//!
//! Fair to the peer: its recorders are created before the timing and kept by their threads
//! across rounds (as a server keeps one per worker), with the benchmark's fixed maximum, `u64` and
//! `u32` counts; this binary holds the only call of `record` for each count type, so it is
//! inlined. The cases run interleaved, round after round; each keeps its best and median
//! round, and a round's time is its slowest thread's.
//!
//! Then the layout table of `picollo_benches::layouts` for this binary (the thread-local
//! against the plain record beside the peer's code, each layout in a process of its own;
//! `thread_local_alone` prints it for a binary without the peer), with the target row.
//!
//! Run: `cargo bench -p picollo-benches --bench thread_local`.

use hdrhistogram::sync::{Recorder, SyncHistogram};
use picollo_alloc::{HeapHistogram, HistogramBuilder};
use picollo_benches::layouts;
use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, Timing};
use picollo_benches::*;
use picollo_core::{ReadExt, Window};
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

#[global_allocator]
static ALLOCATOR: layouts::TrackCells = layouts::TrackCells;

fn main() {
    if layouts::run_child() {
        return;
    }
    let values = seed_values(SEED_COUNT);
    let n = values.len();
    let window = Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max");
    let cells = window.len();

    // Plain: one histogram per thread (the ideal: nothing shared), allocated up front and
    // moved into a local for the run, so the compiler keeps its fields in registers.
    let own: Vec<Mutex<Option<HeapHistogram>>> = (0..MAX_THREADS)
        .map(|_| {
            Mutex::new(Some(
                HistogramBuilder::new()
                    .layout(LAYOUT)
                    .window(window)
                    .dense()
                    .plain()
                    .unwrap(),
            ))
        })
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
    let own_u32: Vec<Mutex<Option<HeapHistogram<u32>>>> = (0..MAX_THREADS)
        .map(|_| {
            Mutex::new(Some(
                HistogramBuilder::new()
                    .layout(LAYOUT)
                    .window(window)
                    .u32_storage()
                    .dense()
                    .plain()
                    .unwrap(),
            ))
        })
        .collect();
    let plain_u32 = |i: usize| {
        let mut slot = own_u32[i].lock().expect("not poisoned");
        if let Some(mut h) = slot.take() {
            for &v in &values {
                h.record(black_box(v));
            }
            black_box(h.total());
            *slot = Some(h);
        }
    };
    let own_u16: Vec<Mutex<Option<HeapHistogram<u16>>>> = (0..MAX_THREADS)
        .map(|_| {
            Mutex::new(Some(
                HistogramBuilder::new()
                    .layout(LAYOUT)
                    .window(window)
                    .u16_storage()
                    .dense()
                    .plain()
                    .unwrap(),
            ))
        })
        .collect();
    let plain_u16 = |i: usize| {
        let mut slot = own_u16[i].lock().expect("not poisoned");
        if let Some(mut h) = slot.take() {
            for &v in &values {
                h.record(black_box(v));
            }
            black_box(h.total());
            *slot = Some(h);
        }
    };
    let local = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window)
        .thread_local()
        .unwrap();
    let thread_local = |_: usize| {
        for &v in &values {
            local.record(black_box(v));
        }
    };
    // The builder's `.u32_storage().thread_local()` and `.u16_storage().thread_local()`.
    let builder = HistogramBuilder::new()
        .layout(LAYOUT)
        .max_trackable(SEED_MAX);
    let local_u32 = builder.u32_storage().thread_local().expect("valid");
    let thread_local_u32 = |_: usize| {
        for &v in &values {
            local_u32.record(black_box(v));
        }
    };
    let local_u16 = builder.u16_storage().thread_local().expect("valid");
    let thread_local_u16 = |_: usize| {
        for &v in &values {
            local_u16.record(black_box(v));
        }
    };
    let atomic_h = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window)
        .dense()
        .atomic()
        .unwrap();
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

    // (label, threads, footprint in bytes (0: not comparable), the run, the index of the
    // plain case of the same width and threads). The two `hdrhistogram` cases of each thread
    // count are the peers.
    type Case<'a> = (
        &'static str,
        usize,
        usize,
        &'a (dyn Fn(usize) + Sync),
        usize,
    );
    let (c64, c32, c16) = (cells * 8, cells * 4, cells * 2);
    let cases: [Case; 16] = [
        ("plain, 1 thread", 1, c64, &plain, 0),
        ("thread-local, 1 thread", 1, 2 * c64, &thread_local, 0),
        ("atomic, 1 thread", 1, c64, &atomic, 0),
        ("`hdrhistogram` `Recorder`, u64, 1 thread", 1, 0, &hdr, 0),
        (
            "`hdrhistogram` `Recorder`, u32, 1 thread",
            1,
            0,
            &hdr_u32,
            0,
        ),
        ("plain, u32, 1 thread", 1, c32, &plain_u32, 5),
        (
            "thread-local, u32, 1 thread",
            1,
            c32 + c64,
            &thread_local_u32,
            5,
        ),
        ("plain, u16, 1 thread", 1, c16, &plain_u16, 7),
        (
            "thread-local, u16, 1 thread",
            1,
            c16 + c64,
            &thread_local_u16,
            7,
        ),
        ("plain, one per thread, 2 threads", 2, 2 * c64, &plain, 9),
        ("thread-local, 2 threads", 2, 3 * c64, &thread_local, 9),
        ("atomic, shared, 2 threads", 2, c64, &atomic, 9),
        ("`hdrhistogram` `Recorder`s, u64, 2 threads", 2, 0, &hdr, 9),
        (
            "`hdrhistogram` `Recorder`s, u32, 2 threads",
            2,
            0,
            &hdr_u32,
            9,
        ),
        (
            "plain, u32, one per thread, 2 threads",
            2,
            2 * c32,
            &plain_u32,
            14,
        ),
        (
            "thread-local, u32, 2 threads",
            2,
            2 * c32 + c64,
            &thread_local_u32,
            14,
        ),
    ];
    /// The indices of the two `hdrhistogram` cases on 1 and on 2 threads.
    const PEERS: [(usize, usize); 2] = [(3, 4), (12, 13)];
    let mut timed: Vec<_> = cases
        .iter()
        .map(|&(_, threads, _, f, _)| move || run_threads(threads, f))
        .collect();
    let mut runs: Vec<&mut dyn FnMut() -> Duration> = timed
        .iter_mut()
        .map(|c| c as &mut dyn FnMut() -> Duration)
        .collect();
    let t = interleaved(ROUNDS, &mut runs);
    let labels: Vec<(&'static str, usize, usize, usize)> =
        cases.iter().map(|c| (c.0, c.1, c.2, c.4)).collect();

    // Each thread-local run recorded every value: nothing lost.
    let runs = (ROUNDS as u64 + 1) * 3;
    assert_eq!(local.total(), runs * n as u64, "thread-local lost counts");
    assert_eq!(
        local_u32.total(),
        runs * n as u64,
        "thread-local u32 lost counts"
    );
    // u16 cells saturate at 65535 in the busiest buckets: only the total of the others holds.
    assert!(local_u16.total() > 0, "thread-local u16 recorded nothing");
    drop(hdr_recorders);
    drop(hdr_u32_recorders);
    sync.refresh();
    sync_u32.refresh();
    assert_eq!(sync.len(), runs * n as u64, "hdrhistogram lost counts");
    assert_eq!(sync_u32.len(), runs * n as u64, "hdrhistogram lost counts");

    let block = Block::begin("thread-local");
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
        "vs plain, same width and threads (best)",
        "speed-up vs `hdrhistogram` (best)",
        "speed-up (median)",
    ]);
    let ns = |t: &Timing| (t.best_ns(n), t.median_ns(n));
    for ((name, threads, footprint, plain), timing) in labels.iter().zip(&t) {
        let plain = ns(&t[*plain]).0;
        let (peer_best, peer_median) = {
            let (a, b) = PEERS[*threads - 1];
            let (a, b) = (ns(&t[a]), ns(&t[b]));
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
    drop(block);
    layouts::report(
        "thread-local-layouts",
        "`thread_local` (beside `hdrhistogram`'s `SyncHistogram` and Picollo's atomic kind)",
    );
}
