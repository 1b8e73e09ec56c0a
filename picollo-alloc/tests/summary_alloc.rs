//! Filling an existing [`Summary`] allocates nothing: checked with a counting global
//! allocator that counts only this thread's allocations.

use picollo_alloc::{HistogramBuilder, Summary, SummaryExt};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

std::thread_local! {
    // Const-initialized and without a destructor: touching it never allocates.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every method forwards to `System` unchanged; counting touches only a thread-local
// `Cell`.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn filling_a_summary_allocates_nothing() {
    let mut plain = HistogramBuilder::new()
        .relative_error(0.01)
        .u32_storage()
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()
        .unwrap();
    let full = picollo_alloc::default_histogram();
    let atomic = HistogramBuilder::new().atomic().unwrap();
    for v in 0..100_000u64 {
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
        assert_eq!(fresh.total(), 100_000);
    }
    let after = allocations();
    assert_eq!(after - before, 0, "allocations while filling summaries");

    // The counter does count: printing allocates.
    let text = summary.table("Allocates").to_string();
    assert!(allocations() > after);
    assert!(text.contains("Total:"));
    assert_eq!(summary.requested_range(), Some((10_000, 30_000)));
}
