//! The bulk read the classic buckets start with: a source's non-empty buckets, through its own
//! [`HistogramRead::recorded_runs`], into a scratch buffer per thread.

use picollo_core::HistogramRead;

thread_local! {
    /// The non-empty buckets of the histogram being read (a scratch buffer per thread).
    static RECORDED: std::cell::RefCell<Vec<(usize, u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f` with the non-empty buckets of `h` (`(storage index, count)`, increasing), read
/// with its own bulk read ([`picollo_alloc::bulk::recorded_into`]) into this thread's scratch
/// buffer: full-range histograms are mostly empty, and a scrape of a thousand of them reads
/// hundreds of megabytes of cells. One pass, not retried: readers bracket it with
/// [`consistent`](picollo_core::read::consistent).
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
