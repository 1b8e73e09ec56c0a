//! HdrHistogram data through Picollo histograms, on the public vectors
//! (`tests/vectors/hdrhistogram/`, whose README lists the values the reference
//! implementations assert), plus round-trip and bound properties.
//!
//! # Picollo's mapping and its agreement with HdrHistogram
//!
//! HdrHistogram's `new Histogram(3)` (3 significant digits, lowest discernible value 1) has
//! 2048 sub-buckets and unit magnitude 0: it is Picollo's layout with block scale 10
//! (`B = 1024`), index for index. The jHiccup intervals are 2-digit histograms with lowest
//! discernible value 20 000 (unit magnitude 14, buckets `2^14` wide and wider); accumulating
//! them, Java's `add` records each source bucket at its lowest equivalent value, and Picollo's
//! [`add_hdr`] does the same into the block-scale-10 histogram. As the target indexes exactly
//! like Java's accumulator, the agreement is **exact**: the same counts in every bucket, so the
//! same total (48 761), the same p99.9 with [`EquivalentValue::Upper`] (1 745 879 039, Java's
//! `getValueAtPercentile(99.9)`) and the same max (1 796 210 687). Against the original
//! (unknown) values the bound is the source's resolution: every reported value lies in its
//! 2-digit source bucket, a relative error below `2^-7` (checked below from [`Import`]).

use picollo_alloc::hdr::interop::{
    self, finer_significant_digits, layout_for, significant_digits_for, window_for,
};
use picollo_alloc::hdr::{
    add_hdr, export, export_v2_deflate, export_v2_into, from_picollo, to_picollo, to_picollo_in,
    ExportOptions, HdrCounts, HdrGeometry, Import, BEST_COMPRESSION,
};
use picollo_alloc::{HeapHistogram, HistogramBuilder};
use picollo_core::{EquivalentValue, HistogramRead, Layout, ReadExt, Window};
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

mod common;
use common::{hdr_answers, hdr_sum, open_log, read_vector, JHICCUP, TAGGED};

/// The largest block scale the properties draw. Under miri 7 in `.ci/miri-full`: a full-range
/// histogram at block scale 14 has 835,000 cells (each pass over them takes minutes there), at
/// 7 it has 7,400. In CI's miri run 4 (960 cells; a case at 7 took up to 40 s there).
fn max_k() -> u32 {
    size(14, 7, 4)
}

#[path = "common/miri_cases.rs"]
mod miri_cases;
use miri_cases::cases;

/// Every interval of a log, or in CI's miri run the first two (each decode and accumulation
/// costs seconds there); the known answers over the whole log are checked natively and in
/// `.ci/miri-full`, the CI form checks against HdrHistogram's accumulation of the same
/// intervals.
fn intervals_read() -> usize {
    size(usize::MAX, usize::MAX, 2)
}

/// Picollo's twin of HdrHistogram's `new Histogram(3)`.
fn sigfig3_layout() -> Layout {
    layout_for(&HdrGeometry::new(1, i64::MAX as u64, 3).unwrap())
}

/// A full-range Picollo histogram at the sigfig-3 layout; in CI's miri run one whose window
/// ends at `highest` (the full range's 56,320 cells take 7 s to create there, and each pass over
/// them seconds: 13 s of `count_at`, 28 s of export).
fn sigfig3_histogram(highest: u64) -> HeapHistogram<u64> {
    let layout = sigfig3_layout();
    let builder = HistogramBuilder::new().layout(layout);
    let builder = if size(false, false, true) {
        builder.window(Window::new(layout, 0, highest).unwrap())
    } else {
        builder
    };
    builder.dense().plain().unwrap()
}

