//! The process-wide default equivalent-value selection (seed 000's
//! `Percentile.DefaultEquivalentValueSelection`). One test in its own binary: changing a
//! process-wide setting would race with other tests of the same process.

use picollo_core::prelude::*;

#[test]
fn process_default_selection_applies_to_every_read_without_one() {
    const L: Layout = Layout::DEFAULT;
    let mut h = Histogram::<[u32; storage_len(L, 0, 1 << 20)]>::new(L, 0, 1 << 20);
    h.record(100_000); // bucket [99,968, 100,095], width 128
    let bucket = h.percentile_with(50.0, EquivalentValue::Lower).unwrap();
    assert_eq!((bucket.lo, bucket.highest), (99_968, 100_095));

    assert_eq!(
        EquivalentValue::process_default(),
        EquivalentValue::Midpoint
    );
    assert_eq!(EquivalentValue::default(), EquivalentValue::Midpoint);
    assert_eq!(h.percentile_value(50.0).unwrap(), 100_032);

    for (selection, value) in [
        (EquivalentValue::Upper, 100_095),
        (EquivalentValue::Lower, 99_968),
        (EquivalentValue::Midpoint, 100_032),
    ] {
        // Set from another thread: the setting is process-wide.
        std::thread::spawn(move || EquivalentValue::set_process_default(selection))
            .join()
            .unwrap();
        assert_eq!(EquivalentValue::default(), selection);
        assert_eq!(h.percentile_value(50.0).unwrap(), value);
        assert_eq!(h.percentile(50.0).unwrap().value, value);
        assert_eq!(h.fixed_percentile(Rank::percent(50)).unwrap().value, value);
        let mut out = [0u64; 1];
        h.percentile_values(&[50.0], &mut out).unwrap();
        assert_eq!(out[0], value);
        // An explicit selection ignores the default.
        assert_eq!(
            h.percentile_with(50.0, EquivalentValue::Lower)
                .unwrap()
                .value,
            99_968
        );
    }
}
