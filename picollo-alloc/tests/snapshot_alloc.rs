//! Snapshots allocate nothing in steady state: a counting global allocator (per thread, so
//! the test harness and writer threads do not disturb the count) sees no allocation in the
//! reading thread after the first update, across many updates, percentile reads, statistics
//! and summary fills, from plain, atomic and thread-local sources.

use picollo_alloc::{HistogramBuilder, Snapshot, SnapshotExt, Summary};
use picollo_core::{EquivalentValue, HistogramRead, Layout, Percentile, ReadExt, Window};
use picollo_testkit::StopFlag;
use std::sync::atomic::{AtomicBool, Ordering};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

/// Updates per test (the plain source's; half and a quarter for the others). Under miri 40,
/// not 200: each record and read there retags the whole storage; in CI's miri run 12 (the
/// file took 44 s at 40), still several updates past the first, which may allocate. Read
/// before a count starts: it reads the environment, which allocates when the variable is set.
fn rounds() -> u64 {
    picollo_testkit::miri_size(200, 40, 12)
}

const RANKS: [f64; 8] = [0.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0];

/// The builder of this file's layout and window.
fn builder() -> HistogramBuilder {
    HistogramBuilder::new().layout(layout()).window(window())
}

fn layout() -> Layout {
    Layout::from_relative_error(0.01).unwrap()
}

fn window() -> Window {
    Window::new(layout(), 10_000, 30_000).unwrap()
}

/// Reads everything a monitoring loop reads; must not allocate.
fn read_all(s: &Snapshot, summary: &mut Summary, out: &mut [Percentile; 8]) -> u64 {
    s.percentiles(&RANKS, EquivalentValue::Midpoint, out)
        .unwrap();
    let stats = s.stats();
    summary.fill_from(s);
    let _ = s.timestamp();
    let _ = s.interval();
    stats.total + out[7].value + summary.total()
}

#[test]
fn steady_state_updates_from_a_plain_histogram_allocate_nothing() {
    let rounds = rounds();
    let mut h = builder().u32_storage().dense().plain().unwrap();
    (0..rounds * 50).for_each(|i| h.record(20_000 + i % 5000));
    let mut snapshot = h.snapshot();
    let mut summary = Summary::new();
    let mut out = [Percentile::default(); 8];
    let before = allocations();
    let mut sink = 0;
    for round in 0..rounds {
        (0..100u64).for_each(|i| h.record(15_000 + (i * round) % 10_000));
        h.record(40_000); // overflow
        snapshot.update(&h, round % 2 == 0);
        sink += read_all(&snapshot, &mut summary, &mut out);
    }
    assert_eq!(
        allocations() - before,
        0,
        "steady-state snapshot work allocated"
    );
    assert!(sink > 0);
}

#[test]
fn steady_state_updates_from_an_atomic_histogram_allocate_nothing() {
    let rounds = rounds();
    let h = builder().dense().atomic().unwrap();
    (0..1000u64).for_each(|i| h.record(20_000 + i));
    let mut snapshot = Snapshot::new(&h);
    let mut summary = Summary::new();
    let mut out = [Percentile::default(); 8];
    let before = allocations();
    for round in 0..rounds / 2 {
        if round % 10 == 0 {
            h.reset();
        }
        (0..100u64).for_each(|i| h.record(12_000 + i * round));
        snapshot.update(&h, true);
        read_all(&snapshot, &mut summary, &mut out);
    }
    assert_eq!(allocations() - before, 0);
}

/// The monitoring pattern of Picollo for .NET: a writer thread records into a thread-local
/// histogram (dense shards) while this thread updates a snapshot with deltas. After the first update (and
/// this thread's own first record, which claims its shard, and the first reset, which
/// allocates the shards' baselines), nothing allocates here, resets included.
#[test]
fn steady_state_updates_from_a_thread_local_histogram_allocate_nothing() {
    // Dense shards: their bulk read allocates nothing. (Sparse shards, the default, sort
    // their cold entries into a list on each read: a read allocates, a record does not.)
    let h = builder().dense().thread_local().unwrap();
    let stop = StopFlag::new();
    let ready = AtomicBool::new(false);
    std::thread::scope(|s| {
        // The recording thread stops however this closure ends.
        let _stop = stop.raise_on_drop();
        s.spawn(|| {
            let _stop = stop.raise_on_drop();
            h.record(18_000);
            ready.store(true, Ordering::Release);
            let mut i = 0u64;
            while !stop.is_raised() {
                h.record(18_000 + i % 9000);
                i += 1;
            }
        });
        h.record(20_000); // claims this thread's shard (allocates once)
        assert!(stop.wait_until(|| ready.load(Ordering::Acquire)));
        h.reset(); // allocates a baseline for each of the two shards
        let mut snapshot = h.snapshot();
        let mut summary = Summary::new();
        let mut out = [Percentile::default(); 8];
        // At least 10 updates, so one reset (at the tenth) is among them.
        let updates = rounds().max(40) / 4;
        let before = allocations();
        let mut deltas = 0u64;
        for round in 0..updates {
            h.record(21_000 + round);
            snapshot.update(&h, true);
            deltas += snapshot.total();
            read_all(&snapshot, &mut summary, &mut out);
            if round % 10 == 9 {
                h.reset();
            }
        }
        snapshot.update(&h, false);
        let allocated = allocations() - before;
        stop.raise();
        assert_eq!(allocated, 0);
        assert!(deltas >= updates);
    });
}

#[test]
fn the_first_update_of_a_new_shape_allocates() {
    let a = builder().dense().plain().unwrap();
    let b = HistogramBuilder::new()
        .layout(layout())
        .window(Window::new(layout(), 0, 1000).unwrap())
        .dense()
        .plain()
        .unwrap();
    let mut snapshot = a.snapshot();
    let before = allocations();
    snapshot.update(&b, false);
    assert!(allocations() > before, "re-shaping must allocate");
    assert_eq!(snapshot.window(), b.window());
}
