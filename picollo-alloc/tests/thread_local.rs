//! Tests of the thread-local histogram: exact totals and buckets while threads exit and a
//! reader snapshots, resets (quiescent, racing records, racing reads), shard reuse, records
//! made while TLS is destroyed, and `fork`.
//!
//! Miri runs this file with small sizes:
//! `cargo +nightly miri test -p picollo-alloc --test thread_local`.

use picollo_alloc::sparse::COLD_WORD_BYTES;
use picollo_alloc::{
    HistogramBuilder, LocalCounter, Snapshot, StorageChoice, ThreadLocalHistogram,
};
use picollo_core::read::consistent;
use picollo_core::{EquivalentValue, HistogramRead, Layout, ReadExt, Record, RecordAt};
use picollo_testkit::{Barrier, StopFlag};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

#[path = "common/spread.rs"]
mod spread;
use spread::{layout, scale, value, window, MIN};

/// The builder of this file's layout and window.
fn builder() -> HistogramBuilder {
    HistogramBuilder::new().layout(layout()).window(window())
}

/// Asserts that `h` holds exactly the counts of `expected`, bucket by bucket.
fn assert_same(h: &impl HistogramRead, expected: &impl HistogramRead) {
    assert_eq!(h.window(), expected.window());
    for s in 0..h.window().len() {
        assert_eq!(h.count_at(s), expected.count_at(s), "bucket {s}");
    }
    assert_eq!(h.underflow(), expected.underflow(), "underflow");
    assert_eq!(h.overflow(), expected.overflow(), "overflow");
}

#[test]
fn send_sync() {
    fn check<T: Send + Sync>() {}
    check::<ThreadLocalHistogram>();
    check::<ThreadLocalHistogram<u32>>();
    check::<Snapshot>();
}

#[test]
fn single_thread_counts_and_outside() {
    let h = builder().thread_local().unwrap();
    let mut plain = builder().dense().plain().unwrap();
    for i in 0..scale(10_000) {
        h.record(value(0, i));
        plain.record(value(0, i));
    }
    h.record_n(7, 3); // underflow
    plain.record_n(7, 3);
    h.record_n(u64::MAX, 2); // overflow
    plain.record_n(u64::MAX, 2);
    Record::record(&mut &h, 1234);
    plain.record(1234);
    assert_same(&h, &plain);
    assert_eq!(h.total(), plain.total());
    assert_eq!(h.shard_count(), 1);
    assert_eq!(
        h.percentile(50.0, EquivalentValue::Midpoint),
        plain.percentile(50.0, EquivalentValue::Midpoint)
    );
    assert_eq!(h.stats(), plain.stats());
}

