//! HdrHistogram's own known-answer tests, translated case by case onto Picollo and run on every
//! histogram kind: Java's `HistogramDataAccessTest`, `HistogramTest` and `HistogramEncodingTest`
//! (HdrHistogram 2.1, `src/test/java/org/HdrHistogram/`) and the `hdrhistogram` crate's
//! `tests/data_access.rs` and `tests/iterators.rs`, with the peers' expected values and
//! tolerances.
//!
//! Each case names its peer test. Where Picollo keeps a deliberate convention, the assertion is
//! Picollo's documented answer and the message names the peer's value beside it. Cases with no
//! Picollo equivalent (internal index arithmetic, auto-resizing, Java serialization, double
//! histograms) are not translated; the tally is in the report that brought this file.
//!
//! The kinds ([`KINDS`]): plain histograms over heap `u64` and `u32` cells, over a borrowed
//! buffer and over an owned array; the atomic kind; the thread-local kind (recorded from two
//! threads); a snapshot of an atomic histogram; HdrHistogram counts read in place
//! (`interop::view`, where the layout has no unit). A new kind is one more entry.

use picollo_alloc::hdr::{interop, HdrCounts};
use picollo_alloc::{Dense, HistogramBuilder, Snapshot, StorageWidth};
use picollo_core::histogram::add_corrected;
use picollo_core::iter::IterationValue;
use picollo_core::prelude::*;
use picollo_core::{storage_len, UnitLayout, Window};

/// One recording step of a test histogram.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `recordValueWithCount(value, count)`.
    Record(u64, u64),
    /// `recordValueWithExpectedInterval(value, interval)`.
    Corrected(u64, u64),
}

/// A histogram kind: builds a histogram of `layout` over `window` holding `ops`, and hands
/// it over for reading. `None` when this kind cannot hold that layout or window.
struct Kind {
    name: &'static str,
    build: Build,
}

/// How a [`Kind`] builds its histogram.
type Build = fn(Layout, Window, &[Op]) -> Option<Shared>;

/// A histogram of any kind, readable from every test's thread.
type Shared = Box<dyn HistogramRead + Send + Sync>;

/// A dense builder of `layout` over `window` (no value unit).
fn dense<C: StorageWidth>(layout: Layout, window: Window) -> HistogramBuilder<C, Dense> {
    HistogramBuilder::<C, Dense>::default()
        .layout(layout)
        .window(window)
}

/// A dense builder of `layout` over `window` that records `layout`'s value unit.
fn dense_unit<C: StorageWidth>(
    layout: Layout,
    window: Window,
) -> HistogramBuilder<C, Dense, UnitLayout> {
    dense::<C>(layout, window).lowest_discernible(layout.unit())
}

fn apply<R: Record + HistogramRead>(r: &mut R, ops: &[Op]) {
    for &op in ops {
        match op {
            Op::Record(v, n) => r.record_n(v, n),
            Op::Corrected(v, i) => r.record_corrected(v, i),
        }
    }
}

/// The window of the owned-array kind: HdrHistogram's `new Histogram(3_600_000_000, 3)`.
const ARRAY_LAYOUT: Layout = Layout::from_significant_digits(3).unwrap();
const ARRAY_LEN: usize = storage_len(ARRAY_LAYOUT, 0, 3_600_000_000);

