//! The operations users of HdrHistogram reach for, against the `hdrhistogram` crate with
//! proptest: a value unit (`new_with_bounds(lowest, …)`), `count_between`, `count_at`, the
//! percentile rank of a value (`quantile_below`), and `subtract`.

use picollo_core::prelude::*;
use picollo_core::{SubtractError, UnitLayout, Window};
use proptest::prelude::*;

mod common;
use common::Cells;
use picollo_testkit::miri_size as size;

/// The most significant digits the properties draw. Under miri 1 (2 in a full-size run): at 4
/// digits the window to 2^41 has 458,000 cells (each read of a cell retags the whole storage),
/// at 2 about 4,000, at 1 about 600; every digit count takes the same paths.
fn max_sigfig() -> u8 {
    size(4, 2, 1)
}

/// Proptest cases: `native` natively, 4 under miri (2 in CI's miri step).
fn cases(native: u32) -> u32 {
    size(native, 4, 2)
}

/// HdrHistogram's layout for `sigfig` digits and `lowest` discernible value.
fn layout(sigfig: u8, lowest: u64) -> Layout {
    Layout::from_significant_digits(sigfig as u32)
        .unwrap()
        .with_lowest_discernible(lowest)
        .unwrap()
}

/// A plain histogram over `0..=max` and the crate's `new_with_bounds(lowest, max, sigfig)`,
/// both holding `values` (value, count).
fn pair(
    sigfig: u8,
    lowest: u64,
    max: u64,
    values: &[(u64, u64)],
) -> (Histogram<Cells, UnitLayout>, hdrhistogram::Histogram<u64>) {
    let l = layout(sigfig, lowest);
    let w = Window::new(l, 0, max).unwrap();
    let mut h = Histogram::with_storage(UnitLayout::new(l), Cells(vec![0; w.len()]), w).unwrap();
    let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(lowest, max, sigfig).unwrap();
    for &(v, n) in values {
        h.record_n(v, n);
        hdr.record_n(v, n).unwrap();
    }
    (h, hdr)
}

#[test]
fn java_scaled_equivalent_values() {
    // HistogramTest's scaled cases: `new Histogram(1024, 3_600_000_000, 3)`.
    let l = layout(3, 1024);
    assert_eq!(l.unit(), 1024);
    assert_eq!(l.lowest_equivalent(10_007 * 1024), 10_000 * 1024);
    assert_eq!(l.lowest_equivalent(10_009 * 1024), 10_008 * 1024);
    for (v, want) in [
        (8_180, 8_183),
        (8_191, 8_191),
        (8_193, 8_199),
        (9_995, 9_999),
        (10_007, 10_007),
        (10_008, 10_015),
    ] {
        assert_eq!(l.highest_equivalent(v * 1024), want * 1024 + 1023, "{v}");
    }
    for (v, want) in [
        (4, 4 * 1024 + 512),
        (5, 5 * 1024 + 512),
        (4_000, 4_001 * 1024),
        (8_000, 8_002 * 1024),
        (10_007, 10_004 * 1024),
    ] {
        assert_eq!(l.median_equivalent(v * 1024), want, "{v}");
    }
    for (v, width) in [(1, 1), (2_500, 2), (8_191, 4), (8_192, 8), (10_000, 8)] {
        assert_eq!(l.width(l.index_of(v * 1024)), width * 1024, "{v}");
    }
    // Values below the unit are counted too: [0, 1024) is one bucket.
    assert_eq!(
        (l.index_of(0), l.index_of(1023)),
        (l.first_index(), l.first_index())
    );
    assert_eq!(l.width(l.first_index()), 1024);
    // Units up to 2^31; the 32-bit record path agrees with the 64-bit one.
    for lowest in [1u64, 2, 3, 1000, 1 << 20, u32::MAX as u64] {
        for k in [1, 7, 10, 17, 20] {
            let l = Layout::from_block_scale(k)
                .unwrap()
                .with_lowest_discernible(lowest)
                .unwrap();
            for v in [0u32, 1, 999, 1000, 65_535, 1 << 30, u32::MAX] {
                assert_eq!(
                    l.index_of_u32(v),
                    l.index_of(v as u64),
                    "k {k} lowest {lowest} v {v}"
                );
            }
            assert_eq!(l.index_of(u64::MAX), l.logical_len() - 1);
        }
    }
    assert!(Layout::DEFAULT.with_lowest_discernible(0).is_err());
    assert!(Layout::DEFAULT.with_lowest_discernible(1 << 32).is_err());
    assert_eq!(
        Layout::DEFAULT.with_lowest_discernible(1).unwrap(),
        Layout::DEFAULT
    );
}

