//! The reads of the thread-local kind: the bulk read against bucket reads, and every public
//! read against threads that record and exit all the time. Each exit folds the thread's shard
//! into the accumulator (its counts added there, then the shard cleared), and a reader reading
//! in a loop beside them must never see a count twice or miss one: every read's counts are
//! checked against two ledgers the recording threads keep. A bucket never reads above the
//! records started into it (loaded after the read), never below the records finished before
//! the read began, and never less than an earlier read saw (no reset here, so every bucket
//! only grows). Before issue 40's fix the bulk reads (`recorded_runs`, `for_each_recorded`)
//! counted hundreds of values twice in every run of 2,000 exits.
//!
//! Under a second with `cargo test` (2,000 thread exits per storage); a stress run sets
//! `PICOLLO_STRESS_EXITS` (for example `PICOLLO_STRESS_EXITS=100000 cargo test -p
//! picollo-alloc --test thread_local_reads`, about 20 s).

use picollo_alloc::{
    bulk, Dense, HistogramBuilder, LocalCounter, Sparse, StorageChoice, StorageWidth,
    ThreadLocalHistogram,
};
use picollo_core::{HistogramRead, ReadExt, Window};
use picollo_testkit::{miri_size, Barrier, StopFlag};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

#[path = "common/spread.rs"]
mod spread;
use spread::{layout, scale, value, window};

/// The builder of this file's layout and window.
fn builder() -> HistogramBuilder {
    HistogramBuilder::new().layout(layout()).window(window())
}

/// The non-empty buckets a walk hands on through `recorded_runs_from`, as an iteration reads
/// them: from `from`, `batch` buckets a call, each call breaking after its batch and the next
/// starting past the last bucket taken. Asserts every run starts at or past the call's
/// position, in increasing order, and that none comes after a break.
fn walk_from<H: HistogramRead + ?Sized>(h: &H, from: usize, batch: usize) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut next = from;
    loop {
        let before = out.len();
        let (mut reached, mut broke) = (next, false);
        h.recorded_runs_from(next, &mut |start, counts| {
            assert!(!broke, "a run handed on after a break");
            assert!(start >= reached, "run at {start} before {reached}");
            reached = start + counts.len();
            for (s, &n) in (start..).zip(counts) {
                if n != 0 {
                    if out.len() == before + batch {
                        broke = true;
                        return ControlFlow::Break(());
                    }
                    out.push((s, n));
                }
            }
            ControlFlow::Continue(())
        });
        match out.last() {
            Some(&(s, _)) if out.len() == before + batch => next = s + 1,
            _ => return out,
        }
    }
}

