//! Quantile oracles: an exact sort of the recorded values, and the `hdrhistogram` crate.

use picollo_core::prelude::*;
use picollo_core::Window;
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

const RANKS: [f64; 16] = [
    0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 92.5, 95.0, 97.5, 99.0, 99.9, 99.99, 99.999, 100.0,
];

/// The quantile a user of the crate writes for `rank` percent: `0.999` for 99.9, not
/// `99.9 / 100.0` (`0.9990000000000001`, whose `f64` product can ask for one value more).
fn decimal_quantile(rank: f64) -> f64 {
    let text = format!("{rank:e}");
    let (mantissa, exp) = text.split_once('e').unwrap();
    format!("{mantissa}e{}", exp.parse::<i32>().unwrap() - 2)
        .parse()
        .unwrap()
}

/// The largest block scale the properties draw: under miri 6 (a full range of 3,800 cells,
/// not 217,000 at block scale 12), where each read of a cell retags the whole storage.
const MAX_K: u32 = if cfg!(miri) { 6 } else { 12 };

/// The most significant digits the crate's histograms have: 4 natively, 2 under miri (7,400
/// cells over the full range, not 835,000), 1 in CI's miri run (32 sub-buckets a block, not
/// 256: the crate's quantile walks read cell by cell, 34 s of the file's 66 there at 2).
fn max_sigfig() -> u8 {
    size(4, 2, 1)
}

/// HdrHistogram's sub-buckets per block at `digits` significant digits are `2^bits`, with
/// `bits = ceil(log2(2·10^d))`; Picollo's layout of block scale `bits - 1` indexes alike.
fn hdr_sub_bucket_bits(digits: u8) -> u32 {
    (2.0 * 10f64.powi(digits as i32)).log2().ceil() as u32
}

fn full(layout: Layout) -> (Vec<u64>, Window) {
    let w = Window::full(layout);
    (vec![0; w.len()], w)
}

fn check_against_sorted(layout: Layout, values: &mut [u64]) {
    let (mut cells, w) = full(layout);
    let mut h = Histogram::with_storage(layout, &mut cells[..], w).unwrap();
    for &v in values.iter() {
        h.record(v);
    }
    values.sort_unstable();
    let mut out = [Percentile::default(); 16];
    h.percentiles(&RANKS, EquivalentValue::Midpoint, &mut out)
        .unwrap();
    for p in out {
        let exact = values[(p.rank_count - 1) as usize];
        // The target-th smallest value lies in the bucket found, so the midpoint is within the
        // layout's relative error of it.
        assert!(
            p.lo <= exact && exact <= p.highest,
            "rank {} exact {exact} {p}",
            p.rank
        );
        let err = (p.value as f64 - exact as f64).abs() / (exact as f64).max(1.0);
        assert!(
            err <= layout.relative_error() + 1e-12,
            "rank {}: {err}",
            p.rank
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 64 }, ..ProptestConfig::default() })]

    #[test]
    fn percentiles_match_exact_sort(k in 1u32..=MAX_K, mut values in proptest::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 1..500)) {
        check_against_sorted(Layout::from_block_scale(k).unwrap(), &mut values);
    }

    // In CI's miri run up to 60 values below 2^30, not 500 below 2^40: each of the crate's 16
    // quantile walks reads its counts one by one from 0 up to the value it finds, so the
    // walks' length is the cost (41 s of the file's 66 at 500 below 2^40; fewer values alone
    // saved nothing in iterators.rs). The full-size miri run (.ci/miri-full) keeps 500 below
    // 2^40.
    #[test]
    fn percentiles_match_hdrhistogram(sigfig in 1u8..=max_sigfig(), values in proptest::collection::vec(1u64..size(1 << 40, 1 << 40, 1 << 30), 1..size(500, 500, 60))) {
        // HdrHistogram with lowest 1 and `sigfig` digits has 2B sub-buckets per block,
        // B = 2^ceil(log2(2·10^d)) / 2: index-for-index the same layout (DESIGN.md).
        let layout = Layout::from_block_scale(hdr_sub_bucket_bits(sigfig) - 1).unwrap();
        // Under miri both sides stop at 2^41 (the values are below 2^40), where natively they
        // cover all they can: the same buckets from 0 up, a fraction of the cells to walk (64
        // of the file's 90 s under miri at the full range).
        let highest = if cfg!(miri) { 1 << 41 } else { u64::MAX / 2 };
        let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, highest, sigfig).unwrap();
        let (mut cells, w) = if cfg!(miri) {
            let w = Window::new(layout, 0, highest).unwrap();
            (vec![0; w.len()], w)
        } else {
            full(layout)
        };
        let mut h = Histogram::with_storage(layout, &mut cells[..], w).unwrap();
        for &v in &values {
            hdr.record(v).unwrap();
            h.record(v);
        }
        let mut out = [Percentile::default(); 16];
        h.percentiles(&RANKS, EquivalentValue::Upper, &mut out).unwrap();
        for p in out {
            let theirs = hdr.value_at_quantile(decimal_quantile(p.rank));
            // Same layout and the same rank rule: identical answers. HdrHistogram reports the
            // highest equivalent value, except at quantile 0 where it reports the lowest.
            let ours = if p.rank == 0.0 { p.lo } else { p.value };
            prop_assert_eq!(ours, theirs, "rank {}", p.rank);
        }
        prop_assert_eq!(h.max().unwrap(), hdr.max());
        prop_assert_eq!(h.min().unwrap(), hdr.min());
        let rel = (h.mean() - hdr.mean()).abs() / hdr.mean().max(1.0);
        prop_assert!(rel <= 2.0 * layout.relative_error());
    }
}