/// The stress test: 8 threads record known values; 4 exit midway (their shards are
/// folded, then reused by 2 late threads); a reader snapshots all along and sees every
/// bucket only grow and never pass its final count. At the end every bucket is exact.
#[test]
fn stress_eight_threads_four_exit_midway() {
    let per_thread = scale(200_000);
    let (exiting, staying, late) = (4u64, 4u64, 2u64);
    let h = Arc::new(builder().thread_local().unwrap());

    let mut expected = builder().dense().plain().unwrap();
    for t in 0..exiting + staying + late {
        for i in 0..per_thread {
            expected.record(value(t, i));
        }
    }
    let final_counts: Vec<u64> = (0..window().len()).map(|s| expected.count_at(s)).collect();
    let final_outside = (expected.underflow(), expected.overflow());

    let done = StopFlag::new();
    let snapshots = AtomicU64::new(0);
    // All eight hold a shard at the same time before the exiting ones finish.
    let started = Barrier::new((exiting + staying) as usize);
    let midway = Barrier::new(staying as usize + 1);
    let resume = Barrier::new(staying as usize + 1);
    std::thread::scope(|s| {
        // The reader stops, and the recording threads leave their barriers, however this
        // closure ends (a failed assertion or join too).
        let _done = done.raise_on_drop();
        let _barriers = (midway.break_on_panic(), resume.break_on_panic());
        // The reader: every snapshot is bounded by the final counts and never goes down.
        s.spawn(|| {
            let mut snap = Snapshot::new(&*h);
            let mut prev = snap.clone();
            loop {
                let last = done.is_raised();
                snap.update(&*h, false);
                for (i, (&now, &before)) in snap.counts().iter().zip(prev.counts()).enumerate() {
                    assert!(now >= before, "bucket {i} went down: {before} -> {now}");
                    assert!(now <= final_counts[i], "bucket {i} above its final count");
                }
                assert!(
                    snap.underflow() >= prev.underflow() && snap.underflow() <= final_outside.0
                );
                assert!(snap.overflow() >= prev.overflow() && snap.overflow() <= final_outside.1);
                std::mem::swap(&mut snap, &mut prev);
                snapshots.fetch_add(1, Ordering::Relaxed);
                if last {
                    break;
                }
            }
        });

        let exiters: Vec<_> = (0..exiting)
            .map(|t| {
                let (h, started) = (&h, &started);
                s.spawn(move || {
                    let _started = started.break_on_panic();
                    h.record(value(t, 0));
                    started.wait();
                    (1..per_thread).for_each(|i| h.record(value(t, i)));
                })
            })
            .collect();
        let stayers: Vec<_> = (exiting..exiting + staying)
            .map(|t| {
                let (h, started, midway, resume) = (&h, &started, &midway, &resume);
                s.spawn(move || {
                    let _barriers = (
                        started.break_on_panic(),
                        midway.break_on_panic(),
                        resume.break_on_panic(),
                    );
                    let half = per_thread / 2;
                    h.record(value(t, 0));
                    started.wait();
                    (1..half).for_each(|i| h.record(value(t, i)));
                    midway.wait();
                    resume.wait();
                    (half..per_thread).for_each(|i| h.record(value(t, i)));
                })
            })
            .collect();
        midway.wait();
        // (Joining a thread waits for its TLS destructors, which fold its shard.)
        let exited = exiters.into_iter().all(|e| e.join().is_ok());
        // The exited threads' shards are free; the staying ones are owned.
        let live_midway = h.live_shard_count();
        let shards_midway = h.shard_count();
        // Late threads reuse the freed shards instead of allocating.
        for t in exiting + staying..exiting + staying + late {
            let h = &h;
            let _ = s
                .spawn(move || (0..per_thread).for_each(|i| h.record(value(t, i))))
                .join();
        }
        let shards_late = h.shard_count();
        resume.wait();
        for t in stayers {
            t.join().unwrap();
        }
        done.raise();
        assert!(exited);
        assert_eq!(live_midway, staying as usize);
        assert_eq!(shards_midway, (exiting + staying) as usize);
        assert_eq!(shards_late, (exiting + staying) as usize);
    });
    assert!(snapshots.load(Ordering::Relaxed) >= 1);
    assert_eq!(h.live_shard_count(), 0);
    assert_same(&*h, &expected);
    assert_eq!(h.total(), final_counts.iter().sum::<u64>());
}

/// A series that saw a few values on each of two threads holds one table of the cold tier
/// per recording thread and nothing else: no directory and no page, in the shards or the
/// accumulator. A hot bucket then gives the recording thread's shard its directory and a
/// page, and the records after it keep every count.
#[test]
fn a_lightly_used_series_holds_a_table_per_thread() {
    let h = HistogramBuilder::new()
        .layout(Layout::from_block_scale(7).unwrap())
        .thread_local()
        .unwrap();
    assert_eq!(h.footprint(), 0);
    let recorded = Barrier::new(3);
    let checked = Barrier::new(3);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (h, recorded, checked) = (&h, &recorded, &checked);
            s.spawn(move || {
                let _barriers = (recorded.break_on_panic(), checked.break_on_panic());
                // 20 values over 1 µs .. 1 s (in ns), as a lightly used latency series.
                (0..20).for_each(|i| h.record((1_000 + t) << i));
                recorded.wait();
                checked.wait();
            });
        }
        let _barriers = (recorded.break_on_panic(), checked.break_on_panic());
        recorded.wait();
        let table = 32 * COLD_WORD_BYTES;
        let held = h.footprint();
        // Each table has a header of a few words besides its entries.
        let result = (2 * table..=2 * (table + 64)).contains(&held);
        checked.wait();
        assert!(result, "{held} bytes");
    });
    let before = h.footprint();
    for _ in 0..20 {
        h.record(777);
    }
    assert_eq!(h.total(), 60);
    assert_eq!(h.count_at_value(777), 20);
    assert!(h.footprint() > before + 1_000, "a directory and a page");
}

