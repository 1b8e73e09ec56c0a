//! Totals, extremes, mean and spread: [`IntStats`] in integer arithmetic (firmware), [`Stats`]
//! in `f64`.

use core::ops::ControlFlow;

use super::histogram_read::{sum_counts, HistogramRead};

/// Square root by Newton's method (core has no `f64::sqrt` without std).
pub(crate) fn sqrt(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 || x.is_infinite() {
        return x;
    }
    // Start from a power of two near the root: halve the exponent bits.
    let mut y = f64::from_bits((x.to_bits() >> 1) + (1023u64 << 51));
    for _ in 0..8 {
        y = 0.5 * (y + x / y);
    }
    y
}

/// Totals, extremes and the mean in integer arithmetic
/// ([`ReadExt::int_stats`](super::ReadExt::int_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IntStats {
    /// Values inside the window.
    pub total: u64,
    /// Values below the window.
    pub underflow: u64,
    /// Values above the window.
    pub overflow: u64,
    /// Lowest value of the lowest non-empty bucket (`None` when empty).
    pub min: Option<u64>,
    /// Highest value of the highest non-empty bucket (`None` when empty).
    pub max: Option<u64>,
    /// Mean of the bucket midpoints weighted by count, rounded to nearest (`None` when empty).
    pub mean: Option<u64>,
}

/// Mean and spread computed from bucket midpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Values inside the window.
    pub total: u64,
    /// Values below the window.
    pub underflow: u64,
    /// Values above the window.
    pub overflow: u64,
    /// Mean of bucket midpoints weighted by count (0 when empty).
    pub mean: f64,
    /// Population standard deviation of bucket midpoints (0 when empty).
    pub stdev: f64,
    /// Lowest value of the lowest non-empty bucket (`None` when empty).
    pub min: Option<u64>,
    /// Highest value of the highest non-empty bucket (`None` when empty).
    pub max: Option<u64>,
}

pub(super) fn total_with_outside_of<H: HistogramRead + ?Sized>(h: &H) -> u64 {
    sum_counts(h)
        .saturating_add(h.underflow())
        .saturating_add(h.overflow())
}

/// Calls `f(storage index, count)` for every non-empty bucket in increasing order: through
/// the bulk read for kinds that read in bulk ([`HistogramRead::reads_in_bulk`]), bucket by
/// bucket otherwise. Dense storage natively read a little faster through the bulk read too,
/// but the firmware's README pattern (`int_stats`, `min`) then grew from within 3,102 bytes of
/// `.text` to 4,218 on Cortex-M4 (`firmware/size-limits.txt`): the slice scan's code where an
/// index loop serves.
pub(crate) fn for_each_recorded<H: HistogramRead + ?Sized>(h: &H, mut f: impl FnMut(usize, u64)) {
    if h.reads_in_bulk() {
        h.recorded_runs(&mut |start, counts| {
            for (s, &n) in (start..).zip(counts) {
                if n != 0 {
                    f(s, n);
                }
            }
        });
    } else {
        for s in 0..h.window().len() {
            let n = h.count_at(s);
            if n != 0 {
                f(s, n);
            }
        }
    }
}

/// The first non-empty bucket at storage index `from` or above, with its count: one
/// [`HistogramRead::recorded_runs_from`] that ends there.
fn first_recorded<H: HistogramRead + ?Sized>(h: &H, from: usize) -> Option<(usize, u64)> {
    let mut found = None;
    h.recorded_runs_from(from, &mut |start, counts| match (start..)
        .zip(counts)
        .find(|&(s, &n)| n != 0 && s >= from)
    {
        Some((s, &n)) => {
            found = Some((s, n));
            ControlFlow::Break(())
        }
        None => ControlFlow::Continue(()),
    });
    found
}

