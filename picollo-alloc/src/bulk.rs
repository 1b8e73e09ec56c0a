//! Bulk reads of the non-empty buckets into a list: [`recorded_into`] collects the runs of any
//! [`HistogramRead::recorded_runs`] (the one bulk-read method every kind implements, with its
//! own fastest scan) as `(storage index, count)` pairs, which the classic export maps in one loop;
//! `push_nonzero_run` is its branch-free step
//! ([`picollo_core::storage::nonzero_mask`] its test, which the native fill of
//! `picollo-export` shares), shared with
//! [`ThreadLocalHistogram::read_recorded`](crate::ThreadLocalHistogram::read_recorded).

use picollo_core::storage::nonzero_mask;
use picollo_core::HistogramRead;

/// Cells per run of a bulk read: a run of empty cells is skipped with one test.
pub(crate) const RUN: usize = picollo_core::storage::CELL_RUN;

/// Appends `(storage index, count)` for each non-empty bucket of `h` to `out`, in increasing
/// order: one pass of [`HistogramRead::recorded_runs`], not retried (bracket it with
/// [`picollo_core::read::consistent`] to read it with the underflow and overflow).
///
/// ```
/// use picollo_alloc::HistogramBuilder;
///
/// let mut h = HistogramBuilder::new().plain().unwrap();
/// h.record(3);
/// h.record_n(5, 2);
/// let mut out = vec![(0, 9)];
/// picollo_alloc::bulk::recorded_into(&h, &mut out);
/// assert_eq!(out, [(0, 9), (3, 1), (5, 2)]);
/// ```
pub fn recorded_into<H: HistogramRead + ?Sized>(h: &H, out: &mut Vec<(usize, u64)>) {
    h.recorded_runs(&mut |start, counts| {
        // The slice scans pass whole runs: an array, whose copy unrolls.
        if let Ok(run) = <&[u64; RUN]>::try_from(counts) {
            return push_nonzero_run(out, start, *run);
        }
        for (k, run) in counts.chunks(RUN).enumerate() {
            push_nonzero_run(out, start + k * RUN, run.iter().copied());
        }
    });
}

/// Appends `(start + i, n)` for each non-zero `n` of the first [`RUN`] `counts`: a mask of
/// the non-zero counts first (compares without a branch: whether a count is zero depends on
/// the data, and a branch on it would mispredict about once per count), then one push per
/// set bit, found with trailing-zero counts. A run of a sparse histogram holds one or two
/// counts, so this costs a few instructions per run, not a write per cell.
#[inline(always)]
pub(crate) fn push_nonzero_run(
    out: &mut Vec<(usize, u64)>,
    start: usize,
    counts: impl IntoIterator<Item = u64>,
) {
    let mut run = [0u64; RUN];
    for (slot, n) in run.iter_mut().zip(counts) {
        *slot = n;
    }
    let mut mask = nonzero_mask(&run);
    out.reserve(mask.count_ones() as usize);
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        // `i < RUN`: the mask has RUN bits; the mask on the index shows it to the compiler.
        out.push((start + i, run[i & (RUN - 1)]));
        mask &= mask - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_pushes_its_nonzero_counts_after_what_is_there() {
        let mut out = vec![(0, 9)];
        push_nonzero_run(&mut out, 40, [0, 5, 0, 0, 2]);
        assert_eq!(out, [(0, 9), (41, 5), (44, 2)]);
    }
}