/// Every kind the suite runs on.
const KINDS: &[Kind] = &[
    Kind {
        name: "plain heap u64",
        build: |l, w, ops| {
            if l.unit_magnitude() != 0 {
                let mut h = dense_unit::<u64>(l, w).plain().unwrap();
                apply(&mut h, ops);
                return Some(Box::new(h));
            }
            let mut h = dense::<u64>(l, w).plain().unwrap();
            apply(&mut h, ops);
            Some(Box::new(h))
        },
    },
    Kind {
        name: "plain heap u32",
        build: |l, w, ops| {
            if l.unit_magnitude() != 0 {
                let mut h = dense_unit::<u32>(l, w).plain().unwrap();
                apply(&mut h, ops);
                return Some(Box::new(h));
            }
            let mut h = dense::<u32>(l, w).plain().unwrap();
            apply(&mut h, ops);
            Some(Box::new(h))
        },
    },
    Kind {
        name: "plain over a borrowed buffer",
        build: |l, w, ops| {
            let cells: &'static mut [u64] = Box::leak(vec![0u64; w.len()].into_boxed_slice());
            let mut h = Histogram::with_storage(UnitLayout::new(l), cells, w).ok()?;
            apply(&mut h, ops);
            Some(Box::new(h))
        },
    },
    Kind {
        name: "plain over an owned array",
        build: |l, w, ops| {
            if l != ARRAY_LAYOUT || w != Window::new(l, 0, 3_600_000_000).ok()? {
                return None;
            }
            let mut h = Box::new(Histogram::<[u32; ARRAY_LEN]>::new(
                ARRAY_LAYOUT,
                0,
                3_600_000_000,
            ));
            apply(&mut *h, ops);
            Some(h)
        },
    },
    Kind {
        name: "atomic",
        build: |l, w, ops| {
            if l.unit_magnitude() != 0 {
                let h = dense_unit::<u64>(l, w).atomic().unwrap();
                apply(&mut &h, ops);
                return Some(Box::new(h));
            }
            let h = dense::<u64>(l, w).atomic().unwrap();
            apply(&mut &h, ops);
            Some(Box::new(h))
        },
    },
    Kind {
        // Records no value unit (the plain record spec, for the cost of a record). Dense
        // shards: sparse storage widens the window to whole blocks (Java's exact window here).
        name: "thread-local (two threads)",
        build: |l, w, ops| {
            if l.unit_magnitude() != 0 {
                return None;
            }
            let h = dense::<u64>(l, w).thread_local().unwrap();
            let (a, b) = ops.split_at(ops.len() / 2);
            std::thread::scope(|s| {
                s.spawn(|| apply(&mut &h, a));
                s.spawn(|| apply(&mut &h, b));
            });
            Some(Box::new(h))
        },
    },
    Kind {
        name: "snapshot",
        build: |l, w, ops| {
            let h = dense_unit::<u32>(l, w).atomic().unwrap();
            apply(&mut &h, ops);
            Some(Box::new(Snapshot::new(&h)))
        },
    },
    Kind {
        name: "HdrCounts in place",
        build: |l, w, ops| {
            // HdrHistogram's own counts: a geometry of lowest 1 indexes like `l`.
            let digits = interop::significant_digits_for(l)?;
            if l.unit_magnitude() != 0 || w.first() != 0 {
                return None;
            }
            let top = l.highest(w.last()).min(i64::MAX as u64);
            let mut counts = HdrCounts::new(1, top.max(2), digits).ok()?;
            let mut plain = dense::<u64>(l, w).plain().unwrap();
            apply(&mut plain, ops);
            for b in plain.recorded_buckets() {
                counts.record(b.lo, b.count).ok()?;
            }
            let counts: &'static HdrCounts = Box::leak(Box::new(counts));
            Some(Box::new(interop::view(counts).ok()?))
        },
    },
];

/// Runs `check` on every kind that can hold the histogram; at least the plain heap kind must.
fn each_kind(layout: Layout, window: Window, ops: &[Op], check: impl Fn(&str, &dyn HistogramRead)) {
    let mut ran = 0;
    for kind in KINDS {
        if let Some(h) = (kind.build)(layout, window, ops) {
            check(kind.name, &*h);
            ran += 1;
        }
    }
    // Every kind but the thread-local one, the array and HdrCounts (fixed windows, no unit).
    assert!(ran >= 5, "only {ran} kinds ran");
}

// ---------------------------------------------------------------------------------------------
// HistogramDataAccessTest: 10,000 values of 1 ms and one of 100 s (µs), raw and corrected at
// record time for an expected interval of 10 ms; 3 digits up to one hour.

const HOUR_US: u64 = 3_600_000_000;

fn three_digits() -> Layout {
    Layout::from_significant_digits(3).unwrap()
}

fn hour_window(l: Layout) -> Window {
    Window::new(l, 0, HOUR_US).unwrap()
}

fn raw_ops() -> Vec<Op> {
    vec![Op::Record(1000, 10_000), Op::Record(100_000_000, 1)]
}

fn corrected_ops() -> Vec<Op> {
    let mut ops = vec![Op::Corrected(1000, 10_000); 10_000];
    ops.push(Op::Corrected(100_000_000, 10_000));
    ops
}

/// `rawHistogram`, `histogram` and `postCorrectedHistogram` on one kind.
struct DataAccess {
    kind: &'static str,
    raw: Shared,
    corrected: Shared,
    post: Shared,
}

/// `rawHistogram`, `histogram` and `postCorrectedHistogram` on every kind.
fn data_access(check: impl Fn(&str, &dyn HistogramRead, &dyn HistogramRead, &dyn HistogramRead)) {
    for d in data_access_histograms() {
        check(d.kind, &*d.raw, &*d.corrected, &*d.post);
    }
}

/// The histograms of [`data_access`], built once for all the tests that read them (they only
/// read): 30,000 records on each of eight kinds, which took minutes per test under miri.
fn data_access_histograms() -> &'static [DataAccess] {
    static BUILT: std::sync::OnceLock<Vec<DataAccess>> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_data_access)
}

