//! Picollo buckets mapped onto exponential (native) buckets: the conversion every export
//! format shares.
//!
//! See the [crate docs](crate) for the rule, its bound and a worked example. In short:
//!
//! - a Picollo bucket `[lo, hi)` goes, whole, to the native bucket holding its highest value
//!   `hi - 1` ([`Mapping::native_index`]); bucket 0 (the value 0) goes to the zero bucket;
//! - underflow goes to the native bucket holding the window's lowest value, overflow to the one
//!   holding its highest value, so the count is exact and nothing is dropped;
//! - the sum is exact when every non-empty bucket holds a single integer and nothing is outside
//!   the window, and otherwise estimated from bucket midpoints (relative error at most
//!   `0.5 / B`); a source that keeps an exact sum replaces it ([`NativeHistogram::set_exact_sum`]).

use picollo_core::read::consistent;
use picollo_core::{HistogramRead, Layout};

use crate::schema::Schema;

/// Where each Picollo bucket of one layout goes at one schema.
///
/// ```
/// use picollo_core::Layout;
/// use picollo_export::{Mapping, Schema};
///
/// let layout = Layout::from_block_scale(3).unwrap(); // B = 8: …, [18, 20), [20, 22), …
/// let schema = Schema::new(3).unwrap(); // edges …, 19.03, 20.75, 22.63, …
/// let m = Mapping::new(layout, schema);
/// let i = layout.index_of(20); // [20, 22) holds 20 <= 20.75 < 21: it straddles an edge
/// assert!(!m.is_exact(i));
/// assert_eq!(m.native_index(i), schema.index_of(21)); // and goes with its highest value
/// assert!(m.is_exact(layout.index_of(18))); // 18 and 19 both lie in (17.45, 19.03]
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    layout: Layout,
    schema: Schema,
}

impl Mapping {
    /// The mapping of `layout` onto `schema`.
    pub const fn new(layout: Layout, schema: Schema) -> Self {
        Mapping { layout, schema }
    }

    /// The mapping onto the default schema of `layout`: the finest that is not finer than
    /// the layout ([`Schema::for_block_scale`]).
    pub const fn for_layout(layout: Layout) -> Self {
        Self::new(layout, Schema::for_block_scale(layout.block_scale()))
    }

    /// The Picollo layout.
    pub const fn layout(&self) -> Layout {
        self.layout
    }

    /// The target schema.
    pub const fn schema(&self) -> Schema {
        self.schema
    }

    /// The native bucket receiving Picollo bucket `logical`: the one holding the bucket's
    /// highest value. `None` for bucket 0 (the value 0), which goes to the zero bucket.
    pub const fn native_index(&self, logical: usize) -> Option<i32> {
        self.schema.index_of(self.layout.highest(logical))
    }

    /// Whether Picollo bucket `logical` lies inside one native bucket, so that every value
    /// recorded in it is counted in the native bucket that value belongs to.
    pub const fn is_exact(&self, logical: usize) -> bool {
        let lo = self.schema.index_of(self.layout.lo(logical));
        let hi = self.schema.index_of(self.layout.highest(logical));
        match (lo, hi) {
            (Some(a), Some(b)) => a == b,
            (None, None) => true,
            _ => false,
        }
    }

    /// The bound of the rule: a value `v` counted in native bucket `(L, U]` satisfies
    /// `L < v · factor` and `v <= U`, with `factor = 1 + 2^-k` (`k` the block scale).
    pub fn relative_bound_factor(&self) -> f64 {
        1.0 + 1.0 / self.layout.block_size() as f64
    }
}

/// A histogram in exponential buckets: a zero bucket plus the non-empty buckets in index
/// order. The format-neutral form that the Prometheus and OpenTelemetry encoders write.
///
/// Buckets use Prometheus numbering (bucket `i` covers `(2^((i-1)/2^n), 2^(i/2^n)]`).
///
/// ```
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::NativeHistogram;
///
/// let mut h = HistogramBuilder::new().relative_error(0.01).plain().unwrap(); // B = 64
/// for v in [0, 3, 100, 100, 5_000] {
///     h.record(v);
/// }
/// let n = NativeHistogram::from_histogram(&h);
/// assert_eq!(n.schema().get(), 6);
/// assert_eq!((n.count(), n.zero_count()), (5, 1));
/// // 0, 3 and 100 have unit buckets; 5,000 is in [4,992, 5,056), counted at its midpoint.
/// assert_eq!(n.sum(), 5_227.0);
/// assert!(!n.sum_is_exact());
/// assert_eq!(n.buckets().count(), 3);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct NativeHistogram {
    schema: Schema,
    zero_count: u64,
    count: u64,
    sum: f64,
    sum_is_exact: bool,
    /// Non-empty buckets `(index, count)`, increasing index.
    buckets: Vec<(i32, u64)>,
    straddling: u64,
    outside: u64,
}

