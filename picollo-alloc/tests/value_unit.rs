//! One rule for a value unit (HdrHistogram's lowest discernible value), however it comes in
//! (`lowest_discernible` or a layout that has one): a unit builder (`lowest_discernible`)
//! records it in its plain and atomic kinds and has no kind that would not (a compile error,
//! checked by the builder's `compile_fail` doc test); a unit layout given to a builder without
//! one is refused with a typed error by every kind; no constructor drops it.

use picollo_alloc::{BuildError, HistogramBuilder};
use picollo_core::{HistogramRead, Layout, ReadExt};

#[test]
fn a_value_unit_is_recorded_or_refused_never_dropped() {
    let plain = Layout::from_block_scale(7).unwrap();
    let unit_layout = plain.with_lowest_discernible(1000).unwrap();
    let by_setting = HistogramBuilder::new()
        .layout(plain)
        .lowest_discernible(1000);
    // The layout's own unit, taken by a unit builder.
    let by_layout = HistogramBuilder::new()
        .layout(unit_layout)
        .lowest_discernible(unit_layout.unit());
    for b in [by_setting, by_layout] {
        let a = b.atomic().unwrap();
        a.record(5_000);
        assert_eq!((a.layout().unit(), a.total()), (512, 1));
        let mut p = b.dense().plain().unwrap();
        p.record(5_000);
        assert_eq!((p.layout().unit(), p.total()), (512, 1));
    }
    // A unit layout on a builder without a unit: every kind refuses it, naming the unit.
    let b = HistogramBuilder::new().layout(unit_layout);
    let refused = |e: BuildError| matches!(e, BuildError::NeedsUnitLayout { unit: 512 });
    assert!(b.plain().err().is_some_and(refused));
    assert!(b.dense().atomic().err().is_some_and(refused));
    assert!(b.thread_local().err().is_some_and(refused));
    assert!(b.approximate().err().is_some_and(refused));
    let message = b.plain().unwrap_err().to_string();
    assert!(message.contains(".lowest_discernible(512)"), "{message}");
}
