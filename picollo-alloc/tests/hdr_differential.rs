//! Differential tests against the `hdrhistogram` crate (`HdrHistogram_rust`).
//!
//! The same values are recorded into an `hdrhistogram::Histogram<u64>` and into an
//! [`HdrCounts`] of the same geometry, then:
//!
//! - **hdrhistogram → Picollo**: the crate's `V2Serializer` and `V2DeflateSerializer` output
//!   decodes in Picollo to the same header and the same counts, compared bucket by bucket (each
//!   non-empty bucket's value range and count against the crate's `iter_recorded`), and
//!   re-encodes to the crate's plain bytes exactly;
//! - **Picollo → hdrhistogram**: Picollo's plain V2 bytes equal the crate's, and Picollo's plain
//!   and deflate output decodes in `hdrhistogram::serialization::Deserializer` to a histogram
//!   equal to the source: same counts, total, min, max and percentiles.
//!
//! Geometries: significant digits 1 to 5, lowest discernible values from 1 up, highest
//! trackable values from `2 * lowest` to `i64::MAX`. Counts: sparse, from 1 to huge (up to
//! `2^58` per entry), with values at the bottom, spread log-uniformly, and near the top of the
//! range.
//!
//! In CI's miri run (`picollo_testkit::miri_size`; natively and in `.ci/miri-full` the sizes
//! above) every test runs at 1 significant digit, fewer geometries and records, four
//! percentiles, the default deflate level, and the decoded copies walked for the plain encoding
//! (the crate's `==` compares the other copies' counts whole): each of the crate's
//! serializations, decodings and walks costs a second or more there. Every assertion still
//! runs on some case; each cut says what it keeps.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;
use picollo_alloc::hdr::{HdrCounts, BEST_COMPRESSION, DEFAULT_COMPRESSION};
use picollo_core::read::rank_count;
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

/// Percentiles compared between Picollo and the crate (and between the crate's source and its
/// decoded copy).
const PERCENTILES: &[f64] = &[
    0.0, 0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0,
];

/// The percentiles compared in a check: all of [`PERCENTILES`], but four in CI's miri run,
/// where each of the crate's reads walks its counts array under the interpreter (about a
/// second per check for each percentile; the decoded copies' counts are compared whole
/// besides).
fn percentiles() -> &'static [f64] {
    size(PERCENTILES, PERCENTILES, &[0.0, 50.0, 99.9, 100.0])
}

/// The quantile a user of the crate writes for `percentile`: `0.999` for 99.9, not
/// `99.9 / 100.0` (`0.9990000000000001`, which asks for one value too many at multiples of
/// 1,000 values).
fn decimal_quantile(percentile: f64) -> f64 {
    let text = format!("{percentile:e}");
    let (mantissa, exp) = text.split_once('e').unwrap();
    format!("{mantissa}e{}", exp.parse::<i32>().unwrap() - 2)
        .parse()
        .unwrap()
}

/// The most significant digits a geometry has. Under miri 2 in a full-size run, 1 in CI's: a
/// full-range 5-digit histogram has 6.2 million counts (each pass over them takes minutes
/// there), a 2-digit one 7,400, a 1-digit one 1,000; the smaller geometries run every
/// assertion the same way (every encoded word length, zero runs, the deflate framing).
fn max_sigfig() -> u8 {
    size(5, 2, 1)
}

/// Totals up to which the crate's percentile arithmetic is exact in `f64`.
const EXACT_F64_TOTAL: u64 = 1 << 53;

/// One test case: a geometry and `(value, count)` records.
#[derive(Debug, Clone)]
struct Case {
    lowest: u64,
    highest: u64,
    sigfig: u8,
    records: Vec<(u64, u64)>,
}

/// Both sides holding the same records.
struct Pair {
    hdr: Histogram<u64>,
    ours: HdrCounts,
}

/// What the crate says of its histogram, read once for both directions of a check.
struct Anchor {
    /// The crate's plain V2 bytes.
    plain: Vec<u8>,
    /// Its non-empty buckets ([`hdr_buckets`]).
    buckets: Vec<(u64, u64, u64)>,
}

