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
    let full = picollo_alloc::HistogramBuilder::new()
        .dense()
        .plain()
        .unwrap();
    // Under miri 1 to 2^16 at 1 % (600 cells; 2^20 and 900 in a full-size run, not the full
    // range's 28,700): each read of a cell there retags the whole storage, visiting every
    // atomic cell.
    let atomic = if cfg!(miri) {
        HistogramBuilder::new()
            .relative_error(0.01)
            .max_trackable(size(0, 1 << 20, 1 << 16))
    } else {
        HistogramBuilder::new()
    }
    .dense()
    .atomic()
    .unwrap();
    // Under miri 250 values, 1,000 in a full-size run (their squares stay below the top).
    let n = size(100_000, 1000, 250);
    for v in 0..n {
        plain.record(10_000 + v % 25_000);
        atomic.record(v * v);
    }
    let mut summary = Summary::default().with_range(10_000, 30_000);
    // Warm up anything lazily initialized on first use (the clock, for one).
    summary.fill_from(&plain);

    let before = allocations();
    for _ in 0..10 {
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