fn build_data_access() -> Vec<DataAccess> {
    let l = three_digits();
    let w = hour_window(l);
    let raw_plain = {
        let mut h = dense::<u64>(l, w).plain().unwrap();
        apply(&mut h, &raw_ops());
        h
    };
    let mut built = Vec::new();
    for kind in KINDS {
        let (Some(raw), Some(corrected)) = (
            (kind.build)(l, w, &raw_ops()),
            (kind.build)(l, w, &corrected_ops()),
        ) else {
            continue;
        };
        // Post-recording correction, into this kind: Java's copyCorrectedForCoordinatedOmission.
        let post: Shared = match kind.name {
            "atomic" => {
                let h = dense::<u64>(l, w).atomic().unwrap();
                add_corrected(&mut &h, &*raw, 10_000);
                Box::new(h)
            }
            "thread-local (two threads)" => {
                let h = dense::<u64>(l, w).thread_local().unwrap();
                add_corrected(&mut &h, &*raw, 10_000);
                Box::new(h)
            }
            _ => {
                let mut h = dense::<u64>(l, w).plain().unwrap();
                add_corrected(&mut h, &raw_plain, 10_000);
                Box::new(h)
            }
        };
        built.push(DataAccess {
            kind: kind.name,
            raw,
            corrected,
            post,
        });
    }
    assert!(built.len() >= 7, "{} kinds", built.len());
    built
}

#[test]
fn data_access_totals_extremes_and_moments() {
    data_access(|kind, raw, h, post| {
        // testGetTotalCount.
        assert_eq!(raw.total(), 10_001, "{kind}");
        assert_eq!(h.total(), 20_000, "{kind}");
        // testPreVsPostCorrectionValues: the same totals.
        assert_eq!(post.total(), h.total(), "{kind}");
        // testGetMaxValue, testGetMinValue: equivalent to 100 s and 1 ms.
        let l = h.layout();
        assert!(l.equivalent(h.max().unwrap(), 100_000_000), "{kind}");
        assert!(l.equivalent(h.min().unwrap(), 1000), "{kind}");
        // testGetMean, within 0.1 %.
        let raw_mean = (10_000.0 * 1000.0 + 100_000_000.0) / 10_001.0;
        let mean = (1000.0 + 50_000_000.0) / 2.0;
        assert!((raw.mean() - raw_mean).abs() <= raw_mean * 0.001, "{kind}");
        assert!((h.mean() - mean).abs() <= mean * 0.001, "{kind}");
        // testGetStdDeviation, within 0.1 %.
        let raw_sd = ((10_000.0 * (1000.0 - raw_mean) * (1000.0 - raw_mean)
            + (100_000_000.0 - raw_mean) * (100_000_000.0 - raw_mean))
            / 10_001.0)
            .sqrt();
        let mut squares = 10_000.0 * (1000.0 - mean) * (1000.0 - mean);
        let mut v = 10_000.0;
        while v <= 100_000_000.0 {
            squares += (v - mean) * (v - mean);
            v += 10_000.0;
        }
        let sd = (squares / 20_000.0).sqrt();
        assert!((raw.stdev() - raw_sd).abs() <= raw_sd * 0.001, "{kind}");
        assert!((h.stdev() - sd).abs() <= sd * 0.001, "{kind}");
    });
}

#[test]
fn data_access_percentiles() {
    data_access(|kind, raw, h, _| {
        let at = |h: &dyn HistogramRead, p: f64| {
            h.percentile(p, EquivalentValue::Upper).unwrap().value as f64
        };
        // testGetValueAtPercentile: each within 0.1 %.
        for (p, want) in [
            (30.0, 1000.0),
            (99.0, 1000.0),
            (99.99, 1000.0),
            (99.999, 100_000_000.0),
            (100.0, 100_000_000.0),
        ] {
            assert!(
                (at(raw, p) - want).abs() <= want * 0.001,
                "{kind}: raw p{p}"
            );
        }
        for (p, want) in [
            (30.0, 1000.0),
            (50.0, 1000.0),
            (75.0, 50_000_000.0),
            (90.0, 80_000_000.0),
            (99.0, 98_000_000.0),
            (99.999, 100_000_000.0),
            (100.0, 100_000_000.0),
        ] {
            assert!((at(h, p) - want).abs() <= want * 0.001, "{kind}: p{p}");
        }
        // testGetPercentileAtOrBelowValue: within 0.0001.
        assert!(
            (raw.percentile_at_or_below(5000) - 99.99).abs() <= 0.0001,
            "{kind}"
        );
        assert!(
            (h.percentile_at_or_below(5000) - 50.0).abs() <= 0.0001,
            "{kind}"
        );
        assert!(
            (h.percentile_at_or_below(100_000_000) - 100.0).abs() <= 0.0001,
            "{kind}"
        );
        // testGetCountBetweenValues.
        assert_eq!(raw.count_between(1000, 1000), 10_000, "{kind}");
        assert_eq!(raw.count_between(5000, 150_000_000), 1, "{kind}");
        assert_eq!(h.count_between(5000, 150_000_000), 10_000, "{kind}");
        // testGetCountAtValue.
        assert_eq!(raw.count_between(10_000, 10_010), 0, "{kind}");
        assert_eq!(h.count_between(10_000, 10_010), 1, "{kind}");
        assert_eq!(raw.count_at_value(1000), 10_000, "{kind}");
        assert_eq!(h.count_at_value(1000), 10_000, "{kind}");
    });
}