#[test]
fn sequential_threads_reuse_one_shard() {
    let h = builder().u32_storage().thread_local().unwrap();
    let n = scale(1000);
    for t in 0..if cfg!(miri) { 3 } else { 10 } {
        std::thread::scope(|s| {
            // An explicit join waits for the thread's TLS destructors (the fold).
            s.spawn(|| (0..n).for_each(|i| h.record(value(t, i))))
                .join()
                .unwrap();
        });
    }
    assert_eq!(h.shard_count(), 1);
    assert_eq!(h.live_shard_count(), 0);
    assert_eq!(h.total_with_outside(), n * if cfg!(miri) { 3 } else { 10 });
}

#[test]
fn many_histograms_on_one_thread() {
    let hs: Vec<ThreadLocalHistogram> = (0..3).map(|_| builder().thread_local().unwrap()).collect();
    let n = scale(3000);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let hs = &hs;
                s.spawn(move || {
                    for i in 0..n {
                        // Alternate: the one-entry cache misses every time.
                        hs[(i % 3) as usize].record(value(t, i));
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
    });
    let total: u64 = hs.iter().map(|h| h.total_with_outside()).sum();
    assert_eq!(total, 2 * n);
    // Dropping a histogram a live thread recorded into is safe; the thread prunes it later.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (recorded_tx, recorded) = std::sync::mpsc::channel::<()>();
    let first = builder().thread_local().unwrap();
    let first = Arc::new(first);
    let recorder = {
        let first = Arc::clone(&first);
        std::thread::spawn(move || {
            first.record(500);
            drop(first);
            recorded_tx.send(()).unwrap();
            rx.recv().unwrap();
            // A new histogram: the cold path prunes the dropped one.
            let second = builder().thread_local().unwrap();
            second.record(600);
            second.total()
        })
    };
    recorded.recv().unwrap();
    assert_eq!(first.total(), 1);
    drop(first);
    tx.send(()).unwrap();
    assert_eq!(recorder.join().unwrap(), 1);
}

/// The per-thread cache with more histograms than it has slots (so that some share a slot
/// and evict each other), histograms dropped while threads still have them cached, new ones
/// made in their place (the allocator may reuse the address of a freed one), unchecked slot
/// records, and thread exits: every count lands in its own histogram, exactly.
/// The [`BucketPos`](picollo_core::BucketPos) of the bucket at storage index `slot`.
fn position_of_slot<C: LocalCounter, S: StorageChoice>(
    h: &ThreadLocalHistogram<C, S>,
    slot: usize,
) -> picollo_core::BucketPos {
    let layout = h.layout();
    layout.position(layout.lo(h.window().first() + slot))
}

#[test]
fn more_histograms_than_cache_slots() {
    use picollo_alloc::thread_local::CACHE_SLOTS;
    let count = CACHE_SLOTS + 5;
    let rounds = if cfg!(miri) { 2 } else { 20 };
    // Dense: the unchecked slot records are dense storage's.
    let make = || -> Vec<ThreadLocalHistogram<u32, picollo_alloc::Dense>> {
        (0..count)
            .map(|_| builder().u32_storage().dense().thread_local().unwrap())
            .collect()
    };
    let hs = std::sync::RwLock::new(make());
    let totals: Vec<AtomicU64> = (0..count).map(|_| AtomicU64::new(0)).collect();
    let phase = Barrier::new(3);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (hs, phase) = (&hs, &phase);
            s.spawn(move || {
                let _phase = phase.break_on_panic();
                for _generation in 0..2 {
                    phase.wait();
                    {
                        let hs = hs.read().unwrap();
                        for r in 0..rounds {
                            // Each histogram in turn: consecutive records never hit the same
                            // one, and histograms `CACHE_SLOTS` apart share a slot.
                            for (i, h) in hs.iter().enumerate() {
                                let v = value(t, r * count as u64 + i as u64);
                                h.record(v);
                                let slot = (i + r as usize) % h.window().len();
                                // SAFETY: a position under the histogram's layout.
                                unsafe { h.record_at(position_of_slot(h, slot)) };
                            }
                        }
                    }
                    phase.wait();
                    // The main thread checks, drops and replaces the histograms here.
                    phase.wait();
                }
            });
        }
        // A failed check between the phases breaks the barrier the threads wait at.
        let _phase = phase.break_on_panic();
        for _ in 0..2 {
            phase.wait();
            phase.wait();
            {
                let mut hs = hs.write().unwrap();
                for (h, total) in hs.iter().zip(&totals) {
                    let n = h.total_with_outside();
                    assert_eq!(n, 2 * 2 * rounds);
                    total.fetch_add(n, Ordering::Relaxed);
                }
                // Dropped while both threads still hold their shards in cache and list.
                *hs = make();
            }
            phase.wait();
        }
    });
    for total in &totals {
        assert_eq!(total.load(Ordering::Relaxed), 2 * 2 * 2 * rounds);
    }
    // Records at a position land in its bucket.
    let h = builder().dense().thread_local().unwrap();
    let slot = h.window().len() / 2;
    let pos = position_of_slot(&h, slot);
    // SAFETY: a position under the histogram's layout.
    unsafe { h.record_at(pos) };
    assert_eq!((h.count_at(slot), h.total_with_outside()), (1, 1));
    // On another thread (the cold path: no shard yet), and folded when it exits (the
    // explicit join waits for that: see `sequential_threads_reuse_one_shard`).
    std::thread::scope(|s| {
        // SAFETY: as above.
        s.spawn(|| unsafe { h.record_at(pos) }).join().unwrap();
    });
    assert_eq!(
        h.live_shard_count(),
        1,
        "the other thread's shard was not folded"
    );
    assert_eq!((h.count_at(slot), h.total_with_outside()), (2, 2));
}

