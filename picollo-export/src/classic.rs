//! Classic Prometheus/OpenMetrics histograms: cumulative `_bucket{le="…"}` counts at fixed
//! boundaries, for servers and tools that do not take native histograms.
//!
//! A Picollo bucket goes, whole, to the first boundary at or above its highest value (the same
//! upper-edge rule as the native mapping), so a boundary `b` is exact (counts exactly the
//! values `<= b`) when `b` is the highest value of a Picollo bucket. The derived boundaries,
//! `le = 2^m - 1`, always are: every power of two starts a Picollo bucket.
//!
//! Underflow counts at the first boundary at or above the window's lowest value minus one
//! (every underflow value is below the window), overflow only in `+Inf`.

use picollo_core::read::consistent;
use picollo_core::{HistogramRead, Layout, Window};

use crate::native::{with_recorded, SumEstimate};
use crate::ExportError;

/// Which `le` boundaries classic histograms get.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ClassicBuckets {
    /// `le = 2^m - 1` for `m = 0, 1, 2, …` up to the first boundary at or above the window's
    /// highest value: one bucket per power of two, every boundary exact. What that costs in
    /// the text formats: a full-range window (all of `u64`) gets 65 boundaries and `+Inf`, 66
    /// `_bucket` lines, about 4.3 KB per series with one short label (a window up to an hour
    /// in nanoseconds, 44 lines and 2.7 KB), where seven [`ClassicBuckets::explicit`]
    /// boundaries take about 580 bytes. Give explicit boundaries (or a narrower window) when
    /// many series are scraped as text; native histograms (protobuf) send only the buckets
    /// that hold values.
    #[default]
    PowersOfTwo,
    /// User-chosen inclusive boundaries, strictly increasing (see [`ClassicBuckets::explicit`]).
    Explicit(Vec<u64>),
}

impl ClassicBuckets {
    /// Checked explicit boundaries.
    ///
    /// # Errors
    /// [`ExportError::InvalidBoundaries`] when empty or not strictly increasing.
    ///
    /// ```
    /// use picollo_export::ClassicBuckets;
    /// assert!(ClassicBuckets::explicit(vec![1_000, 10_000, 100_000]).is_ok());
    /// assert!(ClassicBuckets::explicit(vec![10, 10]).is_err());
    /// assert!(ClassicBuckets::explicit(vec![]).is_err());
    /// ```
    pub fn explicit(bounds: Vec<u64>) -> Result<Self, ExportError> {
        if bounds.is_empty() {
            return Err(ExportError::InvalidBoundaries(
                "no boundary given; give at least one (+Inf is implied)".into(),
            ));
        }
        if let Some(w) = bounds.windows(2).find(|w| w[0] >= w[1]) {
            return Err(ExportError::InvalidBoundaries(format!(
                "{} is followed by {}; give strictly increasing boundaries",
                w[0], w[1]
            )));
        }
        Ok(Self::Explicit(bounds))
    }

    /// The boundaries for a histogram with `layout` over `window`, into `out`.
    pub(crate) fn boundaries_into(&self, layout: Layout, window: Window, out: &mut Vec<u64>) {
        out.clear();
        match self {
            Self::Explicit(b) => out.extend_from_slice(b),
            Self::PowersOfTwo => {
                let max = window.max_value(layout);
                for m in 0..=64u32 {
                    let b = if m == 64 { u64::MAX } else { (1u64 << m) - 1 };
                    out.push(b);
                    if b >= max {
                        break;
                    }
                }
            }
        }
    }
}

/// A histogram in classic cumulative buckets, with its count and sum: the cumulative
/// `_bucket{le="…"}` counts of Prometheus and OpenMetrics at fixed boundaries, for servers and
/// tools that do not take native histograms.
///
/// A Picollo bucket goes, whole, to the first boundary at or above its highest value (the same
/// upper-edge rule as the native mapping), so a boundary `b` is exact (counts exactly the
/// values `<= b`) when `b` is the highest value of a Picollo bucket. The derived boundaries,
/// `le = 2^m - 1`, always are: every power of two starts a Picollo bucket. Underflow counts at
/// the first boundary at or above the window's lowest value minus one (every underflow value is
/// below the window), overflow only in `+Inf`.
///
/// ```
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::{ClassicBuckets, ClassicHistogram};
///
/// let mut h = HistogramBuilder::new().max_trackable(1_000).plain().unwrap();
/// for v in [1, 2, 3, 700] {
///     h.record(v);
/// }
/// let c = ClassicHistogram::from_histogram(&h, &ClassicBuckets::PowersOfTwo);
/// let le: Vec<(u64, u64)> = c.buckets().collect();
/// assert_eq!(le[..3], [(0, 0), (1, 1), (3, 3)]);
/// assert_eq!(le.last(), Some(&(1_023, 4)));
/// assert_eq!((c.count(), c.sum()), (4, 706.0));
/// assert!(c.is_exact());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassicHistogram {
    bounds: Vec<u64>,
    cumulative: Vec<u64>,
    count: u64,
    sum: f64,
    sum_is_exact: bool,
    exact: bool,
}