#[test]
fn java_data_access_scaled_histogram() {
    // HistogramDataAccessTest's `scaledHistogram`: `new Histogram(1000, 3600e6 · 512, 3)`,
    // 10,000 values of 1 ms and one of 100 s, all × 512, corrected at 10 ms × 512. In CI's
    // miri step 1 digit and a highest of 2,000,000 (250 cells, not 45,000: each read of a cell
    // retags the whole storage); every assertion holds at any digits.
    let (sigfig, highest) = size((3, 3_600_000_000), (3, 3_600_000_000), (1, 2_000_000));
    let l = layout(sigfig, 1000);
    let w = Window::new(l, 0, highest * 512).unwrap();
    let mut h = Histogram::with_storage(UnitLayout::new(l), Cells(vec![0; w.len()]), w).unwrap();
    // The plain record spec refuses a layout with a unit.
    assert!(matches!(
        Histogram::with_storage(l, Cells(vec![0; w.len()]), w),
        Err(picollo_core::WindowError::NeedsUnitLayout(9))
    ));
    let mut plain = {
        let l = layout(sigfig, 1);
        let w = Window::new(l, 0, highest).unwrap();
        Histogram::with_storage(l, Cells(vec![0; w.len()]), w).unwrap()
    };
    // Under miri 100 values of 1 ms and one of 1 s (n values of 1 ms and one of n · 10 ms: the
    // correction adds n - 1 values, as 9,999 for 100 s).
    let n = size(10_000, 100, 100);
    for _ in 0..n {
        h.record_corrected(1000 * 512, 10_000 * 512);
        plain.record_corrected(1000, 10_000);
    }
    h.record_corrected(n * 10_000 * 512, 10_000 * 512);
    plain.record_corrected(n * 10_000, 10_000);
    // testScalingEquivalence: totals, means within 1e-6, p99 and max equivalent.
    assert_eq!(h.total(), plain.total());
    assert_eq!(h.total(), 2 * n);
    let (scaled_mean, mean) = (h.mean(), plain.mean());
    assert!((mean * 512.0 - scaled_mean).abs() <= scaled_mean * 0.000_001);
    let upper = |h: &dyn HistogramRead, p| h.percentile(p, EquivalentValue::Upper).unwrap().value;
    assert_eq!(
        l.highest_equivalent(upper(&plain, 99.0) * 512),
        l.highest_equivalent(upper(&h, 99.0))
    );
    assert_eq!(
        l.highest_equivalent(plain.max().unwrap() * 512),
        h.max().unwrap()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(512), ..ProptestConfig::default() })]

    /// A value unit: every bucket boundary and every answer of the crate's
    /// `new_with_bounds(lowest, max, sigfig)`.
    #[test]
    fn unit_layouts_are_hdrhistograms(
        sigfig in 1u8..=max_sigfig(),
        lowest in 1u64..(1 << 24),
        // In CI's miri step up to 30 values, 6 probes and 4 quantiles (each probe's reads walk
        // the cells).
        values in proptest::collection::vec((0u64..(1 << 40), 1u64..100), 1..size(100, 100, 30)),
        probes in proptest::collection::vec(0u64..(1 << 40), 1..size(20, 20, 6)),
        quantiles in proptest::collection::vec(0.0f64..=1.0, 1..size(10, 10, 4)),
    ) {
        let max = 1u64 << 41;
        prop_assume!(hdrhistogram::Histogram::<u64>::new_with_bounds(lowest, max, sigfig).is_ok());
        let (h, hdr) = pair(sigfig, lowest, max, &values);
        let l = h.layout();
        for &v in &probes {
            prop_assert_eq!(l.lowest_equivalent(v), hdr.lowest_equivalent(v), "lowest {}", v);
            prop_assert_eq!(l.highest_equivalent(v), hdr.highest_equivalent(v), "highest {}", v);
            prop_assert_eq!(l.median_equivalent(v), hdr.median_equivalent(v), "median {}", v);
            prop_assert_eq!(l.next_non_equivalent(v), Some(hdr.next_non_equivalent(v)));
            prop_assert_eq!(l.width(l.index_of(v)), hdr.equivalent_range(v));
            prop_assert_eq!(h.count_at_value(v), hdr.count_at(v), "count at {}", v);
            prop_assert_eq!(h.count_at_or_below(v), hdr.count_between(0, v));
            let share = h.percentile_at_or_below(v) / 100.0;
            prop_assert!((share - hdr.quantile_below(v)).abs() <= 1e-12, "{} {}", share, hdr.quantile_below(v));
        }
        for w in probes.windows(2) {
            let (lo, hi) = (w[0].min(w[1]), w[0].max(w[1]));
            prop_assert_eq!(h.count_between(lo, hi), hdr.count_between(lo, hi));
        }
        prop_assert_eq!(h.total(), hdr.len());
        prop_assert_eq!(h.max(), Some(hdr.max()));
        prop_assert_eq!(h.min().map(|m| l.lowest_equivalent(m)), Some(hdr.lowest_equivalent(hdr.min())));
        for &q in &quantiles {
            let theirs = hdr.value_at_quantile(q);
            let ours = h.percentile(q * 100.0, EquivalentValue::Upper).unwrap();
            // The crate's count is `ceil(q · total)`; Picollo's Java's, from `100 q`: they ask
            // for the same value or neighbours (a one-count difference).
            prop_assert!(
                hdr.equivalent(theirs, ours.value) || ours.rank_count.abs_diff(((q * hdr.len() as f64).ceil() as u64).max(1)) <= 1,
                "q {}: crate {} ours {}", q, theirs, ours.value
            );
        }
    }

    /// Subtract against the crate's: the same counts after, the same refusals.
    #[test]
    fn subtract_is_the_crates(
        sigfig in 1u8..=max_sigfig().min(3),
        lowest in prop_oneof![Just(1u64), 1u64..5000],
        // In CI's miri step up to 20 values each.
        a in proptest::collection::vec((0u64..(1 << 30), 1u64..5), 0..size(60, 60, 20)),
        b in proptest::collection::vec((0u64..(1 << 30), 1u64..5), 0..size(60, 60, 20)),
        take_from_a in any::<bool>(),
    ) {
        let max = 1u64 << 31;
        prop_assume!(hdrhistogram::Histogram::<u64>::new_with_bounds(lowest, max, sigfig).is_ok());
        // A subtrahend that fits (a subset of `a`) or an arbitrary one.
        let b: Vec<(u64, u64)> = if take_from_a { a.iter().step_by(2).copied().collect() } else { b };
        let (mut h, mut hdr) = pair(sigfig, lowest, max, &a);
        let (hs, hdrs) = pair(sigfig, lowest, max, &b);
        let before: Vec<u64> = h.storage().0.clone();
        let ours = h.subtract(&hs);
        let theirs = hdr.subtract(&hdrs);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?} {:?}", ours, theirs);
        match ours {
            Ok(r) => {
                prop_assert_eq!(r, picollo_core::Rebucketing::Exact);
                for v in hdr.iter_all() {
                    let value = v.value_iterated_to();
                    prop_assert_eq!(h.count_at_value(value), v.count_at_value(), "at {}", value);
                }
                prop_assert_eq!(h.total(), hdr.len());
            }
            Err(e) => {
                let is_bucket = matches!(e, SubtractError::Bucket { .. });
                prop_assert!(is_bucket, "{:?}", e);
                prop_assert_eq!(&h.storage().0, &before, "a refused subtract changed nothing");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    /// Linear, logarithmic and recorded-values iterations against the crate's, step for step:
    /// the value, the count added, the bucket's count, the running total.
    #[test]
    fn iterations_are_the_crates(
        sigfig in 1u8..=max_sigfig().min(3),
        lowest in prop_oneof![Just(1u64), 1u64..3000],
        // Under miri values below 2^16 and steps from 256 (a linear iteration takes a step for
        // every `step` up to the largest value: millions at 2^24 and 1).
        values in proptest::collection::vec((0u64..size(1 << 24, 1 << 24, 1 << 16), 1u64..50), 1..size(40, 40, 15)),
        step in size(1u64, 1, 256)..5000,
        first in 1u64..5000,
        base in prop_oneof![Just(2.0f64), 1.1f64..10.0],
    ) {
        let max = 1u64 << 30;
        prop_assume!(hdrhistogram::Histogram::<u64>::new_with_bounds(lowest, max, sigfig).is_ok());
        let (h, hdr) = pair(sigfig, lowest, max, &values);
        let ours: Vec<_> = h.linear(step).unwrap()
            .map(|v| (v.value_iterated_to, v.count_added_in_this_step, v.count_at_value, v.total_count_to_value))
            .collect();
        let mut running = 0u64;
        let theirs: Vec<_> = hdr.iter_linear(step)
            .map(|v| {
                running += v.count_since_last_iteration();
                (v.value_iterated_to(), v.count_since_last_iteration(), v.count_at_value(), running)
            })
            .collect();
        prop_assert_eq!(ours, theirs, "linear {}", step);
        let ours: Vec<_> = h.logarithmic(first, base).unwrap()
            .map(|v| (v.value_iterated_to, v.count_added_in_this_step))
            .collect();
        let theirs: Vec<_> = hdr.iter_log(first, base)
            .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
            .collect();
        prop_assert_eq!(ours, theirs, "logarithmic {} × {}", first, base);
        let ours: Vec<_> = h.recorded_buckets().map(|b| (b.highest, b.count)).collect();
        let theirs: Vec<_> = hdr.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect();
        prop_assert_eq!(ours, theirs);
    }

    /// Post-recording correction against the crate's `clone_correct`.
    #[test]
    fn add_corrected_is_the_crates(
        sigfig in 1u8..=max_sigfig().min(3),
        // Under miri up to 15 values (40 in a full-size run) and no interval below 20,000
        // (5,000 in a full-size run): each synthetic value is a record.
        values in proptest::collection::vec((1u64..(1 << 20), 1u64..20), 1..size(40, 40, 15)),
        interval in size(1u64, 5_000, 20_000)..50_000,
    ) {
        let max = 1u64 << 30;
        let (h, hdr) = pair(sigfig, 1, max, &values);
        let l = h.layout();
        let w = h.window();
        let mut ours = Histogram::with_storage(UnitLayout::new(l), Cells(vec![0; w.len()]), w).unwrap();
        picollo_core::histogram::add_corrected(&mut ours, &h, interval);
        let theirs = hdr.clone_correct(interval);
        prop_assert_eq!(ours.total(), theirs.len());
        for v in theirs.iter_recorded() {
            prop_assert_eq!(ours.count_at_value(v.value_iterated_to()), v.count_at_value());
        }
    }
}

#[test]
fn java_subtract_cases() {
    // HistogramTest: `new Histogram(3_600_000_000, 3)`, values 4 and 4,000. In CI's miri step
    // 1 digit (450 cells, not 23,000: add, subtract and the copies walk every cell; 4 is still
    // a bucket of its own).
    let l = layout(size(3, 3, 1), 1);
    let make = |max: u64| {
        let w = Window::new(l, 0, max).unwrap();
        Histogram::with_storage(UnitLayout::new(l), Cells(vec![0; w.len()]), w).unwrap()
    };
    let highest = 3_600_000_000u64;
    let (mut h, mut other) = (make(highest), make(highest));
    for x in [&mut h, &mut other] {
        x.record(4);
        x.record(4000);
    }
    // testSubtractAfterAdd.
    h.add(&other);
    h.add(&other);
    assert_eq!(
        (h.count_at_value(4), h.count_at_value(4000), h.total()),
        (3, 3, 6)
    );
    h.subtract(&other).unwrap();
    assert_eq!(
        (h.count_at_value(4), h.count_at_value(4000), h.total()),
        (2, 2, 4)
    );
    // testSubtractToZeroCounts: a histogram minus itself.
    let mut z = other.clone_from_cells();
    let same = other.clone_from_cells();
    z.subtract(&same).unwrap();
    assert_eq!(
        (z.count_at_value(4), z.count_at_value(4000), z.total()),
        (0, 0, 0)
    );
    // testSubtractToNegativeCountsThrows: refused, nothing changed.
    let mut twice = make(highest);
    twice.record_n(4, 2);
    twice.record_n(4000, 2);
    let refused = other.subtract(&twice).unwrap_err();
    assert_eq!(
        refused,
        SubtractError::Bucket {
            lo: 4,
            highest: 4,
            have: 1,
            subtract: 2
        }
    );
    assert!(refused.to_string().contains("nothing was subtracted"));
    assert_eq!(other.total(), 2);
    // testSubtractSubtrahendValuesOutsideMinuendRangeThrows: a value beyond the range. Java
    // refuses the range; Picollo counts it against the overflow (0 here) and refuses too.
    let mut bigger = make(highest * 2);
    bigger.record(4);
    bigger.record(4000);
    bigger.record(highest * 2);
    let mut small = make(highest);
    small.record(4);
    small.record(4000);
    assert!(matches!(
        small.subtract(&bigger),
        Err(SubtractError::Overflow {
            have: 0,
            subtract: 1
        })
    ));
    assert_eq!(small.total(), 2);
    // testSubtractSubtrahendValuesInsideMinuendRangeWorks.
    bigger.add(&bigger.clone_from_cells());
    bigger.add(&bigger.clone_from_cells());
    assert_eq!(
        (
            bigger.count_at_value(4),
            bigger.count_at_value(highest * 2),
            bigger.total()
        ),
        (4, 4, 12)
    );
    bigger.subtract(&small).unwrap();
    assert_eq!(
        (
            bigger.count_at_value(4),
            bigger.count_at_value(4000),
            bigger.count_at_value(highest * 2)
        ),
        (3, 3, 4)
    );
    assert_eq!(bigger.total(), 10);
}

/// A copy of a test histogram (its cells are a `Vec`).
trait CloneFromCells {
    fn clone_from_cells(&self) -> Self;
}

impl CloneFromCells for Histogram<Cells, UnitLayout> {
    fn clone_from_cells(&self) -> Self {
        let w = self.window();
        let spec = UnitLayout::new(self.layout());
        let mut h = Histogram::with_storage(spec, Cells(vec![0; w.len()]), w).unwrap();
        h.add(self);
        h
    }
}