/// testScalingEquivalence: the same data × 512 in a histogram of lowest discernible value 1000
/// (units of 512) gives the same answers × 512.
#[test]
fn data_access_scaling_equivalence() {
    let l = three_digits();
    let scaled_layout = l.with_lowest_discernible(1000).unwrap();
    let scaled_window = Window::new(scaled_layout, 0, HOUR_US * 512).unwrap();
    let scale = |ops: Vec<Op>| -> Vec<Op> {
        ops.into_iter()
            .map(|op| match op {
                Op::Record(v, n) => Op::Record(v * 512, n),
                Op::Corrected(v, i) => Op::Corrected(v * 512, i * 512),
            })
            .collect()
    };
    let plain = {
        let mut h = dense::<u64>(l, hour_window(l)).plain().unwrap();
        apply(&mut h, &corrected_ops());
        h
    };
    let raw_scaled = {
        let mut h = dense_unit::<u64>(scaled_layout, scaled_window)
            .plain()
            .unwrap();
        apply(&mut h, &scale(raw_ops()));
        h
    };
    let raw = {
        let mut h = dense::<u64>(l, hour_window(l)).plain().unwrap();
        apply(&mut h, &raw_ops());
        h
    };
    each_kind(
        scaled_layout,
        scaled_window,
        &scale(corrected_ops()),
        |kind, scaled| {
            let upper =
                |h: &dyn HistogramRead, p| h.percentile(p, EquivalentValue::Upper).unwrap().value;
            assert!(
                (plain.mean() * 512.0 - scaled.mean()).abs() <= scaled.mean() * 0.000_001,
                "{kind}"
            );
            assert_eq!(plain.total(), scaled.total(), "{kind}");
            assert_eq!(
                scaled_layout.highest_equivalent(upper(&plain, 99.0) * 512),
                scaled_layout.highest_equivalent(upper(scaled, 99.0)),
                "{kind}"
            );
            assert_eq!(
                scaled_layout.highest_equivalent(plain.max().unwrap() * 512),
                scaled.max().unwrap(),
                "{kind}"
            );
        },
    );
    // The post-corrected pair.
    let mut post = dense::<u64>(l, hour_window(l)).plain().unwrap();
    add_corrected(&mut post, &raw, 10_000);
    let mut post_scaled = dense_unit::<u64>(scaled_layout, scaled_window)
        .plain()
        .unwrap();
    add_corrected(&mut post_scaled, &raw_scaled, 10_000 * 512);
    assert_eq!(post.total(), post_scaled.total());
    let lower = |h: &dyn HistogramRead, p| h.percentile(p, EquivalentValue::Lower).unwrap().value;
    assert_eq!(lower(&post, 99.0) * 512, lower(&post_scaled, 99.0));
    assert_eq!(
        scaled_layout.highest_equivalent(post.max().unwrap() * 512),
        post_scaled.max().unwrap()
    );
}

/// testGetValueAtPercentileExamples: of {1, 2}, p50 and p50.00000000000001 are 1 and
/// p50.0000000000001 is 2; of {1, 2, 2, 2, 2}, p25 and p30 are 2. And
/// testGetValueAtPercentileForLargeHistogram: 5 digits up to 10^12.
#[test]
fn value_at_percentile_examples() {
    let l = three_digits();
    let w = hour_window(l);
    each_kind(l, w, &[Op::Record(1, 1), Op::Record(2, 1)], |kind, h| {
        let upper = |p| h.percentile(p, EquivalentValue::Upper).unwrap().value;
        assert_eq!(upper(50.0), 1, "{kind}");
        assert_eq!(upper(50.000_000_000_000_01), 1, "{kind}");
        assert_eq!(upper(50.000_000_000_000_1), 2, "{kind}");
    });
    each_kind(l, w, &[Op::Record(1, 1), Op::Record(2, 4)], |kind, h| {
        let upper = |p| h.percentile(p, EquivalentValue::Upper).unwrap().value;
        assert_eq!((upper(25.0), upper(30.0)), (2, 2), "{kind}");
    });
    let five = Layout::from_significant_digits(5).unwrap();
    let w = Window::new(five, 0, 1_000_000_000_000).unwrap();
    each_kind(five, w, &[Op::Record(1_000_000_000_000, 1)], |kind, h| {
        assert!(
            h.percentile(100.0, EquivalentValue::Upper).unwrap().value > 0,
            "{kind}"
        );
    });
}

/// testPercentiles: every report of a percentile iteration reads back to its own bucket.
#[test]
fn percentile_iteration_reads_back() {
    data_access(|kind, _, h, _| {
        let l = h.layout();
        let mut rows = 0;
        for v in h.percentile_ticks(5).unwrap() {
            let back = h
                .percentile(v.percentile, EquivalentValue::Upper)
                .unwrap()
                .value;
            assert_eq!(
                v.value_iterated_to,
                l.highest_equivalent(back),
                "{kind}: {v:?} reads back to {back}"
            );
            rows += 1;
        }
        assert!(rows > 50, "{kind}: {rows}");
    });
}

