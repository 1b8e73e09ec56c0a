//! Sparse storage against dense storage, value for value: every read (buckets, sums, the bulk
//! read, percentiles, statistics), reset, snapshots, `add` across kinds, the V2 codec and
//! `.hlog` lines, for the plain, atomic, thread-local and approximate kinds; and the lock-free page
//! installation under threads that race on fresh blocks (a churn stress test, small enough
//! for miri).

use picollo_alloc::hdr::{export, export_v2_into, ExportOptions, LogWriter};
use picollo_alloc::sparse::{widened, SparseStorage, COLD_WORD_BYTES, HOT};
use picollo_alloc::{bulk, HistogramBuilder, Snapshot};
use picollo_core::scalable::XorShift;
use picollo_core::{Cells, EquivalentValue, HistogramRead, Layout, Percentile, ReadExt, Window};
use picollo_testkit::miri_size as size;
use proptest::prelude::*;
use std::ops::ControlFlow;

#[path = "common/miri_cases.rs"]
mod miri_cases;
use miri_cases::cases;

/// Every non-empty bucket, through the bulk read.
fn buckets<H: HistogramRead + ?Sized>(h: &H) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    bulk::recorded_into(h, &mut out);
    out
}

/// The non-empty buckets `h.recorded_runs_from(from, ..)` hands on, breaking at the first
/// past `most`; asserts that the runs start at `from` or above, in increasing order, without
/// overlap.
fn recorded_from<H: HistogramRead + ?Sized>(h: &H, from: usize, most: usize) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut reached = from;
    h.recorded_runs_from(from, &mut |start, counts| {
        assert!(
            start >= reached,
            "run at {start} before {reached} (from {from})"
        );
        reached = start + counts.len();
        for (s, &n) in (start..).zip(counts) {
            if n != 0 {
                if out.len() == most {
                    return ControlFlow::Break(());
                }
                out.push((s, n));
            }
        }
        ControlFlow::Continue(())
    });
    out
}

/// Asserts that `h`'s reads from a position ([`HistogramRead::recorded_runs_from`]) find
/// `recorded` (every non-empty bucket) from each of `froms` on: all of them, and the first 3
/// and 40 when the walk breaks there (sparse storage sorts 512 cold entries a round: the
/// whole walks of `cold_tier_stops_at_its_limit_and_pages_take_over`, over 1,800 cold words
/// natively, cross rounds).
fn assert_reads_from<H: HistogramRead + ?Sized>(
    h: &H,
    recorded: &[(usize, u64)],
    froms: impl IntoIterator<Item = usize>,
) {
    // The positions past 0 in the order given first (sparse storage's walk cache is another
    // histogram's or none: the first call gathers it from its position, and a call before
    // the position gathered from gathers again), then ascending from 0 (a walk: the cold
    // entries gathered at 0 serve the later calls).
    let froms: Vec<usize> = froms.into_iter().collect();
    let mut ascending = froms.clone();
    ascending.push(0);
    ascending.sort_unstable();
    let past_0 = froms.into_iter().filter(|&from| from != 0);
    for from in past_0.chain(ascending) {
        let expected: Vec<_> = recorded.iter().filter(|b| b.0 >= from).copied().collect();
        assert_eq!(recorded_from(h, from, usize::MAX), expected, "from {from}");
        // In CI's miri run one break, past the first batch's worth of runs.
        for most in [3, 40].into_iter().skip(size(0, 0, 1)) {
            let first = &expected[..most.min(expected.len())];
            assert_eq!(recorded_from(h, from, most), first, "from {from}, {most}");
        }
    }
}