/// Accumulates log entries (optionally only those with `tag`; at most `most` of them) into a
/// sigfig-3 Picollo histogram and, for comparison, into [`HdrCounts`] (picollo-alloc's model of
/// HdrHistogram's counts array, checked against the `hdrhistogram` crate in hdr_differential
/// and hdr_vectors) with its `add`, HdrHistogram's rule.
fn accumulate(
    name: &str,
    tag: Option<Option<&str>>,
    most: usize,
) -> (HeapHistogram<u64>, HdrCounts, Import, usize) {
    // In CI's miri run to 2^22 (13,312 cells): the first two intervals of both logs stay
    // below (2.77 ms at most).
    let mut h = sigfig3_histogram((1 << 22) - 1);
    let mut hdr = HdrCounts::new(1, i64::MAX as u64, 3).unwrap();
    let mut import = Import::default();
    let mut intervals = 0;
    for e in open_log(name) {
        if intervals == most {
            break;
        }
        let e = e.unwrap();
        if tag.is_some_and(|t| e.tag.as_deref() != t) {
            continue;
        }
        let counts = e.decode().unwrap();
        import.merge(&add_hdr(&mut h, &counts).unwrap());
        hdr.add(&counts).unwrap();
        intervals += 1;
    }
    (h, hdr, import, intervals)
}

/// The blobs of the entries [`accumulate`] reads (`tag` and `most` as there), for the
/// `hdrhistogram` crate's answers over them ([`hdr_sum`]).
fn payloads(name: &str, tag: Option<Option<&str>>, most: usize) -> Vec<String> {
    open_log(name)
        .map(Result::unwrap)
        .filter(|e| tag.is_none_or(|t| e.tag.as_deref() == t))
        .take(most)
        .map(|e| e.payload_base64)
        .collect()
}

/// The Picollo histogram holds exactly the HdrHistogram counts, index for index.
fn assert_same_buckets(h: &HeapHistogram<u64>, hdr: &HdrCounts) {
    assert_eq!(h.window().first(), 0);
    let len = h.window().len().max(hdr.counts.len());
    for i in 0..len {
        let expected = hdr.counts.get(i).copied().unwrap_or(0);
        assert_eq!(h.count_at(i), expected, "bucket {i}");
    }
}

fn upper(h: &impl HistogramRead, rank: f64) -> u64 {
    h.percentile(rank, EquivalentValue::Upper).unwrap().value
}

/// The 62 jHiccup intervals accumulated into Picollo: total 48 761, p99.9 (upper equivalent
/// value) 1 745 879 039 and max 1 796 210 687, as Java and C assert. Exact agreement with
/// HdrHistogram's accumulation, bucket for bucket (see the module docs for the mapping).
#[test]
fn jhiccup_log_through_picollo() {
    // In CI's miri run the first 2 intervals (see `intervals_read`).
    let most = intervals_read();
    let (h, hdr, import, intervals) = accumulate(JHICCUP, None, most);
    // Java's answers over the whole log; over the first intervals, HdrHistogram's (the
    // `hdrhistogram` crate's sum of their blobs).
    let (total, p999, max) = if most == usize::MAX {
        assert_eq!(intervals, 62);
        (48_761, 1_745_879_039, 1_796_210_687)
    } else {
        assert_eq!(intervals, most);
        hdr_answers(3, payloads(JHICCUP, None, most).iter().map(String::as_str))
    };
    assert_eq!(h.total(), total);
    assert_eq!((h.underflow(), h.overflow()), (0, 0));
    assert_eq!(upper(&h, 99.9), p999);
    assert_eq!(h.max(), Some(max));
    assert_same_buckets(&h, &hdr);
    // The HdrHistogram-format accumulation, read in place through Picollo's read model.
    let view = interop::view(&hdr).unwrap();
    assert_eq!(view.total(), total);
    assert_eq!(upper(&view, 99.9), p999);
    assert_eq!(view.max(), Some(max));

    // The bound against the original values: inside the 2-digit source buckets.
    assert_eq!(import.total, total);
    assert!(!import.mapping.index_for_index);
    assert!(!import.mapping.is_exact());
    assert!(import.mapping.max_relative_error < 1.0 / 128.0);
    assert!(import.mapping.max_relative_error > 0.0);
    // Below 128 · 2^14 the 2-digit histograms have an absolute resolution of 2^14.
    assert_eq!(import.mapping.max_linear_error, (1 << 14) - 1);
    assert_eq!((import.underflow, import.overflow), (0, 0));

    // Every percentile agrees with HdrHistogram's rule (HdrCounts') where the two rank rules
    // agree. In CI's miri run the first and last ranks (0 and 100; each rank walks both sides
    // there, 4 s).
    let ranks = [0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0];
    for rank in ranks.into_iter().step_by(size(1, 1, 8)) {
        assert_eq!(
            Some(upper(&h, rank)),
            hdr.value_at_percentile(rank),
            "p{rank}"
        );
    }
}

