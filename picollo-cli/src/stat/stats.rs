//! The statistics of `stat`: summaries of per-run values, the ratio of means with a seeded
//! percentile-bootstrap confidence interval, the Mann–Whitney U test, and outliers.
//!
//! Everything here is plain `f64` arithmetic on the per-run values, written to match the
//! reference implementations it is tested against (`picollo-cli/tests/stat_reference.py`):
//!
//! - the median and percentiles of the runs are run values, by Picollo's one rank rule
//!   ([`rank_count`]: the ⌈p/100 · n⌉-th smallest of n, as HdrHistogram): an integer count
//!   stays an integer;
//! - the bootstrap's interval bounds interpolate linearly between the sorted resampled ratios
//!   (NumPy's default `linear` method), as does the median inside the outlier test
//!   (hyperfine's);
//! - the bootstrap draws with SplitMix64 from a fixed seed, indices by multiply-shift
//!   (`(x · n) >> 64`), `A`'s resample before `B`'s in each of [`RESAMPLES`] rounds;
//! - Mann–Whitney U follows `scipy.stats.mannwhitneyu` (two-sided, `method='auto'`): the exact
//!   distribution of U when a sample has at most 8 values and there are no ties, else the
//!   normal approximation with tie correction and continuity correction;
//! - outliers are hyperfine's: a modified Z-score (`0.6745 · |x − median| / MAD`) above
//!   [`OUTLIER_Z`].

use picollo_core::read::rank_count;

/// Bootstrap resamples per interval.
pub(crate) const RESAMPLES: usize = 10_000;
/// The bootstrap's seed: the same data gives the same interval on every run and machine.
pub(crate) const SEED: u64 = 0x5eed_0000_0000_0020;
/// The confidence level of the intervals.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// The significance level of the Mann–Whitney test.
pub(crate) const ALPHA: f64 = 0.05;
/// A modified Z-score above this marks an outlier (hyperfine's threshold).
pub(crate) const OUTLIER_Z: f64 = 14.0;

/// The figures printed for one counter of one command. The median, range and percentiles
/// are values of the runs ([`value_at`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Summary {
    /// Values (runs where the counter was counted).
    pub(crate) n: usize,
    /// Arithmetic mean.
    pub(crate) mean: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub(crate) stddev: f64,
    /// Median: the value at rank 50.
    pub(crate) median: u64,
    /// Smallest value.
    pub(crate) min: u64,
    /// Largest value.
    pub(crate) max: u64,
    /// 90th percentile, when there are at least 10 values.
    pub(crate) p90: Option<u64>,
    /// 99th percentile, when there are at least 100 values.
    pub(crate) p99: Option<u64>,
}

/// The smallest number of values that resolves percentile `p` (in %): `1 / (1 − p)`, so
/// that the rank is not the maximum by default.
pub(crate) fn runs_for(p: f64) -> usize {
    (100.0 / (100.0 - p)).round() as usize
}

/// The value at percentile `rank` of sorted, non-empty `s`: the [`rank_count`]-th smallest
/// (Picollo's rank rule, as the histograms of `--table`, `--hlog` and `--hgrm` use it).
pub(crate) fn value_at(s: &[u64], rank: f64) -> u64 {
    let count = rank_count(rank, s.len() as u64);
    s[usize::try_from(count).map_or(s.len(), |c| c.min(s.len())) - 1]
}

impl Summary {
    /// The summary of `values`; `None` when empty.
    pub(crate) fn of(values: &[u64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let floats: Vec<f64> = values.iter().map(|&v| v as f64).collect();
        let q = |p: f64| (n >= runs_for(p)).then(|| value_at(&sorted, p));
        Some(Summary {
            n,
            mean: mean(&floats),
            stddev: stddev(&floats),
            median: value_at(&sorted, 50.0),
            min: sorted[0],
            max: sorted[n - 1],
            p90: q(90.0),
            p99: q(99.0),
        })
    }
}

/// The mean of `v` (NaN when empty).
pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The sample standard deviation of `v` (0 for fewer than two values).
pub(crate) fn stddev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (v.len() - 1) as f64).sqrt()
}

/// Quantile `q` (0 to 1) of sorted, non-empty `s`, interpolated linearly (NumPy's default).
pub(crate) fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(s.len() - 1);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// SplitMix64: tiny, fast, and easy to reproduce in the Python reference.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An index below `n` (multiply-shift; the bias is below 2⁻⁵⁰ for any run count).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The ratio of means `mean(b) / mean(a)` with its bootstrap confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ratio {
    /// `mean(b) / mean(a)`.
    pub(crate) ratio: f64,
    /// Lower bound of the [`CONFIDENCE`] interval.
    pub(crate) low: f64,
    /// Upper bound.
    pub(crate) high: f64,
}