/// Asserts that `a` and `b` read alike (same layout and window): buckets, sums over `ranges`,
/// totals, outside counts, percentiles and statistics.
fn assert_reads_alike<A, B>(a: &A, b: &B, ranges: &[(usize, usize)])
where
    A: HistogramRead + ?Sized,
    B: HistogramRead + ?Sized,
{
    assert_eq!(a.layout(), b.layout());
    assert_eq!(a.window(), b.window());
    let recorded = buckets(b);
    assert_eq!(buckets(a), recorded);
    for &(slot, n) in &recorded {
        assert_eq!(a.count_at(slot), n, "slot {slot}");
        if slot + 1 < a.window().len() {
            assert_eq!(a.count_at(slot + 1), b.count_at(slot + 1));
        }
    }
    // Reads from a position: the window's ends, the ranges' starts, and about 30 recorded
    // buckets and the slots after them (1 in CI's miri run, where the reads are safe code:
    // the page race test took 39 s there without them, 53 with 3 and the dense side's).
    let step = recorded.len() / size(30, 30, 1) + 1;
    let froms = recorded
        .iter()
        .step_by(step)
        .flat_map(|&(slot, _)| [slot, slot + 1])
        .chain(ranges.iter().map(|r| r.0))
        .chain([0, a.window().len()]);
    assert_reads_from(a, &recorded, froms.clone());
    // The reference's reads (dense storage's scan) natively; CI's miri run spends its time
    // on the sparse side (the page race test's reads took 70 s there with both, 33 before).
    if size(true, true, false) {
        assert_reads_from(b, &recorded, froms);
    }
    for &(start, end) in ranges {
        assert_eq!(
            a.sum_range(start, end),
            b.sum_range(start, end),
            "{start}..{end}"
        );
    }
    assert_eq!(a.total(), b.total());
    assert_eq!((a.underflow(), a.overflow()), (b.underflow(), b.overflow()));
    assert_eq!(a.min(), b.min());
    assert_eq!(a.max(), b.max());
    if b.total() > 0 {
        for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(
                a.percentile(p, EquivalentValue::Midpoint),
                b.percentile(p, EquivalentValue::Midpoint),
                "p{p}"
            );
        }
        assert_eq!(a.int_stats(), b.int_stats());
        assert_eq!(a.stats(), b.stats());
        // A batch out of order with a repeated rank: sparse kinds walk their bulk read.
        let ranks = [99.0, 0.0, 50.0, 99.0, 100.0, 25.0];
        let (mut pa, mut pb) = ([Percentile::default(); 6], [Percentile::default(); 6]);
        a.percentiles(&ranks, EquivalentValue::Upper, &mut pa)
            .unwrap();
        b.percentiles(&ranks, EquivalentValue::Upper, &mut pb)
            .unwrap();
        assert_eq!(pa, pb);
    }
    // The iterations: sparse kinds pass runs of empty buckets with one sum each.
    assert!(a.recorded_buckets().eq(b.recorded_buckets()));
    assert!(a.buckets().eq(b.buckets()));
    let upper = EquivalentValue::Upper;
    assert!(a
        .recorded_bucket_percentiles(upper)
        .eq(b.recorded_bucket_percentiles(upper)));
    for ticks in [1, 5] {
        assert!(a
            .percentile_ticks(ticks)
            .unwrap()
            .eq(b.percentile_ticks(ticks).unwrap()));
    }
    let step = (a.max().unwrap_or(0) / 37).max(1);
    assert!(a.linear(step).unwrap().eq(b.linear(step).unwrap()));
    assert!(a
        .logarithmic(1, 2.0)
        .unwrap()
        .eq(b.logarithmic(1, 2.0).unwrap()));
}