#[test]
fn quiescent_reset_is_exact() {
    let h = builder().thread_local().unwrap();
    let n = scale(20_000);
    let idle = Barrier::new(2);
    let after_reset = Barrier::new(2);
    std::thread::scope(|s| {
        // A thread that records, sits idle across the reset, then records again.
        let _barriers = (idle.break_on_panic(), after_reset.break_on_panic());
        let idler = s.spawn(|| {
            let _barriers = (idle.break_on_panic(), after_reset.break_on_panic());
            (0..n).for_each(|i| h.record(value(1, i)));
            idle.wait();
            after_reset.wait();
            (0..n).for_each(|i| h.record(value(2, i)));
        });
        (0..n).for_each(|i| h.record(value(0, i)));
        idle.wait();
        let before_reset = h.total_with_outside();
        h.reset();
        let after = (h.total_with_outside(), h.underflow(), h.overflow());
        after_reset.wait();
        // Joined: waits for its exit's fold (the scope's end alone does not).
        idler.join().unwrap();
        // (Asserted after the barrier, so that a failure does not leave the thread waiting.)
        assert_eq!(before_reset, 2 * n);
        assert_eq!(after, (0, 0, 0));
    });
    assert_eq!(
        h.live_shard_count(),
        1,
        "the idle thread's shard was not folded"
    );
    // The idle thread's stale counts were dropped; its later records count; its exit folds
    // only those.
    let mut expected = builder().dense().plain().unwrap();
    (0..n).for_each(|i| expected.record(value(2, i)));
    assert_same(&h, &expected);

    // A thread that exits after a reset without recording again adds nothing.
    let go = Barrier::new(2);
    let reset_done = Barrier::new(2);
    std::thread::scope(|s| {
        let _barriers = (go.break_on_panic(), reset_done.break_on_panic());
        let exiting = s.spawn(|| {
            let _barriers = (go.break_on_panic(), reset_done.break_on_panic());
            (0..n).for_each(|i| h.record(value(3, i)));
            go.wait();
            reset_done.wait();
        });
        go.wait();
        h.reset();
        reset_done.wait();
        exiting.join().unwrap();
    });
    assert_eq!(
        h.live_shard_count(),
        1,
        "the exited thread's shard was not folded"
    );
    assert_eq!(h.total_with_outside(), 0);
    h.record(MIN);
    assert_eq!(h.total(), 1);
}