impl Anchor {
    fn of(hdr: &Histogram<u64>) -> Self {
        let mut plain = Vec::new();
        V2Serializer::new()
            .serialize(hdr, &mut plain)
            .expect("V2Serializer");
        Anchor {
            plain,
            buckets: hdr_buckets(hdr),
        }
    }
}

fn build(case: &Case) -> Pair {
    let mut hdr = Histogram::<u64>::new_with_bounds(case.lowest, case.highest, case.sigfig)
        .unwrap_or_else(|e| panic!("hdrhistogram refuses {case:?}: {e:?}"));
    let mut ours = HdrCounts::new(case.lowest, case.highest, case.sigfig)
        .unwrap_or_else(|e| panic!("Picollo refuses {case:?}: {e}"));
    let geometry = ours.geometry().expect("valid geometry");
    assert_eq!(
        hdr.distinct_values(),
        geometry.counts_len(),
        "counts array length for {case:?}"
    );
    for &(value, count) in &case.records {
        hdr.record_n(value, count)
            .unwrap_or_else(|e| panic!("hdrhistogram: record {value} x {count}: {e:?}"));
        ours.record(value, count)
            .unwrap_or_else(|e| panic!("Picollo: record {value} x {count}: {e}"));
    }
    Pair { hdr, ours }
}

/// `(lowest, highest, count)` of every non-empty bucket, by the crate's iteration.
fn hdr_buckets(h: &Histogram<u64>) -> Vec<(u64, u64, u64)> {
    h.iter_recorded()
        .map(|v| {
            let value = v.value_iterated_to();
            (
                h.lowest_equivalent(value),
                h.highest_equivalent(value),
                v.count_at_value(),
            )
        })
        .collect()
}

/// `(lowest, highest, count)` of every non-empty bucket, by Picollo's iteration.
fn our_buckets(h: &HdrCounts) -> Vec<(u64, u64, u64)> {
    h.iter_recorded()
        .map(|b| (b.lowest, b.highest, b.count))
        .collect()
}

/// The crate's serialized bytes decode in Picollo to the same histogram.
fn check_hdr_to_picollo(pair: &Pair, anchor: &Anchor) {
    let Pair { hdr, ours } = pair;
    let Anchor {
        plain,
        buckets: expected,
    } = anchor;
    let mut deflate = Vec::new();
    V2DeflateSerializer::new()
        .serialize(hdr, &mut deflate)
        .expect("V2DeflateSerializer");
    for (what, bytes) in [("V2", plain), ("V2+deflate", &deflate)] {
        let decoded = HdrCounts::decode(bytes)
            .unwrap_or_else(|e| panic!("Picollo cannot decode the crate's {what}: {e}"));
        assert_eq!(decoded.lowest_discernible, hdr.low(), "{what}: lowest");
        assert_eq!(decoded.highest_trackable, hdr.high(), "{what}: highest");
        assert_eq!(decoded.significant_digits, hdr.sigfig(), "{what}: sigfig");
        assert_eq!(decoded.normalizing_offset, 0, "{what}: offset");
        assert_eq!(decoded.int_to_double_ratio, 1.0, "{what}: ratio");
        // Bucket by bucket: value range and count of every non-empty bucket.
        assert_eq!(&our_buckets(&decoded), expected, "{what}: buckets");
        // Index by index against what Picollo recorded itself.
        assert!(decoded.same_content(ours), "{what}: counts by index");
        assert_eq!(decoded.total_count(), hdr.len(), "{what}: total");
        // Re-encoding gives the crate's plain bytes back.
        assert_eq!(
            &decoded.encode_v2().expect("encode"),
            plain,
            "{what}: re-encode"
        );
    }
}