/// The ratio of means of `b` to `a` with a percentile-bootstrap interval ([`RESAMPLES`]
/// resamples of each, seeded with [`SEED`]). `None` when a side is empty or `a`'s mean is
/// not positive (no ratio to speak of).
pub(crate) fn ratio_of_means(a: &[f64], b: &[f64]) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    if ma.is_nan() || ma <= 0.0 || !mb.is_finite() {
        return None;
    }
    let mut rng = SplitMix64::new(SEED);
    let mut ratios = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let sa: f64 = (0..a.len()).map(|_| a[rng.below(a.len())]).sum();
        let sb: f64 = (0..b.len()).map(|_| b[rng.below(b.len())]).sum();
        let ra = sa / a.len() as f64;
        let rb = sb / b.len() as f64;
        // A resample of a positive mean can be 0 only when `a` holds zeros; such a
        // resample says "unbounded", which sorts last.
        ratios.push(if ra > 0.0 { rb / ra } else { f64::INFINITY });
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some(Ratio {
        ratio: mb / ma,
        low: quantile_sorted(&ratios, tail),
        high: quantile_sorted(&ratios, 1.0 - tail),
    })
}

/// How the Mann–Whitney p-value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MwMethod {
    /// The exact distribution of U (small samples without ties).
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Asymptotic,
}

impl MwMethod {
    /// The name SciPy gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            MwMethod::Exact => "exact",
            MwMethod::Asymptotic => "asymptotic",
        }
    }
}

/// A two-sided Mann–Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MannWhitney {
    /// U of the first sample (SciPy's `statistic`).
    pub(crate) u: f64,
    /// The two-sided p-value.
    pub(crate) p: f64,
    /// How `p` was computed.
    pub(crate) method: MwMethod,
}

/// Ranks of `all` (1-based, ties get their average rank), and the tie-group sizes.
fn ranks(all: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&i, &j| all[i].total_cmp(&all[j]));
    let mut r = vec![0.0; all.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && all[idx[j]] == all[idx[i]] {
            j += 1;
        }
        let avg = (i + 1 + j) as f64 / 2.0;
        for &k in &idx[i..j] {
            r[k] = avg;
        }
        ties.push(j - i);
        i = j;
    }
    (r, ties)
}

/// The two-sided Mann–Whitney U test of `x` against `y`, as `scipy.stats.mannwhitneyu(x, y)`
/// computes it. `None` when a sample is empty.
pub(crate) fn mann_whitney(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let u = u1.max(u2);
    let has_ties = ties.iter().any(|&t| t > 1);
    let (p, method) = if n1.min(n2) <= 8 && !has_ties {
        (exact_sf(u.round() as usize, n1, n2), MwMethod::Exact)
    } else {
        let (fn1, fn2) = (n1 as f64, n2 as f64);
        let n = fn1 + fn2;
        let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
        let s = (fn1 * fn2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
        let z = (u - fn1 * fn2 / 2.0 - 0.5) / s;
        // All values tied: s = 0 and no evidence either way.
        let sf = if z.is_nan() { 0.5 } else { normal_sf(z) };
        (sf, MwMethod::Asymptotic)
    };
    Some(MannWhitney {
        u: u1,
        p: (2.0 * p).clamp(0.0, 1.0),
        method,
    })
}

/// P(U ≥ u) under the null hypothesis, for samples of `n1` and `n2` values without ties.
///
/// By symmetry this is P(U ≤ mn − u): the count of arrangements with U = k is the
/// coefficient of qᵏ in the Gaussian binomial Π (1 − q^(n+i)) / (1 − q^i), i = 1…m, so the
/// lower tail needs the series only up to mn − u (memory m·n/2 at most), divided by
/// C(m+n, m).
fn exact_sf(u: usize, n1: usize, n2: usize) -> f64 {
    let (m, n) = (n1.min(n2), n1.max(n2));
    let max = m * n;
    if u > max {
        return 0.0;
    }
    let k_max = max - u;
    let mut c = vec![0.0f64; k_max + 1];
    c[0] = 1.0;
    for i in 1..=m {
        let a = n + i;
        for k in (a..=k_max).rev() {
            c[k] -= c[k - a];
        }
        for k in i..=k_max {
            c[k] += c[k - i];
        }
    }
    let total: f64 = (1..=m).map(|i| (n + i) as f64 / i as f64).product();
    (c.iter().sum::<f64>() / total).min(1.0)
}

/// The upper tail of the standard normal distribution, `P(Z > z)`, to about 1e-15 relative.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / core::f64::consts::SQRT_2)
}