/// Records racing a reset: every record that happens after the reset returned is counted
/// (none lost), every record that happens before it was called is not, and nothing counts
/// twice. Writers publish their progress with release stores; the resetter reads it with
/// acquire just before resetting, which orders those records before the reset.
#[test]
fn reset_racing_records_loses_nothing_after_it() {
    let h = builder().thread_local().unwrap();
    let writers = if cfg!(miri) { 2 } else { 4 };
    let rounds = if cfg!(miri) { 2 } else { 20 };
    // Three values in three distinct buckets: before the reset started, while it ran, after.
    let (v_before, v_during, v_after) = (1_000u64, 10_000u64, 40_000u64);
    let lay = layout();
    let idx = |v: u64| window().storage_index(lay.index_of(v)).unwrap();
    for _ in 0..rounds {
        let started = AtomicBool::new(false);
        let finished = AtomicBool::new(false);
        let stop = StopFlag::new();
        let running = AtomicUsize::new(0);
        // Per writer: records of each phase (read after join), and the phase-0 records
        // published so far.
        let counts: Vec<[AtomicU64; 3]> = (0..writers).map(|_| Default::default()).collect();
        let progress: Vec<AtomicU64> = (0..writers).map(|_| AtomicU64::new(0)).collect();
        let mut seen_before_reset = 0;
        std::thread::scope(|s| {
            for (c, p) in counts.iter().zip(&progress) {
                let (h, started, finished, stop, running) =
                    (&h, &started, &finished, &stop, &running);
                s.spawn(move || {
                    let _stop = stop.raise_on_drop();
                    running.fetch_add(1, Ordering::Relaxed);
                    let mut local = [0u64; 3];
                    while !stop.is_raised() {
                        let phase = if finished.load(Ordering::Acquire) {
                            2
                        } else if started.load(Ordering::Acquire) {
                            1
                        } else {
                            0
                        };
                        h.record([v_before, v_during, v_after][phase]);
                        local[phase] += 1;
                        if phase == 0 {
                            p.store(local[0], Ordering::Release);
                        }
                    }
                    for (c, l) in c.iter().zip(local) {
                        c.store(l, Ordering::Relaxed);
                    }
                });
            }
            // The writers stop however this thread ends.
            let _stop = stop.raise_on_drop();
            if !stop.wait_until(|| running.load(Ordering::Relaxed) == writers) {
                return;
            }
            std::thread::yield_now();
            started.store(true, Ordering::Release);
            // These phase-0 records happen before the reset.
            seen_before_reset = progress.iter().map(|p| p.load(Ordering::Acquire)).sum();
            h.reset();
            finished.store(true, Ordering::Release);
            for _ in 0..if cfg!(miri) { 2 } else { 20 } {
                std::thread::yield_now();
            }
        });
        let sum = |k: usize| {
            counts
                .iter()
                .map(|c| c[k].load(Ordering::Relaxed))
                .sum::<u64>()
        };
        let (before, during, after) = (sum(0), sum(1), sum(2));
        assert_eq!(
            h.count_at(idx(v_after)),
            after,
            "records after the reset were lost"
        );
        assert!(h.count_at(idx(v_during)) <= during);
        assert!(
            h.count_at(idx(v_before)) <= before - seen_before_reset,
            "records from before the reset survived it"
        );
        assert_eq!(
            h.total(),
            h.count_at(idx(v_before)) + h.count_at(idx(v_during)) + after
        );
        h.reset();
    }
}