impl ClassicHistogram {
    /// `h` in `buckets`.
    pub fn from_histogram<H: HistogramRead + ?Sized>(h: &H, buckets: &ClassicBuckets) -> Self {
        let mut c = Self::default();
        c.fill_from(h, buckets);
        c
    }

    /// Refills from `h` (one consistent read), reusing the buffers.
    pub fn fill_from<H: HistogramRead + ?Sized>(&mut self, h: &H, buckets: &ClassicBuckets) {
        let layout = h.layout();
        let window = h.window();
        buckets.boundaries_into(layout, window, &mut self.bounds);
        self.exact = self
            .bounds
            .iter()
            .all(|&b| layout.highest(layout.index_of(b)) == b);
        consistent(h, |h| self.fill_once(h, layout, window));
    }

    fn fill_once<H: HistogramRead + ?Sized>(&mut self, h: &H, layout: Layout, window: Window) {
        self.cumulative.clear();
        self.cumulative.resize(self.bounds.len(), 0);
        let mut sum = SumEstimate::default();
        let mut count = 0u64;
        // The slot of the first boundary at or above `highest`; `bounds.len()` means +Inf.
        let slot = |bounds: &[u64], highest: u64| bounds.partition_point(|&b| b < highest);
        let mut put = |cumulative: &mut Vec<u64>, at: usize, n: u64| {
            count = count.saturating_add(n);
            if let Some(c) = cumulative.get_mut(at) {
                *c = c.saturating_add(n);
            }
        };
        let underflow = h.underflow();
        if underflow != 0 {
            let min = window.min_value(layout);
            put(
                &mut self.cumulative,
                slot(&self.bounds, min.saturating_sub(1)),
                underflow,
            );
            sum.add_outside(min, underflow);
        }
        let mut at = 0;
        let (bounds, cumulative) = (&self.bounds, &mut self.cumulative);
        let first = window.first();
        with_recorded(h, |recorded| {
            for &(slot, n) in recorded {
                let logical = first + slot;
                let highest = layout.highest(logical);
                // Buckets come in increasing order: move the boundary pointer forward only.
                while at < bounds.len() && bounds[at] < highest {
                    at += 1;
                }
                put(cumulative, at, n);
                sum.add_bucket(layout, logical, n);
            }
        });
        let overflow = h.overflow();
        if overflow != 0 {
            put(&mut self.cumulative, self.bounds.len(), overflow);
            sum.add_outside(window.max_value(layout), overflow);
        }
        let mut running = 0u64;
        for c in &mut self.cumulative {
            running = running.saturating_add(*c);
            *c = running;
        }
        self.count = count;
        (self.sum, self.sum_is_exact) = sum.finish();
    }

    /// `(le, values <= le)` for every finite boundary, in increasing order; `+Inf` is
    /// [`ClassicHistogram::count`].
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.bounds
            .iter()
            .copied()
            .zip(self.cumulative.iter().copied())
    }

    /// Every value, outside ones included (the `+Inf` bucket and `_count`).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum, as [`crate::NativeHistogram::sum`] computes it.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Whether the sum is exact.
    pub fn sum_is_exact(&self) -> bool {
        self.sum_is_exact
    }

    /// Replaces the estimated sum with an exact one kept by the source.
    pub fn set_exact_sum(&mut self, sum: u128) {
        self.sum = sum as f64;
        self.sum_is_exact = true;
    }

    /// Whether every boundary is the highest value of a Picollo bucket, so that each
    /// `le` counts exactly the values at or below it.
    pub fn is_exact(&self) -> bool {
        self.exact
    }
}
