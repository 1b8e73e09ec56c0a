//! The facade against the crate it stands in for: random configurations, random records and
//! operations applied to both, then every read compared (issue 45: "every number they saw
//! before is the same"). Counts of all four types; values of every magnitude; zero counts,
//! clamping, auto-resize, coordinated-omission correction, clear and reset, add and subtract
//! between histograms of equal and of different configurations, and each iterator.

use hdrhistogram_upstream as upstream;
use picollo_hdrhistogram as facade;
use proptest::prelude::*;

/// How a histogram is made.
#[derive(Debug, Clone, Copy)]
enum Config {
    /// `new(sigfig)`: auto-resize.
    Auto(u8),
    /// `new_with_bounds(low, high, sigfig)`.
    Bounds(u64, u64, u8),
}

fn config() -> impl Strategy<Value = Config> {
    prop_oneof![
        (0u8..=3).prop_map(Config::Auto),
        // Wide ranges at up to 3 digits.
        (0u32..20, 1u32..64, 0u8..=3).prop_map(|(l, h, d)| {
            let low = 1u64 << l;
            let high = (1u64 << h.max(l + 2).min(63)).max(2 * low);
            Config::Bounds(low, high, d)
        }),
        // Any low (not a power of two) and 4 or 5 digits over short ranges.
        (1u64..5_000, 2u64..64, 4u8..=5).prop_map(|(low, f, d)| Config::Bounds(low, low * f, d)),
        // Anything, mostly refused: the errors must be the same.
        (0u64..10, 0u64..30, 0u8..8).prop_map(|(l, h, d)| Config::Bounds(l, h, d)),
    ]
}

/// Values of every magnitude: small, around the unit, and log-uniform over `u64`.
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..20,
        0u64..5_000,
        (0u32..64, any::<u64>()).prop_map(|(shift, r)| r >> shift),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Record(u64),
    RecordN(u64, u64),
    Saturating(u64),
    SaturatingN(u64, u64),
    Correct(u64, u64),
    CorrectN(u64, u64, u64),
    Clear,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => value().prop_map(Op::Record),
        3 => (value(), 0u64..300).prop_map(|(v, n)| Op::RecordN(v, n)),
        2 => value().prop_map(Op::Saturating),
        1 => (value(), 0u64..300).prop_map(|(v, n)| Op::SaturatingN(v, n)),
        1 => (0u64..100_000, 0u64..20_000).prop_map(|(v, i)| Op::Correct(v, i)),
        1 => (0u64..100_000, 1u64..5, 1u64..20_000).prop_map(|(v, n, i)| Op::CorrectN(v, n, i)),
        1 => Just(Op::Clear),
        1 => Just(Op::Reset),
    ]
}

macro_rules! both {
    ($t:ty, $config:expr) => {{
        match $config {
            Config::Auto(d) => (
                facade::Histogram::<$t>::new(d).map_err(|e| format!("{e:?}")),
                upstream::Histogram::<$t>::new(d).map_err(|e| format!("{e:?}")),
            ),
            Config::Bounds(l, h, d) => (
                facade::Histogram::<$t>::new_with_bounds(l, h, d).map_err(|e| format!("{e:?}")),
                upstream::Histogram::<$t>::new_with_bounds(l, h, d).map_err(|e| format!("{e:?}")),
            ),
        }
    }};
}

/// Counts above the type's maximum are clamped to it (the caller's `T::from`).
macro_rules! count {
    ($t:ty, $n:expr) => {
        <$t>::try_from($n).unwrap_or(<$t>::MAX)
    };
}

