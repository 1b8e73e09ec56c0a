//! The firmware-grade core: all-zero statics, the 32-bit record path, the integer read path,
//! reset counts, coordinated-omission correction on every kind, `u16` counters.

use picollo_core::approx::ApproxHistogram;
use picollo_core::cell::{AtomicU16, AtomicU32, AtomicU64};
use picollo_core::prelude::*;
use picollo_core::scalable::{ScalableCell, XorShift};
use picollo_core::{IntStats, Window};
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

/// The default layout's block scale; under miri 8 (values below 512 are still unit buckets,
/// which `integer_stats_on_known_values` pins).
const K: u32 = if cfg!(miri) { 8 } else { 9 };
const L: Layout = ConstLayout::<K>::LAYOUT;
/// Under miri two octaves (512 cells at block scale 8) instead of 1..10^6 (5.6k cells): each
/// call on a histogram held by value retags all of it, and for atomic cells visits every cell
/// for its `UnsafeCell`, so a test's time grows with the square of the length (the first test
/// took over 150 s at full size, 15 s at two octaves of the default layout).
const MIN: u64 = if cfg!(miri) { 1 << 16 } else { 1 };
const MAX: u64 = if cfg!(miri) { (1 << 18) - 1 } else { 1_000_000 };
const LEN: usize = storage_len(L, MIN, MAX);

type Plain = Histogram<[u32; LEN], ConstLayout<K>, ConstWindow<MIN, MAX>>;
type Shared = AtomicHistogram<[AtomicU32; LEN], ConstLayout<K>, ConstWindow<MIN, MAX>>;

/// The largest block scale the properties draw, and the layout of the full-range property:
/// under miri 8 (window of 1000..2^28: 4,600 cells, not 245,000 at 14) and 4 (full range: 976
/// cells, not 28,700 at 9).
const MAX_K: u32 = if cfg!(miri) { 8 } else { 14 };
const FULL_L: Layout = if cfg!(miri) {
    ConstLayout::<4>::LAYOUT
} else {
    L
};

static PLAIN_AT_REST: Plain = Histogram::empty();
static SHARED_AT_REST: Shared = AtomicHistogram::empty();