/// `read_recorded` and the walks from a position against bucket-by-bucket reads, on each path
/// of the bulk read: one shard, several live shards, a folded accumulator, a reset
/// (baselines), underflow and overflow; over dense and sparse storage.
#[test]
fn read_recorded_matches_bucket_reads() {
    fn check<C: LocalCounter, S: StorageChoice>(h: &ThreadLocalHistogram<C, S>) {
        let mut buckets = Vec::new();
        let (under, over) = h.read_recorded(&mut buckets);
        let expected: Vec<(usize, u64)> = (0..h.window().len())
            .map(|s| (s, h.count_at(s)))
            .filter(|&(_, n)| n != 0)
            .collect();
        assert_eq!(buckets, expected);
        assert_eq!((under, over), (h.underflow(), h.overflow()));
        // From the start, the middle and past the end, a bucket at a time and in batches
        // (a walk of a few runs at a time, breaking inside a run and between runs). In CI's
        // miri run one batch size from each position, every size from some position: each
        // call of a walk over several sparse shards gathers all their counts, so a walk from
        // the start a bucket at a time was most of this test's 25 s there.
        const BATCHES: &[usize] = &[1, 3, usize::MAX];
        const CI_BATCH: [usize; 4] = [3, 1, usize::MAX, 1];
        let len = h.window().len();
        let middle = expected.get(expected.len() / 2).map_or(len / 2, |b| b.0);
        for (k, from) in [0, middle, middle + 1, len].into_iter().enumerate() {
            let from_on: Vec<_> = expected.iter().filter(|b| b.0 >= from).copied().collect();
            for &batch in miri_size(BATCHES, BATCHES, std::slice::from_ref(&CI_BATCH[k])) {
                assert_eq!(
                    walk_from(h, from, batch),
                    from_on,
                    "from {from}, {batch} a call"
                );
            }
        }
    }
    fn scenario<C: StorageWidth, S: StorageChoice>() {
        let h = HistogramBuilder::<C, S>::default()
            .layout(layout())
            .window(window())
            .thread_local()
            .unwrap();
        check(&h);
        let n = scale(5_000);
        (0..n).for_each(|i| h.record(value(0, i)));
        check(&h);
        // Two live shards besides this thread's, then their exit folds them.
        let recorded = Barrier::new(3);
        let checked = Barrier::new(3);
        std::thread::scope(|s| {
            // A failed check (or record) breaks the barriers the other parties wait at.
            let _barriers = (recorded.break_on_panic(), checked.break_on_panic());
            let threads: Vec<_> = (1..3)
                .map(|t| {
                    let (h, recorded, checked) = (&h, &recorded, &checked);
                    s.spawn(move || {
                        let _barriers = (recorded.break_on_panic(), checked.break_on_panic());
                        (0..n).for_each(|i| h.record(value(t, i)));
                        recorded.wait();
                        checked.wait();
                    })
                })
                .collect();
            recorded.wait();
            check(&h);
            checked.wait();
            // Joined: waits for their exits' folds (the scope's end alone does not).
            threads.into_iter().for_each(|t| t.join().unwrap());
        });
        assert_eq!(h.live_shard_count(), 1);
        check(&h);
        assert_eq!(h.total_with_outside(), 3 * n);
        // A reset leaves baselines; later records count above them.
        h.reset();
        check(&h);
        (0..n).for_each(|i| h.record(value(3, i)));
        std::thread::scope(|s| {
            s.spawn(|| (0..n).for_each(|i| h.record(value(4, i))))
                .join()
                .unwrap();
        });
        // Only this thread's shard is left: the others were folded.
        assert_eq!(h.live_shard_count(), 1);
        check(&h);
        assert_eq!(h.total_with_outside(), 2 * n);
    }
    scenario::<u64, Sparse>();
    scenario::<u32, Dense>();
}

/// `read_recorded` while threads record, exit and are replaced: every read is bounded by the
/// final counts and never goes down; the last read is exact.
#[test]
fn read_recorded_racing_records_and_exits() {
    let h = builder().u32_storage().thread_local().unwrap();
    let per_thread = scale(50_000);
    let threads = 6u64;
    let mut expected = builder().dense().plain().unwrap();
    for t in 0..threads {
        (0..per_thread).for_each(|i| expected.record(value(t, i)));
    }
    let done = StopFlag::new();
    std::thread::scope(|s| {
        // The reader stops however this closure ends (a failed join too).
        let _done = done.raise_on_drop();
        s.spawn(|| {
            let (mut now, mut before) = (Vec::new(), Vec::new());
            let mut last_total = 0;
            loop {
                let last = done.is_raised();
                h.read_recorded(&mut now);
                let mut total = 0;
                for &(i, n) in &now {
                    assert!(
                        n <= expected.count_at(i),
                        "bucket {i} above its final count"
                    );
                    if let Ok(at) = before.binary_search_by_key(&i, |&(j, _)| j) {
                        let (_, m): (usize, u64) = before[at];
                        assert!(n >= m, "bucket {i} went down: {m} -> {n}");
                    }
                    total += n;
                }
                assert!(total >= last_total);
                last_total = total;
                std::mem::swap(&mut now, &mut before);
                if last {
                    break;
                }
            }
        });
        // Three at a time: the later ones reuse the shards of the exited ones (joined
        // explicitly, which waits for their folds).
        for wave in [0..3, 3..threads] {
            std::thread::scope(|w| {
                let wave: Vec<_> = wave
                    .map(|t| {
                        let h = &h;
                        w.spawn(move || (0..per_thread).for_each(|i| h.record(value(t, i))))
                    })
                    .collect();
                wave.into_iter().for_each(|t| t.join().unwrap());
            });
        }
        done.raise();
    });
    let mut buckets = Vec::new();
    let (under, over) = h.read_recorded(&mut buckets);
    let exact: Vec<(usize, u64)> = (0..expected.window().len())
        .map(|s| (s, expected.count_at(s)))
        .filter(|&(_, n)| n != 0)
        .collect();
    assert_eq!(buckets, exact);
    assert_eq!((under, over), (expected.underflow(), expected.overflow()));
}