/// Reads racing resets never mix counts from before and after a reset: after reset `k` the
/// one writer (which also resets) records only into buckets of parity `k % 2`, and a
/// validated read sees one parity only.
#[test]
fn reads_never_mix_pre_and_post_reset() {
    let h = builder().u32_storage().thread_local().unwrap();
    let len = window().len();
    let stop = StopFlag::new();
    let reads = AtomicU64::new(0);
    let rounds = scale(2_000_000) / 1000;
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                // A failed assertion here stops the others too.
                let _stop = stop.raise_on_drop();
                while !stop.is_raised() {
                    let (even, odd) = consistent(&h, |h| {
                        let (mut even, mut odd) = (0u64, 0u64);
                        for i in 0..len {
                            let n = h.count_at(i);
                            if i % 2 == 0 {
                                even += n
                            } else {
                                odd += n
                            }
                        }
                        (even, odd)
                    });
                    assert!(even == 0 || odd == 0, "mixed read: even {even} odd {odd}");
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        s.spawn(|| {
            // Start once the readers read: on a loaded machine the writer could otherwise
            // finish before either reader was scheduled, and nothing would be tested.
            let _stop = stop.raise_on_drop();
            if !stop.wait_until(|| reads.load(Ordering::Relaxed) >= 2) {
                return;
            }
            let before = reads.load(Ordering::Relaxed);
            let lay = layout();
            let first = window().first();
            for k in 0..rounds as usize {
                h.reset();
                for i in (k % 2..len).step_by(2).take(64) {
                    h.record_n(lay.lo(first + i), 1 + (k as u64 % 5));
                }
            }
            // Stop once a read that began during the resets has ended (no more resets now,
            // so its retry ends too).
            stop.wait_until(|| reads.load(Ordering::Relaxed) != before);
        });
    });
}

/// Counts recorded from a TLS destructor, before or after the histogram's own per-thread
/// destructor ran, are not lost: they go to the accumulator.
#[test]
fn records_from_tls_destructors_are_kept() {
    static H: LazyLock<ThreadLocalHistogram> = LazyLock::new(|| builder().thread_local().unwrap());
    struct RecordOnDrop;
    impl Drop for RecordOnDrop {
        fn drop(&mut self) {
            H.record_n(MIN, 5);
        }
    }
    thread_local! {
        static GUARD: RecordOnDrop = const { RecordOnDrop };
    }
    let n = scale(1000);
    // Guard registered first: on Linux its destructor runs after the histogram's.
    std::thread::spawn(move || {
        GUARD.with(|_| {});
        (0..n).for_each(|i| H.record(value(0, i)));
    })
    .join()
    .unwrap();
    // Guard registered last: its destructor runs first, while the shard is still there.
    std::thread::spawn(move || {
        (0..n).for_each(|i| H.record(value(1, i)));
        GUARD.with(|_| {});
    })
    .join()
    .unwrap();
    assert_eq!(H.total_with_outside(), 2 * n + 10);
    assert_eq!(H.live_shard_count(), 0);
}

/// After `fork`, the child reports the forking thread's shard and the accumulator, not the
/// shards of the parent's other threads; a reset racing the fork leaves no lock held.
#[test]
#[cfg_attr(miri, ignore = "forks: miri cannot fork a process")]
fn fork_child_drops_other_threads_shards() {
    if cfg!(miri) || !cfg!(unix) {
        println!("skipped: fork is not available under Miri");
        return;
    }
    #[cfg(unix)]
    fork_test();
}