/// The bytes of a value (for checking that a `static` is all zeros, hence in `.bss`).
fn bytes_of<T>(value: &T) -> &[u8] {
    // SAFETY: any initialized value can be read as bytes for its size; the histograms here
    // have no padding that matters for the check (padding would read as whatever it is, and
    // the assertion is on the whole object being zero, which `const` zero-initialization of
    // every field gives).
    unsafe { core::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

#[test]
fn const_typed_statics_are_all_zero_and_carry_nothing_but_cells() {
    assert!(bytes_of(&PLAIN_AT_REST).iter().all(|&b| b == 0));
    assert!(bytes_of(&SHARED_AT_REST).iter().all(|&b| b == 0));
    // The header is the three u64 counts (underflow, overflow, resets); layout and window
    // are zero-sized.
    assert_eq!(size_of::<Plain>(), LEN * 4 + 3 * 8);
    assert_eq!(PLAIN_AT_REST.window(), Window::new(L, MIN, MAX).unwrap());
    assert_eq!(PLAIN_AT_REST.layout(), L);
    if !cfg!(miri) {
        assert_eq!(L, Layout::DEFAULT);
    }
}

#[test]
fn const_typed_histograms_record_like_runtime_ones() {
    let mut typed = Plain::empty();
    let mut runtime = Histogram::<[u32; LEN]>::new(L, MIN, MAX);
    let shared = Shared::empty();
    let mut rng = XorShift::new(11);
    use picollo_core::scalable::RandomSource;
    // The values start with both ends (0 under the window, u64::MAX over it), so that the
    // short run under miri, where each call on these large histograms is slow, hits both.
    let random =
        (0..if cfg!(miri) { 200 } else { 20_000 }).map(|_| rng.next_u64() >> (rng.next_u32() % 64));
    for v in [0, u64::MAX].into_iter().chain(random) {
        typed.record(v);
        runtime.record(v);
        shared.record(v);
    }
    assert_eq!(typed.storage(), runtime.storage());
    let under_over = (runtime.underflow(), runtime.overflow());
    assert_eq!((typed.underflow(), typed.overflow()), under_over);
    assert_eq!((shared.underflow(), shared.overflow()), under_over);
    assert!(under_over.0 > 0 && under_over.1 > 0);
    for s in 0..LEN {
        assert_eq!(shared.count_at(s), runtime.count_at(s));
    }
}

proptest! {
    // In CI's miri run 2 cases (fixed_percentiles_match_float_ones took 11 to 29 s at 4).
    #![proptest_config(ProptestConfig { cases: size(256, 4, 2), ..ProptestConfig::default() })]

    #[test]
    fn record_u32_is_record(k in 1u32..=MAX_K, values in proptest::collection::vec(any::<u32>(), 1..200)) {
        let layout = Layout::from_block_scale(k).unwrap();
        let (min, max) = (1000, 1 << 28);
        let len = storage_len(layout, min, max);
        let (mut a, mut b) = (vec![0u32; len], vec![0u32; len]);
        let window = Window::new(layout, min, max).unwrap();
        let mut narrow = Histogram::with_storage(layout, &mut a[..], window).unwrap();
        let mut wide = Histogram::with_storage(layout, &mut b[..], window).unwrap();
        for &v in &values {
            narrow.record_u32(v);
            wide.record(v as u64);
            prop_assert_eq!(layout.index_of_u32(v), layout.index_of(v as u64));
        }
        prop_assert_eq!(narrow.underflow(), wide.underflow());
        prop_assert_eq!(narrow.overflow(), wide.overflow());
        let (narrow, wide) = (narrow.into_storage(), wide.into_storage());
        prop_assert_eq!(narrow, wide);
    }

    #[test]
    fn rank_count_is_exact(parts in 0u32..=1_000_000_000, total in any::<u64>()) {
        let rank = Rank::per_billion(parts).unwrap();
        let exact = (total as u128 * parts as u128).div_ceil(1_000_000_000);
        let expected = exact.clamp(1, total.max(1) as u128) as u64;
        prop_assert_eq!(rank.count_of(total), if total == 0 { 1 } else { expected });
    }

    #[test]
    fn fixed_percentiles_match_float_ones(values in proptest::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 1..400)) {
        let w = Window::full(FULL_L);
        let mut cells = vec![0u64; w.len()];
        let mut h = Histogram::with_storage(FULL_L, &mut cells[..], w).unwrap();
        for &v in &values {
            h.record(v);
        }
        let texts = ["0", "1", "25", "50", "75", "90", "99", "99.9", "99.99", "100"];
        let ranks = texts.map(|t| Rank::parse(t).unwrap());
        let floats = texts.map(|t| t.parse::<f64>().unwrap());
        let mut fixed = [FixedPercentile::default(); 10];
        let mut float = [Percentile::default(); 10];
        h.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut fixed).unwrap();
        h.percentiles(&floats, EquivalentValue::Midpoint, &mut float).unwrap();
        for (f, p) in fixed.iter().zip(&float) {
            // One rank rule (`read::rank_count`), exact on both paths: the same count, the
            // same bucket.
            prop_assert_eq!(f.rank_count, p.rank_count);
            prop_assert_eq!((f.value, f.lo, f.highest, f.count), (p.value, p.lo, p.highest, p.count));
        }
        let s = h.stats();
        let i = h.int_stats();
        prop_assert_eq!((i.total, i.min, i.max), (s.total, s.min, s.max));
        prop_assert_eq!((h.min(), h.max()), (s.min, s.max));
        let mean = i.mean.unwrap() as f64;
        prop_assert!((mean - s.mean).abs() <= 1.0 + s.mean * 1e-12, "{} vs {}", mean, s.mean);
    }
}

