//! [`Fill`]: the one pass of [`NativeHistogram::fill_from`](super::NativeHistogram::fill_from)
//! that maps a source's non-empty buckets onto native buckets as its bulk read
//! ([`HistogramRead::recorded_runs`](picollo_core::HistogramRead::recorded_runs)) passes them.
//!
//! Reading and mapping in one pass writes no list of the recorded buckets in between: a scrape
//! of full-range histograms is bound by reading their cells, and everything it does per
//! recorded bucket comes on top.

use picollo_core::storage::{nonzero_mask, CELL_RUN as RUN};

use super::octave::tabled_bucket;
use super::OctaveMap;

/// Native buckets kept in place before they go to the `Vec` (a power of two, so that an
/// index masked with `BUF - 1` needs no bounds check).
const BUF: usize = 128;
/// A run starts with at most this many buckets in place: it adds at most [`RUN`].
const FLUSH_AT: usize = BUF - RUN - 1;
/// The index of no native bucket: the place holder below the first bucket.
const NONE: i32 = i32::MIN;

/// What a pass found besides the native buckets.
#[derive(Clone, Copy, Debug)]
pub(super) struct Totals {
    /// Values of the value 0 (the zero bucket).
    pub(super) zero: u64,
    /// Every value passed, the zeros included (saturating).
    pub(super) count: u64,
    /// The sum of bucket midpoints times their counts (`u128::MAX` when it overflowed).
    pub(super) sum: u128,
    /// Whether every value passed was in a single-integer bucket.
    pub(super) sum_exact: bool,
    /// Values in buckets that straddle a native edge (saturating).
    pub(super) straddling: u64,
}

/// The mapping state of one pass: the native buckets so far, the last one open to the
/// buckets that map onto it.
pub(super) struct Fill<'a> {
    octaves: &'a OctaveMap,
    /// The octave tables' per-`j` entries (empty without tables), and the layout's block
    /// scale `k` and the schema `n`, kept here for the loop.
    table: &'a [(u16, u16, u8)],
    k: u32,
    n: u32,
    /// Logical indices from here on take [`OctaveMap::bucket`] (past the layout's end).
    logical_len: usize,
    /// The logical index of storage index 0 (the window's first bucket).
    first: usize,
    out: &'a mut Vec<(i32, u64)>,
    /// Native buckets not yet in `out`: `buf[..at]`, `buf[at - 1]` the open one (or
    /// [`NONE`], before the first). Written in place without a branch on whether a bucket
    /// merges with the open one: that depends on the data and would mispredict.
    buf: [(i32, u64); BUF],
    at: usize,
    totals: Totals,
    overflowed: bool,
}

impl<'a> Fill<'a> {
    /// A pass appending to `out`, whose last bucket (if any) stays open to merges.
    pub(super) fn new(octaves: &'a OctaveMap, first: usize, out: &'a mut Vec<(i32, u64)>) -> Self {
        let mut buf = [(NONE, 0); BUF];
        if let Some(last) = out.pop() {
            buf[0] = last;
        }
        let (layout, schema) = (octaves.mapping.layout(), octaves.mapping.schema());
        let k = layout.block_scale();
        Fill {
            octaves,
            // With tables, one entry per `j < 2^k` (so that `j & (2^k - 1)` needs no check).
            table: match octaves.table.get(..1 << k) {
                Some(table) if table.len() == 1 << k => table,
                _ => &[],
            },
            k,
            n: schema.get().max(0) as u32,
            logical_len: layout.logical_len(),
            first,
            out,
            buf,
            at: 1,
            totals: Totals {
                zero: 0,
                count: 0,
                sum: 0,
                sum_exact: true,
                straddling: 0,
            },
            overflowed: false,
        }
    }