/// Picollo's bytes decode in the crate to a histogram equal to the source.
fn check_picollo_to_hdr(pair: &Pair, anchor: &Anchor) {
    let Pair { hdr, ours } = pair;
    let plain = ours.encode_v2().expect("encode_v2");
    assert_eq!(
        plain, anchor.plain,
        "plain V2 bytes differ from the crate's"
    );

    // Every level natively; in CI's miri run the default level alone (the others differ only
    // in miniz_oxide's search, not in Picollo's framing, and each encoding and the crate's
    // decoding of it cost seconds there).
    let levels = size(
        &[DEFAULT_COMPRESSION, BEST_COMPRESSION, 0][..],
        &[DEFAULT_COMPRESSION, BEST_COMPRESSION, 0][..],
        &[DEFAULT_COMPRESSION][..],
    );
    let mut encodings = vec![("V2".to_string(), plain)];
    for &level in levels {
        let bytes = ours.encode_v2_deflate(level).expect("encode_v2_deflate");
        encodings.push((format!("V2+deflate level {level}"), bytes));
    }
    let expected = &anchor.buckets;
    // The source's answers, read once for every encoding.
    let wants: Vec<(f64, u64)> = percentiles()
        .iter()
        .map(|&p| (p, hdr.value_at_percentile(p)))
        .collect();
    if !hdr.is_empty() {
        for &p in percentiles() {
            // Picollo's rank rule is exact: the crate's `value_at_quantile` for the decimal
            // quantile (0.999 for 99.9) gives the same answer wherever its `f64` product asks
            // for the exact count (always at these ranks below 2^36 values; above, the
            // product's rounding can miss it, and above 2^53 reach past the total).
            let q = decimal_quantile(p);
            let total = hdr.len();
            let crate_count = ((q * total as f64).ceil() as u64).max(1);
            if total <= EXACT_F64_TOTAL && crate_count == rank_count(p, total) {
                assert_eq!(
                    ours.value_at_percentile(p),
                    Some(hdr.value_at_quantile(q)),
                    "p{p} vs Picollo"
                );
            }
        }
    }
    // The crate's `PartialEq` (below) compares the decoded counts with the source's whole; in
    // CI's miri run the decoded copies' own walks (buckets, percentiles) run for the plain
    // encoding, and for every encoding where that comparison is skipped.
    let walk_every_copy = size(true, true, false);
    let compared_whole = hdr.max() != 0 || hdr.is_empty();
    for (i, (what, bytes)) in encodings.iter().enumerate() {
        let walk = walk_every_copy || i == 0 || !compared_whole;
        let back: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .unwrap_or_else(|e| panic!("the crate cannot decode Picollo's {what}: {e:?}"));
        assert_eq!(
            (back.low(), back.high(), back.sigfig()),
            (hdr.low(), hdr.high(), hdr.sigfig()),
            "{what}: header"
        );
        assert_eq!(back.len(), hdr.len(), "{what}: total");
        assert_eq!(back.len(), ours.total_count(), "{what}: total vs Picollo");
        if walk {
            assert_eq!(&hdr_buckets(&back), expected, "{what}: buckets");
        }
        if !hdr.is_empty() {
            assert_eq!(back.min(), hdr.min(), "{what}: min");
            // Compared as bucket maxima: the crate reports a max of 0 for a histogram that
            // holds only zeros, yet the highest equivalent of bucket 0 (1 when the unit
            // magnitude is 1) after decoding its own bytes (`zeros_with_unit_magnitude`).
            assert_eq!(
                back.highest_equivalent(back.max()),
                hdr.highest_equivalent(hdr.max()),
                "{what}: max"
            );
            assert_eq!(back.min(), ours.min(), "{what}: min vs Picollo");
            assert_eq!(back.max(), ours.max(), "{what}: max vs Picollo");
            for &(p, want) in wants.iter().filter(|_| walk) {
                assert_eq!(back.value_at_percentile(p), want, "{what}: p{p}");
            }
        }
        // Counts, total, min and max together (the crate's `PartialEq`), except for the
        // crate's own zeros-only max quirk above.
        if compared_whole {
            assert!(
                back == *hdr,
                "{what}: decoded histogram differs from the source"
            );
        }
    }
}

fn check(case: &Case) {
    let pair = build(case);
    let anchor = Anchor::of(&pair.hdr);
    check_hdr_to_picollo(&pair, &anchor);
    check_picollo_to_hdr(&pair, &anchor);
}