impl NativeHistogram {
    /// An empty histogram at `schema`.
    pub fn new(schema: Schema) -> Self {
        NativeHistogram {
            schema,
            zero_count: 0,
            count: 0,
            sum: 0.0,
            sum_is_exact: true,
            buckets: Vec::new(),
            straddling: 0,
            outside: 0,
        }
    }

    /// `h` at its layout's default schema ([`Mapping::for_layout`]).
    pub fn from_histogram<H: HistogramRead + ?Sized>(h: &H) -> Self {
        let mapping = Mapping::for_layout(h.layout());
        let mut n = Self::new(mapping.schema());
        n.fill_from(h, mapping);
        n
    }

    /// Refills this histogram from `h` through `mapping` (which must be for `h`'s layout;
    /// the layout's default mapping is used when it is not). The read is consistent: redone
    /// if a reset of `h` overlapped it. The dense buffer is reused, so a scrape loop does not
    /// allocate once it has seen its widest histogram.
    pub fn fill_from<H: HistogramRead + ?Sized>(&mut self, h: &H, mapping: Mapping) {
        let layout = h.layout();
        let mapping = if mapping.layout() == layout {
            mapping
        } else {
            Mapping::new(layout, mapping.schema())
        };
        consistent(h, |h| self.fill_once(h, mapping));
    }

    fn fill_once<H: HistogramRead + ?Sized>(&mut self, h: &H, mapping: Mapping) {
        self.clear(mapping.schema());
        let layout = mapping.layout();
        let window = h.window();
        let mut sum = SumEstimate::default();
        let underflow = h.underflow();
        if underflow != 0 {
            let edge = window.min_value(layout);
            self.add(mapping.schema().index_of(edge), underflow);
            sum.add_outside(edge, underflow);
            self.outside = self.outside.saturating_add(underflow);
        }
        let schema = mapping.schema();
        for_each_recorded(h, |logical, n| {
            let (lo, width) = (layout.lo(logical), layout.width(logical));
            // Mapping::native_index: the native bucket of the highest value.
            let index = schema.index_of(lo + (width - 1));
            self.add(index, n);
            sum.add(lo, width, n);
            // Mapping::is_exact, from the index at hand.
            if width != 1 && schema.index_of(lo) != index {
                self.straddling = self.straddling.saturating_add(n);
            }
        });
        let overflow = h.overflow();
        if overflow != 0 {
            let edge = window.max_value(layout);
            self.add(mapping.schema().index_of(edge), overflow);
            sum.add_outside(edge, overflow);
            self.outside = self.outside.saturating_add(overflow);
        }
        (self.sum, self.sum_is_exact) = sum.finish();
    }

    fn clear(&mut self, schema: Schema) {
        self.schema = schema;
        self.zero_count = 0;
        self.count = 0;
        self.sum = 0.0;
        self.sum_is_exact = true;
        self.buckets.clear();
        self.straddling = 0;
        self.outside = 0;
    }

    /// Adds `n` to native bucket `index` (`None`: the zero bucket).
    fn add(&mut self, index: Option<i32>, n: u64) {
        self.count = self.count.saturating_add(n);
        let Some(i) = index else {
            self.zero_count = self.zero_count.saturating_add(n);
            return;
        };
        match self.buckets.last_mut() {
            Some((last, count)) if *last == i => *count = count.saturating_add(n),
            Some((last, _)) if *last > i => {
                // Mapping is monotone and callers add in order: only a safety net.
                match self.buckets.binary_search_by_key(&i, |b| b.0) {
                    Ok(at) => self.buckets[at].1 = self.buckets[at].1.saturating_add(n),
                    Err(at) => self.buckets.insert(at, (i, n)),
                }
            }
            _ => self.buckets.push((i, n)),
        }
    }

    /// Replaces the estimated sum with an exact one kept by the source (see
    /// [`crate::Summed`]); converted to the nearest `f64`.
    pub fn set_exact_sum(&mut self, sum: u128) {
        self.sum = sum as f64;
        self.sum_is_exact = true;
    }

