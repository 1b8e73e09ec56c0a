//! [`NativeHistogram`]: the exponential-bucket form every export format writes, and its
//! fill from any [`HistogramRead`] (one consistent pass that reads and maps).

use picollo_core::read::consistent;
use picollo_core::HistogramRead;

use super::fill::Fill;
use super::{Mapping, OctaveMap, SumEstimate};
use crate::schema::Schema;

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
    pub(super) schema: Schema,
    pub(super) zero_count: u64,
    pub(super) count: u64,
    pub(super) sum: f64,
    pub(super) sum_is_exact: bool,
    /// Non-empty buckets `(index, count)`, increasing index.
    pub(super) buckets: Vec<(i32, u64)>,
    pub(super) straddling: u64,
    pub(super) outside: u64,
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
        // One pass: the kind's bulk read ([`HistogramRead::recorded_runs`]) passes its
        // non-empty buckets to the map as it finds them.
        let octaves = OctaveMap::cached(mapping);
        let mut fill = Fill::new(&octaves, window.first(), &mut self.buckets);
        h.recorded_runs(&mut |start, counts| fill.run(start, counts));
        let totals = fill.finish();
        self.zero_count = self.zero_count.saturating_add(totals.zero);
        self.count = self.count.saturating_add(totals.count);
        self.straddling = self.straddling.saturating_add(totals.straddling);
        sum.sum = sum.sum.saturating_add(totals.sum);
        sum.exact &= totals.sum_exact;
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
    #[inline]
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

    /// Prometheus' sparse form written as protobuf, in one pass: spans `(offset, length)` and
    /// count deltas. The first span's offset is its first bucket's index, later ones the gap
    /// since the previous span; a gap of up to two empty buckets stays inside a span (cheaper
    /// than a new span). Deltas are each bucket's count minus the previous bucket's (the first
    /// minus 0). `spans` gets the `BucketSpan` fields (field `span_field`, with the no-op span
    /// of an empty histogram), `packed` the deltas as packed `sint64` (ZigZag varints).
    #[inline(never)]
    pub(crate) fn encode_spans_and_deltas(
        &self,
        span_field: u32,
        spans: &mut Vec<u8>,
        packed: &mut Vec<u8>,
    ) {
        use crate::proto::wire::{zigzag, Batch};
        debug_assert!(span_field < 16, "a one-byte key");
        spans.clear();
        packed.clear();
        let (mut spans, mut packed) = (Batch::new(spans), Batch::new(packed));
        // The open span: its offset and length.
        let mut open: Option<(i32, u32)> = None;
        let mut previous = 0i64;
        let mut last = 0i32;
        for &(i, n) in &self.buckets {
            open = match open {
                Some((offset, length)) if i - last <= 3 => {
                    // Extend the span over the (at most two) empty buckets in between.
                    for _ in last + 1..i {
                        packed.varint(zigzag(-previous));
                        previous = 0;
                    }
                    Some((offset, length + (i - last) as u32))
                }
                Some((offset, length)) => {
                    spans.pair(span_field, zigzag(i64::from(offset)), u64::from(length));
                    Some((i - last - 1, 1))
                }
                None => Some((i, 1)),
            };
            // Prometheus keeps bucket counts as i64: clamp (2^63 values never happen in
            // practice), so that the deltas cannot wrap.
            let n = n.min(i64::MAX as u64) as i64;
            packed.varint(zigzag(n - previous));
            previous = n;
            last = i;
        }
        // The last span, or the no-op span that marks an empty native histogram.
        let (offset, length) = open.unwrap_or((0, 0));
        spans.pair(span_field, zigzag(i64::from(offset)), u64::from(length));
        spans.finish();
        packed.finish();
    }
}

impl Default for NativeHistogram {
    /// An empty histogram at schema 8.
    fn default() -> Self {
        Self::new(Schema::for_block_scale(8))
    }
}