/// The same log at the interval's own layout (block scale 7, `layout_for` the 2-digit
/// geometry): a different, coarser histogram, still within the stated bound of HdrHistogram's
/// answer.
#[test]
fn jhiccup_at_the_source_layout() {
    // In CI's miri run the first 2 intervals (see `intervals_read`), against HdrHistogram's
    // accumulation of them at their 2-digit geometry (the `hdrhistogram` crate's sum of their
    // blobs, added into a decoded copy of the first).
    let most = intervals_read();
    let reference = (most != usize::MAX).then(|| {
        let blobs = payloads(JHICCUP, None, most);
        let first = common::hdr_decode(&blobs[0]);
        hdr_sum(first, blobs[1..].iter().map(String::as_str))
    });
    let mut acc: Option<HeapHistogram<u64>> = None;
    let mut import = Import::default();
    for e in open_log(JHICCUP).take(most) {
        let counts = e.unwrap().decode().unwrap();
        let g = counts.geometry().unwrap();
        let h = acc.get_or_insert_with(|| {
            HistogramBuilder::new()
                .layout(layout_for(&g))
                .window(window_for(&g))
                .dense()
                .plain()
                .unwrap()
        });
        assert_eq!(h.layout().block_size(), 128);
        import.merge(&add_hdr(h, &counts).unwrap());
    }
    let h = acc.unwrap();
    // Unit magnitude 14, same sub-bucket count: every source bucket at or above 2^(7+14) is
    // exactly one Picollo bucket; only the 2^14-wide buckets below split.
    assert_eq!(import.mapping.max_relative_error, 0.0, "{import:?}");
    assert_eq!(import.mapping.max_linear_error, (1 << 14) - 1);
    assert_eq!(import.mapping.max_abs_error, (1 << 14) - 1);
    let p = upper(&h, 99.9);
    if let Some(reference) = reference {
        assert_eq!(h.total(), reference.len());
        assert_eq!(import.total, h.total());
        // Inside HdrHistogram's 2-digit bucket at the same rank: its own highest value at or
        // above 2^21, less than one 2^14-wide source bucket below it under 2^21.
        let q = reference.value_at_quantile(0.999);
        assert!(
            p <= q && q - p <= import.mapping.max_abs_error,
            "{p} vs {q}"
        );
        if q >= 1 << 21 {
            assert_eq!(p, q);
        }
    } else {
        assert_eq!(h.total(), 48_761);
        assert!(
            p.abs_diff(1_745_879_039) as f64 <= 1_745_879_039.0 / 128.0,
            "{p}"
        );
        assert_eq!(p, 1_753_219_071); // the 2-digit bucket's own highest value
    }
}

#[test]
fn tagged_log_tag_a_and_untagged_totals_are_equal() {
    // In CI's miri run the first 2 intervals of each (see `intervals_read`).
    let most = intervals_read();
    let (a, _, _, na) = accumulate(TAGGED, Some(Some("A")), most);
    let (u, hdr_u, _, nu) = accumulate(TAGGED, Some(None), most);
    if most == usize::MAX {
        assert_eq!((na, nu), (21, 21));
        assert_eq!(a.total(), 16_145);
        assert_eq!(u.total(), 16_145);
        assert_eq!(a.total() + u.total(), 32_290);
        assert_eq!(
            (upper(&u, 99.9), u.max()),
            (1_536_163_839, Some(1_544_552_447))
        );
    } else {
        // HdrHistogram's answers over the same intervals (the `hdrhistogram` crate's sum of
        // their blobs).
        assert_eq!((na, nu), (most, most));
        let (total, p999, max) = hdr_answers(
            3,
            payloads(TAGGED, Some(None), most)
                .iter()
                .map(String::as_str),
        );
        assert_eq!(u.total(), total);
        assert_eq!((upper(&u, 99.9), u.max()), (p999, Some(max)));
    }
    assert_eq!(a.storage(), u.storage());
    assert_same_buckets(&u, &hdr_u);
}