#[cfg(unix)]
fn fork_test() {
    // Made before the two and dropped after them: the newest histogram in the fork handlers'
    // list (`other`, unless a test running beside this one made one since) takes its place,
    // where the handlers must still find it.
    let early = builder().thread_local().unwrap();
    let h = builder().thread_local().unwrap();
    let other = builder().thread_local().unwrap();
    drop(early);
    // An exited thread: its counts are in the accumulator, which the child keeps. Joined
    // explicitly, which waits for its fold: the scope's end alone does not, and a shard still
    // owned at the fork would be dropped in the child as another thread's.
    std::thread::scope(|s| {
        s.spawn(|| h.record_n(200, 7)).join().unwrap();
    });
    // This thread's own shard.
    h.record_n(300, 11);
    let stop = StopFlag::new();
    let ready = Barrier::new(3);
    std::thread::scope(|s| {
        // The two loops stop however this closure ends.
        let _stop = stop.raise_on_drop();
        let _ready = ready.break_on_panic();
        // A live thread with a shard, recording while the fork happens.
        s.spawn(|| {
            let _ready = ready.break_on_panic();
            h.record_n(400, 1000);
            ready.wait();
            while !stop.is_raised() {
                h.record(400);
            }
        });
        // A thread resetting another histogram in a loop: the child must not inherit its lock.
        s.spawn(|| {
            let _ready = ready.break_on_panic();
            other.record(1);
            ready.wait();
            while !stop.is_raised() {
                other.reset();
            }
        });
        ready.wait();
        // SAFETY: the child only reads and writes memory, spawns one thread and calls `_exit`
        // (no unwinding or output in the child).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: `alarm` and `_exit` are async-signal-safe; a hang becomes SIGALRM.
            unsafe { libc::alarm(20) };
            let code = child_checks(&h, &other);
            // SAFETY: leaves the child at once, without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        stop.raise();
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(
            libc::WIFEXITED(status),
            "child did not exit normally (status {status:#x})"
        );
        assert_eq!(libc::WEXITSTATUS(status), 0, "child check failed");
    });
    // The parent still has everything.
    assert!(h.total() >= 7 + 11 + 1000);
}

/// Runs in the forked child; returns the exit status (0 = success).
#[cfg(unix)]
fn child_checks(h: &ThreadLocalHistogram, other: &ThreadLocalHistogram) -> i32 {
    let lay = layout();
    let at = |v: u64| {
        window()
            .storage_index(lay.index_of(v))
            .map_or(u64::MAX, |i| h.count_at(i))
    };
    if h.total() != 7 + 11 {
        return 1;
    }
    if (at(200), at(300), at(400)) != (7, 11, 0) {
        return 2;
    }
    if h.live_shard_count() != 1 {
        return 3;
    }
    // The bulk read sees the same: the other threads' shards are gone.
    let mut buckets = Vec::new();
    h.read_recorded(&mut buckets);
    if buckets.iter().map(|b| b.1).sum::<u64>() != 7 + 11 {
        return 7;
    }
    // Reads and resets of the other histogram do not hang.
    other.reset();
    if other.total() != 0 {
        return 4;
    }
    // The child records on; a new thread in the child reuses a freed shard.
    h.record(300);
    let shards = h.shard_count();
    let spawned = std::thread::scope(|s| s.spawn(|| h.record_n(500, 2)).join().is_ok());
    if !spawned || h.shard_count() != shards {
        return 5;
    }
    if h.total() != 7 + 11 + 1 + 2 {
        return 6;
    }
    0
}

/// `u16` shard cells saturate at 65535 through `record` (the owner's wrap check), and the
/// next bucket and the thread's later records are unaffected.
#[test]
fn narrow_cells_saturate_through_record() {
    let h = builder().u16_storage().thread_local().unwrap();
    // Under Miri a shorter run: the wrap is reached from a `record_n` close to the maximum.
    let direct = if cfg!(miri) { 3 } else { 70_000 };
    h.record_n(1000, 65_535 - 2);
    for _ in 0..direct {
        h.record(1000);
    }
    h.record(2000);
    h.record(2000);
    let slot = |v: u64| window().storage_index(layout().index_of(v)).unwrap();
    let count = |v: u64| h.count_at(slot(v));
    assert_eq!(count(1000), 65_535);
    assert_eq!(count(2000), 2);
    let h32 = builder().u32_storage().thread_local().unwrap();
    h32.record_n(1000, u64::from(u32::MAX) - 1);
    for _ in 0..3 {
        h32.record(1000);
    }
    assert_eq!(h32.count_at(slot(1000)), u64::from(u32::MAX));
}
