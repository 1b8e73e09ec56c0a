//! The facade's counts in Picollo's kinds (issue 45): lent and moved without copying, every
//! bucket read back the same, and exported through `picollo-export`.

use picollo_core::{HistogramRead, ReadExt};
use picollo_hdrhistogram::picollo::NotPicolloLayout;
use picollo_hdrhistogram::{Counter, Histogram};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

fn filled<T: Counter>(low: u64, high: u64, sigfig: u8, values: &[u64]) -> Histogram<T> {
    let mut h = Histogram::<T>::new_with_bounds(low, high, sigfig).unwrap();
    for &v in values {
        h.saturating_record(v);
    }
    h
}

/// Every bucket of the facade read through Picollo: the same count at the same values.
fn same_buckets<T: Counter + picollo_core::Counter>(h: &Histogram<T>) {
    let p = h.as_picollo().unwrap();
    let mut total = 0u64;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        assert_eq!(
            p.count_at_value(value),
            v.count_at_value().as_u64(),
            "at {value}"
        );
        // The bucket's bounds are the same in both.
        assert_eq!(
            p.layout().lowest_equivalent(value),
            h.lowest_equivalent(value)
        );
        assert_eq!(
            p.layout().highest_equivalent(value),
            h.highest_equivalent(value)
        );
        total += v.count_at_value().as_u64();
    }
    assert_eq!(p.total(), total);
    assert_eq!((p.underflow(), p.overflow()), (0, 0));
    if total > 0 {
        assert_eq!(p.max(), Some(h.max()));
        assert_eq!(p.min(), Some(h.min()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn every_bucket_reads_the_same(
        low_bits in 0u32..32,
        span in 1u32..40,
        sigfig in 1u8..=4,
        values in prop::collection::vec((0u32..64, any::<u64>()).prop_map(|(s, r)| r >> s), 0..200),
    ) {
        let low = 1u64 << low_bits;
        let high = low.saturating_mul(1 << span.min(62 - low_bits.min(61))).max(2 * low);
        same_buckets(&filled::<u64>(low, high, sigfig, &values));
        same_buckets(&filled::<u32>(low, high, sigfig, &values));
        same_buckets(&filled::<u16>(low, high, sigfig, &values));
    }
}

#[test]
fn into_picollo_moves_the_counts_and_records_on() {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for v in [5, 1_000, 1_000, 40_000, 3_000_000] {
        h.record(v).unwrap();
    }
    let at = |h: &Histogram<u64>| h.count_at(1_000);
    assert_eq!(at(&h), 2);
    let mut p = h.into_picollo().unwrap();
    // No copy: the storage is the facade's vector (its length is the counts array's).
    let len = p.storage().as_slice_len();
    assert_eq!(len, p.window().len());
    assert_eq!(p.count_at_value(1_000), 2);
    p.record(1_000);
    p.record(u64::MAX); // Picollo's rule from here on: counted as overflow, not refused.
    assert_eq!((p.count_at_value(1_000), p.overflow()), (3, 1));
    assert_eq!((p.total(), p.total_with_outside()), (6, 7));
    let counts = p.into_storage().into_inner();
    assert_eq!(counts.len(), len);
}

/// `as_slice_len`: the storage's cell count, through Picollo's `Storage` trait.
trait SliceLen {
    fn as_slice_len(&self) -> usize;
}

impl<S: picollo_core::Storage> SliceLen for S {
    fn as_slice_len(&self) -> usize {
        self.as_slice().len()
    }
}

/// Counts this thread's allocations, so a test can show a conversion copies nothing.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the counter is a
// thread-local `Cell` touched without allocating.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is `GlobalAlloc::alloc`'s, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above, for `dealloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn converting_allocates_nothing() {
    let mut h = Histogram::<u32>::new_with_bounds(1_000, 10_000_000, 2).unwrap();
    h.record(123_456).unwrap();
    let before = allocations();
    let lent = h.as_picollo().unwrap();
    assert_eq!(lent.count_at_value(123_456), 1);
    let cells = lent.storage().len();
    assert_eq!(allocations(), before, "as_picollo lends the counts");
    let owned = h.into_picollo().unwrap();
    assert_eq!(allocations(), before, "into_picollo moves them");
    assert_eq!(
        (
            owned.storage().as_slice_len(),
            owned.count_at_value(123_456)
        ),
        (cells, 1)
    );
}

#[test]
fn configurations_without_a_picollo_layout_say_why() {
    let h = Histogram::<u64>::new_with_bounds(1, 1_000, 0).unwrap();
    assert_eq!(
        h.picollo_layout().unwrap_err(),
        NotPicolloLayout::ZeroSignificantDigits
    );
    let (back, why) = h.into_picollo().unwrap_err();
    assert_eq!(why, NotPicolloLayout::ZeroSignificantDigits);
    assert_eq!(back.sigfig(), 0); // the histogram comes back
    let h = Histogram::<u64>::new_with_bounds(1 << 33, 1 << 40, 2).unwrap();
    assert_eq!(
        h.as_picollo().unwrap_err(),
        NotPicolloLayout::LowestDiscernibleTooLarge(1 << 33)
    );
    assert!(why.to_string().contains("0 significant digits"));
}

#[test]
fn exported_as_a_prometheus_native_histogram() {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    for v in [900, 1_000, 1_100, 25_000, 25_000, 7_000_000] {
        h.record(v).unwrap();
    }
    let native = picollo_export::NativeHistogram::from_histogram(&h.as_picollo().unwrap());
    assert_eq!(native.count(), 6);
    assert_eq!(
        native.buckets().map(|(_, n)| n).sum::<u64>() + native.zero_count(),
        6
    );
}