macro_rules! apply {
    ($t:ty, $f:expr, $u:expr, $op:expr) => {{
        let (f, u) = (&mut $f, &mut $u);
        match $op {
            Op::Record(v) => {
                let a = f.record(*v).map_err(|e| format!("{e:?}"));
                let b = u.record(*v).map_err(|e| format!("{e:?}"));
                assert_eq!(a, b, "record({v})");
            }
            Op::RecordN(v, n) => {
                let a = f.record_n(*v, count!($t, *n)).map_err(|e| format!("{e:?}"));
                let b = u.record_n(*v, count!($t, *n)).map_err(|e| format!("{e:?}"));
                assert_eq!(a, b, "record_n({v}, {n})");
            }
            Op::Saturating(v) => {
                f.saturating_record(*v);
                u.saturating_record(*v);
            }
            Op::SaturatingN(v, n) => {
                f.saturating_record_n(*v, count!($t, *n));
                u.saturating_record_n(*v, count!($t, *n));
            }
            Op::Correct(v, i) => {
                let a = f.record_correct(*v, *i).map_err(|e| format!("{e:?}"));
                let b = u.record_correct(*v, *i).map_err(|e| format!("{e:?}"));
                assert_eq!(a, b, "record_correct({v}, {i})");
            }
            Op::CorrectN(v, n, i) => {
                let a = f
                    .record_n_correct(*v, count!($t, *n), *i)
                    .map_err(|e| format!("{e:?}"));
                let b = u
                    .record_n_correct(*v, count!($t, *n), *i)
                    .map_err(|e| format!("{e:?}"));
                assert_eq!(a, b, "record_n_correct({v}, {n}, {i})");
            }
            Op::Clear => {
                f.clear();
                u.clear();
            }
            Op::Reset => {
                f.reset();
                u.reset();
            }
        }
    }};
}

/// An iteration value as plain numbers (floats by their bits).
fn item<T: facade::Counter>(v: facade::iterators::IterationValue<T>) -> (u64, u64, u64, u64, u64) {
    (
        v.value_iterated_to(),
        v.quantile().to_bits(),
        v.quantile_iterated_to().to_bits(),
        v.count_at_value().as_u64(),
        v.count_since_last_iteration(),
    )
}

fn item_up<T: upstream::Counter>(
    v: upstream::iterators::IterationValue<T>,
) -> (u64, u64, u64, u64, u64) {
    (
        v.value_iterated_to(),
        v.quantile().to_bits(),
        v.quantile_iterated_to().to_bits(),
        v.count_at_value().as_u64(),
        v.count_since_last_iteration(),
    )
}

/// Compares the facade's items with the upstream crate's, where the upstream crate answers:
/// in debug builds its iterators can stop on an overflowing shift one index past the last
/// bucket (release builds wrap); the facade never panics there.
fn compare_iter(
    facade: Vec<(u64, u64, u64, u64, u64)>,
    upstream: impl FnOnce() -> Vec<(u64, u64, u64, u64, u64)>,
    what: &str,
) {
    if let Ok(expected) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(upstream)) {
        assert_eq!(facade, expected, "{what}");
    }
}

/// At most this many items of an iterator are compared (`iter_all` over 5 digits is long).
const ITEMS: usize = 20_000;

