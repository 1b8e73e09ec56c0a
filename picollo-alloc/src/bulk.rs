//! Bulk reads of the non-empty buckets, in runs of [`RUN`] cells: the pieces
//! [`ThreadLocalHistogram::read_recorded`](crate::ThreadLocalHistogram::read_recorded) and
//! exporters' scans share. Runs that hold no count are skipped with
//! [`picollo_core::read::for_each_nonempty_run`]; the counts of the others are appended with
//! [`push_nonzero_run`].

/// Cells per run of a bulk read: a run of empty cells is skipped with one test.
pub const RUN: usize = 8;

/// Appends `(start + i, n)` for each non-zero `n` of the first [`RUN`] `counts`, without a
/// branch per cell (a data-dependent branch would mispredict about once per count).
///
/// ```
/// let mut out = vec![(0, 9)];
/// picollo_alloc::bulk::push_nonzero_run(&mut out, 40, [0, 5, 0, 0, 2]);
/// assert_eq!(out, [(0, 9), (41, 5), (44, 2)]);
/// ```
#[inline(always)]
pub fn push_nonzero_run(
    out: &mut Vec<(usize, u64)>,
    start: usize,
    counts: impl IntoIterator<Item = u64>,
) {
    // Room for a whole run (a copy of fixed size), then cut back to the non-empty counts
    // written at its front.
    let base = out.len();
    out.extend_from_slice(&[(0, 0); RUN]);
    if let Ok(run) = <&mut [(usize, u64); RUN]>::try_from(&mut out[base..]) {
        let mut at = 0;
        for (i, n) in counts.into_iter().take(RUN).enumerate() {
            // `at <= i < RUN`: the mask shows the compiler it needs no bounds check.
            run[at & (RUN - 1)] = (start + i, n);
            at += usize::from(n != 0);
        }
        out.truncate(base + at);
    }
}
