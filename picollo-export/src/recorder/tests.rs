//! The recorder's tests: the float-to-bucket map against the integer conversion, and the
//! recorder's registration, scaling and caching.

use super::handle_cache::same_key;
use super::*;
use picollo_alloc::HistogramBuilder;
use picollo_core::HistogramRead;
use proptest::prelude::*;

/// The slot recording through the integer conversion gives `v`, if inside the window.
fn converted_slot(layout: Layout, window: Window, v: f64) -> Option<usize> {
    if v.is_nan() {
        return None;
    }
    window.storage_index(layout.index_of(v as u64))
}

fn check(layout: Layout, window: Window, v: f64) -> Result<(), TestCaseError> {
    let buckets = FloatBuckets::new(layout);
    // The position (sparse storage's path): every value in [B, 2^64), as the layout places
    // its integer part; nothing else.
    let b = (1u64 << layout.block_scale()) as f64;
    match buckets.position(v) {
        Some(pos) => {
            prop_assert!(v >= b && v < TWO_63 * 2.0, "value {}", v);
            prop_assert_eq!(pos, layout.position(v as u64), "value {}", v);
        }
        None => prop_assert!(!(v >= b && v < TWO_63 * 2.0), "value {}", v),
    }
    // Where the window stores that value, the position lands on its cell: the bucket the
    // converted value's integer part gets.
    if let (Some(pos), Some(slot)) = (buckets.position(v), converted_slot(layout, window, v)) {
        prop_assert_eq!(
            window.storage_index(pos.logical(layout.block_scale())),
            Some(slot)
        );
    }
    Ok(())
}

