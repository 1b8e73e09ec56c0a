//! Every percentile read reports the equivalent value it is given, on every path (`f64` and
//! fixed-point ranks, blocking and wait-free): there is no process-wide default to change an
//! answer behind a caller's back.

use picollo_core::prelude::*;

#[test]
fn every_percentile_read_reports_the_selection_it_is_given() {
    const L: Layout = Layout::DEFAULT;
    // Under miri the window is the one block that holds the value (512 cells, not 6,145):
    // every read walks the cells one by one there, 21 s over the whole window. The buckets,
    // and so every answer below, are the same.
    const LO: u64 = if cfg!(miri) { 1 << 16 } else { 0 };
    const HI: u64 = if cfg!(miri) { (1 << 17) - 1 } else { 1 << 20 };
    let mut h = Histogram::<[u32; storage_len(L, LO, HI)]>::new(L, LO, HI);
    h.record(100_000); // bucket [99,968, 100,095], width 128
    assert_eq!(EquivalentValue::default(), EquivalentValue::Midpoint);

    for (selection, value) in [
        (EquivalentValue::Upper, 100_095),
        (EquivalentValue::Lower, 99_968),
        (EquivalentValue::Midpoint, 100_032),
    ] {
        let p = h.percentile(50.0, selection).unwrap();
        assert_eq!((p.lo, p.highest, p.value), (99_968, 100_095, value));
        assert_eq!(
            h.try_read(|r| r.percentile(50.0, selection))
                .unwrap()
                .unwrap()
                .value,
            value
        );
        let mut out = [Percentile::default(); 2];
        h.percentiles(&[50.0, 100.0], selection, &mut out).unwrap();
        assert_eq!(out.map(|p| p.value), [value; 2]);
        h.try_read(|r| r.percentiles(&[0.0, 50.0], selection, &mut out))
            .unwrap()
            .unwrap();
        assert_eq!(out.map(|p| p.value), [value; 2]);

        let rank = Rank::percent(50);
        assert_eq!(h.fixed_percentile(rank, selection).unwrap().value, value);
        assert_eq!(
            h.try_read(|r| r.fixed_percentile(rank, selection))
                .unwrap()
                .unwrap()
                .value,
            value
        );
        let mut fixed = [FixedPercentile::default(); 2];
        h.fixed_percentiles(&[rank, Rank::MAX], selection, &mut fixed)
            .unwrap();
        assert_eq!(fixed.map(|p| p.value), [value; 2]);
        h.try_read(|r| r.fixed_percentiles(&[Rank::MIN, rank], selection, &mut fixed))
            .unwrap()
            .unwrap();
        assert_eq!(fixed.map(|p| p.value), [value; 2]);

        // The bucket iterators take the same selection.
        let b = h.recorded_bucket_percentiles(selection).next().unwrap();
        assert_eq!(b.value, value);
    }
}
