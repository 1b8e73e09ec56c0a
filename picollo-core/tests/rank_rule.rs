//! The one rank rule ([`picollo_core::read::rank_count`]) against the integer path
//! ([`Rank::count_of`]), an independent decimal reference, HdrHistogram Java's
//! `getValueAtPercentile` arithmetic and the `hdrhistogram` crate's `value_at_quantile`,
//! bucket for bucket.

use picollo_core::prelude::*;
use picollo_core::read::rank_count;
use picollo_core::Window;
use proptest::prelude::*;

/// The standard ranks, as people write them.
const STANDARD: [&str; 16] = [
    "0", "1", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.95", "99.99", "99.999",
    "99.9999", "100",
];

/// Totals compared exhaustively.
const TOTALS: u64 = if cfg!(miri) { 100 } else { 100_000 };

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

/// The rule from `rank`'s `Display` text (the shortest decimal, a different code path from the
/// rule's): `ceil(decimal / 100 · total)` when it has at most 13 decimals, else from the exact
/// binary value; kept within `1..=total`.
fn reference_count(rank: f64, total: u64) -> u64 {
    let text = rank.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let count = if frac.len() <= 13 {
        let digits: u128 = format!("{int}{frac}").parse().unwrap();
        (digits * total as u128).div_ceil(10u128.pow(frac.len() as u32 + 2))
    } else {
        // rank · 2^s is a whole number below 2^53 for the first s where it is whole.
        let (mut x, mut s) = (rank, 0u32);
        while x.fract() != 0.0 {
            x *= 2.0;
            s += 1;
        }
        if s > 120 {
            1
        } else {
            (x as u128 * total as u128).div_ceil(100u128 << s)
        }
    };
    count.clamp(1, total.max(1) as u128) as u64
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
        assert_eq!(rank_count(f64::from_bits(1), total), 1);
        assert_eq!(rank_count(f64::NAN, total), 1);
    }
    let below_100 = f64::from_bits(100f64.to_bits() - 1);
    // 100 - 2^-46 has no decimal of at most 13 decimals: taken exactly, 2^64 - 1 values
    // less a 2^-46 / 100 share of them.
    assert_eq!(rank_count(below_100, u64::MAX), u64::MAX - 2_621);
    assert_eq!(reference_count(below_100, u64::MAX), u64::MAX - 2_621);
    assert_eq!(rank_count(below_100, 1 << 53), (1 << 53) - 1);
    assert_eq!(rank_count(1e-300, u64::MAX), 1);
    assert_eq!(rank_count(50.0, u64::MAX), u64::MAX / 2 + 1);
    assert_eq!(
        rank_count(99.999_999_9, u64::MAX),
        Rank::per_billion(999_999_999).unwrap().count_of(u64::MAX)
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
        for total in 1..=TOTALS {
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
        for (i, v) in shape(kind, TOTALS).enumerate() {
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
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 4096 }, ..ProptestConfig::default() })]

    /// The `f64` and the integer paths agree for every rank a [`Rank`] can hold and every total.
    #[test]
    fn f64_and_integer_rules_agree(parts in 0u32..=1_000_000_000, total in any::<u64>()) {
        let rank = Rank::per_billion(parts).unwrap();
        let printed: f64 = rank.to_string().parse().unwrap();
        prop_assert_eq!(printed, rank.as_percent());
        prop_assert_eq!(rank_count(rank.as_percent(), total), rank.count_of(total));
    }

    /// Any `f64` rank, however written: the reference rule.
    #[test]
    fn any_rank_follows_the_rule(bits in any::<u64>(), total in any::<u64>()) {
        let rank = (f64::from_bits(bits >> 1) % 100.0).abs();
        prop_assume!(rank.is_finite());
        prop_assert_eq!(rank_count(rank, total), reference_count(rank, total), "p{} of {}", rank, total);
    }

    /// Ranks written with up to 13 decimals: exactly their decimal.
    #[test]
    fn written_ranks_are_their_decimal(n in 0u64..100_000_000_000_000, decimals in 0u32..=13, total in any::<u64>()) {
        let n = n % (100 * 10u64.pow(decimals));
        let text = format!("{}.{:0w$}", n / 10u64.pow(decimals), n % 10u64.pow(decimals), w = decimals as usize);
        let rank: f64 = text.parse().unwrap();
        let want = (n as u128 * total as u128).div_ceil(10u128.pow(decimals + 2)).clamp(1, total.max(1) as u128) as u64;
        prop_assert_eq!(rank_count(rank, total), want, "p{} of {}", text, total);
    }

    /// Random data and random ranks of up to 7 decimals: the crate's `value_at_quantile` lands
    /// in Picollo's bucket whenever its `f64` product asks for the exact count; it asks for
    /// another only where the exact count is a whole number its rounding overshoots.
    #[test]
    fn matches_the_crate_bucket_for_bucket(
        sigfig in 1u8..=4,
        values in proptest::collection::vec((1u64..(1 << 40), 1u64..2000), 1..200),
        parts in proptest::collection::vec(0u32..=1_000_000_000, 1..16),
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
