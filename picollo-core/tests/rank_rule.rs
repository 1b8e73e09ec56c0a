//! The one rank rule ([`picollo_core::read::rank_count`], HdrHistogram Java's count) against
//! the integer path ([`Rank::count_of`], the exact ceiling), HdrHistogram Java's
//! `getValueAtPercentile` arithmetic and the `hdrhistogram` crate's `value_at_quantile`,
//! bucket for bucket.

use picollo_core::prelude::*;
use picollo_core::read::rank_count;
use picollo_core::Window;
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

/// The standard ranks, as people write them.
const STANDARD: [&str; 16] = [
    "0", "1", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.95", "99.99", "99.999",
    "99.9999", "100",
];

/// Totals compared exhaustively. Under miri 4 (30 in a full-size run): after every value the
/// bucket-for-bucket test reads 48 percentiles cell by cell, each read retagging the whole
/// storage (21 s of the file's 41 at 6).
fn totals() -> u64 {
    size(100_000, 30, 4)
}

/// The quantile a user of the crate passes for `text` percent: the decimal divided by 100,
/// parsed (`"99.9"` → `0.999`, not `99.9 / 100.0`).
fn decimal_quantile(text: &str) -> f64 {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = format!("{int}{frac}");
    format!("{digits}e-{}", frac.len() + 2).parse().unwrap()
}

/// HdrHistogram Java 2.1.11 `getValueAtPercentile`'s count: one ulp below the percentile,
/// `ceil(p · total / 100)` in doubles, at least 1 (from the Debian jar's bytecode).
fn java_count(percentile: f64, total: u64) -> u64 {
    let down = if percentile > 0.0 {
        f64::from_bits(percentile.to_bits() - 1)
    } else {
        -f64::from_bits(1)
    };
    let p = down.clamp(0.0, 100.0);
    (((p * total as f64) / 100.0).ceil() as u64).max(1)
}

/// The crate's `value_at_quantile` count: `ceil(q · total)` in doubles, at least 1.
fn crate_count(quantile: f64, total: u64) -> u64 {
    ((quantile * total as f64).ceil() as u64).max(1)
}

/// The exact ceiling for a decimal rank of `decimals` decimals written as the whole number
/// `n` (`99.9` is `(999, 1)`): `ceil(n / 10^(decimals + 2) · total)`, within `1..=total`.
fn exact_count(n: u64, decimals: u32, total: u64) -> u64 {
    (n as u128 * total as u128)
        .div_ceil(10u128.pow(decimals + 2))
        .clamp(1, total.max(1) as u128) as u64
}

/// The totals below which the exact ceiling of a `decimals`-decimal rank and Java's `f64`
/// count are proved equal (`Rank::count_of`'s docs): `2^53 / (5 · 10^(decimals + 2))`.
fn exact_bound(decimals: u32) -> u64 {
    ((1u128 << 53) / (5 * 10u128.pow(decimals + 2))) as u64
}

#[test]
fn p999_of_20000_asks_for_19980() {
    assert_eq!(rank_count(99.9, 20_000), 19_980);
    assert_eq!(rank_count(99.9, 100_000), 99_900);
    assert_eq!(Rank::parse("99.9").unwrap().count_of(20_000), 19_980);
    assert_eq!(crate_count(decimal_quantile("99.9"), 20_000), 19_980);
    assert_eq!(java_count(99.9, 20_000), 19_980);
    // The reproduction: 1 recorded 19,980 times and 1,000 20 times.
    let layout = Layout::from_significant_digits(3).unwrap();
    let w = Window::new(layout, 0, 10_000).unwrap();
    let mut cells = vec![0u64; w.len()];
    let mut h = Histogram::with_storage(layout, &mut cells[..], w).unwrap();
    h.record_n(1, 19_980);
    h.record_n(1_000, 20);
    for selection in [
        EquivalentValue::Upper,
        EquivalentValue::Midpoint,
        EquivalentValue::Lower,
    ] {
        assert_eq!(h.percentile(99.9, selection).unwrap().value, 1);
    }
    assert_eq!(
        h.fixed_percentile(Rank::parse("99.9").unwrap(), EquivalentValue::Midpoint)
            .unwrap()
            .value,
        1
    );
    assert_eq!(
        h.percentile(99.91, EquivalentValue::Upper).unwrap().value,
        1_000
    );
}