/// Values 0..100 000 (Java's `seq-nums`) recorded once into a Picollo histogram at the
/// sigfig-3 layout; in CI's miri run 0..2 048, the first 2 048 buckets of the same (100,000
/// records take 35 s there, and the histogram's window ends at 2 047).
fn seq_nums_picollo() -> HeapHistogram<u64> {
    let n = size(100_000u64, 100_000, 2048);
    let mut h = sigfig3_histogram(n - 1);
    for v in 0..n {
        h.record(v);
    }
    h
}

/// Java's `seq-nums.hist` (lowest 1, highest `i64::MAX`, 3 digits) from a Picollo histogram:
/// byte-identical.
#[test]
fn seq_nums_encoded_from_picollo_is_byte_identical() {
    let file = read_vector("seq-nums.hist");
    let h = seq_nums_picollo();
    let counts = from_picollo(&h).unwrap();
    if size(true, true, false) {
        assert_eq!(
            (
                counts.lowest_discernible,
                counts.highest_trackable,
                counts.significant_digits
            ),
            (1, i64::MAX as u64, 3)
        );
        let encoded = counts.encode_v2().unwrap();
        assert_eq!(encoded.len(), file.len());
        assert!(
            encoded == file,
            "encoding differs from Java's seq-nums.hist"
        );
    } else {
        // The first 2 048 values: the window's top is the highest trackable value, and with
        // Java's i64::MAX in its place the encoding is Java's header and a prefix of Java's
        // counts (2 048 entries, no zero run; V2 encodes each count on its own).
        assert_eq!(
            (
                counts.lowest_discernible,
                counts.highest_trackable,
                counts.significant_digits
            ),
            (1, 2047, 3)
        );
        let mut as_java = counts.clone();
        as_java.highest_trackable = i64::MAX as u64;
        let encoded = as_java.encode_v2().unwrap();
        assert_eq!(encoded[..4], file[..4], "cookie");
        let payload = u32::from_be_bytes(encoded[4..8].try_into().unwrap()) as usize;
        assert_eq!(payload, encoded.len() - 40);
        assert_eq!(encoded[8..40], file[8..40], "header");
        assert!(
            file[40..].starts_with(&encoded[40..]),
            "counts differ from Java's seq-nums.hist"
        );
    }

    // And a compressed export decodes to the same.
    let z = counts.encode_v2_deflate(BEST_COMPRESSION).unwrap();
    let back = to_picollo(&HdrCounts::decode(&z).unwrap()).unwrap();
    assert_same_buckets(&back, &counts);
}

#[test]
fn seq_nums_vectors_read_through_picollo() {
    let seq = seq_nums_picollo();
    // In CI's miri run only the plain file is read through Picollo, and the compressed one's
    // counts are checked against the plain one's (each read through Picollo costs 15 to 20 s
    // there).
    let names = ["seq-nums.hist", "seq-nums.histz"];
    let mut plain = None;
    for name in names.into_iter().take(size(2, 2, 1)) {
        let hdr = HdrCounts::decode(&read_vector(name)).unwrap();
        let h = if size(true, true, false) {
            to_picollo(&hdr).unwrap()
        } else {
            // In CI's miri run into a window to 2^17, which holds the file's values (to
            // 100 031), not the header's whole range to i64::MAX (56,320 cells, about 7 s to
            // create and seconds for each read there).
            let layout = layout_for(&hdr.geometry().unwrap());
            let window = Window::new(layout, 0, 1 << 17).unwrap();
            let (h, import) = to_picollo_in(&hdr, layout, window).unwrap();
            assert!(import.is_exact());
            assert_eq!((import.underflow, import.overflow), (0, 0));
            h
        };
        assert_eq!(h.layout().block_size(), 1024);
        assert_eq!(h.total(), 100_000, "{name}");
        assert_eq!(h.min(), Some(0));
        assert_eq!(h.max(), Some(100_031));
        assert_eq!(upper(&h, 50.0), 50_015);
        assert_eq!(upper(&h, 99.0), 99_007);
        assert_eq!(upper(&h, 99.9), 99_903);
        if size(true, true, false) {
            assert!(h.window().len() <= seq.window().len());
        }
        // In CI's miri run the buckets of 0..2 048 (see `seq_nums_picollo`).
        for i in 0..seq.window().len() {
            assert_eq!(h.count_at(i), seq.count_at(i), "{name}: bucket {i}");
        }
        plain.get_or_insert(hdr);
    }
    if size(false, false, true) {
        let compressed = HdrCounts::decode(&read_vector("seq-nums.histz")).unwrap();
        assert!(compressed.same_content(plain.as_ref().unwrap()));
    }
}