#[test]
fn seed_benchmark_distribution_vs_hdrhistogram() {
    // The .NET library's benchmark data: r^3 · 7716549600 from a fixed-seed generator. Picollo at 0.001
    // (B = 512) against HdrHistogram at 3 digits (2048 sub-buckets, B = 1024): they must agree
    // within the sum of the two stated errors.
    const MAX: u64 = 7_716_549_600;
    // Under miri 50 values, and 128 buckets a block against HdrHistogram at 2 digits (256
    // sub-buckets, 128 a half): each percentile there reads cell by cell, and each read retags
    // the whole storage, a cost that grows with the square of the window's cells (at the
    // default layout this one test took over 5 minutes of miri's time, the whole file's other
    // tests 80 s). The walk, the rank rule and the comparison are the same at any layout.
    // In CI's miri run 16 buckets a block against 1 digit (32 sub-buckets, 16 a half): 15 s at
    // 128 against 2 digits.
    let n = if cfg!(miri) { 50 } else { 200_000 };
    let (layout, digits) = size(
        (Layout::DEFAULT, 3),
        (Layout::from_block_scale(7).unwrap(), 2),
        (Layout::from_block_scale(4).unwrap(), 1),
    );
    // HdrHistogram's half of its sub-buckets per block.
    let hdr_half_buckets = f64::from(1u32 << (hdr_sub_bucket_bits(digits) - 1));
    let mut state = 42u64;
    let mut values = Vec::with_capacity(n);
    for _ in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let r = (state >> 11) as f64 / (1u64 << 53) as f64;
        values.push((r * r * r * MAX as f64) as u64);
    }
    let window = Window::new(layout, 0, MAX).unwrap();
    let mut cells = vec![0u32; window.len()];
    let mut h = Histogram::with_storage(layout, &mut cells[..], window).unwrap();
    let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, MAX, digits).unwrap();
    for &v in &values {
        h.record(v);
        hdr.record(v).unwrap();
    }
    let combined = layout.relative_error() + 0.5 / hdr_half_buckets;
    for rank in RANKS {
        let ours = h.percentile(rank, EquivalentValue::Midpoint).unwrap().value as f64;
        let theirs = hdr.value_at_quantile(decimal_quantile(rank)) as f64;
        let rel = (ours - theirs).abs() / theirs.max(1.0);
        assert!(
            rel <= combined * 2.0 || (ours - theirs).abs() <= 1.0,
            "rank {rank}: {ours} vs {theirs}"
        );
    }
    check_against_sorted(layout, &mut values);
}