#[test]
fn edges() {
    for total in [0, 1, 2, 1000, u64::MAX] {
        assert_eq!(rank_count(0.0, total), 1);
        assert_eq!(rank_count(100.0, total), total.max(1));
        assert_eq!(rank_count(250.0, total), total.max(1));
        assert_eq!(rank_count(-3.0, total), 1);
        assert_eq!(rank_count(f64::from_bits(1), total), 1);
        assert_eq!(rank_count(f64::NAN, total), 1);
    }
    // HistogramDataAccessTest.testGetValueAtPercentileExamples: of {1, 2}, 50 % and
    // 50.00000000000001 % (one ulp above 50, lowered back to 50 by Java) ask for the first
    // value; 50.0000000000001 % for the second.
    assert_eq!(rank_count(50.0, 2), 1);
    assert_eq!(rank_count(50.000_000_000_000_01, 2), 1);
    assert_eq!(rank_count(50.000_000_000_000_1, 2), 2);
    // Of {1, 2, 2, 2, 2}: 25 % and 30 % ask for the 2nd and the 2nd.
    assert_eq!((rank_count(25.0, 5), rank_count(30.0, 5)), (2, 2));
    let below_100 = f64::from_bits(100f64.to_bits() - 1);
    assert_eq!(
        rank_count(below_100, 1 << 53),
        java_count(below_100, 1 << 53)
    );
    assert_eq!(rank_count(below_100, 1000), 1000);
    assert_eq!(rank_count(1e-300, u64::MAX), 1);
    // Past 2^53 values Java's f64 total is rounded (2^64 here): Java's count, within the total.
    assert_eq!(rank_count(50.0, u64::MAX), (1 << 63) - 1024);
    assert_eq!(
        rank_count(below_100, u64::MAX),
        java_count(below_100, u64::MAX)
    );
    assert!(rank_count(below_100, u64::MAX) < u64::MAX);
    // The example of `Rank::count_of`'s docs, where Java's rounding asks for one value
    // fewer than the exact ceiling (far above the bound, 1.8 × 10^13 at 6 decimals).
    assert_eq!(rank_count(73.013697, 779_004_953_713), 568_780_316_519);
    assert_eq!(exact_count(73_013_697, 6, 779_004_953_713), 568_780_316_520);
    assert_eq!(
        Rank::parse("73.013697").unwrap().count_of(779_004_953_713),
        568_780_316_520
    );
}

/// Every total 1..=100,000 at the standard ranks: the exact rule, the fixed-point rule, Java's
/// double arithmetic and the crate's `value_at_quantile` arithmetic ask for the same count.
#[test]
fn every_total_at_the_standard_ranks() {
    for text in STANDARD {
        let rank = text.parse::<f64>().unwrap();
        let fixed = Rank::parse(text).unwrap();
        let q = decimal_quantile(text);
        for total in 1..=totals() {
            let ours = rank_count(rank, total);
            assert_eq!(ours, fixed.count_of(total), "p{text} of {total}");
            assert_eq!(ours, java_count(rank, total), "p{text} of {total} vs Java");
            assert_eq!(
                ours,
                crate_count(q, total),
                "p{text} of {total} vs the crate"
            );
        }
    }
}

/// Values of one shape, from a fixed-seed generator.
fn shape(kind: usize, n: u64) -> impl Iterator<Item = u64> {
    let mut state = 0x2545_F491_4F6C_DD1Du64 ^ kind as u64;
    (0..n).map(move |i| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let r = (state >> 11) as f64 / (1u64 << 53) as f64;
        match kind {
            // Uniform.
            0 => 1 + (r * 1e6) as u64,
            // Pareto, alpha 1.1 from 1,000, capped.
            1 => ((1000.0 / (1.0 - r).powf(1.0 / 1.1)) as u64).min(1 << 29),
            // The shape: 1 almost always, 1,000 one time in a thousand.
            _ => {
                if i % 1000 == 999 {
                    1000
                } else {
                    1
                }
            }
        }
    })
}

