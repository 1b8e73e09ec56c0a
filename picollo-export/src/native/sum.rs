//! [`SumEstimate`]: a histogram's sum as its buckets know it.

use picollo_core::Layout;

/// The sum of a histogram's values as its buckets know it: exact integer arithmetic over bucket
/// midpoints (exact for single-integer buckets), outside values at the window's edges.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SumEstimate {
    pub(crate) sum: u128,
    pub(crate) exact: bool,
}

impl Default for SumEstimate {
    fn default() -> Self {
        SumEstimate {
            sum: 0,
            exact: true,
        }
    }
}

impl SumEstimate {
    /// `n` values in bucket `logical`.
    pub(crate) fn add_bucket(&mut self, layout: Layout, logical: usize, n: u64) {
        self.add(layout.lo(logical), layout.width(logical), n);
    }

    /// `n` values in the bucket `[lo, lo + width)`.
    #[inline]
    pub(crate) fn add(&mut self, lo: u64, width: u64, n: u64) {
        let mid = (lo + width / 2) as u128;
        self.sum = self.sum.saturating_add(mid * n as u128);
        self.exact &= width == 1;
    }

    /// `n` values outside the window, counted at the window's edge `edge`.
    pub(crate) fn add_outside(&mut self, edge: u64, n: u64) {
        self.sum = self.sum.saturating_add(edge as u128 * n as u128);
        self.exact = false;
    }

    /// The sum as the nearest `f64` (finite: at most 2^128), and whether it is exact.
    pub(crate) fn finish(self) -> (f64, bool) {
        (self.sum as f64, self.exact)
    }
}