#[test]
fn non_matching_layouts_need_options() {
    let layout = Layout::DEFAULT; // B = 512
    assert_eq!(significant_digits_for(layout), None);
    assert_eq!(finer_significant_digits(layout), Some(3));
    let mut h = HistogramBuilder::new()
        .layout(layout)
        // In CI's miri run a window to 2^14, not 2^40 (3,584 cells, not 16,896: every pass
        // over them, and over the 3-digit counts, costs seconds there).
        .window(Window::new(layout, 0, size(1 << 40, 1 << 40, 1 << 14)).unwrap())
        .dense()
        .plain()
        .unwrap();
    // Under miri every 701st value instead of every 7th (1,400 records, not 143,000); in CI's
    // miri run every third of the first 16 (to 15,015, inside its window).
    let (values, step) = size((1_000_000u64, 7), (1_000_000, 701), (16, 3));
    for v in (0..values).step_by(step) {
        h.record(v * 1001);
    }
    assert!(from_picollo(&h).is_err());
    // Into finer HdrHistogram buckets and back: the same Picollo histogram.
    let e = export(&h, &ExportOptions::new().significant_digits(3)).unwrap();
    assert!(!e.mapping.is_exact());
    assert!(e.mapping.max_relative_error <= 1.0 / 512.0);
    let bytes = e.counts.encode_v2().unwrap();
    let (back, import) =
        to_picollo_in(&HdrCounts::decode(&bytes).unwrap(), layout, h.window()).unwrap();
    assert!(import.is_exact());
    assert_eq!(back.storage(), h.storage());
    // Into coarser buckets: exact at HdrHistogram's precision.
    let e = export(&h, &ExportOptions::new().significant_digits(2)).unwrap();
    assert!(e.is_exact());
    assert_eq!(e.counts.total_count(), h.total());
}

/// The layouts with an HdrHistogram twin, and a window inside the HdrHistogram range.
fn arb_matching_histogram() -> impl Strategy<Value = (Layout, Window, Vec<(u64, u64)>)> {
    (
        prop_oneof![Just(4u32), Just(7), Just(10), Just(14)],
        0u32..40,
        1u32..63,
    )
        .prop_flat_map(|(k, min_bits, span_bits)| {
            let layout = Layout::from_block_scale(k.min(max_k())).unwrap();
            let min = if min_bits == 0 {
                0
            } else {
                1u64 << (min_bits - 1)
            };
            let max = min.saturating_add(1u64 << span_bits).min(i64::MAX as u64);
            let window = Window::new(layout, min, max).unwrap();
            let values = proptest::collection::vec(
                (
                    prop_oneof![min..=max, Just(min), Just(max)],
                    prop_oneof![Just(1u64), 1u64..1_000_000, 1..=i64::MAX as u64 / 4],
                ),
                // In CI's miri run up to 40 values (each record and read costs there).
                0..size(200, 200, 40),
            );
            (Just(layout), Just(window), values)
        })
}

