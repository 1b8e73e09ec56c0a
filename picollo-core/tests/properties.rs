//! Property tests for the layout math and recording, over arbitrary `u64`.

use picollo_core::prelude::*;
use picollo_core::{Window, WindowError};
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

fn any_layout() -> impl Strategy<Value = Layout> {
    (1u32..=20).prop_map(|k| Layout::from_block_scale(k).unwrap())
}

/// The largest block scale of the windowed property: under miri 6 (8 in a full-size run),
/// where each read of a cell retags the whole storage.
fn max_k() -> u32 {
    size(12, 8, 6)
}

/// The finer layout of the full-range additions: under miri 4 (full range: 950 cells; 3,800
/// at 6 in a full-size run, 14,600 at 8 natively).
fn fine_k() -> u32 {
    size(8, 6, 4)
}

/// The most values a property records: 200, 40 in CI's miri step.
fn max_values() -> usize {
    size(200, 200, 40)
}

/// The most values each side of the same-layout add records: 200, 12 in CI's miri step (what
/// it checks is where runs land, which a dozen buckets on each side reach).
fn few_values() -> usize {
    size(200, 200, 12)
}

/// The largest window of the windowed property: 2^16 cells, 2^12 in CI's miri step.
fn max_window() -> usize {
    size(1 << 16, 1 << 16, 1 << 12)
}