/// A value spread over every power of two below `2^bits`, from one random word.
fn spread(word: u64, bits: u32) -> u64 {
    let v = word >> (word % 64);
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

proptest! {
    // One case in CI's miri run (each costs a minute or more there), two in a full-size one.
    #![proptest_config(cases(size(48, 2, 1)))]

    #[test]
    fn plain_and_atomic_sparse_read_like_dense(
        k in 1u32..=(if cfg!(miri) { 3 } else { 9 }),
        bounds in (any::<u64>(), any::<u64>(), 0u32..=64),
        // In CI's miri run up to 30 records (25 s at 60).
        records in proptest::collection::vec((any::<u64>(), 0u64..40), 0..size(300, 300, 30)),
        ranges in proptest::collection::vec((any::<u64>(), any::<u64>()), 4),
    ) {
        let layout = Layout::from_block_scale(k).unwrap();
        let (a, b, bits) = bounds;
        let (lo, hi) = (spread(a, bits).min(spread(b, bits)), spread(a, bits).max(spread(b, bits)));
        let builder = HistogramBuilder::new().layout(layout).min_trackable(lo).max_trackable(hi);
        let mut sparse = builder.plain().unwrap();
        let atomic = builder.atomic().unwrap();
        let local = builder.thread_local().unwrap();
        let window = sparse.window();
        prop_assert_eq!(local.window(), window);
        prop_assert_eq!(window, widened(layout, Window::new(layout, lo, hi).unwrap()));
        prop_assert_eq!(atomic.window(), window);
        let mut dense = HistogramBuilder::new().layout(layout).window(window).dense().plain().unwrap();
        for (i, &(word, n)) in records.iter().enumerate() {
            let v = spread(word, bits.max(8));
            // Mostly single records (the cold tier, then pages), some bulk ones.
            if n < 30 {
                sparse.record(v);
                atomic.record(v);
                dense.record(v);
            } else {
                sparse.record_n(v, n);
                atomic.record_n(v, n);
                dense.record_n(v, n);
            }
            // The thread-local kind: this thread's shard, and every third record from a
            // thread that exits (its shard folded into the accumulator). Joined explicitly:
            // the end of `thread::scope` does not wait for the thread's TLS destructors
            // (rust-lang/rust#116179), which fold its shard; `join` does, so the reads below
            // check the folded counts, not a fold still in progress.
            // (Every twelfth in CI's miri run, where a thread costs a second.)
            if i % size(3, 3, 12) == 0 {
                std::thread::scope(|s| {
                    s.spawn(|| local.record_n(v, n.max(1) * u64::from(n >= 30) + u64::from(n < 30)))
                        .join()
                        .unwrap();
                });
            } else if n < 30 {
                local.record(v);
            } else {
                local.record_n(v, n);
            }
        }
        let len = window.len();
        let ranges: Vec<_> = ranges
            .iter()
            .map(|&(s, e)| ((s % (len as u64 + 2)) as usize, (e % (len as u64 + 2)) as usize))
            .collect();
        assert_reads_alike(&sparse, &dense, &ranges);
        assert_reads_alike(&atomic, &dense, &ranges);
        assert_reads_alike(&local, &dense, &ranges);
        // A clone reads alike too.
        assert_reads_alike(&sparse.clone(), &dense, &ranges);
    }

    #[test]
    fn reset_snapshots_add_and_codecs_on_sparse(
        first in proptest::collection::vec(any::<u64>(), 0..size(200, 200, 30)),
        second in proptest::collection::vec(any::<u64>(), 1..size(200, 200, 30)),
    ) {
        // In CI's miri run block scale 4 and a window up to 2^14 - 1 (whole blocks: 176 cells,
        // not 7,424: there each read of an atomic cell costs microseconds, and the dense
        // twin's walks the square of its length; 49 s at 2^20 - 1), values below 2^15 (some
        // above the window).
        let (k, top, bits) = size((7, u64::MAX, 64), (7, u64::MAX, 64), (4, (1 << 14) - 1, 15));
        let layout = Layout::from_block_scale(k).unwrap();
        let builder = HistogramBuilder::new().layout(layout).max_trackable(top);
        let atomic = builder.atomic().unwrap();
        let local = builder.thread_local().unwrap();
        let mut plain = builder.plain().unwrap();
        let mut dense = builder.dense().plain().unwrap();
        for &w in &first {
            atomic.record(spread(w, bits));
            local.record(spread(w, bits));
            plain.record(spread(w, bits));
        }
        atomic.reset();
        local.reset();
        plain.reset();
        for &w in &second {
            let v = spread(w, bits);
            atomic.record(v);
            local.record(v);
            plain.record(v);
            dense.record(v);
        }
        assert_reads_alike(&atomic, &dense, &[(0, layout.logical_len())]);
        // The thread-local kind after a reset: counts less the shard's (sparse) baseline.
        assert_reads_alike(&local, &dense, &[(0, layout.logical_len())]);
        local.reset();
        prop_assert_eq!(local.total_with_outside(), 0);
        prop_assert!(buckets(&local).is_empty());
        assert_reads_alike(&plain, &dense, &[]);
        prop_assert_eq!((atomic.reset_count(), plain.reset_count()), (1, 1));

        // Snapshots, totals and deltas.
        let snapshot = Snapshot::new(&atomic);
        assert_reads_alike(&snapshot, &dense, &[]);
        let mut deltas = Snapshot::new(&atomic);
        atomic.record(12_345);
        deltas.update(&atomic, true);
        prop_assert_eq!(deltas.total(), 1);

        // `add` across kinds and storages, both directions.
        let mut into_sparse = builder.plain().unwrap();
        into_sparse.add(&dense);
        assert_reads_alike(&into_sparse, &dense, &[]);
        let mut into_dense = builder.dense().plain().unwrap();
        into_dense.add(&plain);
        assert_reads_alike(&into_dense, &dense, &[]);
        // Into a narrower window: what lies above it goes to the overflow on both storages.
        // (Sparse storage's window ends at a block's end: the dense twin takes its window.)
        let mut s = HistogramBuilder::new().layout(layout).max_trackable(top / 3).plain().unwrap();
        let same = HistogramBuilder::new().layout(layout).window(s.window());
        let mut d = same.dense().plain().unwrap();
        s.add(&dense);
        d.add(&dense);
        assert_reads_alike(&s, &d, &[]);
        prop_assert_eq!((s.total_with_outside(), s.overflow()), (d.total_with_outside(), d.overflow()));
        let coarser = HistogramBuilder::new().relative_error(0.05).max_trackable(top);
        let (mut s, mut d) = (coarser.plain().unwrap(), coarser.dense().plain().unwrap());
        prop_assert_eq!(s.add(&plain), d.add(&dense));
        assert_reads_alike(&s, &d, &[]);

        // The V2 codec and `.hlog` lines, byte for byte.
        let options = ExportOptions::new().allow_dropping(true);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        export_v2_into(&plain, &options, &mut a).unwrap();
        export_v2_into(&dense, &options, &mut b).unwrap();
        prop_assert_eq!(&a, &b);
        let mut log_a = LogWriter::new(Vec::new());
        let mut log_b = LogWriter::new(Vec::new());
        log_a.write_interval(Some("x"), 0.0, 1.0, &export(&plain, &options).unwrap().counts).unwrap();
        log_b.write_interval(Some("x"), 0.0, 1.0, &export(&dense, &options).unwrap().counts).unwrap();
        prop_assert_eq!(log_a.get_ref(), log_b.get_ref());
    }
}

proptest! {
    // One case in CI's miri run, at block scales up to 4 and 30 records (at scale 9 a
    // full-range dense twin has 28,672 cells, whose walks cost minutes there).
    #![proptest_config(cases(size(32, 2, 1)))]

    /// A value unit (HdrHistogram's lowest discernible value) on sparse storage: the positions
    /// are the unit-free layout's of `v >> u`, the window starts at the layout's first index;
    /// it reads like dense storage, and `subtract` takes the same counts away.
    #[test]
    fn units_and_subtract_on_sparse(
        k in 2u32..=size(9, 9, 4),
        lowest in 1u64..5_000,
        // In CI's miri run up to 2^24 (windows of at most about 340 cells at block scale 4,
        // not the full range's 976: 29 s there, nearly all in the reads' walks); larger
        // values are overflow.
        max in 1_000u64..size(u64::MAX, u64::MAX, 1 << 24),
        // In CI's miri run up to 30 records (28 s at 60).
        records in proptest::collection::vec((any::<u64>(), 1u64..20), 1..size(200, 200, 30)),
        keep in 0usize..size(200, 200, 30),
    ) {
        let layout = Layout::from_block_scale(k).unwrap();
        let builder = HistogramBuilder::new()
            .layout(layout)
            .lowest_discernible(lowest)
            .max_trackable(max);
        let mut sparse = builder.plain().unwrap();
        let atomic = builder.atomic().unwrap();
        let (unit_layout, window) = (sparse.layout(), sparse.window());
        prop_assert_eq!(window.first() >= unit_layout.first_index(), true);
        prop_assert_eq!(atomic.window(), window);
        let dense_builder = builder.window(window).dense();
        let mut dense = dense_builder.plain().unwrap();
        let mut early = dense_builder.plain().unwrap();
        for (i, &(word, n)) in records.iter().enumerate() {
            let v = spread(word, 64);
            sparse.record_n(v, n);
            atomic.record_n(v, n);
            dense.record_n(v, n);
            if i < keep {
                early.record_n(v, n);
            }
        }
        let len = window.len();
        assert_reads_alike(&sparse, &dense, &[(0, len / 2), (len / 3, len)]);
        assert_reads_alike(&atomic, &dense, &[(0, len)]);
        prop_assert_eq!(sparse.subtract(&early), dense.subtract(&early));
        assert_reads_alike(&sparse, &dense, &[(0, len)]);
        // More than it holds: refused, nothing changed.
        if early.total() > 0 {
            prop_assert!(sparse.subtract(&atomic).is_err());
            assert_reads_alike(&sparse, &dense, &[]);
        }
    }
}

#[test]
fn approximate_sparse_is_exact_below_its_threshold() {
    // In CI's miri run block scale 4, up to 2^17, and 300 records: pages in a few blocks
    // still, of 8 scalable cells, not 256 (each read of one costs microseconds there), and a
    // dense twin of about 120 cells, not 15,400 (its walks cost the square of its length).
    let layout = size(
        Layout::DEFAULT,
        Layout::DEFAULT,
        Layout::from_block_scale(4).unwrap(),
    );
    let builder = HistogramBuilder::new()
        .layout(layout)
        .min_trackable(1000)
        .max_trackable(size(1 << 40, 1 << 40, 1 << 17));
    let approx = builder.approximate().unwrap();
    let mut dense = HistogramBuilder::new()
        .layout(approx.layout())
        .window(approx.window())
        .dense()
        .plain()
        .unwrap();
    let mut rng = XorShift::new(9);
    let (records, spread) = size((5_000u64, 1 << 30), (5_000, 1 << 30), (300, 1 << 16));
    for i in 0..records {
        let v = (i * 7919) % spread + i % 3;
        approx.record(v, &mut rng);
        dense.record(v);
    }
    approx.record_n(5, 3, &mut rng);
    dense.record_n(5, 3);
    assert_reads_alike(&approx, &dense, &[(0, 10_000)]);
    // Pages only: one per block recorded into, no cold tier.
    assert_eq!(approx.storage().cold_words(), 0);
    approx.reset();
    assert_eq!(approx.total_with_outside(), 0);
}

#[test]
fn memory_follows_the_data() {
    let layout = Layout::from_block_scale(7).unwrap();
    let h = HistogramBuilder::new().layout(layout).atomic().unwrap();
    // Nothing allocated before the first record: no directory, no table.
    assert_eq!(h.storage().held_bytes(), 0);
    assert_eq!(h.footprint(), size_of_val(&h));
    // 20 values over 1 µs .. 1 s (in ns): entries in the first table (32 words of 4 bytes),
    // no page and no directory.
    for i in 0..20u64 {
        h.record(1_000 << (i % 20));
    }
    assert_eq!(h.storage().pages(), 0);
    assert_eq!(h.storage().cold_words(), 32);
    let held = h.storage().held_bytes();
    assert!(held <= 32 * COLD_WORD_BYTES + 64, "{held} bytes");
    // About 380 buckets spread over 20 octaves, one value each (a lightly used series that
    // touches every decade): still no page, the tables of 32 to 512 words.
    let spread = HistogramBuilder::new().layout(layout).atomic().unwrap();
    for octave in 0..20u64 {
        let base = 1_000 << octave;
        for step in 0..size(19, 19, 3) {
            spread.record(base + base * step / 20);
        }
    }
    assert_eq!(spread.storage().pages(), 0);
    let words = size(992, 992, 96);
    assert_eq!(spread.storage().cold_words(), words);
    let held = spread.storage().held_bytes();
    assert!(held <= words * COLD_WORD_BYTES + 6 * 64, "{held} bytes");
    // A hot bucket gets its block a page (and the storage its directory: its length and a
    // pointer per block); its early counts stay in the table.
    let before = h.storage().held_bytes();
    for _ in 0..HOT {
        h.record(777);
    }
    assert_eq!(h.storage().pages(), 1);
    let page = layout.block_size() as usize * size_of::<u64>();
    let directory = (1 + layout.block_count() as usize - 1) * size_of::<usize>();
    assert_eq!(h.storage().held_bytes(), before + directory + page);
    let slot = h.window().storage_index(layout.index_of(777)).unwrap();
    assert_eq!(h.count_at(slot), HOT);
    h.record(777);
    assert_eq!(h.count_at(slot), HOT + 1);
    // A dense full-range histogram holds every cell.
    let dense = HistogramBuilder::new()
        .layout(layout)
        .dense()
        .atomic()
        .unwrap();
    assert_eq!(
        dense.footprint() - size_of_val(&dense),
        layout.logical_len() * 8
    );
    // Every page installed: dense memory, page path for every record.
    h.storage().install_all();
    assert_eq!(h.storage().pages(), layout.block_count() as usize - 1);
}

#[test]
fn cold_tier_stops_at_its_limit_and_pages_take_over() {
    // In CI's miri run block scale 4 (a cold-tier limit of 2 words a block, not 16) and 250
    // values (28 s at 400), still past the limit over the 37 blocks they touch.
    let layout = Layout::from_block_scale(size(7, 7, 4)).unwrap();
    let mut h = HistogramBuilder::new().layout(layout).plain().unwrap();
    let mut dense = HistogramBuilder::new()
        .layout(layout)
        .window(h.window())
        .dense()
        .plain()
        .unwrap();
    // Many distinct buckets, one value each: the tables fill, then blocks get pages.
    for i in 0..size(5_000u64, 5_000, 250) {
        let v = (i * 2_654_435_761) % (1 << 40);
        h.record(v);
        dense.record(v);
    }
    let limit = SparseStorage::<u64>::cold_word_limit(
        layout.block_count() as usize - 1,
        layout.block_scale(),
    );
    assert!(h.storage().cold_words() <= limit);
    assert!(h.storage().pages() > 0);
    assert_reads_alike(&h, &dense, &[(0, 3000), (3000, 7000)]);
    h.reset();
    assert_eq!(h.total_with_outside(), 0);
    assert!(buckets(&h).is_empty());
}

/// The non-empty buckets from storage index `from` on, read bucket by bucket.
fn counted_from<H: HistogramRead + ?Sized>(h: &H, from: usize) -> Vec<(usize, u64)> {
    (from..h.window().len())
        .map(|s| (s, h.count_at(s)))
        .filter(|b| b.1 != 0)
        .collect()
}

#[test]
fn reads_from_a_position_follow_every_change_between_calls() {
    // Sparse storage keeps a walk's cold entries (sorted, with their positions) between
    // calls: a count that moves, a key added, a reset and a refill with as many other keys
    // must each show in the next call. 40 cold buckets and a page.
    let layout = Layout::from_block_scale(4).unwrap();
    let atomic = HistogramBuilder::new().layout(layout).atomic().unwrap();
    let mut plain = HistogramBuilder::new().layout(layout).plain().unwrap();
    let values = |offset: u64| (0..40u64).map(move |i| (i * 7 + offset) * 1_009 + 17);
    for v in values(0) {
        atomic.record(v);
        plain.record(v);
    }
    atomic.record_n(5, 100);
    plain.record_n(5, 100);
    let from = counted_from(&atomic, 0)[3].0;
    for h in [&atomic as &dyn HistogramRead, &plain] {
        // A walk's start gathers; the next call reads from what it gathered.
        assert_eq!(recorded_from(h, 0, usize::MAX), counted_from(h, 0));
        assert_eq!(recorded_from(h, from, usize::MAX), counted_from(h, from));
    }
    // A count moves (same keys): the next call reads it at its position.
    let moved = counted_from(&atomic, from)[2].0;
    let v = atomic.layout().lo(atomic.window().first() + moved);
    recorded_from(&atomic, 0, 1);
    atomic.record(v);
    let after = recorded_from(&atomic, from, usize::MAX);
    assert_eq!(after, counted_from(&atomic, from));
    assert!(after.contains(&(moved, 2)), "{after:?}");
    // A key added.
    recorded_from(&atomic, 0, 1);
    atomic.record(3_000_017);
    assert_eq!(
        recorded_from(&atomic, from, usize::MAX),
        counted_from(&atomic, from)
    );
    // A reset and as many other keys: the cold tier's entries counted, the keys all new.
    recorded_from(&plain, 0, 1);
    let before = plain.storage().cold_words();
    plain.reset();
    for v in values(3) {
        plain.record(v);
    }
    plain.record_n(5, 100);
    assert_eq!(plain.storage().cold_words(), before);
    let refilled = recorded_from(&plain, from, usize::MAX);
    assert_eq!(refilled, counted_from(&plain, from));
    assert_eq!(
        recorded_from(&plain, 0, usize::MAX),
        counted_from(&plain, 0)
    );
}

#[test]
fn a_reset_between_calls_is_seen_with_the_same_positions_and_entry_count() {
    // The case only the cold tier's generation tells: after a reset, the same keys again at
    // the same positions past the position read from, one key below it left out and one new
    // key past it, so the tier's entry count and newest table are as before, and every kept
    // position past it still holds its key. 20 buckets: one table.
    let layout = Layout::from_block_scale(4).unwrap();
    let mut h = HistogramBuilder::new().layout(layout).plain().unwrap();
    let values: Vec<u64> = (0..20u64).map(|i| (i * 7 + 1) * 1_009).collect();
    for &v in &values {
        h.record(v);
    }
    let from = counted_from(&h, 0)[1].0;
    assert_eq!(recorded_from(&h, 0, usize::MAX), counted_from(&h, 0));
    h.reset();
    for &v in &values[1..] {
        h.record(v);
    }
    h.record(5_000_000);
    assert_eq!(h.storage().pages(), 0);
    assert_eq!(recorded_from(&h, from, usize::MAX), counted_from(&h, from));
}

#[test]
fn a_storage_made_where_another_was_dropped_is_read_anew() {
    // The second round's histogram is made where the first one was dropped, and its one
    // table takes the freed one's address, with as many entries at the same positions but
    // one: the first round's lowest bucket left out, a new one past the position read from.
    // Only the cold tier's generation tells the walk cache that the first round's entries
    // are not this one's (the page race test read 12 for 18 before it did).
    let layout = Layout::from_block_scale(4).unwrap();
    let values: Vec<u64> = (0..20u64).map(|i| (i * 7 + 1) * 1_009).collect();
    let mut from = None;
    for round in 0..2 {
        let h = HistogramBuilder::new().layout(layout).atomic().unwrap();
        if round == 0 {
            values.iter().for_each(|&v| h.record(v));
            from = Some(counted_from(&h, 0)[1].0);
            // A walk's start: the cache the second round's histogram finds.
            recorded_from(&h, 0, usize::MAX);
        } else {
            values[1..].iter().for_each(|&v| h.record(v));
            h.record(5_000_000);
            let from = from.unwrap();
            assert_eq!(recorded_from(&h, from, usize::MAX), counted_from(&h, from));
            // Another thread's walk gives this tier a generation (its own cache): this
            // thread's cache, the first round's, is still not this tier's.
            std::thread::scope(|s| {
                s.spawn(|| recorded_from(&h, 0, usize::MAX));
            });
            assert_eq!(recorded_from(&h, from, usize::MAX), counted_from(&h, from));
        }
    }
}

#[test]
fn walks_taking_turns_each_read_their_own_storage() {
    // A thread keeps a walk cache per storage (32 at most): walks that take turns, three
    // buckets a call, over 2 storages (each keeps its cache) and over 33 (more than the
    // caches: some are taken over between a walk's calls and gathered anew) each read their
    // own buckets. Every storage's buckets in its cold tier, at keys of its own.
    let layout = Layout::from_block_scale(4).unwrap();
    // In CI's miri run 4 buckets a storage (two calls of each walk), not 12 (four): past 32
    // storages every call gathers its storage's entries anew.
    let buckets = size(12, 12, 4);
    for storages in [2u64, 33] {
        let values = move |k: u64| (0..buckets).map(move |i| (i * 13 + k + 1) * 1_009);
        let histograms: Vec<_> = (0..storages)
            .map(|k| {
                let mut h = HistogramBuilder::new().layout(layout).plain().unwrap();
                values(k).for_each(|v| h.record(v));
                assert_eq!(h.storage().pages(), 0);
                h
            })
            .collect();
        // Each value in a bucket of its own (values 13,117 apart, buckets of at most 1/16 of
        // a value): the expected buckets come from the layout, not from a read.
        let expected: Vec<Vec<(usize, u64)>> = (0..storages)
            .zip(&histograms)
            .map(|(k, h)| {
                let slot = |v| h.window().storage_index(layout.index_of(v)).unwrap();
                values(k).map(|v| (slot(v), 1)).collect()
            })
            .collect();
        let mut walked = vec![Vec::new(); histograms.len()];
        let mut positions = vec![0usize; histograms.len()];
        for _ in 0..buckets.div_ceil(3) + 1 {
            for (i, h) in histograms.iter().enumerate() {
                let batch = recorded_from(h, positions[i], 3);
                if let Some(&(last, _)) = batch.last() {
                    positions[i] = last + 1;
                }
                walked[i].extend(batch);
            }
        }
        assert_eq!(walked, expected, "{storages} storages");
    }
}

#[test]
fn narrow_cells_saturate_like_dense_ones() {
    let b = HistogramBuilder::new().max_trackable(1000).u16_storage();
    let mut sparse = b.plain().unwrap();
    let atomic = b.atomic().unwrap();
    // In CI's miri run most of the way in one `record_n`, the last 1,000 one at a time.
    let singles = size(70_000, 70_000, 1_000);
    sparse.record_n(7, 70_000 - singles);
    atomic.record_n(7, 70_000 - singles);
    for _ in 0..singles {
        sparse.record(7);
        atomic.record(7);
    }
    assert_eq!(sparse.count_at(7), 65_535);
    assert_eq!(atomic.count_at(7), 65_535);
}

/// Threads race to record into fresh blocks of fresh histograms (each block's first records
/// race on its page and on the cold tier's tables): no count is lost, and each histogram
/// reads like the dense one of the same values.
#[test]
fn page_installation_races_lose_no_count() {
    let (rounds, threads, per_thread) = if cfg!(miri) {
        (2, 2, 24)
    } else {
        (200, 4, 2_000)
    };
    let layout = Layout::from_block_scale(4).unwrap();
    for round in 0..rounds {
        let h = HistogramBuilder::new().layout(layout).atomic().unwrap();
        let barrier = std::sync::Barrier::new(threads);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (h, barrier) = (&h, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..per_thread as u64 {
                        // Every thread walks the same blocks in the same order.
                        let v = (i * 97 + round) << (i % 40);
                        if i % 50 == 0 {
                            h.record_n(v, 3 + t as u64);
                        } else {
                            h.record(v);
                        }
                    }
                });
            }
        });
        let mut dense = HistogramBuilder::new()
            .layout(layout)
            .window(h.window())
            .dense()
            .plain()
            .unwrap();
        for t in 0..threads {
            for i in 0..per_thread as u64 {
                let v = (i * 97 + round) << (i % 40);
                dense.record_n(v, if i % 50 == 0 { 3 + t as u64 } else { 1 });
            }
        }
        assert_reads_alike(&h, &dense, &[]);
    }
}