/// Any layout, window and values (some outside the window), any export options.
fn arb_export_case() -> impl Strategy<Value = (HeapHistogram<u64>, ExportOptions)> {
    (
        prop_oneof![Just(4u32), Just(7), Just(9), Just(10), Just(12), Just(14)],
        0u32..40,
        1u32..64,
        proptest::collection::vec(
            (
                prop_oneof![any::<u64>(), 0u64..100_000, Just(0u64)],
                prop_oneof![Just(1u64), 1u64..1_000_000],
            ),
            // In CI's miri run up to 40 values (each record and read costs there).
            0..size(200, 200, 40),
        ),
        // In CI's miri run up to 2 digits: the counts array to 2^63 has 7,000 entries at 2,
        // 54,000 at 3 and 6 million at 5, and each pass over them costs 0.1 ms an entry there (3
        // to 5 are drawn natively and in .ci/miri-full).
        proptest::option::of(0u8..=size(5, 5, 2)),
        proptest::option::of(2u64..=i64::MAX as u64),
        any::<bool>(),
    )
        .prop_map(|(k, min_bits, span_bits, values, digits, highest, drop)| {
            let layout = Layout::from_block_scale(k.min(max_k())).unwrap();
            let min = if min_bits == 0 {
                0
            } else {
                1u64 << (min_bits - 1)
            };
            let max = min.saturating_add((1u64 << span_bits) - 1);
            let mut h = HistogramBuilder::new()
                .layout(layout)
                .window(Window::new(layout, min, max).unwrap())
                .dense()
                .plain()
                .unwrap();
            for (v, n) in values {
                h.record_n(v, n);
            }
            let mut options = ExportOptions::new().allow_dropping(drop);
            if let Some(d) = digits {
                options = options.significant_digits(d);
            }
            if let Some(highest) = highest {
                options = options.highest_trackable(highest);
            }
            (h, options)
        })
}