/// A geometry: significant digits 1 to 5, lowest 1, 1000 and others, highest from `2 * lowest`
/// to `i64::MAX`, within what both implementations accept.
fn geometry() -> impl Strategy<Value = (u64, u64, u8)> {
    let lowest = prop_oneof![
        4 => Just(1u64),
        2 => Just(1000u64),
        1 => Just(2u64),
        1 => Just(3u64),
        1 => Just(1024u64),
        1 => Just(20_000u64),
        1 => Just(1u64 << 20),
        2 => 1u64..=1_000_000,
    ];
    (lowest, 1u8..=max_sigfig(), 0u32..=62, any::<u64>()).prop_filter_map(
        "geometry refused",
        |(lowest, sigfig, top_bit, r)| {
            let max = i64::MAX as u64;
            let highest = match top_bit % 4 {
                // i64::MAX itself.
                0 => max,
                // The smallest legal highest.
                1 => lowest * 2,
                // A random value in [2 * lowest, 2^top_bit].
                _ => {
                    let top = (1u64 << top_bit.max(1)).max(lowest * 2);
                    lowest * 2 + r % (top - lowest * 2 + 1)
                }
            }
            .min(max);
            // The crate's highest-trackable rule (and HdrHistogram's sub-bucket limit).
            let unit = 63 - lowest.leading_zeros();
            let sub_bucket_magnitude = 64 - (2 * 10u64.pow(u32::from(sigfig)) - 1).leading_zeros();
            (unit + sub_bucket_magnitude <= 62 && highest >= 2 * lowest)
                .then_some((lowest, highest, sigfig))
        },
    )
}

/// A value in `[0, highest]`: bottom, log-uniform, or near the top.
fn value_in(highest: u64, pick: u8, r: u64, bits: u32) -> u64 {
    match pick % 4 {
        0 => r % 4096u64.min(highest + 1),
        1 => {
            let bits = 1 + bits % (64 - highest.leading_zeros());
            (r >> (64 - bits)).min(highest)
        }
        2 => highest - (r % 1024).min(highest),
        _ => r % (highest + 1),
    }
}

/// A count: small, medium or huge (a few huge entries never overflow the i64 total).
fn count_of(kind: u8, r: u64) -> u64 {
    match kind % 8 {
        0..=3 => 1 + r % 10,
        4 | 5 => 1 + r % 1_000_000,
        6 => 1 + r % (1 << 40),
        _ => (1 << 50) + r % (1 << 58),
    }
}

