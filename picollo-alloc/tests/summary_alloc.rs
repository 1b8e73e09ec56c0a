//! Filling an existing [`Summary`] from dense histograms allocates nothing: checked with a
//! counting global allocator that counts only this thread's allocations. (Reads of sparse
//! storage, the builder's default, allocate the sorted list of their cold tier: see
//! `picollo_alloc::sparse`.)

use picollo_alloc::{HistogramBuilder, Summary, SummaryExt};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;
use picollo_testkit::miri_size as size;

#[test]
fn filling_a_summary_allocates_nothing() {
    let mut plain = HistogramBuilder::new()
        .relative_error(0.01)
        .u32_storage()
        .min_trackable(10_000)
        .max_trackable(30_000)
        .dense()
        .plain()
        .unwrap();
    // Empty. Under miri 1 to 2^16, not the full range (28,700 cells, full-size runs keep it):
    // a summary of an empty histogram still walks its cells, 12 s a fill there.
    let full = if cfg!(miri) && !picollo_testkit::miri_full() {
        picollo_alloc::HistogramBuilder::new().max_trackable(1 << 16)
    } else {
        picollo_alloc::HistogramBuilder::new()
    }
    .dense()
    .plain()
    .unwrap();
    // Under miri 1 to 2^12 at 1 % (2^20, 900 cells, in a full-size run; not the full range's
    // 28,700): each read of a cell there retags the whole storage, visiting every atomic
    // cell, so a read of the histogram costs about the square of its cells (10 s at 2^16's
    // 600 cells under Stacked Borrows, 4 s at 2^12; Tree Borrows was slower still).
    let atomic = if cfg!(miri) {
        HistogramBuilder::new()
            .relative_error(0.01)
            .max_trackable(size(0, 1 << 20, 1 << 12))
    } else {
        HistogramBuilder::new()
    }
    .dense()
    .atomic()
    .unwrap();
    // Under miri 64 values, 1,000 in a full-size run (their squares stay below the top).
    let n = size(100_000, 1000, 64);
    for v in 0..n {
        plain.record(10_000 + v % 25_000);
        atomic.record(v * v);
    }
    let mut summary = Summary::default().with_range(10_000, 30_000);
    // Warm up anything lazily initialized on first use (the clock, for one).
    summary.fill_from(&plain);

    // Under miri 2 passes, not 10: the second refills the summaries the first filled (each
    // pass reads the atomic histogram twice, the cost above). Read before the count starts:
    // `miri_size` reads the environment, which allocates where the variable is set (as in
    // .ci/miri-full).
    let passes = size(10, 10, 2);
    let before = allocations();
    for _ in 0..passes {
        summary.fill_from(&plain);
        plain.summary_into(&mut summary);
        summary.fill_from(&full); // empty
        summary.fill_from(&atomic);
        let fresh = Summary::from_histogram(&atomic);
        assert_eq!(fresh.total(), n);
    }
    let after = allocations();
    assert_eq!(after - before, 0, "allocations while filling summaries");

    // The counter does count: printing allocates.
    let text = summary.table("Allocates").to_string();
    assert!(allocations() > after);
    assert!(text.contains("Total:"));
    assert_eq!(summary.requested_range(), Some((10_000, 30_000)));
}