/// testLinearBucketValues.
#[test]
fn linear_iteration() {
    data_access(|kind, raw, h, _| {
        // Raw, steps of 100 ms: 10,000 in the first, 1 in the 1,000th.
        let steps: Vec<IterationValue> = raw.linear(100_000).unwrap().collect();
        assert_eq!(steps.len(), 1000, "{kind}");
        for (i, s) in steps.iter().enumerate() {
            let want = match i {
                0 => 10_000,
                999 => 1,
                _ => 0,
            };
            assert_eq!(s.count_added_in_this_step, want, "{kind}: raw step {i}");
        }
        // Corrected, steps of 10 ms: 10,000 steps, 10,000 in the first, 20,000 in all.
        let steps: Vec<IterationValue> = h.linear(10_000).unwrap().collect();
        assert_eq!(steps.len(), 10_000, "{kind}");
        assert_eq!(steps[0].count_added_in_this_step, 10_000, "{kind}");
        let added: u64 = steps.iter().map(|s| s.count_added_in_this_step).sum();
        assert_eq!(added, 20_000, "{kind}");
        // Steps of 1 ms: 100,007 (the last bucket, at 100 s, is wider than a step), the
        // second holding the 10,000.
        let steps: Vec<IterationValue> = h.linear(1000).unwrap().collect();
        assert_eq!(steps.len(), 100_007, "{kind}");
        assert_eq!(steps[1].count_added_in_this_step, 10_000, "{kind}");
        let added: u64 = steps.iter().map(|s| s.count_added_in_this_step).sum();
        assert_eq!(added, 20_000, "{kind}");
        // Each step: from the previous step's level, the running total consistent.
        let mut total = 0;
        for w in steps.windows(2) {
            assert_eq!(w[1].value_iterated_from, w[0].value_iterated_to, "{kind}");
        }
        for s in &steps {
            total += s.count_added_in_this_step;
            assert_eq!(s.total_count_to_value, total, "{kind}");
        }
    });
}

/// testLogarithmicBucketValues.
#[test]
fn logarithmic_iteration() {
    data_access(|kind, raw, h, _| {
        let steps: Vec<IterationValue> = raw.logarithmic(10_000, 2.0).unwrap().collect();
        assert_eq!(steps.len() - 1, 14, "{kind}");
        for (i, s) in steps.iter().enumerate() {
            let want = match i {
                0 => 10_000,
                14 => 1,
                _ => 0,
            };
            assert_eq!(s.count_added_in_this_step, want, "{kind}: raw step {i}");
        }
        let steps: Vec<IterationValue> = h.logarithmic(10_000, 2.0).unwrap().collect();
        assert_eq!(steps.len() - 1, 14, "{kind}");
        assert_eq!(steps[0].count_added_in_this_step, 10_000, "{kind}");
        let added: u64 = steps.iter().map(|s| s.count_added_in_this_step).sum();
        assert_eq!(added, 20_000, "{kind}");
    });
}

/// testRecordedValues: HdrHistogram's recorded-values iteration is `recorded_buckets`.
#[test]
fn recorded_values_iteration() {
    data_access(|kind, raw, h, _| {
        let buckets: Vec<_> = raw.recorded_buckets().collect();
        assert_eq!(buckets.len(), 2, "{kind}");
        assert_eq!((buckets[0].count, buckets[1].count), (10_000, 1), "{kind}");
        let mut total = 0;
        for b in h.recorded_buckets() {
            assert_ne!(b.count, 0, "{kind}");
            total += b.count;
            assert_eq!(b.cumulative, total, "{kind}");
        }
        assert_eq!(h.recorded_buckets().next().unwrap().count, 10_000, "{kind}");
        assert_eq!(total, 20_000, "{kind}");
    });
}

/// testAllValues: HdrHistogram's all-values iteration is `buckets`, one per bucket of the
/// window.
#[test]
fn all_values_iteration() {
    data_access(|kind, raw, h, _| {
        let l = raw.layout();
        let mut total = 0;
        let mut n = 0;
        for (i, b) in raw.buckets().enumerate() {
            let want = if i == 1000 {
                10_000
            } else if l.equivalent(b.highest, 100_000_000) {
                1
            } else {
                0
            };
            assert_eq!(b.count, want, "{kind}: bucket {i}");
            total += b.count;
            assert_eq!(b.cumulative, total, "{kind}");
            n += 1;
        }
        // Java's counts array ends with its last block: 23,552 entries. Picollo's window ends
        // at the bucket of the highest trackable value.
        let want = if kind == "HdrCounts in place" {
            h.window().len() // the counts HdrCounts holds: up to its last non-zero entry
        } else {
            storage_len(l, 0, HOUR_US)
        };
        assert_eq!(n, want, "{kind} (Java: 23,552)");
        let mut added = 0;
        for (i, b) in h.buckets().enumerate() {
            assert!(l.equivalent(l.lo(i), b.highest), "{kind}");
            added += b.count;
        }
        assert_eq!(h.buckets().nth(1000).unwrap().count, 10_000, "{kind}");
        assert_eq!(added, 20_000, "{kind}");
    });
}