/// Whether a forward walk over `h` reads its recorded buckets in batches: for kinds that read
/// in bulk (sparse storage, where a lookup per bucket is a page-table walk and a probe of the
/// cold tables), and for every kind under miri, where each `count_at` retags the whole storage
/// (a dense walk bucket by bucket cost the square of the window there). Dense storage natively
/// reads a bucket with an index: the walk bucket by bucket took 1.10 million instructions
/// where the batches took 1.47 (`read_iai`, group `ticks`: 110,000 cells).
pub(crate) fn batches<H: HistogramRead + ?Sized>(h: &H) -> bool {
    h.reads_in_bulk() || cfg!(miri)
}

/// Recorded buckets a forward walk reads at once: 256 (4 KB in the iterator) where pointers
/// are 64 bits wide, the hosts whose sparse storage makes each batch cost a pass over its cold
/// tier (fewer, larger batches: 8 times fewer passes than at 32); 32 (256 bytes) on smaller
/// targets, where firmware's stacks hold the iterators and storage is dense.
#[cfg(target_pointer_width = "64")]
const AHEAD: usize = 256;
/// See above.
#[cfg(not(target_pointer_width = "64"))]
const AHEAD: usize = 32;

/// The recorded buckets of a forward walk (the bucket and percentile iterators), read
/// [`AHEAD`] at a time with one [`HistogramRead::recorded_runs_from`] where [`batches`] says
/// so, else bucket by bucket.
///
/// Why a batch: in sparse storage a lookup per bucket is a page-table walk and a probe of
/// every cold table, and one sum over a range scans the whole cold tier. The walk summed each
/// run of 16 buckets, so a full-range window with thousands of cold buckets cost a scan of
/// the cold tier per 16 buckets of the window (22 of the 31 million instructions of
/// `hgrm_golden`'s `golden_text`); a batch costs one scan per [`AHEAD`] recorded buckets.
/// Under miri dense storage scans its cells from the position, a vectorized OR per 8 cells,
/// where each `count_at` retagged the whole storage.
pub(crate) struct RecordedAhead {
    /// Storage index and count of the buckets read, in increasing order.
    batch: [(usize, u64); AHEAD],
    /// Entries of `batch` read.
    len: usize,
    /// The next entry of `batch` to look at.
    at: usize,
    /// The storage index the batch was read from.
    from: usize,
    /// Whether the batch holds every recorded bucket from `from` to the window's end.
    complete: bool,
}

impl RecordedAhead {
    pub(crate) const fn new() -> Self {
        RecordedAhead {
            batch: [(0, 0); AHEAD],
            len: 0,
            at: 0,
            from: 0,
            complete: false,
        }
    }

    /// The first non-empty bucket at storage index `from` or above, with its count; `None`
    /// when every bucket from there to the window's end is empty.
    pub(crate) fn next_from<H: HistogramRead + ?Sized>(
        &mut self,
        h: &H,
        from: usize,
    ) -> Option<(usize, u64)> {
        if !batches(h) {
            return (from..h.window().len()).find_map(|s| {
                let n = h.count_at(s);
                (n != 0).then_some((s, n))
            });
        }
        if from < self.from {
            // A walk that went back (the iterators never do): the batch says nothing there.
            *self = RecordedAhead::new();
        }
        loop {
            while let Some(&(s, n)) = self.batch[..self.len].get(self.at) {
                if s >= from {
                    return Some((s, n));
                }
                self.at += 1;
            }
            if self.complete {
                return None;
            }
            self.read_batch(h, from);
        }
    }

    /// Reads the next [`AHEAD`] recorded buckets from `from` on.
    fn read_batch<H: HistogramRead + ?Sized>(&mut self, h: &H, from: usize) {
        self.from = from;
        self.len = 0;
        self.at = 0;
        self.complete = true;
        h.recorded_runs_from(from, &mut |start, counts| {
            for (s, &n) in (start..).zip(counts) {
                if n == 0 || s < from {
                    continue;
                }
                let Some(slot) = self.batch.get_mut(self.len) else {
                    // A recorded bucket past a full batch: the next batch starts here.
                    self.complete = false;
                    return ControlFlow::Break(());
                };
                *slot = (s, n);
                self.len += 1;
            }
            ControlFlow::Continue(())
        });
    }
}

