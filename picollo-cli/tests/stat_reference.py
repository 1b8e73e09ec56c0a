#!/usr/bin/env python3
"""Reference statistics for `picollo stat`, from SciPy and NumPy (tests/stat.rs runs it).

Reads {"cases": [{"a": [...], "b": [...]}, ...]} on stdin and prints, per case, what
picollo must report: SciPy's two-sided Mann-Whitney U (method 'auto'), the seeded
percentile bootstrap of mean(b)/mean(a) (SplitMix64, indices by multiply-shift, a's resample
drawn before b's, NumPy's linear percentiles of the resampled ratios) and the summary of b:
mean and standard deviation from NumPy, the median and p90 by Picollo's rank rule (the
ceil(p/100 * n)-th smallest value, HdrHistogram's getValueAtPercentile on exact values).
"""
import json
import sys

import numpy as np
from scipy.stats import mannwhitneyu

RESAMPLES = 10_000
SEED = 0x5EED_0000_0000_0020
MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def bootstrap(a, b):
    rng = SplitMix64(SEED)
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ratios = np.empty(RESAMPLES)
    for k in range(RESAMPLES):
        ia = [rng.below(len(a)) for _ in range(len(a))]
        ib = [rng.below(len(b)) for _ in range(len(b))]
        ratios[k] = b[ib].mean() / a[ia].mean()
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(b.mean() / a.mean()), float(low), float(high)


def rank_value(values, p):
    """The ceil(p/100 * n)-th smallest of `values`, in integers (p is a whole percent)."""
    s = sorted(values)
    k = max(1, -(-p * len(s) // 100))
    return float(s[k - 1])


def main():
    cases = json.load(sys.stdin)["cases"]
    out = []
    for c in cases:
        a, b = c["a"], c["b"]
        ties = len(set(a + b)) < len(a) + len(b)
        method = "exact" if min(len(a), len(b)) <= 8 and not ties else "asymptotic"
        res = mannwhitneyu(a, b, alternative="two-sided", method="auto")
        ratio, low, high = bootstrap(a, b)
        bb = np.asarray(b, dtype=float)
        out.append(
            {
                "u": float(res.statistic),
                "p": float(res.pvalue),
                "method": method,
                "ratio": ratio,
                "ci_low": low,
                "ci_high": high,
                "mean": float(bb.mean()),
                "stddev": float(bb.std(ddof=1)) if len(b) > 1 else 0.0,
                "median": rank_value(b, 50),
                "min": float(bb.min()),
                "max": float(bb.max()),
                "p90": rank_value(b, 90) if len(b) >= 10 else None,
            }
        )
    json.dump({"scipy": __import__("scipy").__version__, "results": out}, sys.stdout)


if __name__ == "__main__":
    main()