/// testVerifyManualAllValuesDuplication: the non-empty buckets, recorded again at their
/// highest values, give the same histogram.
#[test]
fn all_values_duplication() {
    data_access(|kind, _, h, _| {
        let l = h.layout();
        let mut copy = dense::<u64>(l, hour_window(l)).plain().unwrap();
        for b in h.buckets().filter(|b| b.count > 0) {
            copy.record_n(b.highest, b.count);
        }
        for s in 0..h.window().len() {
            assert_eq!(copy.count_at(s), h.count_at(s), "{kind}: {s}");
        }
    });
}

/// testLinearIteratorSteps, scanLinearIteratorForAIOOB and
/// testLinearIteratorVisitsBucketsWiderThanStepSizeMultipleTimes (with the crate's
/// `iter_linear_visits_buckets_*`).
#[test]
fn linear_iteration_steps() {
    // `new IntCountsHistogram(2)`: 2 digits, auto-resized (here: all of u64).
    let two = Layout::from_significant_digits(2).unwrap();
    let ops = [0u64, 1, 64, 128, 193].map(|v| Op::Record(v, 1));
    each_kind(
        two,
        Window::new(two, 0, 1 << 40).unwrap(),
        &ops,
        |kind, h| {
            assert_eq!(
                h.linear(64).unwrap().count(),
                4,
                "{kind}: should see 4 steps"
            );
        },
    );
    for step in 1..100u64 {
        for value in (1..1000u64).step_by(7) {
            let mut h = HistogramBuilder::new()
                .layout(two)
                .u32_storage()
                .dense()
                .plain()
                .unwrap();
            h.record(value);
            let added: u64 = h
                .linear(step)
                .unwrap()
                .map(|s| s.count_added_in_this_step)
                .sum();
            assert_eq!(added, 1, "value {value} step {step}");
        }
    }
    let l = three_digits();
    let ops =
        [1u64, 2047, 2048, 2049, 4095, 4096, 4097, 4098, 4099, 4100].map(|v| Op::Record(v, 1));
    each_kind(l, Window::new(l, 0, 1 << 40).unwrap(), &ops, |kind, h| {
        let at = |steps: &[IterationValue], i: usize| {
            (
                steps[i].value_iterated_to,
                steps[i].count_added_in_this_step,
            )
        };
        let steps: Vec<IterationValue> = h.linear(1).unwrap().collect();
        for (i, want) in [
            (0, (0, 0)),
            (1, (1, 1)),
            (2046, (2046, 0)),
            (2047, (2047, 1)),
            (2048, (2048, 2)),
            (2049, (2049, 0)),
            (2050, (2050, 0)),
            (2051, (2051, 0)),
            (4094, (4094, 1)),
            (4095, (4095, 0)),
            (4096, (4096, 4)),
            (4097, (4097, 0)),
            (4098, (4098, 0)),
            (4099, (4099, 0)),
            (4100, (4100, 1)),
            (4101, (4101, 0)),
            (4102, (4102, 0)),
            (4103, (4103, 0)),
        ] {
            assert_eq!(at(&steps, i), want, "{kind}: step {i}");
        }
        assert_eq!(steps.len(), 4104, "{kind}");
        // The crate's step-size-equals-bucket-size case.
        let steps: Vec<IterationValue> = h.linear(4).unwrap().collect();
        for (i, want) in [
            (0, (3, 1)),
            (511, (2047, 1)),
            (512, (2051, 2)),
            (1023, (4095, 1)),
            (1024, (4099, 4)),
            (1025, (4103, 1)),
        ] {
            assert_eq!(at(&steps, i), want, "{kind}: step {i}");
        }
        assert_eq!(steps.len(), 1026, "{kind}");
    });
}

/// The crate's `iter_linear_count_since_last_iteration_saturates`: steps after the running
/// total saturates keep their own counts. Picollo's `u64` buckets stop at `2^63 - 1` in bulk
/// adds (`Counter`'s rule), where the crate's hold `u64::MAX`.
#[test]
fn linear_iteration_counts_survive_saturation() {
    let l = three_digits();
    let ops = [
        Op::Record(1, u64::MAX),
        Op::Record(4, u64::MAX - 1),
        Op::Record(5, u64::MAX - 1),
        Op::Record(6, 100),
        Op::Record(7, 200),
        Op::Record(10, 400),
    ];
    let cap = i64::MAX as u64;
    let mut h = HistogramBuilder::new().layout(l).dense().plain().unwrap();
    apply(&mut h, &ops);
    let steps: Vec<(u64, u64)> = h
        .linear(2)
        .unwrap()
        .map(|s| (s.value_iterated_to, s.count_added_in_this_step))
        .collect();
    assert_eq!(
        steps,
        [(1, cap), (3, 0), (5, 2 * cap), (7, 300), (9, 0), (11, 400)],
        "the crate: [(1, MAX), (3, 0), (5, MAX), (7, 300), (9, 0), (11, 400)]"
    );
}