pub(super) fn min_of<H: HistogramRead + ?Sized>(h: &H) -> Option<u64> {
    let first = if h.reads_in_bulk() {
        first_recorded(h, 0).map(|(s, _)| s)
    } else {
        (0..h.window().len()).find(|&s| h.count_at(s) != 0)
    };
    first.map(|s| h.layout().lo(h.window().first() + s))
}

pub(super) fn max_of<H: HistogramRead + ?Sized>(h: &H) -> Option<u64> {
    let layout = h.layout();
    let window = h.window();
    if h.reads_in_bulk() {
        let mut max = None;
        for_each_recorded(h, |s, _| max = Some(s));
        return max.map(|s| layout.highest(window.first() + s));
    }
    (0..window.len())
        .rev()
        .find(|&s| h.count_at(s) != 0)
        .map(|s| layout.highest(window.first() + s))
}

pub(super) fn int_stats_of<H: HistogramRead + ?Sized>(h: &H) -> IntStats {
    let layout = h.layout();
    let window = h.window();
    let (mut total, mut sum, mut min, mut max) = (0u64, 0u128, None, None);
    for_each_recorded(h, |s, n| {
        let i = window.first() + s;
        total = total.saturating_add(n);
        sum += mul_u64(n, layout.midpoint(i));
        min.get_or_insert(layout.lo(i));
        max = Some(layout.highest(i));
    });
    IntStats {
        total,
        underflow: h.underflow(),
        overflow: h.overflow(),
        min,
        max,
        // Rounded to nearest; the quotient is at most the largest midpoint, so it fits.
        mean: (total != 0).then(|| div_u128_u64(sum + (total / 2) as u128, total)),
    }
}

/// `a · b` as `u128`, from 32-bit halves: four 32×32→64 multiplies, which 32-bit cores do in
/// one instruction each (a plain `u128` product calls the `__multi3` helper there).
#[inline]
fn mul_u64(a: u64, b: u64) -> u128 {
    let (a_lo, a_hi) = (a & 0xFFFF_FFFF, a >> 32);
    let (b_lo, b_hi) = (b & 0xFFFF_FFFF, b >> 32);
    let low = (a_lo * b_lo) as u128;
    let mid = (a_lo * b_hi) as u128 + (a_hi * b_lo) as u128;
    let high = (a_hi * b_hi) as u128;
    low + (mid << 32) + (high << 64)
}

/// `n / d` for a quotient known to fit `u64` (`n < d · 2^64`, `d > 0`), by shift-and-subtract:
/// small code and no `__udivti3` helper on 32-bit cores.
fn div_u128_u64(n: u128, d: u64) -> u64 {
    let d = d as u128;
    let mut rem = n >> 64;
    let mut quotient = 0u64;
    for bit in (0..64).rev() {
        rem = (rem << 1) | ((n >> bit) & 1);
        quotient <<= 1;
        if rem >= d {
            rem -= d;
            quotient |= 1;
        }
    }
    quotient
}

pub(super) fn stats_of<H: HistogramRead + ?Sized>(h: &H) -> Stats {
    let layout = h.layout();
    let window = h.window();
    let (mut total, mut sum, mut min, mut max) = (0u64, 0f64, None, None);
    for_each_recorded(h, |s, n| {
        let i = window.first() + s;
        total = total.saturating_add(n);
        sum += n as f64 * layout.midpoint(i) as f64;
        min.get_or_insert(layout.lo(i));
        max = Some(layout.highest(i));
    });
    let mean = if total == 0 { 0.0 } else { sum / total as f64 };
    // Second pass around the mean: numerically stable for tight distributions of big values.
    let mut squares = 0f64;
    if total > 0 {
        for_each_recorded(h, |s, n| {
            let d = layout.midpoint(window.first() + s) as f64 - mean;
            squares += n as f64 * d * d;
        });
    }
    Stats {
        total,
        underflow: h.underflow(),
        overflow: h.overflow(),
        mean,
        stdev: if total == 0 {
            0.0
        } else {
            sqrt(squares / total as f64)
        },
        min,
        max,
    }
}