    /// The counts of the storage indices `start..start + counts.len()`, in increasing order
    /// across calls.
    #[inline(always)]
    pub(super) fn run(&mut self, start: usize, counts: &[u64]) {
        // The slice scans pass whole runs: an array, whose test unrolls.
        if let Ok(run) = <&[u64; RUN]>::try_from(counts) {
            return self.one_run(start, run);
        }
        // Sparse storage passes the buckets of its cold tier one at a time.
        if let &[n] = counts {
            if n != 0 {
                if self.at > FLUSH_AT {
                    self.flush();
                }
                self.bucket(self.first + start, n);
            }
            return;
        }
        for (k, chunk) in counts.chunks(RUN).enumerate() {
            let mut run = [0u64; RUN];
            run[..chunk.len()].copy_from_slice(chunk);
            self.one_run(start + k * RUN, &run);
        }
    }

    #[inline(always)]
    fn one_run(&mut self, start: usize, run: &[u64; RUN]) {
        if self.at > FLUSH_AT {
            self.flush();
        }
        // A mask of the non-zero counts, then one step per count (a sparse histogram's run
        // holds one or two).
        let mut mask = nonzero_mask(run);
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            self.bucket(self.first + start + i, run[i & (RUN - 1)]);
        }
    }

    /// `n` values in Picollo bucket `logical`: [`OctaveMap::bucket`]'s table case with the
    /// parameters kept here, the rest (unit buckets, the value 0, layouts without tables)
    /// through it.
    #[inline(always)]
    fn bucket(&mut self, logical: usize, n: u64) {
        // Two calls of `add`, each inlined: the table's has a known native index.
        if let Some((lo, width, index, exact)) =
            tabled_bucket(self.table, self.k, self.n, self.logical_len, logical)
        {
            return self.add(lo, width, Some(index), exact, n);
        }
        self.untabled(logical, n);
    }

    /// [`Fill::bucket`] where the table does not decide: out of the loop's code, so that its
    /// general arithmetic keeps no registers from the table's path.
    #[inline(never)]
    fn untabled(&mut self, logical: usize, n: u64) {
        let (lo, width, index, exact) = self.octaves.bucket(logical);
        self.add(lo, width, index, exact, n);
    }

    /// `n` values of the bucket `[lo, lo + width)` in native bucket `index`.
    #[inline(always)]
    fn add(&mut self, lo: u64, width: u64, index: Option<i32>, exact: bool, n: u64) {
        let t = &mut self.totals;
        t.count = t.count.saturating_add(n);
        let Some(index) = index else {
            // The value 0: the zero bucket.
            t.zero = t.zero.saturating_add(n);
            return;
        };
        let (sum, o) = t
            .sum
            .overflowing_add(u128::from(lo + width / 2) * u128::from(n));
        t.sum = sum;
        self.overflowed |= o;
        t.sum_exact &= width == 1;
        t.straddling = t.straddling.saturating_add(if exact { 0 } else { n });
        // `1 <= at <= FLUSH_AT + RUN < BUF`: the masks only show it to the compiler.
        let open = self.buf[(self.at - 1) & (BUF - 1)];
        let merge = index == open.0;
        let at = self.at - usize::from(merge);
        let count = if merge { open.1.saturating_add(n) } else { n };
        self.buf[at & (BUF - 1)] = (index, count);
        self.at = at + 1;
    }

    /// Moves every bucket but the open one to `out` (once per [`FLUSH_AT`] buckets: kept out
    /// of the loop).
    #[inline(never)]
    fn flush(&mut self) {
        let closed = &self.buf[..self.at - 1];
        let closed = match closed.first() {
            Some(&(NONE, _)) => &closed[1..],
            _ => closed,
        };
        self.out.extend_from_slice(closed);
        self.buf[0] = self.buf[self.at - 1];
        self.at = 1;
    }

    /// Moves every bucket to `out` and returns the totals.
    pub(super) fn finish(mut self) -> Totals {
        self.flush();
        if self.buf[0].0 != NONE {
            self.out.push(self.buf[0]);
        }
        if !self.out.is_sorted_by_key(|b| b.0) {
            // Never: the mapping is monotone and the bulk reads pass buckets in order.
            let mut all = std::mem::take(self.out);
            all.sort_by_key(|b| b.0);
            for (i, n) in all {
                match self.out.last_mut() {
                    Some((l, c)) if *l == i => *c = c.saturating_add(n),
                    _ => self.out.push((i, n)),
                }
            }
        }
        if self.overflowed {
            self.totals.sum = u128::MAX;
        }
        self.totals
    }
}