/// HistogramTest.testValueAtPercentileMatchesPercentileIter (and the crate's quantile
/// iteration cases): 2 digits, lengths 1 to 100,000, ticks of 1,000 per half distance; every
/// row's percentile reads back to its row's bucket. All 74,290 rows (HdrHistogram 2.1.11,
/// built from its sources, iterates 74,290 rows here and none differs; issue 31 quoted
/// 68,486).
#[test]
fn value_at_percentile_matches_percentile_iteration() {
    let two = Layout::from_significant_digits(2).unwrap();
    let mut rows = 0;
    for length in [
        1u64, 5, 10, 50, 100, 500, 1000, 5000, 10_000, 50_000, 100_000,
    ] {
        let mut h = HistogramBuilder::new().layout(two).dense().plain().unwrap();
        for v in 1..=length {
            h.record(v);
        }
        for v in h.percentile_ticks(1000).unwrap() {
            let back = h
                .percentile(v.percentile, EquivalentValue::Upper)
                .unwrap()
                .value;
            assert!(
                two.equivalent(back, v.value_iterated_to),
                "length {length}: p{} reads back to {back}, the row is {}",
                v.percentile,
                v.value_iterated_to
            );
            rows += 1;
        }
        // testValueAtPercentileMatchesPercentile: each value's own share.
        let mut value = 1;
        while value <= length {
            let p = 100.0 * value as f64 / length as f64;
            let back = h.percentile(p, EquivalentValue::Upper).unwrap().value;
            assert!(
                two.equivalent(value, back),
                "length {length}: p{p} is {back}, not {value}"
            );
            value = two.next_non_equivalent(value).unwrap();
        }
    }
    assert_eq!(rows, 74_290);
}

/// HistogramTest: record, reset, add, corrected records, construction with large numbers.
#[test]
fn histogram_basics() {
    let l = three_digits();
    let w = hour_window(l);
    // testRecordValue.
    each_kind(l, w, &[Op::Record(4, 1)], |kind, h| {
        assert_eq!((h.count_at_value(4), h.total()), (1, 1), "{kind}");
    });
    // testRecordValueWithExpectedInterval: 4 at an interval of 1 is 4, 3, 2, 1.
    each_kind(l, w, &[Op::Corrected(4, 1)], |kind, h| {
        for v in 1..=4 {
            assert_eq!(h.count_at_value(v), 1, "{kind}: {v}");
        }
        assert_eq!(h.total(), 4, "{kind}");
    });
    each_kind(l, w, &[Op::Record(4, 1)], |kind, h| {
        assert_eq!(
            (h.count_at_value(1), h.count_at_value(4), h.total()),
            (0, 1, 1),
            "{kind}"
        );
    });
    // testConstructionWithLargeNumbers: `new Histogram(20_000_000, 100_000_000, 5)`, a
    // lowest discernible value of 2 · 10^7: units of 2^24, so 2 · 10^7 and 3 · 10^7 share a
    // bucket.
    let five = Layout::from_significant_digits(5)
        .unwrap()
        .with_lowest_discernible(20_000_000)
        .unwrap();
    let big = Window::new(five, 0, 100_000_000).unwrap();
    let ops = [100_000_000, 20_000_000, 30_000_000].map(|v| Op::Record(v, 1));
    each_kind(five, big, &ops, |kind, h| {
        let upper = |p| h.percentile(p, EquivalentValue::Upper).unwrap().value;
        assert!(five.equivalent(20_000_000, upper(50.0)), "{kind}");
        assert!(five.equivalent(30_000_000, upper(50.0)), "{kind}");
        for p in [83.33, 83.34, 99.0] {
            assert!(five.equivalent(100_000_000, upper(p)), "{kind}: p{p}");
        }
    });
    // testEmptyHistogram: no min, max or percentiles (Java reports 0); the rank of a value
    // in an empty histogram is 100 %, as in Java.
    each_kind(l, w, &[], |kind, h| {
        assert_eq!((h.min(), h.max()), (None, None), "{kind}: Java 0 and 0");
        assert_eq!((h.mean(), h.stdev()), (0.0, 0.0), "{kind}");
        assert_eq!(h.percentile_at_or_below(0), 100.0, "{kind}");
    });
    // testReset.
    let mut h = dense::<u64>(l, w).plain().unwrap();
    for v in [4, 10, 100] {
        h.record(v);
    }
    assert_eq!((h.min(), h.max()), (Some(4), Some(100)));
    h.reset();
    assert_eq!((h.count_at_value(4), h.total()), (0, 0));
    h.record(20);
    h.record(80);
    assert_eq!((h.min(), h.max()), (Some(20), Some(80)));
    // testAdd: a smaller histogram into a bigger one; a bigger one into a smaller: Java throws,
    // Picollo counts the value beyond the window as overflow.
    let mut other = dense::<u64>(l, w).plain().unwrap();
    h.reset();
    for x in [&mut h, &mut other] {
        x.record(4);
        x.record(4000);
    }
    h.add(&other);
    assert_eq!(
        (h.count_at_value(4), h.count_at_value(4000), h.total()),
        (2, 2, 4)
    );
    let mut bigger = HistogramBuilder::new()
        .layout(l)
        .window(Window::new(l, 0, HOUR_US * 2).unwrap())
        .dense()
        .plain()
        .unwrap();
    bigger.record(4);
    bigger.record(4000);
    bigger.record(HOUR_US * 2);
    bigger.add(&h);
    assert_eq!(
        (
            bigger.count_at_value(4),
            bigger.count_at_value(4000),
            bigger.count_at_value(HOUR_US * 2)
        ),
        (3, 3, 1)
    );
    assert_eq!(bigger.total(), 7);
    h.add(&bigger);
    assert_eq!(
        h.overflow(),
        1,
        "Java throws ArrayIndexOutOfBoundsException"
    );
}