/// The values the recording threads record, one per bucket (underflow and overflow too:
/// the window is `MIN..=MAX`).
const VALUES: [u64; 5] = [3, 1_000, 20_000, 300_000, 1 << 40];
const MIN: u64 = 100;
const MAX: u64 = 1 << 20;
/// Recording threads alive at a time.
const PARALLEL: usize = 3;

/// Thread exits per storage: `PICOLLO_STRESS_EXITS`, else 2,000 (a few under Miri).
fn exits() -> u64 {
    if cfg!(miri) {
        return 6;
    }
    std::env::var("PICOLLO_STRESS_EXITS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000)
}

/// What the recording threads did, per value: records started (counted before the record)
/// and finished (counted after it).
#[derive(Default)]
struct Ledger {
    started: [AtomicU64; VALUES.len()],
    finished: [AtomicU64; VALUES.len()],
}

/// The reads a user can make, each checked on its own.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `HistogramRead::recorded_runs`, unbracketed, through `bulk::recorded_into`.
    RecordedRuns,
    /// `HistogramRead::recorded_runs_from`, as an iteration walks: 2 buckets a call.
    RecordedRunsFrom,
    ReadRecorded,
    ForEachRecorded,
    CountAt,
    Total,
}

const READS: [Via; 6] = [
    Via::RecordedRuns,
    Via::RecordedRunsFrom,
    Via::ReadRecorded,
    Via::ForEachRecorded,
    Via::CountAt,
    Via::Total,
];

/// The reader's findings: reads made and the bounds they broke.
#[derive(Debug, Default)]
struct Findings {
    reads: u64,
    /// A bucket (or the total) above the records started into it: a count seen twice.
    above: Vec<String>,
    /// A bucket (or the total) below the records finished before the read: a count missed.
    below: Vec<String>,
    /// A bucket below what an earlier read saw.
    down: Vec<String>,
}

/// Reads `h` with `read`: the counts at the values' buckets (`None` for a total read), and
/// any non-empty bucket that is none of theirs.
fn read_once<C, S>(h: &ThreadLocalHistogram<C, S>, read: Via) -> Result<Vec<u64>, String>
where
    C: LocalCounter,
    S: StorageChoice,
{
    let (layout, window) = (h.layout(), h.window());
    let slots: Vec<Option<usize>> = VALUES
        .iter()
        .map(|&v| window.storage_index(layout.index_of(v)))
        .collect();
    let mut buckets = Vec::new();
    let (under, over) = match read {
        Via::RecordedRuns => {
            bulk::recorded_into(h, &mut buckets);
            (h.underflow(), h.overflow())
        }
        Via::RecordedRunsFrom => {
            buckets = walk_from(h, 0, 2);
            (h.underflow(), h.overflow())
        }
        Via::ReadRecorded => h.read_recorded(&mut buckets),
        Via::ForEachRecorded => {
            h.for_each_recorded(|slot, n| buckets.push((slot, n)));
            (h.underflow(), h.overflow())
        }
        Via::CountAt => {
            for slot in slots.iter().flatten() {
                buckets.push((*slot, h.count_at(*slot)));
            }
            (h.underflow(), h.overflow())
        }
        Via::Total => return Ok(vec![h.total_with_outside()]),
    };
    let counts = slots
        .iter()
        .zip(VALUES)
        .map(|(slot, v)| match slot {
            Some(s) => buckets.iter().find(|b| b.0 == *s).map_or(0, |b| b.1),
            None if layout.index_of(v) < window.first() => under,
            None => over,
        })
        .collect();
    let stray: Vec<_> = buckets
        .iter()
        .filter(|b| b.1 != 0 && !slots.contains(&Some(b.0)))
        .collect();
    if stray.is_empty() {
        Ok(counts)
    } else {
        Err(format!("{read:?}: buckets nobody recorded into: {stray:?}"))
    }
}

