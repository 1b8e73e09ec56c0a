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
        // Two passes: the kind's bulk read ([`HistogramRead::recorded_runs`]) collects the
        // non-empty buckets, then one tight loop maps them.
        with_recorded(h, |recorded| {
            self.add_recorded(
                recorded,
                window.first(),
                &OctaveMap::cached(mapping),
                &mut sum,
            )
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

    /// Maps the non-empty buckets `(storage index, count)` of a window starting at logical
    /// bucket `first`, in increasing order, into this histogram.
    fn add_recorded(
        &mut self,
        recorded: &[(usize, u64)],
        first: usize,
        octaves: &OctaveMap,
        sum: &mut SumEstimate,
    ) {
        // Layouts without tables take the general map; with them, everything but the value 0
        // takes the tight loop.
        let split = if octaves.table.is_empty() {
            recorded.len()
        } else {
            // Only the value 0 (the zero bucket) is left to the general map.
            usize::from(recorded.first().is_some_and(|&(slot, _)| first + slot == 0))
        };
        let (general, tabled) = recorded.split_at(split);
        let mut straddling = 0u64;
        for &(slot, n) in general {
            let (lo, width, index, exact) = octaves.bucket(first + slot);
            sum.add(lo, width, n);
            self.add(index, n);
            straddling = straddling.saturating_add(if exact { 0 } else { n });
        }
        if !tabled.is_empty() {
            straddling = straddling.saturating_add(self.add_tabled(tabled, first, octaves, sum));
            let count = tabled.iter().fold(0u64, |c, &(_, n)| c.saturating_add(n));
            self.count = self.count.saturating_add(count);
        }
        self.straddling = self.straddling.saturating_add(straddling);
    }

    /// The tight loop of [`NativeHistogram::add_recorded`] with the tables: the native buckets are written in place, each bucket either merged into
    /// the last one or starting a new one without a branch (which of the two happens depends
    /// on the data and would mispredict); the few values the loop keeps stay in registers.
    /// Returns the values in straddling buckets.
    fn add_tabled(
        &mut self,
        tabled: &[(usize, u64)],
        first: usize,
        octaves: &OctaveMap,
        sum: &mut SumEstimate,
    ) -> u64 {
        let mut sum_exact = true;
        let k = octaves.mapping.layout().block_scale();
        let mask = (1usize << k) - 1;
        let table = &octaves.table[..=mask];
        let schema = octaves.mapping.schema().get() as u32;
        let units = &octaves.units[..];
        // The last bucket so far (underflow or a unit bucket) may merge with the first here.
        let previous = self.buckets.pop();
        let base = self.buckets.len();
        self.buckets.resize(base + tabled.len() + 1, (0, 0));
        let out = &mut self.buckets[base..];
        let (mut last, mut at) = match previous {
            Some(b) => {
                out[0] = b;
                (b, 1)
            }
            None => ((i32::MIN, 0), 0),
        };
        let (mut total, mut straddling, mut overflowed) = (0u128, 0u64, false);
        for &(slot, n) in tabled {
            let logical = first + slot;
            let block = (logical >> k) as u32;
            let (index, exact, mid) = if block < 2 {
                // A unit bucket: the value itself (sorted first: a predictable branch).
                (
                    units.get(logical).copied().unwrap_or(0),
                    true,
                    logical as u64,
                )
            } else {
                let (lo_count, hi_count, e_min) = table[logical & mask];
                let e = block + k - 1;
                let (index, exact) = if e >= u32::from(e_min) {
                    (
                        ((e as i32) << schema) + i32::from(hi_count),
                        lo_count == hi_count,
                    )
                } else {
                    let (_, _, index, exact) = octaves.bucket(logical);
                    (index.unwrap_or(0), exact)
                };
                // Midpoint: lo + width / 2, with lo = (B + j) << (block - 1).
                let lo = (((1usize << k) | (logical & mask)) as u64) << (block - 1);
                (index, exact, lo + (1u64 << (block - 2)))
            };
            sum_exact &= block < 2;
            let (t, o) = total.overflowing_add(u128::from(mid) * u128::from(n));
            let (st, so) = straddling.overflowing_add(if exact { 0 } else { n });
            (total, straddling, overflowed) = (t, st, overflowed | o | so);
            let merge = index == last.0;
            let count = if merge { last.1.saturating_add(n) } else { n };
            at -= usize::from(merge && at > 0);
            last = (index, count);
            if let Some(b) = out.get_mut(at) {
                *b = last;
            }
            at += 1;
        }
        self.buckets.truncate(base + at);
        if !self.buckets.is_sorted_by_key(|b| b.0) {
            // Never: the mapping is monotone and buckets come in order.
            let mut merged: Vec<(i32, u64)> = Vec::new();
            let mut all = std::mem::take(&mut self.buckets);
            all.sort_by_key(|b| b.0);
            for (i, n) in all {
                match merged.last_mut() {
                    Some((l, c)) if *l == i => *c = c.saturating_add(n),
                    _ => merged.push((i, n)),
                }
            }
            self.buckets = merged;
        }
        sum.exact &= sum_exact;
        sum.sum = if overflowed {
            u128::MAX
        } else {
            sum.sum.saturating_add(total)
        };
        if overflowed {
            u64::MAX
        } else {
            straddling
        }
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

    /// Values that were outside the source's window (placed at the window's edges).
    pub fn outside_count(&self) -> u64 {
        self.outside
    }

    /// Prometheus' sparse form: spans `(offset, length)` and count deltas. The first span's
    /// offset is its first bucket's index, later ones the gap since the previous span; a gap
    /// of up to two empty buckets stays inside a span (cheaper than a new span). Deltas are
    /// each bucket's count minus the previous bucket's (the first minus 0).
    pub fn spans_and_deltas(&self, spans: &mut Vec<(i32, u32)>, deltas: &mut Vec<i64>) {
        deltas.clear();
        self.for_each_span_delta(spans, |d| deltas.push(d));
    }

    /// [`NativeHistogram::spans_and_deltas`] written as protobuf, in one pass: `spans` gets
    /// the `BucketSpan` fields (field `span_field`, with the no-op span of an empty
    /// histogram), `packed` the deltas as packed `sint64` (ZigZag varints).
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
            // As in `spans_and_deltas`: counts clamped to i64.
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

    fn for_each_span_delta(&self, spans: &mut Vec<(i32, u32)>, mut delta: impl FnMut(i64)) {
        spans.clear();
        let mut previous = 0i64;
        let mut last: Option<i32> = None; // index of the last bucket emitted
        for &(i, n) in &self.buckets {
            match last {
                Some(l) if i - l <= 3 => {
                    // Extend the span over the (at most two) empty buckets in between.
                    for _ in l + 1..i {
                        delta(-previous);
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
            delta(n - previous);
            previous = n;
            last = Some(i);
        }
    }
}

/// [`Mapping::native_index`] and [`Mapping::is_exact`] from tables over one block of the
/// layout, for scrapes that map thousands of buckets per histogram.
///
/// A Picollo bucket at logical index `L` in block `b >= 2` (width `w = 2^(b-1) >= 2`) is
/// `[lo, hi]` with `lo = 2^e·(1 + j/B)`, `hi = 2^e·(1 + (j+1)/B) - 1`, `e = b + k - 1`,
/// `j = L mod B`. A native index at schema `n > 0` is `e·2^n` plus one more than the number
/// of edges `2^(t/2^n)` below the value's mantissa (`v / 2^e`), or exactly `e·2^n` for a
/// power of two. The mantissa of `lo` is `1 + j/B`, the same in every block, so its count is
/// a table entry. The mantissa of `hi` is `R - 2^-e` with `R = 1 + (j+1)/B`: no edge lies in
/// `[R - 2^-e, R)` once `2^-e` is below `R`'s distance to the nearest edge under it, and then
/// `hi` counts as `R` does, another table entry. The table keeps, per `j`, the smallest `e`
/// for which that holds (from the 128-bit edges of [`crate::schema::EDGES`], rounded so the
/// test is conservative); below it, and for unit buckets and schemas `n <= 0`, the map
/// computes [`Schema::index_of`] as [`Mapping`] does. The unit tests check it against
/// [`Mapping`] for every bucket of many layouts.
pub(crate) struct OctaveMap {
    mapping: Mapping,
    /// Per `j`: `(count for lo, count for hi, smallest e for the hi entry)`; empty when the
    /// tables are not used (schemas `<= 0`, block scales above [`OctaveMap::MAX_SCALE`]).
    table: Vec<(u16, u16, u8)>,
    /// With the table: the native index of each unit bucket (blocks 0 and 1, where the
    /// logical index is the value), 0 for the value 0 (which goes to the zero bucket).
    units: Vec<i32>,
}

impl OctaveMap {
    /// Block scales with tables (16,384 entries at most).
    const MAX_SCALE: u32 = 14;

    fn new(mapping: Mapping) -> Self {
        let (layout, schema) = (mapping.layout(), mapping.schema());
        let (k, n) = (layout.block_scale(), schema.get());
        if n <= 0 || k > Self::MAX_SCALE {
            return OctaveMap {
                mapping,
                table: Vec::new(),
                units: Vec::new(),
            };
        }
        let n = n as u32;
        let b = 1u128 << k;
        // Schema-n edges, t = 1..2^n - 1, as 2^127-scaled fixed point rounded down.
        let edges: Vec<u128> = (1..1usize << n)
            .map(|t| crate::schema::EDGES[t << (8 - n)])
            .collect();
        let table = (0..b)
            .map(|j| {
                // lo: mantissa 1 + j/B (exact: a dyadic rational, never an edge).
                let lo = if j == 0 {
                    0
                } else {
                    let m = (b + j) << (127 - k);
                    edges.partition_point(|&e| e < m) as u16 + 1
                };
                if j + 1 == b {
                    // R = 2: every edge lies below; the nearest is 2^((2^n-1)/2^n).
                    let top = *edges.last().unwrap_or(&(1u128 << 127));
                    let gap = (u128::MAX - top).saturating_add(1); // 2^128 - top
                    return (lo, edges.len() as u16 + 1, min_exponent(gap));
                }
                let r = (b + j + 1) << (127 - k);
                let below = edges.partition_point(|&e| e < r);
                let nearest = if below == 0 {
                    1u128 << 127
                } else {
                    edges[below - 1]
                };
                (lo, below as u16 + 1, min_exponent(r - nearest))
            })
            .collect();
        let units = (0..2u64 << k)
            .map(|v| schema.index_of(v).unwrap_or(0))
            .collect();
        OctaveMap {
            mapping,
            table,
            units,
        }
    }

    /// The map for `mapping`, from a small per-thread cache (a scrape maps every histogram of
    /// one layout with the same tables).
    fn cached(mapping: Mapping) -> std::rc::Rc<OctaveMap> {
        use std::cell::RefCell;
        use std::rc::Rc;
        thread_local! {
            static MAPS: RefCell<Vec<Rc<OctaveMap>>> = const { RefCell::new(Vec::new()) };
        }
        // A scrape from a thread-local destructor (the cache already gone) builds its map.
        MAPS.try_with(|maps| {
            let mut maps = maps.borrow_mut();
            if let Some(m) = maps.iter().find(|m| m.mapping == mapping) {
                return m.clone();
            }
            let m = Rc::new(OctaveMap::new(mapping));
            if maps.len() >= 8 {
                maps.remove(0);
            }
            maps.push(m.clone());
            m
        })
        .unwrap_or_else(|_| Rc::new(OctaveMap::new(mapping)))
    }

    /// Bucket `logical`'s lowest value and width, [`Mapping::native_index`] and
    /// [`Mapping::is_exact`].
    #[inline(always)]
    fn bucket(&self, logical: usize) -> (u64, u64, Option<i32>, bool) {
        let layout = self.mapping.layout();
        let schema = self.mapping.schema();
        let k = layout.block_scale();
        let block = logical >> k;
        if block < 2 || logical >= layout.logical_len() {
            // Unit buckets (and the clamp of the layout's own arithmetic past its end).
            let (lo, width) = (layout.lo(logical), layout.width(logical));
            let index = schema.index_of(lo + (width - 1));
            return (lo, width, index, width == 1 || schema.index_of(lo) == index);
        }
        let j = logical & ((1 << k) - 1);
        let shift = block as u32 - 1;
        let (lo, width) = (((1u64 << k) | j as u64) << shift, 1u64 << shift);
        if let Some(&(lo_count, hi_count, e_min)) = self.table.get(j) {
            let e = block as u32 + k - 1;
            if e >= u32::from(e_min) {
                let base = (e as i32) << schema.get();
                return (
                    lo,
                    width,
                    Some(base + i32::from(hi_count)),
                    lo_count == hi_count,
                );
            }
        }
        let index = schema.index_of(lo + (width - 1));
        (lo, width, index, schema.index_of(lo) == index)
    }

    /// `(Mapping::native_index(logical), Mapping::is_exact(logical))`.
    #[cfg(test)]
    fn map(&self, logical: usize) -> (Option<i32>, bool) {
        let (lo, width, index, exact) = self.bucket(logical);
        let layout = self.mapping.layout();
        assert_eq!((lo, width), (layout.lo(logical), layout.width(logical)));
        (index, exact)
    }
}

/// The smallest octave exponent `e` with `2^-e` below a gap of `gap_units - 1` (in units of
/// `2^-127`; the `- 1` covers the rounding down of the edge): `2^(127 - e) <= gap_units - 1`.
fn min_exponent(gap_units: u128) -> u8 {
    match gap_units.checked_sub(1) {
        Some(g) if g > 0 => (127 - g.ilog2()) as u8,
        _ => u8::MAX,
    }
}

thread_local! {
    /// The non-empty buckets of the histogram being read (a scratch buffer per thread).
    static RECORDED: std::cell::RefCell<Vec<(usize, u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f` with the non-empty buckets of `h` (`(storage index, count)`, increasing), read
/// with its own bulk read ([`picollo_alloc::bulk::recorded_into`]) into this thread's scratch
/// buffer: full-range histograms are mostly empty, and a scrape of a thousand of them reads
/// hundreds of megabytes of cells. One pass, not retried: readers bracket it with
/// [`consistent`].
pub(crate) fn with_recorded<H: HistogramRead + ?Sized, R>(
    h: &H,
    f: impl FnOnce(&[(usize, u64)]) -> R,
) -> R {
    RECORDED.with(|recorded| {
        // A re-entrant call (none today) would get a buffer of its own.
        let mut own = Vec::new();
        let mut borrowed = recorded.try_borrow_mut();
        let buf = borrowed.as_deref_mut().unwrap_or(&mut own);
        buf.clear();
        picollo_alloc::bulk::recorded_into(h, buf);
        f(buf)
    })
}

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

impl Default for NativeHistogram {
    /// An empty histogram at schema 8.
    fn default() -> Self {
        Self::new(Schema::for_block_scale(8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{MAX_SCHEMA, MIN_SCHEMA};
    use proptest::prelude::*;

    fn check(map: &OctaveMap, logical: usize) {
        let m = map.mapping;
        assert_eq!(
            map.map(logical),
            (m.native_index(logical), m.is_exact(logical)),
            "{m:?}, bucket {logical} [{}, {}]",
            m.layout().lo(logical),
            m.layout().highest(logical)
        );
    }

    /// Every bucket of every layout up to block scale 10, at every schema.
    #[test]
    fn octave_map_matches_mapping_everywhere() {
        for k in 1..=10 {
            let layout = Layout::from_block_scale(k).unwrap();
            for n in MIN_SCHEMA..=MAX_SCHEMA {
                let map = OctaveMap::new(Mapping::new(layout, Schema::new(n).unwrap()));
                for logical in 0..layout.logical_len() {
                    check(&map, logical);
                }
            }
        }
    }

    /// The fill as the definitions read, bucket by bucket: the oracle of the fast paths.
    fn reference(h: &dyn HistogramRead, mapping: Mapping) -> NativeHistogram {
        let (layout, window, schema) = (h.layout(), h.window(), mapping.schema());
        let mut n = NativeHistogram::new(schema);
        let mut sum = SumEstimate::default();
        let add = |n: &mut NativeHistogram, index: Option<i32>, c: u64| {
            n.count = n.count.saturating_add(c);
            match index {
                None => n.zero_count = n.zero_count.saturating_add(c),
                Some(i) => match n.buckets.iter_mut().find(|b| b.0 == i) {
                    Some(b) => b.1 = b.1.saturating_add(c),
                    None => n.buckets.push((i, c)),
                },
            }
        };
        if h.underflow() != 0 {
            let edge = window.min_value(layout);
            add(&mut n, schema.index_of(edge), h.underflow());
            sum.add_outside(edge, h.underflow());
            n.outside += h.underflow();
        }
        for slot in 0..window.len() {
            let c = h.count_at(slot);
            if c == 0 {
                continue;
            }
            let logical = window.first() + slot;
            add(&mut n, mapping.native_index(logical), c);
            sum.add_bucket(layout, logical, c);
            if !mapping.is_exact(logical) {
                n.straddling = n.straddling.saturating_add(c);
            }
        }
        if h.overflow() != 0 {
            let edge = window.max_value(layout);
            add(&mut n, schema.index_of(edge), h.overflow());
            sum.add_outside(edge, h.overflow());
            n.outside += h.overflow();
        }
        n.buckets.sort_by_key(|b| b.0);
        (n.sum, n.sum_is_exact) = sum.finish();
        n
    }

    /// A `HistogramRead` with only the required methods and `sum_range`: it reads through
    /// the trait's default `recorded_runs`.
    struct Defaults<'a, H>(&'a H);

    impl<H: HistogramRead> HistogramRead for Defaults<'_, H> {
        fn layout(&self) -> Layout {
            self.0.layout()
        }
        fn window(&self) -> picollo_core::Window {
            self.0.window()
        }
        fn count_at(&self, storage_index: usize) -> u64 {
            self.0.count_at(storage_index)
        }
        fn underflow(&self) -> u64 {
            self.0.underflow()
        }
        fn overflow(&self) -> u64 {
            self.0.overflow()
        }
        fn sum_range(&self, start: usize, end: usize) -> u64 {
            self.0.sum_range(start, end)
        }
    }

    /// Every kind's bulk read fills as the oracle: plain storage, snapshots, atomic,
    /// approximate and thread-local histograms, wrappers, and the trait's default.
    fn check_fill(k: u32, schema: i8, lo: u64, hi: u64, values: &[(u64, u64)]) {
        use picollo_alloc::{heap, Snapshot, ThreadLocalHistogram};
        use picollo_core::Window;
        let layout = Layout::from_block_scale(k).unwrap();
        let window = Window::new(layout, lo.min(hi), lo.max(hi)).unwrap();
        let mapping = Mapping::new(layout, Schema::new(schema).unwrap());
        let mut plain = heap::plain::<u64>(layout, window);
        let atomic = heap::atomic::<portable_atomic::AtomicU64>(layout, window);
        let local = ThreadLocalHistogram::<u32>::new(layout, window);
        for &(v, c) in values {
            plain.record_n(v, c);
            atomic.record_n(v, c);
            local.record_n(v, c);
        }
        let expected = reference(&plain, mapping);
        let mut n = NativeHistogram::default();
        n.fill_from(&plain, mapping);
        assert_eq!(n, expected, "plain");
        n.fill_from(&Snapshot::new(&plain), mapping);
        assert_eq!(n, expected, "snapshot");
        n.fill_from(&atomic, mapping);
        assert_eq!(n, expected, "atomic");
        n.fill_from(&local, mapping);
        assert_eq!(n, expected, "thread-local");
        n.fill_from(&crate::Summed::new(&local), mapping);
        assert_eq!(n, expected, "summed");
        n.fill_from(&Defaults(&plain), mapping);
        assert_eq!(n, expected, "the default bulk read");
        n.fill_from(&(&plain as &dyn HistogramRead), mapping);
        assert_eq!(n, expected, "dyn");
        // Counts below the approximate kind's exact threshold are exact.
        let approx = picollo_core::approx::ApproxHistogram::with_storage(
            layout,
            picollo_alloc::heap::HeapStorage::with_len(
                window.len(),
                picollo_core::scalable::ScalableCell::new,
            ),
            window,
            picollo_core::scalable::ScalableConfig::new(),
        )
        .unwrap();
        let mut rng = picollo_core::scalable::XorShift::new(1);
        let mut capped = heap::plain::<u64>(layout, window);
        for &(v, c) in values {
            approx.record_n(v, c.min(8), &mut rng);
            capped.record_n(v, c.min(8));
        }
        n.fill_from(&approx, mapping);
        assert_eq!(n, reference(&capped, mapping), "approximate");
    }

    #[test]
    fn fills_match_the_oracle_on_full_range_data() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let values: Vec<(u64, u64)> = (0..3_000)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> (s % 64), 1 + i % 3)
            })
            .chain([(0, 5), (u64::MAX, 2), (1, 1), (2, 1)])
            .collect();
        for k in [1, 3, 7, 9, 12, 14, 15] {
            for schema in [-4, -1, 0, 1, 3, 7, 8] {
                check_fill(k, schema, 0, u64::MAX, &values);
                check_fill(k, schema, 1_000, 1 << 40, &values);
            }
        }
    }

    proptest! {
        /// Random layouts, schemas, windows and values (with outside ones).
        #[test]
        fn fills_match_the_oracle(
            k in 1u32..=16,
            schema in MIN_SCHEMA..=MAX_SCHEMA,
            lo in any::<u64>(),
            hi in any::<u64>(),
            raw in proptest::collection::vec((any::<u64>(), 0u32..64, 1u64..1_000), 0..200),
        ) {
            let values: Vec<(u64, u64)> = raw.into_iter().map(|(v, s, c)| (v >> s, c)).collect();
            let (lo, hi) = (lo >> (lo % 64), hi >> (hi % 64));
            check_fill(k, schema, lo, hi, &values);
        }

        /// Larger block scales (tables up to 14, direct computation above), sampled.
        #[test]
        fn octave_map_matches_mapping_sampled(k in 11u32..=20, n in MIN_SCHEMA..=MAX_SCHEMA, x in any::<u64>(), shift in 0u32..64) {
            let layout = Layout::from_block_scale(k).unwrap();
            let map = OctaveMap::new(Mapping::new(layout, Schema::new(n).unwrap()));
            let logical = layout.index_of(x >> shift);
            for l in logical.saturating_sub(2)..(logical + 2).min(layout.logical_len()) {
                check(&map, l);
            }
        }
    }
}