/// HistogramTest's equivalent-value cases, on every kind's layout (3 digits; the scaled cases,
/// lowest 1024, are in picollo-core's `tests/peer_operations.rs`).
#[test]
fn equivalent_values() {
    let l = three_digits();
    each_kind(l, hour_window(l), &[], |kind, h| {
        let l = h.layout();
        // testSizeOfEquivalentValueRange.
        for (v, width) in [
            (1, 1),
            (1025, 1),
            (2047, 1),
            (2048, 2),
            (2500, 2),
            (8191, 4),
            (8192, 8),
            (10_000, 8),
        ] {
            assert_eq!(l.width(l.index_of(v)), width, "{kind}: {v}");
        }
        // testLowestEquivalentValue.
        assert_eq!(
            (l.lowest_equivalent(10_007), l.lowest_equivalent(10_009)),
            (10_000, 10_008)
        );
        // testHighestEquivalentValue.
        for (v, want) in [
            (8180, 8183),
            (8191, 8191),
            (8193, 8199),
            (9995, 9999),
            (10_007, 10_007),
            (10_008, 10_015),
        ] {
            assert_eq!(l.highest_equivalent(v), want, "{kind}: {v}");
        }
        // testMedianEquivalentValue.
        for (v, want) in [(4, 4), (5, 5), (4000, 4001), (8000, 8002), (10_007, 10_004)] {
            assert_eq!(l.median_equivalent(v), want, "{kind}: {v}");
        }
        // testNextNonEquivalentValue (Java only checks it exists; the crate's cases).
        assert_eq!(l.next_non_equivalent(2047), Some(2048));
        assert_eq!(l.next_non_equivalent(2048), Some(2050));
        assert_eq!(l.next_non_equivalent(u64::MAX), None, "the crate: panics");
    });
}

/// HistogramEncodingTest: V2 and V2+deflate round trips on every kind (Java's classes at
/// 1,000 to 5,000 × i), and testSimpleIntegerHistogramEncoding's counts past 2^4 … 2^52.
#[test]
fn encoding_round_trips() {
    use picollo_alloc::hdr::interop::{export_v2_deflate, export_v2_into, ExportOptions};
    let l = three_digits();
    let w = Window::new(l, 0, i64::MAX as u64).unwrap();
    let mut ops: Vec<Op> = (0..10_000u64).map(|i| Op::Record(3000 * i, 1)).collect();
    ops.push(Op::Record(6147, 1));
    each_kind(l, w, &ops, |kind, h| {
        let options = ExportOptions::new();
        let mut bytes = Vec::new();
        let report = export_v2_into(h, &options, &mut bytes).unwrap();
        assert!(report.is_exact(), "{kind}");
        let (compressed, _) = export_v2_deflate(h, &options, 6).unwrap();
        assert!(compressed.len() < bytes.len(), "{kind}");
        for encoded in [&bytes, &compressed] {
            let back = HdrCounts::decode(encoded).unwrap_or_else(|e| panic!("{kind}: {e:?}"));
            assert_eq!(back.total_count(), h.total(), "{kind}");
            let back = interop::to_picollo(&back).unwrap();
            for b in h.recorded_buckets() {
                assert_eq!(back.count_at_value(b.lo), b.count, "{kind}: {}", b.lo);
            }
            assert_eq!(back.total(), h.total(), "{kind}");
        }
    });
    let mut counts = HdrCounts::new(1, HOUR_US, 3).unwrap();
    for v in [6147, 1024, 0] {
        counts.record(v, 1).unwrap();
    }
    for (v, shift) in [(100, 4), (200, 16), (300, 20), (400, 32), (500, 52)] {
        counts.record(v, 1 << shift).unwrap();
        for encoded in [
            counts.encode_v2().unwrap(),
            counts.encode_v2_deflate(6).unwrap(),
        ] {
            let back = HdrCounts::decode(&encoded).unwrap();
            assert!(back.same_content(&counts), "past 2^{shift}");
        }
    }
}
