//! The common path from one crate: a user who depends on `picollo-alloc` alone records
//! values and durations, reads any rank and prints a summary (no `picollo-core` import here).

use std::time::Duration;

use picollo_alloc::prelude::*;
use picollo_alloc::{duration_ns, NotASummaryRank};

/// The builder's default kind (sparse storage over all of `u64`): reads cost what was
/// recorded, where a dense full-range window (28,672 cells) costs a walk of every cell, which
/// dominated this file's miri run.
#[test]
fn record_durations_in_every_kind() {
    let mut h = HistogramBuilder::new().plain().unwrap();
    h.record_duration(Duration::from_micros(16));
    h.record_duration(Duration::from_millis(12));
    assert_eq!(h.total(), 2);
    let p0 = h.percentile(0.0, EquivalentValue::Midpoint).unwrap();
    assert!(p0.lo <= 16_000 && 16_000 <= p0.highest, "{p0:?}");
    let p100 = h.percentile(100.0, EquivalentValue::Midpoint).unwrap();
    assert!(
        p100.lo <= 12_000_000 && 12_000_000 <= p100.highest,
        "{p100:?}"
    );
    // Saturating, never wrapping: Duration::MAX is u64::MAX ns, counted (here as the top).
    h.record_duration(Duration::MAX);
    assert_eq!(h.total() + h.overflow(), 3);
    assert_eq!(duration_ns(Duration::MAX), u64::MAX);
    assert_eq!(duration_ns(Duration::from_nanos(7)), 7);

    // Through the Record trait (generic code), into a thread-local histogram.
    fn record_all(r: &mut impl Record, ds: &[Duration]) {
        ds.iter().for_each(|&d| r.record_duration(d));
    }
    let mut g = HistogramBuilder::new().plain().unwrap();
    record_all(&mut g, &[Duration::from_nanos(5), Duration::from_nanos(9)]);
    assert_eq!(
        g.percentile(100.0, EquivalentValue::Midpoint)
            .unwrap()
            .value,
        9
    );

    let t = HistogramBuilder::new()
        .relative_error(0.01)
        .u32_storage()
        .thread_local()
        .unwrap();
    // A shared kind records through `&Kind` (its `Record` recorder).
    (&t).record_duration(Duration::from_micros(3));
    std::thread::scope(|s| {
        s.spawn(|| (&t).record_duration(Duration::from_micros(3)));
    });
    let snap = t.snapshot();
    assert_eq!(snap.total(), 2);
    let v = snap
        .percentile(50.0, EquivalentValue::Midpoint)
        .unwrap()
        .value;
    assert!(v.abs_diff(3_000) <= 30, "3 µs at 1 %: {v}");
}

#[test]
fn any_rank_and_a_clear_error_for_ranks_a_summary_lacks() {
    let mut h = HistogramBuilder::new().plain().unwrap();
    // Under miri 1..=2,000, in CI's miri run 1..=500 (35 s at 2,000, three quarters of it in
    // the summary's and the percentiles' walks over the recorded buckets, by callgrind).
    let n = picollo_testkit::miri_size(100_000, 2_000, 500);
    (1..=n).for_each(|v| h.record(v));
    let s = h.summary();
    assert_eq!(s.try_percentile(50.0).unwrap(), s.p50());
    let e: NotASummaryRank = s.try_percentile(99.95).unwrap_err();
    assert_eq!(e.rank, 99.95);
    let text = e.to_string();
    assert!(
        text.contains("99.999") && text.contains("h.percentile(99.95, EquivalentValue::Midpoint)"),
        "{text}"
    );
    assert!(s.percentile(99.95).is_none());
    // Any rank from the histogram, with the ReadExt re-exported here.
    let p = h.percentile(99.95, EquivalentValue::Midpoint).unwrap();
    let at = (n * 9995).div_ceil(10_000); // the 99.95th percentile of 1..=n
    assert!(p.lo <= at && at <= p.highest, "{p:?}");
    assert_eq!(
        h.percentile(33.3, EquivalentValue::Midpoint).unwrap().rank,
        33.3
    );
}
