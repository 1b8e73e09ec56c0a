//! The fills and the octave tables against their definitions.

use super::*;
use crate::schema::{MAX_SCHEMA, MIN_SCHEMA};
use picollo_core::HistogramRead;
use proptest::prelude::*;

fn check(map: &OctaveMap, logical: usize) {
    let m = map.mapping;
    assert_eq!(
        map.map(logical),
        (m.native_index(logical), m.is_exact(logical)),
        "{m:?}, bucket {logical} [{}, {}]",
        m.layout().lo(logical),
        m.layout().highest(logical)
    );
}

/// Every bucket of every layout up to block scale 10, at every schema.
#[test]
fn octave_map_matches_mapping_everywhere() {
    for k in 1..=10 {
        let layout = Layout::from_block_scale(k).unwrap();
        for n in MIN_SCHEMA..=MAX_SCHEMA {
            let map = OctaveMap::new(Mapping::new(layout, Schema::new(n).unwrap()));
            for logical in 0..layout.logical_len() {
                check(&map, logical);
            }
        }
    }
}

/// The fill as the definitions read, bucket by bucket: the oracle of the fast paths.
fn reference(h: &dyn HistogramRead, mapping: Mapping) -> NativeHistogram {
    let (layout, window, schema) = (h.layout(), h.window(), mapping.schema());
    let mut n = NativeHistogram::new(schema);
    let mut sum = SumEstimate::default();
    let add = |n: &mut NativeHistogram, index: Option<i32>, c: u64| {
        n.count = n.count.saturating_add(c);
        match index {
            None => n.zero_count = n.zero_count.saturating_add(c),
            Some(i) => match n.buckets.iter_mut().find(|b| b.0 == i) {
                Some(b) => b.1 = b.1.saturating_add(c),
                None => n.buckets.push((i, c)),
            },
        }
    };
    if h.underflow() != 0 {
        let edge = window.min_value(layout);
        add(&mut n, schema.index_of(edge), h.underflow());
        sum.add_outside(edge, h.underflow());
        n.outside += h.underflow();
    }
    for slot in 0..window.len() {
        let c = h.count_at(slot);
        if c == 0 {
            continue;
        }
        let logical = window.first() + slot;
        add(&mut n, mapping.native_index(logical), c);
        sum.add_bucket(layout, logical, c);
        if !mapping.is_exact(logical) {
            n.straddling = n.straddling.saturating_add(c);
        }
    }
    if h.overflow() != 0 {
        let edge = window.max_value(layout);
        add(&mut n, schema.index_of(edge), h.overflow());
        sum.add_outside(edge, h.overflow());
        n.outside += h.overflow();
    }
    n.buckets.sort_by_key(|b| b.0);
    (n.sum, n.sum_is_exact) = sum.finish();
    n
}

/// A `HistogramRead` with only the required methods and `sum_range`: it reads through
/// the trait's default `recorded_runs`.
struct Defaults<'a, H>(&'a H);

impl<H: HistogramRead> HistogramRead for Defaults<'_, H> {
    fn layout(&self) -> Layout {
        self.0.layout()
    }
    fn window(&self) -> picollo_core::Window {
        self.0.window()
    }
    fn count_at(&self, storage_index: usize) -> u64 {
        self.0.count_at(storage_index)
    }
    fn underflow(&self) -> u64 {
        self.0.underflow()
    }
    fn overflow(&self) -> u64 {
        self.0.overflow()
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        self.0.sum_range(start, end)
    }
}