#[test]
fn rank_count_edges() {
    let exact = |total: u64, parts: u32| {
        let c = (total as u128 * parts as u128).div_ceil(1_000_000_000);
        c.clamp(1, total.max(1) as u128) as u64
    };
    let totals = [
        0,
        1,
        2,
        999_999_999,
        1_000_000_000,
        1_000_000_001,
        u32::MAX as u64,
        1 << 32,
        (1 << 32) + 1,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    let parts = [
        0,
        1,
        2,
        500_000_000,
        999_000_000,
        999_999_999,
        1_000_000_000,
    ];
    for total in totals {
        for p in parts {
            let rank = Rank::per_billion(p).unwrap();
            assert_eq!(rank.count_of(total), exact(total, p), "{total} {p}");
        }
    }
}

#[test]
fn rank_parsing_and_printing() {
    assert_eq!(Rank::parse("99.9"), Rank::per_billion(999_000_000));
    assert_eq!(Rank::parse("100"), Some(Rank::MAX));
    assert_eq!(Rank::parse("0"), Some(Rank::MIN));
    assert_eq!(Rank::parse("0.0000001"), Rank::per_billion(1));
    assert_eq!(Rank::parse("5."), Some(Rank::percent(5)));
    for bad in [
        "",
        ".",
        "100.0000001",
        "1e3",
        "-1",
        "99.99999999",
        "50%",
        "1..2",
    ] {
        assert_eq!(Rank::parse(bad), None, "{bad:?}");
    }
    assert_eq!(Rank::percent(250), Rank::MAX);
    assert_eq!(Rank::per_billion(1_000_000_001), None);
    let shown: Vec<String> = ["50", "99.9", "99.99999", "0.5", "100"]
        .iter()
        .map(|t| Rank::parse(t).unwrap().to_string())
        .collect();
    assert_eq!(shown, ["50", "99.9", "99.99999", "0.5", "100"]);
    assert_eq!(Rank::parse("99.9").unwrap().as_percent(), 99.9);
}

#[test]
fn integer_stats_on_known_values() {
    const STATS_LEN: usize = storage_len(L, 1, 1_000_000);
    let mut h = Histogram::<[u16; STATS_LEN]>::new(L, 1, 1_000_000);
    assert_eq!(h.int_stats(), IntStats::default());
    for v in [0, 100, 200, 300, 5_000_000] {
        h.record(v);
    }
    let s = h.int_stats();
    assert_eq!(
        s,
        IntStats {
            total: 3,
            underflow: 1,
            overflow: 1,
            min: Some(100),
            max: Some(300),
            mean: Some(200),
        }
    );
    // A mean whose products need more than 64 bits: 2^40 values near 2^60. In CI's miri run
    // the window is the two octaves that hold them (512 cells, not the full range's 14,592:
    // the mean walks every cell, 12 s there).
    let full = size(
        Window::full(L),
        Window::full(L),
        Window::new(L, 1 << 60, (1 << 62) - 1).unwrap(),
    );
    let mut cells = vec![0u64; full.len()];
    let mut big = Histogram::with_storage(L, &mut cells[..], full).unwrap();
    big.record_n(1 << 60, 1 << 40);
    big.record_n(3 << 60, 1 << 40);
    let mid_lo = L.median_equivalent(1 << 60) as u128;
    let mid_hi = L.median_equivalent(3 << 60) as u128;
    assert_eq!(big.int_stats().mean, Some(((mid_lo + mid_hi) / 2) as u64));
}

#[test]
fn reset_counts_on_every_core_kind() {
    let mut plain = Plain::empty();
    let shared = Shared::empty();
    let approx: ApproxHistogram<[ScalableCell; LEN]> = ApproxHistogram::new(L, MIN, MAX);
    let mut rng = XorShift::new(3);
    for round in 1..=3u64 {
        plain.record(5);
        shared.record(5);
        approx.record(5, &mut rng);
        plain.reset();
        shared.reset();
        approx.reset();
        assert_eq!(plain.reset_count(), round);
        assert_eq!(shared.reset_count(), round);
        assert_eq!(approx.reset_count(), round);
        assert_eq!((plain.total(), shared.total(), approx.total()), (0, 0, 0));
    }
    // Through a reference, as generic readers see it.
    let r: &dyn HistogramRead = &shared;
    assert_eq!(r.reset_count(), 3);
}

/// Brute-force coordinated-omission correction: every synthetic value recorded one by one.
fn corrected_by_hand(h: &mut impl Record, value: u64, interval: u64) {
    h.record(value);
    if interval == 0 {
        return;
    }
    let mut m = value.saturating_sub(interval);
    while m >= interval {
        h.record(m);
        m -= interval;
    }
}

#[test]
fn corrected_recording_is_one_implementation_for_every_kind() {
    // Under miri a tenth of the values and of the window, at block scale 5 (109 cells, not
    // 2,100: see `MIN`; 13 s at the default layout's 451).
    const CASES: [(u64, u64); 6] = if cfg!(miri) {
        [
            (1000, 7),
            (300, 1),
            (99, 100),
            (200, 100),
            (5, 0),
            (250_000, 40_000),
        ]
    } else {
        [
            (10_000, 7),
            (3000, 1),
            (99, 100),
            (200, 100),
            (5, 0),
            (2_500_000, 40_000),
        ]
    };
    const W_MAX: u64 = if cfg!(miri) { 500 } else { 5000 };
    const MIN_TOTAL: u64 = if cfg!(miri) { 200 } else { 1000 };
    const W_L: Layout = if cfg!(miri) {
        ConstLayout::<5>::LAYOUT
    } else {
        Layout::DEFAULT
    };
    const W_LEN: usize = storage_len(W_L, 50, W_MAX);
    let mut expected = Histogram::<[u64; W_LEN]>::new(W_L, 50, W_MAX);
    let mut plain = Histogram::<[u64; W_LEN]>::new(W_L, 50, W_MAX);
    let atomic = AtomicHistogram::<[AtomicU64; W_LEN]>::new(W_L, 50, W_MAX);
    let narrow = AtomicHistogram::<[AtomicU16; W_LEN]>::new(W_L, 50, W_MAX);
    // Counts stay below the scalable threshold (8192), where the approximate kind is exact.
    let approx: ApproxHistogram<[ScalableCell; W_LEN]> = ApproxHistogram::new(W_L, 50, W_MAX);
    let mut approx_recorder = approx.recorder(XorShift::new(9));
    for (value, interval) in CASES {
        corrected_by_hand(&mut expected, value, interval);
        plain.record_corrected(value, interval);
        (&atomic).record_corrected(value, interval);
        (&narrow).record_corrected(value, interval);
        approx_recorder.record_corrected(value, interval);
    }
    let kinds: [&dyn HistogramRead; 4] = [&plain, &atomic, &narrow, &approx];
    for h in kinds {
        assert_eq!(h.underflow(), expected.underflow());
        assert_eq!(h.overflow(), expected.overflow());
        for s in 0..W_LEN {
            assert_eq!(h.count_at(s), expected.count_at(s), "cell {s}");
        }
    }
    assert!(expected.overflow() > 0 && expected.underflow() > 0 && expected.total() > MIN_TOTAL);
}

#[test]
fn u16_counters_saturate_in_plain_and_atomic_kinds() {
    const W_LEN: usize = storage_len(Layout::DEFAULT, 0, 10);
    let mut plain = Histogram::<[u16; W_LEN]>::new(Layout::DEFAULT, 0, 10);
    let atomic = AtomicHistogram::<[AtomicU16; W_LEN]>::new(Layout::DEFAULT, 0, 10);
    plain.record_n(3, u16::MAX as u64 - 1);
    atomic.record_n(3, u16::MAX as u64 - 1);
    for _ in 0..3 {
        plain.record(3);
        atomic.record(3);
    }
    assert_eq!((plain.count_at(3), atomic.count_at(3)), (65_535, 65_535));
    plain.record_n(3, 1 << 40);
    atomic.record_n(3, 1 << 40);
    assert_eq!((plain.count_at(3), atomic.count_at(3)), (65_535, 65_535));
    // Two bytes per bucket: a quarter of u64 storage.
    assert_eq!(size_of::<[u16; W_LEN]>() * 4, size_of::<[u64; W_LEN]>());
    // Saturation under two writers: the cell never wraps back to a small count. Under miri
    // the cell starts just below the ceiling, so that a brief race still crosses it.
    let per_writer = if cfg!(miri) {
        atomic.record_n(7, u16::MAX as u64 - 100);
        100
    } else {
        40_000
    };
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| (0..per_writer).for_each(|_| atomic.record(7)));
        }
    });
    assert_eq!(atomic.count_at(7), 65_535);
}