/// The crate and Picollo (HdrHistogram's layout at 2 digits), fed the same values one at a
/// time: after every value, at every standard rank, the `f64` path, the fixed-point path and
/// the crate's `value_at_quantiles` land in the same bucket, for every total 1..=100,000.
#[test]
fn every_total_matches_the_crate_bucket_for_bucket() {
    let layout = Layout::from_significant_digits(2).unwrap();
    let ranks = STANDARD.map(|t| t.parse::<f64>().unwrap());
    let fixed_ranks = STANDARD.map(|t| Rank::parse(t).unwrap());
    let quantiles = STANDARD.map(decimal_quantile);
    for kind in 0..3 {
        let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 30, 2).unwrap();
        let w = Window::new(layout, 1, 1 << 30).unwrap();
        let mut cells = vec![0u64; w.len()];
        let mut h = Histogram::with_storage(layout, &mut cells[..], w).unwrap();
        let mut ours = [Percentile::default(); 16];
        let mut fixed = [FixedPercentile::default(); 16];
        for (i, v) in shape(kind, totals()).enumerate() {
            hdr.record(v).unwrap();
            h.record(v);
            let total = i as u64 + 1;
            h.percentiles(&ranks, EquivalentValue::Upper, &mut ours)
                .unwrap();
            h.fixed_percentiles(&fixed_ranks, EquivalentValue::Upper, &mut fixed)
                .unwrap();
            for ((theirs, p), f) in hdr.value_at_quantiles(quantiles).zip(&ours).zip(&fixed) {
                let at = || format!("shape {kind}, p{} of {total}", p.rank);
                assert_eq!(
                    (p.lo, p.highest, p.rank_count),
                    (f.lo, f.highest, f.rank_count),
                    "{}",
                    at()
                );
                assert_eq!(
                    (
                        hdr.lowest_equivalent(theirs),
                        hdr.highest_equivalent(theirs)
                    ),
                    (p.lo, p.highest),
                    "{}",
                    at()
                );
                // The crate reports the highest equivalent value, the lowest at quantile 0.
                assert_eq!(
                    theirs,
                    if p.rank == 0.0 { p.lo } else { p.value },
                    "{}",
                    at()
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: size(4096, 4, 4), ..ProptestConfig::default() })]

    /// The `f64` and the integer paths agree for every rank a [`Rank`] can hold, at every
    /// total below the bound of its decimals; the integer path is the exact ceiling at every
    /// total.
    #[test]
    fn f64_and_integer_rules_agree(parts in 0u32..=1_000_000_000, total in any::<u64>(), scale in 0u32..64) {
        let rank = Rank::per_billion(parts).unwrap();
        let printed: f64 = rank.to_string().parse().unwrap();
        prop_assert_eq!(printed, rank.as_percent());
        prop_assert_eq!(rank.count_of(total), exact_count(parts as u64, 7, total));
        let text = rank.to_string();
        let decimals = text.split_once('.').map_or(0, |(_, f)| f.len() as u32);
        let below = (total >> scale) % exact_bound(decimals).max(1);
        prop_assert_eq!(rank_count(rank.as_percent(), below), rank.count_of(below), "p{} of {}", text, below);
    }

    /// Any `f64` rank: HdrHistogram Java's count, for every total it counts exactly.
    #[test]
    fn any_rank_is_javas_count(bits in any::<u64>(), total in 0u64..=(1 << 53)) {
        let rank = (f64::from_bits(bits >> 1) % 100.0).abs();
        prop_assume!(rank.is_finite());
        prop_assert_eq!(rank_count(rank, total), java_count(rank, total).min(total.max(1)), "p{} of {}", rank, total);
    }

    /// Ranks written with up to 7 decimals: exactly their decimal, below the bound.
    #[test]
    fn written_ranks_are_their_decimal(n in 0u64..1_000_000_000, decimals in 0u32..=7, total in any::<u64>()) {
        let n = n % (100 * 10u64.pow(decimals));
        let text = format!("{}.{:0w$}", n / 10u64.pow(decimals), n % 10u64.pow(decimals), w = decimals as usize);
        let rank: f64 = text.parse().unwrap();
        let total = total % exact_bound(decimals);
        prop_assert_eq!(rank_count(rank, total), exact_count(n, decimals, total), "p{} of {}", text, total);
    }

    /// Random data and random ranks of up to 7 decimals: the crate's `value_at_quantile` lands
    /// in Picollo's bucket whenever its `f64` product asks for the exact count; it asks for
    /// another only where the exact count is a whole number its rounding overshoots.
    #[test]
    fn matches_the_crate_bucket_for_bucket(
        // In CI's miri step 1 digit (up to 4 natively and in a full-size run: 458,000 cells to
        // 2^41 at 4, 600 at 1), 50 values and 6 ranks.
        sigfig in 1u8..=size(4, 4, 1),
        values in proptest::collection::vec((1u64..(1 << 40), 1u64..2000), 1..size(200, 200, 50)),
        parts in proptest::collection::vec(0u32..=1_000_000_000, 1..size(16, 16, 6)),
    ) {
        let digits = (2.0 * 10f64.powi(sigfig as i32)).log2().ceil() as u32;
        let layout = Layout::from_block_scale(digits - 1).unwrap();
        let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 41, sigfig).unwrap();
        let w = Window::new(layout, 1, 1 << 41).unwrap();
        let mut cells = vec![0u64; w.len()];
        let mut h = Histogram::with_storage(layout, &mut cells[..], w).unwrap();
        for &(v, n) in &values {
            hdr.record_n(v, n).unwrap();
            h.record_n(v, n);
        }
        let total = hdr.len();
        for p in parts {
            let rank = Rank::per_billion(p).unwrap();
            let q = decimal_quantile(&rank.to_string());
            let ours = h.percentile(rank.as_percent(), EquivalentValue::Upper).unwrap();
            let theirs = hdr.value_at_quantile(q);
            if crate_count(q, total) == ours.rank_count {
                prop_assert_eq!(hdr.lowest_equivalent(theirs), ours.lo);
                prop_assert_eq!(hdr.highest_equivalent(theirs), ours.highest);
            } else {
                prop_assert_eq!((total as u128 * p as u128) % 1_000_000_000, 0);
                prop_assert_eq!(crate_count(q, total), ours.rank_count + 1);
            }
        }
    }
}