/// The complementary error function: a series below 2.5 (positive terms, no cancellation),
/// a continued fraction above; `erfc(−x) = 2 − erfc(x)`.
pub(crate) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x > 27.3 {
        return 0.0; // below the smallest subnormal
    }
    if x < 2.5 {
        // erf(x) = 2/√π · e^(−x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))
        let mut term = x;
        let mut sum = x;
        let mut k = 0.0;
        loop {
            k += 1.0;
            term *= 2.0 * x * x / (2.0 * k + 1.0);
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        1.0 - 2.0 / core::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    } else {
        // erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))), by Lentz's method.
        let tiny = 1e-300;
        let mut f = x;
        let mut c = x;
        let mut d = 0.0;
        for k in 1..500 {
            let a = k as f64 / 2.0;
            d = x + a * d;
            d = if d.abs() < tiny { tiny } else { d };
            c = x + a / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-x * x).exp() / core::f64::consts::PI.sqrt() / f
    }
}

/// Indices of the outliers of `v`: modified Z-score above [`OUTLIER_Z`]. None when the
/// median absolute deviation is 0 (most values equal: nothing stands out statistically).
pub(crate) fn outliers(v: &[f64]) -> Vec<usize> {
    if v.len() < 3 {
        return Vec::new();
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let med = quantile_sorted(&s, 0.5);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = quantile_sorted(&dev, 0.5);
    if mad.is_nan() || mad <= 0.0 {
        return Vec::new();
    }
    (0..v.len())
        .filter(|&i| 0.6745 * (v[i] - med).abs() / mad > OUTLIER_Z)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_take_run_values_by_the_rank_rule() {
        let s = Summary::of(&[4, 1, 3, 2]).unwrap();
        assert_eq!((s.n, s.mean, s.median, s.min, s.max), (4, 2.5, 2, 1, 4));
        assert!((s.stddev - 1.290_994_448_735_805_6).abs() < 1e-15);
        assert_eq!((s.p90, s.p99), (None, None));
        // ⌈p/100 · n⌉-th smallest: the 90th and 99th of 1..=100, the 50th and 90th of 1..=12.
        let v: Vec<u64> = (1..=100).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!((s.median, s.p90, s.p99), (50, Some(90), Some(99)));
        let v: Vec<u64> = (1..=12).rev().collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!((s.median, s.p90, s.p99), (6, Some(11), None));
        assert_eq!(value_at(&[7], 50.0), 7);
        assert!(Summary::of(&[]).is_none());
        assert_eq!((runs_for(90.0), runs_for(99.0)), (10, 100));
    }

    #[test]
    fn erfc_known_values() {
        // Values from mpmath at 30 digits.
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (6.0, 2.151_973_671_249_891_3e-17),
            (-1.0, 1.842_700_792_949_715),
        ] {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 1e-13,
                "erfc({x}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn exact_distribution_small_cases() {
        // n1 = n2 = 2: U takes 0,0,1,2,2... counts [1,1,2,1,1] of 6 arrangements.
        assert!((exact_sf(4, 2, 2) - 1.0 / 6.0).abs() < 1e-15);
        assert!((exact_sf(2, 2, 2) - 4.0 / 6.0).abs() < 1e-15);
        // Completely separated samples of 5: p = 2 / C(10, 5).
        let m = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(m.method, MwMethod::Exact);
        assert_eq!(m.u, 0.0);
        assert!((m.p - 2.0 / 252.0).abs() < 1e-15);
        let all_tied = mann_whitney(&[1.0; 10], &[1.0; 10]).unwrap();
        assert_eq!(all_tied.method, MwMethod::Asymptotic);
        assert_eq!(all_tied.p, 1.0);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_ratio() {
        let a: Vec<f64> = (0..20).map(|i| 100.0 + f64::from(i % 5)).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let r = ratio_of_means(&a, &b).unwrap();
        assert!((r.ratio - 1.5).abs() < 1e-12);
        assert!(
            r.low < 1.5 && r.high > 1.5 && r.low > 1.4 && r.high < 1.6,
            "{r:?}"
        );
        assert_eq!(ratio_of_means(&a, &b), Some(r));
        assert!(ratio_of_means(&[0.0, 0.0], &b).is_none());
        assert!(ratio_of_means(&[], &b).is_none());
    }

    #[test]
    fn outliers_by_modified_z_score() {
        let mut v = vec![10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 10.02];
        assert!(outliers(&v).is_empty());
        v.push(30.0);
        assert_eq!(outliers(&v), vec![7]);
        assert!(outliers(&[1.0, 1.0, 1.0, 5.0]).is_empty(), "MAD 0");
    }
}