/// Every kind's bulk read fills as the oracle: plain storage, snapshots, atomic,
/// approximate and thread-local histograms, wrappers, and the trait's default.
fn check_fill(k: u32, schema: i8, lo: u64, hi: u64, values: &[(u64, u64)]) {
    use picollo_alloc::{HistogramBuilder, Snapshot};
    use picollo_core::Window;
    let layout = Layout::from_block_scale(k).unwrap();
    let window = Window::new(layout, lo.min(hi), lo.max(hi)).unwrap();
    let mapping = Mapping::new(layout, Schema::new(schema).unwrap());
    let mut plain = HistogramBuilder::new()
        .layout(layout)
        .window(window)
        .dense()
        .plain()
        .unwrap();
    let atomic = HistogramBuilder::new()
        .layout(layout)
        .window(window)
        .dense()
        .atomic()
        .unwrap();
    let local = HistogramBuilder::new()
        .layout(layout)
        .window(window)
        .u32_storage()
        .dense()
        .thread_local()
        .unwrap();
    for &(v, c) in values {
        plain.record_n(v, c);
        atomic.record_n(v, c);
        local.record_n(v, c);
    }
    let expected = reference(&plain, mapping);
    let mut n = NativeHistogram::default();
    n.fill_from(&plain, mapping);
    assert_eq!(n, expected, "plain");
    n.fill_from(&Snapshot::new(&plain), mapping);
    assert_eq!(n, expected, "snapshot");
    n.fill_from(&atomic, mapping);
    assert_eq!(n, expected, "atomic");
    n.fill_from(&local, mapping);
    assert_eq!(n, expected, "thread-local");
    n.fill_from(&crate::Summed::new(&local), mapping);
    assert_eq!(n, expected, "summed");
    n.fill_from(&Defaults(&plain), mapping);
    assert_eq!(n, expected, "the default bulk read");
    n.fill_from(&(&plain as &dyn HistogramRead), mapping);
    assert_eq!(n, expected, "dyn");
    // Counts below the approximate kind's exact threshold are exact.
    let approx = picollo_core::approx::ApproxHistogram::with_storage(
        layout,
        picollo_alloc::HeapStorage::with_len(
            window.len(),
            picollo_core::scalable::ScalableCell::new,
        ),
        window,
    )
    .unwrap();
    let mut rng = picollo_core::scalable::XorShift::new(1);
    let mut capped = HistogramBuilder::new()
        .layout(layout)
        .window(window)
        .dense()
        .plain()
        .unwrap();
    for &(v, c) in values {
        approx.record_n(v, c.min(8), &mut rng);
        capped.record_n(v, c.min(8));
    }
    n.fill_from(&approx, mapping);
    assert_eq!(n, reference(&capped, mapping), "approximate");

    // Sparse storage (the builder's default), against dense storage of its window (widened to
    // whole blocks): plain, atomic and thread-local.
    let builder = picollo_alloc::HistogramBuilder::new()
        .layout(layout)
        .min_trackable(lo.min(hi))
        .max_trackable(lo.max(hi));
    let mut sparse = builder.plain().unwrap();
    let sparse_atomic = builder.atomic().unwrap();
    let sparse_local = builder.u32_storage().thread_local().unwrap();
    let mut wide = HistogramBuilder::new()
        .layout(layout)
        .window(sparse.window())
        .dense()
        .plain()
        .unwrap();
    for &(v, c) in values {
        sparse.record_n(v, c);
        sparse_atomic.record_n(v, c);
        sparse_local.record_n(v, c);
        wide.record_n(v, c);
    }
    let expected = reference(&wide, mapping);
    n.fill_from(&sparse, mapping);
    assert_eq!(n, expected, "sparse plain");
    n.fill_from(&sparse_atomic, mapping);
    assert_eq!(n, expected, "sparse atomic");
    n.fill_from(&sparse_local, mapping);
    assert_eq!(n, expected, "sparse thread-local");
}

#[test]
fn fills_match_the_oracle_on_full_range_data() {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let values: Vec<(u64, u64)> = (0..3_000)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> (s % 64), 1 + i % 3)
        })
        .chain([(0, 5), (u64::MAX, 2), (1, 1), (2, 1)])
        .collect();
    for k in [1, 3, 7, 9, 12, 14, 15] {
        for schema in [-4, -1, 0, 1, 3, 7, 8] {
            check_fill(k, schema, 0, u64::MAX, &values);
            check_fill(k, schema, 1_000, 1 << 40, &values);
        }
    }
}

proptest! {
    /// Random layouts, schemas, windows and values (with outside ones).
    #[test]
    fn fills_match_the_oracle(
        k in 1u32..=16,
        schema in MIN_SCHEMA..=MAX_SCHEMA,
        lo in any::<u64>(),
        hi in any::<u64>(),
        raw in proptest::collection::vec((any::<u64>(), 0u32..64, 1u64..1_000), 0..200),
    ) {
        let values: Vec<(u64, u64)> = raw.into_iter().map(|(v, s, c)| (v >> s, c)).collect();
        let (lo, hi) = (lo >> (lo % 64), hi >> (hi % 64));
        check_fill(k, schema, lo, hi, &values);
    }

    /// Larger block scales (tables up to 14, direct computation above), sampled.
    #[test]
    fn octave_map_matches_mapping_sampled(k in 11u32..=20, n in MIN_SCHEMA..=MAX_SCHEMA, x in any::<u64>(), shift in 0u32..64) {
        let layout = Layout::from_block_scale(k).unwrap();
        let map = OctaveMap::new(Mapping::new(layout, Schema::new(n).unwrap()));
        let logical = layout.index_of(x >> shift);
        for l in logical.saturating_sub(2)..(logical + 2).min(layout.logical_len()) {
            check(&map, l);
        }
    }
}