/// Values spread over all magnitudes, not just the uniform top of `u64`.
fn any_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0u32..64, any::<u64>()).prop_map(|(bits, v)| v >> bits),
        Just(0u64),
        Just(u64::MAX),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: size(2000, 8, 2), ..ProptestConfig::default() })]

    #[test]
    fn value_lies_in_its_bucket(layout in any_layout(), v in any_value()) {
        let i = layout.index_of(v);
        prop_assert!(i < layout.logical_len());
        prop_assert!(layout.lo(i) <= v);
        prop_assert!((v as u128) < layout.hi(i));
        prop_assert_eq!(layout.highest(i) as u128 + 1, layout.hi(i));
        // The midpoint is within the stated relative error of every member.
        let mid = layout.midpoint(i) as f64;
        let err = (mid - v as f64).abs() / (v as f64).max(1.0);
        prop_assert!(err <= layout.relative_error() * (1.0 + 1e-12), "v={} err={}", v, err);
    }

    #[test]
    fn indices_are_monotone_and_bounds_contiguous(layout in any_layout(), a in any_value(), b in any_value()) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(layout.index_of(lo) <= layout.index_of(hi));
        let i = layout.index_of(lo);
        if i + 1 < layout.logical_len() {
            prop_assert_eq!(layout.hi(i), layout.lo(i + 1) as u128);
        }
        prop_assert_eq!(layout.equivalent(lo, hi), layout.index_of(lo) == layout.index_of(hi));
        if let Some(next) = layout.next_non_equivalent(lo) {
            prop_assert_eq!(layout.index_of(next), i + 1);
        }
        prop_assert_eq!(layout.lowest_equivalent(lo), layout.lo(i));
        prop_assert_eq!(layout.median_equivalent(lo), layout.midpoint(i));
    }

    #[test]
    fn totals_are_exact_and_outside_split(
        k in 1u32..=max_k(),
        min in any_value(),
        span in any_value(),
        values in proptest::collection::vec(any_value(), 0..max_values()),
    ) {
        let layout = Layout::from_block_scale(k).unwrap();
        let max = min.saturating_add(span >> 8);
        let window = Window::new(layout, min, max).unwrap();
        if window.len() > max_window() {
            return Ok(());
        }
        let mut cells = vec![0u64; window.len()];
        let mut h = Histogram::with_storage(layout, &mut cells[..], window).unwrap();
        let (lo, hi) = (window.min_value(layout), window.max_value(layout));
        let (mut under, mut over, mut inside) = (0, 0, 0);
        for &v in &values {
            h.record(v);
            if v < lo { under += 1 } else if v > hi { over += 1 } else { inside += 1 }
        }
        prop_assert_eq!(h.underflow(), under);
        prop_assert_eq!(h.overflow(), over);
        prop_assert_eq!(h.total(), inside);
        prop_assert_eq!(h.total_with_outside(), values.len() as u64);
        // Every in-window value is in the bucket of its index.
        for &v in &values {
            if let Some(s) = window.storage_index(layout.index_of(v)) {
                prop_assert!(h.count_at(s) > 0);
            }
        }
    }

    #[test]
    fn bad_ranks_are_errors(rank in prop_oneof![Just(f64::NAN), -1e9f64..-1e-9, 100.000001f64..1e9]) {
        let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 100)]>::new(Layout::DEFAULT, 0, 100);
        h.record(5);
        prop_assert!(h.percentile(rank, EquivalentValue::Midpoint).is_err());
    }

    #[test]
    fn batch_percentiles_are_monotone(
        // In CI's miri step up to 60 values and 6 ranks: each rank's read walks the cells.
        values in proptest::collection::vec(0u64..1_000_000, 1..size(300, 300, 60)),
        ranks in proptest::collection::vec(0.0f64..=100.0, 1..size(20, 20, 6)),
    ) {
        let mut h = Histogram::<[u64; storage_len(Layout::DEFAULT, 0, 1_000_000)]>::new(Layout::DEFAULT, 0, 1_000_000);
        for &v in &values { h.record(v); }
        let mut out = vec![Percentile::default(); ranks.len()];
        h.percentiles(&ranks, EquivalentValue::Midpoint, &mut out).unwrap();
        for (i, a) in out.iter().enumerate() {
            prop_assert_eq!(*a, h.percentile(ranks[i], EquivalentValue::Midpoint).unwrap());
            for b in &out {
                if a.rank < b.rank { prop_assert!(a.value <= b.value); }
            }
        }
    }

    #[test]
    fn add_same_layout_is_exact(values in proptest::collection::vec(any_value(), 0..max_values()), min in 0u64..5000, max in 5000u64..1_000_000) {
        // Block scale 4 in CI's miri step (950 cells, not 1,900): each read retags them all.
        let layout = Layout::from_block_scale(size(6, 6, 4)).unwrap();
        let full = Window::full(layout);
        let mut all = vec![0u64; full.len()];
        let mut reference = Histogram::with_storage(layout, &mut all[..], full).unwrap();
        let window = Window::new(layout, min, max).unwrap();
        let mut cells = vec![0u64; window.len()];
        let mut part = Histogram::with_storage(layout, &mut cells[..], window).unwrap();
        for &v in &values { part.record(v); }
        reference.add(&part);
        prop_assert_eq!(reference.total_with_outside(), values.len() as u64);
        // Recording into the narrower window and adding back into the full one keeps every
        // in-window value in its bucket.
        let mut direct_cells = vec![0u64; full.len()];
        let mut direct = Histogram::with_storage(layout, &mut direct_cells[..], full).unwrap();
        for &v in &values { if part.window().storage_index(layout.index_of(v)).is_some() { direct.record(v); } }
        for s in 0..full.len() { prop_assert_eq!(direct.count_at(s), reference.count_at(s)); }
    }

    #[test]
    fn add_same_layout_lands_as_the_rebucketing_rule(
        source_values in proptest::collection::vec((any_value(), 1u64..40_000), 0..few_values()),
        target_values in proptest::collection::vec(any_value(), 0..few_values()),
        source_range in (0u64..20_000, 20_000u64..2_000_000),
        target_range in (0u64..40_000, 10_000u64..1_000_000),
    ) {
        // The same-layout add takes the source's runs slice into slice; the general rule
        // (`for_each_landing`, bucket by bucket) is the oracle. Windows that overlap in any
        // way, a target already holding counts, and u16 cells that saturate.
        let layout = Layout::from_block_scale(size(6, 6, 4)).unwrap();
        let source_window = Window::new(layout, source_range.0, source_range.1).unwrap();
        let (lo, hi) = (target_range.0.min(target_range.1), target_range.0.max(target_range.1));
        let target_window = Window::new(layout, lo, hi).unwrap();
        let mut source_cells = vec![0u64; source_window.len()];
        let mut source = Histogram::with_storage(layout, &mut source_cells[..], source_window).unwrap();
        for &(v, n) in &source_values { source.record_n(v, n); }
        let mut target_cells = vec![0u16; target_window.len()];
        let mut target = Histogram::with_storage(layout, &mut target_cells[..], target_window).unwrap();
        for &v in &target_values { target.record(v); }

        let mut expected: Vec<u64> = (0..target_window.len()).map(|s| target.count_at(s)).collect();
        let (mut under, mut over) = (target.underflow(), target.overflow());
        picollo_core::histogram::for_each_landing(&source, layout, target_window, |landing, n| {
            match landing {
                picollo_core::histogram::Landing::Slot(s) => {
                    expected[s] = (expected[s] + n).min(u64::from(u16::MAX));
                }
                picollo_core::histogram::Landing::Underflow => under += n,
                picollo_core::histogram::Landing::Overflow => over += n,
            }
        });
        prop_assert_eq!(target.add(&source), picollo_core::Rebucketing::Exact);
        prop_assert_eq!((target.underflow(), target.overflow()), (under, over));
        let got: Vec<u64> = (0..target_window.len()).map(|s| target.count_at(s)).collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn add_into_coarser_is_exact(values in proptest::collection::vec(any_value(), 0..max_values())) {
        let fine = Layout::from_block_scale(fine_k()).unwrap();
        let coarse = Layout::from_block_scale(fine_k() - 3).unwrap();
        let mut fine_cells = vec![0u64; fine.logical_len()];
        let mut f = Histogram::with_storage(fine, &mut fine_cells[..], Window::full(fine)).unwrap();
        let mut direct_cells = vec![0u64; coarse.logical_len()];
        let mut direct = Histogram::with_storage(coarse, &mut direct_cells[..], Window::full(coarse)).unwrap();
        for &v in &values { f.record(v); direct.record(v); }
        let mut added_cells = vec![0u64; coarse.logical_len()];
        let mut added = Histogram::with_storage(coarse, &mut added_cells[..], Window::full(coarse)).unwrap();
        prop_assert_eq!(added.add(&f), picollo_core::Rebucketing::Exact);
        prop_assert_eq!(added_cells, direct_cells);
    }

    #[test]
    fn add_into_finer_respects_bound(v in 1u64..u64::MAX) {
        let coarse = Layout::from_block_scale(4).unwrap();
        let fine = Layout::from_block_scale(fine_k() + 1).unwrap();
        let mut c_cells = vec![0u64; coarse.logical_len()];
        let mut c = Histogram::with_storage(coarse, &mut c_cells[..], Window::full(coarse)).unwrap();
        c.record(v);
        let mut f_cells = vec![0u64; fine.logical_len()];
        let mut f = Histogram::with_storage(fine, &mut f_cells[..], Window::full(fine)).unwrap();
        let picollo_core::Rebucketing::Approximate { error_bound } = f.add(&c) else { panic!("expected approximate") };
        let got = f.percentile(100.0, EquivalentValue::Midpoint).unwrap().value as f64;
        prop_assert!((got - v as f64).abs() / v as f64 <= error_bound + 1e-12);
    }
}

#[test]
fn exhaustive_small_histograms() {
    // Every value 0..2^14 into every small block scale: counts land in exactly one bucket and
    // the percentile of the n-th value is the n-th value's bucket.
    for k in 1..=5 {
        let layout = Layout::from_block_scale(k).unwrap();
        let window = Window::new(layout, 0, 1 << 14).unwrap();
        let mut cells = vec![0u32; window.len()];
        let mut h = Histogram::with_storage(layout, &mut cells[..], window).unwrap();
        let n = size(1 << 14, 300, 300);
        for v in 0..n {
            h.record(v);
        }
        assert_eq!(h.total(), n);
        for v in (0..n).step_by(37) {
            let rank = (v + 1) as f64 / n as f64 * 100.0;
            let p = h.percentile(rank, EquivalentValue::Upper).unwrap();
            assert!(layout.equivalent(p.value, v) || p.value >= v, "k={k} v={v}");
            assert!(p.lo <= v.max(p.lo));
        }
    }
}

#[test]
fn window_errors() {
    assert_eq!(
        Window::new(Layout::DEFAULT, 10, 5),
        Err(WindowError::MinAboveMax { min: 10, max: 5 })
    );
}