fn case() -> impl Strategy<Value = Case> {
    geometry().prop_flat_map(|(lowest, highest, sigfig)| {
        prop::collection::vec(
            (
                any::<u8>(),
                any::<u64>(),
                any::<u32>(),
                any::<u8>(),
                any::<u64>(),
            ),
            0..40,
        )
        .prop_map(move |raw| {
            let mut huge = 0;
            let records = raw
                .into_iter()
                .map(|(pick, r, bits, kind, rc)| {
                    let mut count = count_of(kind, rc);
                    if count > 1 << 40 {
                        // At most 8 huge counts: the total stays below 2^62.
                        huge += 1;
                        if huge > 8 {
                            count = 1 + rc % 100;
                        }
                    }
                    (value_in(highest, pick, r, bits), count)
                })
                .collect();
            Case {
                lowest,
                highest,
                sigfig,
                records,
            }
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(size(64, 4, 2)))]

    #[test]
    fn differential_random(case in case()) {
        check(&case);
    }
}

#[test]
fn differential_empty() {
    // In CI's miri run the smallest geometry and one with a unit above 1: an empty payload is
    // one zero run whatever its length.
    const ALL: &[(u64, u64)] = &[
        (1, 2),
        (1, 1000),
        (1000, 3_600_000_000),
        (1, i64::MAX as u64),
    ];
    let geometries = size(ALL, ALL, &[(1, 2), (1000, 3_600_000_000)][..]);
    for sigfig in 1..=max_sigfig() {
        for &(lowest, highest) in geometries {
            check(&Case {
                lowest,
                highest,
                sigfig,
                records: Vec::new(),
            });
        }
    }
}

#[test]
fn differential_fixed_geometries() {
    let max = i64::MAX as u64;
    let geometries: &[(u64, u64, u8)] = &[
        (1, 2, 1),
        (1, 1000, 1),
        (1, 3_600_000_000_000, 3),
        (1000, 3_600_000_000_000, 3),
        (20_000, 3_600_000_000_000, 2),
        (1, max, 1),
        (1, max, 2),
        (1, max, 3),
        (1, max, 4),
        (1, max, 5),
        (1000, max, 5),
        (1 << 20, max, 3),
        (3, 1 << 40, 4),
    ];
    // In CI's miri run the 1-digit geometries but (1, 1000, 1), which lies between the other
    // two: the smallest (one bucket) and the full range.
    let skipped = size(None, None, Some((1, 1000, 1)));
    for &(lowest, highest, sigfig) in geometries
        .iter()
        .filter(|&&g| g.2 <= max_sigfig() && Some(g) != skipped)
    {
        // The bottom, powers of two and their neighbours, the top, and huge counts.
        let mut records = vec![(0, 3), (1, 1), (lowest, 7), (highest, 11), (highest - 1, 1)];
        let mut v = lowest.max(2);
        while v < highest / 2 {
            records.push((v - 1, 2));
            records.push((v, 1_000_003));
            records.push((v + 1, 1));
            v *= 2;
        }
        records.push((highest / 2, 1 << 58));
        records.push((highest / 3, (1 << 60) + 12_345));
        check(&Case {
            lowest,
            highest,
            sigfig,
            records,
        });
    }
}

/// A histogram holding only zeros with unit magnitude 1 (lowest discernible 2): found by
/// `differential_random`. The crate's max is 0 before its own round trip and 1 after it;
/// Picollo's bytes must still equal the crate's and decode to the same buckets.
#[test]
fn zeros_with_unit_magnitude() {
    for sigfig in 1..=max_sigfig() {
        check(&Case {
            lowest: 2,
            highest: 4,
            sigfig,
            records: vec![(0, 4)],
        });
    }
}

/// Counts at the upper end of the encoding: a 9-byte word (a count above 2^55) in the last
/// entry, and a zero run over nearly the whole counts array.
#[test]
fn differential_extremes() {
    let max = i64::MAX as u64;
    for sigfig in 1..=max_sigfig() {
        check(&Case {
            lowest: 1,
            highest: max,
            sigfig,
            records: vec![(max, i64::MAX as u64)],
        });
        check(&Case {
            lowest: 1,
            highest: max,
            sigfig,
            records: vec![(0, 1), (max, (1 << 56) + 1)],
        });
    }
    // Every entry of a small histogram non-empty, with counts of every encoded length.
    // (About 1000 entries of 2^0 to 2^55: the total stays below 2^61.) In a full-size miri run
    // values up to 20,000, every 97th with a large count (about 200 of 2^0 to 2^55); in CI's
    // up to 280, every 5th (57 large counts, 2^0 to 2^55 and 2^0 again: every word length).
    let (top, every) = size((1_000_000, 997), (20_000, 97), (280, 5));
    let mut records = Vec::new();
    for v in 0..=top {
        if v % every == 0 {
            records.push((v, (1u64 << ((v / every) % 56)) + v % 7));
        } else {
            records.push((v, 1 + v % 300));
        }
    }
    check(&Case {
        lowest: 1,
        highest: top,
        sigfig: 2,
        records,
    });
}

/// A dense full-range histogram: log-uniform values over `[1, i64::MAX]`, every sigfig.
#[test]
fn differential_full_range() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut records = Vec::new();
    for _ in 0..size(20_000, 2_000, 100) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let bits = 1 + (r % 63) as u32;
        records.push((r >> (64 - bits), 1 + (r >> 40) % 5000));
    }
    for sigfig in 1..=max_sigfig() {
        check(&Case {
            lowest: 1,
            highest: i64::MAX as u64,
            sigfig,
            records: records.clone(),
        });
    }
}