macro_rules! same {
    ($f:expr, $u:expr, $probes:expr) => {{
        let (f, u) = (&$f, &$u);
        assert_eq!(
            (
                f.len(),
                f.is_empty(),
                f.distinct_values(),
                f.buckets(),
                f.high(),
                f.low()
            ),
            (
                u.len(),
                u.is_empty(),
                u.distinct_values(),
                u.buckets(),
                u.high(),
                u.low()
            ),
            "sizes"
        );
        assert_eq!(
            (f.sigfig(), f.is_auto_resize()),
            (u.sigfig(), u.is_auto_resize())
        );
        assert_eq!(
            (f.min(), f.max(), f.min_nz()),
            (u.min(), u.max(), u.min_nz()),
            "extremes"
        );
        assert_eq!(f.mean().to_bits(), u.mean().to_bits(), "mean");
        assert_eq!(f.stdev().to_bits(), u.stdev().to_bits(), "stdev");
        for &q in &[
            0.0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.99999, 1.0, 1.5, -0.5,
        ] {
            assert_eq!(
                f.value_at_quantile(q),
                u.value_at_quantile(q),
                "value_at_quantile({q})"
            );
            assert_eq!(
                f.value_at_percentile(q * 100.0),
                u.value_at_percentile(q * 100.0),
                "value_at_percentile"
            );
        }
        let qs = [0.0, 0.1, 0.5, 0.5, 0.9, 0.999, 1.0, 2.0];
        // With saturated counts (the total counts on past them) the upstream crate's
        // `value_at_quantiles` panics on an assertion where its counts run out; the facade
        // answers 0 there, as both crates' `value_at_quantile` does (README, "Differences").
        let counted: u64 = u
            .iter_recorded()
            .map(|v| u64::from(v.count_at_value()))
            .fold(0, u64::saturating_add);
        if counted == u.len() {
            assert_eq!(
                f.value_at_quantiles(qs).collect::<Vec<_>>(),
                u.value_at_quantiles(qs).collect::<Vec<_>>(),
                "value_at_quantiles"
            );
            assert_eq!(
                f.value_at_quantiles([0.5, 0.1, 0.9]).collect::<Vec<_>>(),
                u.value_at_quantiles([0.5, 0.1, 0.9]).collect::<Vec<_>>(),
                "value_at_quantiles out of order"
            );
        } else {
            let last = f.value_at_quantiles(qs).last();
            assert_eq!(last, Some(0), "saturated counts: the quantiles past them");
        }
        // One pass answers what one call per quantile does, saturated or not.
        assert_eq!(
            f.value_at_quantiles(qs).collect::<Vec<_>>(),
            qs.map(|q| f.value_at_quantile(q)),
            "value_at_quantiles against value_at_quantile"
        );
        for &v in $probes {
            assert_eq!(
                u64::from(f.count_at(v)),
                u64::from(u.count_at(v)),
                "count_at({v})"
            );
            assert_eq!(
                f.quantile_below(v).to_bits(),
                u.quantile_below(v).to_bits(),
                "quantile_below({v})"
            );
            assert_eq!(
                f.percentile_below(v).to_bits(),
                u.percentile_below(v).to_bits()
            );
            assert_eq!(
                f.count_between(v / 3, v),
                u.count_between(v / 3, v),
                "count_between"
            );
            assert_eq!(
                f.lowest_equivalent(v),
                u.lowest_equivalent(v),
                "lowest_equivalent({v})"
            );
            assert_eq!(
                f.highest_equivalent(v),
                u.highest_equivalent(v),
                "highest({v})"
            );
            assert_eq!(
                f.next_non_equivalent(v),
                u.next_non_equivalent(v),
                "next({v})"
            );
            assert_eq!(f.equivalent_range(v), u.equivalent_range(v), "range({v})");
            assert_eq!(f.equivalent(v, v / 2 + 1), u.equivalent(v, v / 2 + 1));
            if v < u64::MAX / 2 {
                assert_eq!(
                    f.median_equivalent(v),
                    u.median_equivalent(v),
                    "median({v})"
                );
            }
        }
        compare_iter(
            f.iter_recorded().take(ITEMS).map(item).collect(),
            || u.iter_recorded().take(ITEMS).map(item_up).collect(),
            "iter_recorded",
        );
        compare_iter(
            f.iter_all().take(ITEMS).map(item).collect(),
            || u.iter_all().take(ITEMS).map(item_up).collect(),
            "iter_all",
        );
        for ticks in [1, 5] {
            compare_iter(
                f.iter_quantiles(ticks).take(ITEMS).map(item).collect(),
                || u.iter_quantiles(ticks).take(ITEMS).map(item_up).collect(),
                &format!("iter_quantiles({ticks})"),
            );
        }
        let step = (u.max() / 500).max(1);
        let linear = f
            .iter_linear(step)
            .take(ITEMS)
            .map(item)
            .collect::<Vec<_>>();
        // Where the step's end can pass `u64::MAX` on the last steps, the upstream crate panics
        // (debug builds) or wraps and goes on with steps at small values (release builds); the
        // facade's walk ends there (README, "Differences"): compare the items before it.
        let upstream_items = if u.max().checked_add(step.saturating_mul(2)).is_some() {
            ITEMS
        } else {
            linear.len()
        };
        compare_iter(
            linear,
            || {
                u.iter_linear(step)
                    .take(upstream_items)
                    .map(item_up)
                    .collect()
            },
            &format!("iter_linear({step})"),
        );
        for (start, base) in [(1, 2.0), (100, 10.0), (7, 1.5)] {
            compare_iter(
                f.iter_log(start, base).take(ITEMS).map(item).collect(),
                || u.iter_log(start, base).take(ITEMS).map(item_up).collect(),
                &format!("iter_log({start}, {base})"),
            );
        }
    }};
}