/// One value per bit (0, then 2^0 … 2^63): every block a position names at any block scale.
fn every_block() -> Vec<u64> {
    core::iter::once(0)
        .chain((0..64).map(|b| 1u64 << b))
        .collect()
}

/// The record path reads a directory entry for every block a position names, with no bound
/// check (`directory.rs`): before the directory exists (the static empty one), and after, past
/// a bounded window's blocks and below them. Every value lands where dense storage over the
/// same window puts it, for the plain, atomic and thread-local kinds, at the smallest, the
/// `metrics` recorder's and the largest block scale. Under miri too: a read past an entry
/// would be out of bounds there.
#[test]
fn every_block_reads_an_entry_with_or_without_a_directory() {
    use picollo_alloc::HeapStorage;
    use picollo_core::{AtomicHistogram, Histogram};
    // Not the largest scale under miri: its pages are 2^20 cells, which miri walks slowly.
    let scales: &[u32] = if cfg!(miri) {
        &[picollo_core::layout::MIN_BLOCK_SCALE, 7]
    } else {
        &[
            picollo_core::layout::MIN_BLOCK_SCALE,
            7,
            picollo_core::layout::MAX_BLOCK_SCALE,
        ]
    };
    for &k in scales {
        let layout = Layout::from_block_scale(k).unwrap();
        // The blocks of 2^(k + 4) … 2^(k + 6): three of the 64 - k a position can name.
        let window = widened(
            layout,
            Window::new(layout, 1 << (k + 4), 1 << (k + 6)).unwrap(),
        );
        let mut plain =
            Histogram::with_storage(layout, SparseStorage::<u64>::new(layout, window), window)
                .unwrap();
        let atomic = AtomicHistogram::with_storage(
            layout,
            SparseStorage::<portable_atomic::AtomicU64>::new(layout, window),
            window,
        )
        .unwrap();
        let mut dense =
            Histogram::with_storage(layout, HeapStorage::with_len(window.len(), || 0u64), window)
                .unwrap();
        let builder = HistogramBuilder::new()
            .layout(layout)
            .max_trackable(1 << (k + 6));
        let thread_local = builder.thread_local().unwrap();
        // Dense storage over the thread-local kind's window (widened to whole blocks).
        let tl_window = thread_local.window();
        let tl_cells = HeapStorage::with_len(tl_window.len(), || 0u64);
        let mut thread_local_dense = Histogram::with_storage(layout, tl_cells, tl_window).unwrap();
        // Before any page, then with the directory installed (a hot bucket in the window).
        for round in 0..2 {
            for &v in &every_block() {
                plain.record(v);
                atomic.record(v);
                dense.record(v);
                thread_local.record(v);
                thread_local_dense.record(v);
            }
            if round == 0 {
                let hot = 1 << (k + 5);
                plain.record_n(hot, HOT);
                atomic.record_n(hot, HOT);
                dense.record_n(hot, HOT);
                thread_local.record_n(hot, HOT);
                thread_local_dense.record_n(hot, HOT);
                assert_eq!(plain.storage().pages(), 1, "k = {k}");
                assert_eq!(atomic.storage().pages(), 1, "k = {k}");
            }
        }
        assert_reads_alike(&plain, &dense, &[]);
        assert_reads_alike(&atomic, &dense, &[]);
        assert_reads_alike(&thread_local, &thread_local_dense, &[]);
    }
}
