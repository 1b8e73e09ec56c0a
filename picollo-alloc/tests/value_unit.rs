//! One rule for a value unit (HdrHistogram's lowest discernible value), however it comes in
//! (`lowest_discernible` or a layout that has one): the `*_with_unit` kinds record it, every
//! other kind refuses it with a typed error; no constructor drops it.

use picollo_alloc::{BuildError, HistogramBuilder};
use picollo_core::{HistogramRead, Layout, ReadExt};

#[test]
fn a_value_unit_is_recorded_or_refused_never_dropped() {
    let plain = Layout::from_block_scale(7).unwrap();
    let unit_layout = plain.with_lowest_discernible(1000).unwrap();
    let by_layout = HistogramBuilder::new().layout(unit_layout);
    let by_setting = HistogramBuilder::new()
        .layout(plain)
        .lowest_discernible(1000);
    for b in [by_layout, by_setting] {
        let a = b.atomic_with_unit().unwrap();
        a.record(5_000);
        assert_eq!((a.layout().unit(), a.total()), (512, 1));
        let mut p = b.dense().plain_with_unit().unwrap();
        p.record(5_000);
        assert_eq!((p.layout().unit(), p.total()), (512, 1));
        let refused = |e: BuildError| matches!(e, BuildError::UnitNotRecorded { .. });
        assert!(b.plain().err().is_some_and(refused));
        assert!(b.atomic().err().is_some_and(refused));
        assert!(b.thread_local().err().is_some_and(refused));
        assert!(b.approximate().err().is_some_and(refused));
    }
}