macro_rules! differential {
    ($name:ident, $t:ty) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
            #[test]
            fn $name(
                c1 in config(),
                c2 in config(),
                ops1 in prop::collection::vec(op(), 0..60),
                ops2 in prop::collection::vec(op(), 0..30),
                probes in prop::collection::vec(value(), 8),
            ) {
                let (f, u) = both!($t, c1);
                prop_assert_eq!(f.as_ref().err(), u.as_ref().err(), "creation");
                let (Ok(mut f), Ok(mut u)) = (f, u) else { return Ok(()); };
                for o in &ops1 {
                    apply!($t, f, u, o);
                }
                same!(f, u, &probes);

                // A second histogram, then the arithmetic between the two.
                let (g, w) = both!($t, c2);
                let (Ok(mut g), Ok(mut w)) = (g, w) else { return Ok(()); };
                for o in &ops2 {
                    apply!($t, g, w, o);
                }
                same!(g, w, &probes);
                let a = f.add(&g).map_err(|e| format!("{e:?}"));
                let b = u.add(&w).map_err(|e| format!("{e:?}"));
                prop_assert_eq!(&a, &b, "add");
                same!(f, u, &probes);
                // Subtract what was added (or anything, for the errors).
                let a = f.subtract(&g).map_err(|e| format!("{e:?}"));
                let b = u.subtract(&w).map_err(|e| format!("{e:?}"));
                prop_assert_eq!(&a, &b, "subtract");
                same!(f, u, &probes);
                // Intervals that keep the corrections to at most 64 values per bucket.
                let interval = (w.max() / 64).max(1_000);
                let a = f.add_correct(&g, interval).map_err(|e| format!("{e:?}"));
                let b = u.add_correct(&w, interval).map_err(|e| format!("{e:?}"));
                prop_assert_eq!(&a, &b, "add_correct");
                same!(f, u, &probes);
                let interval = (u.max() / 64).max(500);
                same!(f.clone_correct(interval), u.clone_correct(interval), &probes);
                let (mut f2, mut u2) = (
                    facade::Histogram::<$t>::new_from(&g),
                    upstream::Histogram::<$t>::new_from(&w),
                );
                same!(f2, u2, &probes);
                let a = f2.set_to(&f).map_err(|e| format!("{e:?}"));
                let b = u2.set_to(&u).map_err(|e| format!("{e:?}"));
                prop_assert_eq!(&a, &b, "set_to");
                same!(f2, u2, &probes);
                prop_assert_eq!(f == g, u == w, "eq");
                prop_assert_eq!(f2 == f, u2 == u, "eq after set_to");
            }
        }
    };
}

differential!(u8_counts, u8);
differential!(u16_counts, u16);
differential!(u32_counts, u32);
differential!(u64_counts, u64);