/// Reads `h` in a loop, every kind of read in turn, until `stop`; checks each read against
/// the ledger.
fn reader<C, S>(h: &ThreadLocalHistogram<C, S>, ledger: &Ledger, stop: &StopFlag) -> Findings
where
    C: LocalCounter,
    S: StorageChoice,
{
    let mut findings = Findings::default();
    let mut last = [0u64; VALUES.len()];
    let load = |counters: &[AtomicU64; VALUES.len()]| -> Vec<u64> {
        counters.iter().map(|c| c.load(Ordering::SeqCst)).collect()
    };
    loop {
        let stopping = stop.is_raised();
        for read in READS {
            let finished = load(&ledger.finished);
            let counts = match read_once(h, read) {
                Ok(counts) => counts,
                Err(stray) => {
                    findings.above.push(stray);
                    continue;
                }
            };
            let started = load(&ledger.started);
            findings.reads += 1;
            let (lo, hi, last_seen): (Vec<u64>, Vec<u64>, Vec<u64>) = match read {
                Via::Total => (
                    vec![finished.iter().sum()],
                    vec![started.iter().sum()],
                    vec![last.iter().sum()],
                ),
                _ => (finished, started, last.to_vec()),
            };
            let mut twice = false;
            for (i, &n) in counts.iter().enumerate() {
                let what = format!("{read:?}, value {}", VALUES.get(i).unwrap_or(&0));
                if n > hi[i] {
                    findings
                        .above
                        .push(format!("{what}: {n} > {} started", hi[i]));
                    twice = true;
                }
                if n < lo[i] {
                    findings
                        .below
                        .push(format!("{what}: {n} < {} finished", lo[i]));
                }
                if n < last_seen[i] {
                    findings
                        .down
                        .push(format!("{what}: {n} < {} read before", last_seen[i]));
                }
            }
            // A read that counted twice is not what later reads must reach.
            if !matches!(read, Via::Total) && !twice {
                for (l, n) in last.iter_mut().zip(&counts) {
                    *l = (*l).max(*n);
                }
            }
        }
        if stopping {
            return findings;
        }
    }
}

/// One recording thread: one record of each value, each counted in the ledger before and
/// after; then the thread exits, which folds its shard.
fn record_and_exit<C, S>(h: &ThreadLocalHistogram<C, S>, ledger: &Ledger)
where
    C: LocalCounter,
    S: StorageChoice,
{
    for (i, &v) in VALUES.iter().enumerate() {
        ledger.started[i].fetch_add(1, Ordering::SeqCst);
        h.record(v);
        ledger.finished[i].fetch_add(1, Ordering::SeqCst);
    }
}

/// `exits` threads record and exit, [`PARALLEL`] at a time, while a reader reads; then the
/// reader's findings, and a final exact check.
fn race<C, S>(exits: u64)
where
    C: StorageWidth,
    S: StorageChoice,
{
    let layout = layout();
    let h = HistogramBuilder::<C, S>::default()
        .layout(layout)
        .window(Window::new(layout, MIN, MAX).unwrap())
        .thread_local()
        .unwrap();
    let ledger = Ledger::default();
    let stop = StopFlag::new();
    let findings = std::thread::scope(|s| {
        // The reader stops however this closure ends (a failed join too).
        let _stop = stop.raise_on_drop();
        let reading = s.spawn(|| reader(&h, &ledger, &stop));
        let mut spawned = 0;
        while spawned < exits {
            let batch: Vec<_> = (0..PARALLEL as u64)
                .take_while(|k| spawned + k < exits)
                .map(|_| s.spawn(|| record_and_exit(&h, &ledger)))
                .collect();
            spawned += batch.len() as u64;
            // An explicit join waits for the thread's TLS destructors: its fold.
            batch.into_iter().for_each(|t| t.join().unwrap());
        }
        stop.raise();
        reading.join().unwrap()
    });
    let kind = std::any::type_name::<S>();
    assert!(findings.reads >= READS.len() as u64, "{kind}: no read made");
    assert!(
        findings.above.is_empty() && findings.below.is_empty() && findings.down.is_empty(),
        "{kind}: {} reads beside {exits} thread exits: {} counted twice, {} missed, {} went \
         down; first of each: {:?} {:?} {:?}",
        findings.reads,
        findings.above.len(),
        findings.below.len(),
        findings.down.len(),
        findings.above.first(),
        findings.below.first(),
        findings.down.first(),
    );
    // Every thread was joined: every count is in the accumulator, once.
    assert_eq!(
        read_once(&h, Via::ReadRecorded),
        Ok(vec![exits; VALUES.len()])
    );
    assert_eq!(h.live_shard_count(), 0);
}

#[test]
fn sparse_reads_beside_thread_exits() {
    race::<u64, Sparse>(exits());
}

#[test]
fn dense_reads_beside_thread_exits() {
    race::<u32, Dense>(exits());
}