/// Every public type a firmware would log implements `defmt::Format` (checked at compile
/// time: `cargo test -p picollo-core --features defmt --test firmware`). The seqlock's state
/// and the 64-bit counter of 32-bit targets are internal; `AtomicHistogram`'s `Format`, which
/// logs them, needs theirs, so they are checked through it.
#[cfg(feature = "defmt")]
#[test]
fn firmware_types_implement_defmt_format() {
    use picollo_core::atomic::Version;
    use picollo_core::iter::IterationValue;
    use picollo_core::scalable::{ScalableConfig, ScalableCounter};
    use picollo_core::source::SourceError;
    use picollo_core::{
        Bucket, LayoutError, PercentileError, Rebucketing, ResetInProgress, Stats, WindowError,
    };
    fn format<T: defmt::Format + ?Sized>() -> usize {
        1
    }
    let checked = format::<Plain>()
        + format::<Shared>()
        + format::<Histogram<[u64; 4]>>()
        + format::<AtomicHistogram<[AtomicU16; 4]>>()
        + format::<ApproxHistogram<[ScalableCell; 4]>>()
        + format::<ScalableCounter>()
        + format::<ScalableCell>()
        + format::<ScalableConfig>()
        + format::<XorShift>()
        + format::<Version>()
        + format::<Layout>()
        + format::<ConstLayout<9>>()
        + format::<Window>()
        + format::<ConstWindow<1, 2>>()
        + format::<Percentile>()
        + format::<FixedPercentile>()
        + format::<Rank>()
        + format::<Stats>()
        + format::<IntStats>()
        + format::<Bucket>()
        + format::<IterationValue>()
        + format::<EquivalentValue>()
        + format::<PercentileError>()
        + format::<ResetInProgress>()
        + format::<LayoutError>()
        + format::<WindowError>()
        + format::<Rebucketing>()
        + format::<SourceError>();
    assert_eq!(checked, 28);
}