fn windows() -> impl Strategy<Value = (Layout, Window)> {
    (1u32..=20, any::<u64>(), any::<u64>()).prop_map(|(k, a, b)| {
        let layout = Layout::from_block_scale(k).unwrap();
        let (lo, hi) = (a.min(b), a.max(b));
        // Half full windows from 0 (the recorder's), half arbitrary.
        let lo = if a % 2 == 0 { 0 } else { lo };
        (layout, Window::new(layout, lo, hi).unwrap())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Any bit pattern: NaNs, infinities, negatives, subnormals, everything.
    #[test]
    fn float_slot_matches_conversion_for_any_bits((layout, window) in windows(), bits in any::<u64>()) {
        check(layout, window, f64::from_bits(bits))?;
    }

    /// Values spread over every power of two of u64, and integers exactly.
    #[test]
    fn float_slot_matches_conversion_for_u64_range(
        (layout, window) in windows(),
        x in any::<u64>(),
        shift in 0u32..64,
        frac in 0.0f64..1.0,
    ) {
        let int = x >> shift;
        check(layout, window, int as f64)?;
        check(layout, window, int as f64 + frac)?;
        check(layout, window, (int as f64) * (1.0 - f64::EPSILON))?;
    }
}

#[test]
fn same_key_by_address_or_by_value() {
    static LABELS: [metrics::Label; 1] = [metrics::Label::from_static_parts("route", "/a")];
    static KEY: Key = Key::from_static_parts("latency", &LABELS);
    let owned = Key::from_parts(
        "latency".to_string(),
        vec![metrics::Label::new("route", "/a".to_string())],
    );
    let other = Key::from_parts(
        "latency".to_string(),
        vec![metrics::Label::new("route", "/b".to_string())],
    );
    let unlabelled = Key::from_static_name("latency");
    assert!(same_key(&KEY.clone(), &KEY));
    assert!(same_key(&owned, &KEY) && same_key(&KEY, &owned));
    assert!(!same_key(&other, &KEY) && !same_key(&KEY, &other));
    assert!(!same_key(&unlabelled, &KEY) && !same_key(&KEY, &unlabelled));
}

#[test]
fn float_slot_edges() {
    let layout = Layout::from_block_scale(7).unwrap();
    let full = Window::full(layout);
    for w in [full, Window::new(layout, 1_000, 1_000_000).unwrap()] {
        for v in [
            0.0,
            -0.0,
            1.0,
            127.0,
            127.999,
            128.0,
            255.5,
            256.0,
            999.0,
            1_000.0,
            1_000_000.0,
            1_000_001.0,
            1e18,
            TWO_63,
            TWO_63 * 2.0,
            f64::MAX,
            f64::INFINITY,
            -1.0,
            -1e300,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            check(layout, w, v).unwrap();
        }
    }
    // The last bucket of u64 is fast; 2^64 is not.
    let b = FloatBuckets::new(layout);
    let at = |v: f64| b.position(v).and_then(|p| full.storage_index(p.logical(7)));
    assert_eq!(at(18_446_744_073_709_549_568.0), Some(full.len() - 1));
    assert_eq!(b.position(TWO_63 * 2.0), None);
    assert_eq!(b.position(127.0), None);
    assert_eq!(at(128.0), Some(128));
}

proptest! {
    /// Valid names are copied as they are, others made valid: the same names as character
    /// by character.
    #[test]
    fn sanitize_copies_valid_names_and_mends_others(
        name in "[_:a-z0-9é.-]{0,8}|[a-z_][a-z0-9_]{0,12}|__[a-z:]{0,4}",
        colon in any::<bool>(),
    ) {
        prop_assert_eq!(sanitize(&name, colon), sanitize_chars(&name, colon));
    }
}

#[test]
fn sanitize_mends_invalid_names() {
    assert_eq!(sanitize("9queue-depth", true), "_9queue_depth");
    assert_eq!(sanitize("__route", false), "_route");
    assert_eq!(sanitize("__name", true), "__name");
    assert_eq!(sanitize("a:b", false), "a_b");
    assert_eq!(sanitize("", true), "_");
    assert_eq!(sanitize("rpc_latency", true), "rpc_latency");
}

/// What `HistogramBuilder` makes of `config`, as the recorder made each series before it
/// resolved the configuration once: the layout, window and bytes of the histogram.
fn built_by_the_builder(config: &RecorderBuilder) -> Result<(Layout, Window, usize), BuildError> {
    fn seen(h: &(impl HistogramRead + ?Sized), bytes: usize) -> (Layout, Window, usize) {
        (h.layout(), h.window(), bytes)
    }
    let builder = HistogramBuilder::new()
        .layout(config.layout)
        .max_trackable(config.max_trackable);
    let unit = config.layout.unit_magnitude() != 0;
    let with_unit = || builder.lowest_discernible(config.layout.unit());
    Ok(match (config.kind, config.dense, unit) {
        (HistogramKind::ThreadLocal, true, _) => {
            let h = builder.dense().thread_local()?;
            seen(&h, h.footprint())
        }
        (HistogramKind::ThreadLocal, false, _) => {
            let h = builder.thread_local()?;
            seen(&h, h.footprint())
        }
        (HistogramKind::Atomic, true, false) => {
            let h = builder.dense().atomic()?;
            seen(&h, h.footprint())
        }
        (HistogramKind::Atomic, false, false) => {
            let h = builder.atomic()?;
            seen(&h, h.footprint())
        }
        (HistogramKind::Atomic, true, true) => {
            let h = with_unit().dense().atomic()?;
            seen(&h, h.footprint())
        }
        (HistogramKind::Atomic, false, true) => {
            let h = with_unit().atomic()?;
            seen(&h, h.footprint())
        }
    })
}

/// Each series is made from the configuration resolved once ([`Kinded::resolve`]), and
/// `build` and `series_footprint` check and measure a configuration without making a
/// histogram: what they find is what `HistogramBuilder` makes of it (the same layout,
/// window and bytes, the same error), for every kind, storage, layout with and without a
/// unit, and window.
#[test]
fn made_as_the_builder_makes_them() {
    let layouts = [
        Layout::from_block_scale(7).unwrap(),
        Layout::from_block_scale(4).unwrap(),
        Layout::from_block_scale(7)
            .unwrap()
            .with_lowest_discernible(1000)
            .unwrap(),
    ];
    let (mut made, mut refused) = (0, 0);
    for layout in layouts {
        for max in [u64::MAX, 1 << 30, 3, 0] {
            for kind in [HistogramKind::Atomic, HistogramKind::ThreadLocal] {
                for dense in [true, false] {
                    let config = RecorderBuilder::new()
                        .layout(layout)
                        .max_trackable(max)
                        .kind(kind);
                    let config = if dense { config.dense() } else { config };
                    let what = format!("{layout:?} up to {max}, {kind:?}, dense {dense}");
                    let expected = built_by_the_builder(&config);
                    let key = Key::from_name("t");
                    let made_here = Kinded::resolve(&config)
                        .and_then(|r| Kinded::new(&config, r, &Counter::default(), &key))
                        .map(|k| {
                            let h = k.read();
                            (h.layout(), h.window(), k.footprint())
                        });
                    assert_eq!(made_here, expected, "{what}");
                    assert_eq!(
                        config.series_footprint(),
                        expected.map(|(_, _, bytes)| bytes),
                        "{what}"
                    );
                    if made_here.is_ok() {
                        made += 1;
                    } else {
                        refused += 1;
                    }
                }
            }
        }
    }
    // Both outcomes were compared: the unit layout's thread-local series are refused.
    assert!(made >= 16 && refused >= 8, "{made} made, {refused} refused");
}

/// What the index tests register: a key and who made it.
#[derive(Clone)]
struct Made(Arc<Key>, usize);

impl index::Keyed for Made {
    fn key(&self) -> &Key {
        &self.0
    }
}

/// Four threads ask for the same eight new keys at once: some keys are made by several
/// threads, but each is put in once (one call per key says it put its value in, on the
/// thread that made that value), and every thread gets that value.
#[test]
fn an_index_puts_each_key_in_once_across_threads() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let index = index::Index::<Made>::default();
    let (made, put_in) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let keys: Vec<Key> = (0..8)
        .map(|i| Key::from_parts("k", vec![metrics::Label::new("i", i.to_string())]))
        .collect();
    let start = std::sync::Barrier::new(4);
    let got: Vec<Vec<usize>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (index, made, put_in, keys, start) = (&index, &made, &put_in, &keys, &start);
                s.spawn(move || {
                    start.wait();
                    keys.iter()
                        .map(|key| {
                            let make = || {
                                made.fetch_add(1, Relaxed);
                                Some(Made(Arc::new(key.clone()), t))
                            };
                            let (v, put_in_here) = index.get_or_make(key, make).expect("made");
                            if put_in_here {
                                assert_eq!(v.1, t, "put in by the thread that made it");
                                put_in.fetch_add(1, Relaxed);
                            }
                            assert_eq!(*v.0, *key);
                            v.1
                        })
                        .collect()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(put_in.into_inner(), keys.len());
    assert!(made.into_inner() >= keys.len());
    for other in &got[1..] {
        assert_eq!(other, &got[0], "every thread got the value put in per key");
    }
}

/// A `make` that makes nothing, or unwinds, leaves nothing behind: the next caller makes the
/// key, and what it made is kept (put in by that call, and only by it).
#[test]
fn a_key_made_of_nothing_is_made_again() {
    let index = index::Index::<Made>::default();
    let key = Key::from_name("k");
    assert!(index.get_or_make(&key, || None).is_none());
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        index.get_or_make(&key, || panic!("the registration fails"))
    }));
    assert!(unwound.is_err());
    let made = |who| move || Some(Made(Arc::new(Key::from_name("k")), who));
    assert_eq!(
        index
            .get_or_make(&key, made(7))
            .map(|(m, put_in)| (m.1, put_in)),
        Some((7, true))
    );
    assert_eq!(
        index
            .get_or_make(&key, made(8))
            .map(|(m, put_in)| (m.1, put_in)),
        Some((7, false))
    );
}
