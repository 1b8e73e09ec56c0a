//! Bucket math and recording on arbitrary input: any block scale, window and values. Checks
//! the layout invariants, exact accounting of underflow/overflow, and that no read panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_core::prelude::*;
use picollo_core::{iter::IterationValue, Window};

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let k = data[0] as u32 % 14;
    let Some(layout) = Layout::from_block_scale(k) else {
        return;
    };
    let a = u64::from_le_bytes(data[1..9].try_into().unwrap());
    let b = u64::from_le_bytes(data[9..17].try_into().unwrap());
    let (min, max) = (a.min(b), a.max(b));
    let Ok(window) = Window::new(layout, min, max) else {
        return;
    };
    if window.len() > 1 << 18 {
        return;
    }
    let mut cells = vec![0u32; window.len()];
    let mut h = Histogram::with_storage(layout, &mut cells[..], window).unwrap();
    let (lo, hi) = (window.min_value(layout), window.max_value(layout));
    let (mut under, mut over, mut inside) = (0u64, 0u64, 0u64);
    for chunk in data[17..].chunks_exact(8) {
        let v = u64::from_le_bytes(chunk.try_into().unwrap());
        let i = layout.index_of(v);
        assert!(layout.lo(i) <= v && (v as u128) < layout.hi(i));
        assert!(
            (layout.midpoint(i) as f64 - v as f64).abs() / (v as f64).max(1.0)
                <= layout.relative_error() * (1.0 + 1e-12)
        );
        match v {
            v if v < lo => under += 1,
            v if v > hi => over += 1,
            _ => inside += 1,
        }
        h.record(v);
        // The corrected record is bounded however hostile the interval is.
        if v % 7 == 0 {
            let before = h.total_with_outside();
            h.record_corrected(v, v >> (v % 64));
            assert!(h.total_with_outside() > before);
            h.reset();
            under = 0;
            over = 0;
            inside = 0;
        }
    }
    assert_eq!((h.underflow(), h.overflow(), h.total()), (under, over, inside));
    let ranks = [0.0, 50.0, 99.9, 100.0];
    let mut out = [Percentile::default(); 4];
    match h.percentiles(&ranks, EquivalentValue::Midpoint, &mut out) {
        Ok(()) => assert!(out.windows(2).all(|w| w[0].value <= w[1].value)),
        Err(_) => assert_eq!(inside, 0),
    }
    let steps: u64 = h
        .percentile_ticks(2)
        .map(|it| it.take(10_000).map(|v: IterationValue| v.count_added_in_this_step).sum())
        .unwrap_or(0);
    assert!(steps <= inside);
    let _ = h.stats();
});