/// The record path's unchecked increments end where a count or the total reaches its maximum:
/// from there on both saturate, as in the upstream crate.
macro_rules! saturation {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let mut f = facade::Histogram::<$t>::new_with_bounds(1, 1 << 40, 3).unwrap();
            let mut u = upstream::Histogram::<$t>::new_with_bounds(1, 1 << 40, 3).unwrap();
            f.record_n(1_000, <$t>::MAX).unwrap();
            u.record_n(1_000, <$t>::MAX).unwrap();
            for v in [1_000, 1_000, 2_000, 0, 1 << 39] {
                f.record(v).unwrap();
                u.record(v).unwrap();
                assert_eq!(
                    (
                        f.len(),
                        u64::from(f.count_at(1_000)),
                        u64::from(f.count_at(v))
                    ),
                    (
                        u.len(),
                        u64::from(u.count_at(1_000)),
                        u64::from(u.count_at(v))
                    ),
                    "after record({v})"
                );
            }
            // The total at `u64::MAX`: it stays there, and so do the counts at their maximum.
            f.record_n(5, <$t>::MAX).unwrap();
            u.record_n(5, <$t>::MAX).unwrap();
            for _ in 0..(u64::MAX / <$t>::MAX as u64).min(3) {
                f.record_n(7, <$t>::MAX).unwrap();
                u.record_n(7, <$t>::MAX).unwrap();
            }
            for v in [5, 7, 9] {
                f.record(v).unwrap();
                u.record(v).unwrap();
                assert_eq!(
                    (f.len(), u64::from(f.count_at(v))),
                    (u.len(), u64::from(u.count_at(v))),
                    "at the total's limit, record({v})"
                );
            }
            assert_eq!((f.min(), f.max()), (u.min(), u.max()));
            // The upstream crate's quantile walk overflows here (a panic in debug builds, a
            // wrapped sum in release); the facade's saturates.
            // The answer is where the saturating running count reaches the target, or 0 where
            // saturated counts never do.
            assert!(f.value_at_quantile(1.0) <= f.max());
            assert!(f.value_at_quantiles([0.5, 1.0]).all(|v| v <= f.max()));
            let qs = [0.0, 1e-9, 0.25, 0.5, 0.5, 0.75, 1.0];
            assert_eq!(
                f.value_at_quantiles(qs).collect::<Vec<_>>(),
                qs.map(|q| f.value_at_quantile(q)),
                "one pass against one call per quantile, at the total's limit"
            );
        }
    };
}

saturation!(u8_saturation, u8);
saturation!(u16_saturation, u16);
saturation!(u32_saturation, u32);
saturation!(u64_saturation, u64);

/// One record at a time past a small count type's maximum: only `u64` counts skip the
/// record path's overflow check, so a `u8` or `u16` count saturates there while the total
/// counts on, as in the upstream crate.
macro_rules! one_at_a_time_past_max {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let mut f = facade::Histogram::<$t>::new_with_bounds(1, 1 << 20, 3).unwrap();
            let mut u = upstream::Histogram::<$t>::new_with_bounds(1, 1 << 20, 3).unwrap();
            let records = 2 * u64::from(<$t>::MAX);
            for i in 0..records {
                // Mostly one value (its count saturates), now and then another.
                let v = if i % 64 == 0 { 900 } else { 100 };
                f.record(v).unwrap();
                u.record(v).unwrap();
            }
            assert_eq!(f.len(), records);
            assert_eq!(
                (f.len(), f.count_at(100), f.count_at(900)),
                (u.len(), u.count_at(100), u.count_at(900))
            );
            assert_eq!(f.count_at(100), <$t>::MAX);
            // The total counts on past the saturated count; the other count is exact.
            assert_eq!(u64::from(f.count_at(900)), records.div_ceil(64));
        }
    };
}

one_at_a_time_past_max!(u8_one_at_a_time_past_max, u8);
one_at_a_time_past_max!(u16_one_at_a_time_past_max, u16);