proptest! {
    // In CI's miri run 1 case (a case at `.ci/miri-full`'s sizes took 20 to 40 s there).
    #![proptest_config(cases(size(256, 4, 1)))]

    /// The fused encoder writes what `export` then `encode_v2_into` write, reports the same, and
    /// fails the same way, leaving its output untouched.
    #[test]
    fn export_v2_into_is_export_then_encode((h, options) in arb_export_case()) {
        let mut fused = b"prefix".to_vec();
        let result = export_v2_into(&h, &options, &mut fused);
        match export(&h, &options) {
            Ok(e) => {
                let mut two_steps = b"prefix".to_vec();
                e.counts.encode_v2_into(&mut two_steps).unwrap();
                prop_assert_eq!(&fused, &two_steps);
                prop_assert_eq!(result.unwrap(), e.report());
                let (z, report) = export_v2_deflate(&h, &options, BEST_COMPRESSION).unwrap();
                prop_assert_eq!(report, e.report());
                prop_assert_eq!(z, e.counts.encode_v2_deflate(BEST_COMPRESSION).unwrap());
            }
            Err(err) => {
                prop_assert_eq!(result.unwrap_err(), err);
                prop_assert_eq!(&fused, b"prefix");
            }
        }
    }

    /// Random values → Picollo → HdrCounts → V2 (plain or deflate) → decode → Picollo:
    /// identical counts.
    #[test]
    fn round_trip_through_v2(
        (layout, window, values) in arb_matching_histogram(),
        compressed in any::<bool>(),
    ) {
        let mut h = HistogramBuilder::new().layout(layout).window(window).dense().plain().unwrap();
        for &(v, n) in &values {
            h.record_n(v, n);
        }
        let counts = from_picollo(&h).unwrap();
        prop_assert_eq!(counts.total_count(), h.total());
        let bytes = if compressed {
            counts.encode_v2_deflate(BEST_COMPRESSION).unwrap()
        } else {
            counts.encode_v2().unwrap()
        };
        let decoded = HdrCounts::decode(&bytes).unwrap();
        prop_assert!(decoded.same_content(&counts));
        let (back, import) = to_picollo_in(&decoded, layout, window).unwrap();
        prop_assert!(import.is_exact());
        prop_assert!(import.mapping.index_for_index);
        prop_assert_eq!(back.storage(), h.storage());
        // The default conversion (window from the header) holds the same buckets.
        let default = to_picollo(&decoded).unwrap();
        prop_assert_eq!(default.layout(), layout);
        prop_assert_eq!(default.total(), h.total());
        prop_assert_eq!(default.max(), h.max());
    }

    /// Any HdrHistogram geometry into any Picollo layout: nothing is lost, the reported bound
    /// holds, and every percentile's Picollo bucket nests with HdrHistogram's bucket for the
    /// same rank count.
    #[test]
    fn import_bound_holds(
        d in 0u8..=4,
        unit in 0u32..30,
        k in 1u32..=max_k(),
        // In CI's miri run up to 10 entries (each a walk of the percentile loop there).
        entries in proptest::collection::vec((0usize..4096, 1u64..1000), 1..size(40, 40, 10)),
    ) {
        let lowest = 1u64 << unit;
        let g = HdrGeometry::new(lowest, i64::MAX as u64, d)
            .or_else(|_| HdrGeometry::new(lowest, i64::MAX as u64, 0))
            .unwrap();
        let mut hdr = HdrCounts::new(g.lowest_discernible(), g.highest_trackable(), g.significant_digits()).unwrap();
        for (i, c) in entries {
            let i = i % g.counts_len();
            if hdr.counts.len() <= i {
                hdr.counts.resize(i + 1, 0);
            }
            hdr.counts[i] += c;
        }
        let layout = Layout::from_block_scale(k).unwrap();
        let (h, import) = to_picollo_in(&hdr, layout, Window::full(layout)).unwrap();
        prop_assert_eq!(h.total(), hdr.total_count());
        prop_assert_eq!(import.total, hdr.total_count());
        prop_assert_eq!((import.underflow, import.overflow), (0, 0));

        let total = hdr.total_count();
        for rank in [0.0, 10.0, 50.0, 90.0, 99.0, 100.0] {
            let p = h.percentile(rank, EquivalentValue::Upper).unwrap();
            // HdrHistogram's bucket reaching the same count.
            let target = p.rank_count.min(total);
            let mut running = 0;
            let src = hdr.iter_recorded().find(|b| {
                running += b.count;
                running >= target
            }).unwrap();
            let (lo, hi) = (src.lowest, src.highest);
            prop_assert!(
                (p.lo >= lo && p.highest <= hi) || (p.lo <= lo && p.highest >= hi),
                "p{} Picollo [{}, {}] vs HdrHistogram [{}, {}]", rank, p.lo, p.highest, lo, hi
            );
            if !(p.lo <= lo && p.highest >= hi) {
                // A split bucket: covered by the reported bound.
                prop_assert!(!import.mapping.is_exact());
                prop_assert!(hi - lo <= import.mapping.max_abs_error);
                let half = g.sub_bucket_count() / 2;
                if (hi - lo + 1) as u128 * half as u128 <= lo as u128 {
                    let rel = (hi - lo) as f64 / lo as f64;
                    prop_assert!(rel <= import.mapping.max_relative_error);
                    prop_assert!(rel <= 1.0 / half as f64);
                } else {
                    prop_assert!(hi - lo <= import.mapping.max_linear_error);
                    prop_assert!(hi - lo < g.lowest_discernible());
                }
            }
        }
        if k < g.sub_bucket_count().trailing_zeros() && g.unit_magnitude() == 0 {
            // A target at most as fine as the source: every source bucket inside one target
            // bucket.
            prop_assert!(import.is_exact());
        }
    }

    /// Any layout exported with its finer significant digits comes back unchanged.
    #[test]
    fn finer_export_round_trips(
        k in 1u32..=max_k(),
        // In CI's miri run up to 30 values (each record and read costs there).
        values in proptest::collection::vec(0u64..(1 << 40), 0..size(100, 100, 30)),
    ) {
        let layout = Layout::from_block_scale(k).unwrap();
        let window = Window::new(layout, 0, 1 << 40).unwrap();
        let mut h = HistogramBuilder::new().layout(layout).window(window).dense().plain().unwrap();
        for &v in &values {
            h.record(v);
        }
        let d = finer_significant_digits(layout).unwrap();
        let e = interop::export(&h, &ExportOptions::new().significant_digits(d)).unwrap();
        prop_assert_eq!((e.dropped_underflow, e.dropped_overflow), (0, 0));
        let decoded = HdrCounts::decode(&e.counts.encode_v2().unwrap()).unwrap();
        let (back, _) = to_picollo_in(&decoded, layout, window).unwrap();
        prop_assert_eq!(back.storage(), h.storage());
    }
}