    /// The schema.
    pub fn schema(&self) -> Schema {
        self.schema
    }

    /// Values in the zero bucket: the recorded zeros.
    pub fn zero_count(&self) -> u64 {
        self.zero_count
    }

    /// Every value: the zero bucket, the buckets, and the source's underflow and overflow
    /// (which sit in the edge buckets). Exact (saturating at `u64::MAX`).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the values: exact when [`NativeHistogram::sum_is_exact`], otherwise the
    /// sum of bucket midpoints (underflow and overflow at the window's edges). Never NaN.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Whether [`NativeHistogram::sum`] is the exact sum (up to `f64` rounding above 2^53).
    pub fn sum_is_exact(&self) -> bool {
        self.sum_is_exact
    }

    /// The non-empty buckets as `(index, count)`, in increasing index order.
    pub fn buckets(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.buckets.iter().copied()
    }

    /// The dense form OpenTelemetry uses: the first non-empty bucket's index and the counts
    /// from it to the last non-empty bucket, empty ones as 0. `None` when no bucket is used.
    pub fn dense(&self) -> Option<(i32, Vec<u64>)> {
        let (&(first, _), &(last, _)) = (self.buckets.first()?, self.buckets.last()?);
        let mut counts = vec![0u64; (last - first) as usize + 1];
        for &(i, n) in &self.buckets {
            counts[(i - first) as usize] = n;
        }
        Some((first, counts))
    }

    /// Values recorded in Picollo buckets that straddle a native edge (placed by the rule
    /// with its bound instead of exactly). 0 means the buckets are exactly what recording the
    /// values into a native histogram would give (outside values aside).
    pub fn straddling_count(&self) -> u64 {
        self.straddling
    }

    /// Values that were outside the source's window (placed at the window's edges).
    pub fn outside_count(&self) -> u64 {
        self.outside
    }

    /// Prometheus' sparse form: spans `(offset, length)` and count deltas. The first span's
    /// offset is its first bucket's index, later ones the gap since the previous span; a gap
    /// of up to two empty buckets stays inside a span (cheaper than a new span). Deltas are
    /// each bucket's count minus the previous bucket's (the first minus 0).
    pub fn spans_and_deltas(&self, spans: &mut Vec<(i32, u32)>, deltas: &mut Vec<i64>) {
        spans.clear();
        deltas.clear();
        let mut previous = 0i64;
        let mut last: Option<i32> = None; // index of the last bucket emitted
        for &(i, n) in &self.buckets {
            match last {
                Some(l) if i - l <= 3 => {
                    // Extend the span over the (at most two) empty buckets in between.
                    for _ in l + 1..i {
                        deltas.push(-previous);
                        previous = 0;
                    }
                    if let Some(span) = spans.last_mut() {
                        span.1 += (i - l) as u32;
                    }
                }
                Some(l) => spans.push((i - l - 1, 1)),
                None => spans.push((i, 1)),
            }
            // Prometheus keeps bucket counts as i64: clamp (2^63 values never happen in
            // practice), so that the deltas cannot wrap.
            let n = n.min(i64::MAX as u64) as i64;
            deltas.push(n - previous);
            previous = n;
            last = Some(i);
        }
    }
}

/// Calls `f(logical index, count)` for every non-empty bucket of `h`, in increasing order.
/// Empty runs are skipped with one [`HistogramRead::sum_range`] per 16 cells (vectorized for
/// plain storage, one shard walk for thread-local): full-range histograms are mostly empty.
pub(crate) fn for_each_recorded<H: HistogramRead + ?Sized>(h: &H, mut f: impl FnMut(usize, u64)) {
    const CHUNK: usize = 16;
    let window = h.window();
    let len = window.len();
    let mut s = 0;
    while s < len {
        if s % CHUNK == 0 && s + CHUNK <= len && h.sum_range(s, s + CHUNK) == 0 {
            s += CHUNK;
            continue;
        }
        let n = h.count_at(s);
        if n != 0 {
            f(window.first() + s, n);
        }
        s += 1;
    }
}

/// The sum of a histogram's values as its buckets know it: exact integer arithmetic over bucket
/// midpoints (exact for single-integer buckets), outside values at the window's edges.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SumEstimate {
    sum: u128,
    exact: bool,
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

impl Default for NativeHistogram {
    /// An empty histogram at schema 8.
    fn default() -> Self {
        Self::new(Schema::for_block_scale(8))
    }
}
